//! `celhook test` through the built binary: the fixtures of
//! manifests/examples/tests pass, a wrong expectation fails with what
//! differed, files and configs that do not load exit 2, and the JSON and
//! JUnit reports.

use std::path::Path;

use serde_json::Value;

use crate::celhook_output as celhook;

/// A path under `manifests/examples/` (the examples' rules and tests).
fn fixtures(name: &str) -> String {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/examples");
    examples.join(name).display().to_string()
}

/// A test file in `dir` whose one case expects `expect` for a Deployment
/// with a `:latest` image, against `config`.
fn write_test(dir: &Path, name: &str, config: &str, expect: &str) -> String {
    let text = format!(
        r#"apiVersion: celhook.dev/v1alpha1
kind: ValidationTest
metadata:
  name: latest
spec:
  config: {config}
  cases:
    - name: the latest tag
      object:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: web, namespace: shop}}
        spec:
          selector: {{matchLabels: {{app: web}}}}
          template:
            metadata: {{labels: {{app: web}}}}
            spec:
              containers:
                - {{name: app, image: "shop:latest", resources: {{limits: {{memory: 1Gi}}}}}}
      expect: {expect}
"#
    );
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn the_fixtures_pass_case_by_case() {
    let (code, stdout, stderr) = celhook(&["test", &fixtures("tests")]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 17, "{stdout}");
    assert!(
        lines[..16].iter().all(|l| l.starts_with("PASS ")),
        "{stdout}"
    );
    assert!(
        stdout.contains("crontab.yaml: crontab/the level may not jump from low to high\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "deployment.yaml: deployment-rules/cluster admins are exempt from deployment-hygiene\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "policies.yaml: replica-limits/over the production limit is denied and audited\n"
        ),
        "{stdout}"
    );
    assert_eq!(lines[16], "16 passed, 0 failed");
}

#[test]
fn a_wrong_expectation_fails_with_what_differed() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_test(
        dir.path(),
        "t.yaml",
        &fixtures("rules"),
        "{allowed: true, warnings: [memory]}",
    );
    let (code, stdout, _) = celhook(&["test", &file]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "FAIL {file}: latest/the latest tag\n  allowed: expected true, got false\n  warnings: none contains \"memory\"\n  answer: denied: Deployment.apps \"web\" is invalid: spec.template.spec.containers[0].image: "
        )),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n0 passed, 1 failed\n"), "{stdout}");

    // The same case with the right expectation, next to the wrong one.
    write_test(
        dir.path(),
        "u.yaml",
        &fixtures("rules"),
        "{allowed: false, code: 422, messages: [must not use the latest tag]}",
    );
    let (code, stdout, _) = celhook(&["test", &dir.path().display().to_string()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("u.yaml: latest/the latest tag\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n1 passed, 1 failed\n"), "{stdout}");
}

#[test]
fn the_config_flag_replaces_spec_config() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_test(dir.path(), "t.yaml", "no-such-dir", "{allowed: false}");
    let (code, stdout, _) = celhook(&["test", "--config", &fixtures("rules"), &file]);
    assert_eq!(
        (code, stdout.as_str()),
        (
            0,
            format!("PASS {file}: latest/the latest tag\n1 passed, 0 failed\n").as_str()
        )
    );
    // Without it, the test's own config is read, and does not exist.
    let (code, stdout, _) = celhook(&["test", &file]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "ERROR {file}: ValidationTest latest (document 0): its config {}/no-such-dir does not load:\n",
            dir.path().display()
        )),
        "{stdout}"
    );
}

#[test]
fn files_and_configs_that_do_not_load_exit_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let rules = fixtures("rules");
    let typo = write_test(
        dir.path(),
        "typo.yaml",
        &rules,
        "{allowed: false, mesages: [x]}",
    );
    let bad_config = dir.path().join("bad-config");
    std::fs::create_dir(&bad_config).unwrap();
    std::fs::write(bad_config.join("crd.yaml"), "kind: [\n").unwrap();
    let broken = write_test(dir.path(), "broken.yaml", "bad-config", "{allowed: false}");
    let missing = dir.path().join("missing.yaml").display().to_string();
    let none = dir.path().join("none.yaml");
    std::fs::write(
        &none,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    .unwrap();
    let none = none.display().to_string();
    for (file, problem) in [
        (
            &typo,
            format!("ERROR {typo}: ValidationTest latest (document 0): case \"the latest tag\": unknown field `mesages`"),
        ),
        (
            &broken,
            format!("ERROR {broken}: ValidationTest latest (document 0): its config {}/bad-config does not load:\n    {}/bad-config/crd.yaml: ", dir.path().display(), dir.path().display()),
        ),
        (&missing, format!("ERROR {missing}: cannot read: ")),
        (&none, format!("ERROR {none}: holds no celhook.dev/v1alpha1 ValidationTest document")),
    ] {
        let (code, stdout, _) = celhook(&["test", file]);
        assert_eq!(code, 2, "{stdout}");
        assert!(stdout.starts_with(&problem), "{stdout}");
        assert!(stdout.ends_with("0 passed, 0 failed, 1 not loaded\n"), "{stdout}");
    }
    // A test without any config.
    let file = dir.path().join("noconfig.yaml");
    std::fs::write(
        &file,
        "apiVersion: celhook.dev/v1alpha1\nkind: ValidationTest\nmetadata: {name: n}\nspec:\n  cases: [{name: c, object: {apiVersion: v1, kind: ConfigMap}, expect: {allowed: true}}]\n",
    )
    .unwrap();
    let (code, stdout, _) = celhook(&["test", &file.display().to_string()]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.contains("ValidationTest n (document 0): no config: set spec.config"),
        "{stdout}"
    );
    // Problems win over failures, and the cases that loaded still run.
    let failing = write_test(dir.path(), "fails.yaml", &rules, "{allowed: true}");
    let (code, stdout, stderr) = celhook(&["test", "--output", "json", &failing, &typo]);
    assert_eq!(code, 2, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).expect("JSON report");
    assert_eq!(report["failed"], 1);
    assert_eq!(report["errors"][0]["case"], "the latest tag");
    assert!(stderr.contains("unknown field `mesages`"), "{stderr}");
}

#[test]
fn the_json_report_has_every_case_and_its_answer() {
    let (code, stdout, _) = celhook(&[
        "test",
        "--output",
        "json",
        &fixtures("tests/deployment.yaml"),
    ]);
    assert_eq!(code, 0, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).expect("JSON report");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(6), Some(0))
    );
    assert_eq!(report["errors"], serde_json::json!([]));
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 6);
    let advice = &cases[2];
    assert_eq!(advice["test"], "deployment-rules");
    assert_eq!(advice["passed"], true);
    assert_eq!(advice["response"]["allowed"], true);
    assert!(advice["response"]["auditAnnotations"]["validation_failure"]
        .as_str()
        .is_some_and(|v| v.contains("deployment-advice")));
    assert_eq!(cases[1]["response"]["status"]["code"], 422);
}

#[test]
fn the_junit_report_has_a_suite_per_test_and_a_failure_per_failed_case() {
    let dir = tempfile::tempdir().unwrap();
    let failing = write_test(dir.path(), "t.yaml", &fixtures("rules"), "{allowed: true}");
    let (code, xml, _) = celhook(&["test", "--output", "junit", &fixtures("tests"), &failing]);
    assert_eq!(code, 1, "{xml}");
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "),
        "{xml}"
    );
    let count = |needle: &str| xml.matches(needle).count();
    // Every element is closed: self-closing test cases or a closing tag.
    assert_eq!(count("<testsuites "), 1);
    assert_eq!(count("</testsuites>"), 1);
    assert_eq!(count("<testsuite "), 4);
    assert_eq!(count("</testsuite>"), 4);
    assert_eq!(count("<testcase "), 17);
    assert_eq!(count("<testcase ") - count("</testcase>"), 16);
    assert_eq!(count("<failure "), 1);
    assert_eq!(count("</failure>"), 1);
    assert!(
        xml.contains("<testsuites name=\"celhook test\" tests=\"17\" failures=\"1\" errors=\"0\">"),
        "{xml}"
    );
    assert!(
        xml.contains("<testsuite name=\"crontab\" tests=\"5\" failures=\"0\" errors=\"0\">"),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<testsuite name=\"deployment-rules\" tests=\"6\" failures=\"0\" errors=\"0\">"
        ),
        "{xml}"
    );
    assert!(
        xml.contains(&format!("<testcase classname=\"{failing}\" name=\"the latest tag\">\n      <failure message=\"allowed: expected true, got false\">")),
        "{xml}"
    );
    // Quotes of the answer's text are escaped, markup never leaks.
    assert!(
        xml.contains("Deployment.apps &quot;web&quot; is invalid"),
        "{xml}"
    );
    assert!(!xml.contains("\"web\""), "{xml}");
}

#[test]
fn the_help_describes_the_test_file_format() {
    let (code, stdout, _) = celhook(&["test", "--help"]);
    assert_eq!(code, 0);
    for needle in [
        "kind: ValidationTest",
        "objectFile",
        "oldObject",
        "userInfo",
        "auditAnnotations",
        "docs/testing.md",
        "junit",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    let (code, _, stderr) = celhook(&["test"]);
    assert_eq!(code, 64, "{stderr}");
}
