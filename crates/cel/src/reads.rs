//! Which parts of `self` a program reads: the field paths of the selection
//! chains that start at `self` (`self.spec.host`, `self.?spec.port`,
//! `self.spec["x"]`). A chain covers its whole value, so `self.spec` read
//! as a whole covers every field below it; `has(self.a)` tests presence
//! and reads nothing. For static reports (which source fields a conversion
//! accounts for), never on the request path.

use crate::check::SELF_SLOT;
use crate::ir::Ir;
use crate::value::Const;

/// Appends to `out` the path of every chain from `self` in `ir`.
pub(crate) fn self_paths(ir: &Ir, out: &mut Vec<Vec<String>>) {
    if let Some(path) = chain(ir) {
        out.push(path);
        return;
    }
    match ir {
        // A presence test reads no value.
        Ir::Select { test: true, .. } => {}
        _ => ir.each_child(&mut |child| self_paths(child, out)),
    }
}

/// The path of a selection chain rooted at `self`, if `ir` is one.
fn chain(ir: &Ir) -> Option<Vec<String>> {
    match ir {
        Ir::Var(SELF_SLOT) => Some(Vec::new()),
        Ir::Select {
            operand,
            field,
            test: false,
            ..
        }
        | Ir::OptSelect { operand, field } => {
            let mut path = chain(operand)?;
            path.push(field.to_string());
            Some(path)
        }
        Ir::Index(operand, key) | Ir::OptIndex(operand, key) => match key.constant() {
            Some(Const::Str(k)) => {
                let mut path = chain(operand)?;
                path.push(k.to_string());
                Some(path)
            }
            _ => None,
        },
        Ir::Memo { inner, .. } => chain(inner),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use celhook_schema::Schema;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

    use crate::{Environment, Program};

    fn reads(expr: &str) -> Vec<String> {
        let props: JSONSchemaProps = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {
                "host": {"type": "string"},
                "port": {"type": "string"},
                "spec": {"type": "object", "properties": {
                    "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                }}
            }
        }))
        .expect("schema");
        let schema = Schema::from_openapi(&props).expect("structural");
        let program = Program::compile(expr, &schema, Environment::conversion()).expect("compiles");
        let mut out: Vec<String> = program.self_reads().iter().map(|p| p.join(".")).collect();
        out.sort();
        out
    }

    #[test]
    fn chains_from_self_are_reads_and_presence_tests_are_not() {
        assert_eq!(reads("self.host + ':' + self.port"), ["host", "port"]);
        assert_eq!(
            reads("has(self.port) ? self.?host.orValue('') : ''"),
            ["host"]
        );
        assert_eq!(
            reads("self.spec.labels['app'] + self.spec.?labels.x.orValue('')"),
            ["spec.labels.app", "spec.labels.x"]
        );
        // A loop over a list reads the whole list.
        assert_eq!(reads("self.spec.items.all(i, i.x > 0)"), ["spec.items"]);
        assert_eq!(reads("self == self"), ["", ""]);
        assert!(reads("'constant'").is_empty());
    }
}
