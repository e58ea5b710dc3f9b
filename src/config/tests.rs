//! Loading tests: directories, multi-document files, and refusals with
//! their locations.

use super::*;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write fixture");
}

const CRD_HEAD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                n: {type: integer}
";

#[test]
fn embedded_examples_load_without_problems() {
    let loaded = load(&ConfigSource::Embedded);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    assert!(loaded
        .catalog
        .lookup("stable.example.com", "v1", "CronTab")
        .is_some());
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
    let second = CRD_HEAD
        .replace("widgets.example.com", "gadgets.example.com")
        .replace(
            "{plural: widgets, singular: widget, kind: Widget}",
            "{plural: gadgets, singular: gadget, kind: Gadget}",
        );
    write(dir.path(), "two.yaml", &format!("{CRD_HEAD}---\n{second}"));
    let json_doc: serde_json::Value = serde_norway::from_str(
        &CRD_HEAD
            .replace("widgets.example.com", "gizmos.example.com")
            .replace(
                "{plural: widgets, singular: widget, kind: Widget}",
                "{plural: gizmos, singular: gizmo, kind: Gizmo}",
            ),
    )
    .unwrap();
    write(dir.path(), "three.json", &json_doc.to_string());
    write(dir.path(), "README.md", "not config");
    let loaded = load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    assert_eq!(loaded.catalog.len(), 3);
    assert!(loaded
        .catalog
        .lookup("example.com", "v1", "Gizmo")
        .is_some());
}

#[test]
fn bad_yaml_other_kinds_and_duplicates_are_refused() {
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
    assert!(text.contains("kind \\\"ConfigMap\\\""), "{text}");
    assert!(text.contains("invalid YAML"), "{text}");
    // The valid first copy still compiled.
    assert!(loaded
        .catalog
        .lookup("example.com", "v1", "Widget")
        .is_some());
}

#[test]
fn a_missing_directory_is_a_problem_not_a_panic() {
    let loaded = load(&ConfigSource::Dir("/nonexistent/celhook".into()));
    assert!(loaded.report.has_errors());
}
