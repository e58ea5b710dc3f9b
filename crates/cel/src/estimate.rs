//! The static worst-case cost of a compiled program, with the unit costs of
//! the runtime (`cost.rs`) and sizes bounded by the schema (`maxLength`,
//! `maxItems`, `maxProperties`, else what fits in the API server's largest
//! request). Kubernetes refuses rules whose estimate passes its limits; so
//! does celhook, at load.

use crate::functions::Func;
use crate::ir::{BinOp, Ir, LoopKind};
use crate::value::Const;
use crate::value::TypeName;
use celhook_schema::{Format, Schema, Type};

/// The API server's largest request body: every size bound derives from it.
pub(crate) const MAX_REQUEST_BYTES: f64 = 3.0 * 1024.0 * 1024.0;

/// What the estimator knows of a value: the schema node typing it, if any,
/// and the largest size it can have (characters, items or entries).
#[derive(Clone, Copy)]
struct Shape<'s> {
    schema: Option<&'s Schema>,
    size: f64,
}

impl<'s> Shape<'s> {
    fn of(schema: &'s Schema) -> Self {
        Shape {
            schema: Some(schema),
            size: max_size(schema),
        }
    }

    fn sized(size: f64) -> Self {
        Shape { schema: None, size }
    }

    fn unknown() -> Self {
        Shape::sized(MAX_REQUEST_BYTES)
    }

    /// The result of a call cel-go gives no size to (a string or list it
    /// cannot bound from the arguments): its largest unsigned integer, so
    /// that concatenating it prices beyond any limit, as there.
    fn unbounded() -> Self {
        Shape::sized(u64::MAX as f64)
    }

    /// The shape of elements (list items, map keys for iteration).
    fn element(&self, keys: bool) -> Shape<'s> {
        match self.schema {
            Some(s) if s.ty == Type::Array => {
                s.items.as_deref().map_or_else(Shape::unknown, Shape::of)
            }
            Some(s) if keys && s.is_map() => Shape::sized(MAX_REQUEST_BYTES),
            Some(s) => s.element().map_or_else(Shape::unknown, Shape::of),
            None => Shape::unknown(),
        }
    }
}

/// Smallest JSON text a value of this node can have: how many of them fit
/// in a request bounds unbounded lists and maps.
pub(crate) fn min_serialized_size(s: &Schema) -> f64 {
    if s.int_or_string {
        return 1.0;
    }
    match s.ty {
        Type::String => 2.0,
        Type::Integer | Type::Number => 1.0,
        Type::Boolean => 4.0,
        Type::Array => 2.0,
        // `{}` plus every required property: its name in quotes, a colon,
        // a comma and its own smallest value.
        Type::Object => {
            2.0 + s
                .required
                .iter()
                .filter_map(|name| s.property(name).map(|p| (name, p)))
                .map(|(name, p)| min_serialized_size(p) + name.len() as f64 + 4.0)
                .sum::<f64>()
        }
        Type::Any => 1.0,
    }
}

/// The largest size (characters, items, entries) a value of `s` can have.
pub(crate) fn max_size(s: &Schema) -> f64 {
    match s.ty {
        // In bytes, as the API server sizes strings: maxLength counts code
        // points, each up to 4 bytes; an enum bounds by its longest value.
        Type::String => match (&s.format, s.max_length) {
            _ if s.max_enum_bytes.is_some() => s.max_enum_bytes.unwrap_or_default() as f64,
            (_, Some(n)) => n as f64 * 4.0,
            (Format::Date, _) => 10.0,
            (Format::DateTime, _) => 64.0,
            (Format::Duration, _) => 64.0,
            _ => MAX_REQUEST_BYTES - 2.0,
        },
        Type::Array => match s.max_items {
            Some(n) => n as f64,
            None => {
                let item = s.items.as_deref().map_or(1.0, min_serialized_size);
                ((MAX_REQUEST_BYTES - 2.0) / (item + 1.0)).floor()
            }
        },
        Type::Object => match (s.max_properties, s.additional_properties.as_deref()) {
            (Some(n), _) => n as f64,
            (None, Some(v)) => ((MAX_REQUEST_BYTES - 2.0) / (min_serialized_size(v) + 6.0)).floor(),
            (None, None) => s.properties.len() as f64,
        },
        _ if s.int_or_string => MAX_REQUEST_BYTES - 2.0,
        _ => 1.0,
    }
}

/// How many times a rule on `s` can run when some enclosing list or map is
/// unbounded.
pub fn max_cardinality(s: &Schema) -> f64 {
    (MAX_REQUEST_BYTES / (min_serialized_size(s) + 1.0)).floor()
}

/// The worst-case cost of `ir` with `self` (and `oldSelf`) typed by `schema`.
pub(crate) fn estimate(ir: &Ir, schema: &Schema, slots: usize) -> f64 {
    let mut env = vec![Shape::unknown(); slots.max(2)];
    env[0] = Shape::of(schema);
    env[1] = Shape::of(schema);
    walk(ir, &mut env).0
}

fn ceil(x: f64) -> f64 {
    x.ceil()
}

fn walk<'s>(ir: &Ir, env: &mut Vec<Shape<'s>>) -> (f64, Shape<'s>) {
    match ir {
        Ir::Const(c) => (
            0.0,
            Shape::sized(match c {
                Const::Str(s) => s.chars().count() as f64,
                Const::Bytes(b) => b.len() as f64,
                _ => 1.0,
            }),
        ),
        Ir::Var(slot) => (1.0, env.get(*slot).copied().unwrap_or_else(Shape::unknown)),
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => walk(inner, env),
        Ir::Select {
            operand,
            field,
            test,
            ..
        } => {
            let (c, shape) = walk(operand, env);
            let child = match shape.schema {
                Some(s) => s
                    .property(field)
                    .or(s.additional_properties.as_deref())
                    .map_or_else(Shape::unknown, Shape::of),
                None => Shape::unknown(),
            };
            (c + if *test { 0.0 } else { 1.0 }, child)
        }
        Ir::OptSelect { operand, field } => {
            let (c, shape) = walk(operand, env);
            let child = shape
                .schema
                .and_then(|s| s.property(field).or(s.additional_properties.as_deref()))
                .map_or_else(Shape::unknown, Shape::of);
            (c + 1.0, child)
        }
        Ir::Index(a, b) | Ir::OptIndex(a, b) => {
            let (ca, sa) = walk(a, env);
            let (cb, _) = walk(b, env);
            (ca + cb + 1.0, sa.element(false))
        }
        Ir::And(a, b) | Ir::Or(a, b) => {
            let (ca, _) = walk(a, env);
            let (cb, _) = walk(b, env);
            (ca + cb, Shape::sized(1.0))
        }
        Ir::Not(a) => (walk(a, env).0 + 1.0, Shape::sized(1.0)),
        Ir::Cond(c, t, e) => {
            let (cc, _) = walk(c, env);
            let (ct, st) = walk(t, env);
            let (ce, se) = walk(e, env);
            let shape = if st.size >= se.size { st } else { se };
            (cc + ct.max(ce), shape)
        }
        Ir::Bin(op, a, b) => {
            let (ca, sa) = walk(a, env);
            let (cb, sb) = walk(b, env);
            let (own, size) = match op {
                // cel-go's estimator prices comparisons flat; only the
                // runtime charges string and bytes comparisons by length.
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => (1.0, 1.0),
                BinOp::In => (sb.size, 1.0),
                BinOp::Add => (ceil((sa.size + sb.size) * 0.1).max(1.0), sa.size + sb.size),
                _ => (1.0, 1.0),
            };
            (ca + cb + own, Shape::sized(size))
        }
        Ir::ConstList(items) => (0.0, Shape::sized(items.len() as f64)),
        Ir::List(items, _) => {
            let mut c = 0.0;
            for i in items {
                c += walk(i, env).0;
            }
            let base = if items.iter().all(|i| matches!(i, Ir::Const(_))) {
                0.0
            } else {
                10.0
            };
            (c + base, Shape::sized(items.len() as f64))
        }
        Ir::Map(entries) => {
            let mut c = 30.0;
            for (k, v, _) in entries {
                c += walk(k, env).0 + walk(v, env).0;
            }
            (c, Shape::sized(entries.len() as f64))
        }
        Ir::Matches(target, re) => {
            let (c, s) = walk(target, env);
            let own = ceil((1.0 + s.size) * 0.1) * ceil(re.as_str().chars().count() as f64 * 0.25);
            (c + own, Shape::sized(1.0))
        }
        Ir::Call(func, args) | Ir::RegexCall(func, args, _) => {
            let mut c = 0.0;
            let mut shapes = Vec::with_capacity(args.len());
            for a in args {
                let (ca, sa) = walk(a, env);
                c += ca;
                shapes.push(sa);
            }
            let (own, mut shape) = call(*func, &shapes);
            // `string(x)` has a size only from bytes (cel-go sizes that
            // overload alone); of anything else it is unbounded.
            if *func == Func::ToString && !args.first().is_some_and(|a| is_bytes(a, &shapes[0])) {
                shape = Shape::unbounded();
            }
            (c + own, shape)
        }
        Ir::Loop(l) => {
            let (cr, range) = walk(&l.range, env);
            if l.kind == LoopKind::Bind {
                env[l.var] = range;
                let (cb, sb) = walk(&l.body, env);
                return (cr + cb, sb);
            }
            let n = if matches!(l.kind, LoopKind::OptMap | LoopKind::OptFlatMap) {
                1.0
            } else {
                range.size
            };
            let two = l.var2.is_some();
            env[l.var] = if two {
                Shape::sized(MAX_REQUEST_BYTES)
            } else {
                range.element(true)
            };
            if let Some(v2) = l.var2 {
                env[v2] = range.element(false);
            }
            let cf = l.filter.as_ref().map_or(0.0, |f| walk(f, env).0);
            let (cb, sb) = walk(&l.body, env);
            let step = match l.kind {
                LoopKind::All => 3.0,
                LoopKind::Exists => 4.0,
                LoopKind::ExistsOne => 2.0,
                LoopKind::Filter => 13.0,
                LoopKind::TransformMap => 32.0,
                _ => 12.0,
            };
            let shape = match l.kind {
                LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne => Shape::sized(1.0),
                LoopKind::Filter | LoopKind::SortBy => range,
                _ => Shape::sized(n.max(sb.size.min(n))),
            };
            (cr + n * (cf + cb + step) + 2.0, shape)
        }
    }
}

/// True when `ir` (of shape `shape`) is bytes: a literal, a `bytes()`
/// call or a `format: byte` field.
fn is_bytes(ir: &Ir, shape: &Shape<'_>) -> bool {
    matches!(ir, Ir::Const(Const::Bytes(_)) | Ir::Call(Func::ToBytes, _))
        || shape
            .schema
            .is_some_and(|s| s.ty == Type::String && s.format == Format::Byte)
}

/// Cost of a call from its argument shapes, as the runtime charges it.
fn call<'s>(f: Func, args: &[Shape<'s>]) -> (f64, Shape<'s>) {
    use Func::*;
    let size = |i: usize| args.get(i).map_or(1.0, |s| s.size);
    let one = Shape::sized(1.0);
    match f {
        Lib(l) => {
            let sizes: Vec<f64> = args.iter().map(|s| s.size).collect();
            // The Kubernetes estimator sizes none of the strings and maps
            // its functions return (`format`, the url accessors).
            let result = match l.result_ty() {
                Some(TypeName::String | TypeName::Map) => Shape::unbounded(),
                _ => one,
            };
            (
                crate::functions::kubernetes::estimate_cost(l, &sizes),
                result,
            )
        }
        // cel-go sizes no `charAt` result.
        CharAt => (1.0, Shape::unbounded()),
        Find | FindAll => (
            ceil((1.0 + size(0)) * 0.1) * ceil(size(1) * 0.25),
            Shape::sized(size(0)),
        ),
        StartsWith | EndsWith | Quote | Trim => (ceil(size(0) * 0.1), one),
        LowerAscii | UpperAscii | Substring => (ceil(size(0) * 0.1), Shape::sized(size(0))),
        Contains => (ceil(size(0) * 0.1) * ceil(size(1) * 0.1), one),
        Matches => (ceil((1.0 + size(0)) * 0.1) * ceil(size(1) * 0.25), one),
        Replace | Split => (ceil(size(0) * 0.2), Shape::sized(size(0))),
        Join => (ceil(size(0) * 0.2), Shape::sized(MAX_REQUEST_BYTES)),
        IndexOf | LastIndexOf | IsSorted | Sum | Min | Max => (size(0), one),
        SetsContains | SetsEquivalent => (1.0 + size(0) * size(1), one),
        SetsIntersects => (1.0 + size(0) * size(1) * 2.0, one),
        Slice | Reverse => (size(0) + 11.0, args.first().copied().unwrap_or(one)),
        Range => (MAX_REQUEST_BYTES, Shape::sized(MAX_REQUEST_BYTES)),
        Flatten => (size(0) + 11.0, Shape::unknown()),
        Distinct | Sort => (
            size(0) * size(0) * 2.1 + 11.0,
            args.first().copied().unwrap_or(one),
        ),
        Dyn | OptOf | OptValue | OrValue => (1.0, args.first().copied().unwrap_or(one)),
        _ => (1.0, Shape::sized(size(0))),
    }
}

/// How the API server words a cost over its limit: `more than 100x`,
/// `%fx` below 1.5, `%.1fx` otherwise.
pub fn factor_text(cost: f64, limit: f64) -> String {
    let factor = cost / limit;
    if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    }
}
