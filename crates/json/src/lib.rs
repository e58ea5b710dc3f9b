//! celhook's JSON tree: the objects of admission and conversion requests,
//! the values the CEL engine reads, and what celhook writes back.
//!
//! Why not `serde_json::Value`: its objects are B-trees of `String` keys,
//! so a request's object costs an allocation per key and per string and a
//! B-tree insertion per field, and every field read by a rule walks B-tree
//! nodes. Here an object is one vector of entries sorted by key (the order
//! `serde_json`'s maps iterate in, so answers do not change), strings of up
//! to 24 bytes are stored inline, and the parser (`parse`) builds the tree
//! straight from the body's bytes. Measured on the peer workload's review
//! (callgrind, 4.8 KB): 250k instructions to parse and drop a
//! `serde_json::Value`, 185k for this tree through serde's visitor, 125k
//! through this crate's parser.
//!
//! Numbers are `serde_json::Number`, so values print, compare and convert
//! exactly as they did.

mod de;
mod map;
pub mod parse;
mod scan;
mod ser;
mod table;
pub mod tape;
pub mod write;

use std::fmt;

pub use compact_str::CompactString as Str;
pub use map::{key_order, same_bytes, same_key, Map};
pub use parse::{
    from_slice, from_str, tape_from_str, Error, NextKey, Parser, PlainKey, TapeBuilder,
};
pub use serde_json::Number;
pub use table::{Cells, Strings, Table};
pub use tape::Tape;
pub use write::{to_vec, write};

/// A JSON value.
#[derive(Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(Str),
    Array(Vec<Value>),
    Object(Map),
    /// An array of flat objects kept by column ([`Table`]), which the
    /// planned decoder makes of lists the rules loop over; it stands for
    /// the array of its elements everywhere (equality, writing,
    /// [`Value::as_array`]).
    Table(Box<Table>),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Table(a), Value::Table(b)) => a == b,
            (a, b) => match (a.as_array(), b.as_array()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        }
    }
}

impl Eq for Value {}

/// What indexing a missing key or position gives, as with serde_json.
static NULL: Value = Value::Null;

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_) | Value::Table(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, Value::Bool(_))
    }

    pub fn is_i64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_i64())
    }

    pub fn is_u64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_u64())
    }

    pub fn is_f64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_f64())
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The elements of an array (of a table, built once).
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            Value::Table(table) => Some(table.items()),
            _ => None,
        }
    }

    /// The elements of an array; a table becomes the array it stands for.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        if let Value::Table(_) = self {
            if let Value::Table(table) = std::mem::take(self) {
                *self = Value::Array(table.into_items());
            }
        }
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The field `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.get(key)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_object_mut()?.get_mut(key)
    }

    /// The value at a JSON Pointer (RFC 6901), as `serde_json` reads one.
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |at, token| {
            let token = token.replace("~1", "/").replace("~0", "~");
            match at {
                Value::Object(map) => map.get(&token),
                Value::Array(_) | Value::Table(_) => {
                    parse_index(&token).and_then(|i| at.as_array()?.get(i))
                }
                _ => None,
            }
        })
    }

    /// Takes the value out, leaving null.
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }

    /// A description of the value's type for error texts: "null", "a
    /// boolean", "a number", "a string", "an array", "an object".
    pub fn kind_with_article(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) | Value::Table(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// A pointer token as an array index: digits without a leading zero.
fn parse_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

impl std::ops::Index<&str> for Value {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

impl std::ops::Index<usize> for Value {
    type Output = Value;

    fn index(&self, i: usize) -> &Value {
        self.as_array()
            .and_then(|items| items.get(i))
            .unwrap_or(&NULL)
    }
}

impl std::ops::IndexMut<&str> for Value {
    /// As `serde_json`: null becomes an empty object, a missing key is
    /// inserted as null; any other value panics (a programming error).
    fn index_mut(&mut self, key: &str) -> &mut Value {
        if self.is_null() {
            *self = Value::Object(Map::new());
        }
        match self {
            Value::Object(map) => map.entry_or_null(key),
            other => panic!("cannot index {} with a key", other.kind_with_article()),
        }
    }
}

impl fmt::Debug for Value {
    /// The JSON text: shorter than a derived form, and what tests compare.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

macro_rules! from_integer {
    ($($t:ty)*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Number(Number::from(n))
            }
        }
    )*};
}

from_integer!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

impl From<f64> for Value {
    /// NaN and the infinities have no JSON form: null, as in serde_json.
    fn from(f: f64) -> Value {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

impl From<Number> for Value {
    fn from(n: Number) -> Value {
        Value::Number(n)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(Str::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(Str::from(s))
    }
}

impl From<Str> for Value {
    fn from(s: Str) -> Value {
        Value::String(s)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Object(map)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Value {
        Value::Array(items.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl<T: Into<Value>> FromIterator<T> for Value {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Value {
        Value::Array(items.into_iter().map(Into::into).collect())
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => Value::Number(n),
            serde_json::Value::String(s) => Value::String(Str::from(s)),
            serde_json::Value::Array(items) => {
                Value::Array(items.into_iter().map(Value::from).collect())
            }
            // serde_json's map iterates in key order without repeats, unless
            // a dependency turns on its `preserve_order` (features merge):
            // `from_entries` checks the order and sorts only if needed.
            serde_json::Value::Object(map) => Value::Object(Map::from_entries(
                map.into_iter()
                    .map(|(k, v)| (Str::from(k), Value::from(v)))
                    .collect(),
            )),
        }
    }
}

impl From<&serde_json::Value> for Value {
    fn from(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.clone()),
            serde_json::Value::String(s) => Value::String(Str::from(s.as_str())),
            serde_json::Value::Array(items) => {
                Value::Array(items.iter().map(Value::from).collect())
            }
            serde_json::Value::Object(map) => Value::Object(Map::from_entries(
                map.iter()
                    .map(|(k, v)| (Str::from(k.as_str()), Value::from(v)))
                    .collect(),
            )),
        }
    }
}

impl From<&Value> for serde_json::Value {
    fn from(v: &Value) -> serde_json::Value {
        match v {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::Value::Number(n.clone()),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Array(_) | Value::Table(_) => serde_json::Value::Array(
                v.as_array()
                    .into_iter()
                    .flatten()
                    .map(serde_json::Value::from)
                    .collect(),
            ),
            Value::Object(map) => serde_json::Value::Object(
                map.iter()
                    .map(|(k, v)| (k.to_string(), serde_json::Value::from(v)))
                    .collect(),
            ),
        }
    }
}

impl From<Value> for serde_json::Value {
    fn from(v: Value) -> serde_json::Value {
        serde_json::Value::from(&v)
    }
}

impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl PartialEq<bool> for Value {
    fn eq(&self, other: &bool) -> bool {
        self.as_bool() == Some(*other)
    }
}

impl PartialEq<String> for Value {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}

macro_rules! eq_number {
    ($($t:ty => $as:ident as $wide:ty),*) => {$(
        impl PartialEq<$t> for Value {
            fn eq(&self, other: &$t) -> bool {
                self.$as() == Some(<$wide>::from(*other))
            }
        }
    )*};
}

eq_number!(i8 => as_i64 as i64, i16 => as_i64 as i64, i32 => as_i64 as i64, i64 => as_i64 as i64,
    u8 => as_u64 as u64, u16 => as_u64 as u64, u32 => as_u64 as u64, u64 => as_u64 as u64,
    f64 => as_f64 as f64);

/// As serde_json compares: the number narrowed to `f32` (`0.1` equals
/// `0.1f32`), not the `f32` widened.
impl PartialEq<f32> for Value {
    fn eq(&self, other: &f32) -> bool {
        self.as_f64().is_some_and(|v| v as f32 == *other)
    }
}

impl PartialEq<serde_json::Value> for Value {
    fn eq(&self, other: &serde_json::Value) -> bool {
        match (self, other) {
            (Value::Null, serde_json::Value::Null) => true,
            (Value::Bool(a), serde_json::Value::Bool(b)) => a == b,
            (Value::Number(a), serde_json::Value::Number(b)) => a == b,
            (Value::String(a), serde_json::Value::String(b)) => a == b,
            (Value::Array(_) | Value::Table(_), serde_json::Value::Array(b)) => self
                .as_array()
                .is_some_and(|a| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)),
            (Value::Object(a), serde_json::Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && va == vb)
            }
            _ => false,
        }
    }
}

/// Any serializable value as a tree (through `serde_json`'s: for small
/// typed values such as a request's resource, not on a hot path).
pub fn to_value<T: serde::Serialize + ?Sized>(v: &T) -> Result<Value, serde_json::Error> {
    serde_json::to_value(v).map(Value::from)
}

/// A typed value read from a tree (through `serde_json`'s: for config
/// documents and tests, not on a hot path).
pub fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(serde_json::Value::from(v))
}

/// Builds a [`Value`] with `serde_json::json!`'s syntax.
#[macro_export]
macro_rules! json {
    ($($tt:tt)+) => {
        $crate::Value::from($crate::__serde_json::json!($($tt)+))
    };
}

#[doc(hidden)]
pub use serde_json as __serde_json;

#[cfg(test)]
mod tests;
