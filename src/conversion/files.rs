//! `celhook convert`: converts manifest files offline with the same engine
//! and guard as `POST /convert`. YAML in (one or many documents), YAML out;
//! JSON in, JSON out. A `v1` `List` has its items converted.

use serde_json::Value as Json;

use super::guard;
use super::Conversions;

/// The input format of a file, kept for the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// One JSON document.
    Json,
    /// One or many YAML documents.
    Yaml,
}

impl FileFormat {
    /// JSON for `*.json` names, YAML otherwise.
    pub fn of(name: &str) -> Self {
        if name.ends_with(".json") {
            FileFormat::Json
        } else {
            FileFormat::Yaml
        }
    }
}

/// Converts every object of `text` (a file named `name`) to `desired`.
/// Errors name the file, the document and the object.
pub fn convert_text(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    name: &str,
    text: &str,
) -> Result<String, String> {
    convert_as(catalog, desired, name, text, FileFormat::of(name))
}

/// [`convert_text`] for text without a file name (standard input): JSON
/// when it starts with `{`, YAML otherwise.
pub fn convert_stdin(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    text: &str,
) -> Result<String, String> {
    let format = if text.trim_start().starts_with('{') {
        FileFormat::Json
    } else {
        FileFormat::Yaml
    };
    convert_as(catalog, desired, "<stdin>", text, format)
}

fn convert_as(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    name: &str,
    text: &str,
    format: FileFormat,
) -> Result<String, String> {
    let docs: Vec<Json> = match format {
        FileFormat::Json => {
            vec![serde_json::from_str(text).map_err(|e| format!("{name}: invalid JSON: {e}"))?]
        }
        FileFormat::Yaml => {
            let mut docs = Vec::new();
            for (i, de) in serde_norway::Deserializer::from_str(text).enumerate() {
                let v: Json = serde::Deserialize::deserialize(de)
                    .map_err(|e| format!("{name}: invalid YAML in document {i}: {e}"))?;
                if !v.is_null() {
                    docs.push(v);
                }
            }
            docs
        }
    };
    let mut out = Vec::with_capacity(docs.len());
    for (i, mut doc) in docs.into_iter().enumerate() {
        let is_list = doc.get("apiVersion").and_then(Json::as_str) == Some("v1")
            && doc.get("kind").and_then(Json::as_str) == Some("List");
        if is_list {
            if let Some(items) = doc.get_mut("items").and_then(Json::as_array_mut) {
                for (j, item) in items.iter_mut().enumerate() {
                    let taken = std::mem::take(item);
                    *item = one(catalog, desired, taken)
                        .map_err(|e| format!("{name}: document {i} item {j} {e}"))?;
                }
            }
            out.push(doc);
        } else {
            out.push(one(catalog, desired, doc).map_err(|e| format!("{name}: document {i} {e}"))?);
        }
    }
    match format {
        FileFormat::Json => {
            let doc = out.first().unwrap_or(&Json::Null);
            let mut s = serde_json::to_string_pretty(doc).map_err(|e| format!("{name}: {e}"))?;
            s.push('\n');
            Ok(s)
        }
        FileFormat::Yaml => {
            let mut s = String::new();
            for (i, doc) in out.iter().enumerate() {
                if i > 0 {
                    s.push_str("---\n");
                }
                s.push_str(&serde_norway::to_string(doc).map_err(|e| format!("{name}: {e}"))?);
            }
            Ok(s)
        }
    }
}

fn one(catalog: &(impl Conversions + ?Sized), desired: &str, object: Json) -> Result<Json, String> {
    let original = guard::Original::of(&object);
    let label = format!("({})", original.display_name());
    let converted =
        super::convert_one(catalog, desired, object).map_err(|e| format!("{label}: {e}"))?;
    guard::check(0, &original, &converted, desired).map_err(|e| match e {
        guard::GuardError::Object { field, reason, .. } => format!("{label}: {field}: {reason}"),
        other => format!("{label}: {other}"),
    })?;
    Ok(converted)
}
