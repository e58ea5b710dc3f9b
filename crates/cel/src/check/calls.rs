//! The checker's calls: operators, functions (resolved to [`Func`] and
//! typed by its signatures, constants folded, constant regexes compiled)
//! and the macros that iterate or bind.

use super::*;
use crate::library;

impl<'s> Compiler<'_, 's> {
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

    pub(super) fn call(&mut self, id: u64, call: &CallExpr) -> Result<(Ir, Ty<'s>), CompileError> {
        let name = call.func_name.as_str();
        if let Some(kind) = loop_kind(name) {
            // A macro the environment lacks stays an unknown function.
            if !self
                .decls
                .env
                .has_macro(name, macro_vars(kind, call.args.len()))
            {
                return Err(self.error(
                    id,
                    format!("undeclared reference to '{}' (in container '')", &name[1..]),
                ));
            }
            return self.loop_macro(id, kind, call);
        }
        // Operators.
        if let (Some(op), [a, b]) = (BinOp::of_name(name), call.args.as_slice()) {
            let (a, aty) = self.expr(a)?;
            let (b, bty) = self.expr(b)?;
            let ty = self.check_op(id, Op::Bin(op), &[aty, bty])?;
            return Ok((Ir::Bin(op, Box::new(a), Box::new(b)), ty));
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
                return Ok((Ir::Call(&library::core::NEGATE, vec![a]), ty));
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
            }) if !self.is_variable(ns) && self.decls.env.declares(&format!("{ns}.{name}")) => {
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
        let Some(func) = self.decls.env.lookup(fname, member, arity) else {
            return Err(if self.decls.env.declares(fname) {
                self.no_overload(id, fname, member, &tys)
            } else {
                self.error(
                    id,
                    format!("undeclared reference to '{fname}' (in container '')"),
                )
            });
        };
        let Some(ty) = func.typed(&tys) else {
            return Err(self.no_overload(id, fname, member, &tys));
        };
        // `or` and `orValue` short-circuit, as cel-go plans them.
        let or_value = func == &library::optional::OR_VALUE;
        if or_value || func == &library::optional::OR {
            let mut args = args.into_iter();
            if let (Some(target), Some(alt)) = (args.next(), args.next()) {
                let ir = Ir::OptOr {
                    target: Box::new(target),
                    alt: Box::new(alt),
                    value: or_value,
                };
                return Ok((ir, ty));
            }
            return Err(self.no_overload(id, fname, member, &tys));
        }
        // `'<literal>'.format([<literal list>])` is checked clause by clause.
        if let (true, [Ir::Const(Const::Str(fmt)), Ir::List(..) | Ir::ConstList(..)], [list_arg]) = (
            func == &library::string_format::FORMAT,
            args.as_slice(),
            call.args.as_slice(),
        ) {
            if let Err((at, msg)) = library::string_format::check_literal(fmt, &self.last_list_tys)
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
        let duration = func == &library::conversions::DURATION;
        let timestamp = func == &library::conversions::TIMESTAMP;
        if let (true, Some(Some(_))) = (duration || timestamp, args.first().map(Ir::constant)) {
            if fold(func, &args).is_err() {
                let what = if duration { "duration" } else { "timestamp" };
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
        if func.conversion && args.len() == 1 && literal_arg && matches!(args[0], Ir::Const(_)) {
            match (fold(func, &args), args.pop()) {
                (Ok(Some(value)), Some(Ir::Const(arg))) => {
                    let folded = crate::ir::FoldedCall { value, func, arg };
                    return Ok((Ir::Folded(Box::new(folded)), ty));
                }
                (Ok(_), Some(arg)) => args.push(arg),
                (Ok(_), None) => {}
                (Err(e), _) => return Err(self.error(id, e.into_message())),
            }
        }
        // A constant pattern is compiled once here, not per evaluation.
        if func == &library::core::MATCHES {
            if let Some(Some(Const::Str(p))) = args.get(1).map(Ir::constant) {
                let re = crate::re2::compile(p)
                    .map_err(|_| self.error(literal_id(1), "invalid matches argument"))?;
                let pattern_len = u32::try_from(p.chars().count()).unwrap_or(u32::MAX);
                let mut it = args.into_iter();
                let target = it.next().unwrap_or(Ir::Const(Const::Null));
                return Ok((
                    Ir::Matches(
                        Box::new(target),
                        Arc::new(crate::matcher::Matcher::new(re, pattern_len)),
                    ),
                    Ty::Bool,
                ));
            }
        }
        if let Some(i) = func.regex.as_ref().map(|r| r.arg) {
            if let Some(Some(Const::Str(p))) = args.get(i).map(Ir::constant) {
                // cel-go compiles it when planning the program (the regex
                // optimisation of the Kubernetes library): Go's plain text.
                let re = crate::re2::compile(p).map_err(|message| CompileError {
                    message,
                    instantiation: true,
                })?;
                return Ok((Ir::RegexCall(func, args, Arc::new(re)), ty));
            }
        }
        if func == &library::core::SIZE && args.len() == 1 {
            if let Some(arg) = args.pop() {
                return Ok((Ir::Size(Box::new(arg)), ty));
            }
        }
        Ok((Ir::Call(func, args), ty))
    }

    pub(super) fn is_variable(&self, name: &str) -> bool {
        let named = self.decls.env.variables;
        self.scopes.iter().any(|(n, _, _)| n == name)
            || (named.contains(&name) && !self.decls.env.hidden.contains(&name))
            || (named.is_empty() && name == "self")
            || (named.is_empty() && name == "oldSelf" && self.decls.env.old_self)
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
                    fused_body: false,
                    counted_body: false,
                    counted_same: false,
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
        let two_vars = macro_vars(kind, args.len()) == 2;
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
                fused_body: false,
                counted_body: false,
                counted_same: false,
            })),
            ty,
        ))
    }
}

/// The iteration variables of a macro call with `args` arguments.
fn macro_vars(kind: LoopKind, args: usize) -> usize {
    let two = matches!(
        kind,
        LoopKind::TransformList | LoopKind::TransformMap | LoopKind::TransformMapEntry
    ) || (matches!(kind, LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne)
        && args == 3);
    if two {
        2
    } else {
        1
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

/// Evaluates a call of constant arguments at compile time; `Ok(None)` when
/// the result is not a scalar constant.
fn fold(func: Func, args: &[Ir]) -> Result<Option<Const>, crate::value::error::EvalError> {
    let mut frame = crate::runtime::Frame::new(
        crate::runtime::Vars::new(),
        crate::ir::Cells::default(),
        u64::MAX,
    );
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(crate::runtime::eval(a, &mut frame)?);
    }
    let v = func.invoke(&vals)?;
    use crate::value::Value;
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
