//! A resource's published schemas: its object (from [`ResourceSpec::schema`], with `metadata` pointing at
//! ObjectMeta, `apiVersion`/`kind` added and the `x-kubernetes-group-version-kind` extension), its list, and the
//! OpenAPI v2 form of a v3 structural schema (apiextensions-apiserver's rules for publishing CRDs in v2, which
//! kubectl's older schema parser needs).

use serde_json::{Map, Value, json};

use super::meta::{self, Flavor};
use crate::registry::resource::ResourceSpec;

/// The definition name of a kind: `io.k8s.api.core.v1.ConfigMap` for Kubernetes' own groups, the reversed group
/// for the others (`com.example.v1.Widget`), as kube-apiserver names CRDs.
pub(crate) fn definition_name(group: &str, version: &str, kind: &str) -> String {
    match group {
        "" => format!("io.k8s.api.core.{version}.{kind}"),
        "apiextensions.k8s.io" => format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}"),
        g if !g.contains('.') => format!("io.k8s.api.{g}.{version}.{kind}"),
        g if g.ends_with(".k8s.io") && !g.ends_with(".x-k8s.io") => {
            let first = g.split('.').next().unwrap_or(g);
            format!("io.k8s.api.{first}.{version}.{kind}")
        }
        g => {
            let reversed: Vec<&str> = g.split('.').rev().collect();
            format!("{}.{version}.{kind}", reversed.join("."))
        }
    }
}

/// The `x-kubernetes-group-version-kind` value naming one kind.
pub(crate) fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// The published schema of a resource's object.
pub(crate) fn object_schema(spec: &ResourceSpec, flavor: Flavor) -> Value {
    let api = &spec.api;
    let mut s = match (spec.schema.get(), flavor) {
        // Nothing known: any object (kube-apiserver publishes a schema-less CRD the same way).
        (None, Flavor::V2) => json!({"type": "object"}),
        (None, Flavor::V3) => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        (Some(schema), Flavor::V2) if preserves_unknown(schema) => json!({"type": "object"}),
        (Some(schema), _) => {
            let mut s = schema.clone();
            strip_refs(&mut s);
            if flavor == Flavor::V2 {
                to_v2(&mut s);
                strip_defaults(&mut s);
            }
            s
        }
    };
    let Some(obj) = s.as_object_mut() else {
        return json!({"type": "object", "x-kubernetes-group-version-kind": [gvk(&api.group, &api.version, &api.kind)]});
    };
    // A v2 schema reduced to "any object" has no properties: adding some would make kubectl reject unknown fields.
    let typed = flavor == Flavor::V3 || obj.contains_key("properties");
    if typed {
        let props = properties_mut(obj);
        props.insert("apiVersion".into(), meta::api_version_property());
        props.insert("kind".into(), meta::kind_property());
        props.insert(
            "metadata".into(),
            flavor.described_reference(meta::OBJECT_META, meta::METADATA_DESCRIPTION),
        );
        add_embedded_properties(&mut s, flavor);
    }
    s["x-kubernetes-group-version-kind"] = json!([gvk(&api.group, &api.version, &api.kind)]);
    s
}

/// The published schema of a resource's list kind (`ConfigMapList`).
pub(crate) fn list_schema(spec: &ResourceSpec, flavor: Flavor) -> Value {
    let api = &spec.api;
    let item = definition_name(&api.group, &api.version, &api.kind);
    json!({
        "description": format!("{}List is a list of {}.", api.kind, api.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": meta::api_version_property(),
            "items": {"type": "array", "items": flavor.reference(&item), "description": format!("The {}.", api.plural)},
            "kind": meta::kind_property(),
            "metadata": flavor.described_reference(meta::LIST_META, meta::LIST_METADATA_DESCRIPTION),
        },
        "x-kubernetes-group-version-kind": [gvk(&api.group, &api.version, &format!("{}List", api.kind))],
    })
}

fn flag(s: &Map<String, Value>, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn preserves_unknown(s: &Value) -> bool {
    s.as_object()
        .is_some_and(|o| flag(o, "x-kubernetes-preserve-unknown-fields"))
}

fn properties_mut(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let p = obj.entry("properties").or_insert_with(|| json!({}));
    if !p.is_object() {
        *p = json!({});
    }
    p.as_object_mut().expect("just made an object")
}

/// Applies `f` to every schema nested in `s` (properties, items, additionalProperties), then to `s`.
fn visit(s: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for p in props.values_mut() {
            visit(p, f);
        }
    }
    match obj.get_mut("items") {
        Some(items @ Value::Object(_)) => visit(items, f),
        Some(Value::Array(list)) => list.iter_mut().for_each(|i| visit(i, f)),
        _ => {}
    }
    if let Some(ap @ Value::Object(_)) = obj.get_mut("additionalProperties") {
        visit(ap, f);
    }
    f(obj);
}

/// The schema is meant to be inlined; a `$ref` could name nothing in our documents (and kubectl's parser rejects a
/// dangling one), so it is dropped.
fn strip_refs(s: &mut Value) {
    visit(s, &mut |o| {
        o.remove("$ref");
    });
}

/// kube-apiserver publishes no defaults in v2.
fn strip_defaults(s: &mut Value) {
    visit(s, &mut |o| {
        o.remove("default");
    });
}

/// Turns a v3 structural schema into what kubectl's v2 parser accepts, as kube-apiserver does for CRDs: no
/// junctors (`allOf`, `oneOf`, `anyOf`, `not`), nullable fields untyped, fields that preserve unknown fields
/// neither typed as objects nor given properties or items, arrays without item schema untyped, and no `required`
/// naming a nullable field. Also keeps out what kubectl cannot parse: several types, tuple items.
pub(crate) fn to_v2(s: &mut Value) {
    let Some(o) = s.as_object_mut() else {
        return;
    };
    let nullable = |v: &Value| v.get("nullable").and_then(Value::as_bool) == Some(true);
    // Read before the children lose their `nullable` flag.
    let nullable_fields: Vec<String> = match o.get("properties") {
        Some(Value::Object(p)) => p.iter().filter(|(_, v)| nullable(v)).map(|(k, _)| k.clone()).collect(),
        _ => Vec::new(),
    };
    let nullable_values = o.get("additionalProperties").is_some_and(nullable);
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        props.values_mut().for_each(to_v2);
    }
    match o.get_mut("items") {
        Some(items @ Value::Object(_)) => to_v2(items),
        Some(Value::Array(list)) => list.iter_mut().for_each(to_v2),
        _ => {}
    }
    if let Some(ap @ Value::Object(_)) = o.get_mut("additionalProperties") {
        to_v2(ap);
    }
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        o.remove(junctor);
    }
    if o.remove("nullable").and_then(|v| v.as_bool()) == Some(true) {
        o.remove("type");
        o.remove("items");
        o.remove("properties");
    }
    if flag(o, "x-kubernetes-preserve-unknown-fields") {
        o.remove("items");
        o.remove("properties");
        if o.get("type").and_then(Value::as_str) == Some("object") {
            o.remove("type");
        }
    }
    match o.get("type") {
        Some(Value::String(_)) | None => {}
        Some(Value::Array(types)) if types.len() == 1 => {
            let t = types[0].clone();
            o.insert("type".into(), t);
        }
        Some(_) => {
            o.remove("type");
        }
    }
    if let Some(Value::Array(items)) = o.get("items") {
        match items.as_slice() {
            [one] => {
                let one = one.clone();
                o.insert("items".into(), one);
            }
            _ => {
                o.remove("items");
            }
        }
    }
    if o.get("type").and_then(Value::as_str) == Some("array") && !o.get("items").is_some_and(Value::is_object) {
        o.remove("type");
    }
    if nullable_values {
        o.remove("required");
    } else if let Some(Value::Array(req)) = o.get_mut("required") {
        req.retain(|r| !r.as_str().is_some_and(|r| nullable_fields.iter().any(|n| n == r)));
    }
}

/// `x-kubernetes-embedded-resource` objects get `apiVersion`, `kind` and `metadata` (and require the first two), as
/// kube-apiserver publishes them; not below a field that preserves unknown fields in v2.
fn add_embedded_properties(s: &mut Value, flavor: Flavor) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for p in props.values_mut() {
            add_embedded_properties(p, flavor);
        }
    }
    if let Some(items @ Value::Object(_)) = obj.get_mut("items") {
        add_embedded_properties(items, flavor);
    }
    if let Some(ap @ Value::Object(_)) = obj.get_mut("additionalProperties") {
        add_embedded_properties(ap, flavor);
    }
    if flavor == Flavor::V2 && flag(obj, "x-kubernetes-preserve-unknown-fields") {
        return;
    }
    if flag(obj, "x-kubernetes-embedded-resource") {
        let props = properties_mut(obj);
        props.insert("apiVersion".into(), meta::api_version_property());
        props.insert("kind".into(), meta::kind_property());
        props.insert(
            "metadata".into(),
            flavor.described_reference(meta::OBJECT_META, meta::METADATA_DESCRIPTION),
        );
        let req = obj.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(req) = req {
            for k in ["kind", "apiVersion"] {
                if !req.iter().any(|r| r == k) {
                    req.push(json!(k));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_informer::object::ApiResource;

    #[test]
    fn definition_names_follow_kube_apiserver() {
        assert_eq!(definition_name("", "v1", "ConfigMap"), "io.k8s.api.core.v1.ConfigMap");
        assert_eq!(
            definition_name("apps", "v1", "Deployment"),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            definition_name("coordination.k8s.io", "v1", "Lease"),
            "io.k8s.api.coordination.v1.Lease"
        );
        assert_eq!(
            definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(
            definition_name("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
    }

    #[test]
    fn v2_drops_what_kubectl_cannot_parse() {
        let mut s = json!({
            "type": "object",
            "required": ["a", "n"],
            "properties": {
                "a": {"type": "string", "default": "x", "anyOf": [{"type": "string"}]},
                "n": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"y": {}}},
                "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}},
                "ios": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
        });
        to_v2(&mut s);
        let p = &s["properties"];
        assert_eq!(p["a"], json!({"type": "string", "default": "x"}));
        assert_eq!(p["n"], json!({}));
        assert_eq!(p["free"], json!({"x-kubernetes-preserve-unknown-fields": true}));
        assert_eq!(p["list"], json!({"x-kubernetes-preserve-unknown-fields": true}));
        assert_eq!(p["ios"], json!({"x-kubernetes-int-or-string": true}));
        assert_eq!(s["required"], json!(["a"]));
    }

    #[test]
    fn object_schemas_point_metadata_at_object_meta_and_name_their_kind() {
        let api = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
        let spec = ResourceSpec::new(api.clone()).schema(json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "color": {"type": "string", "default": "red"},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "x-kubernetes-preserve-unknown-fields": true},
                }},
            },
        }));
        let v3 = object_schema(&spec, Flavor::V3);
        assert_eq!(
            v3["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(v3["properties"]["spec"]["properties"]["color"]["default"], "red");
        let template = &v3["properties"]["spec"]["properties"]["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            v3["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
        );
        let v2 = object_schema(&spec, Flavor::V2);
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(v2["properties"]["spec"]["properties"]["color"].get("default").is_none());
        // In v2 an embedded resource that preserves unknown fields stays "anything".
        let template = &v2["properties"]["spec"]["properties"]["template"];
        assert!(template.get("properties").is_none() && template.get("type").is_none());
        // Nothing known: any object in v2 (no properties, so kubectl checks no field), fields and extensions in v3.
        let bare = ResourceSpec::new(api);
        let v2 = object_schema(&bare, Flavor::V2);
        assert!(v2.get("properties").is_none());
        assert_eq!(v2["type"], "object");
        let v3 = object_schema(&bare, Flavor::V3);
        assert_eq!(v3["x-kubernetes-preserve-unknown-fields"], true);
        assert!(v3["properties"]["metadata"].is_object());
    }
}
