//! The strings library's `indexOf` and `format`, case by case as cel-go's
//! tests probe them.

use super::*;

#[test]
fn string_index_of_follows_the_cel_go_probes() {
    values(&[
        ("'hello mellow'.indexOf('')", json!(0)),
        ("'hello mellow'.indexOf('', 100)", json!(100)),
        ("'hello mellow'.indexOf('', -5)", json!(-5)),
        ("'hello mellow'.indexOf('ello', 2)", json!(7)),
        ("'hello mellow'.indexOf('ello', 20)", json!(-1)),
        ("'hello mellow'.indexOf('ello', 12)", json!(-1)),
        ("'héllo'.indexOf('llo')", json!(2)),
        ("'hello mellow'.lastIndexOf('')", json!(12)),
        ("'hello mellow'.lastIndexOf('ello')", json!(7)),
        ("'hello mellow'.lastIndexOf('ello', 6)", json!(1)),
        ("'hello mellow'.lastIndexOf('ello', 20)", json!(-1)),
        ("'hello mellow'.lastIndexOf('', 50)", json!(50)),
        ("'éé'.lastIndexOf('ééé')", json!(-1)),
        ("'é'.lastIndexOf('ab')", json!(-1)),
    ]);
    errors(&[
        (
            "'hello mellow'.indexOf('ello', -1)",
            "index out of range: -1",
        ),
        (
            "'hello mellow'.lastIndexOf('ello', -1)",
            "index out of range: -1",
        ),
    ]);
}

#[test]
fn strings_format_follows_the_cel_go_probes() {
    values(&[
        (
            "'%s|%d|%f|%e|%b|%x|%X|%o'.format(['s', 42, 3.14, 2.71828, 5, 26, 26, 30])",
            json!("s|42|3.140000|2.718280×10⁰⁰|101|1a|1A|36"),
        ),
        ("'%s'.format([1.5])", json!("1.5")),
        // From the API server's own validation tests.
        ("'%e'.format([3.14]) == '3.140000×10⁰⁰'", json!(true)),
        (
            "'%d %s %f %s %s'.format([1, 'abc', 1.0, duration('1m'), timestamp('2000-01-01T00:00:00.000Z')])",
            json!("1 abc 1.000000 60s 2000-01-01T00:00:00Z"),
        ),
        ("'%o %o %o'.format([7, 8, 9])", json!("7 10 11")),
        ("'%b %b %b'.format([7, 8, 9])", json!("111 1000 1001")),
        (
            "'%s'.format([[1.5, 'a', b'b', true, null, 1u, -2]])",
            json!("[1.500000, \"a\", b\"b\", true, null, 1, -2]"),
        ),
        (
            "'%s'.format([{'b': 1, 'a': 'x'}])",
            json!("{\"a\":\"x\", \"b\":1}"),
        ),
        (
            "'%s'.format([timestamp('2023-01-01T00:00:00Z')])",
            json!("2023-01-01T00:00:00Z"),
        ),
        (
            "'%s'.format([[timestamp('2023-01-01T00:00:00Z'), duration('1h')]])",
            json!("[timestamp(\"2023-01-01T00:00:00Z\"), duration(\"3600s\")]"),
        ),
        ("'%s'.format([duration('1h')])", json!("3600s")),
        ("'%s'.format([int])", json!("int")),
        ("'%s'.format([[int]])", json!("[int]")),
        ("'%s'.format([null])", json!("null")),
        ("'%s'.format([b'abc'])", json!("abc")),
        ("'%.2f'.format([1234567.891])", json!("1,234,567.89")),
        ("'%f'.format(['NaN'])", json!("NaN")),
        ("'%f'.format(['Infinity'])", json!("∞")),
        ("'%f'.format([1.0/0.0])", json!("∞")),
        ("'%.0f'.format([2.5])", json!("2")),
        (
            "'%.3e'.format([1234.5])",
            json!("1.234500×10⁰³"),
        ),
        ("'%e'.format([0.0])", json!("0.000000×10⁰⁰")),
        ("'%x'.format(['hé'])", json!("68c3a9")),
        ("'%x'.format([-26])", json!("-1a")),
        ("'%b'.format([-5])", json!("-101")),
        ("'%b'.format([true])", json!("1")),
        ("'%o'.format([-8])", json!("-10")),
        ("'%%%s'.format(['x'])", json!("%x")),
        ("'%s'.format([{1: 2.5}])", json!("{1:2.500000}")),
        ("'%s'.format([[1.0/0.0]])", json!("[\"+Inf\"]")),
        ("'%d'.format([3u])", json!("3")),
        // Extra arguments are ignored when the call is not checked at load.
        ("('%' + 's').format(['a', 'b'])", json!("a")),
    ]);
    errors(&[
        (
            "('%d' + '').format([1.5])",
            "error during formatting: decimal clause can only be used on integers, was given double",
        ),
        (
            "('%d' + '').format(['a'] + [])",
            "error during formatting: decimal clause can only be used on integers, was given string",
        ),
        ("('%s %s' + '').format(['a'])", "index 1 out of range"),
        ("('%s' + '').format([])", "index 0 out of range"),
        (
            "('%s' + '').format([optional.of(1)])",
            "error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given optional_type",
        ),
        (
            "('%z' + '').format([1] + [])",
            "could not parse formatting clause: unrecognized formatting clause \"z\"",
        ),
        (
            "('%.f' + '').format([1.0] + [])",
            "could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing \"\": invalid syntax",
        ),
        ("('%' + '').format([1])", "unexpected end of string"),
        (
            "('%.1001f' + '').format([1.0])",
            "could not parse formatting clause: error while parsing precision: precision 1001 exceeds maximum allowed precision 1000",
        ),
    ]);
    // A literal format string with a literal list is checked at load.
    let compile_errors = [
        (
            "'%d'.format(['a'])",
            "ERROR: <input>:1:14: error during formatting: decimal clause can only be used on integers, was given string",
        ),
        (
            "'%z'.format([1])",
            "ERROR: <input>:1:12: could not parse formatting clause: unrecognized formatting clause \"z\"",
        ),
        (
            "'x'.format(['a', 'b'])",
            "ERROR: <input>:1:11: too many arguments supplied to string.format (expected 0, got 2)",
        ),
        (
            "'%s'.format(['a', 'b'])",
            "ERROR: <input>:1:12: too many arguments supplied to string.format (expected 1, got 2)",
        ),
        (
            "'%s %s'.format(['a'])",
            "ERROR: <input>:1:15: index 1 out of range",
        ),
        (
            "'%s'.format([optional.of(1)])",
            // cel-go places a call at its opening parenthesis.
            "ERROR: <input>:1:25: error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given optional_type",
        ),
    ];
    for (e, want) in compile_errors {
        let err = eval(e).unwrap_err();
        assert_eq!(err.lines().next(), Some(want), "{e}");
    }
    // Literals inside `format(...)` may mix types; elsewhere they may not.
    assert!(eval("[1, 'a'].size() == 2")
        .unwrap_err()
        .contains("expected type 'int' but found 'string'"));
}
