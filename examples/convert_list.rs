//! LIST-scale conversion through a running `celhook serve`: a ConversionReview
//! of 10,000 objects of mixed source versions posted to `/convert` again and
//! again over one HTTPS connection (HTTP/1.1 keep-alive, as the API server's
//! webhook client calls), with the latency of each whole exchange (request
//! written, answer read to its last byte), the request and answer sizes and
//! objects per second. `--per-object` sends the same objects one review each,
//! one after the other, leaving out those already at the desired version:
//! how the API server converts a LIST it reads from etcd (it decodes, and
//! so converts, every item on its own, and calls no webhook for an item
//! already at the version asked for).
//!
//! ```text
//! cargo build --release --locked --bin celhook --example convert_list
//! B=target/release; D=$(mktemp -d)
//! $B/celhook certs --namespace celhook --out-dir $D
//! $B/celhook serve --listen 127.0.0.1:8443 --tls-cert $D/tls.crt --tls-key $D/tls.key &
//! $B/examples/convert_list --ca-file $D/ca.crt pizza            # 30 reviews of 10,000
//! $B/examples/convert_list --ca-file $D/ca.crt --per-object -n 3 crontab
//! ```
//!
//! The objects are those of the conversion benchmark
//! (benches/common/conversion_review.rs, about 4 KiB each): Pizzas with 16
//! toppings of 1 to 4 helpings, three in four at v1alpha1 and one in four
//! already at v1beta1, to v1beta1; or CronTabs, three in four at v1beta1
//! and one in four at v1, to v1. The first answer is checked object by
//! object; every later one must be the same bytes. Only 127.0.0.1,
//! localhost or [::1] are accepted as targets.

#[allow(dead_code)]
#[path = "../benches/common/conversion_review.rs"]
mod conversion_review;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use hyper::body::Bytes;
use serde_json::{json, Value};

#[derive(Parser)]
#[command(about = "LIST-scale ConversionReviews against a local celhook serve")]
struct Args {
    /// `pizza` (toppings through CEL lists) or `crontab` (one string split).
    #[arg(default_value = "pizza")]
    workload: String,
    /// The conversion endpoint; loopback only.
    #[arg(long, default_value = "https://127.0.0.1:8443/convert")]
    url: String,
    /// PEM CA that signed the server's certificate (`celhook certs`).
    #[arg(long, required_unless_present = "insecure")]
    ca_file: Option<PathBuf>,
    /// Accept any server certificate (the generated one of a bare `serve`).
    #[arg(long)]
    insecure: bool,
    /// Objects per LIST.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Measured LISTs.
    #[arg(short = 'n', long, default_value_t = 30)]
    requests: usize,
    /// LISTs sent first and not measured.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Offer HTTP/2 by ALPN instead of HTTP/1.1 only.
    #[arg(long)]
    http2: bool,
    /// One review per object, sent one after the other.
    #[arg(long)]
    per_object: bool,
}

/// The objects of a LIST, the desiredAPIVersion, and what each must convert to.
struct Workload {
    objects: Vec<Value>,
    desired: &'static str,
    expected: Vec<Value>,
}

fn workload(name: &str, n: usize) -> Result<Workload, String> {
    match name {
        "pizza" => Ok(Workload {
            objects: (0..n)
                .map(|i| {
                    let from = if i % 4 == 3 { "v1beta1" } else { "v1alpha1" };
                    conversion_review::pizza(i, from)
                })
                .collect(),
            desired: conversion_review::DESIRED,
            expected: (0..n)
                .map(|i| {
                    let want = conversion_review::pizza(i, "v1beta1");
                    json!({"name": want["metadata"]["name"], "spec": want["spec"]})
                })
                .collect(),
        }),
        "crontab" => Ok(Workload {
            objects: (0..n)
                .map(|i| {
                    let mut o = conversion_review::crontab(i);
                    if i % 4 == 3 {
                        let (host, port) = split_host_port(&o);
                        let map = o.as_object_mut().expect("an object");
                        map.remove("hostPort");
                        map.insert("apiVersion".into(), json!("example.com/v1"));
                        map.insert("host".into(), json!(host));
                        map.insert("port".into(), json!(port));
                    }
                    o
                })
                .collect(),
            desired: "example.com/v1",
            expected: (0..n)
                .map(|i| {
                    let o = conversion_review::crontab(i);
                    let (host, port) = split_host_port(&o);
                    json!({"name": o["metadata"]["name"], "host": host, "port": port})
                })
                .collect(),
        }),
        other => Err(format!("unknown workload {other:?}: pizza or crontab")),
    }
}

fn split_host_port(crontab: &Value) -> (String, String) {
    let hp = crontab["hostPort"].as_str().unwrap_or_default();
    let (host, port) = hp.split_once(':').unwrap_or((hp, ""));
    (host.to_owned(), port.to_owned())
}

fn review_body(uid: &str, desired: &str, objects: &[Value]) -> Result<Bytes, String> {
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}
    });
    serde_json::to_vec(&review)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// Checks a Success answer: one object per input, in order, at the desired
/// version, with the expected name and converted fields.
fn check(answer: &[u8], uid: &str, w: &Workload, first: usize) -> Result<usize, String> {
    let answer: Value = serde_json::from_slice(answer).map_err(|e| format!("not JSON: {e}"))?;
    let resp = &answer["response"];
    if resp["uid"] != uid || resp["result"]["status"] != "Success" {
        return Err(format!("not a Success for {uid}: {}", resp["result"]));
    }
    let out = resp["convertedObjects"]
        .as_array()
        .ok_or("no convertedObjects")?;
    for (k, o) in out.iter().enumerate() {
        let want = w.expected.get(first + k).ok_or("more objects than sent")?;
        let fine = o["apiVersion"] == w.desired
            && o["metadata"]["name"] == want["name"]
            && want
                .as_object()
                .into_iter()
                .flatten()
                .all(|(key, v)| key == "name" || &o[key] == v);
        if !fine {
            return Err(format!("object {}: got {o}, want {want}", first + k));
        }
    }
    Ok(out.len())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    // Nearest rank: with fewer than 100 samples p99 is the largest.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

async fn post(client: &reqwest::Client, url: &str, body: Bytes) -> Result<Bytes, String> {
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e:?}"))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| format!("reading: {e:?}"))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        return Err(format!("HTTP {status}: {text}"));
    }
    Ok(bytes)
}

fn client(args: &Args) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true);
    if let Some(path) = &args.ca_file {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string())?;
        b = b.tls_certs_only(certs);
    }
    if args.insecure {
        b = b.tls_danger_accept_invalid_certs(true);
    }
    if !args.http2 {
        b = b.http1_only();
    }
    b.build().map_err(|e| e.to_string())
}

/// The machine, for the report: CPUs this process may use and their model.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cpus} CPUs, {model}")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let url = reqwest::Url::parse(&args.url).map_err(|e| format!("--url: {e}"))?;
    // A load tool: never aimed at anything but this machine.
    if !matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")) {
        return Err(format!("--url {}: only loopback targets", args.url));
    }
    if args.objects == 0 || args.requests == 0 {
        return Err("--objects and --requests must be at least 1".into());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let w = workload(&args.workload, args.objects)?;
    let client = client(&args)?;
    // Bodies are built once: a LIST is one body, or one body per object to
    // convert (uid, index of its first object, bytes).
    let bodies: Vec<(String, usize, Bytes)> = if args.per_object {
        (0..w.objects.len())
            .filter(|&i| w.objects[i]["apiVersion"] != w.desired)
            .map(|i| {
                let uid = format!("convert-list-{i}");
                review_body(&uid, w.desired, &w.objects[i..=i]).map(|b| (uid, i, b))
            })
            .collect::<Result<_, _>>()?
    } else {
        let body = review_body("convert-list", w.desired, &w.objects)?;
        vec![("convert-list".to_owned(), 0, body)]
    };
    let sent: usize = if args.per_object {
        bodies.len()
    } else {
        w.objects.len()
    };
    let request_bytes: usize = bodies.iter().map(|(_, _, b)| b.len()).sum();

    // The first round is checked object by object and kept; the others
    // must answer the same bytes.
    let mut reference: Vec<Bytes> = Vec::with_capacity(bodies.len());
    let mut lists = Vec::with_capacity(args.requests);
    let mut calls = Vec::new();
    for round in 0..args.warmup + args.requests {
        let mut list_time = Duration::ZERO;
        let mut converted = 0;
        for (k, (uid, first, body)) in bodies.iter().enumerate() {
            let started = Instant::now();
            let answer = post(&client, url.as_str(), body.clone()).await?;
            let took = started.elapsed();
            list_time += took;
            if round >= args.warmup && args.per_object {
                calls.push(took);
            }
            if round == 0 {
                converted += check(&answer, uid, &w, *first)?;
                reference.push(answer);
            } else if answer != reference[k] {
                return Err(format!("round {round}: answer {k} differs from the first"));
            }
        }
        if round == 0 && converted != sent {
            return Err(format!("{converted} objects back, {sent} sent"));
        }
        if round >= args.warmup {
            lists.push(list_time);
        }
    }
    let answer_bytes: usize = reference.iter().map(Bytes::len).sum();

    lists.sort();
    let n = w.objects.len();
    let at_desired = w
        .objects
        .iter()
        .filter(|o| o["apiVersion"] == w.desired)
        .count();
    println!("machine:   {}", machine());
    println!(
        "workload:  {} x {n} objects to {} ({at_desired} already there), {}, one connection, {}",
        args.workload,
        w.desired,
        if args.http2 {
            "HTTP/2 offered"
        } else {
            "HTTP/1.1 keep-alive"
        },
        if args.per_object {
            "one review per object to convert"
        } else {
            "one review per LIST"
        }
    );
    println!(
        "bytes:     {request_bytes} in, {answer_bytes} out per LIST ({} reviews)",
        bodies.len()
    );
    println!(
        "LIST:      {} measured after {} warm-up: p50 {}, p99 {}, max {}, mean {}",
        lists.len(),
        args.warmup,
        ms(percentile(&lists, 50.0)),
        ms(percentile(&lists, 99.0)),
        ms(lists[lists.len() - 1]),
        ms(lists.iter().sum::<Duration>() / lists.len() as u32)
    );
    println!(
        "objects/s: {:.0} of the LIST at its p50 ({sent} of them sent to the webhook)",
        n as f64 / percentile(&lists, 50.0).as_secs_f64()
    );
    if !calls.is_empty() {
        calls.sort();
        println!(
            "review:    {} single-object reviews: p50 {:.0} us, p99 {:.0} us, max {:.0} us",
            calls.len(),
            percentile(&calls, 50.0).as_secs_f64() * 1e6,
            percentile(&calls, 99.0).as_secs_f64() * 1e6,
            calls[calls.len() - 1].as_secs_f64() * 1e6
        );
    }
    Ok(())
}
