//! Limits of the review endpoints (`/validate`, `/convert`): request bodies
//! read within a budget of bytes, a per-chunk idle timeout and the
//! request's deadline.
//!
//! The order matters under abuse:
//! 1. a body declared over the endpoint's limit gets 413 unread;
//! 2. bytes are counted as they arrive, never reserved from a declared
//!    length: each chunk takes its bytes from the endpoint's budget
//!    (`--max-in-flight-bytes` for `/validate`,
//!    `--max-convert-in-flight-bytes` for `/convert`) and from the
//!    connection's share of it (half), or the request gets 503 with
//!    `Retry-After` at once. A head that declares 256 MiB and sends nothing
//!    holds nothing; a slow client holds only what it sent. It does not wait
//!    for room: over HTTP/2 an unread body holds its connection's
//!    flow-control window, so waiting bodies would starve the others;
//! 3. a body that pauses for `--body-idle-timeout`, or is not complete by
//!    the deadline, gets 408 and its connection is closed;
//! 4. only then does the request wait for one of `--max-concurrent-requests`
//!    slots (see `routes`).
//!
//! The answer of `/convert` keeps its bytes in the same budget until it is
//! sent ([`Held`] moves into the response body).

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body as _, Bytes, Incoming};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::error::WebhookError;

/// The budget of bytes held by the requests in flight of one endpoint, in
/// KiB permits.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    kib: Arc<Semaphore>,
    total_kib: u32,
}

impl BodyBudget {
    /// A budget of `bytes` (at least 1 KiB).
    pub fn new(bytes: usize) -> Self {
        let total_kib =
            kib_of(bytes).clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u32);
        Self {
            kib: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }

    /// The whole budget in bytes.
    pub fn total_bytes(&self) -> usize {
        self.total_kib as usize * 1024
    }

    /// KiB not held right now.
    pub fn available_kib(&self) -> usize {
        self.kib.available_permits()
    }
}

fn kib_of(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Bytes one request holds: from its endpoint's budget, from its
/// connection's share of it, and in the `celhook_requests_in_flight_bytes`
/// gauge. Grows as bytes arrive (or are written); all of it is given back
/// on drop.
pub struct Held {
    budget: BodyBudget,
    permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
    connection: Arc<AtomicUsize>,
    connection_cap: usize,
    gauge: prometheus::IntGauge,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("bytes", &self.bytes).finish()
    }
}

impl Held {
    /// Holds nothing yet. `connection` counts what every request of the
    /// connection holds of this budget; at most half of the budget.
    pub fn new(
        budget: &BodyBudget,
        connection: Arc<AtomicUsize>,
        gauge: prometheus::IntGauge,
    ) -> Self {
        Self {
            connection_cap: budget.total_bytes() / 2,
            budget: budget.clone(),
            permit: None,
            bytes: 0,
            connection,
            gauge,
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Holds `n` more bytes, if the connection's share and the budget have
    /// room now.
    pub fn grow(&mut self, n: usize) -> Result<(), WebhookError> {
        let before = self.connection.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.connection_cap {
            self.connection.fetch_sub(n, Ordering::Relaxed);
            return Err(WebhookError::ConnectionBudgetExhausted);
        }
        let held_kib = self.permit.as_ref().map_or(0, |p| p.num_permits() as u32);
        let need = kib_of(self.bytes.saturating_add(n)).saturating_sub(held_kib);
        if need > 0 {
            match self.budget.kib.clone().try_acquire_many_owned(need) {
                Ok(more) => match self.permit.as_mut() {
                    Some(permit) => permit.merge(more),
                    None => self.permit = Some(more),
                },
                Err(_) => {
                    self.connection.fetch_sub(n, Ordering::Relaxed);
                    return Err(WebhookError::BodyBudgetExhausted);
                }
            }
        }
        self.bytes += n;
        self.gauge.add(n as i64);
        Ok(())
    }
}

impl Held {
    /// Holds only `bytes` again, what was held before an answer that was
    /// thrown away (the budget's permits stay until the drop: the answer
    /// written next needs them again).
    pub fn shrink_to(&mut self, bytes: usize) {
        let n = self.bytes.saturating_sub(bytes);
        self.connection.fetch_sub(n, Ordering::Relaxed);
        self.gauge.sub(n as i64);
        self.bytes -= n;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.connection.fetch_sub(self.bytes, Ordering::Relaxed);
        self.gauge.sub(self.bytes as i64);
    }
}

/// How a body is read: its endpoint's limit, the idle time allowed
/// between chunks and the request's deadline.
#[derive(Debug, Clone, Copy)]
pub struct BodyRules {
    /// Larger bodies get 413.
    pub limit: usize,
    /// The longest pause between two chunks.
    pub idle: Duration,
    /// When the whole body must have arrived.
    pub deadline: Instant,
    /// The request's whole time, for the error text.
    pub budget: Duration,
}

/// Reads the whole body into `held`'s budget (see the module docs). A body
/// that arrives in one chunk is kept as it is; only a body in several
/// chunks is copied into one buffer.
pub async fn read_body(
    mut body: Incoming,
    declared: Option<usize>,
    rules: BodyRules,
    held: &mut Held,
) -> Result<Bytes, WebhookError> {
    if declared.is_some_and(|n| n > rules.limit) {
        return Err(WebhookError::PayloadTooLarge { limit: rules.limit });
    }
    let mut first: Option<Bytes> = None;
    let mut buf: Vec<u8> = Vec::new();
    let mut len = 0usize;
    loop {
        let wait = (Instant::now() + rules.idle).min(rules.deadline);
        let frame =
            match tokio::time::timeout_at(wait, poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)))
                .await
            {
                Ok(frame) => frame,
                Err(_) if wait == rules.deadline => {
                    return Err(WebhookError::BodyTimeout {
                        budget: rules.budget,
                    })
                }
                Err(_) => return Err(WebhookError::BodyIdle { idle: rules.idle }),
            };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|err| WebhookError::Body(err.to_string()))?;
        let Ok(chunk) = frame.into_data() else {
            continue; // trailers
        };
        len += chunk.len();
        if len > rules.limit {
            return Err(WebhookError::PayloadTooLarge { limit: rules.limit });
        }
        held.grow(chunk.len())?;
        match first.take() {
            None if buf.is_empty() => first = Some(chunk),
            earlier => {
                if let Some(earlier) = earlier {
                    let expected = declared.unwrap_or(0).min(rules.limit);
                    buf.reserve(expected.max(earlier.len() + chunk.len()));
                    buf.extend_from_slice(&earlier);
                }
                buf.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(buf)))
}

/// The request's Content-Length, if it sent one.
pub fn content_length(headers: &hyper::HeaderMap) -> Result<Option<usize>, WebhookError> {
    match headers.get(hyper::header::CONTENT_LENGTH) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(Some)
            .ok_or_else(|| WebhookError::Body("invalid Content-Length header".into())),
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

    fn held(budget: &BodyBudget, connection: &Arc<AtomicUsize>) -> Held {
        Held::new(
            budget,
            connection.clone(),
            prometheus::IntGauge::new("g", "g").expect("gauge"),
        )
    }

    #[test]
    fn bytes_are_held_as_they_grow_and_given_back_on_drop() {
        let budget = BodyBudget::new(64 * 1024);
        let connection = Arc::new(AtomicUsize::new(0));
        let mut a = held(&budget, &connection);
        a.grow(1000).expect("room");
        a.grow(1000).expect("room");
        assert_eq!(budget.available_kib(), 62);
        assert_eq!(connection.load(Ordering::Relaxed), 2000);
        drop(a);
        assert_eq!(budget.available_kib(), 64);
        assert_eq!(connection.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn one_connection_gets_at_most_half_of_the_budget() {
        let budget = BodyBudget::new(64 * 1024);
        let one = Arc::new(AtomicUsize::new(0));
        let other = Arc::new(AtomicUsize::new(0));
        let mut a = held(&budget, &one);
        a.grow(20 * 1024).expect("room");
        let mut b = held(&budget, &one);
        assert!(matches!(
            b.grow(20 * 1024),
            Err(WebhookError::ConnectionBudgetExhausted)
        ));
        // A failed grow holds nothing more.
        assert_eq!(one.load(Ordering::Relaxed), 20 * 1024);
        let mut c = held(&budget, &other);
        c.grow(32 * 1024)
            .expect("the other connection has its own share");
        let mut d = held(&budget, &Arc::new(AtomicUsize::new(0)));
        assert!(matches!(
            d.grow(13 * 1024),
            Err(WebhookError::BodyBudgetExhausted)
        ));
        assert_eq!(budget.available_kib(), 12);
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
