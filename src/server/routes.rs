//! The HTTP routes:
//!
//! | route            | answer                                                        |
//! |------------------|---------------------------------------------------------------|
//! | `POST /validate` | AdmissionReview in, AdmissionReview out (same apiVersion)     |
//! | `POST /validate/rules`, `/validate/policies` | the same, checking only the schemas' rules and rules documents, or only the ValidatingAdmissionPolicies (see `admission::Scope`) |
//! | `POST /convert`  | ConversionReview in, ConversionReview out (same apiVersion)   |
//! | `GET /healthz`   | 200 `ok` while the process serves                             |
//! | `GET /readyz`    | 200 `ok` once the config is compiled and the listener bound, else 503 |
//! | `GET /metrics`   | Prometheus text format (also on `--metrics-listen`)           |
//!
//! A review goes straight through [`review`]: read the body within the
//! limits (`limits`), wait for a slot, then decode, evaluate and encode:
//! an admission review first on its I/O thread under a budget of a
//! millisecond (`--inline-budget`; in a round with the reviews ready at the
//! same moment while those threads are saturated, `batch`), else on a
//! blocking thread under the request's deadline, so that no rule or
//! conversion holds an I/O thread and a late one is answered 504 on time.

use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Version};
use tracing::field::Empty;

mod convert;

use super::activity::Activity;
use super::body::Body;
use super::limits::{self, BodyRules, Held};
use super::AppState;
use crate::admission::Scope;
use crate::error::WebhookError;
use crate::metrics::{AdmissionOutcome, Endpoint};
use crate::review::ReviewVersion;
use crate::{admission, review, telemetry};

/// Which routes a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routes {
    /// The HTTPS listener: reviews and the operational routes.
    All,
    /// The plain-HTTP `--metrics-listen` listener: operational routes only.
    Ops,
}

/// Answers one request of a connection.
pub async fn handle(
    state: Arc<AppState>,
    activity: Arc<Activity>,
    routes: Routes,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let in_flight = activity.request();
    let http1 = req.version() < Version::HTTP_2;
    let mut res = match (req.method(), req.uri().path(), routes) {
        (&Method::POST, "/validate", Routes::All) => {
            review(&state, &activity, Endpoint::Validate, Scope::All, req).await
        }
        (&Method::POST, "/validate/rules", Routes::All) => {
            review(&state, &activity, Endpoint::Validate, Scope::Rules, req).await
        }
        (&Method::POST, "/validate/policies", Routes::All) => {
            review(&state, &activity, Endpoint::Validate, Scope::Policies, req).await
        }
        (&Method::POST, "/convert", Routes::All) => {
            review(&state, &activity, Endpoint::Convert, Scope::All, req).await
        }
        (&Method::GET, "/healthz", _) => plain(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz", _) => readyz(&state),
        (&Method::GET, "/metrics", _) => metrics(&state),
        (_, "/validate" | "/validate/rules" | "/validate/policies" | "/convert", Routes::All)
        | (_, "/healthz" | "/readyz" | "/metrics", _) => {
            plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        _ => plain(StatusCode::NOT_FOUND, "not found\n"),
    };
    // While stopping, HTTP/1.1 clients are told to take their next request
    // elsewhere (HTTP/2 connections get a GOAWAY from `connection`).
    if http1 && state.is_draining() {
        res.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let (parts, body) = res.into_parts();
    Ok(Response::from_parts(
        parts,
        body.sent_as(in_flight.into_sending()),
    ))
}

/// A review request: body, slot, evaluation, each within the deadline.
async fn review(
    state: &Arc<AppState>,
    activity: &Activity,
    endpoint: Endpoint,
    scope: Scope,
    req: Request<Incoming>,
) -> Response<Body> {
    let timer = state.metrics.start(endpoint);
    let budget = limits::deadline(
        req.uri().query().unwrap_or(""),
        state.limits.request_timeout,
    );
    let deadline = tokio::time::Instant::now() + budget;
    match read_and_run(state, activity, (endpoint, scope), req, budget, deadline).await {
        Ok(res) => res.map(|body| body.timed(timer)),
        Err(err) => {
            match &err {
                WebhookError::Overloaded
                | WebhookError::BodyBudgetExhausted
                | WebhookError::ConnectionBudgetExhausted => {
                    state.metrics.observe_overloaded(endpoint)
                }
                WebhookError::BodyTimeout { .. }
                | WebhookError::BodyIdle { .. }
                | WebhookError::DeadlineExceeded { .. } => {
                    state.metrics.observe_deadline_exceeded(endpoint)
                }
                // Every other request without a review answer (400, 413,
                // 500 with a panic or an encoding failure among them).
                _ => state.metrics.observe_unanswered(endpoint),
            }
            error_response(&err)
        }
    }
}

/// The steps of a review (module docs): body, slot, evaluation.
async fn read_and_run(
    state: &Arc<AppState>,
    activity: &Activity,
    (endpoint, checks): (Endpoint, Scope),
    req: Request<Incoming>,
    budget: std::time::Duration,
    deadline: tokio::time::Instant,
) -> Result<Response<Body>, WebhookError> {
    let (body, held) = read(state, activity, endpoint, req, budget, deadline).await?;
    let Ok(Ok(permit)) =
        tokio::time::timeout_at(deadline, state.limits.concurrency.clone().acquire_owned()).await
    else {
        return Err(WebhookError::Overloaded);
    };
    let span = review_span(endpoint);
    // A zero `--inline-budget`: every review goes to the pool at once.
    if endpoint == Endpoint::Validate && !state.limits.inline_budget.is_zero() {
        let answer = if state.batch.in_round() {
            state.metrics.observe_review_in_round();
            let inline = {
                let (state, body, span) = (state.clone(), body.clone(), span.clone());
                move || try_inline(&state, checks, &body, &span, deadline)
            };
            state.batch.run(inline).await.flatten()
        } else {
            try_inline(state, checks, &body, &span, deadline)
        };
        if let Some(answer) = answer {
            return answer;
        }
    }
    let task_state = state.clone();
    // A conversion stops a little before the deadline, so that the caller
    // gets a Failure naming the reason rather than a bare 504.
    let std_deadline = match endpoint {
        Endpoint::Validate => deadline.into_std(),
        Endpoint::Convert => deadline.into_std() - budget / 20,
    };
    let (reply, answered) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let scope = crate::cel::interrupt::enter(std_deadline);
        let mut reply = Reply {
            answer: Some(reply),
            deadline: std_deadline,
        };
        let answer = span.in_scope(|| match endpoint {
            Endpoint::Validate => {
                guarded(endpoint, || answer_admission(&task_state, checks, &body)).map(Some)
            }
            Endpoint::Convert => guarded(endpoint, || {
                convert::answer(&task_state, &body, held, &mut reply)
            }),
        });
        let answer = match answer {
            _ if scope.expired() && endpoint == Endpoint::Validate => {
                Err(WebhookError::DeadlineExceeded { budget })
            }
            Ok(Some(answer)) => Ok(answer),
            // Answered as a stream, which has ended.
            Ok(None) => return,
            Err(err) => Err(err),
        };
        reply.send(answer);
    });
    match tokio::time::timeout_at(deadline, answered).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(WebhookError::Internal(anyhow::anyhow!(
            "the evaluation task ended without an answer"
        ))),
        // The task stops at its next check of the deadline and frees its slot.
        Err(_) => Err(WebhookError::DeadlineExceeded { budget }),
    }
}

/// How the answer leaves the blocking task for the connection: once, whole
/// or as the start of a streamed body (a large conversion answer).
pub(super) struct Reply {
    answer: Option<tokio::sync::oneshot::Sender<Result<Response<Body>, WebhookError>>>,
    /// When the work for this request stops.
    pub(super) deadline: std::time::Instant,
}

impl Reply {
    /// Sends `answer` unless one is sent already; false when the request
    /// is gone (answered 504, or its connection closed).
    pub(super) fn send(&mut self, answer: Result<Response<Body>, WebhookError>) -> bool {
        match self.answer.take() {
            Some(reply) => reply.send(answer).is_ok(),
            None => false,
        }
    }
}

/// Reads the body within the endpoint's limits; the bytes stay held (with
/// the head's) while the review is answered.
async fn read(
    state: &AppState,
    activity: &Activity,
    endpoint: Endpoint,
    req: Request<Incoming>,
    budget: std::time::Duration,
    deadline: tokio::time::Instant,
) -> Result<(Bytes, Held), WebhookError> {
    let declared = limits::content_length(req.headers())?;
    let (endpoint_budget, limit) = match endpoint {
        Endpoint::Validate => (&state.limits.validate_bytes, state.max_request_bytes),
        Endpoint::Convert => (&state.limits.convert_bytes, state.max_convert_request_bytes),
    };
    let mut held = Held::new(
        endpoint_budget,
        activity.held[endpoint as usize].clone(),
        state.metrics.body_bytes_in_flight().clone(),
    );
    // The head is held too: over HTTP/2 a client may open many streams
    // with large header lists and never send their bodies.
    held.grow(head_bytes(&req))?;
    let rules = BodyRules {
        limit,
        idle: state.limits.body_idle_timeout,
        deadline,
        budget,
    };
    let body = limits::read_body(req.into_body(), declared, rules, &mut held).await?;
    Ok((body, held))
}

/// Most reviews take tens of microseconds: a first attempt runs on an I/O
/// thread (right here, or in a round of `batch`), under a budget of a
/// millisecond (`--inline-budget`; none at all when it is zero), sparing
/// the hand-over to another thread.
/// One that needs longer, or compiles a pattern at run time, is abandoned
/// (`None`) and runs again on the blocking pool under the whole deadline, so
/// no review holds an I/O thread for long.
fn try_inline(
    state: &AppState,
    checks: Scope,
    body: &Bytes,
    span: &tracing::Span,
    deadline: tokio::time::Instant,
) -> Option<Result<Response<Body>, WebhookError>> {
    let inline_deadline = (tokio::time::Instant::now() + state.limits.inline_budget).min(deadline);
    let scope = crate::cel::interrupt::enter_inline(inline_deadline.into_std());
    let answer =
        span.in_scope(|| guarded(Endpoint::Validate, || answer_admission(state, checks, body)));
    if scope.expired() {
        state.metrics.observe_inline_retry();
        return None;
    }
    Some(answer)
}

/// The span of one review, its fields recorded once it is decoded.
fn review_span(endpoint: Endpoint) -> tracing::Span {
    match endpoint {
        Endpoint::Validate => tracing::info_span!(
            "admission",
            uid = Empty,
            user = Empty,
            kind = Empty,
            operation = Empty,
            namespace = Empty,
            object_name = Empty,
            outcome = Empty
        ),
        Endpoint::Convert => tracing::info_span!(
            "conversion",
            uid = Empty,
            desired = Empty,
            objects = Empty,
            result = Empty
        ),
    }
}

/// Runs `answer` (decode, evaluate, encode) so that a panic in the core
/// costs this request a 500, not the thread and its connections.
fn guarded<T>(
    endpoint: Endpoint,
    answer: impl FnOnce() -> Result<T, WebhookError>,
) -> Result<T, WebhookError> {
    std::panic::catch_unwind(AssertUnwindSafe(answer)).unwrap_or_else(|_| {
        Err(WebhookError::Internal(anyhow::anyhow!(
            "{} panicked",
            endpoint.as_str()
        )))
    })
}

/// The size of a request's head as HTTP/2 counts a header list (32 bytes
/// of overhead per field).
fn head_bytes(req: &Request<Incoming>) -> usize {
    let fields: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 32)
        .sum();
    let uri = req.uri();
    let target = uri.path().len() + uri.query().map_or(0, |q| q.len() + 1);
    fields + target + 32
}

/// The review's answer as a 200 with a JSON body.
fn json(body: Body) -> Response<Body> {
    let mut res = Response::new(body);
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// The answer to an error (see `error.rs`).
pub fn error_response(err: &WebhookError) -> Response<Body> {
    let answer = err.answer();
    let mut res = plain_owned(answer.status, answer.body);
    if answer.retry_after {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    if answer.close {
        res.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    res
}

/// The `review_version` label of an admission review.
fn review_version_label(version: ReviewVersion) -> &'static str {
    match version {
        ReviewVersion::V1 => "v1",
        ReviewVersion::V1Beta1 => "v1beta1",
    }
}

/// Decodes an AdmissionReview, runs the checks of `scope` (schema rules,
/// policies), encodes the answer;
/// counts the outcome once the kind is known.
fn answer_admission(
    state: &AppState,
    scope: Scope,
    body: &Bytes,
) -> Result<Response<Body>, WebhookError> {
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(body = %String::from_utf8_lossy(body), "admission request body");
    }
    let catalog = state.catalog.load();
    let policy = admission::Policy {
        scope,
        ..state.policy
    };
    let (version, req) = admission::decode(&catalog, &policy, body)?;

    let span = tracing::Span::current();
    record_request(&span, &req);

    let verdict = admission::review(&catalog, &req, &policy);
    let res = &verdict.response;
    // Only CRDs and kinds the config serves become label values: the set
    // stays bounded whatever a caller sends.
    let crd_label = verdict.label;
    let observe = |outcome: AdmissionOutcome| {
        span.record("outcome", outcome.as_str());
        state.metrics.observe_admission(
            review_version_label(version),
            crd_label,
            req.operation.as_str(),
            outcome,
        );
    };
    if crate::cel::interrupt::expired() {
        // Not counted here: an inline attempt runs again on the pool, and
        // a late answer is counted where the 504 is made.
        return Err(WebhookError::DeadlineExceeded {
            budget: state.limits.request_timeout,
        });
    }
    let out = match review::encode_admission(version, res) {
        Ok(out) => out,
        Err(err) => {
            // Counted by `review` with the other unanswered requests.
            span.record("outcome", AdmissionOutcome::Error.as_str());
            return Err(WebhookError::Internal(
                anyhow::Error::new(err).context("encoding the answer"),
            ));
        }
    };
    // After the deadline check: an inline attempt that ran out of time is
    // answered again on the pool, and must not count its decisions twice.
    observe_rules(state, &req, &verdict);
    observe(if res.allowed {
        AdmissionOutcome::Allowed
    } else {
        AdmissionOutcome::Denied
    });
    log_verdict(&req, res);
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(body = %String::from_utf8_lossy(&out), "admission response body");
    }
    Ok(json(Body::full(out)))
}

/// Counts and logs what the rules documents, the ValidatingAdmissionPolicies
/// and the unknown-version policy did: a failed document at info (at warn for Audit, whose whole
/// point is the record), an unknown version at warn.
fn observe_rules(
    state: &AppState,
    req: &review::AdmissionRequest,
    verdict: &admission::Verdict<'_>,
) {
    if verdict.unknown_version {
        let action = state.policy.unknown_versions.as_str();
        state.metrics.observe_unknown_version(verdict.label, action);
        tracing::warn!(
            group = %req.kind.group,
            version = %req.kind.version,
            action,
            "no schema of this version of a known kind: its rules were not checked"
        );
    }
    crate::metrics::RuleObservation::record_all(&verdict.rules_observed);
    for d in &verdict.policies {
        state
            .metrics
            .observe_policy_decision(&d.policy.name, &d.binding, d.action);
        if d.action == "audit" {
            tracing::warn!(policy = %d.policy.name, binding = %d.binding, action = d.action, "validating admission policy failed (audit)");
        } else {
            tracing::info!(policy = %d.policy.name, binding = %d.binding, action = d.action, "validating admission policy failed");
        }
    }
    for doc in &verdict.documents {
        let actions = doc.actions.label();
        state.metrics.observe_document_failure(&doc.name, actions);
        if doc.actions.audit {
            tracing::warn!(document = %doc.name, actions, "rules document failed (audit)");
        } else {
            tracing::info!(document = %doc.name, actions, "rules document failed");
        }
    }
}

/// The request's identity on its span (and so on every log line of it),
/// in one record: each `Span::record` is a lookup in the subscriber's span
/// registry, its filter and its field formatter, seven times per review
/// otherwise. `record_all` is hidden from tracing's docs only because its
/// own macros are its users.
fn record_request(span: &tracing::Span, req: &review::AdmissionRequest) {
    let Some(meta) = span.metadata() else {
        return;
    };
    let fields = meta.fields();
    let field = |name| fields.field(name);
    let (Some(uid), Some(user), Some(kind), Some(operation), Some(namespace), Some(object)) = (
        field("uid"),
        field("user"),
        field("kind"),
        field("operation"),
        field("namespace"),
        // Not `name`: JSON logs already use that key for the span's name.
        field("object_name"),
    ) else {
        return;
    };
    let namespace_value = req.namespace.as_deref().unwrap_or("");
    let values: [(&tracing::field::Field, Option<&dyn tracing::Value>); 6] = [
        (&uid, Some(&req.uid.as_str())),
        (&user, Some(&req.user.as_str())),
        (&kind, Some(&req.kind.kind.as_str())),
        (&operation, Some(&req.operation.as_str())),
        (&namespace, Some(&namespace_value)),
        (&object, Some(&req.name.as_str())),
    ];
    span.record_all(&fields.value_set(&values));
}

/// A denial is logged at info with the failed rules (the request's user,
/// kind, name, namespace and operation are on its span); an admission at
/// debug.
fn log_verdict(req: &review::AdmissionRequest, res: &review::AdmissionResponse) {
    if res.allowed {
        tracing::debug!(warnings = res.warnings.len(), "allowed");
        return;
    }
    let status = res.status.as_ref();
    // The failed rules: one cause per field error, each with the rule's message.
    let failed: Vec<FailedRule<'_>> = status
        .and_then(|s| s.details.as_ref())
        .map(|d| {
            d.causes
                .iter()
                .map(|c| FailedRule {
                    field: &c.field,
                    message: &c.message,
                })
                .collect()
        })
        .unwrap_or_default();
    tracing::info!(
        group = %req.kind.group,
        version = %req.kind.version,
        failed_rules = ?telemetry::Json(&failed),
        // Not `message`: that key is the event's own text.
        status_message = status.map_or("", |s| s.message.as_str()),
        "denied"
    );
}

/// One failed rule in the denial log.
#[derive(serde::Serialize)]
struct FailedRule<'a> {
    field: &'a str,
    message: &'a str,
}

/// `GET /metrics`: every metric in the Prometheus text format.
fn metrics(state: &AppState) -> Response<Body> {
    state.batch.refresh_saturation();
    match state.metrics.render() {
        Ok(body) => {
            let mut res = Response::new(Body::full(body));
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(prometheus::TEXT_FORMAT),
            );
            res
        }
        Err(err) => error_response(&WebhookError::Internal(
            anyhow::Error::new(err).context("rendering the metrics"),
        )),
    }
}

/// `GET /readyz`: ready for traffic (config compiled, listener bound, not stopping).
fn readyz(state: &AppState) -> Response<Body> {
    if state.is_ready() {
        plain(StatusCode::OK, "ok\n")
    } else {
        plain(StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response<Body> {
    plain_owned(status, body.to_owned())
}

fn plain_owned(status: StatusCode, body: String) -> Response<Body> {
    let mut res = Response::new(Body::full(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}
