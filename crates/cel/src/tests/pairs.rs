//! Comparisons of two fields (`Ir::FieldPair`): read from the JSON in one
//! step, they must answer and charge as the plain walk does, at every
//! limit, for `self` against itself and against `oldSelf`.

use super::*;

#[test]
fn fused_field_pairs_change_no_result_and_no_cost() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "alias": {"type": "string"},
            "stamp": {"type": "string", "format": "date-time"},
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "ratio": {"type": "number"},
            "deep": {"type": "object", "properties": {
                "a": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": {"type": "string"}}}
            }},
            // A map: its entries have no schema position, so a chain
            // through one is read by name.
            "byName": {"type": "object", "additionalProperties": {
                "type": "object", "properties": {"c": {"type": "string"}}
            }}
        }
    }));
    let exprs = [
        "self.min < self.max",
        "self.min <= self.max && self.max >= self.min",
        "self.min == self.max || self.min != self.max",
        "self.min > self.deep.a",
        "self.name == self.alias",
        "self.name != self.deep.b.c",
        "self.name < self.alias",
        "self.ratio == self.ratio",
        "self.stamp == self.stamp",
        "self.name == oldSelf.name",
        "self.min >= oldSelf.min && oldSelf.deep.b.c != self.deep.b.c",
        "oldSelf.max < self.max",
        // Int arithmetic on either side, with its overflows and divisions
        // by zero left to the walk.
        "self.min + self.max <= 100",
        "self.max - self.min > 0 && self.min % 5 == 0",
        "self.min <= self.max * 4",
        "self.min / self.deep.a == 0",
        "self.min % self.max != 1",
        "(self.min + 1) * 2 >= oldSelf.max - 3",
        "self.max + 1 > self.min",
        "self.min / self.max < 0",
        // A field joined with a string constant, compared with a string.
        "self.name == self.alias + '-x'",
        "'pre-' + self.alias != self.name",
        "self.alias + 'é' == self.name",
        "self.deep.b.c + '' == self.name",
        "self.name == self.deep.b.c + '-x'",
        "self.name < self.alias + '-x'",
        "'web-x' == self.alias + '-x'",
        // A number field holding a whole number is a double to the walk.
        "self.ratio + self.ratio == self.ratio * self.ratio",
        "self.name == self.byName.web.c",
    ];
    let programs = planned_and_plain(&exprs, &s, Environment::crd_rule(false));
    // Every comparison above is of two fields, or of arithmetic on them,
    // and outside any loop.
    let fused: usize = programs
        .iter()
        .map(|(_, with, _)| count_pairs(&with.ir))
        .sum();
    assert_eq!(fused, 32, "comparisons fused as field pairs");
    let objects = [
        json!({"name": "web", "alias": "web", "min": 1, "max": 3, "ratio": 0.5,
               "stamp": "2026-01-01T00:00:00Z", "deep": {"a": 0, "b": {"c": "web"}}}),
        json!({"name": "a-name-well-over-ten-bytes", "alias": "a-name-well-over-ten-bytez",
               "min": 7, "max": 7, "deep": {"a": 9, "b": {"c": ""}}}),
        json!({"name": "", "alias": "é", "min": -4, "max": 9223372036854775807_i64,
               "deep": {"b": {}}}),
        json!({"name": 3, "alias": null, "min": "7", "max": 1.5, "deep": []}),
        json!({"min": 18446744073709551615_u64, "max": 0}),
        json!({"min": -9223372036854775808_i64, "max": -1, "deep": {"a": -1}}),
        json!({"name": "web-x", "alias": "web", "min": 0, "max": 1, "ratio": 2,
               "deep": {"b": {"c": "web-x"}}}),
        json!({"name": "pre-ééééé-x", "alias": "ééééé-x", "min": 1}),
        json!({"name": "a-name-well-over-ten-bytesé", "alias": "a-name-well-over-ten-bytes"}),
        // Null, or no object, on the way to a chain's last field.
        json!({"name": "web", "deep": null, "byName": {"web": {"c": "web"}}}),
        json!({"name": "", "deep": {"a": 1, "b": null}, "byName": {"web": null}}),
        json!({"name": "x", "deep": {"b": "c"}, "byName": {"web": {"c": "x"}, "x": 1}}),
        json!({}),
    ];
    let mut scratch = crate::Scratch::default();
    for (expr, with, without) in &programs {
        for new in &objects {
            for old in &objects {
                let (_, full) = without.eval(
                    Value::from_json(new, &s),
                    Some(Value::from_json(old, &s)),
                    u64::MAX,
                );
                for limit in [u64::MAX].into_iter().chain(0..=full) {
                    assert_eq!(
                        shown(with.eval_in_scratch(
                            &mut scratch,
                            Value::from_json(new, &s),
                            Some(Value::from_json(old, &s)),
                            limit
                        )),
                        shown(without.eval(
                            Value::from_json(new, &s),
                            Some(Value::from_json(old, &s)),
                            limit
                        )),
                        "{expr} on {new} (old {old}) at limit {limit}"
                    );
                }
            }
        }
    }
}

/// Inside a loop a comparison of two fields stays as planned: the scan
/// and counted plans look for it there.
#[test]
fn field_pairs_are_fused_outside_loops_only() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "name": {"type": "string"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}
            }}}
        }
    }));
    let pairs = |expr: &str| {
        let p = Program::compile_planned(expr, &s, Environment::crd_rule(false), true).expect(expr);
        count_pairs(&p.ir)
    };
    assert_eq!(pairs("self.min <= self.max"), 1);
    assert_eq!(pairs("[1, 2].all(i, self.min <= self.max)"), 0);
    assert_eq!(
        pairs("self.ports.all(p, self.ports.exists_one(q, q.name == p.name))"),
        0
    );
    assert_eq!(pairs("cel.bind(x, self, x.min <= x.max)"), 1);
    assert_eq!(pairs("self.min + 1 <= self.max"), 1);
    assert_eq!(pairs("[1].all(i, self.min + i <= self.max)"), 0);
    // A field against a constant is fused as a `FieldCmp`; constants and
    // arithmetic on other values are not read from fields.
    assert_eq!(pairs("self.min <= 5"), 0);
    assert_eq!(pairs("1 + 2 <= self.max - self.max + 3"), 1);
    assert_eq!(pairs("size(self.ports) + 1 <= self.max"), 0);
    assert_eq!(pairs("1 + 2 <= 3"), 0);
    // A join is answered under `==` and `!=` alone, against a string.
    assert_eq!(pairs("self.name == self.name + 'x'"), 1);
    assert_eq!(pairs("self.name < self.name + 'x'"), 0);
    assert_eq!(pairs("self.name + 'x' == self.name + 'y'"), 0);
    // Two fields joined may be lists or strings: fused as int arithmetic,
    // which such reads never answer (the walk does).
    assert_eq!(pairs("self.min + self.max == self.max"), 1);
    assert_eq!(pairs("self.ports + self.ports == self.ports"), 1);
}
