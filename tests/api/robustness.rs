//! Resource bounds under abuse, end to end over real TLS sockets: slow and
//! stalled clients, many large bodies at once, oversized and deeply nested
//! bodies, rules and objects that hit the CEL cost limits, and a flood of
//! TLS handshakes. In every case the server keeps answering the other
//! requests correctly, and within their deadlines.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use celhook::config;
use celhook::server::{RunningServer, ServeConfig};
use common::{
    admission_review, client, crontab, crontab_review, embedded_catalog, fixture_path, metric,
    post_raw, rendered_metrics, start_with, tls_connect, validate_url, Http, CRONTAB, V1,
};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends the head of a POST declaring `declared` body bytes, then only
/// `partial` of them, and waits for the answer's first bytes (or the end of
/// the connection). Returns how long that took, the answer, and whether the
/// server closed the connection after it.
async fn stalled_post(
    server: &RunningServer,
    path: &str,
    declared: usize,
    partial: &[u8],
) -> (Duration, String, bool) {
    let mut stream = tls_connect(server.local_addr(), server.cert_pem()).await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n"
    );
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(partial).await.expect("write body");
    stream.flush().await.expect("flush");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .expect("an answer within 10 s")
        .unwrap_or(0);
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&buf[..n]).into_owned();
    // After the answer, the server hangs up rather than wait for the rest.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
        .await
        .is_ok();
    (took, answer, closed)
}

// === slow and stalled clients ===

#[tokio::test]
async fn a_stalled_body_gets_408_before_the_callers_timeout_and_is_disconnected() {
    let server = start_with(ServeConfig::for_tests(), embedded_catalog()).await;
    // The client stalls its body; the API server would give up at 1 s.
    let (took, answer, closed) =
        stalled_post(&server, "/validate?timeout=1s", 1000, b"{\"apiVersion\"").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(closed, "the connection is closed after the 408");
    // Nominally 900 ms (a tenth before the caller's 1 s); the upper bound
    // leaves room for a loaded CI machine.
    assert!(
        took >= Duration::from_millis(850) && took < Duration::from_millis(2500),
        "answered after {took:?}"
    );
    let text = rendered_metrics(&server);
    assert_eq!(
        metric(
            &text,
            "celhook_requests_deadline_exceeded_total",
            &[("handler", "validate")]
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &text,
            "celhook_admission_requests_total",
            &[("crd", "unknown"), ("outcome", "error")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_stalled_body_holds_no_worker_slot() {
    // One worker thread, one request at a time: a stalled upload that held
    // the slot would make every other request wait for its deadline.
    let config = ServeConfig {
        max_concurrent_requests: 1,
        request_timeout: Duration::from_secs(4),
        ..ServeConfig::for_tests()
    };
    let server = Arc::new(start_with(config, embedded_catalog()).await);
    let stalled = {
        let server = server.clone();
        tokio::spawn(async move { stalled_post(&server, "/validate", 1000, b"{").await })
    };
    common::wait_for("the stalled upload to be in flight", || {
        server.state().metrics.render().is_ok_and(|t| {
            metric(
                &String::from_utf8_lossy(&t),
                "celhook_requests_in_flight",
                &[("handler", "validate")],
            ) == Some(1.0)
        })
    })
    .await;
    let client = client(&server, Http::H2);
    for replicas in [1, 2, 3] {
        let answer = post_raw(&client, &validate_url(&server), crontab_review(replicas)).await;
        assert_eq!(answer.response()["allowed"], true);
    }
    assert!(
        !stalled.is_finished(),
        "the others were answered while the upload still stalled"
    );
    let (_, answer, _) = stalled.await.expect("stalled task");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn a_client_that_never_finishes_its_tls_handshake_or_head_is_disconnected() {
    let config = ServeConfig {
        header_timeout: Duration::from_millis(500),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;

    // A TCP connection that never starts the handshake.
    let mut tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("disconnected within 5 s")
        .unwrap_or(0);
    assert_eq!(n, 0, "nothing is sent to a client that never said hello");
    assert!(started.elapsed() < Duration::from_secs(3));

    // A TLS connection that never finishes its request head.
    let mut stream = tls_connect(server.local_addr(), server.cert_pem()).await;
    let started = Instant::now();
    stream
        .write_all(b"POST /validate HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .expect("write");
    stream.flush().await.expect("flush");
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("disconnected within 5 s")
        .unwrap_or(0);
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(
        n == 0 || answer.starts_with("HTTP/1.1 408"),
        "unexpected answer: {answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

// === memory: bodies ===

#[tokio::test]
async fn a_body_past_the_in_flight_byte_budget_gets_503_with_retry_after_at_once() {
    let config = ServeConfig {
        max_in_flight_bytes: 1024 * 1024,
        request_timeout: Duration::from_secs(3),
        ..ServeConfig::for_tests()
    };
    let server = Arc::new(start_with(config, embedded_catalog()).await);
    // Bytes are held as they arrive, and one connection may hold at most
    // half of the budget: two uploads that sent 400 KiB of their declared
    // 700 KiB and stall hold 800 KiB.
    let sent = vec![b' '; 400 * 1024];
    let stalled: Vec<_> = (0..2)
        .map(|_| {
            let (server, sent) = (server.clone(), sent.clone());
            tokio::spawn(async move { stalled_post(&server, "/validate", 700 * 1024, &sent).await })
        })
        .collect();
    common::wait_for("800 KiB to be held", || {
        let text = rendered_metrics(&server);
        // Their heads are held too: a few hundred bytes.
        metric(&text, "celhook_requests_in_flight_bytes", &[])
            .is_some_and(|held| (800.0 * 1024.0..801.0 * 1024.0).contains(&held))
    })
    .await;

    // 300 KiB more does not fit: refused at once, with a hint to retry.
    let client = client(&server, Http::H2);
    let filler = " ".repeat(300 * 1024);
    let mut body = crontab_review(1);
    body.extend_from_slice(filler.as_bytes());
    let started = Instant::now();
    let answer = post_raw(&client, &validate_url(&server), body.clone()).await;
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        answer.text
    );
    assert_eq!(answer.retry_after.as_deref(), Some("1"));
    assert!(
        answer.text.contains("body bytes in flight"),
        "{}",
        answer.text
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused after {:?}",
        started.elapsed()
    );

    // A small review fits beside the reservation and is served, on the same
    // HTTP/2 connection as the refused one.
    let answer = post_raw(&client, &validate_url(&server), crontab_review(2)).await;
    assert_eq!(answer.response()["allowed"], true);

    for stalled in stalled {
        let (_, answer, _) = stalled.await.expect("stalled task");
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    }
    // Every reservation is returned, and the large review is now served.
    let text = rendered_metrics(&server);
    assert_eq!(
        metric(&text, "celhook_requests_in_flight_bytes", &[]),
        Some(0.0)
    );
    assert!(metric(&text, "celhook_requests_overloaded_total", &[]).unwrap_or(0.0) >= 1.0);
    let answer = post_raw(&client, &validate_url(&server), body).await;
    assert_eq!(answer.response()["allowed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_bodies_at_once_stay_within_the_byte_budget_and_all_get_through_on_retry() {
    // 24 reviews of 1 MiB at once over HTTP/2 against a 4 MiB budget: those
    // that do not fit get 503 with Retry-After (never a timeout, never
    // another error), the bodies held never pass the budget, and a client
    // that retries as told gets every review answered.
    let budget = 4 * 1024 * 1024;
    let config = ServeConfig {
        max_in_flight_bytes: budget,
        workers: Some(2),
        ..ServeConfig::for_tests()
    };
    let server = Arc::new(start_with(config, embedded_catalog()).await);
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (server, peak, done) = (server.clone(), peak.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                let text = rendered_metrics(&server);
                let held = metric(&text, "celhook_requests_in_flight_bytes", &[]).unwrap_or(0.0);
                peak.fetch_max(held as usize, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let filler = " ".repeat(1024 * 1024);
    let client = client(&server, Http::H2);
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..24 {
        let (client, url, refused) = (client.clone(), validate_url(&server), refused.clone());
        let mut body = crontab_review(i % 10);
        body.extend_from_slice(filler.as_bytes());
        tasks.push(tokio::spawn(async move {
            loop {
                let answer = post_raw(&client, &url, body.clone()).await;
                if answer.status == StatusCode::SERVICE_UNAVAILABLE {
                    assert_eq!(answer.retry_after.as_deref(), Some("1"));
                    refused.fetch_add(1, Ordering::Relaxed);
                    // Retry sooner than told: the test need not take seconds.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                return answer;
            }
        }));
    }
    for task in tasks {
        let answer = task.await.expect("task");
        assert_eq!(answer.response()["allowed"], true);
    }
    done.store(true, Ordering::Relaxed);
    sampler.await.expect("sampler");
    let peak = peak.load(Ordering::Relaxed);
    assert!(peak > 0, "the sampler saw bodies in flight");
    assert!(
        peak <= budget,
        "held {peak} bytes, over the budget of {budget}"
    );
    assert!(
        refused.load(Ordering::Relaxed) > 0,
        "24 MiB at once against 4 MiB: some were refused"
    );
}

#[tokio::test]
async fn a_body_declared_over_the_limit_is_refused_before_it_is_sent() {
    let config = ServeConfig {
        max_request_bytes: 64 * 1024,
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    // Declares 1 GiB and sends nothing of it: the 413 comes at once.
    let (took, answer, closed) = stalled_post(&server, "/validate", 1 << 30, b"").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("65536 bytes"), "{answer}");
    assert!(closed, "the connection is closed rather than read");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
}

// === parsing ===

#[tokio::test]
async fn deeply_nested_json_is_refused_not_a_stack_overflow() {
    let server = start_with(ServeConfig::for_tests(), embedded_catalog()).await;
    let client = client(&server, Http::H2);
    // 100,000 nested arrays in the object's spec, which the rules read.
    let depth = 100_000;
    let mut object = crontab("deep", json!({"replicas": 1}));
    object["spec"]["image"] = json!("PLACEHOLDER");
    let text = serde_json::to_string(&admission_review(V1, "CREATE", CRONTAB, Some(object), None))
        .expect("json");
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let admission = text.replace("\"PLACEHOLDER\"", &nested);
    // The same in its status, which no rule reads: scanned without being
    // built (no recursion), and the review answered.
    let mut object = crontab(
        "deep",
        json!({"minReplicas": 1, "replicas": 1, "maxReplicas": 1}),
    );
    object["status"] = json!("PLACEHOLDER");
    let unread =
        serde_json::to_string(&admission_review(V1, "CREATE", CRONTAB, Some(object), None))
            .expect("json")
            .replace("\"PLACEHOLDER\"", &nested);
    let conversion = serde_json::to_string(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "deep",
            "desiredAPIVersion": "stable.example.com/v1",
            "objects": [{
                "apiVersion": "stable.example.com/v1beta1",
                "kind": "CronTab",
                "metadata": {"name": "deep", "namespace": "default"},
                "status": "PLACEHOLDER",
            }],
        },
    }))
    .expect("json")
    .replace("\"PLACEHOLDER\"", &nested);
    let answer = post_raw(&client, &validate_url(&server), admission).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.text);
    assert!(
        answer.text.contains("recursion limit exceeded"),
        "{}",
        answer.text
    );
    let answer = post_raw(&client, &validate_url(&server), unread).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.response()["allowed"], true, "{}", answer.text);
    // A conversion parses each object in turn: the deep one fails the
    // review as the API server expects a failed conversion, with a reason.
    let answer = post_raw(&client, &common::url(&server, "/convert"), conversion).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let result = &answer.json()["response"]["result"];
    assert_eq!(result["status"], "Failure", "{result}");
    let message = result["message"].as_str().expect("message");
    assert!(message.contains("recursion limit exceeded"), "{message}");
    // The worker survived and answers the next review.
    let answer = post_raw(&client, &validate_url(&server), crontab_review(3)).await;
    assert_eq!(answer.response()["allowed"], true);
}

#[test]
fn deeply_nested_rules_and_configs_are_refused_at_load() {
    // A rule nested past the parser's recursion limit.
    let rule = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
    let crd = std::fs::read_to_string(fixture_path("crds/valid/crontab.yaml")).expect("fixture");
    let deep_rule = crd.replacen(
        "              x-kubernetes-validations:\n",
        &format!("              x-kubernetes-validations:\n                - rule: {rule:?}\n"),
        1,
    );
    assert_ne!(deep_rule, crd, "the rule was inserted");
    let loaded = config::load_texts(&[("deep-rule.yaml", deep_rule.as_str())]);
    let problems: Vec<String> = loaded
        .report
        .crds
        .iter()
        .flat_map(|c| &c.errors)
        .map(|p| format!("{}: {}", p.path.as_deref().unwrap_or(""), p.reason))
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("x-kubernetes-validations") && p.contains("recursion")),
        "{problems:#?}"
    );

    // A YAML document nested 100,000 deep.
    let deep_yaml = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let loaded = config::load_texts(&[("deep.yaml", deep_yaml.as_str())]);
    assert!(loaded.report.has_errors());
    assert_eq!(loaded.report.errors[0].file, "deep.yaml");
}

// === CEL cost limits ===

fn costly_catalog() -> config::Catalog {
    let text = std::fs::read_to_string(fixture_path("crds/costly/costly.yaml")).expect("fixture");
    let loaded = config::load_texts(&[("costly.yaml", text.as_str())]);
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    loaded.catalog
}

fn costly_review(field: &str, items: usize) -> Vec<u8> {
    let object = json!({
        "apiVersion": "example.com/v1",
        "kind": "Costly",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {field: vec!["a"; items]},
    });
    serde_json::to_vec(&admission_review(
        V1,
        "CREATE",
        ("example.com", "v1", "Costly"),
        Some(object),
        None,
    ))
    .expect("json")
}

#[tokio::test]
async fn rules_past_the_cost_limits_get_the_api_servers_errors_and_free_the_worker() {
    let server = start_with(ServeConfig::for_tests(), costly_catalog()).await;
    let client = client(&server, Http::H2);
    let url = validate_url(&server);

    // One rule past the per-expression limit (1,000,000).
    let answer = post_raw(&client, &url, costly_review("one", 300_000)).await;
    let response = answer.response();
    assert_eq!(response["allowed"], false);
    let message = response["status"]["message"].as_str().expect("message");
    assert!(
        message.contains("no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, x.startsWith('a'))"),
        "{message}"
    );

    // Twelve rules each within the limit, together past the object's
    // budget (10,000,000).
    let answer = post_raw(&client, &url, costly_review("many", 180_000)).await;
    let response = answer.response();
    assert_eq!(response["allowed"], false);
    let causes = response["status"]["details"]["causes"]
        .as_array()
        .expect("causes");
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        causes[0]["message"],
        "Invalid value: \"array\": validation failed due to running out of cost budget, no further validation rules will be run"
    );
    assert_eq!(causes[0]["field"], "spec.many");

    // The single worker is free again: small objects pass at once.
    let answer = post_raw(&client, &url, costly_review("many", 10)).await;
    assert_eq!(answer.response()["allowed"], true);
    let text = rendered_metrics(&server);
    assert!(metric(&text, "celhook_rule_errors_total", &[]).unwrap_or(0.0) >= 1.0);
    // Each costly review ran for milliseconds: its attempt on the
    // connection's thread stopped at 1 ms and the pool answered it.
    let retries = metric(&text, "celhook_admission_inline_retries_total", &[]);
    assert!(retries.is_some_and(|n| n >= 2.0), "{retries:?}");
}

/// A server whose reviews get `budget` on their connection's thread:
/// what it answers the costly review that takes milliseconds, and how many
/// reviews it ran again on the evaluation pool.
async fn costly_review_under_inline_budget(budget: Duration, http: Http) -> (bool, f64) {
    let config = ServeConfig {
        inline_budget: budget,
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, costly_catalog()).await;
    let client = client(&server, http);
    let url = validate_url(&server);
    let answer = post_raw(&client, &url, costly_review("many", 180_000)).await;
    let allowed = answer.response()["allowed"] == true;
    // A small one after it, answered as well.
    let small = post_raw(&client, &url, costly_review("many", 10)).await;
    assert_eq!(small.response()["allowed"], true);
    let text = rendered_metrics(&server);
    let retries = metric(&text, "celhook_admission_inline_retries_total", &[]);
    (allowed, retries.unwrap_or(0.0))
}

#[tokio::test]
async fn a_longer_inline_budget_answers_a_costly_review_without_running_it_twice() {
    // The review above, retried under the default budget, with a budget
    // far past what it takes.
    let (allowed, retries) =
        costly_review_under_inline_budget(Duration::from_secs(60), Http::H2).await;
    assert!(!allowed);
    assert_eq!(retries, 0.0);
}

#[tokio::test]
async fn a_zero_inline_budget_sends_every_review_to_the_pool_without_a_retry() {
    // With no budget it goes to the pool at once, and its answer is the
    // same.
    let (allowed, retries) = costly_review_under_inline_budget(Duration::ZERO, Http::H1).await;
    assert!(!allowed);
    assert_eq!(retries, 0.0);
}

// === connections ===

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_tls_handshakes_does_not_starve_an_established_connection() {
    let config = ServeConfig {
        workers: Some(2),
        max_connection_rate: 8,
        // The whole flood comes from 127.0.0.1: the per-source cap would
        // refuse it before it could take any CPU (tested on its own).
        max_handshakes_per_source: 1000,
        header_timeout: Duration::from_millis(500),
        ..ServeConfig::for_tests()
    };
    let server = Arc::new(start_with(config, embedded_catalog()).await);
    // The API server's connection, established before the flood.
    let client = client(&server, Http::H2);
    let answer = post_raw(&client, &validate_url(&server), crontab_review(1)).await;
    assert_eq!(answer.response()["allowed"], true);

    let stop = Arc::new(AtomicBool::new(false));
    let handshakes = Arc::new(AtomicUsize::new(0));
    let mut flood = Vec::new();
    // Full handshakes, as fast as they complete.
    for _ in 0..12 {
        let (server, stop, handshakes) = (server.clone(), stop.clone(), handshakes.clone());
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let stream = tls_connect(server.local_addr(), server.cert_pem()).await;
                drop(stream);
                handshakes.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Connections that send half a ClientHello and wait.
    for _ in 0..100 {
        let (server, stop) = (server.clone(), stop.clone());
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut tcp) = tokio::net::TcpStream::connect(server.local_addr()).await else {
                    continue;
                };
                let _ = tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await;
                let mut buf = [0u8; 16];
                let _ = tokio::time::timeout(Duration::from_secs(2), tcp.read(&mut buf)).await;
            }
        }));
    }

    // Meanwhile, reviews on the established connection keep their pace.
    let mut slowest = Duration::ZERO;
    let mut answered = 0;
    // At least 3 s, and on a loaded machine (debug TLS is slow) until the
    // flood has made 20 handshakes, within 20 s.
    let until = Instant::now() + Duration::from_secs(3);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until
        || (handshakes.load(Ordering::Relaxed) < 20 && Instant::now() < deadline)
    {
        let started = Instant::now();
        let answer = post_raw(
            &client,
            &validate_url(&server),
            crontab_review(answered % 10),
        )
        .await;
        assert_eq!(answer.response()["allowed"], true);
        slowest = slowest.max(started.elapsed());
        answered += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for task in flood {
        task.abort();
    }
    let handshakes = handshakes.load(Ordering::Relaxed);
    assert!(
        handshakes >= 20,
        "the flood was real: {handshakes} handshakes"
    );
    assert!(answered >= 10, "only {answered} reviews answered");
    // The API server's default webhook timeout is 10 s; a starved
    // connection would wait for the flood to end.
    assert!(
        slowest < Duration::from_secs(1),
        "slowest review took {slowest:?}"
    );
}
