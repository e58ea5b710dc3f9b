//! Expression cases: `cel::Program::compile` against the schema of
//! `self` in the CRD rule environment of one Kubernetes version, then
//! `Program::eval`, compared with cel-go's value, error text and costs.

use std::rc::Rc;

use celhook::cel::{self, Program, Value};
use celhook::kube_version::KubeVersion;
use celhook::schema::Schema;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::{Map, Value as Json};

use crate::cases::{case_area_is_probe, in_library_tests, str_field};

/// The authorizer of upstream's library tests: every question allowed,
/// with no reason and no error.
#[derive(Debug)]
struct AlwaysAllow;

impl cel::value::k8s::authz::Authorizer for AlwaysAllow {
    fn authorize(
        &self,
        _: &cel::value::k8s::authz::Attributes<'_>,
    ) -> cel::value::k8s::authz::Decision {
        cel::value::k8s::authz::Decision {
            allowed: true,
            ..Default::default()
        }
    }
}

pub fn openapi(v: &Json) -> Result<JSONSchemaProps, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("bad case: schema: {e}"))
}

/// The schema of a node that is not a resource root: built inside a
/// throwaway root so the root's implicit apiVersion/kind/metadata do not
/// leak into it.
fn node_schema(v: &Json) -> Result<Schema, String> {
    let wrapper = serde_json::json!({"type": "object", "properties": {"node": v}});
    let root = Schema::from_openapi(&openapi(&wrapper)?)
        .map_err(|e| format!("schema refused: {}: {}", e.path, e.reason))?;
    root.properties
        .get("node")
        .cloned()
        .ok_or_else(|| "schema refused: node lost".to_owned())
}

/// The dynamic schema (`x-kubernetes-preserve-unknown-fields` without a
/// type): `self` is `dyn`, as cel-go variables declared `DynType` are.
fn dyn_schema() -> Json {
    serde_json::json!({"x-kubernetes-preserve-unknown-fields": true})
}

pub fn run_expression(case: &Map<String, Json>, version: KubeVersion) -> Result<(), String> {
    let expr = str_field(case, "expr")?.unwrap_or_default();
    let schema_json = case.get("schema").cloned().unwrap_or_else(dyn_schema);
    // `root: true`: `self` is the resource root (apiVersion, kind and
    // metadata.name/generateName are implied, as the API server widens it).
    let schema = if case.get("root") == Some(&Json::Bool(true)) {
        Schema::from_openapi(&openapi(&schema_json)?)
            .map_err(|e| format!("schema refused: {}: {}", e.path, e.reason))?
    } else {
        node_schema(&schema_json)?
    };
    // Probe variables declared `dyn`, `map(string, dyn)` or `list(dyn)` in
    // cel-go have no CRD equivalent: as schema fields they are of "unknown
    // type", which CEL cannot reach. Such cases bind `self` dynamically.
    let schema =
        if case_area_is_probe(case) && schema.properties.values().any(Schema::is_unknown_type) {
            node_schema(&dyn_schema())?
        } else {
            schema
        };
    let optional_old_self = matches!(case.get("optional_old_self"), Some(Json::Bool(true)));
    let mut opts = cel::Environment::crd_rule(optional_old_self).at(version.stored());
    if in_library_tests(case) {
        opts = opts.as_in_library_tests();
    }
    let compiled = Program::compile(expr, &schema, opts);
    // Upstream expectations quote the validator's wording, which prefixes
    // the compiler's text with `compilation failed: ` (tested on its own in
    // the schema cases): compare the compiler's part.
    let want_compile = str_field(case, "compile_error")?
        .map(|w| w.strip_prefix("compilation failed: ").unwrap_or(w));
    let program = match (compiled, want_compile) {
        (Err(e), Some(want)) if e.message.contains(want) => return Ok(()),
        (Err(e), Some(want)) => {
            return Err(format!(
                "compile error {:?}, want one containing {want:?}",
                e.message
            ))
        }
        (Ok(_), Some(want)) => {
            return Err(format!(
                "compiled, want a compile error containing {want:?}"
            ))
        }
        (Err(e), None) => return Err(format!("compile error: {}", e.message)),
        (Ok(p), None) => p,
    };

    if let Some(d) = estimate_diff(case, &program)? {
        return Err(d);
    }
    // An estimate-only case (upstream's estimator tests) has no object.
    if !case.contains_key("self")
        && (case.contains_key("estimated_cost") || case.contains_key("exceeds_limit"))
    {
        return Ok(());
    }
    // The engine reads celhook's tree; the cases are serde_json's.
    let this = case
        .get("self")
        .map_or(celhook_json::Value::Null, celhook_json::Value::from);
    let old = case.get("old_self").map(celhook_json::Value::from);
    let old = old.as_ref();
    let old_value = match (optional_old_self, old) {
        (true, o) => Some(Value::Optional(
            o.map(|o| Rc::new(Value::from_json(o, &schema))),
        )),
        (false, o) => o.map(|o| Value::from_json(o, &schema)),
    };
    let limit = match case.get("cost_limit") {
        Some(v) => v
            .as_u64()
            .ok_or("bad case: `cost_limit` must be a number")?,
        None => cel::PER_EXPRESSION_COST_LIMIT,
    };
    let (result, cost) = if in_library_tests(case) {
        // Upstream's helper binds `authorizer` alone, with no user, to an
        // authorizer that allows everything.
        let authorizer = cel::authorizer_value(Rc::new(AlwaysAllow), None);
        program.eval_variables([authorizer], limit)
    } else {
        program.eval(Value::from_json(&this, &schema), old_value, limit)
    };

    let mut diffs = Vec::new();
    match (
        &result,
        str_field(case, "error")?,
        str_field(case, "error_contains")?,
    ) {
        (Err(e), Some(want), _) if e.message == want => {}
        (Err(e), Some(want), _) => diffs.push(format!("error {:?}, want {want:?}", e.message)),
        (Err(e), None, Some(want)) if e.message.contains(want) => {}
        (Err(e), None, Some(want)) => diffs.push(format!(
            "error {:?}, want one containing {want:?}",
            e.message
        )),
        (Ok(v), Some(want), _) | (Ok(v), None, Some(want)) => diffs.push(format!(
            "value {} ({}), want error {want:?}",
            cel::to_json(v),
            v.type_name().name()
        )),
        (Err(e), None, None) => diffs.push(format!("error {:?}", e.message)),
        (Ok(v), None, None) => {
            if let Some(want) = case.get("value") {
                if let Some(d) = value_diff(v, want, str_field(case, "type")?) {
                    diffs.push(d);
                }
            } else if let Some(want) = str_field(case, "type")? {
                if v.type_name().name() != want {
                    diffs.push(format!("type {}, want {want}", v.type_name().name()));
                }
            }
        }
    }
    if let Some(want) = case.get("cost") {
        let want = want.as_u64().ok_or("bad case: `cost` must be a number")?;
        if cost != want {
            diffs.push(format!("cost {cost}, want {want}"));
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

/// Compares a result with the expected JSON value and CEL type. Doubles
/// that JSON cannot hold are written as the strings `NaN`, `+Inf`, `-Inf`.
fn value_diff(v: &Value<'_>, want: &Json, want_type: Option<&str>) -> Option<String> {
    let got_type = v.type_name().name();
    let got = cel::to_json(v);
    let special = match (v, want) {
        (Value::Double(d), Json::String(s)) if want_type == Some("double") => Some(
            (s == "NaN" && d.is_nan())
                || (s == "+Inf" && *d == f64::INFINITY)
                || (s == "-Inf" && *d == f64::NEG_INFINITY),
        ),
        _ => None,
    };
    let same_value = special.unwrap_or(got == *want);
    let same_type = want_type.is_none_or(|t| t == got_type);
    if same_value && same_type {
        None
    } else {
        Some(format!(
            "value {got} ({got_type}), want {want}{}",
            want_type.map(|t| format!(" ({t})")).unwrap_or_default()
        ))
    }
}

/// The static estimate against `estimated_cost: {max}` (cel-go's
/// `CostEstimate.Max`; a `min` is not compared, celhook estimates the worst
/// case only) or `exceeds_limit: true` (at least the per-CRD limit, 1e8).
fn estimate_diff(case: &Map<String, Json>, program: &Program) -> Result<Option<String>, String> {
    let got = program.estimated_cost();
    if let Some(want) = case.get("estimated_cost") {
        let max = want
            .get("max")
            .and_then(Json::as_u64)
            .ok_or("bad case: `estimated_cost` needs an integer `max`")?;
        // Saturated upstream figures are u64; compare in f64 as celhook holds them.
        if got != max as f64 && !(got >= u64::MAX as f64 && max == u64::MAX) {
            return Ok(Some(format!("estimated cost {got}, want {max}")));
        }
    }
    if case.get("exceeds_limit") == Some(&Json::Bool(true)) && got < 1e8 {
        return Ok(Some(format!(
            "estimated cost {got}, want at least 100000000"
        )));
    }
    Ok(None)
}
