//! The parser against serde_json: the same values for the same texts, an
//! error where serde_json errs (of the same category, with the same
//! message where both name the same fault), on hand-picked texts and on
//! generated ones.

use proptest::prelude::*;

use super::*;

/// Parses `text` both ways and checks they agree.
fn agree(text: &str) {
    let ours = from_str(text);
    let theirs = serde_json::from_str::<serde_json::Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert!(a == b, "{text:?}: {a} vs {b}"),
        (Err(a), Err(b)) => {
            let same_kind = match b.classify() {
                serde_json::error::Category::Eof => a.category() == Category::Eof,
                _ => a.category() != Category::Eof,
            };
            assert!(same_kind, "{text:?}: {a} vs {b}");
        }
        _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
    }
    // The tape takes what the tree takes, fails as it fails, and reads as
    // the tree does.
    let tape = tape_from_str(text);
    match (&tape, &ours) {
        (Ok(t), Ok(v)) => {
            assert!(t.root().to_value() == *v, "{text:?}: tape {:?}", t.root());
            assert!(t.root().equals_value(v), "{text:?}");
            assert!(t.root().equals(t.root()), "{text:?}");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
        _ => panic!(
            "{text:?}: tape {:?}, tree {ours:?}",
            tape.as_ref().map(|t| t.root())
        ),
    }
    // Skipping accepts what building accepts, but for nesting.
    let mut p = Parser::new(text);
    let skipped = p.skip().and_then(|()| p.end());
    match (&skipped, &ours) {
        (Ok(()), Err(e)) if e.message() == "recursion limit exceeded" => {}
        _ => assert_eq!(skipped.is_ok(), ours.is_ok(), "{text:?}: skip {skipped:?}"),
    }
}

#[test]
fn hand_picked_texts_parse_as_serde_json_parses_them() {
    for text in [
        "0",
        "-0",
        "-0.0",
        "1",
        "-1",
        "1.0",
        "1.5e3",
        "1E2",
        "1e-2",
        "1e+2",
        "2.5e-324",
        "1e400",
        "-1e400",
        "1e-400",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "01",
        "-01",
        "1.",
        "-",
        "+1",
        ".5",
        "1e",
        "1e+",
        "0x10",
        "1.7976931348623157e308",
        "1.7976931348623157e309",
        "true",
        "false",
        "null",
        "tru",
        "nul",
        "nulll",
        "truex",
        "\"\"",
        "\"abc\"",
        "\"a\\\"b\"",
        "\"\\\\\"",
        "\"\\/\"",
        "\"\\b\\f\\n\\r\\t\"",
        "\"\\u0041\"",
        "\"\\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud800\"",
        "\"\\ud800\\u0041\"",
        "\"\\udc00\"",
        "\"\\ud800x\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"abc",
        "\"a\u{1}b\"",
        "\"a\tb\"",
        "\"é\u{2028}\"",
        "\"0123456789abcdef\\n0123456789\"",
        "[]",
        "[1]",
        "[1,2]",
        "[1,]",
        "[,1]",
        "[1 2]",
        "[",
        "[1",
        "{}",
        "{\"a\":1}",
        "{\"a\":1,\"b\":2}",
        "{\"b\":1,\"a\":2}",
        "{\"a\":1,\"a\":2}",
        "{\"b\":1,\"a\":2,\"b\":3}",
        "{\"a\":1,}",
        "{,}",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":1 \"b\":2}",
        "{",
        "{\"a\"",
        "{\"a\":",
        "{\"a\":1",
        " \n\t\r 1 \n",
        "1 x",
        "1 2",
        "",
        " ",
        "\u{feff}1",
        "{\"a\":[{\"b\":null},{\"c\":[true,false]}]}",
        "{\"\":0,\"a\\u0000\":1}",
        "[\"\\u0000\"]",
    ] {
        agree(text);
    }
}

#[test]
fn nesting_is_limited_as_serde_json_limits_it() {
    for depth in [126, 127, 128, 129, 500] {
        agree(&("[".repeat(depth) + &"]".repeat(depth)));
        agree(&("{\"a\":".repeat(depth) + "1" + &"}".repeat(depth)));
    }
    let deep = "[".repeat(200) + &"]".repeat(200);
    let err = from_str(&deep).expect_err("too deep");
    assert_eq!(err.message(), "recursion limit exceeded");
    // Skipping builds nothing and has no limit: 100,000 levels pass, and
    // damage at the bottom is still found.
    let deep = "[{\"a\":".repeat(50_000) + "1" + &"}]".repeat(50_000);
    let mut p = Parser::new(&deep);
    p.skip().expect("skipped");
    p.end().expect("all of it");
    let broken = "[{\"a\":".repeat(50_000) + "1e400" + &"}]".repeat(50_000);
    assert_eq!(
        Parser::new(&broken)
            .skip()
            .expect_err("out of range")
            .message(),
        "number out of range"
    );
}

#[test]
fn errors_carry_serde_json_messages_and_positions() {
    for (text, message) in [
        ("1 x", "trailing characters at line 1 column 3"),
        ("01", "invalid number at line 1 column 2"),
        ("[1,]", "trailing comma at line 1 column 4"),
        ("{\"a\":1,}", "trailing comma at line 1 column 8"),
        ("{1:2}", "key must be a string at line 1 column 2"),
        ("\"abc", "EOF while parsing a string at line 1 column 4"),
        ("{\"a\"", "EOF while parsing an object at line 1 column 4"),
        ("[", "EOF while parsing a list at line 1 column 1"),
        ("\n\n  x", "expected value at line 3 column 3"),
        ("1e400", "number out of range at line 1 column 5"),
        ("\"\\x\"", "invalid escape at line 1 column 3"),
        (
            "\"\\ud800\\u0041\"",
            "lone leading surrogate in hex escape at line 1 column 13",
        ),
        // A `\u` escape's four bytes are read before they are judged, and
        // so is the byte after a leading surrogate that does not go on to
        // its trailing one.
        ("\"\\u0}61\"", "invalid escape at line 1 column 7"),
        ("\"\\u00\\00\"", "invalid escape at line 1 column 7"),
        ("\"\\uZZZZ\"", "invalid escape at line 1 column 7"),
        (
            "\"\\udc00\"",
            "lone leading surrogate in hex escape at line 1 column 7",
        ),
        (
            "\"\\ud83d\\\u{e9}ude00\"",
            "unexpected end of hex escape at line 1 column 9",
        ),
        (
            "\"\\ud83d\"",
            "unexpected end of hex escape at line 1 column 8",
        ),
        (
            "\"\\ud83dx\"",
            "unexpected end of hex escape at line 1 column 8",
        ),
        (
            "\"\\ud83d\\x\"",
            "unexpected end of hex escape at line 1 column 9",
        ),
        (
            "\"\\ud83d\\u00\"",
            "EOF while parsing a string at line 1 column 12",
        ),
        (
            "\"\\ud83d\\",
            "EOF while parsing a string at line 1 column 8",
        ),
        ("\"\\ud83d", "EOF while parsing a string at line 1 column 7"),
        (
            "[\"\\ud83d\\uDBFF\"]",
            "lone leading surrogate in hex escape at line 1 column 14",
        ),
        (
            "\"a\u{1}\"",
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 3",
        ),
    ] {
        let err = from_str(text).expect_err(text);
        assert_eq!(err.to_string(), message, "{text:?}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text)
                .expect_err(text)
                .to_string(),
            message,
            "serde_json, {text:?}"
        );
    }
}

#[test]
fn bytes_that_are_not_utf8_are_refused_with_their_position() {
    let err = from_slice(b"[\"ab\xff\"]").expect_err("not UTF-8");
    assert_eq!(
        err.to_string(),
        "invalid unicode code point at line 1 column 5"
    );
}

#[test]
fn type_errors_name_the_value_as_serde_does() {
    for (text, found) in [
        ("42", "integer `42`"),
        ("-4", "integer `-4`"),
        ("1.5", "floating point `1.5`"),
        ("2.0", "floating point `2.0`"),
        ("[1]", "sequence"),
        ("{}", "map"),
        ("true", "boolean `true`"),
        ("null", "null"),
    ] {
        let mut p = Parser::new(text);
        let err = p.string("a string").expect_err(text);
        assert_eq!(
            err.message(),
            format!("invalid type: {found}, expected a string")
        );
        assert!(err.is_data());
    }
    let mut p = Parser::new("\"x\"");
    assert_eq!(
        p.boolean("a boolean").expect_err("a string").message(),
        "invalid type: string \"x\", expected a boolean"
    );
}

#[test]
fn objects_are_walked_key_by_key() {
    let text = r#" { "b" : [1, {"x": "y"}], "a\u0062c": "d", "c": {} } "#;
    let mut p = Parser::new(text);
    p.begin_object("an object").expect("object");
    let mut first = true;
    let mut seen = Vec::new();
    while let Some(key) = p.next_key(&mut first).expect("key") {
        match &*key {
            "b" => assert_eq!(p.raw().expect("raw"), "[1, {\"x\": \"y\"}]"),
            "abc" => assert_eq!(p.string("a string").expect("string"), "d"),
            _ => p.skip().expect("skip"),
        }
        seen.push(key.into_owned());
    }
    p.end().expect("end");
    assert_eq!(seen, ["b", "abc", "c"]);
    let mut p = Parser::new("[1,[2],3]");
    p.begin_array("an array").expect("array");
    let mut first = true;
    let mut n = 0;
    while p.next_element(&mut first).expect("element") {
        p.skip().expect("skip");
        n += 1;
    }
    assert_eq!(n, 3);
}

/// Arbitrary JSON values, serde_json's own.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::String),
        "[a-c\\\\\"\u{0}-\u{1f}é😀]{0,6}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::vec(("[a-e]{0,3}", inner), 0..6)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn written_values_parse_back_alike(v in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&v).expect("JSON")
        } else {
            serde_json::to_string(&v).expect("JSON")
        };
        let ours = from_str(&text).expect("our parse");
        prop_assert!(ours == v, "{}", text);
        // Written back, the same bytes.
        prop_assert_eq!(serde_json::to_string(&ours).expect("JSON"), serde_json::to_string(&v).expect("JSON"));
    }

    /// The vector UTF-8 check accepts what the standard library's accepts
    /// and reports the same place otherwise: valid text of any length, one
    /// byte of it replaced (often making it invalid) anywhere.
    #[test]
    fn the_utf8_check_is_the_standard_one(text in "\\PC{0,200}", at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = format!("\"{text}\"").into_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let ours = Parser::from_slice(&bytes).map(|_| ()).map_err(|e| e.to_string());
        let std = std::str::from_utf8(&bytes)
            .map(drop)
            .map_err(|e| Error::at(&bytes, e.valid_up_to() + 1, "invalid unicode code point", Category::Syntax).to_string());
        prop_assert_eq!(ours, std);
    }

    #[test]
    fn any_text_is_judged_alike(text in "[\\[\\]{}\",:0-9eE.+\\-a-z\\\\ \n]{0,24}") {
        agree(&text);
    }

    #[test]
    fn damaged_texts_are_judged_alike(v in json_value(), cut in any::<prop::sample::Index>(), byte in prop::sample::select(&b"[]{}\",:0-9-.e \\"[..])) {
        agree_with_a_byte_inserted(&serde_json::to_string(&v).expect("JSON"), cut, byte);
    }
}

/// [`agree`] on `text` with `byte` inserted at `cut`, when that is still
/// UTF-8.
fn agree_with_a_byte_inserted(text: &str, cut: prop::sample::Index, byte: u8) {
    let mut damaged = text.as_bytes().to_vec();
    damaged.insert(cut.index(damaged.len() + 1), byte);
    if let Ok(damaged) = String::from_utf8(damaged) {
        agree(&damaged);
    }
}

#[test]
fn long_strings_are_judged_alike_wherever_the_special_byte_is() {
    // Quotes, escapes and control characters at every position of strings
    // long enough for each stage of the scan (first word, more words, the
    // vector search and its 64-byte control check).
    for len in [
        0, 1, 7, 8, 9, 15, 16, 17, 40, 47, 48, 49, 63, 64, 65, 130, 300, 500, 1001,
    ] {
        for at in (0..len).step_by(1 + len / 40) {
            for special in ["\\\"", "\\\\", "\\n", "\u{1}", "\u{1f}", "é"] {
                let mut s = "x".repeat(len);
                s.replace_range(at..at + 1, special);
                agree(&format!("\"{s}\""));
                agree(&format!("[\"{s}\",1]"));
            }
        }
    }
}

#[test]
fn skipped_numbers_and_strings_fail_where_built_ones_fail() {
    let long = format!("[{}]", "9".repeat(400));
    let long_ok = format!("[{}]", "9".repeat(300));
    for text in [
        "[-]",
        "[01]",
        "[-01]",
        "[1.]",
        "[1e]",
        "[1e+]",
        "[-a]",
        "[0x1]",
        "[1.5e400]",
        "[1e400]",
        "[-",
        "[12",
        "[\"ab",
        "[\"a\\q\"]",
        "[\"a\u{1}\"]",
        "[\"0123456789abcdef\u{1}\"]",
        "[\"0123456789abcdef0123\\u00\"]",
        &long,
        &long_ok,
        "[0,-0,12345678901234567890,-9]",
    ] {
        let built = from_str(text).map(drop).map_err(|e| e.to_string());
        let mut p = Parser::new(text);
        let skipped = p.skip().and_then(|()| p.end()).map_err(|e| e.to_string());
        assert_eq!(skipped, built, "{text:?}");
    }
}

#[test]
fn integers_read_fast_are_the_integers_serde_json_reads() {
    let nines = "9".repeat(18);
    let more = "9".repeat(19);
    let big = "1".repeat(21);
    for text in [
        "0",
        "7",
        "10",
        "123456789012345678",
        &nines,
        &more,
        "18446744073709551615",
        "18446744073709551616",
        &big,
        "-1",
        "-0",
        "01",
        "1.0",
        "12e1",
        "[3,45,678]",
    ] {
        agree(text);
        let ours = from_str(text).map_err(|e| e.to_string());
        let theirs = serde_json::from_str::<serde_json::Value>(text).map(|v| v.to_string());
        if let (Ok(a), Ok(b)) = (&ours, &theirs) {
            assert_eq!(a.to_string(), *b, "{text:?}");
        }
    }
}

/// Integers agree with serde_json for every length, a leading zero, what
/// follows them and how many bytes are left after them.
#[test]
fn integers_of_every_length_and_end_are_serde_json_s() {
    let digits = "9876543210987654321";
    let mut numbers: Vec<String> = (1..=12).map(|n| digits[..n].to_string()).collect();
    numbers.extend(
        [
            "0", "00", "05", "0000000", "10", "1000000", "9999999", "12345678",
        ]
        .map(String::from),
    );
    for number in &numbers {
        for after in [
            "]", ",1]", " ]", "\n]", ".5]", "e2]", "E2]", "x]", "-1]", "\"a\"]",
        ] {
            for pad in 0..10 {
                let text = format!("[{number}{after}{}", " ".repeat(pad));
                agree(&text);
            }
        }
    }
}

/// Objects of one array share the keys spelled as the first object's
/// (`object_shaped`): keys that match it, differ, come in another order
/// (the first object's sorted or not), number more or fewer, need
/// escapes, or only look alike before the closing quote.
#[test]
fn array_objects_sharing_keys_parse_as_serde_json_parses_them() {
    for text in [
        r#"[{"a":1,"b":2},{"a":3,"b":4},{"a":5,"b":6}]"#,
        r#"[{"a":1,"b":2},{"b":3,"a":4}]"#,
        r#"[{"a":1},{"ab":2},{"a":3,"c":4}]"#,
        r#"[{"ab":1},{"a":2},{"abc":3}]"#,
        r#"[{"a":1,"a":2},{"a":3,"a":4}]"#,
        r#"[{"a":1,"b":2},{"a":3,"a":4},{"a":5,"b":6,"b":7}]"#,
        r#"[{"a":1,"b":2},{"b":3,"b":4},{"a":5,"b":6,"a":7}]"#,
        r#"[{"b":1,"a":2},{"b":3,"a":4}]"#,
        r#"[{"b":1,"a":2},{"b":3,"b":4},{"b":5,"a":6,"a":7},{"a":8,"b":9}]"#,
        r#"[{"name":"http","containerPort":80},{"name":"https","containerPort":443}]"#,
        r#"[{"a":1,"b":2},{"a":3,"b":4,"c":5},{"a":6}]"#,
        r#"[1,{"a":1},"x",{"a":2},{}]"#,
        r#"[{},{"a":1}]"#,
        r#"[{"a":{"a":1,"b":2}},{"a":{"b":3}}]"#,
        r#"[[{"a":1}],[{"a":2}],{"a":3}]"#,
        r#"[{"a\"b":1},{"a\"b":2}]"#,
        r#"[{"a\"b":1},{"a"b":2}]"#,
        r#"[{"a\\b":1},{"a\b":2}]"#,
        r#"[{"a\u0062":1},{"ab":2}]"#,
        r#"[{"ab":1},{"a\u0062":2}]"#,
        r#"[{"a\u0001":1},{"a\u0001":2}]"#,
        r#"[{"q\"":1,"r":2},{"q\"":3,"r":4}]"#,
        r#"[{"é":1},{"é":2}]"#,
        r#"[{"ab":1},{"ab"#,
        r#"[{"ab":1},{"ab:1}]"#,
        r#"[{"ab":1},{"abc"}]"#,
    ] {
        agree(text);
    }
}

/// Lists of objects whose keys come from a few names, some of which need
/// escapes: the shared keys are found often, and where they differ.
fn objects_of_few_keys() -> impl Strategy<Value = serde_json::Value> {
    let key = prop::sample::select(vec!["a", "b", "ab", "a\"b", "a\\b", "é", "\u{1}", ""]);
    let object = prop::collection::vec((key, any::<i8>()), 0..4).prop_map(|kv| {
        serde_json::Value::Object(
            kv.into_iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(v)))
                .collect(),
        )
    });
    prop::collection::vec(object, 0..6).prop_map(serde_json::Value::Array)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn lists_of_objects_parse_back_alike(v in objects_of_few_keys(), cut in any::<prop::sample::Index>(), byte in prop::sample::select(&b"[]{}\",:a\\ "[..])) {
        let text = serde_json::to_string(&v).expect("JSON");
        prop_assert!(from_str(&text).expect("our parse") == v, "{}", text);
        agree(&text);
        agree_with_a_byte_inserted(&text, cut, byte);
    }
}

/// A wide first object does not make the small objects after it keep
/// room for its keys: a list of `{}` after one would otherwise take
/// memory many times its text.
#[test]
fn objects_after_a_wide_one_keep_only_their_own_room() {
    let wide: Vec<String> = (0..100).map(|i| format!("\"k{i:03}\":0")).collect();
    let text = format!(
        "[{{{}}},{{}},{{\"k000\":1}},{{\"k000\":1,\"k001\":2,\"x\":3}},{{{}}}]",
        wide.join(","),
        wide.join(",")
    );
    agree(&text);
    let Ok(Value::Array(items)) = from_str(&text) else {
        panic!("a list");
    };
    let rooms: Vec<(usize, usize)> = items
        .iter()
        .map(|item| match item {
            Value::Object(m) => (m.len(), m.capacity()),
            _ => panic!("an object"),
        })
        .collect();
    assert_eq!(rooms, [(100, 100), (0, 0), (1, 1), (3, 3), (100, 100)]);
}
