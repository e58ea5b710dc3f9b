//! `POST /convert`: ConversionReview in, ConversionReview out.

use hyper::body::Bytes;
use hyper::Response;

use super::json;
use crate::error::WebhookError;
use crate::metrics::{ConversionFailure, ConversionOutcome};
use crate::server::body::Body;
use crate::server::limits::Held;
use crate::server::AppState;
use crate::{conversion, review};

/// Decodes the review, converts every object (all or nothing, checked by
/// the metadata guard) and answers Success or Failure in the review's
/// apiVersion. The answer's bytes grow `held` as they are written (one
/// budget for the body and its answer); a review whose answer does not fit,
/// or that passes its deadline, stops between two objects.
pub(super) fn answer(
    state: &AppState,
    body: &Bytes,
    mut held: Held,
) -> Result<Response<Body>, WebhookError> {
    let (version, req) = review::decode_conversion(body)?;

    let span = tracing::Span::current();
    span.record("uid", req.uid.as_str());
    span.record("desired", req.desired_api_version.as_str());
    span.record("objects", req.objects.len());

    let catalog = state.catalog.load();
    let uid = req.uid.as_str();
    let internal = |err: serde_json::Error| {
        WebhookError::Internal(anyhow::Error::new(err).context("encoding the answer"))
    };
    // Each object is parsed from the body only when converted, and
    // serialized into the answer and freed right after: peak memory stays
    // near the body plus the answer's bytes, never the whole list parsed.
    let mut writer = review::SuccessWriter::new(version, uid).map_err(internal)?;
    // Objects per (kind, source version), for the conversion metrics.
    let mut sources: Vec<((String, String), u64)> = Vec::new();
    let objects = req.parsed_objects().inspect(|o| {
        if let Ok(o) = o {
            let kind = o.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
            let from = o
                .get("apiVersion")
                .and_then(|v| v.as_str())
                .map_or("", |v| v.rsplit('/').next().unwrap_or(v));
            match sources
                .iter_mut()
                .find(|((k, f), _)| k == kind && f == from)
            {
                Some((_, n)) => *n += 1,
                None => sources.push(((kind.to_owned(), from.to_owned()), 1)),
            }
        }
    });
    let mut converted = 0usize;
    let outcome =
        conversion::convert_each(&**catalog, &req.desired_api_version, objects, |object| {
            let before = writer.len();
            writer.push(&object);
            converted += 1;
            let stop = |reason: String| conversion::ReviewFailure::Stopped { converted, reason };
            if let Err(err) = held.grow(writer.len() - before) {
                return Err(stop(format!(
                    "the answer does not fit in memory now ({err})"
                )));
            }
            if crate::cel::interrupt::expired() {
                return Err(stop("the review's deadline passed".into()));
            }
            Ok(())
        });

    let (group, to) = req
        .desired_api_version
        .rsplit_once('/')
        .unwrap_or(("", req.desired_api_version.as_str()));
    // Label values are bounded: CRDs the config loads, else `unknown`.
    let crd_of = |kind: &str| catalog.crd_of(group, kind).unwrap_or("unknown");
    let review_version = match version {
        review::ConversionReviewVersion::V1 => "v1",
        review::ConversionReviewVersion::V1Beta1 => "v1beta1",
    };
    // A review converts objects of one CRD: its first object names it.
    let crd_label = sources.first().map_or("unknown", |((k, _), _)| crd_of(k));
    match outcome {
        Ok(()) => {
            for ((kind, from), n) in &sources {
                let known = catalog.crd_of(group, kind).is_some();
                let (from, to) = if known {
                    (from.as_str(), to)
                } else {
                    ("unknown", "unknown")
                };
                state.metrics.observe_converted(crd_of(kind), from, to, *n);
            }
            state.metrics.observe_conversion_review(
                review_version,
                crd_label,
                ConversionOutcome::Success,
            );
            span.record("result", "Success");
            tracing::debug!("converted");
            let chunks = writer.finish().into_iter().map(Bytes::from).collect();
            Ok(json(Body::chunks(chunks).holding(held)))
        }
        Err(err) => {
            drop(writer);
            drop(held);
            // The API server's own names for what went wrong.
            let failure = match &err {
                conversion::ReviewFailure::Guard(conversion::GuardError::Count { .. }) => {
                    ConversionFailure::PartialResponse
                }
                conversion::ReviewFailure::Guard(_) => ConversionFailure::InvalidConvertedObject,
                _ => ConversionFailure::Call,
            };
            state.metrics.observe_conversion_failure(crd_label, failure);
            state.metrics.observe_conversion_review(
                review_version,
                crd_label,
                ConversionOutcome::Failure,
            );
            span.record("result", "Failure");
            let message = err.to_string();
            tracing::info!(message = %message, "conversion failed");
            let out = review::encode_conversion(version, uid, Err(&message)).map_err(internal)?;
            Ok(json(Body::full(out)))
        }
    }
}
