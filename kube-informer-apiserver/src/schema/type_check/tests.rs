//! Type errors as kube-apiserver's decoders word them, for the kinds the issue named and the formats Go's types read
//! themselves.

use serde_json::json;

use super::*;

fn json_error(api_version: &str, kind: &str, obj: Value) -> String {
    check(api_version, kind, &obj, Decoder::Json, None).unwrap_err()
}

fn converter_error(api_version: &str, kind: &str, obj: Value) -> String {
    check(api_version, kind, &obj, Decoder::Unstructured, None).unwrap_err()
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec})
}

fn service_port(port: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [port]}})
}

#[test]
fn the_json_decoder_names_the_struct_the_field_path_and_the_go_type() {
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "v1",
            "ConfigMap",
            json!({"data": {"k": {"a": "b"}}}),
            "json: cannot unmarshal object into Go struct field ConfigMap.data of type string",
        ),
        (
            "v1",
            "ConfigMap",
            json!({"data": "x"}),
            "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string",
        ),
        (
            "v1",
            "ConfigMap",
            json!({"immutable": "yes"}),
            "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool",
        ),
        (
            "v1",
            "ConfigMap",
            json!({"metadata": {"labels": {"a": 1}}}),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": "eighty"})),
            "json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32",
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": 80, "name": 5})),
            "json: cannot unmarshal number into Go struct field ServicePort.spec.ports.name of type string",
        ),
        (
            "apps/v1",
            "Deployment",
            deployment(json!({"replicas": 1.5})),
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            "apps/v1",
            "Deployment",
            deployment(json!({"replicas": 3_000_000_000u64})),
            "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            "apps/v1",
            "Deployment",
            json!({"spec": "x"}),
            "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec",
        ),
        (
            "apps/v1",
            "Deployment",
            deployment(json!({"template": {"spec": {"containers": {}}}})),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
        (
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "resources": {"limits": "lots"}}]}}),
            "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList",
        ),
        (
            "v1",
            "Secret",
            json!({"data": {"k": 5}}),
            "json: cannot unmarshal number into Go struct field Secret.data of type []uint8",
        ),
    ];
    for (api_version, kind, obj, want) in cases {
        assert_eq!(json_error(api_version, kind, obj.clone()), want, "{obj}");
    }
}

#[test]
fn formats_go_types_read_themselves_have_their_own_words() {
    let quantity = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "v1",
            "Service",
            service_port(json!({"port": 80, "targetPort": {}})),
            "json: cannot unmarshal object into Go struct field ServicePort.spec.ports.targetPort of type int32",
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": 80, "targetPort": 1.5})),
            "json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.targetPort of type int32",
        ),
        (
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}}),
            quantity,
        ),
        (
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": true}}}]}}),
            quantity,
        ),
        (
            "v1",
            "Pod",
            json!({"spec": {"overhead": {"cpu": "1..5"}}}),
            "unable to parse numeric part of quantity",
        ),
        (
            "v1",
            "ConfigMap",
            json!({"metadata": {"creationTimestamp": "yesterday"}}),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#,
        ),
        (
            "v1",
            "ConfigMap",
            json!({"metadata": {"creationTimestamp": 5}}),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string",
        ),
        (
            "events.k8s.io/v1",
            "Event",
            json!({"eventTime": "2024-01-01T00:00:00Z"}),
            r#"parsing time "2024-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#,
        ),
        (
            "v1",
            "Secret",
            json!({"data": {"k": "not base64!"}}),
            "illegal base64 data at input byte 3",
        ),
    ];
    for (api_version, kind, obj, want) in cases {
        assert_eq!(json_error(api_version, kind, obj.clone()), want, "{obj}");
    }
}

#[test]
fn valid_objects_and_nulls_pass() {
    for (api_version, kind, obj) in [
        (
            "v1",
            "ConfigMap",
            json!({"data": {"a": "b"}, "binaryData": {"b": "aGk="}, "immutable": null, "unknown": {}}),
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": 80, "targetPort": "http", "nodePort": null})),
        ),
        ("v1", "Service", service_port(json!({"port": 80, "targetPort": 8080}))),
        (
            "apps/v1",
            "Deployment",
            deployment(json!({"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "i", "resources": {"limits": {"cpu": "500m", "memory": 1024}}}]}}})),
        ),
        (
            "v1",
            "ConfigMap",
            json!({"metadata": {"creationTimestamp": "2024-01-02T03:04:05Z", "managedFields": [
            {"manager": "m", "fieldsV1": {"f:data": {}}, "time": "2024-01-02T03:04:05Z"}]}}),
        ),
        (
            "events.k8s.io/v1",
            "Event",
            json!({"eventTime": "2024-01-01T00:00:00.000000Z", "series": null}),
        ),
        ("v1", "Secret", json!({"data": {"k": [104, 105]}})),
        ("example.com/v1", "Widget", json!({"spec": "anything"})),
    ] {
        assert_eq!(check(api_version, kind, &obj, Decoder::Json, None), Ok(()), "{obj}");
    }
}

#[test]
fn the_json_decoder_keeps_the_first_type_error_but_stops_at_a_self_decoding_one() {
    // Two plain type errors: the first in the document wins.
    let obj = service_port(json!({"name": 5, "port": "eighty"}));
    let order = positions(&[
        "spec".into(),
        "spec.ports".into(),
        "spec.ports[0]".into(),
        "spec.ports[0].port".into(),
        "spec.ports[0].name".into(),
    ]);
    assert_eq!(
        check("v1", "Service", &obj, Decoder::Json, Some(&order)).unwrap_err(),
        "json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32"
    );
    // A quantity's error stops the decoder, after a plain type error it kept: the quantity's wins.
    let obj = json!({"spec": {"containers": [{"name": 5, "resources": {"limits": {"cpu": "x"}}}]}});
    assert!(json_error("v1", "Pod", obj).starts_with("quantities must match"));
}

#[test]
fn the_unstructured_converter_has_its_own_words() {
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "v1",
            "ConfigMap",
            json!({"data": {"k": {"a": "b"}}}),
            "unrecognized type: string",
        ),
        (
            "v1",
            "ConfigMap",
            json!({"data": "x"}),
            "cannot restore map from string",
        ),
        (
            "v1",
            "ConfigMap",
            json!({"immutable": "yes"}),
            "unrecognized type: bool",
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": "eighty"})),
            "unrecognized type: int32",
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": 80, "name": 5})),
            "cannot convert int64 to string",
        ),
        (
            "apps/v1",
            "Deployment",
            deployment(json!({"replicas": 1.5})),
            "cannot convert float64 to int32",
        ),
        (
            "apps/v1",
            "Deployment",
            json!({"spec": "x"}),
            "cannot restore struct from: string",
        ),
        (
            "apps/v1",
            "Deployment",
            deployment(json!({"template": {"spec": {"containers": {}}}})),
            "cannot restore slice from map",
        ),
        (
            "v1",
            "Service",
            service_port(json!({"port": 80, "targetPort": {}})),
            "json: cannot unmarshal object into Go value of type int32",
        ),
        (
            "v1",
            "Secret",
            json!({"data": {"k": "%%%%"}}),
            "error decoding from json: illegal base64 data at input byte 0",
        ),
    ];
    for (api_version, kind, obj, want) in cases {
        assert_eq!(converter_error(api_version, kind, obj.clone()), want, "{obj}");
    }
}

#[test]
fn go_prints_a_patch_map_as_its_percent_v() {
    assert_eq!(
        go_value(&json!({"data": {"k": {"a": "b"}, "n": [1, 2.5, true, null]}, "b": "x y"})),
        "map[b:x y data:map[k:map[a:b] n:[1 2.5 true <nil>]]]"
    );
    assert_eq!(go_value(&json!(1e21)), "1e+21");
}

#[test]
fn nulls_go_cannot_hold_become_zero_values() {
    let mut cm = json!({"data": {"a": null, "b": "x"}, "binaryData": {"c": null}, "immutable": null});
    zero_nulls("v1", "ConfigMap", &mut cm);
    assert_eq!(
        cm,
        json!({"data": {"a": "", "b": "x"}, "binaryData": {"c": ""}, "immutable": null})
    );
    let mut pod = json!({"spec": {"containers": [null, {"name": "c", "args": [null, "x"],
        "resources": {"limits": {"cpu": null}}}]}});
    zero_nulls("v1", "Pod", &mut pod);
    assert_eq!(
        pod,
        json!({"spec": {"containers": [{}, {"name": "c", "args": ["", "x"], "resources": {"limits": {"cpu": "0"}}}]}})
    );
}
