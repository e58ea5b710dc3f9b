//! Known keys matched as written, and every other key built.

use super::*;

#[test]
fn known_keys_are_matched_as_written_and_others_built() {
    // Only a key JSON writes without escapes can be known.
    for key in ["a\"b", "a\\b", "tab\there", "\u{1}"] {
        assert_eq!(PlainKey::new(key), None, "{key:?}");
    }
    let known: Vec<PlainKey> = ["abc", "rep", "é"]
        .iter()
        .map(|k| PlainKey::new(k).expect("plain"))
        .collect();
    // `"rep"` is not matched in `"replicas"`, nor `"abc"` in its escaped
    // spelling; a matched key is followed by its `:` as any other.
    let text = r#" { "abc" : 1, "replicas": 2, "a\u0062c": 3, "é":4, "rep" :5 } "#;
    let mut p = Parser::new(text);
    p.begin_object("an object").expect("object");
    let mut first = true;
    let mut seen = Vec::new();
    for expect in [&known[0], &known[1], &known[0], &known[2], &known[1]] {
        match p.next_key_known(&mut first, Some(expect)).expect("key") {
            NextKey::Known => seen.push(format!("known {}", expect.as_str())),
            NextKey::Other(key) => seen.push(format!("other {key}")),
            NextKey::End => panic!("the object ends early"),
        }
        p.skip().expect("value");
    }
    assert!(matches!(
        p.next_key_known(&mut first, Some(&known[0])),
        Ok(NextKey::End)
    ));
    p.end().expect("end");
    assert_eq!(
        seen,
        [
            "known abc",
            "other replicas",
            "other abc",
            "known é",
            "known rep"
        ]
    );
    // A known key is checked as any other: no `:`, no key, the end.
    for (text, error) in [
        (r#"{"abc" 1}"#, "expected `:` at line 1 column 8"),
        (r#"{"abc":1,}"#, "trailing comma at line 1 column 10"),
        (r#"{"abc"#, "EOF while parsing a string at line 1 column 5"),
    ] {
        let mut p = Parser::new(text);
        p.begin_object("an object").expect("object");
        let mut first = true;
        let e = loop {
            match p.next_key_known(&mut first, Some(&known[0])) {
                Ok(NextKey::End) => panic!("{text}: ends without an error"),
                Ok(_) => {
                    if let Err(e) = p.skip() {
                        break e;
                    }
                }
                Err(e) => break e,
            }
        };
        assert_eq!(e.to_string(), error, "{text}");
    }
}

#[test]
fn known_keys_written_compactly_are_matched_with_their_punctuation() {
    let names = [
        "abc",
        "rep",
        "terminationGracePeriodSeconds",
        "terminationGracePeriodSecondz",
    ];
    let known: Vec<PlainKey> = names
        .iter()
        .map(|k| PlainKey::new(k).expect("plain"))
        .collect();
    // The same object compact (each known key matched with its comma,
    // quotes and colon), spaced (matched key by key), and with a long key
    // one letter off, as the first key and after another.
    let order = [&known[0], &known[1], &known[0], &known[2], &known[1]];
    let compact =
        r#"{"abc":1,"replicas":2,"a\u0062c":3,"terminationGracePeriodSeconds":4,"rep":5}"#;
    let spaced = r#"{ "abc" : 1 , "replicas" : 2 , "a\u0062c" : 3 , "terminationGracePeriodSeconds" : 4 , "rep" : 5 }"#;
    let off = r#"{"terminationGracePeriodSecondz":1,"terminationGracePeriodSecondz":2}"#;
    let read = |text: &str, order: &[&PlainKey]| {
        let mut p = Parser::new(text);
        p.begin_object("an object").expect("object");
        let mut first = true;
        let mut seen = Vec::new();
        for expect in order {
            match p.next_key_known(&mut first, Some(expect)).expect("key") {
                NextKey::Known => seen.push(format!("known {}", expect.as_str())),
                NextKey::Other(key) => seen.push(format!("other {key}")),
                NextKey::End => panic!("{text}: the object ends early"),
            }
            seen.push(format!("{:?}", p.value().expect("value")));
        }
        // The end, with a key expected there: the piece does not match
        // the `}`, and the usual reading finds the end.
        assert!(matches!(
            p.next_key_known(&mut first, order.first().copied()),
            Ok(NextKey::End)
        ));
        p.end().expect("end");
        seen
    };
    let expected = [
        "known abc",
        "1",
        "other replicas",
        "2",
        "other abc",
        "3",
        "known terminationGracePeriodSeconds",
        "4",
        "known rep",
        "5",
    ];
    assert_eq!(read(compact, &order), expected);
    assert_eq!(read(spaced, &order), expected);
    assert_eq!(
        read(off, &[&known[2], &known[2]]),
        [
            "other terminationGracePeriodSecondz",
            "1",
            "other terminationGracePeriodSecondz",
            "2"
        ]
    );
    assert_eq!(
        read(off, &[&known[3], &known[3]]),
        [
            "known terminationGracePeriodSecondz",
            "1",
            "known terminationGracePeriodSecondz",
            "2"
        ]
    );
}
