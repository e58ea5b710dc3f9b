//! `celhook storage-migration`: the StorageVersionMigration objects
//! (storagemigration.k8s.io) that make the API server rewrite every stored
//! object of a multi-version CRD in its current storage version, each
//! preceded by the commands that finish the job: wait for the migration,
//! then trim the CRD's `status.storedVersions`, which the API server
//! requires before a version may leave `spec.versions`.
//!
//! The migrator writes each object back unchanged, so those writes reach
//! celhook's validating webhook as UPDATEs whose object equals the old
//! object: ratcheting lets them through rules tightened since the objects
//! were stored.

use std::fmt;

use serde_json::{json, Value as Json};

use crate::config::{self, files, ConfigSource};

/// The apiVersion of the StorageVersionMigration objects written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SvmApiVersion {
    /// GA in Kubernetes 1.37, served by default.
    #[default]
    V1,
    /// Beta in 1.35 (its API must be enabled); same schema as v1.
    V1beta1,
    /// Alpha in 1.30; `spec.resource` also names a version.
    V1alpha1,
}

impl SvmApiVersion {
    /// Every accepted value, newest first.
    pub const ALL: [SvmApiVersion; 3] = [Self::V1, Self::V1beta1, Self::V1alpha1];

    /// `storagemigration.k8s.io/<version>`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "storagemigration.k8s.io/v1",
            Self::V1beta1 => "storagemigration.k8s.io/v1beta1",
            Self::V1alpha1 => "storagemigration.k8s.io/v1alpha1",
        }
    }

    /// The clusters that serve it, for the header of the output.
    fn clusters(self) -> &'static str {
        match self {
            Self::V1 => "Kubernetes 1.37 or later",
            Self::V1beta1 => {
                "Kubernetes 1.35 or later, with --runtime-config=storagemigration.k8s.io/v1beta1=true"
            }
            Self::V1alpha1 => {
                "Kubernetes 1.30 to 1.34, with the StorageVersionMigrator and InformerResourceVersion feature gates and --runtime-config=storagemigration.k8s.io/v1alpha1=true"
            }
        }
    }

    /// Parses a full apiVersion; the error lists the accepted ones.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == text)
            .ok_or_else(|| {
                let all: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                format!("{text:?}: expected one of {}", all.join(", "))
            })
    }
}

impl fmt::Display for SvmApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationError {
    /// A `--crd` that names no CRD of the config: a usage error.
    UnknownCrd {
        /// The name given.
        name: String,
        /// The CRDs the config has, by name.
        known: Vec<String>,
    },
    /// The config cannot be read, or a CRD to migrate is unusable.
    Config(Vec<String>),
}

impl MigrationError {
    /// Whether the command line, rather than the config, is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::UnknownCrd { .. })
    }
}

impl fmt::Display for MigrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownCrd { name, known } if known.is_empty() => {
                write!(
                    f,
                    "--crd {name}: the config has no CustomResourceDefinition"
                )
            }
            Self::UnknownCrd { name, known } => write!(
                f,
                "--crd {name}: no such CustomResourceDefinition in the config; it has: {}",
                known.join(", ")
            ),
            Self::Config(problems) => f.write_str(&problems.join("\n")),
        }
    }
}

/// One document of the config, with the file it came from.
#[derive(Debug, Clone)]
pub struct Document {
    pub file: String,
    pub doc: Json,
}

/// The documents of a config (a directory, a file, or the embedded
/// examples), as `webhook-config` reads them; a file or document that
/// cannot be read is an error naming it.
pub fn read_documents(source: &ConfigSource) -> Result<Vec<Document>, MigrationError> {
    let texts = files::texts(source).map_err(|e| MigrationError::Config(vec![e]))?;
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in &texts {
        for parsed in config::parse_documents(file, text) {
            match parsed {
                Ok(doc) => docs.push(Document {
                    file: file.clone(),
                    doc,
                }),
                Err(e) => problems.push(format!("{file}: {e}")),
            }
        }
    }
    if problems.is_empty() {
        Ok(docs)
    } else {
        Err(MigrationError::Config(problems))
    }
}

/// What `render` wrote: the YAML stream (empty when there is nothing to
/// migrate) and notes for standard error.
#[derive(Debug, Default)]
pub struct Migrations {
    pub yaml: String,
    pub notes: Vec<String>,
}

/// A CRD document, with what a migration needs of it.
struct Crd {
    file: String,
    name: String,
    group: String,
    plural: String,
    versions: Vec<String>,
    storage: Vec<String>,
}

/// The migrations of the CRDs named in `selected` (every CRD of the
/// documents when empty), in CRD-name order. A CRD with one version has
/// nothing to migrate and gets a note instead.
pub fn render(
    documents: &[Document],
    selected: &[String],
    api_version: SvmApiVersion,
) -> Result<Migrations, MigrationError> {
    let mut crds = Vec::new();
    for document in documents {
        collect(&document.file, &document.doc, &mut crds);
    }
    crds.sort_by(|a, b| a.name.cmp(&b.name));
    let mut known: Vec<String> = crds.iter().map(|c| c.name.clone()).collect();
    known.dedup();
    for name in selected {
        if !known.contains(name) {
            return Err(MigrationError::UnknownCrd {
                name: name.clone(),
                known,
            });
        }
    }
    if crds.is_empty() {
        return Err(MigrationError::Config(vec![
            "the config has no CustomResourceDefinition (apiextensions.k8s.io/v1)".into(),
        ]));
    }
    let wanted = |c: &Crd| selected.is_empty() || selected.contains(&c.name);
    let mut problems = Vec::new();
    let mut out = Migrations::default();
    let mut docs = Vec::new();
    for (i, crd) in crds.iter().enumerate().filter(|(_, c)| wanted(c)) {
        if let Some(twin) = crds[..i].iter().find(|c| c.name == crd.name) {
            problems.push(format!(
                "{}: crd {}: defined again (first in {})",
                crd.file, crd.name, twin.file
            ));
            continue;
        }
        match migration(crd, api_version) {
            Ok(Some(doc)) => docs.push(doc),
            Ok(None) => out.notes.push(format!(
                "{}: crd {}: skipped, it has one version ({}): nothing is stored in another",
                crd.file,
                crd.name,
                crd.versions.join(", ")
            )),
            Err(problem) => problems.push(format!("{}: crd {}: {problem}", crd.file, crd.name)),
        }
    }
    if !problems.is_empty() {
        return Err(MigrationError::Config(problems));
    }
    if docs.is_empty() {
        out.notes
            .push("nothing to migrate: no CRD to migrate has more than one version".into());
        return Ok(out);
    }
    out.yaml = format!(
        "# Written by `celhook storage-migration` for {} ({}).\n\
         # Apply it once the CRDs with their new storage versions are in the cluster: each migration\n\
         # has the API server rewrite every object of its resource in the storage version.\n",
        api_version,
        api_version.clusters()
    );
    for doc in docs {
        out.yaml.push_str(&doc);
    }
    Ok(out)
}

/// Collects the CRDs of a document (a `v1` `List` holds several).
fn collect(file: &str, doc: &Json, out: &mut Vec<Crd>) {
    let text = |value: &Json, p: &str| {
        value
            .pointer(p)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match (
        text(doc, "/apiVersion").as_str(),
        text(doc, "/kind").as_str(),
    ) {
        ("v1", "List") => {
            for item in doc
                .get("items")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                collect(file, item, out);
            }
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            let versions = doc
                .pointer("/spec/versions")
                .and_then(Json::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            out.push(Crd {
                file: file.to_owned(),
                name: text(doc, "/metadata/name"),
                group: text(doc, "/spec/group"),
                plural: text(doc, "/spec/names/plural"),
                versions: versions.iter().map(|v| text(v, "/name")).collect(),
                storage: versions
                    .iter()
                    .filter(|v| v.get("storage").and_then(Json::as_bool) == Some(true))
                    .map(|v| text(v, "/name"))
                    .collect(),
            });
        }
        _ => {}
    }
}

/// The commented migration document of one CRD, `None` when it has a
/// single version, or what keeps it from being written.
fn migration(crd: &Crd, api_version: SvmApiVersion) -> Result<Option<String>, String> {
    // Every value below lands in a shell command of a comment: only the
    // characters Kubernetes allows in these names (it refuses the CRD
    // otherwise) may pass, so that no value can end the comment or the
    // quoting.
    checked_name("metadata.name", &crd.name, true)?;
    checked_name("spec.group", &crd.group, true)?;
    checked_name("spec.names.plural", &crd.plural, false)?;
    for version in &crd.versions {
        checked_name("spec.versions[].name", version, false)?;
    }
    if crd.versions.len() < 2 {
        return Ok(None);
    }
    let storage = match crd.storage.as_slice() {
        [one] => one,
        [] => return Err("spec.versions: no version has storage: true".into()),
        many => {
            return Err(format!(
                "spec.versions: several versions have storage: true ({})",
                many.join(", ")
            ))
        }
    };
    // The storage version in the name: each change of storage version
    // needs a migration of its own (a finished one never runs again).
    let name = format!("{}-{storage}", crd.name);
    if name.len() > 253 {
        return Err(format!(
            "the migration's name {name:?} would be longer than 253 characters"
        ));
    }
    let mut resource = json!({"group": crd.group, "resource": crd.plural});
    if api_version == SvmApiVersion::V1alpha1 {
        resource["version"] = storage.as_str().into();
    }
    let doc = json!({
        "apiVersion": api_version.as_str(),
        "kind": "StorageVersionMigration",
        "metadata": {"name": name},
        "spec": {"resource": resource},
    });
    let yaml = serde_norway::to_string(&doc).map_err(|e| format!("writing YAML: {e}"))?;
    let others: Vec<&str> = crd
        .versions
        .iter()
        .map(String::as_str)
        .filter(|v| v != storage)
        .collect();
    Ok(Some(format!(
        "---\n\
         # {crd_name}: rewrites every object in the storage version {storage} (other versions: {others}).\n\
         # Needed when the CRD's status.storedVersions lists more than {storage}:\n\
         #   kubectl get crd {crd_name} -o jsonpath='{{.status.storedVersions}}'\n\
         # Once applied, wait for it (a migration that failed stays Failed: delete it, fix the cause, apply again):\n\
         #   kubectl wait --for=condition=Succeeded --timeout=10m storageversionmigrations.storagemigration.k8s.io/{name}\n\
         # then keep only {storage} in status.storedVersions, so that the other versions may later leave\n\
         # spec.versions (newer controllers do this on success; the patch is then a no-op):\n\
         #   kubectl patch crd {crd_name} --subresource=status --type=merge -p '{{\"status\":{{\"storedVersions\":[\"{storage}\"]}}}}'\n\
         {yaml}",
        crd_name = crd.name,
        others = others.join(", "),
    )))
}

/// `value` as a lowercase DNS name: one label of `[a-z0-9-]` (at most 63
/// characters), or with `dotted` labels joined by dots (at most 253);
/// else the error naming `field`.
fn checked_name(field: &str, value: &str, dotted: bool) -> Result<(), String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if value.is_empty() {
        return Err(format!("{field}: missing"));
    }
    let fits = if dotted {
        value.len() <= 253 && value.split('.').all(label_ok)
    } else {
        label_ok(value)
    };
    if !fits {
        let what = if dotted {
            "a lowercase DNS subdomain (a-z, 0-9, '-' and '.', at most 253 characters)"
        } else {
            "a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters)"
        };
        return Err(format!("{field}: {value:?} is not {what}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, versions: &[(&str, bool)]) -> Json {
        let (plural, group) = name.split_once('.').unwrap_or((name, ""));
        let versions: Vec<Json> = versions
            .iter()
            .map(|(v, storage)| json!({"name": v, "served": true, "storage": storage}))
            .collect();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "names": {"plural": plural, "kind": "K"},
                     "scope": "Namespaced", "versions": versions},
        })
    }

    fn docs(values: Vec<Json>) -> Vec<Document> {
        values
            .into_iter()
            .map(|doc| Document {
                file: "crds.yaml".into(),
                doc,
            })
            .collect()
    }

    /// The YAML documents of the stream (the header comment is not one).
    fn objects(yaml: &str) -> Vec<Json> {
        yaml.split("\n---\n")
            .skip(1)
            .map(|d| serde_norway::from_str(d).expect("YAML"))
            .collect()
    }

    #[test]
    fn a_multi_version_crd_gets_a_migration_and_its_clean_up() {
        let input = docs(vec![crd(
            "widgets.example.org",
            &[("v1", false), ("v2", true)],
        )]);
        let out = render(&input, &[], SvmApiVersion::default()).expect("renders");
        assert!(out.notes.is_empty(), "{:?}", out.notes);
        assert_eq!(
            objects(&out.yaml),
            [json!({
                "apiVersion": "storagemigration.k8s.io/v1",
                "kind": "StorageVersionMigration",
                "metadata": {"name": "widgets.example.org-v2"},
                "spec": {"resource": {"group": "example.org", "resource": "widgets"}},
            })]
        );
        assert!(out.yaml.contains(
            "#   kubectl patch crd widgets.example.org --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[\"v2\"]}}'\n"
        ), "{}", out.yaml);
        assert!(out.yaml.contains(
            "#   kubectl wait --for=condition=Succeeded --timeout=10m storageversionmigrations.storagemigration.k8s.io/widgets.example.org-v2\n"
        ), "{}", out.yaml);
        assert!(out.yaml.contains("(other versions: v1)"), "{}", out.yaml);
    }

    #[test]
    fn the_alpha_api_names_the_version_and_the_beta_does_not() {
        let input = docs(vec![crd(
            "widgets.example.org",
            &[("v1", true), ("v2", false)],
        )]);
        let alpha = render(&input, &[], SvmApiVersion::V1alpha1).expect("renders");
        assert_eq!(
            objects(&alpha.yaml)[0]["spec"]["resource"],
            json!({"group": "example.org", "resource": "widgets", "version": "v1"})
        );
        assert_eq!(
            objects(&alpha.yaml)[0]["apiVersion"],
            "storagemigration.k8s.io/v1alpha1"
        );
        let beta = render(&input, &[], SvmApiVersion::V1beta1).expect("renders");
        assert_eq!(
            objects(&beta.yaml)[0]["apiVersion"],
            "storagemigration.k8s.io/v1beta1"
        );
        assert!(objects(&beta.yaml)[0]["spec"]["resource"]
            .get("version")
            .is_none());
    }

    #[test]
    fn single_version_crds_are_noted_and_a_list_is_read() {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": [
            crd("b.example.org", &[("v1", true)]),
            crd("a.example.org", &[("v1", false), ("v2", true), ("v3", false)]),
        ]});
        let out = render(&docs(vec![list]), &[], SvmApiVersion::V1).expect("renders");
        let names: Vec<Json> = objects(&out.yaml)
            .iter()
            .map(|o| o["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, [json!("a.example.org-v2")]);
        assert_eq!(
            out.notes,
            ["crds.yaml: crd b.example.org: skipped, it has one version (v1): nothing is stored in another"]
        );
        // Only the single-version one: nothing printed, and a note says so.
        let only = render(
            &docs(vec![crd("b.example.org", &[("v1", true)])]),
            &[],
            SvmApiVersion::V1,
        )
        .expect("renders");
        assert!(only.yaml.is_empty());
        assert_eq!(only.notes.len(), 2, "{:?}", only.notes);
    }

    #[test]
    fn crd_selects_and_an_unknown_name_lists_the_known_ones() {
        let input = docs(vec![
            crd("a.example.org", &[("v1", true), ("v2", false)]),
            crd("b.example.org", &[("v1", true), ("v2", false)]),
            json!({"apiVersion": "celhook.dev/v1alpha1", "kind": "Conversion"}),
        ]);
        let out = render(&input, &["b.example.org".into()], SvmApiVersion::V1).expect("renders");
        assert_eq!(objects(&out.yaml).len(), 1);
        assert!(out.yaml.contains("b.example.org-v1"));
        let err =
            render(&input, &["c.example.org".into()], SvmApiVersion::V1).expect_err("unknown");
        assert!(err.is_usage());
        assert_eq!(
            err.to_string(),
            "--crd c.example.org: no such CustomResourceDefinition in the config; it has: a.example.org, b.example.org"
        );
        let none = render(&[], &["c.example.org".into()], SvmApiVersion::V1).expect_err("none");
        assert_eq!(
            none.to_string(),
            "--crd c.example.org: the config has no CustomResourceDefinition"
        );
        let empty = render(&[], &[], SvmApiVersion::V1).expect_err("empty");
        assert!(!empty.is_usage());
    }

    #[test]
    fn unusable_crds_are_refused_with_file_crd_and_field() {
        let no_storage = crd("a.example.org", &[("v1", false), ("v2", false)]);
        let two_storage = crd("b.example.org", &[("v1", true), ("v2", true)]);
        let mut bad_version = crd("c.example.org", &[("v1", true), ("v2", false)]);
        bad_version["spec"]["versions"][1]["name"] = "v2\n# injected".into();
        let twin = crd("a.example.org", &[("v1", true), ("v2", false)]);
        let err = render(
            &docs(vec![no_storage, two_storage, bad_version, twin]),
            &[],
            SvmApiVersion::V1,
        )
        .expect_err("refused");
        let MigrationError::Config(problems) = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            problems,
            [
                "crds.yaml: crd a.example.org: spec.versions: no version has storage: true",
                "crds.yaml: crd a.example.org: defined again (first in crds.yaml)",
                "crds.yaml: crd b.example.org: spec.versions: several versions have storage: true (v1, v2)",
                "crds.yaml: crd c.example.org: spec.versions[].name: \"v2\\n# injected\" is not a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters)",
            ]
        );
    }

    #[test]
    fn api_versions_parse_by_their_full_name() {
        for v in SvmApiVersion::ALL {
            assert_eq!(SvmApiVersion::parse(v.as_str()), Ok(v));
        }
        let err = SvmApiVersion::parse("v1").expect_err("short");
        assert!(err.contains("storagemigration.k8s.io/v1beta1"), "{err}");
    }

    #[test]
    fn the_embedded_examples_migrate_their_two_conversion_crds() {
        let docs = read_documents(&ConfigSource::Embedded).expect("reads");
        let out = render(&docs, &[], SvmApiVersion::V1).expect("renders");
        let names: Vec<Json> = objects(&out.yaml)
            .iter()
            .map(|o| o["metadata"]["name"].clone())
            .collect();
        assert_eq!(
            names,
            [
                json!("crontabs.example.com-v1beta1"),
                json!("pizzas.restaurant.programming-kubernetes.info-v1alpha1")
            ]
        );
        assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
        assert!(out.notes[0].contains("crontabs.stable.example.com"));
    }
}
