//! A rolling restart of 3 replicas under load, with the binary, behind a
//! client that calls as the API server does: a pool of kept-alive HTTP/1.1
//! connections, each opened to one of the ready endpoints (as kube-proxy
//! picks one per connection) and kept until the server closes it. Each old
//! replica is replaced as a Deployment with `maxSurge: 1, maxUnavailable:
//! 0` does: the new one starts and becomes ready, then the old one gets
//! SIGTERM. Not one request may fail, and the requests must move to the new
//! replicas; the spread per phase is printed.
#![cfg(unix)] // `kill -TERM`

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use celhook::certs::Ca;
use common::{crontab_review, ServeProcess};
use reqwest::{header, Client, StatusCode};

/// A replica as the client's endpoint list sees it.
#[derive(Clone)]
struct Endpoint {
    /// `old-1`, `new-1`, ...
    name: String,
    addr: String,
}

/// What the load saw: requests per (phase, replica), and failures.
#[derive(Default)]
struct Tally {
    phase: String,
    served: BTreeMap<(String, String), u64>,
    failures: Vec<String>,
}

async fn start_replica(dir: &std::path::Path) -> ServeProcess {
    let cert = dir.join("tls.crt");
    let key = dir.join("tls.key");
    ServeProcess::start([
        "--tls-cert".as_ref(),
        cert.as_os_str(),
        "--tls-key".as_ref(),
        key.as_os_str(),
        "--shutdown-delay".as_ref(),
        "1s".as_ref(),
        "--shutdown-timeout".as_ref(),
        "5s".as_ref(),
    ])
    .await
}

/// Polls each replica's `/readyz` as the endpoints controller follows
/// readiness, keeping `ready` to those answering 200.
async fn follow_readiness(
    known: Arc<Mutex<Vec<(Endpoint, String)>>>,
    ready: Arc<Mutex<Vec<Endpoint>>>,
    stop: Arc<AtomicBool>,
) {
    let plain = Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .expect("client");
    while !stop.load(Ordering::Relaxed) {
        let replicas = known.lock().expect("lock").clone();
        let mut now = Vec::new();
        for (endpoint, metrics) in replicas {
            let status = plain
                .get(format!("http://{metrics}/readyz"))
                .send()
                .await
                .map(|r| r.status());
            if matches!(status, Ok(StatusCode::OK)) {
                now.push(endpoint);
            }
        }
        *ready.lock().expect("lock") = now;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One connection of the pool: sends reviews one after the other on a
/// kept-alive connection to one endpoint, and picks an endpoint again when
/// the server closes the connection.
async fn connection(
    worker: usize,
    ca_pem: Vec<u8>,
    ready: Arc<Mutex<Vec<Endpoint>>>,
    tally: Arc<Mutex<Tally>>,
    stop: Arc<AtomicBool>,
) {
    let ca = reqwest::Certificate::from_pem(&ca_pem).expect("CA");
    let body = crontab_review(5);
    let mut pick = worker;
    let mut pinned: Option<(Endpoint, Client)> = None;
    while !stop.load(Ordering::Relaxed) {
        let (endpoint, client) = match &pinned {
            Some(p) => p.clone(),
            None => {
                let endpoints = ready.lock().expect("lock").clone();
                if endpoints.is_empty() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                pick += 1;
                let endpoint = endpoints[pick % endpoints.len()].clone();
                // One connection per client: this task is that connection.
                let client = Client::builder()
                    .add_root_certificate(ca.clone())
                    .http1_only()
                    .pool_max_idle_per_host(1)
                    .timeout(Duration::from_secs(5))
                    .build()
                    .expect("client");
                pinned = Some((endpoint.clone(), client.clone()));
                (endpoint, client)
            }
        };
        let url = format!("https://{}/validate?timeout=10s", endpoint.addr);
        let answer = client
            .post(&url)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .send()
            .await;
        let mut tally = tally.lock().expect("lock");
        let phase = tally.phase.clone();
        match answer {
            Ok(resp) if resp.status() == StatusCode::OK => {
                *tally
                    .served
                    .entry((phase, endpoint.name.clone()))
                    .or_default() += 1;
                let closing = resp
                    .headers()
                    .get(header::CONNECTION)
                    .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
                if closing {
                    pinned = None;
                }
            }
            Ok(resp) => {
                tally.failures.push(format!(
                    "{phase}: {}: HTTP {}",
                    endpoint.name,
                    resp.status()
                ));
                pinned = None;
            }
            Err(err) => {
                tally
                    .failures
                    .push(format!("{phase}: {}: {err:#}", endpoint.name));
                pinned = None;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_three_replicas_under_load_fails_no_request() {
    common::install_crypto();
    let ca = Ca::new("rollout CA", 30).expect("ca");
    let pair = ca
        .serving(&["localhost".into(), "127.0.0.1".into()], 30)
        .expect("serving certificate");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tls.crt"), &pair.cert_pem).expect("write");
    std::fs::write(dir.path().join("tls.key"), &pair.key_pem).expect("write");

    let known = Arc::new(Mutex::new(Vec::new()));
    let ready = Arc::new(Mutex::new(Vec::new()));
    let tally = Arc::new(Mutex::new(Tally {
        phase: "1 before".into(),
        ..Tally::default()
    }));
    let stop = Arc::new(AtomicBool::new(false));

    let mut old = Vec::new();
    for i in 1..=3 {
        let replica = start_replica(dir.path()).await;
        let endpoint = Endpoint {
            name: format!("old-{i}"),
            addr: replica.addr.clone(),
        };
        known
            .lock()
            .expect("lock")
            .push((endpoint, replica.metrics_addr.clone()));
        old.push(replica);
    }
    let watcher = tokio::spawn(follow_readiness(known.clone(), ready.clone(), stop.clone()));
    common::wait_for("3 ready replicas", || {
        ready.lock().map(|r| r.len() == 3).unwrap_or(false)
    })
    .await;
    let ca_pem = ca.pair.cert_pem.clone().into_bytes();
    let workers: Vec<_> = (0..9)
        .map(|w| {
            tokio::spawn(connection(
                w,
                ca_pem.clone(),
                ready.clone(),
                tally.clone(),
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;

    let mut new = Vec::new();
    for (i, mut replica) in old.into_iter().enumerate() {
        let n = i + 1;
        tally.lock().expect("lock").phase = format!("{} restart old-{n}", n + 1);
        // Surge: the new replica first, ready before the old one goes.
        let fresh = start_replica(dir.path()).await;
        known.lock().expect("lock").push((
            Endpoint {
                name: format!("new-{n}"),
                addr: fresh.addr.clone(),
            },
            fresh.metrics_addr.clone(),
        ));
        common::wait_for("the new replica ready", || {
            ready
                .lock()
                .map(|r| r.iter().any(|e| e.name == format!("new-{n}")))
                .unwrap_or(false)
        })
        .await;
        new.push(fresh);
        replica.signal("TERM");
        let exited = tokio::time::timeout(Duration::from_secs(15), replica.child.wait())
            .await
            .expect("the old replica exits within its delay and drain")
            .expect("wait");
        assert!(exited.success(), "old-{n} exited with {exited}");
        known
            .lock()
            .expect("lock")
            .retain(|(e, _)| e.name != format!("old-{n}"));
    }
    tally.lock().expect("lock").phase = "5 after".into();
    tokio::time::sleep(Duration::from_millis(800)).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.expect("worker");
    }
    watcher.await.expect("watcher");
    for mut replica in new {
        replica.signal("TERM");
        let _ = tokio::time::timeout(Duration::from_secs(15), replica.child.wait()).await;
    }

    let tally = tally.lock().expect("lock");
    let mut report = String::from("requests per phase and replica:\n");
    let mut phases: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for ((phase, replica), n) in &tally.served {
        phases.entry(phase).or_default().push((replica, *n));
    }
    for (phase, replicas) in &phases {
        let cells: Vec<String> = replicas.iter().map(|(r, n)| format!("{r} {n}")).collect();
        report.push_str(&format!("  {phase}: {}\n", cells.join(", ")));
    }
    println!("{report}");
    assert!(
        tally.failures.is_empty(),
        "{} failed requests: {:?}\n{report}",
        tally.failures.len(),
        &tally.failures[..tally.failures.len().min(10)]
    );
    let served = |phase: &str, replica: &str| {
        tally
            .served
            .get(&(phase.to_owned(), replica.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    for r in ["old-1", "old-2", "old-3"] {
        assert!(served("1 before", r) > 0, "{r} idle before\n{report}");
        assert_eq!(
            served("5 after", r),
            0,
            "{r} served after it left\n{report}"
        );
    }
    for r in ["new-1", "new-2", "new-3"] {
        assert!(served("5 after", r) > 0, "{r} got no requests\n{report}");
    }
}
