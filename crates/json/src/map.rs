//! A JSON object: entries in one vector, sorted by key without repeats.
//!
//! Sorted as `serde_json`'s B-tree maps iterate (bytewise), so anything
//! that walks an object (rules over a map's keys, error orders, the
//! written JSON) sees the order it always saw. The API server writes the
//! keys of an object sorted, so parsing checks one comparison per key and
//! sorts only what arrives out of order; a repeated key keeps its last
//! value, as with `serde_json`.

use std::cmp::Ordering;
use std::ops::Index;

use crate::{Str, Value};

/// A JSON object.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Map {
    entries: Vec<(Str, Value)>,
}

/// Up to this many entries a lookup compares keys in order (lengths
/// first), which beats a binary search's branches on small objects.
pub(crate) const LINEAR: usize = 8;

/// `a == b` for keys: short ones (most field names) compared in one or
/// two machine words, without the call of `memcmp` a slice comparison
/// makes.
#[inline(always)]
pub fn same_key(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

/// [`same_key`] of bytes (the parser matches a known key in the text).
#[inline(always)]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let half = |s: &[u8], at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_ne_bytes(w)
    };
    match n {
        // Two overlapping words cover 8 to 16 bytes.
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

/// The order of keys in a map (bytewise), their first bytes deciding most
/// pairs without a call of `memcmp` (siblings often share a first letter:
/// `port` and `protocol`).
#[inline(always)]
pub fn key_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    for (x, y) in a.iter().zip(b).take(8) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.cmp(b)
}

impl Map {
    pub fn new() -> Map {
        Map {
            entries: Vec::new(),
        }
    }

    pub fn with_capacity(n: usize) -> Map {
        Map {
            entries: Vec::with_capacity(n),
        }
    }

    /// A map of entries already sorted by key without repeats (the
    /// parser's and `serde_json`'s order); checked in debug builds.
    pub fn from_sorted_unique(entries: Vec<(Str, Value)>) -> Map {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        Map { entries }
    }

    /// A map of entries in any order: sorted, and of repeated keys the
    /// last value kept.
    pub fn from_entries(mut entries: Vec<(Str, Value)>) -> Map {
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable: repeated keys stay in their order, and the retained
            // one takes the later value.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|later, kept| {
                if later.0 == kept.0 {
                    std::mem::swap(&mut later.1, &mut kept.1);
                    true
                } else {
                    false
                }
            });
        }
        Map { entries }
    }

    /// The entries the map has room for (tests of what decoding keeps).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where `key` is, if present.
    #[inline]
    pub fn position(&self, key: &str) -> Option<usize> {
        if self.entries.len() <= LINEAR {
            self.entries.iter().position(|(k, _)| same_key(k, key))
        } else {
            self.entries
                .binary_search_by(|(k, _)| k.as_str().cmp(key))
                .ok()
        }
    }

    #[inline]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    /// [`Map::get`], trying position `hint` first: a caller that knows
    /// where a key usually is (the position of a field among its schema's
    /// properties, which an object holding every property shares, both
    /// sorted) finds it with one comparison.
    #[inline(always)]
    pub fn get_hinted(&self, key: &str, hint: usize) -> Option<&Value> {
        match self.entries.get(hint) {
            Some((k, v)) if same_key(k, key) => Some(v),
            _ => self.get(key),
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.position(key).map(|i| &mut self.entries[i].1)
    }

    pub fn get_key_value(&self, key: &str) -> Option<(&Str, &Value)> {
        self.position(key).map(|i| {
            let (k, v) = &self.entries[i];
            (k, v)
        })
    }

    /// The entry at `index` in key order.
    pub fn get_index(&self, index: usize) -> Option<(&Str, &Value)> {
        self.entries.get(index).map(|(k, v)| (k, v))
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Sets `key`, returning the value it replaced.
    pub fn insert(&mut self, key: impl Into<Str>, value: Value) -> Option<Value> {
        let key = key.into();
        // Appending in order (building an object key by key) is the
        // common case: no search.
        if self.entries.last().is_none_or(|(last, _)| *last < key) {
            self.entries.push((key, value));
            return None;
        }
        match self.entries.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.position(key).map(|i| self.entries.remove(i).1)
    }

    /// The value of `key`, inserted as null when missing.
    pub fn entry_or_null(&mut self, key: &str) -> &mut Value {
        let i = match self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (Str::from(key), Value::Null));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// The entry of `key`, to read or fill in place.
    pub fn entry(&mut self, key: impl Into<Str>) -> Entry<'_> {
        let key = key.into();
        match self.entries.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(index) => Entry {
                map: self,
                index,
                key: None,
            },
            Err(index) => Entry {
                map: self,
                index,
                key: Some(key),
            },
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries.iter())
    }

    /// Every key of either map once, in key order, with its value in each:
    /// both are sorted by key, so one walk over the two needs no lookup.
    pub fn union<'m>(
        &'m self,
        other: &'m Map,
    ) -> impl Iterator<Item = (&'m str, Option<&'m Value>, Option<&'m Value>)> {
        let (mut a, mut b) = (
            self.entries.iter().peekable(),
            other.entries.iter().peekable(),
        );
        std::iter::from_fn(move || {
            let order = match (a.peek(), b.peek()) {
                (None, None) => return None,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
            };
            Some(match order {
                Ordering::Less => a.next().map(|(k, v)| (k.as_str(), Some(v), None))?,
                Ordering::Greater => b.next().map(|(k, v)| (k.as_str(), None, Some(v)))?,
                Ordering::Equal => {
                    let ((k, va), (_, vb)) = (a.next()?, b.next()?);
                    (k.as_str(), Some(va), Some(vb))
                }
            })
        })
    }

    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (&Str, &mut Value)> {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &Str> + DoubleEndedIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> + DoubleEndedIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut Value> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&Str, &mut Value) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Adds every entry of `other`, its values replacing ours.
    pub fn append(&mut self, other: &mut Map) {
        for (k, v) in std::mem::take(&mut other.entries) {
            self.insert(k, v);
        }
    }
}

/// A key's place in a [`Map`]: its value, or where it would go.
pub struct Entry<'a> {
    map: &'a mut Map,
    index: usize,
    /// The key when it is not in the map yet.
    key: Option<Str>,
}

impl<'a> Entry<'a> {
    pub fn or_insert_with(self, make: impl FnOnce() -> Value) -> &'a mut Value {
        if let Some(key) = self.key {
            self.map.entries.insert(self.index, (key, make()));
        }
        &mut self.map.entries[self.index].1
    }

    pub fn or_insert(self, value: Value) -> &'a mut Value {
        self.or_insert_with(|| value)
    }
}

/// The entries of a [`Map`] in key order.
#[derive(Clone)]
pub struct Iter<'a>(std::slice::Iter<'a, (Str, Value)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Str, &'a Value);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Str, &'a Value);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Map {
    type Item = (Str, Value);
    type IntoIter = std::vec::IntoIter<(Str, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Into<Str>> FromIterator<(K, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(items: I) -> Map {
        Map::from_entries(items.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl<K: Into<Str>> Extend<(K, Value)> for Map {
    fn extend<I: IntoIterator<Item = (K, Value)>>(&mut self, items: I) {
        for (k, v) in items {
            self.insert(k, v);
        }
    }
}

impl Index<&str> for Map {
    type Output = Value;

    /// Panics when `key` is missing, as `serde_json`'s map does.
    fn index(&self, key: &str) -> &Value {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no entry {key:?} in the map"),
        }
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}
