//! The Kubernetes CEL libraries of k8s.io/apiserver `pkg/cel/library`
//! (quantity, ip, cidr, url, semver, format) with their value types,
//! overloads and error texts. `functions.rs` resolves names it does not know
//! itself through [`LibFunc::lookup`] and dispatches to [`call`].

use std::rc::Rc;

use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::LibValue;
use crate::value::{Map, TypeName, Value};

use crate::value::k8s::format::{self, NamedFormat};
use crate::value::k8s::net::{Cidr, Ip};
use crate::value::k8s::quantity::Quantity;
use crate::value::k8s::semver::Semver;
use crate::value::k8s::url::GoUrl;

use super::strings_format;

macro_rules! lib_funcs {
    ($( $variant:ident = $name:literal : member $($m:literal),* ; global $($g:literal),* ; )*) => {
        /// A function of the Kubernetes libraries; a member call passes its
        /// target first.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum LibFunc { $($variant),* }

        impl LibFunc {
            /// The function `name` called as a member or globally with
            /// `arity` arguments (the target not counted).
            pub(crate) fn lookup(name: &str, member: bool, arity: usize) -> Option<LibFunc> {
                match name {
                    $($name => {
                        let ok = if member { [$($m),*].contains(&arity) } else { [$($g),*].contains(&arity) };
                        ok.then_some(LibFunc::$variant)
                    })*
                    _ => None,
                }
            }

            /// True when some overload of `name` exists.
            pub(crate) fn lookup_any(name: &str) -> bool {
                matches!(name, $($name)|*)
            }

            /// The function's CEL name.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(LibFunc::$variant => $name,)*
                }
            }
        }
    };
}

// name: member-call arities; global-call arities (as the API server
// declares them: `sign` is global only, `ip` is global on strings and a
// member of CIDRs).
lib_funcs! {
    ToQuantity = "quantity": member; global 1;
    IsQuantity = "isQuantity": member; global 1;
    Sign = "sign": member; global 1;
    IsGreaterThan = "isGreaterThan": member 1; global;
    IsLessThan = "isLessThan": member 1; global;
    CompareTo = "compareTo": member 1; global;
    AsApproximateFloat = "asApproximateFloat": member 0; global;
    AsInteger = "asInteger": member 0; global;
    IsInteger = "isInteger": member 0; global;
    Add = "add": member 1; global;
    Sub = "sub": member 1; global;
    ToIp = "ip": member 0; global 1;
    IsIp = "isIP": member; global 1;
    Family = "family": member 0; global;
    IpIsCanonical = "ip.isCanonical": member; global 1;
    IsUnspecified = "isUnspecified": member 0; global;
    IsLoopback = "isLoopback": member 0; global;
    IsLinkLocalMulticast = "isLinkLocalMulticast": member 0; global;
    IsLinkLocalUnicast = "isLinkLocalUnicast": member 0; global;
    IsGlobalUnicast = "isGlobalUnicast": member 0; global;
    ToCidr = "cidr": member; global 1;
    IsCidr = "isCIDR": member; global 1;
    ContainsIp = "containsIP": member 1; global;
    ContainsCidr = "containsCIDR": member 1; global;
    PrefixLength = "prefixLength": member 0; global;
    Masked = "masked": member 0; global;
    ToUrl = "url": member; global 1;
    IsUrl = "isURL": member; global 1;
    GetScheme = "getScheme": member 0; global;
    GetHost = "getHost": member 0; global;
    GetHostname = "getHostname": member 0; global;
    GetPort = "getPort": member 0; global;
    GetEscapedPath = "getEscapedPath": member 0; global;
    GetQuery = "getQuery": member 0; global;
    ToSemver = "semver": member; global 1, 2;
    IsSemver = "isSemver": member; global 1, 2;
    Major = "major": member 0; global;
    Minor = "minor": member 0; global;
    Patch = "patch": member 0; global;
    FormatNamed = "format.named": member; global 1;
    Validate = "validate": member 1; global;
    FormatDns1123Label = "format.dns1123Label": member; global 0;
    FormatDns1123Subdomain = "format.dns1123Subdomain": member; global 0;
    FormatDns1035Label = "format.dns1035Label": member; global 0;
    FormatQualifiedName = "format.qualifiedName": member; global 0;
    FormatDns1123LabelPrefix = "format.dns1123LabelPrefix": member; global 0;
    FormatDns1123SubdomainPrefix = "format.dns1123SubdomainPrefix": member; global 0;
    FormatDns1035LabelPrefix = "format.dns1035LabelPrefix": member; global 0;
    FormatLabelValue = "format.labelValue": member; global 0;
    FormatUri = "format.uri": member; global 0;
    FormatUuid = "format.uuid": member; global 0;
    FormatByte = "format.byte": member; global 0;
    FormatDate = "format.date": member; global 0;
    FormatDatetime = "format.datetime": member; global 0;
    StringFormat = "format": member 1; global;
}

impl LibFunc {
    /// The static result type, where one overload set fixes it.
    pub(crate) fn result_ty(self) -> Option<TypeName> {
        use LibFunc::*;
        Some(match self {
            ToQuantity | Add | Sub => TypeName::Quantity,
            IsQuantity | IsGreaterThan | IsLessThan | IsInteger | IsIp | IpIsCanonical
            | IsUnspecified | IsLoopback | IsLinkLocalMulticast | IsLinkLocalUnicast
            | IsGlobalUnicast | IsCidr | ContainsIp | ContainsCidr | IsUrl | IsSemver => {
                TypeName::Bool
            }
            Sign | CompareTo | AsInteger | Family | PrefixLength | Major | Minor | Patch => {
                TypeName::Int
            }
            AsApproximateFloat => TypeName::Double,
            ToIp => TypeName::Ip,
            ToCidr | Masked => TypeName::Cidr,
            ToUrl => TypeName::Url,
            GetScheme | GetHost | GetHostname | GetPort | GetEscapedPath | StringFormat => {
                TypeName::String
            }
            GetQuery => TypeName::Map,
            ToSemver => TypeName::Semver,
            FormatNamed | Validate => TypeName::Optional,
            FormatDns1123Label
            | FormatDns1123Subdomain
            | FormatDns1035Label
            | FormatQualifiedName
            | FormatDns1123LabelPrefix
            | FormatDns1123SubdomainPrefix
            | FormatDns1035LabelPrefix
            | FormatLabelValue
            | FormatUri
            | FormatUuid
            | FormatByte
            | FormatDate
            | FormatDatetime => TypeName::NamedFormat,
        })
    }

    /// The named format a zero-argument `format.<name>()` returns.
    fn constant_format(self) -> Option<&'static NamedFormat> {
        use LibFunc::*;
        let key = match self {
            FormatDns1123Label => "dns1123Label",
            FormatDns1123Subdomain => "dns1123Subdomain",
            FormatDns1035Label => "dns1035Label",
            FormatQualifiedName => "qualifiedName",
            FormatDns1123LabelPrefix => "dns1123LabelPrefix",
            FormatDns1123SubdomainPrefix => "dns1123SubdomainPrefix",
            FormatDns1035LabelPrefix => "dns1035LabelPrefix",
            FormatLabelValue => "labelValue",
            FormatUri => "uri",
            FormatUuid => "uuid",
            FormatByte => "byte",
            FormatDate => "date",
            FormatDatetime => "datetime",
            _ => return None,
        };
        format::by_key(key)
    }
}

fn overload() -> EvalError {
    EvalError::no_overload()
}

fn lib(v: LibValue) -> Value<'static> {
    Value::Lib(Rc::new(v))
}

fn str_arg<'v>(v: &'v Value<'_>) -> Result<&'v str, EvalError> {
    match v {
        Value::Str(s) => Ok(s),
        _ => Err(overload()),
    }
}

fn arg<'v>(args: &'v [Value<'_>], i: usize) -> Result<LibArg<'v>, EvalError> {
    Ok(match args.get(i).ok_or_else(overload)? {
        Value::Lib(l) => LibArg::Lib(l),
        Value::Str(s) => LibArg::Str(s),
        Value::Int(i) => LibArg::Int(*i),
        Value::Bool(b) => LibArg::Bool(*b),
        _ => return Err(overload()),
    })
}

/// An argument as the library functions see it.
enum LibArg<'v> {
    Lib(&'v LibValue),
    Str(&'v str),
    Int(i64),
    Bool(bool),
}

/// Calls `f` with evaluated arguments (target first for member calls).
pub(crate) fn call<'a>(f: LibFunc, args: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    use LibArg as A;
    use LibFunc::*;
    use LibValue as L;
    if let Some(nf) = f.constant_format() {
        return Ok(lib(L::Format(nf)));
    }
    let a0 = arg(args, 0)?;
    let bool_ = |b: bool| Ok(Value::Bool(b));
    let int = |i: i64| Ok(Value::Int(i));
    let string = |s: String| Ok(Value::string(s));
    match (f, a0) {
        // quantity
        (ToQuantity, A::Str(s)) => Ok(lib(L::Quantity(
            Quantity::parse(s).map_err(EvalError::new)?,
        ))),
        (IsQuantity, A::Str(s)) => bool_(Quantity::parse(s).is_ok()),
        (Sign, A::Lib(L::Quantity(q))) => int(q.sign()),
        (IsGreaterThan | IsLessThan | CompareTo, A::Lib(a)) => {
            let o = match (a, arg(args, 1)?) {
                (L::Quantity(x), A::Lib(L::Quantity(y))) => x.cmp(y),
                (L::Semver(x), A::Lib(L::Semver(y))) => x.cmp(y),
                _ => return Err(overload()),
            };
            match f {
                IsGreaterThan => bool_(o.is_gt()),
                IsLessThan => bool_(o.is_lt()),
                _ => int(o as i64),
            }
        }
        (AsApproximateFloat, A::Lib(L::Quantity(q))) => Ok(Value::Double(q.approximate_f64())),
        (AsInteger, A::Lib(L::Quantity(q))) => q
            .as_i64()
            .map(Value::Int)
            .ok_or_else(|| EvalError::new("cannot convert value to integer")),
        (IsInteger, A::Lib(L::Quantity(q))) => bool_(q.as_i64().is_some()),
        (Add | Sub, A::Lib(L::Quantity(q))) => {
            let other = match arg(args, 1)? {
                A::Lib(L::Quantity(y)) => y.clone(),
                A::Int(i) => Quantity::from_i64(i),
                _ => return Err(overload()),
            };
            let r = if f == Add {
                q.add(&other)
            } else {
                q.sub(&other)
            };
            Ok(lib(L::Quantity(r)))
        }
        // ip
        (ToIp, A::Str(s)) => Ok(lib(L::Ip(Ip::parse(s).map_err(EvalError::new)?))),
        (ToIp, A::Lib(L::Cidr(c))) => Ok(lib(L::Ip(c.ip()))),
        (IsIp, A::Str(s)) => bool_(Ip::parse(s).is_ok()),
        (IpIsCanonical, A::Str(s)) => {
            let ip = Ip::parse(s).map_err(EvalError::new)?;
            bool_(ip.to_string() == s)
        }
        (Family, A::Lib(L::Ip(ip))) => int(ip.family()),
        (IsUnspecified, A::Lib(L::Ip(ip))) => bool_(ip.is_unspecified()),
        (IsLoopback, A::Lib(L::Ip(ip))) => bool_(ip.is_loopback()),
        (IsLinkLocalMulticast, A::Lib(L::Ip(ip))) => bool_(ip.is_link_local_multicast()),
        (IsLinkLocalUnicast, A::Lib(L::Ip(ip))) => bool_(ip.is_link_local_unicast()),
        (IsGlobalUnicast, A::Lib(L::Ip(ip))) => bool_(ip.is_global_unicast()),
        // cidr
        (ToCidr, A::Str(s)) => Ok(lib(L::Cidr(Cidr::parse(s).map_err(EvalError::new)?))),
        (IsCidr, A::Str(s)) => bool_(Cidr::parse(s).is_ok()),
        (ContainsIp, A::Lib(L::Cidr(c))) => match arg(args, 1)? {
            A::Lib(L::Ip(ip)) => bool_(c.contains(ip)),
            A::Str(s) => bool_(c.contains(&Ip::parse(s).map_err(EvalError::new)?)),
            _ => Err(overload()),
        },
        (ContainsCidr, A::Lib(L::Cidr(c))) => match arg(args, 1)? {
            A::Lib(L::Cidr(o)) => bool_(c.contains_cidr(o)),
            A::Str(s) => bool_(c.contains_cidr(&Cidr::parse(s).map_err(EvalError::new)?)),
            _ => Err(overload()),
        },
        (PrefixLength, A::Lib(L::Cidr(c))) => int(c.prefix_length()),
        (Masked, A::Lib(L::Cidr(c))) => Ok(lib(L::Cidr(c.masked()))),
        // url
        (ToUrl, A::Str(s)) => Ok(lib(L::Url(GoUrl::from_cel(s).map_err(EvalError::new)?))),
        (IsUrl, A::Str(s)) => bool_(GoUrl::parse_request_uri(s).is_ok()),
        (GetScheme, A::Lib(L::Url(u))) => string(u.scheme.clone()),
        (GetHost, A::Lib(L::Url(u))) => string(u.host.clone()),
        (GetHostname, A::Lib(L::Url(u))) => string(u.hostname().to_owned()),
        (GetPort, A::Lib(L::Url(u))) => string(u.port().to_owned()),
        (GetEscapedPath, A::Lib(L::Url(u))) => string(u.escaped_path()),
        (GetQuery, A::Lib(L::Url(u))) => {
            let entries = u
                .query()
                .into_iter()
                .map(|(k, vs)| {
                    (
                        Value::string(k),
                        Value::list(vs.into_iter().map(Value::string).collect()),
                    )
                })
                .collect();
            Ok(Value::Map(Map::Owned(Rc::new(entries))))
        }
        // semver
        (ToSemver | IsSemver, A::Str(s)) => {
            let normalize = match args.len() {
                1 => false,
                _ => match arg(args, 1)? {
                    A::Bool(b) => b,
                    _ => return Err(overload()),
                },
            };
            let parsed = if normalize {
                Semver::parse_normalized(s)
            } else {
                Semver::parse(s)
            };
            if f == IsSemver {
                return bool_(parsed.is_ok());
            }
            Ok(lib(L::Semver(parsed.map_err(EvalError::new)?)))
        }
        (Major, A::Lib(L::Semver(v))) => int(v.major as i64),
        (Minor, A::Lib(L::Semver(v))) => int(v.minor as i64),
        (Patch, A::Lib(L::Semver(v))) => int(v.patch as i64),
        // strings extension `format`
        (StringFormat, A::Str(s)) => match args.get(1) {
            Some(Value::List(l)) => strings_format::format(s, l).map(Value::string),
            _ => Err(overload()),
        },
        // format
        (FormatNamed, A::Str(s)) => Ok(Value::Optional(
            format::by_key(s).map(|nf| Rc::new(lib(L::Format(nf)))),
        )),
        (Validate, A::Lib(L::Format(nf))) => {
            let s = str_arg(args.get(1).ok_or_else(overload)?)?;
            let errs = (nf.validate)(s);
            Ok(Value::Optional(if errs.is_empty() {
                None
            } else {
                Some(Rc::new(Value::list(
                    errs.into_iter().map(Value::string).collect(),
                )))
            }))
        }
        _ => Err(overload()),
    }
}

/// `string(x)` for the library types that have that overload (ip, cidr).
pub(crate) fn to_string(v: &LibValue) -> Option<String> {
    match v {
        LibValue::Ip(ip) => Some(ip.to_string()),
        LibValue::Cidr(c) => Some(c.to_string()),
        _ => None,
    }
}

/// The checker's view of a library call: the result type for argument
/// types (target first), or `None` for "found no matching overload". Dyn
/// arguments match anything, as in cel-go.
pub(crate) fn check<'s>(f: LibFunc, args: &[Ty<'s>]) -> Option<Ty<'s>> {
    use LibFunc::*;
    use TypeName as T;
    let is = |t: &Ty<'_>, want: &[T]| match t {
        Ty::Dyn => true,
        Ty::String => want.contains(&T::String),
        Ty::Int => want.contains(&T::Int),
        Ty::Bool => want.contains(&T::Bool),
        Ty::List(_) => want.contains(&T::List),
        Ty::Lib(l) => want.contains(l),
        _ => false,
    };
    let sig =
        |want: &[&[T]]| want.len() == args.len() && want.iter().zip(args).all(|(w, a)| is(a, w));
    let q = T::Quantity;
    let ok = match f {
        ToQuantity | IsQuantity | ToUrl | IsUrl | ToCidr | IsCidr | IsIp | IpIsCanonical
        | FormatNamed => sig(&[&[T::String]]),
        ToIp => sig(&[&[T::String, T::Cidr]]),
        Sign | AsApproximateFloat | AsInteger | IsInteger => sig(&[&[q]]),
        IsGreaterThan | IsLessThan | CompareTo => {
            sig(&[&[q], &[q]]) || sig(&[&[T::Semver], &[T::Semver]])
        }
        Add | Sub => sig(&[&[q], &[q, T::Int]]),
        Family | IsUnspecified | IsLoopback | IsLinkLocalMulticast | IsLinkLocalUnicast
        | IsGlobalUnicast => sig(&[&[T::Ip]]),
        ContainsIp => sig(&[&[T::Cidr], &[T::Ip, T::String]]),
        ContainsCidr => sig(&[&[T::Cidr], &[T::Cidr, T::String]]),
        PrefixLength | Masked => sig(&[&[T::Cidr]]),
        GetScheme | GetHost | GetHostname | GetPort | GetEscapedPath | GetQuery => {
            sig(&[&[T::Url]])
        }
        ToSemver | IsSemver => sig(&[&[T::String]]) || sig(&[&[T::String], &[T::Bool]]),
        Major | Minor | Patch => sig(&[&[T::Semver]]),
        Validate => sig(&[&[T::NamedFormat], &[T::String]]),
        StringFormat => sig(&[&[T::String], &[T::List]]),
        _ => args.is_empty(),
    };
    if !ok {
        return None;
    }
    Some(match f {
        GetQuery => Ty::Map(
            Box::new(Ty::String),
            Box::new(Ty::List(Box::new(Ty::String))),
        ),
        FormatNamed => Ty::Optional(Box::new(Ty::Lib(T::NamedFormat))),
        Validate => Ty::Optional(Box::new(Ty::List(Box::new(Ty::String)))),
        _ => f.result_ty().map_or(Ty::Dyn, Ty::of_name),
    })
}

/// The runtime cost of a library call (k8s.io/apiserver `library/cost.go`
/// `CallCost`): parsers pay a tenth of the input length, `validate` the
/// regex-sized product, accessors and comparisons 1. `size` is cel-go's
/// value size (library values count 1).
pub(crate) fn call_cost(f: LibFunc, args: &[Value<'_>], size: impl Fn(&Value<'_>) -> u64) -> u64 {
    use LibFunc::*;
    let scaled = |n: u64, factor: f64| (n as f64 * factor).ceil() as u64;
    let arg = |i: usize| args.get(i).map_or(1, &size);
    let is_str = |i: usize| matches!(args.get(i), Some(Value::Str(_)));
    match f {
        ToUrl | ToCidr | IsIp | IsCidr | ToQuantity | IsQuantity | ToSemver | IsSemver => {
            scaled(arg(0), 0.1)
        }
        ToIp if is_str(0) => scaled(arg(0), 0.1),
        IpIsCanonical => scaled(arg(0), 0.2),
        ContainsIp => {
            let cidr = arg(0);
            let other = if is_str(1) { scaled(arg(1), 0.1) } else { 0 };
            scaled(cidr + cidr, 0.1) + other
        }
        ContainsCidr => {
            let cidr = arg(0);
            let other = if is_str(1) { scaled(arg(1), 0.1) } else { 0 };
            scaled(cidr + cidr, 0.1) + scaled(cidr, 0.1) + 1 + other
        }
        Validate => {
            let regex = match args.first() {
                Some(Value::Lib(l)) => match &**l {
                    LibValue::Format(nf) => nf.max_regex_size,
                    _ => 1,
                },
                _ => 1,
            };
            scaled(1 + arg(1), 0.1) * scaled(regex as u64, 0.25)
        }
        _ => 1,
    }
}

/// The static cost estimate of a library call (`EstimateCallCost`), from
/// the maximum sizes of its arguments (target first).
pub(crate) fn estimate_cost(f: LibFunc, sizes: &[f64]) -> f64 {
    use LibFunc::*;
    let size = |i: usize| sizes.get(i).copied().unwrap_or(1.0);
    let scaled = |n: f64, factor: f64| (n * factor).ceil();
    // The IP and CIDR comparisons assume at most 16 bytes per address.
    let ip_cmp = scaled(32.0, 0.1);
    match f {
        ToUrl | ToCidr | IsIp | IsCidr | ToQuantity | IsQuantity | ToSemver | IsSemver => {
            scaled(size(0), 0.1)
        }
        ToIp if sizes.len() == 1 => scaled(size(0), 0.1),
        IpIsCanonical => scaled(size(0), 0.2),
        // The string overloads add the parse of the argument; the checker
        // does not tell the overloads apart here, so both pay it.
        ContainsIp => ip_cmp + scaled(size(1), 0.1),
        ContainsCidr => ip_cmp + scaled(16.0, 0.1) + 1.0 + scaled(size(1), 0.1),
        Validate => scaled(size(1), 0.1) * (format::MAX_NAME_FORMAT_REGEX_SIZE as f64 * 0.25),
        _ => 1.0,
    }
}
