//! Sending, over the clients of `client.rs`: the closed loop (maximum
//! throughput) and the open loop (constant arrival rate, latency from the
//! intended send time), warm-up, and the progress line.

use std::io::{IsTerminal, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::sync::Semaphore;

use crate::args::{Args, Workload as WorkloadArgs};
use crate::check::{check, Verdict};
use crate::client::{chain, clients, http_kind, transport_kind};
use crate::report::{Outcome, Report, RunInfo, Tally};
use crate::workload::{self, Workload};

/// Counters the progress line reads while the run goes on.
#[derive(Default)]
struct Progress {
    done: AtomicU64,
    failed: AtomicU64,
}

/// Everything a request needs, shared by all tasks.
struct Shared {
    clients: Vec<reqwest::Client>,
    url: String,
    workload: Workload,
    next_uid: AtomicU64,
    progress: Progress,
}

/// How long or how many.
#[derive(Debug, Clone, Copy)]
enum Stop {
    Count(u64),
    After(Duration),
}

impl Shared {
    /// Sends one request on connection `conn` and returns what happened.
    /// `intended` is when it should have left (open loop) or did leave
    /// (closed loop).
    async fn exchange(&self, conn: usize, intended: Instant) -> Outcome {
        let uid = format!("loadtest-{}", self.next_uid.fetch_add(1, Ordering::Relaxed));
        let body = self.workload.template.body(&uid);
        let client = &self.clients[conn % self.clients.len()];
        let sent = Instant::now();
        let result = client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await;
        let mut outcome = Outcome {
            times: None,
            http2: None,
            at: sent,
            result: Ok(None),
        };
        match result {
            Err(err) => outcome.result = Err((transport_kind(&err), chain(&err))),
            Ok(resp) => {
                outcome.http2 = Some(resp.version() == reqwest::Version::HTTP_2);
                let status = resp.status();
                match resp.bytes().await {
                    Err(err) => outcome.result = Err((transport_kind(&err), chain(&err))),
                    Ok(bytes) => {
                        let end = Instant::now();
                        outcome.times = Some((end - intended, end - sent));
                        outcome.result = if status != reqwest::StatusCode::OK {
                            let text = String::from_utf8_lossy(&bytes);
                            Err((
                                http_kind(status),
                                format!(
                                    "HTTP {status}: {}",
                                    text.chars().take(300).collect::<String>()
                                ),
                            ))
                        } else {
                            match check(&bytes, &uid, &self.workload.expectation) {
                                Verdict::Ok { allowed } => Ok(allowed),
                                Verdict::Fail { kind, detail } => Err((kind, detail)),
                            }
                        };
                    }
                }
            }
        }
        outcome.at = Instant::now();
        self.progress.done.fetch_add(1, Ordering::Relaxed);
        if outcome.result.is_err() {
            self.progress.failed.fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }
}

/// Closed loop: `concurrency` workers, each sending its next request when
/// the last is answered, from `started` on.
async fn closed_loop(
    shared: &Arc<Shared>,
    concurrency: u16,
    stop: Stop,
    started: Instant,
) -> anyhow::Result<Tally> {
    let issued = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..concurrency)
        .map(|w| {
            let shared = shared.clone();
            let issued = issued.clone();
            tokio::spawn(async move {
                let mut tally = Tally::since(started);
                loop {
                    let go = match stop {
                        Stop::Count(n) => issued.fetch_add(1, Ordering::Relaxed) < n,
                        Stop::After(d) => started.elapsed() < d,
                    };
                    if !go {
                        return tally;
                    }
                    let outcome = shared.exchange(usize::from(w), Instant::now()).await;
                    tally.record(outcome);
                }
            })
        })
        .collect();
    let mut tally = Tally::since(started);
    for w in workers {
        tally.merge(&w.await.context("a worker panicked")?);
    }
    Ok(tally)
}

/// Open loop: request i is due at `start + i / rate`, sent then whatever
/// the earlier ones are doing (up to `max_in_flight`; beyond that it waits,
/// and the wait counts because latency runs from the due time).
///
/// The pacing runs on a thread of its own: tokio's timer has a resolution
/// of 1 ms, so at thousands of requests per second it would send them in
/// bursts (8 at once every millisecond at 8,000/s) and measure its own
/// lateness; a thread's sleep is good to tens of microseconds.
async fn open_loop(
    shared: &Arc<Shared>,
    rate: f64,
    max_in_flight: u16,
    stop: Stop,
    start: Instant,
) -> anyhow::Result<Tally> {
    let tally = Arc::new(Mutex::new(Tally::since(start)));
    let slots = Arc::new(Semaphore::new(usize::from(max_in_flight)));
    // Bounded: when the requests cannot leave as fast as they fall due
    // (every slot in flight), the pacer waits instead of queueing the whole
    // schedule; the late ones keep their due times.
    let (due_tx, mut due_rx) = tokio::sync::mpsc::channel::<(u64, Instant)>(1024);
    let pacer = std::thread::Builder::new()
        .name("loadtest-pacer".into())
        .spawn(move || {
            let mut i: u64 = 0;
            loop {
                let due = start + Duration::from_secs_f64(i as f64 / rate);
                let go = match stop {
                    Stop::Count(n) => i < n,
                    Stop::After(d) => due < start + d,
                };
                if !go {
                    return;
                }
                // When behind (a busy CPU) the next requests leave at once
                // and keep their due times.
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if due_tx.blocking_send((i, due)).is_err() {
                    return;
                }
                i += 1;
            }
        })
        .context("starting the pacer thread")?;
    while let Some((i, due)) = due_rx.recv().await {
        let slot = slots
            .clone()
            .acquire_owned()
            .await
            .context("semaphore closed")?;
        let shared = shared.clone();
        let tally = tally.clone();
        let conn = usize::try_from(i).unwrap_or(0);
        tokio::spawn(async move {
            let outcome = shared.exchange(conn, due).await;
            // One short lock per answer; a per-request tally would cost two
            // histograms' allocation and merge each time.
            if let Ok(mut t) = tally.lock() {
                t.record(outcome);
            }
            drop(slot);
        });
    }
    pacer
        .join()
        .map_err(|_| anyhow::anyhow!("the pacer thread panicked"))?;
    // Every slot free again: every request is answered.
    let _all = slots
        .acquire_many(u32::from(max_in_flight))
        .await
        .context("semaphore closed")?;
    let t = tally
        .lock()
        .map_err(|_| anyhow::anyhow!("a request task panicked"))?;
    Ok(t.clone())
}

/// Prints a progress line on stderr until `stop` is set.
fn spawn_progress(
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    label: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let tty = std::io::stderr().is_terminal();
        let every = if tty {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        };
        let started = Instant::now();
        let mut last = (Instant::now(), shared.progress.done.load(Ordering::Relaxed));
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if last.0.elapsed() < every {
                continue;
            }
            let done = shared.progress.done.load(Ordering::Relaxed);
            let failed = shared.progress.failed.load(Ordering::Relaxed);
            let rate = (done - last.1) as f64 / last.0.elapsed().as_secs_f64();
            last = (Instant::now(), done);
            let line = format!(
                "{label} {:>6.1} s: {done} answered, {rate:.0}/s now, {failed} failed",
                started.elapsed().as_secs_f64()
            );
            let mut err = std::io::stderr().lock();
            let _ = if tty {
                write!(err, "\r{line}\x1b[K")
            } else {
                writeln!(err, "{line}")
            };
            let _ = err.flush();
        }
        if tty {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    })
}

async fn phase(
    shared: &Arc<Shared>,
    args: &Args,
    stop: Stop,
    label: &'static str,
) -> anyhow::Result<(Tally, Duration)> {
    let show = !args.load.quiet;
    let flag = Arc::new(AtomicBool::new(false));
    let progress = show.then(|| spawn_progress(shared.clone(), flag.clone(), label));
    let started = Instant::now();
    let tally = match args.load.rate {
        Some(rate) => open_loop(shared, rate, args.load.concurrency(), stop, started).await?,
        None => closed_loop(shared, args.load.concurrency(), stop, started).await?,
    };
    let elapsed = started.elapsed();
    flag.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        let _ = p.await;
    }
    Ok((tally, elapsed))
}

/// Runs the whole test: builds the workload and clients, checks the target
/// answers, warms up, measures, and returns the report.
pub async fn run(args: &Args) -> anyhow::Result<Report> {
    if let Some(rate) = args.load.rate {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("--rate must be a positive number of requests per second");
        }
    }
    let workload = match &args.workload {
        WorkloadArgs::Admission(a) => workload::admission(a)?,
        WorkloadArgs::Conversion(c) => workload::conversion(c)?,
    };
    let body_bytes = workload.template.len("loadtest-0".len());
    let objects_per_request = workload.objects_per_request;
    let shared = Arc::new(Shared {
        clients: clients(args)?,
        url: args.target.url.clone(),
        workload,
        next_uid: AtomicU64::new(0),
        progress: Progress::default(),
    });

    // One request per connection first: a wrong URL, certificate or
    // protocol fails here with its cause instead of as N errors, and the
    // handshakes stay out of the numbers.
    for conn in 0..shared.clients.len() {
        let probe = shared.exchange(conn, Instant::now()).await;
        if let Err((kind @ ("connect" | "transport" | "timeout"), detail)) = probe.result {
            bail!("first request to {} ({kind}): {detail}", shared.url);
        }
    }

    if !args.load.warmup.is_zero() {
        phase(&shared, args, Stop::After(args.load.warmup), "warm-up").await?;
    }
    let stop = match (args.load.requests, args.load.duration) {
        (Some(n), _) => Stop::Count(n),
        (None, Some(d)) => Stop::After(d),
        (None, None) => Stop::Count(1000),
    };
    let (tally, elapsed) = phase(&shared, args, stop, "measuring").await?;
    Ok(Report::new(
        RunInfo {
            url: args.target.url.clone(),
            workload: shared.workload.describe.clone(),
            target_rate: args.load.rate,
            concurrency: args.load.concurrency(),
            connections: args.target.connections,
            http: args.target.http,
            body_bytes,
            warmup: args.load.warmup,
            elapsed,
            objects_per_request,
        },
        &tally,
    ))
}
