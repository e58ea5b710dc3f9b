//! Prometheus metrics: every family registered explicitly into one
//! [`Registry`] owned by [`Metrics`] (no process-wide globals, so each test
//! server has its own), with typed `observe_*` helpers for the request path.
//!
//! Naming follows Prometheus' advice: base units (seconds, bytes) as the
//! name's suffix, `_total` on counters, and label names that the scrape
//! does not overwrite: Prometheus and the Prometheus Operator add `job`,
//! `instance`, `namespace`, `service`, `pod`, `container` and `endpoint` to
//! every series, and a colliding label would be renamed `exported_*`
//! (hence `handler`, not `endpoint`). Label values are bounded by the
//! config (CRD, version, rule location) or by fixed enums (`labels`);
//! object names, namespaces and uids are never labels. Handles that the hot
//! path uses on every request (per endpoint, per rule) are created up
//! front, and fixed label sets start at zero, so every family is in the
//! first scrape and recording is a few atomic adds.
//!
//! What a review endpoint records: the route times it and counts it in
//! flight ([`Metrics::start`]). The handler counts the answered review once
//! in its endpoint's family: [`Metrics::observe_admission`]
//! (`celhook_admission_requests_total`, outcome `allowed`/`denied`) or
//! [`Metrics::observe_conversion_review`]
//! (`celhook_conversion_requests_total`, outcome `success`/`failure`, the
//! answer's `result.status`), plus [`Metrics::observe_converted`] per source
//! version converted or [`Metrics::observe_conversion_failure`]. A request
//! that gets no review answer (4xx/5xx) is counted by the route, in the
//! same family with outcome `error` and `unknown` labels:
//! [`Metrics::observe_unanswered`], [`Metrics::observe_overloaded`] or
//! [`Metrics::observe_deadline_exceeded`].

mod labels;
mod rule;
mod sharded;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

pub use rule::{RuleMetrics, RuleMetricsSlot, RuleObservation};
use rule::{RULE_FAMILIES, RULE_LABELS};

pub use labels::{
    AdmissionOutcome, ConversionFailure, ConversionOutcome, Endpoint, RuleResult,
    CONNECTION_CLOSED_REASONS, CONNECTION_REFUSED_REASONS, HANDSHAKE_FAILURE_REASONS,
};

/// Latency buckets in seconds: a review is answered in tens to hundreds of
/// microseconds, so the low end is much finer than Prometheus' defaults
/// (from 5 ms), every 5 us up to 50 us: fine enough to tell a p99 from
/// three times a p50 of 14 us (the performance log's "Session 43"). The
/// top end covers the API server's 30 s limit.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.000_005, 0.000_01, 0.000_015, 0.000_02, 0.000_025, 0.000_03, 0.000_035, 0.000_04, 0.000_045,
    0.000_05, 0.000_075, 0.000_1, 0.000_15, 0.000_2, 0.000_25, 0.000_35, 0.000_5, 0.000_75, 0.001,
    0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The label value for what a request did not say or the config does not
/// serve.
const UNKNOWN: &str = "unknown";

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
    admission_requests: IntCounterVec,
    conversion_requests: IntCounterVec,
    overloaded: IntCounterVec,
    deadline_exceeded: IntCounterVec,
    rules: sharded::ShardedCounters<4>,
    conversion_objects: IntCounterVec,
    conversion_failures: IntCounterVec,
    config_generation: IntGauge,
    bytes_in_flight: IntGauge,
    config_last_reload: Gauge,
    config_reload_failures: IntCounter,
    tls_cert_expiry: Gauge,
    tls_reloads: IntCounterVec,
    connections_open: IntGauge,
    connections_refused: IntCounterVec,
    connections_closed: IntCounterVec,
    tls_handshake_failures: IntCounterVec,
    config_reload_deferred: IntCounter,
    inline_retries: IntCounter,
    reviews_in_rounds: IntCounter,
    io_saturated: IntGauge,
    document_failures: IntCounterVec,
    unknown_versions: IntCounterVec,
    policy_decisions: IntCounterVec,
}

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

/// A counter family with a single label whose every value starts at 0, so
/// that `rate()` and `increase()` see the first event.
fn counter_vec_at_zero(
    registry: &Registry,
    name: &str,
    help: &str,
    label: &str,
    values: impl IntoIterator<Item = &'static str>,
) -> IntCounterVec {
    let c = counter_vec(registry, name, help, &[label]);
    for value in values {
        c.with_label_values(&[value]);
    }
    c
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
                    "Review requests being served, by handler.",
                ),
                &["handler"],
            )
            .expect("valid"),
        );
        let duration = reg(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "celhook_request_duration_seconds",
                    "Time from a review request's arrival at the handler to its answer, by handler.",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &["handler"],
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

        let handlers = || Endpoint::ALL.iter().map(|e| e.as_str());
        let gauge = |name: &str, help: &str| reg(&registry, Gauge::new(name, help).expect("valid"));
        let int_gauge =
            |name: &str, help: &str| reg(&registry, IntGauge::new(name, help).expect("valid"));
        let counter =
            |name: &str, help: &str| reg(&registry, IntCounter::new(name, help).expect("valid"));
        Metrics {
            endpoints,
            admission_requests: counter_vec(
                &registry,
                "celhook_admission_requests_total",
                "AdmissionReviews at /validate, by review apiVersion, CRD, operation and outcome (allowed, denied, error: no review answer).",
                &["review_version", "crd", "operation", "outcome"],
            ),
            conversion_requests: counter_vec(
                &registry,
                "celhook_conversion_requests_total",
                "ConversionReviews at /convert, by review apiVersion, CRD and outcome (the answer's result.status success or failure; error: no review answer).",
                &["review_version", "crd", "outcome"],
            ),
            overloaded: counter_vec_at_zero(
                &registry,
                "celhook_requests_overloaded_total",
                "Requests refused with 503: --max-concurrent-requests stayed in flight until the deadline, or the body did not fit in its byte budget.",
                "handler",
                handlers(),
            ),
            deadline_exceeded: counter_vec_at_zero(
                &registry,
                "celhook_requests_deadline_exceeded_total",
                "Requests abandoned with 408 or 504 at their deadline (from ?timeout= or --request-timeout).",
                "handler",
                handlers(),
            ),
            rules: reg(
                &registry,
                sharded::ShardedCounters::new(RULE_FAMILIES, RULE_LABELS).expect("valid"),
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
                "Conversion reviews answered Failure, by CRD and the API server's failure type.",
                &["crd", "failure_type"],
            ),
            bytes_in_flight: int_gauge(
                "celhook_requests_in_flight_bytes",
                "Bytes of review heads, bodies and /convert answers held by requests in flight (bounded by the byte budgets).",
            ),
            config_generation: int_gauge(
                "celhook_config_generation",
                "Number of the config being served: 1 at start, +1 per successful reload.",
            ),
            config_last_reload: gauge(
                "celhook_config_last_reload_success_timestamp_seconds",
                "Unix time the served config was loaded.",
            ),
            config_reload_failures: counter(
                "celhook_config_reload_failures_total",
                "Config changes refused (the last good config keeps serving).",
            ),
            tls_cert_expiry: gauge(
                "celhook_tls_cert_expiry_timestamp_seconds",
                "Unix time the served certificate expires (notAfter).",
            ),
            tls_reloads: counter_vec_at_zero(
                &registry,
                "celhook_tls_cert_reloads_total",
                "Certificate reloads after a change of the files, by result (success, failure).",
                "result",
                ["success", "failure"],
            ),
            connections_open: int_gauge(
                "celhook_connections_open",
                "TLS connections open, handshakes in progress included (bounded by --max-connections).",
            ),
            connections_refused: counter_vec_at_zero(
                &registry,
                "celhook_connections_refused_total",
                "Connections closed before their handshake, by reason (source_limit: no handshake slot of its address came free within --client-hello-timeout; connection_limit: --max-connections open and none idle).",
                "reason",
                CONNECTION_REFUSED_REASONS.iter().copied(),
            ),
            connections_closed: counter_vec_at_zero(
                &registry,
                "celhook_connections_closed_total",
                "Served connections closed by celhook, by reason (idle, evicted, write_stall, header_timeout, shutdown).",
                "reason",
                CONNECTION_CLOSED_REASONS.iter().copied(),
            ),
            tls_handshake_failures: counter_vec_at_zero(
                &registry,
                "celhook_tls_handshake_failures_total",
                "TLS handshakes that failed, by reason (client_hello_timeout, handshake_timeout, client_certificate, plain_http, protocol).",
                "reason",
                HANDSHAKE_FAILURE_REASONS.iter().copied(),
            ),
            config_reload_deferred: counter(
                "celhook_config_reload_deferred_total",
                "Config changes seen but not loaded yet: still being written, or dropping rules and CRDs and not yet settled.",
            ),
            inline_retries: counter(
                "celhook_admission_inline_retries_total",
                "Admission reviews whose first attempt, on the connection's thread, passed its budget (--inline-budget, 1 ms by default) and ran again on the evaluation pool, so their work was done twice: costly rules, or a CPU throttled or shared.",
            ),
            reviews_in_rounds: counter(
                "celhook_admission_reviews_in_rounds_total",
                "Admission reviews answered in a round, back to back with the others ready at the same moment (--review-rounds: while the I/O threads are saturated, or always).",
            ),
            io_saturated: int_gauge(
                "celhook_io_saturated",
                "1 while the I/O threads are saturated (for half a second they ran out of tasks at most once per 10 reviews) and, under --review-rounds auto, admission reviews go in rounds; 0 otherwise.",
            ),
            document_failures: counter_vec(
                &registry,
                "celhook_rules_document_failures_total",
                "Admission requests on which a rules document's rules failed, by document and its validationActions (deny, warn, audit, deny+audit, warn+audit).",
                &["document", "actions"],
            ),
            unknown_versions: counter_vec(
                &registry,
                "celhook_unknown_version_requests_total",
                "Admission requests of a kind the config knows in a version it has no schema of, by CRD (or kind.group) and the --unknown-versions action taken.",
                &["crd", "action"],
            ),
            policy_decisions: counter_vec(
                &registry,
                "celhook_policy_decisions_total",
                "ValidatingAdmissionPolicy outcomes that did something, by policy, binding and action (deny, warn, audit; error_ignored for an error failurePolicy Ignore dropped).",
                &["policy", "binding", "action"],
            ),
            registry,
        }
    }

    /// Counts what a policy's binding did to a request.
    pub fn observe_policy_decision(&self, policy: &str, binding: &str, action: &str) {
        self.policy_decisions
            .with_label_values(&[policy, binding, action])
            .inc();
    }

    /// Counts a request on which `document`'s rules failed.
    pub fn observe_document_failure(&self, document: &str, actions: &str) {
        self.document_failures
            .with_label_values(&[document, actions])
            .inc();
    }

    /// Counts a request of a known kind in a version without a schema.
    pub fn observe_unknown_version(&self, crd: &str, action: &str) {
        self.unknown_versions
            .with_label_values(&[crd, action])
            .inc();
    }

    /// The gauge of open connections.
    pub fn connections_open(&self) -> &IntGauge {
        &self.connections_open
    }

    /// Counts a connection closed before its handshake (at accept, or after waiting for a slot of its address).
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

    /// Counts a review whose inline attempt ran out of its budget.
    pub fn observe_inline_retry(&self) {
        self.inline_retries.inc();
    }

    /// Counts a review answered in a round.
    pub fn observe_review_in_round(&self) {
        self.reviews_in_rounds.inc();
    }

    /// The gauge of whether the I/O threads are saturated.
    pub fn io_saturated(&self) -> &IntGauge {
        &self.io_saturated
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

    /// The gauge of bytes held by requests in flight
    /// (`celhook_requests_in_flight_bytes`).
    pub fn body_bytes_in_flight(&self) -> &IntGauge {
        &self.bytes_in_flight
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

    /// Counts one answered AdmissionReview. `review_version` is the
    /// review's apiVersion version (`v1`, `v1beta1`); `crd` the name of the
    /// CRD serving the kind under review, `unknown` when none does.
    pub fn observe_admission(
        &self,
        review_version: &str,
        crd: &str,
        operation: &str,
        outcome: AdmissionOutcome,
    ) {
        self.admission_requests
            .with_label_values(&[review_version, crd, operation, outcome.as_str()])
            .inc();
    }

    /// Counts one answered ConversionReview; labels as for
    /// [`Metrics::observe_admission`].
    pub fn observe_conversion_review(
        &self,
        review_version: &str,
        crd: &str,
        outcome: ConversionOutcome,
    ) {
        self.conversion_requests
            .with_label_values(&[review_version, crd, outcome.as_str()])
            .inc();
    }

    /// Counts a request to `endpoint` that got no review answer (400, 413,
    /// 500, ...), in its endpoint's family with outcome `error`: what it was
    /// about is not known (or not trusted) at that point.
    pub fn observe_unanswered(&self, endpoint: Endpoint) {
        match endpoint {
            Endpoint::Validate => {
                self.observe_admission(UNKNOWN, UNKNOWN, UNKNOWN, AdmissionOutcome::Error)
            }
            Endpoint::Convert => {
                self.observe_conversion_review(UNKNOWN, UNKNOWN, ConversionOutcome::Error)
            }
        }
    }

    /// Counts a request refused because a limit stayed full (503).
    pub fn observe_overloaded(&self, endpoint: Endpoint) {
        self.overloaded
            .with_label_values(&[endpoint.as_str()])
            .inc();
        self.observe_unanswered(endpoint);
    }

    /// Counts a request abandoned at its deadline (408, 504).
    pub fn observe_deadline_exceeded(&self, endpoint: Endpoint) {
        self.deadline_exceeded
            .with_label_values(&[endpoint.as_str()])
            .inc();
        self.observe_unanswered(endpoint);
    }

    /// Counts `objects` objects of CRD `crd` converted from version `from`
    /// to version `to` (call once per source version in a request).
    pub fn observe_converted(&self, crd: &str, from: &str, to: &str, objects: u64) {
        self.conversion_objects
            .with_label_values(&[crd, from, to])
            .inc_by(objects);
    }

    /// Counts one conversion review of CRD `crd` answered Failure
    /// (`unknown` when no loaded CRD is known for it).
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
        RuleMetrics::new(self.rules.series(&[crd, version, path, index.as_str()]))
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
mod tests;
