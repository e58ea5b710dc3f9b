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
/// A review in the API server's order is converted as it is read
/// ([`review::OnePass`]); any other, and one that pass finds anything wrong
/// with before its answer is sent, is decoded again in two passes (the
/// objects located and checked first), which answer as they always did.
///
/// A small answer is returned whole. A large one is sent through `reply`
/// as a stream once it passes [`STREAM_AFTER`] bytes (`Ok(None)` here):
/// a failure after that ends the streamed answer as a Failure (the objects
/// already sent in it are ignored by the API server, which reads the
/// status first), a review found malformed after that too; a caller that
/// stops reading until the deadline gets an aborted answer.
pub(super) fn answer(
    state: &AppState,
    body: &Bytes,
    held: Held,
    reply: &mut Reply,
) -> Result<Option<Response<Body>>, WebhookError> {
    let held = match review::OnePass::start(body) {
        Some(one) => {
            let (version, uid) = (one.version(), one.uid().to_owned());
            let desired = one.desired_api_version().to_owned();
            let objects = Objects::<std::iter::Empty<_>>::One(one);
            match respond(state, body, (version, &uid, &desired), objects, held, reply)? {
                Outcome::Answered(answer) => return Ok(answer),
                Outcome::Again(held) => held,
            }
        }
        None => held,
    };
    let (version, req) = review::decode_conversion(body)?;
    let objects = Objects::Two(req.parsed_objects(), req.objects.len());
    let head = (version, req.uid.as_str(), req.desired_api_version.as_str());
    match respond(state, body, head, objects, held, reply)? {
        Outcome::Answered(answer) => Ok(answer),
        // Two passes checked the whole review before converting.
        Outcome::Again(_) => Err(WebhookError::Internal(anyhow::anyhow!(
            "a review decoded in two passes was found malformed after"
        ))),
    }
}

/// A review's objects, as each is to be converted.
enum Objects<'b, I> {
    /// Read as the review is (see [`review::OnePass`]).
    One(review::OnePass<'b>),
    /// Located by the first of two passes, parsed one by one; how many.
    Two(I, usize),
}

impl<I: Iterator<Item = Result<celhook_json::Value, String>>> Objects<'_, I> {
    fn next(&mut self) -> Option<Result<celhook_json::Value, String>> {
        match self {
            Objects::One(one) => one.next(),
            Objects::Two(objects, _) => objects.next(),
        }
    }

    /// After the conversion: the number of objects, when the review is
    /// whole and well formed (one pass reads the rest of the body now).
    fn finish(self) -> Option<usize> {
        match self {
            Objects::One(one) => one.finish(),
            Objects::Two(_, n) => Some(n),
        }
    }
}

/// What [`respond`] did.
enum Outcome {
    Answered(Option<Response<Body>>),
    /// One pass found the review not as expected before anything was sent:
    /// decode it again, holding what was held before.
    Again(Held),
}

/// Converts `objects` of the review whose apiVersion, uid and
/// desiredAPIVersion are `head`, and answers.
fn respond<I: Iterator<Item = Result<celhook_json::Value, String>>>(
    state: &AppState,
    body: &Bytes,
    (version, uid, desired): (review::ConversionReviewVersion, &str, &str),
    mut objects: Objects<'_, I>,
    held: Held,
    reply: &mut Reply,
) -> Result<Outcome, WebhookError> {
    let span = tracing::Span::current();
    span.record("uid", uid);
    span.record("desired", desired);

    let catalog = state.catalog.load();
    let internal = |err: serde_json::Error| {
        WebhookError::Internal(anyhow::Error::new(err).context("encoding the answer"))
    };
    let held_before = held.bytes();
    // Each object is parsed from the body only when converted, and
    // serialized into the answer and freed right after: peak memory stays
    // near the body plus the answer's bytes, never the whole list parsed.
    let mut writer = review::SuccessWriter::new(version, uid).map_err(internal)?;
    // Objects per (kind, source version), for the conversion metrics.
    let mut sources: Vec<((String, String), u64)> = Vec::new();
    let each = std::iter::from_fn(|| objects.next()).inspect(|o| {
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
    let mut outcome = conversion::convert_each(&**catalog, desired, each, |object| {
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
    match objects.finish() {
        Some(n) => {
            span.record("objects", n);
        }
        None => match (held, &stream) {
            (Some(mut held), None) => {
                held.shrink_to(held_before);
                return Ok(Outcome::Again(held));
            }
            // Too late to answer 400: the answer ends as a Failure that
            // says what two passes would have refused.
            _ => {
                let reason = match review::decode_conversion(body) {
                    Err(e) => e.to_string(),
                    Ok(_) => "the review could not be read in one pass".to_owned(),
                };
                outcome = Err(conversion::ReviewFailure::Malformed(reason));
                held = None;
            }
        },
    }
    let (group, to) = desired.rsplit_once('/').unwrap_or(("", desired));
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
                return Ok(Outcome::Answered(None));
            }
            let chunks = writer.finish().into_iter().map(Bytes::from).collect();
            let mut body = Body::chunks(chunks);
            // Not streamed: the budget was never handed to a stream.
            if let Some(held) = held {
                body = body.holding(held);
            }
            Ok(Outcome::Answered(Some(json(body))))
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
                return Ok(Outcome::Answered(None));
            }
            drop(writer);
            let out = review::encode_conversion(version, uid, Err(&message)).map_err(internal)?;
            Ok(Outcome::Answered(Some(json(Body::full(out)))))
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
