//! `POST /validate` end to end over HTTPS: answers in the request's
//! apiVersion, operations and kinds that are always allowed, and every bad
//! input getting a 4xx that names the problem (never a 500).

use crate::common;

use common::{
    admission_review, client, crontab, fixture, post_raw, post_review, start, start_with,
    validate_url, with_uid, Http, BOTH, CRONTAB, V1, V1BETA1,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

#[tokio::test]
async fn answers_in_the_request_api_version_and_echoes_the_uid() {
    let server = start().await;
    for http in BOTH {
        let client = client(&server, http);
        for (api_version, uid) in [(V1, "uid-v1"), (V1BETA1, "uid-v1beta1")] {
            let object = crontab(
                "ok",
                json!({"minReplicas": 0, "replicas": 1, "maxReplicas": 2}),
            );
            let review = with_uid(
                admission_review(api_version, "CREATE", CRONTAB, Some(object), None),
                uid,
            );
            let answer = post_review(&client, &validate_url(&server), &review).await;
            assert_eq!(answer.version, http.version());
            let body = answer.json();
            assert_eq!(body["apiVersion"], api_version, "{body}");
            let response = answer.response();
            assert_eq!(response["uid"], uid);
            assert_eq!(response["allowed"], true, "{response}");
            // A validating webhook must never patch.
            assert!(response.get("patch").is_none(), "{response}");
            assert!(response.get("patchType").is_none(), "{response}");
            assert!(response.get("status").is_none(), "{response}");
        }
    }
}

#[tokio::test]
async fn a_captured_review_gets_an_answer_for_its_uid() {
    let server = start().await;
    let review = fixture("admission/crontab-create-v1.json");
    let answer = post_review(&client(&server, Http::H2), &validate_url(&server), &review).await;
    let response = answer.response();
    assert_eq!(response["uid"], review["request"]["uid"]);
    assert_eq!(response["allowed"], true, "{response}");
}

#[tokio::test]
async fn delete_and_connect_are_allowed_even_for_an_invalid_object() {
    let server = start().await;
    let client = client(&server, Http::H2);
    // replicas above maxReplicas: denied on CREATE by the CronTab rules.
    let invalid = crontab(
        "too-many",
        json!({"minReplicas": 0, "replicas": 20, "maxReplicas": 10}),
    );

    let delete = fixture("admission/crontab-delete-v1.json");
    let response = post_review(&client, &validate_url(&server), &delete)
        .await
        .response();
    assert_eq!(response["uid"], delete["request"]["uid"]);
    assert_eq!(response["allowed"], true, "{response}");

    let delete_with_object = admission_review(
        V1,
        "DELETE",
        CRONTAB,
        Some(invalid.clone()),
        Some(invalid.clone()),
    );
    let response = post_review(&client, &validate_url(&server), &delete_with_object)
        .await
        .response();
    assert_eq!(response["allowed"], true, "{response}");

    let connect = admission_review(V1, "CONNECT", CRONTAB, Some(invalid), None);
    let response = post_review(&client, &validate_url(&server), &connect)
        .await
        .response();
    assert_eq!(response["uid"], "test-connect-crontab");
    assert_eq!(response["allowed"], true, "{response}");
}

#[tokio::test]
async fn kinds_without_a_loaded_crd_are_allowed() {
    let server = start().await;
    let client = client(&server, Http::H2);

    let review = fixture("admission/deployment-create-v1beta1.json");
    let answer = post_review(&client, &validate_url(&server), &review).await;
    assert_eq!(answer.json()["apiVersion"], V1BETA1);
    let response = answer.response();
    assert_eq!(response["uid"], review["request"]["uid"]);
    assert_eq!(response["allowed"], true, "{response}");

    // A CronTab version no CRD serves is just as unknown.
    let object = crontab(
        "x",
        json!({"minReplicas": 5, "replicas": 1, "maxReplicas": 0}),
    );
    let review = admission_review(
        V1,
        "CREATE",
        ("stable.example.com", "v9", "CronTab"),
        Some(object),
        None,
    );
    let response = post_review(&client, &validate_url(&server), &review)
        .await
        .response();
    assert_eq!(response["allowed"], true, "{response}");
}

#[tokio::test]
async fn many_concurrent_reviews_over_http2_each_get_their_own_uid() {
    let server = start().await;
    let client = client(&server, Http::H2);
    let url = validate_url(&server);
    let requests = (0..64).map(|i| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let object = crontab(
                &format!("c{i}"),
                json!({"minReplicas": 0, "replicas": 1, "maxReplicas": 2}),
            );
            let uid = format!("uid-{i}");
            let review = with_uid(
                admission_review(V1, "CREATE", CRONTAB, Some(object), None),
                &uid,
            );
            let answer = post_review(&client, &url, &review).await;
            (uid, answer)
        }
    });
    let answers = common::join_all(requests).await;
    assert_eq!(answers.len(), 64);
    for (uid, answer) in answers {
        assert_eq!(answer.version, reqwest::Version::HTTP_2);
        assert_eq!(answer.response()["uid"], uid.as_str());
    }
}

#[tokio::test]
async fn reviews_answered_in_rounds_each_get_their_own_answer() {
    // Rounds always, so that concurrent reviews queue behind each other on
    // the one I/O thread rather than only under a saturating load.
    let config = celhook::server::ServeConfig {
        review_rounds: celhook::server::ReviewRounds::Always,
        ..celhook::server::ServeConfig::for_tests()
    };
    let server = start_with(config, common::embedded_catalog()).await;
    let url = validate_url(&server);
    let mut sent = 0;
    for http in BOTH {
        let client = client(&server, http);
        let requests = (0..48).map(|i| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                // Every third one has replicas above maxReplicas: denied.
                let replicas = if i % 3 == 0 { 20 } else { 1 };
                let object = crontab(
                    &format!("r{i}"),
                    json!({"minReplicas": 0, "replicas": replicas, "maxReplicas": 10}),
                );
                let uid = format!("round-{i}");
                let review = with_uid(
                    admission_review(V1, "CREATE", CRONTAB, Some(object), None),
                    &uid,
                );
                (i, uid, post_review(&client, &url, &review).await)
            }
        });
        for (i, uid, answer) in common::join_all(requests).await {
            assert_eq!(answer.version, http.version());
            let response = answer.response();
            assert_eq!(response["uid"], uid.as_str());
            assert_eq!(response["allowed"], i % 3 != 0, "{response}");
            if i % 3 == 0 {
                assert_eq!(response["status"]["code"], 422, "{response}");
            }
            sent += 1;
        }
    }
    let text = common::metrics_text(
        &client(&server, Http::H1),
        &common::url(&server, "/metrics"),
    )
    .await;
    assert_eq!(
        common::metric(&text, "celhook_admission_reviews_in_rounds_total", &[]),
        Some(f64::from(sent))
    );
    // Always means no saturation verdict is taken.
    assert_eq!(
        common::metric(&text, "celhook_io_saturated", &[]),
        Some(0.0)
    );
}

/// A valid review to break in one place.
fn valid() -> Value {
    fixture("admission/crontab-create-v1.json")
}

fn set(mut review: Value, pointer: &str, value: Value) -> Value {
    *review
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer} exists")) = value;
    review
}

fn remove(mut review: Value, parent: &str, key: &str) -> Value {
    review
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("{parent} is an object"))
        .remove(key);
    review
}

fn bytes(review: &Value) -> Vec<u8> {
    serde_json::to_vec(review).expect("serializes")
}

/// (case, body, words the 400 body must contain)
fn bad_inputs() -> Vec<(&'static str, Vec<u8>, Vec<&'static str>)> {
    vec![
        ("empty body", Vec::new(), vec!["empty request body"]),
        (
            "malformed JSON",
            b"{\"apiVersion\": \"admission.k8s.io/v1\",\n  \"kind\": AdmissionReview}".to_vec(),
            vec!["malformed JSON", "line 2", "column"],
        ),
        (
            "truncated JSON",
            {
                let mut body = bytes(&valid());
                body.truncate(body.len() / 2);
                body
            },
            vec!["malformed JSON", "EOF"],
        ),
        (
            "a JSON array",
            b"[1, 2, 3]".to_vec(),
            vec!["must be a JSON object"],
        ),
        (
            "no apiVersion",
            bytes(&remove(valid(), "", "apiVersion")),
            vec!["apiVersion is missing"],
        ),
        (
            "unknown review apiVersion",
            bytes(&set(valid(), "/apiVersion", json!("admission.k8s.io/v2"))),
            vec!["unsupported review apiVersion", "admission.k8s.io/v2"],
        ),
        (
            "unknown review kind",
            bytes(&set(valid(), "/kind", json!("ConversionReview"))),
            vec!["unsupported review kind", "ConversionReview"],
        ),
        (
            "no request",
            bytes(&remove(valid(), "", "request")),
            vec!["request is missing"],
        ),
        (
            "null request",
            bytes(&set(valid(), "/request", Value::Null)),
            vec!["request is missing"],
        ),
        (
            "no uid",
            bytes(&remove(valid(), "/request", "uid")),
            vec!["request.uid"],
        ),
        (
            "empty uid",
            bytes(&set(valid(), "/request/uid", json!(""))),
            vec!["request.uid"],
        ),
        (
            "uid of the wrong type",
            bytes(&set(valid(), "/request/uid", json!(12))),
            vec!["invalid type: integer `12`, expected a string"],
        ),
        (
            "no request.kind",
            bytes(&remove(valid(), "/request", "kind")),
            vec!["request.kind"],
        ),
        (
            "no operation",
            bytes(&remove(valid(), "/request", "operation")),
            vec!["request.operation is missing"],
        ),
        (
            "unknown operation",
            bytes(&set(valid(), "/request/operation", json!("PATCH"))),
            vec!["request.operation", "PATCH"],
        ),
        (
            "object is a string",
            bytes(&set(valid(), "/request/object", json!("spec: {}"))),
            vec!["request.object must be a JSON object", "a string"],
        ),
        (
            "object is an array",
            bytes(&set(valid(), "/request/object", json!([{"spec": {}}]))),
            vec!["request.object must be a JSON object", "an array"],
        ),
        (
            "oldObject is a number",
            bytes(&set(valid(), "/request/oldObject", json!(1))),
            vec!["request.oldObject must be a JSON object", "a number"],
        ),
    ]
}

#[tokio::test]
async fn every_bad_input_is_a_400_naming_the_problem() {
    let server = start().await;
    for http in BOTH {
        let client = client(&server, http);
        for (case, body, words) in bad_inputs() {
            let answer = post_raw(&client, &validate_url(&server), body).await;
            assert_eq!(
                answer.status,
                StatusCode::BAD_REQUEST,
                "{case} over {http:?}: {}",
                answer.text
            );
            assert_eq!(answer.version, http.version(), "{case}");
            assert_eq!(
                answer.content_type.as_deref(),
                Some("text/plain; charset=utf-8"),
                "{case}"
            );
            for word in words {
                assert!(
                    answer.text.contains(word),
                    "{case}: {word:?} not in {:?}",
                    answer.text
                );
            }
            // Short: a line, not a dump of the request.
            assert!(answer.text.len() < 300, "{case}: {}", answer.text);
        }
    }
}

#[tokio::test]
async fn null_or_absent_objects_are_fine() {
    let server = start().await;
    let client = client(&server, Http::H2);
    for review in [
        set(valid(), "/request/object", Value::Null),
        remove(
            remove(valid(), "/request", "object"),
            "/request",
            "oldObject",
        ),
    ] {
        let answer = post_review(&client, &validate_url(&server), &review).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        assert_eq!(answer.response()["uid"], review["request"]["uid"]);
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_and_at_the_limit_are_served() {
    let limit = 4096;
    let config = celhook::server::ServeConfig {
        max_request_bytes: limit,
        ..celhook::server::ServeConfig::for_tests()
    };
    let server = start_with(config, common::embedded_catalog()).await;

    // A valid review padded with whitespace to exactly `limit` bytes.
    let mut at_limit = bytes(&valid());
    assert!(at_limit.len() < limit);
    at_limit.resize(limit, b' ');

    for http in BOTH {
        let client = client(&server, http);

        let answer = post_raw(&client, &validate_url(&server), at_limit.clone()).await;
        assert_eq!(answer.status, StatusCode::OK, "{http:?}: {}", answer.text);

        let mut over = at_limit.clone();
        over.push(b' ');
        let answer = post_raw(&client, &validate_url(&server), over).await;
        assert_eq!(
            answer.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{http:?}: {}",
            answer.text
        );
        assert!(answer.text.contains("4096 bytes"), "{}", answer.text);
    }
}

#[tokio::test]
async fn the_default_limit_takes_a_review_of_several_megabytes() {
    let server = start().await;
    let client = client(&server, Http::H2);
    // A 3 MiB ConfigMap-like payload: well above actix's 256 KiB default.
    let big = "x".repeat(3 * 1024 * 1024);
    let object = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "default"},
        "data": {"blob": big},
    });
    let review = admission_review(V1, "CREATE", ("", "v1", "ConfigMap"), Some(object), None);
    let answer = post_review(&client, &validate_url(&server), &review).await;
    assert_eq!(answer.response()["allowed"], true);
}

#[tokio::test]
async fn only_post_is_served_on_validate() {
    let server = start().await;
    let client = client(&server, Http::H2);
    let resp = client
        .get(validate_url(&server))
        .send()
        .await
        .expect("GET /validate");
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);

    let resp = client
        .post(common::url(&server, "/mutate"))
        .body("{}")
        .send()
        .await
        .expect("POST /mutate");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

/// `serve --check-schema`: the whole schema is checked before the rules,
/// over HTTP/1.1 and HTTP/2; without the flag only the rules run, as the
/// API server has checked the schema before it calls.
#[tokio::test]
async fn the_schema_is_checked_only_when_asked() {
    let object = crontab(
        "typed",
        json!({"image": 42, "minReplicas": 0, "replicas": 1, "maxReplicas": 2}),
    );
    let review = admission_review(V1, "CREATE", CRONTAB, Some(object), None);
    let mut config = celhook::server::ServeConfig::for_tests();
    config.policy.check_schema = true;
    let checked = start_with(config, common::embedded_catalog()).await;
    let plain = start().await;
    for http in BOTH {
        let answer = post_review(&client(&checked, http), &validate_url(&checked), &review)
            .await
            .response();
        assert_eq!(answer["allowed"], false, "{answer}");
        assert_eq!(
            answer["status"]["message"],
            "CronTab.stable.example.com \"typed\" is invalid: [spec.image: Invalid value: \"integer\": spec.image in body must be of type string: \"integer\", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
        );
        assert_eq!(
            answer["status"]["details"]["causes"][0]["reason"],
            "FieldValueTypeInvalid"
        );
        let answer = post_review(&client(&plain, http), &validate_url(&plain), &review)
            .await
            .response();
        assert_eq!(answer["allowed"], true, "{answer}");
    }
}
