//! The program tree the checker builds and the evaluator runs: variables
//! as slots, calls resolved to functions, constant regexes compiled, and
//! the marks the planner adds (memo cells, scanned loops, fused field
//! comparisons).

use std::sync::Arc;

pub(crate) use crate::operators::BinOp;
use crate::registry::Func;
use crate::value::Const;

/// A compiled expression node.
#[derive(Debug)]
pub(crate) enum Ir {
    Const(Const),
    /// A conversion of a literal (`int(10.0)`), folded when checked as
    /// cel-go's optimizer folds it: free at run time, but its estimator
    /// still prices the call.
    Folded(Box<FoldedCall>),
    Var(usize),
    /// `variables.<name>`: the composition's variable at this index,
    /// evaluated on first use (see `Composition`).
    Lazy(usize),
    Select {
        operand: Box<Ir>,
        field: Box<str>,
        test: bool,
        /// Where the checker found `field` among the properties of the
        /// operand's schema node: the evaluator tries that position first.
        position: Option<u32>,
    },
    OptSelect {
        operand: Box<Ir>,
        field: Box<str>,
    },
    Index(Box<Ir>, Box<Ir>),
    OptIndex(Box<Ir>, Box<Ir>),
    And(Box<Ir>, Box<Ir>),
    Or(Box<Ir>, Box<Ir>),
    Not(Box<Ir>),
    Cond(Box<Ir>, Box<Ir>, Box<Ir>),
    Bin(BinOp, Box<Ir>, Box<Ir>),
    /// `target.or(alt)` (`value: false`) or `target.orValue(alt)`: `alt`
    /// runs only when `target` is an empty optional, as cel-go plans them
    /// (not as calls: nothing is charged for the step itself).
    OptOr {
        target: Box<Ir>,
        alt: Box<Ir>,
        value: bool,
    },
    List(Vec<Ir>, Vec<bool>),
    /// A list literal of constants, built once: evaluating it allocates
    /// nothing (`x in ['TCP', 'UDP']`).
    ConstList(Vec<Const>),
    Map(Vec<(Ir, Ir, bool)>),
    Call(Func, Vec<Ir>),
    /// `size(x)` or `x.size()`, the call rules make most, without a general
    /// call's argument list and function pointers: a string, bytes, list
    /// or map answered here, anything else through the `size` row (for its
    /// error).
    Size(Box<Ir>),
    /// `matches` with a constant pattern, compiled at load (with the
    /// pattern's length, which prices the call).
    Matches(Box<Ir>, Arc<crate::matcher::Matcher>),
    /// Another call with a constant regex argument (`find`, `findAll`),
    /// compiled at load; see `registry::RegexArg`.
    RegexCall(Func, Vec<Ir>, Arc<regex::Regex>),
    Loop(Box<Loop>),
    /// A chain of selections on variable `var` kept in memo `cell` until
    /// the variable is bound again (see `memo`).
    Memo {
        cell: usize,
        var: usize,
        inner: Box<Ir>,
    },
    /// A chain of selections on loop variable `var` kept in memo `cell`
    /// for each JSON object the variable is bound to (see `memo`).
    ElemMemo {
        cell: usize,
        var: usize,
        inner: Box<Ir>,
    },
    /// A comparison of a variable's field with a constant, fused by the
    /// planner (see `fuse`).
    FieldCmp(Box<FieldCmp>),
    /// A comparison of two fields (of one variable, or of `self` and
    /// `oldSelf`), or of int arithmetic or a string join on fields, fused
    /// by the planner (see `fuse`).
    FieldPair(Box<FieldPair>),
}

/// `v.f <op> constant` (`p.port > 0`, `p.protocol == 'UDP'`, `p.protocol
/// in ['TCP', 'UDP']`, `self.strategy.type == 'Recreate'`): read straight
/// from the JSON objects from slot `slot` along `path` when the last field
/// holds the constant's type; `fallback`, the comparison as planned, in
/// every other case.
#[derive(Debug)]
pub(crate) struct FieldCmp {
    pub slot: usize,
    /// The first field selected, with its position as in `Ir::Select`.
    pub field: Box<str>,
    pub position: Option<u32>,
    /// The fields selected after it, in order (most often none).
    pub then: Box<[(Box<str>, Option<u32>)]>,
    pub test: FieldTest,
    /// In a fused loop body, equal for the tests that read the same field
    /// (numbered by `fuse::mark_fused_bodies`); 0 elsewhere.
    pub read: u32,
    pub fallback: Ir,
}

/// `v.f <op> w.g` outside any loop (`self.replicas <= self.maxReplicas`,
/// `self.name == oldSelf.name`, `self.a + self.b <= 100`, `self.account ==
/// self.name + '-sa'`): both fields read straight from the JSON objects the
/// variables hold when both are ints (any comparison, after any int
/// arithmetic) or both strings (`==` and `!=`, one side perhaps two strings
/// joined); `fallback`, the comparison as planned, in every other case.
#[derive(Debug)]
pub(crate) struct FieldPair {
    pub op: BinOp,
    /// Each side's variable and its fields, in order, with their positions
    /// as in `Ir::Select`.
    pub left: PairSide,
    pub right: PairSide,
    pub fallback: Ir,
}

/// One side of a [`FieldPair`].
#[derive(Debug)]
pub(crate) enum PairSide {
    /// A variable's slot, and the fields selected on it with their
    /// positions as in `Ir::Select`.
    Field(usize, Box<[(Box<str>, Option<u32>)]>),
    /// An int constant.
    Int(i64),
    /// A string constant.
    Str(Arc<str>),
    /// `+ - * / %` of two int sides (`self.limit <= self.request * 4`).
    Arith(BinOp, Box<PairSide>, Box<PairSide>),
    /// `+` of two strings, one of them a constant (`self.account ==
    /// self.name + '-sa'`).
    Join(Box<PairSide>, Box<PairSide>),
}

/// What a [`FieldCmp`] tests the field's value with.
#[derive(Debug)]
pub(crate) enum FieldTest {
    /// An int comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) with a constant.
    Int(IntRange),
    /// `==` (true) or `!=` (false) a string.
    Str(bool, Arc<str>),
    /// `in` a literal list of strings.
    OneOf(Box<[Arc<str>]>),
    /// `matches` a pattern compiled at load.
    Matches(Arc<crate::matcher::Matcher>),
    /// `size(field)` compared with an int.
    Size(IntRange),
}

/// An int comparison with a constant as the range the int must fall in
/// (or, for `!=`, out of): a test is then two compares, with no dispatch
/// on the operator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntRange {
    lo: i64,
    hi: i64,
    inside: bool,
}

impl IntRange {
    /// `x op k` as a range; `None` for an operator that does not compare.
    pub(crate) fn of(op: BinOp, k: i64) -> Option<IntRange> {
        // Empty, where no int passes (`x < i64::MIN`, `x > i64::MAX`).
        const NONE: IntRange = IntRange {
            lo: 1,
            hi: 0,
            inside: true,
        };
        let (lo, hi, inside) = match op {
            BinOp::Eq => (k, k, true),
            BinOp::Ne => (k, k, false),
            BinOp::Lt => {
                return Some(
                    k.checked_sub(1)
                        .map_or(NONE, |hi| Self::within(i64::MIN, hi)),
                )
            }
            BinOp::Le => (i64::MIN, k, true),
            BinOp::Gt => {
                return Some(
                    k.checked_add(1)
                        .map_or(NONE, |lo| Self::within(lo, i64::MAX)),
                )
            }
            BinOp::Ge => (k, i64::MAX, true),
            _ => return None,
        };
        Some(IntRange { lo, hi, inside })
    }

    fn within(lo: i64, hi: i64) -> IntRange {
        IntRange {
            lo,
            hi,
            inside: true,
        }
    }

    /// Whether `x` passes the comparison.
    #[inline(always)]
    pub(crate) fn holds(self, x: i64) -> bool {
        ((self.lo <= x) & (x <= self.hi)) == self.inside
    }
}

/// Calls `$f` on each direct child of `$ir`, in evaluation order (a loop's
/// range, filter, body): the one list of children the shared and the
/// mutable traversal (`mut` given) are both made from.
macro_rules! each_child {
    ($ir:expr, $f:ident $(, $m:tt)?) => {
        match $ir {
            Ir::Const(_) | Ir::Folded(..) | Ir::Var(_) | Ir::Lazy(_) | Ir::ConstList(_) => {}
            Ir::Select { operand, .. } | Ir::OptSelect { operand, .. } => $f(operand),
            Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => $f(inner),
            Ir::FieldCmp(c) => $f(&$($m)? c.fallback),
            Ir::FieldPair(c) => $f(&$($m)? c.fallback),
            Ir::Not(a) | Ir::Matches(a, _) | Ir::Size(a) => $f(a),
            Ir::Index(a, b)
            | Ir::OptIndex(a, b)
            | Ir::And(a, b)
            | Ir::Or(a, b)
            | Ir::Bin(_, a, b)
            | Ir::OptOr {
                target: a, alt: b, ..
            } => {
                $f(a);
                $f(b);
            }
            Ir::Cond(a, b, c) => {
                $f(a);
                $f(b);
                $f(c);
            }
            Ir::List(items, _) | Ir::Call(_, items) | Ir::RegexCall(_, items, _) => {
                for item in items {
                    $f(item);
                }
            }
            Ir::Map(entries) => {
                for (k, v, _) in entries {
                    $f(k);
                    $f(v);
                }
            }
            Ir::Loop(l) => {
                $f(&$($m)? l.range);
                if let Some(filter) = &$($m)? l.filter {
                    $f(filter);
                }
                $f(&$($m)? l.body);
            }
        }
    };
}

/// See [`Ir::chain_link`].
pub(crate) enum ChainLink<'a> {
    /// The operand, the field and its schema position.
    Field(&'a Ir, &'a str, Option<u32>),
    Var(usize),
}

/// A call folded when checked: its value, and the call as written.
#[derive(Debug)]
pub(crate) struct FoldedCall {
    pub value: Const,
    pub func: Func,
    pub arg: Const,
}

impl Ir {
    /// The constant `self` stands for: a literal, or a folded call's value.
    pub(crate) fn constant(&self) -> Option<&Const> {
        match self {
            Ir::Const(c) => Some(c),
            Ir::Folded(f) => Some(&f.value),
            _ => None,
        }
    }

    /// One link of a field chain (`v.a.b`), kept reads looked through: a
    /// field selected (not a presence test) from an operand, or the
    /// variable the chain starts from. `None` for anything else.
    pub(crate) fn chain_link(&self) -> Option<ChainLink<'_>> {
        let mut at = self;
        loop {
            return match at {
                Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => {
                    at = inner;
                    continue;
                }
                Ir::Select {
                    operand,
                    field,
                    test: false,
                    position,
                } => Some(ChainLink::Field(operand, field, *position)),
                Ir::Var(slot) => Some(ChainLink::Var(*slot)),
                _ => None,
            };
        }
    }

    /// Calls `f` on each direct child, in evaluation order, for passes
    /// that treat every node kind alike.
    pub(crate) fn each_child<'a>(&'a self, f: &mut impl FnMut(&'a Ir)) {
        each_child!(self, f)
    }

    /// As [`Ir::each_child`], for passes that rewrite the tree.
    pub(crate) fn each_child_mut(&mut self, f: &mut impl FnMut(&mut Ir)) {
        each_child!(self, f, mut)
    }
}

/// The macros that iterate or bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopKind {
    All,
    Exists,
    ExistsOne,
    /// `map(v, f)`, or `map(v, p, f)` with `filter` set.
    Map,
    Filter,
    /// `transformList(i, v, [p,] f)`.
    TransformList,
    /// `transformMap(k, v, [p,] f)`.
    TransformMap,
    /// `transformMapEntry(k, v, [p,] f)`.
    TransformMapEntry,
    SortBy,
    /// `cel.bind(v, init, body)`: `range` is the init, `var` its slot.
    Bind,
    /// `opt.optMap(v, f)`.
    OptMap,
    /// `opt.optFlatMap(v, f)`.
    OptFlatMap,
}

impl LoopKind {
    /// Whether the body runs once per element (not `cel.bind` and the
    /// optional macros, which run it at most once).
    pub(crate) fn repeats(self) -> bool {
        !matches!(
            self,
            LoopKind::Bind | LoopKind::OptMap | LoopKind::OptFlatMap
        )
    }
}

/// A macro loop over a list or map.
#[derive(Debug)]
pub(crate) struct Loop {
    pub kind: LoopKind,
    pub range: Ir,
    /// The (first) iteration variable's slot.
    pub var: usize,
    /// The second variable of two-variable forms.
    pub var2: Option<usize>,
    /// Predicate, mapping or body.
    pub body: Ir,
    /// The filter of `map(v, p, f)` and of the transform forms.
    pub filter: Option<Ir>,
    /// Set by the memo pass when the body compares a field of the element
    /// with a value the loop does not change (see `memo::Scan`).
    pub scan: Option<crate::ir::Scan>,
    /// Set by the fusing pass when the body is `&&`, `||` and `!` of fused
    /// comparisons of the element's fields (see `fuse::mark_fused_bodies`).
    pub fused_body: bool,
    /// Set by the planner when the body is a scanned loop answered from
    /// counted reads, run again for each element (see
    /// `plan::mark_counted_bodies`).
    pub counted_body: bool,
    /// With `counted_body`: the outer element's field the inner loop
    /// compares with is the one the inner loop reads of its own elements
    /// (the same chain of fields), as in a uniqueness check
    /// (`L.all(p, L.exists_one(q, q.name == p.name))`).
    pub counted_same: bool,
}

/// The memo cells a program needs, of each kind.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cells {
    /// Kept per binding of the variable (`Ir::Memo`).
    pub by_binding: usize,
    /// Kept per element the variable is bound to (`Ir::ElemMemo`).
    pub by_element: usize,
    /// Element reads of scanned loops ([`Scan`]).
    pub by_scan: usize,
}

/// A loop whose body the evaluator can run over kept element reads (see
/// the module comment): its shape, mirroring the body's tree.
#[derive(Debug)]
pub(crate) struct Scan {
    /// The evaluator's cell that keeps the element reads of one list.
    pub cell: usize,
    /// Reads kept per element (chains on the element read twice share one).
    pub slots: usize,
    /// Comparisons, each with its other side evaluated once per run.
    pub compares: usize,
    pub body: ScanExpr,
}

/// The body of a [`Scan`], node for node over the loop body's `Ir`.
#[derive(Debug)]
pub(crate) enum ScanExpr {
    And(Box<ScanExpr>, Box<ScanExpr>),
    Or(Box<ScanExpr>, Box<ScanExpr>),
    Not(Box<ScanExpr>),
    /// An `Ir::Bin` comparison: one side reads only the element (kept in
    /// `slot`), the other does not read it (kept per run in `compare`).
    Compare {
        slot: usize,
        compare: usize,
        element_left: bool,
    },
    /// A boolean that reads only the element, kept whole in `slot`.
    Pred {
        slot: usize,
    },
}
