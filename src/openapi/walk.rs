//! kube-openapi's schema validation of one object, in its order: per node
//! the type (and format-type) check, allOf/anyOf/oneOf/not, the string
//! checks (the first of maxLength, minLength, pattern), the format, the
//! numeric checks, the items then minItems/maxItems, the enum, then the
//! object's property counts, additional properties, properties (in name
//! order: upstream's Go map order is random) and required. Paths are
//! kube-openapi's: map keys dotted (`spec.labels.a`), indices `[i]`.
//!
//! On UPDATE, errors of a node whose value equals its correlated old value
//! are dropped (ratcheting): properties and map values correlate by key,
//! list items only in `x-kubernetes-list-type: map` lists, by their keys.

use celhook_json::Value as Json;

use std::collections::HashMap;

use super::compile::{ListType, Node};
use super::lists::{identity, map_key};
use super::render_for;
use crate::field_error::{BadValue, ErrorType, FieldError};
use crate::kube_version::KubeVersion;

pub(super) struct Walk {
    pub errors: Vec<FieldError>,
    /// Paths of fields the schema does not declare (the API server prunes
    /// them and warns of each).
    pub unknown: Vec<String>,
    /// Whose texts and checks.
    version: KubeVersion,
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn error(kind: ErrorType, path: &str, value: Option<String>, detail: String) -> FieldError {
    FieldError {
        kind,
        field: path.to_owned(),
        value: BadValue::Shown(value.unwrap_or_default()),
        detail,
    }
}

/// A kube-openapi error that is a plain Go error, not a field's: the API
/// server reports it at `<nil>` with an empty value.
fn plain(detail: String) -> FieldError {
    error(ErrorType::Invalid, "", Some("\"\"".into()), detail)
}

/// The inferred type and format kube-openapi gives a value.
fn inferred(value: &Json) -> (&'static str, &'static str) {
    match value {
        Json::Null => ("null", ""),
        Json::Bool(_) => ("boolean", ""),
        Json::String(_) => ("string", ""),
        Json::Number(n) if n.is_i64() || n.is_u64() && n.as_i64().is_some() => ("integer", "int64"),
        Json::Number(_) => ("number", "float64"),
        Json::Array(_) | Json::Table(_) => ("array", ""),
        Json::Object(_) => ("object", ""),
    }
}

/// kube-openapi's `IsValueValidAgainstRange`: the value, printed as Go
/// prints it without an exponent, parses as the type and format.
/// `int` is the number when it is an integer, `f` its value as a float.
fn in_range(int: Option<i64>, f: f64, (ty, format): (&str, &str)) -> bool {
    match (ty, format) {
        ("integer", "int32") => match int {
            Some(i) => i32::try_from(i).is_ok(),
            None => f.fract() == 0.0 && f >= i32::MIN as f64 && f <= i32::MAX as f64,
        },
        // 2^63 itself does not fit an int64.
        ("integer", _) => {
            let two_63 = 2f64.powi(63);
            int.is_some() || (f.fract() == 0.0 && (-two_63..two_63).contains(&f))
        }
        ("number", "float") => !(f as f32).is_infinite(),
        _ => true,
    }
}

/// go-openapi's `IsFloat64AJSONInteger`.
fn float_is_integer(f: f64) -> bool {
    if !f.is_finite() || f.abs() > 9_007_199_254_740_991.0 {
        return false;
    }
    let t = f.trunc();
    if f == t {
        return true;
    }
    ((f - t) / (f.abs() + t.abs())).abs() < 1e-9
}

impl Walk {
    pub fn new(version: KubeVersion) -> Walk {
        Walk {
            errors: Vec::new(),
            unknown: Vec::new(),
            version,
        }
    }

    /// A `FieldError` of the default branch: `Invalid value: <value>: <detail>`.
    fn invalid(&self, path: &str, value: &Json, detail: String) -> FieldError {
        error(
            ErrorType::Invalid,
            path,
            Some(render_for(value, self.version)),
            detail,
        )
    }

    /// Validates `value` at `path` against `node`; `old` is the correlated
    /// old value on UPDATE.
    pub fn node(&mut self, node: &Node, path: &str, value: &Json, old: Option<&Json>) {
        let mark = self.errors.len();
        self.checks(node, path, value, old);
        if self.errors.len() > mark && old == Some(value) {
            self.errors.truncate(mark);
        }
    }

    fn checks(&mut self, node: &Node, path: &str, value: &Json, old: Option<&Json>) {
        self.type_check(node, path, value);
        if value.is_null() {
            self.enum_check(node, path, value);
            return;
        }
        self.composite(node, path, value);
        if let Json::String(s) = value {
            self.string_checks(node, path, value, s);
            if let Some((format, name)) = &node.format {
                if !format.valid(s) {
                    self.errors.push(type_invalid(path, name, s));
                }
            }
        }
        if let Json::Number(_) = value {
            self.number_checks(node, path, value);
        }
        if let Some(items) = value.as_array() {
            if let Some(item) = &node.items {
                // Old items of a list-map by their keys, each looked up
                // once.
                let olds: HashMap<String, &Json> = match (&node.list_type, old) {
                    (ListType::Map(keys), Some(olds)) if olds.is_array() => olds
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|o| (identity(&map_key(o, keys)), o))
                        .collect(),
                    _ => HashMap::new(),
                };
                for (i, v) in items.iter().enumerate() {
                    let old_item = match &node.list_type {
                        ListType::Map(keys) if !olds.is_empty() => {
                            olds.get(&identity(&map_key(v, keys))).copied()
                        }
                        _ => None,
                    };
                    self.node(item, &format!("{path}[{i}]"), v, old_item);
                }
            }
            self.count_checks(path, items.len(), node.min_items, node.max_items, "items");
        }
        self.enum_check(node, path, value);
        if let Json::Object(fields) = value {
            self.object_checks(node, path, fields, old.and_then(Json::as_object));
        }
    }

    /// type.go: the declared types, with the format quirks of a kept
    /// format on a value that is not a string.
    fn type_check(&mut self, node: &Node, path: &str, value: &Json) {
        if node.types.names.is_empty() && node.format.is_none() {
            return;
        }
        let (ty, format) = inferred(value);
        if value.is_null() {
            if !node.nullable {
                self.errors
                    .push(type_invalid(path, &node.types.joined, "null"));
            }
            return;
        }
        let float_int = ty == "number"
            && node.types.contains("integer")
            && value.as_f64().is_some_and(float_is_integer);
        let int_float = ty == "integer" && node.types.contains("number");
        let listed = node.types.contains(ty) || float_int || int_float;
        if let Some((_, name)) = &node.format {
            if !matches!(value, Json::String(_) | Json::Array(_) | Json::Table(_)) {
                if !listed {
                    self.errors.push(type_invalid(path, name, format));
                }
                return;
            }
            if !node.types.contains("integer") && !node.types.contains("number") {
                return;
            }
        }
        if !listed {
            self.errors.push(type_invalid(path, &node.types.joined, ty));
        }
    }

    /// anyOf, oneOf, allOf, not, in kube-openapi's order. For anyOf and
    /// oneOf upstream adds the errors of the branch that matched best;
    /// celhook adds the first branch's.
    fn composite(&mut self, node: &Node, path: &str, value: &Json) {
        let quoted = crate::cel::go_quote(path);
        if !node.any_of.is_empty() {
            let results = self.branches(&node.any_of, path, value);
            if results.iter().all(|r| !r.is_empty()) {
                self.errors.push(plain(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                )));
                if let Some(first) = results.into_iter().next() {
                    self.errors.extend(first);
                }
            }
        }
        if !node.one_of.is_empty() {
            let results = self.branches(&node.one_of, path, value);
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != 1 {
                let found = if valid == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.errors.push(plain(format!(
                    "{quoted} must validate one and only one schema (oneOf). {found}"
                )));
                if valid == 0 {
                    if let Some(first) = results.into_iter().next() {
                        self.errors.extend(first);
                    }
                }
            }
        }
        if !node.all_of.is_empty() {
            let results = self.branches(&node.all_of, path, value);
            let validated = results.iter().filter(|r| r.is_empty()).count();
            if validated < results.len() {
                // The branches' errors, then what they mean together.
                self.errors.extend(results.into_iter().flatten());
                let none = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                self.errors.push(plain(format!(
                    "{quoted} must validate all the schemas (allOf){none}"
                )));
            }
        }
        if let Some(not) = &node.not {
            if self.branch(not, path, value).is_empty() {
                self.errors.push(plain(format!(
                    "{quoted} must not validate the schema (not)"
                )));
            }
        }
    }

    /// The errors of each branch of a composite.
    fn branches(&self, nodes: &[Node], path: &str, value: &Json) -> Vec<Vec<FieldError>> {
        nodes.iter().map(|n| self.branch(n, path, value)).collect()
    }

    /// The errors of one branch of a composite, kept apart.
    fn branch(&self, node: &Node, path: &str, value: &Json) -> Vec<FieldError> {
        let mut w = Walk::new(self.version);
        w.checks(node, path, value, None);
        w.errors
    }

    fn string_checks(&mut self, node: &Node, path: &str, value: &Json, s: &str) {
        let chars = s.chars().count() as i64;
        if let Some(max) = node.max_length.filter(|m| chars > *m) {
            let v = self.version;
            let detail = match (v.too_long_in_bytes(), v.singular_limits() && max == 1) {
                (false, _) => format!("may not be longer than {max}"),
                (true, true) => "may not be more than 1 byte".to_owned(),
                (true, false) => format!("may not be more than {max} bytes"),
            };
            self.errors
                .push(error(ErrorType::TooLong, path, None, detail));
        } else if let Some(min) = node.min_length.filter(|m| chars < *m) {
            self.errors.push(self.invalid(
                path,
                value,
                format!("{path} in body should be at least {min} chars long"),
            ));
        } else if let Some((pattern, re)) = &node.pattern {
            match re {
                Ok(re) if re.is_match(s) => {}
                Ok(_) => self.errors.push(self.invalid(
                    path,
                    value,
                    format!("{path} in body should match '{pattern}'"),
                )),
                Err(e) => self.errors.push(self.invalid(
                    path,
                    value,
                    format!("{path} in body should match '{pattern}, but pattern is invalid: {e}'"),
                )),
            }
        }
    }

    fn number_checks(&mut self, node: &Node, path: &str, value: &Json) {
        // From 1.36 the value, and each bound, must fit the field's numeric
        // type and format; a bound that does not is still applied, as a
        // plain number.
        let range = node.range;
        let fits = |int: Option<i64>, f: f64| range.is_none_or(|r| in_range(int, f, r));
        let out_of_range = |prefix: &str| {
            let (ty, format) = range.unwrap_or_default();
            plain(if format.is_empty() {
                format!("{prefix} value must be of type {ty} (default format) in {path}")
            } else {
                format!("{prefix} value must be of type {ty} with format {format} in {path}")
            })
        };
        let v = value.as_f64().unwrap_or(0.0);
        if !fits(value.as_i64(), v) {
            self.errors.push(out_of_range("Checked"));
        }
        // An integer against a bound that fits is compared with the bound
        // cut to an integer, and shown so; otherwise as numbers.
        let native = |b: f64| fits(None, b).then_some(value.as_i64()).flatten();
        let shown = |b: f64| match native(b) {
            Some(_) => format!("{}", b.trunc() as i64),
            None => crate::cel::format_double(b),
        };
        let compared = |b: f64| match native(b) {
            Some(i) => (i as f64, b.trunc()),
            None => (v, b),
        };
        if let Some(factor) = node.multiple_of {
            if !fits(None, factor) {
                self.errors.push(out_of_range("MultipleOf"));
            }
            // kube-openapi cuts the factor to an integer for an integer
            // value; a factor (so cut) of zero or less is its own error, on
            // the factor (`multipleOf: 0.5` against `3`).
            let integer = native(factor);
            let positive = match integer {
                Some(_) => factor.trunc() >= 1.0,
                None => factor > 0.0,
            };
            if !positive {
                let shown_factor = match integer {
                    Some(_) => Json::from(factor.trunc() as i64),
                    None => Json::from(factor),
                };
                self.errors.push(self.invalid(
                    path,
                    &shown_factor,
                    format!(
                        "factor MultipleOf declared for {path} must be positive: {}",
                        shown(factor)
                    ),
                ));
            } else {
                let ok = match integer {
                    Some(i) => i % factor.trunc() as i64 == 0,
                    None => {
                        let m = if factor < 1.0 {
                            1.0 / factor * v
                        } else {
                            v / factor
                        };
                        float_is_integer(m)
                    }
                };
                if !ok {
                    self.errors.push(self.invalid(
                        path,
                        value,
                        format!("{path} in body should be a multiple of {}", shown(factor)),
                    ));
                }
            }
        }
        for (bound, lower) in [(node.minimum, true), (node.maximum, false)] {
            let Some(b) = bound else { continue };
            if !fits(None, b.value) {
                self.errors.push(out_of_range(if lower {
                    "Minimum boundary"
                } else {
                    "Maximum boundary"
                }));
            }
            let (x, limit) = compared(b.value);
            let (bad, words) = match (lower, b.exclusive) {
                (true, true) => (x <= limit, "greater than"),
                (true, false) => (x < limit, "greater than or equal to"),
                (false, true) => (x >= limit, "less than"),
                (false, false) => (x > limit, "less than or equal to"),
            };
            if bad {
                self.errors.push(self.invalid(
                    path,
                    value,
                    format!("{path} in body should be {words} {}", shown(b.value)),
                ));
            }
        }
    }

    fn enum_check(&mut self, node: &Node, path: &str, value: &Json) {
        // kube-openapi passes over null entries: a null value matches none.
        if node.enumeration.is_empty()
            || (!value.is_null() && node.enumeration.iter().any(|e| same(e, value)))
        {
            return;
        }
        let supported: Vec<String> = node
            .enumeration
            .iter()
            .map(|e| match e {
                Json::String(s) => crate::cel::go_quote(s),
                other => crate::cel::go_quote(&serde_json::to_string(other).unwrap_or_default()),
            })
            .collect();
        self.errors.push(error(
            ErrorType::NotSupported,
            path,
            Some(render_for(value, self.version)),
            format!("supported values: {}", supported.join(", ")),
        ));
    }

    /// minItems/maxItems of a list, minProperties/maxProperties of an
    /// object: its `n` items or properties (`what`) against the bounds.
    /// The too-many text says "items" for both, as the API server's does.
    fn count_checks(
        &mut self,
        path: &str,
        n: usize,
        min: Option<i64>,
        max: Option<i64>,
        what: &str,
    ) {
        let n = n as i64;
        if let Some(min) = min.filter(|m| n < *m) {
            self.errors.push(self.invalid(
                path,
                &Json::from(n),
                format!("{path} in body should have at least {min} {what}"),
            ));
        }
        if let Some(max) = max.filter(|m| n > *m) {
            self.errors.push(too_many(path, n, max, self.version));
        }
    }

    fn object_checks(
        &mut self,
        node: &Node,
        path: &str,
        fields: &celhook_json::Map,
        old: Option<&celhook_json::Map>,
    ) {
        self.count_checks(
            path,
            fields.len(),
            node.min_properties,
            node.max_properties,
            "properties",
        );
        if node.no_additional && node.properties.is_empty() {
            for key in fields.keys() {
                self.errors.push(self.invalid(
                    path,
                    &Json::from(key.as_str()),
                    format!("{}.{key} in body is a forbidden property", path),
                ));
            }
        }
        if let Some(values) = &node.additional {
            for (key, v) in fields {
                if node.properties.contains_key(key.as_str()) || skipped_null(values, v) {
                    continue;
                }
                let old_v = old.and_then(|o| o.get(key));
                self.node(values, &child(path, key), v, old_v);
            }
        }
        for (name, prop) in &node.properties {
            if let Some(v) = fields.get(name) {
                if skipped_null(prop, v) {
                    continue;
                }
                let old_v = old.and_then(|o| o.get(name));
                // An object's metadata is ObjectMeta, decoded (and its
                // unknown fields dropped) by the API server apart from the
                // schema, which usually declares it bare.
                let meta = name == "metadata" && (path.is_empty() || node.embedded);
                let unknown = self.unknown.len();
                self.node(prop, &child(path, name), v, old_v);
                if meta {
                    self.unknown.truncate(unknown);
                }
            }
        }
        for name in &node.required {
            // A null or absent field with a default gets the default.
            let present = match (fields.get(name), node.properties.get(name)) {
                (Some(v), Some(prop)) => !skipped_null(prop, v) || prop.has_default,
                (Some(_), None) => true,
                (None, Some(prop)) => prop.has_default,
                (None, None) => false,
            };
            if !present {
                self.errors.push(error(
                    ErrorType::Required,
                    &child(path, name),
                    None,
                    String::new(),
                ));
            }
        }
        if node.additional.is_none() && !node.preserve_unknown && !node.no_additional {
            let root_meta = |k: &str| {
                (path.is_empty() || node.embedded)
                    && matches!(k, "apiVersion" | "kind" | "metadata")
            };
            for key in fields.keys() {
                if !node.properties.contains_key(key.as_str()) && !root_meta(key) {
                    self.unknown.push(child(path, key));
                }
            }
        }
    }
}

/// A null under a property that is not nullable is removed when the API
/// server decodes the object (replaced by the default when it has one):
/// validation never sees it.
fn skipped_null(node: &Node, v: &Json) -> bool {
    v.is_null() && !node.nullable
}

/// JSON equality with integers and floats of the same value equal, as Go's
/// conversion to the enum entry's type makes them.
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn type_invalid(path: &str, ty: &str, got: &str) -> FieldError {
    error(
        ErrorType::TypeInvalid,
        path,
        Some(crate::cel::go_quote(got)),
        format!(
            "{path} in body must be of type {ty}: {}",
            crate::cel::go_quote(got)
        ),
    )
}

fn too_many(path: &str, n: i64, max: i64, v: KubeVersion) -> FieldError {
    let unit = if max == 1 && v.singular_limits() {
        "item"
    } else {
        "items"
    };
    error(
        ErrorType::TooMany,
        path,
        Some(n.to_string()),
        format!("must have at most {max} {unit}"),
    )
}
