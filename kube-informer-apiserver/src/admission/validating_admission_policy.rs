//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1, k8s.io/apiserver's
//! `admission/plugin/policy/validating`), evaluated in the write path with no webhook: a binding applies its policy
//! to the writes both their match constraints select (resource rules with operations and scope, excluded rules,
//! namespace and object selectors), with the params its `paramRef` names (by name or selector, in the request's
//! namespace or the one named; `parameterNotFoundAction`), when every `matchCondition` holds; each `validation`
//! that is false denies the write (`Deny`: kube-apiserver's Status, code by its `reason`) or warns (`Warn`: a
//! `Warning` header; `Audit` has nothing to show here); an expression's error follows the `failurePolicy`. The
//! policy's `status.typeChecking` says which expressions do not compile, as kube-apiserver's type checker does.
//!
//! MutatingAdmissionPolicy is not served: kube-apiserver 1.34 serves it only in `v1beta1` behind its
//! `MutatingAdmissionPolicy` feature gate, off by default.

// Built without `cel`, policies are refused: the matching machinery is then unused.
#![cfg_attr(not(feature = "cel"), allow(dead_code, unused_imports))]

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_informer::object::{Status, StatusCause, StatusDetails};
use serde_json::{Value, json};

use crate::api::errors::{self, Failure, FieldError};
use crate::registry::StoreInner;
use crate::registry::store::Attributes;
use crate::storage::store::{StoredObject, object_key};

/// The group of policies.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";
/// Store id of policies.
pub(crate) const POLICIES: &str = "validatingadmissionpolicies.admissionregistration.k8s.io";
/// Store id of bindings.
pub(crate) const BINDINGS: &str = "validatingadmissionpolicybindings.admissionregistration.k8s.io";

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// Refuses an invalid policy or binding with kube-apiserver's 422.
pub(crate) fn check(id: &str, obj: &Value) -> Result<(), Failure> {
    let mut errs = Vec::new();
    let (kind, name) = (
        if id == POLICIES {
            "ValidatingAdmissionPolicy"
        } else {
            "ValidatingAdmissionPolicyBinding"
        },
        text(obj, "/metadata/name"),
    );
    if id == POLICIES {
        check_policy(obj, &mut errs);
    } else {
        if text(obj, "/spec/policyName").is_empty() {
            errs.push(FieldError::required("spec.policyName", ""));
        }
        let actions = items(obj, "/spec/validationActions");
        if actions.is_empty() {
            errs.push(FieldError::required(
                "spec.validationActions",
                "at least one validation action is required",
            ));
        }
        for (i, a) in actions.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            if !matches!(a, "Deny" | "Warn" | "Audit") {
                errs.push(FieldError::not_supported(
                    &format!("spec.validationActions[{i}]"),
                    a,
                    &["Audit", "Deny", "Warn"],
                ));
            }
        }
        let has = |x: &str| actions.iter().any(|a| a == x);
        if has("Deny") && has("Warn") {
            errs.push(FieldError::invalid(
                "spec.validationActions",
                &format!("{:?}", actions.iter().filter_map(Value::as_str).collect::<Vec<_>>()),
                "must not contain both Deny and Warn (repeating the same validation action information in the API response and headers serves no purpose)",
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errors::invalid(GROUP, kind, name, errs))
    }
}

fn check_policy(obj: &Value, errs: &mut Vec<FieldError>) {
    if obj.pointer("/spec/matchConstraints").is_none_or(Value::is_null) {
        errs.push(FieldError::required("spec.matchConstraints", ""));
    } else if items(obj, "/spec/matchConstraints/resourceRules").is_empty() {
        errs.push(FieldError::required("spec.matchConstraints.resourceRules", ""));
    }
    if items(obj, "/spec/validations").is_empty() && items(obj, "/spec/auditAnnotations").is_empty() {
        errs.push(FieldError::required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    match text(obj, "/spec/failurePolicy") {
        "" | "Fail" | "Ignore" => {}
        other => errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            other,
            &["Fail", "Ignore"],
        )),
    }
    for (i, v) in items(obj, "/spec/validations").iter().enumerate() {
        if text(v, "/expression").trim().is_empty() {
            errs.push(FieldError::required(
                &format!("spec.validations[{i}].expression"),
                "expression is not specified",
            ));
        }
        if let Some(r) = v.get("reason").and_then(Value::as_str)
            && !matches!(r, "Unauthorized" | "Forbidden" | "Invalid" | "RequestEntityTooLarge")
        {
            errs.push(FieldError::not_supported(
                &format!("spec.validations[{i}].reason"),
                r,
                &["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"],
            ));
        }
    }
    compile_check(obj, errs);
}

/// Built with the `cel` feature: expressions that do not compile (syntax errors, cel-go's size and nesting limits,
/// type errors against the variables typed `dyn`) are refused, as kube-apiserver's `validateCELCondition` compiles
/// them when a policy is written; without it, every policy is refused: none could be evaluated.
#[cfg(feature = "cel")]
fn compile_check(obj: &Value, errs: &mut Vec<FieldError>) {
    let env = environment(obj);
    for (field, expr) in expressions(obj) {
        if expr.trim().is_empty() {
            continue;
        }
        if let Err(e) = crate::cel::compile(&expr, &env) {
            errs.push(FieldError::invalid(&field, &expr, &format!("compilation failed: {e}")));
        }
    }
}

#[cfg(not(feature = "cel"))]
fn compile_check(_obj: &Value, errs: &mut Vec<FieldError>) {
    errs.push(FieldError::forbidden(
        "spec",
        "ValidatingAdmissionPolicy expressions cannot be evaluated: this kube-informer-apiserver was built without its `cel` feature",
    ));
}

/// Every expression of a policy with its field path.
#[cfg_attr(not(feature = "cel"), allow(dead_code))]
fn expressions(policy: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, c) in items(policy, "/spec/matchConditions").iter().enumerate() {
        out.push((
            format!("spec.matchConditions[{i}].expression"),
            text(c, "/expression").to_owned(),
        ));
    }
    for (i, v) in items(policy, "/spec/variables").iter().enumerate() {
        out.push((
            format!("spec.variables[{i}].expression"),
            text(v, "/expression").to_owned(),
        ));
    }
    for (i, v) in items(policy, "/spec/validations").iter().enumerate() {
        out.push((
            format!("spec.validations[{i}].expression"),
            text(v, "/expression").to_owned(),
        ));
        let me = text(v, "/messageExpression");
        if !me.is_empty() {
            out.push((format!("spec.validations[{i}].messageExpression"), me.to_owned()));
        }
    }
    for (i, a) in items(policy, "/spec/auditAnnotations").iter().enumerate() {
        out.push((
            format!("spec.auditAnnotations[{i}].valueExpression"),
            text(a, "/valueExpression").to_owned(),
        ));
    }
    out
}

/// A label selector (`matchLabels`, `matchExpressions`) against labels.
fn selects(selector: Option<&Value>, labels: &serde_json::Map<String, Value>) -> bool {
    let Some(sel) = selector.filter(|s| s.is_object()) else {
        return true;
    };
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object)
        && m.iter().any(|(k, v)| label(k) != v.as_str())
    {
        return false;
    }
    items(sel, "/matchExpressions").iter().all(|e| {
        let key = text(e, "/key");
        let values: Vec<&str> = items(e, "/values").iter().filter_map(Value::as_str).collect();
        match text(e, "/operator") {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    })
}

impl Attributes<'_> {
    fn some_object(&self) -> &Value {
        self.object.or(self.old_object).unwrap_or(&Value::Null)
    }

    fn name(&self) -> &str {
        text(self.some_object(), "/metadata/name")
    }

    fn namespace(&self) -> &str {
        text(self.some_object(), "/metadata/namespace")
    }
}

fn rule_matches(rule: &Value, a: &Attributes<'_>) -> bool {
    let api = &a.spec.api;
    let has = |key: &str, want: &str| items(rule, &format!("/{key}")).iter().any(|x| x == "*" || x == want);
    if !has("apiGroups", &api.group) || !has("apiVersions", &api.version) || !has("operations", a.operation) {
        return false;
    }
    let resource = if a.subresource.is_empty() {
        api.plural.clone()
    } else {
        format!("{}/{}", api.plural, a.subresource)
    };
    let resource_ok = items(rule, "/resources").iter().filter_map(Value::as_str).any(|r| {
        r == resource
            || r == "*/*"
            || (r == "*" && a.subresource.is_empty())
            || r.strip_suffix("/*")
                .is_some_and(|p| p == api.plural && !a.subresource.is_empty())
            || r.strip_prefix("*/").is_some_and(|s| s == a.subresource)
    });
    if !resource_ok {
        return false;
    }
    let names = items(rule, "/resourceNames");
    if !names.is_empty() && !names.iter().any(|n| n == a.name()) {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Namespaced" => api.namespaced,
        "Cluster" => !api.namespaced,
        _ => true,
    }
}

/// Whether match resources `m` (a policy's `matchConstraints` or a binding's `matchResources`) select the write;
/// `rules_required`: a binding's match resources without rules select every resource the policy does.
fn matches(g: &StoreInner, m: Option<&Value>, a: &Attributes<'_>, rules_required: bool) -> bool {
    let Some(m) = m.filter(|m| m.is_object()) else {
        return !rules_required;
    };
    let rules = items(m, "/resourceRules");
    if (rules_required || !rules.is_empty()) && !rules.iter().any(|r| rule_matches(r, a)) {
        return false;
    }
    if items(m, "/excludeResourceRules").iter().any(|r| rule_matches(r, a)) {
        return false;
    }
    let empty = serde_json::Map::new();
    let labels_of = |v: Option<&Value>| -> serde_json::Map<String, Value> {
        v.and_then(|o| o.pointer("/metadata/labels"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    // The object selector: either the new or the old object may match.
    if m.get("objectSelector").is_some() {
        let new_ok = a.object.is_some() && selects(m.get("objectSelector"), &labels_of(a.object));
        let old_ok = a.old_object.is_some() && selects(m.get("objectSelector"), &labels_of(a.old_object));
        if !new_ok && !old_ok {
            return false;
        }
    }
    if m.get("namespaceSelector").is_some() {
        let ns_labels = if a.spec.api.namespaced {
            namespace_object(g, a.namespace())
                .map(|n| labels_of(Some(&n)))
                .unwrap_or_default()
        } else if a.spec.api.plural == "namespaces" && a.spec.api.group.is_empty() {
            labels_of(Some(a.some_object()))
        } else {
            return true;
        };
        if !selects(
            m.get("namespaceSelector"),
            if ns_labels.is_empty() { &empty } else { &ns_labels },
        ) {
            return false;
        }
    }
    true
}

fn namespace_object(g: &StoreInner, ns: &str) -> Option<Value> {
    if ns.is_empty() {
        return None;
    }
    g.get("namespaces", &object_key("", ns)).map(|o| o.to_value())
}

fn all(g: &StoreInner, id: &str) -> Vec<Arc<StoredObject>> {
    if g.spec(id).is_none() {
        return Vec::new();
    }
    g.list_current(id, None)
}

/// The Status of a denied write: `<resource> "<name>" is forbidden: <message>`, with the validation's reason and
/// its code (Invalid by default, 422).
fn denied(a: &Attributes<'_>, message: String, reason: &str) -> Failure {
    let api = &a.spec.api;
    let name = a.name();
    let qualified = errors::qualified(api);
    let full = if name.is_empty() {
        format!("{qualified} is forbidden: {message}")
    } else {
        format!("{qualified} {name:?} is forbidden: {message}")
    };
    let code = match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    Box::new(Status::failure(code, reason, full).with_details(StatusDetails {
        name: name.to_owned(),
        group: api.group.clone(),
        kind: api.plural.clone(),
        causes: vec![StatusCause {
            message,
            ..Default::default()
        }],
        ..Default::default()
    }))
}

/// Admits a write through every binding that selects it: the warnings of `Warn` bindings, or the Status of the
/// first denial.
#[cfg(feature = "cel")]
pub(crate) fn admit(g: &StoreInner, a: &Attributes<'_>) -> Result<Vec<String>, Failure> {
    if a.spec.api.group == GROUP {
        // Policies never apply to policies and bindings themselves.
        return Ok(Vec::new());
    }
    let bindings = all(g, BINDINGS);
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let policies: BTreeMap<String, Value> = all(g, POLICIES)
        .into_iter()
        .map(|p| (p.name.clone(), p.to_value()))
        .collect();
    let mut warnings = Vec::new();
    let mut bindings: Vec<Value> = bindings.iter().map(|b| b.to_value()).collect();
    bindings.sort_by(|x, y| text(x, "/metadata/name").cmp(text(y, "/metadata/name")));
    for binding in &bindings {
        let Some(policy) = policies.get(text(binding, "/spec/policyName")) else {
            continue;
        };
        if !matches(g, policy.pointer("/spec/matchConstraints"), a, true)
            || !matches(g, binding.pointer("/spec/matchResources"), a, false)
        {
            continue;
        }
        evaluate::binding(g, a, policy, binding, &mut warnings)?;
    }
    Ok(warnings)
}

/// Without the `cel` feature no policy can be created: there is nothing to apply.
#[cfg(not(feature = "cel"))]
pub(crate) fn admit(_g: &StoreInner, _a: &Attributes<'_>) -> Result<Vec<String>, Failure> {
    Ok(Vec::new())
}

/// The variables a policy's expressions see, typed `dyn`.
#[cfg(feature = "cel")]
fn environment(policy: &Value) -> Vec<(String, crate::cel::Type)> {
    use crate::cel::Type;
    let mut vars: Vec<(String, Type)> = ["object", "oldObject", "request", "namespaceObject", "authorizer"]
        .iter()
        .map(|n| ((*n).to_owned(), Type::Dyn))
        .collect();
    if policy.pointer("/spec/paramKind").is_some_and(|p| p.is_object()) {
        vars.push(("params".into(), Type::Dyn));
    }
    let mut variables = crate::cel::types::Object::default();
    for v in items(policy, "/spec/variables") {
        let n = text(v, "/name").to_owned();
        variables.fields.insert(n.clone(), Type::Dyn);
        variables.names.insert(n.clone(), n);
    }
    vars.push(("variables".into(), Type::Object(Arc::new(variables))));
    vars
}

/// The status kube-apiserver's type checker writes: the expressions that do not compile.
#[cfg(feature = "cel")]
fn type_checking(policy: &Value) -> Value {
    let env = environment(policy);
    let warnings: Vec<Value> = expressions(policy)
        .into_iter()
        .filter(|(_, e)| !e.trim().is_empty())
        .filter_map(|(field, e)| {
            crate::cel::compile(&e, &env)
                .err()
                .map(|w| json!({"fieldRef": field, "warning": w}))
        })
        .collect();
    if warnings.is_empty() {
        json!({})
    } else {
        json!({"expressionWarnings": warnings})
    }
}

/// Writes each policy's `status` as kube-apiserver's type-checking controller does (`observedGeneration`,
/// `typeChecking`), in a write of its own.
#[cfg(feature = "cel")]
pub(crate) fn sync(store: &crate::registry::Store) {
    let Some(spec) = store.lock().spec(POLICIES) else {
        return;
    };
    let policies: Vec<Value> = {
        let g = store.lock();
        all(&g, POLICIES).iter().map(|p| p.to_value()).collect()
    };
    for p in policies {
        let status = json!({
            "observedGeneration": p.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
            "typeChecking": type_checking(&p),
        });
        if p.get("status") == Some(&status) {
            continue;
        }
        let mut with_status = p.clone();
        with_status["status"] = status;
        let name = text(&p, "/metadata/name").to_owned();
        // A concurrent write wins; the sync after it catches up.
        let _ = crate::registry::strategy::update(
            crate::registry::strategy::Target::new(store, &spec, None, &name),
            with_status,
            true,
            crate::patch::managed_fields::SERVER,
            &mut |_| {},
        );
    }
}

#[cfg(not(feature = "cel"))]
pub(crate) fn sync(_store: &crate::registry::Store) {}

#[cfg(feature = "cel")]
mod evaluate;
