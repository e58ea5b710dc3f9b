//! `celhook convert`: converts manifest files offline with the same engine
//! and guard as `POST /convert`. YAML in (one or many documents), YAML out;
//! JSON in, JSON out. A `v1` `List` has its items converted. Objects of
//! kinds no loaded CRD serves (a ConfigMap next to the custom resources)
//! pass through unless [`OtherKinds::Refuse`]. A document that fails costs
//! only itself: it is left out of the output and named in an error. Keys
//! keep the input's order (`ordered`).

mod ordered;

use celhook_json::Value as Json;
use serde_norway::Value as Yaml;

use super::guard;
use super::{split_api_version, Conversions};
use ordered::Ordered;

use crate::yaml::{is_blank, yaml_documents};

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

/// What to do with an object of a kind no loaded CRD serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherKinds {
    /// Print it unchanged, in its place.
    PassThrough,
    /// Make it an error (`--refuse-other-kinds`).
    Refuse,
}

/// What one file converts to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Converted {
    /// The documents that converted or passed through, in input order and
    /// the input's format (empty when none did).
    pub text: String,
    /// One message per document or `List` item that failed, naming the
    /// file, the document and the object; those are not in `text`.
    pub errors: Vec<String>,
}

/// Converts every object of `text` (a file named `name`) to `desired`.
pub fn convert_text(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    other_kinds: OtherKinds,
    name: &str,
    text: &str,
) -> Converted {
    let job = Job {
        catalog,
        desired,
        other_kinds,
        name,
    };
    job.run(text, FileFormat::of(name))
}

/// [`convert_text`] for text without a file name (standard input): JSON
/// when it starts with `{`, YAML otherwise.
pub fn convert_stdin(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    other_kinds: OtherKinds,
    text: &str,
) -> Converted {
    let format = if text.trim_start().starts_with('{') {
        FileFormat::Json
    } else {
        FileFormat::Yaml
    };
    let job = Job {
        catalog,
        desired,
        other_kinds,
        name: "<stdin>",
    };
    job.run(text, format)
}

/// One file's conversion settings.
struct Job<'a, C: Conversions + ?Sized> {
    catalog: &'a C,
    desired: &'a str,
    other_kinds: OtherKinds,
    name: &'a str,
}

/// A parsed document: its index in the file, its value, and the same text
/// parsed for key order (`None` when that second parse fails: sorted keys
/// then).
pub(super) struct Document {
    pub index: usize,
    pub value: Json,
    order: Option<Yaml>,
}

/// The documents of a file named `name` (`None`s and blank documents left
/// out), each parse error naming the file and the document.
pub(super) fn read_documents(
    name: &str,
    text: &str,
    format: FileFormat,
) -> Vec<Result<Document, String>> {
    let mut docs = Vec::new();
    match format {
        FileFormat::Json => docs.push(match serde_json::from_str::<Json>(text) {
            Ok(value) => Ok(Document {
                index: 0,
                value,
                order: serde_json::from_str(text).ok(),
            }),
            Err(e) => Err(format!("{name}: invalid JSON: {e}")),
        }),
        FileFormat::Yaml => {
            for (index, (line, doc)) in yaml_documents(text).into_iter().enumerate() {
                if is_blank(doc) {
                    continue;
                }
                match serde_norway::from_str::<Json>(doc) {
                    Ok(Json::Null) => {}
                    Ok(value) => docs.push(Ok(Document {
                        index,
                        value,
                        order: serde_norway::from_str(doc).ok(),
                    })),
                    Err(_) => {
                        // Parsed again behind the lines before it, so that
                        // the error's line numbers are the file's.
                        let padded = "\n".repeat(line) + doc;
                        let e = serde_norway::from_str::<Json>(&padded)
                            .err()
                            .map_or_else(String::new, |e| e.to_string());
                        docs.push(Err(format!("{name}: document {index}: invalid YAML: {e}")));
                    }
                }
            }
        }
    }
    docs
}

impl<C: Conversions + ?Sized> Job<'_, C> {
    fn run(&self, text: &str, format: FileFormat) -> Converted {
        let name = self.name;
        // Parse errors and conversion errors, in document order.
        let docs = read_documents(name, text, format);
        let mut errors = Vec::new();
        let mut out = Vec::with_capacity(docs.len());
        for doc in docs {
            match doc {
                Ok(doc) => out.extend(self.document(doc, &mut errors)),
                Err(e) => errors.push(e),
            }
        }
        let text = match format {
            FileFormat::Json => out.first().map_or(Ok(String::new()), |doc| {
                serde_json::to_string_pretty(&Ordered::new(&doc.value, doc.order.as_ref()))
                    .map(|s| s + "\n")
                    .map_err(|e| e.to_string())
            }),
            FileFormat::Yaml => out.iter().try_fold(String::new(), |mut s, doc| {
                if !s.is_empty() {
                    s.push_str("---\n");
                }
                s.push_str(
                    &serde_norway::to_string(&Ordered::new(&doc.value, doc.order.as_ref()))
                        .map_err(|e| e.to_string())?,
                );
                Ok(s)
            }),
        };
        match text {
            Ok(text) => Converted { text, errors },
            Err(e) => {
                errors.push(format!("{name}: cannot write the output: {e}"));
                Converted {
                    text: String::new(),
                    errors,
                }
            }
        }
    }

    /// Converts one document (each item of a `List`); `None` when it failed.
    fn document(&self, mut doc: Document, errors: &mut Vec<String>) -> Option<Document> {
        let at = format!("{}: document {}", self.name, doc.index);
        let is_list = doc.value.get("apiVersion").and_then(Json::as_str) == Some("v1")
            && doc.value.get("kind").and_then(Json::as_str) == Some("List");
        if !is_list {
            return match self.object(std::mem::take(&mut doc.value)) {
                Ok(value) => Some(Document { value, ..doc }),
                Err(e) => {
                    errors.push(format!("{at} {e}"));
                    None
                }
            };
        }
        let Some(items) = doc.value.get_mut("items").and_then(Json::as_array_mut) else {
            return Some(doc);
        };
        // A failed item is left out of the List, and out of its order too,
        // so that the items after it keep their own input's key order.
        let mut order_items = doc
            .order
            .as_mut()
            .and_then(|o| o.get_mut("items"))
            .and_then(Yaml::as_sequence_mut);
        let mut kept = Vec::with_capacity(items.len());
        for (j, item) in std::mem::take(items).into_iter().enumerate() {
            match self.object(item) {
                Ok(converted) => kept.push(converted),
                Err(e) => {
                    errors.push(format!("{at} item {j} {e}"));
                    // The failed items before this one are gone already.
                    if let Some(seq) = order_items.as_deref_mut() {
                        if kept.len() < seq.len() {
                            seq.remove(kept.len());
                        }
                    }
                }
            }
        }
        *items = kept;
        Some(doc)
    }

    /// One object converted, or passed through when no CRD serves its kind;
    /// the error starts with the object's name in parentheses.
    fn object(&self, object: Json) -> Result<Json, String> {
        let original = guard::Original::of(&object);
        let label = format!("({})", original.display_name());
        let api_version = object.get("apiVersion").and_then(Json::as_str);
        let kind = object.get("kind").and_then(Json::as_str);
        if let (Some(api_version), Some(kind)) = (api_version, kind) {
            let (group, _) = split_api_version(api_version);
            if self.catalog.crd_of(group, kind).is_none() {
                return match self.other_kinds {
                    OtherKinds::PassThrough => Ok(object),
                    OtherKinds::Refuse => Err(format!(
                        "{label}: kind {kind} of apiVersion {api_version} is served by no CRD of the config (--refuse-other-kinds)"
                    )),
                };
            }
        }
        let converted = super::convert_one(self.catalog, self.desired, object)
            .map_err(|e| format!("{label}: {e}"))?;
        guard::check(0, &original, &converted, self.desired).map_err(|e| match e {
            guard::GuardError::Object { field, reason, .. } => {
                format!("{label}: {field}: {reason}")
            }
            other => format!("{label}: {other}"),
        })?;
        Ok(converted)
    }
}
