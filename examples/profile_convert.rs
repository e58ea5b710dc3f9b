//! Runs the `POST /convert` path (decode, convert each object, stream the
//! answer) on the Pizza review of benches/common/conversion_review.rs in a
//! loop, for profilers: instruction counts under callgrind are stable on a
//! shared CPU where timings are not.
//!
//! ```text
//! cargo build --release --example profile_convert
//! valgrind --tool=callgrind --callgrind-out-file=convert.cg \
//!     $CARGO_TARGET_DIR/release/examples/profile_convert 500 1
//! callgrind_annotate --inclusive=yes convert.cg | head -60
//! ```
//!
//! Arguments: objects in the review (default 10,000) and iterations (1).
//! With `roundtrip` as a third argument it runs serde_json's parse and
//! serialization of the same body instead, the floor target 4 compares to.

#[path = "../benches/common/conversion_review.rs"]
mod conversion_review;

use celhook::config::{self, ConfigSource};

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut number = |what: &str, default: usize| -> Result<usize, String> {
        args.next()
            .map(|s| s.parse().map_err(|e| format!("{what} {s:?}: {e}")))
            .transpose()
            .map(|n| n.unwrap_or(default))
    };
    let objects = number("objects", conversion_review::OBJECTS)?;
    let iterations = number("iterations", 1)?;
    let roundtrip = std::env::args().nth(3).as_deref() == Some("roundtrip");
    let loaded = config::load(&ConfigSource::Embedded);
    if loaded.report.has_errors() {
        return Err(format!("{:?}", loaded.report));
    }
    let body = conversion_review::body(objects);
    if !roundtrip {
        // Once, outside the loop: a profile of a path that fails early would
        // show nothing of the conversion.
        conversion_review::check_answer(
            &conversion_review::convert(&loaded.catalog, &body),
            objects,
        );
    }
    let mut answer_bytes = 0;
    for _ in 0..iterations {
        answer_bytes = if roundtrip {
            let v: serde_json::Value =
                serde_json::from_slice(std::hint::black_box(&body)).map_err(|e| e.to_string())?;
            serde_json::to_vec(&v).map_err(|e| e.to_string())?.len()
        } else {
            let chunks = conversion_review::convert(&loaded.catalog, std::hint::black_box(&body));
            chunks.iter().map(Vec::len).sum()
        };
    }
    println!(
        "{iterations} x {objects} objects: {} bytes in, {answer_bytes} bytes out",
        body.len()
    );
    Ok(())
}
