//! Test documents read into requests, answers compared with expectations,
//! and the three reports.

use std::path::Path;

use celhook_json::{json, Value as Json};

use super::report::escape;
use super::*;
use crate::review::{AdmissionResponse, Operation};

/// A rules document on ConfigMaps: a Deny rule and a Warn+Audit one.
const RULES: &str = r#"
apiVersion: celhook.dev/v1alpha1
kind: ValidationRules
metadata: {name: config-keys}
spec:
  target: {group: "", kind: ConfigMap}
  exempt:
    groups: [system:masters]
  rules:
    - path: data
      x-kubernetes-validations:
        - rule: "!('password' in self)"
          message: no passwords in ConfigMaps
---
apiVersion: celhook.dev/v1alpha1
kind: ValidationRules
metadata: {name: config-advice}
spec:
  target: {group: "", kind: ConfigMap}
  validationActions: [Warn, Audit]
  rules:
    - path: .
      x-kubernetes-validations:
        - rule: "has(self.metadata.labels)"
          message: label it
"#;

fn catalog() -> Catalog {
    let loaded = config::load_texts(&[("rules.yaml", RULES)]);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report.errors);
    loaded.catalog
}

/// A test document with the given cases (YAML flow mappings).
fn test_doc(cases: &[&str]) -> String {
    let mut doc = format!(
        "apiVersion: {API_VERSION}\nkind: {KIND}\nmetadata: {{name: t}}\nspec:\n  config: cfg\n  cases:{}\n",
        if cases.is_empty() { " []" } else { "" }
    );
    for case in cases {
        doc.push_str(&format!("    - {case}\n"));
    }
    doc
}

const CM: &str =
    "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {password: x}}";

fn parse(text: &str) -> (Vec<Test>, usize, Vec<String>) {
    let mut problems = Vec::new();
    let (tests, count) = parse_tests("t.yaml", Path::new("dir"), text, &mut problems);
    (
        tests,
        count,
        problems.iter().map(|p| p.to_string()).collect(),
    )
}

#[test]
fn cases_become_requests_with_their_defaults() {
    let text = format!(
        "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: skipped}}\n",
        test_doc(&[
            &format!("{{name: create, object: {CM}, expect: {{allowed: false}}}}"),
            &format!("{{name: update, object: {CM}, oldObject: {CM}, namespace: other, userInfo: {{username: bob, groups: [g]}}, expect: {{allowed: true}}}}"),
        ])
    );
    let (tests, count, problems) = parse(&text);
    assert_eq!((count, problems.len()), (1, 0), "{problems:?}");
    let test = &tests[0];
    assert_eq!(test.name, "t");
    assert_eq!(test.config.as_deref(), Some(Path::new("dir/cfg")));
    let [create, update] = test.cases.as_slice() else {
        panic!("{:?}", test.cases)
    };
    let req = &create.request;
    assert_eq!(req.operation, Operation::Create);
    assert_eq!(
        (
            req.kind.group.as_str(),
            req.kind.version.as_str(),
            req.kind.kind.as_str()
        ),
        ("", "v1", "ConfigMap")
    );
    assert_eq!(
        (req.name.as_str(), req.namespace.as_deref()),
        ("c", Some("ns"))
    );
    assert!(req.old_object.is_none() && req.user.is_empty());
    let req = &update.request;
    assert_eq!(req.operation, Operation::Update);
    assert_eq!(req.namespace.as_deref(), Some("other"));
    assert_eq!(
        (req.user.as_str(), req.groups.as_slice()),
        ("bob", &["g".to_owned()][..])
    );
}

#[test]
fn bad_documents_and_cases_are_named_with_their_reason() {
    for (case, reason) in [
        (format!("{{name: a, object: {CM}, expected: {{allowed: true}}}}"), "unknown field `expected`"),
        (format!("{{name: a, object: {CM}, expect: {{allowed: true, warning: [x]}}}}"), "unknown field `warning`"),
        ("{name: a, expect: {allowed: true}}".into(), "object or objectFile is required"),
        (format!("{{name: a, object: {CM}, objectFile: x.yaml, expect: {{allowed: true}}}}"), "object and objectFile: give one"),
        (format!("{{name: a, object: {CM}, operation: UPDATE, expect: {{allowed: true}}}}"), "oldObject or oldObjectFile is required"),
        (format!("{{name: a, object: {CM}, oldObject: {CM}, operation: CREATE, expect: {{allowed: true}}}}"), "a CREATE has no oldObject"),
        (format!("{{name: a, object: {CM}, operation: DELETE, expect: {{allowed: true}}}}"), "a DELETE has no object, only oldObject"),
        ("{name: a, operation: DELETE, expect: {allowed: true}}".into(), "operation DELETE: oldObject or oldObjectFile is required"),
        (format!("{{name: a, object: {CM}, operation: CONNECT, expect: {{allowed: true}}}}"), "expected \"CREATE\", \"UPDATE\" or \"DELETE\""),
        (format!("{{name: a, object: {CM}, expect: {{allowed: true, code: 422}}}}"), "they go with allowed: false"),
        ("{name: a, object: {kind: ConfigMap}, expect: {allowed: true}}".into(), "no apiVersion or no kind"),
        ("{name: a, object: [1], expect: {allowed: true}}".into(), "object: expected a mapping"),
        ("{name: a, objectFile: missing.yaml, expect: {allowed: true}}".into(), "objectFile: dir/missing.yaml: "),
        (format!("{{name: a, object: {CM}}}"), "missing field `expect`"),
    ] {
        let (tests, count, problems) = parse(&test_doc(&[&case]));
        assert!(tests.is_empty() && count == 1, "{case}");
        assert_eq!(problems.len(), 1, "{problems:?}");
        let prefix = "t.yaml: ValidationTest t (document 0): case \"a\": ";
        assert!(
            problems[0].starts_with(prefix) && problems[0].contains(reason),
            "{}",
            problems[0]
        );
    }
    let one = format!("{{name: a, object: {CM}, expect: {{allowed: true}}}}");
    let (_, _, problems) = parse(&test_doc(&[&one, &one]));
    assert_eq!(
        problems,
        ["t.yaml: ValidationTest t (document 0): case \"a\": a case of this name comes before"]
    );
    let (_, count, problems) = parse(&test_doc(&[]).replace(API_VERSION, "celhook.dev/v1"));
    assert_eq!(count, 1);
    assert_eq!(
        problems,
        ["t.yaml: ValidationTest t (document 0): apiVersion Some(\"celhook.dev/v1\"): expected \"celhook.dev/v1alpha1\""]
    );
    let (_, _, problems) = parse(&test_doc(&[]));
    assert_eq!(
        problems,
        ["t.yaml: ValidationTest t (document 0): spec.cases is empty"]
    );
    let (_, count, problems) = parse("a: [\n---\nb: 1\n");
    assert_eq!(count, 0);
    assert!(
        problems[0].starts_with("t.yaml: document 0: invalid YAML"),
        "{problems:?}"
    );
}

#[test]
fn object_files_are_read_relative_to_the_test_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("objects")).unwrap();
    std::fs::write(dir.path().join("objects/cm.yaml"), CM).unwrap();
    let text = test_doc(&["{name: a, objectFile: objects/cm.yaml, oldObjectFile: objects/cm.yaml, expect: {allowed: true}}"]);
    let mut problems = Vec::new();
    let (tests, _) = parse_tests("t.yaml", dir.path(), &text, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let req = &tests[0].cases[0].request;
    assert_eq!(req.operation, Operation::Update);
    assert_eq!(
        req.object.as_ref().unwrap()["data"],
        json!({"password": "x"})
    );
}

fn denial() -> AdmissionResponse {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"password": "x"}});
    let req = AdmissionRequest {
        uid: "u".into(),
        kind: GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        },
        name: "c".into(),
        namespace: None,
        operation: Operation::Create,
        user: String::new(),
        groups: Vec::new(),
        object: Some(object),
        old_object: None,
        dry_run: true,
        details: Default::default(),
    };
    crate::admission::answer(&catalog(), &req)
}

fn expect(yaml: &str) -> Expect {
    serde_norway::from_str(yaml).expect("an expect mapping")
}

#[test]
fn answers_are_compared_exactly_for_names_and_by_substring_for_texts() {
    let res = denial();
    assert!(
        !res.allowed && res.warnings.len() == 1 && res.audit_annotations.len() == 1,
        "{res:?}"
    );
    let good = expect(
        r#"
allowed: false
code: 422
messages: ['ConfigMap "c" is invalid', no passwords]
causes: [{field: data, reason: FieldValueInvalid, message: no passwords}, {field: data}]
warnings: [label it]
auditAnnotations: {validation_failure: config-advice}
"#,
    );
    assert_eq!(compare(&good, &res), Vec::<String>::new());
    let bad = expect(
        r#"
allowed: true
code: 403
messages: [no secrets]
causes: [{field: data.password}, {field: data, reason: FieldValueForbidden}, {message: Password}]
warnings: [label them]
auditAnnotations: {validation_failure: nope, other: x}
"#,
    );
    assert_eq!(
        compare(&bad, &res),
        [
            "allowed: expected true, got false",
            "code: expected 403, got 422",
            "messages: \"no secrets\" is not in the status message",
            "causes: no cause matches {\"field\":\"data.password\"}",
            "causes: no cause matches {\"field\":\"data\",\"reason\":\"FieldValueForbidden\"}",
            "causes: no cause matches {\"message\":\"Password\"}",
            "warnings: none contains \"label them\"",
            "auditAnnotations: no annotation \"other\"",
            "auditAnnotations: \"validation_failure\" does not contain \"nope\"",
        ]
    );
    // An empty list or map: none at all.
    let none = expect("{allowed: false, causes: [], warnings: [], auditAnnotations: {}}");
    assert_eq!(
        compare(&none, &res),
        [
            "causes: expected none, got 1",
            "warnings: expected none, got 1",
            "auditAnnotations: expected none, got 1",
        ]
    );
    let allowed = AdmissionResponse::allow("u");
    assert_eq!(
        compare(
            &expect("{allowed: false, code: 422, messages: [x]}"),
            &allowed
        ),
        [
            "allowed: expected false, got true",
            "code: expected 422, got no status (allowed)",
            "messages: \"x\" is not in the status message",
        ]
    );
    assert!(compare(
        &expect("{allowed: true, warnings: [], auditAnnotations: {}}"),
        &allowed
    )
    .is_empty());
}

/// The outcome of a test document of one case, `case`, run against
/// [`RULES`].
fn run_one(case: &str) -> Outcome {
    let (tests, _, problems) = parse(&test_doc(&[case]));
    assert!(problems.is_empty(), "{problems:?}");
    run_case(&catalog(), &tests[0], &tests[0].cases[0])
}

#[test]
fn a_failing_case_says_what_differed_and_what_was_answered() {
    let outcome = run_one(&format!(
        "{{name: leak, object: {CM}, expect: {{allowed: true}}}}"
    ));
    assert_eq!(outcome.failures, ["allowed: expected true, got false"]);
    let run = Run {
        outcomes: vec![outcome],
        problems: Vec::new(),
    };
    assert_eq!(run.exit_code(), EXIT_FAILED);
    let text = run.render(ReportFormat::Text);
    assert!(
        text.starts_with(
            "FAIL t.yaml: t/leak\n  allowed: expected true, got false\n  answer: denied: ConfigMap \"c\" is invalid: data: Invalid value: no passwords in ConfigMaps\n    data (FieldValueInvalid): "
        ),
        "{text}"
    );
    assert!(
        text.contains("\n    warning: ValidationRules 'config-advice': "),
        "{text}"
    );
    assert!(
        text.contains(
            "\n    audit annotation validation_failure: [{\"document\":\"config-advice\""
        ),
        "{text}"
    );
    assert!(text.ends_with("\n0 passed, 1 failed\n"), "{text}");

    // The exempt group passes the Deny document; the advice still applies.
    let admin = run_one(&format!(
        "{{name: admin, object: {CM}, userInfo: {{groups: [system:masters]}}, expect: {{allowed: true, warnings: [label it]}}}}"
    ));
    assert!(admin.failures.is_empty());

    // A kind nothing in the config checks: a mistake in the test.
    let other = run_one("{name: other, object: {apiVersion: v1, kind: Secret, metadata: {name: s}}, expect: {allowed: true}}");
    assert_eq!(
        other.failures,
        ["the config has neither a CRD nor a rules document for v1 Secret, and no ValidatingAdmissionPolicy matches it: nothing checks this object"]
    );
}

#[test]
fn reports_count_cases_and_problems() {
    let passed = run_one(&format!(
        "{{name: \"<a & 'b'>\", object: {CM}, expect: {{allowed: false}}}}"
    ));
    let mut failed = passed.clone();
    failed.case = "second".into();
    failed.failures = vec!["allowed: expected \"x\"".into()];
    let problem = Problem {
        file: "bad.yaml".into(),
        document: Some("ValidationTest u (document 1)".into()),
        case: Some("c".into()),
        reason: "unknown field `x`".into(),
    };
    let run = Run {
        outcomes: vec![passed, failed],
        problems: vec![problem],
    };
    assert_eq!(
        (run.passed(), run.failed(), run.exit_code()),
        (1, 1, EXIT_NOT_LOADED)
    );

    let text = run.render(ReportFormat::Text);
    assert!(text.starts_with("ERROR bad.yaml: ValidationTest u (document 1): case \"c\": unknown field `x`\nPASS t.yaml: t/<a & 'b'>\nFAIL t.yaml: t/second\n"), "{text}");
    assert!(
        text.ends_with("\n1 passed, 1 failed, 1 not loaded\n"),
        "{text}"
    );

    let report: Json = serde_json::from_str(&run.render(ReportFormat::Json)).expect("JSON");
    assert_eq!(
        (report["passed"].clone(), report["failed"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(report["errors"][0]["case"], "c");
    assert_eq!(
        report["cases"][1]["failures"],
        json!(["allowed: expected \"x\""])
    );
    assert_eq!(report["cases"][0]["response"]["status"]["code"], 422);

    let xml = run.render(ReportFormat::Junit);
    let count = |needle: &str| xml.matches(needle).count();
    assert_eq!(
        (
            count("<testsuite "),
            count("<testcase "),
            count("<failure "),
            count("<error ")
        ),
        (2, 3, 1, 1)
    );
    assert!(
        xml.contains("<testsuites name=\"celhook test\" tests=\"3\" failures=\"1\" errors=\"1\">"),
        "{xml}"
    );
    assert!(
        xml.contains("<testsuite name=\"t\" tests=\"2\" failures=\"1\" errors=\"0\">"),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"&lt;a &amp; &apos;b&apos;&gt;\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"allowed: expected &quot;x&quot;\">"),
        "{xml}"
    );
    assert!(
        xml.contains("<testcase classname=\"bad.yaml\" name=\"ValidationTest u (document 1)/c\">"),
        "{xml}"
    );
}

#[test]
fn xml_escaping_covers_markup_line_breaks_and_control_characters() {
    assert_eq!(
        escape("a<b>&\"c\"'", false),
        "a&lt;b&gt;&amp;&quot;c&quot;&apos;"
    );
    assert_eq!(escape("l1\nl2\tx\r", false), "l1\nl2\tx&#13;");
    assert_eq!(escape("l1\nl2\tx\r", true), "l1&#10;l2&#9;x&#13;");
    assert_eq!(
        escape("bell\u{7}\u{0}\u{ffff}é", true),
        "bell\u{fffd}\u{fffd}\u{fffd}é"
    );
}
