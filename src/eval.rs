//! Offline evaluation for `celhook eval`: what the webhook would answer for
//! each object of a file (and its old object) against a CRD, and the value
//! of a single expression in the Kubernetes CEL environment. The same
//! compile and evaluate path as the server, without the server.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use celhook_json::Value as Json;

use crate::cel::{self, Program};
use crate::cli::OutputFormat;
use crate::config::{self, Catalog};
use crate::kube_version::KubeVersion;
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

fn file_error(path: &Path, reason: String) -> CommandError {
    CommandError::File {
        path: path.display().to_string(),
        reason,
    }
}

/// Reads a YAML or JSON file holding one document.
pub fn read_document(path: &Path) -> Result<Json, CommandError> {
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e.to_string()))?;
    serde_norway::from_str(&text).map_err(|e| file_error(path, format!("not YAML or JSON: {e}")))
}

/// The objects of a file, each with its label for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Objects {
    /// `document <i>` (`document <i> item <j>` in a `List`) and the object.
    pub objects: Vec<(String, Json)>,
    /// More than one document, or a `List`: each answer says which object
    /// it is for.
    pub several: bool,
}

/// Reads the objects of a YAML or JSON file: each document (blank ones
/// skipped), the items of a `v1` `List` in their place.
pub fn read_objects(path: &Path) -> Result<Objects, CommandError> {
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e.to_string()))?;
    objects_of(path, &text)
}

/// The objects of several sources, in order: files, directories (their
/// `*.yaml`, `*.yml` and `*.json` files, subdirectories included, as a
/// config directory is read) and `-` (standard input). With more than one
/// file, each label starts with the file's name.
pub fn read_all_objects(paths: &[PathBuf]) -> Result<Objects, CommandError> {
    let mut files = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" || path.is_file() {
            files.push(path.clone());
            continue;
        }
        let found =
            config::files::config_files(path).map_err(|e| file_error(path, e.to_string()))?;
        files.extend(
            found
                .into_iter()
                .filter(|f| !config::files::is_kustomization(&f.display().to_string())),
        );
    }
    let named = files.len() > 1;
    let mut all = Objects {
        objects: Vec::new(),
        several: named,
    };
    for file in &files {
        let read = if file.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| file_error(Path::new("<stdin>"), e.to_string()))?;
            objects_of(Path::new("<stdin>"), &text)?
        } else {
            read_objects(file)?
        };
        all.several |= read.several;
        let shown = if file.as_os_str() == "-" {
            "<stdin>".to_owned()
        } else {
            file.display().to_string()
        };
        all.objects
            .extend(read.objects.into_iter().map(|(label, object)| {
                if named {
                    (format!("{shown}: {label}"), object)
                } else {
                    (label, object)
                }
            }));
    }
    if all.objects.is_empty() {
        return Err(CommandError::NoMatch(
            "no objects in the given files".into(),
        ));
    }
    Ok(all)
}

fn objects_of(path: &Path, text: &str) -> Result<Objects, CommandError> {
    let mut objects = Vec::new();
    let mut several = false;
    let mut documents = 0;
    for (i, de) in serde_norway::Deserializer::from_str(text).enumerate() {
        let doc: Json = serde::Deserialize::deserialize(de)
            .map_err(|e| file_error(path, format!("document {i}: not YAML or JSON: {e}")))?;
        if doc.is_null() {
            continue;
        }
        documents += 1;
        let is_list = doc.get("apiVersion").and_then(Json::as_str) == Some("v1")
            && doc.get("kind").and_then(Json::as_str) == Some("List");
        match doc {
            Json::Object(mut list) if is_list => {
                several = true;
                let Some(Json::Array(items)) = list.remove("items") else {
                    return Err(file_error(
                        path,
                        format!("document {i}: a List without an items array"),
                    ));
                };
                for (j, item) in items.into_iter().enumerate() {
                    objects.push((format!("document {i} item {j}"), item));
                }
            }
            doc => objects.push((format!("document {i}"), doc)),
        }
    }
    if objects.is_empty() {
        return Err(file_error(path, "holds no object".into()));
    }
    Ok(Objects {
        objects,
        several: several || documents > 1,
    })
}

/// The CRDs of `crd_file` (a file, or a config directory), loaded and compiled.
pub fn load_crd(crd_file: &Path, kubernetes: KubeVersion) -> Result<Catalog, CommandError> {
    let files = config::files::config_files(crd_file)
        .map_err(|e| file_error(crd_file, format!("cannot read file: {e}")))?;
    let options = config::Options {
        kubernetes,
        written: false,
    };
    let loaded = config::load_files(&files, options);
    if loaded.report.has_errors() {
        let lines: Vec<String> = crate::config::report::problems(&loaded.report)
            .map(|p| crate::config::report::format_problem(&p))
            .collect();
        return Err(CommandError::Config(lines.join("\n")));
    }
    Ok(loaded.catalog)
}

/// `eval --object`: the answer for every object of `object_file` (paired
/// in order with those of `old_file`), printed as `output` says, and
/// whether every one was allowed.
pub fn answer_objects(
    crd_file: &Path,
    version: Option<&str>,
    object_files: &[PathBuf],
    old_file: Option<&Path>,
    output: OutputFormat,
    kubernetes: KubeVersion,
) -> Result<(String, bool), CommandError> {
    let Objects { objects, several } = read_all_objects(object_files)?;
    let olds = match old_file {
        Some(old_file) => {
            let olds = read_objects(old_file)?.objects;
            if olds.len() != objects.len() {
                return Err(file_error(
                    old_file,
                    format!(
                        "holds {} object(s) and --object {}: --old must hold one old object for each, in the same order",
                        olds.len(),
                        objects.len()
                    ),
                ));
            }
            olds.into_iter().map(|(_, old)| Some(old)).collect()
        }
        None => vec![None; objects.len()],
    };
    let catalog = load_crd(crd_file, kubernetes)?;
    let mut answers = Vec::with_capacity(objects.len());
    for ((label, object), old) in objects.iter().zip(&olds) {
        let label = format!(
            "{label} ({})",
            crate::conversion::guard::display_name(object.get("metadata"))
        );
        let response =
            eval_object(&catalog, version, object, old.as_ref()).map_err(|e| match e {
                CommandError::NoMatch(m) if several => {
                    CommandError::NoMatch(format!("{label}: {m}"))
                }
                other => other,
            })?;
        answers.push((label, response));
    }
    let allowed = answers.iter().all(|(_, r)| r.allowed);
    let text = match output {
        OutputFormat::Text if several => answers
            .iter()
            .map(|(label, r)| format!("{label}: {}", render_answer(r)))
            .collect(),
        OutputFormat::Text => answers.iter().map(|(_, r)| render_answer(r)).collect(),
        OutputFormat::Json => {
            // The AdmissionReview the server would send, pretty-printed.
            // With several objects each review also names its object.
            let reviews: Vec<Json> = answers
                .iter()
                .map(|(label, r)| {
                    let bytes =
                        crate::review::encode_admission(crate::review::ReviewVersion::V1, r)
                            .unwrap_or_default();
                    let mut review: Json = serde_json::from_slice(&bytes).unwrap_or_default();
                    if several {
                        review["object"] = Json::from(label.as_str());
                    }
                    review
                })
                .collect();
            let doc = match reviews.as_slice() {
                [one] if !several => one.clone(),
                _ => Json::Array(reviews),
            };
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
        }
    };
    Ok((text, allowed))
}

/// The text answer for one object: `allowed`, or `denied:` with the status message and
/// one line per cause; ratcheting warnings follow.
pub fn render_answer(response: &crate::review::AdmissionResponse) -> String {
    let mut out = String::new();
    if response.allowed {
        out.push_str("allowed\n");
    } else if let Some(status) = &response.status {
        let _ = writeln!(out, "denied: {}", status.message);
        for cause in status.details.iter().flat_map(|d| d.causes.iter()) {
            let _ = writeln!(
                out,
                "  {} ({}): {}",
                cause.field, cause.reason, cause.message
            );
        }
    } else {
        out.push_str("denied\n");
    }
    for w in &response.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

/// What the webhook answers for `object` (an UPDATE when `old` is given, a
/// CREATE otherwise) against the CRDs of `catalog`.
pub fn eval_object(
    catalog: &Catalog,
    version: Option<&str>,
    object: &Json,
    old: Option<&Json>,
) -> Result<AdmissionResponse, CommandError> {
    let kind = pick_kind(catalog, version, object)?;
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
        user: String::new(),
        groups: Vec::new(),
        object: Some(object.clone()),
        old_object: old.cloned(),
        dry_run: true,
        details: Default::default(),
    };
    Ok(crate::admission::review(catalog, &request, &crate::admission::OFFLINE).response)
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
    let target = catalog.target(group, version, kind);
    if target.crd.is_some() || !target.rules.is_empty() {
        return Ok(GroupVersionKind {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        });
    }
    let mut served: Vec<String> = catalog
        .versions()
        .map(|v| format!("{}/{} {}", v.group, v.version, v.kind))
        .chain(catalog.rule_sets().map(|s| {
            let gv = if s.info.group.is_empty() {
                s.version.clone()
            } else {
                format!("{}/{}", s.info.group, s.version)
            };
            format!("{gv} {} (rules document {})", s.info.kind, s.info.name)
        }))
        .collect();
    served.sort();
    Err(CommandError::NoMatch(format!(
        "the object is {api_version:?} kind {kind:?} (version {version:?}), which neither a CRD nor a rules document of the config covers; they cover: {}",
        served.join(", ")
    )))
}

/// Evaluates `expr` with `self` bound to `this` (JSON null when absent)
/// and, when `old` is given, `oldSelf` to it (a transition rule; without
/// it `oldSelf` is undeclared), typed dynamically. Returns the result as
/// JSON, or the runtime error text.
pub fn eval_expr(
    expr: &str,
    this: Option<&Json>,
    old: Option<&Json>,
    kubernetes: KubeVersion,
) -> Result<Result<Json, String>, CommandError> {
    let schema = Schema::untyped(true);
    let env = if old.is_some() {
        cel::Environment::crd_rule(false)
    } else {
        cel::Environment::conversion()
    }
    .at(kubernetes.stored());
    let program =
        Program::compile(expr, &schema, env).map_err(|e| CommandError::Compile(e.message))?;
    let null = Json::Null;
    let value = cel::Value::from_json(this.unwrap_or(&null), &schema);
    let old = old.map(|old| cel::Value::from_json(old, &schema));
    let (result, _) = program.eval(value, old, cel::PER_EXPRESSION_COST_LIMIT);
    Ok(result.map(|v| cel::to_json(&v)).map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_evaluate_over_a_dynamic_self() {
        let this = celhook_json::json!({"a": [1, 2, 3]});
        assert_eq!(
            eval_expr(
                "self.a.map(x, x * 2)",
                Some(&this),
                None,
                KubeVersion::default()
            )
            .unwrap(),
            Ok(celhook_json::json!([2, 4, 6]))
        );
        assert_eq!(
            eval_expr("self.b", Some(&this), None, KubeVersion::default()).unwrap(),
            Err("no such key: b".to_owned())
        );
        assert!(matches!(
            eval_expr("self.", None, None, KubeVersion::default()),
            Err(CommandError::Compile(_))
        ));
    }

    #[test]
    fn old_self_is_declared_only_with_an_old_value() {
        let (this, old) = (celhook_json::json!({"n": 3}), celhook_json::json!({"n": 2}));
        assert_eq!(
            eval_expr(
                "self.n - oldSelf.n",
                Some(&this),
                Some(&old),
                KubeVersion::default()
            )
            .unwrap(),
            Ok(celhook_json::json!(1))
        );
        match eval_expr(
            "self.n - oldSelf.n",
            Some(&this),
            None,
            KubeVersion::default(),
        ) {
            Err(CommandError::Compile(m)) => {
                assert!(m.contains("undeclared reference to 'oldSelf'"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn files_of_several_documents_and_lists_are_read_object_by_object() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let one = read_objects(&write("one.yaml", "---\na: 1\n")).unwrap();
        assert_eq!(
            one.objects,
            [("document 0".to_owned(), celhook_json::json!({"a": 1}))]
        );
        assert!(!one.several);
        let docs = read_objects(&write("two.yaml", "a: 1\n---\n---\nb: 2\n")).unwrap();
        let labels: Vec<&str> = docs.objects.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["document 0", "document 2"]);
        assert!(docs.several);
        let list = read_objects(&write(
            "list.json",
            r#"{"apiVersion": "v1", "kind": "List", "items": [{"a": 1}]}"#,
        ))
        .unwrap();
        assert_eq!(list.objects[0].0, "document 0 item 0");
        assert!(list.several);
        for (name, text, reason) in [
            ("empty.yaml", "# nothing\n", "holds no object"),
            (
                "bad.yaml",
                "a: 1\n---\nb: [\n",
                "document 1: not YAML or JSON",
            ),
            (
                "nolist.yaml",
                "{apiVersion: v1, kind: List}",
                "a List without an items array",
            ),
        ] {
            let err = read_objects(&write(name, text)).unwrap_err().to_string();
            assert!(err.contains(name) && err.contains(reason), "{err}");
        }
    }
}
