//! Just enough HTTP/2 to misbehave on purpose: frames written by hand over
//! a real TLS connection (no HTTP/2 library would send half a header block
//! or never open its window).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A TLS connection that negotiated `h2`.
pub type Conn = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
pub const END_STREAM: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const ACK: u8 = 0x1;

/// One frame: type, flags, stream, payload.
#[derive(Debug, Clone)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// SETTINGS parameters as (id, value) pairs.
    pub fn settings(&self) -> Vec<(u16, u32)> {
        self.payload
            .chunks_exact(6)
            .map(|c| {
                (
                    u16::from_be_bytes([c[0], c[1]]),
                    u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
                )
            })
            .collect()
    }
}

/// The bytes of a frame.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK integer with an `n`-bit prefix whose other bits are `first`.
fn hpack_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header block of literal fields without indexing (no Huffman).
pub fn header_block(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        out.push(0x00);
        hpack_int(&mut out, 0, 7, name.len());
        out.extend_from_slice(name.as_bytes());
        hpack_int(&mut out, 0, 7, value.len());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// The request pseudo-headers of a POST to `path`, then `extra`.
pub fn post_headers(path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut all = vec![
        (":method", "POST"),
        (":scheme", "https"),
        (":path", path),
        (":authority", "localhost"),
        ("content-type", "application/json"),
    ];
    all.extend_from_slice(extra);
    header_block(&all)
}

/// Connects with ALPN `h2`, sends the preface and `settings`.
pub async fn connect(addr: SocketAddr, ca_pem: &str, settings: &[(u16, u32)]) -> Conn {
    let mut conn = super::tls_connect_alpn(addr, ca_pem, &[b"h2"]).await;
    assert_eq!(conn.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let mut payload = Vec::new();
    for (id, value) in settings {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &payload));
    conn.write_all(&hello).await.expect("preface");
    conn
}

/// Reads the next frame, or `None` when the connection ends or `wait` passes.
pub async fn read_frame(conn: &mut Conn, wait: Duration) -> Option<Frame> {
    tokio::time::timeout(wait, async {
        let mut head = [0u8; 9];
        conn.read_exact(&mut head).await.ok()?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        conn.read_exact(&mut payload).await.ok()?;
        Some(Frame {
            kind: head[3],
            flags: head[4],
            stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
            payload,
        })
    })
    .await
    .ok()
    .flatten()
}

/// Reads frames until one matches `want`; `None` when the connection ends
/// or `wait` passes first.
pub async fn read_until(
    conn: &mut Conn,
    wait: Duration,
    want: impl Fn(&Frame) -> bool,
) -> Option<Frame> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let frame = read_frame(conn, left).await?;
        if want(&frame) {
            return Some(frame);
        }
    }
}

/// True when the server closes the connection (or sends GOAWAY) within `wait`.
pub async fn closed_within(conn: &mut Conn, wait: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        match tokio::time::timeout(left, read_frame(conn, left)).await {
            Ok(None) => return tokio::time::Instant::now() < deadline,
            Ok(Some(f)) if f.kind == GOAWAY => return true,
            Ok(Some(_)) => continue,
            Err(_) => return false,
        }
    }
}
