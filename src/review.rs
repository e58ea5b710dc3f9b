//! AdmissionReview wire types (admission.k8s.io v1 and v1beta1): decoding
//! the API server's request and encoding our answer in the same apiVersion.
//!
//! Why not kube-core's `AdmissionReview<DynamicObject>`: it decodes the object
//! through `#[serde(flatten)]` into typed `ObjectMeta` plus a second map, and
//! requires typed `userInfo`; the validator needs the object as one plain JSON
//! tree, parsed once. kube-core's `Status` is used for the answer's status.

use kube_core::response::Status;
use serde::{Deserialize, Serialize};

mod conversion;
mod error;
mod one_pass;
mod partial;
mod request;
pub use conversion::{
    decode_conversion, encode_conversion, ConversionRequest, ConversionReviewVersion,
    SuccessWriter, AHEAD, CHUNK_BYTES, CONVERSION_REVIEW_KIND, CONVERSION_V1, CONVERSION_V1BETA1,
    STREAM_AFTER,
};
pub use error::{Review, ReviewError};
pub use one_pass::OnePass;
pub use partial::{Fields, Keep, ObjectReads, Whole, WithName};

/// The apiVersion a review arrived in; the answer is sent in the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    /// admission.k8s.io/v1
    V1,
    /// admission.k8s.io/v1beta1
    V1Beta1,
}

/// group/version/kind of the object under review.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

/// group/version/resource of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct GroupVersionResource {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub resource: String,
}

/// The fields of a request only ValidatingAdmissionPolicies read (their
/// `request` variable and resource rules); decoded because they are small.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestDetails {
    /// `request.resource`.
    pub resource: GroupVersionResource,
    pub sub_resource: String,
    /// `request.requestKind`, `requestResource` and `requestSubResource`:
    /// what the client sent, before the API server converted the object to
    /// the version the webhook asked for.
    pub request_kind: Option<GroupVersionKind>,
    pub request_resource: Option<GroupVersionResource>,
    pub request_sub_resource: Option<String>,
    /// `request.userInfo.uid` and `extra`.
    pub user_uid: String,
    pub user_extra: Option<celhook_json::Value>,
    /// `request.options` (CreateOptions, UpdateOptions, DeleteOptions).
    pub options: Option<celhook_json::Value>,
}

/// The admission operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Operation {
    #[default]
    Create,
    Update,
    Delete,
    Connect,
}

/// The fields of `request` that celhook reads.
#[derive(Default, Debug, Clone)]
pub struct AdmissionRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub name: String,
    pub namespace: Option<String>,
    pub operation: Operation,
    /// `request.userInfo.username`, empty when absent: for the denial log
    /// and the exemptions of rules documents.
    pub user: String,
    /// `request.userInfo.groups`: for the exemptions of rules documents.
    pub groups: Vec<String>,
    /// `request.object`; `None` when absent or JSON null.
    pub object: Option<celhook_json::Value>,
    /// `request.oldObject`; `None` when absent or JSON null.
    pub old_object: Option<celhook_json::Value>,
    pub dry_run: bool,
    pub details: RequestDetails,
}

/// Our answer: `response` of the AdmissionReview.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    /// Set on denial: the API-server-shaped Status (code 422, reason Invalid, ...).
    pub status: Option<Status>,
    pub warnings: Vec<String>,
    /// `auditAnnotations` of the answer (the API server stores each as
    /// `<webhook name>/<key>` in the audit event).
    pub audit_annotations: Vec<(String, String)>,
}

impl AdmissionResponse {
    /// Allows the request.
    pub fn allow(uid: &str) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: true,
            status: None,
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
        }
    }

    /// Denies the request with the given status.
    pub fn deny(uid: &str, status: Status) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: false,
            status: Some(status),
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
        }
    }
}

/// apiVersion string of admission.k8s.io/v1 reviews.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// apiVersion string of admission.k8s.io/v1beta1 reviews.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";
/// kind of an AdmissionReview.
pub const ADMISSION_REVIEW_KIND: &str = "AdmissionReview";

impl ReviewVersion {
    /// The apiVersion string this version is sent as.
    pub fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => ADMISSION_V1,
            ReviewVersion::V1Beta1 => ADMISSION_V1BETA1,
        }
    }
}

impl Operation {
    /// The operation as the API server spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Either review as it arrives on the wire (`R` is its request): only what
/// we read. Unknown fields are skipped by serde without being built.
/// Everything is optional here so that a missing field becomes a precise
/// [`ReviewError`] instead of serde's generic message.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReview<R> {
    api_version: Option<String>,
    kind: Option<String>,
    request: Option<R>,
}

impl<R> WireReview<R> {
    /// Checks the apiVersion and kind as `review`'s (answering `v1` or
    /// `v1beta1` for its two apiVersions), then takes out the request.
    fn open<V>(self, review: Review, v1: V, v1beta1: V) -> Result<(V, R), ReviewError> {
        let version = review.expect_header(self.api_version.as_deref(), self.kind, v1, v1beta1)?;
        let request = self.request.ok_or(ReviewError::MissingRequest(review))?;
        Ok((version, request))
    }
}

/// Whether to decode the fields only ValidatingAdmissionPolicies read
/// (`RequestDetails`): a config without policies skips them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Details {
    Decode,
    Skip,
}

/// A field kept as text parsed as `T`; JSON null is `None`.
fn parse_raw<T: serde::de::DeserializeOwned>(raw: Option<&str>) -> Result<Option<T>, ReviewError> {
    raw.map(serde_json::from_str::<Option<T>>)
        .transpose()
        .map(Option::flatten)
        .map_err(|e| ReviewError::from_json(Review::Admission, e))
}

/// A field kept as text parsed as a tree; JSON null is `None`.
fn parse_tree(raw: Option<&str>) -> Result<Option<celhook_json::Value>, ReviewError> {
    match raw.map(celhook_json::from_str).transpose() {
        Ok(v) => Ok(v.filter(|v| !v.is_null())),
        Err(e) => Err(ReviewError::from_parse(Review::Admission, e)),
    }
}

/// Decodes an AdmissionReview body, parsing it once.
///
/// Checks, in order: the body is a JSON object, apiVersion and kind, then
/// `request` with its uid, kind, operation, and the shape of
/// object/oldObject. The objects are moved into the request, never copied.
pub fn decode_admission(body: &[u8]) -> Result<(ReviewVersion, AdmissionRequest), ReviewError> {
    decode_admission_with(body, Details::Decode)
}

/// [`decode_admission`], decoding `request.resource`, `options` and the
/// other fields only policies read when `details` says so.
pub fn decode_admission_with(
    body: &[u8],
    details: Details,
) -> Result<(ReviewVersion, AdmissionRequest), ReviewError> {
    decode_admission_planned(body, details, &Whole)
}

/// [`decode_admission_with`], building of `object` and `oldObject` only
/// the top-level fields `reads` plans for the request's kind.
pub fn decode_admission_planned<P: ObjectReads>(
    body: &[u8],
    details: Details,
    reads: &P,
) -> Result<(ReviewVersion, AdmissionRequest), ReviewError> {
    let review = Review::Admission;
    review.expect_object(body)?;
    let wire = celhook_json::Parser::from_slice(body)
        .and_then(|mut p| {
            let wire = request::review(&mut p, reads)?;
            p.end().map(|()| wire)
        })
        .map_err(|e| ReviewError::from_parse(review, e))?;

    let (version, mut req) = wire.open(review, ReviewVersion::V1, ReviewVersion::V1Beta1)?;
    let uid = match req.uid {
        Some(uid) if !uid.is_empty() => uid,
        _ => return Err(ReviewError::MissingUid(review)),
    };
    let kind = match req.kind {
        Some(gvk) if !gvk.version.is_empty() && !gvk.kind.is_empty() => gvk,
        _ => return Err(ReviewError::MissingRequestKind),
    };
    let operation = match req.operation.as_deref() {
        None => return Err(ReviewError::MissingOperation),
        Some("CREATE") => Operation::Create,
        Some("UPDATE") => Operation::Update,
        Some("DELETE") => Operation::Delete,
        Some("CONNECT") => Operation::Connect,
        Some(other) => return Err(ReviewError::UnsupportedOperation(other.to_owned())),
    };
    check_object("object", req.object.as_ref())?;
    check_object("oldObject", req.old_object.as_ref())?;
    let user = req.user_info.as_ref();
    let details = match details {
        Details::Skip => RequestDetails::default(),
        Details::Decode => RequestDetails {
            resource: parse_raw(req.resource)?.unwrap_or_default(),
            sub_resource: parse_raw(req.sub_resource)?.unwrap_or_default(),
            request_kind: parse_raw(req.request_kind)?,
            request_resource: parse_raw(req.request_resource)?,
            request_sub_resource: parse_raw(req.request_sub_resource)?,
            user_uid: parse_raw(user.and_then(|u| u.uid))?.unwrap_or_default(),
            user_extra: parse_tree(user.and_then(|u| u.extra))?,
            options: parse_tree(req.options)?,
        },
    };

    Ok((
        version,
        AdmissionRequest {
            uid,
            kind,
            name: req.name.unwrap_or_default(),
            namespace: req.namespace.filter(|ns| !ns.is_empty()),
            operation,
            groups: req
                .user_info
                .as_mut()
                .map(|u| std::mem::take(&mut u.groups))
                .unwrap_or_default(),
            details,
            user: req.user_info.and_then(|u| u.username).unwrap_or_default(),
            object: req.object,
            old_object: req.old_object,
            dry_run: req.dry_run.unwrap_or(false),
        },
    ))
}

fn check_object(
    field: &'static str,
    value: Option<&celhook_json::Value>,
) -> Result<(), ReviewError> {
    use celhook_json::Value;
    let found = match value {
        None | Some(Value::Object(_)) => return Ok(()),
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_) | Value::Table(_)) => "an array",
    };
    Err(ReviewError::NotAJsonObject { field, found })
}

/// Our answer on the wire (either review): the envelope around the
/// response, in the apiVersion the review came in.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireAnswer<R> {
    api_version: &'static str,
    kind: &'static str,
    response: R,
}

#[derive(Serialize)]
struct WireResponse<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a Status>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    #[serde(
        rename = "auditAnnotations",
        skip_serializing_if = "AuditAnnotations::is_empty"
    )]
    audit_annotations: AuditAnnotations<'a>,
}

/// The answer's audit annotations as a JSON object, in their order.
struct AuditAnnotations<'a>(&'a [(String, String)]);

impl AuditAnnotations<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for AuditAnnotations<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Encodes the answer as an AdmissionReview in `version`.
///
/// `status` is sent only on denial and `warnings` only when there are some;
/// `patch`/`patchType` never are (a validating webhook must not send them).
/// Serializing these types cannot fail in practice; the error is returned
/// rather than unwrapped so that it becomes a logged 500.
pub fn encode_admission(
    version: ReviewVersion,
    response: &AdmissionResponse,
) -> Result<Vec<u8>, serde_json::Error> {
    let answer = WireAnswer {
        api_version: version.api_version(),
        kind: ADMISSION_REVIEW_KIND,
        response: WireResponse {
            uid: &response.uid,
            allowed: response.allowed,
            status: if response.allowed {
                None
            } else {
                response.status.as_ref()
            },
            warnings: &response.warnings,
            audit_annotations: AuditAnnotations(&response.audit_annotations),
        },
    };
    let mut out = Vec::with_capacity(256);
    serde_json::to_writer(&mut out, &answer)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
