//! Cost limits, budgets and bounds: what stops an expression before it
//! costs too much, and what it is charged.

use super::*;

/// Evaluates `expr` on `{}` with the given cost limit.
fn eval_with_limit(expr: &str, limit: u64) -> (Result<celhook_json::Value, EvalError>, u64) {
    let s = crontab();
    let p = Program::compile(expr, &s, Environment::default()).unwrap();
    let obj = json!({});
    let (r, cost) = p.eval(Value::from_json(&obj, &s), None, limit);
    (r.map(|v| to_json(&v)), cost)
}

#[test]
fn a_spent_budget_is_not_absorbed_by_logical_operators() {
    // Found by the cel_compile fuzz target: `||` used to swallow the
    // cost-limit error of its left side and answer true.
    for expr in [
        "1/0 == 1 || true",
        "true && (1/0 == 1 || true)",
        "1/0 == 1 && false",
    ] {
        let (r, cost) = eval_with_limit(expr, 0);
        assert_eq!(r.unwrap_err().kind, ErrorKind::CostLimit, "{expr}");
        assert!(cost > 0, "{expr}");
    }
    // Within the limit the error is absorbed as cel-go absorbs it.
    assert_eq!(
        eval_with_limit("1/0 == 1 || true", 100).0.unwrap(),
        json!(true)
    );
}

#[test]
fn huge_ranges_stop_before_they_allocate() {
    // Found by the conversion_review fuzz target: a Pizza quantity of
    // 5555555555555554 made `lists.range` allocate exabytes.
    let (r, cost) = eval_with_limit(
        "lists.range(5555555555555554).size() > 0",
        PER_EXPRESSION_COST_LIMIT,
    );
    assert_eq!(r.unwrap_err().kind, ErrorKind::CostLimit);
    assert!(cost > PER_EXPRESSION_COST_LIMIT);
    // The charge is the same whether the call runs or is refused first.
    let (ok, cost) = eval_with_limit(
        "lists.range(1000).size() == 1000",
        PER_EXPRESSION_COST_LIMIT,
    );
    assert_eq!(ok.unwrap(), json!(true));
    let (r, over) = eval_with_limit("lists.range(1000).size() == 1000", cost - 2);
    assert_eq!(r.unwrap_err().kind, ErrorKind::CostLimit);
    assert!(over > cost - 2);
}

#[test]
fn quadratic_list_functions_are_charged_before_they_run() {
    let (r, _) = eval_with_limit(
        "lists.range(5000).distinct().size() > 0",
        PER_EXPRESSION_COST_LIMIT,
    );
    assert_eq!(r.unwrap_err().kind, ErrorKind::CostLimit);
    let (r, _) = eval_with_limit(
        "sets.contains(lists.range(2000), lists.range(2000))",
        PER_EXPRESSION_COST_LIMIT,
    );
    assert_eq!(r.unwrap_err().kind, ErrorKind::CostLimit);
}

#[test]
fn replace_cannot_build_a_giant_string() {
    // 200 Ki matches, each replaced by 200 KiB: 40 GiB if it ran.
    let expr = "cel.bind(a, 'aaaaaaaa'.replace('a', 'aaaaaaaa').replace('a', 'aaaaaaaa').replace('a', 'aaaaaaaa').replace('a', 'aaaaaaaa').replace('a', 'aaaaaaaa'), a.replace('a', a).size())";
    let (r, _) = eval_with_limit(expr, PER_EXPRESSION_COST_LIMIT);
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::CostLimit);
    assert!(
        e.message.contains("replace() would build a string"),
        "{}",
        e.message
    );
    // Ordinary replacements are untouched.
    let (r, _) = eval_with_limit(
        "'a-b-c'.replace('-', '--') == 'a--b--c'",
        PER_EXPRESSION_COST_LIMIT,
    );
    assert_eq!(r.unwrap(), json!(true));
}

#[test]
fn timestamps_with_multibyte_characters_are_refused_not_split() {
    // Found by the cel_compile fuzz target: a character spanning byte 19
    // used to panic the parser.
    for text in [
        "1000-01-01T00:00:0\u{200a}text",
        "2025-01-01T00:00:00+\u{e9}:00",
        "2025-01-01T00:00:00.\u{2028}Z",
    ] {
        assert_eq!(value::parse_timestamp(text), None, "{text:?}");
    }
    assert!(value::parse_timestamp("2025-01-01T00:00:00+01:00").is_some());
}

#[test]
fn deeply_nested_expressions_are_refused_without_exhausting_the_stack() {
    // Found while testing resource bounds: 30 nested parentheses overflowed
    // a 2 MiB thread stack in the parser of a debug build. Deep expressions
    // are now refused before parsing, and shallower ones that still need a
    // deep parse run on a thread with a large stack.
    let s = crontab();
    for (open, close) in [
        ("(", ")"),
        ("[", "]"),
        ("{1: ", "}"),
        ("f(", ")"),
        ("!", ""),
        ("-", ""),
    ] {
        let deep = format!("{}1{}", open.repeat(5000), close.repeat(5000));
        let err = Program::compile(&deep, &s, Environment::default()).unwrap_err();
        assert!(
            err.message.contains("expression recursion limit exceeded"),
            "{open}: {}",
            err.message
        );
    }
    let ternaries = format!("{}1", "true ? 1 : ".repeat(5000));
    let err = Program::compile(&ternaries, &s, Environment::default()).unwrap_err();
    assert!(err.message.contains("recursion limit"), "{}", err.message);
    // Within the limit, on this test's own small stack: compiles and runs.
    let nested = format!("{}1{} == 1", "(".repeat(60), ")".repeat(60));
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || {
            let s = crontab();
            assert_eq!(run(&nested, &s, &json!({})), Ok(json!(true)));
        })
        .unwrap()
        .join()
        .unwrap();
    // Brackets inside string literals do not count.
    let quoted = format!("'{}' != ''", "(".repeat(5000));
    assert_eq!(run(&quoted, &s, &json!({})), Ok(json!(true)));
}

#[test]
fn string_sizes_are_estimated_in_bytes_and_bounded_by_enums() {
    // The API server sizes a string of maxLength n as 4n bytes (a code
    // point takes up to 4), and an enum string by its longest value.
    let cost = |s: celhook_json::Value| {
        Program::compile("self.contains('x')", &schema(s), Environment::default())
            .unwrap()
            .estimated_cost()
    };
    let bounded = cost(json!({"type": "string", "maxLength": 1000}));
    let by_enum = cost(json!({"type": "string", "enum": ["short", "a-longer-value"]}));
    let unbounded = cost(json!({"type": "string"}));
    assert!((400.0..1000.0).contains(&bounded), "{bounded}");
    assert!(by_enum < 10.0, "{by_enum}");
    assert!(unbounded > 100_000.0, "{unbounded}");
}

/// The memo pass (`memo`, with its scanned loops) must not change any
/// result or any charge: each expression runs with and without it, on
/// objects that have, lack or mistype the fields read, with no limit and
/// with every limit that stops it part-way.
#[test]
fn kept_field_reads_change_no_result_and_no_cost() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "name": {"type": "string"},
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "opt": {"type": "object", "properties": {"a": {"type": "string"}}},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"},
                    "alias": {"type": "string"},
                    "hosts": {"type": "array", "items": {"type": "string"}}
                }}},
                "spare": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"},
                    "alias": {"type": "string"}
                }}},
                "moved": {"type": "array", "items": {"type": "object", "properties": {
                    "a0": {"type": "string"}, "a1": {"type": "string"},
                    "name": {"type": "string"}
                }}},
                "stamps": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string", "format": "byte"}
                }}},
                "stamps2": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string", "format": "byte"}
                }}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "tags": {"type": "array", "items": {"type": "string"}}
            }}
        }
    }));
    let exprs = [
        // Scanned loops (`memo::Scan`): the element side on either side,
        // each comparison, `in`, and the other side a constant, a field or
        // a read of an outer loop's variable.
        "self.spec.ports.exists(p, p.name == self.spec.name)",
        "self.spec.ports.exists(p, p.alias == self.spec.name)",
        "self.spec.ports.exists_one(p, self.spec.min < p.port)",
        "self.spec.ports.all(p, p.port in [80, 9, 1])",
        "size(self.spec.ports.filter(p, p.port >= self.spec.min)) < 3",
        "self.spec.tags.all(t, t != self.spec.name)",
        "self.spec.tags.exists_one(t, t in self.spec.tags)",
        "self.spec.ports.filter(p, p.name in self.spec.tags).map(p, p.port)",
        "self.spec.tags.all(t, self.spec.ports.exists(p, p.name == t))",
        "self.spec.ports.all(p, p.port <= self.spec.max) && self.spec.ports.all(p, p.port > 0)",
        // Scanned bodies inside another loop: conjunctions, negations and
        // element-only predicates, with reads shared between comparisons.
        "self.spec.ports.all(p, self.spec.ports.exists_one(q, q.name == p.name && q.port == p.port))",
        "self.spec.tags.all(t, self.spec.ports.exists(p, !(p.name != t) || has(p.alias)))",
        "self.spec.ports.all(p, self.spec.ports.filter(q, q.port > p.port || q.name.startsWith('w')).size() >= 0)",
        "self.spec.tags.all(t, self.spec.ports.all(p, size(p.name) < 10 && p.port != 0))",
        "self.spec.tags.exists(t, self.spec.ports.exists(p, p.name.matches('^w') == (t == 'web')))",
        "self.spec.tags.map(t, self.spec.ports.exists_one(p, p.alias == t || p.name == t))",
        "self.spec.ports.all(p, self.spec.ports.exists_one(q, q.name == p.name))",
        // Counted reads (`exists_one` of an equality, again over the same
        // list): the element on either side, empty and long strings.
        "self.spec.tags.all(t, self.spec.tags.exists_one(u, t == u))",
        "self.spec.ports.map(p, self.spec.tags.exists_one(t, t == p.name))",
        "self.spec.ports.map(p, self.spec.tags.exists(t, p.name == t))",
        "self.spec.tags.map(t, self.spec.tags.all(u, u != t))",
        "self.spec.tags.map(t, self.spec.ports.exists(p, p.name == t))",
        "self.spec.tags.map(t, self.spec.tags.filter(u, u == t).size())",
        "self.spec.ports.map(p, self.spec.ports.filter(q, p.name == q.name))",
        "self.spec.ports.all(p, self.spec.ports.all(q, q.port != p.port || q.name == p.name))",
        "self.spec.min <= self.spec.max && self.spec.max - self.spec.min < 100",
        // Two fields of one variable compared (`Ir::FieldPair`): ints by
        // every operator, strings by `==` and `!=`, chains of two and three
        // fields; ordered strings, and fields of another type in the
        // objects that mistype them, run as planned.
        "self.spec.min < self.spec.max || self.spec.min >= self.spec.max",
        "self.spec.min == self.spec.max || self.spec.min != self.spec.max",
        "self.spec.max > self.spec.min && self.spec.max <= self.spec.min",
        "self.spec.name == self.spec.opt.a || self.spec.opt.a != self.spec.name",
        "self.spec.name < self.spec.opt.a",
        "self.spec.ports.exists(p, p.alias == self.spec.name) || self.spec.name == 'x'",
        "self.spec.ports.map(p, p.name + self.spec.name).size() > 0",
        "self.spec.ports.filter(p, p.port > self.spec.min).all(p, p.port < self.spec.max)",
        "cel.bind(n, self.spec.name, self.spec.ports.all(p, p.name != n || n == self.spec.name))",
        "self.spec.labels.all(k, self.spec.labels[k] != self.spec.name)",
        "has(self.spec.opt) && self.spec.opt.a == self.spec.opt.a",
        "self.spec.?opt.a.orValue('') == self.spec.?opt.a.orValue('-')",
        "self.spec.ports.all(p, p.alias == p.alias)",
        "self.spec.ports.sortBy(p, p.port).map(p, p.name) == self.spec.ports.map(p, p.name)",
        "self.spec.ports.all(p, self.spec.ports.exists(q, q.alias == p.alias))",
        "self.spec.ports.map(p, self.spec.ports.filter(q, q.port > p.port).map(q, q.name)).size() >= 0",
        "self.spec.ports.exists(p, self.spec.ports.exists_one(q, has(q.alias) && q.alias == p.name))",
        // Fused comparisons (`fuse`): a field of a variable with an int, a
        // string or a literal list of strings; with an int the field's
        // own type or another (a string, a missing field: the walk decides).
        "self.spec.ports.all(p, p.port > 0 && p.port < 100)",
        "self.spec.ports.exists(p, p.name == 'web' && p.port == 80)",
        "self.spec.ports.filter(p, p.name in ['a', 'web']).size() == 1",
        "self.spec.ports.all(p, p.name != 'a-name-well-over-ten-bytes' || p.port <= 9)",
        "self.spec.ports.all(p, !(p.alias == 'web') || p.port >= 80)",
        "self.spec.tags.all(t, self.spec.ports.exists(p, p.port != 1 && p.name == t))",
        "self.spec.min >= 1 && self.spec.max != 90 || self.spec.name == 'a'",
        "self.spec.ports.all(p, p.alias in ['web'])",
        "self.spec.opt.a == 'z' || self.spec.labels.c != 'web'",
        "self.spec.tags.all(t, self.spec.opt.a in ['z', t])",
        // Fused `matches` and `size` of a field, and loops whose bodies
        // are made of fused tests (run on the JSON objects in place):
        // every quantifier, `!`, an element that is not an object.
        "self.spec.ports.all(p, p.name.matches('^[a-z]+$') && size(p.name) <= 3)",
        "self.spec.ports.exists_one(p, !(p.port > 2) || p.name.matches('b'))",
        "self.spec.ports.filter(p, size(p.name) >= 1 && p.port != 3).size() == 1",
        "self.spec.ports.exists(p, !p.name.matches('^w') && p.alias == 'web')",
        "self.spec.ports.filter(p, !(size(p.alias) > 2)).map(p, p.port)",
        // Bodies of one test or two, on the same field or on two (decided
        // once per loop, see `shapes::Shape`).
        "self.spec.ports.exists(p, p.name == 'web' && p.port == 80)",
        "self.spec.ports.all(p, p.port < 3 || p.alias != 'web')",
        "self.spec.ports.exists_one(p, p.alias in ['web', 'b'])",
        // One string test, in a loop of its own (`shapes::Strs`): `==` and
        // `!=`, short, empty and long constants, each kind of loop.
        "self.spec.ports.filter(p, p.name == 'web').size() >= 0",
        "self.spec.ports.all(p, p.alias != 'a-name-well-over-ten-bytes')",
        "self.spec.ports.exists_one(p, p.name == '')",
        "self.spec.ports.exists(p, p.name != 'web')",
        "self.spec.ports.filter(p, p.port >= 2 || p.port == 0).size() == 2",
        "size(self.spec.name) < 4 && self.spec.name.matches('^w') || size(self.spec.opt.a) == 1",
        // Loops whose body is a counted equality loop, answered by lookups:
        // every outer quantifier, the element on either side, `all` of
        // `!=`, ints (not counted: walked each time).
        "self.spec.ports.filter(p, self.spec.ports.exists_one(q, q.name == p.name)).size()",
        "self.spec.ports.exists_one(p, self.spec.ports.all(q, q.name != p.alias))",
        "self.spec.ports.exists(p, self.spec.ports.exists(q, p.name == q.alias))",
        "self.spec.ports.all(p, self.spec.ports.exists(q, q.port == p.port))",
        // The outer element's field is the inner one's own (a uniqueness
        // check): the inner loop's kept reads serve the outer elements.
        "self.spec.ports.all(p, self.spec.ports.exists(q, p.name == q.name))",
        "self.spec.ports.exists_one(p, self.spec.ports.exists_one(q, q.alias == p.alias))",
        // The same field of another list of the same schema: read from the
        // outer element, not taken from the inner list's reads (a
        // transition rule's `oldSelf.l.all(o, self.l.exists(n, n.f ==
        // o.f))` has this form).
        "self.spec.ports.all(p, self.spec.spare.exists_one(q, q.name == p.name))",
        "self.spec.ports.all(p, self.spec.spare.exists(q, q.name == p.name))",
        "self.spec.spare.filter(p, self.spec.ports.exists_one(q, p.name == q.name)).size()",
        "self.spec.spare.exists(p, self.spec.ports.all(q, q.alias != p.name))",
        // ... with the outer field at another schema position, of a format
        // that converts strings, in a loop entered again, and beside a
        // loop reading the same field.
        "self.spec.moved.all(p, self.spec.ports.exists(q, q.name == p.name))",
        "self.spec.stamps.exists(p, self.spec.stamps2.exists_one(q, q.name == p.name))",
        "self.spec.spare.all(x, self.spec.moved.all(p, self.spec.ports.exists(q, q.name == p.name)))",
        "self.spec.spare.all(p, self.spec.ports.exists(q, q.name == p.name)) || self.spec.spare.exists(p, p.name == 'zz')",
        // An outer element's own read looked up by an inner `all` of `!=`.
        "self.spec.ports.exists(p, self.spec.ports.all(q, q.name != p.name))",
        // Fused int and size tests at the ends of the ints (each a range
        // decided once per loop), on ports whose numbers reach them and
        // pass them (a port past i64 is no int: the walk decides).
        "self.spec.ports.all(p, p.port > 9223372036854775807)",
        "self.spec.ports.exists(p, p.port < -9223372036854775807)",
        "self.spec.ports.exists(p, p.port < -9223372036854775808)",
        "self.spec.ports.all(p, p.port <= 9223372036854775807 && p.port >= -9223372036854775807)",
        "self.spec.ports.exists_one(p, p.port != 80 || p.port < -9223372036854775806)",
        "self.spec.ports.filter(p, size(p.name) != 3 && size(p.name) < 2).size()",
        // The size of a list field, read from the JSON (`Read::Len`).
        "size(self.spec.ports) <= 2",
        "size(self.spec.tags) == 3 || size(self.spec.spare) > 3",
        "self.spec.ports.all(p, size(p.hosts) <= 1)",
        "self.spec.ports.exists(p, size(p.hosts) > 1 && p.port > 0)",
        // Fields of a bound variable compared (`Ir::FieldPair`).
        "cel.bind(s, self.spec, s.min <= s.max && s.name != s.opt.a)",
        // A pattern and a size of one name (`shapes::Named`), in either
        // order, joined either way, in each kind of loop.
        "self.spec.ports.all(p, p.name.matches('^[a-zäöü-]+$') && size(p.name) <= 6)",
        "self.spec.ports.exists(p, size(p.name) > 20 || p.name.matches('b$'))",
        "self.spec.ports.filter(p, size(p.name) < 7 && p.name.matches('^[^w]')).size() >= 0",
        "self.spec.ports.exists_one(p, p.name.matches('e') || size(p.name) == 0)",
        "self.spec.ports.exists(p, size(p.name) > 9223372036854775807)",
    ];
    let objects = [
        json!({"spec": {"name": "web", "min": 1, "max": 90, "opt": {"a": "z"},
            "labels": {"a": "b", "c": "web"}, "tags": ["web", "m", "web"],
            "ports": [{"name": "web", "port": 80, "alias": "web"}, {"name": "m", "port": 9}],
            "spare": [{"name": "m"}, {"name": "web"}]}}),
        json!({"spec": {"name": "a", "min": 5, "max": 1, "tags": ["b"],
            "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}, {"name": "b", "port": 3}],
            "spare": [{"name": "b"}, {"name": "c"}, {"name": "c"}]}}),
        json!({"spec": {"ports": [{"port": 1}, {"name": "x"}]}}),
        json!({"spec": {"name": 5, "min": "x", "opt": {"a": 1}, "tags": [1, "a"],
            "ports": [{"name": 1, "port": "x"}]}}),
        json!({"spec": {}}),
        json!({"spec": {"tags": "web", "spare": {}, "ports": 3}}),
        json!({"spec": {"tags": ["", "a-name-well-over-ten-bytes", "x", "", "y"],
            "ports": [{"name": ""}, {"name": "a-name-well-over-ten-bytes"}, {"name": "x"},
                {"name": "a-name-well-over-ten-bytes"}, {"name": ""}]}}),
        json!({"spec": {"ports": [{"name": "b", "port": 1, "alias": "web", "hosts": ["a", "b"]},
            7, null, {"name": "ünï", "port": 3, "alias": "wébb", "hosts": "x"},
            {"name": "c", "hosts": []}]}}),
        // Outer lists of two lists: a field at another position, some
        // elements lacking properties before it; strings of a format, one
        // that parses (base64 of "web") and one that does not; elements
        // that are null, a number, or lack the field.
        json!({"spec": {"ports": [{"name": "web", "port": 80}, {"name": "d2Vi"}, {"name": "m"}],
            "moved": [{"a1": "x", "name": "m"}, {"name": "web"}, {"a0": "y", "a1": "z", "name": "d2Vi"}],
            "stamps": [{"name": "web!"}, {"name": "d2Vi"}],
            "stamps2": [{"name": "d2Vi"}, {"name": "web!"}, {"name": "bQ=="}],
            "spare": [{"name": "m"}, null, 7, {"alias": "web"}]}}),
        json!({"spec": {"ports": [{"name": "web"}, {"name": "m"}],
            "moved": [{"name": "m"}, {"name": "web"}],
            "stamps": [{"name": "d2Vi"}],
            "stamps2": [{"name": "d2Vi"}],
            "spare": [{"name": "web"}, {"name": "m"}]}}),
        // Ports at the ends of the ints, and one past them.
        json!({"spec": {"ports": [{"name": "abc", "port": 9223372036854775807_i64},
            {"name": "a", "port": -9223372036854775807_i64 - 1}, {"name": "ab", "port": 80},
            {"name": "x", "port": 18446744073709551615_u64}]}}),
        // Long names compared (their charges depend on both lengths), in
        // bytes and characters: over ten bytes in six characters.
        json!({"spec": {"tags": ["äöüäöü", "a-long-tag-name", "äöüäöü-äöüäöü"],
            "ports": [{"name": "äöüäöü"}, {"name": "a-name-well-over-ten-bytes"},
                {"name": "äöüäöü-äöüäöü"}, {"name": "short"}, {"name": "äöüäöü"},
                {"name": "a-name-well-over-ten-bytes-and-more"}]}}),
    ];
    let opts = Environment::crd_rule(false);
    let mut planned_any = false;
    let mut planned_by_element = false;
    let mut planned_scan = false;
    let mut fused = 0;
    let mut pairs = 0;
    let mut fused_loops = 0;
    let mut counted_loops = 0;
    let mut counted_same = 0;
    let programs = planned_and_plain(&exprs, &s, opts);
    // The planned programs run in one scratch frame, one after another as a
    // review's rules do, so nothing of one evaluation may reach the next;
    // the plain ones each in a frame of their own.
    let mut scratch = crate::Scratch::default();
    for (expr, with, _) in &programs {
        // The forms added for the range kernels and the bool-only tally
        // must take the paths they are here for.
        if expr.contains("922337203685477580") || expr.contains("size(p.name) != 3") {
            assert_eq!(count_loops(&with.ir, &|l| l.fused_body), 1, "{expr}");
        }
        if expr.contains("all(q, q.name != p.name)") {
            assert_eq!(count_loops(&with.ir, &|l| l.counted_same), 1, "{expr}");
        }
        fused += count_fused(&with.ir);
        pairs += count_pairs(&with.ir);
        fused_loops += count_loops(&with.ir, &|l| l.fused_body);
        counted_loops += count_loops(&with.ir, &|l| l.counted_body);
        counted_same += count_loops(&with.ir, &|l| l.counted_same);
        planned_any |= with.memos.by_binding > 0;
        planned_by_element |= with.memos.by_element > 0;
        planned_scan |= with.memos.by_scan > 0;
    }
    // Each object through every program in turn: what one program kept of
    // an object must not answer for the next one.
    for obj in &objects {
        for (expr, with, without) in &programs {
            let (_, full) = without.eval(Value::from_json(obj, &s), None, u64::MAX);
            // No limit first (a run stopped by its limit gives up its kept
            // reads), then every limit that stops it.
            for limit in [u64::MAX].into_iter().chain(0..=full) {
                let this = Value::from_json(obj, &s);
                assert_eq!(
                    shown(with.eval_in_scratch(&mut scratch, this, None, limit)),
                    shown(without.eval(Value::from_json(obj, &s), None, limit)),
                    "{expr} on {obj} at limit {limit}"
                );
                assert!(
                    scratch.is_empty(),
                    "{expr} left values in the scratch frame"
                );
            }
        }
    }
    assert!(planned_any, "the memo pass kept no field read");
    assert!(
        planned_by_element,
        "the memo pass kept no field read per element"
    );
    assert!(planned_scan, "the memo pass marked no loop as a scan");
    assert!(fused >= 14, "{fused} comparisons fused");
    assert!(pairs >= 13, "{pairs} comparisons of two fields fused");
    assert!(
        fused_loops >= 8,
        "{fused_loops} loops run on JSON objects in place"
    );
    assert!(
        counted_loops >= 6,
        "{counted_loops} loops answered from counted reads"
    );
    assert!(
        counted_same >= 4,
        "{counted_same} counted loops comparing the inner element's own field"
    );
}

/// Which re-read chains the memo pass keeps: a chain of one or two fields
/// of `self` read again outside any loop is read again (cheaper than the
/// memo's frame cells); a longer one, or one read on every step of a loop,
/// is kept. The results and charges are the same either way (the test
/// above compares both with the plain walk).
#[test]
fn short_chains_on_self_are_read_again_and_longer_or_looped_ones_kept() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "min": {"type": "integer"},
            "deep": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "tags": {"type": "array", "items": {"type": "string"}}
        }}}
    }));
    let kept = |expr: &str| {
        let p = Program::compile_planned(expr, &s, Environment::crd_rule(false), true).expect(expr);
        p.memos.by_binding
    };
    assert_eq!(kept("self.spec.min >= 0 && self.spec.min <= 9"), 0);
    assert_eq!(
        kept("has(self.spec.deep) && self.spec.deep == self.spec.deep"),
        0
    );
    assert_eq!(kept("self.spec.deep.a >= 0 && self.spec.deep.a <= 9"), 1);
    // Read on every step: `self.spec.min` and, within it, `self.spec`.
    assert_eq!(
        kept("self.spec.tags.all(t, t != '' && self.spec.min > 0)"),
        2
    );
}

fn count_loops(ir: &crate::ir::Ir, marked: &dyn Fn(&crate::ir::Loop) -> bool) -> usize {
    let mut n = usize::from(matches!(ir, crate::ir::Ir::Loop(l) if marked(l)));
    ir.each_child(&mut |child| n += count_loops(child, marked));
    n
}

fn count_fused(ir: &crate::ir::Ir) -> usize {
    let mut n = usize::from(matches!(ir, crate::ir::Ir::FieldCmp(_)));
    ir.each_child(&mut |child| n += count_fused(child));
    n
}

#[test]
fn an_older_kubernetes_version_lacks_newer_functions_and_macros() {
    let s = schema(json!({"type": "array", "items": {"type": "integer"}}));
    let rule = |expr: &str, version| {
        Program::compile(expr, &s, Environment::crd_rule(false).at(version)).map(|_| ())
    };
    // Two-variable comprehensions arrived in 1.32, quantities in 1.28.
    assert!(rule("self.all(i, v, v > i)", 32).is_ok());
    let err = rule("self.all(i, v, v > i)", 31).unwrap_err();
    assert!(
        err.message.contains("undeclared reference to 'all'"),
        "{}",
        err.message
    );
    assert!(rule("quantity('1Gi').isInteger()", 28).is_ok());
    let err = rule("quantity('1Gi').isInteger()", 27).unwrap_err();
    assert!(
        err.message.contains("undeclared reference to 'quantity'"),
        "{}",
        err.message
    );
    // The Kubernetes lists library v1 (`includes`) arrived in 1.37.
    assert!(rule("self.includes(2)", 37).is_ok());
    let err = rule("self.includes(2)", 36).unwrap_err();
    assert!(
        err.message.contains("undeclared reference to 'includes'"),
        "{}",
        err.message
    );
    // The newest version this build knows is the default.
    assert_eq!(
        Environment::crd_rule(false).version,
        crate::environment::LATEST
    );
}

/// A conditional's attribute branch is not charged its attribute step: a
/// branch that ends exactly at the limit passes, and one that charges
/// nothing (a field of an empty optional) takes nothing back.
#[test]
fn a_conditional_s_attribute_branch_is_charged_as_cel_go_charges_it() {
    let s = crontab();
    let p = Program::compile("true ? self.spec.replicas : 0", &s, Environment::default()).unwrap();
    let obj = json!({"spec": {"replicas": 3}});
    // cel-go: the two field reads, not the attribute's own step.
    let (r, cost) = p.eval(Value::from_json(&obj, &s), None, 2);
    assert_eq!((r.map(|v| to_json(&v)), cost), (Ok(json!(3)), 2));
    let (r, _) = p.eval(Value::from_json(&obj, &s), None, 1);
    assert_eq!(r.unwrap_err().kind, ErrorKind::CostLimit);
    // Nothing charged by the branch, nothing taken back from before it.
    let (r, cost) = eval_with_limit(
        "[1].all(x, (x == 1 ? optional.none().?f : optional.none()) == optional.none())",
        100,
    );
    assert_eq!(r.unwrap(), json!(true));
    assert!(cost > 0);
}

/// A conversion of a literal folded when checked is still checked and
/// priced as the call it was: a bad constant pattern is refused at load,
/// and bytes folded from a string are priced as bytes.
#[test]
fn folded_conversions_are_checked_and_priced_as_calls() {
    let s = crontab();
    let compile = |e: &str| Program::compile(e, &s, Environment::default());
    assert!(compile("self.spec.x__dash__prop.matches(string('('))").is_err());
    // bytes('abc') 1, string(bytes) 1 with the bytes' size, == on 3 and 3.
    let p = compile("string(bytes('abc')) == 'abc'").unwrap();
    assert_eq!(p.estimated_cost(), 3.0);
}
