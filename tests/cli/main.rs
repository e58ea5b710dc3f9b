//! The `celhook` binary's offline commands (`check`, `convert`, `eval`) and
//! its start-up and exit codes, run as a user runs them.

#[path = "../common/mod.rs"]
mod common;

mod check;
mod convert;
mod eval;
