//! The tape against the tree: every read agrees with the tree built from
//! the same text. (Parsing itself, errors included, is checked against the
//! tree in `parse/tests.rs`, which builds both for every text.)

use proptest::prelude::*;

use crate::tape::{Kind, NodeRef};
use crate::{from_str, tape_from_str, Value};

/// Checks every read of `node` against `v`, all the way down.
fn reads_alike(node: NodeRef<'_>, v: &Value) {
    assert_eq!(node.is_null(), v.is_null());
    assert_eq!(node.as_bool(), v.as_bool());
    assert_eq!(node.as_i64(), v.as_i64());
    assert_eq!(node.as_u64(), v.as_u64());
    assert_eq!(
        node.as_f64().map(f64::to_bits),
        v.as_f64().map(f64::to_bits)
    );
    assert_eq!(node.as_str(), v.as_str());
    match v {
        Value::Null => assert_eq!(node.kind(), Kind::Null),
        Value::Bool(_) => assert_eq!(node.kind(), Kind::Bool),
        Value::Number(n) => {
            assert_eq!(node.kind(), Kind::Number);
            assert_eq!(node.as_number().as_ref(), Some(n));
        }
        Value::String(_) => assert_eq!(node.kind(), Kind::String),
        Value::Array(_) | Value::Table(_) => {
            let items = v.as_array().expect("an array");
            let a = node.as_array().expect("an array");
            assert_eq!(a.len(), items.len());
            assert_eq!(a.iter().len(), items.len());
            for (i, item) in items.iter().enumerate() {
                reads_alike(a.get(i).expect("in range"), item);
            }
            assert!(a.get(items.len()).is_none());
        }
        Value::Object(m) => {
            let o = node.as_object().expect("an object");
            assert_eq!(o.len(), m.len());
            for (i, (k, item)) in m.iter().enumerate() {
                assert_eq!(o.position(k), m.position(k));
                let (key, value) = o.get_index(i).expect("in range");
                assert_eq!(key, k.as_str());
                reads_alike(value, item);
                reads_alike(o.get(k).expect("present"), item);
                // A right hint, a wrong one and one out of range.
                for hint in [i, i + 1, m.len() + 3] {
                    reads_alike(o.get_hinted(k, hint).expect("present"), item);
                }
            }
            for absent in ["", "zz", "a\u{0}"] {
                assert_eq!(o.get(absent).is_none(), m.get(absent).is_none());
            }
        }
    }
}

#[test]
fn repeated_and_unsorted_keys_read_as_the_tree_does() {
    for text in [
        r#"{"b":1,"a":2,"b":3}"#,
        r#"{"a":1,"a":2,"a":{"x":[1,2]}}"#,
        r#"{"k":0,"j":1,"i":2,"h":3,"g":4,"f":5,"e":6,"d":7,"c":8,"b":9,"a":10}"#,
        r#"{"\u0062":1,"a":2,"b":3}"#,
        r#"{"port":80,"protocol":"TCP","name":"http","port":81}"#,
        r#"[{"b":{"d":1,"c":2}},{"a":[{"z":0,"y":[]}]}]"#,
        r#"{"":null,"é":"\ud83d\ude00","\n":"\\"}"#,
        r#"[{"":null,"":false}]"#,
    ] {
        let tree = from_str(text).expect("valid");
        let tape = tape_from_str(text).expect("valid");
        reads_alike(tape.root(), &tree);
    }
}

#[test]
fn numbers_keep_their_representation() {
    let tape = tape_from_str("[1,1.0,-0,-0.0,-1,18446744073709551615,0.5]").expect("valid");
    let a = tape.root().as_array().expect("an array");
    let n = |i| a.get(i).expect("in range");
    // `1` and `1.0` differ, as serde_json's numbers do; `-0` and `-0.0`
    // are the same float to it.
    assert!(!n(0).equals(n(1)));
    assert!(n(2).equals(n(3)));
    assert_eq!(n(4).as_i64(), Some(-1));
    assert_eq!(n(5).as_u64(), Some(u64::MAX));
    assert_eq!(n(5).as_i64(), None);
    assert_eq!(n(6).as_f64(), Some(0.5));
    assert_eq!(n(6).as_i64(), None);
}

/// Arbitrary JSON texts with repeated and unsorted keys (which a
/// `serde_json::Value` cannot hold), escapes in keys and strings, and
/// every kind of number.
fn json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|u| u.to_string()),
        any::<f64>().prop_map(|f| serde_json::to_string(&f).expect("JSON")),
        prop::sample::select(vec!["-0", "1.0", "1e2", "-0.0", "2.5e-3"]).prop_map(str::to_owned),
        "[a-c\\\\\"\u{0}-\u{1f}é😀]{0,6}".prop_map(|s| serde_json::to_string(&s).expect("JSON")),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec(("[a-c\\\\\"é]{0,2}", inner), 0..7).prop_map(|kv| {
                let entries: Vec<String> = kv
                    .into_iter()
                    .map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).expect("JSON")))
                    .collect();
                format!("{{{}}}", entries.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_read_agrees_with_the_tree(text in json_text()) {
        let tree = from_str(&text).expect("valid");
        let tape = tape_from_str(text.as_str()).expect("valid");
        prop_assert!(tape.root().to_value() == tree, "{}", text);
        reads_alike(tape.root(), &tree);
    }

    /// The same value written differently (keys sorted and deduplicated,
    /// escapes as the writer makes them) is equal; so are both to the tree.
    #[test]
    fn a_value_rewritten_is_equal(text in json_text()) {
        let tree = from_str(&text).expect("valid");
        let rewritten = String::from_utf8(crate::to_vec(&tree)).expect("UTF-8");
        let (a, b) = (tape_from_str(text.as_str()).expect("valid"), tape_from_str(rewritten.as_str()).expect("valid"));
        prop_assert!(a.root().equals(b.root()), "{} vs {}", text, rewritten);
        prop_assert!(b.root().equals(a.root()));
        prop_assert!(a.root().equals_value(&tree));
    }

    #[test]
    fn equality_is_the_tree_s(a in json_text(), b in json_text()) {
        let (ta, tb) = (from_str(&a).expect("valid"), from_str(&b).expect("valid"));
        let (pa, pb) = (tape_from_str(a.as_str()).expect("valid"), tape_from_str(b.as_str()).expect("valid"));
        prop_assert_eq!(pa.root().equals(pb.root()), ta == tb);
        prop_assert_eq!(pa.root().equals_value(&tb), ta == tb);
        prop_assert!(pa.root().equals(pa.root()));
    }
}

#[test]
fn a_builder_reused_after_a_failed_build_holds_only_the_next_value() {
    let mut b = crate::TapeBuilder::default();
    let mut p = crate::Parser::new(r#"{"a":[1,2,{"b":"#);
    assert!(p.tape(&mut b).is_err());
    let text: std::sync::Arc<str> = std::sync::Arc::from("[true]");
    let mut p = crate::Parser::new(&text);
    let root = p.tape(&mut b).expect("valid");
    let tape = b.finish(text.clone(), root);
    assert_eq!(tape.node_count(), 2);
    reads_alike(tape.root(), &from_str(&text).expect("valid"));
}
