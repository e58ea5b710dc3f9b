//! Runs the `POST /convert` path (decode, convert each object, stream the
//! answer) on the reviews of benches/common/conversion_review.rs in a loop,
//! for profilers: instruction counts under callgrind are stable on a shared
//! CPU where timings are not.
//!
//! ```text
//! cargo build --release --example profile_convert
//! valgrind --tool=callgrind --toggle-collect='*conversion_review::convert*' \
//!     --callgrind-out-file=convert.cg \
//!     $CARGO_TARGET_DIR/release/examples/profile_convert pizza 500 1
//! callgrind_annotate --inclusive=yes convert.cg | head -60
//! ```
//!
//! Arguments: the review (`pizza`, `crontab`, or either with `-roundtrip`
//! for serde_json's parse and serialization of the same body, the floor
//! target 4 compares to), objects in it (default 10,000) and iterations (1).

#[path = "../benches/common/conversion_review.rs"]
mod conversion_review;

use celhook::config::{self, ConfigSource};

/// The allocator the server runs with, so that measurements match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Not inlined, so that callgrind can collect it alone
/// (`--toggle-collect='*serde_json_roundtrip*'`).
#[inline(never)]
fn serde_json_roundtrip(body: &[u8]) -> Result<Vec<u8>, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    serde_json::to_vec(&v).map_err(|e| e.to_string())
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "pizza".into());
    let mut number = |what: &str, default: usize| -> Result<usize, String> {
        args.next()
            .map(|s| s.parse().map_err(|e| format!("{what} {s:?}: {e}")))
            .transpose()
            .map(|n| n.unwrap_or(default))
    };
    let objects = number("objects", conversion_review::OBJECTS)?;
    let iterations = number("iterations", 1)?;
    let (review, roundtrip) = match workload.strip_suffix("-roundtrip") {
        Some(review) => (review, true),
        None => (workload.as_str(), false),
    };
    let loaded = config::load(&ConfigSource::Embedded);
    if loaded.report.has_errors() {
        return Err(format!("{:?}", loaded.report));
    }
    // Each answer is checked once, outside the loop: a profile of a path
    // that fails early would show nothing of the conversion.
    let body = match review {
        "pizza" => {
            let body = conversion_review::body(objects);
            if !roundtrip {
                let answer = conversion_review::convert(&loaded.catalog, &body);
                conversion_review::check_answer(&answer, objects);
            }
            body
        }
        "crontab" => {
            let body = conversion_review::crontab_body(objects);
            if !roundtrip {
                let answer = conversion_review::convert(&loaded.catalog, &body);
                conversion_review::check_crontab_answer(&answer, objects);
            }
            body
        }
        other => return Err(format!("unknown review {other:?}: pizza or crontab")),
    };
    let mut answer_bytes = 0;
    for _ in 0..iterations {
        answer_bytes = if roundtrip {
            serde_json_roundtrip(std::hint::black_box(&body))?.len()
        } else {
            let chunks = conversion_review::convert(&loaded.catalog, std::hint::black_box(&body));
            chunks.iter().map(Vec::len).sum()
        };
    }
    println!(
        "{iterations} x {objects} objects ({workload}): {} bytes in, {answer_bytes} bytes out",
        body.len()
    );
    Ok(())
}
