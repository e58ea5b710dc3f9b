//! Strings: found eight bytes at a time, sliced from the text when they
//! hold no escape (the text is UTF-8 already), decoded otherwise.

use std::borrow::Cow;

use super::{Error, Parser};
use crate::Str;

impl<'a> Parser<'a> {
    /// The index of the first `"`, `\` or control byte at or after `i`.
    #[inline(always)]
    fn scan(&self, i: usize) -> usize {
        crate::scan::special(self.bytes, i)
    }

    /// A string's contents (the opening quote consumed), as a tree string.
    #[inline]
    pub(super) fn string_value(&mut self) -> Result<Str, Error> {
        // Not through `string_cow`: building the tree's string straight
        // from the slice saves a tenth of a parse.
        self.string_with(true, Str::from, Str::from)
    }

    /// A string's contents, borrowed from the text unless it has escapes.
    #[inline]
    pub(super) fn string_cow(&mut self) -> Result<Cow<'a, str>, Error> {
        self.string_with(true, Cow::Borrowed, Cow::Owned)
    }

    /// A string's contents as a range of the text when they hold no escape,
    /// else decoded (for the tape, which keeps ranges of the text).
    #[inline(always)]
    pub(super) fn string_span(&mut self) -> Result<Result<(usize, usize), String>, Error> {
        let start = self.pos;
        let end = self.scan(start);
        if self.bytes.get(end) == Some(&b'"') {
            self.pos = end + 1;
            return Ok(Ok((start, end)));
        }
        self.decode(start, end, true).map(Err)
    }

    /// True when the string is `known` written without escapes, then
    /// passed over; otherwise nothing is consumed.
    #[inline(always)]
    pub(super) fn string_if(&mut self, known: &str) -> bool {
        let start = self.pos;
        let end = start + known.len();
        // The text's bytes `known` long, then the closing quote: `known`
        // holds no quote, backslash or control character (the caller keeps
        // no other), so these bytes are the whole string as the scan would
        // find it.
        // Compared in words, not through `memcmp`: keys are short.
        let found = self.bytes.get(start..end).is_some_and(|text| {
            crate::map::same_bytes(text, known.as_bytes()) && self.bytes.get(end) == Some(&b'"')
        });
        if found {
            self.pos = end + 1;
        }
        found
    }

    /// A string checked and passed over. Not through `string_with`: the
    /// slice it makes of the text, though dropped, kept its bounds and
    /// character-boundary checks (a tenth of a skip).
    #[inline(always)]
    pub(super) fn skip_string(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let end = self.scan(start);
        if self.bytes.get(end) == Some(&b'"') {
            self.pos = end + 1;
            return Ok(());
        }
        self.decode(start, end, false).map(drop)
    }

    /// The one scan behind the three above: `sliced` takes the contents
    /// when they hold no escape, `decoded` the slow path's text (empty
    /// unless `build`). Inlined into each, so each keeps its own fast path.
    #[inline(always)]
    fn string_with<T>(
        &mut self,
        build: bool,
        sliced: impl FnOnce(&'a str) -> T,
        decoded: impl FnOnce(String) -> T,
    ) -> Result<T, Error> {
        let start = self.pos;
        let end = self.scan(start);
        if self.bytes.get(end) == Some(&b'"') {
            self.pos = end + 1;
            return Ok(sliced(&self.text[start..end]));
        }
        self.decode(start, end, build).map(decoded)
    }

    /// The slow path from `at` (the first special byte) of a string
    /// starting at `start`: escapes decoded (only checked unless `build`),
    /// errors found.
    #[cold]
    fn decode(&mut self, start: usize, mut at: usize, build: bool) -> Result<String, Error> {
        let mut out = String::new();
        if build {
            out.reserve(at - start + 16);
            out.push_str(&self.text[start..at]);
        }
        loop {
            self.pos = at;
            match self.bytes.get(at) {
                None => return Err(self.eof("EOF while parsing a string")),
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos = at + 1;
                    let ch = self.escape()?;
                    if build {
                        out.push(ch);
                    }
                }
                Some(_) => {
                    return Err(self.syntax(
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ))
                }
            }
            let next = self.scan(self.pos);
            if build {
                out.push_str(&self.text[self.pos..next]);
            }
            at = next;
        }
    }

    /// One escape (after its backslash): the character it stands for.
    fn escape(&mut self) -> Result<char, Error> {
        let Some(&c) = self.bytes.get(self.pos) else {
            return Err(self.eof("EOF while parsing a string"));
        };
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                match first {
                    0xD800..=0xDBFF => {
                        // A trailing surrogate's `\u` must follow; as serde_json,
                        // the byte that is not it counts as read.
                        for expected in [b'\\', b'u'] {
                            match self.bytes.get(self.pos) {
                                None => return Err(self.eof("EOF while parsing a string")),
                                Some(&c) => {
                                    self.pos += 1;
                                    if c != expected {
                                        return Err(self.consumed("unexpected end of hex escape"));
                                    }
                                }
                            }
                        }
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return Err(self.consumed("lone leading surrogate in hex escape"));
                        }
                        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                        char::from_u32(code)
                            .ok_or_else(|| self.syntax("invalid unicode code point"))?
                    }
                    0xDC00..=0xDFFF => {
                        return Err(self.consumed("lone leading surrogate in hex escape"))
                    }
                    code => char::from_u32(code)
                        .ok_or_else(|| self.syntax("invalid unicode code point"))?,
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.syntax("invalid escape"));
            }
        };
        Ok(ch)
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self) -> Result<u32, Error> {
        // Four bytes are taken before any is judged, as serde_json does:
        // a bad digit is reported after the fourth.
        let Some(digits) = self.bytes.get(self.pos..self.pos + 4) else {
            self.pos = self.bytes.len();
            return Err(self.eof("EOF while parsing a string"));
        };
        let code = digits.iter().try_fold(0u32, |code, &c| {
            char::from(c).to_digit(16).map(|digit| code * 16 + digit)
        });
        self.pos += 4;
        code.ok_or_else(|| self.consumed("invalid escape"))
    }
}

#[cfg(test)]
mod tests {
    use crate::scan::specials;

    #[test]
    fn the_first_mark_is_the_first_special_byte() {
        for (text, first) in [
            (*b"abcdefgh", None),
            (*b"abc\"efgh", Some(3)),
            (*b"\\bcdefgh", Some(0)),
            (*b"abcdefg\n", Some(7)),
            (*b"a\x7f\xc3\xa9\"\x01gh", Some(4)),
            (*b"\x1f\"\\\x00    ", Some(0)),
        ] {
            let marks = specials(u64::from_le_bytes(text));
            let found = (marks != 0).then(|| (marks.trailing_zeros() / 8) as usize);
            assert_eq!(found, first, "{:?}", String::from_utf8_lossy(&text));
        }
    }
}
