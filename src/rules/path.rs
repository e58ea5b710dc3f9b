//! Where a rules document attaches its rules: a path through the target
//! kind's schema (`spec.template.spec.containers[*]`), resolved at load to
//! the schema node that gets them as its `x-kubernetes-validations`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;

use crate::schema::Schema;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A property, by its JSON name.
    Field(String),
    /// The items of a list or the values of a map: `[*]`.
    Each,
}

/// Parses a path: dot-separated JSON names, `[*]` for every item or map
/// value, `['a.b']` for a name with dots or brackets; empty or `.` is the
/// object's root.
pub fn parse(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut rest = path.trim();
    if rest == "." {
        return Ok(steps);
    }
    rest = rest.strip_prefix('.').unwrap_or(rest);
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[*]") {
            steps.push(Step::Each);
            rest = after;
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after
                .find("']")
                .ok_or_else(|| format!("unclosed ['...'] in path {path:?}"))?;
            if end == 0 {
                return Err(format!("empty name ['] in path {path:?}"));
            }
            steps.push(Step::Field(after[..end].to_owned()));
            rest = &after[end + 2..];
        } else if rest.starts_with('[') {
            return Err(format!(
                "path {path:?}: only [*] (every item or value) and ['name'] may follow a name; \
                 a list index cannot be given: rules apply to every item"
            ));
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err(format!("empty name in path {path:?}"));
            }
            steps.push(Step::Field(rest[..end].to_owned()));
            rest = &rest[end..];
        }
        if let Some(after) = rest.strip_prefix('.') {
            if after.is_empty() || after.starts_with(['.', '[']) {
                return Err(format!("empty name in path {path:?}"));
            }
            rest = after;
        }
    }
    Ok(steps)
}

/// Removes every rule of a schema: a rules document runs its own rules
/// only (the kind's own, if any, are the API server's and its CRD's).
pub fn clear_rules(schema: &mut Schema) {
    schema.validations.clear();
    for child in schema.properties.values_mut() {
        clear_rules(child);
    }
    if let Some(items) = schema.items.as_deref_mut() {
        clear_rules(items);
    }
    if let Some(values) = schema.additional_properties.as_deref_mut() {
        clear_rules(values);
    }
}

/// Appends `rules` to the node at `steps`. Returns the node's schema path in
/// the compiler's notation (`openAPIV3Schema.properties[spec].items`) and
/// the index of the first appended rule there, or why the path does not
/// lead to a node.
pub fn attach(
    schema: &mut Schema,
    steps: &[Step],
    rules: &[ValidationRule],
) -> Result<(String, usize), String> {
    let mut node = schema;
    let mut at = String::from("openAPIV3Schema");
    let mut shown = String::new();
    for step in steps {
        match step {
            Step::Field(name) => {
                if node.properties.get(name).is_none() {
                    let known: Vec<&str> = node.properties.keys().map(String::as_str).collect();
                    let place = if shown.is_empty() { "the root" } else { &shown };
                    return Err(if known.is_empty() {
                        format!("{place} declares no fields (there is no {name:?})")
                    } else {
                        format!("no field {name:?} at {place}; it has: {}", known.join(", "))
                    });
                }
                at.push_str(&format!(".properties[{name}]"));
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(name);
                let Some(child) = node.properties.get_mut(name) else {
                    return Err(format!("no field {name:?}"));
                };
                node = child;
            }
            Step::Each => {
                let place = if shown.is_empty() { "the root" } else { &shown };
                if node.items.is_some() {
                    at.push_str(".items");
                } else if node.additional_properties.is_some() {
                    at.push_str(".additionalProperties");
                } else {
                    return Err(format!(
                        "[*] after {place}, which is neither a list nor a map"
                    ));
                }
                let element = match (
                    node.items.as_deref_mut(),
                    node.additional_properties.as_deref_mut(),
                ) {
                    (Some(items), _) => items,
                    (None, Some(values)) => values,
                    (None, None) => return Err("neither a list nor a map".into()),
                };
                node = element;
                shown.push_str("[*]");
            }
        }
    }
    let first = node.validations.len();
    node.validations.extend(rules.iter().cloned());
    Ok((at, first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(s: &str) -> Step {
        Step::Field(s.into())
    }

    #[test]
    fn paths_parse_into_steps() {
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse(".").unwrap(), vec![]);
        assert_eq!(
            parse("spec.template.spec.containers[*]").unwrap(),
            vec![
                field("spec"),
                field("template"),
                field("spec"),
                field("containers"),
                Step::Each
            ]
        );
        assert_eq!(
            parse(".metadata.labels['app.kubernetes.io/name']").unwrap(),
            vec![
                field("metadata"),
                field("labels"),
                field("app.kubernetes.io/name")
            ]
        );
        assert_eq!(
            parse("spec.ports[*].port").unwrap(),
            vec![field("spec"), field("ports"), Step::Each, field("port")]
        );
    }

    #[test]
    fn bad_paths_say_why() {
        for (path, says) in [
            ("spec..x", "empty name"),
            ("spec.", "empty name"),
            ("spec.containers[0]", "list index"),
            ("spec['x", "unclosed"),
            ("['']", "empty name"),
        ] {
            let err = parse(path).expect_err(path);
            assert!(err.contains(says), "{path}: {err}");
        }
    }
}
