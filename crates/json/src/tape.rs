//! A JSON value kept flat: every node in one vector, every object's entries
//! in a second and every array's elements in a third, all strings in one
//! buffer. Building one costs no allocation per object or string, and
//! dropping one no walk (docs/tape-plan.md, stage 2).
//!
//! It reads as the tree that the parser builds from the same text reads:
//! objects sorted by key with the last of a repeated key kept, numbers as
//! `serde_json::Number` (so `1` is not `1.0`), the same errors at the same
//! places. The property tests in `parse/tape/tests.rs` hold it to that.
//!
//! A string is a range of the parsed text, which the tape shares (an
//! `Arc<str>`): a request then holds no lifetime, and no string is copied.
//! Only a string with escapes is copied, unescaped, into a side buffer.

use std::fmt;
use std::sync::Arc;

use crate::{same_key, Map, Number, Str, Value};

/// A run in one of the tape's vectors (or bytes of its strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Span {
    #[inline(always)]
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// A string span's top bit: set when the string is in the side buffer
/// (it had escapes), clear when it is a range of the text.
pub(crate) const SIDE: u32 = 1 << 31;

/// One value: 16 bytes. Numbers are kept as `serde_json::Number` keeps
/// them, so that equality and printing stay the tree's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    PosInt(u64),
    NegInt(i64),
    Float(f64),
    Str(Span),
    /// Entries in `Tape::entries`, sorted by key without repeats.
    Object(Span),
    /// Node indices in `Tape::items`.
    Array(Span),
}

const _: () = assert!(std::mem::size_of::<Node>() == 16);

/// A JSON value as a tape, built by the parser (`Parser::tape`,
/// `tape_from_str`); never empty.
#[derive(Clone)]
pub struct Tape {
    /// The text the tape was parsed from.
    pub(crate) text: Arc<str>,
    /// Strings that had escapes, unescaped.
    pub(crate) side: String,
    pub(crate) nodes: Vec<Node>,
    /// Each object's entries: its key's span and its node.
    pub(crate) entries: Vec<(Span, u32)>,
    pub(crate) items: Vec<u32>,
    pub(crate) root: u32,
}

impl Tape {
    /// A tape to build into: no nodes yet, so not to be read.
    pub(crate) fn empty() -> Tape {
        // One empty text shared by every builder: no allocation a request.
        static EMPTY: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));
        Tape {
            text: Arc::clone(&EMPTY),
            side: String::new(),
            nodes: Vec::new(),
            entries: Vec::new(),
            items: Vec::new(),
            root: 0,
        }
    }

    /// The value the tape holds.
    pub fn root(&self) -> NodeRef<'_> {
        NodeRef {
            tape: self,
            index: self.root,
        }
    }

    /// The number of nodes (values) the tape holds.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The string at `span`.
    #[inline(always)]
    pub(crate) fn str_at(&self, span: Span) -> &str {
        span_str(&self.text, &self.side, span)
    }

    /// The span of a string with escapes, kept (unescaped) on the side.
    pub(crate) fn push_side(&mut self, s: &str) -> Span {
        let start = self.side.len() as u32 | SIDE;
        self.side.push_str(s);
        Span {
            start,
            len: s.len() as u32,
        }
    }
}

/// The string at `span`: a range of `text`, or of `side` when the span is
/// marked so. Spans are made by the builder from the same text, so the range
/// is in bounds; should one not be, the string reads as empty (no panic).
#[inline(always)]
pub(crate) fn span_str<'s>(text: &'s str, side: &'s str, span: Span) -> &'s str {
    if span.start & SIDE == 0 {
        text.get(span.range()).unwrap_or_default()
    } else {
        let span = Span {
            start: span.start & !SIDE,
            ..span
        };
        side.get(span.range()).unwrap_or_default()
    }
}

/// What kind of value a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Object,
    Array,
}

/// A value in a tape: a copyable handle, its identity the tape and index.
#[derive(Clone, Copy)]
pub struct NodeRef<'t> {
    tape: &'t Tape,
    index: u32,
}

impl<'t> NodeRef<'t> {
    #[inline(always)]
    fn node(self) -> Node {
        self.tape.nodes[self.index as usize]
    }

    /// This node's place in its tape: with the tape's address, an identity
    /// that no other value shares.
    pub fn index(self) -> u32 {
        self.index
    }

    pub fn kind(self) -> Kind {
        match self.node() {
            Node::Null => Kind::Null,
            Node::Bool(_) => Kind::Bool,
            Node::PosInt(_) | Node::NegInt(_) | Node::Float(_) => Kind::Number,
            Node::Str(_) => Kind::String,
            Node::Object(_) => Kind::Object,
            Node::Array(_) => Kind::Array,
        }
    }

    pub fn is_null(self) -> bool {
        matches!(self.node(), Node::Null)
    }

    pub fn as_bool(self) -> Option<bool> {
        match self.node() {
            Node::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The number, as the tree holds it.
    pub fn as_number(self) -> Option<Number> {
        match self.node() {
            Node::PosInt(u) => Some(Number::from(u)),
            Node::NegInt(i) => Some(Number::from(i)),
            Node::Float(f) => Number::from_f64(f),
            _ => None,
        }
    }

    /// As `Number::as_i64`: an integer that fits, never a float.
    pub fn as_i64(self) -> Option<i64> {
        match self.node() {
            Node::PosInt(u) => i64::try_from(u).ok(),
            Node::NegInt(i) => Some(i),
            _ => None,
        }
    }

    /// As `Number::as_u64`.
    pub fn as_u64(self) -> Option<u64> {
        match self.node() {
            Node::PosInt(u) => Some(u),
            _ => None,
        }
    }

    /// As `Number::as_f64`: any number.
    pub fn as_f64(self) -> Option<f64> {
        match self.node() {
            Node::PosInt(u) => Some(u as f64),
            Node::NegInt(i) => Some(i as f64),
            Node::Float(f) => Some(f),
            _ => None,
        }
    }

    pub fn as_str(self) -> Option<&'t str> {
        match self.node() {
            Node::Str(span) => Some(self.tape.str_at(span)),
            _ => None,
        }
    }

    pub fn as_object(self) -> Option<ObjectRef<'t>> {
        match self.node() {
            Node::Object(span) => Some(ObjectRef {
                tape: self.tape,
                entries: &self.tape.entries[span.range()],
            }),
            _ => None,
        }
    }

    pub fn as_array(self) -> Option<ArrayRef<'t>> {
        match self.node() {
            Node::Array(span) => Some(ArrayRef {
                tape: self.tape,
                items: &self.tape.items[span.range()],
            }),
            _ => None,
        }
    }

    /// The value as an owned tree (for error messages, writing, tests).
    pub fn to_value(self) -> Value {
        match self.node() {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Str(span) => Value::String(Str::from(self.tape.str_at(span))),
            Node::Object(_) => {
                let entries = self
                    .as_object()
                    .into_iter()
                    .flat_map(|o| o.iter())
                    .map(|(k, v)| (Str::from(k), v.to_value()))
                    .collect();
                Value::Object(Map::from_sorted_unique(entries))
            }
            Node::Array(_) => Value::Array(
                self.as_array()
                    .into_iter()
                    .flat_map(|a| a.iter())
                    .map(NodeRef::to_value)
                    .collect(),
            ),
            Node::PosInt(_) | Node::NegInt(_) | Node::Float(_) => {
                self.as_number().map_or(Value::Null, Value::Number)
            }
        }
    }

    /// Deep equality with a value of any tape, as the tree's `==`.
    pub fn equals(self, other: NodeRef<'_>) -> bool {
        if let (Some(a), Some(b)) = (self.as_object(), other.as_object()) {
            return a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|((ka, va), (kb, vb))| same_key(ka, kb) && va.equals(vb));
        }
        if let (Some(a), Some(b)) = (self.as_array(), other.as_array()) {
            return a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y));
        }
        match (self.node(), other.node()) {
            (Node::Str(_), Node::Str(_)) => self.as_str() == other.as_str(),
            // Numbers compare as `Number`s do: by representation. (Spans
            // of two containers never meet here: those returned above.)
            (x, y) => x == y,
        }
    }

    /// Deep equality with a tree, as the tree's `==`.
    pub fn equals_value(self, v: &Value) -> bool {
        match (self.node(), v) {
            (Node::Null, Value::Null) => true,
            (Node::Bool(a), Value::Bool(b)) => a == *b,
            (Node::Str(_), Value::String(s)) => self.as_str() == Some(s.as_str()),
            (Node::PosInt(_) | Node::NegInt(_) | Node::Float(_), Value::Number(n)) => {
                self.as_number().as_ref() == Some(n)
            }
            (Node::Object(_), Value::Object(m)) => self.as_object().is_some_and(|o| {
                o.len() == m.len()
                    && o.iter()
                        .zip(m.iter())
                        .all(|((ka, va), (kb, vb))| same_key(ka, kb) && va.equals_value(vb))
            }),
            (Node::Array(_), Value::Array(_) | Value::Table(_)) => {
                self.as_array().zip(v.as_array()).is_some_and(|(a, items)| {
                    a.len() == items.len() && a.iter().zip(items).all(|(x, y)| x.equals_value(y))
                })
            }
            _ => false,
        }
    }
}

impl fmt::Debug for NodeRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_value(), f)
    }
}

/// An object in a tape: its entries, sorted by key without repeats.
#[derive(Clone, Copy)]
pub struct ObjectRef<'t> {
    tape: &'t Tape,
    entries: &'t [(Span, u32)],
}

impl<'t> ObjectRef<'t> {
    pub fn len(self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(self) -> bool {
        self.entries.is_empty()
    }

    #[inline(always)]
    fn key(self, i: usize) -> &'t str {
        self.tape.str_at(self.entries[i].0)
    }

    #[inline(always)]
    fn value(self, i: usize) -> NodeRef<'t> {
        NodeRef {
            tape: self.tape,
            index: self.entries[i].1,
        }
    }

    /// Where `key` is among the entries.
    pub fn position(self, key: &str) -> Option<usize> {
        // As `Map::position`: small objects (most) in order, others by a
        // binary search.
        if self.entries.len() <= crate::map::LINEAR {
            return (0..self.entries.len()).find(|&i| same_key(self.key(i), key));
        }
        self.entries
            .binary_search_by(|(k, _)| self.tape.str_at(*k).cmp(key))
            .ok()
    }

    pub fn get(self, key: &str) -> Option<NodeRef<'t>> {
        self.position(key).map(|i| self.value(i))
    }

    /// [`ObjectRef::get`], trying position `hint` first (where the key sat
    /// in the last object of the same shape).
    #[inline(always)]
    pub fn get_hinted(self, key: &str, hint: usize) -> Option<NodeRef<'t>> {
        if hint < self.entries.len() && same_key(self.key(hint), key) {
            return Some(self.value(hint));
        }
        self.get(key)
    }

    /// The entry at `i`, in key order.
    pub fn get_index(self, i: usize) -> Option<(&'t str, NodeRef<'t>)> {
        (i < self.entries.len()).then(|| (self.key(i), self.value(i)))
    }

    pub fn iter(self) -> impl ExactSizeIterator<Item = (&'t str, NodeRef<'t>)> + 't {
        (0..self.entries.len()).map(move |i| (self.key(i), self.value(i)))
    }
}

/// An array in a tape.
#[derive(Clone, Copy)]
pub struct ArrayRef<'t> {
    tape: &'t Tape,
    items: &'t [u32],
}

impl<'t> ArrayRef<'t> {
    pub fn len(self) -> usize {
        self.items.len()
    }

    pub fn is_empty(self) -> bool {
        self.items.is_empty()
    }

    pub fn get(self, i: usize) -> Option<NodeRef<'t>> {
        self.items.get(i).map(|&index| NodeRef {
            tape: self.tape,
            index,
        })
    }

    pub fn iter(self) -> impl ExactSizeIterator<Item = NodeRef<'t>> + 't {
        self.items.iter().map(move |&index| NodeRef {
            tape: self.tape,
            index,
        })
    }
}
