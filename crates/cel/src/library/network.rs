//! Kubernetes' IP and CIDR libraries: `ip()`, `isIP()`,
//! `ip.isCanonical()`, the address predicates (`family`, `isLoopback`,
//! ...), `cidr()`, `isCIDR()`, `containsIP`, `containsCIDR`,
//! `prefixLength` and `masked`.

use super::{METHOD, PARSER};
use crate::registry::{
    arg, arg_size, first, is_string, lib_arg, lib_value, overload, scaled, shape_scaled, sig,
    str_arg, Function,
};
use crate::shape::{Compared, Shape};
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

fn ip_arg<'v>(v: &'v Value<'_>) -> Result<&'v Ip, EvalError> {
    match lib_arg(v)? {
        LibValue::Ip(ip) => Ok(ip),
        _ => Err(overload()),
    }
}

fn cidr_arg<'v>(v: &'v Value<'_>) -> Result<&'v Cidr, EvalError> {
    match lib_arg(v)? {
        LibValue::Cidr(c) => Ok(c),
        _ => Err(overload()),
    }
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
    shape_scaled(s, i, 0.1)
}

pub static IP: Function = Function::BASE
    .named("ip", 30, "string_to_ip cidr_ip")
    .member_arities(&[0])
    .global_arities(&[1])
    .returns(TypeName::Ip)
    .accepts(|a| sig(a, &[is_string_or_cidr]))
    .calls(|a| match first(a)? {
        Value::Str(s) => Ok(lib_value(LibValue::Ip(parse_ip(s)?))),
        v => Ok(lib_value(LibValue::Ip(cidr_arg(v)?.ip()))),
    })
    // Only parsing a string costs more than 1; the estimate cannot tell a
    // string from a CIDR and charges every one-argument call the parse.
    .costs(|a, _| match a.first() {
        Some(Value::Str(_)) => parse_cost(a, 0),
        _ => 1,
    })
    .estimates(|s| {
        let cost = if s.len() == 1 {
            parse_estimate(s, 0)
        } else {
            1.0
        };
        (cost, Shape::sized(1.0))
    });

pub static IS_IP: Function = PARSER
    .named("isIP", 30, "is_ip")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(Ip::parse(str_arg(first(a)?)?).is_ok())));

/// Whether the string is the address's canonical form; an unparsable
/// string is an error, not `false`.
pub static IS_CANONICAL: Function = PARSER
    .named("ip.isCanonical", 30, "ip_is_canonical")
    .returns(TypeName::Bool)
    .calls(|a| {
        let s = str_arg(first(a)?)?;
        Ok(Value::Bool(parse_ip(s)?.to_string() == s))
    })
    // Parsing and printing back: a fifth of the length.
    .costs(|a, _| scaled(arg_size(a, 0), 0.2))
    .estimates(|s| (shape_scaled(s, 0, 0.2), Shape::sized(1.0)));

/// A predicate or accessor of one address, at unit cost.
const OF_IP: Function = METHOD.accepts(|a| sig(a, &[is_ip]));

/// An address predicate: `ip.isLoopback()` and the like.
const IP_TEST: Function = OF_IP.returns(TypeName::Bool);

/// Whether the target address passes `test`.
fn ip_test<'a>(a: &[Value<'a>], test: fn(&Ip) -> bool) -> Result<Value<'a>, EvalError> {
    Ok(Value::Bool(test(ip_arg(first(a)?)?)))
}

pub static FAMILY: Function = OF_IP
    .named("family", 30, "ip_family")
    .returns(TypeName::Int)
    .calls(|a| Ok(Value::Int(ip_arg(first(a)?)?.family())));

// The predicates below, like `FAMILY` above and the CIDR accessors at the
// end, are kept one row each, alike in shape with one another and with
// url.rs's parts and quantity.rs's methods: each is its own CEL function,
// and what they share is already named once (`IP_TEST`, `ip_test`).
pub static IS_UNSPECIFIED: Function = IP_TEST
    .named("isUnspecified", 30, "ip_is_unspecified")
    .calls(|a| ip_test(a, Ip::is_unspecified));

pub static IS_LOOPBACK: Function = IP_TEST
    .named("isLoopback", 30, "ip_is_loopback")
    .calls(|a| ip_test(a, Ip::is_loopback));

pub static IS_LINK_LOCAL_MULTICAST: Function = IP_TEST
    .named("isLinkLocalMulticast", 30, "ip_is_link_local_multicast")
    .calls(|a| ip_test(a, Ip::is_link_local_multicast));

pub static IS_LINK_LOCAL_UNICAST: Function = IP_TEST
    .named("isLinkLocalUnicast", 30, "ip_is_link_local_unicast")
    .calls(|a| ip_test(a, Ip::is_link_local_unicast));

pub static IS_GLOBAL_UNICAST: Function = IP_TEST
    .named("isGlobalUnicast", 30, "ip_is_global_unicast")
    .calls(|a| ip_test(a, Ip::is_global_unicast));

pub static CIDR: Function = PARSER
    .named("cidr", 30, "string_to_cidr")
    .returns(TypeName::Cidr)
    .calls(|a| Ok(lib_value(LibValue::Cidr(parse_cidr(str_arg(first(a)?)?)?))));

pub static IS_CIDR: Function = PARSER
    .named("isCIDR", 30, "is_cidr")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(Cidr::parse(str_arg(first(a)?)?).is_ok())));

/// The charge of comparing the CIDR's address with the operand's, a string
/// operand's parse included (an address or CIDR value costs nothing more).
fn address_compare_cost(a: &[Value<'_>]) -> u64 {
    let cidr = arg_size(a, 0);
    let parse = match a.get(1) {
        Some(Value::Str(_)) => parse_cost(a, 1),
        _ => 0,
    };
    scaled(cidr + cidr, 0.1) + parse
}

/// The parse of a containment's string operand; an IP or CIDR value is
/// not parsed.
fn operand_parse_estimate(s: &[Shape<'_>]) -> f64 {
    match s.get(1) {
        Some(operand) if operand.compared == Compared::Unit => 0.0,
        _ => parse_estimate(s, 1),
    }
}

/// The static estimate's comparison of two addresses of at most 16 bytes.
fn address_compare_estimate() -> f64 {
    (32.0_f64 * 0.1).ceil()
}

/// `cidr.containsIP(x)` and `cidr.containsCIDR(x)`. The estimate counts
/// the operand's parse unless it is an IP or a CIDR already (the checker
/// then picks the overload that takes one).
const CONTAINMENT: Function = Function::BASE
    .member_arities(&[1])
    .returns(TypeName::Bool)
    .costs(|a, _| address_compare_cost(a))
    .estimates(|s| {
        let cost = address_compare_estimate() + operand_parse_estimate(s);
        (cost, Shape::sized(1.0))
    });

/// Whether the target CIDR `contains` the operand: a value `held` picks
/// out, or a string to `parse` as one.
fn containment<'a, T>(
    a: &[Value<'a>],
    held: for<'v> fn(&'v Value<'a>) -> Result<&'v T, EvalError>,
    parse: fn(&str) -> Result<T, EvalError>,
    contains: fn(&Cidr, &T) -> bool,
) -> Result<Value<'a>, EvalError> {
    let c = cidr_arg(first(a)?)?;
    let contained = match arg(a, 1)? {
        Value::Str(s) => contains(c, &parse(s)?),
        v => contains(c, held(v)?),
    };
    Ok(Value::Bool(contained))
}

pub static CONTAINS_IP: Function = CONTAINMENT
    .named(
        "containsIP",
        30,
        "cidr_contains_ip_string cidr_contains_ip_ip",
    )
    .accepts(|a| sig(a, &[is_cidr, is_ip_or_string]))
    .calls(|a| containment(a, ip_arg, parse_ip, Cidr::contains));

// Kept apart from `CONTAINS_IP`, whose first lines it mirrors: its own CEL
// function, taking a CIDR operand, and charged for the prefix lengths too.
pub static CONTAINS_CIDR: Function = CONTAINMENT
    .named(
        "containsCIDR",
        30,
        "cidr_contains_cidr_string cidr_contains_cidr",
    )
    .accepts(|a| sig(a, &[is_cidr, is_cidr_or_string]))
    .calls(|a| containment(a, cidr_arg, parse_cidr, Cidr::contains_cidr))
    // The address comparison, then the prefix lengths.
    .costs(|a, _| address_compare_cost(a) + scaled(arg_size(a, 0), 0.1) + 1)
    .estimates(|s| {
        let cost =
            address_compare_estimate() + (16.0_f64 * 0.1).ceil() + 1.0 + operand_parse_estimate(s);
        (cost, Shape::sized(1.0))
    });

/// An accessor of one CIDR, at unit cost.
const OF_CIDR: Function = METHOD.accepts(|a| sig(a, &[is_cidr]));

pub static PREFIX_LENGTH: Function = OF_CIDR
    .named("prefixLength", 30, "cidr_prefix_length")
    .returns(TypeName::Int)
    .calls(|a| Ok(Value::Int(cidr_arg(first(a)?)?.prefix_length())));

pub static MASKED: Function = OF_CIDR
    .named("masked", 30, "cidr_masked")
    .returns(TypeName::Cidr)
    .calls(|a| Ok(lib_value(LibValue::Cidr(cidr_arg(first(a)?)?.masked()))));
