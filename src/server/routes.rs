//! The HTTP routes:
//!
//! | route            | answer                                                        |
//! |------------------|---------------------------------------------------------------|
//! | `POST /validate` | AdmissionReview in, AdmissionReview out (same apiVersion)     |
//! | `POST /convert`  | ConversionReview in, ConversionReview out (same apiVersion)   |
//! | `GET /healthz`   | 200 `ok` while the process serves                             |
//! | `GET /readyz`    | 200 `ok` once the config is compiled and the listener bound, else 503 |
//!
//! Handlers only unwrap the review, call the core and wrap its answer.

use std::panic::AssertUnwindSafe;

use actix_web::http::header::ContentType;
use actix_web::{web, HttpResponse};
use tracing::field::Empty;

mod convert;

use super::AppState;
use crate::error::WebhookError;
use crate::{review, validation};

/// Registers the routes and the body limit on an actix app.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    let limit = state.max_request_bytes;
    let convert_limit = state.max_convert_request_bytes;
    cfg.app_data(state)
        .app_data(web::PayloadConfig::new(limit))
        .service(web::resource("/validate").route(web::post().to(validate)))
        .service(
            web::resource("/convert")
                .app_data(web::PayloadConfig::new(convert_limit))
                .route(web::post().to(convert::convert)),
        )
        .service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/readyz").route(web::get().to(readyz)));
}

/// `POST /validate`: decodes the AdmissionReview, runs the CRD rules, answers.
#[tracing::instrument(
    name = "admission",
    skip_all,
    fields(uid = Empty, kind = Empty, operation = Empty, allowed = Empty)
)]
pub async fn validate(
    state: web::Data<AppState>,
    // Taking the extractor's Result lets error.rs decide the answer to an
    // oversized or broken body, as for every other error.
    body: Result<web::Bytes, actix_web::Error>,
) -> Result<HttpResponse, WebhookError> {
    let body = body.map_err(|err| WebhookError::from_body_error(&err, state.max_request_bytes))?;
    let (version, req) = review::decode_admission(&body)?;

    let span = tracing::Span::current();
    span.record("uid", req.uid.as_str());
    span.record("kind", req.kind.kind.as_str());
    span.record("operation", req.operation.as_str());

    let catalog = state.catalog.load();
    // Rules run inline: evaluation is CPU-bound and short. A panic in the
    // core must cost one request a 500, not the worker and its connections.
    let res = std::panic::catch_unwind(AssertUnwindSafe(|| validation::review(&catalog, &req)))
        .map_err(|_| WebhookError::Internal(anyhow::anyhow!("validation panicked")))?;

    span.record("allowed", res.allowed);
    if res.allowed {
        tracing::debug!("allowed");
    } else {
        let status = res.status.as_ref().map_or("", |s| s.message.as_str());
        tracing::info!(
            group = %req.kind.group,
            version = %req.kind.version,
            name = %req.name,
            status,
            "denied"
        );
    }

    let out = review::encode_admission(version, &res).map_err(|err| {
        WebhookError::Internal(anyhow::Error::new(err).context("encoding the answer"))
    })?;
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
