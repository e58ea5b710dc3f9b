//! Lists of flat objects kept by column (`celhook_json::Table`): every
//! loop over one, fused or not, must answer and charge as over the same
//! list built as a tree, at every limit.

use super::*;

#[test]
fn loops_over_a_table_answer_and_charge_as_over_the_tree() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "port": {"type": "integer"},
                "protocol": {"type": "string"},
                "on": {"type": "boolean"},
                "ratio": {"type": "number"},
                "stamp": {"type": "string", "format": "date-time"},
                "extra": {"type": "string"}
            }}}
        }
    }));
    let exprs = [
        "size(self.ports) <= 3",
        "self.ports.all(p, p.port > 0 && p.port < 65536)",
        "self.ports.exists(p, p.port == 53 || p.port > 9000)",
        "self.ports.all(p, p.protocol in ['TCP', 'UDP', 'SCTP'])",
        "self.ports.all(p, p.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(p.name) <= 5)",
        "self.ports.exists(p, p.name == 'metrics' && p.port == 9999)",
        // Two fields, the first's test stepped over its column, the
        // second read by row where the first does not decide.
        "self.ports.exists(p, p.port == 53 && p.name == 'dns')",
        "self.ports.all(p, p.protocol in ['TCP', 'UDP'] || p.port > 9000)",
        "self.ports.exists_one(p, p.name == 'metrics' || p.port == 53)",
        "size(self.ports.filter(p, p.protocol == 'UDP' && p.port < 9000)) == 1",
        "self.ports.exists(p, p.port > 0 && size(p.name) > 3)",
        "self.ports.all(p, p.name != 'äöü-a-long-name-with-umlauts-äöü' && p.port >= 0)",
        "self.ports.filter(p, p.protocol == 'UDP' && p.port < 9000)",
        "self.ports.exists(p, p.protocol in ['TCP'] && p.port > 100)",
        "self.ports.exists(p, p.port == 53 || p.name == 'http')",
        "self.ports.exists_one(p, p.protocol != 'TCP')",
        "size(self.ports.filter(p, p.protocol == 'UDP')) <= 1",
        "size(self.ports.filter(p, p.port >= 53)) == 2",
        "self.ports.filter(p, p.protocol == 'UDP').size() > 0",
        "self.ports.filter(p, p.protocol == 'UDP')",
        "self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
        "self.ports.all(p, p.on)",
        "self.ports.exists(p, p.ratio > 0.5)",
        "self.ports.map(p, p.port).sum() > 100",
        "self.ports[1].name == 'dns'",
        "self.ports == self.ports",
        "self.ports.all(p, has(p.on))",
        // A second test of a field no element has: read only where the
        // first does not decide.
        "self.ports.all(p, p.port > -100 || p.extra == 'x')",
        "self.ports.exists(p, p.port == 53 && p.extra == 'x')",
        "size(self.ports.filter(p, p.port < 0 || p.extra == 'x')) == 0",
        // A string its format makes a timestamp; uniqueness of ints.
        "self.ports.all(p, p.stamp > timestamp('2020-01-01T00:00:00Z'))",
        "self.ports.all(p, self.ports.exists_one(q, q.port == p.port))",
        // Long strings on both sides of an equality: charged by their
        // characters, which the byte cells count.
        "self.ports.exists(p, p.name == 'äöü-a-long-name-with-umlauts-äöü')",
        "self.ports.all(p, p.name != 'äöü-a-long-name-with-umlauts-äöü')",
        // Ten characters of two bytes each: charged by the ten.
        "self.ports.exists(p, p.name == 'éééééééééé')",
        "self.ports.all(p, size(p.name) == 10 || p.name.matches('^[a-z]+$'))",
    ];
    let programs = planned_and_plain(&exprs, &s, Environment::crd_rule(false));
    let lists = [
        r#"[{"name":"http","port":8080,"protocol":"TCP"},{"name":"dns","port":53,"protocol":"UDP"},{"name":"metrics","port":9999,"protocol":"TCP"}]"#,
        r#"[{"name":"a","port":0,"protocol":"X"},{"name":"a","port":70000,"protocol":"UDP"}]"#,
        r#"[{"name":"Bad_Name","port":-1,"protocol":"SCTP"}]"#,
        r#"[{"name":"x","on":true,"port":1,"protocol":"TCP"},{"name":"y","on":false,"port":2,"protocol":"UDP"}]"#,
        // Whole numbers of a number field (a table, read as doubles by
        // the walk), then a float among them (no table).
        r#"[{"name":"x","port":1,"ratio":1},{"name":"y","port":2,"ratio":2}]"#,
        r#"[{"name":"x","port":1,"ratio":1},{"name":"y","port":2,"ratio":2.5}]"#,
        r#"[{"name":"a-very-long-port-name-of-many-bytes","port":9999,"protocol":"UDP"},{"name":"metrics","port":9999,"protocol":"UDP"}]"#,
        r#"[{"name":"x","port":1,"stamp":"2026-01-01T00:00:00Z"},{"name":"y","port":2,"stamp":"2019-01-01T00:00:00Z"}]"#,
        // Strings beyond ASCII, some written with escapes (decoded behind
        // the table's text), for the patterns, sizes and equalities read
        // as bytes.
        r#"[{"name":"éééééééééé","port":5,"protocol":"TCP"},{"name":"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9x","port":6,"protocol":"TCP"}]"#,
        r#"[{"name":"ünï","port":3,"protocol":"T\u0043P"},{"name":"\u00e4\u00f6\u00fc-a-long-name-with-umlauts-\u00e4\u00f6\u00fc","port":2,"protocol":"UDP"},{"name":"äöü-a-long-name-with-umlauts-xyz","port":1,"protocol":"SCTP"}]"#,
    ];
    let mut tables = 0;
    let first_column_steps = crate::runtime::FIRST_COLUMN_STEPS.with(std::cell::Cell::get);
    for ports in lists {
        let tree = celhook_json::from_str(&format!(r#"{{"ports":{ports}}}"#)).expect("valid");
        let mut kept = tree.clone();
        kept["ports"] = celhook_json::Parser::new(ports)
            .value_rows()
            .expect("valid");
        if matches!(kept["ports"], celhook_json::Value::Table(_)) {
            tables += 1;
        }
        let mut scratch = crate::Scratch::default();
        for (expr, with, without) in &programs {
            let (_, full) = without.eval(Value::from_json(&tree, &s), None, u64::MAX);
            for limit in [u64::MAX].into_iter().chain(0..=full) {
                let want = shown(without.eval(Value::from_json(&tree, &s), None, limit));
                let fused =
                    with.eval_in_scratch(&mut scratch, Value::from_json(&tree, &s), None, limit);
                assert_eq!(
                    shown(fused),
                    want,
                    "{expr} over the tree {ports} at limit {limit}"
                );
                for program in [with, without] {
                    let got = program.eval_in_scratch(
                        &mut scratch,
                        Value::from_json(&kept, &s),
                        None,
                        limit,
                    );
                    assert_eq!(
                        shown(got),
                        want,
                        "{expr} over the table {ports} at limit {limit}"
                    );
                }
            }
        }
    }
    // The list with a float is no table: the rest are.
    assert_eq!(tables, lists.len() - 1);
    // Two fields' tests took the path that steps over the first one's
    // column.
    assert!(crate::runtime::FIRST_COLUMN_STEPS.with(std::cell::Cell::get) > first_column_steps);
}
