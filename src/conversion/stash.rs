//! The lossless stash: what a conversion A -> B would lose, kept on B in the
//! annotation [`ANNOTATION`] and put back when B is converted to A again.
//!
//! After converting A to B the engine converts B straight back and compares
//! the result A' with A (of metadata, only labels and annotations). Every place where they differ is
//! one entry: the path, A's value there (`value`, absent when A had none)
//! and what the plain conversion produces there (`was`). On the way back an
//! entry is applied only where the conversion still produces `was`, so an
//! edit made to B in the meantime wins over the stashed value.
//!
//! The annotation's value is JSON, keyed by the apiVersion to restore:
//! `{"example.com/v1": [{"path": ["spec", "toppings"], "value": [...], "was": [...]}]}`.
//! It is absent when nothing needs keeping.

use std::collections::BTreeMap;

use celhook_json::{Map, Value as Json};
use serde::{Deserialize, Serialize};

/// The annotation holding the stash.
pub const ANNOTATION: &str = "celhook.dev/conversion-stash";

/// One difference between an object and its round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Object keys from the root.
    pub path: Vec<String>,
    /// The original value; absent when the original had no field here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Json>,
    /// What the conversion alone produces here; absent for no field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was: Option<Json>,
}

/// Every stashed version of an object: apiVersion -> entries.
pub type Stash = BTreeMap<String, Vec<Entry>>;

/// Removes the stash annotation from `object` and parses it (empty when
/// absent). Leaves no empty `annotations` map behind.
pub fn take(object: &mut Json) -> Result<Stash, String> {
    take_raw(object).as_ref().map_or(Ok(Stash::new()), parse)
}

/// Removes the stash annotation from `object` as it is written, leaving no
/// empty `annotations` map behind ([`give_back`] undoes it).
pub fn take_raw(object: &mut Json) -> Option<Json> {
    let annotations = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Json::as_object_mut)?;
    let raw = annotations.remove(ANNOTATION)?;
    if annotations.is_empty() {
        if let Some(meta) = object.get_mut("metadata").and_then(Json::as_object_mut) {
            meta.remove("annotations");
        }
    }
    Some(raw)
}

/// Puts back what [`take_raw`] removed.
pub fn give_back(object: &mut Json, raw: Json) {
    if let Some(meta) = object.get_mut("metadata").and_then(Json::as_object_mut) {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Json::Object(Map::new()));
        if let Some(map) = annotations.as_object_mut() {
            map.insert(ANNOTATION, raw);
        }
    }
}

/// The stash annotation of `object` as it is written, if any.
pub fn annotation(object: &Json) -> Option<&Json> {
    object.get("metadata")?.get("annotations")?.get(ANNOTATION)
}

/// True when restoring `entries` may write below `metadata`.
pub fn restores_metadata(entries: &[Entry]) -> bool {
    entries
        .iter()
        .any(|e| e.path.first().is_some_and(|f| f == "metadata"))
}

/// How deep a stashed value may sit, its path's objects counted: the
/// nesting the parser allows a request's object (the 128th opening is
/// refused). Anything celhook stashed came from such an object; an entry
/// past it was written by someone else, and restoring it would build a
/// tree deeper than any request's (a path of 20,000 keys fits in an
/// annotation and overflowed the stack when the result was copied).
const MAX_NESTING: usize = 127;

/// The levels the annotation's text opens around a stashed value: the
/// object of versions, a version's list of entries, and the entry.
const STASH_WRAPPING: usize = 3;

/// The deepest text a stash may be: the deepest entry inside the stash's
/// own levels.
const MAX_TEXT_NESTING: usize = MAX_NESTING + STASH_WRAPPING;

/// The stash an annotation's value holds.
pub fn parse(raw: &Json) -> Result<Stash, String> {
    let text = raw
        .as_str()
        .ok_or_else(|| format!("annotation {ANNOTATION} must be a string"))?;
    let invalid =
        |e: &dyn std::fmt::Display| format!("annotation {ANNOTATION} is not a valid stash: {e}");
    // serde_json's own nesting limit counts the stash's levels too, and
    // refused values as deep as the objects celhook stashed them from; it
    // cannot be raised, only lifted, so the text's depth is bounded here
    // first and the typed parse (duplicate fields refused, errors with
    // their positions) runs without it.
    let deepest = text_nesting(text);
    if deepest > MAX_TEXT_NESTING {
        return Err(invalid(&format_args!(
            "it nests {deepest} levels, past the {MAX_TEXT_NESTING} a stash of an object's values may"
        )));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let stash = Stash::deserialize(&mut de)
        .and_then(|stash| de.end().map(|()| stash))
        .map_err(|e| invalid(&e))?;
    for (version, entries) in &stash {
        for entry in entries {
            // Only `value` is put into the object (`was` is compared, and
            // nests no deeper than the text).
            let inner = entry.value.as_ref().map_or(0, nesting);
            if entry.path.len() + inner > MAX_NESTING {
                return Err(format!(
                    "annotation {ANNOTATION} is not a valid stash: an entry for {version} nests {} levels (a path of {} keys), past the {MAX_NESTING} an object may",
                    entry.path.len() + inner,
                    entry.path.len()
                ));
            }
        }
    }
    Ok(stash)
}

/// The deepest nesting of arrays and objects in a JSON text: its brackets
/// counted outside strings. Only a bound, taken before a parse that checks
/// the text (a malformed one fails there); written out because no parser
/// at hand reports a text's depth without building it.
fn text_nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The containers `v` nests, itself included (0 for a scalar).
fn nesting(v: &Json) -> usize {
    match v {
        Json::Object(m) => 1 + m.values().map(nesting).max().unwrap_or(0),
        Json::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// Writes `stash` as the annotation of `object`; writes nothing when it is
/// empty.
pub fn put(object: &mut Json, stash: &Stash) -> Result<(), String> {
    if stash.is_empty() {
        return Ok(());
    }
    let text = serde_json::to_string(stash).map_err(|e| format!("cannot encode the stash: {e}"))?;
    let Some(meta) = object.get_mut("metadata").and_then(Json::as_object_mut) else {
        return Err("the object has no metadata to hold the stash annotation".into());
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Json::Object(Map::new()));
    match annotations.as_object_mut() {
        Some(map) => {
            map.insert(ANNOTATION, Json::from(text));
            Ok(())
        }
        None => Err("metadata.annotations is not an object".into()),
    }
}

/// Where `original` and `round_trip` differ (of `metadata`, only labels and
/// annotations count): one entry per deepest differing object key (lists
/// and scalars are compared whole).
pub fn diff(original: &Json, round_trip: &Json) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    diff_into(Some(original), Some(round_trip), &mut path, &mut out, true);
    out
}

fn diff_into(
    a: Option<&Json>,
    b: Option<&Json>,
    path: &mut Vec<String>,
    out: &mut Vec<Entry>,
    root: bool,
) {
    // Most of a round trip comes back as it was: one comparison settles a
    // whole subtree (not the root, whose metadata counts only in part).
    if !root && a == b {
        return;
    }
    match (a, b) {
        (Some(Json::Object(a)), Some(Json::Object(b))) => {
            for (key, va, vb) in a.union(b) {
                if root && key == "metadata" {
                    // Of metadata a conversion may change only labels and
                    // annotations (the guard sees to it): compare those.
                    for sub in ["labels", "annotations"] {
                        let (sa, sb) = (va.and_then(|m| m.get(sub)), vb.and_then(|m| m.get(sub)));
                        path.push(key.to_owned());
                        path.push(sub.to_owned());
                        diff_into(sa, sb, path, out, false);
                        path.truncate(path.len() - 2);
                    }
                    continue;
                }
                if key == ANNOTATION
                    && path.len() == 2
                    && path[0] == "metadata"
                    && path[1] == "annotations"
                {
                    // Our own annotation is never part of the difference.
                    continue;
                }
                path.push(key.to_owned());
                diff_into(va, vb, path, out, false);
                path.pop();
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Entry {
            path: path.clone(),
            value: a.cloned(),
            was: b.cloned(),
        }),
    }
}

/// Puts stashed values back into `object` where it still holds what the
/// plain conversion produced (`was`).
pub fn restore(object: &mut Json, entries: &[Entry]) {
    for entry in entries {
        let Some((last, parents)) = entry.path.split_last() else {
            continue;
        };
        if get(object, &entry.path) != entry.was.as_ref() {
            // Changed since the stash was written: the newer value wins.
            continue;
        }
        let Some(map) = parent_mut(object, parents) else {
            continue;
        };
        match &entry.value {
            Some(v) => {
                map.insert(last.clone(), v.clone());
            }
            None => {
                map.remove(last);
            }
        }
    }
}

/// The object at `parents`, created where missing; `None` when a non-object
/// is in the way.
fn parent_mut<'a>(object: &'a mut Json, parents: &[String]) -> Option<&'a mut Map> {
    let mut node = object;
    for key in parents {
        node = node
            .as_object_mut()?
            .entry(key.clone())
            .or_insert_with(|| Json::Object(Map::new()));
    }
    node.as_object_mut()
}

fn get<'a>(object: &'a Json, path: &[String]) -> Option<&'a Json> {
    path.iter().try_fold(object, |node, key| node.get(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use celhook_json::json;

    #[test]
    fn diff_finds_the_deepest_differing_keys_and_skips_metadata() {
        let a = json!({"metadata": {"name": "a"}, "spec": {"x": 1, "l": [1, 2], "gone": true}});
        let b = json!({"metadata": {"name": "b"}, "spec": {"x": 1, "l": [2, 1], "new": "n"}});
        let d = diff(&a, &b);
        assert_eq!(
            d,
            vec![
                Entry {
                    path: vec!["spec".into(), "gone".into()],
                    value: Some(json!(true)),
                    was: None
                },
                Entry {
                    path: vec!["spec".into(), "l".into()],
                    value: Some(json!([1, 2])),
                    was: Some(json!([2, 1]))
                },
                Entry {
                    path: vec!["spec".into(), "new".into()],
                    value: None,
                    was: Some(json!("n"))
                },
            ]
        );
    }

    #[test]
    fn labels_and_annotations_count_but_not_our_annotation() {
        let a = json!({"metadata": {"name": "a", "annotations": {ANNOTATION: "x", "k": "v"}}});
        let b =
            json!({"metadata": {"name": "a", "labels": {"added": "1"}, "annotations": {"k": "v"}}});
        let d = diff(&a, &b);
        assert_eq!(
            d,
            vec![Entry {
                path: vec!["metadata".into(), "labels".into()],
                value: None,
                was: Some(json!({"added": "1"}))
            }]
        );
        let mut b2 = b.clone();
        restore(&mut b2, &d);
        assert!(b2["metadata"].get("labels").is_none(), "{b2}");
    }

    #[test]
    fn entries_deeper_than_an_object_may_nest_are_refused() {
        let annotation = |keys: usize, value: &str| {
            let path = vec!["\"a\""; keys].join(",");
            Json::from(format!(
                r#"{{"example.com/v2":[{{"path":[{path}],"value":{value}}}]}}"#
            ))
        };
        assert!(parse(&annotation(120, "1")).is_ok());
        assert!(parse(&annotation(120, "[[[[[[[1]]]]]]]")).is_ok());
        let err = parse(&annotation(120, "[[[[[[[[1]]]]]]]]")).expect_err("128 levels");
        assert!(
            err.contains("nests 128 levels (a path of 120 keys), past the 127"),
            "{err}"
        );
        let err = parse(&annotation(20_000, "1")).expect_err("20,000 keys");
        assert!(err.contains("a path of 20000 keys"), "{err}");
    }

    #[test]
    fn a_value_as_deep_as_an_object_may_hold_round_trips() {
        // The deepest object the parser builds for a request: 127 levels,
        // the object and `spec` among them, so `spec.x` may hold 125.
        let object = |levels: usize| {
            let value = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
            celhook_json::from_str(&format!(r#"{{"spec":{{"x":{value}}}}}"#))
        };
        assert!(object(126).is_err(), "the parser's limit moved");
        let mut object = object(125).expect("an object's limit");
        let value = object["spec"]["x"].take();
        let stash = Stash::from([(
            "example.com/v1".to_string(),
            vec![Entry {
                path: vec!["spec".into(), "x".into()],
                value: Some(value),
                was: None,
            }],
        )]);
        let mut o = json!({"metadata": {"name": "a"}});
        put(&mut o, &stash).unwrap();
        assert_eq!(take(&mut o).expect("what put wrote"), stash);
    }

    #[test]
    fn a_stash_text_is_bounded_before_its_parse_and_parsed_strictly() {
        assert_eq!(text_nesting(r#"{"a":[{"b":"[[{{\"]]"}],"c":{}}"#), 3);
        assert_eq!(
            text_nesting(r#""\\"[["#),
            2,
            "the quote after an escaped backslash ends the string"
        );
        let deep = |levels: usize| {
            let value = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
            Json::from(format!(
                r#"{{"example.com/v2":[{{"path":["a"],"value":{value}}}]}}"#
            ))
        };
        let err = parse(&deep(128)).expect_err("131 levels of text");
        assert!(err.contains("it nests 131 levels, past the 130"), "{err}");
        // Within the text's bound, the entry's own: a path of one key and a
        // value of 126 levels are an object's 127; one level more is not.
        assert!(parse(&deep(126)).is_ok());
        let err = parse(&deep(127)).expect_err("128 levels");
        assert!(err.contains("nests 128 levels (a path of 1 keys)"), "{err}");
        let twice = Json::from(r#"{"example.com/v2":[{"path":["a"],"value":1,"value":2}]}"#);
        let err = parse(&twice).expect_err("a field twice");
        assert!(err.contains("duplicate field `value` at line 1"), "{err}");
    }

    #[test]
    fn restore_undoes_the_diff() {
        let a = json!({"spec": {"x": 1, "l": [1, 2], "gone": {"deep": true}}});
        let mut b = json!({"spec": {"x": 1, "l": [2, 1], "new": "n"}});
        let d = diff(&a, &b);
        restore(&mut b, &d);
        assert_eq!(b, a);
    }

    #[test]
    fn restore_keeps_edits_made_since() {
        let a = json!({"spec": {"l": [1, 2]}});
        let mut b = json!({"spec": {"l": [2, 1]}});
        let d = diff(&a, &b);
        b["spec"]["l"] = json!([3]);
        restore(&mut b, &d);
        assert_eq!(b["spec"]["l"], json!([3]));
    }

    #[test]
    fn the_annotation_is_absent_when_empty_and_round_trips_otherwise() {
        let mut o = json!({"metadata": {"name": "a"}});
        put(&mut o, &Stash::new()).unwrap();
        assert_eq!(o, json!({"metadata": {"name": "a"}}));

        let mut stash = Stash::new();
        stash.insert(
            "g/v1".into(),
            vec![Entry {
                path: vec!["x".into()],
                value: Some(json!(1)),
                was: None,
            }],
        );
        put(&mut o, &stash).unwrap();
        assert!(o["metadata"]["annotations"][ANNOTATION].is_string());
        assert_eq!(take(&mut o).unwrap(), stash);
        assert_eq!(o, json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn a_broken_annotation_is_reported() {
        let mut o = json!({"metadata": {"annotations": {ANNOTATION: "{not json"}}});
        assert!(take(&mut o).unwrap_err().contains(ANNOTATION));
    }
}
