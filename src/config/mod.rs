//! Config loading: a directory of CRD manifests (YAML or JSON, one or many
//! documents per file), or the examples embedded in the binary, compiled once
//! into a [`Catalog`] that requests look CRD versions up in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use serde::Serialize;
use serde_json::Value as Json;

use crate::cel;
use crate::conversion;
use crate::kube_version::KubeVersion;
use crate::policy::load as policy;
use crate::schema::Schema;
use crate::validation::Validator;

mod catalog;
mod conversions;
pub mod embedded;
pub mod files;
mod policies;
pub mod report;
mod rule_documents;

/// Where the CRDs come from.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    /// A file, or every `*.yaml`, `*.yml` and `*.json` file below this
    /// directory, subdirectories included (see `files`).
    Dir(PathBuf),
    /// The example CRDs embedded in the binary (`manifests/examples/`).
    Embedded,
}

pub use crate::validation::CrdVersion;

/// `kind` of celhook's test documents (`celhook test`): they live beside
/// the config they test, so loading a config passes over them quietly.
pub const TEST_KIND: &str = "ValidationTest";
pub use catalog::{Catalog, Target};

/// One problem found while loading: where it is and why.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Problem {
    pub file: String,
    /// The document of the file, for rules documents: `ValidationRules NAME
    /// (document I)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Schema path in the API server's notation, e.g.
    /// `spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub reason: String,
}

impl Problem {
    /// A problem of a whole file (unreadable, not YAML, not config).
    fn of_file(file: &str, reason: impl Into<String>) -> Problem {
        Problem {
            file: file.to_owned(),
            reason: reason.into(),
            ..Problem::default()
        }
    }
}

/// A CRD found in the config, with its problems (empty when it compiled).
#[derive(Debug, Clone, Serialize)]
pub struct CrdReport {
    pub name: String,
    pub file: String,
    pub versions: Vec<String>,
    pub errors: Vec<Problem>,
}

/// A rules document that compiled.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentReport {
    pub name: String,
    pub file: String,
    /// `Kind.group` of its target.
    pub target: String,
    pub versions: Vec<String>,
    /// Rules per version.
    pub rules: usize,
}

/// A ValidatingAdmissionPolicy that compiled.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyReport {
    pub name: String,
    pub validations: usize,
    pub variables: usize,
    /// Its bindings in the config, by name.
    pub bindings: Vec<String>,
}

/// What loading found: every CRD and every problem.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub crds: Vec<CrdReport>,
    /// Rules documents that compiled (those with problems are in `errors`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<DocumentReport>,
    /// ValidatingAdmissionPolicies that compiled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicyReport>,
    /// Problems not tied to one CRD (unreadable file, bad YAML, a v1beta1 CRD).
    pub errors: Vec<Problem>,
    /// What was skipped and why (kustomization files, documents that are
    /// neither CRDs nor conversion documents, such as sample objects next to
    /// a CRD), and conversion fields kept only in the stash that the
    /// document does not acknowledge. Errors only for `check --strict`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Problem>,
    /// Facts worth knowing that need no action: conversion fields
    /// acknowledged as lost, target fields no source fills.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Problem>,
}

impl Report {
    /// True when anything was refused.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty() || self.crds.iter().any(|c| !c.errors.is_empty())
    }

    /// [`Report::has_errors`], with warnings counted as errors when `strict`.
    pub fn fails(&self, strict: bool) -> bool {
        self.has_errors() || (strict && !self.warnings.is_empty())
    }
}

/// The outcome of loading: a catalog of everything that compiled, and the report.
/// `serve` refuses to start (and hot reload keeps the old catalog) when
/// `report.has_errors()`.
#[derive(Debug)]
pub struct Loaded {
    pub catalog: Catalog,
    pub report: Report,
}

/// What a config is compiled as: the Kubernetes version whose libraries
/// and built-in kinds apply, and whether its expressions are judged as
/// the API server judges them when they are written (`check`: against its
/// compatibility version, one minor behind) or as it runs stored ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub kubernetes: KubeVersion,
    pub written: bool,
}

impl Options {
    /// The libraries of what the API server compiles: CRD rules and
    /// policies.
    fn api_server_libraries(self) -> cel::environment::Version {
        if self.written {
            self.kubernetes.written()
        } else {
            self.kubernetes.stored()
        }
    }
}

/// Loads and compiles every CRD from `source`.
pub fn load(source: &ConfigSource) -> Loaded {
    load_as(source, Options::default())
}

/// [`load`] as `options` say.
pub fn load_as(source: &ConfigSource, options: Options) -> Loaded {
    let mut loader = Loader::new(options);
    match source {
        ConfigSource::Dir(path) => loader.path(path),
        ConfigSource::Embedded => {
            for (name, text) in embedded::FILES {
                loader.text(&format!("embedded:{name}"), text);
            }
        }
    }
    loader.finish()
}

/// Loads and compiles the CRDs (and conversion documents) of in-memory
/// files, each a `(name, text)` pair: the fuzz targets and tests load
/// configs this way without a directory.
pub fn load_texts<S: AsRef<str>, T: AsRef<str>>(files: &[(S, T)]) -> Loaded {
    let mut loader = Loader::new(Options::default());
    for (name, text) in files {
        loader.text(name.as_ref(), text.as_ref());
    }
    loader.finish()
}

/// Loads and compiles the CRDs of the given files (for the offline tools).
pub fn load_files(files: &[PathBuf], options: Options) -> Loaded {
    let mut loader = Loader::new(options);
    for path in files {
        let name = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => loader.text(&name, &text),
            Err(e) => loader.file_error(&name, format!("cannot read file: {e}")),
        }
    }
    loader.finish()
}

#[derive(Default)]
struct Loader {
    catalog: Catalog,
    report: Report,
    /// Conversion documents seen, compiled once every CRD is loaded: (file, document).
    conversion_docs: Vec<(String, Json)>,
    /// Compiled CRDs by name: group, kind, and each version's schema.
    crd_schemas: HashMap<String, CrdSchemas>,
    /// Rules documents seen, compiled once every CRD is loaded: (file,
    /// index in the file, document).
    rule_docs: Vec<(String, usize, Json)>,
    /// Each compiled CRD's `openAPIV3Schema` by version, by (group, kind),
    /// with its name: the schemas rules documents on it attach to.
    crd_openapi: HashMap<(String, String), CrdOpenApi>,
    /// Policies, bindings, Namespaces and other objects (parameters), and
    /// the CRD kinds they may refer to, compiled last.
    policy_sources: crate::policy::load::Sources,
    /// The Kubernetes version and how expressions are judged.
    options: Options,
}

/// A compiled CRD's name and (version, `openAPIV3Schema`) list.
type CrdOpenApi = (String, Vec<(String, JSONSchemaProps)>);

/// A compiled CRD's group, kind and (version, schema) list.
type CrdSchemas = (String, String, Vec<(String, Schema)>);

impl Loader {
    fn new(options: Options) -> Loader {
        Loader {
            options,
            ..Loader::default()
        }
    }

    /// The Kubernetes minor of the built-in kinds' schemas.
    fn kinds(&self) -> u32 {
        self.options.kubernetes.minor().into()
    }

    /// The libraries of what the API server compiles (CRD rules, policies).
    fn libraries(&self) -> cel::environment::Version {
        self.options.api_server_libraries()
    }

    /// The libraries of celhook's own documents (conversions, rules
    /// documents): celhook runs them, so they are never judged as written.
    fn own_libraries(&self) -> cel::environment::Version {
        self.options.kubernetes.stored()
    }

    /// After every file (a conversion, rules document or policy may come
    /// before the CRD it names): compiles what waits on the CRDs.
    fn finish(mut self) -> Loaded {
        self.conversions();
        self.rule_documents();
        self.policies();
        Loaded {
            catalog: self.catalog,
            report: self.report,
        }
    }

    fn file_error(&mut self, file: &str, reason: impl Into<String>) {
        self.report.errors.push(Problem::of_file(file, reason));
    }

    fn file_warning(&mut self, file: &str, reason: impl Into<String>) {
        self.report.warnings.push(Problem::of_file(file, reason));
    }

    /// A config file, or a directory walked recursively (in name order, so
    /// that the outcome never depends on the listing order).
    fn path(&mut self, path: &Path) {
        let shown = path.display().to_string();
        let files = match files::config_files(path) {
            Ok(files) => files,
            Err(e) => return self.file_error(&shown, format!("cannot read the config: {e}")),
        };
        if files.is_empty() {
            self.file_error(
                &shown,
                "no *.yaml, *.yml or *.json files in the config directory or its subdirectories",
            );
        }
        for path in files {
            let name = path.display().to_string();
            match std::fs::read_to_string(&path) {
                Ok(text) => self.text(&name, &text),
                Err(e) => self.file_error(&name, format!("cannot read file: {e}")),
            }
        }
    }

    fn text(&mut self, file: &str, text: &str) {
        if files::is_kustomization(file) {
            return self.file_warning(file, "skipped: a kustomization file, not config");
        }
        // One bad document does not hide the others of its file.
        for (i, doc) in parse_documents(file, text).into_iter().enumerate() {
            match doc {
                Ok(doc) => self.document(file, i, doc),
                Err(reason) => self.file_error(file, reason),
            }
        }
    }

    fn document(&mut self, file: &str, index: usize, doc: Json) {
        if doc.is_null() {
            return;
        }
        let api_version = doc
            .get("apiVersion")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let kind = doc.get("kind").and_then(Json::as_str).unwrap_or_default();
        match (api_version, kind) {
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => self.crd(file, doc),
            ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition") => self.file_error(
                file,
                format!("document {index}: apiextensions.k8s.io/v1beta1 CustomResourceDefinitions are not supported (removed in Kubernetes 1.22); use apiextensions.k8s.io/v1"),
            ),
            (conversion::CONVERSION_API_VERSION, conversion::CONVERSION_KIND) => {
                self.conversion_docs.push((file.to_owned(), doc));
            }
            (crate::rules::API_VERSION, crate::rules::KIND) => {
                self.rule_docs.push((file.to_owned(), index, doc));
            }
            (crate::rules::API_VERSION, TEST_KIND) => {}
            (policy::API_VERSION, policy::POLICY_KIND) => {
                self.policy_sources.policies.push((file.to_owned(), index, doc));
            }
            (policy::API_VERSION, policy::BINDING_KIND) => {
                self.policy_sources.bindings.push((file.to_owned(), index, doc));
            }
            (
                "admissionregistration.k8s.io/v1beta1" | "admissionregistration.k8s.io/v1alpha1",
                policy::POLICY_KIND | policy::BINDING_KIND,
            ) => self.file_error(
                file,
                format!("document {index}: {api_version} {kind} is not supported; use {} (GA since Kubernetes 1.30, same fields)", policy::API_VERSION),
            ),
            ("v1", "Namespace") => {
                self.policy_sources.namespaces.push((file.to_owned(), index, doc));
            }
            ("v1", "List") => {
                let items = doc
                    .get("items")
                    .and_then(Json::as_array)
                    .cloned()
                    .unwrap_or_default();
                for item in items {
                    self.document(file, index, item);
                }
            }
            // Parameters of policies, or sample objects kept next to CRDs
            // (skipped, and said so, once the policies are known).
            _ => self.policy_sources.objects.push((file.to_owned(), index, doc)),
        }
    }

    fn crd(&mut self, file: &str, doc: Json) {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut report = CrdReport {
            name: name.clone(),
            file: file.to_owned(),
            versions: Vec::new(),
            errors: Vec::new(),
        };
        let problem = |version: Option<&str>,
                       path: Option<String>,
                       rule: Option<String>,
                       reason: String| Problem {
            file: file.to_owned(),
            crd: Some(name.clone()),
            version: version.map(str::to_owned),
            path,
            rule,
            reason,
            document: None,
        };
        if let Some(other) = self.report.crds.iter().find(|c| c.name == name) {
            let reason = format!(
                "duplicate CustomResourceDefinition: also defined in {}",
                other.file
            );
            report
                .errors
                .push(problem(None, Some("metadata.name".into()), None, reason));
            self.report.crds.push(report);
            return;
        }
        let crd: CustomResourceDefinition = match serde_json::from_value(doc) {
            Ok(c) => c,
            Err(e) => {
                report.errors.push(problem(
                    None,
                    None,
                    None,
                    format!("not a valid CustomResourceDefinition: {e}"),
                ));
                self.report.crds.push(report);
                return;
            }
        };
        if name.is_empty() {
            report.errors.push(problem(
                None,
                Some("metadata.name".into()),
                None,
                "Required value".into(),
            ));
        }
        let spec = &crd.spec;
        let expected = format!("{}.{}", spec.names.plural, spec.group);
        if !name.is_empty() && name != expected {
            report.errors.push(problem(
                None,
                Some("metadata.name".into()),
                None,
                format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({expected:?})"),
            ));
        }
        // The API server reports schema paths under spec.validation when all
        // versions share one schema (its internal form hoists it there).
        let schemas: Vec<_> = spec
            .versions
            .iter()
            .map(|v| {
                v.schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
            })
            .collect();
        let shared = schemas.windows(2).all(|w| w[0] == w[1]);
        let schemas_of_versions = schemas.clone();
        let mut compiled = Vec::new();
        for (i, v) in spec.versions.iter().enumerate() {
            report.versions.push(v.name.clone());
            let prefix = if shared {
                "spec.validation".to_owned()
            } else {
                format!("spec.versions[{i}].schema")
            };
            let Some(props) = schemas[i] else {
                // No schema: nothing to enforce for this version.
                compiled.push((v.name.clone(), Validator::compile(Schema::default()).ok()));
                continue;
            };
            match Validator::from_openapi_as(props, self.libraries(), self.options.kubernetes) {
                Ok(val) => compiled.push((v.name.clone(), Some(val))),
                Err(problems) => {
                    for p in problems {
                        // Structural problems of the schema carry no rule.
                        let rule = Some(p.rule).filter(|r| !r.is_empty());
                        report.errors.push(problem(
                            Some(&v.name),
                            Some(format!("{prefix}.{}", p.path)),
                            rule,
                            p.reason,
                        ));
                    }
                }
            }
        }
        if report.errors.is_empty() {
            let schemas = compiled
                .iter()
                .filter_map(|(v, val)| val.as_ref().map(|val| (v.clone(), val.schema.clone())))
                .collect();
            self.crd_schemas.insert(
                name.clone(),
                (spec.group.clone(), spec.names.kind.clone(), schemas),
            );
            let openapi = spec
                .versions
                .iter()
                .zip(&schemas_of_versions)
                .map(|(v, s)| (v.name.clone(), s.cloned().unwrap_or_default()))
                .collect();
            self.crd_openapi.insert(
                (spec.group.clone(), spec.names.kind.clone()),
                (name.clone(), openapi),
            );
            // What policies may take as parameters and match equivalently.
            let namespaced = spec.scope == "Namespaced";
            let served: Vec<String> = spec.versions.iter().map(|v| v.name.clone()).collect();
            for v in &served {
                self.policy_sources.crd_kinds.insert(
                    (format!("{}/{v}", spec.group), spec.names.kind.clone()),
                    namespaced,
                );
            }
            self.policy_sources
                .crd_versions
                .insert((spec.group.clone(), spec.names.plural.clone()), served);
            self.policy_sources.crd_resources.insert(
                (spec.group.clone(), spec.names.plural.clone()),
                spec.names.kind.clone(),
            );
            for (version, validator) in compiled {
                if let Some(validator) = validator {
                    self.catalog.insert(CrdVersion {
                        crd_name: name.clone(),
                        group: spec.group.clone(),
                        kind: spec.names.kind.clone(),
                        version,
                        validator,
                    });
                }
            }
        }
        self.report.crds.push(report);
    }
}

/// Parses a file into its documents: JSON (one document) or YAML (one or
/// many, separated by `---`), each parsed on its own so that a bad one
/// costs only itself. `celhook webhook-config` reads the config's CRDs
/// through it too.
pub fn parse_documents(file: &str, text: &str) -> Vec<Result<Json, String>> {
    if file.ends_with(".json") {
        return vec![serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))];
    }
    crate::yaml::yaml_documents(text)
        .into_iter()
        .enumerate()
        .map(|(i, (_, doc))| {
            if crate::yaml::is_blank(doc) {
                return Ok(Json::Null);
            }
            serde_norway::from_str(doc).map_err(|e| format!("invalid YAML in document {i}: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests;
