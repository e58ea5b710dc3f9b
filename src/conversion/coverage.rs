//! Coverage of a conversion document, proven at load: for every ordered
//! pair of versions, each field of the source schema is either copied to
//! the same path of the target (with a type the target accepts), read by
//! an assignment's expression, or kept only in the stash annotation, which
//! clients of the target version never see: a loss in practice unless the
//! document acknowledges it (`spec.lossy`). Target fields that nothing can
//! fill are reported too, and copies or assignments whose types the target
//! schema refuses are errors.
//!
//! A static view: an expression that reads a field is taken to account for
//! it (where its value goes is the expression's business), and the
//! examples' round trips (`check_examples`) test the values.

use super::{Assignment, Conversion, DocumentProblem};
use crate::schema::{Schema, Type};

/// One step of a path into a schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Seg {
    Field(String),
    /// Any item of a list.
    Item,
    /// Any value of a map (`additionalProperties`).
    Value,
}

/// A leaf of a schema: a field whose value is copied as a whole.
type Path = Vec<Seg>;

/// Writes a path as the report shows it: `spec.toppings[].name`, `spec.labels.*`.
fn show(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Field(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Seg::Item => out.push_str("[]"),
            Seg::Value => out.push_str(".*"),
        }
    }
    out
}

/// What converting one version to another does to the source's fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairCoverage {
    pub from: String,
    pub to: String,
    /// Fields of `from` that reach `to` only through the stash.
    pub stash_only: Vec<String>,
    /// Fields of `to` that no field of `from` and no assignment fills.
    pub unfilled: Vec<String>,
    /// Fields of `from` that expressions read: how much of their values
    /// reaches `to` is known only at run time (`convert --round-trip`).
    pub transformed: Vec<String>,
}

/// The coverage of a document: each ordered pair, and the type conflicts.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    pub pairs: Vec<PairCoverage>,
    /// `(version, where, reason)`: a copy or an assignment whose type the
    /// target schema refuses.
    pub conflicts: Vec<(String, String, String)>,
}

/// The coverage of every ordered pair of versions of `conversion`.
pub fn analyse(conversion: &Conversion) -> Coverage {
    let mut coverage = Coverage::default();
    let hub = conversion.hub.as_str();
    let Some(hub_plan) = conversion.plans.get(hub) else {
        return coverage;
    };
    // One hop each way per version: version -> hub and hub -> version.
    let mut to_hub = Vec::new();
    let mut from_hub = Vec::new();
    for name in conversion.versions() {
        let Some(plan) = conversion.plans.get(name) else {
            continue;
        };
        if name == hub {
            continue;
        }
        let up = Hop::new(&plan.schema, &hub_plan.schema, &plan.to_hub);
        let down = Hop::new(&hub_plan.schema, &plan.schema, &plan.from_hub);
        for (hop, dir) in [(&up, "toHub"), (&down, "fromHub")] {
            for (at, reason) in &hop.conflicts {
                coverage.conflicts.push((
                    name.clone(),
                    format!("spec.versions.{name}.{dir}{at}"),
                    reason.clone(),
                ));
            }
        }
        to_hub.push((name.as_str(), up));
        from_hub.push((name.as_str(), down));
    }
    for from in conversion.versions() {
        for to in conversion.versions() {
            if from == to {
                continue;
            }
            let up = to_hub.iter().find(|(v, _)| *v == from).map(|(_, h)| h);
            let down = from_hub.iter().find(|(v, _)| *v == to).map(|(_, h)| h);
            let pair = match (up, down) {
                (Some(up), None) => up.alone(),
                (None, Some(down)) => down.alone(),
                (Some(up), Some(down)) => up.then(down),
                (None, None) => continue,
            };
            coverage.pairs.push(PairCoverage {
                from: from.clone(),
                to: to.clone(),
                ..pair
            });
        }
    }
    coverage
}

/// What `check` says of a document's coverage: type conflicts are
/// errors; stash-only fields the document does not acknowledge in
/// `spec.lossy` are warnings (errors for `check --strict`), as are
/// acknowledgements of fields that are not lost; acknowledged losses and
/// unfilled target fields are notes.
#[derive(Debug, Default)]
pub struct Findings {
    pub errors: Vec<DocumentProblem>,
    pub warnings: Vec<DocumentProblem>,
    pub notes: Vec<DocumentProblem>,
}

/// [`analyse`], judged against the document's `spec.lossy`.
pub fn findings(conversion: &Conversion) -> Findings {
    let lossy = conversion.lossy();
    let coverage = analyse(conversion);
    let problem = |version: String, path: String, reason: String| DocumentProblem {
        crd: Some(conversion.crd_name.clone()),
        version: Some(version),
        path,
        rule: None,
        reason,
    };
    let mut out = Findings::default();
    for (version, path, reason) in coverage.conflicts {
        out.errors.push(problem(version, path, reason));
    }
    let acknowledged = |from: &str, field: &str| {
        lossy
            .get(from)
            .is_some_and(|paths| paths.iter().any(|p| within(field, p)))
    };
    let mut used: Vec<(&str, &str)> = Vec::new();
    for pair in &coverage.pairs {
        let (open, known): (Vec<&str>, Vec<&str>) = pair
            .stash_only
            .iter()
            .map(String::as_str)
            .partition(|f| !acknowledged(&pair.from, f));
        // What converting this pair does to `fields`, told at `path` of `version`.
        let converting = |version: &String, path: String, what: &str, fields: String| {
            let reason = format!("converting {} -> {}, {what}: {fields}", pair.from, pair.to);
            problem(version.clone(), path, reason)
        };
        let lossy_path = format!("spec.lossy.{}", pair.from);
        if !open.is_empty() {
            out.warnings.push(converting(
                &pair.from,
                lossy_path.clone(),
                "these fields survive only in the celhook.dev/conversion-stash annotation (invisible to clients of the target version; map them, or acknowledge them here)",
                open.join(", "),
            ));
        }
        if !known.is_empty() {
            out.notes.push(converting(
                &pair.from,
                lossy_path,
                "acknowledged as kept only in the stash",
                known.join(", "),
            ));
        }
        if !pair.unfilled.is_empty() {
            out.notes.push(converting(
                &pair.to,
                format!("spec.versions.{}", pair.to),
                &format!("no source fills these fields of {}", pair.to),
                pair.unfilled.join(", "),
            ));
        }
        let read = pair.transformed.iter().map(String::as_str);
        for field in known.iter().copied().chain(read) {
            used.push((pair.from.as_str(), field));
        }
    }
    for (version, paths) in lossy {
        for p in paths {
            let lost = used.iter().any(|(v, f)| v == version && within(f, p));
            if !lost {
                out.warnings.push(problem(
                    version.clone(),
                    format!("spec.lossy.{version}"),
                    format!("{p:?} is acknowledged as lost, but every conversion from {version} copies it as it is"),
                ));
            }
        }
    }
    out
}

/// True when the report path `field` is `listed` or lies below it.
fn within(field: &str, listed: &str) -> bool {
    field
        .strip_prefix(listed)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// One hop of a conversion: the source's leaves and how each fares.
struct Hop {
    /// (leaf, copied to the same path, read by an expression).
    leaves: Vec<(Path, bool, bool)>,
    /// Target leaves no source leaf and no assignment fills.
    unfilled: Vec<Path>,
    conflicts: Vec<(String, String)>,
}

impl Hop {
    fn new(source: &Schema, target: &Schema, assignments: &[Assignment]) -> Hop {
        let reads: Vec<Vec<String>> = assignments
            .iter()
            .flat_map(|a| a.program.self_reads())
            .collect();
        let written: Vec<&[String]> = assignments.iter().map(|a| a.path.as_slice()).collect();
        let mut conflicts = Vec::new();
        for (i, a) in assignments.iter().enumerate() {
            if let Some(reason) = assignment_conflict(a) {
                conflicts.push((format!("[{i}]"), reason));
            }
        }
        let mut source_leaves = Vec::new();
        leaves(source, &mut Vec::new(), true, &mut source_leaves);
        let mut out = Vec::new();
        for (path, leaf) in source_leaves {
            let overwritten = written.iter().any(|w| prefix_of(w, &path));
            let copied = !overwritten && lookup(target, &path).is_some();
            if copied {
                if let Some(t) = lookup(target, &path).flatten() {
                    if let Some(reason) = copy_conflict(leaf, t) {
                        conflicts.push((String::new(), format!("{}: {reason}", show(&path))));
                    }
                }
            }
            let read = reads.iter().any(|r| covers(r, &path));
            out.push((path, copied, read));
        }
        let mut target_leaves = Vec::new();
        leaves(target, &mut Vec::new(), true, &mut target_leaves);
        let unfilled = target_leaves
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| lookup(source, p).is_none())
            .filter(|p| !written.iter().any(|w| prefix_of(w, p) || longer_than(w, p)))
            .collect();
        Hop {
            leaves: out,
            unfilled,
            conflicts,
        }
    }

    /// The pair this hop makes on its own (one side is the hub).
    fn alone(&self) -> PairCoverage {
        PairCoverage {
            stash_only: self
                .leaves
                .iter()
                .filter(|(_, copied, read)| !copied && !read)
                .map(|(p, _, _)| show(p))
                .collect(),
            unfilled: self.unfilled.iter().map(|p| show(p)).collect(),
            transformed: self
                .leaves
                .iter()
                .filter(|(_, _, read)| *read)
                .map(|(p, _, _)| show(p))
                .collect(),
            ..PairCoverage::default()
        }
    }

    /// The pair of this hop (to the hub) followed by `down` (from it): a
    /// field copied to the hub must then be copied or read on the way down.
    fn then(&self, down: &Hop) -> PairCoverage {
        // Looked up by path: a large schema has thousands of leaves.
        let below: std::collections::HashMap<&Path, (bool, bool)> = down
            .leaves
            .iter()
            .map(|(p, copied, read)| (p, (*copied, *read)))
            .collect();
        let stash_only = self
            .leaves
            .iter()
            .filter(|(path, copied, read)| {
                if *read {
                    return false;
                }
                if !copied {
                    return true;
                }
                below
                    .get(path)
                    .is_some_and(|(copied, read)| !copied && !read)
            })
            .map(|(p, _, _)| show(p))
            .collect();
        // A target field the way down copies from a hub field that this
        // source cannot fill is unfilled too.
        let mut unfilled: Vec<String> = down.unfilled.iter().map(|p| show(p)).collect();
        for p in &self.unfilled {
            let copied_down = below.get(p).is_some_and(|(copied, _)| *copied);
            if copied_down {
                unfilled.push(show(p));
            }
        }
        let transformed = self
            .leaves
            .iter()
            .filter(|(path, copied, read)| {
                *read || *copied && below.get(path).is_some_and(|(_, read)| *read)
            })
            .map(|(p, _, _)| show(p))
            .collect();
        PairCoverage {
            stash_only,
            unfilled,
            transformed,
            ..PairCoverage::default()
        }
    }
}

/// The leaves of `schema` below `path`: fields copied as a whole (scalars,
/// lists and maps of scalars, untyped data); objects, lists of objects and
/// maps of objects are walked into. The root's apiVersion, kind and
/// metadata are the API server's.
fn leaves<'s>(schema: &'s Schema, path: &mut Path, root: bool, out: &mut Vec<(Path, &'s Schema)>) {
    let walks = |s: &Schema| s.ty == Type::Object && !s.properties.is_empty();
    if walks(schema) {
        for (name, child) in schema.properties.iter() {
            if root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            path.push(Seg::Field(name.clone()));
            leaves(child, path, false, out);
            path.pop();
        }
        return;
    }
    for (inner, seg) in [
        (schema.items.as_deref(), Seg::Item),
        (schema.additional_properties.as_deref(), Seg::Value),
    ] {
        if let Some(inner) = inner.filter(|s| walks(s)) {
            path.push(seg);
            leaves(inner, path, false, out);
            path.pop();
            return;
        }
    }
    out.push((path.clone(), schema));
}

/// The node of `schema` at `path`: `Some(None)` where untyped data takes
/// any value, `None` where the schema has no such field.
fn lookup<'s>(schema: &'s Schema, path: &[Seg]) -> Option<Option<&'s Schema>> {
    let mut node = schema;
    for seg in path {
        if node.ty == Type::Any || node.preserve_unknown_fields && node.properties.is_empty() {
            return Some(None);
        }
        node = match seg {
            Seg::Field(name) => node
                .property(name)
                .or(node.additional_properties.as_deref())?,
            Seg::Item => node.items.as_deref()?,
            Seg::Value => node.additional_properties.as_deref()?,
        };
    }
    Some(Some(node))
}

/// True when the assignment path `written` is `path` or one of its parents.
fn prefix_of(written: &[String], path: &[Seg]) -> bool {
    written.len() <= path.len()
        && written
            .iter()
            .zip(path)
            .all(|(w, p)| matches!(p, Seg::Field(n) if n == w))
}

/// True when the assignment path `written` lies below `path`.
fn longer_than(written: &[String], path: &[Seg]) -> bool {
    written.len() > path.len()
        && written.iter().zip(path).all(|(w, p)| match p {
            Seg::Field(n) => n == w,
            Seg::Item | Seg::Value => false,
        })
}

/// True when an expression reading `read` reads (some of) the leaf `path`:
/// one is a prefix of the other, a map's values matching any key.
fn covers(read: &[String], path: &[Seg]) -> bool {
    read.iter().zip(path).all(|(r, p)| match p {
        Seg::Field(n) => n == r,
        Seg::Value => true,
        // A chain stops at a list (an index is not a field name).
        Seg::Item => false,
    })
}

/// Why a copied leaf does not fit the target's node, if it does not.
fn copy_conflict(source: &Schema, target: &Schema) -> Option<String> {
    if target.ty == Type::Any || source.ty == Type::Any || target.preserve_unknown_fields {
        return None;
    }
    let fits = match (source.ty, target.ty) {
        (s, t) if s == t => match (source.items.as_deref(), target.items.as_deref()) {
            (Some(si), Some(ti)) => copy_conflict(si, ti).is_none(),
            _ => true,
        },
        (Type::Integer, Type::Number) => true,
        _ => false,
    };
    (!fits).then(|| {
        format!(
            "copied as it is, but the source declares {} and the target {}: assign it with an expression",
            type_name(source),
            type_name(target)
        )
    })
}

fn type_name(s: &Schema) -> String {
    match (s.ty, s.items.as_deref()) {
        (Type::Array, Some(items)) => format!("array of {}", type_name(items)),
        (t, _) => t.openapi_name().to_owned(),
    }
}

/// Why an assignment's result type does not fit its target, if it does not.
fn assignment_conflict(a: &Assignment) -> Option<String> {
    let target = a.value_schema.as_ref()?;
    if target.ty == Type::Any || target.preserve_unknown_fields {
        return None;
    }
    let mut result = a.program.result_type();
    if let Some(inner) = result
        .strip_prefix("optional_type(")
        .and_then(|r| r.strip_suffix(')'))
    {
        result = inner;
    }
    let fits = match result {
        "string" => target.ty == Type::String,
        "int" | "uint" => matches!(target.ty, Type::Integer | Type::Number),
        "double" => target.ty == Type::Number,
        "bool" => target.ty == Type::Boolean,
        r if r.starts_with("list(") => target.ty == Type::Array,
        r if r.starts_with("map(") => target.ty == Type::Object,
        // dyn, null, timestamps and durations (strings in JSON): known at run time only.
        _ => true,
    };
    (!fits).then(|| {
        format!(
            "{:?} gives {result}, where the target schema declares {} at {}",
            a.expr,
            type_name(target),
            a.path.join(".")
        )
    })
}

#[cfg(test)]
mod tests;
