//! `celhook convert` and the conversion part of `celhook check`, through
//! the built binary.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

pub(crate) fn celhook() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_celhook"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CELHOOK_") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("RUST_LOG");
    cmd
}

pub(crate) fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("celhook runs")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn examples_dir() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/examples")
        .display()
        .to_string()
}

const CRONTABS_YAML: &str = "\
apiVersion: example.com/v1beta1
kind: CronTab
metadata:
  name: local-crontab
  namespace: default
hostPort: localhost:1234
---
apiVersion: example.com/v1
kind: CronTab
metadata:
  name: already-v1
host: example.com
port: \"2345\"
";

pub(crate) fn yaml_docs(s: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(s)
        .map(|de| serde::Deserialize::deserialize(de).expect("YAML document"))
        .collect()
}

#[test]
fn convert_yaml_there_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("crontabs.yaml");
    std::fs::write(&input, CRONTABS_YAML).expect("write");

    let out = run(celhook()
        .args([
            "convert",
            "--config",
            &examples_dir(),
            "--to",
            "example.com/v1",
        ])
        .arg(&input));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let docs = yaml_docs(&text(&out.stdout));
    assert_eq!(docs.len(), 2, "{}", text(&out.stdout));
    assert_eq!(docs[0]["apiVersion"], "example.com/v1");
    assert_eq!(
        (docs[0]["host"].clone(), docs[0]["port"].clone()),
        (json!("localhost"), json!("1234"))
    );
    assert_eq!(docs[1]["host"], "example.com");

    let there = dir.path().join("there.yaml");
    std::fs::write(&there, &out.stdout).expect("write");
    // No --config: the embedded examples.
    let back = run(celhook()
        .args(["convert", "--to", "example.com/v1beta1"])
        .arg(&there));
    assert_eq!(back.status.code(), Some(0), "{}", text(&back.stderr));
    let docs = yaml_docs(&text(&back.stdout));
    assert_eq!(docs[0], yaml_docs(CRONTABS_YAML)[0]);
    assert_eq!(docs[1]["hostPort"], "example.com:2345");
}

#[test]
fn convert_json_stays_json_and_converts_list_items() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("pizzas.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "restaurant.programming-kubernetes.info/v1alpha1", "kind": "Pizza",
         "metadata": {"name": "margherita"}, "spec": {"toppings": ["mozzarella", "tomato", "tomato"]},
         "status": {"cost": 9.5}}
    ]});
    std::fs::write(&input, serde_json::to_vec(&list).expect("json")).expect("write");
    let out = run(celhook()
        .args([
            "convert",
            "--to",
            "restaurant.programming-kubernetes.info/v1beta1",
        ])
        .arg(&input));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let converted: Value = serde_json::from_slice(&out.stdout).expect("JSON out");
    assert_eq!(
        converted["items"][0]["spec"]["toppings"],
        json!([{"name": "mozzarella", "quantity": 1}, {"name": "tomato", "quantity": 2}])
    );
    assert_eq!(converted["items"][0]["status"]["cost"], 9.5);
}

#[test]
fn convert_failures_name_the_file_and_object_and_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("crontabs.yaml");
    std::fs::write(&input, CRONTABS_YAML).expect("write");
    let out = run(celhook()
        .args(["convert", "--to", "example.com/v7"])
        .arg(&input));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("crontabs.yaml: document 0 (default/local-crontab): desiredAPIVersion \"example.com/v7\" is not a version"), "{err}");
    assert!(out.stdout.is_empty());

    let missing = run(celhook().args(["convert", "--to", "example.com/v1", "/nonexistent.yaml"]));
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("/nonexistent.yaml: cannot read"));

    let usage = run(celhook().args(["convert", "--to", "example.com/v1"]));
    assert_eq!(usage.status.code(), Some(64), "a file is required");
}

#[test]
fn check_accepts_the_shipped_examples() {
    let out = run(celhook().args(["check", "--config", &examples_dir()]));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.ends_with("no problems\n"), "{stdout}");
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, properties: {size: {type: integer}}}}}
    - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object, properties: {size: {type: string}}}}}
"#;

#[test]
fn check_reports_conversion_problems_and_failing_examples() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("crd.yaml"), WIDGET_CRD).expect("write");
    std::fs::write(
        dir.path().join("conversion.yaml"),
        r#"
apiVersion: celhook.dev/v1alpha1
kind: Conversion
spec:
  crd: widgets.example.org
  hub: v1
  versions:
    v2:
      toHub:
        - {path: size, expr: "int(self.size)"}
        - {path: weight, expr: "1"}
      fromHub:
        - {path: size, expr: "self.size + 1"}
"#,
    )
    .expect("write");
    let out = run(celhook().args(["check", "--config"]).arg(dir.path()));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("conversion.yaml: crd widgets.example.org version v2: spec.versions.v2.toHub[1].path: \"weight\": the target schema has no field weight"),
        "{stdout}"
    );
    // With the paths fixed, an example whose conversion fails at run time
    // ("seven" is no int) is reported with its index and target version.
    std::fs::write(
        dir.path().join("conversion.yaml"),
        r#"
apiVersion: celhook.dev/v1alpha1
kind: Conversion
spec:
  crd: widgets.example.org
  hub: v1
  versions:
    v2:
      toHub:
        - {path: size, expr: "int(self.size)"}
      fromHub:
        - {path: size, expr: "string(self.size)"}
  examples:
    - {apiVersion: example.org/v2, kind: Widget, metadata: {name: ok}, size: "7"}
    - {apiVersion: example.org/v2, kind: Widget, metadata: {name: bad}, size: "seven"}
"#,
    )
    .expect("write");
    let out = run(celhook()
        .args(["check", "--output", "json", "--config"])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let errors = &report["crds"][0]["errors"];
    assert_eq!(errors.as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(errors[0]["path"], "spec.examples[1]");
    assert_eq!(errors[0]["version"], "v1");
    assert!(
        errors[0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("converting v2 -> v1"),
        "{report}"
    );
}

const PIZZA_GROUP: &str = "restaurant.programming-kubernetes.info";

/// (maxItems of spec.toppings, maxLength of a topping's name) in `version`
/// of the shipped Pizza CRD; both must be set.
fn pizza_bounds(version: &str) -> (usize, usize) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/examples/pizza-conversion.yaml");
    let docs = yaml_docs(&std::fs::read_to_string(path).expect("read the Pizza manifest"));
    let crd = docs
        .iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .expect("the Pizza CRD");
    let v = crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == version))
        .expect("the version");
    let toppings = &v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["toppings"];
    let name = if version == "v1alpha1" {
        &toppings["items"]
    } else {
        &toppings["items"]["properties"]["name"]
    };
    let bound = |v: &Value, what: &str| -> usize {
        let n = v.as_u64().unwrap_or_else(|| panic!("{version}: no {what}"));
        usize::try_from(n).expect("bound fits usize")
    };
    (
        bound(&toppings["maxItems"], "maxItems"),
        bound(&name["maxLength"], "maxLength"),
    )
}

/// Topping `i`, `len` characters: all distinct, four bytes each (the
/// stash's annotation limit counts bytes, the CEL cost characters), and
/// differing only at the end, so every comparison reads the whole string.
fn long_topping(i: usize, len: usize) -> String {
    let digits = format!("{i:03}");
    format!("{}{digits}", "🍕".repeat(len - digits.len()))
}

fn pizza_doc(version: &str, name: &str, toppings: Value) -> Value {
    json!({
        "apiVersion": format!("{PIZZA_GROUP}/{version}"), "kind": "Pizza",
        "metadata": {"name": name, "namespace": "pizza-crd"},
        "spec": {"toppings": toppings},
        "status": {"cost": 12.5}
    })
}

/// Converts the JSON list `items` to `to` with the embedded examples.
fn convert_items(dir: &Path, file: &str, to: &str, items: &[Value]) -> Vec<Value> {
    let input = dir.join(file);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&input, serde_json::to_vec(&list).expect("json")).expect("write");
    let out = run(celhook()
        .args(["convert", "--to", &format!("{PIZZA_GROUP}/{to}")])
        .arg(&input));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let converted: Value = serde_json::from_slice(&out.stdout).expect("JSON out");
    converted["items"].as_array().expect("items").clone()
}

/// The Pizza schema bounds its toppings (maxItems, maxLength, and in
/// v1beta1 the sum of the quantities) because its conversion has a CEL cost
/// limit: a Pizza at the bounds must still convert both ways and come back
/// exactly, or a stored one would fail every LIST that holds it.
#[test]
fn pizzas_at_the_schema_bounds_convert_there_and_back() {
    let (alpha_items, alpha_len) = pizza_bounds("v1alpha1");
    let (beta_items, beta_len) = pizza_bounds("v1beta1");
    let dir = tempfile::tempdir().expect("tempdir");

    let distinct: Vec<String> = (0..alpha_items)
        .map(|i| long_topping(i, alpha_len))
        .collect();
    // Every topping twice, out of order: v1beta1 cannot say the order, so
    // the whole list goes into the stash annotation (twice: value and was).
    let half = alpha_items / 2;
    let reordered: Vec<String> = (0..2 * half)
        .map(|i| long_topping(i % half, alpha_len))
        .collect();
    let alpha = vec![
        pizza_doc("v1alpha1", "distinct", json!(distinct)),
        pizza_doc("v1alpha1", "reordered", json!(reordered)),
    ];
    let beta = convert_items(dir.path(), "alpha.json", "v1beta1", &alpha);
    assert_eq!(
        beta[0]["spec"]["toppings"].as_array().map(Vec::len),
        Some(alpha_items)
    );
    assert_eq!(beta[0]["spec"]["toppings"][0]["quantity"], 1);
    assert!(beta[0]["metadata"].get("annotations").is_none());
    assert!(beta[1]["metadata"]["annotations"]["celhook.dev/conversion-stash"].is_string());
    assert_eq!(
        convert_items(dir.path(), "beta.json", "v1alpha1", &beta),
        alpha
    );

    // v1beta1: the most names, one helping each (its rule allows 100
    // helpings in all), and one name with every helping.
    let names: Vec<Value> = (0..beta_items)
        .map(|i| json!({"name": long_topping(i, beta_len), "quantity": 1}))
        .collect();
    let beta = vec![
        pizza_doc("v1beta1", "names", json!(names)),
        pizza_doc(
            "v1beta1",
            "helpings",
            json!([{"name": long_topping(0, beta_len), "quantity": 100}]),
        ),
    ];
    let alpha = convert_items(dir.path(), "beta.json", "v1alpha1", &beta);
    assert_eq!(
        alpha[0]["spec"]["toppings"].as_array().map(Vec::len),
        Some(beta_items)
    );
    assert_eq!(
        alpha[1]["spec"]["toppings"].as_array().map(Vec::len),
        Some(100)
    );
    assert_eq!(
        convert_items(dir.path(), "alpha.json", "v1beta1", &alpha),
        beta
    );
}

#[test]
fn convert_reads_standard_input_and_names_a_missing_version() {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = celhook()
        .args(["convert", "--to", "example.com/v1", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("celhook runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(CRONTABS_YAML.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let docs = yaml_docs(&text(&out.stdout));
    assert_eq!(docs.len(), 2, "{}", text(&out.stdout));
    assert_eq!(docs[0]["apiVersion"], "example.com/v1");
    assert_eq!(docs[0]["host"], "localhost");

    // A group without its version: a usage error listing the versions.
    let out = run(celhook().args(["convert", "--to", "example.com", "-"]));
    assert_eq!(out.status.code(), Some(64));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("expected group/version") && stderr.contains("example.com/v1beta1"),
        "{stderr}"
    );
}
