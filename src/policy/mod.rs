//! ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`) and its
//! bindings, evaluated as the API server evaluates them: matching, params,
//! matchConditions, lazy variables, validations, audit annotations, and
//! the binding's Deny, Warn and Audit actions.
//!
//! The config gives what the API server would look up: parameter objects
//! and Namespaces are manifests in the config directory (celhook does not
//! call the API server).

pub mod compile;
mod decide;
mod expressions;
pub mod load;
pub mod matching;
pub mod typecheck;
pub mod validate;

use std::collections::HashMap;
use std::sync::Arc;

use celhook_json::Value as Json;

pub use compile::{Action, Binding, FailurePolicy, Policy};
pub use decide::{request_json, review, Decision, Outcome};
pub use load::{load, Loaded, PolicyProblem, API_VERSION, BINDING_KIND, POLICY_KIND};

/// The audit annotation key of failed validations whose binding audits
/// (natively `validation.policy.admission.k8s.io/validation_failure`; a
/// webhook's keys may not hold a `/`, and the API server stores them as
/// `<webhook name>/<key>`).
pub const VALIDATION_FAILURE_KEY: &str = "validation.policy.admission.k8s.io_validation_failure";

/// The webhook's key for a policy's audit annotation `<policy>/<key>`.
pub fn annotation_key(policy: &str, key: &str) -> String {
    format!("{policy}_{key}")
}

/// The compiled policies of a config, with what they look up.
#[derive(Debug, Default)]
pub struct Set {
    /// By name.
    policies: Vec<Arc<Policy>>,
    /// Per policy (same index), its bindings by name.
    bindings: Vec<Vec<Binding>>,
    /// Parameter objects by (apiVersion, kind).
    params: HashMap<(String, String), Vec<Json>>,
    /// Whether parameters of (apiVersion, kind) live in namespaces.
    namespaced_params: HashMap<(String, String), bool>,
    /// Namespace objects by name.
    namespaces: HashMap<String, Namespace>,
    /// Served versions by (group, resource), for matchPolicy Equivalent.
    versions: HashMap<(String, String), Vec<String>>,
}

impl Set {
    /// True when the config has no policy.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// The policies, by name.
    pub fn policies(&self) -> &[Arc<Policy>] {
        &self.policies
    }

    /// The bindings of the policy at `index`.
    pub fn bindings_of(&self, index: usize) -> &[Binding] {
        self.bindings.get(index).map_or(&[], Vec::as_slice)
    }

    /// The Namespace of this name in the config.
    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespaces.get(name)
    }
}

/// A Namespace of the config in the two forms policies see: the API
/// server's informer holds typed objects (no apiVersion or kind, `spec`
/// and `status` always present), and it hands validations and messages a
/// subset of the metadata (`namespaceObject`), audit annotations the
/// whole object.
#[derive(Debug)]
pub struct Namespace {
    pub stored: Json,
    pub object: Json,
}

/// The metadata fields `namespaceObject` keeps.
const NAMESPACE_METADATA: [&str; 12] = [
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
];

impl Namespace {
    fn from_manifest(manifest: &Json) -> Namespace {
        let mut stored = manifest.clone();
        if let Some(fields) = stored.as_object_mut() {
            fields.remove("apiVersion");
            fields.remove("kind");
            for part in ["spec", "status"] {
                fields
                    .entry(part)
                    .or_insert_with(|| Json::Object(Default::default()));
            }
        }
        let mut object = stored.clone();
        if let Some(Json::Object(meta)) = object.get_mut("metadata") {
            meta.retain(|k, _| NAMESPACE_METADATA.contains(&k.as_str()));
        }
        Namespace { stored, object }
    }
}

impl matching::Lookup for Set {
    fn namespace(&self, name: &str) -> Option<&Json> {
        self.namespaces.get(name).map(|n| &n.stored)
    }

    fn equivalent_versions(&self, group: &str, resource: &str) -> Vec<String> {
        self.versions
            .get(&(group.to_owned(), resource.to_owned()))
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
