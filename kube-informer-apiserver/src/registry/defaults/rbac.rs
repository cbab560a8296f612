//! What kube-apiserver does to the RBAC kinds on their way to storage: `rbac/v1`'s defaulting (a role ref's and a
//! user or group subject's `apiGroup`) and `pkg/apis/rbac/validation`'s checks (422): a rule needs verbs and either
//! non-resource URLs (cluster roles only) or groups and resources; a binding's role ref names a Role or ClusterRole
//! of `rbac.authorization.k8s.io` and never changes; its subjects are users, groups or service accounts.

use serde_json::Value;

use super::{Cluster, KindRules, Object};
use crate::api::errors::{self, Failure, FieldError};
use crate::registry::resource::{NameRule, validate_name};

/// The RBAC API group, whose kinds the authorizer reads (`auth::rbac`).
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";

/// The rules of the four kinds, found by [`rules`](super::rules).
pub(crate) static RULES: [KindRules; 4] = [
    KindRules::new(
        "rbac.authorization.k8s.io/v1/Role",
        default_role,
        create_role,
        update_role,
    ),
    KindRules::new(
        "rbac.authorization.k8s.io/v1/ClusterRole",
        default_role,
        create_cluster_role,
        update_cluster_role,
    ),
    KindRules::new(
        "rbac.authorization.k8s.io/v1/RoleBinding",
        default_binding,
        create_role_binding,
        update_role_binding,
    ),
    KindRules::new(
        "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
        default_binding,
        create_cluster_role_binding,
        update_cluster_role_binding,
    ),
];

/// `rules` has no `omitempty`: Go writes `null` for a role without rules.
fn default_role(obj: &mut Object) {
    obj.entry("rules").or_insert(Value::Null);
}

fn default_binding(obj: &mut Object) {
    if let Some(r) = obj.get_mut("roleRef").and_then(Value::as_object_mut)
        && r.get("apiGroup").and_then(Value::as_str).unwrap_or("").is_empty()
    {
        r.insert("apiGroup".into(), Value::String(GROUP.into()));
    }
    for s in obj
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
        if s.get("apiGroup").and_then(Value::as_str).unwrap_or("").is_empty() && matches!(kind, "User" | "Group") {
            s.insert("apiGroup".into(), Value::String(GROUP.into()));
        }
    }
}

fn name_of(obj: &Object) -> String {
    obj.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|x| x.as_str().unwrap_or("").to_owned()).collect())
        .unwrap_or_default()
}

/// Go's `%#v` of a `[]string`, as a 422 prints an invalid list.
fn go_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn invalid_raw(field: String, shown: String, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field,
        message: format!("Invalid value: {shown}: {detail}"),
    }
}

/// `validatePolicyRule` of each rule.
fn rule_errors(obj: &Object, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = obj.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        let path = |f: &str| format!("rules[{i}].{f}");
        let get = |k: &str| list(rule.get(k));
        let (verbs, groups, resources, names, urls) = (
            get("verbs"),
            get("apiGroups"),
            get("resources"),
            get("resourceNames"),
            get("nonResourceURLs"),
        );
        if verbs.is_empty() {
            errs.push(FieldError::required(
                &path("verbs"),
                "verbs must contain at least one value",
            ));
        }
        if !urls.is_empty() {
            if namespaced {
                let detail = "namespaced rules cannot apply to non-resource URLs";
                errs.push(invalid_raw(path("nonResourceURLs"), go_list(&urls), detail));
            }
            if !groups.is_empty() || !resources.is_empty() || !names.is_empty() {
                let detail = "rules cannot apply to both regular resources and non-resource URLs";
                errs.push(invalid_raw(path("nonResourceURLs"), go_list(&urls), detail));
            }
            continue;
        }
        if groups.is_empty() {
            errs.push(FieldError::required(
                &path("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if resources.is_empty() {
            errs.push(FieldError::required(
                &path("resources"),
                "resource rules must supply at least one resource",
            ));
        }
        if !names.is_empty() && resources.len() > 1 {
            errs.push(FieldError::required(
                &path("resourceNames"),
                "resource names cannot apply to multiple resources",
            ));
        }
    }
    errs
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` beyond metadata.
fn binding_errors(obj: &Object, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Object::new();
    let role_ref = obj.get("roleRef").and_then(Value::as_object).unwrap_or(&empty);
    let text = |m: &Object, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let group = text(role_ref, "apiGroup");
    if group != GROUP {
        errs.push(FieldError::not_supported("roleRef.apiGroup", &group, &[GROUP]));
    }
    let kind = text(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind.as_str()) {
        errs.push(FieldError::not_supported("roleRef.kind", &kind, kinds));
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else if let Err(m) = validate_name(NameRule::PathSegment, &name) {
        errs.push(FieldError::invalid("roleRef.name", &name, &m));
    }
    let subjects = obj
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, s) in subjects.iter().enumerate() {
        let s = s.as_object().unwrap_or(&empty);
        let path = |f: &str| format!("subjects[{i}].{f}");
        let (kind, name, group, ns) = (
            text(s, "kind"),
            text(s, "name"),
            text(s, "apiGroup"),
            text(s, "namespace"),
        );
        if name.is_empty() {
            errs.push(FieldError::required(&path("name"), ""));
        }
        match kind.as_str() {
            "ServiceAccount" => {
                if !name.is_empty()
                    && let Err(m) = validate_name(NameRule::Subdomain, &name)
                {
                    errs.push(FieldError::invalid(&path("name"), &name, &m));
                }
                if !group.is_empty() {
                    errs.push(FieldError::not_supported(&path("apiGroup"), &group, &[""]));
                }
                if !namespaced && ns.is_empty() {
                    errs.push(FieldError::required(&path("namespace"), ""));
                }
            }
            "User" | "Group" => {
                if name.is_empty() {
                    let what = if kind == "User" { "user" } else { "group" };
                    errs.push(FieldError::invalid(
                        &path("name"),
                        "",
                        &format!("{what} name cannot be empty"),
                    ));
                }
                if group != GROUP {
                    errs.push(FieldError::not_supported(&path("apiGroup"), &group, &[GROUP]));
                }
            }
            _ => errs.push(FieldError::not_supported(
                &path("kind"),
                &kind,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errs
}

fn refuse(kind: &str, obj: &Object, errs: Vec<FieldError>) -> Result<(), Failure> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errors::invalid(GROUP, kind, &name_of(obj), errs))
    }
}

/// A binding's role ref never changes.
fn role_ref_unchanged(new: &Object, old: &Object) -> Option<FieldError> {
    let (n, o) = (new.get("roleRef"), old.get("roleRef"));
    if n == o {
        return None;
    }
    let text = |k: &str| {
        n.and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let shown = format!(
        "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
        text("apiGroup"),
        text("kind"),
        text("name")
    );
    Some(invalid_raw("roleRef".into(), shown, "cannot change roleRef"))
}

fn create_role(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    refuse("Role", obj, rule_errors(obj, true))
}

fn update_role(obj: &mut Object, _: &Object, _: bool, _: &Cluster<'_>) -> Result<(), Failure> {
    refuse("Role", obj, rule_errors(obj, true))
}

fn create_cluster_role(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    refuse("ClusterRole", obj, rule_errors(obj, false))
}

fn update_cluster_role(obj: &mut Object, _: &Object, _: bool, _: &Cluster<'_>) -> Result<(), Failure> {
    refuse("ClusterRole", obj, rule_errors(obj, false))
}

fn create_role_binding(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    refuse("RoleBinding", obj, binding_errors(obj, true))
}

fn update_role_binding(obj: &mut Object, old: &Object, _: bool, _: &Cluster<'_>) -> Result<(), Failure> {
    let mut errs = binding_errors(obj, true);
    errs.extend(role_ref_unchanged(obj, old));
    refuse("RoleBinding", obj, errs)
}

fn create_cluster_role_binding(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    refuse("ClusterRoleBinding", obj, binding_errors(obj, false))
}

fn update_cluster_role_binding(obj: &mut Object, old: &Object, _: bool, _: &Cluster<'_>) -> Result<(), Failure> {
    let mut errs = binding_errors(obj, false);
    errs.extend(role_ref_unchanged(obj, old));
    refuse("ClusterRoleBinding", obj, errs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn bindings_are_defaulted_as_rbac_v1_defaults_them() {
        let mut b = object(json!({"roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "a"}, {"kind": "ServiceAccount", "name": "s"}]}));
        default_binding(&mut b);
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
        assert!(b["subjects"][1].get("apiGroup").is_none());
        let mut r = Object::new();
        default_role(&mut r);
        assert_eq!(r["rules"], Value::Null);
    }

    // Cases of kube-apiserver's TestValidate* (pkg/apis/rbac/validation/validation_test.go).
    #[test]
    fn rules_are_validated_as_kube_validates_them() {
        let msgs = |v: Value, namespaced: bool| -> Vec<String> {
            rule_errors(&object(v), namespaced)
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect()
        };
        assert!(
            msgs(
                json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
                true
            )
            .is_empty()
        );
        assert_eq!(
            msgs(json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}]}), true),
            ["rules[0].verbs: Required value: verbs must contain at least one value"]
        );
        assert_eq!(
            msgs(json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}), true),
            [
                r#"rules[0].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs"#
            ]
        );
        assert!(msgs(json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}), false).is_empty());
        assert_eq!(
            msgs(
                json!({"rules": [{"verbs": ["get"], "resources": ["a", "b"], "resourceNames": ["n"]}]}),
                false
            ),
            [
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resourceNames: Required value: resource names cannot apply to multiple resources"
            ]
        );
    }

    #[test]
    fn bindings_are_validated_and_their_role_ref_is_immutable() {
        let ok = object(json!({"metadata": {"name": "b"},
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "a"}, {"kind": "ServiceAccount", "name": "s"}]}));
        assert!(binding_errors(&ok, true).is_empty());
        let errs = binding_errors(&ok, false);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["roleRef.kind", "subjects[1].namespace"]);
        let bad =
            object(json!({"roleRef": {"apiGroup": "x", "kind": "Role"}, "subjects": [{"kind": "Robot", "name": "r"}]}));
        let fields: Vec<String> = binding_errors(&bad, true).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["roleRef.apiGroup", "roleRef.name", "subjects[0].kind"]);
        let mut changed = ok.clone();
        changed["roleRef"]["name"] = json!("other");
        let e = role_ref_unchanged(&changed, &ok).unwrap();
        assert_eq!(
            e.message,
            r#"Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef"#
        );
        assert!(role_ref_unchanged(&ok, &ok).is_none());
    }
}
