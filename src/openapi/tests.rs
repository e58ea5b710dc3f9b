//! The API server's schema errors, text for text (the newest version
//! unless a test names another), from the cases of apiextensions' and
//! kube-openapi's validation tests.

use celhook_json::{json, Value as Json};

use super::*;

fn check(schema: Json, object: Json) -> Vec<String> {
    check_update(schema, object, None)
}

fn check_update(schema: Json, object: Json, old: Option<Json>) -> Vec<String> {
    check_at("1.37", schema, object, old)
}

fn check_at(version: &str, schema: Json, object: Json, old: Option<Json>) -> Vec<String> {
    let version: KubeVersion = version.parse().expect("version");
    let props: JSONSchemaProps = celhook_json::from_value(schema).expect("schema");
    let c = SchemaCheck::compile(&props, version).expect("compiles");
    c.check(&object, old.as_ref())
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn spec(properties: Json) -> Json {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}})
}

#[test]
fn types_are_checked_with_the_inferred_type_in_the_text() {
    let s = spec(json!({
        "replicas": {"type": "integer"},
        "name": {"type": "string"},
        "ratio": {"type": "number"},
        "list": {"type": "array", "items": {"type": "string"}},
        "port": {"x-kubernetes-int-or-string": true},
    }));
    assert_eq!(
        check(s.clone(), json!({"spec": {"replicas": "3", "name": 3, "ratio": 2, "list": ["a", 1], "port": true}})),
        [
            "spec.list[1]: Invalid value: \"integer\": spec.list[1] in body must be of type string: \"integer\"",
            "spec.name: Invalid value: \"integer\": spec.name in body must be of type string: \"integer\"",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ]
    );
    // An integral float is an integer; a number takes an integer.
    assert!(check(s, json!({"spec": {"replicas": 3.0, "ratio": 1}})).is_empty());
}

#[test]
fn a_kept_format_checks_strings_and_names_itself_for_other_types() {
    let s = spec(json!({
        "id": {"type": "string", "format": "uuid"},
        "day": {"type": "string", "format": "date"},
        "count": {"type": "integer", "format": "int32"},
    }));
    assert_eq!(
        check(s.clone(), json!({"spec": {"id": "abc", "day": 5}})),
        [
            "spec.day: Invalid value: \"int64\": spec.day in body must be of type date: \"int64\"",
            "spec.id: Invalid value: \"abc\": spec.id in body must be of type uuid: \"abc\"",
        ]
    );
    // int32 is stripped before 1.36: no range check.
    let big = json!({"spec": {"count": 4_294_967_296i64}});
    assert!(check_at("1.35", s.clone(), big.clone(), None).is_empty());
    assert_eq!(
        check(s, big),
        ["<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.count"]
    );
}

#[test]
fn enum_pattern_lengths_and_bounds_read_as_upstream() {
    let s = spec(json!({
        "mode": {"type": "string", "enum": ["Auto", "Manual"]},
        "level": {"type": "integer", "enum": [1, 2]},
        "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
        "short": {"type": "string", "maxLength": 1},
        "code": {"type": "string", "pattern": "^[a-z]+$"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "above": {"type": "integer", "minimum": 1, "exclusiveMinimum": true},
        "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": true},
        "port": {"type": "integer", "multipleOf": 5},
    }));
    assert_eq!(
        check(
            s,
            json!({"spec": {"mode": "fast", "level": "x", "name": "toolong", "short": "ab", "code": "ABC",
                "replicas": 11, "above": 1, "ratio": 1.5, "port": 7}})
        ),
        [
            "spec.above: Invalid value: 1: spec.above in body should be greater than 1",
            "spec.code: Invalid value: \"ABC\": spec.code in body should match '^[a-z]+$'",
            "spec.level: Invalid value: \"string\": spec.level in body must be of type integer: \"string\"",
            "spec.level: Unsupported value: \"x\": supported values: \"1\", \"2\"",
            "spec.mode: Unsupported value: \"fast\": supported values: \"Auto\", \"Manual\"",
            "spec.name: Too long: may not be more than 5 bytes",
            "spec.port: Invalid value: 7: spec.port in body should be a multiple of 5",
            "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1",
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            "spec.short: Too long: may not be more than 1 byte",
        ]
    );
}

#[test]
fn a_fractional_factor_for_an_integer_value_is_an_error_on_the_factor() {
    // An integer is checked against the factor cut to an integer, and 0.5
    // cuts to 0; a value written with a fraction is checked as a number.
    let s = spec(json!({
        "half": {"type": "number", "multipleOf": 0.5},
        "also": {"type": "number", "multipleOf": 0.5},
        // Checked as numbers, a factor below zero is refused as well.
        "neg": {"type": "number", "multipleOf": -2},
        "negHalf": {"type": "number", "multipleOf": -0.5},
    }));
    assert_eq!(
        check(s, json!({"spec": {"half": 3, "also": 3.5, "neg": 4.5, "negHalf": 4.5}})),
        [
            "spec.half: Invalid value: 0: factor MultipleOf declared for spec.half must be positive: 0",
            "spec.neg: Invalid value: -2: factor MultipleOf declared for spec.neg must be positive: -2",
            "spec.negHalf: Invalid value: -0.5: factor MultipleOf declared for spec.negHalf must be positive: -0.5",
        ]
    );
}

#[test]
fn only_the_first_string_failure_is_reported() {
    let s = spec(json!({"name": {"type": "string", "minLength": 3, "pattern": "^[0-9]+$"}}));
    assert_eq!(
        check(s, json!({"spec": {"name": "ab"}})),
        ["spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars long"]
    );
}

#[test]
fn counts_required_and_nulls() {
    let s = spec(json!({
        "hosts": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
        "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
        "selector": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
        "image": {"type": "string"},
        "tag": {"type": "string", "default": "latest"},
        "note": {"type": "string", "nullable": true},
        "gone": {"type": "string"},
    }));
    let mut s = s;
    s["properties"]["spec"]["required"] = json!(["image", "tag", "note", "gone"]);
    assert_eq!(
        check(
            s,
            json!({"spec": {"hosts": [], "labels": {"a": "1", "b": 2}, "selector": {}, "note": null, "gone": null}})
        ),
        [
            "spec.hosts: Invalid value: 0: spec.hosts in body should have at least 1 items",
            "spec.labels: Too many: 2: must have at most 1 item",
            "spec.labels.b: Invalid value: \"integer\": spec.labels.b in body must be of type string: \"integer\"",
            "spec.selector: Invalid value: 0: spec.selector in body should have at least 1 properties",
            // A null under a non-nullable property is dropped when decoded.
            "spec.image: Required value",
            "spec.gone: Required value",
        ]
    );
}

#[test]
fn list_types_report_the_second_occurrence() {
    let s = spec(json!({
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
    }));
    assert_eq!(
        check(
            s,
            json!({"spec": {"tags": ["a", "b", "a", "a"], "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}})
        ),
        [
            "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
            "spec.tags[2]: Duplicate value: \"a\"",
        ]
    );
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    let s = spec(json!({
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
    }));
    assert_eq!(
        check(s.clone(), json!({"spec": {"template": {"kind": "My_Kind"}}})),
        [
            "spec.template.apiVersion: Required value",
            "spec.template.kind: Invalid value: \"My_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
    assert!(check(
        s,
        json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod"}}})
    )
    .is_empty());
}

#[test]
fn composites_report_under_nil_with_the_best_branch() {
    let s = spec(json!({
        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    }));
    assert_eq!(
        check(s, json!({"spec": {"port": true}})),
        [
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
            "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
        ]
    );
}

#[test]
fn unknown_fields_are_listed_apart_and_preserved_ones_are_not() {
    let s = spec(json!({
        "known": {"type": "string"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    }));
    let props: JSONSchemaProps = celhook_json::from_value(s).expect("schema");
    let found = SchemaCheck::compile(&props, KubeVersion::NEWEST).expect("compiles").check(
        &json!({"apiVersion": "x/v1", "kind": "K", "metadata": {}, "spec": {"known": "a", "extra": 1, "free": {"any": 1}}, "status": {}}),
        None,
    );
    assert!(found.errors.is_empty(), "{:?}", found.errors);
    assert_eq!(found.unknown_fields, ["spec.extra", "status"]);
    assert_eq!(
        found.unknown_field_warnings(),
        ["unknown field \"spec.extra\"", "unknown field \"status\""]
    );
}

#[test]
fn unchanged_values_ratchet_on_update() {
    let s = spec(json!({
        "name": {"type": "string", "maxLength": 3},
        "other": {"type": "string", "maxLength": 3},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}},
    }));
    let old = json!({"spec": {"name": "toolong", "other": "ok", "ports": [{"name": "a", "port": 500}, {"name": "b", "port": 1}]}});
    // `name` and port `a` are as they were; `other` and port `b` changed.
    let new = json!({"spec": {"name": "toolong", "other": "toolong", "ports": [{"name": "b", "port": 200}, {"name": "a", "port": 500}]}});
    assert_eq!(
        check_update(s, new, Some(old)),
        [
            "spec.other: Too long: may not be more than 3 bytes",
            "spec.ports[0].port: Invalid value: 200: spec.ports[0].port in body should be less than or equal to 100",
        ]
    );
}

#[test]
fn rendering_follows_the_api_server() {
    assert_eq!(render(&json!("a\"b")), "\"a\\\"b\"");
    assert_eq!(render(&json!(1.5)), "1.5");
    assert_eq!(render(&json!(1e21)), "1e+21");
    assert_eq!(render(&json!(7)), "7");
    assert_eq!(render(&json!({"a": "<b>"})), "{\"a\":\"\\u003cb\\u003e\"}");
    assert_eq!(render(&Json::Null), "null");
}

#[test]
fn a_pattern_go_refuses_is_reported_on_each_value_as_kube_openapi_does() {
    assert_eq!(
        check(spec(json!({"name": {"type": "string", "pattern": "a(b"}})), json!({"spec": {"name": "x"}})),
        ["spec.name: Invalid value: \"x\": spec.name in body should match 'a(b, but pattern is invalid: error parsing regexp: missing closing ): `a(b`'"]
    );
}

#[test]
fn metadata_is_not_the_schema_s_and_defaults_fill_required_fields() {
    let mut s = spec(json!({
        "tag": {"type": "string", "default": "latest"},
        "mode": {"type": "string", "nullable": true, "enum": ["a", null]},
    }));
    s["properties"]["metadata"] = json!({"type": "object"});
    s["properties"]["spec"]["required"] = json!(["tag"]);
    let props: JSONSchemaProps = celhook_json::from_value(s).expect("schema");
    let found = SchemaCheck::compile(&props, KubeVersion::NEWEST).expect("compiles").check(
        &json!({"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {"tag": null, "mode": null}}),
        None,
    );
    assert!(
        found.unknown_fields.is_empty(),
        "{:?}",
        found.unknown_fields
    );
    let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
    // A null never matches an enum, even a listed null.
    assert_eq!(
        errors,
        ["spec.mode: Unsupported value: null: supported values: \"a\", \"null\""]
    );
}

#[test]
fn all_of_reports_its_branches_then_itself() {
    let s = spec(json!({"n": {"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 1}]}}));
    assert_eq!(
        check(s, json!({"spec": {"n": 3}})),
        [
            "spec.n: Invalid value: 3: spec.n in body should be greater than or equal to 5",
            "spec.n: Invalid value: 3: spec.n in body should be less than or equal to 1",
            "<nil>: Invalid value: \"\": \"spec.n\" must validate all the schemas (allOf). None validated",
        ]
    );
}

#[test]
fn long_lists_are_checked_in_one_pass() {
    // 200,000 distinct items and one repeat: a pairwise scan would take
    // minutes here; the check must report just the repeat.
    let s = spec(
        json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}),
    );
    let mut items: Vec<Json> = (0..200_000).map(Json::from).collect();
    items.push(json!(7));
    assert_eq!(
        check(s, json!({"spec": {"tags": items}})),
        ["spec.tags[200000]: Duplicate value: 7"]
    );
}

#[test]
fn texts_follow_the_version() {
    let s = spec(json!({
        "name": {"type": "string", "maxLength": 1},
        "tags": {"type": "array", "maxItems": 1, "x-kubernetes-list-type": "set",
            "items": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}},
        "mode": {"type": "object", "nullable": true, "enum": [{"a": 1}]},
        "inner": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
    }));
    let object = json!({"spec": {
        "name": "ab",
        "tags": [{"a": 1, "b": "x"}, {"b": "x", "a": 1}],
        "mode": {"a": [2, null]},
        "inner": {"kind": "K"},
    }});
    let at = |v: &str| check_at(v, s.clone(), object.clone(), None);
    // Siblings in name order.
    assert_eq!(
        at("1.31"),
        [
            "spec.mode: Unsupported value: map[string]interface {}{\"a\":[]interface {}{2, interface {}(nil)}}: supported values: \"{\\\"a\\\":1}\"",
            "spec.name: Too long: may not be longer than 1",
            "spec.tags: Too many: 2: must have at most 1 items",
            "spec.inner.apiVersion: Required value: must not be empty",
            "spec.tags[1]: Duplicate value: map[string]interface {}{\"a\":1, \"b\":\"x\"}",
        ]
    );
    assert_eq!(
        at("1.33")[1],
        "spec.name: Too long: may not be more than 1 bytes"
    );
    assert_eq!(
        at("1.34"),
        [
            "spec.mode: Unsupported value: {\"a\":[2,null]}: supported values: \"{\\\"a\\\":1}\"",
            "spec.name: Too long: may not be more than 1 byte",
            "spec.tags: Too many: 2: must have at most 1 item",
            "spec.inner.apiVersion: Required value",
            "spec.tags[1]: Duplicate value: {\"a\":1,\"b\":\"x\"}",
        ]
    );
    assert_eq!(at("1.37"), at("1.34"));
    assert_eq!(
        rules_not_checked("1.33".parse().unwrap())
            .body()
            .split(':')
            .nth(1),
        Some(" \"null\"")
    );
    assert_eq!(
        rules_not_checked("1.34".parse().unwrap())
            .body()
            .split(':')
            .nth(1),
        Some(" null")
    );
}

#[test]
fn numeric_formats_bound_numbers_from_1_36() {
    let s = spec(json!({
        "small": {"type": "integer", "format": "int32", "maximum": 10},
        "plain": {"type": "integer", "maximum": 10.5},
        "f": {"type": "number", "format": "float"},
        "d": {"type": "number", "format": "double"},
        "when": {"type": "integer", "format": "date"},
    }));
    let object = json!({"spec": {"small": 2147483648_i64, "plain": 1.5, "f": 1e39, "d": 1e300, "when": "x"}});
    let mut found = check_at("1.36", s.clone(), object.clone(), None);
    found.sort();
    assert_eq!(
        found,
        [
            "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.plain",
            "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.small",
            "<nil>: Invalid value: \"\": Checked value must be of type number with format float in spec.f",
            "<nil>: Invalid value: \"\": Maximum boundary value must be of type integer (default format) in spec.plain",
            "spec.plain: Invalid value: \"number\": spec.plain in body must be of type integer: \"number\"",
            "spec.small: Invalid value: 2147483648: spec.small in body should be less than or equal to 10",
            "spec.when: Invalid value: \"string\": spec.when in body must be of type integer: \"string\"",
        ]
    );
    // Before 1.36 the numeric formats were stripped and `date` kept, and
    // checked on a string even on an integer field.
    let mut before = check_at("1.35", s, object, None);
    before.sort();
    assert_eq!(
        before,
        [
            "spec.plain: Invalid value: \"number\": spec.plain in body must be of type integer: \"number\"",
            "spec.small: Invalid value: 2147483648: spec.small in body should be less than or equal to 10",
            "spec.when: Invalid value: \"string\": spec.when in body must be of type integer: \"string\"",
            "spec.when: Invalid value: \"x\": spec.when in body must be of type date: \"x\"",
        ]
    );
    // A value of another type on an int64 field names the format.
    let s = spec(json!({"n": {"type": "integer", "format": "int64"}}));
    assert_eq!(
        check_at("1.36", s, json!({"spec": {"n": true}}), None),
        ["spec.n: Invalid value: \"\": spec.n in body must be of type int64: \"\""]
    );
}
