//! The HTTP routes:
//!
//! | route            | answer                                                        |
//! |------------------|---------------------------------------------------------------|
//! | `POST /validate` | AdmissionReview in, AdmissionReview out (same apiVersion)     |
//! | `POST /convert`  | ConversionReview in, ConversionReview out (same apiVersion)   |
//! | `GET /healthz`   | 200 `ok` while the process serves                             |
//! | `GET /readyz`    | 200 `ok` once the config is compiled and the listener bound, else 503 |
//! | `GET /metrics`   | Prometheus text format (also on `--metrics-listen`)           |
//!
//! Handlers only unwrap the review, call the core and wrap its answer. Review
//! routes are wrapped in [`limits::guard`] (in-flight count, latency,
//! concurrency limit, deadline) and count their own outcome.

use std::panic::AssertUnwindSafe;

use actix_web::http::header::ContentType;
use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse};
use tracing::field::Empty;

mod convert;

use super::{limits, AppState};
use crate::error::WebhookError;
use crate::metrics::{Endpoint, Outcome};
use crate::review::ReviewVersion;
use crate::{review, validation};

/// Registers the routes and the body limit on an actix app.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    // Body limits are applied by `limits::guard`, which reads the body.
    cfg.app_data(state)
        .service(
            web::resource("/validate")
                .wrap(from_fn(limits::guard))
                .route(web::post().to(validate)),
        )
        .service(
            web::resource("/convert")
                .wrap(from_fn(limits::guard))
                .route(web::post().to(convert::convert)),
        )
        .service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/readyz").route(web::get().to(readyz)))
        .service(web::resource("/metrics").route(web::get().to(metrics)));
}

/// The routes of the plain-HTTP `--metrics-listen` listener.
pub fn configure_ops(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    cfg.app_data(state)
        .service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/readyz").route(web::get().to(readyz)))
        .service(web::resource("/metrics").route(web::get().to(metrics)));
}

/// `GET /metrics`: every metric in the Prometheus text format.
pub async fn metrics(state: web::Data<AppState>) -> Result<HttpResponse, WebhookError> {
    let body = state.metrics.render().map_err(|err| {
        WebhookError::Internal(anyhow::Error::new(err).context("rendering the metrics"))
    })?;
    Ok(HttpResponse::Ok()
        .content_type(prometheus::TEXT_FORMAT)
        .body(body))
}

/// The `review_version` label of an admission review.
fn review_version_label(version: ReviewVersion) -> &'static str {
    match version {
        ReviewVersion::V1 => "v1",
        ReviewVersion::V1Beta1 => "v1beta1",
    }
}

/// `POST /validate`: decodes the AdmissionReview, runs the CRD rules, answers.
#[tracing::instrument(
    name = "admission",
    skip_all,
    fields(uid = Empty, kind = Empty, operation = Empty, namespace = Empty, object_name = Empty, outcome = Empty)
)]
pub async fn validate(
    state: web::Data<AppState>,
    // The guard read the body (or found why it could not): error.rs
    // decides the answer to an oversized or broken body, as for every other
    // error, and this handler counts it.
    body: limits::ReviewBody,
) -> Result<HttpResponse, WebhookError> {
    let result = answer_admission(&state, body);
    if let Err(err) = &result {
        tracing::Span::current().record("outcome", Outcome::Error.as_str());
        // A review we could not read has no kind; one we could is counted
        // inside `answer_admission`.
        if !matches!(err, WebhookError::Internal(_)) {
            state.metrics.observe_review(
                Endpoint::Validate,
                "unknown",
                "unknown",
                "",
                Outcome::Error,
            );
        }
    }
    result
}

fn answer_admission(
    state: &AppState,
    body: limits::ReviewBody,
) -> Result<HttpResponse, WebhookError> {
    let body = body.0?;
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(body = %String::from_utf8_lossy(&body), "admission request body");
    }
    let (version, req) = review::decode_admission(&body)?;

    let span = tracing::Span::current();
    span.record("uid", req.uid.as_str());
    span.record("kind", req.kind.kind.as_str());
    span.record("operation", req.operation.as_str());
    span.record("namespace", req.namespace.as_deref().unwrap_or(""));
    // Not `name`: JSON logs already use that key for the span's name.
    span.record("object_name", req.name.as_str());

    let catalog = state.catalog.load();
    // Only kinds the config serves become label values: the set stays
    // bounded whatever a caller sends.
    let kind_label = catalog
        .lookup(&req.kind.group, &req.kind.version, &req.kind.kind)
        .map_or("unknown", |v| v.kind.as_str());
    let observe = |outcome: Outcome| {
        span.record("outcome", outcome.as_str());
        state.metrics.observe_review(
            Endpoint::Validate,
            review_version_label(version),
            kind_label,
            req.operation.as_str(),
            outcome,
        );
    };
    // Rules run inline: evaluation is CPU-bound and short. A panic in the
    // core must cost one request a 500, not the worker and its connections.
    let res =
        match std::panic::catch_unwind(AssertUnwindSafe(|| validation::review(&catalog, &req))) {
            Ok(res) => res,
            Err(_) => {
                observe(Outcome::Error);
                return Err(WebhookError::Internal(anyhow::anyhow!(
                    "validation panicked"
                )));
            }
        };

    let out = match review::encode_admission(version, &res) {
        Ok(out) => out,
        Err(err) => {
            observe(Outcome::Error);
            return Err(WebhookError::Internal(
                anyhow::Error::new(err).context("encoding the answer"),
            ));
        }
    };
    if res.allowed {
        observe(Outcome::Allowed);
        tracing::debug!(warnings = res.warnings.len(), "allowed");
    } else {
        observe(Outcome::Denied);
        let status = res.status.as_ref();
        // The failed rules: one cause per field error, each with the rule's message.
        let failed: Vec<String> = status
            .and_then(|s| s.details.as_ref())
            .map(|d| {
                d.causes
                    .iter()
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect()
            })
            .unwrap_or_default();
        tracing::info!(
            group = %req.kind.group,
            version = %req.kind.version,
            failed_rules = ?failed,
            // Not `message`: that key is the event's own text.
            status_message = status.map_or("", |s| s.message.as_str()),
            "denied"
        );
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(body = %String::from_utf8_lossy(&out), "admission response body");
    }
    Ok(HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(out))
}

/// `GET /healthz`: the process is alive and serving.
pub async fn healthz() -> HttpResponse {
    plain(actix_web::http::StatusCode::OK, "ok\n")
}

/// `GET /readyz`: ready for traffic (config compiled, listener bound, not stopping).
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    if state.is_ready() {
        plain(actix_web::http::StatusCode::OK, "ok\n")
    } else {
        plain(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            "not ready\n",
        )
    }
}

fn plain(status: actix_web::http::StatusCode, body: &'static str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(ContentType::plaintext())
        .body(body)
}
