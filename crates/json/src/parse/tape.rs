//! The parser's second builder: values into a [`Tape`] rather than a tree,
//! through the same tokenizing, checks and nesting limit, so that the two
//! accept the same texts and fail with the same errors.

use std::sync::Arc;

use super::{Error, Parser};
use crate::tape::{span_str, Node, Span, Tape, SIDE};
use crate::{key_order, Number};

/// What a tape is built with: the tape, and the stacks of entries and
/// elements of the containers still open (each closed container's run is
/// copied from them into the tape, so nothing is allocated per object).
pub struct TapeBuilder {
    tape: Tape,
    entries: Vec<(Span, u32)>,
    items: Vec<u32>,
}

impl Default for TapeBuilder {
    fn default() -> TapeBuilder {
        TapeBuilder {
            tape: Tape::empty(),
            entries: Vec::new(),
            items: Vec::new(),
        }
    }
}

impl TapeBuilder {
    /// Room for the tape of a text of `len` bytes, by the proportions of
    /// Kubernetes objects written compactly (a node about every 12 bytes,
    /// an entry every 16, about half the bytes in strings), so that a
    /// build seldom grows a vector. The vectors still grow past it.
    pub fn reserve_for(&mut self, len: usize) {
        let t = &mut self.tape;
        t.nodes.reserve(len / 12 + 1);
        t.entries.reserve(len / 16 + 1);
        t.items.reserve(len / 32 + 1);
    }

    /// The tape of the last value built, which was parsed from `text`
    /// (the same text: its strings are ranges of it). The builder is left
    /// empty; its stacks keep their room for the next value.
    pub fn finish(&mut self, text: Arc<str>, root: u32) -> Tape {
        let mut tape = std::mem::replace(&mut self.tape, Tape::empty());
        // A root that is not a node of this tape (a caller's slip, never
        // the input's) reads as null rather than panicking later.
        if root as usize >= tape.nodes.len() {
            tape.nodes.push(Node::Null);
            tape.root = tape.nodes.len() as u32 - 1;
        } else {
            tape.root = root;
        }
        tape.text = text;
        tape
    }

    #[inline(always)]
    fn push(&mut self, node: Node) -> u32 {
        let index = self.tape.nodes.len() as u32;
        self.tape.nodes.push(node);
        index
    }
}

fn number_node(n: Number) -> Node {
    // `Number` keeps non-negative integers as u64, negative ones as i64,
    // the rest as f64; the node keeps the same split.
    if let Some(u) = n.as_u64() {
        Node::PosInt(u)
    } else if let Some(i) = n.as_i64() {
        Node::NegInt(i)
    } else {
        Node::Float(n.as_f64().unwrap_or_default())
    }
}

/// Parses a whole text as one tape, which keeps the text.
pub fn tape_from_str(text: impl Into<Arc<str>>) -> Result<Tape, Error> {
    let text = text.into();
    let mut b = TapeBuilder::default();
    b.reserve_for(text.len());
    let mut p = Parser::new(&text);
    let root = p.tape(&mut b)?;
    p.end()?;
    Ok(b.finish(text, root))
}

impl<'a> Parser<'a> {
    /// The next value, into `b`'s tape; its node's index (for
    /// [`TapeBuilder::finish`]). Offsets are 31 bits (the top one marks a
    /// string kept on the side), so a text past 2 GiB is refused here.
    pub fn tape(&mut self, b: &mut TapeBuilder) -> Result<u32, Error> {
        if self.bytes.len() >= SIDE as usize {
            return Err(self.data_error("text too long for a tape (2 GiB or more)"));
        }
        // What a build that failed left behind (its room kept).
        let t = &mut b.tape;
        t.nodes.clear();
        t.entries.clear();
        t.items.clear();
        t.side.clear();
        b.entries.clear();
        b.items.clear();
        self.tape_value(b)
    }

    /// [`Parser::tape`] within the text. Strings and
    /// numbers inline, containers in [`Parser::tape_other`], as
    /// [`Parser::value`] splits them.
    #[inline(always)]
    fn tape_value(&mut self, b: &mut TapeBuilder) -> Result<u32, Error> {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                let span = self.tape_string(b)?;
                Ok(b.push(Node::Str(span)))
            }
            Some(b'-' | b'0'..=b'9') => {
                let n = self.number()?;
                Ok(b.push(number_node(n)))
            }
            _ => self.tape_other(b),
        }
    }

    /// A string (its opening quote consumed): a range of the text, or on
    /// the side when it has escapes.
    #[inline(always)]
    fn tape_string(&mut self, b: &mut TapeBuilder) -> Result<Span, Error> {
        Ok(match self.string_span()? {
            // Offsets fit 31 bits: `tape` refuses longer texts.
            Ok((start, end)) => Span {
                start: start as u32,
                len: (end - start) as u32,
            },
            Err(decoded) => b.tape.push_side(&decoded),
        })
    }

    #[inline(never)]
    fn tape_other(&mut self, b: &mut TapeBuilder) -> Result<u32, Error> {
        let node = match self.peek() {
            Some(b'{') => return self.tape_object(b),
            Some(b'[') => return self.tape_array(b),
            Some(b't') => self.literal("true", Node::Bool(true))?,
            Some(b'f') => self.literal("false", Node::Bool(false))?,
            Some(b'n') => self.literal("null", Node::Null)?,
            None => return Err(self.eof("EOF while parsing a value")),
            Some(_) => return Err(self.syntax("expected value")),
        };
        Ok(b.push(node))
    }

    #[inline(always)]
    fn tape_object(&mut self, b: &mut TapeBuilder) -> Result<u32, Error> {
        self.open()?;
        let base = b.entries.len();
        let mut sorted = true;
        let mut first = true;
        // The key before, when a range of the text (a key with escapes
        // leaves none, and the entries are sorted at the end).
        let mut before: Option<&'a str> = None;
        while self.key_follows(&mut first, true)? {
            let key = self.tape_string(b)?;
            let text = self.text;
            self.colon()?;
            let value = self.tape_value(b)?;
            if sorted {
                let this = (key.start & SIDE == 0).then(|| span_str(text, "", key));
                // Reached with no key before only for the first key (an
                // escaped key ends the checks).
                sorted = match (before, this) {
                    (Some(x), Some(y)) => key_order(x, y).is_lt(),
                    (None, Some(_)) => true,
                    (_, None) => false,
                };
                before = this;
            }
            b.entries.push((key, value));
        }
        if !sorted {
            sort_unique(self.text, &b.tape.side, &mut b.entries, base);
        }
        let start = b.tape.entries.len() as u32;
        b.tape.entries.extend_from_slice(&b.entries[base..]);
        let len = (b.entries.len() - base) as u32;
        b.entries.truncate(base);
        Ok(b.push(Node::Object(Span { start, len })))
    }

    #[inline(always)]
    fn tape_array(&mut self, b: &mut TapeBuilder) -> Result<u32, Error> {
        self.open()?;
        let base = b.items.len();
        let mut first = true;
        while self.next_element(&mut first)? {
            let item = self.tape_value(b)?;
            b.items.push(item);
        }
        let start = b.tape.items.len() as u32;
        b.tape.items.extend_from_slice(&b.items[base..]);
        let len = (b.items.len() - base) as u32;
        b.items.truncate(base);
        Ok(b.push(Node::Array(Span { start, len })))
    }
}

/// Sorts the entries from `base` by key, keeping the last of a repeated key,
/// as `Map::from_entries` does.
#[cold]
fn sort_unique(text: &str, side: &str, entries: &mut Vec<(Span, u32)>, base: usize) {
    let at = |span| span_str(text, side, span);
    // A stable sort keeps repeats in arrival order; the last one wins.
    entries[base..].sort_by(|a, b| key_order(at(a.0), at(b.0)));
    let mut w = base;
    for r in base..entries.len() {
        if w > base && at(entries[w - 1].0) == at(entries[r].0) {
            entries[w - 1] = entries[r];
        } else {
            entries[w] = entries[r];
            w += 1;
        }
    }
    entries.truncate(w);
}

#[cfg(test)]
mod tests;
