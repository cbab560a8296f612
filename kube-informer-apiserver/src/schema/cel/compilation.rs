//! Compilation of a schema node's `x-kubernetes-validations` (apiextensions-apiserver's `schema/cel/compilation.go`):
//! `self` and `oldSelf` declared with the node's type (`oldSelf` optional under `optionalOldSelf`), each rule
//! checked to be a bool expression and each `messageExpression` a string one, with their estimated costs.

use serde_json::Value;

use crate::cel::{self, Program, Type};

/// One rule of `x-kubernetes-validations`, compiled.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    /// `None` for an empty rule (refused at CRD validation).
    pub(crate) program: Option<Program>,
    pub(crate) error: Option<String>,
    pub(crate) message_expression: Option<Program>,
    pub(crate) message_expression_error: Option<String>,
    pub(crate) rule: String,
    pub(crate) message: String,
    pub(crate) reason: Option<String>,
    /// The rule's `fieldPath` as a field path (`.spec.x` → `spec.x`, `['a.b']` → `[a.b]`).
    pub(crate) field_path: Option<String>,
    pub(crate) optional_old_self: bool,
    pub(crate) uses_old_self: bool,
}

impl CompiledRule {
    /// kube's `ruleErrorString`: the message when there is one, the rule otherwise.
    pub(crate) fn error_string(&self) -> &str {
        if self.message.trim().is_empty() {
            self.rule.trim()
        } else {
            self.message.trim()
        }
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The rules of schema node `s` (its type with `resource_root`'s `apiVersion`, `kind` and `metadata`), compiled.
pub(crate) fn compile(s: &Value, resource_root: bool) -> Vec<CompiledRule> {
    let rules = s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let ty = cel::types::of_schema(s, resource_root);
    rules.iter().map(|r| compile_rule(r, s, ty.as_ref())).collect()
}

fn compile_rule(r: &Value, s: &Value, ty: Option<&Type>) -> CompiledRule {
    let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let mut out = CompiledRule {
        program: None,
        error: None,
        message_expression: None,
        message_expression_error: None,
        rule: text(r, "rule"),
        message: text(r, "message"),
        reason: r.get("reason").and_then(Value::as_str).map(str::to_owned),
        field_path: r
            .get("fieldPath")
            .and_then(Value::as_str)
            .filter(|p| !p.trim().is_empty())
            .and_then(|p| super::field_path(p.trim(), s).ok()),
        optional_old_self,
        uses_old_self: false,
    };
    let Some(ty) = ty else {
        out.error = Some(format!(
            "rule declared on schema that does not support validation rules type: '{}' x-kubernetes-preserve-unknown-fields: '{}'",
            text(s, "type"),
            s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true)
        ));
        return out;
    };
    let old_ty = if optional_old_self {
        Type::Optional(Box::new(ty.clone()))
    } else {
        ty.clone()
    };
    let declared = vec![("self".to_owned(), ty.clone()), ("oldSelf".to_owned(), old_ty)];
    if !out.rule.trim().is_empty() {
        match cel::compile(&out.rule, &declared) {
            Err(issues) => out.error = Some(format!("compilation failed: {issues}")),
            Ok(p) if !matches!(p.result, Type::Bool | Type::Dyn) => {
                out.error = Some("cel expression must evaluate to a bool".into());
            }
            Ok(p) => {
                out.uses_old_self = p.uses("oldSelf");
                if optional_old_self && !out.uses_old_self {
                    out.error = Some("optionalOldSelf cannot be used on non-transition rules".into());
                } else {
                    out.program = Some(p);
                }
            }
        }
    }
    let message_expression = text(r, "messageExpression");
    if !message_expression.trim().is_empty() {
        match cel::compile(&message_expression, &declared) {
            Err(issues) => {
                out.message_expression_error = Some(format!("messageExpression compilation failed: {issues}"))
            }
            Ok(p) if !matches!(p.result, Type::String { .. } | Type::Dyn) => {
                out.message_expression_error = Some("messageExpression must evaluate to a string".into());
            }
            Ok(p) => out.message_expression = Some(p),
        }
    }
    out
}
