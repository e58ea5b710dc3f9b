//! celhook-loadtest: a load generator for Kubernetes admission and
//! conversion webhooks (celhook or any other), as the API server calls
//! them: HTTPS, HTTP/2 by ALPN, keep-alive, one review per request.
//!
//! - `args`: the command line.
//! - `workload`: the review bodies, built once as templates.
//! - `check`: the check of every answer.
//! - `run`: clients, closed and open loops, warm-up, progress.
//! - `report`: HDR histograms, errors by kind, text and JSON.

pub mod args;
pub mod check;
pub mod report;
pub mod run;
pub mod workload;
