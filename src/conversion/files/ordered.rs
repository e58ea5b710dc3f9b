//! Key order for `celhook convert`'s output. serde_json's `Map` sorts its
//! keys (the workspace leaves out `preserve_order`, which the engine's hot
//! path would pay for), so the output takes its order from a second parse
//! of the input into serde_norway's `Value`, whose mappings keep it.

use celhook_json::Value as Json;
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Serialize, Serializer};
use serde_norway::Value as Yaml;

/// Serializes `value` with the keys of each object in the order of the
/// matching object of `order` (same path; array items by index), then the
/// keys `order` lacks (those a conversion added) in `Map`'s sorted order.
/// Everything else is serialized by `value` itself, so scalars, numbers
/// included, come out exactly as from `value.serialize`.
#[derive(Debug, Clone, Copy)]
pub struct Ordered<'a> {
    value: &'a Json,
    order: Option<&'a Yaml>,
}

impl<'a> Ordered<'a> {
    /// `value`, ordered as `order` (the input document) where it has the
    /// same keys; without `order`, in sorted key order.
    pub fn new(value: &'a Json, order: Option<&'a Yaml>) -> Self {
        Ordered { value, order }
    }
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Json::Object(map) => {
                let input = self.order.and_then(Yaml::as_mapping);
                let mut out = serializer.serialize_map(Some(map.len()))?;
                if let Some(input) = input {
                    for (key, order) in input {
                        if let Some((k, v)) = key.as_str().and_then(|k| map.get_key_value(k)) {
                            out.serialize_entry(k.as_str(), &Ordered::new(v, Some(order)))?;
                        }
                    }
                }
                // The keys the loop above did not write: the same string
                // test, so each key is written exactly once.
                for (k, v) in map {
                    if !input.is_some_and(|m| m.contains_key(k.as_str())) {
                        out.serialize_entry(k.as_str(), &Ordered::new(v, None))?;
                    }
                }
                out.end()
            }
            Json::Array(items) => {
                let input = self.order.and_then(Yaml::as_sequence);
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for (i, item) in items.iter().enumerate() {
                    let order = input.and_then(|seq| seq.get(i));
                    out.serialize_element(&Ordered::new(item, order))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Yaml {
        serde_norway::from_str(text).expect("YAML")
    }

    #[test]
    fn input_keys_keep_their_order_at_every_depth_and_added_keys_follow() {
        let input = yaml("z: 1\nb: {y: [{q: 1, a: 2}], x: 3}\na: 4\n");
        // As after a conversion: `c` and `b.w` added, `a` removed.
        let converted = celhook_json::json!({
            "z": 1, "c": 5, "b": {"x": 3, "w": 0, "y": [{"a": 2, "q": 1, "n": 7}]}
        });
        let text = serde_json::to_string(&Ordered::new(&converted, Some(&input))).expect("JSON");
        assert_eq!(
            text,
            r#"{"z":1,"b":{"y":[{"q":1,"a":2,"n":7}],"x":3,"w":0},"c":5}"#
        );
        let text = serde_norway::to_string(&Ordered::new(&converted, Some(&input))).expect("YAML");
        assert_eq!(
            text,
            "z: 1\nb:\n  y:\n  - q: 1\n    a: 2\n    n: 7\n  x: 3\n  w: 0\nc: 5\n"
        );
    }

    #[test]
    fn numbers_come_out_as_serde_json_values_write_them() {
        let text = r#"{"u": 18446744073709551615, "i": -9223372036854775808,
            "big": 18446744073709551616, "f": 2.50, "e": 1e3, "tiny": 5e-324,
            "s": "1.0", "n": null, "l": [0.1, -0, 1.5e300]}"#;
        let value: Json = serde_json::from_str(text).expect("JSON");
        let order: Yaml = serde_json::from_str(text).expect("ordered");
        // Without an order: byte for byte what the value itself writes.
        let unordered = Ordered::new(&value, None);
        assert_eq!(
            serde_json::to_string_pretty(&unordered).expect("JSON"),
            serde_json::to_string_pretty(&value).expect("JSON")
        );
        assert_eq!(
            serde_norway::to_string(&unordered).expect("YAML"),
            serde_norway::to_string(&value).expect("YAML")
        );
        // With the input's order: the same numbers, in the input's place.
        assert_eq!(
            serde_json::to_string(&Ordered::new(&value, Some(&order))).expect("JSON"),
            r#"{"u":18446744073709551615,"i":-9223372036854775808,"big":1.8446744073709552e+19,"f":2.5,"e":1000.0,"tiny":5e-324,"s":"1.0","n":null,"l":[0.1,-0.0,1.5e+300]}"#
        );
    }

    #[test]
    fn non_string_and_missing_keys_fall_back_to_sorted_order() {
        // A YAML key that is not a string cannot be matched by text: its
        // entry comes with the added keys, once.
        let input = yaml("b: 1\n2: x\na: 2\n");
        let value = celhook_json::json!({"a": 2, "b": 1, "2": "x"});
        let text = serde_json::to_string(&Ordered::new(&value, Some(&input))).expect("JSON");
        assert_eq!(text, r#"{"b":1,"a":2,"2":"x"}"#);
        // An input that is not a mapping where the value is an object.
        let text = serde_json::to_string(&Ordered::new(&value, Some(&yaml("[1]")))).expect("JSON");
        assert_eq!(text, r#"{"2":"x","a":2,"b":1}"#);
    }
}
