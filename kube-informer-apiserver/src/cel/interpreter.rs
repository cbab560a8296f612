//! Evaluation of a parsed CEL expression with cel-go's semantics and its runtime cost: errors are values that
//! `&&`, `||`, `?:` and the comprehensions' loop conditions may absorb; every variable, field selection and call
//! costs (1, or what the call's arguments' sizes make it, as cel-go's cost tracker charges), list literals 10 and
//! map literals 30; past the limit evaluation stops with cel-go's `operation cancelled: actual cost limit exceeded`.

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::errors::NO_OVERLOAD;
use super::library::{self, NAMESPACES};
use super::value::{Key, Value, key_text, qualified_type, type_value};

/// Why evaluation failed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Error {
    /// A CEL runtime error (`no such key: x`, `division by zero`, …).
    Eval(String),
    /// The cost limit was passed.
    Cancelled,
}

pub(crate) const CANCELLED: &str = "operation cancelled: actual cost limit exceeded";

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Eval(m) => f.write_str(m),
            Error::Cancelled => f.write_str(CANCELLED),
        }
    }
}

type Res = Result<Value, Error>;

struct Eval<'a> {
    globals: &'a [(&'a str, Value)],
    /// The zero of each typed `sum()` call, by node id ([`checker::Checked::zeros`](super::checker::Checked)).
    zeros: &'a [(u64, Value)],
    scope: Vec<(String, Res)>,
    cost: u64,
    limit: u64,
}

/// Evaluates `expr` with the variables `globals`, stopping past `limit`; returns the result and the cost spent.
#[cfg(test)]
pub(crate) fn eval(expr: &IdedExpr, globals: &[(&str, Value)], limit: u64) -> (Res, u64) {
    eval_with(expr, globals, limit, &[])
}

/// Evaluates `expr` with the variables `globals` and the zeros the checker found for typed `sum()` calls, stopping
/// past `limit`; returns the result and the cost spent.
pub(crate) fn eval_with(expr: &IdedExpr, globals: &[(&str, Value)], limit: u64, zeros: &[(u64, Value)]) -> (Res, u64) {
    let mut e = Eval {
        globals,
        zeros,
        scope: Vec::new(),
        cost: 0,
        limit,
    };
    let r = e.eval(expr);
    (r, e.cost)
}

fn fail(m: impl Into<String>) -> Error {
    Error::Eval(m.into())
}

impl Eval<'_> {
    fn charge(&mut self, c: u64) -> Result<(), Error> {
        self.cost = self.cost.saturating_add(c);
        if self.cost > self.limit {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    fn lookup(&self, name: &str) -> Option<Res> {
        if let Some((_, v)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return Some(v.clone());
        }
        self.globals
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| Ok(v.clone()))
    }

    fn eval(&mut self, e: &IdedExpr) -> Res {
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => {
                self.charge(1)?;
                match self.lookup(name) {
                    Some(v) => v,
                    None => type_value(name).ok_or_else(|| fail(format!("no such attribute: {name}"))),
                }
            }
            Expr::Select(s) => {
                if let Some(t) = qualified_type(&s.operand, &s.field, |n| self.lookup(n).is_some()) {
                    self.charge(1)?;
                    return Ok(t);
                }
                let operand = self.eval(&s.operand)?;
                self.charge(1)?;
                match operand {
                    Value::Map(m) => {
                        let k = Key::Str(Arc::from(s.field.as_str()));
                        if s.test {
                            Ok(Value::Bool(m.contains_key(&k)))
                        } else {
                            m.get(&k)
                                .cloned()
                                .ok_or_else(|| fail(format!("no such key: {}", s.field)))
                        }
                    }
                    _ => Err(fail(NO_OVERLOAD)),
                }
            }
            Expr::Call(c) => self.call(e.id, c),
            Expr::List(l) => {
                self.charge(10)?;
                let mut out = Vec::with_capacity(l.elements.len());
                for (i, el) in l.elements.iter().enumerate() {
                    let v = self.eval(el)?;
                    if l.optional_indices.contains(&i) {
                        match v {
                            Value::Optional(Some(v)) => out.push(*v),
                            Value::Optional(None) => {}
                            _ => return Err(fail(NO_OVERLOAD)),
                        }
                    } else {
                        out.push(v);
                    }
                }
                Ok(Value::list(out))
            }
            Expr::Map(m) => {
                self.charge(30)?;
                let mut out = BTreeMap::new();
                for entry in &m.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        return Err(fail("unsupported struct field"));
                    };
                    let k = self.eval(&me.key)?;
                    let v = self.eval(&me.value)?;
                    let key = Key::from_value(&k).ok_or_else(|| fail("unsupported key type"))?;
                    let v = if me.optional {
                        match v {
                            Value::Optional(Some(v)) => *v,
                            Value::Optional(None) => continue,
                            _ => return Err(fail(NO_OVERLOAD)),
                        }
                    } else {
                        v
                    };
                    if out.insert(key.clone(), v).is_some() {
                        return Err(fail(format!("Failed with repeated key: {}", key_text(&key))));
                    }
                }
                Ok(Value::Map(Arc::new(out)))
            }
            Expr::Comprehension(c) => {
                let range = self.eval(&c.iter_range)?;
                let items: Vec<(Value, Value)> = match &range {
                    Value::List(l) => l
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (Value::Int(i as i64), v.clone()))
                        .collect(),
                    Value::Map(m) => m.iter().map(|(k, v)| (k.to_value(), v.clone())).collect(),
                    _ => return Err(fail(NO_OVERLOAD)),
                };
                let init = self.eval(&c.accu_init);
                let base = self.scope.len();
                self.scope.push((c.accu_var.clone(), init));
                for (first, second) in items {
                    let depth = self.scope.len();
                    match &c.iter_var2 {
                        Some(v2) => {
                            self.scope.push((c.iter_var.clone(), Ok(first)));
                            self.scope.push((v2.clone(), Ok(second)));
                        }
                        None => {
                            let v = if matches!(range, Value::Map(_)) { first } else { second };
                            self.scope.push((c.iter_var.clone(), Ok(v)));
                        }
                    }
                    let go_on = self.eval(&c.loop_cond);
                    if matches!(go_on, Err(Error::Cancelled)) {
                        self.scope.truncate(base);
                        return Err(Error::Cancelled);
                    }
                    if matches!(go_on, Ok(Value::Bool(false))) {
                        self.scope.truncate(depth);
                        break;
                    }
                    let step = self.eval(&c.loop_step);
                    if matches!(step, Err(Error::Cancelled)) {
                        self.scope.truncate(base);
                        return Err(Error::Cancelled);
                    }
                    self.scope.truncate(depth);
                    self.scope[base].1 = step;
                }
                let r = self.eval(&c.result);
                self.scope.truncate(base);
                r
            }
            Expr::Struct(_) | Expr::Unspecified => Err(fail("unsupported expression")),
        }
    }

    fn bool_of(&mut self, e: &IdedExpr) -> Result<Option<bool>, Error> {
        match self.eval(e) {
            Ok(Value::Bool(b)) => Ok(Some(b)),
            Err(Error::Cancelled) => Err(Error::Cancelled),
            Ok(_) | Err(_) => Ok(None),
        }
    }

    fn call(&mut self, id: u64, c: &cel::common::ast::CallExpr) -> Res {
        let name = c.func_name.as_str();
        match (name, c.args.as_slice()) {
            ("_&&_" | "_||_", [a, b]) => {
                let decisive = name == "_||_";
                let left = self.eval(a);
                if matches!(left, Err(Error::Cancelled)) {
                    return left;
                }
                if matches!(left, Ok(Value::Bool(x)) if x == decisive) {
                    return Ok(Value::Bool(decisive));
                }
                let right = self.eval(b);
                match (&left, &right) {
                    (_, Err(Error::Cancelled)) => right,
                    (_, Ok(Value::Bool(x))) if *x == decisive => Ok(Value::Bool(decisive)),
                    (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!decisive)),
                    (Err(_), _) => left,
                    (_, Err(_)) => right,
                    _ => Err(fail(NO_OVERLOAD)),
                }
            }
            ("_?_:_", [cond, yes, no]) => match self.eval(cond)? {
                Value::Bool(true) => self.eval(yes),
                Value::Bool(false) => self.eval(no),
                _ => Err(fail(NO_OVERLOAD)),
            },
            ("@not_strictly_false", [x]) => Ok(Value::Bool(self.bool_of(x)?.unwrap_or(true))),
            _ => {
                // `optional.of(x)`, `format.dns1123Label()`: a namespaced function, not a member call.
                let (name, target) = match c.target.as_deref() {
                    Some(IdedExpr {
                        expr: Expr::Ident(ns), ..
                    }) if NAMESPACES.contains(&ns.as_str()) && self.lookup(ns).is_none() => {
                        (format!("{ns}.{}", c.func_name), None)
                    }
                    Some(t) => (c.func_name.clone(), Some(self.eval(t)?)),
                    None => (c.func_name.clone(), None),
                };
                let mut args = Vec::with_capacity(c.args.len());
                for a in &c.args {
                    args.push(self.eval(a)?);
                }
                self.charge(library::runtime_cost(&name, target.as_ref(), &args))?;
                if name == "sum"
                    && matches!(&target, Some(Value::List(l)) if l.is_empty())
                    && let Some((_, zero)) = self.zeros.iter().find(|(z, _)| *z == id)
                {
                    return Ok(zero.clone());
                }
                library::call(&name, target, args).map_err(Error::Eval)
            }
        }
    }
}

fn literal(l: &LiteralValue) -> Value {
    match l {
        LiteralValue::Boolean(b) => Value::Bool(*b.inner()),
        LiteralValue::Bytes(b) => Value::Bytes(Arc::from(b.inner())),
        LiteralValue::Double(d) => Value::Double(*d.inner()),
        LiteralValue::Int(i) => Value::Int(*i.inner()),
        LiteralValue::Null => Value::Null,
        LiteralValue::String(s) => Value::str(s.inner()),
        LiteralValue::UInt(u) => Value::Uint(*u.inner()),
    }
}
