//! The load generator against a small conversion endpoint that demands a
//! client certificate, can answer wrongly on purpose (what the generator
//! must catch) and counts the connections and requests in flight it sees.

use crate::install_crypto;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use celhook_loadtest::args::Args;
use celhook_loadtest::report::Report;
use celhook_loadtest::run::run;
use clap::Parser;
use hyper::body::{Body as _, Incoming};
use hyper::{Request, Response};
use serde_json::{json, Value};

// === a conversion endpoint with client-certificate auth ===

/// What the conversion endpoint saw.
#[derive(Default)]
struct Seen {
    /// TLS connections accepted.
    connections: AtomicUsize,
    /// Requests being answered now, and the most at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Converts by rewriting apiVersion, as a hub-less trivial conversion would;
/// `?break=order` answers the objects reversed, `?delay=ms` answers that
/// much later.
async fn convert(req: Request<Incoming>, seen: Arc<Seen>) -> Result<Response<String>, Infallible> {
    let now = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    seen.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let answer = convert_now(req).await;
    seen.in_flight.fetch_sub(1, Ordering::SeqCst);
    answer
}

async fn convert_now(req: Request<Incoming>) -> Result<Response<String>, Infallible> {
    let query = req.uri().query().unwrap_or("").to_owned();
    let broken = query.contains("break=order");
    let delay = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("delay="))
        .and_then(|ms| ms.parse().ok())
        .map(Duration::from_millis);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let mut body = req.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        if let Ok(data) = frame.expect("body").into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    let review: Value = serde_json::from_slice(&bytes).expect("JSON review");
    let desired = review["request"]["desiredAPIVersion"].clone();
    let mut objects = review["request"]["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for o in &mut objects {
        o["apiVersion"] = desired.clone();
    }
    if broken {
        objects.reverse();
    }
    let answer = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": review["request"]["uid"], "result": {"status": "Success"},
            "convertedObjects": objects},
    });
    let mut res = Response::new(answer.to_string());
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(res)
}

/// Serves [`convert`] over TLS with `config` (HTTP/2 or HTTP/1.1 by ALPN).
async fn conversion_server(config: rustls::ServerConfig) -> (SocketAddr, Arc<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("addr");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let seen = Arc::new(Seen::default());
    let counters = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = counters.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                seen.connections.fetch_add(1, Ordering::SeqCst);
                let h2 = tls.get_ref().1.alpn_protocol() == Some(&b"h2"[..]);
                let io = hyper_util::rt::TokioIo::new(tls);
                let service = hyper::service::service_fn(move |req| convert(req, seen.clone()));
                let _ = if h2 {
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(io, service)
                        .await
                } else {
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await
                };
            });
        }
    });
    (addr, seen)
}

struct Pki {
    dir: tempfile::TempDir,
    server_config: rustls::ServerConfig,
}

/// A CA; a server certificate for 127.0.0.1 and a client certificate it
/// signed; a rustls config that requires a client certificate of that CA.
fn pki() -> Pki {
    install_crypto();
    let dir = tempfile::tempdir().expect("temp dir");
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let server_key = rcgen::KeyPair::generate().expect("key");
    let server_cert = rcgen::CertificateParams::new(vec!["127.0.0.1".into()])
        .expect("params")
        .signed_by(&server_key, &issuer)
        .expect("server cert");
    let client_key = rcgen::KeyPair::generate().expect("key");
    let client_cert = rcgen::CertificateParams::new(vec!["loadtest".into()])
        .expect("params")
        .signed_by(&client_key, &issuer)
        .expect("client cert");
    std::fs::write(dir.path().join("ca.pem"), ca.pem()).expect("write");
    std::fs::write(dir.path().join("client.pem"), client_cert.pem()).expect("write");
    std::fs::write(
        dir.path().join("client-key.pem"),
        client_key.serialize_pem(),
    )
    .expect("write");

    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).expect("root");
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .build()
        .expect("verifier");
    let key = rustls::pki_types::PrivateKeyDer::try_from(server_key.serialize_der()).expect("key");
    let mut server_config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![server_cert.der().clone()], key)
        .expect("server config");
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Pki { dir, server_config }
}

fn conversion_args(pki: &Pki, url: &str, objects: &[PathBuf], rest: &[&str]) -> Args {
    conversion_batch_args(pki, url, objects, "1000", rest)
}

fn conversion_batch_args(
    pki: &Pki,
    url: &str,
    objects: &[PathBuf],
    batch: &str,
    rest: &[&str],
) -> Args {
    let p = |name: &str| pki.dir.path().join(name).display().to_string();
    let mut argv: Vec<String> = vec![
        "celhook-loadtest".into(),
        "--url".into(),
        url.into(),
        "--ca-file".into(),
        p("ca.pem"),
        "--client-cert".into(),
        p("client.pem"),
        "--client-key".into(),
        p("client-key.pem"),
        "-q".into(),
        "--warmup".into(),
        "0s".into(),
    ];
    argv.extend(rest.iter().map(|s| s.to_string()));
    argv.push("conversion".into());
    for o in objects {
        argv.push("--object".into());
        argv.push(o.display().to_string());
    }
    argv.extend([
        "--to".into(),
        "g.example.com/v3".into(),
        "--batch".into(),
        batch.into(),
    ]);
    Args::try_parse_from(argv).expect("arguments parse")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversion_batches_with_mixed_versions_over_mutual_tls() {
    let pki = pki();
    let (addr, _) = conversion_server(pki.server_config.clone()).await;

    let objects: Vec<PathBuf> = ["v1", "v2"]
        .iter()
        .map(|v| {
            let p = pki.dir.path().join(format!("{v}.yaml"));
            std::fs::write(
                &p,
                format!("apiVersion: g.example.com/{v}\nkind: Widget\nmetadata:\n  name: w\n  namespace: n\nspec:\n  size: 3\n"),
            )
            .expect("write");
            p
        })
        .collect();

    let url = format!("https://127.0.0.1:{}/convert", addr.port());
    let report: Report = run(&conversion_args(
        &pki,
        &url,
        &objects,
        &["-n", "5", "-c", "2"],
    ))
    .await
    .expect("the run completes");
    assert_eq!(
        (report.ok, report.failed),
        (5, 0),
        "{:?}",
        report.error_examples
    );
    assert!(
        report
            .workload
            .contains("g.example.com/v1, g.example.com/v2"),
        "{}",
        report.workload
    );
    assert!(
        (report.objects_per_s - report.throughput_rps * 1000.0).abs() < 1e-6 * report.objects_per_s
    );

    let broken = format!("{url}?break=order");
    let report = run(&conversion_args(&pki, &broken, &objects, &["-n", "3"]))
        .await
        .expect("the run completes");
    assert_eq!(
        report.errors.get("conversion_metadata"),
        Some(&3),
        "{report:?}"
    );

    // Without a client certificate the handshake is refused: a fast failure.
    let a = Args::try_parse_from([
        "celhook-loadtest",
        "--url",
        &url,
        "--ca-file",
        &pki.dir.path().join("ca.pem").display().to_string(),
        "-q",
        "--timeout",
        "5s",
        "conversion",
        "--object",
        &objects[0].display().to_string(),
        "--to",
        "g.example.com/v3",
    ])
    .expect("parses");
    assert!(
        run(&a).await.is_err(),
        "no client certificate, no conversion"
    );
}

/// The connections the two modes really use, counted by the server: over
/// HTTP/1.1 one per request in flight (up to --concurrency, whatever
/// --connections says), over HTTP/2 exactly --connections, multiplexed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_uses_a_connection_per_request_in_flight_and_http2_multiplexes() {
    let pki = pki();
    let object = pki.dir.path().join("w.yaml");
    std::fs::write(
        &object,
        "apiVersion: g.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    )
    .expect("write");
    let objects = [object];
    // Each answer takes 50 ms: the 4 workers' requests overlap, and none
    // finds a connection idle while the others are out.
    for (http, connections, want) in [("1.1", "1", 4), ("2", "2", 2)] {
        let (addr, seen) = conversion_server(pki.server_config.clone()).await;
        let url = format!("https://127.0.0.1:{}/convert?delay=50", addr.port());
        let a = conversion_batch_args(
            &pki,
            &url,
            &objects,
            "1",
            &[
                "-n",
                "24",
                "-c",
                "4",
                "--http",
                http,
                "--connections",
                connections,
            ],
        );
        let report = run(&a).await.expect("the run completes");
        assert_eq!((report.ok, report.failed), (24, 0), "{report:?}");
        let version = if http == "2" { "HTTP/2" } else { "HTTP/1.1" };
        assert_eq!(report.http_version, version);
        assert_eq!(
            seen.max_in_flight.load(Ordering::SeqCst),
            4,
            "--http {http}: 4 requests at once"
        );
        let opened = seen.connections.load(Ordering::SeqCst);
        if http == "2" {
            assert_eq!(opened, want, "--http 2: one connection per pool");
        } else {
            // A connection opened in a race that a returning idle one won
            // also joins the pool, so a busy machine may see one more.
            assert!(
                (want..=want + 2).contains(&opened),
                "--http 1.1: {opened} connections for 4 requests in flight"
            );
        }
    }
}
