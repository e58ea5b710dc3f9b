//! The accept path: every connection gets a task of its own at once, so no
//! silent or slow client can hold up the next one.
//!
//! In order, per connection:
//! 1. at accept: at most `--max-connections` open (at the cap, the
//!    longest-idle connection is closed to make room; with none idle the
//!    new one is refused);
//! 2. within `--client-hello-timeout` of the accept: one of the
//!    `--max-handshakes-per-source` slots of its source address (past the
//!    deadline it is closed), the first byte and the whole ClientHello (a
//!    plain-HTTP request gets Go's 400 answer);
//! 3. a slot among `--max-connection-rate` handshakes being computed, and
//!    the rest of the handshake, within `--header-timeout` of the accept;
//! 4. then HTTP/2 or HTTP/1.1 by ALPN (`connection`).
//!
//! Failed handshakes are counted by reason and logged at most once per
//! reason every ten seconds (a scanner must not flood the log).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;
use tokio_rustls::LazyConfigAcceptor;

use super::activity::Activity;
use super::connection::{self, Phase, Served};
use super::lock;

/// What the accept path shares: the served side, and the handshake limits.
pub struct Accept {
    pub served: Arc<Served>,
    pub sources: Arc<Sources>,
    pub handshakes: Arc<Semaphore>,
    pub tls_config: Arc<ArcSwap<rustls::ServerConfig>>,
    pub failures: RateLimitedLog,
}

/// Go's answer to plain HTTP on a TLS port, which clients and operators know.
const PLAIN_HTTP_ANSWER: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Handshakes in progress per source address, and the connections from
/// it that wait for one of its slots.
#[derive(Debug)]
pub struct Sources {
    slots: Mutex<HashMap<IpAddr, SourceSlots>>,
    cap: usize,
}

/// One address's slots, and how many connections hold or wait for one (the
/// entry goes when that count is back to zero).
#[derive(Debug)]
struct SourceSlots {
    semaphore: Arc<Semaphore>,
    users: usize,
}

impl Sources {
    /// At most `cap` handshakes in progress per address.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: Mutex::new(HashMap::new()),
            cap: cap.clamp(1, Semaphore::MAX_PERMITS),
        })
    }

    /// Waits for one of `ip`'s slots until `deadline`; the slot is held
    /// until the returned guard drops. `None` when the deadline passed.
    ///
    /// Waiting rather than closing: the API server is one source, and a
    /// burst of new connections from it (after a pause, a stall or a
    /// rollout) must be served a little later, not refused.
    pub async fn enter(self: &Arc<Self>, ip: IpAddr, deadline: Instant) -> Option<SourceGuard> {
        let semaphore = {
            let mut slots = lock(&self.slots);
            let entry = slots.entry(ip).or_insert_with(|| SourceSlots {
                semaphore: Arc::new(Semaphore::new(self.cap)),
                users: 0,
            });
            entry.users += 1;
            entry.semaphore.clone()
        };
        // Made before the wait, so a timeout or a dropped task also gives
        // the entry back.
        let mut guard = SourceGuard {
            sources: self.clone(),
            ip,
            permit: None,
        };
        let permit = tokio::time::timeout_at(deadline, semaphore.acquire_owned()).await;
        guard.permit = Some(permit.ok()?.ok()?);
        Some(guard)
    }

    /// Addresses with a connection that holds or waits for a slot.
    #[cfg(test)]
    fn addresses(&self) -> usize {
        lock(&self.slots).len()
    }
}

/// A connection that holds (or waited for) one of its address's slots.
#[derive(Debug)]
pub struct SourceGuard {
    sources: Arc<Sources>,
    ip: IpAddr,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for SourceGuard {
    fn drop(&mut self) {
        self.permit.take();
        let mut slots = lock(&self.sources.slots);
        if let Some(entry) = slots.get_mut(&self.ip) {
            entry.users -= 1;
            if entry.users == 0 {
                slots.remove(&self.ip);
            }
        }
    }
}

/// A log line at most every ten seconds per reason and source address
/// (so a client that speaks plain HTTP to the TLS port is named once, not
/// once per attempt), with the count of the lines left out.
#[derive(Debug, Default)]
pub struct RateLimitedLog {
    last: Mutex<HashMap<(&'static str, IpAddr), std::time::Instant>>,
    suppressed: AtomicU64,
}

impl RateLimitedLog {
    const EVERY: Duration = Duration::from_secs(10);
    /// Sources remembered at once: a flood from many addresses costs a
    /// bounded map, and lines beyond it are only counted.
    const SOURCES: usize = 4096;

    /// Logs a refused handshake unless one of the same reason from the
    /// same address was logged in the last ten seconds.
    pub fn handshake_failed(&self, reason: &'static str, peer: SocketAddr, error: &str) {
        if !self.due((reason, peer.ip()), std::time::Instant::now()) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let suppressed = self.suppressed.swap(0, Ordering::Relaxed);
        tracing::warn!(
            reason,
            %peer,
            error,
            suppressed,
            "TLS handshake failed (at most one line per reason and address every 10 s; `suppressed` counts the others)"
        );
    }

    /// Whether a line for `key` is due at `now` (and if so, notes it).
    fn due(&self, key: (&'static str, IpAddr), now: std::time::Instant) -> bool {
        let mut last = lock(&self.last);
        if last.len() >= Self::SOURCES && !last.contains_key(&key) {
            last.retain(|_, at| now.duration_since(*at) < Self::EVERY);
        }
        let recent = last
            .get(&key)
            .is_some_and(|at| now.duration_since(*at) < Self::EVERY);
        if recent || last.len() >= Self::SOURCES {
            return false;
        }
        last.insert(key, now);
        true
    }
}

/// Accepts until the phase is [`Phase::Stopping`].
pub async fn accept_loop(listener: TcpListener, shared: Arc<Accept>) {
    let mut phase = shared.served.phase.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopping(&mut phase) => return,
        };
        match accepted {
            Ok((tcp, peer)) => admit(tcp, peer, &shared),
            Err(err) => {
                // Out of file descriptors, mostly: wait a little rather than spin.
                tracing::error!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn stopping(phase: &mut watch::Receiver<Phase>) {
    let _ = phase.wait_for(|p| *p == Phase::Stopping).await;
}

fn admit(tcp: TcpStream, peer: SocketAddr, shared: &Arc<Accept>) {
    let metrics = &shared.served.state.metrics;
    let activity = Activity::new();
    let Some(registered) = shared.served.registry.register(activity.clone(), metrics) else {
        metrics.observe_connection_refused("connection_limit");
        return;
    };
    let _ = tcp.set_nodelay(true);
    let shared = shared.clone();
    let accepted = Instant::now();
    tokio::spawn(async move {
        // A connection waiting for its address's slot holds a place among
        // `--max-connections`, so the waiting ones are bounded too.
        let hello_deadline = accepted + shared.served.settings.client_hello_timeout;
        let Some(source) = shared.sources.enter(peer.ip(), hello_deadline).await else {
            let metrics = &shared.served.state.metrics;
            metrics.observe_connection_refused("source_limit");
            shared.failures.handshake_failed(
                "source_limit",
                peer,
                "no handshake slot of its address came free before the ClientHello deadline",
            );
            return;
        };
        let handshake = handshake(tcp, peer, accepted, source, &shared).await;
        if let Some((tls, http2)) = handshake {
            connection::serve(tls, http2, activity, registered, &shared.served).await;
        }
    });
}

/// Why a handshake failed: the metric's reason and the error.
type Failure = (&'static str, String);

async fn handshake(
    tcp: TcpStream,
    peer: SocketAddr,
    accepted: Instant,
    source: SourceGuard,
    shared: &Accept,
) -> Option<(tokio_rustls::server::TlsStream<TcpStream>, bool)> {
    let result = try_handshake(tcp, accepted, shared).await;
    drop(source);
    match result {
        Ok(ok) => Some(ok),
        Err((reason, error)) => {
            shared
                .served
                .state
                .metrics
                .observe_handshake_failure(reason);
            shared.failures.handshake_failed(reason, peer, &error);
            None
        }
    }
}

async fn try_handshake(
    tcp: TcpStream,
    accepted: Instant,
    shared: &Accept,
) -> Result<(tokio_rustls::server::TlsStream<TcpStream>, bool), Failure> {
    let settings = &shared.served.settings;
    let hello_deadline = accepted + settings.client_hello_timeout;
    let deadline = accepted + settings.header_timeout.max(settings.client_hello_timeout);
    let timeout = |what: &'static str| (what, format!("{what}: the client was too slow"));

    // The first byte tells TLS (a handshake record, 0x16) from plain HTTP.
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(hello_deadline, tcp.peek(&mut first)).await {
        Err(_) => return Err(timeout("client_hello_timeout")),
        Ok(Err(err)) => return Err(("protocol", err.to_string())),
        Ok(Ok(0)) => return Err(("protocol", "closed before the handshake".into())),
        Ok(Ok(_)) if first[0].is_ascii_uppercase() => {
            let mut tcp = tcp;
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                tcp.write_all(PLAIN_HTTP_ANSWER).await?;
                tcp.shutdown().await
            })
            .await;
            return Err(("plain_http", "plain HTTP on the TLS port".into()));
        }
        Ok(Ok(_)) => {}
    }

    let start = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), tcp);
    let start = match tokio::time::timeout_at(hello_deadline, start).await {
        Err(_) => return Err(timeout("client_hello_timeout")),
        Ok(Err(err)) => return Err(("protocol", err.to_string())),
        Ok(Ok(start)) => start,
    };
    // Signing is the costly part of a handshake: a flood of them waits here
    // instead of taking the CPU from established connections.
    let Ok(Ok(_permit)) =
        tokio::time::timeout_at(deadline, shared.handshakes.clone().acquire_owned()).await
    else {
        return Err(timeout("handshake_timeout"));
    };
    let config = shared.tls_config.load_full();
    let tls = match tokio::time::timeout_at(deadline, start.into_stream(config)).await {
        Err(_) => return Err(timeout("handshake_timeout")),
        Ok(Err(err)) => return Err((classify(&err), err.to_string())),
        Ok(Ok(tls)) => tls,
    };
    let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    Ok((tls, http2))
}

/// The metric reason of a failed handshake.
fn classify(err: &io::Error) -> &'static str {
    match err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented) => {
            "client_certificate"
        }
        _ => "protocol",
    }
}

/// The concurrent handshake computations (`--max-connection-rate`).
pub fn handshake_slots(n: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(n.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_cap_a_source_waits_for_a_slot_until_its_deadline() {
        let sources = Sources::new(2);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let soon = || Instant::now() + Duration::from_millis(50);
        let first = sources.enter(a, soon()).await.expect("a slot");
        let second = sources.enter(a, soon()).await.expect("a slot");
        // Both of a's slots are held: a third times out, b is not held up.
        assert!(sources.enter(a, soon()).await.is_none());
        let other = sources.enter(b, soon()).await.expect("b's own slot");
        // A waiting connection gets the slot one gives back.
        let later = Instant::now() + Duration::from_secs(30);
        let waiting = tokio::spawn({
            let sources = sources.clone();
            async move { sources.enter(a, later).await.is_some() }
        });
        tokio::task::yield_now().await;
        drop(first);
        assert!(waiting.await.expect("joined"));
        // Every entry goes with its last guard, the timed-out one's too.
        drop((second, other));
        assert_eq!(sources.addresses(), 0);
    }

    #[test]
    fn one_line_per_reason_and_source_every_ten_seconds() {
        let log = RateLimitedLog::default();
        let t0 = std::time::Instant::now();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        assert!(log.due(("plain_http", a), t0));
        assert!(!log.due(("plain_http", a), t0 + Duration::from_secs(9)));
        // Another source, or another reason from the same one, has its own line.
        assert!(log.due(("plain_http", b), t0));
        assert!(log.due(("protocol", a), t0));
        assert!(log.due(("plain_http", a), t0 + Duration::from_secs(11)));
    }

    #[test]
    fn the_map_of_sources_stays_bounded() {
        let log = RateLimitedLog::default();
        let t0 = std::time::Instant::now();
        let ip = |i: usize| IpAddr::from(u32::try_from(i).expect("small").to_be_bytes());
        for i in 0..RateLimitedLog::SOURCES {
            assert!(log.due(("protocol", ip(i)), t0));
        }
        // Full of recent lines: a new source is only counted.
        assert!(!log.due(("protocol", ip(RateLimitedLog::SOURCES)), t0));
        // Once they are old, they make room.
        let later = t0 + Duration::from_secs(11);
        assert!(log.due(("protocol", ip(RateLimitedLog::SOURCES)), later));
        assert_eq!(log.last.lock().expect("map").len(), 1);
    }
}
