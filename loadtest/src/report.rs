//! Tallies and the report: HDR histograms of latency, counts, errors by
//! kind with one example each, answers over time, printed as text or JSON
//! (and drawn by `html`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::args::HttpVersion;
use crate::timeline::Timeline;

/// What one request produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// (response time, service time), when an answer arrived.
    pub times: Option<(Duration, Duration)>,
    /// Whether the answer came over HTTP/2 (None: no answer).
    pub http2: Option<bool>,
    /// When the exchange ended (answer read, or failed).
    pub at: Instant,
    /// The admission verdict (None for conversion), or the error kind and detail.
    pub result: Result<Option<bool>, (&'static str, String)>,
}

/// What a run saw.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Response time in µs: from the intended send time in open loop, from
    /// the actual send in closed loop (where they are the same).
    pub latency_us: Histogram<u64>,
    /// Service time in µs: from the actual send to the last byte of the answer.
    pub service_us: Histogram<u64>,
    pub ok: u64,
    pub allowed: u64,
    pub denied: u64,
    pub http2: u64,
    pub http1: u64,
    pub errors: BTreeMap<&'static str, u64>,
    pub error_examples: BTreeMap<&'static str, String>,
    /// Completions over time, from the start of the phase.
    pub timeline: Timeline,
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 10 min at 3 significant digits; values above saturate.
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap_or_else(|_| {
        // The bounds are constants that hdrhistogram accepts; this branch
        // exists only so that the code has no unwrap.
        Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits are valid"))
    })
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

impl Tally {
    /// An empty tally whose timeline starts now.
    pub fn new() -> Self {
        Self::since(Instant::now())
    }

    /// An empty tally whose timeline starts at `origin` (the tallies of one
    /// phase share it, so that they can be merged).
    pub fn since(origin: Instant) -> Self {
        Self {
            latency_us: histogram(),
            service_us: histogram(),
            ok: 0,
            allowed: 0,
            denied: 0,
            http2: 0,
            http1: 0,
            errors: BTreeMap::new(),
            error_examples: BTreeMap::new(),
            timeline: Timeline::new(origin),
        }
    }

    /// Requests answered or failed.
    pub fn done(&self) -> u64 {
        self.ok + self.failed()
    }

    /// Requests that failed, any kind.
    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Records the two latencies of one request.
    pub fn record_latency(&mut self, latency: Duration, service: Duration) {
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
        self.latency_us.saturating_record(us(latency));
        self.service_us.saturating_record(us(service));
    }

    /// Records one request.
    pub fn record(&mut self, o: Outcome) {
        if let Some((latency, service)) = o.times {
            self.record_latency(latency, service);
        }
        match o.http2 {
            Some(true) => self.http2 += 1,
            Some(false) => self.http1 += 1,
            None => {}
        }
        self.timeline.record(o.at, o.result.is_err());
        match o.result {
            Ok(allowed) => {
                self.ok += 1;
                match allowed {
                    Some(true) => self.allowed += 1,
                    Some(false) => self.denied += 1,
                    None => {}
                }
            }
            Err((kind, detail)) => self.fail(kind, || detail),
        }
    }

    /// Counts a failure of `kind`, keeping the first example.
    pub fn fail(&mut self, kind: &'static str, detail: impl FnOnce() -> String) {
        *self.errors.entry(kind).or_insert(0) += 1;
        self.error_examples.entry(kind).or_insert_with(detail);
    }

    /// Adds `other` to this tally.
    pub fn merge(&mut self, other: &Tally) {
        // Same bounds on both sides, so adding cannot fail; saturate anyway.
        let _ = self.latency_us.add(&other.latency_us);
        let _ = self.service_us.add(&other.service_us);
        self.ok += other.ok;
        self.allowed += other.allowed;
        self.denied += other.denied;
        self.http2 += other.http2;
        self.http1 += other.http1;
        for (k, n) in &other.errors {
            *self.errors.entry(k).or_insert(0) += n;
        }
        for (k, e) in &other.error_examples {
            self.error_examples.entry(k).or_insert_with(|| e.clone());
        }
        self.timeline.merge(&other.timeline);
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Some(Self {
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
            mean_ms: h.mean() / 1000.0,
        })
    }
}

/// Points of a percentile plot: (x, latency in ms), where x = 1 / (1 - q)
/// for the quantile q, from 1 (q = 0) to 10,000 (q = 0.9999): on a log
/// scale, each further nine (90%, 99%, 99.9%) is one step.
fn percentile_curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    const STEPS_PER_DECADE: u32 = 40;
    (0..=4 * STEPS_PER_DECADE)
        .map(|k| {
            let x = 10f64.powf(f64::from(k) / f64::from(STEPS_PER_DECADE));
            let q = (1.0 - 1.0 / x).clamp(0.0, 1.0);
            (x, h.value_at_quantile(q) as f64 / 1000.0)
        })
        .collect()
}

/// What the HTML page draws (not part of the JSON report).
#[derive(Debug, Clone)]
pub struct Charts {
    /// Completions over the measured phase.
    pub timeline: Timeline,
    /// Response time per percentile; see `percentile_curve`.
    pub latency: Vec<(f64, f64)>,
    /// Service time per percentile (open loop only; the same in closed loop).
    pub service: Vec<(f64, f64)>,
}

/// The HTTP version that answered: `HTTP/1.1`, `HTTP/2`, `mixed` or `none`.
fn negotiated(http1: u64, http2: u64) -> &'static str {
    match (http1 > 0, http2 > 0) {
        (true, false) => "HTTP/1.1",
        (false, true) => "HTTP/2",
        (true, true) => "mixed",
        (false, false) => "none",
    }
}

/// The report of a run (the JSON output's schema).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub url: String,
    pub workload: String,
    /// `closed` or `open`.
    pub mode: &'static str,
    /// Open loop: the target rate, requests/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<f64>,
    pub concurrency: u16,
    pub connections: u16,
    /// `--http`: `1.1`, `2` or `auto`.
    pub http_requested: &'static str,
    /// The version that answered the measured requests: `HTTP/1.1`,
    /// `HTTP/2`, `mixed` (some of each) or `none` (no answer).
    pub http_version: &'static str,
    pub body_bytes: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub allowed: u64,
    pub denied: u64,
    pub http2_answers: u64,
    pub http1_answers: u64,
    /// Answered requests (ok or not) per second of the measured phase.
    pub throughput_rps: f64,
    /// Objects per second (conversion batches count each object).
    pub objects_per_s: f64,
    /// Response time (open loop: from the intended send time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Percentiles>,
    /// Service time (from the actual send); differs from `latency` in open
    /// loop when requests had to wait for a free slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_time: Option<Percentiles>,
    pub errors: BTreeMap<&'static str, u64>,
    pub error_examples: BTreeMap<&'static str, String>,
    /// The data of the HTML page's charts.
    #[serde(skip)]
    pub charts: Charts,
}

/// The inputs of a report besides the tally.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub url: String,
    pub workload: String,
    pub target_rate: Option<f64>,
    pub concurrency: u16,
    pub connections: u16,
    pub http: HttpVersion,
    pub body_bytes: usize,
    pub warmup: Duration,
    pub elapsed: Duration,
    pub objects_per_request: u64,
}

impl Report {
    /// Builds the report of a measured phase.
    pub fn new(info: RunInfo, tally: &Tally) -> Self {
        let secs = info.elapsed.as_secs_f64().max(f64::EPSILON);
        let done = tally.done();
        Self {
            url: info.url,
            workload: info.workload,
            mode: if info.target_rate.is_some() {
                "open"
            } else {
                "closed"
            },
            target_rate: info.target_rate,
            concurrency: info.concurrency,
            connections: info.connections,
            http_requested: info.http.as_str(),
            http_version: negotiated(tally.http1, tally.http2),
            body_bytes: info.body_bytes,
            warmup_s: info.warmup.as_secs_f64(),
            duration_s: info.elapsed.as_secs_f64(),
            requests: done,
            ok: tally.ok,
            failed: tally.failed(),
            allowed: tally.allowed,
            denied: tally.denied,
            http2_answers: tally.http2,
            http1_answers: tally.http1,
            throughput_rps: done as f64 / secs,
            objects_per_s: (tally.ok * info.objects_per_request) as f64 / secs,
            latency: Percentiles::of(&tally.latency_us),
            service_time: Percentiles::of(&tally.service_us),
            errors: tally.errors.clone(),
            error_examples: tally.error_examples.clone(),
            charts: Charts {
                timeline: tally.timeline.clone(),
                latency: percentile_curve(&tally.latency_us),
                service: if info.target_rate.is_some() {
                    percentile_curve(&tally.service_us)
                } else {
                    Vec::new()
                },
            },
        }
    }

    /// How the connections were used, in words.
    pub fn connections_text(&self) -> String {
        match self.http_version {
            "HTTP/1.1" => format!(
                "up to {} kept-alive HTTP/1.1 connections (one request at a time on each) in {} pool(s)",
                self.concurrency, self.connections
            ),
            "HTTP/2" => format!(
                "{} HTTP/2 connection(s), requests multiplexed",
                self.connections
            ),
            _ => format!("{} pool(s)", self.connections),
        }
    }

    /// The report as human-readable lines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "target:      {}", self.url);
        let _ = writeln!(
            out,
            "workload:    {} ({} bytes per request)",
            self.workload, self.body_bytes
        );
        let mode = match self.target_rate {
            Some(rate) => format!(
                "open loop at {rate:.1} requests/s, at most {} in flight",
                self.concurrency
            ),
            None => format!("closed loop, {} workers", self.concurrency),
        };
        let _ = writeln!(
            out,
            "load:        {mode}, {:.1} s warm-up, {:.3} s measured",
            self.warmup_s, self.duration_s
        );
        let _ = writeln!(
            out,
            "http:        {} (--http {}); {}",
            self.http_version,
            self.http_requested,
            self.connections_text()
        );
        let _ = writeln!(
            out,
            "answers:     {} requests: {} ok ({} allowed, {} denied), {} failed; {} over HTTP/2, {} over HTTP/1.1",
            self.requests, self.ok, self.allowed, self.denied, self.failed, self.http2_answers, self.http1_answers
        );
        let _ = writeln!(
            out,
            "throughput:  {:.1} requests/s ({:.1} objects/s)",
            self.throughput_rps, self.objects_per_s
        );
        for (label, p) in [
            ("latency ms: ", &self.latency),
            ("service ms: ", &self.service_time),
        ] {
            if let Some(p) = p {
                let _ = writeln!(
                    out,
                    "{label} p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  mean {:.3}",
                    p.p50_ms, p.p90_ms, p.p99_ms, p.p999_ms, p.max_ms, p.mean_ms
                );
            }
            if self.target_rate.is_none() {
                // Closed loop: both are the same measurement.
                break;
            }
        }
        for (kind, n, example) in self.errors_with_examples() {
            let _ = writeln!(out, "error:       {kind} x{n}, e.g. {example}");
        }
        out
    }

    /// Each error class with its count and an example of its details.
    pub fn errors_with_examples(&self) -> impl Iterator<Item = (&str, u64, &str)> {
        self.errors.iter().map(|(kind, n)| {
            let example = self.error_examples.get(kind).map_or("", String::as_str);
            (*kind, *n, example)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_counts_percentiles_and_errors() {
        let mut t = Tally::new();
        for ms in 1..=100u64 {
            t.record_latency(Duration::from_millis(ms), Duration::from_millis(1));
            t.ok += 1;
        }
        t.allowed = 100;
        let mut recorded = Tally::new();
        recorded.record(Outcome {
            times: Some((Duration::from_millis(3), Duration::from_millis(2))),
            http2: Some(true),
            at: Instant::now(),
            result: Ok(Some(false)),
        });
        recorded.record(Outcome {
            times: None,
            http2: None,
            at: Instant::now(),
            result: Err(("connect", "refused".into())),
        });
        assert_eq!(
            (
                recorded.ok,
                recorded.denied,
                recorded.http2,
                recorded.failed()
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(recorded.latency_us.len(), 1, "only answers have latencies");
        assert_eq!(recorded.timeline.answered().iter().sum::<u64>(), 2);
        assert_eq!(recorded.timeline.failed().iter().sum::<u64>(), 1);
        let mut other = Tally::new();
        other.fail("timeout", || "first".into());
        other.fail("timeout", || "second".into());
        t.merge(&other);
        let r = Report::new(
            RunInfo {
                url: "https://x/validate".into(),
                workload: "w".into(),
                target_rate: Some(50.0),
                concurrency: 4,
                connections: 1,
                http: HttpVersion::Http1,
                body_bytes: 10,
                warmup: Duration::ZERO,
                elapsed: Duration::from_secs(2),
                objects_per_request: 1,
            },
            &t,
        );
        assert_eq!((r.requests, r.ok, r.failed), (102, 100, 2));
        assert!((r.throughput_rps - 51.0).abs() < 1e-9);
        let lat = r.latency.as_ref().expect("latency");
        assert!((lat.p50_ms - 50.0).abs() < 0.1, "{lat:?}");
        assert!((lat.p99_ms - 99.0).abs() < 0.1, "{lat:?}");
        assert!((lat.max_ms - 100.0).abs() < 0.1, "{lat:?}");
        assert_eq!(r.errors.get("timeout"), Some(&2));
        assert_eq!(
            r.error_examples.get("timeout").map(String::as_str),
            Some("first")
        );
        // The tally's answers came without a version (none recorded).
        assert_eq!((r.http_requested, r.http_version), ("1.1", "none"));
        assert_eq!(r.charts.latency.len(), 161);
        assert_eq!(r.charts.latency[0].0, 1.0);
        assert!((r.charts.latency[160].0 - 10_000.0).abs() < 1e-6);
        assert!(
            (r.charts.latency[80].1 - 99.0).abs() < 0.1,
            "x = 100 is p99"
        );
        assert_eq!(r.charts.service.len(), 161, "open loop: service time too");
        let text = r.text();
        assert!(text.contains("open loop at 50.0 requests/s"), "{text}");
        assert!(text.contains("http:        none (--http 1.1)"), "{text}");
        assert!(text.contains("timeout x2, e.g. first"), "{text}");
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["mode"], "open");
        assert_eq!(json["errors"]["timeout"], 2);
        assert_eq!(json["http_version"], "none");
        assert!(
            json.get("charts").is_none(),
            "the chart data stays out of the JSON"
        );
        assert_eq!(
            (negotiated(3, 0), negotiated(0, 3), negotiated(1, 2)),
            ("HTTP/1.1", "HTTP/2", "mixed")
        );
    }
}
