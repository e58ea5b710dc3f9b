//! A ValidatingAdmissionPolicy or binding, checked as the API server
//! checks one when it is written, and compiled once at load: every
//! expression a program, every selector a matcher.

use k8s_openapi::api::admissionregistration::v1::{
    MatchResources, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::expressions::{located, Compiler, Kind};
pub use super::expressions::{Expression, Located, Validation};
use super::matching::Matcher;
use crate::cel;
use crate::field_error;
use crate::selector::Selector;

/// What the policy does when an expression cannot be evaluated or a
/// binding cannot be configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

/// A compiled policy.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    pub failure_policy: FailurePolicy,
    /// `apiVersion` and `kind` of its parameters.
    pub param_kind: Option<(String, String)>,
    pub constraints: Matcher,
    /// `spec.matchConstraints` as written (`webhook-config` sends what it
    /// matches to celhook).
    pub match_constraints: MatchResources,
    pub match_conditions: Vec<Expression>,
    pub variables: Vec<Expression>,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<Expression>,
}

/// What a binding does with a failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Deny,
    Warn,
    Audit,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "Deny",
            Action::Warn => "Warn",
            Action::Audit => "Audit",
        }
    }
}

/// A compiled binding.
#[derive(Debug)]
pub struct Binding {
    pub name: String,
    pub policy_name: String,
    pub resources: Option<Matcher>,
    pub param_ref: Option<ParamRef>,
    pub actions: Vec<Action>,
}

/// Where a binding's parameters come from.
#[derive(Debug)]
pub struct ParamRef {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub selector: Option<Selector>,
    /// `parameterNotFoundAction: Deny` (else Allow).
    pub deny_when_missing: bool,
}

/// The API server's limit on a policy's runtime cost per evaluation of
/// one expression.
pub const PER_CALL_LIMIT: u64 = cel::PER_EXPRESSION_COST_LIMIT;

/// The reasons a validation may give.
const REASONS: [&str; 3] = ["Forbidden", "Invalid", "RequestEntityTooLarge"];

/// Compiles a policy, or says everything that is wrong with it.
pub fn policy(
    doc: &ValidatingAdmissionPolicy,
    versions: cel::environment::Versions,
) -> Result<Policy, Vec<Located>> {
    let mut problems = Vec::new();
    let name = required_name(&doc.metadata, &mut problems);
    let Some(spec) = &doc.spec else {
        problems.push(located("spec", "Required value"));
        return Err(problems);
    };
    let failure_policy = match spec.failure_policy.as_deref() {
        None | Some("Fail") => FailurePolicy::Fail,
        Some("Ignore") => FailurePolicy::Ignore,
        Some(other) => {
            problems.push(located(
                "spec.failurePolicy",
                field_error::unsupported(other, &["Fail", "Ignore"]),
            ));
            FailurePolicy::Fail
        }
    };
    let param_kind = spec.param_kind.as_ref().and_then(|k| {
        let api_version = k.api_version.clone().unwrap_or_default();
        let kind = k.kind.clone().unwrap_or_default();
        if api_version.is_empty() {
            problems.push(located("spec.paramKind.apiVersion", "Required value"));
        }
        if kind.is_empty() {
            problems.push(located("spec.paramKind.kind", "Required value"));
        }
        (!api_version.is_empty() && !kind.is_empty()).then_some((api_version, kind))
    });
    let constraints = match &spec.match_constraints {
        None => {
            problems.push(located("spec.matchConstraints", "Required value"));
            None
        }
        Some(m) => {
            if m.resource_rules.as_ref().is_none_or(Vec::is_empty) {
                problems.push(located(
                    "spec.matchConstraints.resourceRules",
                    "Required value",
                ));
            }
            matcher(m, "spec.matchConstraints", &mut problems)
        }
    };
    let validations_given = spec.validations.as_ref().is_some_and(|v| !v.is_empty());
    let annotations_given = spec
        .audit_annotations
        .as_ref()
        .is_some_and(|v| !v.is_empty());
    if !validations_given && !annotations_given {
        problems.push(located(
            "spec.validations",
            "Required value: validations or auditAnnotations must contain at least one item",
        ));
    }

    let variable_sources = spec.variables.as_deref().unwrap_or_default();
    let mut c = Compiler {
        declared: Vec::new(),
        composition: !variable_sources.is_empty(),
        params: param_kind.is_some(),
        versions,
        problems,
    };
    let match_conditions = c.match_conditions(spec.match_conditions.as_deref().unwrap_or_default());
    c.variables(variable_sources);
    let mut validations = Vec::new();
    for (i, v) in spec.validations.iter().flatten().enumerate() {
        let at = format!("spec.validations[{i}]");
        if v.expression.trim().is_empty() {
            c.problems.push(located(
                format!("{at}.expression"),
                "Required value: expression is not specified",
            ));
            continue;
        }
        let program = c.compile(
            Kind::Validation,
            &v.expression,
            &format!("{at}.expression"),
            &["bool"],
        );
        if let Some(message) = &v.message {
            if message.contains('\n') {
                c.problems.push(located(
                    format!("{at}.message"),
                    field_error::invalid(message, "message must not contain line breaks"),
                ));
            }
        }
        let message_expression = match v.message_expression.as_deref() {
            Some(m) if m.trim().is_empty() => {
                c.problems.push(located(
                    format!("{at}.messageExpression"),
                    field_error::invalid(m, "must be non-empty if specified"),
                ));
                None
            }
            Some(m) => c.compile(
                Kind::Message,
                m,
                &format!("{at}.messageExpression"),
                &["string"],
            ),
            None => None,
        };
        if let Some(reason) = &v.reason {
            if !REASONS.contains(&reason.as_str()) {
                c.problems.push(located(
                    format!("{at}.reason"),
                    field_error::unsupported(reason, &REASONS),
                ));
            }
        }
        if let Some(program) = program {
            validations.push(Validation {
                expression: v.expression.clone(),
                program,
                message: v.message.clone(),
                message_expression,
                reason: v.reason.clone(),
            });
        }
    }
    let mut audit_annotations = Vec::new();
    let mut keys = Vec::new();
    for (i, a) in spec.audit_annotations.iter().flatten().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        if let Err(reason) = annotation_key(&name, &a.key) {
            c.problems.push(located(format!("{at}.key"), reason));
        } else if keys.contains(&a.key) {
            c.problems
                .push(located(format!("{at}.key"), field_error::duplicate(&a.key)));
        }
        keys.push(a.key.clone());
        let path = format!("{at}.valueExpression");
        if let Some(program) = c.compile(
            Kind::Annotation,
            &a.value_expression,
            &path,
            &["string", "null"],
        ) {
            audit_annotations.push(Expression {
                name: a.key.clone(),
                source: a.value_expression.clone(),
                program,
            });
        }
    }
    if !c.problems.is_empty() {
        return Err(c.problems);
    }
    let Some(constraints) = constraints else {
        return Err(c.problems);
    };
    let variables = c.into_variables(variable_sources);
    Ok(Policy {
        name,
        failure_policy,
        param_kind,
        constraints,
        match_constraints: spec.match_constraints.clone().unwrap_or_default(),
        match_conditions,
        variables,
        validations,
        audit_annotations,
    })
}

/// Compiles a binding.
pub fn binding(doc: &ValidatingAdmissionPolicyBinding) -> Result<Binding, Vec<Located>> {
    let mut problems = Vec::new();
    let name = required_name(&doc.metadata, &mut problems);
    let spec = &doc.spec;
    if spec.policy_name.is_empty() {
        problems.push(located("spec.policyName", "Required value"));
    }
    let mut actions = Vec::new();
    if spec.validation_actions.is_empty() {
        problems.push(located(
            "spec.validationActions",
            "Required value: at least one validation action is required",
        ));
    }
    for (i, a) in spec.validation_actions.iter().enumerate() {
        let action = match a.as_str() {
            "Deny" => Action::Deny,
            "Warn" => Action::Warn,
            "Audit" => Action::Audit,
            other => {
                problems.push(located(
                    format!("spec.validationActions[{i}]"),
                    field_error::unsupported(other, &["Audit", "Deny", "Warn"]),
                ));
                continue;
            }
        };
        if actions.contains(&action) {
            problems.push(located(
                format!("spec.validationActions[{i}]"),
                field_error::duplicate(a),
            ));
        }
        actions.push(action);
    }
    if actions.contains(&Action::Deny) && actions.contains(&Action::Warn) {
        problems.push(located(
            "spec.validationActions",
            field_error::invalid_list(
                &spec.validation_actions,
                "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ),
        ));
    }
    let resources = spec
        .match_resources
        .as_ref()
        .and_then(|m| matcher(m, "spec.matchResources", &mut problems));
    let param_ref = spec.param_ref.as_ref().map(|r| {
        let has_name = r.name.as_ref().is_some_and(|n| !n.is_empty());
        if has_name && r.selector.is_some() {
            problems.push(located(
                "spec.paramRef.name",
                "Forbidden: name and selector are mutually exclusive",
            ));
        }
        if !has_name && r.selector.is_none() {
            problems.push(located(
                "spec.paramRef",
                "Required value: one of name or selector must be specified",
            ));
        }
        let deny_when_missing = match r.parameter_not_found_action.as_deref() {
            Some("Deny") => true,
            Some("Allow") => false,
            None => {
                problems.push(located(
                    "spec.paramRef.parameterNotFoundAction",
                    "Required value",
                ));
                false
            }
            Some(other) => {
                problems.push(located(
                    "spec.paramRef.parameterNotFoundAction",
                    field_error::unsupported(other, &["Allow", "Deny"]),
                ));
                false
            }
        };
        ParamRef {
            name: r.name.clone().filter(|n| !n.is_empty()),
            namespace: r.namespace.clone().filter(|n| !n.is_empty()),
            selector: r
                .selector
                .as_ref()
                .and_then(|s| selector(s, "spec.paramRef.selector", &mut problems)),
            deny_when_missing,
        }
    });
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Binding {
        name,
        policy_name: spec.policy_name.clone(),
        resources,
        param_ref,
        actions,
    })
}

/// `metadata.name`, which both kinds require.
fn required_name(meta: &ObjectMeta, problems: &mut Vec<Located>) -> String {
    let name = meta.name.clone().unwrap_or_default();
    if name.is_empty() {
        problems.push(located(
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    } else if let Err(reason) = crate::selector::dns_subdomain(&name) {
        problems.push(located(
            "metadata.name",
            field_error::invalid(&name, &reason),
        ));
    }
    name
}

fn matcher(m: &MatchResources, at: &str, problems: &mut Vec<Located>) -> Option<Matcher> {
    under(Matcher::compile(m), at, problems)
}

fn selector(s: &LabelSelector, at: &str, problems: &mut Vec<Located>) -> Option<Selector> {
    under(Selector::from_k8s(s), at, problems)
}

/// The compiled part, or its problems moved under `at`.
fn under<T>(
    compiled: Result<T, Vec<(String, String)>>,
    at: &str,
    problems: &mut Vec<Located>,
) -> Option<T> {
    compiled
        .map_err(|found| {
            problems.extend(
                found
                    .into_iter()
                    .map(|(path, reason)| located(format!("{at}.{path}"), reason)),
            );
        })
        .ok()
}

/// Checks an audit annotation key as the API server does: `<policy>/<key>`
/// a qualified name.
fn annotation_key(policy: &str, key: &str) -> Result<(), String> {
    if policy.is_empty() {
        return Err(field_error::invalid(
            key,
            "requires metadata.name be non-empty",
        ));
    }
    let qualified = format!("{policy}/{key}");
    crate::selector::qualified_name(&qualified).map_err(|e| field_error::invalid(&qualified, &e))
}
