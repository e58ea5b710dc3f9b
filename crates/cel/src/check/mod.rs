//! From the `cel` crate's AST to celhook's program tree (`Ir`): variables
//! resolved to slots, functions to an enum, constant regexes compiled, field
//! names unescaped, and fields checked against the schema, all once at load.

mod calls;

use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};

use crate::environment::Environment;
use crate::ir::{BinOp, Ir, Loop, LoopKind};
use crate::registry::Func;
use crate::syntax::{
    format_error, line_col, nesting, parse, raw_nesting, DEEP_PARSE_STACK, MAX_NESTING,
    SHALLOW_NESTING,
};
use crate::types::{self, Op, Ty};
use crate::value::error::CompileError;
use crate::value::{Const, TypeName};
use celhook_schema::Schema;

/// Declarations a rule is compiled against.
pub(crate) struct Decls<'s> {
    /// `self`'s schema node.
    pub self_schema: &'s Schema,
    /// Its other variables and the functions it may call.
    pub env: Environment,
    /// The names of a composition's variables visible here (a policy's
    /// earlier `spec.variables`), read as `variables.<name>`; `None`
    /// leaves `variables` undeclared.
    pub composited: Option<&'s [(String, Ty<'static>)]>,
    /// Schemas typing the environment's named variables, by position
    /// (missing or `None`: dynamic).
    pub variable_schemas: &'s [Option<&'s Schema>],
}

pub(crate) const SELF_SLOT: usize = 0;
pub(crate) const OLD_SELF_SLOT: usize = 1;
/// The slot of an environment's first named variable (the next ones follow).
pub(crate) const FIRST_VARIABLE_SLOT: usize = 2;

/// The output of compilation.
pub(crate) struct Compiled {
    pub ir: Ir,
    /// The chains of fields the source selects from `self`, when that is
    /// all it does with `self` (`syntax::self_paths_of`).
    pub self_paths: Option<Vec<crate::syntax::SelfPath>>,
    pub slots: usize,
    pub uses_old_self: bool,
    /// The static result type, as cel-go names it (`bool`, `string`, `dyn`, ...).
    pub result_type: String,
    /// The same type, for the expressions that read this one's value
    /// (a composition's variables).
    pub result_ty: Ty<'static>,
}

/// Parses and compiles `source`, refusing expressions nested deeper than
/// [`MAX_NESTING`]. Deeply nested ones are parsed and compiled on a thread
/// with [`DEEP_PARSE_STACK`], so that no caller's stack size matters.
pub(crate) fn compile(source: &str, decls: &Decls<'_>) -> Result<Compiled, CompileError> {
    let depth = nesting(source);
    if depth > MAX_NESTING {
        return Err(CompileError {
            message: format_error(
                source,
                1,
                0,
                &format!(
                    "expression recursion limit exceeded: {MAX_NESTING} (nested {depth} deep)"
                ),
            ),
            instantiation: false,
        });
    }
    // Brackets inside what looks like a string literal count here: a
    // literal the scanner misreads must not put a deep parse on a small stack.
    if raw_nesting(source) <= SHALLOW_NESTING {
        return compile_here(source, decls);
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("celhook-compile".into())
            .stack_size(DEEP_PARSE_STACK)
            .spawn_scoped(scope, || compile_here(source, decls))
            .map_err(|e| CompileError {
                message: format!(
                    "cannot start a thread to compile a deeply nested expression: {e}"
                ),
                instantiation: false,
            })?
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn compile_here(source: &str, decls: &Decls<'_>) -> Result<Compiled, CompileError> {
    let (expr, info) = parse(source)?;
    let mut c = Compiler {
        decls,
        source,
        info: &info,
        scopes: Vec::new(),
        slots: FIRST_VARIABLE_SLOT + decls.env.variables.len(),
        uses_old_self: false,
        format_depth: 0,
        last_list_tys: Vec::new(),
    };
    let (ir, ty) = c.expr(&expr)?;
    Ok(Compiled {
        ir,
        self_paths: crate::syntax::self_paths_of(&expr),
        slots: c.slots,
        uses_old_self: c.uses_old_self,
        result_type: ty.to_string(),
        result_ty: ty.detached(),
    })
}

struct Compiler<'c, 's> {
    decls: &'c Decls<'s>,
    source: &'c str,
    info: &'c SourceInfo,
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<(String, usize, Ty<'s>)>,
    slots: usize,
    uses_old_self: bool,
    /// Inside the arguments of a `format` call, whose literals cel-go
    /// exempts from the homogeneous-literal check.
    format_depth: usize,
    /// Element types of the list literal compiled last (for the check of
    /// `'...'.format([...])`).
    last_list_tys: Vec<Ty<'s>>,
}

impl<'s> Compiler<'_, 's> {
    fn error(&self, id: u64, msg: impl AsRef<str>) -> CompileError {
        let (line, col0) = match self.info.offset_for(id) {
            Some((start, _)) => line_col(self.source, start as usize),
            None => (1, 0),
        };
        CompileError {
            message: format_error(self.source, line, col0, msg.as_ref()),
            instantiation: false,
        }
    }

    /// An error at a literal, placed at its sign when it has one, as cel-go
    /// places errors on negative literals.
    fn error_at_literal(&self, id: u64, msg: impl AsRef<str>) -> CompileError {
        let (line, col0) = match self.info.offset_for(id) {
            Some((start, _)) => {
                let start = start as usize;
                let signed = start > 0 && self.source.as_bytes().get(start - 1) == Some(&b'-');
                line_col(self.source, if signed { start - 1 } else { start })
            }
            None => (1, 0),
        };
        CompileError {
            message: format_error(self.source, line, col0, msg.as_ref()),
            instantiation: false,
        }
    }

    fn expr(&mut self, e: &IdedExpr) -> Result<(Ir, Ty<'s>), CompileError> {
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(sel) => {
                if let Some(found) = self.composited(e.id, sel) {
                    return found;
                }
                // Library type names (`net.IP`, `kubernetes.Quantity`, ...).
                if let Expr::Ident(ns) = &sel.operand.expr {
                    if !sel.test && !self.is_variable(ns) {
                        let qualified = format!("{ns}.{}", sel.field);
                        if let Some(t) = crate::value::k8s::type_by_name(&qualified) {
                            return Ok((Ir::Const(Const::Type(t)), Ty::Type));
                        }
                    }
                }
                // A dotted type name, such as `google.protobuf.Timestamp`.
                if !sel.test {
                    if let Some(name) = self.qualified_name(e) {
                        if let Some(t) = type_ident(&name) {
                            return Ok((Ir::Const(Const::Type(t)), Ty::Type));
                        }
                    }
                }
                let (operand, ty) = self.expr(&sel.operand)?;
                let (field, fty) = self.field(e.id, &ty, &sel.field, sel.test)?;
                let position = match &ty {
                    Ty::Object(s) => s
                        .properties
                        .position(&field)
                        .and_then(|p| u32::try_from(p).ok()),
                    _ => None,
                };
                Ok((
                    Ir::Select {
                        operand: Box::new(operand),
                        field,
                        test: sel.test,
                        position,
                    },
                    if sel.test { Ty::Bool } else { fty },
                ))
            }
            Expr::List(list) => {
                let mut items = Vec::with_capacity(list.elements.len());
                let mut optional = vec![false; list.elements.len()];
                for i in &list.optional_indices {
                    if let Some(o) = optional.get_mut(*i) {
                        *o = true;
                    }
                }
                let mut elem: Option<Ty<'s>> = None;
                let mut elem_tys = Vec::with_capacity(list.elements.len());
                for (el, opt) in list.elements.iter().zip(&optional) {
                    let (ir, mut ty) = self.expr(el)?;
                    if *opt {
                        ty = match ty {
                            Ty::Optional(t) => *t,
                            _ => Ty::Dyn,
                        };
                    }
                    elem_tys.push(ty.clone());
                    // cel-go leaves optional entries of unknown type unchecked.
                    if !(*opt && ty.is_dyn()) {
                        elem = Some(self.homogeneous(el.id, elem, ty)?);
                    }
                    items.push(ir);
                }
                self.last_list_tys = elem_tys;
                // Only literals and no optional entries: keep them as such
                // (a list with a folded conversion stays a list of items, so
                // that the estimate prices the call; it is free at run time
                // all the same).
                let ir = if optional.iter().all(|o| !o)
                    && items.iter().all(|i| matches!(i, Ir::Const(_)))
                {
                    Ir::ConstList(
                        items
                            .into_iter()
                            .filter_map(|i| match i {
                                Ir::Const(c) => Some(c),
                                _ => None,
                            })
                            .collect(),
                    )
                } else {
                    Ir::List(items, optional)
                };
                Ok((ir, Ty::List(Box::new(elem.unwrap_or(Ty::Dyn)))))
            }
            Expr::Map(map) => {
                let mut entries = Vec::with_capacity(map.entries.len());
                let (mut kt, mut vt): (Option<Ty<'s>>, Option<Ty<'s>>) = (None, None);
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let (k, kty) = self.expr(&me.key)?;
                            let (v, vty) = self.expr(&me.value)?;
                            let vty = match (me.optional, vty) {
                                (true, Ty::Optional(t)) => *t,
                                (true, _) => Ty::Dyn,
                                (false, t) => t,
                            };
                            kt = Some(self.homogeneous(me.key.id, kt, kty)?);
                            if !(me.optional && vty.is_dyn()) {
                                vt = Some(self.homogeneous(me.value.id, vt, vty)?);
                            }
                            entries.push((k, v, me.optional));
                        }
                        EntryExpr::StructField(_) => {
                            return Err(self.error(entry.id, "unsupported field initializer"))
                        }
                    }
                }
                Ok((
                    Ir::Map(entries),
                    Ty::Map(
                        Box::new(kt.unwrap_or(Ty::Dyn)),
                        Box::new(vt.unwrap_or(Ty::Dyn)),
                    ),
                ))
            }
            Expr::Struct(s) => Err(self.error(
                e.id,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            )),
            Expr::Comprehension(_) => Err(self.error(e.id, "unsupported comprehension")),
            Expr::Call(call) => self.call(e.id, call),
            Expr::Unspecified => Err(self.error(e.id, "unspecified expression")),
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> Result<(Ir, Ty<'s>), CompileError> {
        if let Some((_, slot, ty)) = self.scopes.iter().rev().find(|(n, _, _)| n == name) {
            return Ok((Ir::Var(*slot), ty.clone()));
        }
        let named = self.decls.env.variables;
        if let Some(i) = named.iter().position(|v| *v == name) {
            if !self.decls.env.hidden.contains(&name) {
                let ty = match self.decls.variable_schemas.get(i) {
                    Some(Some(schema)) => Ty::of_schema(schema),
                    // The API server types it, so its calls check.
                    _ if name == "authorizer" => Ty::Lib(crate::value::TypeName::Authorizer),
                    _ => Ty::Dyn,
                };
                return Ok((Ir::Var(FIRST_VARIABLE_SLOT + i), ty));
            }
        }
        match name {
            "variables" if self.decls.composited.is_some() => {
                Err(self.error(id, "variables can only be read by name (variables.<name>)"))
            }
            "self" if named.is_empty() => {
                Ok((Ir::Var(SELF_SLOT), Ty::of_schema(self.decls.self_schema)))
            }
            "oldSelf" if self.decls.env.old_self && named.is_empty() => {
                self.uses_old_self = true;
                let ty = Ty::of_schema(self.decls.self_schema);
                let ty = if self.decls.env.optional_old_self {
                    Ty::Optional(Box::new(ty))
                } else {
                    ty
                };
                Ok((Ir::Var(OLD_SELF_SLOT), ty))
            }
            _ => match type_ident(name) {
                Some(t) => Ok((Ir::Const(Const::Type(t)), Ty::Type)),
                None => Err(self.error(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                )),
            },
        }
    }

    /// `variables.<name>` of a composition: the variable, read lazily
    /// (a presence test is true for every declared name, as on cel-go's
    /// object type of the variables). `None` when `sel` is something else.
    fn composited(
        &self,
        id: u64,
        sel: &cel::common::ast::SelectExpr,
    ) -> Option<Result<(Ir, Ty<'s>), CompileError>> {
        let names = self.decls.composited?;
        match &sel.operand.expr {
            Expr::Ident(root) if root == "variables" && !self.is_variable(root) => {}
            _ => return None,
        }
        Some(match names.iter().position(|(n, _)| *n == sel.field) {
            Some(_) if sel.test => Ok((Ir::Const(Const::Bool(true)), Ty::Bool)),
            Some(i) => Ok((Ir::Lazy(i), names[i].1.clone())),
            None => Err(self.error(id, format!("undefined field '{}'", sel.field))),
        })
    }

    /// `a.b.c` as one name, when `a` is not a variable.
    fn qualified_name(&self, e: &IdedExpr) -> Option<String> {
        let mut parts = Vec::new();
        let mut cur = e;
        loop {
            match &cur.expr {
                Expr::Select(s) if !s.test => {
                    parts.push(s.field.as_str());
                    cur = &s.operand;
                }
                Expr::Ident(root) if !self.is_variable(root) => {
                    parts.push(root.as_str());
                    parts.reverse();
                    return Some(parts.join("."));
                }
                _ => return None,
            }
        }
    }

    /// Resolves a field selection: checks it against the schema and finds
    /// the JSON name behind an escaped CEL name.
    fn field(
        &self,
        id: u64,
        ty: &Ty<'s>,
        field: &str,
        test: bool,
    ) -> Result<(Box<str>, Ty<'s>), CompileError> {
        match ty {
            // Selecting on an optional chains: the result is optional too.
            Ty::Optional(inner) => {
                let (name, fty) = self.field(id, inner, field, test)?;
                let fty = match fty {
                    Ty::Optional(t) => Ty::Optional(t),
                    t => Ty::Optional(Box::new(t)),
                };
                Ok((name, fty))
            }
            Ty::Map(k, v) if k.unifies(&Ty::String) => Ok((field.into(), (**v).clone())),
            // Reserved words name fields from compatibility version 1.31.
            Ty::Object(s) => match s.cel_property(field, self.decls.env.version >= 31) {
                // Data of unknown type (preserved unknown fields) is out of
                // CEL's reach, as if the field did not exist.
                Some((name, child)) if !child.is_unknown_type() => {
                    Ok((name.as_ref().into(), Ty::of_schema(child)))
                }
                _ => Err(self.error(id, format!("undefined field '{field}'"))),
            },
            Ty::Dyn => Ok((field.into(), Ty::Dyn)),
            _ if test => Err(self.error(id, "invalid argument to has() macro")),
            other => Err(self.error(
                id,
                format!("type '{other}' does not support field selection"),
            )),
        }
    }

    /// Literals must be homogeneous (Kubernetes enables cel-go's check):
    /// every element of a list, and every key and every value of a map,
    /// of the first one's type exactly, `dyn` included.
    fn homogeneous(
        &self,
        id: u64,
        first: Option<Ty<'s>>,
        next: Ty<'s>,
    ) -> Result<Ty<'s>, CompileError> {
        match first {
            None => Ok(next),
            Some(first) if same_literal_type(&first, &next, true) => Ok(first.join(&next)),
            // Mixed literals inside `format(...)` are allowed and dynamic,
            // as everywhere in an environment without homogeneous literals.
            Some(_) if self.format_depth > 0 || !self.decls.env.homogeneous_literals => Ok(Ty::Dyn),
            Some(first) => {
                Err(self.error(id, format!("expected type '{first}' but found '{next}'")))
            }
        }
    }
}

fn type_ident(name: &str) -> Option<TypeName> {
    Some(match name {
        "int" => TypeName::Int,
        "uint" => TypeName::Uint,
        "double" => TypeName::Double,
        "string" => TypeName::String,
        "bytes" => TypeName::Bytes,
        "bool" => TypeName::Bool,
        "null_type" => TypeName::Null,
        "list" => TypeName::List,
        "map" => TypeName::Map,
        "type" => TypeName::Type,
        "google.protobuf.Timestamp" => TypeName::Timestamp,
        "google.protobuf.Duration" => TypeName::Duration,
        "optional_type" => TypeName::Optional,
        _ => return None,
    })
}

fn literal<'s>(l: &LiteralValue) -> (Ir, Ty<'s>) {
    let (c, t) = match l {
        LiteralValue::Boolean(b) => (Const::Bool(*b.inner()), Ty::Bool),
        LiteralValue::Int(i) => (Const::Int(*i.inner()), Ty::Int),
        LiteralValue::UInt(u) => (Const::Uint(*u.inner()), Ty::Uint),
        LiteralValue::Double(d) => (Const::Double(*d.inner()), Ty::Double),
        LiteralValue::String(s) => (Const::Str(Arc::from(s.inner())), Ty::String),
        LiteralValue::Bytes(b) => (Const::Bytes(Arc::from(b.inner())), Ty::Bytes),
        LiteralValue::Null => (Const::Null, Ty::Null),
    };
    (Ir::Const(c), t)
}

/// Literal elements agree when their types are equal, where a `dyn` nested
/// in a container (the free type of `[]`, `{}` or `optional.none()`) agrees
/// with anything, but a `dyn` element itself does not.
fn same_literal_type(a: &Ty<'_>, b: &Ty<'_>, top: bool) -> bool {
    match (a, b) {
        (Ty::Dyn, _) | (_, Ty::Dyn) if !top => true,
        (Ty::List(x), Ty::List(y)) | (Ty::Optional(x), Ty::Optional(y)) => {
            same_literal_type(x, y, false)
        }
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => {
            same_literal_type(k1, k2, false) && same_literal_type(v1, v2, false)
        }
        _ => a.to_string() == b.to_string(),
    }
}

/// `-1` and `-1.5` parse as a negation of a literal.
fn is_negative_literal(e: &Expr) -> bool {
    matches!(e, Expr::Call(c) if c.func_name == "-_" && c.target.is_none()
        && matches!(c.args.as_slice(), [IdedExpr { expr: Expr::Literal(_), .. }]))
}
