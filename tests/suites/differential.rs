//! Differential test: generated expressions over ints, bools, strings and
//! lists, evaluated by celhook's engine and by the `cel` crate's own
//! interpreter; where both give a result, the results must agree. A second
//! opinion catches evaluator bugs that hand-written cases miss.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::Value as Json;

use celhook::cel::{self, Program};
use celhook::schema::Schema;

/// Well-typed expression generators (typed so that most cases compile).
fn int_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (-20i64..20).prop_map(|i| i.to_string()),
        Just("size('abc')".to_owned()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop_oneof![Just("+"), Just("-"), Just("*"), Just("/"), Just("%")],
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (bool_expr_leaf(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
            list_leaf().prop_map(|l| format!("size({l})")),
            (list_leaf(), inner.clone()).prop_map(|(l, i)| format!("{l}[{i}]")),
            list_leaf().prop_map(|l| format!("{l}.map(x, x * 2).size()")),
        ]
    })
}

fn bool_expr_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("true".to_owned()),
        Just("false".to_owned()),
        (
            (-5i64..5),
            prop_oneof![Just("<"), Just("<="), Just("=="), Just("!="), Just(">")],
            (-5i64..5)
        )
            .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
    ]
}

fn str_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("''"),
        Just("'a'"),
        Just("'ab'"),
        Just("'ba'"),
        Just("'abc'")
    ]
    .prop_map(str::to_owned)
}

fn list_leaf() -> impl Strategy<Value = String> {
    prop::collection::vec(-5i64..5, 0..5).prop_map(|v| {
        format!(
            "[{}]",
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn bool_expr() -> impl Strategy<Value = String> {
    bool_expr_leaf().prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop_oneof![Just("&&"), Just("||"), Just("=="), Just("!=")],
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("!{a}")),
            (
                int_expr(),
                prop_oneof![
                    Just("<"),
                    Just("<="),
                    Just("=="),
                    Just("!="),
                    Just(">="),
                    Just(">")
                ],
                int_expr()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (int_expr(), list_leaf()).prop_map(|(a, l)| format!("({a} in {l})")),
            list_leaf().prop_map(|l| format!("{l}.all(x, x > -3)")),
            list_leaf().prop_map(|l| format!("{l}.exists(x, x == 1)")),
            list_leaf().prop_map(|l| format!("{l}.exists_one(x, x % 2 == 0)")),
            (list_leaf(), int_expr()).prop_map(|(l, i)| format!("{l}.filter(x, x < {i}) == {l}")),
            (str_leaf(), str_leaf()).prop_map(|(a, b)| format!("{a}.contains({b})")),
            (str_leaf(), str_leaf()).prop_map(|(a, b)| format!("{a}.startsWith({b})")),
            (str_leaf(), str_leaf()).prop_map(|(a, b)| format!("{a}.endsWith({b})")),
            (str_leaf(), str_leaf()).prop_map(|(a, b)| format!("({a} + {b}) < {b}")),
            (str_leaf(), str_leaf())
                .prop_map(|(a, b)| format!("({a} + {b}).size() == size({a}) + size({b})")),
        ]
    })
}

/// The `cel` crate's result as JSON, for the value kinds generated here.
fn cel_to_json(v: &::cel::Value) -> Option<Json> {
    use ::cel::Value as V;
    Some(match v {
        V::Int(i) => Json::from(*i),
        V::UInt(u) => Json::from(*u),
        V::Bool(b) => Json::Bool(*b),
        V::String(s) => Json::String(s.to_string()),
        V::Null => Json::Null,
        V::List(l) => Json::Array(l.iter().map(cel_to_json).collect::<Option<_>>()?),
        _ => return None,
    })
}

/// Both engines' answers: `None` where one of them has no result.
fn both(expr: &str) -> Option<(Json, Json)> {
    let schema = Schema::untyped(true);
    let ours = Program::compile(expr, &schema, cel::Environment::default()).ok()?;
    let null = celhook_json::Value::Null;
    let (ours, _) = ours.eval(
        cel::Value::from_json(&null, &schema),
        None,
        cel::PER_EXPRESSION_COST_LIMIT,
    );
    let ours = Json::from(cel::to_json(&ours.ok()?));
    let theirs = ::cel::Program::compile(expr).ok()?;
    let theirs = theirs.execute(&::cel::Context::default()).ok()?;
    Some((ours, cel_to_json(&theirs)?))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn boolean_expressions_agree_with_the_cel_interpreter(expr in bool_expr()) {
        if let Some((ours, theirs)) = both(&expr) {
            prop_assert_eq!(ours, theirs, "expression: {}", expr);
        }
    }

    #[test]
    fn integer_expressions_agree_with_the_cel_interpreter(expr in int_expr()) {
        if let Some((ours, theirs)) = both(&expr) {
            prop_assert_eq!(ours, theirs, "expression: {}", expr);
        }
    }
}

/// The comparison must actually compare: most generated expressions have a
/// result in both engines.
#[test]
fn most_generated_expressions_are_compared() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = bool_expr();
    let mut compared = 0;
    for _ in 0..200 {
        let expr = strategy.new_tree(&mut runner).expect("generates").current();
        if both(&expr).is_some() {
            compared += 1;
        }
    }
    assert!(
        compared > 100,
        "only {compared} of 200 expressions had results in both engines"
    );
}
