//! Numbers: read as serde_json reads them (integers exactly, the rest as
//! correctly rounded floats, out-of-range floats refused), with the usual
//! integer read and passed over by its grammar alone.

use super::{Category, Error, Parser};
use crate::Number;

/// A number's text as [`Parser::scan_number`] found it.
struct Scanned {
    start: usize,
    negative: bool,
    /// The integer part, when it fits 64 bits (`overflow` otherwise).
    int: u64,
    overflow: bool,
    float: bool,
    exponent: bool,
}

/// The end of the integer `0` or `[1-9][0-9]*` at `i`, with its value
/// (exact up to 18 digits, wrapped past them), where nothing of a number
/// follows it: `None` for a sign, a fraction, an exponent, a digit after a
/// leading zero or no digit, which the full scan reads or reports.
#[inline(always)]
fn plain_integer(b: &[u8], i: usize) -> Option<(usize, u64)> {
    let mut end = i;
    let mut int = 0u64;
    match b.get(i) {
        Some(b'0') => end += 1,
        Some(b'1'..=b'9') => {
            while let Some(&d @ b'0'..=b'9') = b.get(end) {
                int = int.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
                end += 1;
            }
        }
        _ => return None,
    }
    (!matches!(b.get(end), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))).then_some((end, int))
}

impl Parser<'_> {
    /// A number, as serde_json reads it (see the module comment). A
    /// non-negative integer of up to 18 digits, the usual number, is read
    /// without the overflow checks it cannot need; anything else takes
    /// [`Parser::number_scanned`].
    #[inline]
    pub(super) fn number(&mut self) -> Result<Number, Error> {
        match self.plain_int() {
            Some(int) => Ok(Number::from(int)),
            None => self.number_scanned(),
        }
    }

    /// The usual number, a non-negative integer of up to 18 digits, read
    /// and passed over; `None`, with nothing consumed, for any other.
    #[inline(always)]
    pub(super) fn plain_int(&mut self) -> Option<u64> {
        let start = self.pos;
        match plain_integer(self.bytes, start) {
            Some((end, int)) if end - start <= 18 => {
                self.pos = end;
                Some(int)
            }
            _ => None,
        }
    }

    /// [`Parser::number`] by the full scan.
    pub(super) fn number_scanned(&mut self) -> Result<Number, Error> {
        let n = self.scan_number()?;
        if !n.float && !n.overflow {
            if !n.negative {
                return Ok(Number::from(n.int));
            }
            if n.int == 0 {
                return Ok(Number::from_f64(-0.0).unwrap_or_else(|| Number::from(0)));
            }
            if let Ok(i) = i64::try_from(-i128::from(n.int)) {
                return Ok(Number::from(i));
            }
        }
        self.float(n.start)
    }

    /// A number checked as [`Parser::number`] checks it, not built: only
    /// an exponent or hundreds of digits can take it out of range. An
    /// integer of up to 300 digits, the usual number, is passed over by
    /// its grammar alone; anything else (a fraction, an exponent, an
    /// error to report) takes the scan [`Parser::number`] makes.
    #[inline]
    pub(super) fn skip_number(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let digits = start + usize::from(self.bytes.get(start) == Some(&b'-'));
        match plain_integer(self.bytes, digits) {
            Some((end, _)) if end - start <= 300 => {
                self.pos = end;
                Ok(())
            }
            _ => self.skip_number_scanned(),
        }
    }

    /// [`Parser::skip_number`] through the scan that builds numbers.
    #[cold]
    fn skip_number_scanned(&mut self) -> Result<(), Error> {
        let n = self.scan_number()?;
        if n.exponent || self.pos - n.start > 300 {
            self.float(n.start)?;
        }
        Ok(())
    }

    /// The text from `start` as a float, refused out of f64's range.
    fn float(&self, start: usize) -> Result<Number, Error> {
        // Rust's parser rounds correctly, as serde_json's float_roundtrip.
        let f: f64 = self.text[start..self.pos]
            .parse()
            .map_err(|_| self.syntax("invalid number"))?;
        match Number::from_f64(f) {
            Some(n) => Ok(n),
            None => Err(Error::at(
                self.bytes,
                self.pos,
                "number out of range",
                Category::Syntax,
            )),
        }
    }

    /// A number's grammar, its integer part accumulated on the way.
    #[inline]
    fn scan_number(&mut self) -> Result<Scanned, Error> {
        let b = self.bytes;
        let mut n = Scanned {
            start: self.pos,
            negative: b[self.pos] == b'-',
            int: 0,
            overflow: false,
            float: false,
            exponent: false,
        };
        if n.negative {
            self.pos += 1;
        }
        match b.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = b.get(self.pos) {
                    return Err(self.syntax("invalid number"));
                }
            }
            Some(b'1'..=b'9') => {
                while let Some(&d @ b'0'..=b'9') = b.get(self.pos) {
                    match n
                        .int
                        .checked_mul(10)
                        .and_then(|x| x.checked_add(u64::from(d - b'0')))
                    {
                        Some(x) => n.int = x,
                        None => n.overflow = true,
                    }
                    self.pos += 1;
                }
            }
            None => return Err(self.eof("EOF while parsing a value")),
            Some(_) => return Err(self.syntax("invalid number")),
        }
        if b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            self.digits()?;
            n.float = true;
        }
        if let Some(b'e' | b'E') = b.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = b.get(self.pos) {
                self.pos += 1;
            }
            self.digits()?;
            n.float = true;
            n.exponent = true;
        }
        Ok(n)
    }

    /// One or more digits (of a fraction or an exponent).
    fn digits(&mut self) -> Result<(), Error> {
        match self.bytes.get(self.pos) {
            Some(b'0'..=b'9') => {}
            None => return Err(self.eof("EOF while parsing a value")),
            Some(_) => return Err(self.syntax("invalid number")),
        }
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        Ok(())
    }
}
