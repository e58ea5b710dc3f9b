//! `celhook webhook-config`: the cluster objects that send the config's
//! kinds to celhook, written from the config itself so that they never
//! drift from what is served. A ValidatingWebhookConfiguration with a
//! webhook for the served CRDs (a rule per CRD, its `/status` subresource
//! included, so that rules under `status` hold on status updates too) and
//! one per built-in kind that rules documents target (carrying what all
//! of that kind's documents exempt), and each CRD that has a conversion
//! document with its `spec.conversion` pointing at `/convert`.

use serde_json::{json, Value as Json};

use crate::config::{self, files, Catalog, ConfigSource};
use crate::kinds::resource_of;

/// The label on each CRD written with a conversion webhook: the CA
/// injection of the kustomize components selects CRDs by it.
pub const CONVERSION_LABEL: &str = "celhook.dev/conversion-webhook";

/// Where the API server reaches celhook, and how it treats failures.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// Name of the ValidatingWebhookConfiguration.
    pub name: String,
    /// Namespace of celhook's Service (also left out of validation, with
    /// kube-system, so that celhook can always be repaired).
    pub namespace: String,
    /// Name of celhook's Service.
    pub service: String,
    /// Port of the Service.
    pub port: u16,
    /// `Fail` or `Ignore`.
    pub failure_policy: String,
    /// How long the API server waits, 1 to 30 seconds.
    pub timeout_seconds: u32,
    /// The CA certificate (PEM) the API server verifies celhook with; none
    /// when a kustomize component or cert-manager's cainjector adds it.
    pub ca_bundle: Option<String>,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self {
            name: "celhook".into(),
            namespace: "celhook".into(),
            service: "celhook".into(),
            port: 443,
            failure_policy: "Fail".into(),
            timeout_seconds: 5,
            ca_bundle: None,
        }
    }
}

/// The documents as one YAML stream, or why they cannot be written.
pub fn render(source: &ConfigSource, opts: &WebhookOptions) -> Result<String, String> {
    if !(1..=30).contains(&opts.timeout_seconds) {
        return Err(format!(
            "--timeout-seconds {}: the API server accepts 1 to 30",
            opts.timeout_seconds
        ));
    }
    if !matches!(opts.failure_policy.as_str(), "Fail" | "Ignore") {
        return Err(format!(
            "--failure-policy {:?}: must be Fail or Ignore",
            opts.failure_policy
        ));
    }
    let loaded = config::load(source);
    if loaded.report.has_errors() {
        let lines: Vec<String> = config::report::problems(&loaded.report)
            .map(|p| config::report::format_problem(&p))
            .collect();
        return Err(format!("the config does not load:\n{}", lines.join("\n")));
    }
    let crds = served_crds(source, &loaded.catalog)?;
    let built_in = built_in_targets(&loaded.catalog);
    let policies = policy_rules(&loaded.catalog);
    if crds.is_empty() && built_in.is_empty() && policies.is_empty() {
        return Err("the config serves no CustomResourceDefinition, no rules document and no ValidatingAdmissionPolicy".into());
    }
    let mut docs = vec![validating(&crds, &built_in, &policies, opts)];
    for crd in crds.into_iter().filter(|c| c.converted) {
        docs.push(with_conversion(crd.doc, opts));
    }
    let mut out = String::from(
        "# Written by `celhook webhook-config` from the config celhook serves; write it again when the config changes.\n",
    );
    for doc in &docs {
        let text = serde_norway::to_string(doc).map_err(|e| format!("writing YAML: {e}"))?;
        out.push_str("---\n");
        out.push_str(&text);
    }
    Ok(out)
}

/// A CRD the catalog serves, as written in the config.
struct ServedCrd {
    name: String,
    group: String,
    plural: String,
    scope: String,
    status: bool,
    converted: bool,
    doc: Json,
}

/// The config's CRD documents that the catalog serves, by name.
fn served_crds(source: &ConfigSource, catalog: &Catalog) -> Result<Vec<ServedCrd>, String> {
    let mut crds = Vec::new();
    for (file, text) in &files::texts(source)? {
        // The load above succeeded, so every document parses.
        for doc in config::parse_documents(file, text).into_iter().flatten() {
            collect(doc, catalog, &mut crds);
        }
    }
    crds.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crds)
}

fn collect(doc: Json, catalog: &Catalog, out: &mut Vec<ServedCrd>) {
    let text = |p: &str| {
        doc.pointer(p)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match (text("/apiVersion").as_str(), text("/kind").as_str()) {
        ("v1", "List") => {
            if let Some(Json::Array(items)) = doc.get("items") {
                for item in items.clone() {
                    collect(item, catalog, out);
                }
            }
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            let (name, group, kind) = (
                text("/metadata/name"),
                text("/spec/group"),
                text("/spec/names/kind"),
            );
            if catalog.crd_of(&group, &kind) != Some(name.as_str()) {
                return;
            }
            let status = doc
                .pointer("/spec/versions")
                .and_then(Json::as_array)
                .is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v.pointer("/subresources/status").is_some())
                });
            out.push(ServedCrd {
                converted: catalog.conversion(&group, &kind).is_some(),
                plural: text("/spec/names/plural"),
                scope: text("/spec/scope"),
                name,
                group,
                status,
                doc,
            });
        }
        _ => {}
    }
}

/// A built-in kind that rules documents target (CRD targets are served
/// CRDs already): its group, resource, versions, whether a rule reads
/// `status` (a rule at the root or below `status`), and the exemptions
/// every document on it shares.
#[derive(Debug, PartialEq)]
struct BuiltInTarget {
    group: String,
    resource: String,
    versions: Vec<String>,
    status: bool,
    shared: Shared,
}

/// What every document on a kind exempts, and the matchConditions they all
/// have: the API server can then skip the call itself, so a break-glass
/// exemption holds even while celhook is unreachable.
#[derive(Debug, Default, PartialEq)]
struct Shared {
    users: Vec<String>,
    groups: Vec<String>,
    service_accounts: Vec<(String, String)>,
    namespaces: Vec<String>,
    /// (name, expression).
    conditions: Vec<(String, String)>,
}

impl Shared {
    fn of(info: &crate::rules::Info) -> Shared {
        let e = &info.exempt;
        Shared {
            users: e.users().to_vec(),
            groups: e.groups().to_vec(),
            service_accounts: e.service_accounts().to_vec(),
            namespaces: e.namespaces().to_vec(),
            conditions: info
                .match_conditions
                .iter()
                .map(|c| (c.name.clone(), c.expression.clone()))
                .collect(),
        }
    }

    /// Keeps what `other` has too.
    fn intersect(&mut self, other: &Shared) {
        self.users.retain(|u| other.users.contains(u));
        self.groups.retain(|g| other.groups.contains(g));
        self.service_accounts
            .retain(|a| other.service_accounts.contains(a));
        self.namespaces.retain(|n| other.namespaces.contains(n));
        self.conditions.retain(|c| other.conditions.contains(c));
    }

    /// The webhook's matchConditions: the documents' shared ones, then one
    /// that is false for an exempt user, group or service account.
    fn match_conditions(&self) -> Vec<Json> {
        let mut out: Vec<Json> = self
            .conditions
            .iter()
            .map(|(name, expression)| json!({"name": name, "expression": expression}))
            .collect();
        let quote = |s: &str| crate::cel::go_quote(s);
        let list = |items: &[String]| {
            items
                .iter()
                .map(|s| quote(s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut exempt = Vec::new();
        if !self.users.is_empty() {
            exempt.push(format!(
                "request.userInfo.username in [{}]",
                list(&self.users)
            ));
        }
        if !self.groups.is_empty() {
            exempt.push(format!(
                "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in [{}]))",
                list(&self.groups)
            ));
        }
        for (ns, name) in &self.service_accounts {
            exempt.push(if name == "*" {
                format!(
                    "request.userInfo.username.startsWith({})",
                    quote(&format!("system:serviceaccount:{ns}:"))
                )
            } else {
                format!(
                    "request.userInfo.username == {}",
                    quote(&format!("system:serviceaccount:{ns}:{name}"))
                )
            });
        }
        if !exempt.is_empty() {
            out.push(json!({
                "name": "celhook-exemptions",
                "expression": format!("!({})", exempt.join(" || ")),
            }));
        }
        out
    }
}

fn built_in_targets(catalog: &Catalog) -> Vec<BuiltInTarget> {
    let mut out: Vec<BuiltInTarget> = Vec::new();
    for set in catalog.rule_sets() {
        let info = &set.info;
        if catalog.crd_of(&info.group, &info.kind).is_some() {
            continue;
        }
        let root = &set.validator.root;
        let status =
            !root.rules.is_empty() || root.properties.iter().any(|(name, _)| name == "status");
        let resource = resource_of(&info.kind);
        let shared = Shared::of(info);
        match out
            .iter_mut()
            .find(|t| t.group == info.group && t.resource == resource)
        {
            Some(t) => {
                t.status |= status;
                if !t.versions.contains(&set.version) {
                    t.versions.push(set.version.clone());
                }
                t.shared.intersect(&shared);
            }
            None => out.push(BuiltInTarget {
                group: info.group.clone(),
                resource,
                versions: vec![set.version.clone()],
                status,
                shared,
            }),
        }
    }
    for t in &mut out {
        t.versions.sort();
    }
    out.sort_by(|a, b| (&a.group, &a.resource).cmp(&(&b.group, &b.resource)));
    out
}

fn client_config(opts: &WebhookOptions, path: &str) -> Json {
    let mut config = json!({
        "service": {
            "name": opts.service,
            "namespace": opts.namespace,
            "path": path,
            "port": opts.port,
        }
    });
    if let Some(pem) = &opts.ca_bundle {
        use base64::Engine as _;
        config["caBundle"] = base64::engine::general_purpose::STANDARD.encode(pem).into();
    }
    config
}

/// The resource rules of every policy (their exclusions, selectors and
/// matchConditions are applied by celhook), each written once.
fn policy_rules(catalog: &Catalog) -> Vec<Json> {
    let mut out: Vec<Json> = Vec::new();
    for p in catalog.policies().policies() {
        for rule in p.match_constraints.resource_rules.iter().flatten() {
            let mut rule = serde_json::to_value(rule).unwrap_or(Json::Null);
            if let Some(r) = rule.as_object_mut() {
                // Names are matched by celhook (the webhook rule has none).
                r.remove("resourceNames");
            }
            if !rule.is_null() && !out.contains(&rule) {
                out.push(rule);
            }
        }
    }
    out
}

/// The ValidatingWebhookConfiguration: one webhook for the CRDs, one per
/// built-in kind that rules documents target, so that what all the
/// documents of a kind exempt can be left out by the API server itself
/// (a namespaceSelector, matchConditions), and one for the
/// ValidatingAdmissionPolicies. With policies, each webhook calls the path
/// that checks only its half (`admission::Scope`), so that a kind sent by
/// two webhooks is never checked twice.
fn validating(
    crds: &[ServedCrd],
    built_in: &[BuiltInTarget],
    policy_rules: &[Json],
    opts: &WebhookOptions,
) -> Json {
    let path = if policy_rules.is_empty() {
        "/validate"
    } else {
        "/validate/rules"
    };
    let mut webhooks = Vec::new();
    if !crds.is_empty() {
        let rules: Vec<Json> = crds
            .iter()
            .map(|crd| {
                let mut resources = vec![crd.plural.clone()];
                if crd.status {
                    resources.push(format!("{}/status", crd.plural));
                }
                json!({
                    "apiGroups": [crd.group],
                    "apiVersions": ["*"],
                    "resources": resources,
                    "operations": ["CREATE", "UPDATE"],
                    "scope": crd.scope,
                })
            })
            .collect();
        webhooks.push(webhook(
            "validate.celhook.io",
            path,
            rules,
            &[],
            Vec::new(),
            opts,
        ));
    }
    for t in built_in {
        let mut resources = vec![t.resource.clone()];
        if t.status {
            resources.push(format!("{}/status", t.resource));
        }
        let rule = json!({
            "apiGroups": [t.group],
            "apiVersions": t.versions,
            "resources": resources,
            "operations": ["CREATE", "UPDATE"],
            "scope": "*",
        });
        let group = if t.group.is_empty() { "core" } else { &t.group };
        webhooks.push(webhook(
            &format!("{}.{group}.validate.celhook.io", t.resource),
            path,
            vec![rule],
            &t.shared.namespaces,
            t.shared.match_conditions(),
            opts,
        ));
    }
    if !policy_rules.is_empty() {
        webhooks.push(webhook(
            "policies.validate.celhook.io",
            "/validate/policies",
            policy_rules.to_vec(),
            &[],
            Vec::new(),
            opts,
        ));
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": opts.name, "labels": {"app.kubernetes.io/name": "celhook"}},
        "webhooks": webhooks,
    })
}

fn webhook(
    name: &str,
    path: &str,
    rules: Vec<Json>,
    exempt_namespaces: &[String],
    match_conditions: Vec<Json>,
    opts: &WebhookOptions,
) -> Json {
    // celhook's own namespace and kube-system stay out, so that celhook can
    // always be repaired.
    let mut skipped = vec!["kube-system".to_owned(), opts.namespace.clone()];
    for ns in exempt_namespaces {
        if !skipped.contains(ns) {
            skipped.push(ns.clone());
        }
    }
    let mut hook = json!({
        "name": name,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "sideEffects": "None",
        "failurePolicy": opts.failure_policy,
        "timeoutSeconds": opts.timeout_seconds,
        // A request for any version of a resource is sent in a version
        // celhook serves (the API server converts it).
        "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": skipped,
        }]},
        "rules": rules,
        "clientConfig": client_config(opts, path),
    });
    if !match_conditions.is_empty() {
        hook["matchConditions"] = Json::Array(match_conditions);
    }
    hook
}

fn with_conversion(mut crd: Json, opts: &WebhookOptions) -> Json {
    crd["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": client_config(opts, "/convert"),
        },
    });
    if !crd["metadata"]["labels"].is_object() {
        crd["metadata"]["labels"] = json!({});
    }
    crd["metadata"]["labels"][CONVERSION_LABEL] = "true".into();
    // Server-set fields of a CRD fetched from a cluster are not for apply.
    crd.as_object_mut().map(|o| o.remove("status"));
    crd
}

#[cfg(test)]
mod tests;
