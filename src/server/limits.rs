//! Per-request guard of the review endpoints (`/validate`, `/convert`): counts
//! the request in flight and times it, bounds how many run at once, and
//! answers before the caller's deadline.
//!
//! Wrap a review route with `.wrap(from_fn(limits::guard))`; the endpoint is
//! found from the path ([`Endpoint::from_path`]), so `/convert` needs
//! nothing more than the wrap. The handler still counts its own outcome
//! (`Metrics::observe_review`); this guard counts only the requests it
//! refuses itself, so nothing is counted twice.

use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;

use super::AppState;
use crate::error::WebhookError;
use crate::metrics::Endpoint;

/// The guard (see the module docs).
pub async fn guard(
    req: ServiceRequest,
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

    // Waiting for a slot counts against the deadline: a request that
    // cannot start in time is refused while the caller still listens.
    let Ok(permit) =
        tokio::time::timeout_at(deadline, state.limits.concurrency.clone().acquire_owned()).await
    else {
        state.metrics.observe_overloaded(endpoint);
        return Err(WebhookError::Overloaded.into());
    };
    // `acquire_owned` fails only on a closed semaphore, which we never close.
    let _permit = permit.map_err(|_| WebhookError::Overloaded)?;

    // The body is read inside `next.call`, so a client trickling its body
    // also runs into this deadline. Rules themselves are bounded by their
    // CEL cost limits.
    match tokio::time::timeout_at(deadline, next.call(req)).await {
        Ok(res) => res,
        Err(_) => {
            state.metrics.observe_deadline_exceeded(endpoint);
            Err(WebhookError::DeadlineExceeded { budget }.into())
        }
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
