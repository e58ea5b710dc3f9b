//! Object keys known in advance (a schema's properties), matched in the
//! text as they are written rather than built.

use std::borrow::Cow;

use super::{Error, Parser};
use crate::Str;

/// An object key JSON writes without escapes (no quote, backslash or
/// control character), so that it can be matched against the text as it
/// stands ([`Parser::next_key_known`]): the text's bytes are then the whole
/// key as a scan would find it.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainKey {
    key: Str,
    /// The key as compact JSON writes it after another: `,"key":`.
    spelled: Box<[u8]>,
}

impl PlainKey {
    /// `key` as a plain key; `None` for one that needs an escape.
    pub fn new(key: &str) -> Option<PlainKey> {
        plain(key).then(|| PlainKey {
            key: Str::from(key),
            spelled: [b",\"", key.as_bytes(), b"\":"].concat().into(),
        })
    }

    #[inline(always)]
    pub fn as_str(&self) -> &str {
        &self.key
    }

    /// The key as the tree's string (a short key is copied in a few words).
    #[inline(always)]
    pub fn to_key(&self) -> Str {
        self.key.clone()
    }
}

impl std::fmt::Debug for PlainKey {
    /// The key alone: its spelled form is the same text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PlainKey").field(&self.key).finish()
    }
}

/// True when JSON writes `key` without an escape.
pub(super) fn plain(key: &str) -> bool {
    key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// What [`Parser::next_key_known`] found.
pub enum NextKey<'a> {
    /// The object's end (`}` consumed).
    End,
    /// The key expected, its `:` consumed.
    Known,
    /// Another key, its `:` consumed.
    Other(Cow<'a, str>),
}

impl<'a> Parser<'a> {
    /// [`Parser::next_key`] of an object whose keys are mostly known in
    /// advance: when the next key is `known`, spelled as it is, it is
    /// matched in the text without being built.
    #[inline]
    pub fn next_key_known(
        &mut self,
        first: &mut bool,
        known: Option<&PlainKey>,
    ) -> Result<NextKey<'a>, Error> {
        if let Some(k) = known {
            // As compact JSON writes it, the comma (none before the first
            // key), the quoted key and the colon match in one comparison.
            let piece = if *first {
                &k.spelled[1..]
            } else {
                &k.spelled[..]
            };
            if self.eat(piece) {
                *first = false;
                return Ok(NextKey::Known);
            }
        }
        if !self.key_follows(first, true)? {
            return Ok(NextKey::End);
        }
        if known.is_some_and(|k| self.string_if(k.as_str())) {
            self.colon()?;
            return Ok(NextKey::Known);
        }
        let key = self.string_cow()?;
        self.colon()?;
        Ok(NextKey::Other(key))
    }
}

#[cfg(test)]
mod tests;
