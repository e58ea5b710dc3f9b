//! Unit tests of the engine through its public API.

use super::*;
use celhook_json::json;
use celhook_schema::Schema;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

fn schema(v: celhook_json::Value) -> Schema {
    let p: JSONSchemaProps = serde_json::from_value(v.into()).expect("schema");
    Schema::from_openapi(&p).expect("structural")
}

/// Each expression compiled with the memo pass (and the loops it plans)
/// and without: tests compare the two on the same objects.
fn planned_and_plain<'e>(
    exprs: &[&'e str],
    s: &Schema,
    env: Environment,
) -> Vec<(&'e str, Program, Program)> {
    exprs
        .iter()
        .map(|&expr| {
            let with = Program::compile_planned(expr, s, env, true).expect(expr);
            let without = Program::compile_planned(expr, s, env, false).expect(expr);
            (expr, with, without)
        })
        .collect()
}

/// An evaluation's result and charge, comparable.
fn shown(
    (r, cost): (Result<Value<'_>, EvalError>, u64),
) -> (Result<celhook_json::Value, String>, u64) {
    (
        r.map(|v| to_json(&v)).map_err(|e| e.message.to_string()),
        cost,
    )
}

/// How many comparisons of two fields the planner fused in `ir`.
fn count_pairs(ir: &crate::ir::Ir) -> usize {
    let mut n = usize::from(matches!(ir, crate::ir::Ir::FieldPair(_)));
    ir.each_child(&mut |child| n += count_pairs(child));
    n
}

fn run(expr: &str, s: &Schema, obj: &celhook_json::Value) -> Result<celhook_json::Value, String> {
    let p = Program::compile(expr, s, Environment::crd_rule(false)).map_err(|e| e.message)?;
    let (r, _) = p.eval(Value::from_json(obj, s), None, PER_EXPRESSION_COST_LIMIT);
    r.map(|v| to_json(&v)).map_err(|e| e.message.to_string())
}

fn crontab() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "minReplicas": {"type": "integer"},
                "replicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "ratio": {"type": "number"},
                "x-prop": {"type": "string"},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "when": {"type": "string", "format": "date-time"},
                "ttl": {"type": "string", "format": "duration"}
            }}
        }
    }))
}

#[test]
fn evaluates_the_docs_replica_rules() {
    let s = crontab();
    let obj = json!({"spec": {"minReplicas": 0, "replicas": 20, "maxReplicas": 10}});
    assert_eq!(
        run("self.spec.minReplicas <= self.spec.replicas", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.replicas <= self.spec.maxReplicas", &s, &obj),
        Ok(json!(false))
    );
}

#[test]
fn numbers_typed_double_compare_with_double_literals() {
    let s = crontab();
    let obj = json!({"spec": {"ratio": 1}});
    assert_eq!(run("self.spec.ratio == 1.0", &s, &obj), Ok(json!(true)));
    assert_eq!(
        run("type(self.spec.ratio) == double", &s, &obj),
        Ok(json!(true))
    );
}

#[test]
fn undefined_fields_are_refused_at_compile_time() {
    let s = crontab();
    let err = run("self.spec.nonExistingField > 0", &s, &json!({})).unwrap_err();
    assert!(
        err.starts_with("ERROR: <input>:1:10: undefined field 'nonExistingField'"),
        "{err}"
    );
}

#[test]
fn has_on_self_is_refused() {
    let s = crontab();
    let err = run("has(self)", &s, &json!({})).unwrap_err();
    assert!(err.contains("invalid argument to has() macro"), "{err}");
}

#[test]
fn escaped_property_names_resolve() {
    let s = crontab();
    let obj = json!({"spec": {"x-prop": "a"}});
    assert_eq!(
        run("self.spec.x__dash__prop == 'a'", &s, &obj),
        Ok(json!(true))
    );
}

#[test]
fn only_the_escaped_spelling_selects_a_double_underscore() {
    let s = schema(json!({
        "type": "object",
        "properties": {"a__b": {"type": "integer"}, "__x__": {"type": "integer"}}
    }));
    let obj = json!({"a__b": 1, "__x__": 2});
    assert_eq!(
        run("self.a__underscores__b == 1", &s, &obj),
        Ok(json!(true))
    );
    let err = run("self.a__b == 1", &s, &obj).unwrap_err();
    assert!(err.contains("undefined field 'a__b'"), "{err}");
    let err = run("has(self.__x__)", &s, &obj).unwrap_err();
    assert!(err.contains("undefined field '__x__'"), "{err}");
    assert_eq!(
        run("self.__underscores__x__underscores__", &s, &obj),
        Ok(json!(2))
    );
}

#[test]
fn reserved_words_select_fields_unless_they_are_literals() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "namespace": {"type": "string"}, "if": {"type": "string"}, "true": {"type": "string"}
        }
    }));
    let obj = json!({"namespace": "n", "if": "i", "true": "t"});
    assert_eq!(
        run("self.namespace + self.__namespace__ + self.if", &s, &obj),
        Ok(json!("nni"))
    );
    assert_eq!(run("self.__true__", &s, &obj), Ok(json!("t")));
    // cel-go's wording, not ANTLR's, for a literal after a dot.
    let err = run("self.true == 't'", &s, &obj).unwrap_err();
    assert_eq!(
        err,
        "ERROR: <input>:1:6: Syntax error: mismatched input 'true' expecting IDENTIFIER\n | self.true == 't'\n | .....^"
    );
    let err = run("self.null", &s, &obj).unwrap_err();
    assert!(
        err.contains("Syntax error: mismatched input 'null' expecting IDENTIFIER"),
        "{err}"
    );
}

#[test]
fn embedded_metadata_declared_in_full_keeps_its_other_fields() {
    let string = json!({"type": "string"});
    let embedded = |meta: celhook_json::Value| {
        schema(json!({"type": "object", "properties": {"e": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"kind": string, "apiVersion": string, "metadata": meta}
        }}}))
    };
    let obj = json!({"e": {"metadata": {"name": "a", "namespace": "ns"}}});
    let full = embedded(json!({"type": "object", "properties": {
        "name": string, "generateName": string, "namespace": string}}));
    assert_eq!(
        run("self.e.metadata.namespace == 'ns'", &full, &obj),
        Ok(json!(true))
    );
    // Without generateName the metadata is replaced by name and generateName.
    let partial = embedded(json!({"type": "object", "properties": {
        "name": string, "namespace": string}}));
    let err = run("self.e.metadata.namespace == 'ns'", &partial, &obj).unwrap_err();
    assert!(err.contains("undefined field 'namespace'"), "{err}");
}

#[test]
fn missing_keys_are_runtime_errors_and_has_tests_presence() {
    let s = crontab();
    let obj = json!({"spec": {"replicas": null}});
    assert_eq!(run("has(self.spec.replicas)", &s, &obj), Ok(json!(false)));
    assert_eq!(
        run("self.spec.replicas > 0", &s, &obj),
        Err("no such key: replicas".into())
    );
}

#[test]
fn macros_and_logic_absorb_errors_like_cel() {
    let s = crontab();
    let obj = json!({"spec": {"tags": ["a", "b"], "labels": {"app": "x"}}});
    assert_eq!(
        run("self.spec.tags.all(t, t.size() == 1)", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.tags.exists(t, t == 'b')", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.tags.exists_one(t, t == 'b')", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.tags.map(t, t + t)", &s, &obj),
        Ok(json!(["aa", "bb"]))
    );
    assert_eq!(
        run("self.spec.tags.filter(t, t != 'a')", &s, &obj),
        Ok(json!(["b"]))
    );
    assert_eq!(run("'app' in self.spec.labels", &s, &obj), Ok(json!(true)));
    assert_eq!(
        run(
            "self.spec.labels.all(k, self.spec.labels[k] == 'x')",
            &s,
            &obj
        ),
        Ok(json!(true))
    );
    assert!(run("self.spec.missing == 1 || true", &s, &obj)
        .unwrap_err()
        .contains("undefined field"));
    assert_eq!(
        run("self.spec.replicas == 1 || true", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("false && self.spec.replicas == 1", &s, &obj),
        Ok(json!(false))
    );
}

#[test]
fn set_lists_compare_without_order() {
    let s = crontab();
    let obj = json!({"spec": {"tags": ["a", "b"]}});
    assert_eq!(
        run("self.spec.tags == ['b', 'a']", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.tags + ['b', 'c']", &s, &obj),
        Ok(json!(["a", "b", "c"]))
    );
}

#[test]
fn optionals_and_bind_work() {
    let s = crontab();
    let obj = json!({"spec": {"replicas": 3}});
    assert_eq!(
        run("self.spec.?replicas.orValue(0) == 3", &s, &obj),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.?minReplicas.orValue(7)", &s, &obj),
        Ok(json!(7))
    );
    assert_eq!(
        run("cel.bind(r, self.spec.replicas, r * r)", &s, &obj),
        Ok(json!(9))
    );
    assert_eq!(
        run("[1, 2, 3].exists(i, v, i == 1 && v == 2)", &s, &obj),
        Ok(json!(true))
    );
}

#[test]
fn kubernetes_environment_details() {
    let s = crontab();
    let obj = json!({"spec": {"when": "2011-08-18T19:03:37.01Z"}});
    assert_eq!(
        run(
            "type(self.spec.when) == google.protobuf.Timestamp",
            &s,
            &obj
        ),
        Ok(json!(true))
    );
    assert_eq!(
        run("self.spec.when.getHours('01:00')", &s, &obj),
        Ok(json!(20))
    );
    assert_eq!(
        run("self.spec.when.getHours('America/New_York')", &s, &obj),
        Ok(json!(15))
    );
    assert_eq!(
        run("self.spec.when.getHours('Mars/Olympus') == 1", &s, &obj),
        Err("unknown time zone Mars/Olympus".into())
    );
    assert!(run("timestamp(-62135596801) == timestamp(0)", &s, &obj)
        .unwrap_err()
        .contains("invalid timestamp argument"));
    assert_eq!(
        run(
            "optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00Z')) == optional.none()",
            &s,
            &obj
        ),
        Ok(json!(true))
    );
    assert_eq!(
        run("[1, 2].map(x, x).slice(2, 1) == []", &s, &obj),
        Err("cannot slice(2, 1), start index must be less than or equal to end index".into())
    );
    assert!(run("['a'].sum() == 'a'", &s, &obj)
        .unwrap_err()
        .contains("found no matching overload for 'sum' applied to 'list(string).()'"));
}

#[test]
fn preserved_unknown_fields_are_out_of_reach_but_count_for_equality() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "anything": {"x-kubernetes-preserve-unknown-fields": true},
            "items": {"type": "array", "items": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"name": {"type": "string"}}}}
        }
    }));
    assert!(run("has(self.anything)", &s, &json!({}))
        .unwrap_err()
        .contains("undefined field 'anything'"));
    let obj = json!({"items": [{"name": "a", "extra": 1}, {"name": "a", "extra": 2}]});
    assert_eq!(
        run("self.items[0] != self.items[1]", &s, &obj),
        Ok(json!(true))
    );
}

#[test]
fn values_print_and_fail_as_cel_go_does() {
    let s = Schema::untyped(true);
    let run_dyn = |e: &str, this: celhook_json::Value| run(e, &s, &this);
    assert_eq!(
        run_dyn("string(1000000.0)", json!(null)),
        Ok(json!("1e+06"))
    );
    assert_eq!(
        run_dyn("string(999999.0)", json!(null)),
        Ok(json!("999999"))
    );
    assert_eq!(run_dyn("string(0.00001)", json!(null)), Ok(json!("1e-05")));
    assert_eq!(
        run_dyn(
            "string(timestamp('2023-01-01T10:00:00.120+02:00') + duration('1h'))",
            json!(null)
        ),
        Ok(json!("2023-01-01T11:00:00.12+02:00"))
    );
    assert_eq!(
        run_dyn(
            "timestamp('2023-01-01T10:00:00+02:00').getHours()",
            json!(null)
        ),
        Ok(json!(8))
    );
    assert_eq!(
        run_dyn("timestamp(self)", json!("2023-01-01t00:00:00z")),
        Err("type conversion error from 'string' to 'google.protobuf.Timestamp'".into())
    );
    assert_eq!(
        run_dyn(
            "timestamp('9999-12-31T23:59:59Z') + duration(self)",
            json!("1s")
        ),
        Err("timestamp overflow".into())
    );
    assert_eq!(
        run_dyn("duration('2562047h') + duration(self)", json!("2562047h")),
        Err("integer overflow".into())
    );
    assert_eq!(
        run_dyn("duration('3723.5s').getMilliseconds()", json!(null)),
        Ok(json!(3723500))
    );
    assert_eq!(
        run_dyn("self.getHours()", json!("abc")),
        Err("no such overload: getHours(string)".into())
    );
    assert_eq!(
        run_dyn("size(self)", json!(1)),
        Err("no such overload: size".into())
    );
    assert_eq!(
        run_dyn("self + self", json!(true)),
        Err("no such overload: _+_".into())
    );
    assert_eq!(
        run_dyn("self.foo", json!(1)),
        Err("no such key: foo".into())
    );
    assert_eq!(
        run_dyn("uint(self)", json!("+1")),
        Err("type conversion error from 'string' to 'uint'".into())
    );
    assert_eq!(
        run_dyn("self.?n.hasValue()", json!({"n": null})),
        Ok(json!(true))
    );
    assert_eq!(
        run_dyn("type(self) == map", json!({"a": 1})),
        Ok(json!(true))
    );
}

// Runtime error texts, operand type checks, static result types,
// runtime costs and size(), as cel-go has them.
mod checks;
// Cost limits, budgets and resource bounds.
mod limits;
// Timestamps, durations and time zones, as the API server reads them.
mod time;
// A policy's lazily evaluated variables.
mod composition;
// Uniqueness checks answered whole.
mod uniqueness;
// Two fields compared in one step.
mod pairs;
// Lists of flat objects kept by column.
mod tables;

#[test]
fn named_variables_replace_self_in_admission_environments() {
    let env = Environment::match_condition();
    let any = Schema::untyped(true);
    let p = Program::compile(
        "request.userInfo.username != 'admin' && object.metadata.name.startsWith('web') && oldObject == null",
        &any,
        env,
    )
    .expect("compiles");
    let request = json!({"userInfo": {"username": "dev"}});
    let object = json!({"metadata": {"name": "web-1"}});
    let values = [
        Value::from_json(&object, &any),
        Value::Null,
        Value::from_json(&request, &any),
    ];
    let (result, cost) = p.eval_variables(values, PER_EXPRESSION_COST_LIMIT);
    assert_eq!(result.map(|v| to_json(&v)), Ok(json!(true)));
    assert!(cost > 0);
    // Values left out are null.
    let (result, _) = p.eval_variables([Value::from_json(&object, &any)], 1_000);
    assert!(result.is_err(), "request is null: no field userInfo");
    for undeclared in ["self.x == 1", "oldSelf == null"] {
        let err = Program::compile(undeclared, &any, env).expect_err(undeclared);
        assert!(
            err.message.contains("undeclared reference"),
            "{undeclared}: {}",
            err.message
        );
    }
    // Loop variables still get their own slots after the named ones.
    let p = Program::compile("request.groups.exists(g, g == 'ops')", &any, env).expect("loop");
    let request = json!({"groups": ["dev", "ops"]});
    let (result, _) = p.eval_variables(
        [Value::Null, Value::Null, Value::from_json(&request, &any)],
        1_000,
    );
    assert_eq!(result.map(|v| to_json(&v)), Ok(json!(true)));
}
