//! The `ValidationRules` document as written: its wire shape (unknown fields
//! refused, so that a typo is an error and not a rule silently not run) and
//! the checks that need no schema.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use serde::Deserialize;
use serde_json::Value as Json;

use super::exempt::{Exemptions, LabelSelector};

/// `apiVersion` of a rules document.
pub const API_VERSION: &str = "celhook.dev/v1alpha1";
/// `kind` of a rules document.
pub const KIND: &str = "ValidationRules";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Wire {
    #[allow(dead_code)] // Checked by the loader before this parse.
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    metadata: WireMeta,
    spec: WireSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireMeta {
    #[serde(default)]
    name: String,
    // Tools that write manifests add these; they mean nothing here.
    #[serde(default)]
    #[allow(dead_code)]
    labels: Option<Json>,
    #[serde(default)]
    #[allow(dead_code)]
    annotations: Option<Json>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireSpec {
    target: WireTarget,
    #[serde(default)]
    validation_actions: Option<Vec<String>>,
    #[serde(default)]
    exempt: Option<WireExempt>,
    #[serde(default)]
    match_conditions: Vec<MatchCondition>,
    rules: Vec<WireRules>,
}

/// A `spec.matchConditions` entry: as a webhook's, a CEL expression over
/// `object`, `oldObject` and `request` that must be true for the document
/// to apply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchCondition {
    pub name: String,
    pub expression: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireTarget {
    #[serde(default)]
    group: String,
    kind: String,
    #[serde(default)]
    versions: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireExempt {
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    service_accounts: Vec<String>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    object_selector: Option<LabelSelector>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireRules {
    path: String,
    #[serde(rename = "x-kubernetes-validations")]
    validations: Vec<ValidationRule>,
}

/// What a document asks for when a rule fails: the API server's
/// `validationActions` of a ValidatingAdmissionPolicyBinding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Actions {
    pub deny: bool,
    pub warn: bool,
    pub audit: bool,
}

impl Actions {
    /// The actions in lowercase, in the order deny, warn, audit, joined by
    /// `+` (a metrics label: a fixed, small set of values).
    pub fn label(self) -> &'static str {
        match (self.deny, self.warn, self.audit) {
            (true, _, false) => "deny",
            (true, _, true) => "deny+audit",
            (false, true, false) => "warn",
            (false, true, true) => "warn+audit",
            (false, false, true) => "audit",
            (false, false, false) => "",
        }
    }
}

/// One `spec.rules` entry: rules attached at a schema path.
#[derive(Debug, Clone)]
pub struct Attached {
    /// The path as written, e.g. `spec.template.spec.containers[*]`.
    pub path: String,
    pub validations: Vec<ValidationRule>,
}

/// A rules document whose fields are well formed (its rules not compiled yet).
#[derive(Debug, Clone)]
pub struct Document {
    pub name: String,
    pub group: String,
    pub kind: String,
    /// `None`: every version the kind's schema has.
    pub versions: Option<Vec<String>>,
    pub actions: Actions,
    pub exempt: Exemptions,
    pub match_conditions: Vec<MatchCondition>,
    pub rules: Vec<Attached>,
}

/// A problem of a document: the path in the document and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub path: String,
    pub reason: String,
}

fn problem(path: &str, reason: impl Into<String>) -> Problem {
    Problem {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Reads a document, reporting every field problem found without a schema.
pub fn parse(doc: Json) -> Result<Document, Vec<Problem>> {
    let wire: Wire = serde_json::from_value(doc)
        .map_err(|e| vec![problem("", format!("not a valid {KIND} document: {e}"))])?;
    let mut problems = Vec::new();
    let name = wire.metadata.name;
    if name.is_empty() {
        problems.push(problem("metadata.name", "Required value"));
    } else if let Err(reason) = crate::selector::dns_subdomain(&name) {
        problems.push(problem(
            "metadata.name",
            crate::field_error::invalid(&name, &reason),
        ));
    }
    let spec = wire.spec;
    if spec.target.kind.is_empty() {
        problems.push(problem("spec.target.kind", "Required value"));
    }
    if let Some(versions) = &spec.target.versions {
        if versions.is_empty() {
            problems.push(problem(
                "spec.target.versions",
                "Invalid value: []: leave it out for every version, or name at least one",
            ));
        }
    }
    let actions = actions(spec.validation_actions.as_deref(), &mut problems);
    if spec.rules.is_empty() {
        problems.push(problem("spec.rules", "Required value: at least one entry"));
    }
    for (i, r) in spec.rules.iter().enumerate() {
        if r.validations.is_empty() {
            problems.push(problem(
                &format!("spec.rules[{i}].x-kubernetes-validations"),
                "Required value: at least one rule",
            ));
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in spec.match_conditions.iter().enumerate() {
        let path = format!("spec.matchConditions[{i}]");
        if c.name.is_empty() {
            problems.push(problem(&format!("{path}.name"), "Required value"));
        } else if names.contains(&c.name.as_str()) {
            problems.push(problem(
                &format!("{path}.name"),
                crate::field_error::duplicate(&c.name),
            ));
        }
        names.push(&c.name);
        if c.expression.trim().is_empty() {
            problems.push(problem(&format!("{path}.expression"), "Required value"));
        }
    }
    // The API server's limit on a webhook's matchConditions.
    if spec.match_conditions.len() > 64 {
        problems.push(problem(
            "spec.matchConditions",
            format!(
                "Too many: {}: must have at most 64 items",
                spec.match_conditions.len()
            ),
        ));
    }
    let exempt = spec.exempt.unwrap_or_default();
    let exempt = Exemptions::new(
        exempt.users,
        exempt.groups,
        &exempt.service_accounts,
        exempt.namespaces,
        exempt.object_selector,
    )
    .unwrap_or_else(|found| {
        problems.extend(found.into_iter().map(|(p, r)| problem(&p, r)));
        Exemptions::default()
    });
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Document {
        name,
        group: spec.target.group,
        kind: spec.target.kind,
        versions: spec.target.versions,
        actions,
        exempt,
        match_conditions: spec.match_conditions,
        rules: spec
            .rules
            .into_iter()
            .map(|r| Attached {
                path: r.path,
                validations: r.validations,
            })
            .collect(),
    })
}

/// `spec.validationActions`, checked as the API server checks a binding's:
/// known values, no repeats, and not Deny with Warn (a denial already tells
/// the client). Absent means `[Deny]`.
fn actions(written: Option<&[String]>, problems: &mut Vec<Problem>) -> Actions {
    let Some(written) = written else {
        return Actions {
            deny: true,
            ..Actions::default()
        };
    };
    let path = "spec.validationActions";
    if written.is_empty() {
        problems.push(problem(
            path,
            "Required value: at least one of Deny, Warn, Audit",
        ));
    }
    let mut actions = Actions::default();
    for (i, a) in written.iter().enumerate() {
        let slot = match a.as_str() {
            "Deny" => &mut actions.deny,
            "Warn" => &mut actions.warn,
            "Audit" => &mut actions.audit,
            other => {
                problems.push(problem(
                    &format!("{path}[{i}]"),
                    crate::field_error::unsupported(other, &["Audit", "Deny", "Warn"]),
                ));
                continue;
            }
        };
        if *slot {
            problems.push(problem(
                &format!("{path}[{i}]"),
                crate::field_error::duplicate(a),
            ));
        }
        *slot = true;
    }
    if actions.deny && actions.warn {
        problems.push(problem(
            path,
            "Invalid value: [\"Deny\",\"Warn\"]: Deny and Warn may not be used together",
        ));
    }
    actions
}
