//! Answers over time: counts of completed requests in fixed-width buckets
//! from the start of the measured phase, for the throughput chart.
//!
//! Memory stays bounded whatever the run's length: buckets start 100 ms
//! wide, and when a run outgrows [`MAX_BUCKETS`] of them, every ten
//! neighbours are folded into one (1 s, then 10 s, ...).

use std::time::{Duration, Instant};

/// The width of the finest buckets, in milliseconds.
pub const FINEST_MS: u64 = 100;
/// At most this many buckets per timeline (2 min at 100 ms, 20 min at 1 s).
pub const MAX_BUCKETS: usize = 1200;
/// From this run length on, the chart shows 1 s buckets rather than 100 ms.
const PER_SECOND_FROM: Duration = Duration::from_secs(30);

/// Completed and failed requests per bucket since `origin`.
#[derive(Debug, Clone)]
pub struct Timeline {
    origin: Instant,
    bucket_ms: u64,
    answered: Vec<u64>,
    failed: Vec<u64>,
}

/// One bucket of a chart: its span in seconds from the start and its rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub start_s: f64,
    pub end_s: f64,
    /// Requests completed (ok or failed) per second.
    pub answered_per_s: f64,
    /// Requests failed per second.
    pub failed_per_s: f64,
}

impl Timeline {
    /// An empty timeline counting from `origin`.
    pub fn new(origin: Instant) -> Self {
        Self {
            origin,
            bucket_ms: FINEST_MS,
            answered: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// The width of the buckets, in milliseconds.
    pub fn bucket_ms(&self) -> u64 {
        self.bucket_ms
    }

    /// Requests completed per bucket.
    pub fn answered(&self) -> &[u64] {
        &self.answered
    }

    /// Requests failed per bucket.
    pub fn failed(&self) -> &[u64] {
        &self.failed
    }

    /// Counts a request that completed at `at` (before `origin` counts as
    /// the first bucket).
    pub fn record(&mut self, at: Instant, failed: bool) {
        let ms = u64::try_from(at.saturating_duration_since(self.origin).as_millis())
            .unwrap_or(u64::MAX);
        let mut i = ms / self.bucket_ms;
        while i >= MAX_BUCKETS as u64 {
            self.coarsen();
            i = ms / self.bucket_ms;
        }
        // Below MAX_BUCKETS, so it fits.
        let i = i as usize;
        if self.answered.len() <= i {
            self.answered.resize(i + 1, 0);
            self.failed.resize(i + 1, 0);
        }
        self.answered[i] += 1;
        if failed {
            self.failed[i] += 1;
        }
    }

    /// Folds every ten buckets into one ten times as wide.
    fn coarsen(&mut self) {
        self.bucket_ms = self.bucket_ms.saturating_mul(10);
        for counts in [&mut self.answered, &mut self.failed] {
            *counts = counts.chunks(10).map(|c| c.iter().sum()).collect();
        }
    }

    /// Adds `other`, which counts from the same origin (the phase's start).
    pub fn merge(&mut self, other: &Timeline) {
        while self.bucket_ms < other.bucket_ms {
            self.coarsen();
        }
        let coarser;
        let other = if other.bucket_ms < self.bucket_ms {
            let mut o = other.clone();
            while o.bucket_ms < self.bucket_ms {
                o.coarsen();
            }
            coarser = o;
            &coarser
        } else {
            other
        };
        if self.answered.len() < other.answered.len() {
            self.answered.resize(other.answered.len(), 0);
            self.failed.resize(other.failed.len(), 0);
        }
        for (mine, theirs) in [
            (&mut self.answered, &other.answered),
            (&mut self.failed, &other.failed),
        ] {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
    }

    /// The bucket width the chart of a run of `elapsed` uses: 100 ms for
    /// short runs, 1 s from 30 s on (or wider, when the run outgrew them).
    pub fn chart_bucket_ms(&self, elapsed: Duration) -> u64 {
        if self.bucket_ms < 1000 && elapsed >= PER_SECOND_FROM {
            1000
        } else {
            self.bucket_ms
        }
    }

    /// The rates per bucket of [`Self::chart_bucket_ms`] over a phase of
    /// `elapsed`. The last bucket is cut short by the end of the phase: its
    /// rate is over the time it covers, and when that is under half a
    /// bucket it is folded into the one before (a few milliseconds of
    /// stragglers would otherwise show as a spike or a dip).
    pub fn rates(&self, elapsed: Duration) -> Vec<Rate> {
        let width_ms = self.chart_bucket_ms(elapsed);
        let group = (width_ms / self.bucket_ms).max(1) as usize;
        let answered: Vec<u64> = self
            .answered
            .chunks(group)
            .map(|c| c.iter().sum())
            .collect();
        let failed: Vec<u64> = self.failed.chunks(group).map(|c| c.iter().sum()).collect();
        let width = width_ms as f64 / 1000.0;
        let end = elapsed.as_secs_f64();
        let buckets = ((end / width).ceil() as usize).max(answered.len());
        let mut rates: Vec<(f64, f64, u64, u64)> = Vec::with_capacity(buckets);
        for i in 0..buckets {
            let start = i as f64 * width;
            let stop = ((i + 1) as f64 * width).min(end.max(start));
            let counts = (
                answered.get(i).copied().unwrap_or(0),
                failed.get(i).copied().unwrap_or(0),
            );
            match rates.last_mut() {
                Some(last) if stop - start < width / 2.0 => {
                    last.1 = stop;
                    last.2 += counts.0;
                    last.3 += counts.1;
                }
                _ => rates.push((start, stop, counts.0, counts.1)),
            }
        }
        rates
            .into_iter()
            .filter(|(start, stop, _, _)| stop > start)
            .map(|(start, stop, answered, failed)| Rate {
                start_s: start,
                end_s: stop,
                answered_per_s: answered as f64 / (stop - start),
                failed_per_s: failed as f64 / (stop - start),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_fold_by_ten_past_the_cap_and_merge_across_widths() {
        let origin = Instant::now();
        let mut short = Timeline::new(origin);
        short.record(origin + Duration::from_millis(50), false);
        short.record(origin + Duration::from_millis(150), true);
        short.record(origin + Duration::from_millis(199), false);
        assert_eq!(short.bucket_ms(), 100);
        assert_eq!(short.answered(), &[1, 2]);
        assert_eq!(short.failed(), &[0, 1]);

        let mut long = Timeline::new(origin);
        // 200 s is past 1200 buckets of 100 ms: 1 s buckets.
        long.record(origin + Duration::from_secs(200), false);
        assert_eq!(long.bucket_ms(), 1000);
        assert_eq!(long.answered().len(), 201);
        assert!(long.answered().len() <= MAX_BUCKETS);

        long.merge(&short);
        assert_eq!(long.bucket_ms(), 1000);
        assert_eq!((long.answered()[0], long.failed()[0]), (3, 1));
        assert_eq!(long.answered().iter().sum::<u64>(), 4);

        short.merge(&long);
        assert_eq!(short.bucket_ms(), 1000);
        assert_eq!(short.answered().iter().sum::<u64>(), 7);

        // An absurd completion time still fits in the cap.
        let mut far = Timeline::new(origin);
        far.record(origin + Duration::from_secs(100 * 365 * 86_400), false);
        assert!(far.answered().len() <= MAX_BUCKETS);
    }

    #[test]
    fn rates_cover_the_run_and_fold_a_short_last_bucket() {
        let origin = Instant::now();
        let mut t = Timeline::new(origin);
        // 10 per 100 ms for 1 s, then 2 stragglers in the last 20 ms.
        for i in 0..100 {
            t.record(origin + Duration::from_millis(i * 10 + 5), false);
        }
        t.record(origin + Duration::from_millis(1005), true);
        t.record(origin + Duration::from_millis(1015), false);
        let rates = t.rates(Duration::from_millis(1020));
        assert_eq!(rates.len(), 10, "{rates:?}");
        assert!((rates[0].answered_per_s - 100.0).abs() < 1e-9, "{rates:?}");
        let last = rates[9];
        assert!((last.end_s - 1.02).abs() < 1e-9, "{last:?}");
        assert!((last.answered_per_s - 12.0 / 0.12).abs() < 1e-6, "{last:?}");
        assert!((last.failed_per_s - 1.0 / 0.12).abs() < 1e-6, "{last:?}");
        let total: f64 = rates
            .iter()
            .map(|r| r.answered_per_s * (r.end_s - r.start_s))
            .sum();
        assert!((total - 102.0).abs() < 1e-6);

        // From 30 s on, 1 s buckets.
        let mut t = Timeline::new(origin);
        t.record(origin + Duration::from_millis(100), false);
        let rates = t.rates(Duration::from_secs(40));
        assert_eq!(rates.len(), 40);
        assert_eq!(rates[0].answered_per_s, 1.0);
        assert!(Timeline::new(origin).rates(Duration::ZERO).is_empty());
    }
}
