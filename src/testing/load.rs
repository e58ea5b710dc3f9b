//! Test files read into [`Test`]s: the paths walked, the `ValidationTest`
//! documents parsed, each case's objects read and checked.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value as Json;

use super::{Case, Expect, Problem, Test, API_VERSION, KIND};
use crate::config;
use crate::review::{
    AdmissionRequest, GroupVersionKind, GroupVersionResource, Operation, RequestDetails,
};

/// The tests of every path, in order; problems pushed to `problems`.
pub(super) fn discover(paths: &[PathBuf], problems: &mut Vec<Problem>) -> Vec<Test> {
    let mut tests = Vec::new();
    let file_problem = |path: &Path, reason: String| Problem {
        file: path.display().to_string(),
        document: None,
        case: None,
        reason,
    };
    for path in paths {
        let walked = path.is_dir();
        let files = match config::files::config_files(path) {
            Ok(files) => files,
            Err(e) => {
                problems.push(file_problem(path, format!("cannot read: {e}")));
                continue;
            }
        };
        let mut found = 0;
        for file in files {
            let name = file.display().to_string();
            if walked && config::files::is_kustomization(&name) {
                continue;
            }
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(file_problem(&file, format!("cannot read: {e}")));
                    continue;
                }
            };
            let dir = file.parent().unwrap_or(Path::new(""));
            let (mut in_file, count) = parse_tests(&name, dir, &text, problems);
            if count == 0 && !walked {
                problems.push(file_problem(
                    &file,
                    format!("holds no {API_VERSION} {KIND} document"),
                ));
            }
            found += count;
            tests.append(&mut in_file);
        }
        if found == 0 && walked {
            problems.push(file_problem(
                path,
                format!("no {KIND} document in its *.yaml, *.yml and *.json files"),
            ));
        }
    }
    tests
}

/// The top of a test document; its cases are read one by one so that a
/// problem names its case.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TestDocument {
    #[allow(dead_code)] // checked before parsing
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Deserialize)]
struct Metadata {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    #[serde(default)]
    config: Option<PathBuf>,
    cases: Vec<Json>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CaseDocument {
    name: String,
    #[serde(default)]
    operation: Option<String>,
    #[serde(default)]
    object: Option<celhook_json::Value>,
    #[serde(default)]
    object_file: Option<PathBuf>,
    #[serde(default)]
    old_object: Option<celhook_json::Value>,
    #[serde(default)]
    old_object_file: Option<PathBuf>,
    #[serde(default)]
    user_info: UserInfo,
    #[serde(default)]
    namespace: Option<String>,
    /// The request's resource (for ValidatingAdmissionPolicy rules);
    /// default: the kind's plural in the object's group and version.
    #[serde(default)]
    resource: Option<GroupVersionResource>,
    #[serde(default)]
    sub_resource: Option<String>,
    expect: Expect,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserInfo {
    #[serde(default)]
    username: String,
    #[serde(default)]
    groups: Vec<String>,
}

/// The `ValidationTest` documents of one file (`file` its name, `dir`
/// what its relative paths are relative to), and how many there are,
/// those with problems included. Documents of other kinds are skipped.
pub fn parse_tests(
    file: &str,
    dir: &Path,
    text: &str,
    problems: &mut Vec<Problem>,
) -> (Vec<Test>, usize) {
    let mut tests = Vec::new();
    let mut count = 0;
    for (index, doc) in config::parse_documents(file, text).into_iter().enumerate() {
        let problem = |document: Option<String>, case: Option<String>, reason: String| Problem {
            file: file.to_owned(),
            document,
            case,
            reason,
        };
        let doc = match doc {
            Ok(doc) => doc,
            Err(reason) => {
                problems.push(problem(Some(format!("document {index}")), None, reason));
                continue;
            }
        };
        if doc.get("kind").and_then(Json::as_str) != Some(KIND) {
            continue;
        }
        count += 1;
        let name = doc.pointer("/metadata/name").and_then(Json::as_str);
        let label = match name {
            Some(name) => format!("{KIND} {name} (document {index})"),
            None => format!("{KIND} (document {index})"),
        };
        let api_version = doc.get("apiVersion").and_then(Json::as_str);
        if api_version != Some(API_VERSION) {
            let reason = format!("apiVersion {api_version:?}: expected {API_VERSION:?}");
            problems.push(problem(Some(label), None, reason));
            continue;
        }
        let parsed: TestDocument = match serde_json::from_value(doc) {
            Ok(parsed) => parsed,
            Err(e) => {
                problems.push(problem(Some(label), None, e.to_string()));
                continue;
            }
        };
        let mut test = Test {
            file: file.to_owned(),
            name: parsed.metadata.name,
            label: label.clone(),
            config: parsed.spec.config.map(|c| dir.join(c)),
            cases: Vec::new(),
        };
        let before = problems.len();
        if test.name.is_empty() {
            problems.push(problem(
                Some(label.clone()),
                None,
                "metadata.name is empty".into(),
            ));
        }
        if parsed.spec.cases.is_empty() {
            problems.push(problem(
                Some(label.clone()),
                None,
                "spec.cases is empty".into(),
            ));
        }
        for (i, case) in parsed.spec.cases.into_iter().enumerate() {
            let shown = case
                .get("name")
                .and_then(Json::as_str)
                .map_or_else(|| format!("case {i}"), str::to_owned);
            match read_case(case, dir) {
                Ok(case) if test.cases.iter().any(|c| c.name == case.name) => {
                    problems.push(problem(
                        Some(label.clone()),
                        Some(shown),
                        "a case of this name comes before".into(),
                    ))
                }
                Ok(case) => test.cases.push(case),
                Err(reason) => problems.push(problem(Some(label.clone()), Some(shown), reason)),
            }
        }
        // A test with a bad case is not run at all: its report would
        // otherwise read as complete.
        if problems.len() == before {
            tests.push(test);
        }
    }
    (tests, count)
}

/// One case of a test document, its files read relative to `dir`.
fn read_case(case: Json, dir: &Path) -> Result<Case, String> {
    let case: CaseDocument = serde_json::from_value(case).map_err(|e| e.to_string())?;
    if case.name.is_empty() {
        return Err("name is empty".into());
    }
    let object = inline_or_file("object", case.object, case.object_file, dir)?;
    let old = inline_or_file("oldObject", case.old_object, case.old_object_file, dir)?;
    if case.operation.as_deref() == Some("DELETE") {
        if object.is_some() {
            return Err("operation DELETE: a DELETE has no object, only oldObject".into());
        }
        if old.is_none() {
            return Err("operation DELETE: oldObject or oldObjectFile is required".into());
        }
    } else if object.is_none() {
        return Err("object or objectFile is required".into());
    }
    let operation = match (case.operation.as_deref(), &old) {
        (Some("DELETE"), _) => Operation::Delete,
        (None, None) | (Some("CREATE"), None) => Operation::Create,
        (None, Some(_)) | (Some("UPDATE"), Some(_)) => Operation::Update,
        (Some("CREATE"), Some(_)) => {
            return Err("operation CREATE: a CREATE has no oldObject".into())
        }
        (Some("UPDATE"), None) => {
            return Err("operation UPDATE: oldObject or oldObjectFile is required".into())
        }
        (Some(other), _) => {
            return Err(format!(
                "operation {other:?}: expected \"CREATE\", \"UPDATE\" or \"DELETE\""
            ))
        }
    };
    let Some(shown) = object.as_ref().or(old.as_ref()) else {
        return Err("object or objectFile is required".into());
    };
    let api_version = shown
        .get("apiVersion")
        .and_then(celhook_json::Value::as_str);
    let kind = shown.get("kind").and_then(celhook_json::Value::as_str);
    let (Some(api_version), Some(kind)) = (api_version, kind) else {
        return Err("the object has no apiVersion or no kind".into());
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let metadata = |field: &str| {
        shown
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(celhook_json::Value::as_str)
            .map(str::to_owned)
    };
    let request = AdmissionRequest {
        uid: "celhook-test".into(),
        kind: GroupVersionKind {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        },
        name: metadata("name").unwrap_or_default(),
        namespace: case
            .namespace
            .or_else(|| metadata("namespace"))
            .filter(|ns| !ns.is_empty()),
        operation,
        user: case.user_info.username,
        groups: case.user_info.groups,
        dry_run: true,
        details: RequestDetails {
            resource: case.resource.unwrap_or_else(|| GroupVersionResource {
                group: group.to_owned(),
                version: version.to_owned(),
                resource: crate::kinds::resource_of(kind),
            }),
            sub_resource: case.sub_resource.unwrap_or_default(),
            ..RequestDetails::default()
        },
        object,
        old_object: old,
    };
    let expect = case.expect;
    if expect.allowed
        && (expect.code.is_some() || expect.messages.is_some() || expect.causes.is_some())
    {
        return Err(
            "expect: code, messages and causes describe a denial; they go with allowed: false"
                .into(),
        );
    }
    Ok(Case {
        name: case.name,
        request,
        expect,
    })
}

/// `field` given inline or as `<field>File` (relative to `dir`): a JSON object.
fn inline_or_file(
    field: &str,
    inline: Option<celhook_json::Value>,
    file: Option<PathBuf>,
    dir: &Path,
) -> Result<Option<celhook_json::Value>, String> {
    let value = match (inline, file) {
        (Some(_), Some(_)) => return Err(format!("{field} and {field}File: give one")),
        (Some(value), None) => value,
        (None, Some(file)) => {
            crate::eval::read_document(&dir.join(file)).map_err(|e| format!("{field}File: {e}"))?
        }
        (None, None) => return Ok(None),
    };
    if value.is_object() {
        Ok(Some(value))
    } else {
        Err(format!("{field}: expected a mapping (an object)"))
    }
}
