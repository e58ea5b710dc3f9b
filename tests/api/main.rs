//! The HTTPS service end to end: the real server on a real TLS socket on
//! 127.0.0.1, called by real HTTPS clients over HTTP/1.1 and HTTP/2 (and by
//! hand-written bytes where a client must misbehave). One test binary, one
//! module per concern, sharing `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod abuse;
mod convert;
mod convert_bodies;
mod convert_one_pass;
mod convert_subresources;
mod handover;
mod http;
mod logs;
mod migration;
mod operation;
mod reload_and_stop;
mod review;
mod robustness;
mod rollout;
mod rules;
mod vap;
