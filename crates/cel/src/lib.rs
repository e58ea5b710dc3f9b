//! The CEL engine: the one module that knows the `cel` crate. Rules are
//! parsed by `cel` (optional syntax, Kubernetes macros), compiled once at
//! load into celhook's own program tree against the schema of the node they
//! sit on, and evaluated directly over the request's JSON.

// The layers, from the bottom: each module imports only those listed
// before it.
//
// Leaves: Go's text forms, RE2 patterns, the request deadline.
pub mod interrupt;
mod matcher;
mod re2;
pub mod text;
// Runtime values, their errors, order, arithmetic and library types.
pub mod value;
// The binary operators' names.
mod operators;
// The checker's types; the estimator's shapes of values.
mod shape;
mod types;
// The function registry's row, and the rows: the function library.
mod registry;
//
mod library;
// What an expression may refer to and call.
pub mod environment;
// Source text to AST; the program tree.
mod syntax;
//
mod ir;
// The evaluator.
mod runtime;
// AST to program tree (checking, folding with the evaluator).
mod check;
// Passes over the program tree: memo planning, static cost, the reads of
// `self` (for static reports).
mod estimate;
mod fuse;
mod plan;
mod reads;

pub use environment::{Environment, PER_EXPRESSION_COST_LIMIT};
pub use estimate::{factor_text, max_cardinality};
pub use library::authz::authorizer_value;
/// Go's `%q`: the API server quotes values in its messages this way.
pub use re2::compile as compile_go_regex;
pub use syntax::SelfPath;
pub use text::{format_double, go_quote};
pub use value::error::{CompileError, ErrorKind, EvalError};
pub use value::{to_json, List, Map, Str, TypeName, Value};

use celhook_schema::Schema;

/// The API server's runtime cost budget for all rules of one object.
pub const PER_OBJECT_COST_BUDGET: u64 = 10_000_000;
/// The estimated cost above which the API server refuses a rule.
pub const STATIC_RULE_COST_LIMIT: f64 = 10_000_000.0;
/// The estimated cost above which the API server refuses a CRD's rules.
pub const STATIC_CRD_COST_LIMIT: f64 = 100_000_000.0;

/// A compiled CEL expression. Shared read-only between requests.
#[derive(Debug)]
pub struct Program {
    ir: ir::Ir,
    slots: usize,
    /// The slots of `self`, `oldSelf` and the environment's variables (the
    /// rest are comprehension variables).
    inputs: usize,
    /// Memo cells the evaluation needs (`memo`).
    memos: ir::Cells,
    uses_old_self: bool,
    result_type: String,
    result_ty: types::Ty<'static>,
    estimated_cost: f64,
    self_paths: Option<Vec<SelfPath>>,
}

impl Program {
    /// Parses and compiles `source` for a node typed by `self_schema`.
    pub fn compile(
        source: &str,
        self_schema: &Schema,
        env: Environment,
    ) -> Result<Program, CompileError> {
        Self::compile_planned(source, self_schema, env, true)
    }

    /// Compiles an expression of a composition (a policy's validations,
    /// messageExpressions, audit annotations and later variables) that may
    /// read `variables.<name>` for each of `variables`, typed by the
    /// variable's program (`dyn` for one that did not compile).
    pub fn compile_composited(
        source: &str,
        env: Environment,
        variables: &[(&str, Option<&Program>)],
    ) -> Result<Program, CompileError> {
        Self::compile_typed(source, env, Some(variables), &[])
    }

    /// [`Program::compile_composited`] (or, with `variables` `None`, an
    /// expression that cannot read `variables`) with the environment's
    /// named variables typed by `schemas`, by position: the type check a
    /// policy gets against the kinds it matches.
    pub fn compile_typed(
        source: &str,
        env: Environment,
        variables: Option<&[(&str, Option<&Program>)]>,
        schemas: &[Option<&Schema>],
    ) -> Result<Program, CompileError> {
        let any = Schema::untyped(true);
        let declared: Option<Vec<(String, types::Ty<'static>)>> = variables.map(|vars| {
            vars.iter()
                .map(|(name, p)| {
                    let ty = p.map_or(types::Ty::Dyn, |p| p.result_ty.clone());
                    ((*name).to_owned(), ty)
                })
                .collect()
        });
        let decls = check::Decls {
            self_schema: &any,
            env,
            composited: declared.as_deref(),
            variable_schemas: schemas,
        };
        Self::finish(source, &decls, true)
    }

    /// [`Program::compile`], with or without the memo pass (tests and the
    /// fuzz targets compare the two).
    #[doc(hidden)]
    pub fn compile_planned(
        source: &str,
        self_schema: &Schema,
        env: Environment,
        plan_memos: bool,
    ) -> Result<Program, CompileError> {
        let decls = check::Decls {
            self_schema,
            env,
            composited: None,
            variable_schemas: &[],
        };
        Self::finish(source, &decls, plan_memos)
    }

    fn finish(
        source: &str,
        decls: &check::Decls<'_>,
        plan_memos: bool,
    ) -> Result<Program, CompileError> {
        let mut c = check::compile(source, decls)?;
        let estimated_cost = estimate::estimate(&c.ir, decls.self_schema, c.slots, &decls.env);
        let memos = if plan_memos {
            plan::plan(&mut c.ir)
        } else {
            ir::Cells::default()
        };
        Ok(Program {
            estimated_cost,
            ir: c.ir,
            slots: c.slots,
            inputs: check::FIRST_VARIABLE_SLOT + decls.env.variables.len(),
            memos,
            uses_old_self: c.uses_old_self,
            result_type: c.result_type,
            result_ty: c.result_ty,
            self_paths: c.self_paths,
        })
    }

    /// The chains of fields the source selects from `self`
    /// (`self.spec.replicas`, `has(self.spec.tls)`), sorted, when such
    /// chains are all it does with `self`; `None` when it may read more
    /// (`self` whole, indexed, sized, passed on or rebound). What a decoder
    /// must build of `self` for the program to answer as on the whole
    /// value: each chain's last field whole, or for a presence test,
    /// present. Found from the text as written, so no rewrite of the
    /// compiled program hides a read; [`Program::self_reads`] reports from
    /// the compiled program instead, where a presence test reads nothing.
    pub fn self_paths(&self) -> Option<&[SelfPath]> {
        self.self_paths.as_deref()
    }

    /// The static type of the result, as cel-go names it (`bool`,
    /// `string`, `list(int)`, `dyn`, ...).
    pub fn result_type(&self) -> &str {
        &self.result_type
    }

    /// The worst-case cost of one evaluation, from the schema's size bounds.
    pub fn estimated_cost(&self) -> f64 {
        self.estimated_cost
    }

    /// The field paths of `self` the expression reads (see `reads`): a
    /// static report, not for the request path (a decoder's plan comes
    /// from [`Program::self_paths`]). An empty path is `self` read whole.
    pub fn self_reads(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        reads::self_paths(&self.ir, &mut out);
        out
    }

    /// True when the expression refers to `oldSelf` (a transition rule).
    pub fn uses_old_self(&self) -> bool {
        self.uses_old_self
    }

    /// Evaluates with `self` (and `oldSelf`, when given), stopping once the
    /// cost passes `limit`. Returns the result and the cost spent.
    pub fn eval<'a>(
        &'a self,
        this: Value<'a>,
        old_self: Option<Value<'a>>,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        self.eval_in_scratch(&mut Scratch::default(), this, old_self, limit)
    }

    /// [`Program::eval`] in the allocations `scratch` kept from earlier
    /// evaluations (and keeps this one's there for the next).
    pub fn eval_in_scratch<'a>(
        &'a self,
        scratch: &mut Scratch<'a>,
        this: Value<'a>,
        old_self: Option<Value<'a>>,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        const _: () = assert!(check::SELF_SLOT == 0 && check::OLD_SELF_SLOT == 1);
        let frame = &mut scratch.0;
        frame.reset(this, old_self, self.slots.max(2), self.memos, limit);
        let result = runtime::eval(&self.ir, frame);
        let cost = frame.cost;
        frame.release();
        (result, cost)
    }

    /// Evaluates a program of an environment with named `variables`, given
    /// their values in the environment's order (missing ones are null).
    pub fn eval_variables<'a>(
        &'a self,
        values: impl IntoIterator<Item = Value<'a>>,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        self.eval_in(values, None, limit)
    }

    /// True when the expression reads the environment's named variable
    /// `index` (the order of `Environment::variables`).
    pub fn reads_variable(&self, index: usize) -> bool {
        fn reads(ir: &ir::Ir, slot: usize) -> bool {
            if let ir::Ir::Var(s) = ir {
                return *s == slot;
            }
            let mut found = false;
            ir.each_child(&mut |child| found = found || reads(child, slot));
            found
        }
        reads(&self.ir, check::FIRST_VARIABLE_SLOT + index)
    }

    /// True when the expression reads no input (no `self`, `oldSelf`,
    /// environment or composited variable): every evaluation gives the
    /// same result at the same cost, so it can be judged at load.
    pub fn reads_no_input(&self) -> bool {
        fn reads(ir: &ir::Ir, inputs: usize) -> bool {
            match ir {
                ir::Ir::Var(s) if *s < inputs => return true,
                ir::Ir::Lazy(_) => return true,
                _ => {}
            }
            let mut found = false;
            ir.each_child(&mut |child| found = found || reads(child, inputs));
            found
        }
        !reads(&self.ir, self.inputs)
    }

    fn eval_in<'a>(
        &'a self,
        values: impl IntoIterator<Item = Value<'a>>,
        lazy: Option<&'a dyn runtime::Lazy<'a>>,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        let mut vars: runtime::Vars<'a> = vec![Value::Null; self.slots.max(2)];
        for (slot, value) in (check::FIRST_VARIABLE_SLOT..self.slots).zip(values) {
            vars[slot] = value;
        }
        let mut frame = runtime::Frame::new(vars, self.memos, limit);
        frame.lazy = lazy;
        let result = runtime::eval(&self.ir, &mut frame);
        (result, frame.cost)
    }
}

/// False only when every use of `self` in `source` selects a field other
/// than `field`, so that its result cannot depend on `self.<field>` (a
/// conservative static check: anything else counts as reading it).
pub fn may_read_self_field(source: &str, field: &str) -> bool {
    syntax::may_read_self_field(source, field)
}

/// The fields of `self` that `source` selects, sorted, when selecting
/// named fields is all it does with `self`; `None` when it may read more
/// (a conservative static check, for decoding only what rules read).
pub fn self_fields(source: &str) -> Option<Vec<String>> {
    syntax::self_fields(source)
}

/// The allocations of one evaluation's frame, kept for the next: the
/// rules of a review run one after another, and allocating and freeing
/// each one's vectors took 5% of a review's instructions. Holds no value
/// between evaluations but `self` and `oldSelf` while they are bound for a
/// node's rules ([`Scratch::bind`]).
#[derive(Default)]
pub struct Scratch<'a>(runtime::Frame<'a>);

impl<'a> Scratch<'a> {
    /// True when no value of the last evaluation is left in it.
    pub fn is_empty(&self) -> bool {
        self.0.is_released()
    }

    /// `self` and `oldSelf` bound for several programs run on them in turn
    /// (a node's rules and message expressions), once rather than for each:
    /// the binding and its drop were a tenth of a short rule's evaluation.
    /// Released when the binding is dropped.
    pub fn bind<'s>(&'s mut self, this: Value<'a>, old_self: Option<Value<'a>>) -> Bound<'s, 'a> {
        self.0.bind_selves(this, old_self);
        Bound(self)
    }
}

/// A scratch frame with `self` and `oldSelf` bound (see [`Scratch::bind`]).
pub struct Bound<'s, 'a>(&'s mut Scratch<'a>);

impl<'a> Bound<'_, 'a> {
    /// [`Program::eval`] on the bound values.
    pub fn eval(
        &mut self,
        program: &'a Program,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        let frame = &mut (self.0).0;
        frame.reset_bound(program.slots.max(2), program.memos, limit);
        let result = runtime::eval(&program.ir, frame);
        let cost = frame.cost;
        frame.release_bound();
        (result, cost)
    }

    /// [`Bound::eval`] with `oldSelf` bound to `old_self` for this program
    /// alone (an optional `oldSelf`).
    pub fn eval_with_old_self(
        &mut self,
        program: &'a Program,
        old_self: Value<'a>,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        let before = (self.0).0.swap_old_self(old_self);
        let answer = self.eval(program, limit);
        (self.0).0.swap_old_self(before);
        answer
    }
}

impl Drop for Bound<'_, '_> {
    fn drop(&mut self) {
        (self.0).0.release();
    }
}

/// True when `source` refers to the variable `name` (parsed, not
/// checked): an expression can be refused for the variable it uses even
/// when what it calls on it does not compile.
pub fn mentions_variable(source: &str, name: &str) -> bool {
    syntax::mentions(source, name)
}

/// The evaluation context of a composition (one policy on one request):
/// the environment's variable values, and the composited variables, each
/// evaluated the first time an expression reads it and kept for the rest
/// of the request, so that a variable no expression reaches is never run
/// and none runs twice.
pub struct Composition<'a> {
    inputs: Vec<Value<'a>>,
    variables: Vec<(&'a str, &'a Program)>,
    results: std::cell::RefCell<Vec<Option<Result<Value<'a>, EvalError>>>>,
    /// Cost spent on variables since [`Composition::take_cost`] last ran.
    cost: std::cell::Cell<u64>,
    limit: u64,
}

impl<'a> Composition<'a> {
    /// `inputs` are the environment's variables in its order; `variables`
    /// the composited ones (name, program) in declaration order, each run
    /// with `limit`.
    pub fn new(inputs: Vec<Value<'a>>, variables: Vec<(&'a str, &'a Program)>, limit: u64) -> Self {
        let n = variables.len();
        Composition {
            inputs,
            variables,
            results: std::cell::RefCell::new(vec![None; n]),
            cost: std::cell::Cell::new(0),
            limit,
        }
    }

    /// Evaluates an expression of this composition; the cost returned is
    /// its own (the variables it caused to run are in `take_cost`).
    pub fn eval(&'a self, program: &'a Program, limit: u64) -> (Result<Value<'a>, EvalError>, u64) {
        program.eval_in(self.inputs.iter().cloned(), Some(self), limit)
    }

    /// The cost of the variables evaluated since the last call.
    pub fn take_cost(&self) -> u64 {
        self.cost.take()
    }
}

impl<'a> runtime::Lazy<'a> for Composition<'a> {
    fn variable(&'a self, index: usize) -> Result<Value<'a>, EvalError> {
        if let Some(Some(done)) = self.results.borrow().get(index) {
            return done.clone();
        }
        let Some((name, program)) = self.variables.get(index) else {
            return Err(EvalError::new(format!("no such key: variable {index}")));
        };
        let (result, cost) = self.eval(program, self.limit);
        self.cost.set(self.cost.get().saturating_add(cost));
        // The API server names the variable that failed, at each level.
        let result = result.map_err(|e| {
            EvalError::of(
                e.kind,
                format!(
                    "composited variable {name:?} fails to evaluate: {}",
                    e.message
                ),
            )
        });
        if let Some(slot) = self.results.borrow_mut().get_mut(index) {
            *slot = Some(result.clone());
        }
        result
    }
}

#[cfg(test)]
mod tests;
