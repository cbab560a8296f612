//! Type checking of a parsed expression against declared variables (cel-go's checker, for what Kubernetes rules
//! need: undeclared references, undefined fields of schema objects, calls no overload accepts, the result type),
//! with cel-go's messages and positions, and the worst-case cost estimate (cel-go's `EstimateCost` over the
//! schema's size bounds: 1 per variable, field and call, calls by their arguments' largest sizes, comprehensions by
//! their range's largest size).

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};

use super::environment;
use super::library::{self, NAMESPACES};
use super::types::Type;
use super::value::Value;

/// One checking error: its source offset and message.
pub(crate) struct Issue {
    pub(crate) offset: u32,
    pub(crate) message: String,
}

/// What checking found.
pub(crate) struct Checked {
    pub(crate) result: Type,
    pub(crate) max_cost: u64,
    /// The declared variables the expression references.
    pub(crate) references: Vec<String>,
    pub(crate) issues: Vec<Issue>,
    /// The `sum()` calls over typed lists, by node id, with the zero an empty list sums to (cel-go's overload of
    /// the element type: `0u`, `0.0`, `duration('0')`).
    pub(crate) zeros: Vec<(u64, Value)>,
}

struct Checker<'a> {
    declared: &'a [(String, Type)],
    scope: Vec<(String, Type)>,
    info: &'a SourceInfo,
    references: Vec<String>,
    issues: Vec<Issue>,
    zeros: Vec<(u64, Value)>,
}

/// Checks `expr` with the variables `declared`.
pub(crate) fn check(expr: &IdedExpr, info: &SourceInfo, declared: &[(String, Type)]) -> Checked {
    let mut c = Checker {
        declared,
        scope: Vec::new(),
        info,
        references: Vec::new(),
        issues: Vec::new(),
        zeros: Vec::new(),
    };
    let (result, max_cost) = c.node(expr);
    Checked {
        result,
        max_cost,
        references: c.references,
        issues: c.issues,
        zeros: c.zeros,
    }
}

fn sat(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

impl Checker<'_> {
    fn issue(&mut self, e: &IdedExpr, message: String) {
        let offset = self.info.offset_for(e.id).map_or(0, |(s, _)| s);
        self.issues.push(Issue { offset, message });
    }

    fn lookup(&mut self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        let t = self.declared.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone())?;
        if !self.references.iter().any(|r| r == name) {
            self.references.push(name.to_owned());
        }
        Some(t)
    }

    /// The node's type and worst-case cost.
    fn node(&mut self, e: &IdedExpr) -> (Type, u64) {
        match &e.expr {
            Expr::Literal(l) => (
                match l {
                    LiteralValue::Boolean(_) => Type::Bool,
                    LiteralValue::Bytes(b) => Type::Bytes {
                        max: b.inner().len() as u64,
                    },
                    LiteralValue::Double(_) => Type::Double,
                    LiteralValue::Int(_) => Type::Int,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(s) => Type::String {
                        max: s.inner().chars().count() as u64,
                    },
                    LiteralValue::UInt(_) => Type::Uint,
                },
                0,
            ),
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => (t, 1),
                None if super::value::type_value(name).is_some() => (Type::Kind, 1),
                None => {
                    self.issue(e, format!("undeclared reference to '{name}' (in container '')"));
                    (Type::Dyn, 1)
                }
            },
            Expr::Select(s)
                if super::value::qualified_type(&s.operand, &s.field, |n| self.is_variable(n)).is_some() =>
            {
                (Type::Kind, 1)
            }
            Expr::Select(s) => {
                let (t, c) = self.node(&s.operand);
                let field = match &t {
                    Type::Object(o) => match o.fields.get(&s.field) {
                        Some(f) => f.clone(),
                        None => {
                            self.issue(e, format!("undefined field '{}'", s.field));
                            Type::Dyn
                        }
                    },
                    Type::Map { value, .. } => (**value).clone(),
                    Type::Dyn => Type::Dyn,
                    other => {
                        self.issue(e, format!("type '{}' does not support field selection", other.name()));
                        Type::Dyn
                    }
                };
                (if s.test { Type::Bool } else { field }, sat(c, 1))
            }
            Expr::Call(call) => self.call(e, call),
            Expr::List(l) => {
                let mut elem: Option<Type> = None;
                let mut cost = 10u64;
                for (i, el) in l.elements.iter().enumerate() {
                    let (mut t, c) = self.node(el);
                    if l.optional_indices.contains(&i)
                        && let Type::Optional(inner) = t
                    {
                        t = *inner;
                    }
                    cost = sat(cost, c);
                    elem = Some(match elem {
                        None => t,
                        Some(prev) => {
                            // HomogeneousAggregateLiterals: every element of the first one's type.
                            if !(prev.fits(&t) && t.fits(&prev)) {
                                self.mismatch(el, &prev, &t);
                            }
                            if prev.is_dyn() || t.is_dyn() { Type::Dyn } else { prev }
                        }
                    });
                }
                let n = l.elements.len() as u64;
                (
                    Type::List {
                        elem: Box::new(elem.unwrap_or(Type::Dyn)),
                        max: n,
                    },
                    cost,
                )
            }
            Expr::Map(m) => {
                let mut cost = 30u64;
                let (mut kt, mut vt): (Option<Type>, Option<Type>) = (None, None);
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let (k, c1) = self.node(&me.key);
                        let (mut v, c2) = self.node(&me.value);
                        if me.optional
                            && let Type::Optional(inner) = v
                        {
                            v = *inner;
                        }
                        cost = sat(sat(cost, c1), c2);
                        // HomogeneousAggregateLiterals: keys of one type, values of one type.
                        kt = Some(match kt {
                            None => k,
                            Some(p) => {
                                if !(p.fits(&k) && k.fits(&p)) {
                                    self.mismatch(&me.key, &p, &k);
                                }
                                if p.is_dyn() || k.is_dyn() { Type::Dyn } else { p }
                            }
                        });
                        vt = Some(match vt {
                            None => v,
                            Some(p) => {
                                if !(p.fits(&v) && v.fits(&p)) {
                                    self.mismatch(&me.value, &p, &v);
                                }
                                if p.is_dyn() || v.is_dyn() { Type::Dyn } else { p }
                            }
                        });
                    }
                }
                (
                    Type::Map {
                        key: Box::new(kt.unwrap_or(Type::Dyn)),
                        value: Box::new(vt.unwrap_or(Type::Dyn)),
                        max: m.entries.len() as u64,
                    },
                    cost,
                )
            }
            Expr::Comprehension(c) => {
                let (range, rc) = self.node(&c.iter_range);
                let (first, second) = match &range {
                    Type::List { elem, .. } => (Type::Int, (**elem).clone()),
                    Type::Map { key, value, .. } => ((**key).clone(), (**value).clone()),
                    Type::Dyn => (Type::Dyn, Type::Dyn),
                    other => {
                        self.issue(
                            &c.iter_range,
                            format!("expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)", other.name()),
                        );
                        (Type::Dyn, Type::Dyn)
                    }
                };
                let iterations = range.max_size();
                let (accu, ic) = self.node(&c.accu_init);
                let base = self.scope.len();
                self.scope.push((c.accu_var.clone(), accu.clone()));
                match &c.iter_var2 {
                    Some(v2) => {
                        self.scope.push((c.iter_var.clone(), first));
                        self.scope.push((v2.clone(), second));
                    }
                    None => {
                        let v = if matches!(range, Type::Map { .. }) {
                            first
                        } else {
                            second
                        };
                        self.scope.push((c.iter_var.clone(), v));
                    }
                }
                let (_, cc) = self.node(&c.loop_cond);
                let (step, sc) = self.node(&c.loop_step);
                self.scope.truncate(base + 1);
                // An accumulator built up by the steps (map, filter) has the steps' type.
                self.scope[base].1 = match (&accu, &step) {
                    (Type::List { elem, .. }, Type::List { elem: se, .. }) if elem.is_dyn() => Type::List {
                        elem: se.clone(),
                        max: iterations,
                    },
                    (Type::Map { value, .. }, Type::Map { key: sk, value: sv, .. }) if value.is_dyn() => Type::Map {
                        key: sk.clone(),
                        value: sv.clone(),
                        max: iterations,
                    },
                    _ => accu,
                };
                let (result, resc) = self.node(&c.result);
                self.scope.truncate(base);
                let per = sat(cc, sc);
                (result, sat(sat(sat(rc, ic), per.saturating_mul(iterations)), resc))
            }
            Expr::Struct(_) | Expr::Unspecified => {
                self.issue(e, "unsupported expression".into());
                (Type::Dyn, 0)
            }
        }
    }

    fn call(&mut self, e: &IdedExpr, call: &cel::common::ast::CallExpr) -> (Type, u64) {
        let mut name = call.func_name.clone();
        let mut cost = 0u64;
        let target = match call.target.as_deref() {
            Some(IdedExpr {
                expr: Expr::Ident(ns), ..
            }) if NAMESPACES.contains(&ns.as_str()) && !self.is_variable(ns) => {
                name = format!("{ns}.{name}");
                None
            }
            Some(t) => {
                let (tt, tc) = self.node(t);
                cost = sat(cost, tc);
                Some(tt)
            }
            None => None,
        };
        let mut args = Vec::with_capacity(call.args.len());
        let mut arg_costs = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (t, c) = self.node(a);
            args.push(t);
            arg_costs.push(c);
        }
        match name.as_str() {
            "_&&_" | "_||_" => {
                let bad = args.iter().find(|t| !matches!(t, Type::Bool | Type::Dyn));
                if bad.is_some() {
                    self.no_overload(e, &name, None, &args);
                }
                return (Type::Bool, arg_costs.iter().fold(0, |a, b| sat(a, *b)));
            }
            "_?_:_" => {
                if !matches!(args.first(), Some(Type::Bool | Type::Dyn)) {
                    self.no_overload(e, &name, None, &args);
                }
                let t = match (&args.get(1), &args.get(2)) {
                    (Some(a), Some(b)) if a.fits(b) && b.fits(a) && !a.is_dyn() => (*a).clone(),
                    (Some(a), Some(Type::Null)) => (*a).clone(),
                    _ => Type::Dyn,
                };
                let branch = arg_costs
                    .get(1)
                    .copied()
                    .unwrap_or(0)
                    .max(arg_costs.get(2).copied().unwrap_or(0));
                return (t, sat(arg_costs.first().copied().unwrap_or(0), branch));
            }
            "@not_strictly_false" => return (Type::Bool, arg_costs.iter().sum()),
            _ => {}
        }
        cost = arg_costs.iter().fold(cost, |a, b| sat(a, *b));
        let call_cost = estimate_call(&name, target.as_ref(), &args);
        if !environment::declares(&name) {
            self.issue(e, format!("undeclared reference to '{name}' (in container '')"));
            return (Type::Dyn, sat(cost, call_cost));
        }
        self.literal_arguments(&name, call);
        if name == "sum"
            && let Some(Type::List { elem, .. }) = &target
        {
            let zero = match **elem {
                Type::Uint => Some(Value::Uint(0)),
                Type::Double => Some(Value::Double(0.0)),
                Type::Duration => Some(Value::Duration(0)),
                _ => None,
            };
            if let Some(z) = zero {
                self.zeros.push((e.id, z));
            }
        }
        let t = match library::result_type(&name, target.as_ref(), &args) {
            Ok(t) => t,
            Err(()) => {
                self.no_overload(e, &name, target.as_ref(), &args);
                Type::Dyn
            }
        };
        (t, sat(cost, call_cost))
    }

    fn mismatch(&mut self, e: &IdedExpr, want: &Type, found: &Type) {
        self.issue(
            e,
            format!("expected type '{}' but found '{}'", want.name(), found.name()),
        );
    }

    /// cel-go's literal validators (1.29): a constant regular expression, duration or timestamp that does not
    /// parse is a compile error.
    fn literal_arguments(&mut self, name: &str, call: &cel::common::ast::CallExpr) {
        let literal = |i: usize| match call.args.get(i).map(|a| &a.expr) {
            Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().to_string()),
            _ => None,
        };
        let (arg, check): (usize, &str) = match (name, call.target.is_some()) {
            ("matches", true) | ("find" | "findAll", true) => (0, "regex"),
            ("matches", false) => (1, "regex"),
            ("duration" | "timestamp", false) => (0, name),
            _ => return,
        };
        let Some(text) = literal(arg) else { return };
        let problem = match check {
            "regex" => super::kubernetes::regex(&text).err(),
            "duration" => super::time::parse_duration(&text)
                .is_none()
                .then(|| format!("invalid duration: {text:?}")),
            _ => super::time::parse_timestamp(&text)
                .is_none()
                .then(|| format!("timestamp parsing error: {text:?}")),
        };
        if let Some(p) = problem {
            let what = if check == "regex" { "matches" } else { check };
            self.issue(&call.args[arg], format!("invalid {what} argument: {p}"));
        }
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scope.iter().any(|(n, _)| n == name) || self.declared.iter().any(|(n, _)| n == name)
    }

    fn no_overload(&mut self, e: &IdedExpr, name: &str, target: Option<&Type>, args: &[Type]) {
        let list = args.iter().map(Type::name).collect::<Vec<_>>().join(", ");
        let applied = match target {
            Some(t) => format!("{}.({list})", t.name()),
            None => format!("({list})"),
        };
        self.issue(
            e,
            format!("found no matching overload for '{name}' applied to '{applied}'"),
        );
    }
}

/// A call's worst-case cost from its arguments' largest sizes (cel-go's estimates, and kube's library costs).
fn estimate_call(name: &str, target: Option<&Type>, args: &[Type]) -> u64 {
    let tenth = |n: u64| n.div_ceil(10);
    let size = |t: &Type| t.max_size();
    match (name, target, args) {
        ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => match (a, b) {
            (Type::String { .. } | Type::Bytes { .. }, _) => sat(1, tenth(size(a).min(size(b)))),
            (Type::List { .. } | Type::Map { .. }, _) => sat(1, size(a).min(size(b))),
            _ => 1,
        },
        ("_+_", None, [a @ Type::String { .. }, b]) => sat(1, tenth(sat(size(a), size(b)))),
        ("_+_", None, [a @ Type::List { .. }, b]) => sat(1, sat(size(a), size(b))),
        ("@in", None, [_, l @ Type::List { .. }]) => sat(1, size(l)),
        ("contains" | "startsWith" | "endsWith", Some(t), [a]) => sat(1, tenth(size(t).saturating_mul(size(a).max(1)))),
        ("matches", Some(t), [re]) | ("matches", None, [t, re]) | ("find" | "findAll", Some(t), [re, ..]) => {
            sat(1, size(t).saturating_mul(size(re)).div_ceil(4))
        }
        (
            "lowerAscii" | "upperAscii" | "trim" | "reverse" | "charAt" | "indexOf" | "lastIndexOf" | "replace"
            | "split" | "substring",
            Some(t @ Type::String { .. }),
            _,
        ) => sat(1, tenth(size(t))),
        ("join" | "isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", Some(l @ Type::List { .. }), _) => {
            sat(1, size(l))
        }
        ("sets.contains" | "sets.equivalent" | "sets.intersects", None, [a, b]) => {
            sat(1, size(a).saturating_mul(size(b)))
        }
        (
            "url" | "isURL" | "quantity" | "isQuantity" | "ip" | "isIP" | "cidr" | "isCIDR" | "semver" | "isSemver"
            | "string" | "bytes",
            None,
            [s, ..],
        ) => sat(1, tenth(size(s))),
        ("validate", Some(_), [s]) => sat(1, tenth(size(s))),
        _ => 1,
    }
}
