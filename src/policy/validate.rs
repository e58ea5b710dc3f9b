//! One policy evaluated for one binding and one parameter object, as the
//! API server's validator does: matchConditions, then the validations
//! (their messages), then the audit annotations, all under one runtime
//! cost budget, the variables evaluated lazily and once.

use crate::cel::{self, Composition, Value};

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
    /// Failed validations and errors that deny: (expression index, message,
    /// reason). Index `None` for errors not tied to one validation.
    pub failures: Vec<Failure>,
    /// `(key, value)` of the policy's audit annotations (the key without
    /// the policy's name).
    pub annotations: Vec<(String, String)>,
    /// Errors the failure policy `Ignore` swallowed (for logs and metrics).
    pub ignored_errors: Vec<String>,
}

/// A denying decision.
#[derive(Debug, Clone)]
pub struct Failure {
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
    pub namespace_object: Value<'a>,
}

/// Evaluates `policy` with `inputs`. Errors follow the policy's
/// failurePolicy: a denial for Fail, nothing for Ignore.
pub fn evaluate(policy: &Policy, inputs: Inputs<'_>) -> Evaluation {
    let variables = policy
        .variables
        .iter()
        .map(|v| (v.name.as_str(), &v.program))
        .collect();
    let values = vec![
        inputs.object,
        inputs.old_object,
        inputs.request,
        inputs.params,
        inputs.namespace_object,
        Value::Null,
    ];
    // matchConditions see no namespaceObject, and their own request.
    let mut condition_values = values.clone();
    condition_values[2] = inputs.condition_request;
    condition_values[4] = Value::Null;
    let composition = Composition::new(values, variables, PER_CALL_LIMIT);
    let mut out = Evaluation::default();
    let on_error = |out: &mut Evaluation, index: usize, message: String| match policy.failure_policy
    {
        FailurePolicy::Fail => out.failures.push(Failure {
            index,
            message,
            reason: None,
            direct: false,
        }),
        FailurePolicy::Ignore => out.ignored_errors.push(message),
    };

    // matchConditions: any false skips the policy; errors only count when
    // none is false.
    let mut errors: Vec<String> = Vec::new();
    let mut spent = 0u64;
    for condition in &policy.match_conditions {
        let (result, cost) = condition
            .program
            .eval_variables(condition_values.iter().cloned(), PER_CALL_LIMIT);
        spent = spent.saturating_add(cost);
        if spent > MATCH_CONDITIONS_BUDGET {
            on_error(&mut out, 0, OUT_OF_BUDGET.to_owned());
            return out;
        }
        match result {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return out,
            Ok(_) => errors.push(format!(
                "expression '{}' resulted in error: no such overload",
                condition.source
            )),
            Err(e) => errors.push(format!(
                "expression '{}' resulted in error: {}",
                condition.source, e.message
            )),
        }
    }
    // Go's aggregate error drops repeated messages.
    let mut unique: Vec<String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    let mut errors = unique;
    match errors.len() {
        0 => {}
        // Go's aggregate error: one alone, several in brackets.
        1 => {
            on_error(&mut out, 0, errors.remove(0));
            return out;
        }
        _ => {
            on_error(&mut out, 0, format!("[{}]", errors.join(", ")));
            return out;
        }
    }

    let mut remaining = RUNTIME_BUDGET as i64;
    let mut spend = |cost: u64, composition: &Composition<'_>| -> bool {
        remaining -= cost as i64;
        remaining -= composition.take_cost() as i64;
        remaining >= 0
    };
    let mut failed = Vec::new();
    for (i, v) in policy.validations.iter().enumerate() {
        let (result, cost) = composition.eval(&v.program, PER_CALL_LIMIT);
        if !spend(cost, &composition) {
            on_error(&mut out, i, OUT_OF_BUDGET.to_owned());
            return out;
        }
        match result {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => failed.push(i),
            Ok(_) => on_error(
                &mut out,
                i,
                format!(
                    "expression '{}' resulted in error: no such overload",
                    v.expression
                ),
            ),
            Err(e) => on_error(
                &mut out,
                i,
                format!(
                    "expression '{}' resulted in error: {}",
                    v.expression, e.message
                ),
            ),
        }
    }
    for i in failed {
        let v = &policy.validations[i];
        let mut message = String::new();
        if let Some(program) = &v.message_expression {
            let (result, cost) = composition.eval(program, PER_CALL_LIMIT);
            // The budget left after the validations bounds the messages;
            // past it a message falls back as on any error.
            if spend(cost, &composition) {
                if let Ok(Value::Str(s)) = result {
                    let s = s.trim();
                    if s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
                        message = s.to_owned();
                    }
                }
            }
        }
        if message.is_empty() {
            message = v.message.as_deref().unwrap_or("").trim().to_owned();
        }
        if message.is_empty() {
            message = format!("failed expression: {}", v.expression.trim());
        }
        out.failures.push(Failure {
            index: i,
            message,
            reason: Some(v.reason.clone().unwrap_or_else(|| "Invalid".into())),
            direct: false,
        });
    }
    out.failures.sort_by_key(|f| f.index);

    // Audit annotations have a budget of their own; their errors deny
    // whatever the binding's actions (under Fail).
    let mut remaining = RUNTIME_BUDGET as i64;
    let annotation_error = |out: &mut Evaluation, message: String| {
        on_error(out, policy.validations.len(), message);
        if let Some(last) = out.failures.last_mut() {
            last.direct = true;
        }
    };
    for a in &policy.audit_annotations {
        let (result, cost) = composition.eval(&a.program, PER_CALL_LIMIT);
        remaining -= cost as i64 + composition.take_cost() as i64;
        if remaining < 0 {
            annotation_error(&mut out, OUT_OF_BUDGET.to_owned());
            return out;
        }
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
            Ok(other) => annotation_error(
                &mut out,
                format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    a.source,
                    other.type_name().name()
                ),
            ),
            Err(e) => annotation_error(
                &mut out,
                format!("expression '{}' resulted in error: {}", a.source, e.message),
            ),
        }
    }
    out
}
