use super::*;

#[test]
fn objects_keep_keys_sorted_and_the_last_of_repeats() {
    let mut map = Map::new();
    assert_eq!(map.insert("b", Value::from(1)), None);
    assert_eq!(map.insert("a", Value::from(2)), None);
    assert_eq!(map.insert("c", Value::from(3)), None);
    assert_eq!(map.insert("b", Value::from(4)), Some(Value::from(1)));
    assert_eq!(
        map.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert_eq!(map.get("b"), Some(&Value::from(4)));
    assert_eq!(map.remove("a"), Some(Value::from(2)));
    assert!(!map.contains_key("a"));
    let map: Map = [
        ("z", Value::from(1)),
        ("y", Value::from(2)),
        ("z", Value::from(3)),
    ]
    .into_iter()
    .collect();
    assert_eq!(Value::Object(map).to_string(), r#"{"y":2,"z":3}"#);
    // Past the linear scan's size, lookups search.
    let big: Map = (0..40)
        .rev()
        .map(|i| (format!("k{i:02}"), Value::from(i)))
        .collect();
    assert!((0..40).all(|i| big.get(&format!("k{i:02}")) == Some(&Value::from(i))));
    assert_eq!(big.get("k40"), None);
}

#[test]
fn a_union_meets_every_key_of_either_map_once_in_order() {
    let map = |pairs: &[(&str, i64)]| -> Map {
        pairs.iter().map(|(k, v)| (*k, Value::from(*v))).collect()
    };
    let (a, b) = (
        map(&[("a", 1), ("c", 3), ("d", 4)]),
        map(&[("b", 2), ("c", 5), ("e", 6)]),
    );
    let union: Vec<_> = a
        .union(&b)
        .map(|(k, x, y)| (k, x.and_then(Value::as_i64), y.and_then(Value::as_i64)))
        .collect();
    assert_eq!(
        union,
        [
            ("a", Some(1), None),
            ("b", None, Some(2)),
            ("c", Some(3), Some(5)),
            ("d", Some(4), None),
            ("e", None, Some(6)),
        ]
    );
    assert_eq!(Map::new().union(&a).count(), 3);
    assert_eq!(a.union(&Map::new()).count(), 3);
}

#[test]
fn values_convert_both_ways_with_serde_json() {
    let theirs = serde_json::json!({"b": [1, -2, 3.5, "x", null, true], "a": {"c": {}}});
    let ours = Value::from(&theirs);
    assert_eq!(ours, theirs);
    assert_eq!(serde_json::Value::from(&ours), theirs);
    assert_eq!(ours.to_string(), theirs.to_string());
    assert_eq!(format!("{ours:#}"), format!("{theirs:#}"));
    assert_eq!(
        json!({"b": [1, -2, 3.5, "x", null, true], "a": {"c": {}}}),
        ours
    );
}

#[test]
fn accessors_and_indexing_read_as_serde_json_does() {
    let mut v = json!({"a": {"b": [10, "x"]}, "n": 1.5});
    assert_eq!(v["a"]["b"][0], Value::from(10));
    assert_eq!(v["a"]["missing"], Value::Null);
    assert_eq!(v["a"]["b"][7], Value::Null);
    assert_eq!(v.pointer("/a/b/1").and_then(Value::as_str), Some("x"));
    assert_eq!(v.pointer("/a/b/01"), None);
    assert_eq!(v["n"].as_f64(), Some(1.5));
    v["new"]["deep"] = Value::from(true);
    assert_eq!(v["new"], json!({"deep": true}));
    assert_eq!(v.get("n").map(Value::kind_with_article), Some("a number"));
}

#[test]
fn yaml_and_other_serde_sources_read_into_the_tree() {
    let v: Value = serde_json::from_str(r#"{"b":1,"a":[true],"b":2}"#).expect("JSON");
    assert_eq!(v.to_string(), r#"{"a":[true],"b":2}"#);
}

#[test]
fn keys_compare_alike_at_every_length() {
    let keys: Vec<String> = (0..40)
        .map(|n| "abcdefghijklmnopqrstuvwxyz0123456789ABCD"[..n].to_owned())
        .collect();
    for a in &keys {
        for b in &keys {
            assert_eq!(same_key(a, b), a == b, "{a:?} {b:?}");
            let mut c = b.clone().into_bytes();
            for i in 0..c.len() {
                c[i] ^= 1;
                let c = String::from_utf8(c.clone()).expect("ASCII");
                assert_eq!(same_key(a, &c), *a == c, "{a:?} {c:?}");
            }
        }
    }
    let map: Map = [("a", Value::from(1)), ("b", Value::from(2))]
        .into_iter()
        .collect();
    assert_eq!(map.get_hinted("b", 1), Some(&Value::from(2)));
    assert_eq!(map.get_hinted("b", 0), Some(&Value::from(2)));
    assert_eq!(map.get_hinted("b", 9), Some(&Value::from(2)));
    assert_eq!(map.get_hinted("c", 1), None);
}

#[test]
fn key_order_is_the_bytewise_order() {
    // Shared first bytes, prefixes inside and past the first eight bytes,
    // NUL and bytes past ASCII: the fast comparison of the first bytes
    // must order every pair as the slices do.
    let keys = [
        "",
        "a",
        "ab",
        "ab\0",
        "ab\0c",
        "abc",
        "abcdefgh",
        "abcdefghi",
        "abcdefgz",
        "abcdefghij",
        "port",
        "protocol",
        "ports",
        "p",
        "\u{e9}t\u{e9}",
        "\u{7f}",
        "z",
    ];
    for a in keys {
        for b in keys {
            assert_eq!(
                key_order(a, b),
                a.as_bytes().cmp(b.as_bytes()),
                "{a:?} {b:?}"
            );
        }
    }
}

#[test]
fn numbers_compare_with_f32_as_serde_json_does() {
    // Narrowed to f32, not the f32 widened: 0.1f32 widened is not 0.1.
    for x in [0.1, 1.5, -2.25, 1e-7] {
        let ours = json!(x);
        let theirs = serde_json::json!(x);
        assert_eq!(ours == (x as f32), theirs == (x as f32), "{x}");
    }
    assert!(json!(0.1) == 0.1f32);
    assert!(json!(0.5) != 0.25f32);
    assert!(json!("0.1") != 0.1f32);
}
