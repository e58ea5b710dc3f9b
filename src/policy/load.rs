//! The policies, bindings, parameter objects and Namespaces of a config,
//! compiled into a [`Set`]; every refusal located by file, document and
//! path, as the API server would refuse the object when written.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use serde_json::Value as Json;

use super::compile::{self, Binding, Policy};
use super::{typecheck, Set};
use crate::schema::Schema;

pub const API_VERSION: &str = "admissionregistration.k8s.io/v1";
pub const POLICY_KIND: &str = "ValidatingAdmissionPolicy";
pub const BINDING_KIND: &str = "ValidatingAdmissionPolicyBinding";

/// A document of the config: file, index in the file, content.
pub type Document = (String, usize, Json);

/// What the loader gathered.
#[derive(Debug, Default)]
pub struct Sources {
    pub policies: Vec<Document>,
    pub bindings: Vec<Document>,
    pub namespaces: Vec<Document>,
    /// Every other object (parameter candidates).
    pub objects: Vec<Document>,
    /// Kinds of the config's CRDs: (apiVersion, kind) -> namespaced.
    pub crd_kinds: HashMap<(String, String), bool>,
    /// Versions of the config's CRDs by (group, plural).
    pub crd_versions: HashMap<(String, String), Vec<String>>,
    /// Kinds of the config's CRDs by (group, plural).
    pub crd_resources: HashMap<(String, String), String>,
}

/// A refusal or warning.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyProblem {
    pub file: String,
    /// `ValidatingAdmissionPolicy NAME (document I)`.
    pub document: String,
    pub path: Option<String>,
    pub reason: String,
}

/// The outcome: the set (what compiled), errors, warnings, and which
/// `objects` are parameters (the others are the loader's to report).
#[derive(Debug, Default)]
pub struct Loaded {
    pub set: Set,
    pub errors: Vec<PolicyProblem>,
    pub warnings: Vec<PolicyProblem>,
    pub used_objects: HashSet<usize>,
}

/// Where a document is, for its problems.
struct At<'a> {
    file: &'a str,
    kind: &'static str,
    /// `ValidatingAdmissionPolicy NAME (document I)`.
    document: String,
}

impl<'a> At<'a> {
    fn new(file: &'a str, kind: &'static str, doc: &Json, index: usize) -> At<'a> {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or("");
        At {
            file,
            kind,
            document: format!("{kind} {name} (document {index})"),
        }
    }

    fn problem(&self, path: Option<String>, reason: String) -> PolicyProblem {
        PolicyProblem {
            file: self.file.to_owned(),
            document: self.document.clone(),
            path,
            reason,
        }
    }

    /// The document as its wire type, or its problem recorded.
    fn parse<T: serde::de::DeserializeOwned>(
        &self,
        doc: &Json,
        errors: &mut Vec<PolicyProblem>,
    ) -> Option<T> {
        T::deserialize(doc)
            .map_err(|e| errors.push(self.problem(None, format!("not a valid {}: {e}", self.kind))))
            .ok()
    }
}

/// The schemas of the kinds policies match and take as parameters: the
/// CRDs of the config and the built-in kinds.
pub trait Schemas {
    /// The kind served as `group`/`version`/`resource`, and its schema.
    fn by_resource(&self, group: &str, version: &str, resource: &str) -> Option<(String, Schema)>;
    /// The schema of a kind.
    fn by_kind(&self, api_version: &str, kind: &str) -> Option<Schema>;
}

/// Compiles everything in `sources`; policies are type-checked against
/// the kinds they match as the API server checks them (warnings).
pub fn load(
    sources: Sources,
    schemas: &dyn Schemas,
    versions: crate::cel::environment::Versions,
) -> Loaded {
    let mut out = Loaded::default();
    let mut policies: Vec<(Arc<Policy>, String)> = Vec::new();
    let mut seen = HashMap::new();
    for (file, index, doc) in &sources.policies {
        let at = At::new(file, POLICY_KIND, doc, *index);
        let problem = |path: Option<String>, reason: String| at.problem(path, reason);
        let Some(parsed) = at.parse::<ValidatingAdmissionPolicy>(doc, &mut out.errors) else {
            continue;
        };
        match compile::policy(&parsed, versions) {
            Ok(policy) => {
                if let Some(other) = seen.insert(policy.name.clone(), file.clone()) {
                    out.errors.push(problem(
                        Some("metadata.name".into()),
                        format!("duplicate {POLICY_KIND}: also defined in {other}"),
                    ));
                    continue;
                }
                if let Some((api_version, kind)) = &policy.param_kind {
                    if !param_kind_known(&sources, api_version, kind) {
                        out.errors.push(problem(
                            Some("spec.paramKind".into()),
                            format!("Not found: apiVersion {api_version:?} kind {kind:?} is neither a CRD of the config nor a built-in kind, and no object of the config has it"),
                        ));
                        continue;
                    }
                }
                for (i, a) in policy.audit_annotations.iter().enumerate() {
                    if let Some(reason) = dropped_annotation_key(&policy.name, &a.name) {
                        out.warnings.push(problem(
                            Some(format!("spec.auditAnnotations[{i}].key")),
                            reason,
                        ));
                    }
                }
                if let Some(spec) = &parsed.spec {
                    for w in type_check(spec, schemas, versions) {
                        out.warnings
                            .push(problem(Some(w.field_ref), w.warning.trim_end().to_owned()));
                    }
                }
                policies.push((Arc::new(policy), file.clone()));
            }
            Err(problems) => out.errors.extend(
                problems
                    .into_iter()
                    .map(|p| problem(Some(p.path), p.reason)),
            ),
        }
    }
    policies.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let mut bindings: Vec<Vec<Binding>> = policies.iter().map(|_| Vec::new()).collect();
    let mut binding_names = HashMap::new();
    // Every policy named in the config: a binding of one that was refused
    // is reported with it, not as a binding of nothing.
    let named: HashSet<String> = sources
        .policies
        .iter()
        .filter_map(|(_, _, d)| d.pointer("/metadata/name").and_then(Json::as_str))
        .map(str::to_owned)
        .collect();
    for (file, index, doc) in &sources.bindings {
        let at = At::new(file, BINDING_KIND, doc, *index);
        let problem = |path: Option<String>, reason: String| at.problem(path, reason);
        let Some(parsed) = at.parse::<ValidatingAdmissionPolicyBinding>(doc, &mut out.errors)
        else {
            continue;
        };
        let binding = match compile::binding(&parsed) {
            Ok(b) => b,
            Err(problems) => {
                out.errors.extend(
                    problems
                        .into_iter()
                        .map(|p| problem(Some(p.path), p.reason)),
                );
                continue;
            }
        };
        if let Some(other) = binding_names.insert(binding.name.clone(), file.clone()) {
            out.errors.push(problem(
                Some("metadata.name".into()),
                format!("duplicate {BINDING_KIND}: also defined in {other}"),
            ));
            continue;
        }
        match policies
            .iter()
            .position(|(p, _)| p.name == binding.policy_name)
        {
            Some(i) => bindings[i].push(binding),
            // A refused policy is reported already; a missing one binds nothing,
            // as in a cluster, but it is almost always a typo.
            None if named.contains(&binding.policy_name) => {}
            None => out.warnings.push(problem(
                Some("spec.policyName".into()),
                format!(
                    "no {POLICY_KIND} {:?} in the config: this binding has no effect",
                    binding.policy_name
                ),
            )),
        }
    }
    for list in &mut bindings {
        list.sort_by(|a, b| a.name.cmp(&b.name));
    }

    let mut set = Set {
        bindings,
        ..Set::default()
    };
    for (_, _, ns) in &sources.namespaces {
        if let Some(name) = ns.pointer("/metadata/name").and_then(Json::as_str) {
            set.namespaces
                .insert(name.to_owned(), super::Namespace::from_manifest(&ns.into()));
        }
    }
    let param_kinds: HashSet<(String, String)> = policies
        .iter()
        .filter_map(|(p, _)| p.param_kind.clone())
        .collect();
    for (i, (_, _, doc)) in sources.objects.iter().enumerate() {
        let key = type_of(doc);
        if param_kinds.contains(&key) {
            out.used_objects.insert(i);
            // Kept as the tree the engine reads: converted once, at load.
            set.params
                .entry(key)
                .or_default()
                .push(celhook_json::Value::from(doc));
        }
    }
    for key in param_kinds {
        let namespaced = sources.crd_kinds.get(&key).copied().unwrap_or_else(|| {
            set.params
                .get(&key)
                .is_some_and(|l| l.iter().any(|o| o.pointer("/metadata/namespace").is_some()))
                || builtin_namespaced(&key.1)
        });
        set.namespaced_params.insert(key, namespaced);
    }
    set.versions = sources.crd_versions;
    set.policies = policies.into_iter().map(|(p, _)| p).collect();
    out.set = set;
    out
}

/// The type-check warnings of a policy against the kinds it matches
/// (sorted by group, version, kind, as the API server orders them).
fn type_check(
    spec: &k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicySpec,
    schemas: &dyn Schemas,
    versions: crate::cel::environment::Versions,
) -> Vec<typecheck::Warning> {
    let mut kinds: Vec<((String, String, String), Schema)> = Vec::new();
    for (g, v, r) in typecheck::resources(spec) {
        if let Some((kind, schema)) = schemas.by_resource(&g, &v, &r) {
            let key = (g, v, kind);
            if !kinds.iter().any(|(k, _)| *k == key) {
                kinds.push((key, schema));
            }
        }
    }
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    let checked: Vec<typecheck::Checked<'_>> = kinds
        .iter()
        .map(|((g, v, k), schema)| typecheck::Checked {
            label: typecheck::label(g, v, k),
            schema,
        })
        .collect();
    let params = spec
        .param_kind
        .as_ref()
        .and_then(|p| schemas.by_kind(p.api_version.as_deref()?, p.kind.as_deref()?));
    typecheck::check(spec, &checked, params.as_ref(), versions)
}

fn type_of(doc: &Json) -> (String, String) {
    let field = |k: &str| doc.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
    (field("apiVersion"), field("kind"))
}

fn param_kind_known(sources: &Sources, api_version: &str, kind: &str) -> bool {
    let key = (api_version.to_owned(), kind.to_owned());
    if sources.crd_kinds.contains_key(&key)
        || sources.objects.iter().any(|(_, _, d)| type_of(d) == key)
    {
        return true;
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    crate::kinds::schema(group, version, kind, crate::kinds::NEWEST).is_some()
}

/// Why the API server would drop the audit annotation `key` of `policy`
/// as celhook sends it: a webhook's key becomes `<webhook>/<policy>_<key>`,
/// whose name part must be a qualified name of at most 63 bytes.
fn dropped_annotation_key(policy: &str, key: &str) -> Option<String> {
    let sent = super::annotation_key(policy, key);
    (sent.len() > 63).then(|| {
        format!(
            "the webhook sends this annotation as {sent:?} ({} bytes): the API server drops a webhook's audit annotation whose key is over 63 bytes (shorten the policy name or the key)",
            sent.len()
        )
    })
}

/// Built-in kinds that live in namespaces, of those used as parameters
/// (the embedded schemas carry no scope).
fn builtin_namespaced(kind: &str) -> bool {
    !matches!(
        kind,
        "Namespace"
            | "Node"
            | "PersistentVolume"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "StorageClass"
            | "PriorityClass"
            | "CustomResourceDefinition"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
            | "IngressClass"
            | "RuntimeClass"
            | "CSIDriver"
            | "CSINode"
            | "VolumeAttachment"
    )
}

impl Set {
    /// The parameter objects of `binding` for a request in `namespace`
    /// (`[None]` for a policy without paramKind). An error is a binding
    /// that cannot be configured, in the API server's words.
    pub(crate) fn params_for(
        &self,
        policy: &Policy,
        binding: &Binding,
        namespace: &str,
    ) -> Result<Vec<Option<&celhook_json::Value>>, String> {
        let Some(kind) = &policy.param_kind else {
            return Ok(vec![None]);
        };
        // A binding without paramRef evaluates the policy with null params.
        let Some(r) = &binding.param_ref else {
            return Ok(vec![None]);
        };
        let namespaced = self.namespaced_params.get(kind).copied().unwrap_or(true);
        let in_namespace = if !namespaced {
            if r.namespace.is_some() {
                return Err(
                    "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                        .into(),
                );
            }
            None
        } else if let Some(ns) = &r.namespace {
            Some(ns.as_str())
        } else if namespace.is_empty() {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            );
        } else {
            Some(namespace)
        };
        let found: Vec<Option<&celhook_json::Value>> = self
            .params
            .get(kind)
            .into_iter()
            .flatten()
            .filter(|o| {
                let ns = o
                    .pointer("/metadata/namespace")
                    .and_then(celhook_json::Value::as_str)
                    .unwrap_or("");
                in_namespace.is_none_or(|want| want == ns)
            })
            .filter(|o| match (&r.name, &r.selector) {
                (Some(name), _) => {
                    o.pointer("/metadata/name")
                        .and_then(celhook_json::Value::as_str)
                        == Some(name.as_str())
                }
                (None, Some(selector)) => selector.matches(o.pointer("/metadata/labels")),
                (None, None) => false,
            })
            .map(Some)
            .collect();
        if found.is_empty() && r.deny_when_missing {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        Ok(found)
    }
}
