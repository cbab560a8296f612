//! `x-kubernetes-validations` (apiextensions-apiserver's `schema/cel`): the rules of a CRD's schema checked when
//! the CRD is written ([`check_definition`]: compile errors, `message`, `reason`, `fieldPath`, transition rules
//! where no old value can be correlated, estimated cost against kube's limits, all with kube-apiserver's wording),
//! and evaluated on every write of its objects ([`validation`]).

mod compilation;
pub(crate) mod validation;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use serde_json::Value;

use crate::api::errors::FieldError;
use crate::cel::types::MAX_REQUEST_SIZE;
use compilation::CompiledRule;

pub(crate) use validation::validate;

/// `StaticEstimatedCostLimit`: the estimated cost one rule may have (times how often it may run).
const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// `StaticEstimatedCRDCostLimit`: the estimated cost of all the rules of one schema.
const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// The compiled rules of one schema, by the address of the node that declares them (stable while the schema's
/// `Arc` lives).
#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// Each node's rules and its CEL type (`self`'s).
    by_node: HashMap<usize, (Vec<CompiledRule>, crate::cel::Type)>,
}

impl Rules {
    fn of(&self, node: &Value) -> Option<&(Vec<CompiledRule>, crate::cel::Type)> {
        self.by_node.get(&(node as *const Value as usize))
    }
}

fn collect(s: &Value, resource_root: bool, into: &mut Rules) {
    if s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
    {
        let ty = crate::cel::types::of_schema(s, resource_root).unwrap_or(crate::cel::Type::Dyn);
        into.by_node
            .insert(s as *const Value as usize, (compilation::compile(s, resource_root), ty));
    }
    let embedded = |c: &Value| c.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true);
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for p in props.values() {
            collect(p, embedded(p), into);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(c) = s.get(key).filter(|c| c.is_object()) {
            collect(c, embedded(c), into);
        }
    }
}

type Cache = Mutex<HashMap<usize, (Weak<Value>, Arc<Rules>)>>;
static CACHE: LazyLock<Cache> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The compiled rules of `schema` (a custom resource version's), compiled once per registered schema.
pub(crate) fn rules(schema: &Arc<Value>) -> Arc<Rules> {
    let key = Arc::as_ptr(schema) as usize;
    let mut cache = CACHE.lock();
    if let Some((weak, rules)) = cache.get(&key)
        && weak.upgrade().is_some_and(|s| Arc::ptr_eq(&s, schema))
    {
        return rules.clone();
    }
    cache.retain(|_, (w, _)| w.strong_count() > 0);
    let mut r = Rules::default();
    collect(schema, true, &mut r);
    let r = Arc::new(r);
    cache.insert(key, (Arc::downgrade(schema), r.clone()));
    r
}

/// Whether `schema` declares any rule.
pub(crate) fn has_rules(schema: &Arc<Value>) -> bool {
    !rules(schema).by_node.is_empty()
}

/// `ValidFieldPath`: a rule's `fieldPath` (`.a.b`, `['x.y']`) resolved through the schema; the field path it names
/// (`a.b`, `[x.y]` for a map key) or kube's error.
pub(crate) fn field_path(p: &str, schema: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut at = schema;
    let mut rest = p;
    let step = |name: &str, out: &mut String, at: &mut &Value| -> Result<(), String> {
        if let Some(props) = at.get("properties").and_then(Value::as_object) {
            *at = props.get(name).ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
        } else if let Some(ap) = at.get("additionalProperties").filter(|a| a.is_object()) {
            *at = ap;
            out.push_str(&format!("[{name}]"));
        } else {
            return Err("does not refer to a valid field".into());
        }
        Ok(())
    };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return Err("unexpected end of JSON path".into());
            }
            step(&r[..end], &mut out, &mut at)?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(r) = r.strip_prefix('\'') else {
                let tok = r.split([']', '.', '[']).next().unwrap_or("");
                return Err(format!("expected single quoted string but got {tok}"));
            };
            let end = r.find("']").ok_or("unexpected end of JSON path")?;
            let name = r[..end].replace("\\'", "'").replace("\\\\", "\\");
            step(&name, &mut out, &mut at)?;
            rest = &r[end + 2..];
        } else {
            let tok = rest.split(['.', '[', ']']).next().unwrap_or(rest);
            return Err(format!("expected [ or . but got: {tok}"));
        }
    }
    Ok(out)
}

/// Go's `%#v` of an `apiextensions.ValidationRule`, as kube-apiserver prints the value of an invalid rule.
fn go_rule(r: &Value) -> String {
    let s = |k: &str| format!("{:?}", r.get(k).and_then(Value::as_str).unwrap_or(""));
    let reason = if r.get("reason").is_some_and(|x| !x.is_null()) {
        "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
    } else {
        "(*apiextensions.FieldValueErrorReason)(nil)"
    };
    let optional = if r.get("optionalOldSelf").is_some_and(|x| !x.is_null()) {
        "(*bool)(0xc000000000)"
    } else {
        "(*bool)(nil)"
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath")
    )
}

fn invalid_raw(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: field.to_owned(),
        message: format!("Invalid value: {value}: {detail}"),
    }
}

/// kube's `getCostErrorMessage`.
fn cost_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let f = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {f} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

struct Check {
    errs: Vec<FieldError>,
    total: u64,
    /// (path, cost) of each expression, for the total's error.
    costs: Vec<(String, u64)>,
}

/// The errors kube-apiserver's CRD validation finds in the rules of `schema` (at `path`, e.g.
/// `spec.versions[0].schema.openAPIV3Schema`).
pub(crate) fn check_definition(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut c = Check {
        errs: Vec::new(),
        total: 0,
        costs: Vec::new(),
    };
    walk(schema, path, true, 1, None, &mut c);
    if c.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (p, _) in &c.costs {
            c.errs.push(FieldError::forbidden(
                p,
                "contributed to estimated rule & messageExpression cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        c.errs.push(FieldError::forbidden(
            path,
            &cost_message(
                "x-kubernetes-validations estimated rule & messageExpression cost total for entire OpenAPIv3 schema",
                c.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    c.errs
}

fn walk(s: &Value, path: &str, root: bool, cardinality: u64, uncorrelatable: Option<&str>, c: &mut Check) {
    let embedded = s.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true);
    if let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) {
        check_rules(s, rules, path, root || embedded, cardinality, uncorrelatable, c);
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            walk(
                p,
                &format!("{path}.properties[{k}]"),
                false,
                cardinality,
                uncorrelatable,
                c,
            );
        }
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        let max = s
            .get("maxItems")
            .and_then(Value::as_u64)
            .unwrap_or(MAX_REQUEST_SIZE / 2);
        let at = format!("{path}.items");
        let unc = match uncorrelatable {
            Some(u) => Some(u.to_owned()),
            None if !super::ratcheting::correlatable_items(s) => Some(at.clone()),
            None => None,
        };
        walk(items, &at, false, cardinality.saturating_mul(max), unc.as_deref(), c);
    }
    if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
        let max = s
            .get("maxProperties")
            .and_then(Value::as_u64)
            .unwrap_or(MAX_REQUEST_SIZE / 4);
        walk(
            ap,
            &format!("{path}.additionalProperties"),
            false,
            cardinality.saturating_mul(max),
            uncorrelatable,
            c,
        );
    }
}

fn check_rules(
    s: &Value,
    rules: &[Value],
    path: &str,
    resource_root: bool,
    cardinality: u64,
    uncorrelatable: Option<&str>,
    c: &mut Check,
) {
    let before = c.errs.len();
    let has_newline = |t: &str| t.contains(['\n', '\r']);
    for (i, r) in rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let rule = text(r, "rule");
        let message = text(r, "message");
        if rule.trim().is_empty() {
            c.errs
                .push(FieldError::required(&format!("{at}.rule"), "rule is not specified"));
        } else if !message.is_empty() && message.trim().is_empty() {
            c.errs.push(FieldError::invalid(
                &format!("{at}.message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if message.len() > 2048 {
            let short: String = message.chars().take(10).collect();
            c.errs.push(FieldError::invalid(
                &format!("{at}.message"),
                &format!("{short}..."),
                "message must have a maximum length of 2048 characters",
            ));
        } else if has_newline(message.trim()) {
            c.errs.push(FieldError::invalid(
                &format!("{at}.message"),
                message,
                "message must not contain line breaks",
            ));
        } else if has_newline(rule.trim()) && message.trim().is_empty() {
            c.errs.push(FieldError::required(
                &format!("{at}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let me = text(r, "messageExpression");
        if !me.is_empty() && me.trim().is_empty() {
            c.errs.push(FieldError::required(
                &format!("{at}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = r.get("reason").and_then(Value::as_str)
            && !matches!(
                reason,
                "FieldValueDuplicate" | "FieldValueForbidden" | "FieldValueInvalid" | "FieldValueRequired"
            )
        {
            c.errs.push(FieldError::not_supported(
                &format!("{at}.reason"),
                reason,
                &[
                    "FieldValueDuplicate",
                    "FieldValueForbidden",
                    "FieldValueInvalid",
                    "FieldValueRequired",
                ],
            ));
        }
        let fp = text(r, "fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            c.errs.push(FieldError::invalid(
                &format!("{at}.fieldPath"),
                fp,
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newline(fp) {
            c.errs.push(FieldError::invalid(
                &format!("{at}.fieldPath"),
                fp,
                "fieldPath must not contain line breaks",
            ));
        }
        if !fp.trim().is_empty()
            && let Err(e) = field_path(fp.trim(), s)
        {
            c.errs.push(FieldError::invalid(
                &format!("{at}.fieldPath"),
                fp,
                &format!("fieldPath must be a valid path: {e}"),
            ));
        }
    }
    if c.errs.len() > before {
        return;
    }
    let compiled = compilation::compile(s, resource_root);
    for (i, (cr, r)) in compiled.iter().zip(rules).enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let cost = cr
            .program
            .as_ref()
            .map_or(0, |p| p.max_cost)
            .saturating_mul(cardinality);
        if cost > STATIC_ESTIMATED_COST_LIMIT {
            c.errs.push(FieldError::forbidden(
                &format!("{at}.rule"),
                &cost_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
            ));
        }
        c.total = c.total.saturating_add(cost);
        c.costs.push((format!("{at}.rule"), cost));
        if let Some(e) = &cr.error {
            c.errs.push(invalid_raw(&format!("{at}.rule"), &go_rule(r), e));
        }
        if let Some(e) = &cr.message_expression_error {
            c.errs
                .push(invalid_raw(&format!("{at}.messageExpression"), &go_rule(r), e));
        } else if let Some(m) = &cr.message_expression {
            let mcost = m.max_cost.saturating_mul(cardinality);
            if mcost > STATIC_ESTIMATED_COST_LIMIT {
                c.errs.push(FieldError::forbidden(
                    &format!("{at}.messageExpression"),
                    &cost_message("estimated messageExpression cost", mcost, STATIC_ESTIMATED_COST_LIMIT),
                ));
            }
            c.total = c.total.saturating_add(mcost);
            c.costs.push((format!("{at}.messageExpression"), mcost));
        }
        if cr.uses_old_self
            && let Some(u) = uncorrelatable
        {
            c.errs.push(FieldError::invalid(
                &format!("{at}.rule"),
                &cr.rule,
                &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"),
            ));
        }
    }
    // Only the expressions that contributed much are named when the total is too high.
    c.costs
        .retain(|(_, cost)| *cost > STATIC_ESTIMATED_CRD_COST_LIMIT / 100);
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
