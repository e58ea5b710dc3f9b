//! The uniqueness check `all(p, L.exists_one(q, q.f == p.f))`: on a short
//! list of distinct strings it is answered whole, its charge computed
//! rather than counted (`lookup::all_distinct_cost`). Every answer and
//! every charge must be the plain walk's, at every limit around it.

use super::*;

/// Strings around the short-string edge (10 bytes; characters of two
/// bytes), the empty string, and long ones.
const POOL: [&str; 10] = [
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

/// Lists of ports: names drawn from [`POOL`] and numbered names that make
/// long lists of distinct names, up to and past the most answered whole
/// (`PAIRWISE`); some with a repeat, some with a port whose name is
/// missing or a number.
fn port_lists() -> Vec<Vec<celhook_json::Value>> {
    // A fixed linear congruential sequence: the same lists on every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |bound: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % bound
    };
    let mut lists = Vec::new();
    // Long lists too, past `PAIRWISE`; a pool name repeats in most.
    let pairwise = crate::runtime::PAIRWISE;
    for len in (0..=40).chain([pairwise - 1, pairwise, pairwise + 1, pairwise + 12]) {
        for _ in 0..6 {
            // Distinct numbered names, some replaced by pool names (which
            // may repeat), so that most lists are all distinct.
            let mut names: Vec<String> = (0..len)
                .map(|i| {
                    if next(4) == 0 {
                        POOL[next(POOL.len())].to_owned()
                    } else if next(3) == 0 {
                        format!("port-number-{i}")
                    } else {
                        format!("p{i}")
                    }
                })
                .collect();
            // Now and then a repeat at the end, where it is found last.
            if len > 1 && next(5) == 0 {
                names[len - 1] = names[0].clone();
            }
            let mut ports: Vec<_> = names
                .iter()
                // `alias` sorts before `name`: the name is not the first
                // property of its schema or of the objects that have both.
                .map(|n| match next(3) {
                    0 => json!({"name": n, "alias": "x"}),
                    _ => json!({"name": n}),
                })
                .collect();
            // Now and then a port the direct reads cannot take.
            if len > 0 && next(8) == 0 {
                ports[next(len)] = match next(2) {
                    0 => json!({"alias": "no-name"}),
                    _ => json!({"name": 7}),
                };
            }
            lists.push(ports);
        }
    }
    // Just fewer distinct names than `PAIRWISE`, exactly as many, and one
    // more (counted in a hash table), every seventh long and multi-byte,
    // and a long multi-byte one last.
    for len in [pairwise - 1, pairwise, pairwise + 1] {
        let mut ports: Vec<_> = (0..len - 1)
            .map(|i| match i % 7 {
                0 => json!({"name": format!("äöü-a-long-name-{i}")}),
                _ => json!({"name": format!("n{i}")}),
            })
            .collect();
        ports.push(json!({"name": "äöüäöü-äöüäöü"}));
        lists.push(ports);
    }
    lists
}

#[test]
fn distinct_names_are_answered_and_charged_as_the_walk_answers() {
    let s = schema(json!({
        "type": "object",
        "properties": {"ports": {"type": "array", "items": {
            "type": "object", "properties": {
                "alias": {"type": "string"},
                "name": {"type": "string"}
            }
        }}}
    }));
    let exprs = [
        "self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
        "self.ports.all(p, self.ports.exists_one(q, p.name == q.name))",
        // Charged after other work, and inside another loop.
        "size(self.ports) >= 0 && self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
        "[1, 2].all(z, self.ports.all(p, self.ports.exists_one(q, q.name == p.name)))",
    ];
    let programs = planned_and_plain(&exprs, &s, Environment::crd_rule(false));
    let objects: Vec<_> = port_lists()
        .into_iter()
        .map(|ports| json!({ "ports": ports }))
        .collect();
    // One scratch frame for every evaluation, as in a review's walk.
    let mut scratch = crate::Scratch::default();
    let (mut summed, mut distinct_long, mut repeated, mut irregular) = (0, 0, 0, 0);
    for (expr, with, without) in &programs {
        for obj in &objects {
            let ports = obj["ports"].as_array().expect("a list");
            let names: Vec<_> = ports.iter().map(|p| p.get("name")).collect();
            let strings: Option<Vec<&str>> =
                names.iter().map(|n| n.and_then(|v| v.as_str())).collect();
            let (answer, full) = without.eval(Value::from_json(obj, &s), None, u64::MAX);
            match (answer.map(|v| to_json(&v)), &strings) {
                (Ok(celhook_json::Value::Bool(true)), Some(names))
                    if names.len() > crate::runtime::PAIRWISE => {}
                (Ok(celhook_json::Value::Bool(true)), Some(names)) if !names.is_empty() => {
                    distinct_long += usize::from(names.iter().any(|n| n.len() > 10));
                }
                (Ok(celhook_json::Value::Bool(false)), Some(_)) => repeated += 1,
                (_, None) => irregular += 1,
                _ => {}
            }
            for limit in [u64::MAX, full, full.saturating_sub(1), full / 2, 0] {
                let this = Value::from_json(obj, &s);
                let before = crate::runtime::DISTINCT_ANSWERS.with(std::cell::Cell::get);
                assert_eq!(
                    shown(with.eval_in_scratch(&mut scratch, this, None, limit)),
                    shown(without.eval(Value::from_json(obj, &s), None, limit)),
                    "{expr} on {obj} at limit {limit}"
                );
                let after = crate::runtime::DISTINCT_ANSWERS.with(std::cell::Cell::get);
                // The answer is summed exactly when the names are 1 to
                // `PAIRWISE` distinct strings (and the limit lets the loop
                // start).
                let distinct = strings.as_ref().is_some_and(|names| {
                    (1..=crate::runtime::PAIRWISE).contains(&names.len())
                        && names
                            .iter()
                            .enumerate()
                            .all(|(i, a)| !names[i + 1..].contains(a))
                });
                if limit == u64::MAX {
                    assert_eq!(after > before, distinct, "{expr} on {obj}");
                    summed += usize::from(distinct);
                }
            }
        }
    }
    // The lists reach every case: distinct names (long ones among them),
    // repeats, and ports the direct reads cannot take.
    assert!(summed >= 200, "{summed}");
    assert!(distinct_long >= 40, "{distinct_long}");
    assert!(repeated >= 40, "{repeated}");
    assert!(irregular >= 20, "{irregular}");
}
