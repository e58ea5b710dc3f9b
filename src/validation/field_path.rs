//! `fieldPath` of a rule: a relative JSON path (`.spec.x`, `.m['k.y']`)
//! checked against the schema and normalised to the API server's field
//! path text (`spec.x`, `m[k.y]`).

use crate::schema::Schema;

/// Normalises `fp` against `schema`, the node the rule sits on.
pub fn normalize(fp: &str, schema: &Schema) -> Result<String, String> {
    let tokens = tokenize(fp)?;
    let mut out = String::new();
    let mut current = schema;
    let mut i = 0;
    while i < tokens.len() {
        let (name, quoted) = match tokens[i].as_str() {
            "." => {
                let name = tokens.get(i + 1).ok_or("unexpected end of JSON path")?;
                i += 2;
                (name.clone(), false)
            }
            "[" => {
                let lit = tokens.get(i + 1).ok_or("unexpected end of JSON path")?;
                if !lit.starts_with('\'') {
                    return Err(format!("expected single quoted string but got {lit}"));
                }
                let name = unquote(lit)?;
                match tokens.get(i + 2).map(String::as_str) {
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".into()),
                }
                i += 3;
                (name, true)
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        let _ = quoted;
        if !current.properties.is_empty() {
            current = current
                .property(&name)
                .ok_or_else(|| format!("does not refer to a valid field: {name}"))?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if let Some(values) = current.additional_properties.as_deref() {
            out.push('[');
            out.push_str(&name);
            out.push(']');
            current = values;
        } else {
            return Err(format!("does not refer to a valid field: {name}"));
        }
    }
    Ok(out)
}

fn tokenize(fp: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut chars = fp.chars().peekable();
    let mut current = String::new();
    while let Some(c) = chars.next() {
        match c {
            '.' | '[' | ']' => {
                if !current.is_empty() {
                    tokens.push(std::mem::take(&mut current));
                }
                tokens.push(c.to_string());
            }
            '\'' if current.is_empty() => {
                let mut lit = String::from('\'');
                let mut closed = false;
                while let Some(d) = chars.next() {
                    lit.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            lit.push(e);
                        }
                    } else if d == '\'' {
                        closed = true;
                        break;
                    }
                }
                if !closed {
                    return Err("unexpected end of JSON path".into());
                }
                tokens.push(lit);
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    Ok(tokens)
}

fn unquote(lit: &str) -> Result<String, String> {
    let inner = &lit[1..lit.len() - 1];
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(x) => return Err(format!("invalid string literal: invalid escape char \\{x}")),
            None => return Err("invalid string literal".into()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

    fn schema() -> Schema {
        let p: JSONSchemaProps = celhook_json::from_value(celhook_json::json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"bbb.c": {"type": "string"}}},
                "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}
            }
        }))
        .unwrap();
        Schema::from_openapi(&p).unwrap()
    }

    #[test]
    fn normalises_like_the_api_server() {
        let s = schema();
        assert_eq!(normalize(".a['bbb.c']", &s).unwrap(), "a.bbb.c");
        assert_eq!(normalize(".m['k'].x", &s).unwrap(), "m[k].x");
        assert_eq!(normalize(".m.k", &s).unwrap(), "m[k]");
    }

    #[test]
    fn refuses_bad_paths() {
        let s = schema();
        assert!(normalize("a", &s)
            .unwrap_err()
            .starts_with("expected [ or . but got"));
        assert!(normalize(".nope", &s).is_err());
        assert!(normalize(".list[0]", &s)
            .unwrap_err()
            .contains("expected single quoted string"));
        assert!(normalize(".list.a", &s).is_err());
        assert!(normalize(".", &s).is_err());
    }
}
