//! One binding's evaluation.
use super::*;
use crate::cel::{self, Value as Cel};

fn to_cel(v: Option<&Value>) -> Cel {
    v.map_or(Cel::Null, |v| cel::value::from_json(v, &cel::Type::Dyn))
}

fn request(a: &Attributes<'_>) -> Cel {
    let api = &a.spec.api;
    let gvk = json!({"group": api.group, "version": api.version, "kind": api.kind});
    let gvr = json!({"group": api.group, "version": api.version, "resource": api.plural});
    to_cel(Some(&json!({
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "subResource": a.subresource, "name": a.name(), "namespace": a.namespace(),
        "operation": a.operation, "userInfo": {"username": "", "groups": []}, "dryRun": a.dry_run,
    })))
}

/// The params of a binding: `None` for a policy without `paramKind`; the objects otherwise (an error when the
/// binding's `parameterNotFoundAction` is Deny and there are none).
fn params(g: &StoreInner, a: &Attributes<'_>, policy: &Value, binding: &Value) -> Result<Option<Vec<Value>>, String> {
    let Some(kind) = policy.pointer("/spec/paramKind").filter(|p| p.is_object()) else {
        return Ok(None);
    };
    let (api_version, kind) = (text(kind, "/apiVersion"), text(kind, "/kind"));
    let spec = g
        .specs()
        .into_iter()
        .find(|s| s.api.api_version() == api_version && s.api.kind == kind)
        .ok_or_else(|| format!("failed to configure binding: paramKind {api_version} {kind} is not served"))?;
    let pref = binding.pointer("/spec/paramRef").filter(|p| p.is_object());
    let Some(pref) = pref else {
        return Err("failed to configure binding: no paramRef for a policy with paramKind".into());
    };
    let ns = match text(pref, "/namespace") {
        "" if spec.api.namespaced => a.namespace(),
        "" => "",
        n => n,
    };
    let found: Vec<Value> = if !text(pref, "/name").is_empty() {
        g.get(&spec.id(), &object_key(ns, text(pref, "/name")))
            .map(|o| vec![o.to_value()])
            .unwrap_or_default()
    } else {
        g.list_current(&spec.id(), (!ns.is_empty()).then_some(ns))
            .iter()
            .map(|o| o.to_value())
            .filter(|o| {
                let labels = o
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                selects(pref.get("selector"), &labels)
            })
            .collect()
    };
    if found.is_empty() && text(pref, "/parameterNotFoundAction") == "Deny" {
        return Err(
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
                .into(),
        );
    }
    Ok(Some(found))
}

pub(super) fn binding(
    g: &StoreInner,
    a: &Attributes<'_>,
    policy: &Value,
    binding: &Value,
    warnings: &mut Vec<String>,
) -> Result<(), Failure> {
    let pname = text(policy, "/metadata/name");
    let bname = text(binding, "/metadata/name");
    let fail_closed = text(policy, "/spec/failurePolicy") != "Ignore";
    let actions: Vec<&str> = items(binding, "/spec/validationActions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let header = format!("ValidatingAdmissionPolicy '{pname}' with binding '{bname}' denied request");
    let error = |msg: String| -> Result<(), Failure> {
        if fail_closed {
            Err(denied(a, format!("{header}: {msg}"), "Invalid"))
        } else {
            Ok(())
        }
    };
    let params = match params(g, a, policy, binding) {
        Ok(p) => p,
        Err(e) => return error(e),
    };
    let param_sets: Vec<Option<Value>> = match params {
        None => vec![None],
        Some(list) => list.into_iter().map(Some).collect(),
    };
    let env = environment(policy);
    let namespace = if a.spec.api.namespaced {
        namespace_object(g, a.namespace())
    } else {
        None
    };
    for param in param_sets {
        let mut vars: Vec<(&str, Cel)> = vec![
            ("object", to_cel(a.object)),
            ("oldObject", to_cel(a.old_object)),
            ("request", request(a)),
            ("namespaceObject", to_cel(namespace.as_ref())),
            ("authorizer", Cel::Null),
        ];
        if param.is_some() || policy.pointer("/spec/paramKind").is_some_and(|p| p.is_object()) {
            vars.push(("params", to_cel(param.as_ref())));
        }
        let mut budget = cel::RUNTIME_COST_BUDGET;
        let run = |src: &str, vars: &[(&str, Cel)], budget: &mut i64| -> Result<Cel, String> {
            let p = cel::compile(src, &env).map_err(|e| format!("compilation failed: {e}"))?;
            let (r, cost) = p.eval(vars, cel::PER_CALL_LIMIT);
            *budget -= cost as i64;
            if *budget < 0 {
                return Err(
                    "validation failed due to running out of cost budget, no further validation rules will be run"
                        .into(),
                );
            }
            r.map_err(|e| e.to_string())
        };
        // Variables, in order; each sees those before it.
        let mut computed = BTreeMap::new();
        for v in items(policy, "/spec/variables") {
            vars.retain(|(n, _)| *n != "variables");
            vars.push(("variables", Cel::Map(Arc::new(computed.clone()))));
            if let Ok(x) = run(text(v, "/expression"), &vars, &mut budget) {
                computed.insert(cel::value::Key::Str(Arc::from(text(v, "/name"))), x);
            }
        }
        vars.retain(|(n, _)| *n != "variables");
        vars.push(("variables", Cel::Map(Arc::new(computed))));
        let mut matched = true;
        for c in items(policy, "/spec/matchConditions") {
            match run(text(c, "/expression"), &vars, &mut budget) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    matched = false;
                    break;
                }
                Ok(_) => {
                    return error(format!(
                        "matchCondition '{}' did not evaluate to a bool",
                        text(c, "/name")
                    ));
                }
                Err(e) => {
                    return error(format!("failed to evaluate matchCondition '{}': {e}", text(c, "/name")));
                }
            }
        }
        if !matched {
            continue;
        }
        for v in items(policy, "/spec/validations") {
            let expr = text(v, "/expression");
            let ok = match run(expr, &vars, &mut budget) {
                Ok(Cel::Bool(b)) => b,
                Ok(_) => return error(format!("expression '{expr}' resulted in error: no such overload")),
                Err(e) => {
                    if fail_closed && actions.contains(&"Deny") {
                        return Err(denied(
                            a,
                            format!("{header}: expression '{expr}' resulted in error: {e}"),
                            "Invalid",
                        ));
                    }
                    if fail_closed && actions.contains(&"Warn") {
                        warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': expression '{expr}' resulted in error: {e}"
                        ));
                    }
                    continue;
                }
            };
            if ok {
                continue;
            }
            let mut message = text(v, "/message").to_owned();
            if message.is_empty() {
                let me = text(v, "/messageExpression");
                if !me.is_empty()
                    && let Ok(Cel::String(m)) = run(me, &vars, &mut budget)
                    && !m.trim().is_empty()
                {
                    message = m.trim().to_owned();
                }
            }
            if message.is_empty() {
                message = format!("failed expression: {}", expr.trim());
            }
            if actions.contains(&"Warn") {
                warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': {message}"
                ));
            }
            if actions.contains(&"Deny") {
                let reason = v.get("reason").and_then(Value::as_str).unwrap_or("Invalid");
                return Err(denied(a, format!("{header}: {message}"), reason));
            }
        }
    }
    Ok(())
}
