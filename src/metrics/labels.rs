//! The label values of the metric families: fixed enums and lists, so that
//! no caller-controlled text becomes a label value.

/// An endpoint whose requests are counted, timed and limited (its
/// `handler` label value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /validate`
    Validate,
    /// `POST /convert`
    Convert,
}

impl Endpoint {
    /// Every endpoint, in the order of `Endpoint::index`.
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

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// How an admission review ended, as counted in
/// `celhook_admission_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionOutcome {
    /// Answered `allowed: true`.
    Allowed,
    /// Answered `allowed: false`.
    Denied,
    /// No review answer: a 4xx/5xx, an overload refusal or a missed deadline.
    Error,
}

impl AdmissionOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionOutcome::Allowed => "allowed",
            AdmissionOutcome::Denied => "denied",
            AdmissionOutcome::Error => "error",
        }
    }
}

/// How a conversion review ended, as counted in
/// `celhook_conversion_requests_total`: the answer's `result.status`, or no
/// answer at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversionOutcome {
    /// Answered with `result.status: Success`.
    Success,
    /// Answered with `result.status: Failure`.
    Failure,
    /// No review answer: a 4xx/5xx, an overload refusal or a missed deadline.
    Error,
}

impl ConversionOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConversionOutcome::Success => "success",
            ConversionOutcome::Failure => "failure",
            ConversionOutcome::Error => "error",
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

/// The `reason`s of `celhook_connections_refused_total` (see `listener`).
pub const CONNECTION_REFUSED_REASONS: &[&str] = &["source_limit", "connection_limit"];

/// The `reason`s of `celhook_connections_closed_total` (see `connection`).
pub const CONNECTION_CLOSED_REASONS: &[&str] = &[
    "idle",
    "evicted",
    "write_stall",
    "header_timeout",
    "shutdown",
];

/// The `reason`s of `celhook_tls_handshake_failures_total` (see `listener`).
pub const HANDSHAKE_FAILURE_REASONS: &[&str] = &[
    "client_hello_timeout",
    "handshake_timeout",
    "client_certificate",
    "plain_http",
    "protocol",
];
