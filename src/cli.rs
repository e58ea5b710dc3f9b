//! The command line: `celhook serve`, `check`, `eval`, `convert` and `certs`. Every flag can also
//! be set by an environment variable `CELHOOK_<FLAG>`.
//!
//! clap stays in this file: the rest of the crate sees a plain
//! [`ServeConfig`] or [`CheckArgs`].

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::ConfigSource;
use crate::server::{ClientAuth, ServeConfig, TlsSource};
use crate::telemetry::LogFormat;

/// What the user asked for.
// Built once at start-up: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Command {
    /// Run the webhook.
    Serve {
        /// Server settings.
        config: ServeConfig,
        /// Log line format.
        log_format: LogFormat,
    },
    /// Load and compile a config directory, print every problem.
    Check(CheckArgs),
    /// Convert manifest files offline.
    Convert(ConvertArgs),
    /// Evaluate offline: an object against a CRD, or one expression.
    Eval(EvalArgs),
    /// Write a development CA and serving certificate, print the caBundle.
    Certs(crate::certs::CertsArgs),
    /// Print the webhook configuration (and conversion CRDs) for a config.
    WebhookConfig {
        /// The config whose CRDs are routed to celhook.
        source: ConfigSource,
        /// Service, failure policy and timeout.
        options: crate::webhook_config::WebhookOptions,
        /// A PEM file whose text becomes the caBundle.
        ca_bundle: Option<PathBuf>,
    },
}

/// `celhook eval` settings.
#[derive(Debug, Clone)]
pub enum EvalArgs {
    /// What the webhook answers for each object of a file (UPDATE when
    /// `old` is given).
    Object {
        crd: PathBuf,
        version: Option<String>,
        object: PathBuf,
        old: Option<PathBuf>,
        output: OutputFormat,
    },
    /// The value of one expression, `self` bound to a JSON or YAML value
    /// and, when `old` is given, `oldSelf` to another.
    Expr {
        expr: String,
        this: Option<PathBuf>,
        old: Option<PathBuf>,
    },
}

/// `celhook convert` settings.
#[derive(Debug, Clone)]
pub struct ConvertArgs {
    /// Where the CRDs and conversion documents come from.
    pub source: ConfigSource,
    /// The desired `group/version`.
    pub to: String,
    /// Manifest files (YAML or JSON).
    pub files: Vec<PathBuf>,
    /// Objects of kinds no CRD of the config serves: passed through or refused.
    pub other_kinds: crate::conversion::files::OtherKinds,
    /// Print the documents that converted even when others failed.
    pub partial: bool,
}

/// `celhook check` settings.
#[derive(Debug, Clone)]
pub struct CheckArgs {
    /// The file or directory to check.
    pub source: ConfigSource,
    /// How to print the report.
    pub output: OutputFormat,
    /// Skipped files and documents fail the check too.
    pub strict: bool,
}

/// How `check` prints its report or `eval` its answers: for people or
/// for tools (each command's own `--output` help says what it prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Lines of text.
    Text,
    /// JSON.
    Json,
}

/// `check --output`: the help of each value describes the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckOutput {
    /// One line per problem and per skipped file or document (`warning: ...`), then a summary line.
    Text,
    /// The report as JSON: `{"crds":[{"name","file","versions","errors"}],"errors":[...],"warnings":[...]}`, each problem with its file, crd, version, path, rule and reason.
    Json,
}

/// `eval --output`: the help of each value describes the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EvalOutput {
    /// `allowed`, or `denied:` with the status message and one line per cause; with several documents, each answer starts with `document <i> (<name>):`.
    Text,
    /// The AdmissionReview the webhook would send (`.response.allowed`, `.response.status`); with several documents, a JSON array of them in document order.
    Json,
}

impl From<CheckOutput> for OutputFormat {
    fn from(output: CheckOutput) -> Self {
        match output {
            CheckOutput::Text => OutputFormat::Text,
            CheckOutput::Json => OutputFormat::Json,
        }
    }
}

impl From<EvalOutput> for OutputFormat {
    fn from(output: EvalOutput) -> Self {
        match output {
            EvalOutput::Text => OutputFormat::Text,
            EvalOutput::Json => OutputFormat::Json,
        }
    }
}

/// Parses `std::env::args()` and the `CELHOOK_*` environment. On error, the
/// clap error tells the message to print and whether it is a usage error
/// (`use_stderr()`) or `--help`/`--version`.
pub fn parse() -> Result<Command, clap::Error> {
    Cli::try_parse().map(Cli::into_command)
}

/// Parses the given arguments (the first is the program name); for tests.
pub fn parse_from<I, T>(args: I) -> Result<Command, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map(Cli::into_command)
}

#[derive(Debug, Parser)]
#[command(
    name = "celhook",
    version,
    about = "Kubernetes webhook enforcing CRD x-kubernetes-validations (CEL) rules and converting custom resources between CRD versions"
)]
struct Cli {
    #[command(subcommand)]
    command: CliCommand,
}

#[allow(clippy::large_enum_variant)] // parsed once
#[derive(Debug, Subcommand)]
enum CliCommand {
    /// Serve POST /validate, POST /convert, /healthz and /readyz over HTTPS.
    Serve(ServeArgs),
    /// Load and compile the CRDs and conversion documents of a directory (running their round-trip examples); print every problem; exit 1 on any.
    Check(CheckCliArgs),
    /// Convert custom resources in manifest files to another version of their CRD; print them.
    Convert(ConvertCliArgs),
    /// Evaluate offline what the webhook answers for an object (exit 1 when
    /// denied), or the value of one expression in the Kubernetes CEL environment.
    Eval(EvalCliArgs),
    /// Write a development CA and a serving certificate for celhook.<namespace>.svc; print the caBundle.
    Certs(CertsCliArgs),
    /// Print the ValidatingWebhookConfiguration that sends the config's CRDs to celhook
    /// (`/status` included), and each CRD with a conversion document with its
    /// conversion webhook set; YAML for `kubectl apply` or a kustomization.
    WebhookConfig(WebhookConfigCliArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["crd", "expr"])))]
struct EvalCliArgs {
    /// CRD manifest whose rules apply (with --object).
    #[arg(long, value_name = "FILE", requires = "object")]
    crd: Option<PathBuf>,
    /// Version of the CRD to validate as (default: the object's apiVersion).
    #[arg(long, value_name = "VERSION", requires = "crd")]
    version: Option<String>,
    /// The object(s): YAML (one or several documents) or JSON, or a `v1` `List`; each is evaluated and answered.
    #[arg(long, value_name = "FILE", requires = "crd")]
    object: Option<PathBuf>,
    /// With --object: the old object(s), evaluated as an UPDATE with transition rules (as many documents as --object, paired in order). With --expr: the value of `oldSelf`.
    #[arg(long, value_name = "FILE")]
    old: Option<PathBuf>,
    /// One CEL expression to evaluate; it may use `oldSelf` when --old is given.
    #[arg(long, value_name = "CEL", conflicts_with_all = ["crd", "object", "version"])]
    expr: Option<String>,
    /// Value of `self` for --expr (YAML or JSON file).
    #[arg(long = "self", value_name = "FILE", requires = "expr")]
    this: Option<PathBuf>,
    /// How to print the webhook's answer for each object of --object (--expr prints its value as JSON).
    #[arg(long, value_enum, default_value_t = EvalOutput::Text)]
    output: EvalOutput,
}

#[derive(Debug, Args)]
struct ConvertCliArgs {
    /// CRDs and conversion documents: a directory (with its subdirectories) or one file; without it, the examples built into the binary.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,

    /// The version to convert to, as group/version (e.g. example.com/v1).
    #[arg(long, value_name = "GROUP/VERSION")]
    to: String,

    /// Manifest files, YAML or JSON (output in the same format); `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,

    /// Fail on objects of kinds no CRD of the config serves (a ConfigMap, a Deployment) instead of printing them unchanged in their place.
    #[arg(long)]
    refuse_other_kinds: bool,

    /// When some documents fail, still print the ones that converted (exit 1 all the same); by default nothing
    /// is printed then, so that `celhook convert ... | kubectl apply -f -` never applies a partial set.
    #[arg(long)]
    partial: bool,
}

#[derive(Debug, Args)]
struct CertsCliArgs {
    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into.
    #[arg(
        long,
        env = "CELHOOK_CERTS_OUT",
        value_name = "DIR",
        default_value = "certs/out"
    )]
    out_dir: PathBuf,

    /// Namespace of the celhook Service.
    #[arg(long, env = "CELHOOK_NAMESPACE", default_value = "celhook")]
    namespace: String,

    /// Name of the celhook Service.
    #[arg(long, env = "CELHOOK_SERVICE", default_value = "celhook")]
    service: String,

    /// Validity of the certificates, in days.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    days: u32,

    /// More names for the serving certificate, DNS names or IP addresses (comma-separated).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    extra_names: Vec<String>,

    /// Leave out `localhost` and `127.0.0.1`, which the serving certificate
    /// otherwise carries for a local run or a port-forward.
    #[arg(long)]
    no_local_names: bool,
}

fn duration(text: &str) -> Result<std::time::Duration, String> {
    crate::server::limits::parse_go_duration(text)
        .ok_or_else(|| format!("{text:?} is not a duration such as 500ms, 5s or 1m30s"))
}

#[derive(Debug, Args)]
struct ServeArgs {
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
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    max_request_bytes: usize,

    /// Larger POST /convert bodies are refused with 413.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONVERT_REQUEST_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_CONVERT_REQUEST_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
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
    reload_interval: std::time::Duration,

    /// On SIGTERM, keep serving this long with /readyz failing before no longer accepting connections.
    #[arg(long, env = "CELHOOK_SHUTDOWN_DELAY", value_name = "DURATION", default_value = "5s", value_parser = duration)]
    shutdown_delay: std::time::Duration,

    /// After the delay, wait at most this long for requests in flight.
    #[arg(long, env = "CELHOOK_SHUTDOWN_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = duration)]
    shutdown_timeout: std::time::Duration,

    /// Review requests served at once; more wait for a slot until their deadline, then get 503.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONCURRENT_REQUESTS",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_CONCURRENT_REQUESTS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    max_concurrent_requests: usize,

    /// Bytes of POST /validate bodies held at once, counted as they arrive (one connection: at most half); a body that does not fit gets 503 with Retry-After.
    #[arg(
        long,
        env = "CELHOOK_MAX_IN_FLIGHT_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_IN_FLIGHT_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..),
    )]
    max_in_flight_bytes: usize,

    /// Bytes of POST /convert bodies and answers held at once (one connection: at most half).
    #[arg(
        long,
        env = "CELHOOK_MAX_CONVERT_IN_FLIGHT_BYTES",
        value_name = "BYTES",
        default_value_t = crate::server::DEFAULT_MAX_CONVERT_IN_FLIGHT_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..),
    )]
    max_convert_in_flight_bytes: usize,

    /// TLS handshakes computed at once (after their ClientHello); more wait, within --header-timeout.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONNECTION_RATE",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_CONNECTION_RATE,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    max_connection_rate: usize,

    /// Connections open at once; at the cap the longest-idle one makes room, with none idle a new one is refused.
    #[arg(
        long,
        env = "CELHOOK_MAX_CONNECTIONS",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_CONNECTIONS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    max_connections: usize,

    /// TLS handshakes in progress at once from one source address; more are closed at accept.
    #[arg(
        long,
        env = "CELHOOK_MAX_HANDSHAKES_PER_SOURCE",
        value_name = "N",
        default_value_t = crate::server::DEFAULT_MAX_HANDSHAKES_PER_SOURCE,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
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
    client_hello_timeout: std::time::Duration,

    /// The longest pause allowed within a request body (then 408 and the connection closes).
    #[arg(long, env = "CELHOOK_BODY_IDLE_TIMEOUT", value_name = "DURATION", default_value = "2s", value_parser = duration)]
    body_idle_timeout: std::time::Duration,

    /// An answer that cannot be written for this long (a client that does not read) closes its connection.
    #[arg(long, env = "CELHOOK_WRITE_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = duration)]
    write_timeout: std::time::Duration,

    /// Longest time a review may take; the deadline when the caller sends no ?timeout=.
    #[arg(long, env = "CELHOOK_REQUEST_TIMEOUT", value_name = "DURATION", default_value = "25s", value_parser = duration)]
    request_timeout: std::time::Duration,

    /// Worker threads serving requests; default one per CPU the process may use (its cgroup quota included).
    #[arg(
        long,
        env = "CELHOOK_WORKERS",
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024),
    )]
    workers: Option<usize>,

    /// How long idle connections are kept open.
    #[arg(long, env = "CELHOOK_KEEP_ALIVE", value_name = "DURATION", default_value = "120s", value_parser = duration)]
    keep_alive: std::time::Duration,

    /// Time a client has for the TLS handshake and for a request head (HTTP/1.1) or header block (HTTP/2).
    #[arg(long, env = "CELHOOK_HEADER_TIMEOUT", value_name = "DURATION", default_value = "5s", value_parser = duration)]
    header_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
struct CheckCliArgs {
    /// CRD manifests (YAML or JSON) to check: a file, or a directory read with its subdirectories.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: PathBuf,

    /// How to print the report of problems found.
    #[arg(long, env = "CELHOOK_OUTPUT", value_enum, default_value_t = CheckOutput::Text)]
    output: CheckOutput,

    /// Fail on skipped files and documents too (kustomization files, objects that are not CRDs).
    #[arg(long)]
    strict: bool,
}

#[derive(Debug, Args)]
struct WebhookConfigCliArgs {
    /// The config celhook serves (a file, or a directory read with its subdirectories);
    /// without it, the examples built into the binary.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,

    /// Name of the ValidatingWebhookConfiguration.
    #[arg(long, default_value = "celhook")]
    name: String,

    /// Namespace of the celhook Service (also never validated, with kube-system).
    #[arg(long, env = "CELHOOK_NAMESPACE", default_value = "celhook")]
    namespace: String,

    /// Name of the celhook Service.
    #[arg(long, env = "CELHOOK_SERVICE", default_value = "celhook")]
    service: String,

    /// Port of the celhook Service.
    #[arg(long, default_value_t = 443)]
    port: u16,

    /// What the API server does when celhook cannot answer: Fail (reject the write) or Ignore.
    #[arg(long, default_value = "Fail", value_parser = ["Fail", "Ignore"])]
    failure_policy: String,

    /// How long the API server waits for an answer, in seconds (1 to 30).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=30))]
    timeout_seconds: u32,

    /// A PEM CA certificate to write as the caBundle (leave it out when cert-manager's
    /// cainjector or the certs/ kustomize component adds it).
    #[arg(long, value_name = "FILE")]
    ca_bundle: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CliLogFormat {
    Text,
    Json,
}

impl Cli {
    fn into_command(self) -> Command {
        match self.command {
            CliCommand::Serve(args) => {
                let tls = match (args.tls_cert, args.tls_key) {
                    (Some(cert), Some(key)) => TlsSource::Files { cert, key },
                    // clap's `requires` rules out a lone flag.
                    _ => TlsSource::SelfSigned,
                };
                let config = ServeConfig {
                    config_source: args
                        .config
                        .map_or(ConfigSource::Embedded, ConfigSource::Dir),
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
                    keep_alive: args.keep_alive,
                    header_timeout: args.header_timeout,
                    max_convert_request_bytes: args.max_convert_request_bytes,
                    workers: args.workers,
                };
                let log_format = match args.log_format {
                    CliLogFormat::Text => LogFormat::Text,
                    CliLogFormat::Json => LogFormat::Json,
                };
                Command::Serve { config, log_format }
            }
            CliCommand::Check(args) => Command::Check(CheckArgs {
                source: ConfigSource::Dir(args.config),
                output: args.output.into(),
                strict: args.strict,
            }),
            CliCommand::Convert(args) => Command::Convert(ConvertArgs {
                source: args
                    .config
                    .map_or(ConfigSource::Embedded, ConfigSource::Dir),
                to: args.to,
                files: args.files,
                other_kinds: if args.refuse_other_kinds {
                    crate::conversion::files::OtherKinds::Refuse
                } else {
                    crate::conversion::files::OtherKinds::PassThrough
                },
                partial: args.partial,
            }),
            CliCommand::Eval(args) => Command::Eval(match (args.expr, args.crd, args.object) {
                (Some(expr), _, _) => EvalArgs::Expr {
                    expr,
                    this: args.this,
                    old: args.old,
                },
                // clap's group and `requires` rules guarantee --crd with --object.
                (None, crd, object) => EvalArgs::Object {
                    crd: crd.unwrap_or_default(),
                    version: args.version,
                    object: object.unwrap_or_default(),
                    old: args.old,
                    output: args.output.into(),
                },
            }),
            CliCommand::Certs(args) => Command::Certs(crate::certs::CertsArgs {
                out_dir: args.out_dir,
                namespace: args.namespace,
                service: args.service,
                days: args.days,
                extra_names: args.extra_names,
                local_names: !args.no_local_names,
            }),
            CliCommand::WebhookConfig(args) => Command::WebhookConfig {
                source: args
                    .config
                    .map_or(ConfigSource::Embedded, ConfigSource::Dir),
                options: crate::webhook_config::WebhookOptions {
                    name: args.name,
                    namespace: args.namespace,
                    service: args.service,
                    port: args.port,
                    failure_policy: args.failure_policy,
                    timeout_seconds: args.timeout_seconds,
                    ca_bundle: None,
                },
                ca_bundle: args.ca_bundle,
            },
        }
    }
}

#[cfg(test)]
mod tests;
