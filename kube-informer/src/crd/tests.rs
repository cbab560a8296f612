//! The rewrite's cases, ported from kube-rs's `crd_schema_test` and apiextensions' structural-schema rules, each
//! output also checked by [`assert_structural`].

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::*;
use crate::object::{CrdOptions, ValidationRule};

/// apiextensions' structural rules, as a check of the output: every field typed (or int-or-string, or preserving
/// unknown fields), junctors with value validations only, no `additionalProperties` beside `properties` or `false`,
/// no `uniqueItems`, no keyword JSONSchemaProps lacks.
fn assert_structural(v: &Value, path: &str) {
    let m = v.as_object().unwrap_or_else(|| panic!("{path}: not an object: {v}"));
    for k in m.keys() {
        assert!(
            structural::KNOWN_FOR_TESTS.contains(&k.as_str()) || k.starts_with("x-kubernetes-"),
            "{path}: keyword {k}"
        );
    }
    let flag = |k: &str| m.get(k) == Some(&Value::Bool(true));
    assert!(
        m.get("type").is_some_and(Value::is_string)
            || flag("x-kubernetes-int-or-string")
            || flag("x-kubernetes-preserve-unknown-fields"),
        "{path}: untyped: {v}"
    );
    assert!(!flag("uniqueItems"), "{path}: uniqueItems");
    assert!(
        !m.contains_key("additionalProperties") || !m.contains_key("properties"),
        "{path}: both"
    );
    assert_ne!(m.get("additionalProperties"), Some(&Value::Bool(false)), "{path}");
    for j in ["allOf", "anyOf", "oneOf"] {
        for b in m.get(j).and_then(Value::as_array).into_iter().flatten() {
            for k in b.as_object().unwrap().keys() {
                assert!(
                    !matches!(
                        k.as_str(),
                        "type" | "description" | "default" | "nullable" | "additionalProperties" | "properties"
                    ),
                    "{path}.{j}: {k}"
                );
            }
        }
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, p) in props {
            assert_structural(p, &format!("{path}.{k}"));
        }
    }
    if let Some(items) = m.get("items") {
        assert_structural(items, &format!("{path}[]"));
    }
    if let Some(ap @ Value::Object(_)) = m.get("additionalProperties") {
        assert_structural(ap, &format!("{path}{{}}"));
    }
}

fn schema<T: JsonSchema>() -> Value {
    let s = schema_for::<T>("spec").unwrap_or_else(|e| panic!("{e}"));
    assert_structural(&s, "spec");
    s
}

fn default_value() -> String {
    "default_value".into()
}

fn default_nullable() -> Option<String> {
    Some("default_nullable".into())
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct FooSpec {
    non_nullable: String,
    #[serde(default = "default_value")]
    non_nullable_with_default: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    nullable_skipped: Option<String>,
    nullable: Option<String>,
    #[serde(default = "default_nullable")]
    nullable_with_default: Option<String>,
    /// This is a complex enum with a description
    complex_enum: ComplexEnum,
    /// This is a untagged enum with a description
    untagged_enum_person: UntaggedEnumPerson,
    set: HashSet<String>,
    optional_enum: Option<Gender>,
    /// Preferred gender
    optional_enum_with_doc: Option<Gender>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::enum_variant_names, dead_code)]
enum ComplexEnum {
    /// First variant with an int
    VariantOne { int: i32 },
    /// Second variant with an String
    VariantTwo { str: String },
    /// Third variant which doesn't has an attribute
    VariantThree {},
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", untagged)]
#[allow(dead_code)]
enum UntaggedEnumPerson {
    GenderAndAge(GenderAndAge),
    GenderAndDateOfBirth(GenderAndDateOfBirth),
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct GenderAndAge {
    /// Gender of the person
    gender: Gender,
    /// Age of the person in years
    age: i32,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct GenderAndDateOfBirth {
    /// Gender of the person
    gender: Gender,
    /// Date of birth of the person as ISO 8601 date
    date_of_birth: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[allow(dead_code)]
enum Gender {
    Female,
    Male,
    /// This variant has a comment!
    Other,
}

#[test]
fn kube_rs_foo_spec_becomes_what_kube_rs_emits() {
    let s = schema::<FooSpec>();
    let p = &s["properties"];
    assert_eq!(p["nonNullable"], json!({"type": "string"}));
    assert_eq!(
        p["nonNullableWithDefault"],
        json!({"type": "string", "default": "default_value"})
    );
    assert_eq!(p["nullableSkipped"], json!({"type": "string", "nullable": true}));
    assert_eq!(p["nullable"], json!({"type": "string", "nullable": true}));
    assert_eq!(
        p["nullableWithDefault"],
        json!({"type": "string", "nullable": true, "default": "default_nullable"})
    );
    assert_eq!(
        p["complexEnum"],
        json!({
            "type": "object",
            "description": "This is a complex enum with a description",
            "properties": {
                "variantOne": {"type": "object", "properties": {"int": {"type": "integer", "format": "int32"}},
                               "required": ["int"], "description": "First variant with an int"},
                "variantTwo": {"type": "object", "properties": {"str": {"type": "string"}},
                               "required": ["str"], "description": "Second variant with an String"},
                "variantThree": {"type": "object", "description": "Third variant which doesn't has an attribute"},
            },
            "oneOf": [{"required": ["variantOne"]}, {"required": ["variantTwo"]}, {"required": ["variantThree"]}],
        })
    );
    assert_eq!(
        p["untaggedEnumPerson"],
        json!({
            "type": "object",
            "description": "This is a untagged enum with a description",
            "properties": {
                "age": {"type": "integer", "format": "int32", "description": "Age of the person in years"},
                "dateOfBirth": {"type": "string", "description": "Date of birth of the person as ISO 8601 date"},
                "gender": {"type": "string", "enum": ["Female", "Male", "Other"], "description": "Gender of the person"},
            },
            "anyOf": [{"required": ["gender", "age"]}, {"required": ["gender", "dateOfBirth"]}],
        })
    );
    assert_eq!(
        p["set"],
        json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"})
    );
    assert_eq!(
        p["optionalEnum"],
        json!({"type": "string", "enum": ["Female", "Male", "Other"], "nullable": true})
    );
    assert_eq!(p["optionalEnumWithDoc"]["description"], "Preferred gender");
    assert_eq!(p["optionalEnumWithDoc"]["nullable"], true);
    let mut required: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["complexEnum", "nonNullable", "set", "untaggedEnumPerson"]);
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Flattening {
    foo: String,
    #[serde(flatten)]
    arbitrary: HashMap<String, Value>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct DenyUnknown {
    subitem: SubItemDenyUnknown,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SubItemDenyUnknown {
    one: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum IntOrString {
    Int(i32),
    String(String),
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct FreeForm {
    required_int_or_string: IntOrString,
    optional_int_or_string: Option<IntOrString>,
    anything: Value,
    maybe_anything: Option<Value>,
    labels: BTreeMap<String, String>,
    extra: BTreeMap<String, Value>,
    small: u8,
    big: u64,
    ratio: f32,
}

#[test]
fn maps_free_form_values_and_int_or_string() {
    let s = schema::<Flattening>();
    assert_eq!(s["x-kubernetes-preserve-unknown-fields"], true);
    assert!(s.get("additionalProperties").is_none());

    let s = schema::<DenyUnknown>();
    assert!(s["properties"]["subitem"].get("additionalProperties").is_none());

    let s = schema::<FreeForm>();
    let p = &s["properties"];
    assert_eq!(p["required_int_or_string"], json!({"x-kubernetes-int-or-string": true}));
    assert_eq!(
        p["optional_int_or_string"],
        json!({"x-kubernetes-int-or-string": true, "nullable": true})
    );
    assert_eq!(p["anything"], json!({"x-kubernetes-preserve-unknown-fields": true}));
    assert_eq!(
        p["maybe_anything"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        p["labels"],
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    assert_eq!(
        p["extra"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        p["small"],
        json!({"type": "integer", "format": "int32", "minimum": 0, "maximum": 255})
    );
    assert_eq!(p["big"], json!({"type": "integer", "format": "int64", "minimum": 0}));
    assert_eq!(p["ratio"], json!({"type": "number", "format": "float"}));
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
#[allow(dead_code)]
enum Internal {
    A { a: i32 },
    B { b: String },
}

#[test]
fn an_internal_tag_becomes_one_enum_property() {
    let s = schema::<Internal>();
    assert_eq!(s["properties"]["kind"], json!({"type": "string", "enum": ["A", "B"]}));
    assert_eq!(
        s["oneOf"],
        json!([{"required": ["kind", "a"]}, {"required": ["kind", "b"]}])
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(transform = ValidationRule::new("self.min <= self.max").message("min must not exceed max"))]
#[allow(dead_code)]
struct Range {
    #[schemars(transform = ValidationRule::new("self >= 0"), range(max = 100))]
    min: i32,
    max: i32,
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    ports: Vec<Port>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Port {
    name: String,
    #[schemars(length(max = 15), regex(pattern = r"^[a-z]+$"))]
    protocol: Option<String>,
}

#[test]
fn validation_rules_and_extensions_come_from_attributes() {
    let s = schema::<Range>();
    assert_eq!(
        s["x-kubernetes-validations"],
        json!([{"rule": "self.min <= self.max", "message": "min must not exceed max"}])
    );
    assert_eq!(
        s["properties"]["min"],
        json!({"type": "integer", "format": "int32", "maximum": 100, "x-kubernetes-validations": [{"rule": "self >= 0"}]})
    );
    assert_eq!(s["properties"]["ports"]["x-kubernetes-list-type"], "map");
    assert_eq!(s["properties"]["ports"]["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(
        s["properties"]["ports"]["items"]["properties"]["protocol"],
        json!({"type": "string", "nullable": true, "maxLength": 15, "pattern": "^[a-z]+$"})
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Recursive {
    next: Option<Box<Recursive>>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Tuple {
    pair: (u8, String),
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Mixed {
    mode: Mode,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Mode {
    Off,
    Fixed { every: u32 },
}

#[test]
fn what_has_no_structural_form_is_an_error_naming_the_field() {
    let e = schema_for::<Recursive>("spec").unwrap_err();
    assert!(
        matches!(&e, CrdError::Unstructural { path, .. } if path == "spec.next"),
        "{e}"
    );
    assert!(e.to_string().contains("recursive"), "{e}");
    let e = schema_for::<Tuple>("spec").unwrap_err();
    assert!(
        matches!(&e, CrdError::Unstructural { path, .. } if path == "spec.pair"),
        "{e}"
    );
    assert!(e.to_string().contains("tuple"), "{e}");
    let e = schema_for::<Mixed>("spec").unwrap_err();
    assert_eq!(
        e.to_string(),
        "spec.mode: no structural schema: a `oneOf` of string and object values (an enum mixing unit and data \
         variants, or an untagged enum of different types); a CRD field has one type: give every variant data, \
         or use a struct of optional fields"
    );
}

#[test]
fn keywords_apiextensions_lacks_are_refused_or_dropped() {
    let e = structural::rewrite(
        json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}}),
        "spec",
    )
    .unwrap_err();
    assert!(e.to_string().contains("`patternProperties` is not a keyword"), "{e}");
    let s = structural::rewrite(
        json!({"type": "string", "examples": ["a"], "readOnly": true, "$comment": "x", "format": "no-such"}),
        "spec",
    )
    .unwrap();
    assert_eq!(s, json!({"type": "string"}));
    let s = structural::rewrite(json!({"type": "integer", "exclusiveMinimum": 0}), "spec").unwrap();
    assert_eq!(s, json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true}));
    let e = structural::rewrite(json!({"type": ["string", "integer"]}), "spec").unwrap_err();
    assert!(e.to_string().contains("several types"), "{e}");
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct FleetSpec {
    replicas: u32,
    #[serde(default)]
    template: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FleetStatus {
    replicas: u32,
    selector: Option<String>,
}

crate::custom_resource! {
    #[derive(Clone, Debug, PartialEq)]
    struct Fleet { spec: FleetSpec, status: FleetStatus }
    group: "demo.example.com", version: "v1", namespaced: true,
    crd: CrdOptions::default()
        .short_name("fl")
        .category("demo")
        .printer_column("Replicas", "integer", ".spec.replicas")
        .scale(".spec.replicas", ".status.replicas", Some(".status.selector"))
        .validation(ValidationRule::new("self.metadata.name.size() <= 40").message("name too long"))
        .selectable_field(".spec.replicas")
        .label("app.kubernetes.io/part-of", "demo"),
}

crate::custom_resource! {
    struct Note { spec: FleetSpec }
    group: "demo.example.com", version: "v1beta1", namespaced: false, plural: "notes",
    crd: CrdOptions::default().deprecated(""),
}

#[test]
fn the_definition_carries_names_scope_subresources_and_columns() {
    let crd = Fleet::crd().unwrap();
    assert_eq!(Fleet::crd_name(), "fleets.demo.example.com");
    let json = serde_json::to_value(&crd).unwrap();
    assert_eq!(json["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(json["kind"], "CustomResourceDefinition");
    assert_eq!(json["metadata"]["labels"]["app.kubernetes.io/part-of"], "demo");
    assert_eq!(
        json["spec"]["names"],
        json!({"plural": "fleets", "singular": "fleet", "kind": "Fleet", "shortNames": ["fl"], "categories": ["demo"]})
    );
    assert_eq!(json["spec"]["scope"], "Namespaced");
    let v = &json["spec"]["versions"][0];
    assert_eq!(
        (v["name"].as_str(), v["served"].as_bool(), v["storage"].as_bool()),
        (Some("v1"), Some(true), Some(true))
    );
    assert_eq!(
        v["subresources"],
        json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                                       "labelSelectorPath": ".status.selector"}})
    );
    assert_eq!(
        v["additionalPrinterColumns"],
        json!([{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}])
    );
    assert_eq!(v["selectableFields"], json!([{"jsonPath": ".spec.replicas"}]));
    let root = &v["schema"]["openAPIV3Schema"];
    assert_structural(root, "");
    assert_eq!(root["required"], json!(["spec"]));
    assert_eq!(root["x-kubernetes-validations"][0]["message"], "name too long");
    assert_eq!(root["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(
        root["properties"]["spec"]["properties"]["template"]["default"],
        json!({})
    );
    assert_eq!(root["properties"]["status"]["properties"]["selector"]["nullable"], true);
    // Read back as it was written.
    assert_eq!(serde_json::from_value::<CustomResourceDefinition>(json).unwrap(), crd);

    let note = Note::crd().unwrap();
    assert_eq!(note.spec.scope, "Cluster");
    let v = &note.spec.versions[0];
    assert_eq!((v.deprecated, v.deprecation_warning.as_deref()), (Some(true), None));
    assert!(v.subresources.is_none(), "no status, no scale: no subresources");
    assert!(
        v.schema.as_ref().unwrap().open_api_v3_schema["properties"]
            .get("status")
            .is_none()
    );
}

#[test]
fn versions_merge_into_one_definition() {
    mod v2 {
        use super::*;
        crate::custom_resource! {
            pub(super) struct Fleet { spec: FleetSpec, status: FleetStatus }
            group: "demo.example.com", version: "v2", namespaced: true,
        }
    }
    let merged = merge_versions(vec![Fleet::crd().unwrap(), v2::Fleet::crd().unwrap()], "v2").unwrap();
    let versions: Vec<_> = merged
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.storage))
        .collect();
    assert_eq!(versions, [("v1", false), ("v2", true)]);
    let e = merge_versions(vec![Fleet::crd().unwrap(), Fleet::crd().unwrap()], "v1").unwrap_err();
    assert_eq!(e.to_string(), "cannot merge the definitions: version v1 comes twice");
    let e = merge_versions(vec![Fleet::crd().unwrap(), Note::crd().unwrap()], "v1").unwrap_err();
    assert!(e.to_string().contains("are not one resource"), "{e}");
    let e = merge_versions(vec![Fleet::crd().unwrap()], "v3").unwrap_err();
    assert!(e.to_string().contains("storage version v3"), "{e}");
}
