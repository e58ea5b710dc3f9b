//! CEL runtime values. Values read from the request borrow its JSON and the
//! schema node that types them, so binding `self` copies nothing: a JSON
//! number becomes an `int` or a `double` by its schema, a string with
//! `format: date-time` a timestamp, and so on, only when a rule reads it.

use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use celhook_json::{Map as JsonMap, Table as JsonTable, Value as Json};
use chrono::{DateTime, FixedOffset, TimeDelta};

use celhook_schema::{Format, Schema, Type};

pub mod arith;
pub mod compare;
mod containers;
pub mod error;
pub mod json;
pub mod k8s;
pub mod time;

pub use compare::{compare, contains_equal, equals, numeric_cmp};
pub use containers::Elements;
pub use json::to_json;
pub use time::{format_timestamp, in_range, parse_timestamp, parse_timestamp_unbounded};

use k8s::LibValue;

/// A string value: borrowed from the request or the program, or computed.
#[derive(Clone)]
pub enum Str<'a> {
    Borrowed(&'a str),
    Owned(Rc<str>),
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Owned(s) => s,
        }
    }
}

/// A list: a JSON array typed by its schema node, or computed.
#[derive(Clone)]
pub enum List<'a> {
    Json {
        items: &'a [Json],
        /// The array's schema node (its `items` types the elements).
        schema: &'a Schema,
    },
    /// A JSON array of flat objects kept by column (`celhook_json::Table`):
    /// fused loops read its columns; anything else its elements, built
    /// once (see [`List::json`]).
    Table {
        table: &'a JsonTable,
        schema: &'a Schema,
    },
    Owned(Rc<Vec<Value<'a>>>),
    /// A literal list of constants of the program.
    Const(&'a [crate::value::Const]),
}

/// `obj[key]` (a small object, such as a list item, is scanned in order
/// comparing lengths first, a larger one searched).
#[inline]
fn json_field<'j>(obj: &'j JsonMap, key: &str) -> Option<&'j Json> {
    obj.get(key)
}

/// A map or object: a JSON object typed by its schema node, or computed.
#[derive(Clone)]
pub enum Map<'a> {
    Json {
        obj: &'a JsonMap,
        schema: &'a Schema,
    },
    Owned(Rc<Vec<(Value<'a>, Value<'a>)>>),
}

impl<'a> Value<'a> {
    /// `clone()`, with the copies of values borrowed from the request or
    /// the program (what variables and kept reads mostly hold) inlined.
    #[inline(always)]
    pub(crate) fn copy(&self) -> Value<'a> {
        match self {
            Value::Str(Str::Borrowed(s)) => Value::Str(Str::Borrowed(s)),
            Value::Int(i) => Value::Int(*i),
            Value::Bool(b) => Value::Bool(*b),
            Value::Map(Map::Json { obj, schema }) => Value::Map(Map::Json { obj, schema }),
            Value::List(List::Json { items, schema }) => Value::List(List::Json { items, schema }),
            Value::List(List::Table { table, schema }) => {
                Value::List(List::Table { table, schema })
            }
            other => other.clone(),
        }
    }
}

/// CEL type values, as `type(x)` returns them and type identifiers name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeName {
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List,
    Map,
    Timestamp,
    Duration,
    Type,
    Optional,
    /// An object of the schema (a "message type" for CEL).
    Object,
    /// `kubernetes.Quantity` (quantity library).
    Quantity,
    /// `net.IP` (ip library).
    Ip,
    /// `net.CIDR` (cidr library).
    Cidr,
    /// `kubernetes.URL` (url library).
    Url,
    /// `kubernetes.Semver` (semver library).
    Semver,
    /// `kubernetes.NamedFormat` (format library).
    NamedFormat,
    /// The authorizer library's types: the `authorizer` variable, the
    /// questions it builds and their decisions.
    Authorizer,
    PathCheck,
    GroupCheck,
    ResourceCheck,
    Decision,
}

impl TypeName {
    /// The CEL name of the type.
    pub fn name(self) -> &'static str {
        match self {
            TypeName::Null => "null_type",
            TypeName::Bool => "bool",
            TypeName::Int => "int",
            TypeName::Uint => "uint",
            TypeName::Double => "double",
            TypeName::String => "string",
            TypeName::Bytes => "bytes",
            TypeName::List => "list",
            TypeName::Map => "map",
            TypeName::Timestamp => "google.protobuf.Timestamp",
            TypeName::Duration => "google.protobuf.Duration",
            TypeName::Type => "type",
            TypeName::Optional => "optional_type",
            TypeName::Object => "object",
            TypeName::Quantity => "kubernetes.Quantity",
            TypeName::Ip => "net.IP",
            TypeName::Cidr => "net.CIDR",
            TypeName::Url => "kubernetes.URL",
            TypeName::Semver => "kubernetes.Semver",
            TypeName::NamedFormat => "kubernetes.NamedFormat",
            TypeName::Authorizer => "kubernetes.authorization.Authorizer",
            TypeName::PathCheck => "kubernetes.authorization.PathCheck",
            TypeName::GroupCheck => "kubernetes.authorization.GroupCheck",
            TypeName::ResourceCheck => "kubernetes.authorization.ResourceCheck",
            TypeName::Decision => "kubernetes.authorization.Decision",
        }
    }
}

/// A CEL value.
#[derive(Clone)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Str<'a>),
    Bytes(Rc<[u8]>),
    Duration(TimeDelta),
    /// An instant, with the offset it was written with (cel-go keeps it
    /// for printing; comparisons use the instant).
    Timestamp(DateTime<FixedOffset>),
    List(List<'a>),
    Map(Map<'a>),
    Type(TypeName),
    Optional(Option<Rc<Value<'a>>>),
    /// A value of a Kubernetes library type (quantity, ip, cidr, url,
    /// semver, named format).
    Lib(Rc<LibValue>),
}

impl<'a> Value<'a> {
    /// A computed string.
    pub fn string(s: impl Into<Rc<str>>) -> Self {
        Value::Str(Str::Owned(s.into()))
    }

    /// A computed list.
    pub fn list(items: Vec<Value<'a>>) -> Self {
        Value::List(List::Owned(Rc::new(items)))
    }

    /// Types a JSON value by its schema node. JSON null is CEL null (object
    /// fields holding null are treated as absent before this is reached).
    /// A string whose format converts it (see `converts_strings`) is the
    /// value it spells, where it parses.
    pub fn from_json(v: &'a Json, schema: &'a Schema) -> Self {
        match v {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match schema.ty {
                Type::Number => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
                _ => match n.as_i64() {
                    Some(i) => Value::Int(i),
                    None => match n.as_u64() {
                        Some(u) if schema.ty == Type::Any => Value::Uint(u),
                        _ => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
                    },
                },
            },
            Json::String(s) => {
                if converts_strings(schema) {
                    match &schema.format {
                        Format::Byte => {
                            if let Some(b) = decode_base64(s) {
                                return Value::Bytes(b.into());
                            }
                        }
                        Format::Date => {
                            if let Some(d) = crate::value::time::parse_full_date(s) {
                                if let Some(t) = d.and_hms_opt(0, 0, 0) {
                                    return Value::Timestamp(t.and_utc().fixed_offset());
                                }
                            }
                        }
                        Format::DateTime => {
                            if let Some(t) = parse_timestamp(s) {
                                return Value::Timestamp(t);
                            }
                        }
                        Format::Duration => {
                            if let Some(d) = crate::value::time::parse_format_duration(s) {
                                return Value::Duration(d);
                            }
                        }
                        _ => {}
                    }
                }
                Value::Str(Str::Borrowed(s))
            }
            Json::Array(items) => Value::List(List::Json { items, schema }),
            Json::Table(table) => Value::List(List::Table { table, schema }),
            Json::Object(obj) => Value::Map(Map::Json { obj, schema }),
        }
    }

    /// Whether the value's type has an ordering (`<` and `sort()` accept it).
    pub(crate) fn is_orderable(&self) -> bool {
        matches!(
            self,
            Value::Int(_)
                | Value::Uint(_)
                | Value::Double(_)
                | Value::Str(_)
                | Value::Bytes(_)
                | Value::Bool(_)
                | Value::Duration(_)
                | Value::Timestamp(_)
        )
    }

    /// The CEL type of the value.
    pub fn type_name(&self) -> TypeName {
        match self {
            Value::Null => TypeName::Null,
            Value::Bool(_) => TypeName::Bool,
            Value::Int(_) => TypeName::Int,
            Value::Uint(_) => TypeName::Uint,
            Value::Double(_) => TypeName::Double,
            Value::Str(_) => TypeName::String,
            Value::Bytes(_) => TypeName::Bytes,
            Value::Duration(_) => TypeName::Duration,
            Value::Timestamp(_) => TypeName::Timestamp,
            Value::List(_) => TypeName::List,
            Value::Map(Map::Json { schema, .. }) if is_object(schema) => TypeName::Object,
            Value::Map(_) => TypeName::Map,
            Value::Type(_) => TypeName::Type,
            Value::Optional(_) => TypeName::Optional,
            Value::Lib(l) => l.type_name(),
        }
    }
}

/// An object of the schema, as opposed to a map (additionalProperties, or
/// untyped data).
fn is_object(schema: &Schema) -> bool {
    let untyped = schema.ty == Type::Any && schema.properties.is_empty();
    !schema.is_map() && !untyped
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// The schema of data no schema describes.
pub static ANY: Schema = Schema::untyped(true);

// === equality and ordering ===

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Uint(u) => write!(f, "{u}u"),
            Value::Double(d) => write!(f, "{d:?}"),
            Value::Str(s) => write!(f, "{:?}", &**s),
            Value::Bytes(b) => write!(f, "b{:?}", String::from_utf8_lossy(b)),
            Value::Duration(d) => write!(f, "duration({d})"),
            Value::Timestamp(t) => write!(f, "timestamp({})", format_timestamp(t)),
            Value::List(l) => f.debug_list().entries(l.iter()).finish(),
            Value::Map(m) => {
                let mut d = f.debug_map();
                for (k, v) in m.entries() {
                    d.entry(&k, &v);
                }
                d.finish()
            }
            Value::Type(t) => write!(f, "{}", t.name()),
            Value::Optional(None) => write!(f, "optional.none()"),
            Value::Optional(Some(v)) => write!(f, "optional.of({v:?})"),
            Value::Lib(l) => write!(f, "{}({:?})", l.type_name().name(), l.display()),
        }
    }
}

/// Constants of the program.
#[derive(Debug)]
pub enum Const {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    Type(TypeName),
}

#[inline(always)]
pub fn constant(c: &Const) -> Value<'_> {
    match c {
        Const::Null => Value::Null,
        Const::Bool(b) => Value::Bool(*b),
        Const::Int(i) => Value::Int(*i),
        Const::Uint(u) => Value::Uint(*u),
        Const::Double(d) => Value::Double(*d),
        Const::Str(s) => Value::Str(Str::Borrowed(s)),
        Const::Bytes(b) => Value::Bytes(Rc::from(&**b)),
        Const::Type(t) => Value::Type(*t),
    }
}

/// The size cel-go uses for cost: code points of a string, bytes of bytes,
/// entries of a list or map, 1 for anything else.
pub fn size(v: &Value<'_>) -> u64 {
    match v {
        Value::Str(s) => str_size(s),
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.stored_len() as u64,
        Value::Optional(Some(v)) => size(v),
        _ => 1,
    }
}

/// Whether strings at `schema` may become another CEL type in
/// [`Value::from_json`] (bytes, timestamps, durations by their format).
#[inline]
pub(crate) fn converts_strings(schema: &Schema) -> bool {
    schema.ty == Type::String
        && matches!(
            schema.format,
            Format::Byte | Format::Date | Format::DateTime | Format::Duration
        )
}

/// A string's CEL size: its characters.
#[inline]
pub fn str_size(s: &str) -> u64 {
    bytes_size(s.as_bytes())
}

/// [`str_size`] of a string's UTF-8 bytes: the bytes that start a
/// character.
#[inline]
pub fn bytes_size(b: &[u8]) -> u64 {
    if b.is_ascii() {
        b.len() as u64
    } else {
        b.iter().filter(|&&c| c & 0xC0 != 0x80).count() as u64
    }
}

impl From<&str> for Str<'_> {
    fn from(s: &str) -> Self {
        Str::Owned(Rc::from(s))
    }
}
