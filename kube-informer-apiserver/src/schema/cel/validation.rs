//! Evaluation of `x-kubernetes-validations` on a write (apiextensions-apiserver's `schema/cel/validation.go`): every
//! non-null value whose schema node declares rules is checked with `self` bound to it and, for transition rules
//! on an update, `oldSelf` to its correlated old value (rules with `optionalOldSelf` also run without one, with
//! `oldSelf` an optional). A false rule is a field error — its `message`, `messageExpression` or `failed rule: …`,
//! its `reason`, at its `fieldPath` — unless ratcheting forgives it (the value, or its nearest correlatable
//! ancestor, unchanged): then it is a warning. Runtime cost: 1,000,000 per evaluation, 10,000,000 per object.

use std::sync::Arc;

use serde_json::Value;

use super::compilation::CompiledRule;
use super::{Rules, rules};
use crate::api::errors::FieldError;
use crate::cel::{self, EvalError, Type, Value as Cel};
use crate::schema::field_path::FieldPath;
use crate::schema::ratcheting;

/// What the rules said: errors, and the warnings of ratcheted ones.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) errors: Vec<FieldError>,
    pub(crate) warnings: Vec<String>,
}

struct Walk<'a> {
    rules: &'a Rules,
    budget: i64,
    out: Outcome,
}

/// Evaluates the rules of `schema` on `new` (an update of `old` when there is one).
pub(crate) fn validate(schema: &Arc<Value>, new: &Value, old: Option<&Value>) -> Outcome {
    let rules = rules(schema);
    if rules.by_node.is_empty() {
        return Outcome::default();
    }
    let mut w = Walk {
        rules: &rules,
        budget: cel::RUNTIME_COST_BUDGET,
        out: Outcome::default(),
    };
    let unchanged = old == Some(new);
    w.node(new, schema, old, unchanged, &FieldPath::default());
    w.out
}

fn schema_type(s: &Value) -> String {
    s.get("type").and_then(Value::as_str).unwrap_or("").to_owned()
}

fn shown(path: &FieldPath) -> String {
    if path.as_str().is_empty() {
        "<nil>".into()
    } else {
        path.as_str().into()
    }
}

fn invalid(path: &FieldPath, ty: &str, detail: &str) -> FieldError {
    FieldError::invalid(&shown(path), ty, detail)
}

impl Walk<'_> {
    /// `unchanged`: whether the value, or (uncorrelatable) its nearest correlatable ancestor, equals its old value.
    fn node(&mut self, x: &Value, s: &Value, old: Option<&Value>, unchanged: bool, path: &FieldPath) {
        if x.is_null() || self.budget < 0 {
            return;
        }
        if let Some(rules) = self.rules.of(s) {
            self.expressions((&rules.0, &rules.1), x, s, old, unchanged, path);
            if self.budget < 0 {
                return;
            }
        }
        match x {
            Value::Object(map) => {
                let props = s.get("properties").and_then(Value::as_object);
                let additional = s.get("additionalProperties").filter(|a| a.is_object());
                for (k, v) in map {
                    let child = props.and_then(|p| p.get(k));
                    let (cs, cp) = match (child, additional) {
                        (Some(c), _) => (c, path.child(k)),
                        (None, Some(a)) => (a, path.key(k)),
                        _ => continue,
                    };
                    let old_v = ratcheting::field(old, s, k);
                    let same = old_v == Some(v);
                    self.node(v, cs, old_v, same, &cp);
                    if self.budget < 0 {
                        return;
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_schema) = s.get("items").filter(|i| i.is_object()) else {
                    return;
                };
                let correlatable = ratcheting::correlatable_items(s);
                for (i, v) in items.iter().enumerate() {
                    let (old_v, same) = if correlatable {
                        let o = ratcheting::item(old, s, v);
                        (o, o == Some(v))
                    } else {
                        // Items of other lists cannot be correlated: they are forgiven when the whole list is.
                        (None, unchanged)
                    };
                    self.node(v, item_schema, old_v, same, &path.index(i));
                    if self.budget < 0 {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn expressions(
        &mut self,
        (compiled, ty): (&[CompiledRule], &Type),
        x: &Value,
        s: &Value,
        old: Option<&Value>,
        unchanged: bool,
        path: &FieldPath,
    ) {
        let ty_name = schema_type(s);
        if self.budget <= 0 {
            self.out.errors.push(invalid(
                path,
                &ty_name,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            self.budget = -1;
            return;
        }
        let me = cel::value::from_json(x, ty);
        let old_val = old.map(|o| cel::value::from_json(o, ty));
        for cr in compiled {
            if let Some(e) = &cr.error {
                self.out
                    .errors
                    .push(invalid(path, &ty_name, &format!("rule compile error: {e}")));
                continue;
            }
            let Some(program) = &cr.program else { continue };
            if cr.uses_old_self && old.is_none() && !cr.optional_old_self {
                continue;
            }
            let old_self = if cr.optional_old_self {
                Some(Cel::Optional(old_val.clone().map(Box::new)))
            } else {
                old_val.clone()
            };
            let mut vars: Vec<(&str, Cel)> = vec![("self", me.clone())];
            if let Some(o) = &old_self {
                vars.push(("oldSelf", o.clone()));
            }
            let (result, cost) = program.eval(&vars, cel::PER_CALL_LIMIT);
            if cost as i64 > self.budget {
                self.out.errors.push(invalid(
                    path,
                    &ty_name,
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                self.budget = -1;
                return;
            }
            self.budget -= cost as i64;
            let rule_text = cr.error_string().to_owned();
            match result {
                Err(EvalError::Cancelled) => {
                    self.out.errors.push(invalid(
                        path,
                        &ty_name,
                        &format!(
                            "'{}': no further validation rules will be run due to call cost exceeds limit for rule: {rule_text}",
                            cel::interpreter::CANCELLED
                        ),
                    ));
                    self.budget = -1;
                    return;
                }
                Err(EvalError::Eval(e)) if e.starts_with(cel::errors::NO_OVERLOAD) => {
                    self.out.errors.push(invalid(
                        path,
                        &ty_name,
                        &format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
                        ),
                    ));
                    continue;
                }
                Err(EvalError::Eval(e)) => {
                    self.out
                        .errors
                        .push(invalid(path, &ty_name, &format!("{e} evaluating rule: {rule_text}")));
                    continue;
                }
                Ok(Cel::Bool(true)) => continue,
                Ok(_) => {}
            }
            let at = match &cr.field_path {
                Some(fp) if fp.starts_with('[') => FieldPath::from_raw(format!("{}{fp}", path.as_str())),
                Some(fp) => {
                    let mut p = path.clone();
                    for seg in fp.split('.') {
                        p = p.child(seg);
                    }
                    p
                }
                None => path.clone(),
            };
            let mut detail = None;
            if let Some(m) = &cr.message_expression {
                let (r, cost) = m.eval(&vars, cel::PER_CALL_LIMIT);
                if cost as i64 > self.budget {
                    self.out.errors.push(invalid(
                        &at,
                        &ty_name,
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    self.budget = -1;
                    return;
                }
                self.budget -= cost as i64;
                if let Ok(Cel::String(msg)) = r {
                    let t = msg.trim();
                    if !t.is_empty() && t.len() <= 5 * 1024 && !t.contains('\n') {
                        detail = Some(t.to_owned());
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| {
                if cr.message.trim().is_empty() {
                    format!("failed rule: {rule_text}")
                } else {
                    cr.message.trim().to_owned()
                }
            });
            let field = shown(&at);
            let e = match cr.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(&field, &detail),
                Some("FieldValueRequired") => FieldError::required(&field, &detail),
                Some("FieldValueDuplicate") => FieldError::duplicate(&field, &ty_name),
                _ => FieldError::invalid(&field, &ty_name, &detail),
            };
            if !cr.uses_old_self && unchanged {
                self.out.warnings.push(format!("{}: {}", e.field, e.message));
            } else {
                self.out.errors.push(e);
            }
        }
    }
}
