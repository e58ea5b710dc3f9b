//! The load generator against real servers on 127.0.0.1: celhook itself
//! (the peer workload of tests/fixtures/perf/), and a small conversion
//! endpoint that demands a client certificate and can answer wrongly on
//! purpose (what the load generator must catch) and counts the connections
//! and requests in flight it sees. Counts and durations are small: these
//! tests check behaviour, not speed.
//!
//! One binary, a module per server: `admission` (celhook) and `conversion`.

use std::path::{Path, PathBuf};

mod admission;
mod conversion;

/// A directory or file of tests/fixtures/perf.
pub(crate) fn perf_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/perf")
        .join(name)
}

/// The process-wide rustls provider, which the clients and servers here need.
pub(crate) fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// [`perf_fixture`] as a command-line argument.
pub(crate) fn path(name: &str) -> String {
    perf_fixture(name).display().to_string()
}
