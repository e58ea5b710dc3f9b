//! CEL runtime values. Values read from the request borrow its JSON and the
//! schema node that types them, so binding `self` copies nothing: a JSON
//! number becomes an `int` or a `double` by its schema, a string with
//! `format: date-time` a timestamp, and so on, only when a rule reads it.

use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, TimeDelta};
use serde_json::Value as Json;

use crate::schema::{Format, ListType, Schema, Type};

use super::error::EvalError;
use super::library::LibValue;

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
    Owned(Rc<Vec<Value<'a>>>),
    /// A literal list of constants of the program.
    Const(&'a [super::compile::Const]),
}

/// `obj[key]`. Small objects (list items such as ports) are scanned in
/// order comparing lengths first: a B-tree search there costs a string
/// comparison, an out-of-line `memcmp`, per key it passes.
#[inline]
fn json_field<'j>(obj: &'j serde_json::Map<String, Json>, key: &str) -> Option<&'j Json> {
    if obj.len() <= 4 {
        obj.iter()
            .find(|(k, _)| k.len() == key.len() && k.as_bytes() == key.as_bytes())
            .map(|(_, v)| v)
    } else {
        obj.get(key)
    }
}

/// A map or object: a JSON object typed by its schema node, or computed.
#[derive(Clone)]
pub enum Map<'a> {
    Json {
        obj: &'a serde_json::Map<String, Json>,
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
                if schema.ty == Type::String {
                    match &schema.format {
                        Format::Byte => {
                            if let Some(b) = decode_base64(s) {
                                return Value::Bytes(b.into());
                            }
                        }
                        Format::Date => {
                            if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
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
                            if let Ok(d) = super::functions::parse_duration(s) {
                                return Value::Duration(d);
                            }
                        }
                        _ => {}
                    }
                }
                Value::Str(Str::Borrowed(s))
            }
            Json::Array(items) => Value::List(List::Json { items, schema }),
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

/// Parses an RFC 3339 timestamp as strictly as cel-go (Go's time.RFC3339):
/// upper-case `T` and `Z`, no leap seconds, years 1 to 9999.
pub fn parse_timestamp(s: &str) -> Option<DateTime<FixedOffset>> {
    parse_timestamp_unbounded(s).filter(in_range)
}

/// As [`parse_timestamp`], without the year range: `None` for text that is
/// not a timestamp at all. Go also takes a comma before the fraction and
/// more than nine fractional digits (dropping the excess).
pub fn parse_timestamp_unbounded(s: &str) -> Option<DateTime<FixedOffset>> {
    let s = &normalize_fraction(s)?;
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape || &s[17..19] > "59" {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        rest = &frac[n..];
    }
    let zone_ok = rest == "Z"
        || (rest.len() == 6
            && rest.is_ascii()
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':'
            && rest[1..3].bytes().all(|c| c.is_ascii_digit())
            && rest[4..6].bytes().all(|c| c.is_ascii_digit()));
    if !zone_ok {
        return None;
    }
    let year: i32 = s[0..4].parse().ok()?;
    if year == 0 {
        // chrono reads year 0; cel-go calls it out of range.
        let shifted = format!("0001{}", &s[4..]);
        return DateTime::parse_from_rfc3339(&shifted)
            .ok()
            .and_then(|t| t.with_year(0));
    }
    DateTime::parse_from_rfc3339(s).ok()
}

/// `,5` as `.5`, and a fraction cut to nine digits.
fn normalize_fraction(s: &str) -> Option<String> {
    // Byte 19 must start a character: `2025-01-01T00:00:0\u{200a}...` is
    // not a timestamp (and must not be split inside a character).
    if s.len() < 20 || !s.is_char_boundary(19) {
        return None;
    }
    let (head, rest) = s.split_at(19);
    let rest = match rest.strip_prefix(',') {
        Some(r) => format!(".{r}"),
        None => rest.to_owned(),
    };
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n > 9 {
            return Some(format!("{head}.{}{}", &frac[..9], &frac[n..]));
        }
    }
    Some(format!("{head}{rest}"))
}

/// cel-go's timestamps run from year 1 to year 9999.
pub fn in_range(t: &DateTime<FixedOffset>) -> bool {
    (1..=9999).contains(&t.naive_utc().year())
}

/// Prints a timestamp as cel-go does: RFC 3339 with the fraction's trailing
/// zeros dropped, `Z` for UTC, the written offset otherwise.
pub fn format_timestamp(t: &DateTime<FixedOffset>) -> String {
    let secs = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    let frac = if nanos == 0 {
        String::new()
    } else {
        let f = format!("{nanos:09}");
        format!(".{}", f.trim_end_matches('0'))
    };
    let zone = if t.offset().local_minus_utc() == 0 {
        "Z".to_owned()
    } else {
        t.format("%:z").to_string()
    };
    format!("{secs}{frac}{zone}")
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

// === impl List ===

impl<'a> List<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            List::Json { items, .. } => items.len(),
            List::Owned(v) => v.len(),
            List::Const(c) => c.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `i`, if in range.
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        match self {
            List::Json { items, schema } => {
                let item = items.get(i)?;
                Some(match schema.items.as_deref() {
                    Some(s) => Value::from_json(item, s),
                    None => Value::from_json(item, &ANY),
                })
            }
            List::Owned(v) => v.get(i).cloned(),
            List::Const(c) => c.get(i).map(super::eval::constant),
        }
    }

    /// The elements, in order.
    pub fn iter(&self) -> Elements<'a, '_> {
        match self {
            // The element schema is looked up once, not per element.
            List::Json { items, schema } => Elements::Json {
                items: items.iter(),
                schema: schema.items.as_deref().unwrap_or(&ANY),
            },
            List::Owned(v) => Elements::Owned(v.iter()),
            List::Const(c) => Elements::Const(c.iter()),
        }
    }

    /// The list type the schema gives it (computed lists are atomic).
    pub fn list_type(&self) -> (ListType, &[String]) {
        match self {
            List::Json { schema, .. } => (schema.list_type, &schema.list_map_keys),
            List::Owned(_) | List::Const(_) => (ListType::Atomic, &[]),
        }
    }
}

/// The elements of a [`List`], in order.
pub enum Elements<'a, 'l> {
    Json {
        items: std::slice::Iter<'a, Json>,
        schema: &'a Schema,
    },
    Owned(std::slice::Iter<'l, Value<'a>>),
    Const(std::slice::Iter<'a, super::compile::Const>),
}

impl<'a> Iterator for Elements<'a, '_> {
    type Item = Value<'a>;

    #[inline]
    fn next(&mut self) -> Option<Value<'a>> {
        match self {
            Elements::Json { items, schema } => items.next().map(|j| Value::from_json(j, schema)),
            Elements::Owned(v) => v.next().cloned(),
            Elements::Const(c) => c.next().map(super::eval::constant),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Elements::Json { items, .. } => items.size_hint(),
            Elements::Owned(v) => v.size_hint(),
            Elements::Const(c) => c.size_hint(),
        }
    }
}

/// The schema of data no schema describes.
pub static ANY: Schema = Schema::untyped(true);

// === impl Map ===

impl<'a> Map<'a> {
    /// Looks a string key up: a map key, or an object field (by its JSON
    /// name). Null fields of objects count as absent, and object fields the
    /// schema does not declare are out of reach.
    /// [`Map::get_str`] for a field the checker found at `position` of
    /// the schema's properties: the schema is not searched when the name
    /// is there.
    #[inline]
    pub fn get_field(&self, key: &str, position: Option<u32>) -> Option<Value<'a>> {
        if let (Map::Json { obj, schema }, Some(p)) = (self, position) {
            if schema.additional_properties.is_none() {
                if let Some(child) = schema.properties.get_at(p as usize, key) {
                    return match json_field(obj, key)? {
                        Json::Null => None,
                        v => Some(Value::from_json(v, child)),
                    };
                }
            }
        }
        self.get_str(key)
    }

    pub fn get_str(&self, key: &str) -> Option<Value<'a>> {
        match self {
            Map::Json { obj, schema } => {
                let v = json_field(obj, key)?;
                if let Some(s) = schema.additional_properties.as_deref() {
                    return Some(Value::from_json(v, s));
                }
                // Untyped data is a map: its null entries are values.
                if schema.ty == Type::Any && schema.properties.is_empty() {
                    return Some(Value::from_json(v, &ANY));
                }
                if v.is_null() {
                    return None;
                }
                match schema.property(key) {
                    Some(s) => Some(Value::from_json(v, s)),
                    None if schema.ty == Type::Any && schema.properties.is_empty() => {
                        Some(Value::from_json(v, &ANY))
                    }
                    None => None,
                }
            }
            Map::Owned(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if &**s == key))
                .map(|(_, v)| v.clone()),
        }
    }

    /// Looks any key up, with CEL's numeric key equivalence (`1`, `1u` and
    /// `1.0` are the same key).
    pub fn get(&self, key: &Value<'_>) -> Option<Value<'a>> {
        match (self, key) {
            (_, Value::Str(s)) => self.get_str(s),
            (Map::Json { .. }, _) => None,
            (Map::Owned(entries), _) => entries
                .iter()
                .find(|(k, _)| key_equals(k, key))
                .map(|(_, v)| v.clone()),
        }
    }

    /// Number of entries (for objects: fields set to a non-null value).
    pub fn len(&self) -> usize {
        match self {
            Map::Json { obj, schema } if !is_object(schema) => obj.len(),
            Map::Json { .. } => self.keys().count(),
            Map::Owned(entries) => entries.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys, in the map's order.
    pub fn keys(&self) -> Box<dyn Iterator<Item = Value<'a>> + '_> {
        match self {
            Map::Json { obj, schema } => {
                let is_map = !is_object(schema);
                Box::new(
                    obj.iter()
                        .filter(move |(k, v)| {
                            is_map || (!v.is_null() && schema.property(k).is_some())
                        })
                        .map(|(k, _)| Value::Str(Str::Borrowed(k.as_str()))),
                )
            }
            Map::Owned(entries) => Box::new(entries.iter().map(|(k, _)| k.clone())),
        }
    }

    /// The entries, in the map's order.
    pub fn entries(&self) -> Vec<(Value<'a>, Value<'a>)> {
        match self {
            Map::Json { .. } => self
                .keys()
                .filter_map(|k| {
                    let v = match &k {
                        Value::Str(s) => self.get_str(s)?,
                        _ => return None,
                    };
                    Some((k, v))
                })
                .collect(),
            Map::Owned(entries) => entries.as_ref().clone(),
        }
    }
}

/// Whether the stored key `stored` answers a lookup of `key`: keys match
/// numerically across int, uint and an integral double looked up, but a
/// double stored as a key only matches a double, as cel-go looks keys up.
fn key_equals(stored: &Value<'_>, key: &Value<'_>) -> bool {
    match (stored, key) {
        (Value::Double(x), Value::Double(y)) => x == y,
        (Value::Double(_), _) => false,
        _ => equals(stored, key).unwrap_or(false),
    }
}

// === equality and ordering ===

/// CEL equality: numbers compare across int, uint and double; values of
/// different types are unequal; lists typed `set` or `map` by the schema
/// compare without regard to order.
pub fn equals(a: &Value<'_>, b: &Value<'_>) -> Result<bool, EvalError> {
    Ok(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => **x == **y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Duration(x), Value::Duration(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        (Value::Type(x), Value::Type(y)) => x == y,
        (Value::List(x), Value::List(y)) => list_equals(x, y)?,
        (Value::Map(x), Value::Map(y)) => map_equals(x, y)?,
        (Value::Optional(x), Value::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y)?,
            _ => false,
        },
        (Value::Lib(x), Value::Lib(y)) => x.equals(y),
        _ => match numeric_cmp(a, b) {
            Some(o) => o == Ordering::Equal,
            None => false,
        },
    })
}

fn list_equals(x: &List<'_>, y: &List<'_>) -> Result<bool, EvalError> {
    if x.len() != y.len() {
        return Ok(false);
    }
    let (lt, _) = x.list_type();
    if matches!(lt, ListType::Set | ListType::Map) || y.list_type().0 != ListType::Atomic {
        // Unordered: every element of x has an equal one in y (sizes match
        // and elements are unique by the list type's guarantee).
        let ys: Vec<Value<'_>> = y.iter().collect();
        for a in x.iter() {
            let mut found = false;
            for b in &ys {
                if equals(&a, b)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    for (a, b) in x.iter().zip(y.iter()) {
        if !equals(&a, &b)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn map_equals(x: &Map<'_>, y: &Map<'_>) -> Result<bool, EvalError> {
    // Objects that keep unknown fields are equal only if those are too.
    if let (Map::Json { obj: a, schema }, Map::Json { obj: b, .. }) = (x, y) {
        if schema.preserve_unknown_fields && !schema.is_map() {
            let known = |(k, _): &(&String, &Json)| schema.property(k).is_none();
            if !a.iter().filter(known).eq(b.iter().filter(known)) {
                return Ok(false);
            }
        }
    }
    if x.len() != y.len() {
        return Ok(false);
    }
    for (k, v) in x.entries() {
        match y.get(&k) {
            Some(w) => {
                if !equals(&v, &w)? {
                    return Ok(false);
                }
            }
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Ordering of two numbers of any numeric type; `None` for non-numbers and NaN.
pub fn numeric_cmp(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            (*x as u64).cmp(y)
        }),
        (Value::Uint(x), Value::Int(y)) => Some(if *y < 0 {
            Ordering::Greater
        } else {
            x.cmp(&(*y as u64))
        }),
        (Value::Int(x), Value::Double(y)) => int_double_cmp(*x as f64, *y),
        (Value::Double(x), Value::Int(y)) => int_double_cmp(*x, *y as f64),
        (Value::Uint(x), Value::Double(y)) => int_double_cmp(*x as f64, *y),
        (Value::Double(x), Value::Uint(y)) => int_double_cmp(*x, *y as f64),
        _ => None,
    }
}

fn int_double_cmp(x: f64, y: f64) -> Option<Ordering> {
    x.partial_cmp(&y)
}

/// CEL ordering for `<`, `<=`, `>`, `>=`; `None` when the types have no
/// common ordering (a "no such overload" error for the caller).
pub fn compare(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some((**x).cmp(&**y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        _ => numeric_cmp(a, b),
    }
}

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

/// Converts a value to JSON (for `celhook eval` output and conversion).
pub fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Uint(u) => Json::from(*u),
        Value::Double(d) => serde_json::Number::from_f64(*d)
            .map(Json::Number)
            .unwrap_or(Json::Null),
        Value::Str(s) => Json::String(s.to_string()),
        Value::Bytes(b) => {
            use base64::Engine;
            Json::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::Duration(d) => Json::String(super::functions::format_duration(*d)),
        Value::Timestamp(t) => Json::String(format_timestamp(t)),
        Value::List(List::Json { items, .. }) => Json::Array(items.to_vec()),
        Value::List(l) => Json::Array(l.iter().map(|v| to_json(&v)).collect()),
        Value::Map(Map::Json { obj, .. }) => Json::Object((*obj).clone()),
        Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.entries() {
                let key = match &k {
                    Value::Str(s) => s.to_string(),
                    other => format!("{other:?}"),
                };
                out.insert(key, to_json(&v));
            }
            Json::Object(out)
        }
        Value::Type(t) => Json::String(t.name().to_owned()),
        Value::Optional(None) => Json::Null,
        Value::Optional(Some(v)) => to_json(v),
        Value::Lib(l) => Json::String(l.display()),
    }
}
