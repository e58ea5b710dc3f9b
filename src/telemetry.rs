//! Logging: a tracing subscriber writing text or JSON lines to stderr, with
//! the level taken from `RUST_LOG` (default `info`).
//!
//! stderr keeps stdout free for `celhook check`'s report.

use std::io::IsTerminal;

use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Installs the global subscriber. Calling it twice is harmless: the second
/// call keeps the first subscriber (tests may race to initialise logging).
pub fn init(format: LogFormat) {
    // An unparsable RUST_LOG falls back to the default rather than
    // refusing to start: logging is not worth an outage.
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env_lossy();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only help a person at a terminal, never a log collector.
        .with_ansi(std::io::stderr().is_terminal());
    let _already_set = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}
