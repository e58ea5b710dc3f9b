//! The API server's checks on a conversion answer, run on every answer
//! before it leaves: exactly one object per input in the same order, each
//! with the desired apiVersion, the same kind, `metadata` present, the same
//! name, namespace and uid, no change to metadata other than labels and
//! annotations, and valid labels and annotations where they changed.
//!
//! The API server fails the user's request on any of these; failing here
//! instead lets the message name the object and the field.

use crate::selector;
use celhook_json::{Map, Str, Value as Json};

/// The API server's limit on the total size of an object's annotations
/// (keys plus values), in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// What the guard keeps of an input object: only `kind` and `metadata`, so
/// that the object itself can be converted in place.
#[derive(Debug, Clone, PartialEq)]
pub struct Original {
    kind: Option<Json>,
    metadata: Metadata,
}

/// The input's metadata, or what the conversion says of it.
#[derive(Debug, Clone, PartialEq)]
enum Metadata {
    Kept(Option<Json>),
    /// Moved into the answer unchanged but, when `annotations_changed`,
    /// for the stash annotation (see `conversion::Given::Carried`).
    Carried {
        annotations_changed: bool,
    },
}

impl Original {
    /// Keeps what the checks compare from `object`.
    pub fn of(object: &Json) -> Self {
        Original {
            kind: object.get("kind").cloned(),
            metadata: Metadata::Kept(object.get("metadata").cloned()),
        }
    }

    /// What the checks compare, moved out of an input no longer needed.
    pub fn from_input(mut input: Json) -> Self {
        let mut field = |key: &str| input.as_object_mut().and_then(|m| m.remove(key));
        Original {
            kind: field("kind"),
            metadata: Metadata::Kept(field("metadata")),
        }
    }

    /// An input whose metadata the conversion moved into its answer, of
    /// which only the annotations may have changed: the checks of name,
    /// namespace, uid, labels and the rest of metadata hold by
    /// construction, and the annotations are validated when they changed.
    pub fn carried(kind: Option<Json>, annotations_changed: bool) -> Self {
        Original {
            kind,
            metadata: Metadata::Carried {
                annotations_changed,
            },
        }
    }

    /// `namespace/name`, or `name` for a cluster-scoped object, for messages
    /// (empty for a carried input: its name is its answer's).
    pub fn display_name(&self) -> String {
        match &self.metadata {
            Metadata::Kept(metadata) => display_name(metadata.as_ref()),
            Metadata::Carried { .. } => String::new(),
        }
    }

    fn name_beside(&self, converted: &Json) -> String {
        match &self.metadata {
            Metadata::Kept(metadata) => display_name(metadata.as_ref()),
            Metadata::Carried { .. } => display_name(converted.get("metadata")),
        }
    }
}

/// `namespace/name` (or `name`) of an object's metadata, for messages.
pub fn display_name(metadata: Option<&Json>) -> String {
    Name::of(metadata).to_string()
}

/// An object's namespace and name, kept to name it in a message written
/// later (copies of short strings, no formatting until then).
#[derive(Debug, Clone, Default)]
pub struct Name {
    namespace: Str,
    name: Str,
}

impl Name {
    /// The namespace and name of an object's metadata (empty when absent).
    pub fn of(metadata: Option<&Json>) -> Name {
        let get = |key: &str| {
            metadata
                .and_then(|m| m.get(key))
                .and_then(Json::as_str)
                .map(Str::from)
                .unwrap_or_default()
        };
        Name {
            namespace: get("namespace"),
            name: get("name"),
        }
    }
}

impl std::fmt::Display for Name {
    /// `namespace/name`, or `name` for a cluster-scoped object.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        f.write_str(&self.name)
    }
}

/// A violation, naming the object and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GuardError {
    /// The answer does not have one object per input.
    #[error("the answer has {got} converted objects for {expected} inputs")]
    Count {
        /// Objects sent.
        expected: usize,
        /// Objects in the answer.
        got: usize,
    },
    /// One object breaks a rule.
    #[error("object {index} ({name}): {field}: {reason}")]
    Object {
        /// Position in the request.
        index: usize,
        /// `namespace/name` of the input object.
        name: String,
        /// The offending field, e.g. `metadata.labels["a b"]`.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// Checks a whole answer: count and order, then each object.
pub fn check_all(
    originals: &[Original],
    converted: &[Json],
    desired: &str,
) -> Result<(), GuardError> {
    check_count(originals.len(), converted.len())?;
    for (index, (original, object)) in originals.iter().zip(converted).enumerate() {
        check(index, original, object, desired)?;
    }
    Ok(())
}

/// Checks that there is one answer per input.
pub fn check_count(expected: usize, got: usize) -> Result<(), GuardError> {
    if expected == got {
        Ok(())
    } else {
        Err(GuardError::Count { expected, got })
    }
}

/// Checks one converted object against its input, as the API server will.
pub fn check(
    index: usize,
    original: &Original,
    converted: &Json,
    desired: &str,
) -> Result<(), GuardError> {
    let fail = |field: &str, reason: String| GuardError::Object {
        index,
        name: original.name_beside(converted),
        field: field.to_owned(),
        reason,
    };
    let Some(object) = converted.as_object() else {
        return Err(fail("", "the converted object is not a JSON object".into()));
    };
    match object.get("apiVersion").and_then(Json::as_str) {
        Some(v) if v == desired => {}
        other => {
            return Err(fail(
                "apiVersion",
                format!(
                    "must be the desired {desired:?}, got {}",
                    shown(other.map(Json::from).as_ref())
                ),
            ))
        }
    }
    if object.get("kind") != original.kind.as_ref() {
        return Err(fail(
            "kind",
            format!(
                "may not change in conversion: was {}, got {}",
                shown(original.kind.as_ref()),
                shown(object.get("kind"))
            ),
        ));
    }
    let Some(meta) = object.get("metadata").and_then(Json::as_object) else {
        return Err(fail(
            "metadata",
            "is missing from the converted object".into(),
        ));
    };
    let old_meta = match &original.metadata {
        Metadata::Kept(metadata) => metadata.as_ref().and_then(Json::as_object),
        Metadata::Carried {
            annotations_changed,
        } => {
            if *annotations_changed {
                validate_annotations(meta.get("annotations"))
                    .map_err(|(field, reason)| fail(&field, reason))?;
            }
            return Ok(());
        }
    };
    let empty = Map::new();
    let old_meta = old_meta.unwrap_or(&empty);
    for key in ["name", "namespace", "uid"] {
        if meta.get(key) != old_meta.get(key) {
            return Err(fail(
                &format!("metadata.{key}"),
                format!(
                    "may not change in conversion: was {}, got {}",
                    shown(old_meta.get(key)),
                    shown(meta.get(key))
                ),
            ));
        }
    }
    // Everything else but labels and annotations is copied back by the API
    // server; a difference means the conversion lost or invented metadata.
    if let Some(key) = first_other_difference(meta, old_meta) {
        return Err(fail(
            &format!("metadata.{key}"),
            "may not change in conversion (only labels and annotations may)".into(),
        ));
    }
    if meta.get("labels") != old_meta.get("labels") {
        validate_labels(meta.get("labels")).map_err(|(field, reason)| fail(&field, reason))?;
    }
    if meta.get("annotations") != old_meta.get("annotations") {
        validate_annotations(meta.get("annotations"))
            .map_err(|(field, reason)| fail(&field, reason))?;
    }
    Ok(())
}

/// The first key (in key order) other than labels and annotations that is
/// in one map only or whose values differ (deeply).
fn first_other_difference<'m>(a: &'m Map, b: &'m Map) -> Option<&'m str> {
    a.union(b)
        .filter(|(key, _, _)| !matches!(*key, "labels" | "annotations"))
        .find(|(_, va, vb)| va != vb)
        .map(|(key, _, _)| key)
}

fn shown(v: Option<&Json>) -> String {
    match v {
        None => "nothing".into(),
        Some(v) => v.to_string(),
    }
}

/// Labels: an object of valid qualified-name keys and valid label values.
fn validate_labels(labels: Option<&Json>) -> Result<(), (String, String)> {
    let Some(labels) = labels else { return Ok(()) };
    let Some(map) = labels.as_object() else {
        return Err((
            "metadata.labels".into(),
            "must be an object of strings".into(),
        ));
    };
    for (key, value) in map {
        let field = format!("metadata.labels[{key:?}]");
        if let Err(reason) = selector::qualified_name(key) {
            return Err((field, format!("Invalid value: {key:?}: {reason}")));
        }
        let Some(value) = value.as_str() else {
            return Err((
                field,
                "Invalid value: a label value must be a string".into(),
            ));
        };
        if let Err(reason) = selector::label_value(value) {
            return Err((field, format!("Invalid value: {value:?}: {reason}")));
        }
    }
    Ok(())
}

/// Annotations: an object of valid qualified-name keys (the API server
/// checks them lowercased) and string values, at most 256 KiB in total.
fn validate_annotations(annotations: Option<&Json>) -> Result<(), (String, String)> {
    let Some(annotations) = annotations else {
        return Ok(());
    };
    let Some(map) = annotations.as_object() else {
        return Err((
            "metadata.annotations".into(),
            "must be an object of strings".into(),
        ));
    };
    let mut total = 0usize;
    for (key, value) in map {
        let field = format!("metadata.annotations[{key:?}]");
        if let Err(reason) = selector::qualified_name(&key.to_ascii_lowercase()) {
            return Err((field, format!("Invalid value: {key:?}: {reason}")));
        }
        let Some(value) = value.as_str() else {
            return Err((
                field,
                "Invalid value: an annotation value must be a string".into(),
            ));
        };
        total += key.len() + value.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        return Err((
            "metadata.annotations".into(),
            format!(
                "Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes (got {total})"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use celhook_json::json;

    const DESIRED: &str = "example.com/v1";

    fn input(name: &str, uid: &str) -> Json {
        json!({
            "apiVersion": "example.com/v1beta1",
            "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "uid": uid,
                         "resourceVersion": "7", "labels": {"app": "a"}},
            "hostPort": "localhost:1234"
        })
    }

    fn converted(mut v: Json) -> Json {
        v["apiVersion"] = json!(DESIRED);
        v
    }

    fn err(originals: &[Json], out: &[Json]) -> GuardError {
        let originals: Vec<_> = originals.iter().map(Original::of).collect();
        check_all(&originals, out, DESIRED).expect_err("the guard refuses")
    }

    fn field_of(e: &GuardError) -> &str {
        match e {
            GuardError::Object { field, .. } => field,
            GuardError::Count { .. } => "",
        }
    }

    #[test]
    fn a_faithful_answer_passes() {
        let a = input("a", "u1");
        let mut out = converted(a.clone());
        out["metadata"]["labels"]["tier"] = json!("web");
        out["metadata"]["annotations"] = json!({"example.com/note": "x"});
        check_all(&[Original::of(&a)], &[out], DESIRED).expect("passes");
    }

    #[test]
    fn reordered_objects_are_refused_at_the_first_mismatch() {
        let (a, b) = (input("a", "u1"), input("b", "u2"));
        let e = err(&[a.clone(), b.clone()], &[converted(b), converted(a)]);
        assert_eq!(e.to_string(), "object 0 (default/a): metadata.name: may not change in conversion: was \"a\", got \"b\"");
    }

    #[test]
    fn each_planted_violation_names_its_field() {
        let a = input("a", "u1");
        type Plant = Box<dyn Fn(&mut Json)>;
        let cases: Vec<(&str, Plant)> = vec![
            (
                "metadata.uid",
                Box::new(|o| o["metadata"]["uid"] = json!("other")),
            ),
            (
                "metadata.name",
                Box::new(|o| o["metadata"]["name"] = json!("renamed")),
            ),
            (
                "metadata.namespace",
                Box::new(|o| {
                    o["metadata"].as_object_mut().map(|m| m.remove("namespace"));
                }),
            ),
            (
                "metadata.resourceVersion",
                Box::new(|o| {
                    o["metadata"]
                        .as_object_mut()
                        .map(|m| m.remove("resourceVersion"));
                }),
            ),
            (
                "metadata.generation",
                Box::new(|o| o["metadata"]["generation"] = json!(2)),
            ),
            (
                "metadata.finalizers",
                Box::new(|o| o["metadata"]["finalizers"] = json!(["x"])),
            ),
            // Added after every key of the input, and before them.
            ("metadata.zz", Box::new(|o| o["metadata"]["zz"] = json!(1))),
            ("metadata.AA", Box::new(|o| o["metadata"]["AA"] = json!(1))),
            (
                "metadata",
                Box::new(|o| {
                    o.as_object_mut().map(|m| m.remove("metadata"));
                }),
            ),
            ("kind", Box::new(|o| o["kind"] = json!("CronJob"))),
            (
                "apiVersion",
                Box::new(|o| o["apiVersion"] = json!("example.com/v1beta1")),
            ),
            (
                "metadata.labels[\"bad key\"]",
                Box::new(|o| o["metadata"]["labels"]["bad key"] = json!("v")),
            ),
            (
                "metadata.labels[\"app\"]",
                Box::new(|o| o["metadata"]["labels"]["app"] = json!("-x-")),
            ),
            (
                "metadata.labels[\"app\"]",
                Box::new(|o| o["metadata"]["labels"]["app"] = json!("x".repeat(64))),
            ),
            (
                "metadata.labels[\"app\"]",
                Box::new(|o| o["metadata"]["labels"]["app"] = json!(3)),
            ),
            (
                "metadata.annotations[\"Bad_/x\"]",
                Box::new(|o| o["metadata"]["annotations"] = json!({"Bad_/x": "v"})),
            ),
            (
                "metadata.annotations[\"a\"]",
                Box::new(|o| o["metadata"]["annotations"] = json!({"a": 1})),
            ),
            (
                "metadata.annotations",
                Box::new(|o| {
                    o["metadata"]["annotations"] =
                        json!({"a": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)})
                }),
            ),
        ];
        for (field, plant) in cases {
            let mut out = converted(a.clone());
            plant(&mut out);
            let e = err(std::slice::from_ref(&a), &[out]);
            assert_eq!(field_of(&e), field, "{e}");
            assert!(e.to_string().starts_with("object 0 (default/a): "), "{e}");
        }
    }

    #[test]
    fn a_dropped_object_is_refused() {
        let (a, b) = (input("a", "u1"), input("b", "u2"));
        let e = err(&[a.clone(), b], &[converted(a)]);
        assert_eq!(
            e,
            GuardError::Count {
                expected: 2,
                got: 1
            }
        );
    }

    #[test]
    fn unchanged_invalid_labels_are_left_to_the_api_server() {
        // The API server validates labels only when the webhook changed them.
        let mut a = input("a", "u1");
        a["metadata"]["labels"]["bad key"] = json!("v");
        check_all(&[Original::of(&a)], &[converted(a.clone())], DESIRED).expect("passes");
    }
}
