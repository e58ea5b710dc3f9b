//! Compositions: a policy's variables read lazily as `variables.<name>`.

use crate::environment::Environment;
use crate::{Composition, Program, Value, PER_EXPRESSION_COST_LIMIT};
use celhook_json::json;
use celhook_schema::Schema;

fn compile(source: &str, names: &[&str]) -> Result<Program, String> {
    let declared: Vec<(&str, Option<&Program>)> = names.iter().map(|n| (*n, None)).collect();
    Program::compile_composited(source, Environment::admission_policy(), &declared)
        .map_err(|e| e.message)
}

#[test]
fn variables_read_earlier_variables_and_the_object() {
    let any = Schema::untyped(true);
    let object = json!({"spec": {"replicas": 3, "name": "web"}});
    let vars = [
        compile("object.spec.replicas", &[]).unwrap(),
        compile("variables.replicas * 2", &["replicas"]).unwrap(),
    ];
    let check = compile(
        "variables.doubled == 6 && variables.replicas == 3",
        &["replicas", "doubled"],
    )
    .unwrap();
    let c = Composition::new(
        vec![Value::from_json(&object, &any)],
        vec![("replicas", &vars[0]), ("doubled", &vars[1])],
        PER_EXPRESSION_COST_LIMIT,
    );
    let (result, _) = c.eval(&check, PER_EXPRESSION_COST_LIMIT);
    assert!(matches!(result, Ok(Value::Bool(true))), "{result:?}");
}

#[test]
fn a_variable_runs_only_when_read_and_at_most_once() {
    let any = Schema::untyped(true);
    let object = json!({"items": [1, 2, 3, 4, 5, 6, 7, 8]});
    let vars = [
        // Costs something measurable; fails when run on a missing key.
        compile("object.items.map(i, i * 2)", &[]).unwrap(),
        compile("object.missing", &[]).unwrap(),
    ];
    let names = ["doubled", "broken"];
    let c = Composition::new(
        vec![Value::from_json(&object, &any)],
        vec![("doubled", &vars[0]), ("broken", &vars[1])],
        PER_EXPRESSION_COST_LIMIT,
    );
    // `broken` is never reached: no error.
    let first = compile("size(variables.doubled) == 8 || variables.broken", &names).unwrap();
    let (r, _) = c.eval(&first, PER_EXPRESSION_COST_LIMIT);
    assert!(matches!(r, Ok(Value::Bool(true))), "{r:?}");
    let spent = c.take_cost();
    assert!(spent > 8, "the map ran once and was charged: {spent}");
    // Read again: kept, not run again.
    let again = compile("variables.doubled[7] == 16", &names).unwrap();
    let (r, own) = c.eval(&again, PER_EXPRESSION_COST_LIMIT);
    assert!(matches!(r, Ok(Value::Bool(true))), "{r:?}");
    assert_eq!(c.take_cost(), 0, "a kept variable costs nothing more");
    assert!(own < spent, "the reader's own cost excludes the variable's");
    // Reached: its error is the reader's error.
    let reads_broken = compile("variables.broken == 1", &names).unwrap();
    let (r, _) = c.eval(&reads_broken, PER_EXPRESSION_COST_LIMIT);
    let e = r.expect_err("the variable's error");
    assert_eq!(
        e.message,
        "composited variable \"broken\" fails to evaluate: no such key: missing"
    );
}

#[test]
fn unknown_variables_and_bare_variables_are_compile_errors() {
    let e = compile("variables.later == 1", &["earlier"]).unwrap_err();
    assert!(e.contains("undefined field 'later'"), "{e}");
    let e = compile("size(variables) == 1", &["earlier"]).unwrap_err();
    assert!(e.contains("variables can only be read by name"), "{e}");
    assert!(compile("has(variables.earlier)", &["earlier"]).is_ok());
    // Outside a composition `variables` is not declared at all.
    let e = Program::compile(
        "variables.x == 1",
        &Schema::untyped(true),
        Environment::match_condition(),
    )
    .unwrap_err();
    assert!(
        e.message.contains("undeclared reference to 'variables'"),
        "{}",
        e.message
    );
}

#[test]
fn policy_programs_report_the_variables_they_read() {
    // `authorizer` is declared so that a policy using it can be refused
    // by name rather than as an unknown reference.
    let p = compile("authorizer.path('/healthz').check('get').allowed()", &[]).unwrap();
    assert!(p.reads_variable(5) && !p.reads_variable(0));
    let p = compile("params.max > 1 && object.spec.x < 3", &[]).unwrap();
    assert!(p.reads_variable(0) && p.reads_variable(3));
    assert!(!p.reads_variable(1) && !p.reads_variable(5));
}

#[test]
fn variables_are_typed_by_their_expressions() {
    let list = compile("[1, 2, 3]", &[]).unwrap();
    let declared = [("nums", Some(&list))];
    let env = Environment::admission_policy();
    let e = Program::compile_composited("variables.nums['a'] == 1", env, &declared).unwrap_err();
    assert!(
        e.message
            .contains("found no matching overload for '_[_]' applied to '(list(int), string)'"),
        "{}",
        e.message
    );
    assert!(Program::compile_composited("variables.nums[0] == 1", env, &declared).is_ok());
}

#[test]
fn hidden_variables_are_undeclared_but_keep_their_slots() {
    let env = Environment::admission_policy().without(&["params"]);
    let e = Program::compile_composited("params.x == 1", env, &[]).unwrap_err();
    assert!(
        e.message.contains("undeclared reference to 'params'"),
        "{}",
        e.message
    );
    let p = Program::compile_composited("namespaceObject == null", env, &[]).unwrap();
    assert!(p.reads_variable(4), "namespaceObject keeps slot 4");
}

#[test]
fn a_variable_is_found_by_name_even_when_its_calls_do_not_compile() {
    let check = "authorizer.group('').resource('pods').check('get').allowed()";
    assert!(crate::mentions_variable(check, "authorizer"));
    assert!(crate::mentions_variable(
        "[1].all(x, authorizer.x(x))",
        "authorizer"
    ));
    assert!(!crate::mentions_variable(
        "[1].all(authorizer, authorizer > 0)",
        "authorizer"
    ));
    assert!(!crate::mentions_variable(
        "object.authorizer == 'x'",
        "authorizer"
    ));
    assert!(!crate::mentions_variable(
        "'authorizer' == 'x'",
        "authorizer"
    ));
}

#[test]
fn programs_that_read_no_input_are_told_apart() {
    // Comprehension variables are no input.
    let p = compile("[1, 2, 3].all(x, x > 0) && 'a' + 'b' == 'ab'", &["v"]).unwrap();
    assert!(p.reads_no_input());
    for source in [
        "object.x == 1",
        "variables.v == 1",
        "[1].all(x, x == size(request))",
    ] {
        let p = compile(source, &["v"]).unwrap();
        assert!(!p.reads_no_input(), "{source}");
    }
    let rule = Program::compile(
        "self > 1",
        &Schema::untyped(true),
        Environment::crd_rule(false),
    )
    .unwrap();
    assert!(!rule.reads_no_input());
}

#[test]
fn an_expression_reads_a_field_of_self_unless_every_use_selects_another() {
    let cases = [
        // Other fields only: the result cannot depend on metadata.
        ("self.spec.a == 1", false),
        ("self.?spec.toppings.optMap(ts, ts.map(t, t.name))", false),
        (
            "has(self.spec) && self.status.x.all(k, k != 'metadata')",
            false,
        ),
        ("[1, 2].map(x, {'metadata': x})", false),
        // The field itself, by each way of selecting it.
        ("self.metadata.name == 'x'", true),
        ("has(self.metadata.labels)", true),
        ("self.?metadata.orValue({})", true),
        // `self` whole, indexed, passed on, or bound anew: counted as read.
        ("self == self", true),
        ("self['spec'] == 1", true),
        ("size(self) > 0", true),
        ("self.all(k, k != 'spec')", true),
        ("[1].all(self, self > 0)", true),
        // Not parsed here: counted as read.
        ("self.spec.(", true),
    ];
    for (source, reads) in cases {
        assert_eq!(
            crate::may_read_self_field(source, "metadata"),
            reads,
            "{source}"
        );
    }
}

#[test]
fn the_fields_of_self_an_expression_selects() {
    let fields = |source: &str| crate::self_fields(source).map(|f| f.join(","));
    let cases: &[(&str, Option<&str>)] = &[
        // Each way of selecting a field, sorted and once each.
        (
            "self.replicas <= self.max && self.replicas >= self.min",
            Some("max,min,replicas"),
        ),
        ("has(self.tls) && self.tls.enabled", Some("tls")),
        ("self.?spec.orValue(1) == 1", Some("spec")),
        (
            "self.ports.all(p, p.port > 0 && p.name != self.appName)",
            Some("appName,ports"),
        ),
        // No use of `self` at all: nothing of it is read.
        ("1 + 1 == 2", Some("")),
        // `self` whole, indexed, sized, iterated, optionally indexed by a
        // computed key, rebound or bound by a macro: anything may be read.
        ("self == oldSelf", None),
        ("self['spec'] == 1", None),
        ("size(self) > 0", None),
        ("self.all(k, k != 'spec')", None),
        ("self.?[string(1)].hasValue()", None),
        ("cel.bind(self, 1, self > 0)", None),
        ("[1].all(self, self > 0)", None),
        // Not parsed here.
        ("self.spec.(", None),
    ];
    for (source, expected) in cases {
        assert_eq!(fields(source).as_deref(), *expected, "{source}");
    }
}

#[test]
fn the_chains_of_fields_an_expression_selects_from_self() {
    // Each chain as `a.b`, a presence test as `a.b?`, sorted.
    let paths = |source: &str| {
        let (expr, _) = crate::syntax::parse(source).expect("parses");
        crate::syntax::self_paths_of(&expr).map(|paths| {
            let shown: Vec<String> = paths
                .iter()
                .map(|p| {
                    format!(
                        "{}{}",
                        p.fields.join("."),
                        if p.presence { "?" } else { "" }
                    )
                })
                .collect();
            shown.join(",")
        })
    };
    let cases: &[(&str, Option<&str>)] = &[
        // A chain as long as it is written; its value may be used any way.
        (
            "self.spec.replicas <= self.spec.max && size(self.spec.tags) < 3",
            Some("spec.max,spec.replicas,spec.tags"),
        ),
        // A presence test at each depth, and a read of the same field.
        (
            "!has(self.a) || (has(self.a.min) && self.a.min <= self.a.max)",
            Some("a?,a.max,a.min,a.min?"),
        ),
        // Optional selections are chains too; `orValue` uses the value.
        ("self.?a.?b.orValue('') != 'x'", Some("a.b")),
        // An index, a call or a macro on a chain ends it there.
        ("self.a.b[0] == 1 && self.c['d'] == 2", Some("a.b,c")),
        ("self.a.all(p, p.x > 0) && self.b.size() > 0", Some("a,b")),
        ("self.a.startsWith('x')", Some("a")),
        // A presence test is a bool: nothing is selected on it.
        ("has(self.a.b) == true", Some("a.b?")),
        // `self` used otherwise: anything may be read.
        ("self.a == 1 && size(self) > 0", None),
        ("cel.bind(x, self, x.a > 0)", None),
        ("self.a.all(self, self > 0)", None),
        ("self['a'] == 1", None),
        // Selections on anything else are not chains from `self`.
        ("[{'a': 1}].all(x, x.a > 0) && self.b > 0", Some("b")),
        ("{'a': {'b': self.c}}.a.b == 1", Some("c")),
    ];
    for (source, expected) in cases {
        assert_eq!(paths(source).as_deref(), *expected, "{source}");
    }
    // The fields of `self` are the chains' first ones.
    assert_eq!(
        crate::self_fields("!has(self.a) || self.a.min <= self.b.max").as_deref(),
        Some(&["a".to_string(), "b".to_string()][..])
    );
}
