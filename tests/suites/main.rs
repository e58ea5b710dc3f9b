//! Data-driven suites: the seed documents' rules, the fuzz corpus replayed,
//! the performance fixtures' expected answers, conversion properties over
//! generated objects, and the differential comparison with the probe
//! outputs. (The conformance suite is a test binary of its own: it prints a
//! table and a figure.)

#[path = "../common/mod.rs"]
mod common;

mod conversion_properties;
mod differential;
mod fuzz_corpus;
mod perf_fixtures;
mod seed_rules;
