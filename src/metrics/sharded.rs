//! Counter families added to on every review by every worker thread: the
//! per-rule counts and cost (`celhook_rule_*_total`, two or three adds per
//! rule per review). A `prometheus` counter is one atomic shared by all
//! threads, so on a machine with several workers each of those adds takes
//! its cache line from the core that last wrote it (measured here: 50 ns
//! an add with two threads on one counter, 5 ns on their own). Here a
//! series keeps a block of its counters per shard, one cache line each, a
//! thread adds to its own shard, and a scrape sums the shards.
//!
//! A shard held by one live thread alone is added to with a plain load and
//! store rather than a locked read-modify-write (which also waits for the
//! core's pending stores: about twenty cycles, two or three per rule per
//! review); threads past the shard count (more workers than CPUs, say, or
//! evaluation-pool threads) share a second set of shards, added to
//! atomically.
//!
//! Hand-written because the `prometheus` crate's thread-local counters
//! (`prometheus::local`) hold their counts until a flush, which a scrape
//! cannot ask of another thread.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{Counter, LabelPair, Metric, MetricFamily, MetricType};

/// At most this many shards of one thread each: past it, threads share the
/// shared shards (counts stay exact; only the adds contend again), and a
/// series stays small (2 KiB at most, both sets).
const MAX_SHARDS: usize = 8;

/// The counters of one series in one shard, alone on their cache line;
/// 128 bytes rather than 64, as Intel cores fetch lines in pairs.
#[repr(align(128))]
struct Shard<const N: usize>([AtomicU64; N]);

/// One label set's counters: `N` counters per shard.
pub struct Series<const N: usize> {
    shards: Box<[Shard<N>]>,
}

impl<const N: usize> Series<N> {
    fn new() -> Self {
        Series {
            // The shards of one thread each, then as many shared ones.
            shards: (0..2 * shard_count())
                .map(|_| Shard(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }

    /// Adds `v` to counter `i` (as the families were listed) in `shard`,
    /// the thread's [`this_shard`], looked up once for a review's many adds.
    #[inline]
    pub fn add_in(&self, shard: ShardId, i: usize, v: u64) {
        // Below `shard_count()` twice (`this_shard`), as every series has.
        let c = &self.shards[shard.index].0[i];
        if shard.index < self.shards.len() / 2 {
            // This thread's alone (`ShardId`): no other thread writes it,
            // and a scrape's relaxed loads see each store whole.
            c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Release);
        } else {
            c.fetch_add(v, Ordering::Release);
        }
    }

    /// Counter `i` over every shard.
    pub fn get(&self, i: usize) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0[i].load(Ordering::Acquire))
            .fold(0, u64::wrapping_add)
    }

    /// Every counter over every shard, the last family first. A review adds
    /// to a series' counters in their families' order (a rule's evaluation
    /// before its failure), each add a release: a counter read (acquire)
    /// before those added ahead of it finds them at least as far along, so
    /// a scrape never shows more failures than evaluations. Read first to
    /// last, an add landing between the two reads could.
    pub fn counts(&self) -> [u64; N] {
        let mut counts = [0; N];
        for i in (0..N).rev() {
            counts[i] = self.get(i);
        }
        counts
    }
}

impl<const N: usize> std::fmt::Debug for Series<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Series")
            .field("counts", &self.counts())
            .finish()
    }
}

/// The shards held by one thread each, and the shared ones: the CPUs the
/// process may use (the default worker count, and the threads that can run
/// at once) rounded up to a power of two (a number past them picks a shared
/// shard by its low bits), at most [`MAX_SHARDS`].
fn shard_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .next_power_of_two()
            .min(MAX_SHARDS)
    })
}

/// A thread's shard in every series: its own, or a shared one. Not `Send`:
/// only the thread [`this_shard`] gave it to may add through it.
#[derive(Clone, Copy, Debug)]
pub struct ShardId {
    index: usize,
    _thread: PhantomData<*const ()>,
}

/// This thread's shard. Its number is the lowest one no live thread holds,
/// taken when the thread first adds and given back when it exits (with a
/// lock, so the next holder sees every add before): the threads that
/// record at one moment (the workers, and evaluation-pool threads, which
/// come and go) hold distinct numbers, however many have come and gone
/// before. A number at or past the shard count, or a thread past its
/// locals' teardown, adds to a shared shard.
pub fn this_shard() -> ShardId {
    thread_local! {
        static SHARD: Held = Held::take();
    }
    let count = shard_count();
    let index = match SHARD.try_with(|s| s.0) {
        Ok(own) if own < count => own,
        Ok(other) => count + (other & (count - 1)),
        Err(_) => count,
    };
    ShardId {
        index,
        _thread: PhantomData,
    }
}

/// Shard numbers: those of exited threads, for the next threads to reuse,
/// and the next never handed out.
struct Numbers {
    free: Mutex<Vec<usize>>,
    next: AtomicUsize,
}

impl Numbers {
    const fn new() -> Self {
        Numbers {
            free: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
        }
    }

    /// The lowest free number (the low numbers have shards of their own).
    fn take(&self) -> usize {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let lowest = free.iter().enumerate().min_by_key(|(_, n)| **n);
        match lowest.map(|(i, _)| i) {
            Some(i) => free.swap_remove(i),
            None => self.next.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn give(&self, n: usize) {
        self.free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(n);
    }
}

static NUMBERS: Numbers = Numbers::new();

/// A shard number held by a live thread.
struct Held(usize);

impl Held {
    fn take() -> Self {
        Held(NUMBERS.take())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        NUMBERS.give(self.0);
    }
}

/// `N` counter families over the same labels, each label set one
/// [`Series`]. Clones share the families; series are never removed (a
/// rule that leaves the config keeps its last counts, as a
/// `prometheus` vector's children do).
#[derive(Clone)]
pub struct ShardedCounters<const N: usize> {
    inner: Arc<Inner<N>>,
}

impl<const N: usize> std::fmt::Debug for ShardedCounters<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .inner
            .descs
            .iter()
            .map(|d| d.fq_name.as_str())
            .collect();
        f.debug_struct("ShardedCounters")
            .field("families", &names)
            .finish()
    }
}

struct Inner<const N: usize> {
    descs: [Desc; N],
    labels: Vec<String>,
    series: Mutex<BTreeMap<Vec<String>, Arc<Series<N>>>>,
}

impl<const N: usize> ShardedCounters<N> {
    /// The families `names_helps` (name, help), labelled `labels`.
    pub fn new(names_helps: [(&str, &str); N], labels: &[&str]) -> prometheus::Result<Self> {
        let labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let mut descs = Vec::with_capacity(N);
        for (name, help) in names_helps {
            descs.push(Desc::new(
                name.into(),
                help.into(),
                labels.clone(),
                HashMap::new(),
            )?);
        }
        let descs: [Desc; N] = descs
            .try_into()
            .map_err(|_| prometheus::Error::Msg("one description per family".into()))?;
        Ok(ShardedCounters {
            inner: Arc::new(Inner {
                descs,
                labels,
                series: Mutex::new(BTreeMap::new()),
            }),
        })
    }

    /// The series of `values` (one per label, in the labels' order; a
    /// missing one is empty, an extra one ignored), created at zero the
    /// first time. Called when a config is bound, not per review.
    pub fn series(&self, values: &[&str]) -> Arc<Series<N>> {
        let key: Vec<String> = (0..self.inner.labels.len())
            .map(|i| values.get(i).map_or_else(String::new, |v| v.to_string()))
            .collect();
        let mut series = self
            .inner
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        series
            .entry(key)
            .or_insert_with(|| Arc::new(Series::new()))
            .clone()
    }
}

impl<const N: usize> Collector for ShardedCounters<N> {
    fn desc(&self) -> Vec<&Desc> {
        self.inner.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let series = self
            .inner
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Label pairs sorted by name, as the crate's own vectors write them.
        let mut order: Vec<usize> = (0..self.inner.labels.len()).collect();
        order.sort_by_key(|&i| &self.inner.labels[i]);
        // Each series read once, so that one scrape's families agree (no
        // more failures than evaluations: `Series::counts`).
        let counts: Vec<[u64; N]> = series.values().map(|s| s.counts()).collect();
        (0..N)
            .map(|i| {
                let desc = &self.inner.descs[i];
                let mut family = MetricFamily::default();
                family.set_name(desc.fq_name.clone());
                family.set_help(desc.help.clone());
                family.set_field_type(MetricType::COUNTER);
                let metrics = series
                    .keys()
                    .zip(&counts)
                    .map(|(values, counts)| {
                        let label = order
                            .iter()
                            .map(|&l| {
                                let mut pair = LabelPair::default();
                                pair.set_name(self.inner.labels[l].clone());
                                pair.set_value(values[l].clone());
                                pair
                            })
                            .collect();
                        let mut counter = Counter::default();
                        counter.set_value(counts[i] as f64);
                        let mut metric = Metric::from_label(label);
                        metric.set_counter(counter);
                        metric
                    })
                    .collect();
                family.set_metric(metrics);
                family
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> ShardedCounters<2> {
        ShardedCounters::new([("a_total", "A."), ("b_total", "B.")], &["z", "y"])
            .expect("valid families")
    }

    #[test]
    fn counts_from_every_thread_add_up() {
        let c = families();
        let s = c.series(&["1", "2"]);
        std::thread::scope(|scope| {
            for t in 0..8u64 {
                let s = &s;
                scope.spawn(move || {
                    for _ in 0..1000 {
                        s.add_in(this_shard(), 0, 1);
                        s.add_in(this_shard(), 1, t);
                    }
                });
            }
        });
        assert_eq!(s.get(0), 8000);
        assert_eq!(s.get(1), 1000 * (0..8).sum::<u64>());
    }

    #[test]
    fn a_scrape_never_reads_a_later_family_ahead_of_an_earlier_one() {
        // A review adds to a series' first counter, then its second (an
        // evaluation, then its failure); a scrape racing it must never see
        // more of the second than of the first.
        let c = families();
        let s = c.series(&["1", "2"]);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let shard = this_shard();
                for _ in 0..2_000_000 {
                    s.add_in(shard, 0, 1);
                    s.add_in(shard, 1, 1);
                }
                done.store(true, Ordering::Release);
            });
            let mut reads = 0u64;
            while !done.load(Ordering::Acquire) || reads == 0 {
                let [evaluations, failures] = s.counts();
                assert!(failures <= evaluations, "{failures} > {evaluations}");
                reads += 1;
            }
        });
        assert_eq!(s.counts(), [2_000_000, 2_000_000]);
    }

    #[test]
    fn numbers_given_back_are_taken_again_lowest_first() {
        let n = Numbers::new();
        assert_eq!([n.take(), n.take(), n.take()], [0, 1, 2]);
        n.give(1);
        n.give(0);
        assert_eq!([n.take(), n.take(), n.take()], [0, 1, 3]);
    }

    #[test]
    fn a_thread_keeps_its_shard() {
        let mine = this_shard().index;
        assert_eq!(this_shard().index, mine);
        let other = std::thread::spawn(|| this_shard().index)
            .join()
            .expect("runs");
        assert!(other != mine || mine >= shard_count(), "{mine} {other}");
    }

    #[test]
    fn threads_alive_at_once_past_the_shard_count_lose_no_add() {
        // All alive together (the barrier), so that the first threads hold
        // shards of their own, added to without a locked instruction, and
        // the rest share one, added to atomically: each count exact.
        let c = families();
        let s = c.series(&["1", "2"]);
        let threads = shard_count() + 4;
        let barrier = std::sync::Barrier::new(threads);
        let indexes = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for t in 0..threads as u64 {
                let (s, barrier, indexes) = (&s, &barrier, &indexes);
                scope.spawn(move || {
                    let shard = this_shard();
                    barrier.wait();
                    for _ in 0..20_000 {
                        s.add_in(shard, 0, 1);
                        s.add_in(shard, 1, t);
                    }
                    indexes.lock().expect("not poisoned").push(shard.index);
                    barrier.wait();
                });
            }
        });
        let threads = threads as u64;
        assert_eq!(s.get(0), 20_000 * threads);
        assert_eq!(s.get(1), 20_000 * (0..threads).sum::<u64>());
        // No shard of its own is held twice; the others share shards.
        let mut indexes = indexes.into_inner().expect("not poisoned");
        indexes.sort_unstable();
        let own: Vec<usize> = indexes
            .iter()
            .copied()
            .filter(|&i| i < shard_count())
            .collect();
        let mut distinct = own.clone();
        distinct.dedup();
        assert_eq!(own, distinct, "{indexes:?}");
        assert!(
            indexes.iter().all(|&i| i < 2 * shard_count()),
            "{indexes:?}"
        );
        assert!(
            indexes.iter().filter(|&&i| i >= shard_count()).count() >= 4,
            "{indexes:?}"
        );
    }

    #[test]
    fn the_same_labels_give_the_same_series() {
        let c = families();
        c.series(&["1", "2"]).add_in(this_shard(), 0, 3);
        std::thread::spawn({
            let s = c.series(&["1", "2"]);
            move || s.add_in(this_shard(), 0, 4)
        })
        .join()
        .expect("adds");
        assert_eq!(c.series(&["1", "2"]).get(0), 7);
        assert_eq!(c.series(&["1", "3"]).get(0), 0);
    }

    #[test]
    fn a_scrape_writes_each_family_with_sorted_labels() {
        let c = families();
        c.series(&["1", "2"]).add_in(this_shard(), 1, 5);
        let registry = prometheus::Registry::new();
        registry.register(Box::new(c.clone())).expect("registers");
        let mut out = Vec::new();
        prometheus::Encoder::encode(
            &prometheus::TextEncoder::new(),
            &registry.gather(),
            &mut out,
        )
        .expect("encodes");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains("# TYPE a_total counter"), "{text}");
        assert!(text.contains("a_total{y=\"2\",z=\"1\"} 0"), "{text}");
        assert!(text.contains("b_total{y=\"2\",z=\"1\"} 5"), "{text}");
    }
}
