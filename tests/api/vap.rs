//! ValidatingAdmissionPolicy conformance: the cases ported from the
//! Kubernetes sources (`tests/fixtures/vap-conformance/`, format in its
//! README), each run through the real server: its manifests loaded by the
//! config loader, a TLS server on a real socket, the AdmissionReview
//! posted over HTTPS. Prints the figure per area, rewrites
//! `FAILURES.md` there, and fails when the figure drops below
//! `baseline.txt`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{client, post_review, start_with, validate_url, Http};
use celhook::config;
use celhook::server::ServeConfig;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vap-conformance")
}

/// The case files, in name order.
fn case_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root())
        .expect("the conformance directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The webhook's audit annotation key for a key the API server records
/// natively (`<prefix>/<name>`): a webhook's keys may not hold a `/`.
fn webhook_key(native: &str) -> String {
    native.replace('/', "_")
}

#[derive(Default)]
struct Tally {
    passed: usize,
    total: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ported_policy_cases_pass_through_the_server() {
    let mut areas: BTreeMap<String, Tally> = BTreeMap::new();
    let mut authorizer = Tally::default();
    let mut failures: Vec<(String, String)> = Vec::new();
    for file in case_files() {
        let text = std::fs::read_to_string(&file).expect("readable");
        let doc: Value =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let area = doc["area"].as_str().expect("area").to_owned();
        let cases = doc["cases"].as_array().cloned().unwrap_or_default();
        for (i, case) in cases.iter().enumerate() {
            let name = format!(
                "{area}/{}",
                case["name"]
                    .as_str()
                    .map_or_else(|| format!("case {i}"), str::to_owned)
            );
            let outcome = run_case(case).await;
            let tally = if case["authorizer"] == true {
                &mut authorizer
            } else {
                areas.entry(area.clone()).or_default()
            };
            tally.total += 1;
            match outcome {
                Ok(()) => tally.passed += 1,
                Err(diff) if case["authorizer"] != true => failures.push((name, diff)),
                Err(_) => {}
            }
        }
    }
    let passed: usize = areas.values().map(|t| t.passed).sum();
    let total: usize = areas.values().map(|t| t.total).sum();
    let mut table = String::new();
    for (area, t) in &areas {
        let _ = writeln!(table, "  {area:<32} {:>4}/{:<4}", t.passed, t.total);
    }
    println!(
        "vap conformance: {passed}/{total} ({:.1}%)\n{table}  authorizer cases (refused at load): {}",
        100.0 * passed as f64 / total.max(1) as f64,
        authorizer.total
    );
    let mut report = String::from(
        "# ValidatingAdmissionPolicy conformance: failing cases\n\nWritten by `tests/api/vap.rs`.\n\n",
    );
    for (name, diff) in &failures {
        let _ = writeln!(report, "## {name}\n\n```\n{diff}\n```\n");
    }
    if failures.is_empty() {
        report.push_str("None.\n");
    }
    let _ = std::fs::write(root().join("FAILURES.md"), report);
    let baseline: usize = std::fs::read_to_string(root().join("baseline.txt"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= baseline,
        "vap conformance dropped: {passed} < baseline {baseline}; see FAILURES.md"
    );
    assert!(total > 0, "no cases found");
}

/// Runs one case; `Err` says how the answer differs.
async fn run_case(case: &Value) -> Result<(), String> {
    let manifests: Vec<(String, String)> = case["config"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, m)| (format!("case/{i}.json"), m.to_string()))
        .collect();
    let loaded = config::load_texts(&manifests);
    let problems: Vec<String> = loaded
        .report
        .errors
        .iter()
        .chain(loaded.report.crds.iter().flat_map(|c| &c.errors))
        .map(|p| format!("{}: {}", p.path.as_deref().unwrap_or(""), p.reason))
        .collect();
    if let Some(want) = case["loadError"].as_str() {
        return match problems.iter().find(|p| p.contains(want)) {
            Some(_) => Ok(()),
            None if problems.is_empty() => {
                Err(format!("loaded, but must be refused with {want:?}"))
            }
            None => Err(format!(
                "refused, but not with {want:?}:\n{}",
                problems.join("\n")
            )),
        };
    }
    if !problems.is_empty() {
        return Err(format!("refused at load:\n{}", problems.join("\n")));
    }
    let server = start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let review = review_of(&case["request"]);
    let answer = post_review(&client(&server, Http::H1), &validate_url(&server), &review)
        .await
        .response();
    drop(server);
    compare(&case["expect"], &answer)
}

/// The AdmissionReview of a case's request.
fn review_of(request: &Value) -> Value {
    let mut r = request.clone();
    let object = r
        .get("object")
        .or(r.get("oldObject"))
        .cloned()
        .unwrap_or(Value::Null);
    r["uid"] = json!("vap-conformance");
    if r.get("name").is_none() {
        r["name"] = object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(json!(""));
    }
    if r.get("requestKind").is_none() {
        r["requestKind"] = r["kind"].clone();
    }
    if r.get("requestResource").is_none() {
        r["requestResource"] = r["resource"].clone();
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": r})
}

fn compare(expect: &Value, answer: &Value) -> Result<(), String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, want: &Value, got: &Value| {
        if want != got {
            diffs.push(format!("{what}: want {want}, got {got}"));
        }
    };
    check("allowed", &expect["allowed"], &answer["allowed"]);
    if let Some(code) = expect.get("code") {
        check("code", code, &answer["status"]["code"]);
    }
    if let Some(reason) = expect.get("reason") {
        check("reason", reason, &answer["status"]["reason"]);
    }
    if let Some(message) = expect.get("message") {
        check("message", message, &answer["status"]["message"]);
    }
    if let Some(warnings) = expect.get("warnings") {
        let got = answer.get("warnings").cloned().unwrap_or(json!([]));
        check("warnings", warnings, &got);
    }
    if let Some(want) = expect.get("auditAnnotations").and_then(Value::as_object) {
        let got = answer.get("auditAnnotations").cloned().unwrap_or(json!({}));
        let want: serde_json::Map<String, Value> = want
            .iter()
            .map(|(k, v)| (webhook_key(k), v.clone()))
            .collect();
        check("auditAnnotations", &Value::Object(want), &got);
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\nanswer: {answer}", diffs.join("\n")))
    }
}

fn deployment(namespace: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": replicas},
    })
}

/// The example policy (params, variables, a matchCondition, a Deny+Audit
/// and a Warn+Audit binding) over HTTPS, HTTP/1.1 and HTTP/2, with its
/// metrics.
#[tokio::test]
async fn a_policy_with_params_and_variables_answers_over_https() {
    let loaded = config::load(&config::ConfigSource::Dir(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests/examples/policies"),
    ));
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let server = start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let url = validate_url(&server);
    const KIND: (&str, &str, &str) = ("apps", "v1", "Deployment");
    for http in crate::common::BOTH {
        let client = client(&server, http);
        let over = deployment("shop", 12);
        let review = crate::common::admission_review(
            "admission.k8s.io/v1",
            "CREATE",
            KIND,
            Some(over),
            None,
        );
        let answer = post_review(&client, &url, &review).await;
        assert_eq!(answer.version, http.version());
        let response = answer.response();
        assert_eq!(response["allowed"], false, "{response}");
        assert_eq!(response["status"]["code"], 403);
        assert_eq!(response["status"]["reason"], "Forbidden");
        assert_eq!(
            response["status"]["message"],
            "ValidatingAdmissionPolicy 'replica-limits.example.com' with binding 'replica-limits-production' denied request: replicas 12 over the limit of 10 for team payments"
        );
        let failure: Value = serde_json::from_str(
            response["auditAnnotations"]["validation.policy.admission.k8s.io_validation_failure"]
                .as_str()
                .expect("the audit annotation"),
        )
        .expect("JSON");
        assert_eq!(failure[0]["binding"], "replica-limits-production");
        assert_eq!(failure[0]["validationActions"], json!(["Deny", "Audit"]));
        assert_eq!(
            response["auditAnnotations"]["replica-limits.example.com_replicas"],
            "12"
        );
    }
    let client = client(&server, Http::H1);
    // Warn + Audit in a sandbox namespace: allowed with the native warning.
    let review = crate::common::admission_review(
        "admission.k8s.io/v1beta1",
        "CREATE",
        KIND,
        Some(deployment("sandbox", 3)),
        None,
    );
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(
        response["warnings"],
        json!(["Validation failed for ValidatingAdmissionPolicy 'replica-limits.example.com' with binding 'replica-limits-elsewhere': replicas 3 over the limit of 2 for team payments"])
    );
    let text = crate::common::metrics_text(&client, &crate::common::url(&server, "/metrics")).await;
    let count = |binding: &str, action: &str| {
        crate::common::metric(
            &text,
            "celhook_policy_decisions_total",
            &[
                ("policy", "replica-limits.example.com"),
                ("binding", binding),
                ("action", action),
            ],
        )
    };
    assert_eq!(count("replica-limits-production", "deny"), Some(2.0));
    assert_eq!(count("replica-limits-production", "audit"), Some(2.0));
    assert_eq!(count("replica-limits-elsewhere", "warn"), Some(1.0));
}

/// `/validate/rules` and `/validate/policies` each check one half, so
/// that a kind two webhooks send is never checked twice.
#[tokio::test]
async fn each_half_of_the_checks_has_its_own_path() {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests/examples");
    let texts: Vec<(String, String)> = [
        "policies/replica-limits.yaml",
        "policies/namespaces.yaml",
        "rules/deployment-hygiene.yaml",
    ]
    .iter()
    .map(|f| {
        (
            f.to_string(),
            std::fs::read_to_string(examples.join(f)).expect("example"),
        )
    })
    .collect();
    let loaded = config::load_texts(&texts);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let server = start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let client = client(&server, Http::H1);
    // 12 replicas: over the rules document's 10 and the policy's 10.
    let review = crate::common::admission_review(
        "admission.k8s.io/v1",
        "CREATE",
        ("apps", "v1", "Deployment"),
        Some(deployment("shop", 12)),
        None,
    );
    let message = |path: &'static str| {
        let client = client.clone();
        let review = review.clone();
        let url = crate::common::url(&server, path);
        async move {
            let response = post_review(&client, &url, &review).await.response();
            response["status"]["message"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        }
    };
    let rules = message("/validate/rules").await;
    assert!(
        rules.starts_with("Deployment.apps \"web\" is invalid"),
        "{rules}"
    );
    let policies = message("/validate/policies").await;
    assert!(
        policies.starts_with("ValidatingAdmissionPolicy 'replica-limits.example.com'"),
        "{policies}"
    );
    // Everything: the schema's rules come first, as in the API server.
    let all = message("/validate").await;
    assert_eq!(all, rules);
}
