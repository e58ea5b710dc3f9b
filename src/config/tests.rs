//! Loading tests: directories, multi-document files, and refusals with
//! their locations.

use super::*;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write fixture");
}

/// A one-version Widget CRD whose spec has one integer field `n`.
const CRD_HEAD: &str = include_str!("../../tests/fixtures/unit/config-widget.yaml");

/// [`CRD_HEAD`] renamed: `plural` of example.com, of kind `kind`.
fn renamed(plural: &str, singular: &str, kind: &str) -> String {
    CRD_HEAD
        .replace("widgets.example.com", &format!("{plural}.example.com"))
        .replace(
            "{plural: widgets, singular: widget, kind: Widget}",
            &format!("{{plural: {plural}, singular: {singular}, kind: {kind}}}"),
        )
}

/// Whether the catalog has version v1 of `kind` in `group`.
fn serves(loaded: &Loaded, group: &str, kind: &str) -> bool {
    loaded.catalog.lookup(group, "v1", kind).is_some()
}

#[test]
fn embedded_examples_load_without_problems() {
    let loaded = load(&ConfigSource::Embedded);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    assert!(serves(&loaded, "stable.example.com", "CronTab"));
}

#[test]
fn a_broken_rule_is_reported_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let text = CRD_HEAD.replace(
        "              properties:\n                n: {type: integer}\n",
        "              x-kubernetes-validations:\n                - rule: \"self.nonExistingField > 0\"\n              properties:\n                n: {type: integer}\n",
    );
    write(dir.path(), "widget.yaml", &text);
    let loaded = load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(loaded.report.has_errors());
    assert!(loaded.catalog.is_empty());
    let crd = &loaded.report.crds[0];
    assert_eq!(crd.name, "widgets.example.com");
    let p = &crd.errors[0];
    assert!(p.file.ends_with("widget.yaml"));
    assert_eq!(p.version.as_deref(), Some("v1"));
    assert_eq!(
        p.path.as_deref(),
        Some("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule")
    );
    assert_eq!(p.rule.as_deref(), Some("self.nonExistingField > 0"));
    assert!(
        p.reason.starts_with(
            "compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'"
        ),
        "{}",
        p.reason
    );
}

#[test]
fn multi_document_files_and_json_files_load() {
    let dir = tempfile::tempdir().unwrap();
    let second = renamed("gadgets", "gadget", "Gadget");
    write(dir.path(), "two.yaml", &format!("{CRD_HEAD}---\n{second}"));
    let json_doc: serde_json::Value =
        serde_norway::from_str(&renamed("gizmos", "gizmo", "Gizmo")).unwrap();
    write(dir.path(), "three.json", &json_doc.to_string());
    write(dir.path(), "README.md", "not config");
    let loaded = load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    assert_eq!(loaded.catalog.len(), 3);
    assert!(serves(&loaded, "example.com", "Gizmo"));
}

#[test]
fn bad_yaml_and_duplicates_are_refused_and_other_kinds_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.yaml", CRD_HEAD);
    write(dir.path(), "b.yaml", CRD_HEAD);
    write(
        dir.path(),
        "c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    write(dir.path(), "d.yaml", "key: [unclosed\n");
    let loaded = load(&ConfigSource::Dir(dir.path().to_owned()));
    let text = format!("{:?}", loaded.report);
    assert!(
        text.contains("duplicate CustomResourceDefinition"),
        "{text}"
    );
    // Not a CRD: skipped with a warning, not refused.
    assert!(
        loaded
            .report
            .warnings
            .iter()
            .any(|w| w.file.ends_with("c.yaml") && w.reason.contains("kind \"ConfigMap\"")),
        "{text}"
    );
    assert!(!loaded
        .report
        .errors
        .iter()
        .any(|e| e.file.ends_with("c.yaml")));
    assert!(text.contains("invalid YAML"), "{text}");
    // The valid first copy still compiled.
    assert!(serves(&loaded, "example.com", "Widget"));
}

#[test]
fn a_missing_directory_is_a_problem_not_a_panic() {
    let loaded = load(&ConfigSource::Dir("/nonexistent/celhook".into()));
    assert!(loaded.report.has_errors());
}

#[test]
fn subdirectories_single_files_kustomizations_and_samples_load_as_users_keep_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("team/crds")).unwrap();
    write(&root.join("team/crds"), "widget.yaml", CRD_HEAD);
    write(
        root,
        "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [team/crds/widget.yaml]\n",
    );
    // A sample object next to its CRD, and a bad document between two
    // good ones: the good ones still load.
    let gadget = renamed("gadgets", "gadget", "Gadget");
    write(
        &root.join("team"),
        "gadget.yaml",
        &format!("---\n{gadget}---\nkey: [unclosed\n---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: sample}}\n"),
    );
    let loaded = load(&ConfigSource::Dir(root.to_owned()));
    assert!(serves(&loaded, "example.com", "Widget"));
    assert!(serves(&loaded, "example.com", "Gadget"));
    let errors: Vec<&Problem> = loaded.report.errors.iter().collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].file.ends_with("team/gadget.yaml"));
    assert!(
        errors[0].reason.starts_with("invalid YAML in document 1"),
        "{}",
        errors[0].reason
    );
    let warnings: Vec<String> = loaded
        .report
        .warnings
        .iter()
        .map(report::format_problem)
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("kustomization.yaml: skipped")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("gadget.yaml: document 2: skipped")),
        "{warnings:?}"
    );
    // Warnings fail only a strict check.
    let clean = load_texts(&[("sample.yaml", "apiVersion: v1\nkind: ConfigMap\n")]);
    assert!(!clean.report.fails(false) && clean.report.fails(true));

    // `--config` may name one file.
    let one = load(&ConfigSource::Dir(root.join("team/crds/widget.yaml")));
    assert!(!one.report.has_errors(), "{:?}", one.report);
    assert_eq!(one.catalog.len(), 1);
}

#[test]
fn one_bad_document_costs_only_itself() {
    let docs = parse_documents("x.yaml", "a: 1\n---\n# only a comment\n---\nb: [\n");
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[1], Ok(Json::Null));
    assert!(docs[2]
        .as_ref()
        .is_err_and(|e| e.starts_with("invalid YAML in document 2")));
}

#[test]
fn test_documents_beside_a_config_are_passed_over_quietly() {
    let loaded = load_texts(&[(
        "tests/crontab.yaml",
        "apiVersion: celhook.dev/v1alpha1\nkind: ValidationTest\nmetadata: {name: t}\nspec: {cases: []}\n",
    )]);
    assert!(!loaded.report.fails(true), "{:?}", loaded.report);
    // Another kind of that group is not: a typo is named.
    let typo = load_texts(&[(
        "rules.yaml",
        "apiVersion: celhook.dev/v1alpha1\nkind: ValidationRule\n",
    )]);
    assert!(typo.report.fails(true), "{:?}", typo.report);
}
