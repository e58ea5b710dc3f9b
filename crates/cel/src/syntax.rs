//! Source text to the `cel` crate's AST: the nesting guard that runs
//! before the parser, the parser with optional syntax and the Kubernetes
//! macro set, and cel-go's layout of syntax errors.

use cel::common::ast::{CallExpr, Expr, IdedExpr, SourceInfo};
use cel::parser::{Macro, MacroExprHelper, ParseError};

use crate::value::error::CompileError;

type MacroResult = Result<Option<IdedExpr>, ParseError>;

/// The deepest nesting an expression may have (brackets, a run of unary
/// operators, or chained `?:`): the `cel` crate's own recursion limit,
/// checked before its recursive-descent parser runs.
pub const MAX_NESTING: usize = 96;

/// Nesting above which parsing moves to a thread with [`DEEP_PARSE_STACK`]:
/// the generated parser takes tens of KiB of stack per level, more than a
/// worker thread's 2 MiB allows for a few dozen levels.
pub(crate) const SHALLOW_NESTING: usize = 8;

pub(crate) const DEEP_PARSE_STACK: usize = 256 * 1024 * 1024;

/// How deeply `source` nests: the most open brackets at any point, the
/// longest run of unary operators, or the number of `?` (ternaries nest
/// without brackets), whichever is largest. String literals are skipped.
/// Hand-written: it must run before, and instead of, the parser.
pub fn nesting(source: &str) -> usize {
    scan_nesting(source, true)
}

/// [`nesting`] with brackets inside string literals counted too.
pub(crate) fn raw_nesting(source: &str) -> usize {
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
pub(crate) fn parse(source: &str) -> Result<(IdedExpr, SourceInfo), CompileError> {
    let env = environment();
    env.parser()
        .parse_with_source_info(source)
        .map_err(|errs| CompileError {
            message: errs
                .errors
                .iter()
                .map(|e| format_error(source, e.pos.0, e.pos.1 - 1, &keyword_message(&e.msg)))
                .collect::<Vec<_>>()
                .join("\n"),
            instantiation: false,
        })
}

/// cel-go words a literal keyword selected as a field (`self.true`) as its
/// earlier versions did: ANTLR's `no viable alternative at input '.true'`
/// (any one character, then `true`, `false` or `null`) becomes
/// `mismatched input 'true' expecting IDENTIFIER`. Other reserved words
/// parse as field names and need nothing.
fn keyword_message(msg: &str) -> std::borrow::Cow<'_, str> {
    const HEAD: &str = "no viable alternative at input '";
    if !msg.contains(HEAD) {
        return msg.into();
    }
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(HEAD) {
        let after = &rest[i + HEAD.len()..];
        let keyword = after.chars().next().filter(|&c| c != '\n').and_then(|c| {
            let tail = &after[c.len_utf8()..];
            ["true", "false", "null"]
                .into_iter()
                .find_map(|w| Some((w, tail.strip_prefix(w)?.strip_prefix('\'')?)))
        });
        match keyword {
            Some((word, tail)) => {
                out.push_str(&rest[..i]);
                out.push_str(&format!("mismatched input '{word}' expecting IDENTIFIER"));
                rest = tail;
            }
            None => {
                out.push_str(&rest[..i + HEAD.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.into()
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

pub(crate) fn environment() -> cel::Env {
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

/// 1-based line and 0-based column (in characters) of a byte offset.
pub(crate) fn line_col(source: &str, offset: usize) -> (isize, isize) {
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

/// True when `source` parses and refers to the identifier `name` outside
/// any comprehension that binds it (a static report, for refusing an
/// expression by the variable it uses rather than by what it calls on it).
pub(crate) fn mentions(source: &str, name: &str) -> bool {
    use cel::common::ast::Expr;
    fn walk(e: &IdedExpr, name: &str) -> bool {
        match &e.expr {
            Expr::Ident(n) => n == name,
            // The parser keeps macros as `@all(range; var, [var2,] body)`:
            // their leading identifiers bind, they do not refer.
            Expr::Call(c) if c.func_name.starts_with('@') => {
                let last = c.args.len().saturating_sub(1);
                let bound = c.args[..last]
                    .iter()
                    .take_while(|a| matches!(a.expr, Expr::Ident(_)))
                    .count();
                let binds_name = c.args[..bound]
                    .iter()
                    .any(|a| matches!(&a.expr, Expr::Ident(n) if n == name));
                let range = c.target.as_deref().is_some_and(|t| walk(t, name));
                if c.func_name == "@bind" {
                    // cel.bind(var, init, body): init is outside the binding.
                    let init = c.args.get(1).is_some_and(|i| walk(i, name));
                    return range
                        || init
                        || (!binds_name && c.args.get(2).is_some_and(|b| walk(b, name)));
                }
                range || (!binds_name && c.args[bound..].iter().any(|a| walk(a, name)))
            }
            Expr::Comprehension(c) => {
                walk(&c.iter_range, name)
                    || walk(&c.accu_init, name)
                    || ((c.iter_var != name && c.accu_var != name)
                        && (walk(&c.loop_cond, name)
                            || walk(&c.loop_step, name)
                            || walk(&c.result, name)))
            }
            _ => children(e).into_iter().any(|c| walk(c, name)),
        }
    }
    // Deep expressions are left to the compiler, which parses them safely.
    if !source.contains(name) || raw_nesting(source) > SHALLOW_NESTING {
        return false;
    }
    parse(source).is_ok_and(|(expr, _)| walk(&expr, name))
}

/// The fields of `self` that `source` selects (`self.x`, `self.?x`,
/// `has(self.x)`), sorted and without repeats, when every use of `self`
/// in it is such a selection: its result cannot depend on any other field.
/// `None` when it uses `self` otherwise (whole, indexed, passed on, a
/// variable of that name) or does not parse here: then it may read all.
pub(crate) fn self_fields(source: &str) -> Option<Vec<String>> {
    if raw_nesting(source) > SHALLOW_NESTING {
        return None;
    }
    let (expr, _) = parse(source).ok()?;
    Some(first_fields(&self_paths_of(&expr)?))
}

/// The first field of each of `paths`, sorted and once each: what
/// [`self_fields`] gives of the expression they come from.
fn first_fields(paths: &[SelfPath]) -> Vec<String> {
    let mut out: Vec<String> = paths
        .iter()
        .filter_map(|p| p.fields.first().cloned())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A chain of named fields selected from `self`, from `self` outward
/// (`self.spec.replicas`: `spec`, then `replicas`). `presence` when the
/// chain ends in a presence test (`has(self.spec.tls)`): the last field's
/// presence is read, not its value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SelfPath {
    pub fields: Vec<String>,
    pub presence: bool,
}

/// Every chain of named fields from `self` in `expr` (`self.a.b`,
/// `self.?a.?b`, `has(self.a.b)`), each as long as it is written, sorted
/// and without repeats, when such chains are all it does with `self`;
/// `None` as [`self_fields`] gives it. A chain covers all of its last
/// field's value, whatever is done with it next (indexed, sized,
/// compared). Read from the text as written, so that no rewrite of the
/// compiled program hides a read (`reads::self_paths` reads the compiled
/// program, for static reports).
pub(crate) fn self_paths_of(expr: &IdedExpr) -> Option<Vec<SelfPath>> {
    use cel::common::ast::{Expr, LiteralValue};
    fn is_self(e: &IdedExpr) -> bool {
        matches!(&e.expr, Expr::Ident(n) if n == "self")
    }
    /// The chain `operand.field`, or the expression to walk instead: where
    /// the selections below it start from something other than `self`, or
    /// the presence test they select on.
    fn extend<'e>(
        operand: &'e IdedExpr,
        field: &str,
        presence: bool,
    ) -> Result<SelfPath, &'e IdedExpr> {
        let mut fields = if is_self(operand) {
            Vec::new()
        } else {
            match chain(operand)? {
                SelfPath {
                    fields,
                    presence: false,
                } => fields,
                // A presence test is a bool: nothing to select on.
                _ => return Err(operand),
            }
        };
        fields.push(field.to_string());
        Ok(SelfPath { fields, presence })
    }
    /// `e` as a chain from `self`; where it is none, the expression to walk
    /// instead (as [`extend`] gives it), or `e` itself when it selects
    /// nothing.
    fn chain(e: &IdedExpr) -> Result<SelfPath, &IdedExpr> {
        match &e.expr {
            Expr::Select(s) => extend(&s.operand, &s.field, s.test),
            Expr::Call(c) if c.func_name == "_?._" && c.args.len() == 2 => match &c.args[1].expr {
                Expr::Literal(LiteralValue::String(f)) => extend(&c.args[0], f.inner(), false),
                _ => Err(e),
            },
            _ => Err(e),
        }
    }
    /// False when `e` uses `self` other than through a chain of fields.
    fn walk(e: &IdedExpr, out: &mut Vec<SelfPath>) -> bool {
        match chain(e) {
            Ok(path) => {
                out.push(path);
                true
            }
            // Selections on something else: that thing is walked once.
            Err(start) if !std::ptr::eq(start, e) => walk(start, out),
            Err(_) => match &e.expr {
                Expr::Ident(n) => n != "self",
                Expr::Unspecified => false,
                _ => children(e).into_iter().all(|c| walk(c, out)),
            },
        }
    }
    let mut out = Vec::new();
    if !walk(expr, &mut out) {
        return None;
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// False only when `source` parses and every use of `self` in it selects a
/// field other than `field` (see [`self_fields`]).
pub(crate) fn may_read_self_field(source: &str, field: &str) -> bool {
    self_fields(source).is_none_or(|fields| fields.iter().any(|f| f == field))
}

/// The expressions directly below `e`, in source order (for the static
/// walks above; macros stay calls of `@`-named functions).
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    use cel::common::ast::{EntryExpr, Expr};
    fn entry(entry: &EntryExpr) -> Vec<&IdedExpr> {
        match entry {
            EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
            EntryExpr::StructField(f) => vec![&f.value],
        }
    }
    match &e.expr {
        Expr::Select(s) => vec![&*s.operand],
        Expr::Call(c) => c.target.as_deref().into_iter().chain(&c.args).collect(),
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => m.entries.iter().flat_map(|x| entry(&x.expr)).collect(),
        Expr::Struct(s) => s.entries.iter().flat_map(|x| entry(&x.expr)).collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}
