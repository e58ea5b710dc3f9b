//! Arrays of flat objects read into a [`Table`] (see `crate::table`): the
//! first element decides the keys and each key's kind, and every later
//! element must spell the same keys in the same order with values of the
//! same kinds. An element that does not is read as the parser reads any
//! value, and the array from it on becomes a tree; text that is not valid
//! JSON is parsed again the usual way, so that its error is the usual one.

use super::keys;
use super::Parser;
use crate::table::{side_span, text_span, Column, Table, Texts};
use crate::{key_order, Error, Str, Value};

/// A table's keys and its columns, as they are read, and how its rows
/// spell the keys.
type Rows = (Vec<Str>, Vec<Column>, Spelled);

/// Where a table's string cells are kept while it is read: the text from
/// its `[` on (`base`, where the spans count from) and the strings that
/// had escapes, decoded.
struct Pending {
    base: usize,
    decoded: String,
}

/// Room for the keys a table is given first.
const KEYS: usize = 8;

/// Room each column is given first (a list the rules loop over is rarely
/// longer; a longer one grows). A column growing once costs more than the
/// room: mimalloc, which the service uses, serves every size up to a
/// kilobyte from its small bins alike (a 32-row string column is 256 bytes).
const ROOM: usize = 32;

impl<'a> Parser<'a> {
    /// The next value, built as [`Parser::value`] builds it, except that an
    /// array of flat objects is kept as a
    /// [`Value::Table`], which stands for the same array.
    pub fn value_rows(&mut self) -> Result<Value, Error> {
        if self.peek() != Some(b'[') {
            return self.value();
        }
        let (pos, depth) = (self.pos, self.depth);
        match self.table() {
            Ok(Some(v)) => Ok(v),
            // Not a table, or not JSON: read again from its start.
            _ => {
                (self.pos, self.depth) = (pos, depth);
                self.value()
            }
        }
    }

    /// The array at `[` as a table, or as a tree from the first element
    /// that does not fit; `None` when the array is empty or its first
    /// element is no flat object.
    fn table(&mut self) -> Result<Option<Value>, Error> {
        let mut strings = Pending {
            base: self.pos,
            decoded: String::new(),
        };
        self.open()?;
        let mut first = true;
        if !self.next_element_inner(&mut first, true)? {
            return Ok(None);
        }
        let Some((keys, mut columns, spelled)) = self.first_row(&mut strings)? else {
            return Ok(None);
        };
        // The pieces and the text they lie in, for every row alike.
        let own;
        let (text, pieces) = match &spelled {
            Spelled::Text(pieces, n) => (self.bytes, pieces.get(..*n).unwrap_or_default()),
            Spelled::Owned { text, pieces } => {
                own = text;
                (&own[..], &pieces[..])
            }
        };
        let mut len = 1;
        while self.row_follows()? {
            let (at, decoded) = ((self.pos, self.depth), strings.decoded.len());
            if self.compact_row(pieces, text, &mut columns, &mut strings)? {
                len += 1;
                continue;
            }
            // Written otherwise (white space, say): token by token, the
            // strings decoded from it dropped with its cells.
            (self.pos, self.depth) = at;
            truncate(&mut columns, len);
            strings.decoded.truncate(decoded);
            if self.row(&keys, &mut columns, &mut strings)? {
                len += 1;
                continue;
            }
            // The element read as any value, with those after it; the ones
            // before are the table's rows (a partly read row is dropped).
            (self.pos, self.depth) = at;
            truncate(&mut columns, len);
            strings.decoded.truncate(decoded);
            let texts = Texts {
                text: self.text.get(strings.base..).unwrap_or_default(),
                decoded: &strings.decoded,
            };
            let mut items = Table::build_of(&keys, &columns, texts, len);
            items.push(self.value()?);
            while self.next_element_inner(&mut first, true)? {
                items.push(self.value()?);
            }
            return Ok(Some(Value::Array(items)));
        }
        // The text the string cells lie in, copied once (`Table::new`).
        let texts = Texts {
            text: self.text.get(strings.base..self.pos).unwrap_or_default(),
            decoded: &strings.decoded,
        };
        Ok(Table::new(keys, columns, texts).map(|t| Value::Table(Box::new(t))))
    }

    /// The first element's keys and a column for each holding its value;
    /// `None` when it is not an object of plain, ascending keys with
    /// scalar values.
    fn first_row(&mut self, strings: &mut Pending) -> Result<Option<Rows>, Error> {
        if self.peek() != Some(b'{') {
            return Ok(None);
        }
        // Where the piece of the key read next starts: its `{` or `,`.
        let mut piece = self.pos;
        self.open()?;
        // Room for the keys of most flat objects, without growing.
        let (mut keys, mut columns): (Vec<Str>, Vec<Column>) =
            (Vec::with_capacity(KEYS), Vec::with_capacity(KEYS));
        let mut pieces = [(0u32, 0u32); KEYS];
        let mut compact = true;
        let mut first = true;
        while self.key_follows(&mut first, true)? {
            let key = self.string_value()?;
            let ascending = keys.last().is_none_or(|k| key_order(k, &key).is_lt());
            if !ascending || !keys::plain(&key) {
                return Ok(None);
            }
            self.colon()?;
            // Written compactly, the piece is the key's quotes, its colon
            // and the one byte before: nothing else fits that length.
            let (start, end) = (piece, self.pos);
            match (pieces.get_mut(keys.len()), u32::try_from(end)) {
                (Some(p), Ok(end32)) if compact && end - start == key.len() + 4 => {
                    *p = (start as u32, end32);
                }
                _ => compact = false,
            }
            // The value's first byte decides the column's kind; the value is
            // then read as every later row's is.
            let byte = self.peek();
            let mut column = match byte {
                Some(b'"') => Column::Str(Vec::with_capacity(ROOM)),
                Some(b'-' | b'0'..=b'9') => Column::Int(Vec::with_capacity(ROOM)),
                Some(b't' | b'f') => Column::Bool(Vec::with_capacity(ROOM)),
                _ => return Ok(None),
            };
            if !self.cell(&mut column, byte, strings)? {
                return Ok(None);
            }
            keys.push(key);
            columns.push(column);
            piece = self.pos;
        }
        if keys.is_empty() {
            return Ok(None);
        }
        let spelled = if compact {
            Spelled::Text(pieces, keys.len())
        } else {
            Spelled::of(&keys)
        };
        Ok(Some((keys, columns, spelled)))
    }

    /// After a row: true when another element follows (the parser at it),
    /// false past the closing `]`. The compact case first, a comma right
    /// before the next row's `{`, without the general call.
    #[inline(always)]
    fn row_follows(&mut self) -> Result<bool, Error> {
        if self.bytes.get(self.pos..self.pos + 2) == Some(b",{") {
            self.pos += 1;
            return Ok(true);
        }
        self.next_element_inner(&mut false, true)
    }

    /// [`Parser::row`] of a row written as compact JSON writes it: each
    /// key with its quotes, colon and the comma before it matched in one
    /// comparison. False, with the parser somewhere in the element, for a
    /// row written any other way; the nesting it passes through was
    /// counted for the first row, at the same depth.
    #[inline]
    fn compact_row(
        &mut self,
        pieces: &[(u32, u32)],
        text: &[u8],
        columns: &mut [Column],
        strings: &mut Pending,
    ) -> Result<bool, Error> {
        for (&(start, end), column) in pieces.iter().zip(columns.iter_mut()) {
            let piece = text.get(start as usize..end as usize).unwrap_or_default();
            if piece.is_empty() || !self.eat(piece) {
                return Ok(false);
            }
            // No white space before a compact value.
            let byte = self.bytes.get(self.pos).copied();
            if !self.cell(column, byte, strings)? {
                return Ok(false);
            }
        }
        Ok(self.eat(b"}"))
    }

    /// The element at the parser as a row of `keys` (written as they are,
    /// in their order), its values pushed onto `columns`; false, with the
    /// parser somewhere in the element, when it is not one.
    fn row(
        &mut self,
        keys: &[Str],
        columns: &mut [Column],
        strings: &mut Pending,
    ) -> Result<bool, Error> {
        if self.peek() != Some(b'{') {
            return Ok(false);
        }
        self.open()?;
        let mut first = true;
        for (key, column) in keys.iter().zip(columns.iter_mut()) {
            if !self.key_follows(&mut first, true)? || !self.string_if(key) {
                return Ok(false);
            }
            self.colon()?;
            let byte = self.peek();
            if !self.cell(column, byte, strings)? {
                return Ok(false);
            }
        }
        Ok(!self.key_follows(&mut first, true)?)
    }

    /// The value at the parser, of which `byte` is the first, onto
    /// `column`, when it is of its kind (a string as where it lies in
    /// `strings`).
    #[inline(always)]
    fn cell(
        &mut self,
        column: &mut Column,
        byte: Option<u8>,
        strings: &mut Pending,
    ) -> Result<bool, Error> {
        match (column, byte) {
            (Column::Str(v), Some(b'"')) => {
                self.pos += 1;
                let span = match self.string_span()? {
                    Ok((start, end)) => text_span(start - strings.base, end - strings.base),
                    Err(decoded) => {
                        let start = strings.decoded.len();
                        strings.decoded.push_str(&decoded);
                        side_span(start, strings.decoded.len())
                    }
                };
                match span {
                    Some(span) => v.push(span),
                    // Past what a span can say: a tree, not a table.
                    None => return Ok(false),
                }
            }
            (Column::Int(v), Some(b'-' | b'0'..=b'9')) => {
                // The usual cell as `Parser::number` reads it first, without
                // building a number to take the int back out.
                match self.plain_int() {
                    Some(int) => v.push(int as i64),
                    None => match self.number_scanned()?.as_i64() {
                        Some(i) => v.push(i),
                        None => return Ok(false),
                    },
                }
            }
            (Column::Bool(v), Some(b't')) => v.push(self.literal("true", true)?),
            (Column::Bool(v), Some(b'f')) => v.push(self.literal("false", false)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Keeps each column's first `n` values.
fn truncate(columns: &mut [Column], n: usize) {
    for column in columns {
        column.truncate(n);
    }
}

/// A row's keys as compact JSON writes them, `{"a":`, then `,"b":` and so
/// on: keys with no character to escape, so their text is exact. Each
/// piece is where it starts and ends in a text.
enum Spelled {
    /// In the parser's text: the first row's own pieces, where it was
    /// written so (no copy; most tables, up to [`KEYS`] keys), and how
    /// many keys.
    Text([(u32, u32); KEYS], usize),
    /// Spelled anew, for a first row written otherwise or of more keys.
    Owned {
        text: Vec<u8>,
        pieces: Vec<(u32, u32)>,
    },
}

impl Spelled {
    fn of(keys: &[Str]) -> Spelled {
        let mut text = Vec::with_capacity(keys.iter().map(|k| k.len() + 4).sum());
        let mut pieces = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let start = text.len();
            text.push(if i == 0 { b'{' } else { b',' });
            text.push(b'"');
            text.extend_from_slice(key.as_bytes());
            text.extend_from_slice(b"\":");
            // Past what a u32 says (text of 4 GiB), the empty piece
            // (0, 0), which `compact_row` never takes for a match.
            let piece = u32::try_from(start)
                .ok()
                .zip(u32::try_from(text.len()).ok());
            pieces.push(piece.unwrap_or((0, 0)));
        }
        Spelled::Owned { text, pieces }
    }
}

#[cfg(test)]
mod tests {
    use super::{Parser, Pending, Spelled, KEYS};

    /// How the first row `row` (an object) spells its keys for the rows
    /// after it.
    fn spelled(row: &str) -> Option<Spelled> {
        let mut strings = Pending {
            base: 0,
            decoded: String::new(),
        };
        let rows = Parser::new(row).first_row(&mut strings).expect("valid");
        rows.map(|(_, _, spelled)| spelled)
    }

    #[test]
    fn a_compact_first_row_lends_its_own_key_pieces() {
        // White space after a colon lies outside the pieces.
        for compact in [r#"{"a":1,"b":"x"}"#, r#"{"a": 1,"b": "x"}"#] {
            assert!(
                matches!(spelled(compact), Some(Spelled::Text(_, 2))),
                "{compact}"
            );
        }
        for spaced in [r#"{"a":1, "b":"x"}"#, r#"{ "a":1,"b":"x"}"#, r#"{"a" :1}"#] {
            assert!(
                matches!(spelled(spaced), Some(Spelled::Owned { .. })),
                "{spaced}"
            );
        }
        // Up to `KEYS` keys lent, more spelled anew.
        let row = |n: usize| {
            let keys: Vec<String> = (0..n).map(|k| format!(r#""k{k:02}":{k}"#)).collect();
            format!("{{{}}}", keys.join(","))
        };
        assert!(matches!(spelled(&row(KEYS)), Some(Spelled::Text(_, n)) if n == KEYS));
        assert!(matches!(
            spelled(&row(KEYS + 1)),
            Some(Spelled::Owned { .. })
        ));
    }
}
