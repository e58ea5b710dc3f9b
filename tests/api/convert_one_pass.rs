//! `POST /convert` of reviews in the API server's field order, which the
//! server converts as it reads them: the same answers as the same review
//! with its keys sorted (read in two passes), a 400 for one malformed
//! after its objects while nothing was sent, and a Failure once part of
//! the answer was.

use crate::common;
use crate::convert::{review, REVIEW_V1};
use crate::convert_bodies::big_crontab;

use common::{client, post_raw, Http};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// `request` written as the API server writes it (the load generator's
/// writer): kind and apiVersion (Go's `TypeMeta`), then request with uid
/// and desiredAPIVersion before objects (serde_json would sort the keys,
/// putting uid last).
fn api_order(request: &Value) -> String {
    celhook_loadtest::workload::in_api_server_order(request).expect("the review serializes")
}

fn pizzas(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let (version, toppings) = if i % 2 == 0 {
                ("v1alpha1", json!(["mozzarella", "tomato", "tomato"]))
            } else {
                ("v1beta1", json!([{"name": "salami", "quantity": 2}]))
            };
            json!({"apiVersion": format!("restaurant.programming-kubernetes.info/{version}"),
                   "kind": "Pizza",
                   "metadata": {"name": format!("p-{i}"), "namespace": "n", "uid": format!("u-{i}")},
                   "spec": {"toppings": toppings}})
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_in_the_api_servers_order_answers_as_a_sorted_one() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H1);
    let mut late = (0..400).map(big_crontab).collect::<Vec<_>>();
    late[350]["apiVersion"] = json!("example.com/v9");
    let requests = [
        review(
            REVIEW_V1,
            "p",
            "restaurant.programming-kubernetes.info/v1beta1",
            pizzas(9),
        ),
        review(
            REVIEW_V1,
            "p",
            "restaurant.programming-kubernetes.info/v1alpha1",
            pizzas(9),
        ),
        // Streamed (past 256 KiB of answer).
        review(
            REVIEW_V1,
            "c",
            "example.com/v1",
            (0..400).map(big_crontab).collect(),
        ),
        // A Failure, early and late in a streamed answer.
        review(
            REVIEW_V1,
            "f",
            "example.com/v9",
            (0..3).map(big_crontab).collect(),
        ),
        review(REVIEW_V1, "l", "example.com/v1", late),
    ];
    for request in &requests {
        let sorted = post_raw(&client, &url, serde_json::to_vec(request).expect("json")).await;
        let ordered = post_raw(&client, &url, api_order(request)).await;
        assert_eq!(sorted.status, StatusCode::OK, "{}", sorted.text);
        assert_eq!(ordered.status, StatusCode::OK, "{}", ordered.text);
        assert_eq!(
            ordered.json(),
            sorted.json(),
            "{}",
            request["request"]["uid"]
        );
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_malformed_after_its_objects_is_400_unless_its_answer_was_on_its_way() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let h1 = client(&server, Http::H1);
    let small = api_order(&review(
        REVIEW_V1,
        "s",
        "example.com/v1",
        (0..3).map(big_crontab).collect(),
    ));
    let duplicate = small.replacen("]}}", r#"],"uid":"again"}}"#, 1);
    let not_an_object = small.replacen("]}}", r#",7]}}"#, 1);
    for (body, want) in [
        (format!("{small}x"), "trailing characters"),
        (duplicate, "duplicate field `uid`"),
        (not_an_object, "request.objects[3]"),
    ] {
        let answer = post_raw(&h1, &url, body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.text);
        assert!(answer.text.contains(want), "{} lacks {want}", answer.text);
    }
    // Past 256 KiB of answer, the answer is on its way when the end of the
    // body is read: it ends as a Failure that says what is wrong.
    let large = api_order(&review(
        REVIEW_V1,
        "l",
        "example.com/v1",
        (0..400).map(big_crontab).collect(),
    ));
    for http in common::BOTH {
        let client = client(&server, http);
        let answer = post_raw(&client, &url, format!("{large}x")).await;
        assert_eq!(answer.status, StatusCode::OK, "{http:?}: {}", answer.text);
        let answer = answer.json();
        assert_eq!(answer["response"]["uid"], "l");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        let message = answer["response"]["result"]["message"]
            .as_str()
            .expect("message");
        assert!(
            message.starts_with("the review is malformed: ")
                && message.contains("trailing characters"),
            "{message}"
        );
        // The connection goes on with whole answers.
        let next = post_raw(&client, &url, small.clone()).await;
        assert_eq!(next.status, StatusCode::OK, "{}", next.text);
        assert_eq!(next.json()["response"]["result"]["status"], "Success");
    }
    server.stop().await.expect("stops");
}
