//! An array of flat objects kept by column: every element an object of
//! the same keys, and each key's values of one scalar kind (an int, a
//! string or a boolean in every element).
//!
//! Lists of such objects (a workload's ports, its env) are what rules
//! loop over most, and as a tree each element costs an allocation, an
//! entry per field and a drop. Kept by column, an element costs its
//! values alone, and a loop testing one field reads one typed column.
//! The table means exactly the array it stands for: anything that asks
//! for the elements (`Table::items`, `Value::as_array`) gets them built
//! once, as the parser would have built them.

use std::fmt;
use std::sync::OnceLock;

use crate::tape::{span_str, Span, SIDE};
use crate::{Map, Number, Str, Value};

/// A string cell: a [`Span`] of its table's text, as the tape keeps its
/// strings. While the table is read, bytes `start..end` of the array's
/// text as written (a string with no escape); `None` past what a span can
/// say (the array is then no table). A cell costs these eight bytes, not
/// a string of its own: the text is copied once for the whole table.
pub(crate) fn text_span(start: usize, end: usize) -> Option<Span> {
    let end = u32::try_from(end).ok().filter(|e| *e < SIDE)?;
    let start = u32::try_from(start).ok().filter(|s| *s <= end)?;
    Some(Span {
        start,
        len: end - start,
    })
}

/// [`text_span`] of bytes `start..end` of the strings decoded while the
/// table is read (those with escapes), marked [`SIDE`] as the tape marks
/// its own; [`Table::new`] moves them behind the text it keeps.
pub(crate) fn side_span(start: usize, end: usize) -> Option<Span> {
    text_span(start, end).map(|s| Span {
        start: s.start | SIDE,
        ..s
    })
}

/// The values of one key, one per element.
#[derive(Clone, Debug)]
pub(crate) enum Column {
    Int(Vec<i64>),
    Str(Vec<Span>),
    Bool(Vec<bool>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Int(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    /// Keeps the first `n` values.
    pub(crate) fn truncate(&mut self, n: usize) {
        match self {
            Column::Int(v) => v.truncate(n),
            Column::Str(v) => v.truncate(n),
            Column::Bool(v) => v.truncate(n),
        }
    }

    /// The column's values, its strings in `text`.
    fn cells<'t>(&'t self, text: &'t str) -> Cells<'t> {
        match self {
            Column::Int(v) => Cells::Int(v),
            Column::Str(spans) => Cells::Str(Strings { text, spans }),
            Column::Bool(v) => Cells::Bool(v),
        }
    }
}

/// The text of a table being read and the strings it decoded, which its
/// string cells are spans of.
#[derive(Clone, Copy)]
pub(crate) struct Texts<'t> {
    pub(crate) text: &'t str,
    pub(crate) decoded: &'t str,
}

impl<'t> Texts<'t> {
    /// A made table's text, which holds its decoded strings.
    fn of(text: &'t str) -> Texts<'t> {
        Texts { text, decoded: "" }
    }

    fn at(self, span: Span) -> &'t str {
        span_str(self.text, self.decoded, span)
    }
}

/// The string `span` marks in a made table's `text`. Spans are made by the
/// parser from the text they index, so that one out of range would be a
/// bug: it reads as the empty string rather than stop the service.
#[inline(always)]
fn slice(text: &str, span: Span) -> &str {
    text.get(span.range()).unwrap_or_default()
}

/// The values of one key of a table, by kind (see [`Table::column`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cells<'t> {
    Int(&'t [i64]),
    Str(Strings<'t>),
    Bool(&'t [bool]),
}

/// The values of a string column.
#[derive(Clone, Copy)]
pub struct Strings<'t> {
    text: &'t str,
    spans: &'t [Span],
}

impl<'t> Strings<'t> {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The `i`th string.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&'t str> {
        let text = self.text;
        self.spans.get(i).map(|s| slice(text, *s))
    }

    /// The `i`th string's UTF-8 bytes, sliced as [`Strings::bytes`]
    /// slices them.
    #[inline(always)]
    pub fn bytes_at(&self, i: usize) -> Option<&'t [u8]> {
        let text = self.text.as_bytes();
        self.spans
            .get(i)
            .map(|s| text.get(s.range()).unwrap_or_default())
    }

    /// The strings in order.
    #[inline(always)]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'t str> + Clone + 't {
        let text = self.text;
        self.spans.iter().map(move |s| slice(text, *s))
    }

    /// The strings' UTF-8 bytes in order: where bytes will do, they are
    /// sliced without [`Strings::iter`]'s check that each end is a
    /// character's (two per string, about as much as comparing a short
    /// name).
    #[inline(always)]
    pub fn bytes(&self) -> impl ExactSizeIterator<Item = &'t [u8]> + Clone + 't {
        let text = self.text.as_bytes();
        self.spans
            .iter()
            .map(move |s| text.get(s.range()).unwrap_or_default())
    }
}

impl PartialEq for Strings<'_> {
    fn eq(&self, other: &Strings<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for Strings<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// An array of flat objects, kept by column (see the module's comment).
pub struct Table {
    /// The elements' keys, strictly ascending (as `key_order` sorts), each
    /// written without escapes. This and `columns` are vectors, not boxed
    /// slices: a parsed table's are given room, and shrinking them to fit
    /// was two reallocations a table.
    keys: Vec<Str>,
    /// One per key, each as long as the table.
    columns: Vec<Column>,
    /// The array's text as written up to its last string cell, then the
    /// strings that had escapes, decoded: the string cells are slices of
    /// it.
    text: Box<str>,
    len: usize,
    /// The elements as a tree, built when first asked for.
    items: OnceLock<Vec<Value>>,
}

impl Table {
    /// A table of `columns` under `keys` (ascending, unique), its string
    /// cells in `texts`; `None` when their counts or lengths differ, the
    /// keys are out of order, the text is too long for a span, or there is
    /// no row (an empty list is a list, whatever keys it was given).
    pub(crate) fn new(keys: Vec<Str>, mut columns: Vec<Column>, texts: Texts<'_>) -> Option<Table> {
        let len = columns.first().map_or(0, Column::len);
        let fits = keys.len() == columns.len()
            && !keys.is_empty()
            && len > 0
            && columns.iter().all(|c| c.len() == len)
            && keys
                .windows(2)
                .all(|w| crate::key_order(&w[0], &w[1]).is_lt());
        if !fits {
            return None;
        }
        // The text as written up to its last string cell (none without a
        // string column), then the decoded strings (rarely any) behind it.
        let mut kept = 0;
        for column in &columns {
            if let Column::Str(spans) = column {
                if let Some(last) = spans.iter().rev().find(|s| s.start & SIDE == 0) {
                    kept = kept.max(last.range().end);
                }
            }
        }
        let kept = texts.text.get(..kept)?;
        u32::try_from(kept.len() + texts.decoded.len())
            .ok()
            .filter(|end| *end < SIDE)?;
        let text: Box<str> = if texts.decoded.is_empty() {
            Box::from(kept)
        } else {
            let at = kept.len() as u32;
            for column in &mut columns {
                if let Column::Str(spans) = column {
                    for s in spans.iter_mut().filter(|s| s.start & SIDE != 0) {
                        s.start = (s.start & !SIDE) + at;
                    }
                }
            }
            [kept, texts.decoded].concat().into_boxed_str()
        };
        Some(Table {
            keys,
            columns,
            text,
            len,
            items: OnceLock::new(),
        })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements' keys, ascending.
    pub fn keys(&self) -> &[Str] {
        &self.keys
    }

    /// The values of `key`, when the elements have it.
    #[inline]
    pub fn column(&self, key: &str) -> Option<Cells<'_>> {
        let at = self.keys.iter().position(|k| crate::same_key(k, key))?;
        Some(self.columns.get(at)?.cells(&self.text))
    }

    /// [`Table::column`], looked for first at `hint` (the key's place
    /// among its schema's properties, which is its place among the keys
    /// when the elements have every property), as `Map::get_hinted` looks.
    #[inline]
    pub fn column_hinted(&self, key: &str, hint: usize) -> Option<Cells<'_>> {
        match self.keys.get(hint) {
            Some(k) if crate::same_key(k, key) => Some(self.columns.get(hint)?.cells(&self.text)),
            _ => self.column(key),
        }
    }

    /// The elements as the tree holds them, built on the first call.
    pub fn items(&self) -> &Vec<Value> {
        self.items.get_or_init(|| self.build())
    }

    /// The elements, taken as a tree.
    pub fn into_items(self) -> Vec<Value> {
        let Table {
            keys,
            columns,
            text,
            len,
            items,
        } = self;
        match items.into_inner() {
            Some(items) => items,
            None => Table::build_of(&keys, &columns, Texts::of(&text), len),
        }
    }

    fn build(&self) -> Vec<Value> {
        Table::build_of(&self.keys, &self.columns, Texts::of(&self.text), self.len)
    }

    /// The first `len` rows of `columns` as the tree's elements.
    pub(crate) fn build_of(
        keys: &[Str],
        columns: &[Column],
        texts: Texts<'_>,
        len: usize,
    ) -> Vec<Value> {
        (0..len)
            .map(|i| {
                let entries = keys
                    .iter()
                    .zip(columns)
                    .map(|(k, c)| (k.clone(), cell(c, texts, i)))
                    .collect();
                Value::Object(Map::from_sorted_unique(entries))
            })
            .collect()
    }
}

/// Row `i` of `column` as the tree holds it.
fn cell(column: &Column, texts: Texts<'_>, i: usize) -> Value {
    match column {
        Column::Int(v) => Value::Number(Number::from(v[i])),
        Column::Str(v) => Value::String(Str::from(texts.at(v[i]))),
        Column::Bool(v) => Value::Bool(v[i]),
    }
}

impl Clone for Table {
    /// Without the built elements: a copy builds its own if asked.
    fn clone(&self) -> Table {
        Table {
            keys: self.keys.clone(),
            columns: self.columns.clone(),
            text: self.text.clone(),
            len: self.len,
            items: OnceLock::new(),
        }
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.len == other.len
            && self.keys == other.keys
            && self
                .columns
                .iter()
                .zip(&other.columns)
                .all(|(a, b)| a.cells(&self.text) == b.cells(&other.text))
    }
}

impl Eq for Table {}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items()).finish()
    }
}

#[cfg(test)]
mod tests;
