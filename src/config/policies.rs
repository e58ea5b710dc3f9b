//! The loader's pass over ValidatingAdmissionPolicies and their bindings,
//! once every document is read: parameter objects and Namespaces are
//! documents of the config too, so the pass also decides which of the
//! other objects are parameters (the rest are reported as skipped).

use std::collections::HashMap;
use std::sync::Arc;

use super::{Loader, Problem};
use crate::schema::Schema;
use crate::{kinds, policy};

/// The schemas policies are type-checked against: the config's CRDs and
/// the built-in kinds (of the Kubernetes version celhook answers as).
struct KindSchemas<'a> {
    loader: &'a Loader,
    crd_resources: &'a HashMap<(String, String), String>,
}

impl KindSchemas<'_> {
    fn schema(&self, group: &str, version: &str, kind: &str) -> Option<Schema> {
        let (versions, _, _) = self.loader.schemas_of(group, kind)?;
        let (_, props) = versions.iter().find(|(v, _)| v == version)?;
        Schema::from_openapi(props).ok()
    }
}

impl policy::load::Schemas for KindSchemas<'_> {
    fn by_resource(&self, group: &str, version: &str, resource: &str) -> Option<(String, Schema)> {
        let kind = match self
            .crd_resources
            .get(&(group.to_owned(), resource.to_owned()))
        {
            Some(kind) => kind.clone(),
            None => kinds::kinds(self.loader.kinds())
                .into_iter()
                .find(|(g, v, k)| g == group && v == version && kinds::resource_of(k) == resource)
                .map(|(_, _, k)| k)?,
        };
        let schema = self.schema(group, version, &kind)?;
        Some((kind, schema))
    }

    fn by_kind(&self, api_version: &str, kind: &str) -> Option<Schema> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.schema(group, version, kind)
    }
}

impl Loader {
    pub(super) fn policies(&mut self) {
        let mut sources = std::mem::take(&mut self.policy_sources);
        let objects = std::mem::take(&mut sources.objects);
        sources.objects = objects.clone();
        let crd_resources = sources.crd_resources.clone();
        let schemas = KindSchemas {
            loader: self,
            crd_resources: &crd_resources,
        };
        let versions = crate::cel::environment::Versions {
            libraries: self.libraries(),
            api_server: self.options.kubernetes.stored(),
        };
        let loaded = policy::load(sources, &schemas, versions);
        let problem = |p: policy::PolicyProblem| Problem {
            file: p.file,
            document: Some(p.document),
            path: p.path,
            reason: p.reason,
            ..Problem::default()
        };
        self.report
            .errors
            .extend(loaded.errors.into_iter().map(problem));
        self.report
            .warnings
            .extend(loaded.warnings.into_iter().map(problem));
        for (i, (file, index, doc)) in objects.into_iter().enumerate() {
            if loaded.used_objects.contains(&i) {
                continue;
            }
            let field = |k: &str| {
                doc.get(k)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            self.file_warning(
                &file,
                format!(
                    "document {index}: skipped: apiVersion {:?} kind {:?} is not an apiextensions.k8s.io/v1 CustomResourceDefinition, a {} {}, a {} {}, a {} {} or {}, or a parameter of one",
                    field("apiVersion"),
                    field("kind"),
                    crate::conversion::CONVERSION_API_VERSION,
                    crate::conversion::CONVERSION_KIND,
                    crate::rules::API_VERSION,
                    crate::rules::KIND,
                    policy::load::API_VERSION,
                    policy::load::POLICY_KIND,
                    policy::load::BINDING_KIND,
                ),
            );
        }
        for p in loaded.set.policies() {
            self.report.policies.push(super::PolicyReport {
                name: p.name.clone(),
                validations: p.validations.len(),
                variables: p.variables.len(),
                bindings: Vec::new(),
            });
        }
        for (i, p) in self.report.policies.iter_mut().enumerate() {
            p.bindings = loaded
                .set
                .bindings_of(i)
                .iter()
                .map(|b| b.name.clone())
                .collect();
        }
        self.catalog.request_details = !loaded.set.is_empty()
            || self
                .catalog
                .rule_sets()
                .any(|s| !s.info.match_conditions.is_empty());
        self.catalog.policies = Arc::new(loaded.set);
    }
}
