//! The hand-over on SIGTERM, with the binary: from the moment `/readyz`
//! turns 503, kept-alive connections are moved to other replicas while the
//! shutdown delay still serves them. HTTP/1.1 answers carry
//! `Connection: close` and their connection closes after them; every open
//! HTTP/2 connection, idle or busy, gets a graceful GOAWAY and its streams
//! in flight complete. The API server pins its connections to one pod
//! (kubernetes#127335): without this they would stay until the drain cut them.
#![cfg(unix)] // `kill -TERM`

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use celhook::certs::Ca;
use common::raw_h2::{self, frame, Conn, ACK, DATA, END_HEADERS, END_STREAM, HEADERS, SETTINGS};
use common::{crontab_review, tls_connect, ServeProcess};
use reqwest::{Client, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The shutdown delay of these tests: everything below happens well inside it.
const DELAY: Duration = Duration::from_secs(2);

/// `celhook serve` with a certificate of `ca`, a 2 s shutdown delay, and
/// the directory holding its files (kept until the test ends).
async fn start(ca: &Ca) -> (ServeProcess, tempfile::TempDir) {
    let pair = ca
        .serving(&["localhost".into(), "127.0.0.1".into()], 30)
        .expect("serving certificate");
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, &pair.cert_pem).expect("write tls.crt");
    std::fs::write(&key, &pair.key_pem).expect("write tls.key");
    let celhook = ServeProcess::start([
        "--tls-cert".as_ref(),
        cert.as_os_str(),
        "--tls-key".as_ref(),
        key.as_os_str(),
        "--shutdown-delay".as_ref(),
        "2s".as_ref(),
        "--shutdown-timeout".as_ref(),
        "5s".as_ref(),
    ])
    .await;
    (celhook, dir)
}

/// Sends SIGTERM and waits until `/readyz` answers 503 (within 1 s).
async fn sigterm_until_not_ready(celhook: &ServeProcess) -> Instant {
    let sigterm = Instant::now();
    celhook.signal("TERM");
    let readyz = format!("http://{}/readyz", celhook.metrics_addr);
    let plain = Client::new();
    loop {
        let status = plain.get(&readyz).send().await.map(|r| r.status());
        if matches!(status, Ok(StatusCode::SERVICE_UNAVAILABLE)) {
            return sigterm;
        }
        assert!(
            sigterm.elapsed() < Duration::from_secs(1),
            "/readyz still answers {status:?} 1 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (at most 10 s) for the process to exit, and checks it exits 0.
async fn exits_cleanly(mut celhook: ServeProcess) {
    let status = tokio::time::timeout(Duration::from_secs(10), celhook.child.wait())
        .await
        .expect("exits within 10 s")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
}

// === HTTP/1.1 ===

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// An HTTP/1.1 answer read off a raw connection.
#[derive(Debug)]
struct H1Answer {
    status: u16,
    /// `Connection` header, lower-cased, if any.
    connection: Option<String>,
    body: Value,
}

/// Writes a keep-alive `POST /validate` of `body`.
async fn post_h1(stream: &mut Tls, body: &[u8]) {
    let head = format!(
        "POST /validate?timeout=10s HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(body).await.expect("body");
    stream.flush().await.expect("flush");
}

/// Reads one answer (with a `Content-Length`) within 5 s.
async fn read_h1(stream: &mut Tls) -> H1Answer {
    let read = async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = stream.read(&mut chunk).await.expect("read the head");
            assert!(n > 0, "closed before the answer: {buf:?}");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(buf[..head_end].to_vec()).expect("utf-8 head");
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line: {head}"));
        let headers: HashMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase()))
            .collect();
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no content-length: {head}"));
        while buf.len() < head_end + length {
            let n = stream.read(&mut chunk).await.expect("read the body");
            assert!(n > 0, "closed in the middle of the body");
            buf.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(buf.len(), head_end + length, "bytes after the answer");
        H1Answer {
            status,
            connection: headers.get("connection").cloned(),
            body: serde_json::from_slice(&buf[head_end..]).expect("JSON body"),
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .expect("answered within 5 s")
}

/// True when the server ends the connection (TLS close, then EOF) within 1 s.
async fn h1_closed(stream: &mut Tls) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(1), stream.read(&mut byte)).await,
        Ok(Ok(0))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_answers_carry_connection_close_once_not_ready() {
    let ca = Ca::new("handover CA", 30).expect("ca");
    let (celhook, _dir) = start(&ca).await;
    let addr = celhook.addr.parse().expect("addr");
    let ca_pem = &ca.pair.cert_pem;

    // Kept alive while serving: two answers on one connection, no close.
    let mut pinned = tls_connect(addr, ca_pem).await;
    for _ in 0..2 {
        post_h1(&mut pinned, &crontab_review(5)).await;
        let answer = read_h1(&mut pinned).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.connection, None, "{answer:?}");
        assert_eq!(answer.body["response"]["allowed"], true, "{answer:?}");
    }

    let sigterm = sigterm_until_not_ready(&celhook).await;
    // The pinned connection (idle when SIGTERM came) is still served, told
    // to go, and closed after its answer.
    post_h1(&mut pinned, &crontab_review(5)).await;
    let answer = read_h1(&mut pinned).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.connection.as_deref(), Some("close"), "{answer:?}");
    assert_eq!(answer.body["response"]["allowed"], true, "{answer:?}");
    assert!(h1_closed(&mut pinned).await, "closed after the answer");

    // A new connection during the delay (a stale endpoint list) is served
    // the right review answer, with the same treatment.
    let mut late = tls_connect(addr, ca_pem).await;
    post_h1(&mut late, &crontab_review(20)).await;
    let answer = read_h1(&mut late).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.connection.as_deref(), Some("close"), "{answer:?}");
    let response = &answer.body["response"];
    assert_eq!(response["uid"], "test-create-crontab", "{answer:?}");
    assert_eq!(response["allowed"], false, "{answer:?}");
    assert_eq!(response["status"]["code"], 422, "{answer:?}");
    assert!(h1_closed(&mut late).await, "closed after the answer");
    assert!(sigterm.elapsed() < DELAY, "all within the shutdown delay");

    exits_cleanly(celhook).await;
}

// === HTTP/2 ===

const PING: u8 = 0x6;

/// What a raw HTTP/2 client saw of its connection.
#[derive(Debug, Default)]
struct Seen {
    /// The first GOAWAY: when, its last stream id and error code.
    goaway: Option<(Instant, u32, u32)>,
    /// The first byte of each stream's answer header block (0x88 is
    /// `:status: 200`, indexed).
    status: HashMap<u32, u8>,
    body: HashMap<u32, Vec<u8>>,
    /// Streams whose answer ended.
    ended: Vec<u32>,
    server_settings: bool,
    closed: bool,
}

impl Seen {
    fn ended(&self, stream: u32) -> bool {
        self.ended.contains(&stream)
    }

    /// The answer of `stream`: a 200 whose review allowed the object.
    fn assert_allowed(&self, stream: u32) {
        assert_eq!(self.status.get(&stream), Some(&0x88), "{self:?}");
        let body: Value = serde_json::from_slice(&self.body[&stream]).expect("JSON answer");
        assert_eq!(body["response"]["allowed"], true, "{body}");
    }
}

/// Reads frames until `done` holds or the connection ends (true when
/// `done` holds), within 5 s; acknowledges SETTINGS and PINGs as a client must.
async fn pump(conn: &mut Conn, seen: &mut Seen, done: impl Fn(&Seen) -> bool) -> bool {
    pump_for(conn, seen, Duration::from_secs(5), done).await
}

/// [`pump`] within `wait`.
async fn pump_for(
    conn: &mut Conn,
    seen: &mut Seen,
    wait: Duration,
    done: impl Fn(&Seen) -> bool,
) -> bool {
    let deadline = Instant::now() + wait;
    while !done(seen) && !seen.closed {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(f) = raw_h2::read_frame(conn, left).await else {
            seen.closed = Instant::now() < deadline;
            break;
        };
        match f.kind {
            SETTINGS if f.flags & ACK == 0 => {
                seen.server_settings = true;
                let _ = conn.write_all(&frame(SETTINGS, ACK, 0, &[])).await;
            }
            PING if f.flags & ACK == 0 => {
                let _ = conn.write_all(&frame(PING, ACK, 0, &f.payload)).await;
            }
            raw_h2::GOAWAY if seen.goaway.is_none() => {
                let word = |i: usize| {
                    u32::from_be_bytes([
                        f.payload[i],
                        f.payload[i + 1],
                        f.payload[i + 2],
                        f.payload[i + 3],
                    ])
                };
                seen.goaway = Some((Instant::now(), word(0) & 0x7fff_ffff, word(4)));
            }
            HEADERS => {
                seen.status
                    .entry(f.stream)
                    .or_insert(f.payload.first().copied().unwrap_or(0));
            }
            DATA => seen
                .body
                .entry(f.stream)
                .or_default()
                .extend_from_slice(&f.payload),
            _ => {}
        }
        if matches!(f.kind, HEADERS | DATA) && f.flags & END_STREAM != 0 {
            seen.ended.push(f.stream);
        }
    }
    done(seen)
}

/// Opens stream `id` with a review's head and `body` (ending the stream
/// when `end`).
async fn send_request(conn: &mut Conn, id: u32, body: &[u8], end: bool) {
    let headers = raw_h2::post_headers("/validate?timeout=10s", &[]);
    let mut out = frame(HEADERS, END_HEADERS, id, &headers);
    out.extend(frame(DATA, if end { END_STREAM } else { 0 }, id, body));
    conn_write(conn, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_connections_get_goaway_once_not_ready_and_finish_their_streams() {
    let ca = Ca::new("handover CA", 30).expect("ca");
    let (celhook, _dir) = start(&ca).await;
    let addr = celhook.addr.parse().expect("addr");
    let ca_pem = &ca.pair.cert_pem;
    let body = crontab_review(5);
    let (first, rest) = body.split_at(10);

    // A busy connection: one answer, then a stream whose body is half sent.
    let mut busy = raw_h2::connect(addr, ca_pem, &[]).await;
    let mut busy_seen = Seen::default();
    send_request(&mut busy, 1, &body, true).await;
    assert!(
        pump(&mut busy, &mut busy_seen, |s| s.ended(1)).await,
        "{busy_seen:?}"
    );
    busy_seen.assert_allowed(1);
    send_request(&mut busy, 3, first, false).await;
    // An idle connection: settings exchanged, no stream.
    let mut idle = raw_h2::connect(addr, ca_pem, &[]).await;
    let mut idle_seen = Seen::default();
    assert!(pump(&mut idle, &mut idle_seen, |s| s.server_settings).await);
    assert!(busy_seen.goaway.is_none() && idle_seen.goaway.is_none());

    let sigterm = sigterm_until_not_ready(&celhook).await;
    // Both get a graceful GOAWAY (NO_ERROR) during the delay.
    for (conn, seen) in [(&mut busy, &mut busy_seen), (&mut idle, &mut idle_seen)] {
        assert!(pump(conn, seen, |s| s.goaway.is_some()).await, "{seen:?}");
        let (at, _, code) = seen.goaway.expect("goaway");
        assert_eq!(code, 0, "NO_ERROR");
        assert!(at < sigterm + DELAY, "GOAWAY within the delay");
    }
    // The idle one leaves at once; the busy one once its stream is answered.
    assert!(!pump(&mut idle, &mut idle_seen, |_| false).await && idle_seen.closed);
    conn_write(&mut busy, &frame(DATA, END_STREAM, 3, rest)).await;
    assert!(
        pump(&mut busy, &mut busy_seen, |s| s.ended(3)).await,
        "{busy_seen:?}"
    );
    busy_seen.assert_allowed(3);
    assert!(!pump(&mut busy, &mut busy_seen, |_| false).await && busy_seen.closed);

    // A connection opened during the delay is served first, then told to
    // go: no GOAWAY before its first request (a client that honours one
    // would send none), one after its answer.
    let mut late = raw_h2::connect(addr, ca_pem, &[]).await;
    let mut late_seen = Seen::default();
    let quiet = Duration::from_millis(400);
    assert!(!pump_for(&mut late, &mut late_seen, quiet, |s| s.goaway.is_some()).await);
    assert!(
        late_seen.server_settings && !late_seen.closed,
        "{late_seen:?}"
    );
    send_request(&mut late, 1, &body, true).await;
    assert!(
        pump(&mut late, &mut late_seen, |s| s.ended(1)).await,
        "{late_seen:?}"
    );
    late_seen.assert_allowed(1);
    assert!(pump(&mut late, &mut late_seen, |s| s.goaway.is_some()).await);
    assert!(!pump(&mut late, &mut late_seen, |_| false).await && late_seen.closed);
    assert!(sigterm.elapsed() < DELAY, "all within the shutdown delay");

    exits_cleanly(celhook).await;
}

async fn conn_write(conn: &mut Conn, bytes: &[u8]) {
    conn.write_all(bytes).await.expect("write");
    conn.flush().await.expect("flush");
}
