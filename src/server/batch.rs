//! Reviews that are ready at the same moment are answered back to back.
//!
//! Between two reviews answered one by one, an I/O thread decrypts, parses
//! and writes for other connections, and the kernel runs its TCP stack:
//! enough to push the engine's code and compiled programs out of the CPU's
//! caches, so that every review starts cold (docs/performance-log.md,
//! session 27: the rules cost twice as much cold as warm). Here a ready
//! review queues its work and yields once; by the time it runs again the
//! reviews that became ready with it have queued theirs, and the first to
//! run again answers them in a row on warm caches. Each review still
//! gets its own answer, runs under its own inline budget, and waits for
//! nothing longer than the others' work of this one round.
//!
//! Rounds pay only when reviews queue anyway, so under `--review-rounds
//! auto` they run only while the I/O threads stay saturated
//! ([`super::saturation`]): there they raised a one-core server's maximum
//! by about 40% and lowered its clients' latency; below it every review
//! is answered at once, as if there were no rounds.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use tokio::sync::oneshot;

use super::saturation::Saturation;
use super::ReviewRounds;

/// A task answers the queued reviews up to its own, then more up to this
/// many in all: long rounds would make every review of a round wait for
/// the others' work (its time, in the server's histogram, is the round's).
const MAX_ROUND: usize = 8;

type Job = Box<dyn FnOnce() + Send>;

/// The reviews waiting for their round, oldest first, each with its ticket.
#[derive(Default)]
struct Queue {
    next: u64,
    jobs: VecDeque<(u64, Job)>,
}

/// The queue of reviews waiting for their round, shared by the I/O threads.
pub(super) struct Batch {
    queue: Mutex<Queue>,
    mode: ReviewRounds,
    saturation: Saturation,
}

impl Batch {
    /// Rounds as `mode` says; `saturated` shows whether the I/O threads are.
    pub(super) fn new(mode: ReviewRounds, saturated: prometheus::IntGauge) -> Self {
        Batch {
            queue: Mutex::default(),
            mode,
            saturation: Saturation::new(saturated),
        }
    }

    /// Whether the review arriving now goes in a round. Under `auto` only
    /// while the I/O threads stay saturated: a round gains throughput only
    /// when reviews queue anyway, and each review's wait for its round
    /// shows in the request histogram (in the socket, without rounds, it
    /// does not), so below saturation it would cost the tail for nothing.
    pub(super) fn in_round(&self) -> bool {
        match self.mode {
            ReviewRounds::Auto => self.saturation.review(),
            ReviewRounds::Always => true,
            ReviewRounds::Never => false,
        }
    }

    /// Brings the saturation verdict (and its gauge) up to date for a
    /// scrape, also when no review has come since the load ended.
    pub(super) fn refresh_saturation(&self) {
        self.saturation.refresh();
    }

    /// Runs `work` in the next round of queued work and returns its result,
    /// or `None` when it panicked (on the review path the work's own
    /// `guarded` answers a panic before it gets here).
    pub(super) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        let ticket = self.push(Box::new(move || {
            // The review's connection went away while it waited.
            if !tx.is_closed() {
                let _ = tx.send(work());
            }
        }));
        let mut queued = Queued {
            batch: self,
            ticket: Some(ticket),
        };
        // Lets the other ready connections reach this point first.
        YieldOnce(false).await;
        self.run_through(ticket);
        // Out of the queue now: answered here, or taken by another round.
        queued.ticket = None;
        // Ready unless another task took this review into its round and is
        // answering it right now.
        rx.await.ok()
    }

    /// Takes the job of `ticket` out of the queue if it is still there,
    /// and drops it (with the body it holds) once the lock is released.
    fn withdraw(&self, ticket: u64) {
        let job = {
            let mut queue = self.lock();
            let at = queue.jobs.iter().position(|(t, _)| *t == ticket);
            at.and_then(|at| queue.jobs.remove(at))
        };
        drop(job);
    }

    fn push(&self, job: Job) -> u64 {
        let mut queue = self.lock();
        let ticket = queue.next;
        queue.next += 1;
        queue.jobs.push_back((ticket, job));
        ticket
    }

    /// If the review of `ticket` is still queued (no other task took it
    /// into its round), answers the queued reviews up to it, oldest first,
    /// and then more up to [`MAX_ROUND`] in all.
    fn run_through(&self, ticket: u64) {
        let round: Vec<Job> = {
            let mut queue = self.lock();
            let mut round = Vec::new();
            if queue.jobs.front().is_some_and(|(t, _)| *t <= ticket) {
                while queue
                    .jobs
                    .front()
                    .is_some_and(|(t, _)| *t <= ticket || round.len() < MAX_ROUND)
                {
                    if let Some((_, job)) = queue.jobs.pop_front() {
                        round.push(job);
                    }
                }
            }
            round
        };
        for job in round {
            // A panic costs only that review its answer (its sender drops),
            // not the others of the round nor the task running it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        }
    }

    /// The queue, also after a panic elsewhere: jobs never run under the
    /// lock, so a poisoned one is still whole.
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn queued(&self) -> usize {
        self.lock().jobs.len()
    }
}

/// A review's place in the queue while its task waits for its round: a
/// task dropped there (its connection closed) takes its job out, so that
/// the body it holds is not kept until some later round, which under
/// `auto` may never come once the load falls.
struct Queued<'b> {
    batch: &'b Batch,
    ticket: Option<u64>,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket {
            self.batch.withdraw(ticket);
        }
    }
}

/// Pending once, woken at once: the task goes to the back of its thread's
/// run queue, behind the connections that are ready now. Not
/// `tokio::task::yield_now`, which holds the task until the thread next
/// polls for I/O, up to 61 other tasks later under load (measured: the
/// server's p99 at half its maximum rose from 0.15 ms to 2.1 ms).
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("queued", &self.queued())
            .field("mode", &self.mode)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Waker};

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    }

    fn batch() -> Batch {
        let gauge = prometheus::IntGauge::new("saturated", "test").expect("gauge");
        Batch::new(ReviewRounds::Always, gauge)
    }

    #[test]
    fn reviews_ready_together_are_answered_after_all_of_them_queued() {
        let batch = Arc::new(batch());
        let events = Arc::new(Mutex::new(Vec::new()));
        let answers = runtime().block_on(async {
            let tasks: Vec<_> = (0..4)
                .map(|i| {
                    let (batch, events) = (batch.clone(), events.clone());
                    tokio::spawn(async move {
                        events.lock().unwrap().push(format!("ready {i}"));
                        let log = events.clone();
                        batch
                            .run(move || {
                                log.lock().unwrap().push(format!("answer {i}"));
                                i * 10
                            })
                            .await
                    })
                })
                .collect();
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.expect("task"));
            }
            answers
        });
        assert_eq!(answers, [Some(0), Some(10), Some(20), Some(30)]);
        let events = events.lock().unwrap().clone();
        assert_eq!(
            events,
            [
                "ready 0", "ready 1", "ready 2", "ready 3", "answer 0", "answer 1", "answer 2",
                "answer 3"
            ]
        );
        assert_eq!(batch.queued(), 0);
    }

    #[test]
    fn a_refresh_judges_saturation_for_the_gauge() {
        let gauge = prometheus::IntGauge::new("saturated", "test").expect("gauge");
        let batch = Batch::new(ReviewRounds::Auto, gauge.clone());
        gauge.set(7);
        // What `/metrics` does before it renders: the verdict taken now,
        // the gauge set from it, inside the server's runtime.
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(async { batch.refresh_saturation() });
        assert_eq!(gauge.get(), 0);
    }

    #[test]
    fn a_round_is_bounded_and_every_review_is_still_answered() {
        let batch = Arc::new(batch());
        let ran = Arc::new(AtomicUsize::new(0));
        let answers = runtime().block_on(async {
            let tasks: Vec<_> = (0..(MAX_ROUND * 2 + 3))
                .map(|i| {
                    let (batch, ran) = (batch.clone(), ran.clone());
                    tokio::spawn(async move {
                        batch
                            .run(move || {
                                ran.fetch_add(1, Ordering::Relaxed);
                                i
                            })
                            .await
                    })
                })
                .collect();
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.expect("task").expect("answered"));
            }
            answers
        });
        assert_eq!(answers, (0..MAX_ROUND * 2 + 3).collect::<Vec<_>>());
        assert_eq!(ran.load(Ordering::Relaxed), MAX_ROUND * 2 + 3);
        assert_eq!(batch.queued(), 0);
    }

    #[test]
    fn a_review_whose_caller_left_takes_its_work_out_of_the_queue() {
        let batch = Arc::new(batch());
        let ran = Arc::new(AtomicUsize::new(0));
        runtime().block_on(async {
            {
                let counted = ran.clone();
                let mut left = pin!(batch.run(move || {
                    counted.fetch_add(1, Ordering::Relaxed);
                }));
                // Queued and yielded, then dropped: a connection closed.
                let mut cx = Context::from_waker(Waker::noop());
                assert!(left.as_mut().poll(&mut cx).is_pending());
            }
            // Its job left the queue with it.
            assert_eq!(batch.queued(), 0);
            let stayed = batch.run(|| 7).await;
            assert_eq!(stayed, Some(7));
        });
        assert_eq!(ran.load(Ordering::Relaxed), 0);
        assert_eq!(batch.queued(), 0);
    }

    #[test]
    fn a_panicking_review_costs_only_its_own_answer() {
        let batch = Arc::new(batch());
        let answers = runtime().block_on(async {
            let bad = {
                let batch = batch.clone();
                tokio::spawn(async move { batch.run(|| -> u8 { panic!("rule engine") }).await })
            };
            let good = {
                let batch = batch.clone();
                tokio::spawn(async move { batch.run(|| 1u8).await })
            };
            (bad.await.expect("task"), good.await.expect("task"))
        });
        assert_eq!(answers, (None, Some(1)));
        assert_eq!(batch.queued(), 0);
    }
}
