//! Rules documents end to end through the loader and `admission::review`:
//! built-in and CRD targets, every action, exemptions, unknown versions,
//! and the load-time refusals.

use celhook_json::{json, Value as Json};

use crate::admission::{self, Policy, UnknownVersions};
use crate::config::{self, report, Catalog};
use crate::review::{AdmissionRequest, AdmissionResponse, GroupVersionKind, Operation};

const HYGIENE: &str = r#"
apiVersion: celhook.dev/v1alpha1
kind: ValidationRules
metadata:
  name: deployment-hygiene
spec:
  target:
    group: apps
    kind: Deployment
  exempt:
    groups: [system:masters]
    namespaces: [kube-system]
  rules:
    - path: spec.template.spec.containers[*]
      x-kubernetes-validations:
        - rule: "!self.image.endsWith(':latest')"
          message: must not use the latest tag
          fieldPath: .image
        - rule: "!oldSelf.image.contains('@') || self.image.contains('@')"
          message: an image pinned by digest stays pinned
          fieldPath: .image
    - path: spec
      x-kubernetes-validations:
        - rule: "!has(self.replicas) || self.replicas <= 10"
          messageExpression: "self.replicas > 100 ? 'far too many replicas' : 'at most 10 replicas'"
          reason: FieldValueForbidden
    - path: .
      x-kubernetes-validations:
        - rule: "has(self.metadata.labels) && 'team' in self.metadata.labels"
          message: every Deployment names its team
          fieldPath: .metadata.labels
"#;

fn catalog(files: &[(&str, &str)]) -> Catalog {
    let loaded = config::load_texts(files);
    assert!(
        !loaded.report.has_errors(),
        "{}",
        report::render_text(&loaded.report)
    );
    loaded.catalog
}

fn problems(files: &[(&str, &str)]) -> Vec<String> {
    let loaded = config::load_texts(files);
    report::problems(&loaded.report)
        .map(|p| report::format_problem(&p))
        .collect()
}

fn deployment(replicas: i64, images: &[(&str, &str)], labels: Json) -> Json {
    let containers: Vec<Json> = images
        .iter()
        .map(|(name, image)| json!({"name": name, "image": image}))
        .collect();
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers}
            }
        }
    })
}

fn request(kind: (&str, &str, &str), object: Json, old: Option<Json>) -> AdmissionRequest {
    AdmissionRequest {
        uid: "u1".into(),
        kind: GroupVersionKind {
            group: kind.0.into(),
            version: kind.1.into(),
            kind: kind.2.into(),
        },
        name: "web".into(),
        namespace: Some("shop".into()),
        operation: if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        },
        user: "alice".into(),
        groups: vec!["system:authenticated".into()],
        object: Some(object),
        old_object: old,
        dry_run: false,
        details: Default::default(),
    }
}

const DEPLOYMENT: (&str, &str, &str) = ("apps", "v1", "Deployment");

fn message(res: &AdmissionResponse) -> &str {
    res.status.as_ref().map_or("", |s| s.message.as_str())
}

#[test]
fn a_deployment_is_checked_field_by_field_with_the_api_servers_texts() {
    let c = catalog(&[("rules.yaml", HYGIENE)]);
    let good = deployment(3, &[("app", "shop:1.2")], json!({"team": "a"}));
    assert!(crate::admission::answer(&c, &request(DEPLOYMENT, good, None)).allowed);

    let bad = deployment(
        12,
        &[("app", "shop:1.2"), ("proxy", "envoy:latest")],
        json!({}),
    );
    let res = crate::admission::answer(&c, &request(DEPLOYMENT, bad, None));
    assert!(!res.allowed);
    assert_eq!(
        message(&res),
        "Deployment.apps \"web\" is invalid: [metadata.labels: Invalid value: every Deployment names its team, \
         spec: Forbidden: at most 10 replicas, \
         spec.template.spec.containers[1].image: Invalid value: must not use the latest tag]"
    );
    let status = res.status.as_ref().expect("status");
    assert_eq!(status.code, 422);
    let causes = &status.details.as_ref().expect("details").causes;
    assert_eq!(causes[1].reason, "FieldValueForbidden");
}

#[test]
fn transition_rules_follow_list_map_keys_and_unchanged_values_ratchet() {
    let c = catalog(&[("rules.yaml", HYGIENE)]);
    let labels = json!({"team": "a"});
    let old = deployment(
        3,
        &[("app", "shop@sha256:aa"), ("side", "log:1")],
        labels.clone(),
    );
    // Reordered: the pinned container is matched by name, not position.
    let kept = deployment(
        3,
        &[("side", "log:2"), ("app", "shop@sha256:bb")],
        labels.clone(),
    );
    assert!(crate::admission::answer(&c, &request(DEPLOYMENT, kept, Some(old.clone()))).allowed);
    let unpinned = deployment(3, &[("side", "log:1"), ("app", "shop:2")], labels.clone());
    let res = crate::admission::answer(&c, &request(DEPLOYMENT, unpinned, Some(old)));
    assert_eq!(
        message(&res),
        "Deployment.apps \"web\" is invalid: spec.template.spec.containers[1].image: Invalid value: an image pinned by digest stays pinned"
    );

    // 20 replicas written before the rule existed: an UPDATE that leaves
    // them alone passes; one that changes them is checked.
    let before = deployment(20, &[("app", "shop:1")], labels.clone());
    let relabelled = deployment(20, &[("app", "shop:1")], json!({"team": "b"}));
    assert!(
        crate::admission::answer(&c, &request(DEPLOYMENT, relabelled, Some(before.clone())))
            .allowed
    );
    let more = deployment(21, &[("app", "shop:1")], labels);
    assert!(!crate::admission::answer(&c, &request(DEPLOYMENT, more, Some(before))).allowed);
}

#[test]
fn exempt_requesters_are_not_checked() {
    let c = catalog(&[("rules.yaml", HYGIENE)]);
    let bad = deployment(50, &[("app", "x:latest")], json!({}));
    let mut req = request(DEPLOYMENT, bad.clone(), None);
    assert!(!crate::admission::answer(&c, &req).allowed);
    req.groups.push("system:masters".into());
    assert!(crate::admission::answer(&c, &req).allowed);
    let mut req = request(DEPLOYMENT, bad, None);
    req.namespace = Some("kube-system".into());
    assert!(crate::admission::answer(&c, &req).allowed);
}

fn with_actions(actions: &str) -> String {
    HYGIENE.replace(
        "  exempt:",
        &format!("  validationActions: {actions}\n  exempt:"),
    )
}

#[test]
fn warn_and_audit_documents_allow_and_say_why() {
    let bad = deployment(3, &[("app", "x:latest")], json!({"team": "a"}));
    let failure =
        "spec.template.spec.containers[0].image: Invalid value: must not use the latest tag";

    let c = catalog(&[("rules.yaml", &with_actions("[Warn]"))]);
    let res = crate::admission::answer(&c, &request(DEPLOYMENT, bad.clone(), None));
    assert!(res.allowed);
    assert_eq!(
        res.warnings,
        [format!("ValidationRules 'deployment-hygiene': {failure}")]
    );
    assert!(res.audit_annotations.is_empty());

    let c = catalog(&[("rules.yaml", &with_actions("[Warn, Audit]"))]);
    let res = crate::admission::answer(&c, &request(DEPLOYMENT, bad.clone(), None));
    assert!(res.allowed);
    assert_eq!(res.warnings.len(), 1);
    let (key, value) = &res.audit_annotations[0];
    assert_eq!(key, admission::AUDIT_KEY);
    let value: Json = serde_json::from_str(value).expect("JSON value");
    assert_eq!(
        value,
        json!([{"document": "deployment-hygiene", "failure": failure}])
    );

    let c = catalog(&[("rules.yaml", &with_actions("[Deny, Audit]"))]);
    let res = crate::admission::answer(&c, &request(DEPLOYMENT, bad, None));
    assert!(!res.allowed);
    assert!(res.warnings.is_empty());
    assert_eq!(res.audit_annotations.len(), 1);
}

/// A vendor CRD (widgets.vendor.example.com) with a rule of its own on
/// `spec` (`self.size >= 0`) and a map-list of ports.
const WIDGET_CRD: &str = include_str!("../../tests/fixtures/unit/rules-widget.yaml");

const WIDGET_RULES: &str = r#"
apiVersion: celhook.dev/v1alpha1
kind: ValidationRules
metadata: {name: widget-policy}
spec:
  target: {group: vendor.example.com, kind: Widget}
  rules:
    - path: spec
      x-kubernetes-validations:
        - rule: "self.size <= 5"
          message: widgets are small here
    - path: spec.ports[*]
      x-kubernetes-validations:
        - rule: "self.port == oldSelf.port"
          message: a named port keeps its number
    - path: metadata
      x-kubernetes-validations:
        - rule: "self.namespace != 'default'"
          message: not in default
"#;

fn widget(size: i64, ports: Json, namespace: &str) -> Json {
    json!({
        "apiVersion": "vendor.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": namespace},
        "spec": {"size": size, "ports": ports}
    })
}

#[test]
fn a_layer_of_rules_on_a_vendor_crd_sees_full_metadata() {
    let c = catalog(&[("crd.yaml", WIDGET_CRD), ("rules.yaml", WIDGET_RULES)]);
    let kind = ("vendor.example.com", "v1", "Widget");
    let ports = json!([{"name": "http", "port": 80}, {"name": "admin", "port": 9}]);
    assert!(
        crate::admission::answer(&c, &request(kind, widget(3, ports.clone(), "shop"), None))
            .allowed
    );
    let res = crate::admission::answer(
        &c,
        &request(kind, widget(9, ports.clone(), "default"), None),
    );
    assert_eq!(
        message(&res),
        "Widget.vendor.example.com \"w\" is invalid: [metadata: Invalid value: not in default, spec: Invalid value: widgets are small here]"
    );
    // The CRD's own rule runs too (it is in the config), the document's on top.
    let res = crate::admission::answer(&c, &request(kind, widget(-1, ports.clone(), "shop"), None));
    assert!(
        message(&res).contains("failed rule: self.size >= 0"),
        "{}",
        message(&res)
    );
    let moved = json!([{"name": "admin", "port": 9}, {"name": "http", "port": 8080}]);
    let res = crate::admission::answer(
        &c,
        &request(
            kind,
            widget(3, moved, "shop"),
            Some(widget(3, ports, "shop")),
        ),
    );
    assert_eq!(
        message(&res),
        "Widget.vendor.example.com \"w\" is invalid: spec.ports[1]: Invalid value: a named port keeps its number"
    );
}

#[test]
fn an_unknown_version_of_a_known_kind_follows_the_policy() {
    let c = catalog(&[("crd.yaml", WIDGET_CRD), ("rules.yaml", WIDGET_RULES)]);
    let req = request(
        ("vendor.example.com", "v2", "Widget"),
        widget(99, json!([]), "default"),
        None,
    );
    let warn = admission::review(&c, &req, &Policy::default());
    assert!(warn.unknown_version);
    assert!(warn.response.allowed);
    assert_eq!(
        warn.response.warnings,
        ["celhook has no schema of Widget.vendor.example.com version \"v2\", so its rules were not checked"]
    );
    assert_eq!(warn.label, "widgets.vendor.example.com");
    let review_with = |unknown_versions| {
        let policy = Policy {
            unknown_versions,
            ..Policy::default()
        };
        admission::review(&c, &req, &policy)
    };
    let deny = review_with(UnknownVersions::Deny);
    assert!(!deny.response.allowed);
    assert_eq!(deny.response.status.as_ref().map(|s| s.code), Some(403));
    let allow = review_with(UnknownVersions::Allow);
    assert!(allow.response.allowed && allow.response.warnings.is_empty());

    // A kind nothing in the config names is not a gap: allowed quietly.
    let other = request(("other.example.com", "v1", "Thing"), json!({}), None);
    let verdict = admission::review(&c, &other, &Policy::default());
    assert!(!verdict.unknown_version && verdict.response.warnings.is_empty());
    assert_eq!(verdict.label, "unknown");
    // A built-in kind in a version Kubernetes no longer serves is a gap too.
    let c = catalog(&[("rules.yaml", HYGIENE)]);
    let d = deployment(50, &[("a", "b")], json!({}));
    let verdict = admission::review(
        &c,
        &request(("apps", "v1beta1", "Deployment"), d, None),
        &Policy::default(),
    );
    assert!(verdict.unknown_version && verdict.response.allowed);
    assert_eq!(verdict.label, "deployment.apps");
}

#[test]
fn bad_documents_are_refused_with_file_document_path_and_reason() {
    let cases = [
        (
            HYGIENE.replace("kind: Deployment", "kind: Deploymnet"),
            "rules.yaml: ValidationRules \"deployment-hygiene\" (document 0): spec.target: no CustomResourceDefinition in the config serves Deploymnet.apps, and it is not a built-in kind of Kubernetes 1.37",
        ),
        (
            HYGIENE.replace("path: spec\n", "path: spec.replica\n"),
            "rules.yaml: ValidationRules \"deployment-hygiene\" (document 0): version v1: spec.rules[1].path: no field \"replica\" at spec; it has:",
        ),
        (
            HYGIENE.replace("self.replicas <= 10", "self.replicas <= '10'"),
            "rules.yaml: ValidationRules \"deployment-hygiene\" (document 0): version v1: spec.rules[1].x-kubernetes-validations[0].rule: rule \"!has(self.replicas) || self.replicas <= '10'\": compilation failed: ERROR: <input>:1:38: found no matching overload for '_<=_' applied to '(int, string)'",
        ),
        (
            HYGIENE.replace(
                "path: .\n      x-kubernetes-validations:\n",
                "path: .\n      x-kubernetes-validations:\n        - rule: \"self.spec.template.spec.containers.all(c, self.spec.template.spec.containers.all(d, d.args.all(a, c.args.all(b, a == b))))\"\n",
            ),
            "rules.yaml: ValidationRules \"deployment-hygiene\" (document 0): version v1: spec.rules[2].x-kubernetes-validations[0].rule: rule \"self.spec.template.spec.containers.all(c, self.spec.template.spec.containers.all(d, d.args.all(a, c.args.all(b, a == b))))\": Forbidden: estimated rule cost exceeds budget by factor of",
        ),
        (
            with_actions("[Deny, Warn]"),
            "rules.yaml: ValidationRules \"deployment-hygiene\" (document 0): spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: Deny and Warn may not be used together",
        ),
        (
            HYGIENE.replace("  rules:", "  rulez:"),
            "rules.yaml: ValidationRules \"deployment-hygiene\" (document 0): not a valid ValidationRules document: unknown field `rulez`",
        ),
    ];
    for (text, expected) in cases {
        let found = problems(&[("rules.yaml", &text)]);
        assert!(
            found.iter().any(|p| p.starts_with(expected)),
            "expected a problem starting with\n  {expected}\nfound\n  {}",
            found.join("\n  ")
        );
    }
}

#[test]
fn match_conditions_decide_whether_a_document_applies() {
    let doc = HYGIENE.replace(
        "  rules:\n",
        "  matchConditions:\n    - name: not-the-bot\n      expression: \"request.userInfo.username != 'ci-bot'\"\n    - name: not-legacy\n      expression: \"!has(object.metadata.labels) || !('legacy' in object.metadata.labels)\"\n  rules:\n",
    );
    let c = catalog(&[("rules.yaml", &doc)]);
    let bad = deployment(50, &[("app", "x:latest")], json!({}));
    assert!(!crate::admission::answer(&c, &request(DEPLOYMENT, bad.clone(), None)).allowed);
    let mut by_bot = request(DEPLOYMENT, bad, None);
    by_bot.user = "ci-bot".into();
    assert!(crate::admission::answer(&c, &by_bot).allowed);
    let legacy = deployment(50, &[("app", "x:latest")], json!({"legacy": "yes"}));
    assert!(crate::admission::answer(&c, &request(DEPLOYMENT, legacy, None)).allowed);

    // A condition that fails at run time refuses the request, naming it.
    let failing = HYGIENE.replace(
        "  rules:\n",
        "  matchConditions:\n    - name: reads-a-missing-field\n      expression: \"object.spec.nothing == 1\"\n  rules:\n",
    );
    let c = catalog(&[("rules.yaml", &failing)]);
    let good = deployment(3, &[("app", "shop:1")], json!({"team": "a"}));
    let res = crate::admission::answer(&c, &request(DEPLOYMENT, good, None));
    assert!(!res.allowed);
    assert_eq!(res.status.as_ref().map(|s| s.code), Some(403));
    assert_eq!(
        message(&res),
        "ValidationRules 'deployment-hygiene': matchCondition 'reads-a-missing-field' could not be evaluated: no such key: nothing"
    );

    // Bad conditions are refused at load.
    for (expression, says) in [
        ("self.x == 1", "undeclared reference to 'self'"),
        ("'a'", "must evaluate to bool, not string"),
    ] {
        let text = HYGIENE.replace(
            "  rules:\n",
            &format!(
                "  matchConditions:\n    - name: c\n      expression: {expression:?}\n  rules:\n"
            ),
        );
        let found = problems(&[("rules.yaml", &text)]);
        assert!(
            found
                .iter()
                .any(|p| p.contains("spec.matchConditions[0].expression") && p.contains(says)),
            "{expression}: {found:?}"
        );
    }
}
