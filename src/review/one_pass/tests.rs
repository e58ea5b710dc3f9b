//! One pass against two: whatever one pass accepts, two passes accept with
//! the same objects; what it gives up on, two passes answer.

use super::*;
use crate::review::decode_conversion;

/// A review in the API server's order (Go's: `kind` before `apiVersion`)
/// around `objects` (JSON text), with
/// `request_tail` and `review_tail` after them (each starting with a comma
/// when not empty).
fn review(objects: &str, request_tail: &str, review_tail: &str) -> String {
    format!(
        r#"{{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{{"uid":"u-1","desiredAPIVersion":"example.com/v1","objects":{objects}{request_tail}}}{review_tail}}}"#
    )
}

/// `body` with its head written `apiVersion` first.
fn api_version_first(body: &str) -> String {
    body.replacen(
        r#""kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1""#,
        r#""apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview""#,
        1,
    )
}

const TWO: &str = r#"[{"apiVersion":"example.com/v1beta1","kind":"CronTab","metadata":{"name":"a"}},{"kind":"CronTab","x":[1,{"y":null}]}]"#;

/// One pass over `body`: the objects it gave, and what `finish` said.
fn one_pass(body: &str) -> Option<(Vec<Json>, Option<usize>)> {
    let mut one = OnePass::start(body.as_bytes())?;
    assert_eq!(one.uid(), "u-1");
    assert_eq!(one.desired_api_version(), "example.com/v1");
    let objects: Vec<Json> = (&mut one).map(|o| o.expect("no error item")).collect();
    Some((objects, one.finish()))
}

/// What two passes make of `body`: the objects, or the error's text.
fn two_passes(body: &str) -> Result<Vec<Json>, String> {
    let (_, req) = decode_conversion(body.as_bytes()).map_err(|e| e.to_string())?;
    req.parsed_objects().collect()
}

#[track_caller]
fn agrees(body: &str) -> &'static str {
    let two = two_passes(body);
    match one_pass(body) {
        None => "not started",
        Some((objects, Some(n))) => {
            let two =
                two.unwrap_or_else(|e| panic!("one pass accepted what two refuse ({e}): {body}"));
            assert_eq!(objects, two, "{body}");
            assert_eq!(n, two.len());
            "accepted"
        }
        Some((_, None)) => "given up",
    }
}

#[test]
fn a_review_in_the_api_servers_order_is_read_in_one_pass() {
    for (objects, request_tail, review_tail) in [
        (TWO, "", ""),
        ("[]", "", ""),
        (TWO, r#","other":{"a":[1,2]}"#, r#","response":null,"x":1"#),
    ] {
        assert_eq!(
            agrees(&review(objects, request_tail, review_tail)),
            "accepted"
        );
    }
    // Spaced out, as a person would write it.
    let spaced = review(TWO, "", "")
        .replace(",\"", ",\n  \"")
        .replace(":{", ": {");
    assert_eq!(agrees(&spaced), "accepted");
    assert_eq!(agrees(&format!(" {spaced}\n")), "accepted");
    // apiVersion first, as serde-derived structs (kube-core's) write it.
    let api_version_first = api_version_first(&review(TWO, "", ""));
    assert_ne!(api_version_first, review(TWO, "", ""));
    assert_eq!(agrees(&api_version_first), "accepted");
    let v1beta1 = review(TWO, "", "").replace(
        "apiextensions.k8s.io/v1\"",
        "apiextensions.k8s.io/v1beta1\"",
    );
    let one = OnePass::start(v1beta1.as_bytes()).expect("starts");
    assert_eq!(one.version(), ConversionReviewVersion::V1Beta1);
}

#[test]
fn any_other_order_or_head_is_left_to_two_passes() {
    let sorted = format!(
        r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{{"desiredAPIVersion":"example.com/v1","objects":{TWO},"uid":"u-1"}}}}"#
    );
    let request_first = format!(
        r#"{{"request":{{"uid":"u-1","desiredAPIVersion":"example.com/v1","objects":{TWO}}},"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1"}}"#
    );
    let head = r#""kind":"ConversionReview","#;
    for body in [
        sorted,
        request_first,
        review(TWO, "", "").replace(head, &head.repeat(2)),
        review(TWO, "", "").replace(head, ""),
        // The same two cases with apiVersion first.
        api_version_first(&review(TWO, "", "")).replace(
            r#""kind":"ConversionReview""#,
            r#""apiVersion":"apiextensions.k8s.io/v1""#,
        ),
        api_version_first(&review(TWO, "", "")).replace(r#","kind":"ConversionReview""#, ""),
        review(TWO, "", "").replace(r#""kind":"ConversionReview""#, r#""kind":"""#),
        review(TWO, "", "").replace(r#""uid":"u-1""#, r#""uid":"""#),
        review(TWO, "", "").replace(r#""uid":"u-1""#, r#""uid":null"#),
        review(TWO, "", "").replace("ConversionReview", "AdmissionReview"),
        review(TWO, "", "").replace("apiextensions.k8s.io/v1\"", "apiextensions.k8s.io/v2\""),
        review("null", "", ""),
        review("{}", "", ""),
        "[]".to_owned(),
        String::new(),
    ] {
        assert_eq!(agrees(&body), "not started", "{body}");
    }
}

#[test]
fn a_review_broken_after_its_head_is_given_up() {
    for body in [
        review(TWO, "", "") + "x",
        review(TWO, "", "") + "}",
        review(TWO, r#","uid":"again""#, ""),
        review(TWO, r#","objects":[]"#, ""),
        review(TWO, "", r#","kind":"ConversionReview""#),
        review(TWO, "", r#","apiVersion":"apiextensions.k8s.io/v1""#),
        review(TWO, "", r#","request":null"#),
        review(r#"[{"a":1},3]"#, "", ""),
        review(r#"[{"a":1},"text"]"#, "", ""),
        review(r#"[{"a":}]"#, "", ""),
        review(r#"[{"a":1}"#, "", ""),
        review(r#"[{"a":1},]"#, "", ""),
        review(TWO, r#","other":[1,}"#, ""),
        review(TWO, "", "").trim_end_matches('}').to_owned(),
    ] {
        assert_eq!(agrees(&body), "given up", "{body}");
        assert!(two_passes(&body).is_err(), "{body}");
    }
}

#[test]
fn objects_not_read_are_still_checked_by_finish() {
    for (objects, whole) in [
        (TWO, true),
        (r#"[{"a":1},{"b":}]"#, false),
        (r#"[{"a":1},7]"#, false),
    ] {
        let body = review(objects, "", "");
        let mut one = OnePass::start(body.as_bytes()).expect("starts");
        // The conversion stopped after the first object.
        assert!(matches!(one.next(), Some(Ok(_))));
        assert_eq!(one.finish().is_some(), whole, "{body}");
        assert_eq!(two_passes(&body).is_ok(), whole, "{body}");
    }
}
