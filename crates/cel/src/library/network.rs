//! Kubernetes' IP and CIDR libraries: `ip()`, `isIP()`,
//! `ip.isCanonical()`, the address predicates (`family`, `isLoopback`,
//! ...), `cidr()`, `isCIDR()`, `containsIP`, `containsCIDR`,
//! `prefixLength` and `masked`.

use std::rc::Rc;

use crate::registry::{
    arg, arg_size, first, is_string, overload, scaled, shape_size, sig, str_arg, unit_scalar,
    Function,
};
use crate::shape::Shape;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::net::{Cidr, Ip};
use crate::value::k8s::LibValue;
use crate::value::{TypeName, Value};

fn is_ip(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::Ip))
}

fn is_cidr(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::Cidr))
}

/// `ip()` parses a string or takes the address of a CIDR.
fn is_string_or_cidr(t: &Ty<'_>) -> bool {
    is_string(t) || is_cidr(t)
}

/// `containsIP` takes an address or a string to parse as one.
fn is_ip_or_string(t: &Ty<'_>) -> bool {
    is_ip(t) || is_string(t)
}

/// `containsCIDR` takes a CIDR or a string to parse as one.
fn is_cidr_or_string(t: &Ty<'_>) -> bool {
    is_cidr(t) || is_string(t)
}

fn lib_arg<'v>(v: &'v Value<'_>) -> Option<&'v LibValue> {
    match v {
        Value::Lib(l) => Some(l),
        _ => None,
    }
}

fn ip_arg<'v>(v: &'v Value<'_>) -> Result<&'v Ip, EvalError> {
    match lib_arg(v) {
        Some(LibValue::Ip(ip)) => Ok(ip),
        _ => Err(overload()),
    }
}

fn cidr_arg<'v>(v: &'v Value<'_>) -> Result<&'v Cidr, EvalError> {
    match lib_arg(v) {
        Some(LibValue::Cidr(c)) => Ok(c),
        _ => Err(overload()),
    }
}

fn wrap(v: LibValue) -> Value<'static> {
    Value::Lib(Rc::new(v))
}

fn parse_ip(s: &str) -> Result<Ip, EvalError> {
    Ip::parse(s).map_err(EvalError::new)
}

fn parse_cidr(s: &str) -> Result<Cidr, EvalError> {
    Cidr::parse(s).map_err(EvalError::new)
}

/// A tenth of a string argument's length: what parsing it costs.
fn parse_cost(a: &[Value<'_>], i: usize) -> u64 {
    scaled(arg_size(a, i), 0.1)
}

fn parse_estimate(s: &[Shape<'_>], i: usize) -> f64 {
    (shape_size(s, i) * 0.1).ceil()
}

/// A global parser of one string, charged by its length.
const PARSER: Function = Function {
    global: &[1],
    cost: |a, _| parse_cost(a, 0),
    estimate: |s| (parse_estimate(s, 0), Shape::sized(1.0)),
    ..Function::BASE
};

pub static IP: Function = Function {
    name: "ip",
    overloads: &[("string_to_ip", 30), ("cidr_ip", 30)],
    member: &[0],
    global: &[1],
    result: Some(TypeName::Ip),
    check: Some(|a| sig(a, &[is_string_or_cidr]).then_some(Ty::Lib(TypeName::Ip))),
    call: |a| match first(a)? {
        Value::Str(s) => Ok(wrap(LibValue::Ip(parse_ip(s)?))),
        v => Ok(wrap(LibValue::Ip(cidr_arg(v)?.ip()))),
    },
    // Only parsing a string costs more than 1; the estimate cannot tell a
    // string from a CIDR and charges every one-argument call the parse.
    cost: |a, _| match a.first() {
        Some(Value::Str(_)) => parse_cost(a, 0),
        _ => 1,
    },
    estimate: |s| {
        let cost = if s.len() == 1 {
            parse_estimate(s, 0)
        } else {
            1.0
        };
        (cost, Shape::sized(1.0))
    },
    ..Function::BASE
};

pub static IS_IP: Function = Function {
    name: "isIP",
    overloads: &[("is_ip", 30)],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::Bool)),
    call: |a| Ok(Value::Bool(Ip::parse(str_arg(first(a)?)?).is_ok())),
    ..PARSER
};

/// Whether the string is the address's canonical form; an unparsable
/// string is an error, not `false`.
pub static IS_CANONICAL: Function = Function {
    name: "ip.isCanonical",
    overloads: &[("ip_is_canonical", 30)],
    global: &[1],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::Bool)),
    call: |a| {
        let s = str_arg(first(a)?)?;
        Ok(Value::Bool(parse_ip(s)?.to_string() == s))
    },
    // Parsing and printing back: a fifth of the length.
    cost: |a, _| scaled(arg_size(a, 0), 0.2),
    estimate: |s| ((shape_size(s, 0) * 0.2).ceil(), Shape::sized(1.0)),
    ..Function::BASE
};

/// A predicate or accessor of one address, at unit cost.
const OF_IP: Function = Function {
    member: &[0],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_ip]).then_some(Ty::Bool)),
    estimate: unit_scalar,
    ..Function::BASE
};

pub static FAMILY: Function = Function {
    name: "family",
    overloads: &[("ip_family", 30)],
    result: Some(TypeName::Int),
    check: Some(|a| sig(a, &[is_ip]).then_some(Ty::Int)),
    call: |a| Ok(Value::Int(ip_arg(first(a)?)?.family())),
    ..OF_IP
};

pub static IS_UNSPECIFIED: Function = Function {
    name: "isUnspecified",
    overloads: &[("ip_is_unspecified", 30)],
    call: |a| Ok(Value::Bool(ip_arg(first(a)?)?.is_unspecified())),
    ..OF_IP
};

pub static IS_LOOPBACK: Function = Function {
    name: "isLoopback",
    overloads: &[("ip_is_loopback", 30)],
    call: |a| Ok(Value::Bool(ip_arg(first(a)?)?.is_loopback())),
    ..OF_IP
};

pub static IS_LINK_LOCAL_MULTICAST: Function = Function {
    name: "isLinkLocalMulticast",
    overloads: &[("ip_is_link_local_multicast", 30)],
    call: |a| Ok(Value::Bool(ip_arg(first(a)?)?.is_link_local_multicast())),
    ..OF_IP
};

pub static IS_LINK_LOCAL_UNICAST: Function = Function {
    name: "isLinkLocalUnicast",
    overloads: &[("ip_is_link_local_unicast", 30)],
    call: |a| Ok(Value::Bool(ip_arg(first(a)?)?.is_link_local_unicast())),
    ..OF_IP
};

pub static IS_GLOBAL_UNICAST: Function = Function {
    name: "isGlobalUnicast",
    overloads: &[("ip_is_global_unicast", 30)],
    call: |a| Ok(Value::Bool(ip_arg(first(a)?)?.is_global_unicast())),
    ..OF_IP
};

pub static CIDR: Function = Function {
    name: "cidr",
    overloads: &[("string_to_cidr", 30)],
    result: Some(TypeName::Cidr),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::Lib(TypeName::Cidr))),
    call: |a| Ok(wrap(LibValue::Cidr(parse_cidr(str_arg(first(a)?)?)?))),
    ..PARSER
};

pub static IS_CIDR: Function = Function {
    name: "isCIDR",
    overloads: &[("is_cidr", 30)],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::Bool)),
    call: |a| Ok(Value::Bool(Cidr::parse(str_arg(first(a)?)?).is_ok())),
    ..PARSER
};

/// The charge of a string operand of `containsIP`/`containsCIDR`: its
/// parse; an address or CIDR value costs nothing more.
fn operand_parse_cost(a: &[Value<'_>]) -> u64 {
    match a.get(1) {
        Some(Value::Str(_)) => parse_cost(a, 1),
        _ => 0,
    }
}

/// The static estimate's comparison of two addresses of at most 16 bytes.
fn address_compare_estimate() -> f64 {
    (32.0_f64 * 0.1).ceil()
}

pub static CONTAINS_IP: Function = Function {
    name: "containsIP",
    overloads: &[("cidr_contains_ip_string", 30), ("cidr_contains_ip_ip", 30)],
    member: &[1],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_cidr, is_ip_or_string]).then_some(Ty::Bool)),
    call: |a| {
        let c = cidr_arg(first(a)?)?;
        let contained = match arg(a, 1)? {
            Value::Str(s) => c.contains(&parse_ip(s)?),
            v => c.contains(ip_arg(v)?),
        };
        Ok(Value::Bool(contained))
    },
    cost: |a, _| {
        let cidr = arg_size(a, 0);
        scaled(cidr + cidr, 0.1) + operand_parse_cost(a)
    },
    // The checker does not tell the two overloads apart here: both pay
    // the string's parse.
    estimate: |s| {
        let cost = address_compare_estimate() + parse_estimate(s, 1);
        (cost, Shape::sized(1.0))
    },
    ..Function::BASE
};

pub static CONTAINS_CIDR: Function = Function {
    name: "containsCIDR",
    overloads: &[
        ("cidr_contains_cidr_string", 30),
        ("cidr_contains_cidr", 30),
    ],
    member: &[1],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_cidr, is_cidr_or_string]).then_some(Ty::Bool)),
    call: |a| {
        let c = cidr_arg(first(a)?)?;
        let contained = match arg(a, 1)? {
            Value::Str(s) => c.contains_cidr(&parse_cidr(s)?),
            v => c.contains_cidr(cidr_arg(v)?),
        };
        Ok(Value::Bool(contained))
    },
    // The address comparison, then the prefix lengths.
    cost: |a, _| {
        let cidr = arg_size(a, 0);
        scaled(cidr + cidr, 0.1) + scaled(cidr, 0.1) + 1 + operand_parse_cost(a)
    },
    estimate: |s| {
        let cost =
            address_compare_estimate() + (16.0_f64 * 0.1).ceil() + 1.0 + parse_estimate(s, 1);
        (cost, Shape::sized(1.0))
    },
    ..Function::BASE
};

pub static PREFIX_LENGTH: Function = Function {
    name: "prefixLength",
    overloads: &[("cidr_prefix_length", 30)],
    member: &[0],
    result: Some(TypeName::Int),
    check: Some(|a| sig(a, &[is_cidr]).then_some(Ty::Int)),
    call: |a| Ok(Value::Int(cidr_arg(first(a)?)?.prefix_length())),
    estimate: unit_scalar,
    ..Function::BASE
};

pub static MASKED: Function = Function {
    name: "masked",
    overloads: &[("cidr_masked", 30)],
    member: &[0],
    result: Some(TypeName::Cidr),
    check: Some(|a| sig(a, &[is_cidr]).then_some(Ty::Lib(TypeName::Cidr))),
    call: |a| Ok(wrap(LibValue::Cidr(cidr_arg(first(a)?)?.masked()))),
    estimate: unit_scalar,
    ..Function::BASE
};
