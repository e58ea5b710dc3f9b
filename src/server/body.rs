//! The body of every answer: ready chunks with a known length (sent with a
//! Content-Length), or ready chunks followed by more from a bounded channel
//! (a large conversion answer, sent as it is written); holding what the
//! answer keeps busy until it is sent in full or dropped: its bytes in the
//! endpoint's budget and its place among the connection's answers being
//! sent.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Bytes, Frame, SizeHint};
use tokio::sync::mpsc;

use super::activity::Sending;
use super::limits::Held;
use crate::metrics::InFlight;

/// One piece of a streamed body, `true` on the last: a stream whose sender
/// goes away before the last piece (a panic) ends in an error, which aborts
/// the answer rather than closing it as if it were whole.
pub type Piece = (Bytes, bool);

/// An answer's body.
#[derive(Debug, Default)]
pub struct Body {
    chunks: VecDeque<Bytes>,
    size: u64,
    /// The rest of a streamed body; its size is unknown until it ends.
    more: Option<mpsc::Receiver<Piece>>,
    /// The request's duration, for a streamed body recorded once it is sent.
    timer: Option<InFlight>,
    held: Option<Held>,
    sending: Option<Sending>,
}

impl Body {
    /// A body of one buffer.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self::chunks(vec![bytes.into()])
    }

    /// A body of chunks, sent in order.
    pub fn chunks(chunks: Vec<Bytes>) -> Self {
        let size = chunks.iter().map(|c| c.len() as u64).sum();
        Self {
            chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(),
            size,
            more: None,
            timer: None,
            held: None,
            sending: None,
        }
    }

    /// A body of `first`, then what `more` brings until its sender is
    /// dropped (sent chunked over HTTP/1.1).
    pub fn streaming(first: Vec<Bytes>, more: mpsc::Receiver<Piece>) -> Self {
        Self {
            more: Some(more),
            ..Self::chunks(first)
        }
    }

    /// Keeps `held` (the answer's bytes in the budget) until the body is
    /// sent or dropped.
    pub fn holding(mut self, held: Held) -> Self {
        self.held = Some(held);
        self
    }

    /// Keeps the request's timer running while the rest of a streamed body
    /// is written; a whole body stops it now.
    pub fn timed(mut self, timer: InFlight) -> Self {
        if self.more.is_some() {
            self.timer = Some(timer);
        }
        self
    }

    /// Counts the body as being sent on its connection until it is done.
    pub fn sent_as(mut self, sending: Sending) -> Self {
        self.sending = Some(sending);
        self
    }

    fn finish(&mut self) {
        self.more = None;
        self.timer = None;
        self.held = None;
        self.sending = None;
    }
}

/// A streamed body whose writer stopped before its last piece.
#[derive(Debug)]
pub struct Aborted;

impl std::fmt::Display for Aborted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer stopped before its end")
    }
}

impl std::error::Error for Aborted {}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Aborted;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Aborted>>> {
        let this = self.get_mut();
        if let Some(chunk) = this.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        let Some(more) = &mut this.more else {
            this.finish();
            return Poll::Ready(None);
        };
        match more.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some((chunk, last))) => {
                if last {
                    this.more = None;
                }
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            Poll::Ready(None) => {
                this.finish();
                Poll::Ready(Some(Err(Aborted)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && self.more.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if self.more.is_some() {
            let mut hint = SizeHint::new();
            hint.set_lower(self.size);
            hint
        } else {
            SizeHint::with_exact(self.size)
        }
    }
}
