//! `POST /convert` end to end with large bodies: the conversion's own body
//! limit, a 10,000-object review, answers streamed as they are written
//! (a failure late in one, a caller that stops reading it) and the
//! conversion metrics. Success answers are checked by the API server's
//! rules (`convert::api_server_accepts`).

use crate::common;
use crate::convert::{
    api_server_accepts, convert_failure, convert_ok, docs_crontabs, pizza, review, PIZZA_V1ALPHA1,
    PIZZA_V1BETA1, REVIEW_V1, REVIEW_V1BETA1,
};

use std::time::Instant;

use celhook::server::ServeConfig;
use common::{client, post_raw, post_review, Http};
use reqwest::StatusCode;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_has_its_own_body_limit() {
    let config = ServeConfig {
        max_request_bytes: 1024,
        max_convert_request_bytes: 64 * 1024,
        ..ServeConfig::for_tests()
    };
    let server = common::start_with(config, common::embedded_catalog()).await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    // Larger than the /validate limit, within the /convert one.
    let objects: Vec<Value> = (0..20)
        .map(|i| pizza(PIZZA_V1ALPHA1, &format!("p{i}"), json!(["ham"])))
        .collect();
    let request = review(REVIEW_V1, "big", PIZZA_V1BETA1, objects);
    assert!(serde_json::to_vec(&request).unwrap().len() > 1024);
    assert_eq!(convert_ok(&client, &url, &request).await.len(), 20);

    let objects: Vec<Value> = (0..1000)
        .map(|i| pizza(PIZZA_V1ALPHA1, &format!("p{i}"), json!(["ham"])))
        .collect();
    let answer = post_review(
        &client,
        &url,
        &review(REVIEW_V1, "too-big", PIZZA_V1BETA1, objects),
    )
    .await;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text
    );
    assert!(answer.text.contains("65536 bytes"), "{}", answer.text);
    server.stop().await.expect("stops");
}

/// A CronTab of about 4 KiB: most of it a kubectl last-applied annotation,
/// as on real objects.
pub(crate) fn big_crontab(i: usize) -> Value {
    let applied = format!(
        "{{\"apiVersion\":\"example.com/v1beta1\",\"kind\":\"CronTab\",\"pad\":\"{}\"}}",
        "x".repeat(3700)
    );
    json!({
        "apiVersion": "example.com/v1beta1", "kind": "CronTab",
        "metadata": {"name": format!("crontab-{i}"), "namespace": "default", "uid": format!("uid-{i}"),
                     "resourceVersion": "1", "labels": {"app": "cron"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied}},
        "hostPort": format!("host-{i}.example.com:{}", 1000 + i)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_objects_of_4_kib_convert_in_one_review() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = common::client_builder(&server)
        .timeout(std::time::Duration::from_secs(300))
        .build()
        .expect("client");
    let objects: Vec<Value> = (0..10_000).map(big_crontab).collect();
    let request = review(REVIEW_V1, "large", "example.com/v1", objects);
    let body = serde_json::to_vec(&request).expect("serializes");
    assert!(body.len() > 40_000_000, "{} bytes", body.len());
    let started = Instant::now();
    let answer = post_raw(&client, &url, body.clone()).await;
    let elapsed = started.elapsed();
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{}",
        &answer.text[..answer.text.len().min(500)]
    );
    let out = api_server_accepts(&request, &answer.json());
    assert_eq!(out.len(), 10_000);
    assert_eq!(out[9_999]["port"], "10999");
    eprintln!(
        "10,000-object review: {} bytes in, {} bytes out, {elapsed:?}",
        body.len(),
        answer.text.len()
    );
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_late_in_a_streamed_answer_ends_it_as_a_failure() {
    // 1,499 objects convert (and are sent, the answer being past its
    // streaming size) before object 1,499 fails: the answer ends as a
    // Failure, which the API server reads before any object.
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    for http in common::BOTH {
        let client = client(&server, http);
        let mut objects: Vec<Value> = (0..2_000).map(big_crontab).collect();
        objects[1_499]["apiVersion"] = json!("example.com/v9");
        let request = review(REVIEW_V1, "late", "example.com/v1", objects);
        let answer = post_review(&client, &url, &request).await;
        assert_eq!(answer.status, StatusCode::OK, "{http:?}");
        let answer = answer.json();
        let resp = &answer["response"];
        assert_eq!(resp["uid"], "late");
        assert_eq!(resp["result"]["status"], "Failure", "{http:?}");
        let message = resp["result"]["message"].as_str().expect("message");
        assert!(
            message.starts_with("object 1499 (default/crontab-1499): "),
            "{message}"
        );
        let sent = resp["convertedObjects"].as_array().expect("objects");
        assert_eq!(sent.len(), 1_499, "{http:?}");
        // The next review on the same connection is whole.
        let objects: Vec<Value> = (0..3).map(big_crontab).collect();
        let request = review(REVIEW_V1, "after", "example.com/v1", objects);
        assert_eq!(convert_ok(&client, &url, &request).await.len(), 3);
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_answer_is_sent_as_written_a_small_one_with_its_length() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    for http in common::BOTH {
        let client = client(&server, http);
        for (n, streamed) in [(3, false), (200, true)] {
            let objects: Vec<Value> = (0..n).map(big_crontab).collect();
            let request = review(REVIEW_V1BETA1, "sizes", "example.com/v1", objects);
            let resp = client
                .post(&url)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&request).expect("serializes"))
                .send()
                .await
                .expect("answered");
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(resp.version(), http.version());
            let length = resp.headers().get("content-length").cloned();
            let chunked = resp.headers().get("transfer-encoding").cloned();
            let text = resp.text().await.expect("the whole answer");
            let answer: Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(api_server_accepts(&request, &answer).len(), n);
            assert!(text.len() > 800_000 || !streamed, "{} bytes", text.len());
            // Over HTTP/1.1 a streamed answer is chunked; over HTTP/2 it
            // simply has no length.
            assert_eq!(length.is_none(), streamed, "{http:?} {n}: {length:?}");
            let want_chunked = streamed && http == Http::H1;
            assert_eq!(
                chunked.as_ref().is_some_and(|c| c == "chunked"),
                want_chunked,
                "{http:?} {n}: {chunked:?}"
            );
        }
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_stops_reading_a_streamed_answer_frees_its_slot_at_the_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // One slot: while the stalled conversion holds it, nothing else runs.
    // The body may pause: its 20 MB cross unoptimized TLS on both ends
    // while the other tests share the cores, and a CI run once had the
    // writer wait 2 s for a core (408, body stalled), which is not what
    // this test is about.
    let config = ServeConfig {
        max_concurrent_requests: 1,
        body_idle_timeout: std::time::Duration::from_secs(30),
        ..ServeConfig::for_tests()
    };
    let server = common::start_with(config, common::embedded_catalog()).await;
    let objects: Vec<Value> = (0..5_000).map(big_crontab).collect();
    let request = review(REVIEW_V1, "stalled", "example.com/v1", objects);
    let body = serde_json::to_vec(&request).expect("serializes");
    let mut tls = common::tls_connect(server.local_addr(), server.cert_pem()).await;
    // 10 s: the 20 MB body goes through unoptimized TLS on both ends while
    // the other tests share the cores; with 2 s (1.8 s to read the body) a
    // CI run once timed out before the answer began, with 4 s a run beside
    // a release build did, and with 6 s a fresh clone's run did (408 after
    // 5.4 s of body).
    let head = format!(
        "POST /convert?timeout=10s HTTP/1.1\r\nhost: celhook\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.expect("head");
    tls.write_all(&body).await.expect("body");
    let mut first = vec![0u8; 4096];
    let n = tls.read(&mut first).await.expect("the answer starts");
    let text = String::from_utf8_lossy(&first[..n]).to_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    // Not read further: the conversion waits for the caller, then stops at
    // the deadline and gives its slot back.
    let started = Instant::now();
    let other = client(&server, Http::H1);
    let small = review(REVIEW_V1, "next", "example.com/v1", vec![big_crontab(0)]);
    let url = common::url(&server, "/convert?timeout=16s");
    let out = convert_ok(&other, &url, &small).await;
    assert_eq!(out.len(), 1);
    let waited = started.elapsed();
    // At the deadline, well before the 10 s it asked for plus a margin.
    assert!(
        waited < std::time::Duration::from_secs(13),
        "the slot came back after {waited:?}"
    );
    // What the stalled caller reads now ends without the answer's end.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tls.read_to_end(&mut rest),
    )
    .await
    .expect("the stalled answer ends");
    let total = n + rest.len();
    assert!(
        read.is_err() || !rest.ends_with(b"0\r\n\r\n"),
        "the stalled answer was completed ({total} bytes)"
    );
    assert!(total < body.len(), "{total} bytes of a stalled answer");
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversions_are_counted_in_the_metrics() {
    let server = common::start().await;
    let client = client(&server, Http::H2);
    let url = common::url(&server, "/convert");
    let request = review(REVIEW_V1, "m1", "example.com/v1", docs_crontabs());
    convert_ok(&client, &url, &request).await;
    let bad = review(REVIEW_V1, "m2", "example.com/v9", docs_crontabs());
    convert_failure(&client, &url, &bad).await;

    let text = client
        .get(common::url(&server, "/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics body");
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .to_owned()
    };
    assert!(line(
        "celhook_conversion_objects_total{crd=\"crontabs.example.com\",from=\"v1beta1\",to=\"v1\"}"
    )
    .ends_with(" 2"));
    assert!(line(
        "celhook_conversion_failures_total{crd=\"crontabs.example.com\",failure_type=\"call\"}"
    )
    .ends_with(" 1"));
    // Counted as conversions by the answer's result.status, not as admissions.
    let reviews = |outcome| {
        common::metric(
            &text,
            "celhook_conversion_requests_total",
            &[
                ("crd", "crontabs.example.com"),
                ("review_version", "v1"),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(reviews("success"), Some(1.0), "{text}");
    assert_eq!(reviews("failure"), Some(1.0), "{text}");
    assert_eq!(
        common::metric(&text, "celhook_admission_requests_total", &[]),
        None
    );
    // A body that is no ConversionReview gets no review answer: `error`.
    let broken = post_raw(&client, &url, "{not json").await;
    assert_eq!(broken.status, StatusCode::BAD_REQUEST);
    let text = common::rendered_metrics(&server);
    assert_eq!(
        common::metric(
            &text,
            "celhook_conversion_requests_total",
            &[
                ("crd", "unknown"),
                ("review_version", "unknown"),
                ("outcome", "error")
            ],
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        common::metric(&text, "celhook_admission_requests_total", &[]),
        None
    );
    server.stop().await.expect("stops");
}
