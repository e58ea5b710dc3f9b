//! The peer workload's reviews and the paths timed on them, shared by
//! benches/hot_path.rs (criterion, each path on its own) and
//! benches/paired.rs (the paths a bar compares, timed in turns). Both
//! include this file by path.

use std::path::{Path, PathBuf};

use arc_swap::ArcSwap;
use celhook::config::{self, Catalog, ConfigSource};
use celhook::review::encode_admission;
use serde_json::Value;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf")
}

pub fn read_json(name: &str) -> Value {
    let path = fixtures().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

pub fn catalog_dir(dir: &str) -> Catalog {
    let loaded = config::load(&ConfigSource::Dir(fixtures().join(dir)));
    assert!(!loaded.report.has_errors(), "{dir}: {:?}", loaded.report);
    loaded.catalog
}

/// The compact body the API server would send (Go's encoder writes no
/// spaces, and a review's fields in its struct's order).
pub fn body_of(review: &Value) -> Vec<u8> {
    celhook_loadtest::workload::in_api_server_order(review)
        .expect("JSON")
        .into_bytes()
}

/// What `routes::validate` does between the body and the answer bytes,
/// including the lock-free catalog load; tracing is off as in production
/// at the default level.
pub fn hot_path(catalog: &ArcSwap<Catalog>, body: &[u8]) -> Vec<u8> {
    let catalog = catalog.load();
    let policy = celhook::admission::Policy::default();
    let (version, req) =
        celhook::admission::decode(&catalog, &policy, body).expect("the bench body decodes");
    let res = celhook::admission::answer(&catalog, &req);
    encode_admission(version, &res).expect("encodes")
}

/// The floor of target 4: parse into a `Value`, serialize it again.
pub fn serde_json_roundtrip(body: &[u8]) -> Vec<u8> {
    let v: Value = serde_json::from_slice(body).expect("JSON");
    serde_json::to_vec(&v).expect("serializes")
}
