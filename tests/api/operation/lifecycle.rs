//! The binary's life end to end: a stop on SIGTERM under load fails no
//! request sent before it, a request in flight at the stop is answered,
//! and Ctrl-C stops at once where SIGTERM drains.

use super::{ca_client, serving, tls_volume, Load};
use crate::common;

use std::time::{Duration, Instant};

use celhook::certs::Ca;
use celhook::server::ServeConfig;
use common::{crontab_review, start_with, tls_connect, ServeProcess};
use reqwest::{Client, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// === lifecycle: the binary under load through SIGTERM ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_fails_no_request_sent_before_the_stop() {
    let ca = Ca::new("test CA", 30).expect("ca");
    let volume = tls_volume(&serving(&ca));
    let delay = Duration::from_millis(1500);
    let mut celhook = ServeProcess::start([
        "--tls-cert".as_ref(),
        volume.path("tls.crt").as_os_str(),
        "--tls-key".as_ref(),
        volume.path("tls.key").as_os_str(),
        "--shutdown-delay".as_ref(),
        "1500ms".as_ref(),
        "--shutdown-timeout".as_ref(),
        "5s".as_ref(),
    ])
    .await;
    let (addr, metrics_addr) = (celhook.addr.clone(), celhook.metrics_addr.clone());

    // A denial is logged at info, inside the review's span, with the
    // failed rules and without the body.
    let client = ca_client(&ca.pair.cert_pem, None, false);
    let denied = common::post_raw(
        &client,
        &format!("https://{addr}/validate?timeout=10s"),
        crontab_review(20),
    )
    .await;
    assert_eq!(denied.response()["allowed"], false);
    let line = loop {
        let line = tokio::time::timeout(Duration::from_secs(10), celhook.log.recv())
            .await
            .expect("a denial log line within 10 s")
            .expect("log open");
        let value: Value = serde_json::from_str(&line).expect("JSON log line");
        if value["message"] == "denied" {
            break value;
        }
    };
    assert_eq!(line["level"], "INFO", "{line}");
    let span = &line["span"];
    assert_eq!(span["name"], "admission", "{line}");
    assert_eq!(span["uid"], "test-create-crontab", "{line}");
    assert_eq!(span["kind"], "CronTab", "{line}");
    assert_eq!(span["operation"], "CREATE", "{line}");
    assert_eq!(span["namespace"], "default", "{line}");
    assert_eq!(span["object_name"], "load", "{line}");
    assert_eq!(span["outcome"], "denied", "{line}");
    assert_eq!(span["user"], "kubernetes-admin", "{line}");
    // The failed rules as a JSON array of {field, message}, not debug text.
    let rules = line["failed_rules"]
        .as_array()
        .expect("an array of failed rules");
    assert_eq!(rules.len(), 1, "{line}");
    assert_eq!(rules[0]["field"], "spec", "{line}");
    assert!(
        rules[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("replicas should be smaller than or equal to maxReplicas")),
        "{line}"
    );
    assert!(line.get("body").is_none(), "{line}");

    let url = format!("https://{addr}/validate?timeout=10s");
    // HTTP/1.1 clients, some pooled, some with a connection per request:
    // new connections keep arriving until the listener closes.
    let clients = vec![
        ca_client(&ca.pair.cert_pem, None, false),
        ca_client(&ca.pair.cert_pem, None, true),
        ca_client(&ca.pair.cert_pem, None, true),
    ];
    let load = Load::start(clients, url, crontab_review(5));
    tokio::time::sleep(Duration::from_millis(300)).await;

    let plain = Client::new();
    let ready = plain
        .get(format!("http://{metrics_addr}/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), StatusCode::OK);

    let sigterm = Instant::now();
    celhook.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Not ready at once, still serving during the delay.
    let not_ready = plain
        .get(format!("http://{metrics_addr}/readyz"))
        .send()
        .await
        .expect("readyz during the delay");
    assert_eq!(not_ready.status(), StatusCode::SERVICE_UNAVAILABLE);

    let status = tokio::time::timeout(Duration::from_secs(15), celhook.child.wait())
        .await
        .expect("exits within 15 s of SIGTERM")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    let stats = load.finish("SIGTERM").await;
    // Requests sent before the listener stopped (SIGTERM + delay; a small
    // margin for the moment of closing) all got their answer.
    let stop = sigterm + delay - Duration::from_millis(100);
    let before_stop: Vec<_> = stats
        .failures
        .iter()
        .filter(|(sent, _)| *sent < stop)
        .collect();
    assert!(
        before_stop.is_empty(),
        "requests sent before the stop failed: {before_stop:?}"
    );
    assert!(stats.ok > 20, "too little load to tell: {}", stats.ok);
}

/// A request in flight when the listener stops is still answered (drain).
#[tokio::test]
async fn a_request_in_flight_at_the_stop_is_answered() {
    let server = start_with(ServeConfig::for_tests(), common::embedded_catalog()).await;
    let body = crontab_review(5);
    let (first, rest) = body.split_at(10);
    let mut stream = tls_connect(server.local_addr(), server.cert_pem()).await;
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(first).await.expect("first part");
    stream.flush().await.expect("flush");
    tokio::time::sleep(Duration::from_millis(100)).await;

    let stopping = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream.write_all(rest).await.expect("rest of the body");
    stream.flush().await.expect("flush");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
        .await
        .expect("answered within 5 s")
        .ok();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"allowed\":true"), "{answer}");
    stopping.await.expect("join").expect("stopped");
}

// === lifecycle: Ctrl-C in a terminal ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_at_once_where_sigterm_drains() {
    // A shutdown delay long enough that a drain would show: SIGTERM keeps
    // serving through it, SIGINT does not wait for it.
    let delay = ["--shutdown-delay", "10s", "--shutdown-timeout", "10s"];
    common::install_crypto();

    let mut celhook = ServeProcess::start(delay).await;
    let sent = Instant::now();
    celhook.signal("INT");
    let status = tokio::time::timeout(Duration::from_secs(3), celhook.child.wait())
        .await
        .expect("exits within 3 s of SIGINT")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    assert!(sent.elapsed() < Duration::from_secs(3));

    // SIGTERM drains; a Ctrl-C during the drain ends it at once.
    let mut celhook = ServeProcess::start(delay).await;
    celhook.signal("TERM");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(celhook.is_running(), "SIGTERM waits out the shutdown delay");
    let plain = Client::new();
    let readyz = plain
        .get(format!("http://{}/readyz", celhook.metrics_addr))
        .send()
        .await
        .expect("readyz during the drain");
    assert_eq!(readyz.status(), StatusCode::SERVICE_UNAVAILABLE);
    let sent = Instant::now();
    celhook.signal("INT");
    let status = tokio::time::timeout(Duration::from_secs(3), celhook.child.wait())
        .await
        .expect("exits within 3 s of SIGINT during the drain")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    assert!(sent.elapsed() < Duration::from_secs(3));
}
