//! The `celhook` binary's offline commands (`check`, `convert`, `eval`, `test`) and
//! its start-up and exit codes, run as a user runs them.

#[path = "../common/mod.rs"]
mod common;

mod check;
mod convert;
mod convert_documents;
mod eval;
mod migration;
mod round_trip;
mod test_command;
mod webhook_config;

/// Runs the binary with `args` (no `RUST_LOG`): exit code, stdout, stderr.
pub fn celhook_output(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_celhook"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("celhook runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
