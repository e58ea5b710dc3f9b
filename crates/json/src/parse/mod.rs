//! The JSON parser: builds the tree straight from the text, skips values
//! without building them, and lets a caller walk an object key by key
//! (the review decoder decides per field what to build).
//!
//! Hand-written rather than serde_json's deserializer: going through
//! serde's visitors cost 60k of the 125k instructions a 4.8 KB review takes
//! (see the crate's comment), and a skipped value is checked as strictly
//! as a built one here (numbers in range, escapes, nesting), so that what
//! is accepted does not depend on what a config reads.
//!
//! It accepts what serde_json accepts (RFC 8259, no trailing commas, no
//! comments) with its limits: nesting deeper than 127 levels is refused
//! where a value is built (a skipped value has no depth limit: it is
//! skipped without recursion); a number out of f64's range is refused; an
//! integer beyond 64 bits becomes a float; `-0` is the float -0.0.

mod error;
mod keys;
mod numbers;
mod skip;
mod strings;
mod table;
mod tape;

use std::borrow::Cow;

use crate::{Map, Str, Value};

pub use error::{Category, Error};
pub use keys::{NextKey, PlainKey};
pub use tape::{tape_from_str, TapeBuilder};

/// How deep values may nest (serde_json's limit: the 128th opening is
/// refused).
const DEPTH: u8 = 128;

/// A parser over one JSON text.
pub struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Openings still allowed before the nesting limit.
    depth: u8,
    /// Entries and elements of the containers being built, shared by all
    /// levels: each container allocates once, at its exact size.
    entries: Vec<(Str, Value)>,
    items: Vec<Value>,
}

/// An object of `entries`, sorted and rid of repeated keys (the last
/// stays) unless they came `sorted`, each after the one before it.
fn object_of(entries: Vec<(Str, Value)>, sorted: bool) -> Value {
    Value::Object(if sorted {
        Map::from_sorted_unique(entries)
    } else {
        Map::from_entries(entries)
    })
}

/// At most this many entries are reserved for an object shaped by the
/// first of its list ([`Parser::object_shaped`]), and any room it does
/// not fill is given back.
const SHAPED_ROOM: usize = 16;

/// The room a build stack takes when first used: growing it from empty,
/// request by request, was about ten reallocations and copies per review.
/// Not taken before: a parser that only skips builds nothing.
const STACK_ROOM: usize = 64;

#[inline(always)]
fn room<T>(stack: &mut Vec<T>) {
    if stack.capacity() == 0 {
        stack.reserve(STACK_ROOM);
    }
}

/// Parses a whole text as one value.
pub fn from_str(text: &str) -> Result<Value, Error> {
    let mut p = Parser::new(text);
    let v = p.value()?;
    p.end()?;
    Ok(v)
}

/// Parses bytes as one value (they must be UTF-8).
pub fn from_slice(bytes: &[u8]) -> Result<Value, Error> {
    let mut p = Parser::from_slice(bytes)?;
    let v = p.value()?;
    p.end()?;
    Ok(v)
}

impl<'a> Parser<'a> {
    pub fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: DEPTH,
            entries: Vec::new(),
            items: Vec::new(),
        }
    }

    /// A parser over bytes, checked as UTF-8 once (strings are then sliced
    /// from the text without a check each).
    pub fn from_slice(bytes: &'a [u8]) -> Result<Parser<'a>, Error> {
        if let Ok(text) = simdutf8::basic::from_utf8(bytes) {
            return Ok(Parser::new(text));
        }
        // The standard library's check says where the text goes wrong.
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Parser::new(text)),
            Err(e) => Err(Error::at(
                bytes,
                e.valid_up_to() + 1,
                "invalid unicode code point",
                Category::Syntax,
            )),
        }
    }

    /// How many more levels values may open here (for [`Parser::at_depth`]).
    pub fn depth(&self) -> u8 {
        self.depth
    }

    /// This parser, for a text that was found `depth` levels from the
    /// limit in a larger one (a value kept as text and parsed later is
    /// limited as it would have been in place).
    pub fn at_depth(self, depth: u8) -> Parser<'a> {
        Parser { depth, ..self }
    }

    /// The byte offset the parser has reached.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// An error at the current position: syntax (or EOF at the end).
    fn syntax(&self, message: &'static str) -> Error {
        if self.pos >= self.bytes.len() {
            return self.eof(message);
        }
        Error::at(self.bytes, self.pos + 1, message, Category::Syntax)
    }

    /// A syntax error at the last byte consumed.
    fn consumed(&self, message: &'static str) -> Error {
        Error::at(self.bytes, self.pos, message, Category::Syntax)
    }

    fn eof(&self, message: &'static str) -> Error {
        Error::at(self.bytes, self.bytes.len(), message, Category::Eof)
    }

    /// A shape error at the current position, for callers that read the
    /// text field by field ("duplicate field `kind`").
    pub fn data_error(&self, message: impl Into<Cow<'static, str>>) -> Error {
        Error::at(self.bytes, self.pos, message, Category::Data)
    }

    #[inline]
    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte after white space, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        // Compact JSON, as the API server writes it, has none.
        match self.bytes.get(self.pos) {
            Some(&b) if b > b' ' => Some(b),
            _ => {
                self.whitespace();
                self.bytes.get(self.pos).copied()
            }
        }
    }

    /// True when the text at the parser is `piece`, then passed over;
    /// otherwise nothing is consumed (compact JSON's known spellings, a key
    /// with its punctuation, matched in one comparison).
    #[inline(always)]
    fn eat(&mut self, piece: &[u8]) -> bool {
        let end = self.pos + piece.len();
        let found = self
            .bytes
            .get(self.pos..end)
            .is_some_and(|t| crate::map::same_bytes(t, piece));
        if found {
            self.pos = end;
        }
        found
    }

    /// Checks that only white space is left.
    pub fn end(&mut self) -> Result<(), Error> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.syntax("trailing characters")),
        }
    }

    /// The next value, built. Strings and numbers (most members of a
    /// container) are parsed inline; the rest in `Parser::other_value`,
    /// which objects and arrays recurse through, so that a scalar member
    /// costs no call of a recursive, never inlined function.
    #[inline(always)]
    pub fn value(&mut self) -> Result<Value, Error> {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                Ok(Value::String(self.string_value()?))
            }
            Some(b'-' | b'0'..=b'9') => Ok(Value::Number(self.number()?)),
            _ => self.other_value(),
        }
    }

    /// [`Parser::value`] of anything but a string or a number.
    #[inline(never)]
    fn other_value(&mut self) -> Result<Value, Error> {
        match self.peek() {
            None => Err(self.eof("EOF while parsing a value")),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(_) => Err(self.syntax("expected value")),
        }
    }

    /// The next value's text, checked and not built.
    pub fn raw(&mut self) -> Result<&'a str, Error> {
        self.whitespace();
        let start = self.pos;
        self.skip()?;
        Ok(&self.text[start..self.pos])
    }

    /// Consumes a `null` if one is next.
    pub fn null(&mut self) -> Result<bool, Error> {
        if self.peek() == Some(b'n') {
            self.literal("null", ())?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The next value as a string; another value is an "invalid type"
    /// error naming `expected`.
    pub fn string(&mut self, expected: &str) -> Result<Cow<'a, str>, Error> {
        if self.peek() == Some(b'"') {
            self.pos += 1;
            return self.string_cow();
        }
        Err(self.invalid_type(expected))
    }

    /// The next value as a boolean, as [`Parser::string`].
    pub fn boolean(&mut self, expected: &str) -> Result<bool, Error> {
        match self.peek() {
            Some(b't') => self.literal("true", true),
            Some(b'f') => self.literal("false", false),
            _ => Err(self.invalid_type(expected)),
        }
    }

    /// Reads the next value to say what it is instead of `expected`, in
    /// serde's words ("invalid type: integer `42`, expected a string").
    pub fn invalid_type(&mut self, expected: &str) -> Error {
        match self.value() {
            Ok(v) => Error::at(
                self.bytes,
                self.pos,
                format!(
                    "invalid type: {}, expected {expected}",
                    error::unexpected(&v)
                ),
                Category::Data,
            ),
            Err(e) => e,
        }
    }

    /// Where the entries of an object being built by the caller start on
    /// the parser's shared stack (see [`Parser::push_entry`]).
    pub fn entries_base(&mut self) -> usize {
        room(&mut self.entries);
        self.entries.len()
    }

    /// Adds an entry to the object the caller builds; nested values built
    /// meanwhile use the stack above it and leave it as it was.
    #[inline]
    pub fn push_entry(&mut self, key: Str, value: Value) {
        self.entries.push((key, value));
    }

    /// The entries pushed since `base`, taken off the stack in one vector
    /// of their exact size.
    pub fn take_entries(&mut self, base: usize) -> Vec<(Str, Value)> {
        self.entries.split_off(base)
    }

    /// Enters an object (`{`); then [`Parser::next_key`] until `None`.
    /// Another value is an "invalid type" error naming `expected`.
    pub fn begin_object(&mut self, expected: &str) -> Result<(), Error> {
        if self.peek() == Some(b'{') {
            return self.open();
        }
        Err(self.invalid_type(expected))
    }

    /// Enters an array (`[`); then [`Parser::next_element`] until false.
    pub fn begin_array(&mut self, expected: &str) -> Result<(), Error> {
        if self.peek() == Some(b'[') {
            return self.open();
        }
        Err(self.invalid_type(expected))
    }

    /// The next key of the object entered, its `:` consumed; `None` at
    /// its end. `first` starts true for each object.
    pub fn next_key(&mut self, first: &mut bool) -> Result<Option<Cow<'a, str>>, Error> {
        self.next_key_inner(first, true, true)
    }

    /// True when the array entered has another element (next to be read).
    pub fn next_element(&mut self, first: &mut bool) -> Result<bool, Error> {
        self.next_element_inner(first, true)
    }

    /// [`Parser::next_element`]; its end given back to the nesting limit
    /// when `counted` (skipping counts nothing).
    #[inline]
    fn next_element_inner(&mut self, first: &mut bool, counted: bool) -> Result<bool, Error> {
        match self.peek() {
            Some(b']') => {
                self.pos += 1;
                self.depth += u8::from(counted);
                return Ok(false);
            }
            Some(b',') if !*first => {
                self.pos += 1;
                if self.peek() == Some(b']') {
                    return Err(self.syntax("trailing comma"));
                }
            }
            None => return Err(self.eof("EOF while parsing a list")),
            Some(_) if *first => {}
            Some(_) => return Err(self.syntax("expected `,` or `]`")),
        }
        *first = false;
        Ok(true)
    }

    /// `{` or `[`, counted against the nesting limit.
    #[inline]
    fn open(&mut self) -> Result<(), Error> {
        self.pos += 1;
        self.depth -= 1;
        if self.depth == 0 {
            return Err(Error::at(
                self.bytes,
                self.pos,
                "recursion limit exceeded",
                Category::Syntax,
            ));
        }
        Ok(())
    }

    /// [`Parser::next_key`]; the key built only when `want` (skipping
    /// checks it without a copy), the end counted as there.
    #[inline]
    fn next_key_inner(
        &mut self,
        first: &mut bool,
        want: bool,
        counted: bool,
    ) -> Result<Option<Cow<'a, str>>, Error> {
        if !self.key_follows(first, counted)? {
            return Ok(None);
        }
        let key = if want {
            self.string_cow()?
        } else {
            self.skip_string()?;
            Cow::Borrowed("")
        };
        self.colon()?;
        Ok(Some(key))
    }

    /// The `:` after a key.
    #[inline(always)]
    fn colon(&mut self) -> Result<(), Error> {
        match self.peek() {
            Some(b':') => {
                self.pos += 1;
                Ok(())
            }
            None => Err(self.eof("EOF while parsing an object")),
            Some(_) => Err(self.syntax("expected `:`")),
        }
    }

    fn literal<T>(&mut self, word: &'static str, v: T) -> Result<T, Error> {
        let rest = &self.bytes[self.pos..];
        let n = rest
            .iter()
            .zip(word.as_bytes())
            .take_while(|(a, b)| a == b)
            .count();
        if n == word.len() {
            self.pos += n;
            return Ok(v);
        }
        self.pos += n;
        if self.pos >= self.bytes.len() {
            return Err(self.eof("EOF while parsing a value"));
        }
        Err(self.syntax("expected ident"))
    }

    /// An object, built; its entries sorted once unless they came sorted.
    fn object(&mut self) -> Result<Value, Error> {
        self.object_keeping(None).map(|(object, _)| object)
    }

    /// [`Parser::object`], and whether its keys came sorted (each after
    /// the one before it). With `shape`, its keys are kept there, up to
    /// the first one that JSON cannot write without an escape (a quote, a
    /// backslash or a control character), for the objects after it in its
    /// array ([`Parser::object_shaped`]).
    fn object_keeping(&mut self, mut shape: Option<&mut Vec<Str>>) -> Result<(Value, bool), Error> {
        self.open()?;
        room(&mut self.entries);
        let base = self.entries.len();
        let mut sorted = true;
        let mut first = true;
        // The loop of `next_key`, with the key built straight into the
        // tree's string and compared with the one before it.
        while self.key_follows(&mut first, true)? {
            let key = self.string_value()?;
            self.colon()?;
            let value = self.value()?;
            if sorted && self.entries.len() > base {
                sorted = crate::key_order(&self.entries[self.entries.len() - 1].0, &key).is_lt();
            }
            if let Some(keys) = shape.as_deref_mut() {
                // Such a key is never compared with the text as it is, nor
                // is any after it.
                if keys::plain(&key) {
                    keys.push(key.clone());
                } else {
                    shape = None;
                }
            }
            self.entries.push((key, value));
        }
        // One copy into a vector of the exact size (a drain's collect
        // moves the entries one by one).
        let entries = self.entries.split_off(base);
        Ok((object_of(entries, sorted), sorted))
    }

    /// [`Parser::object`] of an array's element after its first object.
    /// While its keys are spelled as the first object's at their places
    /// (`shape`), each is a clone of that key rather than a string built
    /// from the text: objects of a list mostly share their keys, and a
    /// clone of a short key copies a few words where building one took a
    /// copy call. While they match and the first object's came sorted
    /// (`sorted_shape`), their order needs no check either. Built in a
    /// vector of its own rather than on the parser's stack and copied off
    /// it.
    fn object_shaped(&mut self, shape: &[Str], sorted_shape: bool) -> Result<Value, Error> {
        self.open()?;
        // Room for the shape's keys, but never more than `SHAPED_ROOM`: a
        // wide first object must not make each small object after it
        // reserve its width (what is not filled is given back below).
        let mut entries: Vec<(Str, Value)> = Vec::with_capacity(shape.len().min(SHAPED_ROOM));
        let mut sorted = true;
        // `in_shape`: every key so far is the shape's at its place.
        // `in_order`: that, and the shape came sorted, so they did too.
        let mut in_shape = true;
        let mut in_order = sorted_shape;
        let mut first = true;
        while self.key_follows(&mut first, true)? {
            let at = entries.len();
            let key = match shape.get(at) {
                Some(known) if in_shape && self.string_if(known) => known.clone(),
                _ => {
                    (in_shape, in_order) = (false, false);
                    self.string_value()?
                }
            };
            self.colon()?;
            let value = self.value()?;
            if !in_order && sorted {
                if let Some((last, _)) = entries.last() {
                    sorted = crate::key_order(last, &key).is_lt();
                }
            }
            entries.push((key, value));
        }
        // An object with fewer keys than the room keeps no more than it
        // needs.
        if entries.len() < entries.capacity() {
            entries.shrink_to_fit();
        }
        Ok(object_of(entries, sorted))
    }

    /// In an object: true when a key follows (its opening quote
    /// consumed), false at the end (`}` consumed, the level given back
    /// when `counted`).
    #[inline(always)]
    fn key_follows(&mut self, first: &mut bool, counted: bool) -> Result<bool, Error> {
        let at = self.peek();
        if *first {
            *first = false;
            match at {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(true);
                }
                Some(b'}') => {}
                None => return Err(self.eof("EOF while parsing an object")),
                Some(_) => return Err(self.syntax("key must be a string")),
            }
        } else {
            match at {
                Some(b',') => {
                    self.pos += 1;
                    return match self.peek() {
                        Some(b'"') => {
                            self.pos += 1;
                            Ok(true)
                        }
                        Some(b'}') => Err(self.syntax("trailing comma")),
                        None => Err(self.eof("EOF while parsing a value")),
                        Some(_) => Err(self.syntax("key must be a string")),
                    };
                }
                Some(b'}') => {}
                None => return Err(self.eof("EOF while parsing an object")),
                Some(_) => return Err(self.syntax("expected `,` or `}`")),
            }
        }
        self.pos += 1;
        self.depth += u8::from(counted);
        Ok(false)
    }

    fn array(&mut self) -> Result<Value, Error> {
        self.open()?;
        room(&mut self.items);
        let base = self.items.len();
        let mut first = true;
        // The keys of the first object element, for the others to share,
        // once it is read (`None` before), and whether they came sorted.
        let mut shape: Option<(Vec<Str>, bool)> = None;
        while self.next_element(&mut first)? {
            let item = if self.peek() != Some(b'{') {
                self.value()?
            } else if let Some((keys, sorted)) = &shape {
                self.object_shaped(keys, *sorted)?
            } else {
                let mut keys = Vec::new();
                let (object, sorted) = self.object_keeping(Some(&mut keys))?;
                shape = Some((keys, sorted));
                object
            };
            self.items.push(item);
        }
        Ok(Value::Array(self.items.split_off(base)))
    }
}

#[cfg(test)]
mod tests;
