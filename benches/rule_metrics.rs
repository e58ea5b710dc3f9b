//! What recording a review's rule metrics costs when every worker thread
//! records at once: one review's 17 rules (an evaluation and its cost
//! each), on 1, 2 and 4 threads, through `Metrics::rule` (a shard per
//! thread) against the same adds on plain `prometheus` counters (one
//! atomic per series for all threads, what the rule families were before).
//! The time is per review per thread: flat in the thread count when the
//! threads do not contend.
//!
//! ```text
//! cargo bench --bench rule_metrics
//! ```

use std::time::{Duration, Instant};

use celhook::metrics::{Metrics, RuleObservation, RuleResult};
use criterion::{criterion_group, criterion_main, Criterion};
use prometheus::{IntCounter, IntCounterVec, Opts};

const RULES: usize = 17;

/// Runs `review` `iters` times on each of `threads` threads at once; the
/// slowest thread's time.
fn on_threads(threads: usize, iters: u64, review: &(dyn Fn() + Sync)) -> Duration {
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let t = Instant::now();
                    for _ in 0..iters {
                        review();
                    }
                    t.elapsed()
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_default())
            .max()
            .unwrap_or_default()
    })
}

fn bench(c: &mut Criterion) {
    let metrics = Metrics::register();
    let sharded: Vec<_> = (0..RULES)
        .map(|i| metrics.rule("appdeployments.example.com", "v1", ".spec", i))
        .collect();
    // A review's observations, as the server records them once answered.
    let observed: Vec<RuleObservation<'_>> = sharded
        .iter()
        .map(|metrics| RuleObservation {
            metrics,
            result: RuleResult::Passed,
            cost: 7,
        })
        .collect();
    let families: Vec<IntCounterVec> = ["evaluations", "failed", "errors", "cost"]
        .iter()
        .filter_map(|n| IntCounterVec::new(Opts::new(*n, "help"), &["index"]).ok())
        .collect();
    let shared: Vec<Vec<IntCounter>> = (0..RULES)
        .map(|i| {
            let i = i.to_string();
            families
                .iter()
                .map(|f| f.with_label_values(&[&i]))
                .collect()
        })
        .collect();

    let mut group = c.benchmark_group("rule_metrics");
    for threads in [1, 2, 4] {
        group.bench_function(format!("sharded/{threads}"), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, &|| {
                    RuleObservation::record_all(&observed);
                })
            })
        });
        group.bench_function(format!("shared/{threads}"), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, &|| {
                    for r in &shared {
                        r[0].inc();
                        r[3].inc_by(7);
                    }
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
