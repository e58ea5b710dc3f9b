//! `POST /convert`: ConversionReview in, ConversionReview out.

use std::panic::AssertUnwindSafe;

use actix_web::http::header::ContentType;
use actix_web::{web, HttpResponse};
use tracing::field::Empty;

use crate::error::WebhookError;
use crate::server::AppState;
use crate::{conversion, review};

/// Decodes the review, converts every object (all or nothing, checked by
/// the metadata guard) and answers Success or Failure in the review's
/// apiVersion.
#[tracing::instrument(
    name = "conversion",
    skip_all,
    fields(uid = Empty, desired = Empty, objects = Empty, result = Empty)
)]
pub async fn convert(
    state: web::Data<AppState>,
    body: Result<web::Bytes, actix_web::Error>,
) -> Result<HttpResponse, WebhookError> {
    let limit = state.max_convert_request_bytes;
    let body = body.map_err(|err| WebhookError::from_body_error(&err, limit))?;
    let decoded = review::decode_conversion(&body);
    // The parsed objects are all we need from here on: free the raw body
    // before converting, to keep peak memory near two copies of the list.
    drop(body);
    let (version, req) = decoded?;

    let span = tracing::Span::current();
    span.record("uid", req.uid.as_str());
    span.record("desired", req.desired_api_version.as_str());
    span.record("objects", req.objects.len());

    let catalog = state.catalog.load();
    let review::ConversionRequest {
        uid,
        desired_api_version,
        objects,
    } = req;
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        conversion::convert_all(&catalog, &desired_api_version, objects)
    }))
    .map_err(|_| WebhookError::Internal(anyhow::anyhow!("conversion panicked")))?;

    let encoded = match &outcome {
        Ok(objects) => {
            span.record("result", "Success");
            tracing::debug!("converted");
            review::encode_conversion(version, &uid, Ok(objects))
        }
        Err(err) => {
            span.record("result", "Failure");
            let message = err.to_string();
            tracing::info!(message = %message, "conversion failed");
            review::encode_conversion(version, &uid, Err(&message))
        }
    };
    drop(outcome);
    let out = encoded.map_err(|err| {
        WebhookError::Internal(anyhow::Error::new(err).context("encoding the answer"))
    })?;
    Ok(HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(out))
}
