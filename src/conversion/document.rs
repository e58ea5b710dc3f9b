//! The conversion document: parsing, compiling against the CRD's schemas,
//! and running its example objects through every round trip.
//!
//! ```yaml
//! apiVersion: celhook.dev/v1alpha1
//! kind: Conversion
//! metadata:
//!   name: crontabs.example.com
//! spec:
//!   crd: crontabs.example.com      # metadata.name of the CRD
//!   hub: v1                        # every conversion passes through this version
//!   versions:                      # per other version; a missing one copies through
//!     v1beta1:
//!       toHub:                     # computed from self = the v1beta1 object
//!         - path: host
//!           expr: "self.?hostPort.optMap(hp, hp.contains(':') ? hp.substring(0, hp.indexOf(':')) : hp)"
//!       fromHub:                   # computed from self = the v1 object
//!         - path: hostPort
//!           expr: "..."
//!   examples: [ ... ]              # objects whose round trips `check` runs
//!   lossy:                         # fields that may survive only in the stash
//!     v1: [port]                   #   when v1 objects convert to another version
//! ```

use std::collections::{BTreeMap, HashMap};

use celhook_json::Value as Json;
use serde::Deserialize;

use super::{guard, Assignment, Conversion, VersionPlan};
use crate::cel::{Environment, Program};
use crate::schema::Schema;

/// apiVersion of conversion documents.
pub const CONVERSION_API_VERSION: &str = "celhook.dev/v1alpha1";
/// kind of conversion documents.
pub const CONVERSION_KIND: &str = "Conversion";

/// What the loader knows of a compiled CRD.
#[derive(Debug, Clone, Copy)]
pub struct CrdInfo<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `spec.group`.
    pub group: &'a str,
    /// `spec.names.kind`.
    pub kind: &'a str,
}

/// One problem of a conversion document.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentProblem {
    /// The CRD the document names, once known.
    pub crd: Option<String>,
    /// The version concerned, if any.
    pub version: Option<String>,
    /// Where in the document, e.g. `spec.versions.v1beta1.toHub[0].expr`.
    pub path: String,
    /// The expression, for expression problems.
    pub rule: Option<String>,
    /// What is wrong.
    pub reason: String,
}

// apiVersion, kind and metadata are declared so that deny_unknown_fields
// accepts them; the loader has already matched apiVersion and kind.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Document {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<serde_json::Value>,
    spec: Spec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    // Read before parsing, by `crd_name`, to find the CRD.
    #[allow(dead_code)]
    crd: String,
    hub: String,
    #[serde(default)]
    versions: BTreeMap<String, VersionDoc>,
    #[serde(default)]
    examples: Vec<Json>,
    /// Per source version, the fields (as `check` names them) that may
    /// reach other versions only through the stash.
    #[serde(default)]
    lossy: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VersionDoc {
    #[serde(default)]
    to_hub: Vec<AssignmentDoc>,
    #[serde(default)]
    from_hub: Vec<AssignmentDoc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AssignmentDoc {
    path: String,
    expr: String,
}

/// A compiled document and the examples it carries.
#[derive(Debug)]
pub struct Compiled {
    /// The conversion, ready to serve.
    pub conversion: Conversion,
    /// `spec.examples`, for [`check_examples`].
    pub examples: Vec<Json>,
}

/// The CRD a document names (`spec.crd`), if the document has one.
pub fn crd_name(doc: &serde_json::Value) -> Option<&str> {
    doc.pointer("/spec/crd").and_then(serde_json::Value::as_str)
}

/// Parses and compiles a conversion document for the CRD `crd` with the
/// given versions (name, schema, in the CRD's order). Reports every problem.
pub fn compile(
    doc: serde_json::Value,
    crd: CrdInfo<'_>,
    versions: &[(String, Schema)],
    libraries: crate::cel::environment::Version,
) -> Result<Compiled, Vec<DocumentProblem>> {
    let problem =
        |version: Option<&str>, path: String, rule: Option<&str>, reason: String| DocumentProblem {
            crd: Some(crd.name.to_owned()),
            version: version.map(str::to_owned),
            path,
            rule: rule.map(str::to_owned),
            reason,
        };
    let doc: Document = serde_json::from_value(doc).map_err(|e| {
        vec![problem(
            None,
            "spec".into(),
            None,
            format!("not a valid Conversion: {e}"),
        )]
    })?;
    let spec = doc.spec;
    let schemas: HashMap<&str, &Schema> = versions.iter().map(|(v, s)| (v.as_str(), s)).collect();
    let names = || {
        versions
            .iter()
            .map(|(v, _)| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut problems = Vec::new();
    let Some(hub_schema) = schemas.get(spec.hub.as_str()).copied() else {
        return Err(vec![problem(
            None,
            "spec.hub".into(),
            None,
            format!(
                "{:?} is not a version of {} (versions: {})",
                spec.hub,
                crd.name,
                names()
            ),
        )]);
    };
    for name in spec.versions.keys() {
        if name == &spec.hub {
            problems.push(problem(
                Some(name),
                format!("spec.versions.{name}"),
                None,
                "the hub needs no conversion to itself".into(),
            ));
        } else if !schemas.contains_key(name.as_str()) {
            problems.push(problem(
                Some(name),
                format!("spec.versions.{name}"),
                None,
                format!("not a version of {} (versions: {})", crd.name, names()),
            ));
        }
    }
    for (name, paths) in &spec.lossy {
        if !schemas.contains_key(name.as_str()) {
            problems.push(problem(
                Some(name),
                format!("spec.lossy.{name}"),
                None,
                format!("not a version of {} (versions: {})", crd.name, names()),
            ));
        }
        if paths.iter().any(|p| p.trim().is_empty()) {
            problems.push(problem(
                Some(name),
                format!("spec.lossy.{name}"),
                None,
                "an empty path".into(),
            ));
        }
    }
    let mut plans = HashMap::with_hasher(foldhash::fast::FixedState::default());
    let mut docs = spec.versions;
    for (name, schema) in versions {
        let vdoc = docs.remove(name).unwrap_or_default();
        let mut compile_list =
            |list: Vec<AssignmentDoc>, dir: &str, source: &Schema, target: &Schema| {
                let mut out = Vec::new();
                for (i, a) in list.into_iter().enumerate() {
                    let at = format!("spec.versions.{name}.{dir}[{i}]");
                    let (path, value_schema) = match parse_path(&a.path)
                        .and_then(|p| check_path(target, &p).map(|s| (p, s)))
                    {
                        Ok(found) => found,
                        Err(reason) => {
                            problems.push(problem(
                                Some(name),
                                format!("{at}.path"),
                                None,
                                format!("{:?}: {reason}", a.path),
                            ));
                            continue;
                        }
                    };
                    match Program::compile(&a.expr, source, Environment::conversion().at(libraries))
                    {
                        Ok(program) => out.push(Assignment {
                            touches_metadata: path.first().is_none_or(|f| f == "metadata")
                                || crate::cel::may_read_self_field(&a.expr, "metadata"),
                            at,
                            path,
                            value_schema,
                            expr: a.expr,
                            program,
                        }),
                        Err(e) => problems.push(problem(
                            Some(name),
                            format!("{at}.expr"),
                            Some(&a.expr),
                            format!("compilation failed: {e}"),
                        )),
                    }
                }
                out
            };
        let to_hub = compile_list(vdoc.to_hub, "toHub", schema, hub_schema);
        let from_hub = compile_list(vdoc.from_hub, "fromHub", hub_schema, schema);
        plans.insert(
            name.clone(),
            VersionPlan {
                schema: schema.clone(),
                to_hub,
                from_hub,
                api_version: format!("{}/{name}", crd.group),
            },
        );
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Compiled {
        conversion: Conversion {
            crd_name: crd.name.to_owned(),
            group: crd.group.to_owned(),
            kind: crd.kind.to_owned(),
            hub: spec.hub,
            versions: versions.iter().map(|(v, _)| v.clone()).collect(),
            plans,
            lossy: spec.lossy,
        },
        examples: spec.examples,
    })
}

/// Converts every example to every other version and back, checking each
/// answer with the guard and each round trip for equality.
pub fn check_examples(conversion: &Conversion, examples: &[Json]) -> Vec<DocumentProblem> {
    let mut problems = Vec::new();
    for (i, example) in examples.iter().enumerate() {
        let at = format!("spec.examples[{i}]");
        let problem = |version: Option<&str>, reason: String| DocumentProblem {
            crd: Some(conversion.crd_name.clone()),
            version: version.map(str::to_owned),
            path: at.clone(),
            rule: None,
            reason,
        };
        let api_version = example
            .get("apiVersion")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let (group, from) = super::split_api_version(api_version);
        if group != conversion.group || !conversion.has_version(from) {
            problems.push(problem(
                None,
                format!(
                    "apiVersion {api_version:?} is not a version of {}",
                    conversion.crd_name
                ),
            ));
            continue;
        }
        if example.get("kind").and_then(Json::as_str) != Some(conversion.kind.as_str()) {
            problems.push(problem(None, format!("kind must be {:?}", conversion.kind)));
            continue;
        }
        for to in conversion.versions() {
            if to == from {
                continue;
            }
            let original = guard::Original::of(example);
            let there_api = conversion.api_version(to);
            let there = match conversion.convert(example.clone(), from, to) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(problem(Some(to), format!("converting {from} -> {to}: {e}")));
                    continue;
                }
            };
            if let Err(e) = guard::check(i, &original, &there, &there_api) {
                problems.push(problem(Some(to), format!("converting {from} -> {to}: {e}")));
                continue;
            }
            let back = match conversion.convert(there, to, from) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(problem(
                        Some(to),
                        format!("converting back {to} -> {from}: {e}"),
                    ));
                    continue;
                }
            };
            if &back != example {
                let diffs = super::stash::diff(example, &back);
                let first = diffs
                    .first()
                    .map(|d| {
                        format!(
                            " (at {}: expected {}, got {})",
                            d.path.join("."),
                            d.value.as_ref().map_or("nothing".into(), Json::to_string),
                            d.was.as_ref().map_or("nothing".into(), Json::to_string)
                        )
                    })
                    .unwrap_or_else(|| " (metadata differs)".into());
                problems.push(problem(
                    Some(to),
                    format!("round trip {from} -> {to} -> {from} changed the object{first}"),
                ));
            }
        }
    }
    problems
}

/// Parses a field path: names separated by `.`, or `["..."]` for a name
/// with dots or slashes (`metadata.labels["app.kubernetes.io/name"]`).
pub fn parse_path(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut expect_name = true;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[\"") {
            let end = after.find("\"]").ok_or("unterminated [\"...\"]")?;
            let name = &after[..end];
            if name.is_empty() {
                return Err("empty name in [\"\"]".into());
            }
            out.push(name.to_owned());
            rest = &after[end + 2..];
            expect_name = false;
            continue;
        }
        if !expect_name {
            rest = rest
                .strip_prefix('.')
                .ok_or("expected '.' or '[' after a name")?;
            if rest.starts_with("[\"") {
                return Err("'.' before '['".into());
            }
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.is_empty() {
            return Err("empty name".into());
        }
        out.push(name.to_owned());
        rest = &rest[end..];
        expect_name = false;
    }
    if out.is_empty() {
        return Err("empty path".into());
    }
    Ok(out)
}

/// Checks that a conversion may assign `path` in an object of `target`;
/// returns the schema of the assigned value when the target declares one.
fn check_path(target: &Schema, path: &[String]) -> Result<Option<Schema>, String> {
    match path[0].as_str() {
        "apiVersion" | "kind" => return Err("is set by the conversion itself".into()),
        "metadata" => {
            return match path.get(1).map(String::as_str) {
                Some("labels" | "annotations") if path.len() <= 3 => {
                    if path.get(2).is_some_and(|k| k == super::stash::ANNOTATION) {
                        Err("is celhook's own annotation".into())
                    } else {
                        // The metadata guard checks labels and annotations.
                        Ok(None)
                    }
                }
                _ => Err("only metadata.labels and metadata.annotations (or one key of them) may change in conversion".into()),
            };
        }
        _ => {}
    }
    let mut node = target;
    for (i, key) in path.iter().enumerate() {
        if let Some(child) = node.property(key) {
            node = child;
        } else if let Some(element) = node.additional_properties.as_deref() {
            node = element;
        } else if node.preserve_unknown_fields {
            return Ok(None);
        } else {
            return Err(format!(
                "the target schema has no field {}",
                path[..=i].join(".")
            ));
        }
    }
    Ok(Some(node.clone()))
}
