//! The informational type check the API server runs on a policy once it
//! is written: its validations compiled again with `object` and
//! `oldObject` typed by the schema of each kind the policy matches (and
//! `params` by its paramKind's), the errors reported as warnings, never
//! as refusals (the policy stays valid: `object` is dynamic when it runs).

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicySpec;

use crate::cel::{Environment, Program};
use crate::schema::Schema;

/// The most kinds the API server checks a policy against.
pub const MAX_KINDS: usize = 10;

/// A warning about one expression (`spec.validations[0].expression`).
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub field_ref: String,
    pub warning: String,
}

/// A kind a policy matches: its name as Go prints it (`apps/v1,
/// Kind=Deployment`) and its schema.
pub struct Checked<'a> {
    pub label: String,
    pub schema: &'a Schema,
}

/// The exact (group, version, resource) triples the resource rules name:
/// rules with a `*` group or version are skipped, resources with a `*`
/// or a subresource dropped, as the API server does.
pub fn resources(spec: &ValidatingAdmissionPolicySpec) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let rules = spec
        .match_constraints
        .as_ref()
        .and_then(|m| m.resource_rules.as_ref());
    for rule in rules.into_iter().flatten() {
        let groups = rule.api_groups.as_deref().unwrap_or_default();
        let versions = rule.api_versions.as_deref().unwrap_or_default();
        if groups.iter().chain(versions).any(|x| x.contains('*')) {
            continue;
        }
        for g in groups {
            for v in versions {
                for r in rule.resources.iter().flatten() {
                    if !r.contains('*') && !r.contains('/') {
                        out.push((g.clone(), v.clone(), r.clone()));
                    }
                }
            }
        }
    }
    out
}

/// Type-checks the validations of `spec` against each of `kinds` (at
/// most [`MAX_KINDS`], in the order given), `params` typed by
/// `params_schema` when known.
pub fn check(
    spec: &ValidatingAdmissionPolicySpec,
    kinds: &[Checked<'_>],
    params_schema: Option<&Schema>,
    versions: crate::cel::environment::Versions,
) -> Vec<Warning> {
    let has_params = spec.param_kind.is_some();
    let env = super::expressions::environment(false, has_params, versions);
    let message_env = super::expressions::environment(true, has_params, versions);
    let validations = spec.validations.as_deref().unwrap_or_default();
    let variables = spec.variables.as_deref().unwrap_or_default();
    // Per expression, the kinds' errors in order.
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    let mut add =
        |field_ref: String, entry: String| match found.iter_mut().find(|(f, _)| *f == field_ref) {
            Some((_, entries)) => entries.push(entry),
            None => found.push((field_ref, vec![entry])),
        };
    for kind in kinds.iter().take(MAX_KINDS) {
        let schemas = [
            Some(kind.schema),
            Some(kind.schema),
            None,
            params_schema,
            None,
            None,
        ];
        // Variables are typed too (their own errors are not reported).
        let mut declared: Vec<(String, Option<Program>)> = Vec::new();
        let composited = !variables.is_empty();
        for v in variables {
            let program = compile(&v.expression, env, composited, &declared, &schemas).ok();
            declared.push((v.name.clone(), program));
        }
        for (i, v) in validations.iter().enumerate() {
            if let Err(e) = compile(&v.expression, env, composited, &declared, &schemas) {
                add(
                    format!("spec.validations[{i}].expression"),
                    format!("{}: {}\n", kind.label, e),
                );
            }
            if let Some(m) = v
                .message_expression
                .as_deref()
                .filter(|m| !m.trim().is_empty())
            {
                if let Err(e) = compile(m, message_env, composited, &declared, &schemas) {
                    add(
                        format!("spec.validations[{i}].messageExpression"),
                        format!("{}: {}\n", kind.label, e),
                    );
                }
            }
        }
    }
    found
        .into_iter()
        .map(|(field_ref, entries)| Warning {
            field_ref,
            warning: entries.join("\n"),
        })
        .collect()
}

fn compile(
    source: &str,
    env: Environment,
    composited: bool,
    declared: &[(String, Option<Program>)],
    schemas: &[Option<&Schema>],
) -> Result<Program, String> {
    let vars: Vec<(&str, Option<&Program>)> = declared
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_ref()))
        .collect();
    Program::compile_typed(source, env, composited.then_some(&vars[..]), schemas)
        .map_err(|e| e.message)
}

/// A kind as Go's `schema.GroupVersionKind` prints it.
pub fn label(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}
