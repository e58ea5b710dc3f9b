//! Decoding and encoding AdmissionReviews.
use super::*;
use celhook_json::{json, Value};

fn review(api_version: &str, request: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": request,
    }))
    .expect("test JSON serializes")
}

fn request() -> Value {
    json!({
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
        "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
        "name": "my-new-cron-object",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "admin", "groups": ["system:masters"]},
        "object": {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "spec": {"replicas": 1}},
        "oldObject": null,
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    })
}

fn with(field: &str, value: Value) -> Value {
    let mut req = request();
    req[field] = value;
    req
}

fn without(field: &str) -> Value {
    let mut req = request();
    if let Some(map) = req.as_object_mut() {
        map.remove(field);
    }
    req
}

fn decode_err(body: &[u8]) -> ReviewError {
    match decode_admission(body) {
        Ok(_) => panic!("expected an error for {}", String::from_utf8_lossy(body)),
        Err(err) => err,
    }
}

#[test]
fn decodes_a_v1_review() {
    let (version, req) = decode_admission(&review(ADMISSION_V1, request())).expect("valid");
    assert_eq!(version, ReviewVersion::V1);
    assert_eq!(req.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(req.kind.group, "stable.example.com");
    assert_eq!(req.kind.version, "v1");
    assert_eq!(req.kind.kind, "CronTab");
    assert_eq!(req.name, "my-new-cron-object");
    assert_eq!(req.namespace.as_deref(), Some("default"));
    assert_eq!(req.operation, Operation::Create);
    assert_eq!(
        req.object.as_ref().map(|o| &o["spec"]["replicas"]),
        Some(&json!(1))
    );
    assert!(req.old_object.is_none(), "null oldObject is None");
    assert!(!req.dry_run);
    assert_eq!(req.user, "admin");
    assert_eq!(req.groups, ["system:masters"]);
}

#[test]
fn decodes_a_v1beta1_review() {
    let (version, _) = decode_admission(&review(ADMISSION_V1BETA1, request())).expect("valid");
    assert_eq!(version, ReviewVersion::V1Beta1);
}

#[test]
fn accepts_every_operation_and_absent_objects() {
    for op in ["CREATE", "UPDATE", "DELETE", "CONNECT"] {
        let mut req = with("operation", json!(op));
        if let Some(map) = req.as_object_mut() {
            map.remove("object");
            map.remove("oldObject");
        }
        let (_, req) = decode_admission(&review(ADMISSION_V1, req)).expect("valid");
        assert_eq!(req.operation.as_str(), op);
        assert!(req.object.is_none());
    }
}

#[test]
fn core_group_and_missing_name_are_fine() {
    let mut req = with("kind", json!({"group": "", "version": "v1", "kind": "Pod"}));
    if let Some(map) = req.as_object_mut() {
        map.remove("name");
        map.remove("namespace");
    }
    let (_, req) = decode_admission(&review(ADMISSION_V1, req)).expect("valid");
    assert_eq!(req.kind.group, "");
    assert_eq!(req.name, "");
    assert_eq!(req.namespace, None);
}

#[test]
fn rejects_an_empty_body() {
    assert!(matches!(decode_err(b""), ReviewError::Empty(_)));
    assert!(matches!(decode_err(b" \n\t"), ReviewError::Empty(_)));
}

#[test]
fn rejects_malformed_json_with_its_position() {
    let err = decode_err(b"{\"apiVersion\": \"admission.k8s.io/v1\",\n \"kind\": }");
    assert!(matches!(err, ReviewError::Syntax(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.starts_with("malformed JSON"), "{text}");
    assert!(text.contains("line 2 column"), "{text}");

    assert!(matches!(
        decode_err(b"{\"apiVersion\""),
        ReviewError::Syntax(_)
    ));
    assert!(matches!(decode_err(b"[1, 2"), ReviewError::Syntax(_)));
    let trailing = [review(ADMISSION_V1, request()), b"}".to_vec()].concat();
    assert!(matches!(decode_err(&trailing), ReviewError::Syntax(_)));
}

#[test]
fn rejects_a_body_that_is_not_utf8_with_its_position() {
    let mut body = review(ADMISSION_V1, request());
    let at = body
        .windows(b"my-new-cron-object".len())
        .position(|w| w == b"my-new-cron-object")
        .expect("the name is in the body");
    body[at] = 0xff;
    let err = decode_err(&body);
    assert!(matches!(err, ReviewError::Syntax(_)), "{err:?}");
    assert!(err.to_string().contains("column"), "{err}");
}

#[test]
fn rejects_a_body_that_is_not_an_object() {
    for body in [&b"[]"[..], b"\"AdmissionReview\"", b"42", b"null"] {
        assert!(
            matches!(decode_err(body), ReviewError::NotAnObject(_)),
            "{body:?}"
        );
    }
}

#[test]
fn rejects_missing_or_unknown_api_version_and_kind() {
    let body = serde_json::to_vec(&json!({"kind": "AdmissionReview", "request": request()}))
        .expect("json");
    assert!(matches!(
        decode_err(&body),
        ReviewError::MissingApiVersion(_)
    ));

    let err = decode_err(&review("admission.k8s.io/v2", request()));
    assert!(
        matches!(err, ReviewError::UnsupportedApiVersion(_, ref v) if v == "admission.k8s.io/v2")
    );
    assert!(err.to_string().contains("\"admission.k8s.io/v2\""), "{err}");

    let body = serde_json::to_vec(&json!({"apiVersion": ADMISSION_V1, "request": request()}))
        .expect("json");
    assert!(matches!(decode_err(&body), ReviewError::WrongKind(_, None)));

    let body = serde_json::to_vec(&json!({
        "apiVersion": ADMISSION_V1, "kind": "ConversionReview", "request": request()
    }))
    .expect("json");
    let err = decode_err(&body);
    assert!(matches!(err, ReviewError::WrongKind(_, Some(ref k)) if k == "ConversionReview"));
}

#[test]
fn rejects_a_missing_or_null_request() {
    let body = serde_json::to_vec(&json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview"}))
        .expect("json");
    assert!(matches!(decode_err(&body), ReviewError::MissingRequest(_)));
    assert!(matches!(
        decode_err(&review(ADMISSION_V1, Value::Null)),
        ReviewError::MissingRequest(_)
    ));
}

#[test]
fn rejects_a_missing_null_or_empty_uid() {
    for req in [
        without("uid"),
        with("uid", Value::Null),
        with("uid", json!("")),
    ] {
        assert!(matches!(
            decode_err(&review(ADMISSION_V1, req)),
            ReviewError::MissingUid(_)
        ));
    }
}

#[test]
fn rejects_a_uid_of_the_wrong_type_naming_the_type() {
    let err = decode_err(&review(ADMISSION_V1, with("uid", json!(42))));
    assert!(matches!(err, ReviewError::Data(..)), "{err:?}");
    assert!(
        err.to_string().contains("invalid type: integer `42`"),
        "{err}"
    );
}

#[test]
fn rejects_a_missing_or_incomplete_request_kind() {
    for req in [
        without("kind"),
        with(
            "kind",
            json!({"group": "stable.example.com", "version": "v1"}),
        ),
        with(
            "kind",
            json!({"group": "stable.example.com", "kind": "CronTab"}),
        ),
    ] {
        assert!(matches!(
            decode_err(&review(ADMISSION_V1, req)),
            ReviewError::MissingRequestKind
        ));
    }
}

#[test]
fn rejects_a_missing_or_unknown_operation() {
    assert!(matches!(
        decode_err(&review(ADMISSION_V1, without("operation"))),
        ReviewError::MissingOperation
    ));
    let err = decode_err(&review(ADMISSION_V1, with("operation", json!("PATCH"))));
    assert!(matches!(err, ReviewError::UnsupportedOperation(ref op) if op == "PATCH"));
    assert!(err.to_string().contains("\"PATCH\""), "{err}");
}

#[test]
fn rejects_objects_that_are_not_json_objects() {
    for (field, value, found) in [
        ("object", json!("a string"), "a string"),
        ("object", json!([1]), "an array"),
        ("object", json!(3), "a number"),
        ("oldObject", json!(true), "a boolean"),
    ] {
        let err = decode_err(&review(ADMISSION_V1, with(field, value)));
        match err {
            ReviewError::NotAJsonObject { field: f, found: t } => {
                assert_eq!((f, t), (field, found));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn rejects_duplicate_fields() {
    let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","kind":"AdmissionReview","request":{}}"#;
    let err = decode_err(body);
    assert!(matches!(err, ReviewError::Data(..)), "{err:?}");
    assert!(err.to_string().contains("duplicate field `kind`"), "{err}");
}

#[test]
fn rejects_duplicate_request_fields_even_after_a_null() {
    for (field, first, second) in [
        ("uid", "null", "\"u\""),
        ("object", "{}", "{}"),
        ("oldObject", "null", "{}"),
    ] {
        let body = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","kind":{{"version":"v1","kind":"X"}},"operation":"CREATE","{field}":{first},"{field}":{second}}}}}"#
        );
        let body = body.replacen("\"uid\":\"u\",", "", usize::from(field == "uid"));
        let err = decode_err(body.as_bytes());
        assert!(
            err.to_string()
                .contains(&format!("duplicate field `{field}`")),
            "{field}: {err}"
        );
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let depth = 10_000;
    let mut body = String::from(
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"X"},"operation":"CREATE","object":{"a":"#,
    );
    body.push_str(&"[".repeat(depth));
    body.push_str(&"]".repeat(depth));
    body.push_str("}}}");
    let err = decode_err(body.as_bytes());
    assert!(err.to_string().contains("recursion limit"), "{err}");
}

#[test]
fn encodes_an_allowed_answer_without_status_or_warnings() {
    let out =
        encode_admission(ReviewVersion::V1, &AdmissionResponse::allow("abc")).expect("encodes");
    let value: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(
        value,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "abc", "allowed": true}
        })
    );
}

#[test]
fn encodes_a_denial_with_status_and_warnings_in_the_request_version() {
    let status =
        Status::failure("CronTab.stable.example.com \"x\" is invalid", "Invalid").with_code(422);
    let mut res = AdmissionResponse::deny("abc", status);
    res.warnings.push("spec.replicas is deprecated".to_owned());
    let out = encode_admission(ReviewVersion::V1Beta1, &res).expect("encodes");
    let value: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(value["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(value["kind"], "AdmissionReview");
    let response = &value["response"];
    assert_eq!(response["uid"], "abc");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(response["status"]["reason"], "Invalid");
    assert_eq!(response["status"]["status"], "Failure");
    assert_eq!(response["warnings"], json!(["spec.replicas is deprecated"]));
    assert!(response.get("patch").is_none() && response.get("patchType").is_none());
}

#[test]
fn an_allowed_answer_never_carries_a_status() {
    let mut res = AdmissionResponse::allow("abc");
    res.status = Some(Status::failure("ignored", "Invalid"));
    let out = encode_admission(ReviewVersion::V1, &res).expect("encodes");
    let value: Value = serde_json::from_slice(&out).expect("json");
    assert!(value["response"].get("status").is_none(), "{value}");
}

#[test]
fn audit_annotations_are_sent_as_an_object_in_their_order() {
    let mut res = AdmissionResponse::allow("abc");
    let out: Value =
        serde_json::from_slice(&encode_admission(ReviewVersion::V1, &res).expect("encodes"))
            .expect("JSON");
    assert!(out["response"].get("auditAnnotations").is_none(), "{out}");
    res.audit_annotations = vec![("b".into(), "2".into()), ("a".into(), "1".into())];
    let out = encode_admission(ReviewVersion::V1, &res).expect("encodes");
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(
        text.contains(r#""auditAnnotations":{"b":"2","a":"1"}"#),
        "{text}"
    );
}

#[test]
fn the_fields_policies_read_are_decoded_only_when_asked() {
    let mut req = request();
    req["subResource"] = json!("status");
    req["requestResource"] =
        json!({"group": "stable.example.com", "version": "v1beta1", "resource": "crontabs"});
    req["userInfo"]["uid"] = json!("u-1");
    req["userInfo"]["extra"] = json!({"scopes": ["a"]});
    let body = review(ADMISSION_V1, req);
    let (_, full) = decode_admission_with(&body, Details::Decode).expect("valid");
    let d = &full.details;
    assert_eq!(d.resource.resource, "crontabs");
    assert_eq!(d.sub_resource, "status");
    assert_eq!(
        d.request_resource.as_ref().map(|r| r.version.as_str()),
        Some("v1beta1")
    );
    assert_eq!(d.user_uid, "u-1");
    assert_eq!(d.user_extra, Some(json!({"scopes": ["a"]})));
    assert_eq!(
        d.options.as_ref().map(|o| o["kind"].clone()),
        Some(json!("CreateOptions"))
    );
    let (_, lean) = decode_admission_with(&body, Details::Skip).expect("valid");
    assert_eq!(lean.details, RequestDetails::default());
    assert_eq!((lean.uid, lean.object), (full.uid, full.object));
    // A malformed detail is an error only when it is read.
    let bad = review(ADMISSION_V1, with("resource", json!(42)));
    assert!(decode_admission_with(&bad, Details::Skip).is_ok());
    let err = decode_admission_with(&bad, Details::Decode).expect_err("a number is no resource");
    assert!(
        err.to_string().contains("invalid type: integer `42`"),
        "{err}"
    );
}

#[test]
fn serde_json_s_private_raw_value_key_is_an_ordinary_key() {
    // serde_json's own value decoder reads an object whose first key is
    // this token as embedded JSON text; the request's objects keep it as
    // data, as the API server stored it, and the keys after it too.
    let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"X"},"operation":"CREATE","object":{"spec":{"labels":{"$serde_json::private::RawValue":"{}","b":"c"}}}}}"#;
    let (_, req) = decode_admission(body).expect("decodes");
    let labels = &req.object.expect("object")["spec"]["labels"];
    assert_eq!(labels["$serde_json::private::RawValue"], "{}");
    assert_eq!(labels["b"], "c");
}

#[test]
fn fields_no_rule_reads_may_nest_past_the_limit_of_built_values() {
    use super::partial::{Fields, Keep, ObjectReads};
    struct SpecOnly;
    impl Fields for SpecOnly {
        fn keep(&self, field: &str) -> Keep<'_> {
            if field == "spec" {
                Keep::Whole
            } else {
                Keep::Skip
            }
        }
    }
    impl ObjectReads for SpecOnly {
        type Plan<'r> = SpecOnly;
        fn plan(&self, _: &GroupVersionKind, _: bool) -> Option<SpecOnly> {
            Some(SpecOnly)
        }
    }
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    for (at, refused) in [("status", false), ("spec", true)] {
        let body = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","kind":{{"version":"v1","kind":"X"}},"operation":"CREATE","object":{{"{at}":{deep}}}}}}}"#
        );
        let planned = decode_admission_planned(body.as_bytes(), Details::Skip, &SpecOnly);
        assert_eq!(planned.is_err(), refused, "{at}");
        // Decoded whole, any field past the limit is refused.
        let whole = decode_admission(body.as_bytes()).expect_err("too deep");
        assert!(
            whole.to_string().contains("recursion limit exceeded"),
            "{whole}"
        );
    }
}
