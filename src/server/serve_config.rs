//! Everything the server is told (`ServeConfig`, free of any CLI concern),
//! with the defaults of `celhook serve` and why they are what they are, and
//! the per-request limits derived from it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{limits, reload, ClientAuth, TlsSource};
use crate::config::ConfigSource;

/// Default for `--max-request-bytes`: 8 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// Default for `--max-concurrent-requests`.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 256;
/// Default for `--max-convert-request-bytes`: 256 MiB (a ConversionReview
/// carries whole lists: 10,000 objects of 4 KiB is 40 MiB).
pub const DEFAULT_MAX_CONVERT_REQUEST_BYTES: usize = 256 * 1024 * 1024;
/// Default for `--max-in-flight-bytes`: 64 MiB of `/validate` bodies held
/// at once (eight of the largest).
pub const DEFAULT_MAX_IN_FLIGHT_BYTES: usize = 64 * 1024 * 1024;
/// Default for `--max-convert-in-flight-bytes`: 1 GiB of `/convert` bodies
/// and answers held at once (one connection may hold half: the largest
/// body and its answer).
pub const DEFAULT_MAX_CONVERT_IN_FLIGHT_BYTES: usize = 1024 * 1024 * 1024;
/// Default for `--max-connection-rate`.
pub const DEFAULT_MAX_CONNECTION_RATE: usize = 64;
/// Default for `--max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default for `--max-handshakes-per-source`.
pub const DEFAULT_MAX_HANDSHAKES_PER_SOURCE: usize = 64;
/// Default for `--http2-max-concurrent-streams`.
pub const DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS: u32 = 128;
/// Default for `--listen`.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:8443";
/// Default for `--inline-budget`.
pub const DEFAULT_INLINE_BUDGET: Duration = Duration::from_millis(1);
/// The longest any timeout means: a value past it (`--request-timeout
/// 1000000000h`) stands for it, so that no deadline, `Instant` sum or
/// millisecond count made from a flag can overflow.
pub const LONGEST_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// When admission reviews ready at the same moment are answered back to
/// back in a round (`--review-rounds`, `super::batch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReviewRounds {
    /// While the I/O threads stay saturated: more reviews a second, and
    /// each one's wait for its round shows in the request histogram.
    #[default]
    Auto,
    /// Always (tests, and servers that only ever run saturated).
    Always,
    /// Never: every review is answered on its own, as it arrives.
    Never,
}

/// Everything the server needs, free of any CLI concern.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where the CRDs come from (kept for hot reload; `spawn` takes the
    /// already loaded catalog).
    pub config_source: ConfigSource,
    /// The Kubernetes version the config is compiled as (also on reload).
    pub kubernetes: crate::kube_version::KubeVersion,
    /// The TLS listen address; port 0 picks a free port.
    pub listen: SocketAddr,
    /// The serving certificate.
    pub tls: TlsSource,
    /// Larger request bodies are refused with 413.
    pub max_request_bytes: usize,
    /// Larger `/convert` bodies are refused with 413.
    pub max_convert_request_bytes: usize,
    /// Worker threads; `None` is one per available CPU.
    pub workers: Option<usize>,
    /// When reviews are answered in rounds.
    pub review_rounds: ReviewRounds,
    /// How long a stop waits for requests in flight.
    pub shutdown_timeout: Duration,
    /// How long a stop keeps serving (with `/readyz` at 503) before it
    /// stops accepting, so load balancers and the API server's endpoints
    /// drop the pod first.
    pub shutdown_delay: Duration,
    /// Optional plain-HTTP listener for `/metrics`, `/healthz` and `/readyz`.
    pub metrics_listen: Option<SocketAddr>,
    /// Demand client certificates (`--client-ca`).
    pub client_auth: Option<ClientAuth>,
    /// How often the certificate and config files are checked for changes.
    pub reload_interval: Duration,
    /// Review requests served at once (over all workers); more wait for a
    /// slot until their deadline, then get 503.
    pub max_concurrent_requests: usize,
    /// Bytes of `/validate` bodies held at once over all requests, counted
    /// as they arrive; a body that does not fit gets 503 with `Retry-After`.
    pub max_in_flight_bytes: usize,
    /// The same for `/convert` bodies and their answers.
    pub max_convert_in_flight_bytes: usize,
    /// TLS handshakes computed at once (after their ClientHello arrived);
    /// more wait, so a flood of handshakes cannot take the CPU from
    /// requests on established connections.
    pub max_connection_rate: usize,
    /// Connections open at once; at the cap the longest-idle one is closed
    /// for a new one, and with none idle the new one is refused.
    pub max_connections: usize,
    /// Handshakes in progress at once from one source address.
    pub max_handshakes_per_source: usize,
    /// HTTP/2 streams at once per connection.
    pub http2_max_concurrent_streams: u32,
    /// Time for the first byte and the whole ClientHello.
    pub client_hello_timeout: Duration,
    /// The longest pause within a request body.
    pub body_idle_timeout: Duration,
    /// An answer that cannot be written for this long closes its
    /// connection (a client that does not read).
    pub write_timeout: Duration,
    /// The longest a review request may take (also the deadline when the
    /// caller sends no `?timeout=`).
    pub request_timeout: Duration,
    /// How long a review's first attempt may run on the thread that read
    /// it before it is abandoned and answered on the evaluation pool.
    pub inline_budget: Duration,
    /// How long an idle connection is kept open.
    pub keep_alive: Duration,
    /// How long a client has to complete the TLS handshake and send the
    /// request head (HTTP/1.1) or header block (HTTP/2); slower clients
    /// are disconnected.
    pub header_timeout: Duration,
    /// How requests are answered beyond the rules (unknown versions).
    pub policy: crate::admission::Policy,
}

impl ServeConfig {
    /// The defaults of `celhook serve` with no flags.
    pub fn new() -> Self {
        Self {
            config_source: ConfigSource::Embedded,
            kubernetes: crate::kube_version::KubeVersion::default(),
            listen: SocketAddr::from(([0, 0, 0, 0], 8443)),
            tls: TlsSource::SelfSigned,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_convert_request_bytes: DEFAULT_MAX_CONVERT_REQUEST_BYTES,
            workers: None,
            review_rounds: ReviewRounds::Auto,
            // Reviews take milliseconds: this is for a long conversion.
            // Well inside Kubernetes' default 30 s grace period.
            shutdown_timeout: Duration::from_secs(10),
            shutdown_delay: Duration::from_secs(5),
            metrics_listen: None,
            client_auth: None,
            reload_interval: reload::DEFAULT_INTERVAL,
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
            max_in_flight_bytes: DEFAULT_MAX_IN_FLIGHT_BYTES,
            max_convert_in_flight_bytes: DEFAULT_MAX_CONVERT_IN_FLIGHT_BYTES,
            max_connection_rate: DEFAULT_MAX_CONNECTION_RATE,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_handshakes_per_source: DEFAULT_MAX_HANDSHAKES_PER_SOURCE,
            http2_max_concurrent_streams: DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS,
            // A ClientHello is one packet: a second is ample on any network
            // the API server uses, and silent connections go quickly.
            client_hello_timeout: Duration::from_secs(1),
            body_idle_timeout: Duration::from_secs(2),
            write_timeout: Duration::from_secs(10),
            // The API server gives up on a conversion after 30 s: answer first.
            request_timeout: Duration::from_secs(25),
            // Most reviews take tens of microseconds.
            inline_budget: DEFAULT_INLINE_BUDGET,
            // Longer than the API server's idle-connection timeout (90 s,
            // Go's default transport): if the server closed first, a request
            // racing the close would fail, and POSTs are not retried.
            keep_alive: Duration::from_secs(120),
            header_timeout: Duration::from_secs(5),
            policy: crate::admission::Policy::default(),
        }
    }

    /// This config with every timeout at most [`LONGEST_TIMEOUT`]; the
    /// server takes its config through here.
    pub fn capped(mut self) -> Self {
        for d in [
            &mut self.shutdown_timeout,
            &mut self.shutdown_delay,
            &mut self.reload_interval,
            &mut self.client_hello_timeout,
            &mut self.body_idle_timeout,
            &mut self.write_timeout,
            &mut self.request_timeout,
            &mut self.inline_budget,
            &mut self.keep_alive,
            &mut self.header_timeout,
        ] {
            *d = (*d).min(LONGEST_TIMEOUT);
        }
        self
    }

    /// For tests: `127.0.0.1`, a free port, a generated certificate, one
    /// worker and a quick stop.
    pub fn for_tests() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            workers: Some(1),
            shutdown_timeout: Duration::from_secs(1),
            shutdown_delay: Duration::ZERO,
            reload_interval: Duration::from_millis(50),
            ..Self::new()
        }
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The per-request limits of the review endpoints (see [`limits`]).
#[derive(Debug, Clone)]
pub struct Limits {
    /// One permit per review request evaluating (or waiting to).
    pub concurrency: Arc<tokio::sync::Semaphore>,
    /// The longest a review request may take.
    pub request_timeout: Duration,
    /// A review's first attempt on the thread that read it.
    pub inline_budget: Duration,
    /// Bytes of `/validate` bodies held at once.
    pub validate_bytes: limits::BodyBudget,
    /// Bytes of `/convert` bodies and answers held at once.
    pub convert_bytes: limits::BodyBudget,
    /// The longest pause within a request body.
    pub body_idle_timeout: Duration,
}

impl Limits {
    /// The limits of `config`.
    pub fn of(config: &ServeConfig) -> Self {
        Self {
            concurrency: Arc::new(tokio::sync::Semaphore::new(config.max_concurrent_requests)),
            request_timeout: config.request_timeout,
            inline_budget: config.inline_budget,
            validate_bytes: limits::BodyBudget::new(config.max_in_flight_bytes),
            convert_bytes: limits::BodyBudget::new(config.max_convert_in_flight_bytes),
            body_idle_timeout: config.body_idle_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_past_what_an_instant_holds_is_the_longest_one() {
        let far = Duration::from_secs(3_000_000_000_000_000 * 3600);
        let config = ServeConfig {
            request_timeout: Duration::MAX,
            keep_alive: far,
            header_timeout: Duration::from_secs(5),
            ..ServeConfig::new()
        }
        .capped();
        assert_eq!(config.request_timeout, LONGEST_TIMEOUT);
        assert_eq!(config.keep_alive, LONGEST_TIMEOUT);
        assert_eq!(config.header_timeout, Duration::from_secs(5));
        // Any deadline made from it fits an `Instant`.
        let now = tokio::time::Instant::now();
        assert!(now.checked_add(config.request_timeout).is_some());
        // The duration parser gives such a value for a huge flag.
        let huge = limits::parse_go_duration("3000000000000000h").expect("parses");
        assert!(now.checked_add(huge).is_none());
        assert!(now.checked_add(huge.min(LONGEST_TIMEOUT)).is_some());
    }
}
