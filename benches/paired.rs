//! Issue 17's ratios timed in turns: each bar's two sides (the hot path and
//! serde_json's parse of the same body; a conversion and serde_json's
//! round trip of the same review) run batch after batch, alternating which
//! goes first, and each round gives one ratio. On a shared machine whose
//! speed drifts by a third between criterion's groups minutes apart, a
//! drift then falls on both sides of a ratio alike; the median of the
//! rounds' ratios is the figure.
//!
//! ```text
//! cargo bench --bench paired          # about 20 seconds, one JSON line a pair
//! cargo bench --bench paired -- peer-method   # the CREATE hot path alone
//! ```
//!
//! `peer-method` times the 17-rule CREATE hot path the way the peer
//! harness (`../shared/peer-bench/lib/harness.mjs`) times cel-js's
//! admission: a warm-up, a batch calibrated to a sample's length, the
//! median of the samples. `scripts/celjs-in-turns.sh` runs it around
//! each run of cel-js's harness, so that bar's two sides, which live in
//! two processes, are timed in turns as well.

#[path = "common/conversion_review.rs"]
mod conversion_review;
#[path = "common/review.rs"]
mod review;

use std::hint::black_box;
use std::time::Instant;

use arc_swap::ArcSwap;
use celhook::config::{self, ConfigSource};
use review::{body_of, catalog_dir, hot_path, read_json, serde_json_roundtrip};
use serde_json::{json, Value};

/// The allocator the server runs with, so that measurements match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One bar's two sides: `ours` over `floor` is the ratio.
struct Pair<'a> {
    name: &'a str,
    ours: Box<dyn FnMut() + 'a>,
    floor: Box<dyn FnMut() + 'a>,
    /// Runs of each side per round (a round of each takes about a
    /// millisecond or more, well above the clock's resolution).
    batch: u32,
    rounds: usize,
}

/// Seconds per run of `f`, over `n` runs.
fn per_run(f: &mut dyn FnMut(), n: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_secs_f64() / f64::from(n)
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn quartiles(xs: &mut [f64]) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() / 4], xs[xs.len() * 3 / 4])
}

/// The pair's rounds, as a JSON line.
fn run(mut p: Pair<'_>) -> Value {
    // Warm both sides (caches, the allocator's pages).
    per_run(&mut p.ours, p.batch);
    per_run(&mut p.floor, p.batch);
    let (mut ours, mut floor, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..p.rounds {
        let (a, b) = if round % 2 == 0 {
            let a = per_run(&mut p.ours, p.batch);
            (a, per_run(&mut p.floor, p.batch))
        } else {
            let b = per_run(&mut p.floor, p.batch);
            (per_run(&mut p.ours, p.batch), b)
        };
        ours.push(a);
        floor.push(b);
        ratios.push(a / b);
    }
    let (low, high) = quartiles(&mut ratios);
    json!({
        "pair": p.name,
        "rounds": p.rounds,
        "batch": p.batch,
        "ours_us": median(&mut ours) * 1e6,
        "floor_us": median(&mut floor) * 1e6,
        "ratio": median(&mut ratios),
        "ratio_quartiles": [low, high],
    })
}

/// The peer harness's defaults (its `PERF_SAMPLE_MS`, `PERF_SAMPLES` and
/// `PERF_WARMUP_MS`), read from the same variables so both sides move
/// together.
fn peer_setting(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Nanoseconds per run of `f` by the peer harness's method: warm up, double
/// a batch until it takes a quarter of a sample, scale it to a sample,
/// then the median of the samples.
fn peer_method(f: &mut dyn FnMut()) -> f64 {
    let sample = peer_setting("PERF_SAMPLE_MS", 20.0) / 1e3;
    let samples = peer_setting("PERF_SAMPLES", 7.0).max(1.0) as usize;
    let warm_up = peer_setting("PERF_WARMUP_MS", 300.0) / 1e3;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < warm_up {
        f();
    }
    let mut n = 1u32;
    let per = loop {
        let t = per_run(f, n);
        if t * f64::from(n) >= sample / 4.0 || n >= 1 << 24 {
            break t;
        }
        n *= 2;
    };
    let batch = (sample / per).ceil().clamp(1.0, f64::from(u32::MAX)) as u32;
    let mut out: Vec<f64> = (0..samples).map(|_| per_run(f, batch)).collect();
    median(&mut out) * 1e9
}

fn main() {
    let core = ArcSwap::from_pointee(catalog_dir("core"));
    let create = body_of(&read_json("review-create.json"));
    if std::env::args().any(|a| a == "peer-method") {
        let out: Value = serde_json::from_slice(&hot_path(&core, &create)).expect("JSON");
        assert_eq!(out["response"]["allowed"], true, "{out}");
        let ns = peer_method(&mut || drop(black_box(hot_path(&core, black_box(&create)))));
        println!("{}", json!({ "hot_path_create_17_rules_ns": ns }));
        return;
    }
    let update = body_of(&read_json("review-update.json"));
    let parse = |body: &[u8]| {
        black_box(serde_json::from_slice::<Value>(black_box(body)).expect("JSON"));
    };
    let loaded = config::load(&ConfigSource::Embedded);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let catalog = loaded.catalog;
    let pizzas = conversion_review::body(conversion_review::OBJECTS);
    let crontabs = conversion_review::crontab_body(conversion_review::OBJECTS);
    // Each path answers as it should before it is timed.
    for body in [&create, &update] {
        let out: Value = serde_json::from_slice(&hot_path(&core, body)).expect("JSON");
        assert_eq!(out["response"]["allowed"], true, "{out}");
    }
    conversion_review::check_answer(
        &conversion_review::convert(&catalog, &pizzas),
        conversion_review::OBJECTS,
    );
    conversion_review::check_crontab_answer(
        &conversion_review::convert(&catalog, &crontabs),
        conversion_review::OBJECTS,
    );
    let pairs = [
        Pair {
            name: "hot path CREATE (17 rules) / serde_json parse of the body",
            ours: Box::new(|| drop(black_box(hot_path(&core, black_box(&create))))),
            floor: Box::new(|| parse(&create)),
            batch: 40,
            rounds: 501,
        },
        Pair {
            name: "hot path UPDATE (19 rules) / serde_json parse of the body",
            ours: Box::new(|| drop(black_box(hot_path(&core, black_box(&update))))),
            floor: Box::new(|| parse(&update)),
            batch: 20,
            rounds: 501,
        },
        Pair {
            name: "conversion of 10,000 Pizzas / serde_json round trip",
            ours: Box::new(|| drop(black_box(conversion_review::convert(&catalog, &pizzas)))),
            floor: Box::new(|| drop(black_box(serde_json_roundtrip(black_box(&pizzas))))),
            batch: 1,
            rounds: 9,
        },
        Pair {
            name: "conversion of 10,000 CronTabs / serde_json round trip",
            ours: Box::new(|| drop(black_box(conversion_review::convert(&catalog, &crontabs)))),
            floor: Box::new(|| drop(black_box(serde_json_roundtrip(black_box(&crontabs))))),
            batch: 1,
            rounds: 15,
        },
    ];
    for pair in pairs {
        println!("{}", run(pair));
    }
}
