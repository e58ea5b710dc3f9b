//! celhook-loadtest: a load generator for Kubernetes admission and
//! conversion webhooks (celhook or any other), as the API server calls
//! them: HTTPS, HTTP/1.1 (the only protocol it offers webhooks by ALPN) over
//! a pool of kept-alive connections, one request at a time on each, one
//! review per request. `--http 2` measures HTTP/2 instead.
//!
//! - `args`: the command line.
//! - `workload`: the review bodies, built once as templates.
//! - `check`: the check of every answer.
//! - `client`: the HTTPS clients, and the error kinds of a failed exchange.
//! - `run`: closed and open loops, warm-up, progress.
//! - `report`: HDR histograms, errors by kind, text and JSON.
//! - `timeline`: completions per time bucket, bounded in memory.
//! - `html`: the report as an HTML page with SVG charts.

pub mod args;
pub mod check;
pub mod client;
pub mod html;
pub mod report;
pub mod run;
pub mod timeline;
pub mod workload;
