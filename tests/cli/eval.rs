//! `celhook eval` through the built binary: offline answers that match the
//! webhook's, transition rules on UPDATE, and single expressions.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

use crate::celhook_output as celhook;

fn write_json(dir: &Path, name: &str, v: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, v.to_string()).expect("write");
    path.display().to_string()
}

fn crontab_crd() -> String {
    format!(
        "{}/manifests/examples/crontab.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn an_invalid_object_is_denied_with_the_api_server_text() {
    let dir = tempfile::tempdir().unwrap();
    let obj = write_json(
        dir.path(),
        "obj.json",
        &crontab(
            "my-new-cron-object",
            json!({"minReplicas": 0, "replicas": 20, "maxReplicas": 10}),
        ),
    );
    let (code, stdout, _) = celhook(&["eval", "--crd", &crontab_crd(), "--object", &obj]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stdout,
        "denied: CronTab.stable.example.com \"my-new-cron-object\" is invalid: spec: Invalid value: replicas should be smaller than or equal to maxReplicas.\n  spec (FieldValueInvalid): Invalid value: replicas should be smaller than or equal to maxReplicas.\n"
    );
    // Up to 1.34 a failed rule on an object shows the node's type.
    let (code, stdout, _) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &obj,
        "--kubernetes-version",
        "1.34",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."),
        "{stdout}"
    );
}

#[test]
fn transition_rules_run_only_with_an_old_object() {
    let dir = tempfile::tempdir().unwrap();
    let spec =
        |level: &str| json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3, "level": level});
    let new = write_json(dir.path(), "new.json", &crontab("c", spec("high")));
    let old = write_json(dir.path(), "old.json", &crontab("c", spec("low")));
    let (code, stdout, _) = celhook(&["eval", "--crd", &crontab_crd(), "--object", &new]);
    assert_eq!((code, stdout.as_str()), (0, "allowed\n"));
    let (code, stdout, _) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &new,
        "--old",
        &old,
    ]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("spec.level (FieldValueInvalid): Invalid value: \"high\": cannot transition directly between 'low' and 'high'"),
        "{stdout}"
    );
}

#[tokio::test]
async fn eval_answers_exactly_as_the_webhook() {
    let dir = tempfile::tempdir().unwrap();
    let new = crontab(
        "c",
        json!({"minReplicas": 5, "replicas": 2, "maxReplicas": 1, "level": "high"}),
    );
    let old = crontab(
        "c",
        json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3, "level": "low"}),
    );
    let new_file = write_json(dir.path(), "new.json", &new);
    let old_file = write_json(dir.path(), "old.json", &old);
    let (code, stdout, stderr) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &new_file,
        "--old",
        &old_file,
        "--output",
        "json",
    ]);
    assert_eq!(code, 1, "{stderr}");
    let offline: Value = serde_json::from_str(&stdout).expect("JSON answer");

    let server = start().await;
    let answer = post_review(
        &client(&server, Http::H2),
        &validate_url(&server),
        &admission_review(V1, "UPDATE", CRONTAB, Some(new), Some(old)),
    )
    .await;
    let online = answer.response();
    assert_eq!(offline["response"]["allowed"], false);
    assert_eq!(offline["response"]["status"], online["status"]);
}

#[test]
fn expressions_evaluate_with_an_optional_self() {
    let dir = tempfile::tempdir().unwrap();
    let this = write_json(dir.path(), "self.json", &json!({"names": ["b", "a", "b"]}));
    let (code, stdout, _) = celhook(&[
        "eval",
        "--expr",
        "self.names.filter(n, n == 'b').size()",
        "--self",
        &this,
    ]);
    assert_eq!((code, stdout.as_str()), (0, "2\n"));
    let (code, stdout, _) = celhook(&["eval", "--expr", "'abc'.substring(5)"]);
    assert_eq!(
        (code, stdout.as_str()),
        (1, "error: index out of range: 5\n")
    );
    let (code, _, stderr) = celhook(&["eval", "--expr", "1 +"]);
    assert_eq!(code, 64);
    assert!(stderr.contains("ERROR: <input>:1:"), "{stderr}");
}

#[test]
fn objects_the_crd_does_not_define_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let obj = write_json(
        dir.path(),
        "obj.json",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
    );
    let (code, _, stderr) = celhook(&["eval", "--crd", &crontab_crd(), "--object", &obj]);
    assert_eq!(code, 64);
    assert!(stderr.contains("stable.example.com/v1 CronTab"), "{stderr}");
    let (code, _, stderr) = celhook(&["eval", "--crd", "/nonexistent.yaml", "--object", &obj]);
    assert_eq!(code, 64);
    assert!(stderr.contains("cannot read file"), "{stderr}");
}

#[test]
fn every_object_of_a_file_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let spec = |replicas: i64| json!({"minReplicas": 0, "replicas": replicas, "maxReplicas": 10});
    let yaml = |objects: &[Value]| {
        objects
            .iter()
            .map(|o| serde_norway::to_string(o).unwrap())
            .collect::<Vec<_>>()
            .join("---\n")
    };
    let path = dir.path().join("objects.yaml");
    std::fs::write(
        &path,
        yaml(&[crontab("ok", spec(1)), crontab("bad", spec(20))]),
    )
    .unwrap();
    let objects = path.display().to_string();
    let (code, stdout, stderr) = celhook(&["eval", "--crd", &crontab_crd(), "--object", &objects]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout,
        "document 0 (default/ok): allowed\n\
         document 1 (default/bad): denied: CronTab.stable.example.com \"bad\" is invalid: spec: Invalid value: replicas should be smaller than or equal to maxReplicas.\n  \
         spec (FieldValueInvalid): Invalid value: replicas should be smaller than or equal to maxReplicas.\n"
    );
    let (code, stdout, _) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &objects,
        "--output",
        "json",
    ]);
    assert_eq!(code, 1);
    let reviews: Value = serde_json::from_str(&stdout).expect("JSON answers");
    let allowed: Vec<_> = reviews
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| r["response"]["allowed"].clone())
        .collect();
    assert_eq!(allowed, [json!(true), json!(false)]);

    // A JSON List: each item answered; all allowed, exit 0.
    let list = write_json(
        dir.path(),
        "list.json",
        &json!({"apiVersion": "v1", "kind": "List", "items": [crontab("a", spec(1)), crontab("b", spec(2))]}),
    );
    let (code, stdout, _) = celhook(&["eval", "--crd", &crontab_crd(), "--object", &list]);
    assert_eq!(
        (code, stdout.as_str()),
        (
            0,
            "document 0 item 0 (default/a): allowed\ndocument 0 item 1 (default/b): allowed\n"
        )
    );

    // --old pairs in order: the second object's level jumps from low to high.
    let with_level = |name: &str, level: &str| {
        crontab(
            name,
            json!({"minReplicas": 0, "replicas": 1, "maxReplicas": 2, "level": level}),
        )
    };
    let new = dir.path().join("new.yaml");
    let old = dir.path().join("old.yaml");
    std::fs::write(
        &new,
        yaml(&[with_level("x", "high"), with_level("y", "high")]),
    )
    .unwrap();
    std::fs::write(
        &old,
        yaml(&[with_level("x", "high"), with_level("y", "low")]),
    )
    .unwrap();
    let (new, old) = (new.display().to_string(), old.display().to_string());
    let (code, stdout, _) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &new,
        "--old",
        &old,
    ]);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with("document 0 (default/x): allowed\ndocument 1 (default/y): denied:")
            && stdout.contains("cannot transition directly between 'low' and 'high'"),
        "{stdout}"
    );
    let one = write_json(dir.path(), "one.json", &with_level("x", "low"));
    let (code, _, stderr) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &new,
        "--old",
        &one,
    ]);
    assert_eq!(code, 64);
    assert!(
        stderr.contains("one.json: holds 1 object(s) and --object 2"),
        "{stderr}"
    );
}

#[test]
fn expressions_see_old_self_only_with_old() {
    let dir = tempfile::tempdir().unwrap();
    let this = write_json(dir.path(), "self.json", &json!({"replicas": 5}));
    let old = write_json(dir.path(), "old.json", &json!({"replicas": 3}));
    let expr = "self.replicas >= oldSelf.replicas ? self.replicas - oldSelf.replicas : -1";
    let (code, stdout, stderr) = celhook(&["eval", "--expr", expr, "--self", &this, "--old", &old]);
    assert_eq!((code, stdout.as_str()), (0, "2\n"), "{stderr}");
    let (code, stdout, _) = celhook(&["eval", "--expr", "oldSelf", "--old", &old]);
    assert_eq!((code, stdout.as_str()), (0, "{\"replicas\":3}\n"));
    let (code, stdout, stderr) = celhook(&["eval", "--expr", expr, "--self", &this]);
    assert_eq!((code, stdout.as_str()), (64, ""));
    assert!(
        stderr.contains("undeclared reference to 'oldSelf'"),
        "{stderr}"
    );
}

/// For CI: several files, a directory and standard input in one run, each
/// object named by its file in the answer and the JSON report; `--crd`
/// may be a config directory.
#[test]
fn files_directories_and_standard_input_are_answered_together() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    std::fs::create_dir_all(objects.join("team")).unwrap();
    let spec = |replicas: i64| json!({"minReplicas": 0, "replicas": replicas, "maxReplicas": 10});
    write_json(&objects, "good.json", &crontab("good", spec(1)));
    write_json(&objects.join("team"), "bad.json", &crontab("bad", spec(20)));
    let crds = dir.path().join("crds");
    std::fs::create_dir_all(&crds).unwrap();
    std::fs::copy(crontab_crd(), crds.join("crontab.yaml")).unwrap();
    let stdin_object = serde_json::to_vec(&crontab("piped", spec(2))).unwrap();
    let run = |output: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_celhook"))
            .args(["eval", "--crd"])
            .arg(&crds)
            .arg("--object")
            .arg(&objects)
            .arg("-")
            .args(["--output", output])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &stdin_object).unwrap();
        let out = child.wait_with_output().expect("wait");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run("text");
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].ends_with("good.json: document 0 (default/good): allowed"),
        "{stdout}"
    );
    assert!(
        lines[1].contains("bad.json: document 0 (default/bad): denied: CronTab.stable.example.com \"bad\" is invalid"),
        "{stdout}"
    );
    assert_eq!(
        lines[2], "<stdin>: document 0 (default/piped): allowed",
        "{stdout}"
    );

    let (code, stdout, _) = run("json");
    assert_eq!(code, Some(1));
    let reviews: Value = serde_json::from_str(&stdout).expect("a JSON report");
    let labels = [
        "good.json: document 0 (default/good)",
        "bad.json: document 0 (default/bad)",
        "<stdin>: document 0 (default/piped)",
    ];
    let report: Vec<(bool, bool)> = labels
        .iter()
        .zip(reviews.as_array().expect("an array"))
        .map(|(label, r)| {
            (
                r["object"].as_str().is_some_and(|o| o.ends_with(label)),
                r["response"]["allowed"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        report,
        [(true, true), (true, false), (true, true)],
        "{stdout}"
    );
}

/// The whole schema is checked, as the API server checks it before any
/// rule: a wrong type and a pattern deny, the rules it did not run are
/// said, an undeclared field is warned of; on UPDATE an unchanged bad
/// value ratchets, a changed one does not.
#[test]
fn schema_violations_are_denied_on_create_and_update() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_json(
        dir.path(),
        "bad.json",
        &crontab(
            "bad",
            json!({"cronSpec": "not a cron", "image": 42, "minReplicas": 1, "replicas": 2, "maxReplicas": 3, "extra": true}),
        ),
    );
    let (code, stdout, _) = celhook(&["eval", "--crd", &crontab_crd(), "--object", &bad]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with("denied: CronTab.stable.example.com \"bad\" is invalid: [spec.cronSpec: Invalid value: \"not a cron\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$', spec.image: Invalid value: \"integer\": spec.image in body must be of type string: \"integer\", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]\n"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("warning: unknown field \"spec.extra\"\n"),
        "{stdout}"
    );

    // UPDATE: the pattern failure was there before (ratcheted); the image
    // changed from a good value to a bad one.
    let spec = |image: Value| json!({"cronSpec": "not a cron", "image": image, "minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let old = write_json(dir.path(), "old.json", &crontab("c", spec(json!("nginx"))));
    let new = write_json(dir.path(), "new.json", &crontab("c", spec(json!(42))));
    let (code, stdout, _) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &new,
        "--old",
        &old,
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with("denied: CronTab.stable.example.com \"c\" is invalid: [spec.image: Invalid value: \"integer\": spec.image in body must be of type string: \"integer\", <nil>: Invalid value: null:"),
        "{stdout}"
    );
    assert!(!stdout.contains("cronSpec"), "ratcheted: {stdout}");
    let (code, stdout, _) = celhook(&[
        "eval",
        "--crd",
        &crontab_crd(),
        "--object",
        &old,
        "--old",
        &old,
    ]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "allowed\n"),
        "unchanged: all ratcheted"
    );
}
