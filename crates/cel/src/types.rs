//! Static types for the compile-time check: the CEL type of every schema
//! node, and the operator and function signatures, so that a rule the API
//! server would refuse (`found no matching overload ...`, `undefined field`)
//! is refused at load with the same wording.

use std::fmt;

use crate::operators::BinOp;
use crate::value::TypeName;
use celhook_schema::{Format, Schema, Type};

/// A CEL type as the checker sees it: unlike the runtime's `TypeName`,
/// it carries element types, the schema node of an object and optionality.
#[derive(Clone, Debug)]
// Kept apart from `TypeName`, whose scalar variants these repeat: the
// checker's types carry element types, schema nodes and `dyn`, and the
// runtime's type values are plain tags.
pub(crate) enum Ty<'s> {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// A type value (`int`, `string`, ... used as values).
    Type,
    List(Box<Ty<'s>>),
    Map(Box<Ty<'s>>, Box<Ty<'s>>),
    /// An object with properties: fields are checked against the schema.
    Object(&'s Schema),
    Optional(Box<Ty<'s>>),
    /// A Kubernetes library type (`kubernetes.Quantity`, `net.IP`, ...).
    Lib(TypeName),
}

impl<'s> Ty<'s> {
    /// The type without its ties to a schema (objects become `dyn`), to
    /// be kept past the schema it was checked against.
    pub(crate) fn detached(&self) -> Ty<'static> {
        match self {
            Ty::Dyn | Ty::Object(_) => Ty::Dyn,
            Ty::Null => Ty::Null,
            Ty::Bool => Ty::Bool,
            Ty::Int => Ty::Int,
            Ty::Uint => Ty::Uint,
            Ty::Double => Ty::Double,
            Ty::String => Ty::String,
            Ty::Bytes => Ty::Bytes,
            Ty::Duration => Ty::Duration,
            Ty::Timestamp => Ty::Timestamp,
            Ty::Type => Ty::Type,
            Ty::List(t) => Ty::List(Box::new(t.detached())),
            Ty::Map(k, v) => Ty::Map(Box::new(k.detached()), Box::new(v.detached())),
            Ty::Optional(t) => Ty::Optional(Box::new(t.detached())),
            Ty::Lib(n) => Ty::Lib(*n),
        }
    }

    /// The CEL type of values at a schema node.
    pub(crate) fn of_schema(s: &'s Schema) -> Ty<'s> {
        if s.int_or_string {
            return Ty::Dyn;
        }
        match s.ty {
            Type::Integer => Ty::Int,
            Type::Number => Ty::Double,
            Type::Boolean => Ty::Bool,
            Type::String => match s.format {
                Format::Byte => Ty::Bytes,
                Format::Date | Format::DateTime => Ty::Timestamp,
                Format::Duration => Ty::Duration,
                _ => Ty::String,
            },
            Type::Array => Ty::List(Box::new(s.items.as_deref().map_or(Ty::Dyn, Ty::of_schema))),
            Type::Object => match s.additional_properties.as_deref() {
                Some(values) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of_schema(values))),
                None => Ty::Object(s),
            },
            Type::Any if !s.properties.is_empty() => Ty::Object(s),
            Type::Any => Ty::Dyn,
        }
    }

    /// The static type of a function result, where the table knows it.
    pub(crate) fn of_name(t: TypeName) -> Ty<'s> {
        match t {
            TypeName::Null => Ty::Null,
            TypeName::Bool => Ty::Bool,
            TypeName::Int => Ty::Int,
            TypeName::Uint => Ty::Uint,
            TypeName::Double => Ty::Double,
            TypeName::String => Ty::String,
            TypeName::Bytes => Ty::Bytes,
            TypeName::Timestamp => Ty::Timestamp,
            TypeName::Duration => Ty::Duration,
            TypeName::Type => Ty::Type,
            TypeName::List => Ty::List(Box::new(Ty::Dyn)),
            TypeName::Map => Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn)),
            TypeName::Optional => Ty::Optional(Box::new(Ty::Dyn)),
            TypeName::Quantity
            | TypeName::Ip
            | TypeName::Cidr
            | TypeName::Url
            | TypeName::Semver
            | TypeName::NamedFormat
            | TypeName::Authorizer
            | TypeName::PathCheck
            | TypeName::GroupCheck
            | TypeName::ResourceCheck
            | TypeName::Decision => Ty::Lib(t),
            _ => Ty::Dyn,
        }
    }

    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn)
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// Whether two types can meet: equal, or either is dyn (recursively).
    pub(crate) fn unifies(&self, other: &Ty<'_>) -> bool {
        match (self, other) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (Ty::List(a), Ty::List(b)) => a.unifies(b),
            (Ty::Map(k1, v1), Ty::Map(k2, v2)) => k1.unifies(k2) && v1.unifies(v2),
            (Ty::Optional(a), Ty::Optional(b)) => a.unifies(b),
            // Objects of one schema node are one type; two nodes may have
            // the same shape, and the checker cannot tell them apart cheaply.
            (Ty::Object(_), Ty::Object(_)) => true,
            // Messages, timestamps and durations are nullable in cel-go.
            (Ty::Null, Ty::Object(_) | Ty::Timestamp | Ty::Duration)
            | (Ty::Object(_) | Ty::Timestamp | Ty::Duration, Ty::Null) => true,
            (Ty::Lib(a), Ty::Lib(b)) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }

    /// The more specific of two unifying types.
    pub(crate) fn join(&self, other: &Ty<'s>) -> Ty<'s> {
        if self.is_dyn() {
            other.clone()
        } else {
            self.clone()
        }
    }
}

impl fmt::Display for Ty<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            // The checker's names, which differ from the runtime's.
            Ty::Duration => f.write_str("duration"),
            Ty::Timestamp => f.write_str("timestamp"),
            Ty::Type => f.write_str("type(dyn)"),
            Ty::List(e) => write!(f, "list({e})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Object(_) => f.write_str("object"),
            Ty::Optional(t) => write!(f, "optional_type({t})"),
            Ty::Lib(t) => f.write_str(t.name()),
        }
    }
}

/// The operators the checker knows the signatures of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Bin(BinOp),
    Neg,
    Not,
    Index,
}

impl Op {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Bin(op) => op.name(),
            Op::Neg => "-_",
            Op::Not => "!_",
            Op::Index => "_[_]",
        }
    }
}

/// The result type of an operator over argument types, or `None` when no
/// overload matches.
pub(crate) fn operator<'s>(op: Op, args: &[Ty<'s>]) -> Option<Ty<'s>> {
    use Ty::*;
    if let [a] = args {
        return match (op, a) {
            (Op::Neg, Dyn) => Some(Dyn),
            (Op::Neg, Int) => Some(Int),
            (Op::Neg, Double) => Some(Double),
            (Op::Neg, Duration) => Some(Duration),
            (Op::Not, Dyn | Bool) => Some(Bool),
            _ => None,
        };
    }
    let [a, b] = args else { return None };
    let any_dyn = a.is_dyn() || b.is_dyn();
    let op = match op {
        Op::Bin(op) => op,
        Op::Index => {
            return match (a, b) {
                (Dyn, _) => Some(Dyn),
                (List(e), Int | Uint | Dyn) => Some((**e).clone()),
                (Map(k, v), key) => k.unifies(key).then(|| (**v).clone()),
                _ => None,
            }
        }
        Op::Neg | Op::Not => return None,
    };
    match op {
        BinOp::Eq | BinOp::Ne => a.unifies(b).then_some(Bool),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let ok = any_dyn
                || (a.is_numeric() && b.is_numeric())
                || matches!(
                    (a, b),
                    (String, String)
                        | (Bytes, Bytes)
                        | (Bool, Bool)
                        | (Timestamp, Timestamp)
                        | (Duration, Duration)
                );
            ok.then_some(Bool)
        }
        BinOp::In => match b {
            Dyn => Some(Bool),
            List(e) | Map(e, _) => a.unifies(e).then_some(Bool),
            _ => None,
        },
        BinOp::Add => match (a, b) {
            // Maps, booleans, null and the like have no `+` at all.
            (Dyn, x) | (x, Dyn) if !x.is_dyn() && !x.can_add() => None,
            (Dyn, x) | (x, Dyn) => Some(if x.is_dyn() { Dyn } else { x.clone() }.or_dyn_for_time()),
            (Int, Int) => Some(Int),
            (Uint, Uint) => Some(Uint),
            (Double, Double) => Some(Double),
            (String, String) => Some(String),
            (Bytes, Bytes) => Some(Bytes),
            (List(x), List(y)) if x.unifies(y) => Some(List(Box::new(x.join(y)))),
            (Duration, Duration) => Some(Duration),
            (Timestamp, Duration) | (Duration, Timestamp) => Some(Timestamp),
            _ => None,
        },
        BinOp::Sub => match (a, b) {
            (Dyn, _) | (_, Dyn) => Some(Dyn),
            (Int, Int) => Some(Int),
            (Uint, Uint) => Some(Uint),
            (Double, Double) => Some(Double),
            (Duration, Duration) => Some(Duration),
            (Timestamp, Timestamp) => Some(Duration),
            (Timestamp, Duration) => Some(Timestamp),
            _ => None,
        },
        BinOp::Mul | BinOp::Div => match (a, b) {
            (Dyn, _) | (_, Dyn) => Some(Dyn),
            (Int, Int) => Some(Int),
            (Uint, Uint) => Some(Uint),
            (Double, Double) => Some(Double),
            _ => None,
        },
        BinOp::Rem => match (a, b) {
            (Dyn, _) | (_, Dyn) => Some(Dyn),
            (Int, Int) => Some(Int),
            (Uint, Uint) => Some(Uint),
            _ => None,
        },
    }
}

impl<'s> Ty<'s> {
    /// Types some `+` overload takes.
    fn can_add(&self) -> bool {
        matches!(
            self,
            Ty::Int
                | Ty::Uint
                | Ty::Double
                | Ty::String
                | Ty::Bytes
                | Ty::List(_)
                | Ty::Duration
                | Ty::Timestamp
        )
    }

    /// `x + dyn` may be a timestamp or a duration sum: stay dynamic.
    fn or_dyn_for_time(self) -> Ty<'s> {
        match self {
            Ty::Timestamp | Ty::Duration => Ty::Dyn,
            t => t,
        }
    }
}

/// How cel-go prints the argument types of a call in its error:
/// `'(int, bool)'`, or `'string.(int)'` for a member call.
pub(crate) fn signature_text(member: bool, args: &[Ty<'_>]) -> String {
    let parts: Vec<String> = args.iter().map(ToString::to_string).collect();
    if member && !parts.is_empty() {
        format!("'{}.({})'", parts[0], parts[1..].join(", "))
    } else {
        format!("'({})'", parts.join(", "))
    }
}
