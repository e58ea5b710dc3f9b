//! The function registry's row: everything the engine knows of one CEL
//! function, in one value. The checker reads its arities and signature,
//! the planner its folding and regex argument, the evaluator its
//! implementation and runtime cost, the estimator its static cost, and
//! the error path its "no such overload" wording. The rows themselves live
//! in `library/`, one file per library.

use std::fmt;
use std::rc::Rc;

use regex::Regex;

use crate::shape::Shape;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::LibValue;
use crate::value::{size, TypeName, Value};

/// A function of the library, as the program tree refers to it.
pub type Func = &'static Function;

/// The Kubernetes minor version an overload or function first exists in,
/// for CRD rules (the API server's `StoredExpressions` environment).
pub type Since = u32;

/// The checker's part of a row: the result type for argument types.
pub type Signature = for<'s> fn(&[Ty<'s>]) -> Option<Ty<'s>>;

/// How the checker types a call of a row.
#[derive(Clone, Copy)]
pub enum Check {
    /// Any arguments; the result typed by the row's `result`.
    Any,
    /// The argument types (target first) the function takes, each typed
    /// by the row's `result`: a family of rows can share the argument
    /// check while each names its own result.
    Accepts(fn(&[Ty<'_>]) -> bool),
    /// The result type for argument types, or `None` for "found no
    /// matching overload".
    Signature(Signature),
}

/// The evaluator's part of a row: the call itself.
pub type Implementation = for<'a> fn(&[Value<'a>]) -> Result<Value<'a>, EvalError>;

/// The estimator's part of a row: static cost and result shape.
pub type Estimate = for<'s> fn(&[Shape<'s>]) -> (f64, Shape<'s>);

/// One CEL function. Dispatch among its overloads on argument types
/// happens inside `call` (and `check`, for static types), as cel-go
/// resolves overloads of `dyn` arguments at run time.
pub struct Function {
    /// The CEL name (`contains`, `lists.range`, `-_` for negation).
    pub name: &'static str,
    /// Arities as a member call (`x.f(..)`, the target not counted).
    pub member: &'static [usize],
    /// Arities as a global call.
    pub global: &'static [usize],
    /// The Kubernetes minor from which CRD rules can call the function.
    pub since: Since,
    /// cel-go's overload ids, separated by spaces; an id that arrived
    /// after the function's `since` carries its own minor (`cidr_ip@30`).
    pub overloads: &'static str,
    /// The static result type where one overload set fixes it.
    pub result: Option<TypeName>,
    /// The argument types accepted (target first) and the result type
    /// they give. Dyn arguments match anything.
    pub check: Check,
    /// The implementation, with the target first for member calls.
    pub call: Implementation,
    /// A regular-expression argument compiled at load when constant.
    pub regex: Option<RegexArg>,
    /// The runtime charge from the arguments and the result.
    pub cost: fn(&[Value<'_>], &Value<'_>) -> u64,
    /// From API server `1.<since>` on, the same function as `row`, which
    /// differs only in how cel-go charges it there.
    pub charged_from: Option<(Since, Func)>,
    /// The charge when it is known before the call runs, for calls whose
    /// work or result grows faster than their arguments: the evaluator
    /// stops before running one that would pass the limit.
    pub cost_before: Option<fn(&[Value<'_>]) -> u64>,
    /// The static cost and result shape from the argument shapes.
    pub estimate: Estimate,
    /// cel-go folds the call when its arguments are constants: the
    /// runtime charges nothing for it.
    pub folds: bool,
    /// A type conversion (`int()`, `string()`, `dyn()`, `type()`, ...).
    pub conversion: bool,
    /// How a call with no matching overload is reported at run time.
    pub wording: Wording,
    /// A function of MutatingAdmissionPolicy expressions only (the
    /// JSONPatch library): environments without `mutating` lack it.
    pub mutating: bool,
    /// Before this minor the function is behind a feature gate that is
    /// off by default: only environments with `gated_features` have it.
    pub gated_until: Since,
}

/// A function whose argument `arg` (target first) is a regular expression.
pub struct RegexArg {
    pub arg: usize,
    /// The call with the pattern compiled (the pattern argument unread).
    pub call: for<'a> fn(&[Value<'a>], &Regex) -> Result<Value<'a>, EvalError>,
    /// cel-go prefixes compile errors with `Illegal regex: ` (`find`,
    /// `findAll`), or gives Go's text as is (`matches`).
    pub illegal_prefix: bool,
}

/// How cel-go words a call whose arguments match no overload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wording {
    /// `no such overload`: the standard library's one-overload functions.
    Bare,
    /// `no such overload: size`.
    Name,
    /// `no such overload: f(int, string)`.
    NameAndTypes,
    /// Negation: bare on scalars, `no such overload: -_` on null, lists
    /// and maps.
    Negation,
}

impl Function {
    /// The defaults rows start from: a unit cost, a result sized like the
    /// first argument, the bare wording.
    pub const BASE: Function = Function {
        name: "",
        member: &[],
        global: &[],
        since: 0,
        overloads: "",
        result: None,
        check: Check::Any,
        call: no_call,
        regex: None,
        cost: unit_cost,
        charged_from: None,
        cost_before: None,
        estimate: unit_sized_like_first,
        folds: false,
        conversion: false,
        wording: Wording::NameAndTypes,
        mutating: false,
        gated_until: 0,
    };

    // The rows are built from a base row by these methods, one per
    // field, so that each row reads as a short chain of what sets it
    // apart.

    /// The CEL name, the Kubernetes minor it exists from and cel-go's
    /// overload ids (see [`Function::overload_ids`]).
    pub const fn named(
        self,
        name: &'static str,
        since: Since,
        overloads: &'static str,
    ) -> Function {
        Function {
            name,
            since,
            overloads,
            ..self
        }
    }

    /// The arities of member calls (the target not counted).
    pub const fn member_arities(self, member: &'static [usize]) -> Function {
        Function { member, ..self }
    }

    /// The arities of global calls.
    pub const fn global_arities(self, global: &'static [usize]) -> Function {
        Function { global, ..self }
    }

    /// The static result type.
    pub const fn returns(self, result: TypeName) -> Function {
        Function {
            result: Some(result),
            ..self
        }
    }

    /// The signature check.
    pub const fn checks(self, check: Signature) -> Function {
        Function {
            check: Check::Signature(check),
            ..self
        }
    }

    /// The argument types taken, the result typed by `result`.
    pub const fn accepts(self, accepts: fn(&[Ty<'_>]) -> bool) -> Function {
        Function {
            check: Check::Accepts(accepts),
            ..self
        }
    }

    /// No signature check: any arguments, the result typed by `result`.
    pub const fn unchecked(self) -> Function {
        Function {
            check: Check::Any,
            ..self
        }
    }

    /// The implementation.
    pub const fn calls(self, call: Implementation) -> Function {
        Function { call, ..self }
    }

    /// A regular-expression argument compiled at load when constant.
    pub const fn regex(self, regex: RegexArg) -> Function {
        Function {
            regex: Some(regex),
            ..self
        }
    }

    /// The runtime charge.
    pub const fn costs(self, cost: fn(&[Value<'_>], &Value<'_>) -> u64) -> Function {
        Function { cost, ..self }
    }

    /// A function of MutatingAdmissionPolicy expressions only.
    pub const fn for_mutating_policies(self) -> Function {
        Function {
            mutating: true,
            ..self
        }
    }

    /// Behind a feature gate, off by default until `1.<minor>`.
    pub const fn gated_until(self, minor: Since) -> Function {
        Function {
            gated_until: minor,
            ..self
        }
    }

    /// From API server `1.<since>` on, `row` (this row charged otherwise)
    /// stands for it.
    pub const fn charged_from(self, since: Since, row: Func) -> Function {
        Function {
            charged_from: Some((since, row)),
            ..self
        }
    }

    /// The row the API server `1.<version>` runs for this one.
    pub fn as_run_by(&'static self, version: Since) -> Func {
        match self.charged_from {
            Some((since, row)) if version >= since => row,
            _ => self,
        }
    }

    /// The charge known before the call runs.
    pub const fn costs_before(self, before: fn(&[Value<'_>]) -> u64) -> Function {
        Function {
            cost_before: Some(before),
            ..self
        }
    }

    /// The static estimate.
    pub const fn estimates(self, estimate: Estimate) -> Function {
        Function { estimate, ..self }
    }

    /// Folded by cel-go on constant arguments (no runtime charge).
    pub const fn folded(self) -> Function {
        Function {
            folds: true,
            ..self
        }
    }

    /// A type conversion.
    pub const fn a_conversion(self) -> Function {
        Function {
            conversion: true,
            ..self
        }
    }

    /// How a missing overload is worded.
    pub const fn worded(self, wording: Wording) -> Function {
        Function { wording, ..self }
    }

    /// cel-go's overload ids with the Kubernetes minor each exists from.
    pub fn overload_ids(&self) -> impl Iterator<Item = (&'static str, Since)> + '_ {
        self.overloads
            .split_whitespace()
            .map(|id| match id.split_once('@') {
                Some((id, minor)) => (id, minor.parse().unwrap_or(Since::MAX)),
                None => (id, self.since),
            })
    }

    /// True when `name` has an overload of this arity and call style.
    pub fn takes(&self, member: bool, arity: usize) -> bool {
        if member {
            self.member.contains(&arity)
        } else {
            self.global.contains(&arity)
        }
    }

    /// The result type of a call with these argument types (target
    /// first), or `None` when no overload matches.
    pub fn typed<'s>(&self, args: &[Ty<'s>]) -> Option<Ty<'s>> {
        let result = || self.result.map_or(Ty::Dyn, Ty::of_name);
        match self.check {
            Check::Any => Some(result()),
            Check::Accepts(accepts) => accepts(args).then(result),
            Check::Signature(check) => check(args),
        }
    }

    /// Calls the function, worded as cel-go words a missing overload.
    pub fn invoke<'a>(&'static self, args: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
        (self.call)(args).map_err(|e| self.reword(e, args))
    }

    /// Calls with the regex argument compiled (see [`RegexArg`]).
    pub fn invoke_with_regex<'a>(
        &'static self,
        args: &[Value<'a>],
        re: &Regex,
    ) -> Result<Value<'a>, EvalError> {
        match &self.regex {
            Some(r) => (r.call)(args, re),
            None => Err(EvalError::no_overload()),
        }
    }

    /// Compiles `pattern` with Go's RE2 semantics for this function; the
    /// error is the one the function reports at run time.
    pub fn compile_regex(&self, pattern: &str) -> Result<Regex, EvalError> {
        let prefix = self.regex.as_ref().is_some_and(|r| r.illegal_prefix);
        crate::interrupt::regex(pattern, crate::re2::compile).map_err(|e| {
            if prefix {
                EvalError::new(format!("Illegal regex: {e}"))
            } else {
                EvalError::new(e)
            }
        })
    }

    fn reword(&self, e: EvalError, args: &[Value<'_>]) -> EvalError {
        if e.kind != crate::ErrorKind::NoSuchOverload || e.message != "no such overload" {
            return e;
        }
        match self.wording {
            Wording::Bare => e,
            Wording::Name => EvalError::no_overload_of(self.name),
            Wording::Negation => match args.first() {
                Some(Value::Null | Value::List(_) | Value::Map(_)) => {
                    EvalError::no_overload_of(self.name)
                }
                _ => e,
            },
            Wording::NameAndTypes => {
                let types: Vec<&str> = args.iter().map(|a| a.type_name().name()).collect();
                EvalError::no_overload_of(&format!("{}({})", self.name, types.join(", ")))
            }
        }
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Func({})", self.name)
    }
}

// Rows are statics, one address each: a row is equal only to itself.
impl PartialEq for Function {
    fn eq(&self, other: &Function) -> bool {
        std::ptr::eq(self, other)
    }
}

// === helpers the rows share ===

/// The error of a call whose arguments match no overload.
pub fn overload() -> EvalError {
    EvalError::no_overload()
}

/// The first argument (the target of a member call).
pub fn first<'v, 'a>(args: &'v [Value<'a>]) -> Result<&'v Value<'a>, EvalError> {
    args.first().ok_or_else(overload)
}

pub fn int_arg(v: &Value<'_>) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        _ => Err(overload()),
    }
}

pub fn str_arg<'v>(v: &'v Value<'_>) -> Result<&'v str, EvalError> {
    match v {
        Value::Str(s) => Ok(s),
        _ => Err(overload()),
    }
}

pub fn list_arg<'v, 'a>(v: &'v Value<'a>) -> Result<&'v crate::value::List<'a>, EvalError> {
    match v {
        Value::List(l) => Ok(l),
        _ => Err(overload()),
    }
}

/// The value of a Kubernetes library type an argument holds.
pub fn lib_arg<'v>(v: &'v Value<'_>) -> Result<&'v LibValue, EvalError> {
    match v {
        Value::Lib(l) => Ok(l),
        _ => Err(overload()),
    }
}

/// A value of a Kubernetes library type, as a CEL value.
pub fn lib_value(v: LibValue) -> Value<'static> {
    Value::Lib(Rc::new(v))
}

/// The `i`th argument, or an overload error.
pub fn arg<'v, 'a>(args: &'v [Value<'a>], i: usize) -> Result<&'v Value<'a>, EvalError> {
    args.get(i).ok_or_else(overload)
}

fn no_call<'a>(_: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    Err(overload())
}

/// cel-go's default charge for a call.
pub fn unit_cost(_: &[Value<'_>], _: &Value<'_>) -> u64 {
    1
}

/// `ceil(n * factor)` of the floating-point product, as cel-go scales
/// sizes into costs. Without `f64::ceil`, a library call on targets
/// without SSE4.1's rounding: the product truncated, and one more when
/// that dropped a fraction (`n` and `factor` are never negative; a product
/// past `u64::MAX` saturates, as the cast of the ceiling does).
#[inline]
pub fn scaled(n: u64, factor: f64) -> u64 {
    let x = n as f64 * factor;
    let t = x as u64;
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

/// The charge of reading the first argument (the target) once: a tenth
/// of its size.
pub fn tenth_of_target(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    scaled(arg_size(a, 0), 0.1)
}

/// The charge of traversing a value element by element: a tenth of a
/// string's or bytes' length, 1 per other element.
pub fn traversal(v: &Value<'_>) -> u64 {
    match v {
        Value::Str(s) => (s.len() as f64 * 0.1) as u64,
        Value::Bytes(b) => (b.len() as f64 * 0.1) as u64,
        Value::List(l) => l.iter().map(|e| traversal(&e)).sum(),
        Value::Map(m) => m
            .entries()
            .iter()
            .map(|(k, v)| traversal(k) + traversal(v))
            .sum(),
        _ => 1,
    }
}

/// The CEL size of argument `i` (1 when absent).
pub fn arg_size(args: &[Value<'_>], i: usize) -> u64 {
    args.get(i).map_or(1, size)
}

/// The estimate of a call cel-go prices at 1, sized like its first argument.
pub fn unit_sized_like_first<'s>(args: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (1.0, Shape::sized(shape_size(args, 0)))
}

/// The estimate of a call priced at 1 with a scalar result.
pub fn unit_scalar<'s>(_: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (1.0, Shape::sized(1.0))
}

/// The estimate of a call priced at 1 whose result cel-go does not size.
pub fn unit_unbounded<'s>(_: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (1.0, Shape::unbounded())
}

/// The estimate of [`tenth_of_target`], with a scalar result.
pub fn tenth_of_target_scalar<'s>(args: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (shape_scaled(args, 0, 0.1), Shape::sized(1.0))
}

/// The largest size of argument `i` (1 when absent).
pub fn shape_size(args: &[Shape<'_>], i: usize) -> f64 {
    args.get(i).map_or(1.0, |s| s.size)
}

/// The static counterpart of [`scaled`]: `ceil(size * factor)` of the
/// largest size of argument `i`.
pub fn shape_scaled(args: &[Shape<'_>], i: usize, factor: f64) -> f64 {
    (shape_size(args, i) * factor).ceil()
}

/// Whether argument types (target first) match `want`, one predicate per
/// argument; a dyn argument matches anything.
pub fn sig(args: &[Ty<'_>], want: &[fn(&Ty<'_>) -> bool]) -> bool {
    want.len() == args.len() && want.iter().zip(args).all(|(ok, a)| a.is_dyn() || ok(a))
}

pub fn is_string(t: &Ty<'_>) -> bool {
    matches!(t, Ty::String)
}

pub fn is_int(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Int)
}

pub fn is_list(t: &Ty<'_>) -> bool {
    matches!(t, Ty::List(_))
}

pub fn is_bool(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Bool)
}

#[cfg(test)]
mod scaled_tests {
    use super::scaled;

    /// The same as the ceiling of the floating-point product, rounding
    /// error included, for sizes small and huge.
    #[test]
    fn scaled_is_the_ceiling_of_the_float_product() {
        let sizes = (0..2_000u64).chain([1 << 52, (1 << 53) + 1, 1 << 60, u64::MAX / 3, u64::MAX]);
        for n in sizes {
            for factor in [0.1, 0.25, 0.5, 1.0, 2.0, 0.01] {
                let want = (n as f64 * factor).ceil() as u64;
                assert_eq!(scaled(n, factor), want, "{n} * {factor}");
            }
        }
        assert_eq!(scaled(30, 0.1), 3);
        assert_eq!(scaled(31, 0.1), 4);
        assert_eq!(scaled(0, 0.1), 0);
    }
}
