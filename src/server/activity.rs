//! What one connection is doing, shared between its requests and its
//! watchdog (`connection`): requests in flight, answers being sent, when it
//! was last busy, and the bytes its requests hold of each endpoint's budget.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::io::Traffic;

/// The counters of one connection.
#[derive(Debug, Default)]
pub struct Activity {
    /// Its socket's traffic (last write, open HTTP/2 header block).
    pub traffic: Arc<Traffic>,
    /// Requests from their head until their answer is handed to the HTTP
    /// stack.
    in_flight: AtomicUsize,
    /// Answers handed to the HTTP stack and not yet sent in full.
    sending: AtomicUsize,
    /// When a request last started or an answer was last sent in full (ms
    /// of `traffic`'s clock).
    last_busy_ms: AtomicU64,
    /// Requests answered.
    answered: AtomicU64,
    /// Bytes this connection's requests hold of `/validate`'s and
    /// `/convert`'s budgets.
    pub held: [Arc<AtomicUsize>; 2],
}

impl Activity {
    /// A connection that starts now.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Counts a request from now until the guard drops.
    pub fn request(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.touch();
        InFlight(self.clone())
    }

    fn touch(&self) {
        self.last_busy_ms
            .store(self.traffic.now_ms(), Ordering::Relaxed);
    }

    /// True when no request is in flight and no answer is being sent.
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0 && self.sending.load(Ordering::Relaxed) == 0
    }

    /// Answers being sent.
    pub fn sending(&self) -> usize {
        self.sending.load(Ordering::Relaxed)
    }

    /// When the connection was last busy (ms of its traffic clock).
    pub fn last_busy_ms(&self) -> u64 {
        self.last_busy_ms.load(Ordering::Relaxed)
    }

    /// Milliseconds since the connection was last busy.
    pub fn idle_ms(&self) -> u64 {
        self.traffic
            .now_ms()
            .saturating_sub(self.last_busy_ms.load(Ordering::Relaxed))
    }

    /// Requests answered in full.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

/// A request in flight; [`InFlight::into_sending`] when its answer goes out.
#[derive(Debug)]
pub struct InFlight(Arc<Activity>);

impl InFlight {
    /// The answer is handed to the HTTP stack: counted as being sent until
    /// the returned guard (kept by the answer's body) drops.
    pub fn into_sending(self) -> Sending {
        let activity = self.0.clone();
        activity.sending.fetch_add(1, Ordering::Relaxed);
        // Dropping `self` ends the in-flight count after `sending` rose, so
        // the connection never looks idle in between.
        drop(self);
        Sending(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// An answer being sent.
#[derive(Debug)]
pub struct Sending(Arc<Activity>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.answered.fetch_add(1, Ordering::Relaxed);
        self.0.sending.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}
