//! The written webhook configuration, from the embedded and test configs.
use super::*;

fn docs(text: &str) -> Vec<Json> {
    text.split("\n---\n")
        .skip(1)
        .map(|d| serde_norway::from_str(d).expect("YAML"))
        .collect()
}

#[test]
fn the_embedded_config_gets_a_rule_per_crd_and_conversion_for_the_converted() {
    let out = render(&ConfigSource::Embedded, &WebhookOptions::default()).expect("renders");
    let docs = docs(&format!("\n{out}"));
    let vwc = &docs[0];
    assert_eq!(vwc["kind"], "ValidatingWebhookConfiguration");
    let rules = vwc["webhooks"][0]["rules"].as_array().expect("rules");
    let groups: Vec<&str> = rules
        .iter()
        .map(|r| r["apiGroups"][0].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        groups,
        // By CRD name.
        [
            "example.com",
            "stable.example.com",
            "restaurant.programming-kubernetes.info"
        ]
    );
    assert_eq!(rules[1]["resources"], json!(["crontabs"]));
    assert_eq!(rules[1]["scope"], "Namespaced");
    assert_eq!(
        vwc["webhooks"][0]["clientConfig"]["service"]["path"],
        "/validate"
    );
    assert!(vwc["webhooks"][0]["clientConfig"].get("caBundle").is_none());
    // The two CRDs with conversion documents, with their conversion set.
    let converted: Vec<&str> = docs[1..]
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        converted,
        [
            "crontabs.example.com",
            "pizzas.restaurant.programming-kubernetes.info"
        ]
    );
    for crd in &docs[1..] {
        assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"],
            "/convert"
        );
        assert_eq!(crd["metadata"]["labels"][CONVERSION_LABEL], "true");
        assert!(crd["spec"]["versions"]
            .as_array()
            .is_some_and(|v| v.len() > 1));
    }
}

#[test]
fn status_subresources_options_and_ca_bundle_are_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crd = config::embedded::FILES[0].1.replace(
        "      served: true\n",
        "      served: true\n      subresources:\n        status: {}\n",
    );
    assert_ne!(
        crd,
        config::embedded::FILES[0].1,
        "the fixture has `served: true`"
    );
    std::fs::write(dir.path().join("crd.yaml"), crd).expect("write");
    let opts = WebhookOptions {
        namespace: "policy".into(),
        failure_policy: "Ignore".into(),
        timeout_seconds: 10,
        ca_bundle: Some("-----BEGIN CERTIFICATE-----\n".into()),
        ..WebhookOptions::default()
    };
    let out = render(&ConfigSource::Dir(dir.path().into()), &opts).expect("renders");
    let vwc = &docs(&format!("\n{out}"))[0];
    let hook = &vwc["webhooks"][0];
    assert_eq!(
        hook["rules"][0]["resources"],
        json!(["crontabs", "crontabs/status"])
    );
    assert_eq!(hook["failurePolicy"], "Ignore");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(
        hook["namespaceSelector"]["matchExpressions"][0]["values"],
        json!(["kube-system", "policy"])
    );
    assert_eq!(hook["clientConfig"]["service"]["namespace"], "policy");
    assert_eq!(
        hook["clientConfig"]["caBundle"],
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
    );
}

#[test]
fn built_in_kinds_of_rules_documents_get_their_resources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("manifests/examples/rules/deployment-hygiene.yaml"),
    )
    .expect("fixture");
    std::fs::write(dir.path().join("rules.yaml"), &rules).expect("write");
    let ingress = |name: &str, exempt: &str| {
        format!(
            "---\napiVersion: celhook.dev/v1alpha1\nkind: ValidationRules\nmetadata: {{name: {name}}}\nspec:\n  target: {{group: networking.k8s.io, kind: Ingress}}\n  exempt: {exempt}\n  matchConditions:\n    - {{name: not-dry, expression: \"!request.dryRun\"}}\n  rules:\n    - path: status\n      x-kubernetes-validations:\n        - rule: \"true\"\n"
        )
    };
    // Both Ingress documents exempt system:masters, the sandbox namespace
    // and dry runs; only one exempts alice and the ci accounts.
    let both = "{groups: [system:masters], namespaces: [sandbox]}";
    let more = "{groups: [system:masters, ops], namespaces: [sandbox, legacy], users: [alice], serviceAccounts: [ci/*]}";
    let text = ingress("ingress-a", both) + &ingress("ingress-b", more);
    std::fs::write(dir.path().join("ingress.yaml"), text).expect("write");
    let out = render(
        &ConfigSource::Dir(dir.path().into()),
        &WebhookOptions::default(),
    )
    .expect("renders");
    let vwc = &docs(&format!("\n{out}"))[0];
    let hooks = vwc["webhooks"].as_array().expect("webhooks");
    let names: Vec<&str> = hooks.iter().filter_map(|h| h["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "deployments.apps.validate.celhook.io",
            "ingresses.networking.k8s.io.validate.celhook.io"
        ]
    );
    assert_eq!(
        hooks[0]["rules"],
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"],
                "operations": ["CREATE", "UPDATE"], "scope": "*"}])
    );
    // The Deployment documents share no exemption: every request is sent.
    assert!(hooks[0].get("matchConditions").is_none(), "{}", hooks[0]);
    assert_eq!(
        hooks[1]["rules"][0]["resources"],
        json!(["ingresses", "ingresses/status"])
    );
    assert_eq!(
        hooks[1]["namespaceSelector"]["matchExpressions"][0]["values"],
        json!(["kube-system", "celhook", "sandbox"])
    );
    let conditions = hooks[1]["matchConditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 2, "{conditions:?}");
    assert_eq!(
        conditions[0],
        json!({"name": "not-dry", "expression": "!request.dryRun"})
    );
    assert_eq!(conditions[1]["name"], "celhook-exemptions");
    // The written condition compiles as the API server would compile it,
    // and is false exactly for the shared exemption.
    let expression = conditions[1]["expression"].as_str().expect("text");
    for (user, groups, sent) in [
        ("bob", json!(["system:authenticated"]), true),
        ("bob", json!(["system:masters"]), false),
        ("alice", json!([]), true),
    ] {
        let request = json!({"userInfo": {"username": user, "groups": groups}});
        assert_eq!(condition_holds(expression, &request), sent, "{user}");
    }
    for (kind, resource) in [
        ("NetworkPolicy", "networkpolicies"),
        ("Endpoints", "endpoints"),
        ("ComponentStatus", "componentstatuses"),
        ("StorageClass", "storageclasses"),
        ("Pod", "pods"),
    ] {
        assert_eq!(resource_of(kind), resource);
    }
}

#[test]
fn bad_options_and_bad_configs_are_refused() {
    let opts = WebhookOptions {
        timeout_seconds: 31,
        ..WebhookOptions::default()
    };
    let err = render(&ConfigSource::Embedded, &opts).expect_err("31 s");
    assert!(err.contains("1 to 30"), "{err}");
    let opts = WebhookOptions {
        failure_policy: "fail".into(),
        ..WebhookOptions::default()
    };
    assert!(render(&ConfigSource::Embedded, &opts)
        .expect_err("case")
        .contains("Fail or Ignore"));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bad.yaml"), "kind: [").expect("write");
    let err = render(
        &ConfigSource::Dir(dir.path().into()),
        &WebhookOptions::default(),
    )
    .expect_err("bad");
    assert!(
        err.contains("does not load") && err.contains("bad.yaml"),
        "{err}"
    );
}

#[test]
fn shared_users_and_service_accounts_become_one_condition() {
    let shared = Shared {
        users: vec!["alice".into()],
        service_accounts: vec![("ci".into(), "*".into()), ("ops".into(), "fixer".into())],
        ..Shared::default()
    };
    let conditions = shared.match_conditions();
    let expression = conditions[0]["expression"].as_str().expect("text");
    assert_eq!(
        expression,
        r#"!(request.userInfo.username in ["alice"] || request.userInfo.username.startsWith("system:serviceaccount:ci:") || request.userInfo.username == "system:serviceaccount:ops:fixer")"#
    );
    for (user, sent) in [
        ("alice", false),
        ("system:serviceaccount:ci:builder", false),
        ("system:serviceaccount:ops:fixer", false),
        ("system:serviceaccount:ops:other", true),
        ("bob", true),
    ] {
        let request = json!({"userInfo": {"username": user}});
        assert_eq!(condition_holds(expression, &request), sent, "{user}");
    }
    assert!(Shared::default().match_conditions().is_empty());
}

/// A written matchCondition compiled as the API server compiles one, and
/// evaluated for `request` (no object).
fn condition_holds(expression: &str, request: &Json) -> bool {
    let request = celhook_json::Value::from(request);
    let any = crate::schema::Schema::untyped(true);
    let env = crate::cel::Environment::match_condition();
    let program = crate::cel::Program::compile(expression, &any, env).expect("compiles");
    let values = [
        crate::cel::Value::Null,
        crate::cel::Value::Null,
        crate::cel::Value::from_json(&request, &any),
    ];
    match program.eval_variables(values, 1_000_000).0 {
        Ok(crate::cel::Value::Bool(b)) => b,
        other => panic!("{expression}: {other:?}"),
    }
}

#[test]
fn policies_get_a_webhook_of_their_own_and_each_half_its_own_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/examples");
    for (from, to) in [
        ("policies/replica-limits.yaml", "replica-limits.yaml"),
        ("policies/namespaces.yaml", "namespaces.yaml"),
        ("rules/deployment-hygiene.yaml", "deployment-hygiene.yaml"),
    ] {
        std::fs::copy(examples.join(from), dir.path().join(to)).expect("copy");
    }
    let source = ConfigSource::Dir(dir.path().to_owned());
    let out = render(&source, &WebhookOptions::default()).expect("renders");
    let vwc = &docs(&format!("\n{out}"))[0];
    let hooks = vwc["webhooks"].as_array().expect("webhooks");
    let by_name = |name: &str| {
        hooks
            .iter()
            .find(|h| h["name"] == name)
            .unwrap_or_else(|| panic!("no webhook {name}: {out}"))
    };
    let rules = by_name("deployments.apps.validate.celhook.io");
    assert_eq!(rules["clientConfig"]["service"]["path"], "/validate/rules");
    let policies = by_name("policies.validate.celhook.io");
    assert_eq!(
        policies["clientConfig"]["service"]["path"],
        "/validate/policies"
    );
    assert_eq!(
        policies["rules"],
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}])
    );
    assert_eq!(policies["matchPolicy"], "Equivalent");
}
