//! Per-request guard of the review endpoints (`/validate`, `/convert`): counts
//! the request in flight and times it, reads its body within a budget of
//! bytes, bounds how many run at once, and answers before the caller's
//! deadline.
//!
//! Wrap a review route with `.wrap(from_fn(limits::guard))`; the endpoint is
//! found from the path ([`Endpoint::from_path`]), so `/convert` needs
//! nothing more than the wrap. The handler takes the body with the
//! [`ReviewBody`] extractor and still counts its own outcome
//! (`Metrics::observe_review`); this guard counts only the requests it
//! refuses itself, so nothing is counted twice.
//!
//! The order matters under abuse:
//! 1. the body's bytes are reserved from `--max-in-flight-bytes` before it
//!    is read (its Content-Length, or the endpoint's limit when it has
//!    none); a body that does not fit gets 503 with `Retry-After` at once
//!    instead of growing memory without bound. It does not wait for room:
//!    over HTTP/2 an unread body holds its connection's flow-control
//!    window, so waiting bodies would starve the reserved ones sharing
//!    their connection (measured: 631 of 640 4 MiB reviews timed out);
//! 2. the body is read within the deadline, holding no worker slot: a
//!    client trickling or stalling its body costs a connection and its
//!    reservation until the deadline, then gets 408, and never delays the
//!    requests behind it;
//! 3. only then does the request wait for one of `--max-concurrent-requests`
//!    slots and run.

use std::future::{poll_fn, ready, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes, BytesMut};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use futures_core::Stream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AppState;
use crate::error::WebhookError;
use crate::metrics::Endpoint;

/// The guard (see the module docs).
pub async fn guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let (Some(endpoint), Some(state)) = (
        Endpoint::from_path(req.path()),
        req.app_data::<web::Data<AppState>>().cloned(),
    ) else {
        return next.call(req).await;
    };
    let _in_flight = state.metrics.start(endpoint);
    let budget = deadline(req.query_string(), state.limits.request_timeout);
    let deadline = tokio::time::Instant::now() + budget;
    let limit = match endpoint {
        Endpoint::Convert => state.max_convert_request_bytes,
        _ => state.max_request_bytes,
    };

    // 1. Reserve the body's bytes; waiting counts against the deadline.
    let declared = match content_length(&req) {
        Ok(n) => n,
        Err(err) => return Err(err.into()),
    };
    if declared.is_some_and(|n| n > limit) {
        // Refused unread: nothing of it is buffered.
        req.extensions_mut()
            .insert(ReviewBody(Err(WebhookError::PayloadTooLarge { limit })));
        return next.call(req).await;
    }
    let Some(reservation) = state
        .limits
        .body_bytes
        .try_reserve(declared.unwrap_or(limit))
    else {
        state.metrics.observe_overloaded(endpoint);
        return Err(WebhookError::BodyBudgetExhausted.into());
    };
    let _reservation = BodyGauge::new(reservation, &state);

    // 2. Read the body, holding no worker slot.
    let mut payload = req.take_payload();
    let body = match tokio::time::timeout_at(
        deadline,
        read_body(&mut payload, limit, declared.unwrap_or(0)),
    )
    .await
    {
        Ok(body) => body,
        Err(_) => {
            state.metrics.observe_deadline_exceeded(endpoint);
            return Err(WebhookError::BodyTimeout { budget }.into());
        }
    };
    req.extensions_mut().insert(ReviewBody(body));

    // 3. Wait for a slot, then run.
    let Ok(permit) =
        tokio::time::timeout_at(deadline, state.limits.concurrency.clone().acquire_owned()).await
    else {
        state.metrics.observe_overloaded(endpoint);
        return Err(WebhookError::Overloaded.into());
    };
    // `acquire_owned` fails only on a closed semaphore, which we never close.
    let _permit = permit.map_err(|_| WebhookError::Overloaded)?;

    // Rules themselves are bounded by their CEL cost limits; this catches
    // anything else that would make the caller give up first.
    match tokio::time::timeout_at(deadline, next.call(req)).await {
        Ok(res) => res,
        Err(_) => {
            state.metrics.observe_deadline_exceeded(endpoint);
            Err(WebhookError::DeadlineExceeded { budget }.into())
        }
    }
}

/// The request's Content-Length, if it sent one.
fn content_length(req: &ServiceRequest) -> Result<Option<usize>, WebhookError> {
    match req.headers().get(header::CONTENT_LENGTH) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(Some)
            .ok_or_else(|| WebhookError::Body("invalid Content-Length header".into())),
    }
}

/// Reads the whole body, refusing it once it passes `limit`. A body that
/// arrives in one chunk (a small review in one HTTP/2 DATA frame, say) is
/// kept as it is; only a body in several chunks is copied into one buffer.
async fn read_body(
    payload: &mut Payload,
    limit: usize,
    declared: usize,
) -> Result<Bytes, WebhookError> {
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    let mut len = 0usize;
    while let Some(chunk) = poll_fn(|cx| Pin::new(&mut *payload).poll_next(cx)).await {
        let chunk = chunk.map_err(|err| match err {
            PayloadError::Overflow => WebhookError::PayloadTooLarge { limit },
            other => WebhookError::Body(other.to_string()),
        })?;
        len += chunk.len();
        if len > limit {
            return Err(WebhookError::PayloadTooLarge { limit });
        }
        match first.take() {
            None if buf.is_empty() => first = Some(chunk),
            earlier => {
                if let Some(earlier) = earlier {
                    buf.reserve(declared.min(limit).max(len));
                    buf.extend_from_slice(&earlier);
                }
                buf.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| buf.freeze()))
}

/// The request body as the guard read it (or why it could not), for the
/// review handlers. Handlers take the `Result` so that error.rs decides the
/// answer to a broken or oversized body, and they count it as an outcome.
#[derive(Debug)]
pub struct ReviewBody(pub Result<Bytes, WebhookError>);

impl FromRequest for ReviewBody {
    type Error = WebhookError;
    type Future = Ready<Result<Self, WebhookError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(req.extensions_mut().remove::<ReviewBody>().ok_or_else(|| {
            WebhookError::Internal(anyhow::anyhow!(
                "the review route is not wrapped in limits::guard"
            ))
        }))
    }
}

/// The budget of body bytes held by requests in flight
/// (`--max-in-flight-bytes`), in KiB permits.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    kib: Arc<Semaphore>,
    total_kib: u32,
}

impl BodyBudget {
    /// A budget of `bytes` (at least 1 KiB).
    pub fn new(bytes: usize) -> Self {
        let total_kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u32);
        Self {
            kib: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }

    /// Holds `bytes` until the permit is dropped, if they are free now. A
    /// request larger than the whole budget needs all of it, so it still
    /// runs, alone.
    pub fn try_reserve(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.total_kib);
        self.kib.clone().try_acquire_many_owned(kib).ok()
    }

    /// KiB not reserved right now.
    pub fn available_kib(&self) -> usize {
        self.kib.available_permits()
    }
}

/// A body reservation that shows in `celhook_request_body_bytes_in_flight`
/// while held.
struct BodyGauge {
    permit: OwnedSemaphorePermit,
    gauge: prometheus::IntGauge,
}

impl BodyGauge {
    fn new(permit: OwnedSemaphorePermit, state: &AppState) -> Self {
        let gauge = state.metrics.body_bytes_in_flight().clone();
        gauge.add(i64::from(permit.num_permits() as u32) * 1024);
        Self { permit, gauge }
    }
}

impl Drop for BodyGauge {
    fn drop(&mut self) {
        self.gauge
            .sub(i64::from(self.permit.num_permits() as u32) * 1024);
    }
}

/// How long a request may take: the caller's `?timeout=` (what the API
/// server sends on admission calls) less a tenth, so the answer arrives
/// before the caller gives up, and never more than `cap`
/// (`--request-timeout`; conversion calls carry no timeout and the API
/// server gives up after 30 s).
pub fn deadline(query: &str, cap: Duration) -> Duration {
    let requested = query
        .split('&')
        .filter_map(|pair| pair.strip_prefix("timeout="))
        .find_map(parse_go_duration);
    match requested {
        Some(t) => (t - t / 10).min(cap),
        None => cap,
    }
}

/// Parses a Go `time.Duration` string as the API server writes it
/// (`10s`, `1.5s`, `500ms`, `1m30s`). Hand-written: the format is small and
/// the duration crates each accept a different dialect (spaces, other
/// unit names) that would need the same checking anyway.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_durations_the_api_server_sends() {
        let s = Duration::from_secs;
        assert_eq!(parse_go_duration("10s"), Some(s(10)));
        assert_eq!(parse_go_duration("30s"), Some(s(30)));
        assert_eq!(parse_go_duration("1m30s"), Some(s(90)));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        for bad in ["", "10", "s", "10x", "-1s", "1..5s", "ten seconds"] {
            assert_eq!(parse_go_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_deadline_comes_before_the_callers_and_within_the_cap() {
        let cap = Duration::from_secs(30);
        assert_eq!(deadline("timeout=10s", cap), Duration::from_secs(9));
        assert_eq!(deadline("a=b&timeout=1s", cap), Duration::from_millis(900));
        assert_eq!(deadline("timeout=10m", cap), cap);
        assert_eq!(deadline("", cap), cap);
        assert_eq!(deadline("timeout=bogus", cap), cap);
    }
}
