//! Times the admission hot path (decode, lookup, evaluate, encode) one
//! review at a time with a pause between reviews, the thread either
//! asleep (its CPU may go idle) or spinning (it may not): the difference
//! is what an idle CPU costs the next review on this machine, with no
//! network, TLS or generator involved.
//!
//! Why it exists: the tail bar of issue 17 is read at half the server's
//! maximum, where most reviews arrive at an idle CPU. On a virtual machine
//! whose guest does not poll before halting (cpuidle `haltpoll` with
//! `guest_halt_poll_ns` 0), every idle moment hands the physical core back
//! to the host and the next review starts with cold caches
//! (docs/performance-log.md, "Session 50").
//!
//! ```text
//! cargo build --release --example idle_cost
//! taskset -c 0 target/release/examples/idle_cost core 100 sleep
//! taskset -c 0 target/release/examples/idle_cost core 100 spin
//! ```
//!
//! Arguments: the fixture directory under tests/fixtures/perf (`core`,
//! `norules`) or `walk`, the pause in microseconds, `sleep` or `spin`, and
//! the number of reviews (or chases) timed (3,000 by default, after 200
//! untimed). Prints one JSON line: the median, p90 and p99 of one's time in
//! microseconds (`reviews` counts chases too).
//!
//! `walk` times no celhook code at all: a dependent chase through 256 KiB
//! (one load per 64-byte line, in an order the prefetchers cannot guess),
//! 18 us warm on session 51's VM against a review's 7-11. What the pause
//! costs it is the machine's alone: beside a review's figures it shows
//! what the same idle moment does to work made only of loads that wait on
//! each other, with no celhook code in it.

use std::path::Path;
use std::time::{Duration, Instant};

use celhook::admission::Policy;
use celhook::config::{self, ConfigSource};
use celhook::review::encode_admission;

/// The allocator the server runs with, so that measurements match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Reviews answered before timing starts: code and data paged in.
const WARM_UP: usize = 200;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: idle_cost DIR|walk PAUSE_US sleep|spin [REVIEWS]";
    let [dir, pause, between, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    if rest.len() > 1 {
        return Err(usage.into());
    }
    let pause = Duration::from_micros(
        pause
            .parse()
            .map_err(|e| format!("pause {pause:?} (microseconds): {e}"))?,
    );
    let spin = match between.as_str() {
        "sleep" => false,
        "spin" => true,
        other => return Err(format!("between reviews: `sleep` or `spin`, not {other:?}")),
    };
    let timed: usize = match rest.first() {
        Some(n) => n.parse().map_err(|e| format!("reviews {n:?}: {e}"))?,
        None => 3000,
    };
    if timed == 0 {
        return Err("time at least one review (or chase)".into());
    }
    let mut work = if dir == "walk" { walk() } else { review(dir)? };
    let mut times = Vec::with_capacity(timed);
    for i in 0..WARM_UP + timed {
        let start = Instant::now();
        work()?;
        if i >= WARM_UP {
            times.push(start.elapsed());
        }
        if spin {
            let from = Instant::now();
            while from.elapsed() < pause {
                std::hint::spin_loop();
            }
        } else {
            std::thread::sleep(pause);
        }
    }
    times.sort_unstable();
    let at = |q: f64| {
        let i = ((times.len() - 1) as f64 * q).round() as usize;
        times[i].as_secs_f64() * 1e6
    };
    let line = serde_json::json!({
        "dir": dir,
        "pause_us": pause.as_micros() as u64,
        "between": between,
        "reviews": times.len(),
        "p50_us": at(0.5),
        "p90_us": at(0.9),
        "p99_us": at(0.99),
    });
    println!("{line}");
    Ok(())
}

/// One unit of timed work.
type Work = Box<dyn FnMut() -> Result<(), String>>;

/// The admission hot path on the fixture directory's config and the
/// CREATE review, as the server runs it.
fn review(dir: &str) -> Result<Work, String> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf");
    let loaded = config::load(&ConfigSource::Dir(fixtures.join(dir)));
    if loaded.report.has_errors() {
        return Err(format!("{dir}: {:?}", loaded.report));
    }
    // Compact and in the API server's order, as the load tool sends it.
    let review = celhook_loadtest::workload::read_document(&fixtures.join("review-create.json"))
        .and_then(|review| celhook_loadtest::workload::in_api_server_order(&review))
        .map_err(|e| format!("{e:#}"))?;
    let body = review.into_bytes();
    Ok(Box::new(move || {
        let body = std::hint::black_box(&body);
        let (version, req) = celhook::admission::decode(&loaded.catalog, &Policy::default(), body)
            .map_err(|e| e.to_string())?;
        let res = celhook::admission::answer(&loaded.catalog, &req);
        let out = encode_admission(version, &res).map_err(|e| e.to_string())?;
        std::hint::black_box(out);
        Ok(())
    }))
}

/// Lines the walk visits: 256 KiB, past a core's L1 data cache and inside
/// its L2 on the VMs measured (48 KiB and 2 MiB), so a warm chase runs
/// from L2; after a halt its lines come from wherever the host's use of
/// the core left them.
const WALK_LINES: usize = 4096;
/// `u32` slots in a 64-byte line.
const LINE: usize = 16;

/// A chase through every line once, each load's address read by the one
/// before. The order is a full-period linear congruential sequence modulo
/// the line count (odd increment, multiplier one more than a multiple of
/// four), so no random number crate is needed to shuffle it.
fn walk() -> Work {
    let mut table = vec![0u32; WALK_LINES * LINE];
    for line in 0..WALK_LINES {
        // Wrapping is exact here: 2^usize::BITS is a multiple of the line count.
        let next = line.wrapping_mul(1_103_515_245).wrapping_add(12_345) % WALK_LINES;
        table[line * LINE] = (next * LINE) as u32;
    }
    Box::new(move || {
        let table = std::hint::black_box(&table);
        let mut at = 0usize;
        for _ in 0..WALK_LINES {
            at = table[at] as usize;
        }
        std::hint::black_box(at);
        Ok(())
    })
}
