//! The CEL engine: the one module that knows the `cel` crate. Rules are
//! parsed by `cel` (optional syntax, Kubernetes macros), compiled once at
//! load into celhook's own program tree against the schema of the node they
//! sit on, and evaluated directly over the request's JSON.

// The layers, from the bottom: each module imports only those listed
// before it.
//
// Leaves: Go's text forms, RE2 patterns, the request deadline.
pub mod interrupt;
mod re2;
pub mod text;
// Runtime values, their errors, order, arithmetic and library types.
pub mod value;
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
mod plan;
mod reads;

pub use environment::{Environment, PER_EXPRESSION_COST_LIMIT};
pub use estimate::{factor_text, max_cardinality};
/// Go's `%q`: the API server quotes values in its messages this way.
pub use text::go_quote;
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
    /// Memo cells the evaluation needs (`memo`).
    memos: ir::Cells,
    uses_old_self: bool,
    result_type: String,
    estimated_cost: f64,
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

    /// [`Program::compile`], with or without the memo pass (tests and the
    /// fuzz targets compare the two).
    #[doc(hidden)]
    pub fn compile_planned(
        source: &str,
        self_schema: &Schema,
        env: Environment,
        plan_memos: bool,
    ) -> Result<Program, CompileError> {
        let decls = check::Decls { self_schema, env };
        let mut c = check::compile(source, &decls)?;
        let estimated_cost = estimate::estimate(&c.ir, self_schema, c.slots);
        let memos = if plan_memos {
            plan::plan(&mut c.ir)
        } else {
            ir::Cells::default()
        };
        Ok(Program {
            estimated_cost,
            ir: c.ir,
            slots: c.slots,
            memos,
            uses_old_self: c.uses_old_self,
            result_type: c.result_type,
        })
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
    /// static report, not for the request path. An empty path is `self`
    /// read whole.
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
        let mut vars: runtime::Vars<'a> = vec![Value::Null; self.slots.max(2)];
        vars[check::SELF_SLOT] = this;
        if let Some(old) = old_self {
            vars[check::OLD_SELF_SLOT] = old;
        }
        let mut frame = runtime::Frame::new(vars, self.memos, limit);
        let result = runtime::eval(&self.ir, &mut frame);
        (result, frame.cost)
    }

    /// Evaluates a program of an environment with named `variables`, given
    /// their values in the environment's order (missing ones are null).
    pub fn eval_variables<'a>(
        &'a self,
        values: impl IntoIterator<Item = Value<'a>>,
        limit: u64,
    ) -> (Result<Value<'a>, EvalError>, u64) {
        let mut vars: runtime::Vars<'a> = vec![Value::Null; self.slots.max(2)];
        for (slot, value) in (check::FIRST_VARIABLE_SLOT..self.slots).zip(values) {
            vars[slot] = value;
        }
        let mut frame = runtime::Frame::new(vars, self.memos, limit);
        let result = runtime::eval(&self.ir, &mut frame);
        (result, frame.cost)
    }
}

#[cfg(test)]
mod tests;
