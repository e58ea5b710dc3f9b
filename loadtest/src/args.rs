//! The command line: what to send (`admission` or `conversion`), where, and
//! how hard.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};

/// Load generator for AdmissionReview and ConversionReview webhooks.
#[derive(Debug, Clone, Parser)]
#[command(name = "celhook-loadtest", version)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub load: Load,
    #[command(subcommand)]
    pub workload: Workload,
}

/// Where the requests go and how the connection is made.
#[derive(Debug, Clone, ClapArgs)]
pub struct Target {
    /// The webhook URL (for conversion, the /convert URL).
    #[arg(
        long,
        global = true,
        default_value = "https://127.0.0.1:8443/validate?timeout=10s"
    )]
    pub url: String,
    /// PEM file of the CA (or self-signed certificate) to trust instead of the system roots.
    #[arg(long, global = true, value_name = "FILE", conflicts_with = "insecure")]
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (development only).
    #[arg(long, global = true)]
    pub insecure: bool,
    /// PEM client certificate chain to present (mutual TLS); needs --client-key.
    #[arg(long, global = true, value_name = "FILE", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of --client-cert.
    #[arg(long, global = true, value_name = "FILE", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// HTTP version: `1.1` (default, as the API server), `2` or `auto`.
    ///
    /// `1.1` is how the API server calls a webhook: it offers only http/1.1
    /// by ALPN and keeps a pool of kept-alive connections, each carrying one
    /// request at a time (no pipelining). `2` insists on h2; `auto` offers
    /// h2 and http/1.1 and lets the server choose (h2, with celhook).
    #[arg(long, global = true, value_enum, default_value_t = HttpVersion::Http1)]
    pub http: HttpVersion,
    /// Client pools: HTTP/2 connections, or pools of HTTP/1.1 connections.
    ///
    /// Over HTTP/2, each pool is one connection that multiplexes every
    /// request in flight on it. Over HTTP/1.1, a request that finds no idle
    /// connection in its pool opens a new one (reqwest's pool has no
    /// per-host cap), so the pools together hold one kept-alive connection
    /// per request in flight: up to --concurrency, whatever this number is;
    /// their handshakes fall in the warm-up.
    #[arg(long, global = true, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub connections: u16,
    /// Per-request timeout, e.g. `10s`, `500ms`.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// How much load, for how long, and how it is reported.
#[derive(Debug, Clone, ClapArgs)]
pub struct Load {
    /// Open loop: send at this constant rate (requests/s) whatever the
    /// answers do; latency counts from each request's intended send time,
    /// so a stall is not hidden (no coordinated omission). Without it: closed
    /// loop, each of --concurrency workers sends its next request when the
    /// last one is answered (maximum throughput).
    #[arg(long, global = true, value_name = "PER_SECOND")]
    pub rate: Option<f64>,
    /// Closed loop: workers. Open loop: the cap on requests in flight
    /// (requests due beyond it wait, and the wait counts as latency).
    /// Default 16 closed, 1024 open.
    ///
    /// Over HTTP/1.1 each request in flight holds a connection of its own,
    /// so this also caps the connections: an open loop that falls behind
    /// opens new ones in a burst, as the API server would (celhook refuses
    /// more than 64 handshakes at once from one address by default).
    #[arg(short = 'c', long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: Option<u16>,
    /// Number of measured requests (default 1000 when --duration is not given).
    #[arg(short = 'n', long, global = true, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
    /// Measure for this long, e.g. `30s`, `2m`.
    #[arg(short = 'd', long, global = true, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Send the same load this long before measuring (connections, caches
    /// and the server's allocator warm up); its results are discarded.
    #[arg(long, global = true, default_value = "1s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Threads sending and receiving (default: one per CPU). On the
    /// server's own machine, fewer leave it more of the CPU.
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Report format on stdout.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the report as a self-contained HTML page: throughput over
    /// time, the latency percentile plot and a summary table.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        visible_alias = "report-html"
    )]
    pub html: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(short = 'q', long, global = true)]
    pub quiet: bool,
}

/// What to send.
#[derive(Debug, Clone, Subcommand)]
pub enum Workload {
    /// AdmissionReviews (admission.k8s.io/v1), one object per request.
    Admission(AdmissionArgs),
    /// ConversionReviews (apiextensions.k8s.io/v1), a batch of objects per request.
    Conversion(ConversionArgs),
}

/// `admission`: a review file, or a CRD and object files to build one from.
#[derive(Debug, Clone, ClapArgs)]
pub struct AdmissionArgs {
    /// A whole AdmissionReview (JSON) to send; its request.uid is replaced
    /// per request. Default: a valid CronTab CREATE for the built-in examples.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["object", "crd"])]
    pub review: Option<PathBuf>,
    /// The object under review (JSON or YAML): builds the review around it.
    #[arg(long, value_name = "FILE")]
    pub object: Option<PathBuf>,
    /// The old object of an UPDATE (default: the object itself).
    #[arg(long, value_name = "FILE", requires = "object")]
    pub old_object: Option<PathBuf>,
    /// The object's CRD (JSON or YAML): supplies the resource's plural name.
    #[arg(long, value_name = "FILE", requires = "object")]
    pub crd: Option<PathBuf>,
    /// The operation, overriding the review file's.
    #[arg(long, value_enum)]
    pub operation: Option<Operation>,
    /// The answer every request must get; anything else counts as an error.
    #[arg(long, value_enum, default_value_t = Expect::Allowed)]
    pub expect: Expect,
}

/// `conversion`: objects to convert and the version to convert them to.
#[derive(Debug, Clone, ClapArgs)]
pub struct ConversionArgs {
    /// An object to convert (JSON or YAML); repeat for mixed source
    /// versions. The batch cycles through them, renaming each copy
    /// (`<name>-<i>`) and giving it its own metadata.uid.
    #[arg(long = "object", value_name = "FILE", required = true)]
    pub objects: Vec<PathBuf>,
    /// desiredAPIVersion, e.g. `stable.example.com/v2`.
    #[arg(long = "to", value_name = "GROUP/VERSION")]
    pub desired_api_version: String,
    /// Objects per ConversionReview (1 to 10,000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
}

/// `--http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HttpVersion {
    /// HTTP/1.1 only (ALPN offers http/1.1): a pool of kept-alive
    /// connections, one request at a time on each, as the API server does.
    #[value(name = "1.1")]
    Http1,
    /// HTTP/2 only (ALPN offers h2): requests multiplexed on --connections.
    #[value(name = "2")]
    Http2,
    /// ALPN offers h2 and http/1.1; the server chooses.
    Auto,
}

impl HttpVersion {
    /// The value as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
            HttpVersion::Auto => "auto",
        }
    }
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable lines.
    Text,
    /// One JSON document (for scripts and comparisons).
    Json,
}

/// `--operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Operation {
    /// request.operation CREATE, no oldObject.
    Create,
    /// request.operation UPDATE with an oldObject.
    Update,
}

/// `--expect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// response.allowed must be true.
    Allowed,
    /// response.allowed must be false.
    Denied,
    /// Either answer is fine (only uid and shape are checked).
    Any,
}

impl Load {
    /// Workers (closed loop) or the in-flight cap (open loop).
    pub fn concurrency(&self) -> u16 {
        self.concurrency
            .unwrap_or(if self.rate.is_some() { 1024 } else { 16 })
    }
}

/// Parses `1.5s`, `250ms`, `2m`, `100us` or a bare number of seconds.
///
/// A few lines rather than a crate: the loadtest needs nothing else of one.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 10s, 500ms or 2m"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use h, m, s, ms or us)"
            ))
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("100us"), Ok(Duration::from_micros(100)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 days").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn the_command_line_parses_both_workloads() {
        let args = Args::try_parse_from([
            "celhook-loadtest",
            "--rate",
            "500",
            "-d",
            "3s",
            "admission",
            "--review",
            "r.json",
            "--expect",
            "denied",
            "--threads",
            "1",
        ])
        .expect("parses");
        assert_eq!(args.load.rate, Some(500.0));
        assert_eq!(args.load.threads, Some(1));
        assert_eq!(
            args.target.http,
            HttpVersion::Http1,
            "HTTP/1.1 as the API server calls webhooks"
        );
        assert_eq!(args.load.html, None);
        assert_eq!(args.load.concurrency(), 1024);
        let Workload::Admission(a) = args.workload else {
            panic!("admission expected")
        };
        assert_eq!(a.expect, Expect::Denied);

        let args = Args::try_parse_from([
            "celhook-loadtest",
            "conversion",
            "--object",
            "a.yaml",
            "--object",
            "b.yaml",
            "--to",
            "g/v2",
            "--batch",
            "10000",
            "--http",
            "2",
            "--report-html",
            "r.html",
        ])
        .expect("parses");
        assert_eq!(args.target.http, HttpVersion::Http2);
        assert_eq!(args.load.html, Some(PathBuf::from("r.html")));
        assert_eq!(args.load.concurrency(), 16);
        assert_eq!(args.load.threads, None);
        let Workload::Conversion(c) = args.workload else {
            panic!("conversion expected")
        };
        assert_eq!((c.objects.len(), c.batch), (2, 10_000));

        for bad in [
            vec![
                "celhook-loadtest",
                "conversion",
                "--to",
                "g/v2",
                "--object",
                "a",
                "--batch",
                "10001",
            ],
            vec!["celhook-loadtest", "-n", "5", "-d", "1s", "admission"],
            vec!["celhook-loadtest", "--client-cert", "c.pem", "admission"],
        ] {
            assert!(Args::try_parse_from(&bad).is_err(), "{bad:?}");
        }
    }
}
