//! From the `cel` crate's AST to celhook's program tree (`Ir`): variables
//! resolved to slots, functions to an enum, constant regexes compiled, field
//! names unescaped, and fields checked against the schema, all once at load.

use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use cel::parser::{Macro, MacroExprHelper, ParseError};

use super::error::CompileError;
use super::functions::Func;
use super::types::{self, Op, Ty};
use super::value::TypeName;
use crate::schema::{unescape_property, Schema};

/// A compiled expression node.
#[derive(Debug)]
pub(crate) enum Ir {
    Const(Const),
    Var(usize),
    Select {
        operand: Box<Ir>,
        field: Box<str>,
        test: bool,
        /// Where the checker found `field` among the properties of the
        /// operand's schema node: the evaluator tries that position first.
        position: Option<u32>,
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
    /// A list literal of constants, built once: evaluating it allocates
    /// nothing (`x in ['TCP', 'UDP']`).
    ConstList(Vec<Const>),
    Map(Vec<(Ir, Ir, bool)>),
    Call(Func, Vec<Ir>),
    /// `matches` with a constant pattern, compiled at load.
    Matches(Box<Ir>, Arc<regex::Regex>),
    /// Another call with a constant regex argument (`find`, `findAll`),
    /// compiled at load; see `functions::constant_regex_arg`.
    RegexCall(Func, Vec<Ir>, Arc<regex::Regex>),
    Loop(Box<Loop>),
    /// A chain of selections on variable `var` kept in memo `cell` until
    /// the variable is bound again (see `memo`).
    Memo {
        cell: usize,
        var: usize,
        inner: Box<Ir>,
    },
    /// A chain of selections on loop variable `var` kept in memo `cell`
    /// for each JSON object the variable is bound to (see `memo`).
    ElemMemo {
        cell: usize,
        var: usize,
        inner: Box<Ir>,
    },
}

/// Constants of the program.
#[derive(Debug)]
pub enum Const {
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
    /// Set by the memo pass when the body compares a field of the element
    /// with a value the loop does not change (see `memo::Scan`).
    pub scan: Option<super::memo::Scan>,
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
    /// The static result type, as cel-go names it (`bool`, `string`, `dyn`, ...).
    pub result_type: String,
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
        slots: 2,
        uses_old_self: false,
        format_depth: 0,
        last_list_tys: Vec::new(),
    };
    let (ir, ty) = c.expr(&expr)?;
    Ok(Compiled {
        ir,
        slots: c.slots,
        uses_old_self: c.uses_old_self,
        result_type: ty.to_string(),
    })
}

/// The deepest nesting an expression may have (brackets, a run of unary
/// operators, or chained `?:`): the `cel` crate's own recursion limit,
/// checked before its recursive-descent parser runs.
pub const MAX_NESTING: usize = 96;

/// Nesting above which parsing moves to a thread with [`DEEP_PARSE_STACK`]:
/// the generated parser takes tens of KiB of stack per level, more than a
/// worker thread's 2 MiB allows for a few dozen levels.
const SHALLOW_NESTING: usize = 8;
const DEEP_PARSE_STACK: usize = 256 * 1024 * 1024;

/// How deeply `source` nests: the most open brackets at any point, the
/// longest run of unary operators, or the number of `?` (ternaries nest
/// without brackets), whichever is largest. String literals are skipped.
/// Hand-written: it must run before, and instead of, the parser.
pub fn nesting(source: &str) -> usize {
    scan_nesting(source, true)
}

/// [`nesting`] with brackets inside string literals counted too.
fn raw_nesting(source: &str) -> usize {
    scan_nesting(source, false)
}

fn scan_nesting(source: &str, skip_literals: bool) -> usize {
    let b = source.as_bytes();
    let (mut i, mut depth, mut max, mut unary, mut questions) = (0, 0usize, 0usize, 0usize, 0usize);
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' if skip_literals => {
                i = skip_literal(b, i);
                unary = 0;
                continue;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'?' => questions += 1,
            _ => {}
        }
        if matches!(c, b'!' | b'-') {
            unary += 1;
            max = max.max(unary);
        } else if !c.is_ascii_whitespace() {
            unary = 0;
        }
        i += 1;
    }
    max.max(questions)
}

/// The index just past the string literal whose quote is at `start`.
fn skip_literal(b: &[u8], start: usize) -> usize {
    let c = b[start];
    let raw = start > 0 && matches!(b[start - 1], b'r' | b'R');
    let triple = b[start..].starts_with(&[c, c, c]);
    let quote_len = if triple { 3 } else { 1 };
    let mut i = start + quote_len;
    while i < b.len() {
        // A one-quote literal cannot span lines (the lexer stops there).
        if !triple && b[i] == b'\n' {
            return i;
        }
        if b[i] == b'\\' && !raw {
            i += 2;
            continue;
        }
        if b[i..].starts_with(&[c, c, c][..quote_len]) {
            return i + quote_len;
        }
        i += 1;
    }
    i
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
            instantiation: false,
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
        Macro::receiver("exists_one", 3, loop_macro("@exists_one", 2)),
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
                // Library type names (`net.IP`, `kubernetes.Quantity`, ...).
                if let Expr::Ident(ns) = &sel.operand.expr {
                    if !sel.test && !self.is_variable(ns) {
                        let qualified = format!("{ns}.{}", sel.field);
                        if let Some(t) = super::library::type_by_name(&qualified) {
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
                // Only constants and no optional entries: keep them as such.
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
        match name {
            "self" => Ok((Ir::Var(SELF_SLOT), Ty::of_schema(self.decls.self_schema))),
            "oldSelf" if self.decls.old_self => {
                self.uses_old_self = true;
                let ty = Ty::of_schema(self.decls.self_schema);
                let ty = if self.decls.optional_old_self {
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
            Ty::Object(s) => {
                let name = unescape_property(field);
                match s.property(&name) {
                    // Data of unknown type (preserved unknown fields) is out
                    // of CEL's reach, as if the field did not exist.
                    Some(child) if !child.is_unknown_type() => {
                        Ok((name.as_ref().into(), Ty::of_schema(child)))
                    }
                    _ => Err(self.error(id, format!("undefined field '{field}'"))),
                }
            }
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
            // Mixed literals inside `format(...)` are allowed and dynamic.
            Some(_) if self.format_depth > 0 => Ok(Ty::Dyn),
            Some(first) => {
                Err(self.error(id, format!("expected type '{first}' but found '{next}'")))
            }
        }
    }

    /// `found no matching overload` unless an overload of `op` takes `args`.
    fn check_op(&self, id: u64, op: Op, args: &[Ty<'s>]) -> Result<Ty<'s>, CompileError> {
        types::operator(op, args).ok_or_else(|| {
            self.error(
                id,
                format!(
                    "found no matching overload for '{}' applied to {}",
                    op.name(),
                    types::signature_text(false, args)
                ),
            )
        })
    }

    fn no_overload(&self, id: u64, name: &str, member: bool, args: &[Ty<'s>]) -> CompileError {
        self.error(
            id,
            format!(
                "found no matching overload for '{name}' applied to {}",
                types::signature_text(member, args)
            ),
        )
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
            "_+_" => Some((BinOp::Add, Op::Add)),
            "_-_" => Some((BinOp::Sub, Op::Sub)),
            "_*_" => Some((BinOp::Mul, Op::Mul)),
            "_/_" => Some((BinOp::Div, Op::Div)),
            "_%_" => Some((BinOp::Rem, Op::Rem)),
            "_==_" => Some((BinOp::Eq, Op::Eq)),
            "_!=_" => Some((BinOp::Ne, Op::Ne)),
            "_<_" => Some((BinOp::Lt, Op::Lt)),
            "_<=_" => Some((BinOp::Le, Op::Le)),
            "_>_" => Some((BinOp::Gt, Op::Gt)),
            "_>=_" => Some((BinOp::Ge, Op::Ge)),
            "@in" => Some((BinOp::In, Op::In)),
            _ => None,
        };
        if let (Some((bop, op)), [a, b]) = (bin, call.args.as_slice()) {
            let (a, aty) = self.expr(a)?;
            let (b, bty) = self.expr(b)?;
            let ty = self.check_op(id, op, &[aty, bty])?;
            return Ok((Ir::Bin(bop, Box::new(a), Box::new(b)), ty));
        }
        match (name, call.args.as_slice()) {
            ("_&&_" | "_||_", [a, b]) => {
                let (a, aty) = self.expr(a)?;
                let (b, bty) = self.expr(b)?;
                let bools = [aty, bty];
                if !bools.iter().all(|t| matches!(t, Ty::Bool | Ty::Dyn)) {
                    return Err(self.no_overload(id, name, false, &bools));
                }
                let ir = if name == "_&&_" {
                    Ir::And(Box::new(a), Box::new(b))
                } else {
                    Ir::Or(Box::new(a), Box::new(b))
                };
                return Ok((ir, Ty::Bool));
            }
            ("!_", [a]) => {
                let (a, aty) = self.expr(a)?;
                let ty = self.check_op(id, Op::Not, &[aty])?;
                return Ok((Ir::Not(Box::new(a)), ty));
            }
            ("-_", [a]) => {
                // Fold negative literals so `-9223372036854775808` is an int.
                if let Expr::Literal(l) = &a.expr {
                    match l {
                        LiteralValue::Int(i) => {
                            return Ok((Ir::Const(Const::Int(i.inner().wrapping_neg())), Ty::Int))
                        }
                        LiteralValue::Double(d) => {
                            return Ok((Ir::Const(Const::Double(-*d.inner())), Ty::Double))
                        }
                        _ => {}
                    }
                }
                let (a, aty) = self.expr(a)?;
                let ty = self.check_op(id, Op::Neg, &[aty])?;
                return Ok((Ir::Call(Func::Negate, vec![a]), ty));
            }
            ("_?_:_", [c, t, f]) => {
                let (c, cty) = self.expr(c)?;
                let (t, tty) = self.expr(t)?;
                let (f, fty) = self.expr(f)?;
                if !matches!(cty, Ty::Bool | Ty::Dyn) || !tty.unifies(&fty) {
                    return Err(self.no_overload(id, name, false, &[cty, tty, fty]));
                }
                let ty = tty.join(&fty);
                return Ok((Ir::Cond(Box::new(c), Box::new(t), Box::new(f)), ty));
            }
            ("_[_]", [a, b]) => {
                let (a, aty) = self.expr(a)?;
                let (b, bty) = self.expr(b)?;
                // Indexing an optional chains, as selection does.
                let ty = match aty {
                    Ty::Optional(inner) => {
                        let t = self.check_op(id, Op::Index, &[*inner, bty])?;
                        Ty::Optional(Box::new(t))
                    }
                    aty => self.check_op(id, Op::Index, &[aty, bty])?,
                };
                return Ok((Ir::Index(Box::new(a), Box::new(b)), ty));
            }
            ("_[?_]", [a, b]) => {
                let (a, aty) = self.expr(a)?;
                let (b, bty) = self.expr(b)?;
                let inner = match aty {
                    Ty::Optional(t) => *t,
                    t => t,
                };
                let ty = self.check_op(id, Op::Index, &[inner, bty])?;
                return Ok((
                    Ir::OptIndex(Box::new(a), Box::new(b)),
                    Ty::Optional(Box::new(ty)),
                ));
            }
            ("_?._", [a, b]) => {
                let (a, aty) = self.expr(a)?;
                let Expr::Literal(LiteralValue::String(field)) = &b.expr else {
                    return Err(self.error(id, "unsupported optional field selection"));
                };
                let inner = match aty {
                    Ty::Optional(t) => *t,
                    t => t,
                };
                let (field, fty) = self.field(id, &inner, field.inner(), false)?;
                return Ok((
                    Ir::OptSelect {
                        operand: Box::new(a),
                        field,
                    },
                    Ty::Optional(Box::new(fty)),
                ));
            }
            _ => {}
        }

        // Namespaced global functions: `optional.of(x)`, `lists.range(n)`, ...
        let (qualified, target) = match call.target.as_deref() {
            Some(IdedExpr {
                expr: Expr::Ident(ns),
                ..
            }) if !self.is_variable(ns) && Func::lookup_any(&format!("{ns}.{name}")) => {
                (Some(format!("{ns}.{name}")), None)
            }
            t => (None, t),
        };
        let fname = qualified.as_deref().unwrap_or(name);
        let member = target.is_some();
        let arity = call.args.len();
        let mut args = Vec::with_capacity(arity + 1);
        let mut tys = Vec::with_capacity(arity + 1);
        if let Some(t) = target {
            let (ir, ty) = self.expr(t)?;
            args.push(ir);
            tys.push(ty);
        }
        let is_format = fname == "format";
        self.format_depth += usize::from(is_format);
        for a in &call.args {
            let compiled = self.expr(a);
            if compiled.is_err() {
                self.format_depth -= usize::from(is_format);
            }
            let (ir, ty) = compiled?;
            args.push(ir);
            tys.push(ty);
        }
        self.format_depth -= usize::from(is_format);
        let Some(func) = Func::lookup(fname, member, arity) else {
            return Err(if Func::lookup_any(fname) {
                self.no_overload(id, fname, member, &tys)
            } else {
                self.error(
                    id,
                    format!("undeclared reference to '{fname}' (in container '')"),
                )
            });
        };
        let Some(ty) = types::function(func, &tys) else {
            return Err(self.no_overload(id, fname, member, &tys));
        };
        // `'<literal>'.format([<literal list>])` is checked clause by clause.
        if let (
            Func::Lib(super::library::LibFunc::StringFormat),
            [Ir::Const(Const::Str(fmt)), Ir::List(..) | Ir::ConstList(..)],
            [list_arg],
        ) = (func, args.as_slice(), call.args.as_slice())
        {
            if let Err((at, msg)) =
                super::library::strings_format::check_literal(fmt, &self.last_list_tys)
            {
                let at = match (&list_arg.expr, at) {
                    (Expr::List(l), Some(i)) => l.elements.get(i).map_or(id, |e| e.id),
                    _ => id,
                };
                return Err(self.error(at, msg));
            }
        }
        // Literal arguments Kubernetes validates when the rule is written.
        let literal_id = |i: usize| {
            let exprs: Vec<&IdedExpr> = target.into_iter().chain(call.args.iter()).collect();
            exprs.get(i).map_or(id, |e| e.id)
        };
        if let (Func::ToDuration | Func::ToTimestamp, Some(Ir::Const(_))) = (func, args.first()) {
            if fold(func, &args).is_err() {
                let what = if func == Func::ToDuration {
                    "duration"
                } else {
                    "timestamp"
                };
                return Err(
                    self.error_at_literal(literal_id(0), format!("invalid {what} argument"))
                );
            }
        }
        // Conversions of a literal are evaluated now, as cel-go's optimizer
        // does: a bad one is refused at load with the runtime's text.
        // Only a literal written as such: `int(dyn(null))` is left to run.
        let literal_arg = call
            .args
            .first()
            .is_some_and(|a| matches!(a.expr, Expr::Literal(_)) || is_negative_literal(&a.expr));
        if func.is_conversion() && args.len() == 1 && literal_arg && matches!(args[0], Ir::Const(_))
        {
            match fold(func, &args) {
                Ok(Some(c)) => return Ok((Ir::Const(c), ty)),
                Ok(None) => {}
                Err(e) => return Err(self.error(id, e.message)),
            }
        }
        // A constant pattern is compiled once here, not per evaluation.
        if func == Func::Matches {
            if let Some(Ir::Const(Const::Str(p))) = args.get(1) {
                let re = super::library::re2::compile(p)
                    .map_err(|_| self.error(literal_id(1), "invalid matches argument"))?;
                let mut it = args.into_iter();
                let target = it.next().unwrap_or(Ir::Const(Const::Null));
                return Ok((Ir::Matches(Box::new(target), Arc::new(re)), Ty::Bool));
            }
        }
        if let Some(i) = super::functions::constant_regex_arg(func) {
            if let Some(Ir::Const(Const::Str(p))) = args.get(i) {
                // cel-go compiles it when planning the program (the regex
                // optimisation of the Kubernetes library): Go's plain text.
                let re = super::library::re2::compile(p).map_err(|message| CompileError {
                    message,
                    instantiation: true,
                })?;
                return Ok((Ir::RegexCall(func, args, Arc::new(re)), ty));
            }
        }
        Ok((Ir::Call(func, args), ty))
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
                    scan: None,
                })),
                bty,
            ));
        }
        let Some(target) = call.target.as_deref() else {
            return Err(self.error(id, "macro requires a target"));
        };
        let (range, rty) = self.expr(target)?;
        let optional = matches!(kind, LoopKind::OptMap | LoopKind::OptFlatMap);
        // (first variable, second variable) types: element for one-variable
        // loops over lists, key over maps; (index, element) or (key, value)
        // for two-variable forms.
        let (one, two) = match (&rty, optional) {
            (Ty::Optional(t), true) => ((**t).clone(), Ty::Dyn),
            (Ty::Dyn, _) => (Ty::Dyn, Ty::Dyn),
            (_, true) => return Err(self.no_overload(id, &call.func_name[1..], true, &[rty])),
            (Ty::List(e), _) => ((**e).clone(), Ty::Int),
            (Ty::Map(k, v), _) => ((**k).clone(), (**v).clone()),
            (other, _) => {
                return Err(self.error(
                    id,
                    format!("expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"),
                ))
            }
        };
        let two_vars =
            matches!(
                kind,
                LoopKind::TransformList | LoopKind::TransformMap | LoopKind::TransformMapEntry
            ) || (matches!(kind, LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne)
                && args.len() == 3);
        if two_vars {
            if let (Expr::Ident(a), Expr::Ident(b)) = (&args[0].expr, &args[1].expr) {
                if a == b {
                    return Err(self.error(args[1].id, format!("duplicate variable name: {a}")));
                }
            }
        }
        for a in &args[..if two_vars { 2 } else { 1 }] {
            if matches!(&a.expr, Expr::Ident(n) if n == "__result__" || n == "@result") {
                return Err(self.error(a.id, "iteration variable overwrites accumulator variable"));
            }
        }
        let depth = self.scopes.len();
        let (var, var2, rest) = if two_vars {
            let first = match &rty {
                Ty::List(_) => Ty::Int,
                _ => one.clone(),
            };
            let second = match &rty {
                Ty::List(_) => one.clone(),
                _ => two.clone(),
            };
            let v1 = self.bind_var(&args[0], first)?;
            let v2 = self.bind_var(&args[1], second)?;
            (v1, Some(v2), &args[2..])
        } else {
            (self.bind_var(&args[0], one.clone())?, None, &args[1..])
        };
        let (filter, (body, bty)) = match rest {
            [body] => (None, self.expr(body)?),
            [filter, body] => {
                let (f, fty) = self.expr(filter)?;
                if !matches!(fty, Ty::Bool | Ty::Dyn) {
                    return Err(self.no_overload(id, "_?_:_", false, &[fty]));
                }
                (Some(f), self.expr(body)?)
            }
            _ => return Err(self.error(id, "wrong number of macro arguments")),
        };
        self.scopes.truncate(depth);
        let predicate = matches!(
            kind,
            LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne | LoopKind::Filter
        );
        if predicate && !matches!(bty, Ty::Bool | Ty::Dyn) {
            return Err(self.error(id, format!("expected type 'bool' but found '{bty}'")));
        }
        let ty = match kind {
            LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne => Ty::Bool,
            LoopKind::Filter => match &rty {
                Ty::Map(k, _) => Ty::List(k.clone()),
                t => t.clone(),
            },
            LoopKind::SortBy => rty.clone(),
            LoopKind::Map | LoopKind::TransformList => Ty::List(Box::new(bty)),
            LoopKind::TransformMap => {
                let key = if matches!(rty, Ty::List(_)) {
                    Ty::Int
                } else {
                    one
                };
                Ty::Map(Box::new(key), Box::new(bty))
            }
            LoopKind::TransformMapEntry => bty,
            LoopKind::OptMap => Ty::Optional(Box::new(bty)),
            LoopKind::OptFlatMap => bty,
            LoopKind::Bind => bty,
        };
        Ok((
            Ir::Loop(Box::new(Loop {
                kind,
                range,
                var,
                var2,
                body,
                filter,
                scan: None,
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

/// Evaluates a call of constant arguments at compile time; `Ok(None)` when
/// the result is not a scalar constant.
fn fold(func: Func, args: &[Ir]) -> Result<Option<Const>, super::error::EvalError> {
    let mut frame = super::eval::Frame::new(
        super::eval::Vars::new(),
        super::memo::Cells::default(),
        u64::MAX,
    );
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(super::eval::eval(a, &mut frame)?);
    }
    let v = super::functions::call(func, &vals)?;
    use super::value::Value;
    Ok(match v {
        Value::Null => Some(Const::Null),
        Value::Bool(b) => Some(Const::Bool(b)),
        Value::Int(i) => Some(Const::Int(i)),
        Value::Uint(u) => Some(Const::Uint(u)),
        Value::Double(d) => Some(Const::Double(d)),
        Value::Str(s) => Some(Const::Str(Arc::from(&*s))),
        Value::Bytes(b) => Some(Const::Bytes(Arc::from(&*b))),
        Value::Type(t) => Some(Const::Type(t)),
        _ => None,
    })
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
