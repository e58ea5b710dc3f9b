//! The loader's pass over rules documents, once every CRD is loaded: each
//! document is compiled against its kind's schemas (a CRD of the config, or
//! a built-in kind's embedded schema), and every problem is reported with
//! file, document, version, path and reason.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

use super::{Loader, Problem};
use crate::{kinds, rules};

impl Loader {
    pub(super) fn rule_documents(&mut self) {
        let docs = std::mem::take(&mut self.rule_docs);
        let mut seen: Vec<(String, String)> = Vec::new();
        for (file, index, doc) in docs {
            let written_name = doc
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let document = Some(format!(
                "{} {written_name:?} (document {index})",
                rules::KIND
            ));
            let report = |this: &mut Loader, found: Vec<rules::Located>| {
                this.report
                    .errors
                    .extend(found.into_iter().map(|p| Problem {
                        file: file.clone(),
                        document: document.clone(),
                        crd: None,
                        version: p.version,
                        path: Some(p.path).filter(|p| !p.is_empty()),
                        rule: p.rule,
                        reason: p.reason,
                    }));
            };
            let parsed = match rules::document::parse(doc) {
                Ok(parsed) => parsed,
                Err(found) => {
                    let found = found
                        .into_iter()
                        .map(|p| rules::Located {
                            version: None,
                            path: p.path,
                            rule: None,
                            reason: p.reason,
                        })
                        .collect();
                    report(self, found);
                    continue;
                }
            };
            if let Some((_, other)) = seen.iter().find(|(n, _)| *n == parsed.name) {
                let reason = format!(
                    "a second {} of this name (the first is in {other})",
                    rules::KIND
                );
                report(self, vec![located("metadata.name", reason)]);
                continue;
            }
            seen.push((parsed.name.clone(), file.clone()));
            let Some((sources, label, origin)) = self.schemas_of(&parsed.group, &parsed.kind)
            else {
                let reason = format!(
                    "no CustomResourceDefinition in the config serves {}, and it is not a built-in kind of Kubernetes 1.{}",
                    rules::qualified(&parsed.group, &parsed.kind),
                    self.kinds()
                );
                report(self, vec![located("spec.target", reason)]);
                continue;
            };
            match rules::compile(&parsed, &sources, origin, self.options.kubernetes) {
                Ok(sets) => {
                    self.report.documents.push(super::DocumentReport {
                        name: parsed.name.clone(),
                        file: file.clone(),
                        target: rules::qualified(&parsed.group, &parsed.kind),
                        versions: sets.iter().map(|s| s.version.clone()).collect(),
                        rules: sets.first().map_or(0, |s| s.validator.rule_count()),
                    });
                    let known: Vec<String> = sources.into_iter().map(|(v, _)| v).collect();
                    self.catalog
                        .insert_rules((&parsed.group, &parsed.kind), sets, &known, &label);
                }
                Err(found) => report(self, found),
            }
        }
    }

    /// The (version, `openAPIV3Schema`) list of a group and kind, and its
    /// metrics label: a CRD of the config first (the user's copy of a
    /// vendor's CRD wins over nothing), else a built-in kind. Rules see the
    /// full `metadata` of the object (ObjectMeta), on CRDs too.
    pub(super) fn schemas_of(&self, group: &str, kind: &str) -> Option<KindSchemas> {
        // The version celhook answers as: its libraries and the kinds'
        // schemas agree.
        let newest = self.kinds();
        if let Some((crd, versions)) = self.crd_openapi.get(&(group.to_owned(), kind.to_owned())) {
            let meta = kinds::object_meta(newest)
                .and_then(|m| serde_json::from_value::<JSONSchemaProps>(m).ok());
            let sources = versions
                .iter()
                .map(|(v, props)| {
                    let mut props = props.clone();
                    if let Some(meta) = &meta {
                        with_full_metadata(&mut props, meta);
                    }
                    (v.clone(), props)
                })
                .collect();
            return Some((sources, crd.clone(), rules::Origin::Crd));
        }
        let versions = kinds::versions_of(group, kind, newest);
        if versions.is_empty() {
            return None;
        }
        let sources = versions
            .into_iter()
            .filter_map(|v| {
                let json = kinds::schema(group, &v, kind, newest)?;
                serde_json::from_value::<JSONSchemaProps>(json)
                    .ok()
                    .map(|props| (v, props))
            })
            .collect();
        Some((
            sources,
            rules::qualified(group, kind).to_lowercase(),
            rules::Origin::BuiltIn,
        ))
    }
}

/// A kind's (version, `openAPIV3Schema`) list, metrics label and origin.
pub(super) type KindSchemas = (Vec<(String, JSONSchemaProps)>, String, rules::Origin);

fn located(path: &str, reason: String) -> rules::Located {
    rules::Located {
        version: None,
        path: path.to_owned(),
        rule: None,
        reason,
    }
}

/// Declares `apiVersion`, `kind` and the whole ObjectMeta at the root, so
/// that the schema model keeps them as written (see `Schema::from_openapi`).
fn with_full_metadata(props: &mut JSONSchemaProps, meta: &JSONSchemaProps) {
    let string = JSONSchemaProps {
        type_: Some("string".into()),
        ..JSONSchemaProps::default()
    };
    let properties = props.properties.get_or_insert_with(Default::default);
    properties.insert("apiVersion".into(), string.clone());
    properties.insert("kind".into(), string);
    properties.insert("metadata".into(), meta.clone());
    if props.type_.is_none() {
        props.type_ = Some("object".into());
    }
}
