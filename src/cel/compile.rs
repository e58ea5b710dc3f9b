//! From the `cel` crate's AST to celhook's program tree (`Ir`): variables
//! resolved to slots, functions to an enum, constant regexes compiled, field
//! names unescaped, and fields checked against the schema, all once at load.

use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use cel::parser::{Macro, MacroExprHelper, ParseError};

use super::error::CompileError;
use super::functions::Func;
use super::value::TypeName;
use crate::schema::{unescape_property, Schema, Type};

/// A compiled expression node.
#[derive(Debug)]
pub(crate) enum Ir {
    Const(Const),
    Var(usize),
    Select {
        operand: Box<Ir>,
        field: Box<str>,
        test: bool,
    },
    OptSelect {
        operand: Box<Ir>,
        field: Box<str>,
    },
    Index(Box<Ir>, Box<Ir>),
    OptIndex(Box<Ir>, Box<Ir>),
    And(Box<Ir>, Box<Ir>),
    Or(Box<Ir>, Box<Ir>),
    Not(Box<Ir>),
    Cond(Box<Ir>, Box<Ir>, Box<Ir>),
    Bin(BinOp, Box<Ir>, Box<Ir>),
    List(Vec<Ir>, Vec<bool>),
    Map(Vec<(Ir, Ir, bool)>),
    Call(Func, Vec<Ir>),
    /// `matches` with a constant pattern, compiled at load.
    Matches(Box<Ir>, Arc<regex::Regex>),
    /// Another call with a constant regex argument (`find`, `findAll`),
    /// compiled at load; see `functions::constant_regex_arg`.
    RegexCall(Func, Vec<Ir>, Arc<regex::Regex>),
    Loop(Box<Loop>),
}

/// Constants of the program.
#[derive(Debug)]
pub(crate) enum Const {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    Type(TypeName),
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

/// The macros that iterate or bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopKind {
    All,
    Exists,
    ExistsOne,
    /// `map(v, f)`, or `map(v, p, f)` with `filter` set.
    Map,
    Filter,
    /// `transformList(i, v, [p,] f)`.
    TransformList,
    /// `transformMap(k, v, [p,] f)`.
    TransformMap,
    /// `transformMapEntry(k, v, [p,] f)`.
    TransformMapEntry,
    SortBy,
    /// `cel.bind(v, init, body)`: `range` is the init, `var` its slot.
    Bind,
    /// `opt.optMap(v, f)`.
    OptMap,
    /// `opt.optFlatMap(v, f)`.
    OptFlatMap,
}

/// A macro loop over a list or map.
#[derive(Debug)]
pub(crate) struct Loop {
    pub kind: LoopKind,
    pub range: Ir,
    /// The (first) iteration variable's slot.
    pub var: usize,
    /// The second variable of two-variable forms.
    pub var2: Option<usize>,
    /// Predicate, mapping or body.
    pub body: Ir,
    /// The filter of `map(v, p, f)` and of the transform forms.
    pub filter: Option<Ir>,
}

/// Static knowledge about an expression: enough to check field names and
/// unescape them; everything else is checked at run time.
#[derive(Clone, Copy)]
enum Ty<'s> {
    Dyn,
    Schema(&'s Schema),
    Prim(TypeName),
}

/// Declarations a rule is compiled against.
pub(crate) struct Decls<'s> {
    /// `self`'s schema node.
    pub self_schema: &'s Schema,
    /// `oldSelf` is declared (transition rules, messageExpression).
    pub old_self: bool,
    /// `oldSelf` is an optional (optionalOldSelf).
    pub optional_old_self: bool,
}

pub(crate) const SELF_SLOT: usize = 0;
pub(crate) const OLD_SELF_SLOT: usize = 1;

/// The output of compilation.
pub(crate) struct Compiled {
    pub ir: Ir,
    pub slots: usize,
    pub uses_old_self: bool,
}

/// Parses and compiles `source`.
pub(crate) fn compile(source: &str, decls: &Decls<'_>) -> Result<Compiled, CompileError> {
    let (expr, info) = parse(source)?;
    let mut c = Compiler {
        decls,
        source,
        info: &info,
        scopes: Vec::new(),
        slots: 2,
        uses_old_self: false,
    };
    let (ir, _) = c.expr(&expr)?;
    Ok(Compiled {
        ir,
        slots: c.slots,
        uses_old_self: c.uses_old_self,
    })
}

/// Parses with optional syntax and the Kubernetes macro set.
fn parse(source: &str) -> Result<(IdedExpr, SourceInfo), CompileError> {
    let env = environment();
    env.parser()
        .parse_with_source_info(source)
        .map_err(|errs| CompileError {
            message: errs
                .errors
                .iter()
                .map(|e| format_error(source, e.pos.0, e.pos.1 - 1, &e.msg))
                .collect::<Vec<_>>()
                .join("\n"),
        })
}

/// cel-go's error layout: `ERROR: <input>:L:C: msg`, the source line, and a
/// caret under the column (1-based in the text, dots before the caret).
pub(crate) fn format_error(source: &str, line: isize, col0: isize, msg: &str) -> String {
    let line = line.max(1);
    let col0 = col0.max(0);
    let mut out = format!("ERROR: <input>:{line}:{}: {msg}", col0 + 1);
    if let Some(text) = source.lines().nth((line - 1) as usize) {
        out.push_str("\n | ");
        out.push_str(text);
        out.push_str("\n | ");
        for _ in 0..col0 {
            out.push('.');
        }
        out.push('^');
    }
    out
}

fn environment() -> cel::Env {
    // The cel crate's default Env has no macros; ours expand every macro
    // into a call the compiler below recognises, so the evaluator runs each
    // as a tight loop rather than a generic comprehension.
    let mut env = cel::Env::default();
    let macros = [
        Macro::global("has", 1, has_macro),
        Macro::receiver("all", 2, loop_macro("@all", 1)),
        Macro::receiver("all", 3, loop_macro("@all", 2)),
        Macro::receiver("exists", 2, loop_macro("@exists", 1)),
        Macro::receiver("exists", 3, loop_macro("@exists", 2)),
        Macro::receiver("exists_one", 2, loop_macro("@exists_one", 1)),
        Macro::receiver("existsOne", 2, loop_macro("@exists_one", 1)),
        Macro::receiver("existsOne", 3, loop_macro("@exists_one", 2)),
        Macro::receiver("map", 2, loop_macro("@map", 1)),
        Macro::receiver("map", 3, loop_macro("@map", 1)),
        Macro::receiver("filter", 2, loop_macro("@filter", 1)),
        Macro::receiver("transformList", 3, loop_macro("@transformList", 2)),
        Macro::receiver("transformList", 4, loop_macro("@transformList", 2)),
        Macro::receiver("transformMap", 3, loop_macro("@transformMap", 2)),
        Macro::receiver("transformMap", 4, loop_macro("@transformMap", 2)),
        Macro::receiver("transformMapEntry", 3, loop_macro("@transformMapEntry", 2)),
        Macro::receiver("transformMapEntry", 4, loop_macro("@transformMapEntry", 2)),
        Macro::receiver("sortBy", 2, loop_macro("@sortBy", 1)),
        Macro::receiver("optMap", 2, loop_macro("@optMap", 1)),
        Macro::receiver("optFlatMap", 2, loop_macro("@optFlatMap", 1)),
        Macro::receiver("bind", 3, bind_macro),
    ];
    for m in macros {
        // Each (name, receiver, arity) is listed once above.
        let _ = env.add_macro(m);
    }
    env
}

type MacroResult = Result<Option<IdedExpr>, ParseError>;

fn has_macro(
    h: &mut MacroExprHelper<'_>,
    _target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> MacroResult {
    let arg = args.remove(0);
    match arg.expr {
        Expr::Select(mut sel) if !sel.test => {
            sel.test = true;
            Ok(Some(h.next_expr(Expr::Select(sel))))
        }
        _ => Err(h.new_error(arg.id, "invalid argument to has() macro")),
    }
}

fn loop_macro(
    name: &'static str,
    vars: usize,
) -> impl Fn(&mut MacroExprHelper<'_>, &mut Option<IdedExpr>, &mut Vec<IdedExpr>) -> MacroResult
       + Send
       + Sync
       + 'static {
    move |h, target, args| {
        for a in args.iter().take(vars) {
            if !matches!(a.expr, Expr::Ident(_)) {
                return Err(h.new_error(a.id, "argument must be a simple name"));
            }
        }
        let call = CallExpr {
            func_name: name.to_owned(),
            target: target.take().map(Box::new),
            args: std::mem::take(args),
        };
        Ok(Some(h.next_expr(Expr::Call(call))))
    }
}

fn bind_macro(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> MacroResult {
    // Only `cel.bind(..)`: a `bind` on anything else stays a plain call.
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
        return Ok(None);
    }
    if !matches!(args[0].expr, Expr::Ident(_)) {
        return Err(h.new_error(
            args[0].id,
            "cel.bind() variable names must be simple identifiers",
        ));
    }
    target.take();
    let call = CallExpr {
        func_name: "@bind".to_owned(),
        target: None,
        args: std::mem::take(args),
    };
    Ok(Some(h.next_expr(Expr::Call(call))))
}

struct Compiler<'c, 's> {
    decls: &'c Decls<'s>,
    source: &'c str,
    info: &'c SourceInfo,
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<(String, usize, Ty<'s>)>,
    slots: usize,
    uses_old_self: bool,
}

impl<'s> Compiler<'_, 's> {
    fn error(&self, id: u64, msg: impl AsRef<str>) -> CompileError {
        let (line, col0) = match self.info.offset_for(id) {
            Some((start, _)) => line_col(self.source, start as usize),
            None => (1, 0),
        };
        CompileError {
            message: format_error(self.source, line, col0, msg.as_ref()),
        }
    }

    fn expr(&mut self, e: &IdedExpr) -> Result<(Ir, Ty<'s>), CompileError> {
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(sel) => {
                // Library type names (`net.IP`, `kubernetes.Quantity`, ...).
                if let Expr::Ident(ns) = &sel.operand.expr {
                    if !sel.test && !self.is_variable(ns) {
                        let qualified = format!("{ns}.{}", sel.field);
                        if let Some(t) = super::library::type_by_name(&qualified) {
                            return Ok((Ir::Const(Const::Type(t)), Ty::Prim(TypeName::Type)));
                        }
                    }
                }
                let (operand, ty) = self.expr(&sel.operand)?;
                let (field, fty) = self.field(e.id, ty, &sel.field, sel.test)?;
                Ok((
                    Ir::Select {
                        operand: Box::new(operand),
                        field,
                        test: sel.test,
                    },
                    if sel.test {
                        Ty::Prim(TypeName::Bool)
                    } else {
                        fty
                    },
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
                for el in &list.elements {
                    items.push(self.expr(el)?.0);
                }
                Ok((Ir::List(items, optional), Ty::Prim(TypeName::List)))
            }
            Expr::Map(map) => {
                let mut entries = Vec::with_capacity(map.entries.len());
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let k = self.expr(&me.key)?.0;
                            let v = self.expr(&me.value)?.0;
                            entries.push((k, v, me.optional));
                        }
                        EntryExpr::StructField(_) => {
                            return Err(self.error(entry.id, "unsupported field initializer"))
                        }
                    }
                }
                Ok((Ir::Map(entries), Ty::Prim(TypeName::Map)))
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
            return Ok((Ir::Var(*slot), *ty));
        }
        match name {
            "self" => Ok((Ir::Var(SELF_SLOT), Ty::Schema(self.decls.self_schema))),
            "oldSelf" if self.decls.old_self => {
                self.uses_old_self = true;
                let ty = if self.decls.optional_old_self {
                    Ty::Prim(TypeName::Optional)
                } else {
                    Ty::Schema(self.decls.self_schema)
                };
                Ok((Ir::Var(OLD_SELF_SLOT), ty))
            }
            _ => match type_ident(name) {
                Some(t) => Ok((Ir::Const(Const::Type(t)), Ty::Prim(TypeName::Type))),
                None => Err(self.error(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                )),
            },
        }
    }

    /// Resolves a field selection: checks it against the schema and finds
    /// the JSON name behind an escaped CEL name.
    fn field(
        &self,
        id: u64,
        ty: Ty<'s>,
        field: &str,
        test: bool,
    ) -> Result<(Box<str>, Ty<'s>), CompileError> {
        match ty {
            Ty::Schema(s) if s.is_map() => Ok((
                field.into(),
                s.additional_properties
                    .as_deref()
                    .map_or(Ty::Dyn, Ty::Schema),
            )),
            Ty::Schema(s) if s.ty == Type::Object || !s.properties.is_empty() => {
                let name = unescape_property(field);
                match s.property(&name) {
                    Some(child) => Ok((name.as_ref().into(), Ty::Schema(child))),
                    None if s.preserve_unknown_fields && s.properties.is_empty() => {
                        Ok((name.as_ref().into(), Ty::Dyn))
                    }
                    None => Err(self.error(id, format!("undefined field '{field}'"))),
                }
            }
            Ty::Schema(s) if s.ty == Type::Any => Ok((field.into(), Ty::Dyn)),
            Ty::Schema(_) | Ty::Prim(_) => {
                if test {
                    Err(self.error(id, "invalid argument to has() macro"))
                } else {
                    Err(self.error(
                        id,
                        format!("type '{}' does not support field selection", ty_name(ty)),
                    ))
                }
            }
            Ty::Dyn => Ok((field.into(), Ty::Dyn)),
        }
    }

    fn bind_var(&mut self, arg: &IdedExpr, ty: Ty<'s>) -> Result<usize, CompileError> {
        let Expr::Ident(name) = &arg.expr else {
            return Err(self.error(arg.id, "argument must be a simple name"));
        };
        let slot = self.slots;
        self.slots += 1;
        self.scopes.push((name.clone(), slot, ty));
        Ok(slot)
    }

    fn call(&mut self, id: u64, call: &CallExpr) -> Result<(Ir, Ty<'s>), CompileError> {
        let name = call.func_name.as_str();
        if let Some(kind) = loop_kind(name) {
            return self.loop_macro(id, kind, call);
        }
        // Operators.
        let bin = match name {
            "_+_" => Some(BinOp::Add),
            "_-_" => Some(BinOp::Sub),
            "_*_" => Some(BinOp::Mul),
            "_/_" => Some(BinOp::Div),
            "_%_" => Some(BinOp::Rem),
            "_==_" => Some(BinOp::Eq),
            "_!=_" => Some(BinOp::Ne),
            "_<_" => Some(BinOp::Lt),
            "_<=_" => Some(BinOp::Le),
            "_>_" => Some(BinOp::Gt),
            "_>=_" => Some(BinOp::Ge),
            "@in" => Some(BinOp::In),
            _ => None,
        };
        if let (Some(op), [a, b]) = (bin, call.args.as_slice()) {
            let a = self.expr(a)?.0;
            let b = self.expr(b)?.0;
            let ty = match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => Ty::Dyn,
                _ => Ty::Prim(TypeName::Bool),
            };
            return Ok((Ir::Bin(op, Box::new(a), Box::new(b)), ty));
        }
        match (name, call.args.as_slice()) {
            ("_&&_", [a, b]) => {
                let a = self.expr(a)?.0;
                let b = self.expr(b)?.0;
                return Ok((Ir::And(Box::new(a), Box::new(b)), Ty::Prim(TypeName::Bool)));
            }
            ("_||_", [a, b]) => {
                let a = self.expr(a)?.0;
                let b = self.expr(b)?.0;
                return Ok((Ir::Or(Box::new(a), Box::new(b)), Ty::Prim(TypeName::Bool)));
            }
            ("!_", [a]) => {
                let a = self.expr(a)?.0;
                return Ok((Ir::Not(Box::new(a)), Ty::Prim(TypeName::Bool)));
            }
            ("-_", [a]) => {
                // Fold negative literals so `-9223372036854775808` is an int.
                if let Expr::Literal(l) = &a.expr {
                    match l {
                        LiteralValue::Int(i) => {
                            return Ok((
                                Ir::Const(Const::Int(i.inner().wrapping_neg())),
                                Ty::Prim(TypeName::Int),
                            ))
                        }
                        LiteralValue::Double(d) => {
                            return Ok((
                                Ir::Const(Const::Double(-*d.inner())),
                                Ty::Prim(TypeName::Double),
                            ))
                        }
                        _ => {}
                    }
                }
                let a = self.expr(a)?.0;
                return Ok((Ir::Call(Func::Negate, vec![a]), Ty::Dyn));
            }
            ("_?_:_", [c, t, f]) => {
                let c = self.expr(c)?.0;
                let (t, tty) = self.expr(t)?;
                let f = self.expr(f)?.0;
                return Ok((Ir::Cond(Box::new(c), Box::new(t), Box::new(f)), tty));
            }
            ("_[_]", [a, b]) => {
                let (a, aty) = self.expr(a)?;
                let b = self.expr(b)?.0;
                return Ok((Ir::Index(Box::new(a), Box::new(b)), element_ty(aty)));
            }
            ("_[?_]", [a, b]) => {
                let a = self.expr(a)?.0;
                let b = self.expr(b)?.0;
                return Ok((
                    Ir::OptIndex(Box::new(a), Box::new(b)),
                    Ty::Prim(TypeName::Optional),
                ));
            }
            ("_?._", [a, b]) => {
                let (a, aty) = self.expr(a)?;
                let Expr::Literal(LiteralValue::String(field)) = &b.expr else {
                    return Err(self.error(id, "unsupported optional field selection"));
                };
                let (field, _) = self.field(id, aty, field.inner(), false)?;
                return Ok((
                    Ir::OptSelect {
                        operand: Box::new(a),
                        field,
                    },
                    Ty::Prim(TypeName::Optional),
                ));
            }
            _ => {}
        }

        // Namespaced global functions: `optional.of(x)`, `lists.range(n)`, ...
        let (qualified, target) = match call.target.as_deref() {
            Some(IdedExpr {
                expr: Expr::Ident(ns),
                ..
            }) if !self.is_variable(ns)
                && Func::lookup(&format!("{ns}.{name}"), false, call.args.len()).is_some() =>
            {
                (Some(format!("{ns}.{name}")), None)
            }
            t => (None, t),
        };
        let fname = qualified.as_deref().unwrap_or(name);
        let member = target.is_some();
        let arity = call.args.len();
        let Some(func) = Func::lookup(fname, member, arity) else {
            let known = Func::lookup_any(fname);
            return Err(if known {
                self.error(
                    id,
                    format!(
                        "found no matching overload for '{fname}' applied to {}",
                        arity_text(member, arity)
                    ),
                )
            } else {
                self.error(
                    id,
                    format!("undeclared reference to '{fname}' (in container '')"),
                )
            });
        };
        let mut args = Vec::with_capacity(arity + 1);
        if let Some(t) = target {
            args.push(self.expr(t)?.0);
        }
        for a in &call.args {
            args.push(self.expr(a)?.0);
        }
        // A constant pattern is compiled once here, not per evaluation.
        if func == Func::Matches {
            if let Some(Ir::Const(Const::Str(p))) = args.get(1) {
                let re = regex::Regex::new(p)
                    .map_err(|e| self.error(id, format!("invalid regular expression: {e}")))?;
                let mut it = args.into_iter();
                let target = it.next().unwrap_or(Ir::Const(Const::Null));
                return Ok((
                    Ir::Matches(Box::new(target), Arc::new(re)),
                    Ty::Prim(TypeName::Bool),
                ));
            }
        }
        if let Some(i) = super::functions::constant_regex_arg(func) {
            if let Some(Ir::Const(Const::Str(p))) = args.get(i) {
                let re = super::functions::compile_regex(func, p)
                    .map_err(|e| self.error(id, e.message))?;
                return Ok((
                    Ir::RegexCall(func, args, Arc::new(re)),
                    func.result_ty().map_or(Ty::Dyn, Ty::Prim),
                ));
            }
        }
        Ok((
            Ir::Call(func, args),
            func.result_ty().map_or(Ty::Dyn, Ty::Prim),
        ))
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scopes.iter().any(|(n, _, _)| n == name)
            || name == "self"
            || (name == "oldSelf" && self.decls.old_self)
    }

    fn loop_macro(
        &mut self,
        id: u64,
        kind: LoopKind,
        call: &CallExpr,
    ) -> Result<(Ir, Ty<'s>), CompileError> {
        let args = call.args.as_slice();
        if kind == LoopKind::Bind {
            let [var, init, body] = args else {
                return Err(self.error(id, "cel.bind() takes three arguments"));
            };
            let (init, ity) = self.expr(init)?;
            let depth = self.scopes.len();
            let slot = self.bind_var(var, ity)?;
            let (body, bty) = self.expr(body)?;
            self.scopes.truncate(depth);
            return Ok((
                Ir::Loop(Box::new(Loop {
                    kind,
                    range: init,
                    var: slot,
                    var2: None,
                    body,
                    filter: None,
                })),
                bty,
            ));
        }
        let Some(target) = call.target.as_deref() else {
            return Err(self.error(id, "macro requires a target"));
        };
        let (range, rty) = self.expr(target)?;
        let two_vars =
            matches!(
                kind,
                LoopKind::TransformList | LoopKind::TransformMap | LoopKind::TransformMapEntry
            ) || (matches!(kind, LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne)
                && args.len() == 3);
        let depth = self.scopes.len();
        let (elem_ty, key_ty) = iter_tys(rty);
        let (var, var2, rest) = if two_vars {
            // For a list: index and element; for a map: key and value.
            let first_ty = match rty {
                Ty::Schema(s) if s.ty == Type::Array => Ty::Prim(TypeName::Int),
                _ => key_ty,
            };
            let v1 = self.bind_var(&args[0], first_ty)?;
            let v2 = self.bind_var(&args[1], elem_ty)?;
            (v1, Some(v2), &args[2..])
        } else {
            let ty = match kind {
                LoopKind::OptMap | LoopKind::OptFlatMap => Ty::Dyn,
                _ => match rty {
                    Ty::Schema(s) if s.is_map() => key_ty,
                    _ => elem_ty,
                },
            };
            (self.bind_var(&args[0], ty)?, None, &args[1..])
        };
        let (filter, body) = match rest {
            [body] => (None, self.expr(body)?.0),
            [filter, body] => (Some(self.expr(filter)?.0), self.expr(body)?.0),
            _ => return Err(self.error(id, "wrong number of macro arguments")),
        };
        self.scopes.truncate(depth);
        let ty = match kind {
            LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne => Ty::Prim(TypeName::Bool),
            LoopKind::Filter | LoopKind::SortBy => rty,
            LoopKind::Map | LoopKind::TransformList => Ty::Prim(TypeName::List),
            LoopKind::TransformMap | LoopKind::TransformMapEntry => Ty::Prim(TypeName::Map),
            _ => Ty::Dyn,
        };
        Ok((
            Ir::Loop(Box::new(Loop {
                kind,
                range,
                var,
                var2,
                body,
                filter,
            })),
            ty,
        ))
    }
}

fn loop_kind(name: &str) -> Option<LoopKind> {
    Some(match name {
        "@all" => LoopKind::All,
        "@exists" => LoopKind::Exists,
        "@exists_one" => LoopKind::ExistsOne,
        "@map" => LoopKind::Map,
        "@filter" => LoopKind::Filter,
        "@transformList" => LoopKind::TransformList,
        "@transformMap" => LoopKind::TransformMap,
        "@transformMapEntry" => LoopKind::TransformMapEntry,
        "@sortBy" => LoopKind::SortBy,
        "@bind" => LoopKind::Bind,
        "@optMap" => LoopKind::OptMap,
        "@optFlatMap" => LoopKind::OptFlatMap,
        _ => return None,
    })
}

fn iter_tys(ty: Ty<'_>) -> (Ty<'_>, Ty<'_>) {
    match ty {
        Ty::Schema(s) if s.ty == Type::Array => (
            s.items.as_deref().map_or(Ty::Dyn, Ty::Schema),
            Ty::Prim(TypeName::Int),
        ),
        Ty::Schema(s) if s.is_map() => (
            s.additional_properties
                .as_deref()
                .map_or(Ty::Dyn, Ty::Schema),
            Ty::Prim(TypeName::String),
        ),
        _ => (Ty::Dyn, Ty::Dyn),
    }
}

fn element_ty(ty: Ty<'_>) -> Ty<'_> {
    match ty {
        Ty::Schema(s) => s.element().map_or(Ty::Dyn, Ty::Schema),
        _ => Ty::Dyn,
    }
}

fn ty_name(ty: Ty<'_>) -> &'static str {
    match ty {
        Ty::Dyn => "dyn",
        Ty::Prim(t) => t.name(),
        Ty::Schema(s) => match (s.ty, &s.format) {
            (Type::String, crate::schema::Format::Byte) => "bytes",
            (Type::String, crate::schema::Format::Date | crate::schema::Format::DateTime) => {
                "google.protobuf.Timestamp"
            }
            (Type::String, crate::schema::Format::Duration) => "google.protobuf.Duration",
            (Type::String, _) => "string",
            (Type::Integer, _) => "int",
            (Type::Number, _) => "double",
            (Type::Boolean, _) => "bool",
            (Type::Array, _) => "list",
            _ => "dyn",
        },
    }
}

fn arity_text(member: bool, arity: usize) -> String {
    let mut parts = Vec::new();
    if member {
        parts.push("target");
    }
    parts.extend(std::iter::repeat_n("dyn", arity));
    format!("'({})'", parts.join(", "))
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
        LiteralValue::Boolean(b) => (Const::Bool(*b.inner()), TypeName::Bool),
        LiteralValue::Int(i) => (Const::Int(*i.inner()), TypeName::Int),
        LiteralValue::UInt(u) => (Const::Uint(*u.inner()), TypeName::Uint),
        LiteralValue::Double(d) => (Const::Double(*d.inner()), TypeName::Double),
        LiteralValue::String(s) => (Const::Str(Arc::from(s.inner())), TypeName::String),
        LiteralValue::Bytes(b) => (Const::Bytes(Arc::from(b.inner())), TypeName::Bytes),
        LiteralValue::Null => (Const::Null, TypeName::Null),
    };
    (Ir::Const(c), Ty::Prim(t))
}

/// 1-based line and 0-based column (in characters) of a byte offset.
fn line_col(source: &str, offset: usize) -> (isize, isize) {
    let mut line = 1;
    let mut col = 0;
    for (i, ch) in source.char_indices() {
        if i >= offset {
            break;
        }
        if ch == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    (line, col)
}
