//! Runs the admission hot path (decode, lookup, evaluate, encode) on the
//! peer workload in a loop, for profilers: instruction counts under
//! callgrind are stable on a shared CPU where timings are not.
//!
//! ```text
//! cargo build --release --example profile_hot_path
//! valgrind --tool=callgrind --callgrind-out-file=hot.cg \
//!     $CARGO_TARGET_DIR/release/examples/profile_hot_path core create 2000
//! callgrind_annotate --inclusive=yes hot.cg | head -60
//! ```
//!
//! Arguments: the fixture directory under tests/fixtures/perf (`core`,
//! `norules`, `k8slib`, or a path), `create`, `update`, `update-applied` or
//! `create-40-ports` (the review file `review-<op>.json`; the last has 20
//! more ports, for what a loop costs per element), the iteration count,
//! and `whole` to decode the objects whole rather than what the rules
//! read, or
//! `rules` to run the rules alone (the review decoded once,
//! `Validator::validate` in the loop: the engine's share), or `serde_json`
//! to parse the same body into a `serde_json::Value` and drop it (the
//! yardstick issue 17's bars are set against), or `cold` to decode the
//! planned fields as the server does but write over 4 MiB between
//! reviews, so that each review finds its caches as a server's review
//! does after the TLS, HTTP and kernel work of the one before (timed
//! against the same loop of another fixture directory, the difference is
//! what the rules cost with cold caches), or `decode` to decode the
//! planned fields and drop them, nothing else (the decoder's share), or
//! `ports-tree`, `ports-tape` or `ports-skip` to build the object's
//! `spec.ports` text (20 port objects) as a tree or a tape and drop it, or
//! pass over it (docs/tape-plan.md, stage 2), or `ports-columns` and
//! `ports-columns-loops` to read its three fields the rules test into
//! columns, and then run the rules' loops over them (docs/tape-plan.md,
//! "A data path of its own, measured").

use std::path::Path;

use celhook::admission::Policy;
use celhook::config::{self, ConfigSource};
use celhook::review::{decode_admission_with, encode_admission};

/// The allocator the server runs with, so that measurements match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| "core".into());
    let op = args.next().unwrap_or_else(|| "create".into());
    let n: u64 = args
        .next()
        .map(|s| s.parse().map_err(|e| format!("iterations {s:?}: {e}")))
        .transpose()?
        .unwrap_or(1000);
    let mode = args.next().unwrap_or_default();
    let whole = mode == "whole";
    let cold = mode == "cold";
    // Larger than a core's L2 cache on the machines measured.
    let mut evict = vec![0u8; if cold { 4 << 20 } else { 0 }];
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf");
    let loaded = config::load(&ConfigSource::Dir(fixtures.join(&dir)));
    if loaded.report.has_errors() {
        return Err(format!("{dir}: {:?}", loaded.report));
    }
    let review_path = fixtures.join(format!("review-{op}.json"));
    let text = std::fs::read_to_string(&review_path)
        .map_err(|e| format!("{}: {e}", review_path.display()))?;
    let review: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    // Compact and in the API server's order (`operation` before `object`).
    let body = celhook_loadtest::workload::in_api_server_order(&review)
        .map_err(|e| e.to_string())?
        .into_bytes();
    if mode == "rules" {
        return rules_alone(&loaded.catalog, &body, n);
    }
    if mode == "serde_json" {
        for _ in 0..n {
            let v: serde_json::Value =
                serde_json::from_slice(std::hint::black_box(&body)).map_err(|e| e.to_string())?;
            std::hint::black_box(v);
        }
        println!("{n} parses of {} bytes", body.len());
        return Ok(());
    }
    if let Some(how) = mode.strip_prefix("ports-") {
        return ports(&review, how, n);
    }
    if mode == "decode" {
        for _ in 0..n {
            let decoded = celhook::admission::decode(
                &loaded.catalog,
                &Policy::default(),
                std::hint::black_box(&body),
            )
            .map_err(|e| e.to_string())?;
            std::hint::black_box(decoded);
        }
        println!("{n} decodes of {} bytes", body.len());
        return Ok(());
    }
    let mut allowed = 0u64;
    for _ in 0..n {
        // As the server decodes: the fields only policies read when the
        // config has some, of the objects what the rules read (`whole`:
        // the objects whole, as before the decoding was planned).
        let body = std::hint::black_box(&body);
        let (version, req) = if whole {
            decode_admission_with(body, loaded.catalog.request_details())
        } else {
            celhook::admission::decode(&loaded.catalog, &Policy::default(), body)
        }
        .map_err(|e| e.to_string())?;
        let res = celhook::admission::answer(&loaded.catalog, &req);
        allowed += u64::from(res.allowed);
        let out = encode_admission(version, &res).map_err(|e| e.to_string())?;
        std::hint::black_box(out);
        if cold {
            // A write per 64-byte line: each line leaves the caches the
            // review used.
            for line in evict.chunks_mut(64) {
                line[0] = line[0].wrapping_add(1);
            }
            std::hint::black_box(&evict);
        }
    }
    println!("{n} reviews of {} bytes, {allowed} allowed", body.len());
    Ok(())
}

/// The rules of the review's kind on its objects, `n` times.
fn rules_alone(catalog: &celhook::config::Catalog, body: &[u8], n: u64) -> Result<(), String> {
    let (_, req) = celhook::review::decode_admission(body).map_err(|e| e.to_string())?;
    let kind = &req.kind;
    let crd = catalog
        .lookup(&kind.group, &kind.version, &kind.kind)
        .ok_or("the review's kind is not in the config")?;
    let object = req.object.as_ref().ok_or("the review has no object")?;
    let mut errors = 0;
    for _ in 0..n {
        let findings = crd
            .validator
            .validate(std::hint::black_box(object), req.old_object.as_ref());
        errors += findings.errors.len();
    }
    println!("{n} validations, {errors} errors");
    Ok(())
}

/// The object's `spec.ports` text, `n` times: built as a tree, built as a
/// tape, skipped, or decoded into columns of the three fields the rules
/// read (`columns`; `columns-loops` then runs the rules' six loops over
/// them): what a data path of its own for planned lists would cost at
/// least (docs/tape-plan.md).
fn ports(review: &serde_json::Value, how: &str, n: u64) -> Result<(), String> {
    let text = serde_json::to_string(&review["request"]["object"]["spec"]["ports"])
        .map_err(|e| e.to_string())?;
    let mut builder = celhook_json::TapeBuilder::default();
    let mut nodes = 0usize;
    for _ in 0..n {
        let text = std::hint::black_box(text.as_str());
        let mut p = celhook_json::Parser::new(text);
        match how {
            "tree" => nodes += usize::from(std::hint::black_box(p.value()).is_ok()),
            "tape" => {
                // The tape keeps its text: one copy of it per build, as a
                // request would copy its body once.
                let shared: std::sync::Arc<str> = std::sync::Arc::from(text);
                let mut p = celhook_json::Parser::new(&shared);
                builder.reserve_for(shared.len());
                let root = p.tape(&mut builder).map_err(|e| e.to_string())?;
                nodes += std::hint::black_box(builder.finish(shared, root)).node_count();
            }
            "skip" => nodes += usize::from(p.skip().is_ok()),
            "columns" => nodes += std::hint::black_box(columns(&mut p)?).len(),
            "columns-loops" => {
                let cols = columns(&mut p)?;
                nodes += std::hint::black_box(column_loops(std::hint::black_box(&cols))) as usize;
            }
            _ => {
                return Err(format!(
                    "ports-{how}: tree, tape, skip, columns or columns-loops"
                ))
            }
        }
    }
    println!("{n} builds of {} bytes ({how}), {nodes}", text.len());
    Ok(())
}

/// The port objects' `name`, `port` and `protocol`, one column each, read
/// straight from the text (strings borrowed); other fields skipped.
/// A measurement, not a decoder: it gives up on anything irregular.
struct Columns<'a> {
    name: Vec<std::borrow::Cow<'a, str>>,
    port: Vec<i64>,
    protocol: Vec<std::borrow::Cow<'a, str>>,
}

impl Columns<'_> {
    fn len(&self) -> usize {
        self.name.len()
    }
}

fn columns<'a>(p: &mut celhook_json::Parser<'a>) -> Result<Columns<'a>, String> {
    let e = |e: celhook_json::Error| e.to_string();
    let mut c = Columns {
        name: Vec::new(),
        port: Vec::new(),
        protocol: Vec::new(),
    };
    p.begin_array("a list").map_err(e)?;
    let mut first = true;
    while p.next_element(&mut first).map_err(e)? {
        p.begin_object("a port").map_err(e)?;
        let mut first_key = true;
        while let Some(key) = p.next_key(&mut first_key).map_err(e)? {
            match &*key {
                "name" => c.name.push(p.string("a name").map_err(e)?),
                "protocol" => c.protocol.push(p.string("a protocol").map_err(e)?),
                "port" => {
                    let raw = p.raw().map_err(e)?;
                    c.port.push(raw.parse().map_err(|_| "port not an int")?);
                }
                _ => p.skip().map_err(e)?,
            }
        }
    }
    if c.port.len() != c.len() || c.protocol.len() != c.len() {
        return Err("a port lacks a field".into());
    }
    Ok(c)
}

/// The perf CRD's loops over the ports, on the columns (regular
/// expressions left out: they cost the same on a column), with a running
/// charge of about the CEL cost's shape (a sum per step, the uniqueness
/// check's in closed form), not its exact value: what the loops' work
/// would cost at least, the instructions being the measurement.
fn column_loops(c: &Columns<'_>) -> u64 {
    let mut cost = 0u64;
    let n = c.len() as u64;
    // all(p, p.port > 0 && p.port < 65536)
    let mut ok = true;
    for &port in &c.port {
        cost += 3 + 3;
        if port <= 0 {
            ok = false;
            break;
        }
        cost += 3;
        if port >= 65536 {
            ok = false;
            break;
        }
    }
    cost += u64::from(ok);
    // all(p, p.protocol in ['TCP', 'UDP', 'SCTP'])
    for protocol in &c.protocol {
        cost += 5;
        if !matches!(&**protocol, "TCP" | "UDP" | "SCTP") {
            ok = false;
            break;
        }
    }
    // all(p, size(p.name) <= 15)
    for name in &c.name {
        cost += 5;
        if name.chars().count() > 15 {
            ok = false;
            break;
        }
    }
    // exists(p, p.name == 'metrics' && p.port == 9999)
    let mut found = false;
    for (name, &port) in c.name.iter().zip(&c.port) {
        cost += 4 + 3;
        if name == "metrics" {
            cost += 3;
            if port == 9999 {
                found = true;
                break;
            }
        }
    }
    // size(filter(p, p.protocol == 'UDP'))
    let udp = c.protocol.iter().filter(|p| *p == "UDP").count() as u64;
    cost += 4 * n + 13 * udp + 1;
    // all(p, ports.exists_one(q, q.name == p.name)), pairwise
    let mut distinct = true;
    for (i, a) in c.name.iter().enumerate() {
        if c.name[i + 1..].iter().any(|b| a == b) {
            distinct = false;
        }
    }
    cost += n * (4 * n + 4);
    cost + u64::from(ok) + u64::from(found) + u64::from(distinct) + udp
}
