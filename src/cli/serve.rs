//! `celhook serve`'s flags, and the [`ServeConfig`] they make: the longest
//! list of flags, kept apart from the other commands' (`cli.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::Command;
use crate::config::ConfigSource;
use crate::server::{ClientAuth, ServeConfig, TlsSource};
use crate::telemetry::LogFormat;

fn duration(text: &str) -> Result<Duration, String> {
    crate::server::limits::parse_go_duration(text)
        .ok_or_else(|| format!("{text:?} is not a duration such as 500ms, 5s or 1m30s"))
}

/// A count or size of at least `min`.
fn at_least(min: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(min..)
}

// Each flag is declared in full, alike as many look: clap's derive has no
// shared prefix for the `CELHOOK_*` variables, and each declaration is
// what `--help` shows for its flag.
#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    version_arg: super::VersionArg,

    /// CRD manifests (YAML or JSON): a directory, read with its subdirectories, or one file; without it, the example CRDs built into the binary.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,

    /// PEM certificate chain; without --tls-cert/--tls-key a self-signed certificate is generated.
    #[arg(
        long,
        env = "CELHOOK_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(
        long,
        env = "CELHOOK_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,

    /// Address of the HTTPS listener.
    #[arg(long, env = "CELHOOK_LISTEN", value_name = "ADDR", default_value = crate::server::DEFAULT_LISTEN)]
    listen: SocketAddr,

    /// Larger request bodies are refused with 413.
    #[arg(
        long,
        env = "CELHOOK_MAX_REQUEST_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_REQUEST_BYTES,
        value_parser = at_least(1),
    )]
    max_request_bytes: usize,

    /// Larger POST /convert bodies are refused with 413.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONVERT_REQUEST_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_CONVERT_REQUEST_BYTES,
        value_parser = at_least(1),
    )]
    max_convert_request_bytes: usize,

    /// Log line format.
    #[arg(long, env = "CELHOOK_LOG_FORMAT", value_enum, default_value_t = CliLogFormat::Text)]
    log_format: CliLogFormat,

    /// Also serve /metrics, /healthz and /readyz over plain HTTP on this address.
    #[arg(long, env = "CELHOOK_METRICS_LISTEN", value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,

    /// Require client certificates signed by the CA(s) in this PEM file; others fail the TLS handshake.
    #[arg(long, env = "CELHOOK_CLIENT_CA", value_name = "FILE")]
    client_ca: Option<PathBuf>,

    /// With --client-ca: only client certificates whose subject CN or a DNS/URI/e-mail SAN is one of these (comma-separated).
    #[arg(
        long,
        env = "CELHOOK_ALLOWED_CLIENT_NAMES",
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "client_ca"
    )]
    allowed_client_names: Vec<String>,

    /// How often the certificate files and the config directory are checked for changes.
    #[arg(long, env = "CELHOOK_RELOAD_INTERVAL", value_name = "DURATION", default_value = "1s", value_parser = duration)]
    reload_interval: Duration,

    /// On SIGTERM, keep serving this long with /readyz failing before no longer accepting connections.
    #[arg(long, env = "CELHOOK_SHUTDOWN_DELAY", value_name = "DURATION", default_value = "5s", value_parser = duration)]
    shutdown_delay: Duration,

    /// After the delay, wait at most this long for requests in flight.
    #[arg(long, env = "CELHOOK_SHUTDOWN_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = duration)]
    shutdown_timeout: Duration,

    /// Review requests served at once; more wait for a slot until their deadline, then get 503.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONCURRENT_REQUESTS",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_CONCURRENT_REQUESTS,
        value_parser = at_least(1),
    )]
    max_concurrent_requests: usize,

    /// Bytes of POST /validate bodies held at once, counted as they arrive (one connection: at most half); a body that does not fit gets 503 with Retry-After.
    #[arg(
        long,
        env = "CELHOOK_MAX_IN_FLIGHT_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_IN_FLIGHT_BYTES,
        value_parser = at_least(1024),
    )]
    max_in_flight_bytes: usize,

    /// Bytes of POST /convert bodies and answers held at once (one connection: at most half).
    #[arg(
        long,
        env = "CELHOOK_MAX_CONVERT_IN_FLIGHT_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_CONVERT_IN_FLIGHT_BYTES,
        value_parser = at_least(1024),
    )]
    max_convert_in_flight_bytes: usize,

    /// TLS handshakes computed at once (after their ClientHello); more wait, within --header-timeout.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONNECTION_RATE",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_CONNECTION_RATE,
        value_parser = at_least(1),
    )]
    max_connection_rate: usize,

    /// Connections open at once; at the cap the longest-idle one makes room, with none idle a new one is refused.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONNECTIONS",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_CONNECTIONS,
        value_parser = at_least(1),
    )]
    max_connections: usize,

    /// TLS handshakes in progress at once from one source address; more wait for a slot until their ClientHello deadline.
    #[arg(
        long,
        env = "CELHOOK_MAX_HANDSHAKES_PER_SOURCE",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_HANDSHAKES_PER_SOURCE,
        value_parser = at_least(1),
    )]
    max_handshakes_per_source: usize,

    /// HTTP/2 streams at once per connection (advertised in SETTINGS).
    #[arg(
        long,
        env = "CELHOOK_HTTP2_MAX_CONCURRENT_STREAMS",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS,
        value_parser = clap::value_parser!(u32).range(1..),
    )]
    http2_max_concurrent_streams: u32,

    /// Time for a new connection's first byte and whole TLS ClientHello.
    #[arg(long, env = "CELHOOK_CLIENT_HELLO_TIMEOUT", value_name = "DURATION", default_value = "1s", value_parser = duration)]
    client_hello_timeout: Duration,

    /// The longest pause allowed within a request body (then 408 and the connection closes).
    #[arg(long, env = "CELHOOK_BODY_IDLE_TIMEOUT", value_name = "DURATION", default_value = "2s", value_parser = duration)]
    body_idle_timeout: Duration,

    /// An answer that cannot be written for this long (a client that does not read) closes its connection.
    #[arg(long, env = "CELHOOK_WRITE_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = duration)]
    write_timeout: Duration,

    /// Longest time a review may take; the deadline when the caller sends no ?timeout=.
    #[arg(long, env = "CELHOOK_REQUEST_TIMEOUT", value_name = "DURATION", default_value = "25s", value_parser = duration)]
    request_timeout: Duration,

    /// Worker threads serving requests; default one per CPU the process may use (its cgroup quota included).
    #[arg(
        long,
        env = "CELHOOK_WORKERS",
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024),
    )]
    workers: Option<usize>,

    /// When admission reviews ready at the same moment are answered back to back on warm caches: auto (while the I/O threads stay saturated: more reviews a second, and each one's wait for its round shows in the request histogram), always or never.
    #[arg(
        long,
        env = "CELHOOK_REVIEW_ROUNDS",
        value_name = "WHEN",
        default_value = "auto"
    )]
    review_rounds: crate::server::ReviewRounds,

    /// How long a review first runs on the thread that read it before it is abandoned and answered on the evaluation pool instead (its work then done twice, counted in celhook_admission_inline_retries_total); 0: every review on the pool. Raise it on a throttled CPU where retries are frequent, knowing that a costly review then holds its connection's thread, and the other connections on it, that long (at most the request's deadline); a pattern compiled at run time always goes to the pool.
    #[arg(long, env = "CELHOOK_INLINE_BUDGET", value_name = "DURATION", default_value = "1ms", value_parser = duration)]
    inline_budget: Duration,

    /// How long idle connections are kept open.
    #[arg(long, env = "CELHOOK_KEEP_ALIVE", value_name = "DURATION", default_value = "120s", value_parser = duration)]
    keep_alive: Duration,

    /// Time a client has for the TLS handshake and for a request head (HTTP/1.1) or header block (HTTP/2).
    #[arg(long, env = "CELHOOK_HEADER_TIMEOUT", value_name = "DURATION", default_value = "5s", value_parser = duration)]
    header_timeout: Duration,

    /// What to answer for an object of a kind the config knows (a CRD, a rules document's target) in a version it has no schema of: deny, warn (allowed, with a warning) or allow. Each is logged and counted.
    #[arg(
        long,
        env = "CELHOOK_UNKNOWN_VERSIONS",
        value_name = "ACTION",
        default_value = "warn"
    )]
    unknown_versions: crate::admission::UnknownVersions,

    /// Check each custom resource against its CRD version's whole schema (types, formats, enum, pattern, bounds, lengths, counts, required, list-type uniqueness) before its rules, with the API server's texts. Off by default: the API server has checked the schema before it calls a webhook; on for a webhook enforcing a copy of a CRD, or as an extra layer.
    #[arg(long, env = "CELHOOK_CHECK_SCHEMA")]
    check_schema: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CliLogFormat {
    Text,
    Json,
}

impl ServeArgs {
    /// The command these flags ask for.
    pub(super) fn into_command(self) -> Command {
        let args = self;
        let tls = match (args.tls_cert, args.tls_key) {
            (Some(cert), Some(key)) => TlsSource::Files { cert, key },
            // clap's `requires` rules out a lone flag.
            _ => TlsSource::SelfSigned,
        };
        let config = ServeConfig {
            config_source: args
                .config
                .map_or(ConfigSource::Embedded, ConfigSource::Dir),
            kubernetes: args.version_arg.kubernetes_version,
            listen: args.listen,
            tls,
            max_request_bytes: args.max_request_bytes,
            metrics_listen: args.metrics_listen,
            client_auth: args.client_ca.map(|ca| ClientAuth {
                ca,
                allowed_names: args.allowed_client_names,
            }),
            reload_interval: args.reload_interval,
            shutdown_delay: args.shutdown_delay,
            shutdown_timeout: args.shutdown_timeout,
            max_concurrent_requests: args.max_concurrent_requests,
            max_in_flight_bytes: args.max_in_flight_bytes,
            max_convert_in_flight_bytes: args.max_convert_in_flight_bytes,
            max_connection_rate: args.max_connection_rate,
            max_connections: args.max_connections,
            max_handshakes_per_source: args.max_handshakes_per_source,
            http2_max_concurrent_streams: args.http2_max_concurrent_streams,
            client_hello_timeout: args.client_hello_timeout,
            body_idle_timeout: args.body_idle_timeout,
            write_timeout: args.write_timeout,
            request_timeout: args.request_timeout,
            inline_budget: args.inline_budget,
            keep_alive: args.keep_alive,
            header_timeout: args.header_timeout,
            max_convert_request_bytes: args.max_convert_request_bytes,
            workers: args.workers,
            review_rounds: args.review_rounds,
            policy: crate::admission::Policy {
                unknown_versions: args.unknown_versions,
                check_schema: args.check_schema,
                ..Default::default()
            },
        };
        let log_format = match args.log_format {
            CliLogFormat::Text => LogFormat::Text,
            CliLogFormat::Json => LogFormat::Json,
        };
        Command::Serve { config, log_format }
    }
}
