//! celhook: a Kubernetes webhook that enforces CRD `x-kubernetes-validations`
//! (CEL) rules and converts custom resources between CRD versions.
//!
//! A request flows straight through the modules: `review` decodes it,
//! `admission` finds in the `config` catalog the compiled CRD version and
//! the `rules` documents of its kind (their schemas from the CRD or from
//! `kinds`, the embedded built-in ones), `validation` walks the object
//! along its `schema` and runs the `cel` programs, and `review` encodes the
//! answer. `server` is the HTTPS edge around that; `error` is the one place
//! where failures become HTTP answers.

/// The CEL engine (crate `celhook-cel`, under `crates/cel`).
pub use celhook_cel as cel;
pub mod admission;
pub mod certs;
pub mod cli;
pub mod config;
pub mod conversion;
pub mod error;
pub mod eval;
pub mod field_error;
#[doc(hidden)]
#[cfg(feature = "fuzzing")]
pub mod fuzz;
pub mod kinds;
pub mod kube_version;
pub mod metrics;
pub mod migration;
pub mod openapi;
pub mod policy;
pub mod review;
pub mod rules;
/// The schema model (crate `celhook-schema`, under `crates/schema`).
pub use celhook_schema as schema;
pub mod selector;
pub mod server;
pub mod telemetry;
pub mod testing;
pub mod validation;
pub mod webhook_config;
pub mod yaml;
