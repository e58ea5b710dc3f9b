//! The function library: CEL's standard functions and the extensions
//! Kubernetes enables for CRD rules, resolved by name and arity at compile
//! time into [`Func`] and dispatched on argument types at run time.

pub(crate) mod check;
pub(crate) mod cost;
pub(crate) mod kubernetes;
pub(crate) mod lists;
mod standard;
pub(crate) mod strings_format;
#[cfg(test)]
mod tests;

use kubernetes::{self as library, LibFunc};

use crate::value::error::EvalError;

use crate::value::{List, TypeName, Value};

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
        if e.kind != crate::value::error::ErrorKind::NoSuchOverload
            || e.message != "no such overload"
        {
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
        IsSorted | Sum | Min | Max | Slice | Flatten | Distinct | Sort | First | Last | Range
        | SetsContains | SetsEquivalent | SetsIntersects | OptOf | OptNone | OptOfNonZero
        | HasValue | OptValue | OrValue | OptUnwrap | UnwrapOpt | Or | Find | FindAll => {
            lists::call(f, a0, args)
        }
        _ => standard::call(f, a0, args),
    }
}

// === constant regex hook ===
//
// The compiler precompiles the pattern of `matches`, `find` and `findAll`
// when it is a constant: `constant_regex_arg` says which argument (target
// first) is the pattern, `crate::re2::compile` compiles it with Go's
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
    crate::interrupt::regex(pattern, crate::re2::compile).map_err(|e| match f {
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
