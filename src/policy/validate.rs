//! One policy evaluated for one binding and one parameter object, as the
//! API server's validator does: matchConditions (their own budget), then
//! the validations and their messages (one budget), then the audit
//! annotations (a budget of their own). Each of the three phases has its
//! own lazy variables, as upstream gives each of its filters a new
//! context: a variable read in two phases runs, and is charged, in both.

use crate::cel::{self, Composition, Program, Value};

use super::compile::{FailurePolicy, Policy, PER_CALL_LIMIT};

/// The API server's runtime cost budget for one policy evaluation (the
/// validations and their messages; the audit annotations get their own).
pub const RUNTIME_BUDGET: u64 = cel::PER_OBJECT_COST_BUDGET;

/// The budget of a policy's matchConditions.
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The longest messageExpression result used as a message; a longer one
/// falls back to the static message.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The longest audit annotation value; longer ones are cut.
const MAX_ANNOTATION_BYTES: usize = 10 * 1024;

/// What one evaluation decided.
#[derive(Debug, Default)]
pub struct Evaluation {
    /// Failed validations and errors that deny, in the order of the
    /// expressions they come from.
    pub failures: Vec<Failure>,
    /// `(key, value)` of the policy's audit annotations (the key without
    /// the policy's name).
    pub annotations: Vec<(String, String)>,
    /// Errors the failure policy `Ignore` swallowed (for logs and metrics).
    pub ignored_errors: Vec<String>,
}

impl Evaluation {
    /// An expression that could not be evaluated: a failure under Fail
    /// (following the binding's actions), nothing under Ignore.
    fn error(&mut self, failure_policy: FailurePolicy, index: usize, message: String) {
        match failure_policy {
            FailurePolicy::Fail => self.failures.push(Failure {
                index,
                message,
                reason: None,
                direct: false,
            }),
            FailurePolicy::Ignore => self.ignored_errors.push(message),
        }
    }

    /// A whole evaluation that ends in one error (a budget run out).
    fn only_error(failure_policy: FailurePolicy, index: usize, message: String) -> Evaluation {
        let mut out = Evaluation::default();
        out.error(failure_policy, index, message);
        out
    }
}

/// A denying decision.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The validation's index (0 for a matchCondition error, the number
    /// of validations for an audit annotation's).
    pub index: usize,
    pub message: String,
    pub reason: Option<String>,
    /// Denies whatever the binding's actions (an audit annotation that
    /// cannot be evaluated); other failures follow the actions.
    pub direct: bool,
}

/// The values of the policy's environment for one evaluation, in the
/// order of `Environment::admission_policy`.
pub struct Inputs<'a> {
    pub object: Value<'a>,
    pub old_object: Value<'a>,
    pub request: Value<'a>,
    /// `request` as matchConditions see it.
    pub condition_request: Value<'a>,
    pub params: Value<'a>,
    /// The request's Namespace as validations and messages see it (a
    /// subset of its metadata).
    pub namespace_object: Value<'a>,
    /// The Namespace as audit annotations see it: upstream hands them the
    /// stored object, not the subset.
    pub namespace_stored: Value<'a>,
}

impl<'a> Inputs<'a> {
    /// The values in the environment's order, with `namespaceObject`.
    fn values(&self, namespace: &Value<'a>) -> Vec<Value<'a>> {
        vec![
            self.object.clone(),
            self.old_object.clone(),
            self.request.clone(),
            self.params.clone(),
            namespace.clone(),
            Value::Null,
        ]
    }
}

/// What the expressions of one phase see: the environment's values and
/// the policy's variables.
struct Scope<'a> {
    values: Vec<Value<'a>>,
    variables: &'a [(&'a str, &'a Program)],
}

impl<'a> Scope<'a> {
    /// Lazy variables of their own, none evaluated yet.
    fn composition(&self) -> Composition<'a> {
        Composition::new(self.values.clone(), self.variables.to_vec(), PER_CALL_LIMIT)
    }
}

/// A runtime budget being spent.
struct Budget(i64);

impl Budget {
    fn spend(&mut self, cost: u64) -> Result<(), String> {
        self.0 = self
            .0
            .saturating_sub(i64::try_from(cost).unwrap_or(i64::MAX));
        if self.0 < 0 {
            Err(OUT_OF_BUDGET.to_owned())
        } else {
            Ok(())
        }
    }
}

/// The error text of an expression that could not be evaluated.
fn resulted_in_error(source: &str, error: &str) -> String {
    format!("expression '{source}' resulted in error: {error}")
}

/// Evaluates `policy` with `inputs`. Errors follow the policy's
/// failurePolicy: a denial for Fail, nothing for Ignore.
pub fn evaluate(policy: &Policy, inputs: Inputs<'_>) -> Evaluation {
    let fp = policy.failure_policy;
    match match_conditions(policy, &inputs) {
        Ok(true) => {}
        Ok(false) => return Evaluation::default(),
        Err(message) => return Evaluation::only_error(fp, 0, message),
    }
    let variables: Vec<(&str, &Program)> = policy
        .variables
        .iter()
        .map(|v| (v.name.as_str(), &v.program))
        .collect();
    let mut out = Evaluation::default();
    let scope = Scope {
        values: inputs.values(&inputs.namespace_object),
        variables: &variables,
    };
    // Out of budget, the API server keeps one error decision alone.
    if let Err(message) = validations(policy, &scope, &mut out) {
        return Evaluation::only_error(fp, 0, message);
    }
    let scope = Scope {
        values: inputs.values(&inputs.namespace_stored),
        variables: &variables,
    };
    if let Err(message) = annotations(policy, &scope, &mut out) {
        return Evaluation::only_error(fp, policy.validations.len(), message);
    }
    out
}

/// Whether the policy applies: any false condition skips it; errors count
/// only when none is false. A result that is not `false` matches.
fn match_conditions(policy: &Policy, inputs: &Inputs<'_>) -> Result<bool, String> {
    // matchConditions see no namespaceObject, and their own request.
    let mut values = inputs.values(&Value::Null);
    values[2] = inputs.condition_request.clone();
    let mut errors: Vec<String> = Vec::new();
    let mut budget = Budget(MATCH_CONDITIONS_BUDGET as i64);
    for condition in &policy.match_conditions {
        let (result, cost) = condition
            .program
            .eval_variables(values.iter().cloned(), PER_CALL_LIMIT);
        budget.spend(cost)?;
        match result {
            Ok(Value::Bool(false)) => return Ok(false),
            Ok(_) => {}
            Err(e) => {
                let e = resulted_in_error(&condition.source, &e.message);
                // Go's aggregate error drops repeated messages.
                if !errors.contains(&e) {
                    errors.push(e);
                }
            }
        }
    }
    match errors.len() {
        0 => Ok(true),
        // Go's aggregate error: one alone, several in brackets.
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The validations, then the messages of those that failed, under one
/// budget. Anything but `true` fails a validation. `Err` when the
/// validations run out of budget.
fn validations(policy: &Policy, scope: &Scope<'_>, out: &mut Evaluation) -> Result<(), String> {
    let fp = policy.failure_policy;
    let composition = scope.composition();
    let mut budget = Budget(RUNTIME_BUDGET as i64);
    let mut failed = Vec::new();
    let mut evaluated = vec![true; policy.validations.len()];
    for (i, v) in policy.validations.iter().enumerate() {
        let (result, cost) = composition.eval(&v.program, PER_CALL_LIMIT);
        budget.spend(cost.saturating_add(composition.take_cost()))?;
        match result {
            Ok(Value::Bool(true)) => {}
            Ok(_) => failed.push(i),
            Err(e) => {
                evaluated[i] = false;
                out.error(fp, i, resulted_in_error(&v.expression, &e.message));
            }
        }
    }
    // The messages spend what the validations left. celhook runs only
    // those of failed validations (upstream runs all of them): when even
    // these run out, upstream's did too, and every validation that was
    // evaluated becomes that error.
    let messages = scope.composition();
    let mut texts = Vec::with_capacity(failed.len());
    for &i in &failed {
        let v = &policy.validations[i];
        let mut message = String::new();
        if let Some(program) = &v.message_expression {
            let (result, cost) = messages.eval(program, PER_CALL_LIMIT);
            if let Err(e) = budget.spend(cost.saturating_add(messages.take_cost())) {
                let message = format!("failed messageExpression: {e}");
                for (i, _) in evaluated.iter().enumerate().filter(|(_, e)| **e) {
                    out.error(fp, i, message.clone());
                }
                out.failures.sort_by_key(|f| f.index);
                return Ok(());
            }
            if let Ok(Value::Str(s)) = result {
                let s = s.trim();
                if s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
                    message = s.to_owned();
                }
            }
        }
        if message.is_empty() {
            message = v.message.as_deref().unwrap_or("").trim().to_owned();
        }
        if message.is_empty() {
            message = format!("failed expression: {}", v.expression.trim());
        }
        texts.push(message);
    }
    for (i, message) in failed.into_iter().zip(texts) {
        out.failures.push(Failure {
            index: i,
            message,
            reason: Some(
                policy.validations[i]
                    .reason
                    .clone()
                    .unwrap_or_else(|| "Invalid".into()),
            ),
            direct: false,
        });
    }
    out.failures.sort_by_key(|f| f.index);
    Ok(())
}

/// The audit annotations, under a budget of their own. One that cannot
/// be evaluated denies whatever the binding's actions (under Fail); one
/// of an unsupported type denies under either failure policy. `Err` when
/// they run out of budget.
fn annotations(policy: &Policy, scope: &Scope<'_>, out: &mut Evaluation) -> Result<(), String> {
    let composition = scope.composition();
    let mut budget = Budget(RUNTIME_BUDGET as i64);
    let index = policy.validations.len();
    let deny = |out: &mut Evaluation, message: String| {
        out.failures.push(Failure {
            index,
            message,
            reason: None,
            direct: true,
        })
    };
    for a in &policy.audit_annotations {
        let (result, cost) = composition.eval(&a.program, PER_CALL_LIMIT);
        budget.spend(cost.saturating_add(composition.take_cost()))?;
        match result {
            Ok(Value::Str(s)) if s.trim().is_empty() => {}
            Ok(Value::Str(s)) => {
                let mut value = s.trim().to_owned();
                if value.len() > MAX_ANNOTATION_BYTES {
                    let mut cut = MAX_ANNOTATION_BYTES;
                    while !value.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    value.truncate(cut);
                }
                out.annotations.push((a.name.clone(), value));
            }
            Ok(Value::Null) => {}
            Ok(other) => deny(
                out,
                format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    a.source,
                    other.type_name().name()
                ),
            ),
            Err(e) => {
                let message = resulted_in_error(&a.source, &e.message);
                match policy.failure_policy {
                    FailurePolicy::Fail => deny(out, message),
                    FailurePolicy::Ignore => out.ignored_errors.push(message),
                }
            }
        }
    }
    Ok(())
}
