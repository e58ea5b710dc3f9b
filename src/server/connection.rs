//! One served connection: HTTP/2 or HTTP/1.1 over TLS, with a watchdog.
//!
//! The HTTP stack (hyper) is set up for hostile clients: at most
//! `--http2-max-concurrent-streams` streams, header lists of at most
//! 64 KiB (as for HTTP/1.1), a small send buffer per stream and the reset
//! flood limits. Every quarter second (an idle HTTP/1.1 connection: every
//! quarter of the shorter of `--write-timeout` and `--keep-alive`, from a
//! quarter second to 2 s, so that it may be closed up to that long past
//! `--keep-alive`) the watchdog closes the connection when
//! - an answer has been waiting to go out for `--write-timeout` (a client
//!   that never opens its flow-control window or never reads);
//! - an HTTP/2 header block has been arriving for `--header-timeout`;
//! - it has been idle (nothing in flight) for `--keep-alive` (gracefully).
//!
//! Stopping follows [`Phase`]. While draining (the shutdown delay, with
//! `/readyz` at 503), clients pinned to this pod are moved elsewhere:
//! HTTP/2 connections get a GOAWAY (at once, idle or not, when they were
//! open before; after their first answer when they open during the delay)
//! and HTTP/1.1 answers carry `Connection: close` (`routes`), after which
//! hyper closes the connection. When stopping, every connection is shut
//! down gracefully, so no request already sent is lost.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Notify};

use super::activity::Activity;
use super::io::Tracked;
use super::routes::{self, Routes};
use super::{lock, AppState};
use crate::metrics::Metrics;

/// Where the server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Serving.
    Serving,
    /// Shutdown delay: still serving, moving clients elsewhere.
    Draining,
    /// No longer accepting; connections finish what they have.
    Stopping,
}

/// The time and size limits of connections.
#[derive(Debug, Clone)]
pub struct Settings {
    /// First byte and ClientHello.
    pub client_hello_timeout: Duration,
    /// The whole handshake, and an HTTP/1.1 request head or HTTP/2 header block.
    pub header_timeout: Duration,
    /// Idle connections are closed after this.
    pub keep_alive: Duration,
    /// An answer that cannot be written for this long closes its connection.
    pub write_timeout: Duration,
    /// HTTP/2 streams at once per connection.
    pub max_concurrent_streams: u32,
}

/// Largest request header list (HTTP/2) and request head (HTTP/1.1).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Bytes buffered per HTTP/2 stream beyond what the client's window takes.
const MAX_SEND_BUFFER: usize = 64 * 1024;
/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(250);
/// The longest wait between two looks at an idle HTTP/1.1 connection.
const MAX_IDLE_TICK: Duration = Duration::from_secs(2);

/// How often the watchdog looks at an HTTP/1.1 connection with nothing in
/// flight and nothing being sent. Its only check then is the keep-alive,
/// and the API server keeps dozens of such connections open on a pod:
/// looking every quarter second cost 7 millicores for 64 of them and 20
/// for 256 (docs/performance.md, "How many replicas"). A request arriving
/// meanwhile is watched from the next look, one idle tick later at most:
/// well inside its write timeout, which starts with the request. HTTP/2
/// connections keep [`TICK`]: a header block may open on one with nothing
/// in flight.
fn idle_tick(settings: &Settings) -> Duration {
    (settings.write_timeout.min(settings.keep_alive) / 4).clamp(TICK, MAX_IDLE_TICK)
}

/// What every served connection of a listener shares.
pub struct Served {
    pub state: Arc<AppState>,
    pub settings: Settings,
    pub registry: Arc<Registry>,
    pub phase: watch::Receiver<Phase>,
    h1: hyper::server::conn::http1::Builder,
    h2: hyper::server::conn::http2::Builder<TokioExecutor>,
}

impl Served {
    /// The shared parts, with hyper set up from `settings`.
    pub fn new(
        state: Arc<AppState>,
        settings: Settings,
        registry: Arc<Registry>,
        phase: watch::Receiver<Phase>,
    ) -> Self {
        let mut h1 = hyper::server::conn::http1::Builder::new();
        h1.timer(TokioTimer::new())
            .header_read_timeout(settings.header_timeout)
            .max_header_size(MAX_HEADER_BYTES)
            .keep_alive(true);
        let mut h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        h2.timer(TokioTimer::new())
            .max_concurrent_streams(settings.max_concurrent_streams)
            .max_header_list_size(MAX_HEADER_BYTES as u32)
            .max_send_buf_size(MAX_SEND_BUFFER)
            // Rapid-reset floods: the h2 crate's defaults, said out loud.
            .max_pending_accept_reset_streams(20)
            .max_local_error_reset_streams(1024)
            // Dead peers are found by PING even while a request waits.
            .keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(10));
        Self {
            state,
            settings,
            registry,
            phase,
            h1,
            h2,
        }
    }
}

/// An open connection: what it is doing, and how to tell it to close.
type Entry = (Arc<Activity>, Arc<Notify>);

/// The open connections, for the cap, idle eviction and the drain.
#[derive(Debug)]
pub struct Registry {
    entries: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
    cap: usize,
    empty: Notify,
}

impl Registry {
    /// At most `cap` connections.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            cap: cap.max(1),
            empty: Notify::new(),
        })
    }

    /// Registers a new connection. At the cap, the connection idle for the
    /// longest is told to close (a client holding many idle connections
    /// cannot lock others out); with none idle, `None`.
    pub fn register(
        self: &Arc<Self>,
        activity: Arc<Activity>,
        metrics: &Metrics,
    ) -> Option<Registered> {
        let mut entries = lock(&self.entries);
        if entries.len() >= self.cap {
            let victim = entries
                .iter()
                .filter(|(_, (a, _))| a.is_idle())
                .max_by_key(|(_, (a, _))| a.idle_ms())
                .map(|(id, _)| *id)?;
            if let Some((_, evict)) = entries.remove(&victim) {
                evict.notify_one();
                metrics.observe_connection_closed("evicted");
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        entries.insert(id, (activity, evict.clone()));
        metrics.connections_open().inc();
        Some(Registered {
            id,
            registry: self.clone(),
            evict,
            gauge: metrics.connections_open().clone(),
        })
    }

    /// Connections open now.
    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    /// True when no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until every connection is closed.
    pub async fn wait_empty(&self) {
        loop {
            let notified = self.empty.notified();
            if self.is_empty() {
                return;
            }
            notified.await;
        }
    }
}

/// A registered connection; unregisters on drop.
#[derive(Debug)]
pub struct Registered {
    id: u64,
    registry: Arc<Registry>,
    evict: Arc<Notify>,
    gauge: prometheus::IntGauge,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut entries = lock(&self.registry.entries);
        entries.remove(&self.id);
        if entries.is_empty() {
            self.registry.empty.notify_waiters();
        }
        self.gauge.dec();
    }
}

/// Serves a connection whose TLS handshake is done.
pub async fn serve<T>(
    tls: T,
    http2: bool,
    activity: Arc<Activity>,
    registered: Registered,
    shared: &Served,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(Tracked::new(tls, activity.traffic.clone(), http2));
    let state = shared.state.clone();
    let service_activity = activity.clone();
    let service = service_fn(move |req| {
        routes::handle(state.clone(), service_activity.clone(), Routes::All, req)
    });
    // The two connection types share no trait for `graceful_shutdown`.
    if http2 {
        let conn = shared.h2.serve_connection(io, service);
        let graceful =
            |c: Pin<&mut _>| hyper::server::conn::http2::Connection::graceful_shutdown(c);
        watch_over(conn, graceful, true, &activity, &registered, shared).await;
    } else {
        let conn = shared.h1.serve_connection(io, service);
        let graceful =
            |c: Pin<&mut _>| hyper::server::conn::http1::Connection::graceful_shutdown(c);
        watch_over(conn, graceful, false, &activity, &registered, shared).await;
    }
}

/// Drives `conn` to its end, closing it as the module docs say.
async fn watch_over<C: Future<Output = hyper::Result<()>>>(
    conn: C,
    graceful: impl Fn(Pin<&mut C>),
    http2: bool,
    activity: &Activity,
    registered: &Registered,
    shared: &Served,
) {
    let settings = &shared.settings;
    let metrics = &shared.state.metrics;
    let mut conn = std::pin::pin!(conn);
    let idle = if http2 { TICK } else { idle_tick(settings) };
    let mut look = std::pin::pin!(tokio::time::sleep(TICK));
    let mut phase = shared.phase.clone();
    // A clone has seen no more than the shared receiver (the first phase):
    // mark the current phase seen, so that `changed` reports only what
    // comes after this connection opened. Otherwise an HTTP/2 connection
    // opened during the delay would get its GOAWAY before its first
    // request, and a client that honours it would never be served.
    let opened_in = *phase.borrow_and_update();
    // Opened during the delay: a GOAWAY after its first answer (open
    // before: at once, when the phase changes below).
    let mut goaway_when_answered = http2 && opened_in == Phase::Draining;
    let mut closing = false;
    let mut close = |conn: Pin<&mut C>, reason: &str| {
        if !closing {
            closing = true;
            metrics.observe_connection_closed(reason);
            graceful(conn);
        }
    };
    if opened_in == Phase::Stopping {
        // Its handshake ended after the listener closed.
        close(conn.as_mut(), "shutdown");
    }
    loop {
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(err) = res {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
                return;
            }
            _ = registered.evict.notified() => close(conn.as_mut(), "evicted"),
            changed = phase.changed() => {
                if changed.is_err() {
                    // The server is gone: stop now.
                    return;
                }
                match *phase.borrow_and_update() {
                    Phase::Serving => {}
                    Phase::Draining if http2 => close(conn.as_mut(), "shutdown"),
                    Phase::Draining => {}
                    Phase::Stopping => close(conn.as_mut(), "shutdown"),
                }
            }
            _ = look.as_mut() => {
                let next = if activity.is_idle() { idle } else { TICK };
                look.as_mut().reset(tokio::time::Instant::now() + next);
                let traffic = &activity.traffic;
                let now = traffic.now_ms();
                // Progress is a write, or an answer handed over (which
                // touches `last_busy`): an old last write alone is no stall.
                let progress = traffic.last_write_ms().max(activity.last_busy_ms());
                if activity.sending() > 0
                    && now.saturating_sub(progress) > settings.write_timeout.as_millis() as u64
                {
                    metrics.observe_connection_closed("write_stall");
                    tracing::debug!("closing a connection whose answer could not be written");
                    return;
                }
                if traffic
                    .header_block_since_ms()
                    .is_some_and(|since| now.saturating_sub(since) > settings.header_timeout.as_millis() as u64)
                {
                    metrics.observe_connection_closed("header_timeout");
                    return;
                }
                if activity.is_idle() && activity.idle_ms() > settings.keep_alive.as_millis() as u64 {
                    close(conn.as_mut(), "idle");
                }
                if goaway_when_answered && activity.answered() > 0 {
                    goaway_when_answered = false;
                    close(conn.as_mut(), "shutdown");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(write_timeout: Duration, keep_alive: Duration) -> Settings {
        Settings {
            client_hello_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(5),
            keep_alive,
            write_timeout,
            max_concurrent_streams: 100,
        }
    }

    #[test]
    fn an_idle_connection_is_looked_at_less_often_within_its_timeouts() {
        let s = Duration::from_secs;
        // The defaults (10 s, 120 s): the longest wait.
        assert_eq!(idle_tick(&settings(s(10), s(120))), MAX_IDLE_TICK);
        // A quarter of the shorter timeout between the bounds.
        assert_eq!(idle_tick(&settings(s(4), s(120))), Duration::from_secs(1));
        assert_eq!(
            idle_tick(&settings(s(10), s(6))),
            Duration::from_millis(1500)
        );
        // Short timeouts (tests, strict operators) keep the quarter second.
        assert_eq!(
            idle_tick(&settings(Duration::from_millis(500), s(120))),
            TICK
        );
        assert_eq!(idle_tick(&settings(s(10), Duration::ZERO)), TICK);
    }
}
