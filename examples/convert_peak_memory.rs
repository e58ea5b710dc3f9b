//! Peak heap memory of one `POST /convert` request on the review of issue 6,
//! target 4 (10,000 objects of 4 KiB, benches/common/conversion_review.rs),
//! relative to the body: a count of bytes, not a timing, so the same on a
//! busy machine as on an idle one.
//!
//! ```text
//! cargo run --release --example convert_peak_memory                 # JSON on stdout
//! cargo run --release --example convert_peak_memory -- dhat-heap.json  # and the Pizza heap profile
//! ```
//!
//! The body is built first and held throughout, as the server holds the
//! request body until the answer is written; the heap profiler
//! ([dhat](https://docs.rs/dhat), counting every allocation through the
//! global allocator) starts after it, so `peak_bytes` = the body + the most
//! bytes the request had allocated at once (decoded review, the object being
//! converted, the answer's chunks not yet sent: all of a small answer, of
//! a streamed one those waiting for the connection). For comparison, the same is measured for
//! serde_json parsing the body into a `Value` and serializing it. With a
//! file argument, the profile of the conversion (which allocation sites
//! held the bytes at the peak) is written there for the DHAT viewer
//! (`dh_view.html` of valgrind).
//!
//! The figures are the bytes the code asks for, whatever the allocator: the
//! server's (mimalloc) rounds each block up to its size class on top.
//! dhat rather than a hand-written counting allocator: a `GlobalAlloc`
//! needs `unsafe impl`, and the workspace forbids unsafe code.

#[path = "../benches/common/conversion_review.rs"]
mod conversion_review;

use celhook::config::{self, ConfigSource};
use serde_json::{json, Value};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Heap figures of one measured run: the most bytes (and blocks) live at
/// once since the profiler started, and all allocations made.
struct Run {
    max_bytes: usize,
    max_blocks: usize,
    total_blocks: u64,
    total_bytes: u64,
}

fn measure<T>(profile: Option<&str>, f: impl FnOnce() -> T) -> (Run, T) {
    let builder = dhat::Profiler::builder();
    let builder = match profile {
        Some(file) => builder.file_name(file),
        None => builder.testing(),
    };
    let profiler = builder.build();
    let out = f();
    let stats = dhat::HeapStats::get();
    drop(profiler);
    (
        Run {
            max_bytes: stats.max_bytes,
            max_blocks: stats.max_blocks,
            total_blocks: stats.total_blocks,
            total_bytes: stats.total_bytes,
        },
        out,
    )
}

fn report(body: usize, run: &Run) -> Value {
    let peak = body + run.max_bytes;
    json!({
        "peak_bytes": peak,
        "ratio": peak as f64 / body as f64,
        "request_peak_bytes": run.max_bytes,
        "request_peak_blocks": run.max_blocks,
        "allocations": run.total_blocks,
        "allocated_bytes": run.total_bytes,
    })
}

/// Measures one request on `body` (checked with `check`) and the
/// serde_json round trip of the same bytes.
fn measure_review(
    catalog: &celhook::config::Catalog,
    mut body: Vec<u8>,
    check: fn(&[Vec<u8>], usize),
    profile: Option<&str>,
) -> Value {
    // The server holds exactly the body's bytes.
    body.shrink_to_fit();
    // As the server sends them: the chunks of a streamed answer wait in a
    // channel of `AHEAD` until the connection takes them; here it is always
    // full (a caller reading slowly), the oldest leaving as one comes.
    let (convert, answer_bytes) = measure(profile, || {
        let mut queued = std::collections::VecDeque::new();
        let mut bytes = 0;
        conversion_review::convert_into(catalog, std::hint::black_box(&body), |chunk| {
            bytes += chunk.len();
            queued.push_back(chunk);
            if queued.len() > celhook::review::AHEAD {
                queued.pop_front();
            }
        });
        bytes
    });
    // The answer checked outside the measure.
    let answer = conversion_review::convert(catalog, &body);
    assert_eq!(answer.iter().map(Vec::len).sum::<usize>(), answer_bytes);
    check(&answer, conversion_review::OBJECTS);
    drop(answer);
    let (roundtrip, _) = measure(None, || {
        let v: Value = serde_json::from_slice(std::hint::black_box(&body)).expect("JSON");
        serde_json::to_vec(&v).expect("serializes")
    });
    json!({
        "objects": conversion_review::OBJECTS,
        "body_bytes": body.len(),
        "answer_bytes": answer_bytes,
        "convert": report(body.len(), &convert),
        "serde_json_roundtrip": report(body.len(), &roundtrip),
    })
}

fn main() {
    let profile = std::env::args().nth(1);
    let loaded = config::load(&ConfigSource::Embedded);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let n = conversion_review::OBJECTS;
    let pizza = measure_review(
        &loaded.catalog,
        conversion_review::body(n),
        conversion_review::check_answer,
        profile.as_deref(),
    );
    let crontab = measure_review(
        &loaded.catalog,
        conversion_review::crontab_body(n),
        conversion_review::check_crontab_answer,
        None,
    );
    println!("{:#}", json!({"pizza": pizza, "crontab": crontab}));
}
