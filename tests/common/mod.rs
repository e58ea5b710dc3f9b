//! Helpers for the end-to-end tests: start the real server on 127.0.0.1 with
//! a generated certificate, build HTTPS clients that trust it, build and post
//! AdmissionReviews.
//!
//! Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

pub mod raw_h2;

use celhook::config::{self, Catalog, ConfigSource};
use celhook::server::{self, RunningServer, ServeConfig};
use reqwest::{Client, StatusCode, Version};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

/// apiVersion of admission.k8s.io/v1 reviews.
pub const V1: &str = "admission.k8s.io/v1";
/// apiVersion of admission.k8s.io/v1beta1 reviews.
pub const V1BETA1: &str = "admission.k8s.io/v1beta1";

/// Group, version and kind of the seeds' CronTab.
pub const CRONTAB: (&str, &str, &str) = ("stable.example.com", "v1", "CronTab");

/// Installs the process-wide rustls provider reqwest needs (it is built with
/// `rustls-no-provider`, like main installs ring).
pub fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Logs to the test output when `TEST_LOG` is set.
pub fn init_logging() {
    if std::env::var_os("TEST_LOG").is_some() {
        celhook::telemetry::init(celhook::telemetry::LogFormat::Text);
    }
}

/// The catalog of the example CRDs built into the binary.
pub fn embedded_catalog() -> Catalog {
    config::load(&ConfigSource::Embedded).catalog
}

/// Starts the real server (127.0.0.1, free port, generated certificate) on
/// the embedded example CRDs.
pub async fn start() -> RunningServer {
    start_with(ServeConfig::for_tests(), embedded_catalog()).await
}

/// Starts the real server with the given settings and catalog.
pub async fn start_with(config: ServeConfig, catalog: Catalog) -> RunningServer {
    install_crypto();
    init_logging();
    match server::spawn(config, catalog).await {
        Ok(server) => server,
        Err(err) => panic!("server failed to start: {err:#}"),
    }
}

/// The HTTP version a test client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Http {
    /// Offers only `http/1.1` by ALPN.
    H1,
    /// Offers `h2` and `http/1.1` by ALPN, as the API server does; the
    /// server should pick `h2`.
    H2,
}

impl Http {
    /// The version the response must report.
    pub fn version(self) -> Version {
        match self {
            Http::H1 => Version::HTTP_11,
            Http::H2 => Version::HTTP_2,
        }
    }
}

/// Both HTTP versions, for tests that run over each.
pub const BOTH: [Http; 2] = [Http::H1, Http::H2];

/// A client builder trusting only `server`'s certificate.
pub fn client_builder(server: &RunningServer) -> reqwest::ClientBuilder {
    install_crypto();
    let certs = reqwest::Certificate::from_pem_bundle(server.cert_pem().as_bytes())
        .expect("the server's certificate is valid PEM");
    Client::builder()
        .tls_certs_only(certs)
        .timeout(std::time::Duration::from_secs(10))
}

/// A client trusting `server`'s certificate and speaking `http`.
pub fn client(server: &RunningServer, http: Http) -> Client {
    let builder = client_builder(server);
    let builder = match http {
        Http::H1 => builder.http1_only(),
        Http::H2 => builder,
    };
    builder.build().expect("client builds")
}

/// `https://127.0.0.1:<port>/validate?timeout=10s`, as the API server calls it.
pub fn validate_url(server: &RunningServer) -> String {
    format!("{}/validate?timeout=10s", server.base_url())
}

/// `https://127.0.0.1:<port><path>`.
pub fn url(server: &RunningServer, path: &str) -> String {
    format!("{}{path}", server.base_url())
}

/// Builds an AdmissionReview as the API server sends it. `gvk` is the
/// (group, version, kind) of `request.kind`; `None` objects are sent as JSON
/// null. The uid is derived from the operation and kind; use [`with_uid`] to
/// set another one.
pub fn admission_review(
    api_version: &str,
    operation: &str,
    gvk: (&str, &str, &str),
    object: Option<Value>,
    old_object: Option<Value>,
) -> Value {
    let (group, version, kind) = gvk;
    let resource = format!("{}s", kind.to_lowercase());
    let metadata = object
        .as_ref()
        .or(old_object.as_ref())
        .map(|o| o["metadata"].clone())
        .unwrap_or(Value::Null);
    let options_kind = match operation {
        "CREATE" => Value::from("CreateOptions"),
        "UPDATE" => Value::from("UpdateOptions"),
        "DELETE" => Value::from("DeleteOptions"),
        _ => Value::Null,
    };
    json!({
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("test-{}-{}", operation.to_lowercase(), kind.to_lowercase()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": resource},
            "name": metadata["name"].as_str().unwrap_or(""),
            "namespace": metadata["namespace"].as_str().unwrap_or("default"),
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old_object,
            "dryRun": false,
            "options": if options_kind.is_null() {
                Value::Null
            } else {
                json!({"apiVersion": "meta.k8s.io/v1", "kind": options_kind})
            },
        }
    })
}

/// Sets `request.uid`.
pub fn with_uid(mut review: Value, uid: &str) -> Value {
    review["request"]["uid"] = Value::from(uid);
    review
}

/// A CronTab object (stable.example.com/v1) with the given spec.
pub fn crontab(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
}

/// The path of a file under `tests/fixtures/`.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A JSON fixture under `tests/fixtures/`, e.g. `admission/crontab-create-v1.json`.
pub fn fixture(name: &str) -> Value {
    let path = fixture_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("parsing {}: {err}", path.display()))
}

/// What the server answered to a review.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// Negotiated HTTP version.
    pub version: Version,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Retry-After`, if any.
    pub retry_after: Option<String>,
    /// The body as text.
    pub text: String,
}

impl Answer {
    /// The body as JSON; panics with the body when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|err| panic!("answer is not JSON ({err}): {}", self.text))
    }

    /// `response` of an AdmissionReview answer, after checking the answer is
    /// a 200 JSON AdmissionReview.
    pub fn response(&self) -> Value {
        assert_eq!(self.status, StatusCode::OK, "body: {}", self.text);
        assert_eq!(self.content_type.as_deref(), Some("application/json"));
        let review = self.json();
        assert_eq!(review["kind"], "AdmissionReview", "{review}");
        review["response"].clone()
    }
}

/// POSTs raw bytes to `url` as `application/json`.
pub async fn post_raw(client: &Client, url: &str, body: impl Into<reqwest::Body>) -> Answer {
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|err| panic!("POST {url} failed: {err:?}"));
    let status = resp.status();
    let version = resp.version();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = resp.text().await.expect("reading the answer");
    Answer {
        status,
        version,
        content_type,
        retry_after,
        text,
    }
}

/// POSTs a review (any JSON) to `url`.
pub async fn post_review(client: &Client, url: &str, review: &Value) -> Answer {
    let body = serde_json::to_vec(review).expect("review serializes");
    post_raw(client, url, body).await
}

/// A raw TLS connection (HTTP/1.1 by ALPN) to the server, trusting `ca_pem`:
/// for tests that write requests byte by byte.
pub async fn tls_connect(
    addr: std::net::SocketAddr,
    ca_pem: &str,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    tls_connect_alpn(addr, ca_pem, &[b"http/1.1"]).await
}

/// A raw TLS connection offering the ALPN protocols `alpn`.
pub async fn tls_connect_alpn(
    addr: std::net::SocketAddr,
    ca_pem: &str,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    try_tls_connect(addr, ca_pem, alpn)
        .await
        .expect("handshake")
}

/// A TLS client's configuration trusting `ca_pem` and offering `alpn`.
pub fn client_tls_config(ca_pem: &str, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    install_crypto();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("pem")).expect("root");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A TLS handshake that may fail (the server closed the connection).
pub async fn try_tls_connect(
    addr: std::net::SocketAddr,
    ca_pem: &str,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let connector = tokio_rustls::TlsConnector::from(client_tls_config(ca_pem, alpn));
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    connector.connect(name, tcp).await
}

/// The sum of the samples of `name` whose labels include `labels`.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ')?;
        let (series_name, label_text) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if series_name != name {
            continue;
        }
        let have: HashMap<&str, &str> = label_text
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k, v.trim_matches('"')))
            .collect();
        if labels.iter().all(|(k, v)| have.get(k) == Some(v)) {
            *found.get_or_insert(0.0) += value.parse::<f64>().ok()?;
        }
    }
    found
}

/// Polls `f` until it holds; fails the test after 10 s.
pub async fn wait_for<F: Fn() -> bool>(what: &str, f: F) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The body of a CronTab CREATE review, valid (allowed) for `replicas` up
/// to 10: the load and limit tests' request.
pub fn crontab_review(replicas: i64) -> Vec<u8> {
    let object = crontab(
        "load",
        json!({"minReplicas": 0, "replicas": replicas, "maxReplicas": 10}),
    );
    serde_json::to_vec(&admission_review(V1, "CREATE", CRONTAB, Some(object), None)).expect("json")
}

/// A plain-HTTP GET sent to `addr` (a TLS port), and all it answers.
pub async fn plain_http_get(addr: impl tokio::net::ToSocketAddrs) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .expect("write");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(3), tcp.read_to_string(&mut answer))
        .await
        .expect("answered")
        .expect("read");
    answer
}

/// `celhook serve` as a child process, as an operator runs it: JSON logs,
/// both listeners on free ports of 127.0.0.1, the addresses read from its
/// log; later log lines arrive on `log` (stderr is drained so the child
/// never blocks on a full pipe).
pub struct ServeProcess {
    pub child: tokio::process::Child,
    /// The HTTPS listener, `127.0.0.1:<port>`.
    pub addr: String,
    /// The plain-HTTP metrics listener.
    pub metrics_addr: String,
    /// Log lines after the ones that named the addresses.
    pub log: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl ServeProcess {
    /// Starts `celhook serve` with `args` after the listener and log flags.
    pub async fn start<I, S>(args: I) -> ServeProcess
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_celhook"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--metrics-listen", "127.0.0.1:0", "--log-format", "json"])
            .args(args)
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("celhook serve starts");
        let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr"));
        let (mut addr, mut metrics_addr) = (None, None);
        let mut seen = Vec::new();
        while addr.is_none() || metrics_addr.is_none() {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(30), lines.read_line(&mut line))
                .await
                .expect("a log line within 30 s")
                .expect("read");
            assert!(n > 0, "celhook exited early: {seen:?}");
            let value: Value = serde_json::from_str(&line).expect("JSON log line");
            if let Some(a) = value["local_addr"].as_str() {
                addr = Some(a.to_owned());
            }
            if let Some(a) = value["addr"].as_str() {
                metrics_addr = Some(a.to_owned());
            }
            seen.push(line);
        }
        let (tx, log) = tokio::sync::mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            loop {
                let mut line = String::new();
                match lines.read_line(&mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let _ = tx.send(line);
                    }
                }
            }
        });
        ServeProcess {
            child,
            addr: addr.expect("addr"),
            metrics_addr: metrics_addr.expect("metrics addr"),
            log,
        }
    }

    /// Sends the signal `name` (`TERM`, `HUP`, ...) with `kill`.
    pub fn signal(&self, name: &str) {
        let pid = self.child.id().expect("pid").to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name}");
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }
}

/// The server's metrics as its `/metrics` renders them, read in process
/// (no request, so counting it changes no counter).
pub fn rendered_metrics(server: &RunningServer) -> String {
    String::from_utf8(server.state().metrics.render().expect("render")).expect("utf-8")
}

/// `GET url` (a `/metrics` endpoint): the Prometheus text, after checking
/// the answer is 200 in the text format.
pub async fn metrics_text(client: &Client, url: &str) -> String {
    let resp = client.get(url).send().await.expect("GET /metrics");
    assert_eq!(resp.status(), StatusCode::OK);
    let content_type = resp.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    resp.text().await.expect("body")
}

/// Runs the futures concurrently on the test runtime (no extra crate).
pub async fn join_all<F: std::future::Future + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}
