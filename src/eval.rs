//! Offline evaluation for `celhook eval`: what the webhook would answer for
//! an object (and old object) against a CRD, and the value of a single
//! expression in the Kubernetes CEL environment. The same compile and
//! evaluate path as the server, without the server.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::cel::{self, Program};
use crate::config::{self, Catalog};
use crate::review::{AdmissionRequest, AdmissionResponse, GroupVersionKind, Operation};
use crate::schema::Schema;

/// Why an offline evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A file could not be read or parsed.
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    /// The CRD file has problems (each line one problem).
    #[error("the CRD does not load:\n{0}")]
    Config(String),
    /// The object does not name a version and kind the CRD serves.
    #[error("{0}")]
    NoMatch(String),
    /// The expression does not compile.
    #[error("{0}")]
    Compile(String),
}

/// Reads a YAML or JSON file holding one document.
pub fn read_document(path: &Path) -> Result<Json, CommandError> {
    let err = |reason: String| CommandError::File {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    serde_norway::from_str(&text).map_err(|e| err(format!("not YAML or JSON: {e}")))
}

/// What the webhook answers for `object` (an UPDATE when `old` is given, a
/// CREATE otherwise) against the CRD in `crd_file`.
pub fn eval_object(
    crd_file: &Path,
    version: Option<&str>,
    object: &Json,
    old: Option<&Json>,
) -> Result<AdmissionResponse, CommandError> {
    let loaded = config::load_files(&[PathBuf::from(crd_file)]);
    if loaded.report.has_errors() {
        let lines: Vec<String> = crate::config::report::problems(&loaded.report)
            .map(|p| crate::config::report::format_problem(&p))
            .collect();
        return Err(CommandError::Config(lines.join("\n")));
    }
    let kind = pick_kind(&loaded.catalog, version, object)?;
    let request = AdmissionRequest {
        uid: "celhook-eval".into(),
        name: object
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned(),
        namespace: object
            .pointer("/metadata/namespace")
            .and_then(Json::as_str)
            .map(str::to_owned),
        kind,
        operation: if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        },
        object: Some(object.clone()),
        old_object: old.cloned(),
        dry_run: true,
    };
    Ok(loaded.catalog.review(&request))
}

/// The group/version/kind to validate as: the object's own, or `version`
/// of the only kind the file defines.
fn pick_kind(
    catalog: &Catalog,
    version: Option<&str>,
    object: &Json,
) -> Result<GroupVersionKind, CommandError> {
    let api_version = object
        .get("apiVersion")
        .and_then(Json::as_str)
        .unwrap_or_default();
    let (group, obj_version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let kind = object
        .get("kind")
        .and_then(Json::as_str)
        .unwrap_or_default();
    let version = version.unwrap_or(obj_version);
    if catalog.lookup(group, version, kind).is_some() {
        return Ok(GroupVersionKind {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        });
    }
    let served: Vec<String> = catalog
        .versions()
        .map(|v| format!("{}/{} {}", v.group, v.version, v.kind))
        .collect();
    Err(CommandError::NoMatch(format!(
        "the object is {api_version:?} kind {kind:?} (version {version:?}), which the CRD does not define; it defines: {}",
        served.join(", ")
    )))
}

/// Evaluates `expr` with `self` bound to `this` (JSON null when absent),
/// typed dynamically. Returns the result as JSON, or the runtime error text.
pub fn eval_expr(expr: &str, this: Option<&Json>) -> Result<Result<Json, String>, CommandError> {
    let schema = Schema::untyped(true);
    let program = Program::compile(expr, &schema, cel::Environment::conversion())
        .map_err(|e| CommandError::Compile(e.message))?;
    let null = Json::Null;
    let value = cel::Value::from_json(this.unwrap_or(&null), &schema);
    let (result, _) = program.eval(value, None, cel::PER_EXPRESSION_COST_LIMIT);
    Ok(result.map(|v| cel::to_json(&v)).map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_evaluate_over_a_dynamic_self() {
        let this = serde_json::json!({"a": [1, 2, 3]});
        assert_eq!(
            eval_expr("self.a.map(x, x * 2)", Some(&this)).unwrap(),
            Ok(serde_json::json!([2, 4, 6]))
        );
        assert_eq!(
            eval_expr("self.b", Some(&this)).unwrap(),
            Err("no such key: b".to_owned())
        );
        assert!(matches!(
            eval_expr("self.", None),
            Err(CommandError::Compile(_))
        ));
    }
}
