//! Which requests a policy (its `matchConstraints`) or a binding (its
//! `matchResources`) applies to, decided as the API server decides it:
//! the namespace selector, the object selector, the excluded rules, then
//! the resource rules, first for the resource the client asked for and,
//! under matchPolicy Equivalent, for the other versions of that resource.
//!
//! A selector is checked when the policy is loaded, where the API server
//! would have refused it on write, so only a missing namespace is left
//! to fail a request.

use celhook_json::Value as Json;
use k8s_openapi::api::admissionregistration::v1::{MatchResources, NamedRuleWithOperations};

use crate::cel::go_quote;
use crate::field_error::{duplicate, invalid, invalid_list, unsupported};
use crate::selector::Selector;

/// A group, version and resource (`apps`, `v1`, `deployments`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gvr<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
}

/// What matching reads of a request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// The resource the webhook was sent (`AdmissionRequest.resource`).
    pub resource: Gvr<'a>,
    /// The resource the client used (`AdmissionRequest.requestResource`,
    /// defaulting to `resource`): the API server matches this one first.
    pub request_resource: Gvr<'a>,
    pub subresource: &'a str,
    pub name: &'a str,
    /// `""` for a cluster-scoped object; a Namespace's own name for a
    /// request on a Namespace, as the API server sends it.
    pub namespace: &'a str,
    pub object: Option<&'a Json>,
    pub old_object: Option<&'a Json>,
}

/// What matching needs from outside the request.
pub trait Lookup {
    /// The Namespace object of this name, when the config has it.
    fn namespace(&self, name: &str) -> Option<&Json>;
    /// Versions under which the same group/resource is served (for
    /// matchPolicy Equivalent).
    fn equivalent_versions(&self, group: &str, resource: &str) -> Vec<String>;
}

/// The resource a request matched as: the request resource itself, or
/// (matchPolicy Equivalent) another version or group of it, to which the
/// API server would convert the object before evaluating the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl Matched {
    fn of(g: Gvr<'_>) -> Matched {
        Matched {
            group: g.group.to_owned(),
            version: g.version.to_owned(),
            resource: g.resource.to_owned(),
        }
    }

    /// The matched resource, borrowed.
    pub fn gvr(&self) -> Gvr<'_> {
        Gvr {
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
        }
    }
}

/// How rules meet requests made through other versions of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchPolicy {
    /// Only the resource the client used.
    Exact,
    /// Also its equivalents (the API's default).
    Equivalent,
}

/// A compiled `MatchResources` (policy matchConstraints or binding
/// matchResources).
#[derive(Debug, Clone)]
pub struct Matcher {
    namespace_selector: Selector,
    object_selector: Selector,
    rules: Vec<Rule>,
    exclude: Vec<Rule>,
    policy: MatchPolicy,
}

impl Matcher {
    /// Defaults as the API server does (unset selectors select everything,
    /// an unset matchPolicy is Equivalent), checks as it checks on write,
    /// and compiles. Problems are (path relative to the MatchResources,
    /// e.g. `namespaceSelector.matchExpressions[0].operator`, reason).
    pub fn compile(m: &MatchResources) -> Result<Matcher, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let policy = match m.match_policy.as_deref() {
            None | Some("Equivalent") => MatchPolicy::Equivalent,
            Some("Exact") => MatchPolicy::Exact,
            Some(other) => {
                problems.push((
                    "matchPolicy".to_owned(),
                    unsupported(other, &["Equivalent", "Exact"]),
                ));
                MatchPolicy::Equivalent
            }
        };
        let mut selector = |s: &Option<_>, at: &str| match s.as_ref().map(Selector::from_k8s) {
            None => Selector::everything(),
            Some(Ok(s)) => s,
            Some(Err(found)) => {
                problems.extend(found.into_iter().map(|(p, r)| (format!("{at}.{p}"), r)));
                Selector::everything()
            }
        };
        let namespace_selector = selector(&m.namespace_selector, "namespaceSelector");
        let object_selector = selector(&m.object_selector, "objectSelector");
        let mut rules = |list: &Option<Vec<NamedRuleWithOperations>>, at: &str| {
            let list = list.as_deref().unwrap_or_default();
            for (i, r) in list.iter().enumerate() {
                rule_problems(r, &format!("{at}[{i}]"), &mut problems);
            }
            list.iter().map(Rule::from_api).collect::<Vec<_>>()
        };
        let included = rules(&m.resource_rules, "resourceRules");
        let exclude = rules(&m.exclude_resource_rules, "excludeResourceRules");
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Matcher {
            namespace_selector,
            object_selector,
            rules: included,
            exclude,
            policy,
        })
    }

    /// The matchPolicy in force.
    pub fn match_policy(&self) -> MatchPolicy {
        self.policy
    }

    /// `Ok(Some(matched resource))` when the request matches, `Ok(None)`
    /// when not, `Err(text)` when it cannot be decided (the namespace the
    /// namespaceSelector needs is unknown: the API server's text for it).
    pub fn matches(&self, req: &Request, lookup: &dyn Lookup) -> Result<Option<Matched>, String> {
        // A namespace that cannot be read only fails a request the rules
        // select; one whose labels do not match ends the matching at once.
        let namespace = self.namespace_matches(req, lookup);
        if namespace == Ok(false) {
            return Ok(None);
        }
        if !self.object_matches(req) {
            return Ok(None);
        }
        let mut equivalents = None;
        if self
            .first_match(&self.exclude, req, lookup, &mut equivalents)
            .is_some()
        {
            return Ok(None);
        }
        let matched = if self.rules.is_empty() {
            Some(Matched::of(req.request_resource))
        } else {
            self.first_match(&self.rules, req, lookup, &mut equivalents)
        };
        match matched {
            Some(m) => namespace.map(|_| Some(m)),
            None => Ok(None),
        }
    }

    /// The first rule to select the request: through the request resource
    /// in any rule first, then (Equivalent) rule by rule through each
    /// equivalent resource.
    fn first_match(
        &self,
        rules: &[Rule],
        req: &Request,
        lookup: &dyn Lookup,
        equivalents: &mut Option<Vec<Matched>>,
    ) -> Option<Matched> {
        if rules.iter().any(|r| r.selects(req, req.request_resource)) {
            return Some(Matched::of(req.request_resource));
        }
        if self.policy == MatchPolicy::Exact {
            return None;
        }
        let equivalents = equivalents.get_or_insert_with(|| equivalents_of(req, lookup));
        rules.iter().find_map(|r| {
            equivalents
                .iter()
                .find(|e| r.selects(req, e.gvr()))
                .cloned()
        })
    }

    fn namespace_matches(&self, req: &Request, lookup: &dyn Lookup) -> Result<bool, String> {
        let of_namespace = req.request_resource.resource == "namespaces";
        // Cluster-scoped objects other than Namespaces have no namespace
        // to select them by: they are never left out.
        if req.namespace.is_empty() && !of_namespace {
            return Ok(true);
        }
        if self.namespace_selector.is_empty() {
            return Ok(true);
        }
        let labels = namespace_labels(req, lookup, of_namespace)?;
        Ok(self.namespace_selector.matches(labels))
    }

    /// True when the object or the old object has matching labels; one
    /// that is absent or has no metadata matches only an empty selector.
    fn object_matches(&self, req: &Request) -> bool {
        if self.object_selector.is_empty() {
            return true;
        }
        let matches = |o: Option<&Json>| {
            labels_of(o).is_some_and(|labels| self.object_selector.matches(labels))
        };
        matches(req.object) || matches(req.old_object)
    }
}

/// The labels of the namespace that namespaceSelector reads.
fn namespace_labels<'a>(
    req: &Request<'a>,
    lookup: &'a dyn Lookup,
    of_namespace: bool,
) -> Result<Option<&'a Json>, String> {
    // A Namespace being created or updated is selected by its new labels:
    // the stored one is not it yet.
    if of_namespace && req.subresource.is_empty() && matches!(req.operation, "CREATE" | "UPDATE") {
        return labels_of(req.object).ok_or_else(|| {
            "Internal error occurred: object does not implement the Object interfaces".to_owned()
        });
    }
    // Otherwise the API server reads the stored Namespace (the config's
    // manifest); for a request on a Namespace that the config lacks (its
    // deletion), oldObject stands in for the stored object.
    let name = if req.namespace.is_empty() {
        req.name
    } else {
        req.namespace
    };
    match lookup.namespace(name) {
        Some(ns) => Ok(labels_of(Some(ns)).flatten()),
        None if of_namespace && labels_of(req.old_object).is_some() => {
            Ok(labels_of(req.old_object).flatten())
        }
        None => Err(format!("namespaces {} not found", go_quote(name))),
    }
}

/// `Some(labels)` for an object that can have labels (it has metadata),
/// `None` for none or one that cannot.
fn labels_of(object: Option<&Json>) -> Option<Option<&Json>> {
    let metadata = object?.get("metadata")?;
    metadata.is_object().then(|| metadata.get("labels"))
}

/// The resources equivalent to the request resource: the one the webhook
/// was sent first (the object is already in it), then the other versions
/// the config serves of the request's group/resource and of the sent one's.
fn equivalents_of(req: &Request, lookup: &dyn Lookup) -> Vec<Matched> {
    let own = req.request_resource;
    let mut out: Vec<Matched> = Vec::new();
    let mut add = |g: Gvr<'_>| {
        if g != own && !out.iter().any(|m| m.gvr() == g) {
            out.push(Matched::of(g));
        }
    };
    add(req.resource);
    let mut kinds = vec![(own.group, own.resource)];
    if (req.resource.group, req.resource.resource) != (own.group, own.resource) {
        kinds.push((req.resource.group, req.resource.resource));
    }
    for (group, resource) in kinds {
        for version in lookup.equivalent_versions(group, resource) {
            add(Gvr {
                group,
                version: &version,
                resource,
            });
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    All,
    Namespaced,
    Cluster,
    /// Refused on compile; selects nothing, as upstream.
    Unknown,
}

/// One compiled `NamedRuleWithOperations`.
#[derive(Debug, Clone)]
struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    /// (resource, subresource) of each `resources` entry.
    resources: Vec<(String, String)>,
    scope: Scope,
    names: Vec<String>,
}

impl Rule {
    fn from_api(r: &NamedRuleWithOperations) -> Rule {
        let list = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
        Rule {
            operations: list(&r.operations),
            groups: list(&r.api_groups),
            versions: list(&r.api_versions),
            resources: list(&r.resources)
                .iter()
                .map(|r| match r.split_once('/') {
                    Some((res, sub)) => (res.to_owned(), sub.to_owned()),
                    None => (r.clone(), String::new()),
                })
                .collect(),
            scope: match r.scope.as_deref() {
                None | Some("*") => Scope::All,
                Some("Namespaced") => Scope::Namespaced,
                Some("Cluster") => Scope::Cluster,
                Some(_) => Scope::Unknown,
            },
            names: list(&r.resource_names),
        }
    }

    /// The rule selects the request made through `gvr`, name included.
    fn selects(&self, req: &Request, gvr: Gvr<'_>) -> bool {
        self.matches(req, gvr)
            && (self.names.is_empty() || self.names.iter().any(|n| n == req.name))
    }

    /// The rule's operations, groups, versions, resources and scope cover
    /// the request made through `gvr`.
    fn matches(&self, req: &Request, gvr: Gvr<'_>) -> bool {
        self.scope_matches(gvr, req.namespace)
            && self.operation_matches(req.operation)
            && exact_or_wildcard(&self.groups, gvr.group)
            && exact_or_wildcard(&self.versions, gvr.version)
            && self.resource_matches(gvr.resource, req.subresource)
    }

    /// Namespaces are cluster-scoped, though their requests carry their
    /// own name as the namespace.
    fn scope_matches(&self, gvr: Gvr<'_>, namespace: &str) -> bool {
        let is_namespace = gvr
            == Gvr {
                group: "",
                version: "v1",
                resource: "namespaces",
            };
        match self.scope {
            Scope::All => true,
            Scope::Namespaced => !is_namespace && !namespace.is_empty(),
            Scope::Cluster => is_namespace || namespace.is_empty(),
            Scope::Unknown => false,
        }
    }

    fn operation_matches(&self, operation: &str) -> bool {
        self.operations.iter().any(|o| o == "*" || o == operation)
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources
            .iter()
            .any(|(r, s)| (r == "*" || r == resource) && (s == "*" || s == subresource))
    }
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

/// The operations a rule may name, in the order the API server lists them.
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

/// The API server's checks of one resource rule (`validateNamedRuleWithOperations`).
fn rule_problems(r: &NamedRuleWithOperations, at: &str, out: &mut Vec<(String, String)>) {
    let mut push = |path: String, reason: String| out.push((format!("{at}.{path}"), reason));
    let names = r.resource_names.as_deref().unwrap_or_default();
    for (i, name) in names.iter().enumerate() {
        let path = format!("resourceNames[{i}]");
        if name == "." || name == ".." {
            push(path.clone(), invalid(name, &format!("may not be '{name}'")));
        } else {
            for bad in ["/", "%"].into_iter().filter(|b| name.contains(b)) {
                push(
                    path.clone(),
                    invalid(name, &format!("may not contain '{bad}'")),
                );
            }
        }
        if names[..i].contains(name) {
            push(path, duplicate(name));
        }
    }
    let operations = r.operations.as_deref().unwrap_or_default();
    if operations.is_empty() {
        push("operations".into(), "Required value".into());
    }
    if operations.len() > 1 && operations.iter().any(|o| o == "*") {
        let why = "if '*' is present, must not specify other operations";
        push("operations".into(), invalid_list(operations, why));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            push(format!("operations[{i}]"), unsupported(op, &OPERATIONS));
        }
    }
    for (field, what, list) in [
        ("apiGroups", "API groups", &r.api_groups),
        ("apiVersions", "API versions", &r.api_versions),
    ] {
        let list = list.as_deref().unwrap_or_default();
        if list.is_empty() {
            push(field.into(), "Required value".into());
        }
        if list.len() > 1 && list.iter().any(|g| g == "*") {
            let why = format!("if '*' is present, must not specify other {what}");
            push(field.into(), invalid_list(list, &why));
        }
    }
    for (i, v) in r.api_versions.iter().flatten().enumerate() {
        if v.is_empty() {
            push(format!("apiVersions[{i}]"), "Required value".into());
        }
    }
    resources_problems(r.resources.as_deref().unwrap_or_default(), &mut push);
    if let Some(scope) = r.scope.as_deref() {
        if !["*", "Cluster", "Namespaced"].contains(&scope) {
            push(
                "scope".into(),
                unsupported(scope, &["*", "Cluster", "Namespaced"]),
            );
        }
    }
}

/// The API server's checks of a rule's `resources` (`validateResources`).
fn resources_problems(resources: &[String], push: &mut impl FnMut(String, String)) {
    if resources.is_empty() {
        push("resources".into(), "Required value".into());
    }
    let mut wildcard_subresources: Vec<&str> = Vec::new(); // x/*
    let mut wildcard_resources: Vec<&str> = Vec::new(); // */x
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    // Upstream keeps only the last plain entry's verdict here, so that
    // `["pods", "*"]` passes while `["*", "pods"]` does not.
    let mut plain_resource = false;
    for (i, entry) in resources.iter().enumerate() {
        let path = format!("resources[{i}]");
        if entry.is_empty() {
            push(path, "Required value".into());
            continue;
        }
        double_wildcard |= entry == "*/*";
        single_wildcard |= entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            plain_resource = entry != "*";
            continue;
        };
        if wildcard_subresources.contains(&res) {
            let why = format!("if '{res}/*' is present, must not specify {entry}");
            push(path.clone(), invalid(entry, &why));
        }
        if wildcard_resources.contains(&sub) {
            let why = format!("if '*/{sub}' is present, must not specify {entry}");
            push(path, invalid(entry, &why));
        }
        if sub == "*" {
            wildcard_subresources.push(res);
        }
        if res == "*" {
            wildcard_resources.push(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        let why = "if '*/*' is present, must not specify other resources";
        push("resources".into(), invalid_list(resources, why));
    }
    if single_wildcard && plain_resource {
        let why = "if '*' is present, must not specify other resources without subresources";
        push("resources".into(), invalid_list(resources, why));
    }
}

#[cfg(test)]
mod tests;
