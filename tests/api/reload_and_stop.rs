//! What an operator does to a serving webhook, end to end over real TLS
//! sockets: config files caught half written, certificates and client CAs
//! reloaded (and refused when bad), a stop under HTTP/1.1 and HTTP/2 load,
//! and the signals. No request is lost and no invalid object let through.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use celhook::config::{self, ConfigSource};
use celhook::server::ServeConfig;
use common::{
    client, crontab_review, embedded_catalog, metric, post_raw, rendered_metrics, start_with,
    tls_connect, validate_url, Http,
};
use reqwest::StatusCode;
use serde_json::Value;

// === config reload ===

const CRONTAB_CRD: &str = include_str!("../../manifests/examples/crontab.yaml");

fn invalid_crontab_review() -> Vec<u8> {
    crontab_review(20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_config_file_never_lets_an_invalid_object_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("crontab.yaml");
    std::fs::write(&file, CRONTAB_CRD).expect("write");
    let loaded = config::load(&ConfigSource::Dir(dir.path().to_owned()));
    let config = ServeConfig {
        config_source: ConfigSource::Dir(dir.path().to_owned()),
        reload_interval: Duration::from_millis(100),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, loaded.catalog).await;
    let client = client(&server, Http::H2);
    let denied = |answer: &common::Answer| answer.response()["allowed"] == false;
    assert!(denied(
        &post_raw(&client, &validate_url(&server), invalid_crontab_review()).await
    ));

    // The file is rewritten and the writer stalls just before the rules:
    // what is there is a valid CRD without them.
    let cut = CRONTAB_CRD
        .find("              x-kubernetes-validations:")
        .expect("rules in the example");
    std::fs::write(&file, &CRONTAB_CRD[..cut]).expect("write half");
    let until = Instant::now() + Duration::from_millis(2500);
    let mut checked = 0;
    while Instant::now() < until {
        let answer = post_raw(&client, &validate_url(&server), invalid_crontab_review()).await;
        assert!(
            denied(&answer),
            "let through after {checked} checks: {}",
            answer.text
        );
        checked += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        metric(
            &rendered_metrics(&server),
            "celhook_config_reload_deferred_total",
            &[]
        ) > Some(0.0)
    );
    // The writer finishes: same rules, still denied.
    std::fs::write(&file, CRONTAB_CRD).expect("write whole");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(denied(
        &post_raw(&client, &validate_url(&server), invalid_crontab_review()).await
    ));

    // Removing the rules on purpose works: at once when asked (SIGHUP).
    std::fs::write(&file, &CRONTAB_CRD[..cut]).expect("write without rules");
    server.reload_now();
    common::wait_for("the rules to be removed", || {
        metric(&rendered_metrics(&server), "celhook_config_generation", &[]) == Some(2.0)
    })
    .await;
    let answer = post_raw(&client, &validate_url(&server), invalid_crontab_review()).await;
    assert_eq!(answer.response()["allowed"], true);
}

// === certificates ===

fn write_pair(dir: &std::path::Path, cert: &str, key: &str) {
    // The kubelet swaps whole files; so does this.
    std::fs::write(dir.join("tls.crt.new"), cert).expect("write");
    std::fs::write(dir.join("tls.key.new"), key).expect("write");
    std::fs::rename(dir.join("tls.key.new"), dir.join("tls.key")).expect("rename");
    std::fs::rename(dir.join("tls.crt.new"), dir.join("tls.crt")).expect("rename");
}

#[tokio::test]
async fn an_expired_certificate_is_refused_on_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = celhook::certs::Ca::new("test CA", 30).expect("ca");
    let good = ca.serving(&["localhost".to_owned()], 30).expect("pair");
    write_pair(dir.path(), &good.cert_pem, &good.key_pem);
    let config = ServeConfig {
        tls: celhook::server::TlsSource::Files {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
        },
        reload_interval: Duration::from_millis(50),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;

    // A certificate that expired yesterday.
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let day = time::Duration::days(1);
    params.not_before = time::OffsetDateTime::now_utc() - day * 10;
    params.not_after = time::OffsetDateTime::now_utc() - day;
    let expired = params.self_signed(&key).expect("expired cert");
    write_pair(dir.path(), &expired.pem(), &key.serialize_pem());
    common::wait_for("the reload to be refused", || {
        metric(
            &rendered_metrics(&server),
            "celhook_tls_cert_reloads_total",
            &[("result", "failure")],
        ) >= Some(1.0)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        metric(
            &rendered_metrics(&server),
            "celhook_tls_cert_reloads_total",
            &[("result", "success")],
        ),
        Some(0.0)
    );
    // Still serving the good one: a client trusting the CA connects.
    let conn = tls_connect(server.local_addr(), &ca.pair.cert_pem).await;
    drop(conn);
}

#[tokio::test]
async fn the_client_ca_is_reloaded_and_refused_handshakes_are_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old_ca = celhook::certs::Ca::new("old CA", 30).expect("ca");
    let new_ca = celhook::certs::Ca::new("new CA", 30).expect("ca");
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &old_ca.pair.cert_pem).expect("write");
    let config = ServeConfig {
        client_auth: Some(celhook::server::ClientAuth {
            ca: ca_file.clone(),
            allowed_names: vec![],
        }),
        reload_interval: Duration::from_millis(50),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let old_client = old_ca.client("apiserver", &[], 30).expect("client");
    let new_client = new_ca.client("apiserver", &[], 30).expect("client");
    let healthz = |pair: &celhook::certs::Pair| {
        let pem = format!("{}{}", pair.cert_pem, pair.key_pem);
        let client = common::client_builder(&server)
            .identity(reqwest::Identity::from_pem(pem.as_bytes()).expect("identity"))
            .pool_max_idle_per_host(0)
            .build()
            .expect("client");
        let url = common::url(&server, "/healthz");
        async move { client.get(url).send().await.map(|r| r.status()) }
    };
    assert_eq!(
        healthz(&old_client).await.expect("old CA accepted"),
        StatusCode::OK
    );
    assert!(healthz(&new_client).await.is_err());

    std::fs::write(&ca_file, &new_ca.pair.cert_pem).expect("rotate the CA");
    common::wait_for("the new CA", || {
        metric(
            &rendered_metrics(&server),
            "celhook_tls_cert_reloads_total",
            &[("result", "success")],
        ) == Some(1.0)
    })
    .await;
    assert_eq!(
        healthz(&new_client).await.expect("new CA accepted"),
        StatusCode::OK
    );
    assert!(healthz(&old_client).await.is_err());
    // Counted once the server has sent its alert: maybe just after the
    // client saw it.
    common::wait_for("both refusals counted", || {
        metric(
            &rendered_metrics(&server),
            "celhook_tls_handshake_failures_total",
            &[("reason", "client_certificate")],
        ) == Some(2.0)
    })
    .await;
}

// === stopping ===

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stop_under_http1_and_http2_load_loses_no_request() {
    let config = ServeConfig {
        shutdown_delay: Duration::from_millis(1500),
        shutdown_timeout: Duration::from_secs(5),
        workers: Some(2),
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, embedded_catalog()).await;
    let metrics = server.state().metrics.clone();
    let url = validate_url(&server);
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    // Pooled keep-alive clients, as the API server's: 4 over HTTP/1.1, 4
    // over HTTP/2, each with two requests at a time.
    for http in [Http::H1, Http::H2] {
        for _ in 0..4 {
            let client = client(&server, http);
            for _ in 0..2 {
                let (client, url, stop, answered) =
                    (client.clone(), url.clone(), stop.clone(), answered.clone());
                tasks.push(tokio::spawn(async move {
                    let mut failures = Vec::new();
                    let mut retried = 0u64;
                    let mut retries = 0u32;
                    while !stop.load(Ordering::Relaxed) {
                        let sent = Instant::now();
                        let result = client
                            .post(&url)
                            .header("content-type", "application/json")
                            .body(crontab_review(2))
                            .send()
                            .await;
                        match result {
                            Ok(resp) if resp.status() == StatusCode::OK => {
                                let v: Value = resp.json().await.expect("json");
                                assert_eq!(v["response"]["allowed"], true);
                                answered.fetch_add(1, Ordering::Relaxed);
                                retries = 0;
                            }
                            Ok(resp) => failures.push((sent, format!("{}", resp.status()))),
                            // A connection refused after the listener
                            // closed: the request was never sent.
                            Err(err) if err.is_connect() => break,
                            // A request the client could not start on a
                            // connection that got its GOAWAY: retried (up to three times),
                            // as Go's transport (the API server's) does.
                            // Were it served, the server's count below would
                            // exceed the answers.
                            Err(_) if retries < 3 => {
                                retries += 1;
                                retried += 1;
                            }
                            Err(err) => failures.push((sent, format!("{err:?}"))),
                        }
                    }
                    (failures, retried)
                }));
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = answered.load(Ordering::Relaxed);
    assert!(before > 10, "too little load: {before}");
    server.stop().await.expect("stop");
    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    let mut retried = 0;
    for task in tasks {
        let (f, r) = task.await.expect("load task");
        failures.extend(f);
        retried += r;
    }
    eprintln!(
        "stop: {} answered, {retried} retried after a GOAWAY",
        answered.load(Ordering::Relaxed)
    );
    // Every answer the server wrote reached its client, and no request
    // failed: HTTP/1.1 clients were told `Connection: close`, HTTP/2 ones
    // got a GOAWAY whose streams all completed.
    let served = metric(
        &String::from_utf8(metrics.render().expect("render")).expect("utf-8"),
        "celhook_admission_requests_total",
        &[("outcome", "allowed")],
    )
    .unwrap_or(0.0) as u64;
    assert_eq!(served, answered.load(Ordering::Relaxed));
    assert!(failures.is_empty(), "{failures:?}");
}

// === signals (the binary) ===

#[cfg(unix)]
#[tokio::test]
async fn sighup_reloads_and_sigusr1_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("crontab.yaml"), CRONTAB_CRD).expect("write");
    let mut celhook = common::ServeProcess::start([
        "--config".as_ref(),
        dir.path().as_os_str(),
        "--reload-interval".as_ref(),
        "1h".as_ref(),
    ])
    .await;
    let metrics_url = format!("http://{}/metrics", celhook.metrics_addr);
    let generation = || {
        let url = metrics_url.clone();
        async move {
            let text = reqwest::get(url)
                .await
                .expect("metrics")
                .text()
                .await
                .expect("text");
            metric(&text, "celhook_config_generation", &[])
        }
    };
    celhook.signal("USR1");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(celhook.is_running(), "SIGUSR1 killed it");
    assert_eq!(generation().await, Some(1.0));

    // A change and SIGHUP: loaded at once, though the interval is an hour.
    let changed = CRONTAB_CRD.replace("replicas should be", "replicas must be");
    std::fs::write(dir.path().join("crontab.yaml"), changed).expect("write");
    celhook.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(10);
    while generation().await != Some(2.0) {
        assert!(Instant::now() < deadline, "SIGHUP did not reload");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(celhook.is_running(), "SIGHUP killed it");
    celhook.signal("TERM");
    let status = tokio::time::timeout(Duration::from_secs(15), celhook.child.wait())
        .await
        .expect("exits")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
}
