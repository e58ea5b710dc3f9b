//! The function library: CEL's standard functions and the extensions
//! Kubernetes enables for CRD rules, resolved by name and arity at compile
//! time into [`Func`] and dispatched on argument types at run time.

use std::rc::Rc;

use chrono::{DateTime, Datelike, FixedOffset, TimeDelta, Timelike, Utc};

use super::error::EvalError;
use super::library::{self, LibFunc};
use super::value::{compare, equals, List, Str, TypeName, Value};

macro_rules! funcs {
    ($( $variant:ident = $name:literal : member $($m:literal),* ; global $($g:literal),* ; )*) => {
        /// A library function; a member call passes its target first.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Func {
            Negate,
            /// A function of the Kubernetes libraries (`library` module).
            Lib(LibFunc),
            $($variant),*
        }

        impl Func {
            /// The function `name` called as a member (`x.f(..)`) or
            /// globally, with `arity` arguments (the target not counted).
            pub(crate) fn lookup(name: &str, member: bool, arity: usize) -> Option<Func> {
                match name {
                    $($name => {
                        let ok = if member { [$($m),*].contains(&arity) } else { [$($g),*].contains(&arity) };
                        ok.then_some(Func::$variant)
                    })*
                    _ => LibFunc::lookup(name, member, arity).map(Func::Lib),
                }
            }

            /// True when some overload of `name` exists.
            pub(crate) fn lookup_any(name: &str) -> bool {
                matches!(name, $($name)|*) || LibFunc::lookup_any(name)
            }

            /// The function's CEL name.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    Func::Negate => "-_",
                    Func::Lib(l) => l.name(),
                    $(Func::$variant => $name,)*
                }
            }
        }
    };
}

// name: member-call arities; global-call arities.
funcs! {
    Size = "size": member 0; global 1;
    Contains = "contains": member 1; global;
    StartsWith = "startsWith": member 1; global;
    EndsWith = "endsWith": member 1; global;
    Matches = "matches": member 1; global 2;
    ToInt = "int": member; global 1;
    ToUint = "uint": member; global 1;
    ToDouble = "double": member; global 1;
    ToString = "string": member; global 1;
    ToBytes = "bytes": member; global 1;
    ToBool = "bool": member; global 1;
    Dyn = "dyn": member; global 1;
    TypeOf = "type": member; global 1;
    ToDuration = "duration": member; global 1;
    ToTimestamp = "timestamp": member; global 1;
    GetFullYear = "getFullYear": member 0, 1; global;
    GetMonth = "getMonth": member 0, 1; global;
    GetDayOfMonth = "getDayOfMonth": member 0, 1; global;
    GetDate = "getDate": member 0, 1; global;
    GetDayOfWeek = "getDayOfWeek": member 0, 1; global;
    GetDayOfYear = "getDayOfYear": member 0, 1; global;
    GetHours = "getHours": member 0, 1; global;
    GetMinutes = "getMinutes": member 0, 1; global;
    GetSeconds = "getSeconds": member 0, 1; global;
    GetMilliseconds = "getMilliseconds": member 0, 1; global;
    CharAt = "charAt": member 1; global;
    IndexOf = "indexOf": member 1, 2; global;
    LastIndexOf = "lastIndexOf": member 1, 2; global;
    LowerAscii = "lowerAscii": member 0; global;
    UpperAscii = "upperAscii": member 0; global;
    Replace = "replace": member 2, 3; global;
    Split = "split": member 1, 2; global;
    Substring = "substring": member 1, 2; global;
    Trim = "trim": member 0; global;
    Join = "join": member 0, 1; global;
    Reverse = "reverse": member 0; global;
    Quote = "strings.quote": member; global 1;
    IsSorted = "isSorted": member 0; global;
    Sum = "sum": member 0; global;
    Min = "min": member 0; global;
    Max = "max": member 0; global;
    Slice = "slice": member 2; global;
    Flatten = "flatten": member 0, 1; global;
    Distinct = "distinct": member 0; global;
    Sort = "sort": member 0; global;
    First = "first": member 0; global;
    Last = "last": member 0; global;
    Range = "lists.range": member; global 1;
    SetsContains = "sets.contains": member; global 2;
    SetsEquivalent = "sets.equivalent": member; global 2;
    SetsIntersects = "sets.intersects": member; global 2;
    OptOf = "optional.of": member; global 1;
    OptNone = "optional.none": member; global 0;
    OptOfNonZero = "optional.ofNonZeroValue": member; global 1;
    HasValue = "hasValue": member 0; global;
    OptValue = "value": member 0; global;
    OrValue = "orValue": member 1; global;
    Or = "or": member 1; global;
    OptUnwrap = "optional.unwrap": member; global 1;
    UnwrapOpt = "unwrapOpt": member 0; global;
    Find = "find": member 1; global;
    FindAll = "findAll": member 1, 2; global;
}

impl Func {
    /// The type conversions, which cel-go folds when their argument is a literal.
    pub(crate) fn is_conversion(self) -> bool {
        use Func::*;
        matches!(
            self,
            ToInt | ToUint | ToDouble | ToString | ToBytes | ToBool | Dyn | TypeOf
        )
    }

    /// Conversions cel-go folds for constant arguments (at no runtime cost).
    pub(crate) fn is_conversion_like(self) -> bool {
        self.is_conversion() || matches!(self, Func::ToDuration | Func::ToTimestamp)
    }

    /// The static result type, where one is known.
    pub(crate) fn result_ty(self) -> Option<TypeName> {
        use Func::*;
        Some(match self {
            Lib(f) => return f.result_ty(),
            Size | ToInt | IndexOf | LastIndexOf | GetFullYear | GetMonth | GetDayOfMonth
            | GetDate | GetDayOfWeek | GetDayOfYear | GetHours | GetMinutes | GetSeconds
            | GetMilliseconds => TypeName::Int,
            Contains | StartsWith | EndsWith | Matches | ToBool | IsSorted | HasValue
            | SetsContains | SetsEquivalent | SetsIntersects => TypeName::Bool,
            ToString | CharAt | LowerAscii | UpperAscii | Replace | Substring | Trim | Join
            | Quote | Find => TypeName::String,
            ToUint => TypeName::Uint,
            ToDouble => TypeName::Double,
            ToBytes => TypeName::Bytes,
            ToDuration => TypeName::Duration,
            ToTimestamp => TypeName::Timestamp,
            TypeOf => TypeName::Type,
            Split | Slice | Flatten | Distinct | Sort | Range | FindAll | OptUnwrap | UnwrapOpt => {
                TypeName::List
            }
            OptOf | OptNone | OptOfNonZero | First | Last => TypeName::Optional,
            _ => return None,
        })
    }
}

fn overload() -> EvalError {
    EvalError::no_overload()
}

fn int_arg(v: &Value<'_>) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        _ => Err(overload()),
    }
}

fn str_arg<'v>(v: &'v Value<'_>) -> Result<&'v str, EvalError> {
    match v {
        Value::Str(s) => Ok(s),
        _ => Err(overload()),
    }
}

fn list_arg<'v, 'a>(v: &'v Value<'a>) -> Result<&'v List<'a>, EvalError> {
    match v {
        Value::List(l) => Ok(l),
        _ => Err(overload()),
    }
}

/// Calls `f` with evaluated arguments (target first for member calls). A
/// call no overload takes fails as cel-go words it: `no such overload:
/// f(int, string)` with the runtime types, or the bare name for `size`.
/// The largest string a single `replace()` may build (16 MiB): several
/// times the API server's largest request, so no real rule meets it.
pub const MAX_STRING_RESULT_BYTES: u64 = 16 * 1024 * 1024;

pub(crate) fn call<'a>(f: Func, args: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    call_inner(f, args).map_err(|e| {
        if e.kind != super::error::ErrorKind::NoSuchOverload || e.message != "no such overload" {
            return e;
        }
        let name = f.name();
        if matches!(f, Func::Size) {
            return EvalError::no_overload_of(name);
        }
        // The standard library's one-overload functions, and `-` on a type
        // that negates, answer bare.
        if matches!(
            f,
            Func::StartsWith | Func::EndsWith | Func::Contains | Func::Matches
        ) || (f == Func::Negate
            && !matches!(
                args.first(),
                Some(Value::Null | Value::List(_) | Value::Map(_))
            ))
        {
            return e;
        }
        if f == Func::Negate {
            return EvalError::no_overload_of(name);
        }
        let types: Vec<&str> = args.iter().map(|a| a.type_name().name()).collect();
        EvalError::no_overload_of(&format!("{name}({})", types.join(", ")))
    })
}

fn call_inner<'a>(f: Func, args: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    use Func::*;
    if f == OptNone {
        return Ok(Value::Optional(None));
    }
    if let (Lib(f), []) = (f, args) {
        // `format.<name>()` takes no arguments.
        return library::call(f, args);
    }
    let Some(a0) = args.first() else {
        return Err(overload());
    };
    match f {
        Lib(f) => library::call(f, args),
        Negate => match a0 {
            Value::Int(i) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| EvalError::new("integer overflow")),
            Value::Double(d) => Ok(Value::Double(-d)),
            Value::Duration(d) => Ok(Value::Duration(-*d)),
            _ => Err(overload()),
        },
        Size => Ok(Value::Int(match a0 {
            Value::Str(s) => super::cost::str_size(s) as i64,
            Value::Bytes(b) => b.len() as i64,
            Value::List(l) => l.len() as i64,
            Value::Map(m) => m.len() as i64,
            _ => return Err(overload()),
        })),
        Contains | StartsWith | EndsWith => {
            let (s, t) = (str_arg(a0)?, str_arg(&args[1])?);
            Ok(Value::Bool(match f {
                Contains => s.contains(t),
                StartsWith => s.starts_with(t),
                _ => s.ends_with(t),
            }))
        }
        Matches => {
            str_arg(a0)?;
            let re = compile_regex(f, str_arg(args.get(1).ok_or_else(overload)?)?)?;
            call_with_regex(f, args, &re)
        }
        ToInt => to_int(a0),
        ToUint => to_uint(a0),
        ToDouble => to_double(a0),
        ToString => to_string(a0),
        ToBytes => match a0 {
            Value::Bytes(b) => Ok(Value::Bytes(b.clone())),
            Value::Str(s) => Ok(Value::Bytes(Rc::from(s.as_bytes()))),
            _ => Err(overload()),
        },
        ToBool => match a0 {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            Value::Str(s) => match &**s {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
                "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
                _ => Err(EvalError::new(
                    "type conversion error from 'string' to 'bool'",
                )),
            },
            _ => Err(overload()),
        },
        Dyn => Ok(a0.clone()),
        TypeOf => Ok(Value::Type(a0.type_name())),
        ToDuration => match a0 {
            Value::Duration(d) => Ok(Value::Duration(*d)),
            Value::Int(_) => Err(EvalError::new(
                "type conversion error from 'int' to 'google.protobuf.Duration'",
            )),
            Value::Str(s) => parse_duration(s).map(Value::Duration).map_err(|_| {
                EvalError::new("type conversion error from 'string' to 'google.protobuf.Duration'")
            }),
            _ => Err(overload()),
        },
        ToTimestamp => match a0 {
            Value::Timestamp(t) => Ok(Value::Timestamp(*t)),
            Value::Str(s) => match super::value::parse_timestamp_unbounded(s) {
                Some(t) if super::value::in_range(&t) => Ok(Value::Timestamp(t)),
                Some(_) => Err(EvalError::new("timestamp overflow")),
                None => Err(EvalError::new(
                    "type conversion error from 'string' to 'google.protobuf.Timestamp'",
                )),
            },
            Value::Int(i) => DateTime::from_timestamp(*i, 0)
                .map(|t| t.fixed_offset())
                .filter(super::value::in_range)
                .map(Value::Timestamp)
                .ok_or_else(|| EvalError::new("timestamp overflow")),
            other => Err(EvalError::no_overload_of(&format!(
                "timestamp({})",
                other.type_name().name()
            ))),
        },
        GetFullYear | GetMonth | GetDayOfMonth | GetDate | GetDayOfWeek | GetDayOfYear
        | GetHours | GetMinutes | GetSeconds | GetMilliseconds => {
            if let (Value::Duration(d), 1) = (a0, args.len()) {
                return Ok(Value::Int(match f {
                    GetHours => d.num_hours(),
                    GetMinutes => d.num_minutes(),
                    GetSeconds => d.num_seconds(),
                    GetMilliseconds => d.num_milliseconds(),
                    _ => return Err(overload()),
                }));
            }
            let Value::Timestamp(t) = a0 else {
                return Err(overload());
            };
            let t = match args.get(1) {
                // Accessors read UTC unless told a zone (DefaultUTCTimeZone).
                None => t.with_timezone(&Utc).fixed_offset(),
                Some(Value::Str(tz)) => with_timezone(t, tz)?,
                Some(_) => return Err(overload()),
            };
            Ok(Value::Int(match f {
                GetFullYear => t.year() as i64,
                GetMonth => t.month0() as i64,
                GetDayOfMonth => t.day0() as i64,
                GetDate => t.day() as i64,
                GetDayOfWeek => t.weekday().num_days_from_sunday() as i64,
                GetDayOfYear => t.ordinal0() as i64,
                GetHours => t.hour() as i64,
                GetMinutes => t.minute() as i64,
                GetSeconds => t.second() as i64,
                _ => (t.nanosecond() / 1_000_000) as i64,
            }))
        }
        CharAt => {
            let s = str_arg(a0)?;
            let i = int_arg(&args[1])?;
            let len = s.chars().count() as i64;
            if i < 0 || i > len {
                return Err(EvalError::new(format!("index out of range: {i}")));
            }
            Ok(Value::string(
                s.chars()
                    .nth(i as usize)
                    .map(String::from)
                    .unwrap_or_default(),
            ))
        }
        IndexOf | LastIndexOf => match a0 {
            Value::Str(s) => string_index_of(s, args, f == LastIndexOf),
            // Lists take no start offset.
            Value::List(l) if args.len() == 2 => {
                let needle = &args[1];
                let items: Vec<Value<'a>> = l.iter().collect();
                let mut found = -1;
                for (i, v) in items.iter().enumerate() {
                    if equals(v, needle)? {
                        found = i as i64;
                        if f == IndexOf {
                            break;
                        }
                    }
                }
                Ok(Value::Int(found))
            }
            _ => Err(overload()),
        },
        LowerAscii => Ok(Value::string(str_arg(a0)?.to_ascii_lowercase())),
        UpperAscii => Ok(Value::string(str_arg(a0)?.to_ascii_uppercase())),
        Replace => {
            let s = str_arg(a0)?;
            let (from, to) = (str_arg(&args[1])?, str_arg(&args[2])?);
            let n = match args.get(3) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            // The one string function whose result can dwarf its inputs
            // (every match times the replacement), and whose cost (cel-go's:
            // the input's length) does not grow with it: bounded here so that
            // no rule and object can make one allocation of gigabytes.
            let matches = if from.is_empty() {
                s.chars().count() as u64 + 1
            } else {
                s.matches(from).count() as u64
            };
            let matches = if n < 0 {
                matches
            } else {
                matches.min(n as u64)
            };
            let grown = (to.len() as u64).saturating_sub(from.len() as u64);
            let result_len = (s.len() as u64).saturating_add(matches.saturating_mul(grown));
            if result_len > MAX_STRING_RESULT_BYTES {
                return Err(EvalError {
                    kind: crate::cel::ErrorKind::CostLimit,
                    message: format!(
                        "operation cancelled: replace() would build a string of {result_len} bytes, over the limit of {MAX_STRING_RESULT_BYTES}"
                    )
                    .into(),
                });
            }
            Ok(Value::string(if n < 0 {
                s.replace(from, to)
            } else {
                s.replacen(from, to, n as usize)
            }))
        }
        Split => {
            let s = str_arg(a0)?;
            let sep = str_arg(&args[1])?;
            let n = match args.get(2) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            let parts: Vec<Value<'a>> = match n {
                0 => Vec::new(),
                // cel-go splits the empty string into no parts.
                _ if s.is_empty() => Vec::new(),
                n if n < 0 => split_all(s, sep).map(Value::string).collect(),
                n => splitn(s, sep, n as usize).map(Value::string).collect(),
            };
            Ok(Value::list(parts))
        }
        Substring => {
            let s = str_arg(a0)?;
            let chars: Vec<char> = s.chars().collect();
            let start = int_arg(&args[1])?;
            let end = match args.get(2) {
                Some(v) => int_arg(v)?,
                None => chars.len() as i64,
            };
            // cel-go checks the range order first only in the two-argument form.
            if args.len() == 3 && start > end {
                return Err(EvalError::new(format!(
                    "invalid substring range. start: {start}, end: {end}"
                )));
            }
            if start < 0 || start > chars.len() as i64 {
                return Err(EvalError::new(format!("index out of range: {start}")));
            }
            if end < 0 || end > chars.len() as i64 {
                return Err(EvalError::new(format!("index out of range: {end}")));
            }
            Ok(Value::string(
                chars[start as usize..end as usize]
                    .iter()
                    .collect::<String>(),
            ))
        }
        Trim => Ok(Value::string(str_arg(a0)?.trim())),
        Join => {
            let l = list_arg(a0)?;
            let sep = match args.get(1) {
                Some(v) => str_arg(v)?,
                None => "",
            };
            let mut out = String::new();
            for (i, v) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(str_arg(&v)?);
            }
            Ok(Value::string(out))
        }
        Reverse => match a0 {
            Value::List(l) => {
                let mut v: Vec<Value<'a>> = l.iter().collect();
                v.reverse();
                Ok(Value::list(v))
            }
            _ => Err(overload()),
        },
        Quote => Ok(Value::string(quote(str_arg(a0)?))),
        IsSorted => {
            let items: Vec<Value<'a>> = list_arg(a0)?.iter().collect();
            for w in items.windows(2) {
                match compare(&w[0], &w[1]) {
                    Some(std::cmp::Ordering::Greater) => return Ok(Value::Bool(false)),
                    Some(_) => {}
                    None => return Err(overload()),
                }
            }
            Ok(Value::Bool(true))
        }
        Sum => {
            let list = list_arg(a0)?;
            let mut acc: Option<Value<'a>> = None;
            for v in list.iter() {
                acc = Some(match acc {
                    None => v,
                    Some(a) => super::eval::add(a, v)?,
                });
            }
            // An empty list sums to the zero of its element type.
            Ok(acc.unwrap_or_else(|| zero_of(list)))
        }
        Min | Max => {
            let mut best: Option<Value<'a>> = None;
            for v in list_arg(a0)?.iter() {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = compare(&v, &b).ok_or_else(overload)?;
                        let better = if f == Min { o.is_lt() } else { o.is_gt() };
                        if better {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.ok_or_else(|| {
                EvalError::new(format!(
                    "{} called on empty list",
                    if f == Min { "min" } else { "max" }
                ))
            })
        }
        Slice => {
            let l = list_arg(a0)?;
            let (s, e) = (int_arg(&args[1])?, int_arg(&args[2])?);
            if s < 0 || e < 0 {
                return Err(EvalError::new(format!(
                    "cannot slice({s}, {e}), negative indexes not supported"
                )));
            }
            if s > e {
                return Err(EvalError::new(format!(
                    "cannot slice({s}, {e}), start index must be less than or equal to end index"
                )));
            }
            if e as usize > l.len() {
                return Err(EvalError::new(format!(
                    "cannot slice({s}, {e}), list is length {}",
                    l.len()
                )));
            }
            Ok(Value::list(
                (s as usize..e as usize).filter_map(|i| l.get(i)).collect(),
            ))
        }
        Flatten => {
            let depth = match args.get(1) {
                Some(v) => int_arg(v)?,
                None => 1,
            };
            if depth < 0 {
                return Err(EvalError::new("level must be non-negative"));
            }
            let mut out = Vec::new();
            flatten(list_arg(a0)?, depth, &mut out);
            Ok(Value::list(out))
        }
        Distinct => {
            let mut out: Vec<Value<'a>> = Vec::new();
            for v in list_arg(a0)?.iter() {
                let mut seen = false;
                for o in &out {
                    if equals(o, &v)? {
                        seen = true;
                        break;
                    }
                }
                if !seen {
                    out.push(v);
                }
            }
            Ok(Value::list(out))
        }
        Sort => {
            let mut items: Vec<Value<'a>> = list_arg(a0)?.iter().collect();
            sort_values(&mut items)?;
            Ok(Value::list(items))
        }
        First | Last => {
            let l = list_arg(a0)?;
            let v = if f == First {
                l.get(0)
            } else {
                l.len().checked_sub(1).and_then(|i| l.get(i))
            };
            Ok(Value::Optional(v.map(Rc::new)))
        }
        Range => {
            let n = int_arg(a0)?;
            Ok(Value::list((0..n.max(0)).map(Value::Int).collect()))
        }
        SetsContains | SetsEquivalent | SetsIntersects => {
            let a: Vec<Value<'a>> = list_arg(a0)?.iter().collect();
            let b: Vec<Value<'a>> = list_arg(&args[1])?.iter().collect();
            let contains_all = |x: &[Value<'a>], y: &[Value<'a>]| -> Result<bool, EvalError> {
                for v in y {
                    let mut found = false;
                    for w in x {
                        if equals(w, v)? {
                            found = true;
                            break;
                        }
                    }
                    if !found {
                        return Ok(false);
                    }
                }
                Ok(true)
            };
            Ok(Value::Bool(match f {
                SetsContains => contains_all(&a, &b)?,
                SetsEquivalent => contains_all(&a, &b)? && contains_all(&b, &a)?,
                _ => {
                    let mut any = false;
                    'outer: for v in &b {
                        for w in &a {
                            if equals(w, v)? {
                                any = true;
                                break 'outer;
                            }
                        }
                    }
                    any
                }
            }))
        }
        OptOf => Ok(Value::Optional(Some(Rc::new(a0.clone())))),
        OptNone => Ok(Value::Optional(None)),
        OptOfNonZero => {
            let v = a0;
            Ok(Value::Optional(if is_zero(v) {
                None
            } else {
                Some(Rc::new(v.clone()))
            }))
        }
        HasValue => match a0 {
            Value::Optional(o) => Ok(Value::Bool(o.is_some())),
            _ => Err(overload()),
        },
        OptValue => match a0 {
            Value::Optional(Some(v)) => Ok((**v).clone()),
            Value::Optional(None) => Err(EvalError::new("optional.none() dereference")),
            _ => Err(overload()),
        },
        // cel-go hands a non-optional target back as it is.
        OrValue => match a0 {
            Value::Optional(Some(v)) => Ok((**v).clone()),
            Value::Optional(None) => Ok(args[1].clone()),
            other => Ok(other.clone()),
        },
        OptUnwrap | UnwrapOpt => {
            // The values of the present optionals, in order.
            let mut out = Vec::new();
            for v in list_arg(a0)?.iter() {
                match v {
                    Value::Optional(Some(inner)) => out.push((*inner).clone()),
                    Value::Optional(None) => {}
                    _ => return Err(overload()),
                }
            }
            Ok(Value::list(out))
        }
        Or => match (a0, &args[1]) {
            (Value::Optional(Some(_)), _) => Ok(a0.clone()),
            (Value::Optional(None), o @ Value::Optional(_)) => Ok(o.clone()),
            (Value::Optional(None), _) => Err(overload()),
            (other, _) => Ok(other.clone()),
        },
        Find | FindAll => {
            let re = compile_regex(f, str_arg(args.get(1).ok_or_else(overload)?)?)?;
            call_with_regex(f, args, &re)
        }
    }
}

// === constant regex hook ===
//
// The compiler precompiles the pattern of `matches`, `find` and `findAll`
// when it is a constant: `constant_regex_arg` says which argument (target
// first) is the pattern, `library::re2::compile` compiles it with Go's
// semantics (a bad one refuses the rule at load), and `call_with_regex` runs
// the call with it. `call` compiles dynamic patterns with `compile_regex`
// (the same engine, with each function's runtime wording) and runs the same
// `call_with_regex`, so both paths answer alike.

/// The index (target counted first) of `f`'s regular-expression argument.
pub(crate) fn constant_regex_arg(f: Func) -> Option<usize> {
    match f {
        Func::Matches | Func::Find | Func::FindAll => Some(1),
        _ => None,
    }
}

/// Compiles `pattern` for `f` with Go's RE2 semantics; the error is the
/// one `f` reports at run time (`find`/`findAll` prefix Go's text with
/// `Illegal regex: `, `matches` gives Go's text as is).
pub(crate) fn compile_regex(f: Func, pattern: &str) -> Result<regex::Regex, EvalError> {
    super::interrupt::regex(pattern, library::re2::compile).map_err(|e| match f {
        Func::Find | Func::FindAll => EvalError::new(format!("Illegal regex: {e}")),
        _ => EvalError::new(e),
    })
}

/// Calls a function of [`constant_regex_arg`] with its pattern compiled;
/// `args` are as for [`call`] (the pattern argument itself is not read).
pub(crate) fn call_with_regex<'a>(
    f: Func,
    args: &[Value<'a>],
    re: &regex::Regex,
) -> Result<Value<'a>, EvalError> {
    let s = str_arg(args.first().ok_or_else(overload)?)?;
    match f {
        Func::Matches => Ok(Value::Bool(re.is_match(s))),
        Func::Find => Ok(Value::string(
            re.find(s).map(|m| m.as_str()).unwrap_or_default(),
        )),
        Func::FindAll => {
            let limit = match args.get(2) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            let matches = re.find_iter(s).map(|m| Value::string(m.as_str()));
            Ok(Value::list(if limit < 0 {
                matches.collect()
            } else {
                matches.take(limit as usize).collect()
            }))
        }
        _ => Err(overload()),
    }
}

fn with_timezone(t: &DateTime<FixedOffset>, tz: &str) -> Result<DateTime<FixedOffset>, EvalError> {
    use chrono::Offset;
    // An IANA name ("America/New_York", "UTC"), or a fixed offset
    // ("+01:00", "-05:30", "01:00"), as cel-go accepts.
    let bad = || EvalError::new(format!("unknown time zone {tz}"));
    if let Ok(zone) = tz.parse::<chrono_tz::Tz>() {
        let local = t.with_timezone(&zone);
        let offset = local.offset().fix();
        return Ok(t.with_timezone(&offset));
    }
    // "Local" is the server's zone (UTC in a container); "" is UTC to Go.
    if tz == "Local" || tz.is_empty() {
        return Ok(t.with_timezone(&chrono::Utc).fixed_offset());
    }
    // A `[+-]HH:MM` offset; its numbers are read as Go's Atoi reads them.
    let Some((h, m)) = tz.split_once(':') else {
        return Err(bad());
    };
    let atoi = |part: &str| {
        part.parse::<i32>()
            .map_err(|_| EvalError::new(format!("strconv.Atoi: parsing {part:?}: invalid syntax")))
    };
    let (sign, h) = match h.as_bytes().first() {
        Some(b'-') => (-1, &h[1..]),
        Some(b'+') => (1, &h[1..]),
        _ => (1, h),
    };
    let secs = atoi(h)? * 3600 + atoi(m)? * 60;
    let off = chrono::FixedOffset::east_opt(sign * secs).ok_or_else(bad)?;
    Ok(t.with_timezone(&off))
}

/// cel-go strings v2 `indexOf`/`lastIndexOf` (positions in code points):
/// an empty needle answers the offset as given, a negative offset is an
/// error, an offset at or past the end finds nothing.
fn string_index_of<'a>(s: &str, args: &[Value<'a>], last: bool) -> Result<Value<'a>, EvalError> {
    let sub = str_arg(&args[1])?;
    let chars: Vec<char> = s.chars().collect();
    let subc: Vec<char> = sub.chars().collect();
    let len = chars.len() as i64;
    let offset = match args.get(2) {
        Some(v) => Some(int_arg(v)?),
        None => None,
    };
    if subc.is_empty() {
        return Ok(Value::Int(offset.unwrap_or(if last { len } else { 0 })));
    }
    let n = subc.len();
    let at = |i: usize| i + n <= chars.len() && chars[i..i + n] == subc[..];
    let start = match offset {
        Some(o) if o < 0 => return Err(EvalError::new(format!("index out of range: {o}"))),
        Some(o) if o >= len => return Ok(Value::Int(-1)),
        Some(o) => o as usize,
        None if last => chars.len(),
        None => 0,
    };
    let found = if last {
        match chars.len().checked_sub(n) {
            Some(max) => (0..=start.min(max)).rev().find(|&i| at(i)),
            None => None,
        }
    } else {
        (start..chars.len()).find(|&i| at(i))
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn split_all<'s>(s: &'s str, sep: &'s str) -> Box<dyn Iterator<Item = String> + 's> {
    if sep.is_empty() {
        Box::new(s.chars().map(String::from))
    } else {
        Box::new(s.split(sep).map(str::to_owned))
    }
}

fn splitn(s: &str, sep: &str, n: usize) -> impl Iterator<Item = String> {
    let parts: Vec<String> = if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let mut v: Vec<String> = chars
            .iter()
            .take(n.saturating_sub(1))
            .map(|c| c.to_string())
            .collect();
        if chars.len() >= n {
            v.push(chars[n - 1..].iter().collect());
        }
        v
    } else {
        s.splitn(n, sep).map(str::to_owned).collect()
    };
    parts.into_iter()
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn flatten<'a>(l: &List<'a>, depth: i64, out: &mut Vec<Value<'a>>) {
    for v in l.iter() {
        match (&v, depth > 0) {
            (Value::List(inner), true) => flatten(inner, depth - 1, out),
            _ => out.push(v),
        }
    }
}

/// Sorts values of one orderable type; mixed or unorderable types are an error.
pub(crate) fn sort_values(items: &mut [Value<'_>]) -> Result<(), EvalError> {
    // cel-go's lists extension: the first element must be orderable and
    // every element of its exact type (no cross-numeric sorting).
    let Some(first) = items.first() else {
        return Ok(());
    };
    if !first.is_orderable() {
        return Err(EvalError::new("list elements must be comparable"));
    }
    let ty = first.type_name();
    if items.iter().any(|v| v.type_name() != ty) {
        return Err(EvalError::new("list elements must have the same type"));
    }
    items.sort_by(|a, b| compare(a, b).unwrap_or(std::cmp::Ordering::Equal));
    Ok(())
}

fn zero_of<'a>(list: &List<'a>) -> Value<'a> {
    use crate::schema::{Format, Type};
    match list {
        List::Json { schema, .. } => match schema.items.as_deref().map(|s| (s.ty, &s.format)) {
            Some((Type::Number, _)) => Value::Double(0.0),
            Some((Type::String, Format::Duration)) => Value::Duration(TimeDelta::zero()),
            _ => Value::Int(0),
        },
        List::Owned(_) | List::Const(_) => Value::Int(0),
    }
}

fn is_zero(v: &Value<'_>) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::Duration(d) => d.is_zero(),
        // The zero timestamp is Go's zero time, 0001-01-01T00:00:00Z.
        Value::Timestamp(t) => t.timestamp() == -62_135_596_800 && t.timestamp_subsec_nanos() == 0,
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Type(_) => false,
        Value::Optional(o) => o.is_none(),
        Value::Lib(_) => false,
    }
}

fn to_int<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    let range = || EvalError::new("integer overflow");
    Ok(Value::Int(match v {
        Value::Int(i) => *i,
        Value::Uint(u) => i64::try_from(*u).map_err(|_| range())?,
        Value::Double(d) => {
            if d.is_nan() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                return Err(range());
            }
            d.trunc() as i64
        }
        Value::Str(s) => s
            .parse::<i64>()
            .map_err(|_| EvalError::new("type conversion error from 'string' to 'int'"))?,
        Value::Timestamp(t) => t.timestamp(),
        Value::Duration(d) => d.num_nanoseconds().ok_or_else(range)?,
        _ => return Err(overload()),
    }))
}

fn to_uint<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    let range = || EvalError::new("unsigned integer overflow");
    Ok(Value::Uint(match v {
        Value::Uint(u) => *u,
        Value::Int(i) => u64::try_from(*i).map_err(|_| range())?,
        Value::Double(d) => {
            if d.is_nan() || *d < 0.0 || *d >= 1.844_674_407_370_955_2e19 {
                return Err(range());
            }
            d.trunc() as u64
        }
        // Go's ParseUint takes no sign.
        Value::Str(s) => s
            .parse::<u64>()
            .ok()
            .filter(|_| !s.starts_with('+'))
            .ok_or_else(|| EvalError::new("type conversion error from 'string' to 'uint'"))?,
        _ => return Err(overload()),
    }))
}

fn to_double<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    Ok(Value::Double(match v {
        Value::Double(d) => *d,
        Value::Int(i) => *i as f64,
        Value::Uint(u) => *u as f64,
        Value::Str(s) => go_parse_float(s)
            .ok_or_else(|| EvalError::new("type conversion error from 'string' to 'double'"))?,
        _ => return Err(overload()),
    }))
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal or hexadecimal (`0x1p-2`)
/// floats, `_` between digits, `Inf`/`Infinity`/`NaN` in any case, and an
/// error for finite literals beyond the float64 range.
fn go_parse_float(s: &str) -> Option<f64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        // Go takes no sign on NaN.
        "nan" if s.len() == body.len() => f64::NAN,
        "nan" => return None,
        _ => {
            // Underscores only between digits (or after a base prefix).
            let b = body.as_bytes();
            for (i, c) in b.iter().enumerate() {
                if *c == b'_' {
                    let prev = i.checked_sub(1).map(|j| b[j]);
                    let ok_prev =
                        prev.is_some_and(|p| p.is_ascii_hexdigit() || p == b'x' || p == b'X');
                    if !ok_prev || !b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) {
                        return None;
                    }
                }
            }
            let clean: String = body.chars().filter(|c| *c != '_').collect();
            let v = match clean
                .strip_prefix("0x")
                .or_else(|| clean.strip_prefix("0X"))
            {
                Some(hex) => parse_hex_float(hex)?,
                None if clean
                    .bytes()
                    .all(|c| c.is_ascii_digit() || b".eE+-".contains(&c)) =>
                {
                    clean.parse::<f64>().ok()?
                }
                None => return None,
            };
            if !v.is_finite() {
                return None;
            }
            v
        }
    };
    Some(if neg { -v } else { v })
}

/// The digits of a hexadecimal float after `0x`: `1.8p3` is 12.
fn parse_hex_float(hex: &str) -> Option<f64> {
    let (mant, exp) = match hex.find(['p', 'P']) {
        Some(i) => (&hex[..i], hex[i + 1..].parse::<i32>().ok()?),
        None => (hex, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

fn to_string<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    Ok(match v {
        Value::Str(s) => Value::Str(s.clone()),
        Value::Int(i) => Value::string(i.to_string()),
        Value::Uint(u) => Value::string(u.to_string()),
        Value::Double(d) => Value::string(format_double(*d)),
        Value::Bool(b) => Value::string(b.to_string()),
        Value::Bytes(b) => Value::string(
            std::str::from_utf8(b)
                .map_err(|_| EvalError::new("invalid UTF-8 in bytes, cannot convert to string"))?,
        ),
        Value::Duration(d) => Value::string(format_duration(*d)),
        Value::Timestamp(t) => Value::string(super::value::format_timestamp(t)),
        Value::Lib(l) => Value::string(library::to_string(l).ok_or_else(overload)?),
        _ => return Err(overload()),
    })
}

/// Doubles print as Go's `strconv.FormatFloat(d, 'g', -1, 64)` does for the
/// common cases: shortest round-trip form, no trailing `.0`.
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let abs = d.abs();
    // Go's 'g' with the shortest precision: exponent form below 1e-4 and
    // from 1e6 on.
    if abs != 0.0 && !(1e-4..1e6).contains(&abs) {
        let s = format!("{d:e}");
        // Go writes the exponent with a sign and at least two digits.
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    let s = format!("{d}");
    s
}

/// Parses a Go duration string (`1h30m`, `-1.5s`, `300ms`, `2us`).
pub(crate) fn parse_duration(s: &str) -> Result<TimeDelta, EvalError> {
    let bad = || EvalError::new(format!("invalid duration: {s:?}"));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(TimeDelta::zero());
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() {
            return Err(bad());
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let nanos_per: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| bad())?
        };
        total += whole * nanos_per;
        if !frac_part.is_empty() {
            let digits: i128 = frac_part.parse().map_err(|_| bad())?;
            let scale = 10i128.pow(frac_part.len() as u32);
            total += digits * nanos_per / scale;
        }
        rest = tail;
    }
    if neg {
        total = -total;
    }
    i64::try_from(total)
        .ok()
        .map(TimeDelta::nanoseconds)
        .ok_or_else(bad)
}

/// Formats a duration as cel-go prints one: seconds with up to nine
/// fractional digits, e.g. `90s`, `1.5s`.
pub(crate) fn format_duration(d: TimeDelta) -> String {
    // cel-go prints the seconds as a float64 in its shortest form.
    let nanos = d.num_nanoseconds().unwrap_or(i64::MAX);
    format!("{}s", nanos as f64 / 1e9)
}

impl From<&str> for Str<'_> {
    fn from(s: &str) -> Self {
        Str::Owned(Rc::from(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("1h30m").unwrap(), TimeDelta::minutes(90));
        assert_eq!(
            parse_duration("1.5s").unwrap(),
            TimeDelta::milliseconds(1500)
        );
        assert_eq!(
            parse_duration("-300ms").unwrap(),
            TimeDelta::milliseconds(-300)
        );
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("1x").is_err());
        assert_eq!(format_duration(TimeDelta::milliseconds(1500)), "1.5s");
        assert_eq!(format_duration(TimeDelta::seconds(90)), "90s");
    }

    #[test]
    fn doubles_format_like_go() {
        assert_eq!(format_double(1.0), "1");
        assert_eq!(format_double(1.5), "1.5");
        assert_eq!(format_double(1e21), "1e+21");
        assert_eq!(format_double(0.00001), "1e-05");
    }

    #[test]
    fn lookup_respects_member_and_arity() {
        assert_eq!(Func::lookup("size", false, 1), Some(Func::Size));
        assert_eq!(Func::lookup("size", true, 0), Some(Func::Size));
        assert_eq!(Func::lookup("size", true, 1), None);
        assert!(Func::lookup_any("size"));
        assert!(!Func::lookup_any("nope"));
    }
}
