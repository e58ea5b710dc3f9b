//! The static worst-case cost of a compiled program, with the unit costs of
//! the runtime (`cost.rs`) and sizes bounded by the schema (`maxLength`,
//! `maxItems`, `maxProperties`, else what fits in the API server's largest
//! request). Kubernetes refuses rules whose estimate passes its limits; so
//! does celhook, at load.

use crate::environment::{Environment, Version};
use crate::ir::{BinOp, Ir, Loop, LoopKind};
use crate::library::conversions;
use crate::registry::Func;
use crate::shape::{is_scalar_schema, min_serialized_size, Compared, Shape, MAX_REQUEST_BYTES};
use crate::value::Const;
use crate::value::TypeName;
use celhook_schema::{Format, Schema, Type};

/// How many times a rule on `s` can run when some enclosing list or map is
/// unbounded.
pub fn max_cardinality(s: &Schema) -> f64 {
    (MAX_REQUEST_BYTES / (min_serialized_size(s) + 1.0)).floor()
}

/// The worst-case cost of `ir` with `self` (and `oldSelf`) typed by `schema`.
/// Sizes and prices follow the estimators of Kubernetes `1.<version>`.
pub(crate) fn estimate(ir: &Ir, schema: &Schema, slots: usize, env: &Environment) -> f64 {
    let version = env.api_server;
    let text_size = env.unknown_text_size.map(f64::from);
    let mut env = vec![Shape::unknown(); slots.max(2)];
    env[0] = Shape::of(schema);
    env[1] = Shape::of(schema);
    let root_size = node_size(schema, env[0].size);
    walk(
        ir,
        &mut Cx {
            env,
            version,
            root_size,
            text_size,
        },
    )
    .0
}

/// The estimator's state: the shapes of the variables, the version, and
/// the size the Kubernetes size estimator gives the rule's own node.
struct Cx<'s> {
    env: Vec<Shape<'s>>,
    version: Version,
    /// The size the Kubernetes size estimator gives the rule's own node.
    root_size: f64,
    /// See [`Environment::unknown_text_size`].
    text_size: Option<f64>,
}

impl Cx<'_> {
    /// The size of a value whose path the size estimator resolves to the
    /// rule's own node (an element of a literal, a loop variable over one):
    /// that node's size, or in upstream's library tests 12 for a string or
    /// bytes and 1 for anything else.
    fn pathless_size(&self, text: bool) -> f64 {
        match self.text_size {
            Some(n) if text => n,
            Some(_) => 1.0,
            None => self.root_size,
        }
    }

    /// `shape` as a value whose path is the element step (or its name)
    /// alone, which resolves to the rule's own node.
    fn via_root<'s>(&self, mut shape: Shape<'s>) -> Shape<'s> {
        shape.size = self.pathless_size(shape.is_text());
        shape.via_root = true;
        shape
    }
}

/// Whether cel-go's estimator knows a schema path for `ir`: a variable, or
/// a field read or an index of something.
fn has_path(ir: &Ir) -> bool {
    match ir {
        Ir::Var(_) | Ir::Select { .. } | Ir::Index(..) => true,
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => has_path(inner),
        Ir::FieldCmp(c) => has_path(&c.fallback),
        Ir::FieldPair(c) => has_path(&c.fallback),
        _ => false,
    }
}

/// Of two branches' shapes, the one of the larger size.
fn larger<'s>(a: Shape<'s>, b: Shape<'s>) -> Shape<'s> {
    if a.size >= b.size {
        a
    } else {
        b
    }
}

/// A list: a list field or a list literal.
fn is_list(shape: &Shape<'_>) -> bool {
    shape.items.is_some() || shape.schema.is_some_and(|s| s.ty == Type::Array)
}

/// A map: an object field with `additionalProperties`.
fn is_map(shape: &Shape<'_>) -> bool {
    shape.schema.is_some_and(|s| s.is_map())
}

/// A literal's size: characters of a string, bytes of bytes, else 1.
fn const_shape(c: &Const) -> Shape<'static> {
    let mut shape = Shape::sized(match c {
        Const::Str(s) => s.chars().count() as f64,
        Const::Bytes(b) => b.len() as f64,
        _ => 1.0,
    });
    shape.text = matches!(c, Const::Str(_) | Const::Bytes(_));
    shape
}

fn ceil(x: f64) -> f64 {
    x.ceil()
}

fn walk<'s>(ir: &Ir, cx: &mut Cx<'s>) -> (f64, Shape<'s>) {
    match ir {
        Ir::Const(c) => (0.0, const_shape(c)),
        // Priced as the call cel-go's estimator sees.
        Ir::Folded(folded) => {
            let mut arg = const_shape(&folded.arg);
            arg.bytes = matches!(folded.arg, Const::Bytes(_));
            let (cost, mut shape) = priced_call(folded.func, &[arg], cx);
            shape.text |= matches!(folded.value, Const::Str(_) | Const::Bytes(_));
            (cost, shape)
        }
        Ir::Var(slot) => (
            1.0,
            cx.env.get(*slot).copied().unwrap_or_else(Shape::unknown),
        ),
        // `variables` and the selection of the variable.
        Ir::Lazy(_) => (2.0, Shape::unknown()),
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => walk(inner, cx),
        Ir::FieldCmp(c) => walk(&c.fallback, cx),
        Ir::FieldPair(c) => walk(&c.fallback, cx),
        Ir::Select {
            operand,
            field,
            test,
            ..
        } => {
            let (c, shape) = walk(operand, cx);
            let mut child = select_shape(&shape, field);
            // A field of an optional is an optional.
            child.optional = shape.optional && !*test;
            (c + if *test { 0.0 } else { 1.0 }, child)
        }
        Ir::OptSelect { operand, field } => {
            let (c, shape) = walk(operand, cx);
            let mut child = select_shape(&shape, field);
            child.optional = true;
            (c + 1.0, child)
        }
        Ir::Index(a, b) | Ir::OptIndex(a, b) => {
            let (ca, sa) = walk(a, cx);
            let (cb, _) = walk(b, cx);
            let mut element = sa.element(false);
            element.optional = sa.optional || matches!(ir, Ir::OptIndex(..));
            (ca + cb + 1.0, element)
        }
        Ir::OptOr { target, alt, value } => {
            let (ct, st) = walk(target, cx);
            let (ca, sa) = walk(alt, cx);
            // cel-go's estimator prices `or` and `orValue` as calls.
            let mut shape = larger(st, sa);
            shape.optional = !*value;
            (ct + ca + 1.0, shape)
        }
        Ir::And(a, b) | Ir::Or(a, b) => {
            let (ca, _) = walk(a, cx);
            let (cb, _) = walk(b, cx);
            (ca + cb, Shape::sized(1.0))
        }
        Ir::Not(a) => (walk(a, cx).0 + 1.0, Shape::sized(1.0)),
        Ir::Cond(c, t, e) => {
            let (cc, _) = walk(c, cx);
            let (ct, st) = walk(t, cx);
            let (ce, se) = walk(e, cx);
            (cc + ct.max(ce), larger(st, se))
        }
        Ir::Bin(op, a, b) => {
            let (ca, sa) = walk(a, cx);
            let (cb, sb) = walk(b, cx);
            let (own, size) = match op {
                // Equality by the smaller side's size, a tenth per unit; the
                // API server sizes a scalar field 0 and a literal 1.
                BinOp::Eq | BinOp::Ne => (equality_cost(&sa, &sb, cx.version), 1.0),
                // Orderings flat; only the runtime charges string and
                // bytes orderings by length.
                BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => (1.0, 1.0),
                // `in` a list scans it; `in` a map is one lookup.
                BinOp::In if is_map(&sb) => (1.0, 1.0),
                BinOp::In => (sb.size, 1.0),
                // Lists concatenate in one step, keeping their elements.
                BinOp::Add if is_list(&sa) || is_list(&sb) => {
                    let mut joined = Shape::sized(sa.size + sb.size);
                    joined.items = sa.items.or(sb.items);
                    return (ca + cb + 1.0, joined);
                }
                BinOp::Add => (ceil((sa.size + sb.size) * 0.1).max(1.0), sa.size + sb.size),
                _ => (1.0, 1.0),
            };
            (ca + cb + own, Shape::sized(size))
        }
        // cel-go's estimator prices a list literal at 10 even when its
        // runtime builds it once. A call that traverses it asks the
        // Kubernetes size estimator for its elements' size by their path,
        // the element step alone, which resolves to the rule's own node.
        Ir::ConstList(items) => {
            let mut shape = Shape::sized(items.len() as f64);
            let text = items
                .iter()
                .all(|c| matches!(c, Const::Str(_) | Const::Bytes(_)));
            let text = text && !items.is_empty();
            shape.items = Some((cx.pathless_size(text), text));
            (10.0, shape)
        }
        Ir::List(items, _) => {
            let mut c = 0.0;
            let mut text = !items.is_empty();
            for i in items {
                let (ci, si) = walk(i, cx);
                c += ci;
                text &= si.is_text();
            }
            let mut shape = Shape::sized(items.len() as f64);
            shape.items = Some((cx.pathless_size(text), text));
            (c + 10.0, shape)
        }
        Ir::Map(entries) => {
            let mut c = 30.0;
            for (k, v, _) in entries {
                c += walk(k, cx).0 + walk(v, cx).0;
            }
            (c, Shape::sized(entries.len() as f64))
        }
        Ir::Matches(target, re) => {
            let (c, s) = walk(target, cx);
            let own = ceil((1.0 + s.size) * 0.1) * ceil(f64::from(re.pattern_len()) * 0.25);
            (c + own, Shape::sized(1.0))
        }
        Ir::Size(arg) => {
            let (c, mut s) = walk(arg, cx);
            s.bytes = is_bytes(arg, &s);
            let (own, shape) = priced_call(&crate::library::core::SIZE, &[s], cx);
            (c + own, shape)
        }
        Ir::Call(func, args) | Ir::RegexCall(func, args, _) => {
            let mut c = 0.0;
            let mut shapes = Vec::with_capacity(args.len());
            for a in args {
                let (ca, mut sa) = walk(a, cx);
                c += ca;
                sa.bytes = is_bytes(a, &sa);
                shapes.push(sa);
            }
            let (own, shape) = priced_call(func, &shapes, cx);
            (c + own, shape)
        }
        Ir::Loop(l) => {
            let (cr, range) = walk(&l.range, cx);
            if l.kind == LoopKind::Bind {
                cx.env[l.var] = range;
                let (cb, sb) = walk(&l.body, cx);
                return (cr + cb, sb);
            }
            if matches!(l.kind, LoopKind::OptMap | LoopKind::OptFlatMap) {
                return optional_map(l, cr, range, cx);
            }
            let n = range.size;
            let two = l.var2.is_some();
            cx.env[l.var] = if two {
                Shape::sized(MAX_REQUEST_BYTES)
            } else if has_path(&l.range) {
                range.element(true)
            } else {
                cx.via_root(range.element(true))
            };
            if let Some(v2) = l.var2 {
                let mut value = range.element(false);
                if !has_path(&l.range) {
                    value = cx.via_root(value);
                }
                cx.env[v2] = value;
            }
            let cf = l.filter.as_ref().map_or(0.0, |f| walk(f, cx).0);
            let (cb, sb) = walk(&l.body, cx);
            let step = match l.kind {
                LoopKind::All => 3.0,
                LoopKind::Exists => 4.0,
                LoopKind::ExistsOne => 2.0,
                LoopKind::Filter => 13.0,
                LoopKind::TransformMap => 3.0,
                LoopKind::TransformMapEntry => 2.0,
                _ => 12.0,
            };
            let shape = match l.kind {
                LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne => Shape::sized(1.0),
                LoopKind::Filter | LoopKind::SortBy => range,
                // A list built by `map` has elements of the body's shape.
                LoopKind::Map | LoopKind::TransformList => {
                    let mut shape = Shape::sized(n);
                    shape.items = Some((sb.size, sb.is_text()));
                    shape
                }
                _ => Shape::sized(n.max(sb.size.min(n))),
            };
            // After the loop: the result, and the accumulator's start where
            // the estimator prices it (a list or map literal; `exists_one`
            // compares its count with 1).
            let after = match l.kind {
                LoopKind::ExistsOne => 2.0,
                LoopKind::Map | LoopKind::Filter | LoopKind::TransformList => 11.0,
                LoopKind::TransformMap | LoopKind::TransformMapEntry => 31.0,
                _ => 1.0,
            };
            (cr + n * (cf + cb + step) + after, shape)
        }
    }
}

/// The shape of field `field` of a value of shape `shape`.
fn select_shape<'s>(shape: &Shape<'s>, field: &str) -> Shape<'s> {
    match shape.schema {
        Some(s) => match (s.property(field), shape.pathless) {
            (Some(p), false) => Shape::of(p),
            (Some(p), true) => Shape::pathless(p),
            // A map's value read as a field: the size estimator follows no
            // such path.
            (None, _) => s
                .additional_properties
                .as_deref()
                .map_or_else(Shape::unknown, Shape::pathless),
        },
        None => Shape::unknown(),
    }
}

/// A call's estimate from its row, and what its result type tells the
/// estimator about equality with the result.
fn priced_call<'s>(func: Func, shapes: &[Shape<'s>], cx: &Cx<'s>) -> (f64, Shape<'s>) {
    let (own, mut shape) = (func.estimate)(shapes);
    match func.result {
        Some(TypeName::Type) => shape.compared = Compared::Unsized,
        Some(TypeName::Quantity | TypeName::Ip | TypeName::Cidr | TypeName::Semver) => {
            shape.compared = Compared::Unit
        }
        Some(TypeName::NamedFormat) => shape.compared = Compared::Format,
        Some(TypeName::Url) => {
            shape.compared = Compared::Url;
            // From 1.32 a URL is sized as the text it was parsed from.
            if cx.version >= 32 {
                shape.size = shapes.first().map_or(1.0, |s| s.size);
            }
        }
        Some(TypeName::Optional) => shape.optional = true,
        _ => {}
    }
    (own, shape)
}

/// `t.optMap(v, e)` and `t.optFlatMap(v, e)` (target priced `ct`, of
/// shape `target`), as cel-go expands them: `t.hasValue() ?
/// optional.of(<v bound to t.value() in e>) : optional.none()` (no
/// `optional.of` for `optFlatMap`), the target priced twice and the
/// binding's empty range literal at 10.
fn optional_map<'s>(l: &Loop, ct: f64, target: Shape<'s>, cx: &mut Cx<'s>) -> (f64, Shape<'s>) {
    let mut value = target;
    value.optional = false;
    if cx.version < 33 {
        // A comprehension's variable: its path (its name alone) resolves
        // to the rule's own node.
        value = cx.via_root(value);
    } else if !is_scalar(&value) {
        // A binding of a call's result: no path, and no size unless a
        // scalar's.
        value.compared = Compared::Unsized;
    }
    cx.env[l.var] = value;
    let (cb, sb) = walk(&l.body, cx);
    let wrap = if l.kind == LoopKind::OptMap { 1.0 } else { 0.0 };
    let mut shape = sb;
    shape.optional = true;
    (ct + 1.0 + (wrap + 10.0 + ct + 1.0 + cb).max(1.0), shape)
}

/// The largest size, which an equality with a value cel-go cannot size is
/// priced by.
const UNSIZED: f64 = u64::MAX as f64;

/// The Kubernetes limit on a format name's length, which prices an
/// equality of two named formats.
const MAX_FORMAT_SIZE: f64 = 64.0;

/// The estimate of `a == b` (or `!=`) at Kubernetes `1.<version>`.
fn equality_cost(a: &Shape<'_>, b: &Shape<'_>, version: Version) -> f64 {
    if version >= 32 && !a.optional && !b.optional && a.compared == b.compared {
        match a.compared {
            Compared::Unit => return 1.0,
            Compared::Format => return ceil(MAX_FORMAT_SIZE * 0.1),
            // The right-hand side's size on both sides, as upstream has it.
            Compared::Url => return ceil(b.size.max(1.0) * 0.1),
            Compared::Size | Compared::Unsized => {}
        }
    }
    ceil(equality_size(a, version).min(equality_size(b, version)) * 0.1)
}

/// The size cel-go's estimator compares on equality: the Kubernetes size
/// estimator gives a number or boolean field no elements; an optional is
/// sized only when it holds a scalar (from 1.33); a value of another kind
/// is unsized.
fn equality_size(shape: &Shape<'_>, version: Version) -> f64 {
    if shape.optional {
        return if version >= 33 && is_scalar(shape) {
            1.0
        } else {
            UNSIZED
        };
    }
    if shape.compared != Compared::Size {
        return UNSIZED;
    }
    if shape.pathless || shape.via_root {
        return shape.size;
    }
    shape
        .schema
        .map_or(shape.size, |s| node_size(s, shape.size))
}

/// The size the Kubernetes size estimator gives a node of `s` whose values
/// are at most `size` large: none for a number, a boolean or an object
/// with properties (not a map).
fn node_size(s: &Schema, size: f64) -> f64 {
    match s.ty {
        Type::Object if !s.is_map() => 0.0,
        Type::Integer | Type::Number | Type::Boolean if !s.int_or_string => 0.0,
        _ => size,
    }
}

/// A value of fixed size to cel-go: a number, boolean, timestamp or
/// duration.
fn is_scalar(shape: &Shape<'_>) -> bool {
    shape.compared == Compared::Size
        && !shape.is_text()
        && shape.items.is_none()
        && shape.schema.map_or(shape.size <= 1.0, is_scalar_schema)
}

/// True when `ir` (of shape `shape`) is bytes: a literal, a `bytes()`
/// call or a `format: byte` field.
fn is_bytes(ir: &Ir, shape: &Shape<'_>) -> bool {
    matches!(ir, Ir::Const(Const::Bytes(_)))
        || matches!(ir, Ir::Call(f, _) if *f == &conversions::BYTES)
        || shape
            .schema
            .is_some_and(|s| s.ty == Type::String && s.format == Format::Byte)
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
