//! celhook-loadtest: sends AdmissionReviews over HTTPS (HTTP/2 by ALPN, or
//! HTTP/1.1) to a webhook, N requests with C in flight, checks that every
//! answer echoes its uid, and reports throughput and latency percentiles.
//!
//! ```text
//! celhook-loadtest --url https://127.0.0.1:8443/validate --insecure -n 10000 -c 32
//! celhook-loadtest --url https://celhook.example:443/validate --ca-file ca.pem --body review.json --http1
//! ```
//!
//! Exits 1 when any request failed (transport error, non-200, wrong uid).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::Value;

/// The seeds' CronTab, valid (replicas within bounds): a realistic CREATE.
const BUILTIN_REVIEW: &str = r#"{
  "apiVersion": "admission.k8s.io/v1",
  "kind": "AdmissionReview",
  "request": {
    "uid": "",
    "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
    "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
    "name": "my-new-cron-object",
    "namespace": "default",
    "operation": "CREATE",
    "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
    "object": {
      "apiVersion": "stable.example.com/v1",
      "kind": "CronTab",
      "metadata": {"name": "my-new-cron-object", "namespace": "default"},
      "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image",
               "minReplicas": 0, "replicas": 5, "maxReplicas": 10}
    },
    "oldObject": null,
    "dryRun": false,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
  }
}"#;

/// Stands for the uid in the serialized template; replaced per request.
const UID_PLACEHOLDER: &str = "celhook-loadtest-uid-placeholder-6f0c2a";

#[derive(Debug, Parser)]
#[command(
    name = "celhook-loadtest",
    version,
    about = "Load generator for AdmissionReview webhooks"
)]
struct Args {
    /// The webhook URL.
    #[arg(long, default_value = "https://127.0.0.1:8443/validate?timeout=10s")]
    url: String,
    /// PEM file of the CA (or self-signed certificate) to trust, instead of the system roots.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    ca_file: Option<PathBuf>,
    /// Accept any server certificate (development only).
    #[arg(long)]
    insecure: bool,
    /// Number of requests to send.
    #[arg(short = 'n', long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Requests in flight at once.
    #[arg(short = 'c', long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: u16,
    /// Speak HTTP/1.1 only (default: HTTP/2 when the server offers it, as the API server does).
    #[arg(long)]
    http1: bool,
    /// AdmissionReview JSON to send (its request.uid is replaced per request); default: a valid CronTab CREATE.
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
    /// Per-request timeout.
    #[arg(long, default_value_t = 10)]
    timeout_seconds: u64,
}

/// The body split around the uid, so each request is two copies and no
/// JSON work.
struct Template {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
}

impl Template {
    fn parse(json: &str) -> anyhow::Result<Self> {
        let mut review: Value = serde_json::from_str(json).context("the review is not JSON")?;
        let request = review
            .get_mut("request")
            .and_then(Value::as_object_mut)
            .context("the review has no request object")?;
        request.insert("uid".to_owned(), Value::from(UID_PLACEHOLDER));
        let text = serde_json::to_string(&review)?;
        let Some((prefix, suffix)) = text.split_once(UID_PLACEHOLDER) else {
            bail!("cannot locate request.uid in the serialized review");
        };
        if suffix.contains(UID_PLACEHOLDER) {
            bail!("the review contains the uid placeholder text elsewhere");
        }
        Ok(Self {
            prefix: prefix.as_bytes().to_vec(),
            suffix: suffix.as_bytes().to_vec(),
        })
    }

    fn body(&self, uid: &str) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.prefix.len() + uid.len() + self.suffix.len());
        body.extend_from_slice(&self.prefix);
        body.extend_from_slice(uid.as_bytes());
        body.extend_from_slice(&self.suffix);
        body
    }
}

/// The part of the answer we check.
#[derive(Deserialize)]
struct Answer {
    response: AnswerResponse,
}

#[derive(Deserialize)]
struct AnswerResponse {
    uid: String,
    allowed: bool,
}

/// What one worker saw.
struct Tally {
    latency_us: Histogram<u64>,
    allowed: u64,
    denied: u64,
    transport_errors: u64,
    status_errors: u64,
    uid_mismatches: u64,
    http2: u64,
    first_error: Option<String>,
}

impl Tally {
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            // 1 µs to 5 min, 3 significant digits.
            latency_us: Histogram::new_with_bounds(1, 300_000_000, 3)?,
            allowed: 0,
            denied: 0,
            transport_errors: 0,
            status_errors: 0,
            uid_mismatches: 0,
            http2: 0,
            first_error: None,
        })
    }

    fn failures(&self) -> u64 {
        self.transport_errors + self.status_errors + self.uid_mismatches
    }

    fn fail(&mut self, message: impl FnOnce() -> String) {
        if self.first_error.is_none() {
            self.first_error = Some(message());
        }
    }

    fn merge(&mut self, other: Tally) -> anyhow::Result<()> {
        self.latency_us.add(&other.latency_us)?;
        self.allowed += other.allowed;
        self.denied += other.denied;
        self.transport_errors += other.transport_errors;
        self.status_errors += other.status_errors;
        self.uid_mismatches += other.uid_mismatches;
        self.http2 += other.http2;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        Ok(())
    }
}

fn client(args: &Args) -> anyhow::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .timeout(Duration::from_secs(args.timeout_seconds))
        .pool_max_idle_per_host(usize::from(args.concurrency));
    if let Some(path) = &args.ca_file {
        let pem =
            std::fs::read(path).with_context(|| format!("reading --ca-file {}", path.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .with_context(|| format!("--ca-file {} is not PEM", path.display()))?;
        builder = builder.tls_certs_only(certs);
    }
    if args.insecure {
        builder = builder.tls_danger_accept_invalid_certs(true);
    }
    if args.http1 {
        builder = builder.http1_only();
    }
    builder.build().context("building the HTTPS client")
}

async fn worker(
    client: reqwest::Client,
    url: Arc<str>,
    template: Arc<Template>,
    next: Arc<AtomicU64>,
    total: u64,
) -> anyhow::Result<Tally> {
    let mut tally = Tally::new()?;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= total {
            return Ok(tally);
        }
        let uid = format!("loadtest-{i}");
        let body = template.body(&uid);
        let start = Instant::now();
        let resp = client
            .post(&*url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await;
        let resp = match resp {
            Ok(resp) => resp,
            Err(err) => {
                tally.transport_errors += 1;
                tally.fail(|| format!("{err:?}"));
                continue;
            }
        };
        if resp.version() == reqwest::Version::HTTP_2 {
            tally.http2 += 1;
        }
        let status = resp.status();
        let bytes = match resp.bytes().await {
            Ok(bytes) => bytes,
            Err(err) => {
                tally.transport_errors += 1;
                tally.fail(|| format!("reading the answer: {err:?}"));
                continue;
            }
        };
        let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        tally.latency_us.saturating_record(micros.max(1));
        if status != reqwest::StatusCode::OK {
            tally.status_errors += 1;
            tally.fail(|| format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)));
            continue;
        }
        match serde_json::from_slice::<Answer>(&bytes) {
            Ok(answer) if answer.response.uid == uid => {
                if answer.response.allowed {
                    tally.allowed += 1;
                } else {
                    tally.denied += 1;
                }
            }
            Ok(answer) => {
                tally.uid_mismatches += 1;
                tally.fail(|| format!("sent uid {uid}, got {}", answer.response.uid));
            }
            Err(err) => {
                tally.status_errors += 1;
                tally.fail(|| {
                    format!(
                        "answer is not an AdmissionReview ({err}): {}",
                        String::from_utf8_lossy(&bytes)
                    )
                });
            }
        }
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

async fn run(args: Args) -> anyhow::Result<bool> {
    let json = match &args.body {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading --body {}", path.display()))?,
        None => BUILTIN_REVIEW.to_owned(),
    };
    let template = Arc::new(Template::parse(&json)?);
    let client = client(&args)?;
    let url: Arc<str> = Arc::from(args.url.as_str());

    // One request first: fails fast on a wrong URL or certificate, and opens
    // the connection so the handshake is not in the numbers.
    let warmup = client
        .post(&*url)
        .header("content-type", "application/json")
        .body(template.body("loadtest-warmup"))
        .send()
        .await
        .with_context(|| format!("first request to {url}"))?;
    let version = warmup.version();
    let status = warmup.status();
    if status != reqwest::StatusCode::OK {
        let text = warmup.text().await.unwrap_or_default();
        bail!("first request to {url}: HTTP {status}: {text}");
    }
    drop(warmup);

    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            tokio::spawn(worker(
                client.clone(),
                url.clone(),
                template.clone(),
                next.clone(),
                args.requests,
            ))
        })
        .collect();
    let mut tally = Tally::new()?;
    for handle in workers {
        tally.merge(handle.await.context("worker panicked")??)?;
    }
    let elapsed = started.elapsed();

    let h = &tally.latency_us;
    let secs = elapsed.as_secs_f64();
    println!(
        "target:      {url} ({version:?}, {} of {} answers over HTTP/2)",
        tally.http2, args.requests
    );
    println!(
        "requests:    {} sent, {} allowed, {} denied, {} failed ({} transport, {} status, {} uid mismatch)",
        args.requests,
        tally.allowed,
        tally.denied,
        tally.failures(),
        tally.transport_errors,
        tally.status_errors,
        tally.uid_mismatches
    );
    println!(
        "duration:    {secs:.3} s at concurrency {}, {:.1} requests/s",
        args.concurrency,
        args.requests as f64 / secs.max(f64::EPSILON)
    );
    if !h.is_empty() {
        println!(
            "latency ms:  p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}",
            ms(h.value_at_quantile(0.50)),
            ms(h.value_at_quantile(0.90)),
            ms(h.value_at_quantile(0.99)),
            ms(h.max())
        );
    }
    if let Some(err) = &tally.first_error {
        println!("first error: {err}");
    }
    Ok(tally.failures() == 0)
}

fn main() -> ExitCode {
    let args = Args::parse();
    // reqwest is built without a default provider; the same one as celhook.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_puts_each_uid_in_request_uid() {
        let template = Template::parse(BUILTIN_REVIEW).expect("template");
        let body = template.body("loadtest-42");
        let review: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(review["request"]["uid"], "loadtest-42");
        assert_eq!(review["request"]["kind"]["kind"], "CronTab");
    }

    #[test]
    fn a_review_without_request_is_refused() {
        assert!(Template::parse(r#"{"apiVersion":"admission.k8s.io/v1"}"#).is_err());
        assert!(Template::parse("not json").is_err());
    }
}
