//! The load generator against celhook itself, serving the peer workload of
//! tests/fixtures/perf/: both HTTP versions, the open and closed loops,
//! verdicts checked, reviews built from files, errors counted, the binary's
//! output and its HTML report.

use crate::{install_crypto, path, perf_fixture};

use std::process::Command;
use std::time::Duration;

use celhook::config::{self, ConfigSource};
use celhook::server::{self, RunningServer, ServeConfig};
use celhook_loadtest::args::Args;
use celhook_loadtest::run::run;
use clap::Parser;
use serde_json::Value;

/// celhook serving the peer workload's 17 core + 2 transition rules.
async fn celhook_server() -> (RunningServer, tempfile::TempDir) {
    install_crypto();
    let loaded = config::load(&ConfigSource::Dir(perf_fixture("core")));
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let server = server::spawn(ServeConfig::for_tests(), loaded.catalog)
        .await
        .expect("celhook starts");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("ca.pem"), server.cert_pem()).expect("writing the CA");
    (server, dir)
}

fn args(server: &RunningServer, dir: &tempfile::TempDir, rest: &[&str]) -> Args {
    let ca = dir.path().join("ca.pem");
    let url = format!("{}/validate?timeout=10s", server.base_url());
    let mut argv = vec![
        "celhook-loadtest".to_owned(),
        "--url".into(),
        url,
        "--ca-file".into(),
        ca.display().to_string(),
        "--quiet".into(),
        "--warmup".into(),
        "200ms".into(),
    ];
    argv.extend(rest.iter().map(|s| s.to_string()));
    Args::try_parse_from(argv).expect("arguments parse")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_over_http1_by_default_checks_every_answer() {
    let (server, dir) = celhook_server().await;
    let review = path("review-create.json");
    let a = args(
        &server,
        &dir,
        &["-n", "300", "-c", "8", "admission", "--review", &review],
    );
    let report = run(&a).await.expect("the run completes");
    assert_eq!(report.mode, "closed");
    assert_eq!(
        (report.requests, report.ok, report.failed),
        (300, 300, 0),
        "{report:?}"
    );
    assert_eq!(report.allowed, 300);
    assert_eq!(
        (report.http1_answers, report.http2_answers),
        (300, 0),
        "HTTP/1.1 by default, as the API server calls webhooks"
    );
    assert_eq!(
        (report.http_requested, report.http_version),
        ("1.1", "HTTP/1.1")
    );
    let text = report.text();
    assert!(
        text.contains("http:        HTTP/1.1 (--http 1.1)"),
        "{text}"
    );
    assert!(
        text.contains("up to 8 kept-alive HTTP/1.1 connections"),
        "{text}"
    );
    assert!(report.throughput_rps > 0.0);
    let lat = report.latency.as_ref().expect("latencies");
    assert!(
        lat.p50_ms <= lat.p99_ms && lat.p99_ms <= lat.max_ms,
        "{lat:?}"
    );
    assert!(
        report.body_bytes > 4000,
        "the 3.9 KiB object is in the body"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_negotiated_when_asked_for_or_offered() {
    let (server, dir) = celhook_server().await;
    let review = path("review-create.json");
    for http in ["2", "auto"] {
        let a = args(
            &server,
            &dir,
            &[
                "-n",
                "100",
                "-c",
                "8",
                "--http",
                http,
                "admission",
                "--review",
                &review,
            ],
        );
        let report = run(&a).await.expect("the run completes");
        assert_eq!((report.ok, report.failed), (100, 0), "{report:?}");
        assert_eq!((report.http2_answers, report.http1_answers), (100, 0));
        assert_eq!(
            (report.http_requested, report.http_version),
            (http, "HTTP/2")
        );
        let text = report.text();
        assert!(
            text.contains(&format!("http:        HTTP/2 (--http {http})")),
            "{text}"
        );
        let json = serde_json::to_value(&report).expect("JSON");
        assert_eq!(json["http_version"], "HTTP/2");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_keeps_the_rate_and_runs_updates_over_http1() {
    let (server, dir) = celhook_server().await;
    let review = path("review-update.json");
    let a = args(
        &server,
        &dir,
        // At most 16 in flight: over HTTP/1.1 that is also at most 16
        // connections, should a busy machine make the requests pile up
        // (celhook refuses more than 64 handshakes at once from one address).
        &[
            "--rate",
            "200",
            "-c",
            "16",
            "-d",
            "1s",
            "admission",
            "--review",
            &review,
        ],
    );
    let report = run(&a).await.expect("the run completes");
    assert_eq!(report.mode, "open");
    assert_eq!(report.failed, 0, "{:?}", report.error_examples);
    // 200/s for 1 s: the schedule fixes the count, whatever the server does.
    assert_eq!(report.requests, 200);
    assert_eq!(report.http1_answers, 200);
    assert_eq!(report.http_version, "HTTP/1.1");
    // Every answer is on the timeline, within the measured phase.
    let timeline = &report.charts.timeline;
    assert_eq!(timeline.answered().iter().sum::<u64>(), 200);
    let rates = timeline.rates(Duration::from_secs_f64(report.duration_s));
    let counted: f64 = rates
        .iter()
        .map(|r| r.answered_per_s * (r.end_s - r.start_s))
        .sum();
    assert!((counted - 200.0).abs() < 1e-6, "{rates:?}");
    assert!(report.workload.contains("UPDATE"), "{}", report.workload);
    let (lat, service) = (
        report.latency.as_ref().expect("latency"),
        report.service_time.as_ref().expect("service"),
    );
    // Measured from the due time, a response time is never shorter than
    // the service time of the same request.
    assert!(lat.max_ms >= service.max_ms, "{lat:?} {service:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unexpected_verdicts_are_errors_with_the_rule_named() {
    let (server, dir) = celhook_server().await;
    let invalid = path("review-create-invalid.json");
    let a = args(
        &server,
        &dir,
        &["-n", "20", "admission", "--review", &invalid],
    );
    let report = run(&a).await.expect("the run completes");
    assert_eq!(report.failed, 20);
    assert_eq!(
        report.errors.get("unexpected_denial"),
        Some(&20),
        "{report:?}"
    );
    let example = &report.error_examples["unexpected_denial"];
    assert!(example.contains("replicas-in-range"), "{example}");

    let a = args(
        &server,
        &dir,
        &[
            "-n",
            "20",
            "admission",
            "--review",
            &invalid,
            "--expect",
            "denied",
        ],
    );
    let report = run(&a).await.expect("the run completes");
    assert_eq!((report.ok, report.denied, report.failed), (20, 20, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_is_built_from_a_crd_and_object_files() {
    let (server, dir) = celhook_server().await;
    let review: Value = serde_json::from_str(
        &std::fs::read_to_string(perf_fixture("review-update.json")).expect("fixture"),
    )
    .expect("JSON");
    let object = dir.path().join("object.json");
    let old = dir.path().join("old.json");
    std::fs::write(&object, review["request"]["object"].to_string()).expect("write");
    std::fs::write(&old, review["request"]["oldObject"].to_string()).expect("write");
    let crd = path("core/appdeployment.yaml");
    let (object, old) = (object.display().to_string(), old.display().to_string());
    let a = args(
        &server,
        &dir,
        &[
            "-n",
            "50",
            "admission",
            "--crd",
            &crd,
            "--object",
            &object,
            "--old-object",
            &old,
        ],
    );
    let report = run(&a).await.expect("the run completes");
    assert_eq!(
        (report.ok, report.failed),
        (50, 0),
        "{:?}",
        report.error_examples
    );
    assert!(
        report.workload.contains("UPDATE AppDeployment"),
        "{}",
        report.workload
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_are_counted_by_status() {
    let (server, dir) = celhook_server().await;
    let object = dir.path().join("w.json");
    std::fs::write(
        &object,
        r#"{"apiVersion":"platform.example.com/v1alpha1","kind":"AppDeployment","metadata":{"name":"a"}}"#,
    )
    .expect("write");
    let object = object.display().to_string();
    // A ConversionReview to /validate: celhook answers 400 naming the problem.
    let a = args(
        &server,
        &dir,
        &[
            "-n",
            "10",
            "conversion",
            "--object",
            &object,
            "--to",
            "platform.example.com/v1",
        ],
    );
    let report = run(&a).await.expect("the run completes");
    assert_eq!(report.errors.get("http_400"), Some(&10), "{report:?}");
    assert!(
        report.error_examples["http_400"].contains("unsupported review apiVersion"),
        "{:?}",
        report.error_examples
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_fails_fast_with_the_cause() {
    let (server, dir) = celhook_server().await;
    let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let wrong = dir.path().join("wrong.pem");
    std::fs::write(&wrong, other.cert.pem()).expect("write");
    let url = format!("{}/validate", server.base_url());
    let a = Args::try_parse_from([
        "celhook-loadtest",
        "--url",
        &url,
        "--ca-file",
        &wrong.display().to_string(),
        "-q",
        "admission",
    ])
    .expect("parses");
    let err = run(&a).await.expect_err("untrusted certificate");
    let text = format!("{err:#}");
    assert!(text.contains("first request"), "{text}");
    assert!(text.to_lowercase().contains("certificate"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_prints_json_and_exits_by_outcome() {
    let (server, dir) = celhook_server().await;
    let ca = dir.path().join("ca.pem").display().to_string();
    let url = format!("{}/validate", server.base_url());
    let exe = env!("CARGO_BIN_EXE_celhook-loadtest");
    let html = dir.path().join("report.html");
    let run_bin = |review: String| {
        let (url, ca, exe) = (url.clone(), ca.clone(), exe.to_owned());
        let html = html.display().to_string();
        tokio::task::spawn_blocking(move || {
            Command::new(exe)
                .args([
                    "--url",
                    &url,
                    "--ca-file",
                    &ca,
                    "-n",
                    "30",
                    "--warmup",
                    "0s",
                    "--html",
                    &html,
                ])
                .args(["--format", "json", "admission", "--review", &review])
                .output()
                .expect("the binary runs")
        })
    };
    let out = run_bin(path("review-create.json")).await.expect("joins");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["ok"], 30);
    assert_eq!(report["mode"], "closed");
    assert_eq!(report["http_version"], "HTTP/1.1");
    assert!(report["latency"]["p99_ms"].as_f64().is_some(), "{report}");
    let page = std::fs::read_to_string(&html).expect("the HTML page is written");
    assert_html_matches(&page, &report);

    std::fs::remove_file(&html).expect("remove");
    let out = run_bin(path("review-create-invalid.json"))
        .await
        .expect("joins");
    assert_eq!(out.status.code(), Some(1), "failures exit 1");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["errors"]["unexpected_denial"], 30);
    let page = std::fs::read_to_string(&html).expect("written when requests failed too");
    assert_html_matches(&page, &report);
    assert!(
        page.contains("<td id=\"error-unexpected_denial\">30<"),
        "errors by kind"
    );
    assert!(page.contains("replicas-in-range"), "with an example");
}

/// The page is self-contained, has its two charts, and its summary shows
/// the JSON report's counts.
fn assert_html_matches(page: &str, report: &Value) {
    assert!(page.starts_with("<!DOCTYPE html>"), "{page:.200}");
    assert_eq!(page.matches("<svg").count(), 2, "two inline SVG charts");
    assert!(page.contains("Throughput (requests/s per 100 ms)"));
    assert!(page.contains("Latency by percentile"));
    assert!(page.contains("99.99%"), "the percentile axis reaches 99.99");
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "nothing loaded from elsewhere"
    );
    for key in ["requests", "ok", "failed"] {
        let cell = format!("<td id=\"{key}\">{}</td>", report[key]);
        assert!(page.contains(&cell), "{cell} missing");
    }
    let version = format!(
        "<td id=\"http-version\">{}</td>",
        report["http_version"].as_str().expect("a string")
    );
    assert!(page.contains(&version), "{version} missing");
    let latency = &report["latency"];
    for key in ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"] {
        let cell = format!(
            "<td class=\"n\">{:.3}</td>",
            latency[key].as_f64().expect("a number")
        );
        assert!(page.contains(&cell), "{key}: {cell} missing");
    }
}
