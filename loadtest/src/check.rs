//! The check of every answer: the uid is echoed, the review comes back in
//! the apiVersion and kind it was sent in, admission verdicts are the
//! expected ones, and conversions keep count, order, kind and identity of
//! every object in the desired apiVersion (what the API server itself
//! checks before it accepts a conversion).

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::args::Expect;
use crate::workload::{Expectation, SentObject};

/// The outcome of one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// As expected; `allowed` is the admission verdict (None for conversion).
    Ok { allowed: Option<bool> },
    /// Wrong; `kind` is the error class the report counts by.
    Fail { kind: &'static str, detail: String },
}

fn fail(kind: &'static str, detail: impl Into<String>) -> Verdict {
    Verdict::Fail {
        kind,
        detail: detail.into(),
    }
}

/// Only what is checked; serde skips every other field without building it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<R> {
    api_version: Option<String>,
    kind: Option<String>,
    response: Option<R>,
}

#[derive(Deserialize)]
struct AdmissionResponse {
    uid: Option<String>,
    allowed: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConversionResponse {
    uid: Option<String>,
    result: Option<ConversionResult>,
    converted_objects: Option<Vec<ConvertedObject>>,
}

#[derive(Deserialize)]
struct ConversionResult {
    status: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConvertedObject {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
}

/// Checks one 200 answer's body against what was sent with `uid`.
pub fn check(body: &[u8], uid: &str, expectation: &Expectation) -> Verdict {
    match expectation {
        Expectation::Admission {
            api_version,
            expect,
        } => admission(body, uid, api_version, *expect),
        Expectation::Conversion {
            api_version,
            desired,
            objects,
        } => conversion(body, uid, api_version, desired, objects),
    }
}

/// The `uid` of either response, which must echo the request's.
trait Echoed {
    fn uid(&self) -> Option<&str>;
}

impl Echoed for AdmissionResponse {
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
}

impl Echoed for ConversionResponse {
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
}

/// The response of an answer that is a `kind` review in `api_version`
/// echoing `uid`; else the verdict on it.
fn response<R: DeserializeOwned + Echoed>(
    body: &[u8],
    uid: &str,
    api_version: &str,
    kind: &str,
) -> Result<R, Verdict> {
    let review: Review<R> = serde_json::from_slice(body).map_err(|e| {
        let article = if kind.starts_with('A') { "an" } else { "a" };
        fail("malformed_answer", format!("not {article} {kind}: {e}"))
    })?;
    if review.api_version.as_deref() != Some(api_version) || review.kind.as_deref() != Some(kind) {
        return Err(fail(
            "wrong_review_type",
            format!(
                "sent {api_version} {kind}, got {:?} {:?}",
                review.api_version, review.kind
            ),
        ));
    }
    let Some(response) = review.response else {
        return Err(fail("malformed_answer", "the answer has no response"));
    };
    if response.uid() != Some(uid) {
        return Err(fail(
            "uid_mismatch",
            format!("sent uid {uid}, got {:?}", response.uid()),
        ));
    }
    Ok(response)
}

fn admission(body: &[u8], uid: &str, api_version: &str, expect: Expect) -> Verdict {
    let response: AdmissionResponse = match response(body, uid, api_version, "AdmissionReview") {
        Ok(r) => r,
        Err(v) => return v,
    };
    let Some(allowed) = response.allowed else {
        return fail("malformed_answer", "response.allowed is missing");
    };
    match (expect, allowed) {
        (Expect::Allowed, false) => fail(
            "unexpected_denial",
            format!(
                "uid {uid} denied: {}",
                // The status message says which rule; worth a second parse
                // only on this error path.
                serde_json::from_slice::<serde_json::Value>(body)
                    .ok()
                    .and_then(|v| v["response"]["status"]["message"]
                        .as_str()
                        .map(str::to_owned))
                    .unwrap_or_default()
            ),
        ),
        (Expect::Denied, true) => fail("unexpected_allow", format!("uid {uid} allowed")),
        _ => Verdict::Ok {
            allowed: Some(allowed),
        },
    }
}

fn conversion(
    body: &[u8],
    uid: &str,
    api_version: &str,
    desired: &str,
    sent: &[SentObject],
) -> Verdict {
    let response: ConversionResponse = match response(body, uid, api_version, "ConversionReview") {
        Ok(r) => r,
        Err(v) => return v,
    };
    let result = response.result.unwrap_or(ConversionResult {
        status: None,
        message: None,
    });
    if result.status.as_deref() != Some("Success") {
        return fail(
            "conversion_failed",
            format!(
                "result.status {:?}: {}",
                result.status,
                result.message.unwrap_or_default()
            ),
        );
    }
    let converted = response.converted_objects.unwrap_or_default();
    if converted.len() != sent.len() {
        return fail(
            "conversion_count",
            format!("sent {} objects, got {}", sent.len(), converted.len()),
        );
    }
    for (i, (out, sent)) in converted.iter().zip(sent).enumerate() {
        if out.api_version.as_deref() != Some(desired) {
            return fail(
                "conversion_api_version",
                format!(
                    "object {i}: apiVersion {:?}, wanted {desired}",
                    out.api_version
                ),
            );
        }
        if out.kind.as_deref() != Some(sent.kind.as_str()) {
            return fail(
                "conversion_kind",
                format!("object {i}: kind {:?}, sent {}", out.kind, sent.kind),
            );
        }
        let Some(meta) = &out.metadata else {
            return fail("conversion_metadata", format!("object {i}: no metadata"));
        };
        if meta.name.as_deref() != Some(sent.name.as_str())
            || meta.namespace != sent.namespace
            || meta.uid.as_deref() != Some(sent.uid.as_str())
        {
            return fail(
                "conversion_metadata",
                format!(
                    "object {i}: name/namespace/uid {:?}/{:?}/{:?}, sent {}/{:?}/{} (changed or out of order)",
                    meta.name, meta.namespace, meta.uid, sent.name, sent.namespace, sent.uid
                ),
            );
        }
    }
    Verdict::Ok { allowed: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn adm(expect: Expect) -> Expectation {
        Expectation::Admission {
            api_version: "admission.k8s.io/v1".into(),
            expect,
        }
    }

    fn answer(uid: &str, allowed: bool) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": allowed,
                "status": {"message": "spec: Invalid value: \"object\": replicas-in-range"}}}),
        )
        .expect("json")
    }

    fn kind_of(v: Verdict) -> &'static str {
        match v {
            Verdict::Ok { .. } => "ok",
            Verdict::Fail { kind, .. } => kind,
        }
    }

    #[test]
    fn admission_answers_are_checked_for_uid_and_verdict() {
        let ok = check(&answer("u1", true), "u1", &adm(Expect::Allowed));
        assert_eq!(
            ok,
            Verdict::Ok {
                allowed: Some(true)
            }
        );
        assert_eq!(
            kind_of(check(&answer("u2", true), "u1", &adm(Expect::Allowed))),
            "uid_mismatch"
        );
        let denied = check(&answer("u1", false), "u1", &adm(Expect::Allowed));
        match denied {
            Verdict::Fail { kind, detail } => {
                assert_eq!(kind, "unexpected_denial");
                assert!(detail.contains("replicas-in-range"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            kind_of(check(&answer("u1", true), "u1", &adm(Expect::Denied))),
            "unexpected_allow"
        );
        assert_eq!(
            kind_of(check(&answer("u1", false), "u1", &adm(Expect::Any))),
            "ok"
        );
        assert_eq!(
            kind_of(check(b"<html>", "u1", &adm(Expect::Any))),
            "malformed_answer"
        );
        let beta = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u1","allowed":true}}"#;
        assert_eq!(
            kind_of(check(beta, "u1", &adm(Expect::Any))),
            "wrong_review_type"
        );
    }

    fn sent(n: usize) -> Vec<SentObject> {
        (0..n)
            .map(|i| SentObject {
                kind: "W".into(),
                name: format!("w-{i}"),
                namespace: Some("n".into()),
                uid: format!("uid-{i}"),
            })
            .collect()
    }

    fn conv_answer(objects: serde_json::Value, status: &str) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "c1", "result": {"status": status, "message": "boom"},
                "convertedObjects": objects}}),
        )
        .expect("json")
    }

    fn obj(api_version: &str, i: usize) -> serde_json::Value {
        json!({"apiVersion": api_version, "kind": "W",
            "metadata": {"name": format!("w-{i}"), "namespace": "n", "uid": format!("uid-{i}")},
            "spec": {"x": i}})
    }

    #[test]
    fn conversion_answers_keep_count_order_kind_and_identity() {
        let expect = Expectation::Conversion {
            api_version: "apiextensions.k8s.io/v1".into(),
            desired: "g/v2".into(),
            objects: sent(2),
        };
        let good = conv_answer(json!([obj("g/v2", 0), obj("g/v2", 1)]), "Success");
        assert_eq!(check(&good, "c1", &expect), Verdict::Ok { allowed: None });
        let cases = [
            (
                conv_answer(json!([obj("g/v2", 0)]), "Success"),
                "conversion_count",
            ),
            (
                conv_answer(json!([obj("g/v2", 1), obj("g/v2", 0)]), "Success"),
                "conversion_metadata",
            ),
            (
                conv_answer(json!([obj("g/v1", 0), obj("g/v2", 1)]), "Success"),
                "conversion_api_version",
            ),
            (conv_answer(json!([]), "Failure"), "conversion_failed"),
        ];
        for (body, kind) in cases {
            assert_eq!(kind_of(check(&body, "c1", &expect)), kind);
        }
        let mut other_kind = obj("g/v2", 1);
        other_kind["kind"] = json!("X");
        let body = conv_answer(json!([obj("g/v2", 0), other_kind]), "Success");
        assert_eq!(kind_of(check(&body, "c1", &expect)), "conversion_kind");
        assert_eq!(kind_of(check(&good, "c2", &expect)), "uid_mismatch");
    }
}
