//! The socket of one connection as the HTTP stack sees it, with what the
//! connection's watchdog needs to know: when bytes last went out, and (for
//! HTTP/2) since when a request's header block has been arriving without
//! its end.
//!
//! Why a byte scanner of our own: hyper bounds an HTTP/2 header block in
//! size but not in time, and a client may hold a half-sent block open for
//! as long as the connection lives. Frame headers are nine fixed bytes, so
//! following them costs a few comparisons per frame, not per byte.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the watchdog reads about a connection's traffic, in milliseconds
/// since the connection's start (`0` in `header_since` means none).
#[derive(Debug)]
pub struct Traffic {
    start: Instant,
    last_write_ms: AtomicU64,
    header_since_ms: AtomicU64,
}

impl Traffic {
    /// Traffic of a connection that starts now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            last_write_ms: AtomicU64::new(0),
            header_since_ms: AtomicU64::new(0),
        }
    }

    /// Milliseconds since the connection started.
    pub fn now_ms(&self) -> u64 {
        // +1 so that no event is ever at 0, which means "none".
        self.start.elapsed().as_millis() as u64 + 1
    }

    /// When bytes were last written (0: never).
    pub fn last_write_ms(&self) -> u64 {
        self.last_write_ms.load(Ordering::Relaxed)
    }

    /// Records a write that moved bytes.
    fn wrote(&self, res: &Poll<io::Result<usize>>) {
        if matches!(res, Poll::Ready(Ok(n)) if *n > 0) {
            self.last_write_ms.store(self.now_ms(), Ordering::Relaxed);
        }
    }

    /// Since when an HTTP/2 header block has been incomplete, if it is.
    pub fn header_block_since_ms(&self) -> Option<u64> {
        match self.header_since_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(ms),
        }
    }
}

impl Default for Traffic {
    fn default() -> Self {
        Self::new()
    }
}

/// Follows the frames a client sends on an HTTP/2 connection far enough to
/// tell whether a header block (HEADERS then CONTINUATION frames, up to
/// the flag END_HEADERS) is open.
#[derive(Debug, Default)]
pub struct FrameScanner {
    /// Bytes of the connection preface still to skip.
    preface_left: usize,
    /// The frame header being read.
    head: [u8; 9],
    head_len: usize,
    /// Payload bytes of the current frame still to skip.
    payload_left: usize,
    /// True while the current frame is HEADERS or CONTINUATION.
    in_header_frame: bool,
    /// True between a HEADERS frame without END_HEADERS and the
    /// CONTINUATION frame that has it.
    block_open: bool,
}

const PREFACE_LEN: usize = 24;
const TYPE_HEADERS: u8 = 0x1;
const TYPE_CONTINUATION: u8 = 0x9;
const FLAG_END_HEADERS: u8 = 0x4;

impl FrameScanner {
    /// A scanner at the start of a client's HTTP/2 byte stream.
    pub fn new() -> Self {
        Self {
            preface_left: PREFACE_LEN,
            ..Self::default()
        }
    }

    /// Takes the next bytes the client sent; returns whether a header
    /// block is incomplete after them (a HEADERS or CONTINUATION frame cut
    /// short counts as incomplete too).
    pub fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.preface_left > 0 {
                let n = self.preface_left.min(bytes.len());
                self.preface_left -= n;
                bytes = &bytes[n..];
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                bytes = &bytes[n..];
            } else {
                let n = (9 - self.head_len).min(bytes.len());
                self.head[self.head_len..self.head_len + n].copy_from_slice(&bytes[..n]);
                self.head_len += n;
                bytes = &bytes[n..];
                if self.head_len == 9 {
                    self.head_len = 0;
                    let len = u32::from_be_bytes([0, self.head[0], self.head[1], self.head[2]]);
                    let (kind, flags) = (self.head[3], self.head[4]);
                    self.payload_left = len as usize;
                    self.in_header_frame = matches!(kind, TYPE_HEADERS | TYPE_CONTINUATION);
                    if self.in_header_frame {
                        self.block_open = flags & FLAG_END_HEADERS == 0;
                    }
                }
            }
        }
        // A frame header read past its type byte tells what is coming.
        let header_frame_head =
            self.head_len >= 4 && matches!(self.head[3], TYPE_HEADERS | TYPE_CONTINUATION);
        self.block_open || (self.in_header_frame && self.payload_left > 0) || header_frame_head
    }
}

/// A socket that records its traffic in a shared [`Traffic`].
pub struct Tracked<T> {
    inner: T,
    traffic: Arc<Traffic>,
    /// Present on HTTP/2 connections.
    frames: Option<FrameScanner>,
}

impl<T> Tracked<T> {
    /// Wraps `inner`; `http2` turns the header-block scanner on.
    pub fn new(inner: T, traffic: Arc<Traffic>, http2: bool) -> Self {
        Self {
            inner,
            traffic,
            frames: http2.then(FrameScanner::new),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Tracked<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let res = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(frames)) = (&res, this.frames.as_mut()) {
            let new = &buf.filled()[before..];
            if !new.is_empty() {
                let open = frames.feed(new);
                let since = &this.traffic.header_since_ms;
                match (open, since.load(Ordering::Relaxed)) {
                    (true, 0) => since.store(this.traffic.now_ms(), Ordering::Relaxed),
                    (false, ms) if ms != 0 => since.store(0, Ordering::Relaxed),
                    _ => {}
                }
            }
        }
        res
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tracked<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.traffic.wrote(&res);
        res
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.traffic.wrote(&res);
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut out = vec![len[1], len[2], len[3], kind, flags, 0, 0, 0, 1];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn a_header_block_is_open_until_end_headers() {
        let mut s = FrameScanner::new();
        assert!(!s.feed(PREFACE));
        // SETTINGS, then HEADERS without END_HEADERS.
        assert!(!s.feed(&frame(0x4, 0, &[0; 6])));
        assert!(s.feed(&frame(TYPE_HEADERS, 0, &[0; 10])));
        // A CONTINUATION without the flag keeps it open, with it closes it.
        assert!(s.feed(&frame(TYPE_CONTINUATION, 0, &[0; 10])));
        assert!(!s.feed(&frame(TYPE_CONTINUATION, FLAG_END_HEADERS, &[0; 10])));
        // A whole HEADERS frame with the flag never opens one.
        assert!(!s.feed(&frame(TYPE_HEADERS, FLAG_END_HEADERS | 0x1, &[0; 3])));
    }

    #[test]
    fn a_header_frame_cut_short_is_open_and_data_frames_are_not() {
        let mut s = FrameScanner::new();
        s.feed(PREFACE);
        let headers = frame(TYPE_HEADERS, FLAG_END_HEADERS, &[0; 100]);
        assert!(s.feed(&headers[..50]), "half a HEADERS frame");
        assert!(!s.feed(&headers[50..]), "the rest of it");
        let data = frame(0x0, 0, &[0; 100]);
        assert!(
            !s.feed(&data[..50]),
            "half a DATA frame is a body on its way"
        );
        assert!(!s.feed(&data[50..]));
        // A frame header split after its type byte.
        assert!(s.feed(&headers[..5]));
        assert!(s.feed(&headers[5..20]));
        assert!(!s.feed(&headers[20..]));
    }

    #[test]
    fn bytes_split_anywhere_give_the_same_answer() {
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(TYPE_HEADERS, 0, &[7; 33]));
        stream.extend(frame(0x8, 0, &[0; 4]));
        stream.extend(frame(TYPE_CONTINUATION, FLAG_END_HEADERS, &[7; 5]));
        let whole = FrameScanner::new().feed(&stream);
        assert!(!whole);
        for cut in 1..stream.len() {
            let mut s = FrameScanner::new();
            s.feed(&stream[..cut]);
            assert_eq!(s.feed(&stream[cut..]), whole, "cut at {cut}");
        }
    }
}
