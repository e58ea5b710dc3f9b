//! Rules documents (`celhook.dev/v1alpha1` `ValidationRules`): CRD-style
//! `x-kubernetes-validations` attached to schema paths of any kind, a
//! built-in kind (its schema embedded, see `kinds`) or a CRD in the config
//! (the vendor's manifest, untouched), run with exactly the CRD semantics:
//! field-scoped `self`, transition rules correlated by list-map keys,
//! ratcheting, cost limits. Each document says what a failure does (Deny,
//! Warn, Audit) and whom it exempts.

pub mod document;
pub mod exempt;
pub mod path;

use std::sync::Arc;

use celhook_json::Value as Json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

use crate::cel::{self, Program};
use crate::kube_version::KubeVersion;
use crate::metrics::RuleObservation;
use crate::schema::Schema;
pub use crate::validation::qualified;
use crate::validation::{FieldError, RuleProblem, Validator};
pub use document::{Actions, Document, API_VERSION, KIND};
pub use exempt::{Exemptions, Requester};

/// What every version of a compiled document shares.
#[derive(Debug)]
pub struct Info {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub actions: Actions,
    pub exempt: Exemptions,
    /// Compiled `spec.matchConditions`.
    pub match_conditions: Vec<Condition>,
}

/// A compiled matchCondition.
#[derive(Debug)]
pub struct Condition {
    pub name: String,
    /// The expression as written.
    pub expression: String,
    pub program: Program,
}

/// A document compiled for one version of its kind.
#[derive(Debug)]
pub struct RuleSet {
    pub info: Arc<Info>,
    pub version: String,
    pub validator: Validator,
}

/// A problem of a document, located for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    pub version: Option<String>,
    /// Path in the document (`spec.rules[0].x-kubernetes-validations[1].rule`),
    /// or in the kind's schema when the problem is the schema's.
    pub path: String,
    pub rule: Option<String>,
    pub reason: String,
}

/// Where rules of one `spec.rules` entry landed in a version's schema.
struct Landing {
    entry: usize,
    at: String,
    first: usize,
    count: usize,
}

/// Where a kind's schemas come from: it decides how costs are estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A CRD of the config: the CRD's estimate, exactly.
    Crd,
    /// A built-in kind's embedded schema: per evaluation
    /// (`Validator::compile_per_evaluation`).
    BuiltIn,
}

/// Compiles a document against its kind's schemas, one per version
/// (`sources`: version and `openAPIV3Schema`, in the kind's order).
pub fn compile(
    doc: &Document,
    sources: &[(String, JSONSchemaProps)],
    origin: Origin,
    kubernetes: KubeVersion,
) -> Result<Vec<RuleSet>, Vec<Located>> {
    // celhook runs its own documents: everything the version knows.
    let libraries = kubernetes.stored();
    let mut problems = Vec::new();
    let wanted: Vec<&str> = match &doc.versions {
        Some(listed) => {
            for (i, v) in listed.iter().enumerate() {
                if !sources.iter().any(|(known, _)| known == v) {
                    let known: Vec<&str> = sources.iter().map(|(v, _)| v.as_str()).collect();
                    problems.push(Located {
                        version: None,
                        path: format!("spec.target.versions[{i}]"),
                        rule: None,
                        reason: format!(
                            "Not found: {v:?}: no schema of {} has this version (it has: {})",
                            qualified(&doc.group, &doc.kind),
                            known.join(", ")
                        ),
                    });
                }
            }
            listed.iter().map(String::as_str).collect()
        }
        None => sources.iter().map(|(v, _)| v.as_str()).collect(),
    };
    let match_conditions = match_conditions(doc, libraries, &mut problems);
    let info = Arc::new(Info {
        name: doc.name.clone(),
        group: doc.group.clone(),
        kind: doc.kind.clone(),
        actions: doc.actions,
        exempt: doc.exempt.clone(),
        match_conditions,
    });
    let mut sets = Vec::new();
    for (version, props) in sources {
        if !wanted.contains(&version.as_str()) {
            continue;
        }
        match compile_version(doc, version, props, origin, libraries) {
            Ok(validator) => sets.push(RuleSet {
                info: info.clone(),
                version: version.clone(),
                validator: validator.answering_as(kubernetes),
            }),
            Err(found) => problems.extend(found),
        }
    }
    if problems.is_empty() {
        Ok(sets)
    } else {
        Err(problems)
    }
}

/// Compiles the document's matchConditions as the API server compiles a
/// webhook's: dynamic `object`, `oldObject`, `request`, a bool (or dyn)
/// result.
fn match_conditions(
    doc: &Document,
    libraries: cel::environment::Version,
    problems: &mut Vec<Located>,
) -> Vec<Condition> {
    let any = Schema::untyped(true);
    let mut out = Vec::new();
    for (i, c) in doc.match_conditions.iter().enumerate() {
        let located = |reason: String| Located {
            version: None,
            path: format!("spec.matchConditions[{i}].expression"),
            rule: Some(c.expression.clone()),
            reason,
        };
        let env = cel::Environment::match_condition().at(libraries);
        match Program::compile(&c.expression, &any, env) {
            Ok(program) if matches!(program.result_type(), "bool" | "dyn") => out.push(Condition {
                name: c.name.clone(),
                expression: c.expression.clone(),
                program,
            }),
            Ok(p) => problems.push(located(format!(
                "must evaluate to bool, not {}",
                p.result_type()
            ))),
            Err(e) => problems.push(located(format!("compilation failed: {}", e.message))),
        }
    }
    out
}

fn compile_version(
    doc: &Document,
    version: &str,
    props: &JSONSchemaProps,
    origin: Origin,
    libraries: cel::environment::Version,
) -> Result<Validator, Vec<Located>> {
    let located = |path: String, rule: Option<String>, reason: String| Located {
        version: Some(version.to_owned()),
        path,
        rule,
        reason,
    };
    let mut schema = Schema::from_openapi(props).map_err(|e| {
        vec![located(
            format!(
                "(the schema of {}) {}",
                qualified(&doc.group, &doc.kind),
                e.path
            ),
            None,
            e.reason,
        )]
    })?;
    path::clear_rules(&mut schema);
    let mut problems = Vec::new();
    let mut landings = Vec::new();
    for (entry, attached) in doc.rules.iter().enumerate() {
        let landed = path::parse(&attached.path)
            .and_then(|steps| path::attach(&mut schema, &steps, &attached.validations));
        match landed {
            Ok((at, first)) => landings.push(Landing {
                entry,
                at,
                first,
                count: attached.validations.len(),
            }),
            Err(reason) => {
                problems.push(located(format!("spec.rules[{entry}].path"), None, reason))
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let compiled = match origin {
        Origin::Crd => Validator::compile_as(schema, libraries, false),
        Origin::BuiltIn => Validator::compile_as(schema, libraries, true),
    };
    compiled.map_err(|found| {
        found
            .into_iter()
            .map(|p| {
                let rule = Some(p.rule.clone()).filter(|r| !r.is_empty());
                located(document_path(&landings, &p), rule, p.reason)
            })
            .collect()
    })
}

/// A compiler problem's path in the document's terms: a rule's own path
/// becomes `spec.rules[i].x-kubernetes-validations[j]...`; a schema-wide
/// one (the total cost) stays in the schema's notation.
fn document_path(landings: &[Landing], p: &RuleProblem) -> String {
    for l in landings {
        let Some(rest) = p
            .path
            .strip_prefix(l.at.as_str())
            .and_then(|r| r.strip_prefix(".x-kubernetes-validations["))
        else {
            continue;
        };
        let Some((index, tail)) = rest.split_once(']') else {
            continue;
        };
        let Ok(k) = index.parse::<usize>() else {
            continue;
        };
        if (l.first..l.first + l.count).contains(&k) {
            return format!(
                "spec.rules[{}].x-kubernetes-validations[{}]{tail}",
                l.entry,
                k - l.first
            );
        }
    }
    p.path.clone()
}

/// What the rule sets of one request found, by action.
#[derive(Debug, Default)]
pub struct Outcome<'a> {
    /// Failures of documents that deny.
    pub deny: Vec<FieldError>,
    /// Warning texts: failures of Warn documents, and ratcheted failures.
    pub warnings: Vec<String>,
    /// Failures of Audit documents: (document, failure text).
    pub audit: Vec<(Arc<Info>, String)>,
    /// Documents whose rules failed (for metrics and logs).
    pub failed: Vec<Arc<Info>>,
    /// matchConditions that could not be evaluated: the request is refused
    /// (a document fails closed, as a webhook with failurePolicy Fail).
    pub condition_errors: Vec<String>,
    /// The rules evaluated, for their metrics.
    pub observed: Vec<RuleObservation<'a>>,
}

/// Runs every rule set of the request's kind and version that does not
/// exempt the requester.
pub fn evaluate<'a>(
    sets: &'a [Arc<RuleSet>],
    who: &Requester<'_>,
    object: &Json,
    old: Option<&Json>,
    out: &mut Outcome<'a>,
) {
    for set in sets {
        let info = &set.info;
        if info.exempt.exempts(who) {
            continue;
        }
        if !info.match_conditions.is_empty() && !matches(info, who, object, old, out) {
            continue;
        }
        let found = set.validator.validate(object, old);
        out.observed.extend(found.observed);
        out.warnings.extend(found.warnings);
        if found.errors.is_empty() {
            continue;
        }
        out.failed.push(info.clone());
        if info.actions.warn {
            for e in &found.errors {
                out.warnings.push(format!("{KIND} '{}': {e}", info.name));
            }
        }
        if info.actions.audit {
            for e in &found.errors {
                out.audit.push((info.clone(), e.to_string()));
            }
        }
        if info.actions.deny {
            out.deny.extend(found.errors);
        }
    }
}

/// True when every matchCondition of the document holds (evaluated in
/// order, stopping at the first false one); an error is recorded in
/// `out.condition_errors` and counts as a match.
fn matches(
    info: &Info,
    who: &Requester<'_>,
    object: &Json,
    old: Option<&Json>,
    out: &mut Outcome,
) -> bool {
    let any = Schema::untyped(true);
    let null = Json::Null;
    let request = who.request.unwrap_or(&null);
    for Condition { name, program, .. } in &info.match_conditions {
        let values = [
            cel::Value::from_json(object, &any),
            old.map_or(cel::Value::Null, |o| cel::Value::from_json(o, &any)),
            cel::Value::from_json(request, &any),
        ];
        let (result, _) = program.eval_variables(values, cel::PER_EXPRESSION_COST_LIMIT);
        match result {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return false,
            Ok(other) => out.condition_errors.push(format!(
                "{KIND} '{}': matchCondition '{name}' evaluated to {:?}, not a bool",
                info.name,
                other.type_name()
            )),
            Err(e) => out.condition_errors.push(format!(
                "{KIND} '{}': matchCondition '{name}' could not be evaluated: {e}",
                info.name
            )),
        }
    }
    true
}

#[cfg(test)]
mod tests;
