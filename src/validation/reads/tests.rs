//! What a node's rules read of its value, gathered from their chains of
//! fields into a plan.

use celhook_json::json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

use super::super::{FieldRead, SelfReads, Validator, Want};
use crate::schema::Schema;

/// The validator of `rules`, on an object of a few kinds of fields.
fn validator(rules: &[&str]) -> Validator {
    let rules: Vec<_> = rules.iter().map(|r| json!({"rule": r})).collect();
    let schema = json!({
        "type": "object",
        "x-kubernetes-validations": rules,
        "properties": {
            "name": {"type": "string"},
            "tls": {"type": "object", "properties": {
                "enabled": {"type": "boolean"},
                "secret": {"type": "string"},
                "x-ca": {"type": "object", "properties": {"pem": {"type": "string"}}},
            }},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"x": {"type": "integer"}}},
        },
    });
    let p: JSONSchemaProps = celhook_json::from_value(schema).expect("schema");
    Validator::compile(Schema::from_openapi(&p).expect("structural")).expect("compiles")
}

/// What the rules `rules` read.
fn reads(rules: &[&str]) -> SelfReads {
    validator(rules).root.reads.clone()
}

fn owned(wants: &[(&str, Want)]) -> Vec<(String, Want)> {
    wants
        .iter()
        .map(|(k, w)| (k.to_string(), w.clone()))
        .collect()
}

fn fields(wants: &[(&str, Want)]) -> SelfReads {
    SelfReads::Fields(owned(wants))
}

fn part(wants: &[(&str, Want)]) -> Want {
    Want::Part(owned(wants))
}

#[test]
fn chains_read_objects_in_part_and_any_other_use_whole() {
    // Fields selected, and a presence test alone: in part.
    assert_eq!(
        reads(&["!has(self.tls) || self.tls.enabled", "self.name != ''"]),
        fields(&[
            ("name", Want::Whole),
            ("tls", part(&[("enabled", Want::Whole)])),
        ])
    );
    assert_eq!(reads(&["has(self.tls)"]), fields(&[("tls", part(&[]))]));
    // A use of the object itself makes it whole, whichever rule comes first.
    for rules in [
        ["self.tls.enabled", "[self.tls].size() == 1"],
        ["[self.tls].size() == 1", "self.tls.enabled"],
    ] {
        assert_eq!(reads(&rules), fields(&[("tls", Want::Whole)]), "{rules:?}");
    }
    // Escaped names at depth read the keys they stand for.
    assert_eq!(
        reads(&["!has(self.tls.x__dash__ca) || self.tls.x__dash__ca.pem != ''"]),
        fields(&[("tls", part(&[("x-ca", part(&[("pem", Want::Whole)]))]))])
    );
    // A presence test of a string, a map's key, an untyped object's field:
    // whole, as a plan keeps only objects typed by their properties.
    assert_eq!(
        reads(&["has(self.tls.secret) && has(self.labels.team) && self.raw.x > 0"]),
        fields(&[
            ("labels", Want::Whole),
            ("raw", Want::Whole),
            ("tls", part(&[("secret", Want::Whole)])),
        ])
    );
    // `self` used otherwise: all of it.
    assert_eq!(
        reads(&["self.tls.enabled", "self == self"]),
        SelfReads::Whole
    );
}

#[test]
fn a_plan_knows_its_schema_keys_and_reads_only_what_is_wanted() {
    let keys = |known: &[celhook_json::PlainKey]| -> Vec<String> {
        known.iter().map(|k| k.as_str().to_string()).collect()
    };
    let v = validator(&["!has(self.tls) || self.tls.enabled"]);
    // The node's keys are its schema's (a root's with `apiVersion`, `kind`
    // and `metadata`), sorted; `tls` is read in part.
    assert_eq!(
        keys(v.root.known_fields()),
        [
            "apiVersion",
            "kind",
            "labels",
            "metadata",
            "name",
            "raw",
            "tls"
        ]
    );
    let FieldRead::Part(tls) = v.root.field_read("tls") else {
        panic!("tls in part");
    };
    assert!(matches!(v.root.field_read("name"), FieldRead::Nothing));
    assert_eq!(keys(tls.known_fields()), ["enabled", "secret", "x-ca"]);
    assert!(matches!(tls.read_field("enabled"), FieldRead::Whole));
    assert!(matches!(tls.known_read(0), FieldRead::Whole));
    assert!(matches!(tls.read_field("secret"), FieldRead::Nothing));
    assert!(matches!(tls.known_read(2), FieldRead::Nothing));
    // A rule reading the value whole: no plan, every field whole.
    let v = validator(&["self.tls.enabled", "self == self"]);
    assert!(v.root.known_fields().is_empty());
    assert!(matches!(v.root.field_read("name"), FieldRead::Whole));
}
