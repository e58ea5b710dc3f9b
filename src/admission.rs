//! One admission request answered from the config: the CRD version of its
//! kind (its `x-kubernetes-validations`), the rules documents on its kind,
//! the `--unknown-versions` policy for a kind the config knows in a
//! version it has no schema of, then the ValidatingAdmissionPolicies.
//! Everything the request path evaluates goes through here.

use std::sync::Arc;

use celhook_json::Value as Json;

use crate::config::{Catalog, Target};
use crate::metrics::RuleObservation;
use crate::policy;
use crate::review::{
    AdmissionRequest, AdmissionResponse, Fields, GroupVersionKind, Keep, ObjectReads, Operation,
    ReviewError, ReviewVersion, WithName,
};
use crate::rules::{self, Requester, RuleSet};
use crate::validation::{invalid_status, FieldRead, Node, Plan};

/// What to do with an object of a group and kind the config knows (a CRD,
/// or the target of a rules document) in a version it has no schema of:
/// such an object's rules cannot run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum UnknownVersions {
    /// Refuse it (403 Forbidden), naming kind and version.
    Deny,
    /// Allow it with a warning to the client.
    #[default]
    Warn,
    /// Allow it (still logged and counted).
    Allow,
}

impl UnknownVersions {
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownVersions::Deny => "deny",
            UnknownVersions::Warn => "warn",
            UnknownVersions::Allow => "allow",
        }
    }
}

/// The service's policies for requests.
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy {
    pub unknown_versions: UnknownVersions,
    /// What a request is checked against (by the path it came to).
    pub scope: Scope,
    /// A custom resource is checked against its whole schema (types,
    /// formats, bounds, required, ...) before its rules, as the API server
    /// checks it; on in `eval` and `test`, behind `--check-schema` in
    /// `serve` (the API server has checked the schema already).
    pub check_schema: bool,
}

/// What one webhook call checks: everything (`/validate`), or one half,
/// so that a kind sent by two webhooks (one for its schema's rules, one
/// for the policies that match it) is never checked twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope {
    #[default]
    All,
    /// CRD rules and rules documents (`/validate/rules`).
    Rules,
    /// ValidatingAdmissionPolicies (`/validate/policies`).
    Policies,
}

/// The answer, with what the caller logs and counts.
#[derive(Debug)]
pub struct Verdict<'a> {
    pub response: AdmissionResponse,
    /// The `crd` metrics label of the request's kind.
    pub label: &'a str,
    /// The kind is known but this version is not: `Policy::unknown_versions` answered.
    pub unknown_version: bool,
    /// Rules documents whose rules failed, with the actions they took.
    pub documents: Vec<Arc<rules::Info>>,
    /// What each ValidatingAdmissionPolicy binding did.
    pub policies: Vec<policy::Decision>,
    /// How many policies matched the request.
    pub policies_matched: usize,
    /// The schema rules evaluated, for their metrics (recorded once the
    /// answer stands).
    pub rules_observed: Vec<RuleObservation<'a>>,
}

/// The audit annotation key of failures of Audit documents (stored by the
/// API server as `<webhook name>/validation_failure`).
pub const AUDIT_KEY: &str = "validation_failure";

/// Answers an admission request as `serve` does with the default
/// policies (benchmarks and fuzz targets).
pub fn answer(catalog: &Catalog, req: &AdmissionRequest) -> AdmissionResponse {
    review(catalog, req, &Policy::default()).response
}

/// The policies of the offline tools (`eval`, `test`): the default ones,
/// and a custom resource checked against its whole schema, as the API
/// server checks it before any webhook sees it.
pub const OFFLINE: Policy = Policy {
    unknown_versions: UnknownVersions::Warn,
    scope: Scope::All,
    check_schema: true,
};

/// Decodes an AdmissionReview body as `review` under `policy` will read
/// it: the fields only policies read when the config has some, and of the
/// objects what [`Reads`] plans.
pub fn decode(
    catalog: &Catalog,
    policy: &Policy,
    body: &[u8],
) -> Result<(ReviewVersion, AdmissionRequest), ReviewError> {
    let reads = Reads { catalog, policy };
    crate::review::decode_admission_planned(body, catalog.request_details(), &reads)
}

/// What [`review`] will read of the objects of a request, so that
/// decoding builds only that (`review::decode_admission_planned`): the
/// top-level fields the CRD's and rules documents' rules sit under, and
/// `metadata.name`; on a CREATE read by one validator, inside those only
/// the fields its rules select (see [`Node::reads_whole`]). Whole objects
/// for what reads more: policies, the schema check, a rule reading the
/// root whole, a matchCondition or object selector of a rules document.
pub struct Reads<'c> {
    pub catalog: &'c Catalog,
    pub policy: &'c Policy,
}

/// The top-level fields the rules of one kind read.
pub struct RootReads<'c> {
    crd: Option<&'c Node>,
    rules: &'c [Arc<RuleSet>],
    /// On CREATE, the one validator's root when one alone reads the kind:
    /// its plan is followed into the nodes (with several, each field any
    /// of them reads is kept whole).
    deep: Option<&'c Node>,
    /// What is read of `metadata`: its name, which a denial names, and
    /// what the rules' plan keeps (see [`RootReads::of_metadata`]); `None`
    /// for all of it.
    metadata: Option<WithName<'c>>,
}

impl<'c> RootReads<'c> {
    /// True when a validator's root has rules below `field`.
    fn below(&self, field: &str) -> bool {
        let read = |node: &Node| node.properties.iter().any(|(name, _)| name == field);
        self.crd.is_some_and(read) || self.rules.iter().any(|s| read(&s.validator.root))
    }

    /// Decides what is read of `metadata`, once: with one validator's plan
    /// followed, what it keeps of it besides the name (all when it reads
    /// it whole); otherwise the name alone unless rules sit below it.
    fn of_metadata(mut self) -> Self {
        self.metadata = match self.deep.map(|root| root.keep("metadata")) {
            Some(Keep::Skip) => Some(WithName(None)),
            Some(Keep::Part(plan)) => Some(WithName(Some(plan))),
            Some(_) => None,
            None => (!self.below("metadata")).then_some(WithName(None)),
        };
        self
    }
}

impl Fields for RootReads<'_> {
    fn keep(&self, field: &str) -> Keep<'_> {
        if field == "metadata" {
            return self
                .metadata
                .as_ref()
                .map_or(Keep::Whole, |m| Keep::Part(m));
        }
        match self.deep {
            Some(root) => root.keep(field),
            None if self.below(field) => Keep::Whole,
            None => Keep::Skip,
        }
    }
}

/// On CREATE: the fields a node's rules select, as they select them
/// (whole, or in part by a [`Plan`]); a property with rules below it, as
/// its own node plans; nothing else. A plan in part is followed alike;
/// skipped keys keep their places in both.
macro_rules! planned_fields {
    ($($planned:ty: $read:ident),*) => {$(
        impl Fields for $planned {
            fn keep(&self, field: &str) -> Keep<'_> {
                keep_as(self.$read(field))
            }

            fn known(&self) -> &[celhook_json::PlainKey] {
                self.known_fields()
            }

            fn keep_known(&self, i: usize) -> Keep<'_> {
                keep_as(self.known_read(i))
            }

            fn holds_places(&self) -> bool {
                true
            }
        }
    )*};
}

planned_fields!(Node: field_read, Plan: read_field);

fn keep_as(read: FieldRead<'_>) -> Keep<'_> {
    match read {
        FieldRead::Whole => Keep::Whole,
        FieldRead::Rows => Keep::Rows,
        FieldRead::Part(plan) => Keep::Part(plan),
        FieldRead::Below(child) if child.reads_whole() => Keep::Whole,
        FieldRead::Below(child) => Keep::Part(child),
        FieldRead::Nothing => Keep::Skip,
    }
}

impl ObjectReads for Reads<'_> {
    type Plan<'r>
        = RootReads<'r>
    where
        Self: 'r;

    fn plan(&self, gvk: &GroupVersionKind, creates: bool) -> Option<RootReads<'_>> {
        if self.policy.scope != Scope::Rules && !self.catalog.policies().is_empty() {
            return None;
        }
        let nothing = RootReads {
            crd: None,
            rules: &[],
            deep: None,
            metadata: Some(WithName(None)),
        };
        if self.policy.scope == Scope::Policies {
            return Some(nothing);
        }
        let target = self.catalog.target(&gvk.group, &gvk.version, &gvk.kind);
        if target.unknown_version {
            return Some(nothing);
        }
        // The one validator reading the kind, on CREATE: nothing compares
        // its values with old ones (ratcheting compares whole values).
        let deep = match (target.crd, target.rules) {
            _ if !creates => None,
            (Some(crd), []) => Some(&crd.validator.root),
            (None, [set]) => Some(&set.validator.root),
            _ => None,
        };
        // Otherwise a node with rules is read whole, whatever they look at.
        let reads_root = |node: &Node| match deep {
            Some(_) => node.reads_whole(),
            None => !node.rules.is_empty() || node.element.is_some(),
        };
        if let Some(crd) = target.crd {
            let checked = self.policy.check_schema && crd.validator.schema_check.is_some();
            if checked || reads_root(&crd.validator.root) {
                return None;
            }
        }
        let whole = |set: &Arc<RuleSet>| {
            !set.info.match_conditions.is_empty()
                || set.info.exempt.reads_object()
                || reads_root(&set.validator.root)
        };
        if target.rules.iter().any(whole) {
            return None;
        }
        let reads = RootReads {
            crd: target.crd.map(|c| &c.validator.root),
            rules: target.rules,
            deep,
            metadata: None,
        };
        Some(reads.of_metadata())
    }
}

/// Answers one admission request. Never panics; runtime errors of rules
/// become denials.
pub fn review<'a>(catalog: &'a Catalog, req: &AdmissionRequest, policy: &Policy) -> Verdict<'a> {
    let gvk = &req.kind;
    let target = catalog.target(&gvk.group, &gvk.version, &gvk.kind);
    let mut verdict = Verdict {
        response: AdmissionResponse::allow(&req.uid),
        label: target.label,
        unknown_version: false,
        documents: Vec::new(),
        policies: Vec::new(),
        policies_matched: 0,
        rules_observed: Vec::new(),
    };
    // The schema's rules come first, as the API server validates an object
    // before its validating admission (policies, webhooks) sees it.
    if policy.scope != Scope::Policies {
        schema_rules(&target, req, policy, &mut verdict);
    }
    let policies = catalog.policies();
    if verdict.response.allowed && !policies.is_empty() && policy.scope != Scope::Rules {
        let outcome = policy::review(policies, req);
        let response = &mut verdict.response;
        response.warnings.extend(outcome.warnings);
        response.audit_annotations.extend(outcome.audit_annotations);
        if let Some(status) = outcome.denial {
            response.allowed = false;
            response.status = Some(status);
        }
        verdict.policies = outcome.decisions;
        verdict.policies_matched = outcome.matched;
    }
    verdict
}

/// The CRD's rules and the rules documents of the request's kind.
fn schema_rules<'a>(
    target: &Target<'a>,
    req: &AdmissionRequest,
    policy: &Policy,
    verdict: &mut Verdict<'a>,
) {
    let gvk = &req.kind;
    let old = match req.operation {
        Operation::Create => None,
        Operation::Update => req.old_object.as_ref(),
        Operation::Delete | Operation::Connect => return,
    };
    let Some(object) = req.object.as_ref() else {
        return;
    };
    if target.unknown_version {
        verdict.unknown_version = true;
        verdict.response = unknown_version(req, policy.unknown_versions);
        return;
    }
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if let Some(crd) = target.crd {
        let mut blocked = false;
        if let Some(check) = crd
            .validator
            .schema_check
            .as_ref()
            .filter(|_| policy.check_schema)
        {
            let found = check.check(object, old);
            warnings = found.unknown_field_warnings();
            // The API server runs no rule over an object whose types are
            // wrong; it says so in one more error.
            blocked = found.blocks_rules() && crd.validator.rule_count() > 0;
            errors = found.errors;
            if blocked {
                errors.push(crate::openapi::rules_not_checked(crd.validator.kubernetes));
            }
        }
        if !blocked {
            let found = crd.validator.validate(object, old);
            errors.extend(found.errors);
            warnings.extend(found.warnings);
            verdict.rules_observed = found.observed;
        }
    }
    if !target.rules.is_empty() {
        // Built only when a document asks for it.
        let request = target
            .rules
            .iter()
            .any(|s| !s.info.match_conditions.is_empty())
            .then(|| policy::request_json(req));
        let who = Requester {
            user: &req.user,
            groups: &req.groups,
            namespace: req.namespace.as_deref(),
            object: Some(object),
            request: request.as_ref(),
        };
        let mut out = rules::Outcome::default();
        rules::evaluate(target.rules, &who, object, old, &mut out);
        verdict.rules_observed.append(&mut out.observed);
        if !out.condition_errors.is_empty() {
            verdict.response = condition_failure(req, &out.condition_errors);
            return;
        }
        errors.append(&mut out.deny);
        warnings.append(&mut out.warnings);
        verdict.documents = out.failed;
        if !out.audit.is_empty() {
            verdict
                .response
                .audit_annotations
                .push((AUDIT_KEY.to_owned(), audit_value(&out.audit)));
        }
    }
    if !errors.is_empty() {
        let name = object
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(&req.name);
        verdict.response.allowed = false;
        verdict.response.status = Some(invalid_status(&gvk.group, &gvk.kind, name, &errors));
    }
    verdict.response.warnings = warnings;
}

/// The answer for a known kind in an unknown version.
fn unknown_version(req: &AdmissionRequest, policy: UnknownVersions) -> AdmissionResponse {
    let gvk = &req.kind;
    let what = format!(
        "celhook has no schema of {} version {:?}, so its rules were not checked",
        rules::qualified(&gvk.group, &gvk.kind),
        gvk.version
    );
    match policy {
        UnknownVersions::Allow => AdmissionResponse::allow(&req.uid),
        UnknownVersions::Warn => {
            let mut res = AdmissionResponse::allow(&req.uid);
            res.warnings.push(what);
            res
        }
        UnknownVersions::Deny => forbidden(
            req,
            format!(
                "{what}; the webhook refuses versions it cannot check (--unknown-versions=deny)"
            ),
        ),
    }
}

/// The answer when a document's matchCondition cannot be evaluated: a
/// refusal naming it, as the API server refuses when a webhook's
/// matchCondition fails and its failurePolicy is Fail.
fn condition_failure(req: &AdmissionRequest, errors: &[String]) -> AdmissionResponse {
    forbidden(req, errors.join("; "))
}

/// A refusal that is not about the object's fields: 403 Forbidden.
fn forbidden(req: &AdmissionRequest, message: String) -> AdmissionResponse {
    AdmissionResponse::deny(
        &req.uid,
        kube_core::response::Status {
            status: Some(kube_core::response::StatusSummary::Failure),
            code: 403,
            message,
            metadata: None,
            reason: "Forbidden".into(),
            details: None,
        },
    )
}

/// The annotation's value: a JSON list of `{"document", "failure"}`.
fn audit_value(audit: &[(Arc<rules::Info>, String)]) -> String {
    let entries: Vec<Json> = audit
        .iter()
        .map(|(info, failure)| {
            celhook_json::json!({
                "document": info.name,
                "failure": failure,
            })
        })
        .collect();
    Json::Array(entries).to_string()
}

#[cfg(test)]
mod tests;
