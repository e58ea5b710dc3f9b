//! `POST /convert`: ConversionReview in, ConversionReview out.

use std::time::Instant;

use hyper::body::Bytes;
use hyper::Response;
use tokio::sync::mpsc;

use super::{json, Reply};
use crate::error::WebhookError;
use crate::metrics::{ConversionFailure, ConversionOutcome};
use crate::review::{AHEAD, STREAM_AFTER};
use crate::server::body::{Body, Piece};
use crate::server::limits::Held;
use crate::server::AppState;
use crate::{conversion, review};

/// Decodes the review, converts every object (all or nothing, checked by
/// the metadata guard) and answers Success or Failure in the review's
/// apiVersion. The answer's bytes grow `held` as they are written (one
/// budget for the body and its answer); a review whose answer does not fit,
/// or that passes its deadline, stops between two objects.
///
/// A small answer is returned whole. A large one is sent through `reply`
/// as a stream once it passes [`STREAM_AFTER`] bytes (`Ok(None)` here):
/// a failure after that ends the streamed answer as a Failure (the objects
/// already sent in it are ignored by the API server, which reads the
/// status first); a caller that stops reading until the deadline gets an
/// aborted answer.
pub(super) fn answer(
    state: &AppState,
    body: &Bytes,
    held: Held,
    reply: &mut Reply,
) -> Result<Option<Response<Body>>, WebhookError> {
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
    let mut held = Some(held);
    let mut stream: Option<Stream> = None;
    let outcome =
        conversion::convert_each(&**catalog, &req.desired_api_version, objects, |object| {
            let before = writer.len();
            writer.push(&object);
            converted += 1;
            let stop = |reason: String| conversion::ReviewFailure::Stopped { converted, reason };
            if let Some(held) = &mut held {
                if let Err(err) = held.grow(writer.len() - before) {
                    return Err(stop(format!(
                        "the answer does not fit in memory now ({err})"
                    )));
                }
            }
            if crate::cel::interrupt::expired() {
                return Err(stop("the review's deadline passed".into()));
            }
            if let Some(stream) = &stream {
                return stream.send(writer.take_ready(), false).map_err(stop);
            }
            if writer.len() >= STREAM_AFTER {
                if let Some(held) = held.take() {
                    let started = Stream::start(writer.take_ready(), held, reply);
                    stream = Some(started.map_err(stop)?);
                }
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
            if let Some(stream) = stream {
                // A caller gone at the end has an aborted answer.
                let _ = stream.send(writer.finish(), true);
                return Ok(None);
            }
            let chunks = writer.finish().into_iter().map(Bytes::from).collect();
            let mut body = Body::chunks(chunks);
            // Not streamed: the budget was never handed to a stream.
            if let Some(held) = held {
                body = body.holding(held);
            }
            Ok(Some(json(body)))
        }
        Err(err) => {
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
            if let Some(stream) = stream {
                let _ = stream.send(writer.fail(&message), true);
                return Ok(None);
            }
            drop(writer);
            let out = review::encode_conversion(version, uid, Err(&message)).map_err(internal)?;
            Ok(Some(json(Body::full(out))))
        }
    }
}

/// The channel of a streamed answer, with the deadline its sends wait until.
struct Stream {
    chunks: mpsc::Sender<Piece>,
    deadline: Instant,
}

impl Stream {
    /// Answers with a streamed body of `first` and what follows, holding
    /// `held` until it is sent.
    fn start(first: Vec<Vec<u8>>, held: Held, reply: &mut Reply) -> Result<Self, String> {
        let deadline = reply.deadline;
        let (chunks, rest) = mpsc::channel(AHEAD);
        let first = first.into_iter().map(Bytes::from).collect();
        if !reply.send(Ok(json(Body::streaming(first, rest).holding(held)))) {
            return Err(GONE.into());
        }
        Ok(Self { chunks, deadline })
    }

    /// Sends `chunks`, the last of the answer when `last`; waits while the
    /// caller is `AHEAD` chunks behind, until the deadline.
    fn send(&self, mut chunks: Vec<Vec<u8>>, last: bool) -> Result<(), String> {
        if last && chunks.is_empty() {
            chunks.push(Vec::new());
        }
        let n = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let piece = (Bytes::from(chunk), last && i + 1 == n);
            let wait = self.deadline.saturating_duration_since(Instant::now());
            let sent =
                tokio::runtime::Handle::current().block_on(self.chunks.send_timeout(piece, wait));
            if sent.is_err() {
                return Err(GONE.into());
            }
        }
        Ok(())
    }
}

/// Why a streamed answer stopped early.
const GONE: &str = "the caller stopped reading the answer";
