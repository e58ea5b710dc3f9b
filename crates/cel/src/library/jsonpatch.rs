//! The Kubernetes JSONPatch library (1.32): `jsonpatch.escapeKey`, for
//! MutatingAdmissionPolicy expressions only.

use crate::registry::{first, shape_scaled, shape_size, str_arg, Function};
use crate::shape::Shape;
use crate::value::{TypeName, Value};

/// `jsonpatch.escapeKey(k)`: `k` as a JSON Pointer token (`~` is `~0`,
/// `/` is `~1`). Charged and estimated a tenth of the key, as a parser
/// is; the estimate sizes the result as the key.
pub static ESCAPE_KEY: Function = super::PARSER
    .named(
        "jsonpatch.escapeKey",
        32,
        "string_jsonpatch_escapeKey_string",
    )
    .returns(TypeName::String)
    .for_mutating_policies()
    .calls(|a| Ok(Value::string(escape_key(str_arg(first(a)?)?))))
    .estimates(|s| (shape_scaled(s, 0, 0.1), Shape::sized(shape_size(s, 0))));

fn escape_key(key: &str) -> String {
    // `~` first, so that the `~` of an escaped `/` stays as it is.
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::escape_key;

    #[test]
    fn keys_escape_as_json_pointer_tokens() {
        assert_eq!(escape_key("abc/def~ abc/def~"), "abc~1def~0 abc~1def~0");
        assert_eq!(escape_key("~1"), "~01");
        assert_eq!(escape_key("plain"), "plain");
    }
}
