//! Whether the I/O threads are saturated: the signal that turns review
//! rounds on ([`super::batch`]).
//!
//! A worker of tokio's runtime parks when it has no task left to run. Below
//! saturation it parks about once per review (it answers one and waits for
//! the next); saturated, another connection is always ready and it parks
//! about once per 13 reviews, pinned to one CPU or sharing two with the
//! load generator (docs/performance-log.md, session 33). The busy share of
//! the workers does not tell the two apart when they share CPUs with other
//! processes: preempted time counts as busy. The count of parks per review,
//! from the runtime's stable metrics, does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus::IntGauge;

/// The window over which parks and reviews are counted.
const WINDOW: Duration = Duration::from_millis(100);
/// A window is saturated at this many parks per review or fewer.
const SATURATED_PARKS_PER_REVIEW: f64 = 0.1;
/// Once saturated, it stays so until a window parks more than this. One
/// such window, not two: sharing its CPUs, a saturated server has one now
/// and then at the same load, but waiting for a second after a load fell
/// kept 1.8% of a half-load run in rounds, and its server p99 rose from
/// 2.6 to 3 times the p50 (docs/performance-log.md, session 37).
const CALM_PARKS_PER_REVIEW: f64 = 0.3;
/// Saturated windows in a row before rounds start: a load's first few
/// hundred milliseconds (handshakes, a backlog) look saturated, and do not
/// last long enough to be worth every review waiting for a round.
const SUSTAINED: u32 = 5;
/// Fewer reviews than this in a window say nothing about saturation.
const MIN_REVIEWS: u64 = 100;

/// The state carried from one window to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Verdict {
    /// Saturated windows in a row, up to [`SUSTAINED`].
    streak: u32,
    saturated: bool,
}

impl Verdict {
    /// The verdict after a window `windows` times [`WINDOW`] long in which
    /// the workers parked `parked` times and `answered` reviews arrived.
    fn next(self, parked: u64, answered: u64, windows: f64) -> Verdict {
        // A sample waits for a review or a scrape, so its window may be
        // longer than [`WINDOW`]: the reviews are judged at its rate.
        let busy = answered as f64 >= MIN_REVIEWS as f64 * windows.max(1.0);
        let per_review = parked as f64 / answered.max(1) as f64;
        let streak = if busy && per_review <= SATURATED_PARKS_PER_REVIEW {
            (self.streak + 1).min(SUSTAINED)
        } else {
            0
        };
        let saturated = if self.saturated {
            busy && per_review <= CALM_PARKS_PER_REVIEW
        } else {
            streak >= SUSTAINED
        };
        Verdict { streak, saturated }
    }
}

/// Sampled by the reviews themselves: the first review after a window's
/// end reads the runtime's counters; every review reads the verdict.
#[derive(Debug)]
pub(super) struct Saturation {
    base: Instant,
    /// Nanoseconds after `base` at which the next sample is due.
    due: AtomicU64,
    reviews: AtomicU64,
    /// The sampler's state, used by the one review a window that samples
    /// (two, when one is held up past the next window's end: the lock
    /// keeps their windows apart and in order).
    sampler: Mutex<Sampler>,
    /// The verdict's answer, read by every review.
    saturated: AtomicBool,
    gauge: IntGauge,
}

/// The counters at the last sample, and the verdict.
#[derive(Debug, Default)]
struct Sampler {
    reviews: u64,
    parks: u64,
    /// Nanoseconds after `base` of the last sample.
    at: u64,
    verdict: Verdict,
}

impl Saturation {
    /// Starts calm; `gauge` shows the verdict (`celhook_io_saturated`).
    pub(super) fn new(gauge: IntGauge) -> Self {
        gauge.set(0);
        Saturation {
            base: Instant::now(),
            due: AtomicU64::new(0),
            reviews: AtomicU64::new(0),
            sampler: Mutex::default(),
            saturated: AtomicBool::new(false),
            gauge,
        }
    }

    /// Counts a review and tells whether the I/O threads are saturated.
    pub(super) fn review(&self) -> bool {
        self.reviews.fetch_add(1, Relaxed);
        self.refresh();
        self.saturated.load(Relaxed)
    }

    /// Samples if a window has ended since the last sample: on each review,
    /// and on a scrape of the gauge, which otherwise showed 1 on a server
    /// that fell idle while saturated until its next review.
    pub(super) fn refresh(&self) {
        let now = nanos(self.base.elapsed());
        let due = self.due.load(Relaxed);
        // One caller a window samples (the others lose the exchange).
        if now >= due
            && self
                .due
                .compare_exchange(due, now + nanos(WINDOW), Relaxed, Relaxed)
                .is_ok()
        {
            self.sample();
        }
    }

    /// Judges the window since the last sample.
    fn sample(&self) {
        // Outside a runtime (never on the review path) there is nothing to read.
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut sampler = self.sampler.lock().unwrap_or_else(PoisonError::into_inner);
        // Read under the lock with the counters, so that a sampler held up
        // before it cannot set the window's start back.
        let time = nanos(self.base.elapsed());
        let metrics = handle.metrics();
        let parks: u64 = (0..metrics.num_workers())
            .map(|w| metrics.worker_park_count(w))
            .sum();
        let reviews = self.reviews.load(Relaxed);
        let parked = parks.saturating_sub(std::mem::replace(&mut sampler.parks, parks));
        let answered = reviews.saturating_sub(std::mem::replace(&mut sampler.reviews, reviews));
        let was = sampler.verdict;
        let windows = time.saturating_sub(std::mem::replace(&mut sampler.at, time)) as f64
            / nanos(WINDOW) as f64;
        let now = was.next(parked, answered, windows);
        sampler.verdict = now;
        self.saturated.store(now.saturated, Relaxed);
        self.gauge.set(i64::from(now.saturated));
        if now.saturated != was.saturated {
            tracing::debug!(
                saturated = now.saturated,
                parked,
                answered,
                "I/O threads' saturation changed"
            );
        }
        tracing::trace!(target: "celhook::rounds", parked, answered, saturated = now.saturated, "I/O threads' load");
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(windows: &[(u64, u64)]) -> Verdict {
        windows
            .iter()
            .fold(Verdict::default(), |v, &(parked, answered)| {
                v.next(parked, answered, 1.0)
            })
    }

    #[test]
    fn a_long_window_is_judged_at_its_rate() {
        let mut v = after(&vec![(50, 1_000); SUSTAINED as usize]);
        assert!(v.saturated);
        // The load's last reviews, in a window a scrape closed a second
        // after the one before: 347 reviews are 35 a window.
        v = v.next(60, 347, 10.0);
        assert!(!v.saturated);
        // At 100 ms, as many are a busy window.
        let v = after(&vec![(50, 1_000); SUSTAINED as usize]).next(60, 347, 1.0);
        assert!(v.saturated);
    }

    #[test]
    fn saturation_counts_only_once_it_has_lasted() {
        let saturated = (80, 1_000);
        let short: Vec<_> = std::iter::repeat_n(saturated, SUSTAINED as usize - 1).collect();
        assert!(!after(&short).saturated);
        let long: Vec<_> = std::iter::repeat_n(saturated, SUSTAINED as usize).collect();
        assert!(after(&long).saturated);
    }

    #[test]
    fn a_calm_window_breaks_the_streak_and_ends_saturation() {
        let mut burst = vec![(50, 1_000); SUSTAINED as usize - 1];
        // About one park per review: the load's steady state below saturation.
        burst.push((900, 1_000));
        burst.extend(vec![(50, 1_000); SUSTAINED as usize - 1]);
        assert!(!after(&burst).saturated);

        let mut ended = vec![(50, 1_000); SUSTAINED as usize];
        ended.push((500, 1_000));
        assert_eq!(after(&ended), Verdict::default());
    }

    #[test]
    fn once_saturated_a_window_between_the_thresholds_keeps_it() {
        let mut windows = vec![(50, 1_000); SUSTAINED as usize];
        windows.push((200, 1_000));
        let v = after(&windows);
        assert!(v.saturated);
        assert_eq!(v.streak, 0);
    }

    #[test]
    fn a_window_of_few_reviews_is_not_saturated() {
        // No parks at all, but fewer reviews than a window needs.
        let few = vec![(0, MIN_REVIEWS - 1); SUSTAINED as usize * 2];
        assert!(!after(&few).saturated);
        let mut then_idle = vec![(0, 1_000); SUSTAINED as usize];
        then_idle.push((0, 3));
        assert!(!after(&then_idle).saturated);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_scrape_after_the_load_is_gone_ends_saturation() {
        let gauge = IntGauge::new("saturated", "test").expect("gauge");
        let s = Saturation::new(gauge.clone());
        // Saturated, as after a load: the verdict, its answer and the gauge.
        s.sampler.lock().expect("sampler").verdict = Verdict {
            streak: SUSTAINED,
            saturated: true,
        };
        s.saturated.store(true, Relaxed);
        gauge.set(1);
        // A scrape with no review since (the first sample here: `due`
        // starts at 0): no load, not saturated; and the next review is
        // answered as it arrives.
        s.refresh();
        assert_eq!(gauge.get(), 0);
        assert!(!s.saturated.load(Relaxed));
        assert!(s.due.load(Relaxed) >= nanos(WINDOW));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn the_first_review_samples_and_starts_calm() {
        let gauge = IntGauge::new("saturated", "test").expect("gauge");
        gauge.set(7);
        let s = Saturation::new(gauge.clone());
        assert_eq!(gauge.get(), 0);
        assert!(!s.review());
        assert_eq!(s.sampler.lock().expect("sampler").reviews, 1);
        // The next sample is a window away.
        assert!(s.due.load(Relaxed) >= nanos(WINDOW));
        assert!(!s.review());
        assert_eq!(s.reviews.load(Relaxed), 2);
        assert_eq!(s.sampler.lock().expect("sampler").reviews, 1);
    }
}
