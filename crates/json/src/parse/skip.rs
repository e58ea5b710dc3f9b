//! Passing over a value without building it: checked as strictly as a
//! built value, without recursion and without the nesting limit.

use super::{Error, Parser};

/// The containers a skip is inside (true for an object): a bit each in a
/// word for the first 64 levels, a vector past them, so that skipping
/// allocates nothing for what real objects nest.
#[derive(Default)]
struct Open {
    bits: u64,
    depth: usize,
    deeper: Vec<bool>,
}

impl Open {
    #[inline(always)]
    fn push(&mut self, object: bool) {
        if self.depth < 64 {
            self.bits = (self.bits & !(1 << self.depth)) | (u64::from(object) << self.depth);
        } else {
            self.deeper.push(object);
        }
        self.depth += 1;
    }

    #[inline(always)]
    fn last(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            d if d <= 64 => Some(self.bits >> (d - 1) & 1 == 1),
            _ => self.deeper.last().copied(),
        }
    }

    #[inline(always)]
    fn pop(&mut self) {
        if self.depth > 64 {
            self.deeper.pop();
        }
        self.depth -= 1;
    }
}

impl Parser<'_> {
    /// The next value, checked as strictly as [`Parser::value`] but not
    /// built. Without recursion and without the nesting limit: nothing is
    /// built that a deep value could overflow, so a field no rule reads
    /// may nest as deep as the API server lets it.
    #[inline]
    pub fn skip(&mut self) -> Result<(), Error> {
        // A string or a number, most skipped members, without the call and
        // the container stack.
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.skip_string()
            }
            Some(b'-' | b'0'..=b'9') => self.skip_number(),
            _ => self.skip_nested(),
        }
    }

    /// [`Parser::skip`] of anything but a string or a number.
    #[inline(never)]
    fn skip_nested(&mut self) -> Result<(), Error> {
        let mut open = Open::default();
        loop {
            match self.peek() {
                None => return Err(self.eof("EOF while parsing a value")),
                Some(b'{') => {
                    self.pos += 1;
                    if self.skip_key(&mut true)? {
                        open.push(true);
                        continue;
                    }
                }
                Some(b'[') => {
                    self.pos += 1;
                    if self.next_element_inner(&mut true, false)? {
                        open.push(false);
                        continue;
                    }
                }
                Some(b'"') => {
                    self.pos += 1;
                    self.skip_string()?;
                }
                Some(b't') => self.literal("true", ())?,
                Some(b'f') => self.literal("false", ())?,
                Some(b'n') => self.literal("null", ())?,
                Some(b'-' | b'0'..=b'9') => self.skip_number()?,
                Some(_) => return Err(self.syntax("expected value")),
            }
            // A value ended: on to the next one of the innermost container
            // that has one.
            loop {
                let more = match open.last() {
                    None => return Ok(()),
                    Some(true) => self.skip_key(&mut false)?,
                    Some(false) => self.next_element_inner(&mut false, false)?,
                };
                if more {
                    break;
                }
                open.pop();
            }
        }
    }

    /// In an object being skipped: true when a key follows, passed over
    /// with its `:`.
    #[inline(always)]
    fn skip_key(&mut self, first: &mut bool) -> Result<bool, Error> {
        if !self.key_follows(first, false)? {
            return Ok(false);
        }
        self.skip_string()?;
        self.colon()?;
        Ok(true)
    }
}
