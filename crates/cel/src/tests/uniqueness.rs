//! The uniqueness check `all(p, L.exists_one(q, q.f == p.f))`: on a short
//! list of distinct strings it is answered whole, its charge computed
//! rather than counted (`lookup::all_distinct_cost`). Every answer and
//! every charge must be the plain walk's, at every limit around it.

use super::*;

/// Lists of names drawn from strings around the short-string edge (10
/// bytes; characters of two bytes), empty ones, and numbered ones that
/// make long lists of distinct names, about the 32 compared pair by pair.
fn name_lists() -> Vec<Vec<String>> {
    let pool = [
        "",
        "a",
        "web",
        "abcdefghij",
        "abcdefghijk",
        "ééééé",
        "éééééé",
        "a-name-well-over-ten-bytes",
        "äöüäöü-äöüäöü",
        "jaeger-thrift",
    ];
    // A fixed linear congruential sequence: the same lists on every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |bound: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % bound
    };
    let mut lists = Vec::new();
    for len in 0..=40 {
        for _ in 0..6 {
            // Distinct numbered names, some of them replaced by pool names
            // (which may repeat), so that most lists are all distinct.
            let mut list: Vec<String> = (0..len)
                .map(|i| {
                    if next(4) == 0 {
                        pool[next(pool.len())].to_owned()
                    } else if next(3) == 0 {
                        format!("port-number-{i}")
                    } else {
                        format!("p{i}")
                    }
                })
                .collect();
            // Now and then a repeat at the end, where it is found last.
            if len > 1 && next(5) == 0 {
                let first = list[0].clone();
                list[len - 1] = first;
            }
            lists.push(list);
        }
    }
    lists
}

#[test]
fn distinct_names_are_answered_and_charged_as_the_walk_answers() {
    let s = schema(json!({
        "type": "object",
        "properties": {"ports": {"type": "array", "items": {
            "type": "object", "properties": {"name": {"type": "string"}}
        }}}
    }));
    let opts = Environment::crd_rule(false);
    let exprs = [
        "self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
        "self.ports.all(p, self.ports.exists_one(q, p.name == q.name))",
    ];
    let programs: Vec<_> = exprs
        .iter()
        .map(|expr| {
            let with = Program::compile_planned(expr, &s, opts, true).expect(expr);
            let without = Program::compile_planned(expr, &s, opts, false).expect(expr);
            (expr, with, without)
        })
        .collect();
    let objects: Vec<_> = name_lists()
        .into_iter()
        .map(|names| {
            let ports: Vec<_> = names.iter().map(|n| json!({"name": n})).collect();
            (names, json!({ "ports": ports }))
        })
        .collect();
    // One scratch frame for every evaluation, as in a review's walk.
    let mut scratch = crate::Scratch::default();
    let (mut distinct_short, mut distinct_long, mut repeated) = (0, 0, 0);
    for (expr, with, without) in &programs {
        for (names, obj) in &objects {
            let (answer, full) = without.eval(Value::from_json(obj, &s), None, u64::MAX);
            match to_json(&answer.expect(expr)) {
                celhook_json::Value::Bool(true) if names.len() <= 32 => {
                    if names.iter().any(|n| n.len() > 10) {
                        distinct_long += 1;
                    } else {
                        distinct_short += 1;
                    }
                }
                celhook_json::Value::Bool(false) => repeated += 1,
                _ => {}
            }
            for limit in [u64::MAX, full, full.saturating_sub(1), full / 2, 0] {
                let shown = |(r, cost): (Result<Value<'_>, crate::EvalError>, u64)| {
                    (
                        r.map(|v| to_json(&v)).map_err(|e| e.message.to_string()),
                        cost,
                    )
                };
                let this = Value::from_json(obj, &s);
                assert_eq!(
                    shown(with.eval_in_scratch(&mut scratch, this, None, limit)),
                    shown(without.eval(Value::from_json(obj, &s), None, limit)),
                    "{expr} on {names:?} at limit {limit}"
                );
            }
        }
    }
    // The lists reach every case: distinct short names, distinct names
    // with long ones among them, and repeats.
    assert!(distinct_short >= 20, "{distinct_short}");
    assert!(distinct_long >= 20, "{distinct_long}");
    assert!(repeated >= 20, "{repeated}");
}
