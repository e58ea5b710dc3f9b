//! Equality loops answered from counted reads. When a scanned loop runs
//! again over the same list (the inner loop of `all(p, exists_one(q,
//! q.name == p.name))`, `all(o, exists(n, n.name == o.name))`), its
//! element reads are strings kept from the first run: counting them once
//! turns each later run into one lookup, and the run is charged in one sum
//! what its steps would have charged one by one. The outer loop of such a
//! pair, when it compares a field of its own element, does not walk its
//! body at all (`lookup`).

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};

use super::charge::{long_compare_cost, SHORT_STRING_BYTES};
use super::loops::quantifier;
use crate::ir::{BinOp, LoopKind};
use crate::value::{str_size, List, Str, Value};

/// A slot's counted reads, or why there are none.
pub(crate) enum Indexed<'a> {
    NotYet,
    /// A read is not a string.
    Unusable,
    Built(StrIndex<'a>),
}

/// The string reads of one slot of a scanned loop, counted.
pub(crate) struct StrIndex<'a> {
    /// Per element, the string it read.
    keys: Vec<Str<'a>>,
    /// Per string read, the first and the last element that read it (how
    /// many did is in the first's `prefix` entry), found by the string's
    /// hash: a table of indices, so that no string is copied into it.
    counts: HashTable<(u32, u32)>,
    /// Per element, the next element that read the same string (`None`
    /// for the last): `filter` takes the equal elements in order. Empty
    /// for the other loops, which need only the counts.
    next: Vec<Option<u32>>,
    /// Per element `i` from 0 to n, over the elements before it: what
    /// their reads charged and how many read a non-empty string; and, for
    /// `i` < n, its own string's bytes and characters (what comparing it
    /// with a long string costs depends on both lengths; counted only
    /// past the short strings, whose comparisons never read them), the
    /// first element that read the same string and (at that first
    /// element) how many did: what the lookup by string gives, without
    /// hashing the string again when the element itself is the one looked
    /// up. One vector, one allocation.
    prefix: Vec<Prefix>,
}

/// One entry of [`StrIndex::prefix`]; the totals entry's fields that
/// describe an element (bytes, characters, first reader, count) are zero.
#[derive(Clone, Copy, Default)]
struct Prefix {
    read_cost: u64,
    nonempty: u64,
    bytes: usize,
    chars: u64,
    first: u32,
    same: u32,
}

/// What comparing `x` (of `x_len` bytes, `x_chars` characters past the
/// short strings) with the reads of the first `steps` elements charges;
/// `at` is their prefix entry. A short `x` costs the same against any
/// non-empty read (what it costs against itself: a unit, or none when it
/// is empty) and nothing against an empty one; a long one as much as the
/// shorter of the two, read by read.
#[inline(always)]
fn compares(index: &StrIndex<'_>, x_len: usize, x_chars: u64, steps: usize, at: Prefix) -> u64 {
    if x_len <= SHORT_STRING_BYTES {
        return u64::from(x_len > 0) * at.nonempty;
    }
    long_compares(index, x_len, x_chars, steps)
}

/// [`compares`] of a long `x`, read by read.
#[inline(never)]
fn long_compares(index: &StrIndex<'_>, x_len: usize, x_chars: u64, steps: usize) -> u64 {
    index.prefix[..steps]
        .iter()
        .map(|p| long_compare_cost(x_len, x_chars, p.bytes, p.chars))
        .sum()
}

/// The hash of a string in [`StrIndex::counts`].
fn hash_of(s: &str) -> u64 {
    foldhash::fast::FixedState::default().hash_one(s)
}

impl<'a> StrIndex<'a> {
    /// The kept reads of a scan slot counted; `Unusable` when one is not a
    /// string.
    pub(super) fn build(reads: &[Option<(u64, Value<'a>)>], kind: LoopKind) -> Indexed<'a> {
        Self::build_from(
            reads.len(),
            reads.iter().map(|read| match read {
                Some((cost, Value::Str(s))) => Some((*cost, s.clone())),
                _ => None,
            }),
            kind,
        )
    }

    /// Strings read straight from a list's JSON (`lookup`'s direct reads),
    /// each charged `cost`, counted.
    pub(super) fn build_strs(reads: &[&'a str], cost: u64, kind: LoopKind) -> Indexed<'a> {
        Self::build_from(
            reads.len(),
            reads.iter().map(|s| Some((cost, Str::Borrowed(s)))),
            kind,
        )
    }

    /// [`StrIndex::build_strs`] of a table's string column. Not one
    /// function over any iterator of strings: merged, the engine's code
    /// was laid out otherwise and a CREATE took about 110 instructions
    /// more (in `select`, which it does not call).
    pub(super) fn build_column(
        reads: celhook_json::Strings<'a>,
        cost: u64,
        kind: LoopKind,
    ) -> Indexed<'a> {
        Self::build_from(
            reads.len(),
            reads.iter().map(|s| Some((cost, Str::Borrowed(s)))),
            kind,
        )
    }

    fn build_from(
        n: usize,
        reads: impl Iterator<Item = Option<(u64, Str<'a>)>>,
        kind: LoopKind,
    ) -> Indexed<'a> {
        let chained = kind == LoopKind::Filter;
        let mut index = StrIndex {
            keys: Vec::with_capacity(n),
            counts: HashTable::with_capacity(n),
            next: if chained { vec![None; n] } else { Vec::new() },
            prefix: Vec::with_capacity(n + 1),
        };
        let (mut cost, mut nonempty) = (0u64, 0u64);
        for (i, read) in reads.enumerate() {
            let Some((read_cost, s)) = read else {
                return Indexed::Unusable;
            };
            let Ok(at) = u32::try_from(i) else {
                return Indexed::Unusable;
            };
            let (bytes, nonempty_read) = (s.len(), !s.is_empty());
            // Only a long string's comparisons read its characters.
            let chars = if bytes > SHORT_STRING_BYTES {
                str_size(&s)
            } else {
                0
            };
            let keys = &index.keys;
            let first = match index.counts.entry(
                hash_of(&s),
                |&(first, _)| *keys[first as usize] == *s,
                |&(first, _)| hash_of(&keys[first as usize]),
            ) {
                Entry::Occupied(mut e) => {
                    let (first, last) = e.get_mut();
                    if chained {
                        index.next[*last as usize] = Some(at);
                    }
                    *last = at;
                    *first as usize
                }
                Entry::Vacant(e) => {
                    e.insert((at, at));
                    i
                }
            };
            index.keys.push(s);
            index.prefix.push(Prefix {
                read_cost: cost,
                nonempty,
                bytes,
                chars,
                first: first as u32,
                same: 0,
            });
            // The first element's entry counts the string's reads.
            index.prefix[first].same += 1;
            cost = cost.saturating_add(read_cost);
            nonempty += u64::from(nonempty_read);
        }
        index.prefix.push(Prefix {
            read_cost: cost,
            nonempty,
            ..Prefix::default()
        });
        Indexed::Built(index)
    }

    /// How many elements read `x`, and the first of them.
    fn find(&self, x: &str) -> Option<(u64, usize)> {
        let &(first, _) = self
            .counts
            .find(hash_of(x), |&(first, _)| *self.keys[first as usize] == *x)?;
        let first = first as usize;
        Some((u64::from(self.prefix[first].same), first))
    }
}

/// Whether [`tally`] knows loops of `kind` over a comparison `op`: those
/// decided by the equal elements alone.
pub(crate) fn answers(kind: LoopKind, op: BinOp) -> bool {
    matches!(
        (kind, op),
        (
            LoopKind::ExistsOne | LoopKind::Exists | LoopKind::Filter,
            BinOp::Eq
        ) | (LoopKind::All, BinOp::Ne)
    )
}

/// What the loop (one [`answers`] knows) over the `n` elements of `index`,
/// comparing each read with `x` (`other_cost` for its side each time),
/// charges as the steps of `scan_steps` would: each step's own charge, a read and a
/// comparison each, and what ends the loop (for `exists_one`, 2 per match
/// and 2 at the end; for `filter`, 13 per match, which it keeps in order,
/// and 1 at the end; for `exists` and `all`, the first equal element
/// decides), and its result; nothing is charged here. `None` when that
/// sum is not known (`x` not a string).
pub(super) fn tally<'a>(
    index: &StrIndex<'a>,
    kind: LoopKind,
    list: &List<'a>,
    other_cost: u64,
    x: &Value<'a>,
) -> Option<(u64, Value<'a>)> {
    let Value::Str(x) = x else { return None };
    let x: &str = x;
    let x_chars = if x.len() > SHORT_STRING_BYTES {
        str_size(x)
    } else {
        0
    };
    let found = index.find(x);
    tally_found(index, kind, list, other_cost, (x.len(), x_chars), found)
}

/// [`tally`] of element `i`'s own read of the index's list (the outer
/// loop over the very list the inner loop counted), for a loop that
/// answers a bool (not `filter`): its string's count and first element
/// are kept per element, so nothing is hashed, and no value is made.
#[inline(always)]
pub(super) fn tally_own<'a>(
    index: &StrIndex<'a>,
    kind: LoopKind,
    n: usize,
    other_cost: u64,
    i: usize,
) -> Option<(u64, bool)> {
    // The last entry holds the totals, not an element.
    let p = index
        .prefix
        .get(..index.prefix.len().saturating_sub(1))?
        .get(i)?;
    let first = p.first;
    let count = index.prefix.get(first as usize)?.same;
    let x_chars = if p.bytes > SHORT_STRING_BYTES {
        p.chars
    } else {
        0
    };
    let found = Some((u64::from(count), first as usize));
    tally_bool(index, kind, n, other_cost, (p.bytes, x_chars), found)
}

/// What [`tally`] charges and answers for a string `x` of `x_len` bytes
/// and `x_chars` characters (counted only past the short strings), read
/// by `count` elements from `first` on (`found`), or by none.
#[inline]
fn tally_found<'a>(
    index: &StrIndex<'a>,
    kind: LoopKind,
    list: &List<'a>,
    other_cost: u64,
    x: (usize, u64),
    found: Option<(u64, usize)>,
) -> Option<(u64, Value<'a>)> {
    if kind != LoopKind::Filter {
        let (total, result) = tally_bool(index, kind, list.len(), other_cost, x, found)?;
        return Some((total, Value::Bool(result)));
    }
    let matches = found.map_or(0, |(count, _)| count);
    let mut out = Vec::with_capacity(matches as usize);
    let mut at = found.map(|(_, first)| first);
    while let Some(i) = at {
        out.push(list.get(i)?);
        at = index.next[i].map(|i| i as usize);
    }
    let n = list.len();
    Some((
        reads(index, other_cost, x, n) + 13 * matches + 1,
        Value::list(out),
    ))
}

/// What comparing `x` with the reads of the first `steps` elements
/// charges, their reads and the other side included. `steps` is at most
/// the list's length, which is the index's (its list key holds the
/// length). Runs once per element of an outer loop: `compares` inlines to
/// one multiply for a short `x`, and only a long one calls out.
#[inline(always)]
fn reads(
    index: &StrIndex<'_>,
    other_cost: u64,
    (x_len, x_chars): (usize, u64),
    steps: usize,
) -> u64 {
    let p = index.prefix[steps];
    p.read_cost + steps as u64 * other_cost + compares(index, x_len, x_chars, steps, p)
}

/// [`tally_found`] of a loop that answers a bool: `exists_one` (2 per
/// match and 2 at the end), `exists` and `all` (the first equal element
/// decides).
#[inline(always)]
fn tally_bool(
    index: &StrIndex<'_>,
    kind: LoopKind,
    n: usize,
    other_cost: u64,
    x: (usize, u64),
    found: Option<(u64, usize)>,
) -> Option<(u64, bool)> {
    match kind {
        LoopKind::ExistsOne => {
            let matches = found.map_or(0, |(count, _)| count);
            Some((
                reads(index, other_cost, x, n) + 2 * matches + 2,
                matches == 1,
            ))
        }
        LoopKind::All | LoopKind::Exists => {
            let (decide, step, condition) = quantifier(kind);
            let (steps, end, result) = match found {
                Some((_, first)) => {
                    let steps = first + 1;
                    let more = if steps < n { condition } else { 0 };
                    (steps, more + 1, decide)
                }
                None => (n, 1, !decide),
            };
            Some((
                steps as u64 * step + reads(index, other_cost, x, steps) + end,
                result,
            ))
        }
        _ => None,
    }
}
