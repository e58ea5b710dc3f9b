//! A request against every policy of the config, as the API server's
//! policy dispatcher does it: each matching policy, each matching binding,
//! each parameter object; then the binding's actions turn failures into a
//! denial, warnings and audit annotations.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use celhook_json::Value as Json;
use kube_core::response::{Status, StatusCause, StatusDetails, StatusSummary};
use serde::Serialize;

use super::compile::{Action, Binding, FailurePolicy, Policy};
use super::matching::{self, Gvr};
use super::validate::{self, Inputs};
use super::{annotation_key, Set, VALIDATION_FAILURE_KEY};
use crate::cel::Value;
use crate::field_error::go_json;
use crate::review::{AdmissionRequest, GroupVersionKind};
use crate::schema::Schema;

/// What the policies decided about one request.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The first denial, as the API server words it.
    pub denial: Option<Status>,
    pub warnings: Vec<String>,
    /// Webhook audit annotations (see [`VALIDATION_FAILURE_KEY`]).
    pub audit_annotations: Vec<(String, String)>,
    /// Every binding's decision, for metrics and logs.
    pub decisions: Vec<Decision>,
    /// Policies whose matchConstraints the request met.
    pub matched: usize,
}

/// One binding's effect on one request.
#[derive(Debug, Clone)]
pub struct Decision {
    pub policy: Arc<Policy>,
    pub binding: String,
    /// `deny`, `warn`, `audit`, or `error_ignored` (failurePolicy Ignore).
    pub action: &'static str,
}

/// A denying decision before it becomes the answer.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

/// The audit entry of a failed validation, fields in the API server's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FailureEntry<'a> {
    message: &'a str,
    policy: &'a str,
    binding: &'a str,
    expression_index: usize,
    validation_actions: Vec<&'static str>,
}

/// Evaluates every policy of `set` on `req`. Never panics.
pub fn review(set: &Set, req: &AdmissionRequest) -> Outcome {
    let mut out = Outcome::default();
    if set.is_empty() {
        return out;
    }
    let d = &req.details;
    if exempt(&d.resource) {
        return out;
    }
    let resource = gvr(&d.resource);
    let namespace = req.namespace.as_deref().unwrap_or("");
    let name = if req.name.is_empty() {
        req.object
            .as_ref()
            .or(req.old_object.as_ref())
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Json::as_str)
            .unwrap_or("")
    } else {
        &req.name
    };
    let view = matching::Request {
        operation: req.operation.as_str(),
        resource,
        request_resource: d.request_resource.as_ref().map_or(resource, gvr),
        subresource: &d.sub_resource,
        name,
        namespace,
        object: req.object.as_ref(),
        old_object: req.old_object.as_ref(),
    };
    let any = Schema::untyped(true);
    let request = OnceCell::new();
    // The Namespace of a Namespace request is the object itself, not its
    // namespaceObject.
    let is_namespace = req.kind.group.is_empty() && req.kind.kind == "Namespace";
    let namespace_object = (!is_namespace && !namespace.is_empty())
        .then(|| set.namespace(namespace))
        .flatten();
    let mut denied: Vec<Denied> = Vec::new();
    let mut failure_annotation: Option<String> = None;
    for (pi, policy) in set.policies().iter().enumerate() {
        let matched = match policy.constraints.matches(&view, set) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => {
                config_error(policy, None, e, &mut out, &mut denied);
                continue;
            }
        };
        out.matched += 1;
        // The policy sees the request as the version it matched (the API
        // server converts to it); matchConditions keep the requested
        // resource but see the matched kind.
        let base = request.get_or_init(|| request_json(req));
        let kind = matched_kind(req, &view, &matched);
        let validations_request = patched(base, &matched.gvr(), &kind);
        let conditions_request = patched(base, &view.request_resource, &kind);
        // Key -> values (several when params differ).
        let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for binding in set.bindings_of(pi) {
            if let Some(m) = &binding.resources {
                match m.matches(&view, set) {
                    Ok(Some(_)) => {}
                    Ok(None) => continue,
                    Err(e) => {
                        config_error(policy, Some(binding), e, &mut out, &mut denied);
                        continue;
                    }
                }
            }
            let params = match set.params_for(policy, binding, namespace) {
                Ok(p) => p,
                Err(e) => {
                    config_error(policy, Some(binding), e, &mut out, &mut denied);
                    continue;
                }
            };
            for param in params {
                let inputs = Inputs {
                    object: value(req.object.as_ref(), &any),
                    old_object: value(req.old_object.as_ref(), &any),
                    request: Value::from_json(validations_request.as_ref().unwrap_or(base), &any),
                    condition_request: Value::from_json(
                        conditions_request.as_ref().unwrap_or(base),
                        &any,
                    ),
                    params: value(param, &any),
                    namespace_object: value(namespace_object.map(|n| &n.object), &any),
                    namespace_stored: value(namespace_object.map(|n| &n.stored), &any),
                };
                let evaluation = validate::evaluate(policy, inputs);
                if !evaluation.ignored_errors.is_empty() {
                    out.decisions.push(Decision {
                        policy: policy.clone(),
                        binding: binding.name.clone(),
                        action: "error_ignored",
                    });
                }
                for failure in &evaluation.failures {
                    if failure.direct {
                        out.decisions.push(Decision {
                            policy: policy.clone(),
                            binding: binding.name.clone(),
                            action: "deny",
                        });
                        denied.push(Denied {
                            policy: policy.name.clone(),
                            binding: Some(binding.name.clone()),
                            message: failure.message.clone(),
                            reason: None,
                        });
                        continue;
                    }
                    for action in &binding.actions {
                        out.decisions.push(Decision {
                            policy: policy.clone(),
                            binding: binding.name.clone(),
                            action: match action {
                                Action::Deny => "deny",
                                Action::Warn => "warn",
                                Action::Audit => "audit",
                            },
                        });
                        match action {
                            Action::Deny => denied.push(Denied {
                                policy: policy.name.clone(),
                                binding: Some(binding.name.clone()),
                                message: failure.message.clone(),
                                reason: failure.reason.clone(),
                            }),
                            Action::Warn => out.warnings.push(format!(
                                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                policy.name, binding.name, failure.message
                            )),
                            // The API server keeps the first value of a key.
                            Action::Audit if failure_annotation.is_none() => {
                                failure_annotation = Some(failure_entry(policy, binding, failure));
                            }
                            Action::Audit => {}
                        }
                    }
                }
                for (key, v) in evaluation.annotations {
                    let values = annotations.entry(key).or_default();
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
            }
        }
        for (key, mut values) in annotations {
            values.sort();
            out.audit_annotations
                .push((annotation_key(&policy.name, &key), values.join(", ")));
        }
    }
    if let Some(value) = failure_annotation {
        out.audit_annotations
            .push((VALIDATION_FAILURE_KEY.to_owned(), value));
    }
    if let Some(first) = denied.into_iter().next() {
        out.denial = Some(denial(req, &view, first));
    }
    out
}

/// The kind of the matched resource: the requested or the sent one's
/// when it is one of them, else the sent kind in the matched version.
fn matched_kind(
    req: &AdmissionRequest,
    view: &matching::Request<'_>,
    m: &matching::Matched,
) -> GroupVersionKind {
    let same =
        |g: &Gvr<'_>| g.group == m.group && g.version == m.version && g.resource == m.resource;
    match &req.details.request_kind {
        Some(k) if same(&view.request_resource) => k.clone(),
        _ if same(&view.resource) => req.kind.clone(),
        _ => GroupVersionKind {
            group: m.group.clone(),
            version: m.version.clone(),
            kind: req.kind.kind.clone(),
        },
    }
}

/// `base` with `request.resource` and `request.kind` replaced, when they
/// differ from what it holds.
fn patched(base: &Json, resource: &Gvr<'_>, kind: &GroupVersionKind) -> Option<Json> {
    let resource = celhook_json::json!({
        "group": resource.group, "version": resource.version, "resource": resource.resource,
    });
    let kind = celhook_json::to_value(kind).unwrap_or(Json::Null);
    if base.get("resource") == Some(&resource) && base.get("kind") == Some(&kind) {
        return None;
    }
    let mut out = base.clone();
    out["resource"] = resource;
    out["kind"] = kind;
    Some(out)
}

/// A policy or binding that cannot be configured for this request: a
/// denial under failurePolicy Fail, nothing under Ignore.
fn config_error(
    policy: &Arc<Policy>,
    binding: Option<&Binding>,
    error: String,
    out: &mut Outcome,
    denied: &mut Vec<Denied>,
) {
    if policy.failure_policy == FailurePolicy::Ignore {
        out.decisions.push(Decision {
            policy: policy.clone(),
            binding: binding.map(|b| b.name.clone()).unwrap_or_default(),
            action: "error_ignored",
        });
        return;
    }
    out.decisions.push(Decision {
        policy: policy.clone(),
        binding: binding.map(|b| b.name.clone()).unwrap_or_default(),
        action: "deny",
    });
    let message = match binding {
        Some(_) => format!("failed to configure binding: {error}"),
        None => format!("failed to configure policy: {error}"),
    };
    denied.push(Denied {
        policy: policy.name.clone(),
        binding: binding.map(|b| b.name.clone()),
        message,
        reason: None,
    });
}

/// Resources no policy applies to: the admission configuration itself
/// (so that a policy cannot lock out its own repair) and the review
/// resources, which the API server keeps out of admission.
fn exempt(r: &crate::review::GroupVersionResource) -> bool {
    match r.group.as_str() {
        "admissionregistration.k8s.io" => matches!(
            r.resource.as_str(),
            "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
                | "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
        ),
        "authentication.k8s.io" => {
            matches!(r.resource.as_str(), "selfsubjectreviews" | "tokenreviews")
        }
        "authorization.k8s.io" => matches!(
            r.resource.as_str(),
            "subjectaccessreviews"
                | "selfsubjectaccessreviews"
                | "localsubjectaccessreviews"
                | "selfsubjectrulesreviews"
        ),
        _ => false,
    }
}

fn gvr(r: &crate::review::GroupVersionResource) -> Gvr<'_> {
    Gvr {
        group: &r.group,
        version: &r.version,
        resource: &r.resource,
    }
}

fn value<'a>(json: Option<&'a Json>, any: &'a Schema) -> Value<'a> {
    json.map_or(Value::Null, |j| Value::from_json(j, any))
}

/// The `[{...}]` value of the validation failure annotation.
fn failure_entry(policy: &Policy, binding: &Binding, failure: &validate::Failure) -> String {
    let entry = FailureEntry {
        message: &failure.message,
        policy: &policy.name,
        binding: &binding.name,
        expression_index: failure.index,
        validation_actions: binding.actions.iter().map(|a| a.as_str()).collect(),
    };
    go_json(&serde_json::to_string(&[entry]).unwrap_or_default())
}

/// The denial's status: the API server's Forbidden error of the request,
/// its reason and code taken from the validation.
fn denial(req: &AdmissionRequest, view: &matching::Request<'_>, d: Denied) -> Status {
    let message = match &d.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            d.policy, b, d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            d.policy, d.message
        ),
    };
    let reason = d.reason.unwrap_or_else(|| "Invalid".into());
    let code = match reason.as_str() {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    Status {
        status: Some(StatusSummary::Failure),
        code,
        message: message.clone(),
        reason,
        metadata: None,
        details: Some(StatusDetails {
            name: view.name.to_owned(),
            group: req.details.resource.group.clone(),
            kind: req.details.resource.resource.clone(),
            uid: String::new(),
            causes: vec![StatusCause {
                reason: String::new(),
                message,
                field: String::new(),
            }],
            retry_after_seconds: 0,
        }),
    }
}

/// `request` as policies and matchConditions see it: the
/// AdmissionRequest's fields.
pub fn request_json(req: &AdmissionRequest) -> Json {
    let d = &req.details;
    let resource = celhook_json::to_value(&d.resource).unwrap_or(Json::Null);
    let mut user = celhook_json::json!({
        "username": req.user,
        "uid": d.user_uid,
        "groups": req.groups,
    });
    if let Some(extra) = &d.user_extra {
        user["extra"] = extra.clone();
    }
    // No uid: the API server builds this request for CEL without one.
    let mut out = celhook_json::json!({
        "uid": "",
        "kind": req.kind,
        "resource": resource,
        "requestKind": d.request_kind.as_ref().unwrap_or(&req.kind),
        "requestResource": d.request_resource.as_ref().map_or(resource.clone(), |r| celhook_json::to_value(r).unwrap_or(Json::Null)),
        "name": req.name,
        "namespace": req.namespace.as_deref().unwrap_or(""),
        "operation": req.operation.as_str(),
        "userInfo": user,
        "dryRun": req.dry_run,
    });
    if !d.sub_resource.is_empty() {
        out["subResource"] = Json::from(d.sub_resource.clone());
    }
    if let Some(s) = &d.request_sub_resource {
        out["requestSubResource"] = Json::from(s.clone());
    }
    if let Some(o) = &d.options {
        out["options"] = o.clone();
    }
    out
}
