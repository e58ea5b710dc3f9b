//! `celhook convert` on manifests as they are kept: objects of other kinds
//! in the same file, documents that fail, and the authors' key order.

use crate::common;
use crate::convert::{celhook, run, text, yaml_docs};

use serde_json::json;

fn fixture(name: &str) -> String {
    common::fixture_path(name).display().to_string()
}

fn read_fixture(name: &str) -> String {
    std::fs::read_to_string(common::fixture_path(name)).expect("fixture")
}

/// The ConfigMap and the Deployment of `mixed.yaml` come out unchanged in
/// their place; every key keeps the input's order (the conversion's `host`
/// and `port` after them), and numbers are written as before.
#[test]
fn other_kinds_pass_through_in_place_and_keys_keep_their_order() {
    let out = run(celhook()
        .args(["convert", "--to", "example.com/v1"])
        .arg(fixture("convert/mixed.yaml")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout, read_fixture("convert/mixed-v1.yaml"));
    let input = yaml_docs(&read_fixture("convert/mixed.yaml"));
    let output = yaml_docs(&stdout);
    assert_eq!(
        (output[0].clone(), output[2].clone()),
        (input[0].clone(), input[2].clone())
    );
    for line in [
        "terminationGracePeriodSeconds: 9007199254740993",
        "cpu: 0.5",
        "replicas: 3",
    ] {
        assert!(stdout.contains(line), "{line}");
    }
}

#[test]
fn refuse_other_kinds_names_file_document_and_kind() {
    let out = run(celhook()
        .args(["convert", "--refuse-other-kinds", "--to", "example.com/v1"])
        .arg(fixture("convert/mixed.yaml")));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    for expected in [
        "mixed.yaml: document 0 (default/crontab-settings): kind ConfigMap of apiVersion v1 is served by no CRD of the config (--refuse-other-kinds)",
        "mixed.yaml: document 2 (default/crontab-runner): kind Deployment of apiVersion apps/v1 is served by no CRD of the config (--refuse-other-kinds)",
    ] {
        assert!(stderr.contains(expected), "{stderr}");
    }
    assert!(out.stdout.is_empty(), "nothing printed on a failure");
    let partial = run(celhook()
        .args([
            "convert",
            "--refuse-other-kinds",
            "--partial",
            "--to",
            "example.com/v1",
        ])
        .arg(fixture("convert/mixed.yaml")));
    assert_eq!(partial.status.code(), Some(1));
    let names: Vec<_> = yaml_docs(&text(&partial.stdout))
        .iter()
        .map(|d| d["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("local-crontab"), json!("remote-crontab")]);
}

/// JSON keeps its key order too, in a `List` and in each item, with the
/// numbers serde_json writes (a big integer as the float it was read as).
#[test]
fn json_lists_keep_key_order_and_numbers() {
    let out = run(celhook()
        .args([
            "convert",
            "--to",
            "restaurant.programming-kubernetes.info/v1beta1",
        ])
        .arg(fixture("convert/list.json")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout, read_fixture("convert/list-v1beta1.json"));
    assert!(
        stdout.contains(r#""big": 1.8446744073709552e+19,"#)
            && stdout.contains(r#""max": 18446744073709551615,"#),
        "{stdout}"
    );
}

const CRONTAB: &str = "apiVersion: example.com/v1beta1\nkind: CronTab\n";

/// Every bad document is named (YAML errors with the file's line numbers)
/// while the others are converted and printed in order; exit 1 at the end.
#[test]
fn each_bad_document_is_named_and_the_others_still_convert() {
    let text_in = format!(
        "{CRONTAB}metadata: {{name: first}}\nhostPort: a:1\n\
         ---\nbroken: [1, 2\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm}}\n\
         ---\napiVersion: example.com/v9\nkind: CronTab\nmetadata: {{name: future}}\n\
         ---\n{CRONTAB}metadata: {{name: last}}\nhostPort: b:2\n\
         ---\nitems: {{\n\
         ---\nkind: List\napiVersion: v1\nitems:\n\
         - {{apiVersion: example.com/v1beta1, kind: CronTab, metadata: {{name: i0}}, hostPort: c:3}}\n\
         - {{apiVersion: example.com/v0, kind: CronTab, metadata: {{name: i1}}}}\n\
         - {{metadata: {{name: i2}}, kind: CronTab, hostPort: d:4, apiVersion: example.com/v1beta1}}\n"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("many.yaml");
    std::fs::write(&input, &text_in).expect("write");
    // By default a failure prints nothing: no partial set for `kubectl apply`.
    let all_or_nothing = run(celhook()
        .args(["convert", "--to", "example.com/v1"])
        .arg(&input));
    assert_eq!(all_or_nothing.status.code(), Some(1));
    assert!(all_or_nothing.stdout.is_empty());
    assert!(text(&all_or_nothing.stderr).contains("nothing printed"));
    let out = run(celhook()
        .args(["convert", "--partial", "--to", "example.com/v1"])
        .arg(&input));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let mut last = None;
    for expected in [
        "many.yaml: document 1: invalid YAML: did not find expected ',' or ']' at line 7 column 1",
        "many.yaml: document 3 (future): apiVersion \"example.com/v9\" is not a version of crontabs.example.com",
        "many.yaml: document 5: invalid YAML: did not find expected node content at line 22 column 1",
        "many.yaml: document 6 item 1 (i1): apiVersion \"example.com/v0\" is not a version",
    ] {
        // In document order.
        let at = stderr.find(expected);
        assert!(at > last, "{expected}\n{stderr}");
        last = at;
    }
    let stdout = text(&out.stdout);
    let docs = yaml_docs(&stdout);
    let names: Vec<_> = docs.iter().map(|d| d["metadata"]["name"].clone()).collect();
    assert_eq!(
        names,
        [json!("first"), json!("cm"), json!("last"), json!(null)]
    );
    assert_eq!(docs[2]["host"], "b");
    let items = docs[3]["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{stdout}");
    assert_eq!(
        (items[0]["port"].clone(), items[1]["port"].clone()),
        (json!("3"), json!("4"))
    );
    // The item after the failed one keeps its own order, not the failed one's.
    assert!(
        stdout.contains(
            "- metadata:\n    name: i2\n  kind: CronTab\n  apiVersion: example.com/v1\n  host: d\n"
        ),
        "{stdout}"
    );
}
