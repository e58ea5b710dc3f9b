//! Hostile clients, end to end over real TLS sockets: every cheap input
//! that once stopped the webhook (declared-but-unsent bodies, silent TCP
//! connections, HTTP/2 header and flow-control abuse, rules that cost time
//! but no CEL cost) is answered within its bound while normal reviews keep
//! their pace. Half-written files, reloads, signals and a stop under load
//! are in `reload_and_stop.rs`. Counts and durations are small and bounded.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use celhook::config;
use celhook::server::{RunningServer, ServeConfig};
use common::raw_h2::{self, frame, post_headers};
use common::{
    client, crontab_review, embedded_catalog, metric, post_raw, rendered_metrics, start_with,
    tls_connect, validate_url, Http,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Posts a valid CronTab review on a fresh connection and returns how long
/// the answer took.
async fn timed_review(server: &RunningServer, http: Http) -> Duration {
    let client = client(server, http);
    let started = Instant::now();
    let answer = post_raw(&client, &validate_url(server), crontab_review(3)).await;
    assert_eq!(answer.response()["allowed"], true);
    started.elapsed()
}

// === bodies: bytes held as they arrive ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_declaring_huge_bodies_hold_nothing_and_starve_no_review() {
    let server = start_with(ServeConfig::for_tests(), embedded_catalog()).await;
    let mut held = Vec::new();
    // Over HTTP/1.1: two 256 MiB /convert heads and two 8 MiB /validate
    // heads, nothing after them.
    for (path, declared) in [
        ("/convert", 256usize << 20),
        ("/convert", 256 << 20),
        ("/validate", 8 << 20),
        ("/validate", 8 << 20),
    ] {
        let mut conn = tls_connect(server.local_addr(), server.cert_pem()).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n"
        );
        conn.write_all(head.as_bytes()).await.expect("head");
        held.push(conn);
    }
    // Over HTTP/2: two HEADERS frames declaring 256 MiB each.
    let mut h2 = raw_h2::connect(server.local_addr(), server.cert_pem(), &[]).await;
    for stream in [1, 3] {
        let block = post_headers("/convert", &[("content-length", "268435456")]);
        h2.write_all(&frame(raw_h2::HEADERS, raw_h2::END_HEADERS, stream, &block))
            .await
            .expect("headers");
    }
    // Nothing of the declared sizes is held (only the six heads
    // themselves), and reviews go through at once.
    let held = || {
        metric(
            &rendered_metrics(&server),
            "celhook_requests_in_flight_bytes",
            &[],
        )
    };
    common::wait_for("the heads to be read", || held() > Some(1000.0)).await;
    let held = held().expect("gauge");
    eprintln!("heads: {held} bytes held");
    assert!(held < 4096.0, "{held} bytes held");
    for http in [Http::H1, Http::H2] {
        let took = timed_review(&server, http).await;
        assert!(took < Duration::from_secs(1), "{http:?} took {took:?}");
    }
    drop((held, h2));
}

#[tokio::test]
async fn a_body_that_pauses_is_cut_at_the_idle_timeout_not_the_deadline() {
    let config = ServeConfig {
        body_idle_timeout: Duration::from_millis(500),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let mut conn = tls_connect(server.local_addr(), server.cert_pem()).await;
    let started = Instant::now();
    conn.write_all(
        b"POST /validate?timeout=20s HTTP/1.1\r\nhost: localhost\r\ncontent-length: 100\r\n\r\n{\"a\"",
    )
    .await
    .expect("head");
    let mut answer = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.read_to_string(&mut answer)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("no byte for"), "{answer}");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
}

// === connections ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_tcp_connections_do_not_delay_a_new_https_connection() {
    let server = start_with(ServeConfig::for_tests(), embedded_catalog()).await;
    // From four other addresses, 50 each: under the per-source cap, so all
    // 200 wait for their ClientHello at once.
    let mut silent = Vec::new();
    for i in 0..200u8 {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 2 + i % 4], 0)))
            .expect("bind a loopback source");
        silent.push(socket.connect(server.local_addr()).await.expect("connect"));
    }
    for http in [Http::H1, Http::H2] {
        let took = timed_review(&server, http).await;
        assert!(took < Duration::from_secs(1), "{http:?} took {took:?}");
    }
    // They are closed after the ClientHello timeout (1 s) and counted.
    let mut first = silent.pop().expect("one");
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(Duration::from_secs(3), first.read(&mut buf))
        .await
        .expect("closed within 3 s");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    common::wait_for("200 ClientHello timeouts counted", || {
        metric(
            &rendered_metrics(&server),
            "celhook_tls_handshake_failures_total",
            &[("reason", "client_hello_timeout")],
        ) >= Some(200.0)
    })
    .await;
}

/// A TCP connection that sends a whole ClientHello and nothing after it:
/// its handshake holds a slot of its address until `--header-timeout`.
async fn stalled_after_client_hello(server: &RunningServer) -> tokio::net::TcpStream {
    let config = common::client_tls_config(server.cert_pem(), &[b"http/1.1"]);
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = rustls::ClientConnection::new(config, name).expect("client");
    let mut hello = Vec::new();
    tls.write_tls(&mut hello).expect("ClientHello");
    let mut tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    tcp.write_all(&hello).await.expect("send ClientHello");
    tcp
}

#[tokio::test]
async fn past_the_per_source_cap_handshakes_wait_then_are_closed_at_the_hello_deadline() {
    let config = ServeConfig {
        max_handshakes_per_source: 2,
        client_hello_timeout: Duration::from_millis(500),
        header_timeout: Duration::from_secs(10),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let held = [
        stalled_after_client_hello(&server).await,
        stalled_after_client_hello(&server).await,
    ];
    common::wait_for("both slots held", || {
        rendered_metrics(&server).contains("celhook_connections_open 2")
    })
    .await;
    // A third handshake from the same address waits for a slot; none comes
    // free within its ClientHello deadline, so it is closed and counted.
    let third = common::try_tls_connect(server.local_addr(), server.cert_pem(), &[b"http/1.1"]);
    let third = tokio::time::timeout(Duration::from_secs(5), third)
        .await
        .expect("closed within 5 s");
    assert!(third.is_err(), "the third handshake completed");
    assert_eq!(
        metric(
            &rendered_metrics(&server),
            "celhook_connections_refused_total",
            &[("reason", "source_limit")],
        ),
        Some(1.0)
    );
    // Once the slots are given back, the address is served at once.
    drop(held);
    common::wait_for("the stalled handshakes to be gone", || {
        rendered_metrics(&server).contains("celhook_connections_open 0")
    })
    .await;
    let took = timed_review(&server, Http::H1).await;
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_handshakes_from_one_address_queues_instead_of_failing() {
    // The API server is one address: after a pause it may open many
    // connections at once. Past the cap they wait for a slot.
    let config = ServeConfig {
        max_handshakes_per_source: 2,
        client_hello_timeout: Duration::from_secs(10),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let (addr, pem) = (server.local_addr(), server.cert_pem().to_owned());
    let burst = (0..16).map(|_| {
        let pem = pem.clone();
        async move { common::try_tls_connect(addr, &pem, &[b"http/1.1"]).await }
    });
    let done = common::join_all(burst).await;
    let failed: Vec<_> = done.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of 16 failed: {failed:?}",
        failed.len()
    );
    let text = rendered_metrics(&server);
    assert_eq!(
        metric(
            &text,
            "celhook_connections_refused_total",
            &[("reason", "source_limit")]
        ),
        Some(0.0)
    );
    assert!(text.contains("celhook_connections_open 16"), "{text}");
}

#[tokio::test]
async fn at_the_connection_cap_the_longest_idle_connection_makes_room() {
    let config = ServeConfig {
        max_connections: 4,
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(tls_connect(server.local_addr(), server.cert_pem()).await);
    }
    // A fifth client is served; one idle connection was closed for it.
    let took = timed_review(&server, Http::H1).await;
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let text = rendered_metrics(&server);
    assert!(
        metric(
            &text,
            "celhook_connections_closed_total",
            &[("reason", "evicted")]
        ) >= Some(1.0),
        "{text}"
    );
    assert!(server.connections() <= 4, "{}", server.connections());
}

#[tokio::test]
async fn plain_http_on_the_tls_port_gets_gos_400() {
    let server = start_with(ServeConfig::for_tests(), embedded_catalog()).await;
    let answer = common::plain_http_get(server.local_addr()).await;
    assert!(answer.starts_with("HTTP/1.0 400 Bad Request"), "{answer}");
    assert!(
        answer.contains("Client sent an HTTP request to an HTTPS server."),
        "{answer}"
    );
    // Counted once the server is done with the socket, which may be just
    // after the client read the end of it.
    common::wait_for("the plain-HTTP attempt counted", || {
        metric(
            &rendered_metrics(&server),
            "celhook_tls_handshake_failures_total",
            &[("reason", "plain_http")],
        ) == Some(1.0)
    })
    .await;
}

// === HTTP/2 ===

#[tokio::test]
async fn http2_advertises_stream_and_header_limits_and_enforces_them() {
    let config = ServeConfig {
        header_timeout: Duration::from_millis(800),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let mut conn = raw_h2::connect(server.local_addr(), server.cert_pem(), &[]).await;
    let settings = raw_h2::read_until(&mut conn, Duration::from_secs(3), |f| {
        f.kind == raw_h2::SETTINGS && f.flags & raw_h2::ACK == 0
    })
    .await
    .expect("the server's SETTINGS")
    .settings();
    // MAX_CONCURRENT_STREAMS and MAX_HEADER_LIST_SIZE.
    assert!(settings.contains(&(0x3, 128)), "{settings:?}");
    assert!(settings.contains(&(0x6, 64 * 1024)), "{settings:?}");

    // A header list over 64 KiB is refused, not buffered.
    let big = "x".repeat(100 * 1024);
    let block = post_headers("/validate", &[("x-filler", &big)]);
    let mut bytes = frame(raw_h2::HEADERS, 0, 1, &block[..16_000]);
    for (i, chunk) in block[16_000..].chunks(16_000).enumerate() {
        let last = 16_000 + (i + 1) * 16_000 >= block.len();
        let flags = if last { raw_h2::END_HEADERS } else { 0 };
        bytes.extend(frame(raw_h2::CONTINUATION, flags, 1, chunk));
    }
    conn.write_all(&bytes).await.expect("big headers");
    let refused = raw_h2::read_until(&mut conn, Duration::from_secs(3), |f| {
        (f.kind == raw_h2::HEADERS && f.stream == 1)
            || f.kind == raw_h2::RST_STREAM
            || f.kind == raw_h2::GOAWAY
    })
    .await;
    if let Some(f) = refused {
        // An answer without a body (431) is a refusal too; a review's
        // answer always has one.
        if f.kind == raw_h2::HEADERS {
            assert!(f.flags & raw_h2::END_STREAM != 0, "{f:?}");
            assert_ne!(f.payload, [0x88], "a 200: {f:?}");
        }
    } // else: the connection was closed, a refusal as well

    // Half a header block on a fresh connection is cut at the header timeout.
    let mut conn = raw_h2::connect(server.local_addr(), server.cert_pem(), &[]).await;
    let block = post_headers("/validate", &[]);
    let started = Instant::now();
    conn.write_all(&frame(raw_h2::HEADERS, 0, 1, &block))
        .await
        .expect("half a block");
    assert!(
        raw_h2::closed_within(&mut conn, Duration::from_secs(3)).await,
        "a half-sent header block was held"
    );
    assert!(started.elapsed() >= Duration::from_millis(700));
    common::wait_for("the header timeout counted", || {
        metric(
            &rendered_metrics(&server),
            "celhook_connections_closed_total",
            &[("reason", "header_timeout")],
        ) == Some(1.0)
    })
    .await;
}

#[tokio::test]
async fn an_answer_the_client_never_reads_closes_its_connection() {
    let config = ServeConfig {
        write_timeout: Duration::from_millis(500),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    // A window of zero: the server may send headers but no DATA.
    let mut conn = raw_h2::connect(server.local_addr(), server.cert_pem(), &[(0x4, 0)]).await;
    let body = crontab_review(1);
    let len = body.len().to_string();
    let block = post_headers("/validate", &[("content-length", &len)]);
    let mut bytes = frame(raw_h2::HEADERS, raw_h2::END_HEADERS, 1, &block);
    bytes.extend(frame(raw_h2::DATA, raw_h2::END_STREAM, 1, &body));
    conn.write_all(&bytes).await.expect("request");
    assert!(
        raw_h2::closed_within(&mut conn, Duration::from_secs(4)).await,
        "the stalled answer was held"
    );
    common::wait_for("the stall counted", || {
        metric(
            &rendered_metrics(&server),
            "celhook_connections_closed_total",
            &[("reason", "write_stall")],
        ) == Some(1.0)
    })
    .await;
    // Its bytes are no longer held.
    let took = timed_review(&server, Http::H2).await;
    assert!(took < Duration::from_secs(1));
}

// === CPU-bound rules: off the I/O threads, cut at the deadline ===

/// A CRD whose rule compiles one pattern per list item at run time.
const REGEX_CRD: &str = include_str!("../fixtures/crds/patterns.yaml");

fn pattern_review(items: usize, same_pattern: bool) -> Vec<u8> {
    let l: Vec<Value> = (0..items)
        .map(|i| {
            // Unicode classes repeated: slow to compile, cheap in CEL cost.
            let p = if same_pattern {
                "^[\\pL\\pN]{1,60}$".to_owned()
            } else {
                format!("^[\\pL\\pN]{{1,{}}}$", 40 + i % 900)
            };
            json!({"s": "abc", "p": p})
        })
        .collect();
    let object = json!({
        "apiVersion": "example.com/v1", "kind": "Pattern",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"l": l},
    });
    serde_json::to_vec(&common::admission_review(
        common::V1,
        "CREATE",
        ("example.com", "v1", "Pattern"),
        Some(object),
        None,
    ))
    .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_costly_rule_is_answered_at_the_callers_deadline_and_delays_no_other_review() {
    let loaded = config::load_texts(&[("patterns.yaml", REGEX_CRD)]);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let mut catalog_texts = Vec::new();
    for (name, text) in config::embedded::FILES {
        catalog_texts.push((*name, *text));
    }
    catalog_texts.push(("patterns.yaml", REGEX_CRD));
    let catalog = config::load_texts(&catalog_texts).catalog;
    let config = ServeConfig {
        workers: Some(2),
        ..ServeConfig::for_tests()
    };
    let server = Arc::new(start_with(config, catalog).await);

    // The same pattern for every item is compiled once: a quick answer.
    let client = client(&server, Http::H1);
    let url = validate_url(&server);
    let started = Instant::now();
    let answer = post_raw(&client, &url, pattern_review(2000, true)).await;
    assert_eq!(answer.response()["allowed"], true, "{}", answer.text);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // Four requests whose patterns all differ, each with 3 s.
    let slow: Vec<_> = (0..4)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move {
                let client = common::client(&server, Http::H1);
                let url = common::url(&server, "/validate?timeout=3s");
                let started = Instant::now();
                let answer = post_raw(&client, &url, pattern_review(5000, false)).await;
                (started.elapsed(), answer.status)
            })
        })
        .collect();
    // Meanwhile, normal reviews on other connections keep their pace.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..5 {
        let took = timed_review(&server, Http::H2).await;
        assert!(
            took < Duration::from_secs(1),
            "a normal review took {took:?}"
        );
    }
    for task in slow {
        let (took, status) = task.await.expect("slow task");
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
        assert!(
            took < Duration::from_millis(3500),
            "answered after {took:?}"
        );
    }
    // The evaluations stopped at the deadline: their slots are free again.
    common::wait_for("the slots to be free", || {
        server.state().limits.concurrency.available_permits()
            == celhook::server::DEFAULT_MAX_CONCURRENT_REQUESTS
    })
    .await;
}
