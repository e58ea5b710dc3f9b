//! Prometheus metrics: every family registered explicitly into one
//! [`Registry`] owned by [`Metrics`] (no process-wide globals, so each test
//! server has its own), with typed `observe_*` helpers for the request path.
//!
//! Labels are bounded by the config (CRD, version, kind, rule location) or
//! by fixed enums (endpoint, operation, outcome); object names, namespaces
//! and uids are never labels. Handles that the hot path uses on every
//! request (per endpoint, per rule) are created up front, so recording is a
//! few atomic adds.
//!
//! What a review endpoint records, e.g. `/convert`: the route is wrapped in
//! `server::limits::guard` (in flight, latency, limits; found by path), and
//! the handler calls [`Metrics::observe_review`] once with
//! `Endpoint::Convert`, the review's version (`v1`, `v1beta1`, `unknown`),
//! the CRD (`unknown` when not served), an empty operation and the outcome
//! (`Allowed` for a `Success` result, `Denied` for a `Failure` result,
//! `Error` for a non-200 answer); then [`Metrics::observe_conversion`] per
//! source version converted, or [`Metrics::observe_conversion_failure`]
//! with the failure's type.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Latency buckets in seconds: a review is typically answered in tens to
/// hundreds of microseconds, so the low end is finer than Prometheus'
/// defaults (which start at 5 ms); the top end covers the API server's 30 s
/// limit.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0,
];

/// An endpoint whose requests are counted, timed and limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /validate`
    Validate,
    /// `POST /convert`
    Convert,
}

impl Endpoint {
    /// Every endpoint, in the order of [`Endpoint::index`].
    pub const ALL: [Endpoint; 2] = [Endpoint::Validate, Endpoint::Convert];

    /// The label value (the route path without the slash).
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Validate => "validate",
            Endpoint::Convert => "convert",
        }
    }

    /// The endpoint served at `path`, if any.
    pub fn from_path(path: &str) -> Option<Endpoint> {
        match path {
            "/validate" => Some(Endpoint::Validate),
            "/convert" => Some(Endpoint::Convert),
            _ => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a request ended, as counted in `celhook_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// An admission review answered `allowed: true`, or a conversion that succeeded.
    Allowed,
    /// An admission review answered `allowed: false`, or a conversion answered `Failure`.
    Denied,
    /// No review answer: a 4xx/5xx, an overload refusal or a missed deadline.
    Error,
}

impl RequestOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestOutcome::Allowed => "allowed",
            RequestOutcome::Denied => "denied",
            RequestOutcome::Error => "error",
        }
    }
}

/// Why a conversion failed, in the API server's own classification of
/// conversion webhook failures (its `failure_type` label), so a failure on
/// either side can be matched up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversionFailure {
    /// The request could not be answered at all (unreadable review, internal error).
    Call,
    /// The answer would not be a valid ConversionReview response.
    MalformedResponse,
    /// Fewer (or more) objects converted than sent.
    PartialResponse,
    /// A converted object breaks the API server's invariants (apiVersion,
    /// kind, name/namespace/uid, metadata) or a conversion rule failed.
    InvalidConvertedObject,
}

impl ConversionFailure {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConversionFailure::Call => "call",
            ConversionFailure::MalformedResponse => "malformed_response",
            ConversionFailure::PartialResponse => "partial_response",
            ConversionFailure::InvalidConvertedObject => "invalid_converted_object",
        }
    }
}

/// The handles of one rule, attached to the compiled rule when a catalog is
/// bound to a [`Metrics`] (`validation::bind_metrics`).
#[derive(Debug, Clone)]
pub struct RuleMetrics {
    evaluations: IntCounter,
    failed: IntCounter,
    errors: IntCounter,
    cost: IntCounter,
}

/// What one rule evaluation gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleResult {
    /// The rule held.
    Passed,
    /// The rule evaluated to false.
    Failed,
    /// The rule could not be evaluated (runtime error, cost limit).
    Error,
}

impl RuleMetrics {
    /// Records one evaluation and its runtime cost.
    pub fn observe(&self, result: RuleResult, cost: u64) {
        self.evaluations.inc();
        self.cost.inc_by(cost);
        match result {
            RuleResult::Passed => {}
            RuleResult::Failed => self.failed.inc(),
            RuleResult::Error => self.errors.inc(),
        }
    }
}

/// A slot in a compiled rule for its metric handles; empty until bound.
pub type RuleMetricsSlot = OnceLock<RuleMetrics>;

#[derive(Debug, Clone)]
struct EndpointMetrics {
    in_flight: IntGauge,
    duration: Histogram,
}

/// Every celhook metric family, registered in its own [`Registry`].
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    endpoints: Vec<EndpointMetrics>,
    requests: IntCounterVec,
    overloaded: IntCounterVec,
    deadline_exceeded: IntCounterVec,
    rule_evaluations: IntCounterVec,
    rule_failures: IntCounterVec,
    rule_errors: IntCounterVec,
    rule_cost: IntCounterVec,
    conversion_objects: IntCounterVec,
    conversion_failures: IntCounterVec,
    config_generation: IntGauge,
    body_bytes_in_flight: IntGauge,
    config_last_reload: Gauge,
    config_reload_failures: IntCounter,
    tls_cert_expiry: Gauge,
    tls_reloads: IntCounterVec,
    connections_open: IntGauge,
    connections_refused: IntCounterVec,
    connections_closed: IntCounterVec,
    tls_handshake_failures: IntCounterVec,
    config_reload_deferred: IntCounter,
}

const RULE_LABELS: &[&str] = &["crd", "version", "path", "index"];

fn reg<C: prometheus::core::Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    // Names are fixed and distinct: a failure here is a bug caught by every test.
    #[allow(clippy::expect_used)]
    registry
        .register(Box::new(c.clone()))
        .expect("metric families have distinct names");
    c
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    #[allow(clippy::expect_used)]
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric options");
    reg(registry, c)
}

impl Metrics {
    /// Creates and registers every family in a fresh registry.
    #[allow(clippy::expect_used)] // fixed, valid options: cannot fail
    pub fn register() -> Self {
        let registry = Registry::new();
        let in_flight = reg(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "celhook_requests_in_flight",
                    "Requests being served, by endpoint.",
                ),
                &["endpoint"],
            )
            .expect("valid"),
        );
        let duration = reg(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "celhook_request_duration_seconds",
                    "Time from the request's arrival at the handler to its answer, by endpoint.",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &["endpoint"],
            )
            .expect("valid"),
        );
        let endpoints = Endpoint::ALL
            .iter()
            .map(|e| EndpointMetrics {
                in_flight: in_flight.with_label_values(&[e.as_str()]),
                duration: duration.with_label_values(&[e.as_str()]),
            })
            .collect();

        let build_info = reg(
            &registry,
            IntGaugeVec::new(
                Opts::new("celhook_build_info", "Always 1; the labels name the build."),
                &["version"],
            )
            .expect("valid"),
        );
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);

        let gauge = |name: &str, help: &str| reg(&registry, Gauge::new(name, help).expect("valid"));
        Metrics {
            endpoints,
            requests: counter_vec(
                &registry,
                "celhook_requests_total",
                "Reviews answered, by endpoint, review apiVersion, kind, operation and outcome.",
                &["endpoint", "review_version", "kind", "operation", "outcome"],
            ),
            overloaded: counter_vec(
                &registry,
                "celhook_requests_overloaded_total",
                "Requests refused with 503: --max-concurrent-requests stayed in flight until the deadline, or the body did not fit in --max-in-flight-bytes.",
                &["endpoint"],
            ),
            deadline_exceeded: counter_vec(
                &registry,
                "celhook_requests_deadline_exceeded_total",
                "Requests abandoned with 504 at their deadline (from ?timeout= or --request-timeout).",
                &["endpoint"],
            ),
            rule_evaluations: counter_vec(
                &registry,
                "celhook_rule_evaluations_total",
                "Evaluations of x-kubernetes-validations rules, by CRD, version, schema path and rule index.",
                RULE_LABELS,
            ),
            rule_failures: counter_vec(
                &registry,
                "celhook_rule_failures_total",
                "Rule evaluations that returned false.",
                RULE_LABELS,
            ),
            rule_errors: counter_vec(
                &registry,
                "celhook_rule_errors_total",
                "Rule evaluations that failed at run time (errors, cost limits).",
                RULE_LABELS,
            ),
            rule_cost: counter_vec(
                &registry,
                "celhook_rule_cost_total",
                "CEL runtime cost spent on each rule (the API server's cost units).",
                RULE_LABELS,
            ),
            conversion_objects: counter_vec(
                &registry,
                "celhook_conversion_objects_total",
                "Objects converted, by CRD and from/to version.",
                &["crd", "from", "to"],
            ),
            conversion_failures: counter_vec(
                &registry,
                "celhook_conversion_failures_total",
                "Failed conversion requests, by CRD and the API server's failure type.",
                &["crd", "failure_type"],
            ),
            body_bytes_in_flight: reg(
                &registry,
                IntGauge::new(
                    "celhook_request_body_bytes_in_flight",
                    "Bytes of review bodies being read or held by requests in flight (bounded by --max-in-flight-bytes).",
                )
                .expect("valid"),
            ),
            config_generation: reg(
                &registry,
                IntGauge::new(
                    "celhook_config_generation",
                    "Number of the config being served: 1 at start, +1 per successful reload.",
                )
                .expect("valid"),
            ),
            config_last_reload: gauge(
                "celhook_config_last_reload_success_timestamp_seconds",
                "Unix time the served config was loaded.",
            ),
            config_reload_failures: reg(
                &registry,
                IntCounter::new(
                    "celhook_config_reload_failures_total",
                    "Config changes refused (the last good config keeps serving).",
                )
                .expect("valid"),
            ),
            tls_cert_expiry: gauge(
                "celhook_tls_cert_expiry_timestamp_seconds",
                "Unix time the served certificate expires (notAfter).",
            ),
            tls_reloads: counter_vec(
                &registry,
                "celhook_tls_cert_reloads_total",
                "Certificate reloads after a change of the files, by result (success, failure).",
                &["result"],
            ),
            connections_open: reg(
                &registry,
                IntGauge::new(
                    "celhook_connections_open",
                    "TLS connections open, handshakes in progress included (bounded by --max-connections).",
                )
                .expect("valid"),
            ),
            connections_refused: counter_vec(
                &registry,
                "celhook_connections_refused_total",
                "Connections closed at accept, by reason (source_limit: too many handshakes in progress from its address; connection_limit: --max-connections open and none idle).",
                &["reason"],
            ),
            connections_closed: counter_vec(
                &registry,
                "celhook_connections_closed_total",
                "Served connections closed by celhook, by reason (idle, evicted, write_stall, header_timeout, shutdown).",
                &["reason"],
            ),
            tls_handshake_failures: counter_vec(
                &registry,
                "celhook_tls_handshake_failures_total",
                "TLS handshakes that failed, by reason (client_hello_timeout, handshake_timeout, client_certificate, plain_http, protocol).",
                &["reason"],
            ),
            config_reload_deferred: reg(
                &registry,
                IntCounter::new(
                    "celhook_config_reload_deferred_total",
                    "Config changes seen but not loaded yet: still being written, or dropping rules and CRDs and not yet settled.",
                )
                .expect("valid"),
            ),
            registry,
        }
    }

    /// The gauge of open connections.
    pub fn connections_open(&self) -> &IntGauge {
        &self.connections_open
    }

    /// Counts a connection closed at accept.
    pub fn observe_connection_refused(&self, reason: &str) {
        self.connections_refused.with_label_values(&[reason]).inc();
    }

    /// Counts a served connection closed by celhook.
    pub fn observe_connection_closed(&self, reason: &str) {
        self.connections_closed.with_label_values(&[reason]).inc();
    }

    /// Counts a failed TLS handshake.
    pub fn observe_handshake_failure(&self, reason: &str) {
        self.tls_handshake_failures
            .with_label_values(&[reason])
            .inc();
    }

    /// Counts a config change not loaded yet.
    pub fn observe_config_reload_deferred(&self) {
        self.config_reload_deferred.inc();
    }

    /// The registry, for tests and extra collectors.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Renders every family in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> Result<Vec<u8>, prometheus::Error> {
        let mut out = Vec::with_capacity(16 * 1024);
        TextEncoder::new().encode(&self.registry.gather(), &mut out)?;
        Ok(out)
    }

    /// The gauge of body bytes reserved by requests in flight.
    pub fn body_bytes_in_flight(&self) -> &IntGauge {
        &self.body_bytes_in_flight
    }

    /// Marks a request to `endpoint` as started: counts it in flight until
    /// the returned guard is dropped, which also records its duration.
    pub fn start(&self, endpoint: Endpoint) -> InFlight {
        let m = self.endpoints[endpoint.index()].clone();
        m.in_flight.inc();
        InFlight {
            metrics: m,
            started: std::time::Instant::now(),
        }
    }

    /// Counts one answered (or refused) review. `review_version` is the
    /// review's apiVersion version (`v1`, `v1beta1`, or `unknown` when the
    /// body could not be read); `kind` is the kind (or CRD) under review,
    /// `unknown` when not served by the config; `operation` is empty for
    /// conversions.
    pub fn observe_review(
        &self,
        endpoint: Endpoint,
        review_version: &str,
        kind: &str,
        operation: &str,
        outcome: RequestOutcome,
    ) {
        self.requests
            .with_label_values(&[
                endpoint.as_str(),
                review_version,
                kind,
                operation,
                outcome.as_str(),
            ])
            .inc();
    }

    /// Counts a request refused because the concurrency limit stayed full.
    pub fn observe_overloaded(&self, endpoint: Endpoint) {
        self.overloaded
            .with_label_values(&[endpoint.as_str()])
            .inc();
        self.observe_review(endpoint, "unknown", "unknown", "", RequestOutcome::Error);
    }

    /// Counts a request abandoned at its deadline.
    pub fn observe_deadline_exceeded(&self, endpoint: Endpoint) {
        self.deadline_exceeded
            .with_label_values(&[endpoint.as_str()])
            .inc();
        self.observe_review(endpoint, "unknown", "unknown", "", RequestOutcome::Error);
    }

    /// Counts `objects` objects of CRD `crd` converted from version `from`
    /// to version `to` (call once per source version in a request).
    pub fn observe_conversion(&self, crd: &str, from: &str, to: &str, objects: u64) {
        self.conversion_objects
            .with_label_values(&[crd, from, to])
            .inc_by(objects);
    }

    /// Counts one failed conversion request of CRD `crd` (`unknown` when the
    /// request could not be read).
    pub fn observe_conversion_failure(&self, crd: &str, failure: ConversionFailure) {
        self.conversion_failures
            .with_label_values(&[crd, failure.as_str()])
            .inc();
    }

    /// Records that config `generation` is now served, loaded at `at`.
    pub fn observe_config_loaded(&self, generation: i64, at: SystemTime) {
        self.config_generation.set(generation);
        self.config_last_reload.set(unix_seconds(at));
    }

    /// Counts a refused config change.
    pub fn observe_config_reload_failure(&self) {
        self.config_reload_failures.inc();
    }

    /// The generation of the served config.
    pub fn config_generation(&self) -> i64 {
        self.config_generation.get()
    }

    /// Records the expiry (notAfter) of the certificate now served.
    pub fn observe_cert_expiry(&self, not_after: SystemTime) {
        self.tls_cert_expiry.set(unix_seconds(not_after));
    }

    /// Counts a certificate reload attempt after the files changed.
    pub fn observe_cert_reload(&self, success: bool) {
        let result = if success { "success" } else { "failure" };
        self.tls_reloads.with_label_values(&[result]).inc();
    }

    /// The handles of the rule at `index` of schema `path` (`.spec`,
    /// `.spec.items[*]`) of a CRD version; `validation::bind_metrics`
    /// attaches them to the compiled rules.
    pub fn rule(&self, crd: &str, version: &str, path: &str, index: usize) -> RuleMetrics {
        let index = index.to_string();
        let labels = [crd, version, path, index.as_str()];
        RuleMetrics {
            evaluations: self.rule_evaluations.with_label_values(&labels),
            failed: self.rule_failures.with_label_values(&labels),
            errors: self.rule_errors.with_label_values(&labels),
            cost: self.rule_cost.with_label_values(&labels),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::register()
    }
}

/// A request in flight; dropping it records the duration and ends the count.
#[derive(Debug)]
pub struct InFlight {
    metrics: EndpointMetrics,
    started: std::time::Instant,
}

impl InFlight {
    /// Time since the request started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.metrics.in_flight.dec();
        self.metrics
            .duration
            .observe(self.started.elapsed().as_secs_f64());
    }
}

fn unix_seconds(at: SystemTime) -> f64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(m: &Metrics) -> String {
        String::from_utf8(m.render().expect("renders")).expect("utf-8")
    }

    #[test]
    fn each_registry_is_its_own() {
        let a = Metrics::register();
        let b = Metrics::register();
        a.observe_review(
            Endpoint::Validate,
            "v1",
            "CronTab",
            "CREATE",
            RequestOutcome::Denied,
        );
        assert!(text(&a).contains(
            "celhook_requests_total{endpoint=\"validate\",kind=\"CronTab\",operation=\"CREATE\",outcome=\"denied\",review_version=\"v1\"} 1"
        ));
        assert!(!text(&b).contains("outcome=\"denied\""));
    }

    #[test]
    fn in_flight_guards_count_and_time() {
        let m = Metrics::register();
        let guard = m.start(Endpoint::Convert);
        assert!(text(&m).contains("celhook_requests_in_flight{endpoint=\"convert\"} 1"));
        drop(guard);
        let t = text(&m);
        assert!(
            t.contains("celhook_requests_in_flight{endpoint=\"convert\"} 0"),
            "{t}"
        );
        assert!(t.contains("celhook_request_duration_seconds_count{endpoint=\"convert\"} 1"));
        // Sub-millisecond buckets are exposed.
        assert!(t.contains("le=\"0.0001\""), "{t}");
    }

    #[test]
    fn conversion_helpers_use_the_api_server_failure_types() {
        let m = Metrics::register();
        m.observe_conversion("crontabs.stable.example.com", "v1", "v2", 3);
        m.observe_conversion("crontabs.stable.example.com", "v1", "v2", 2);
        m.observe_conversion_failure(
            "crontabs.stable.example.com",
            ConversionFailure::PartialResponse,
        );
        let t = text(&m);
        assert!(t.contains("celhook_conversion_objects_total{crd=\"crontabs.stable.example.com\",from=\"v1\",to=\"v2\"} 5"), "{t}");
        assert!(t.contains("celhook_conversion_failures_total{crd=\"crontabs.stable.example.com\",failure_type=\"partial_response\"} 1"), "{t}");
    }

    #[test]
    fn build_info_and_config_gauges() {
        let m = Metrics::register();
        m.observe_config_loaded(3, UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        m.observe_cert_expiry(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let t = text(&m);
        assert!(t.contains(&format!(
            "celhook_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )));
        assert!(t.contains("celhook_config_generation 3"));
        assert!(t.contains("celhook_config_last_reload_success_timestamp_seconds 1700000000"));
        assert!(t.contains("celhook_tls_cert_expiry_timestamp_seconds 1800000000"));
    }
}
