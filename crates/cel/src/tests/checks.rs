//! What cel-go answers, checked case by case: the texts of runtime errors,
//! a runaway loop stopped at the cost limit, the refusal of mismatched
//! operand types, the result types known before a run, the cost a run is
//! charged, and which types `size()` takes.

use super::*;

#[test]
fn arithmetic_errors_have_cel_texts() {
    let s = crontab();
    let obj = json!({});
    assert_eq!(run("1 / 0 == 1", &s, &obj), Err("division by zero".into()));
    assert_eq!(
        run("9223372036854775807 + 1 > 0", &s, &obj),
        Err("integer overflow".into())
    );
    // A constant pattern is checked when the rule is compiled.
    assert!(run("'abc'.matches('[')", &s, &obj)
        .unwrap_err()
        .contains("invalid matches argument"));
    assert_eq!(
        run(
            "'abc'.matches(self.spec.x__dash__prop)",
            &s,
            &json!({"spec": {"x-prop": "["}})
        )
        .unwrap_err(),
        // Go's regexp wording, as cel-go reports it.
        "error parsing regexp: missing closing ]: `[`"
    );
    assert_eq!(
        run("int('abc') == 1", &s, &obj)
            .unwrap_err()
            .lines()
            .next()
            .unwrap(),
        "ERROR: <input>:1:4: type conversion error from 'string' to 'int'"
    );
    assert!(run("duration('1d') > duration('1s')", &s, &obj)
        .unwrap_err()
        .contains("invalid duration argument"));
    assert!(run("[1, 'a'].size() == 2", &s, &obj)
        .unwrap_err()
        .contains("expected type 'int' but found 'string'"));
    assert_eq!(
        run("0.0 / 0.0 < 1.0", &s, &obj),
        Err("NaN values cannot be ordered".into())
    );
    assert_eq!(
        run("{1: 2}[3] == 1", &s, &obj),
        Err("no such key: 3".into())
    );
    assert_eq!(
        run("[1, 2][dyn('a')] == 1", &s, &obj),
        Err("unsupported index type 'string' in list".into())
    );
}

#[test]
fn runaway_loops_stop_at_the_cost_limit() {
    let s = crontab();
    let p = Program::compile(
        "lists.range(2000).all(i, lists.range(2000).all(j, i + j >= 0))",
        &s,
        Environment::default(),
    )
    .unwrap();
    let obj = json!({});
    let (r, cost) = p.eval(Value::from_json(&obj, &s), None, PER_EXPRESSION_COST_LIMIT);
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::CostLimit);
    assert!(cost > PER_EXPRESSION_COST_LIMIT);
}

#[test]
fn mismatched_operand_types_are_refused_with_cel_go_wording() {
    let s = crontab();
    let int_schema = s.property("spec").unwrap().property("replicas").unwrap();
    let err = Program::compile("self == true", int_schema, Environment::default()).unwrap_err();
    assert_eq!(
        err.message,
        "ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'\n | self == true\n | .....^"
    );
    let err = run("self.spec.x__dash__prop.startsWith(1)", &s, &json!({})).unwrap_err();
    assert!(
        err.contains("found no matching overload for 'startsWith' applied to 'string.(int)'"),
        "{err}"
    );
    let err = run("self.spec.replicas + 'a' == 1", &s, &json!({})).unwrap_err();
    assert!(err.contains("'_+_' applied to '(int, string)'"), "{err}");
    let err = run("self.spec.replicas.all(x, x > 0)", &s, &json!({})).unwrap_err();
    assert!(err.contains("cannot be range of a comprehension"), "{err}");
    let err = run("self.spec.tags.all(t, t)", &s, &json!({})).unwrap_err();
    assert!(
        err.contains("expected type 'bool' but found 'string'"),
        "{err}"
    );
}

#[test]
fn result_types_are_known_statically() {
    let s = crontab();
    let ty = |e: &str| {
        Program::compile(e, &s, Environment::default())
            .unwrap()
            .result_type()
            .to_owned()
    };
    assert_eq!(ty("self.spec.replicas > 1"), "bool");
    assert_eq!(ty("self.spec.replicas"), "int");
    assert_eq!(ty("self.spec.tags.map(t, size(t))"), "list(int)");
    assert_eq!(ty("self.spec.labels"), "map(string, string)");
    assert_eq!(ty("self.spec.when"), "timestamp");
    assert_eq!(ty("'a' + self.spec.x__dash__prop"), "string");
}

/// Runtime costs as cel-go reports them for the same expressions
/// (from the probe vectors in the research notes).
#[test]
fn runtime_costs_match_cel_go() {
    let s = crontab();
    let obj = json!({"spec": {"replicas": 7, "tags": ["a", "b", "c"], "x-prop": "a".repeat(50)}});
    let cost = |e: &str| {
        let p = Program::compile(e, &s, Environment::default()).unwrap();
        let (r, c) = p.eval(Value::from_json(&obj, &s), None, PER_EXPRESSION_COST_LIMIT);
        r.unwrap();
        c
    };
    assert_eq!(cost("self.spec.replicas == 7"), 4);
    assert_eq!(cost("self.spec.replicas + 1 > 0"), 5);
    assert_eq!(cost("[1, 2, 3].map(x, x)"), 40);
    assert_eq!(cost("[1, 2, 3].all(x, x > 0)"), 16);
    assert_eq!(cost("[1, 2, 3].exists(x, x == 1)"), 10);
    assert_eq!(cost("[1, 2, 3].exists_one(x, x > 2)"), 10);
    assert_eq!(cost("self.spec.replicas in [1, 2, 3]"), 3);
    assert_eq!(cost("has(self.spec.replicas)"), 2);
    // A field read or an index of a value that is not an attribute (a
    // literal, a call's result) starts a relative attribute: 1 more.
    assert_eq!(cost("[1, 2, 3][1] == 2"), 3);
    assert_eq!(cost("{'a': 1}.a == 1"), 3);
    // A conditional resolves an attribute branch without its attribute
    // step: only the field reads are charged.
    assert_eq!(cost("(true ? self.spec.replicas : 0) == 7"), 3);
    assert_eq!(
        cost("self.spec.x__dash__prop == self.spec.x__dash__prop"),
        11
    );
    assert_eq!(
        cost("self.spec.x__dash__prop.contains('bbbbbbbbbbbbbbbbbbbb')"),
        13
    );
    assert_eq!(
        cost("self.spec.x__dash__prop.matches('bbbbbbbbbbbbbbbbbbbb')"),
        33
    );
    // `size` (its own node, `Ir::Size`): the call charges 1.
    assert_eq!(cost("size(self.spec.tags) == 3"), 5);
    assert_eq!(cost("self.spec.tags.size() == 3"), 5);
    assert_eq!(cost("size('abc') == 3"), 2);
}

#[test]
fn size_answers_each_sized_type_and_refuses_others_as_the_row_does() {
    let s = crontab();
    let obj = json!({"spec": {"tags": ["a", "b"]}});
    assert_eq!(
        run("size('h\u{e9}llo') == 5 && size(b'ab') == 2 && size({'a': 1}) == 1 && [1, 2].size() == 2 && self.spec.tags.size() == 2", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("size(dyn(1)) == 1", &s, &obj),
        Err("no such overload: size".to_owned())
    );
    // An argument's error stays the argument's.
    assert_eq!(
        run("size(self.spec.tags[5]) == 1", &s, &obj),
        Err("index out of bounds: 5".to_owned())
    );
}
