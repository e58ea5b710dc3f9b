//! A policy's expressions compiled in declaration order, each in the
//! environment of its kind (matchConditions without `variables`,
//! messageExpressions without `authorizer`), each variable typing the
//! expressions after it.

use k8s_openapi::api::admissionregistration::v1::{MatchCondition, Variable};

use crate::cel::{self, Environment, Program};
use crate::field_error;

/// A problem of a policy or binding: the path in the document
/// (`spec.validations[0].expression`) and the API server's reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    pub path: String,
    pub reason: String,
}

pub(super) fn located(path: impl Into<String>, reason: impl Into<String>) -> Located {
    Located {
        path: path.into(),
        reason: reason.into(),
    }
}

/// A compiled expression with the name (or key) it is known by.
#[derive(Debug)]
pub struct Expression {
    pub name: String,
    pub source: String,
    pub program: Program,
}

/// A compiled `spec.validations[i]`.
// Shaped like a CRD's `validation::Rule`, but failing otherwise: a policy's
// failure carries a reason and falls back to "failed expression: ...", a
// CRD rule's carries a fieldPath and names the rule itself.
#[derive(Debug)]
pub struct Validation {
    pub expression: String,
    pub program: Program,
    pub message: Option<String>,
    pub message_expression: Option<Program>,
    /// `Forbidden`, `Invalid` or `RequestEntityTooLarge` (default Invalid).
    pub reason: Option<String>,
}

/// Index of `authorizer` in `Environment::admission_policy`'s variables.
const AUTHORIZER: usize = 5;
const _: () = assert!(matches!(
    cel::environment::POLICY_VARIABLES[AUTHORIZER].as_bytes(),
    b"authorizer"
));

/// Which expression of a policy is compiled: each kind sees its own
/// environment (messageExpressions have no `authorizer`,
/// matchConditions no `variables`).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Condition,
    Variable,
    Validation,
    Message,
    Annotation,
}

/// Compiles a policy's expressions in declaration order: each sees the
/// variables declared before it.
pub(super) struct Compiler {
    /// Variables declared so far, with their programs (None when one did
    /// not compile: later expressions see it as `dyn`).
    pub(super) declared: Vec<(String, Option<Program>)>,
    /// The policy declares variables (else `variables` is undeclared).
    pub(super) composition: bool,
    /// The policy has a paramKind (else `params` is undeclared).
    pub(super) params: bool,
    /// The libraries the expressions may use, and the API server's minor.
    pub(super) versions: cel::environment::Versions,
    pub(super) problems: Vec<Located>,
}

impl Compiler {
    fn env(&self, kind: Kind) -> Environment {
        environment(kind == Kind::Message, self.params, self.versions)
    }

    /// Compiles `source` at `path`; `want` are the result types it may
    /// have (`dyn` always passes, as in the API server).
    pub(super) fn compile(
        &mut self,
        kind: Kind,
        source: &str,
        path: &str,
        want: &[&str],
    ) -> Option<Program> {
        let env = self.env(kind);
        let compiled = if kind == Kind::Condition || !self.composition {
            Program::compile(source, &crate::schema::Schema::untyped(true), env)
        } else {
            let declared: Vec<(&str, Option<&Program>)> = self
                .declared
                .iter()
                .map(|(n, p)| (n.as_str(), p.as_ref()))
                .collect();
            Program::compile_composited(source, env, &declared)
        };
        match compiled {
            Ok(p) if kind != Kind::Message && p.reads_variable(AUTHORIZER) => {
                self.problems
                    .push(located(path, authorizer_refusal(source)));
                None
            }
            Ok(p) => {
                let got = p.result_type();
                if want.is_empty() || got == "dyn" || want.contains(&got) {
                    if let Some(reason) = over_the_limit_always(&p) {
                        self.problems.push(located(path, reason));
                        return None;
                    }
                    return Some(p);
                }
                let got = if got == "null" { "null_type" } else { got };
                let reason = match want {
                    [one] => format!("must evaluate to {one} but got {got}"),
                    _ => format!(
                        "must evaluate to one of [{}]",
                        want.iter()
                            .map(|t| if *t == "null" { "null_type" } else { t })
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                };
                self.problems.push(located(
                    path,
                    field_error::invalid(source, &format!("compilation failed: {reason}")),
                ));
                None
            }
            // What an authorizer check calls does not compile here: name
            // the variable rather than the call.
            Err(_) if kind != Kind::Message && cel::mentions_variable(source, "authorizer") => {
                self.problems
                    .push(located(path, authorizer_refusal(source)));
                None
            }
            Err(e) => {
                self.problems.push(located(
                    path,
                    field_error::invalid(source, &format!("compilation failed: {}", e.message)),
                ));
                None
            }
        }
    }

    pub(super) fn match_conditions(&mut self, conditions: &[MatchCondition]) -> Vec<Expression> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (i, m) in conditions.iter().enumerate() {
            let at = format!("spec.matchConditions[{i}]");
            if m.name.is_empty() {
                self.problems
                    .push(located(format!("{at}.name"), "Required value"));
            } else if let Err(reason) = crate::selector::qualified_name(&m.name) {
                self.problems.push(located(
                    format!("{at}.name"),
                    field_error::invalid(&m.name, &reason),
                ));
            } else if seen.contains(&m.name) {
                self.problems.push(located(
                    format!("{at}.name"),
                    field_error::duplicate(&m.name),
                ));
            }
            seen.push(m.name.clone());
            let path = format!("{at}.expression");
            if let Some(program) = self.compile(Kind::Condition, &m.expression, &path, &["bool"]) {
                out.push(Expression {
                    name: m.name.clone(),
                    source: m.expression.clone(),
                    program,
                });
            }
        }
        out
    }

    pub(super) fn variables(&mut self, variables: &[Variable]) {
        for (i, v) in variables.iter().enumerate() {
            let at = format!("spec.variables[{i}]");
            if !is_identifier(&v.name) {
                self.problems.push(located(
                    format!("{at}.name"),
                    field_error::invalid(&v.name, "name is not a valid CEL identifier"),
                ));
            } else if self.declared.iter().any(|(n, _)| *n == v.name) {
                self.problems.push(located(
                    format!("{at}.name"),
                    field_error::duplicate(&v.name),
                ));
            }
            let program = self.compile(
                Kind::Variable,
                &v.expression,
                &format!("{at}.expression"),
                &[],
            );
            self.declared.push((v.name.clone(), program));
        }
    }

    /// The compiled variables, once everything compiled.
    pub(super) fn into_variables(self, sources: &[Variable]) -> Vec<Expression> {
        self.declared
            .into_iter()
            .zip(sources)
            .filter_map(|((name, program), v)| {
                Some(Expression {
                    name,
                    source: v.expression.clone(),
                    program: program?,
                })
            })
            .collect()
    }
}

/// Why an expression that reads no input would fail every request: it
/// runs past the per-expression cost limit whatever the request holds.
/// The API server estimates no policy cost when a policy is written and
/// would fail each request instead; celhook refuses the policy at load,
/// since it could never pass.
fn over_the_limit_always(program: &Program) -> Option<String> {
    if !program.reads_no_input() {
        return None;
    }
    let (result, _) = program.eval_variables(std::iter::empty(), cel::PER_EXPRESSION_COST_LIMIT);
    match result {
        Err(e) if e.kind == cel::ErrorKind::CostLimit => Some(format!(
            "Forbidden: the expression reads nothing from the request and runs past the per-expression cost limit ({}) on every evaluation, so every request would fail it ({})",
            cel::PER_EXPRESSION_COST_LIMIT,
            e.message
        )),
        _ => None,
    }
}

/// The policy environment of an expression: messageExpressions have no
/// `authorizer`, a policy without paramKind no `params`.
pub(super) fn environment(
    message: bool,
    params: bool,
    versions: cel::environment::Versions,
) -> Environment {
    let env = Environment::admission_policy().at_versions(versions);
    match (message, params) {
        (false, true) => env,
        (false, false) => env.without(&["params"]),
        (true, true) => env.without(&["authorizer"]),
        (true, false) => env.without(&["params", "authorizer"]),
    }
}

fn authorizer_refusal(source: &str) -> String {
    field_error::invalid(
        source,
        "the authorizer variable is not supported: the API server answers it with SubjectAccessReviews, and celhook does not call the API server",
    )
}

/// A CEL identifier: a letter or `_`, then letters, digits and `_`.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
