//! Runs only the rules of a fixture directory (the object parsed once,
//! `Validator::validate` in a loop), for profilers: the engine's share of
//! the hot path without decoding and encoding.
//!
//! ```text
//! cargo build --release --example profile_rules
//! valgrind --tool=callgrind $CARGO_TARGET_DIR/release/examples/profile_rules core create 2000
//! ```
//!
//! Arguments: the fixture directory under tests/fixtures/perf (or a path),
//! `create` or `update` (the review file `review-<op>.json`, whose
//! `oldObject` is passed for an UPDATE), and the iteration count.

use std::path::Path;

use celhook::config::{self, ConfigSource};

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
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf");
    let loaded = config::load(&ConfigSource::Dir(fixtures.join(&dir)));
    if loaded.report.has_errors() {
        return Err(format!("{dir}: {:?}", loaded.report));
    }
    let review_path = fixtures.join(format!("review-{op}.json"));
    let text =
        std::fs::read(&review_path).map_err(|e| format!("{}: {e}", review_path.display()))?;
    let review = celhook_json::from_slice(&text).map_err(|e| e.to_string())?;
    let request = &review["request"];
    let kind = &request["kind"];
    let field = |k: &str| kind[k].as_str().unwrap_or("");
    let crd = loaded
        .catalog
        .lookup(field("group"), field("version"), field("kind"))
        .ok_or("the review's kind is not in the config")?;
    let old = Some(&request["oldObject"]).filter(|o| !o.is_null());
    let mut errors = 0;
    for _ in 0..n {
        let findings = crd
            .validator
            .validate(std::hint::black_box(&request["object"]), old);
        errors += findings.errors.len();
    }
    println!("{n} validations, {errors} errors");
    Ok(())
}
