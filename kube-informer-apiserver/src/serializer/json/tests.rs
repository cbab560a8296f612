use serde_json::json;

use super::*;

/// The fixture without its indentation (Go's `json.Compact`: whitespace outside strings dropped).
fn compact(text: &str) -> Vec<u8> {
    let (mut out, mut in_string, mut escaped) = (Vec::new(), false, false);
    for &b in text.as_bytes() {
        if in_string {
            in_string = escaped || b != b'"';
            escaped = !escaped && b == b'\\';
        } else if b.is_ascii_whitespace() {
            continue;
        } else {
            in_string = b == b'"';
        }
        out.push(b);
    }
    out
}

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../tests/fixtures/go-json/", $name, ".json")),
        )
    };
}

/// k8s.io/api's round-trip fixtures, every field set: parsed (keys sorted), then written back, are Go's bytes.
#[test]
fn built_in_kinds_are_written_in_go_field_order() {
    for (name, text) in [
        fixture!("core.v1.Pod"),
        fixture!("core.v1.ConfigMap"),
        fixture!("core.v1.Secret"),
        fixture!("core.v1.Service"),
        fixture!("core.v1.Node"),
        fixture!("core.v1.Event"),
        fixture!("core.v1.Status"),
        fixture!("apps.v1.Deployment"),
        fixture!("apps.v1.StatefulSet"),
        fixture!("batch.v1.Job"),
        fixture!("batch.v1.CronJob"),
        fixture!("coordination.k8s.io.v1.Lease"),
        fixture!("rbac.authorization.k8s.io.v1.ClusterRole"),
        fixture!("networking.k8s.io.v1.Ingress"),
        fixture!("autoscaling.v2.HorizontalPodAutoscaler"),
        fixture!("policy.v1.PodDisruptionBudget"),
        fixture!("admissionregistration.k8s.io.v1.MutatingWebhookConfiguration"),
        fixture!("admissionregistration.k8s.io.v1.ValidatingAdmissionPolicy"),
        fixture!("admissionregistration.k8s.io.v1.ValidatingAdmissionPolicyBinding"),
        fixture!("admissionregistration.k8s.io.v1.ValidatingWebhookConfiguration"),
        fixture!("apidiscovery.k8s.io.v2.APIGroupDiscovery"),
        fixture!("apiextensions.k8s.io.v1.CustomResourceDefinition"),
        fixture!("autoscaling.v1.HorizontalPodAutoscaler"),
        fixture!("autoscaling.v1.Scale"),
        fixture!("discovery.k8s.io.v1.EndpointSlice"),
        fixture!("events.k8s.io.v1.Event"),
        fixture!("flowcontrol.apiserver.k8s.io.v1.FlowSchema"),
        fixture!("flowcontrol.apiserver.k8s.io.v1.PriorityLevelConfiguration"),
        fixture!("node.k8s.io.v1.RuntimeClass"),
        fixture!("resource.k8s.io.v1.DeviceClass"),
        fixture!("resource.k8s.io.v1.ResourceClaim"),
        fixture!("resource.k8s.io.v1.ResourceClaimTemplate"),
        fixture!("resource.k8s.io.v1.ResourceSlice"),
        fixture!("storage.k8s.io.v1.CSIDriver"),
        fixture!("storage.k8s.io.v1.CSINode"),
        fixture!("storage.k8s.io.v1.CSIStorageCapacity"),
        fixture!("storage.k8s.io.v1.StorageClass"),
        fixture!("storage.k8s.io.v1.VolumeAttachment"),
        fixture!("storage.k8s.io.v1.VolumeAttributesClass"),
    ] {
        let value: Value = serde_json::from_str(text).unwrap();
        let ours = to_vec(&value);
        let go = compact(text);
        assert!(
            ours == go,
            "{name}:\nours {}\ngo   {}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&go)
        );
    }
}

#[test]
fn pod_spec_follows_declaration_order_not_protobuf_numbers() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "initContainers": [{"image": "j", "name": "i"}],
                 "volumes": []}, "status": {}});
    assert_eq!(
        String::from_utf8(to_vec(&pod)).unwrap(),
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":{"volumes":[],"initContainers":[{"name":"i","image":"j"}],"containers":[{"name":"c","image":"i"}]},"status":{}}"#
    );
}

#[test]
fn lists_have_type_meta_then_list_meta_then_items() {
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "1", "a": "2"}, "metadata": {"name": "x"}}],
        "metadata": {"resourceVersion": "7", "continue": "c", "remainingItemCount": 3}});
    assert_eq!(
        String::from_utf8(to_vec(&list)).unwrap(),
        r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c","remainingItemCount":3},"items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"},"data":{"a":"2","b":"1"}}]}"#
    );
    let meta =
        json!({"remainingItemCount": 1, "resourceVersion": "9", "continue": "t", "shardInfo": {"selector": "s"}});
    assert_eq!(
        String::from_utf8(to_vec_as(&meta, "meta.v1.ListMeta")).unwrap(),
        r#"{"resourceVersion":"9","continue":"t","remainingItemCount":1,"shardInfo":{"selector":"s"}}"#
    );
}

#[test]
fn custom_resources_and_unknown_fields_have_sorted_keys() {
    let cr = json!({"kind": "Foo", "apiVersion": "example.com/v1", "metadata": {"uid": "u", "name": "n"},
        "spec": {"z": 1, "a": {"y": true, "b": null}}});
    assert_eq!(
        String::from_utf8(to_vec_unstructured(&cr)).unwrap(),
        r#"{"apiVersion":"example.com/v1","kind":"Foo","metadata":{"name":"n","uid":"u"},"spec":{"a":{"b":null,"y":true},"z":1}}"#
    );
    // A field the Go struct does not declare comes after the declared ones, sorted.
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "zeta": 1, "alpha": 2, "data": {}, "metadata": {}});
    assert_eq!(
        String::from_utf8(to_vec(&cm)).unwrap(),
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{},"data":{},"alpha":2,"zeta":1}"#
    );
    // A built-in kind the table does not describe (a beta version the server does not serve): TypeMeta, ObjectMeta
    // in its order, then the rest sorted.
    let sc = json!({"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1beta1", "provisioner": "p",
        "metadata": {"uid": "u", "name": "n"}, "allowVolumeExpansion": true});
    assert_eq!(
        String::from_utf8(to_vec(&sc)).unwrap(),
        r#"{"kind":"StorageClass","apiVersion":"storage.k8s.io/v1beta1","metadata":{"name":"n","uid":"u"},"allowVolumeExpansion":true,"provisioner":"p"}"#
    );
}

/// Go's `encodeState.string` with HTML escaping (`json.Marshal`, `json.Encoder` by default).
#[test]
fn strings_are_escaped_as_go_escapes_them() {
    let cases = [
        ("a<b>&c", r#""a\u003cb\u003e\u0026c""#),
        ("q\"b\\s/", r#""q\"b\\s/""#),
        ("\n\r\t\u{8}\u{c}", r#""\n\r\t\b\f""#),
        ("\u{0}\u{1f}\u{7f}", "\"\\u0000\\u001f\u{7f}\""),
        ("line\u{2028}para\u{2029}end", r#""line\u2028para\u2029end""#),
        ("é€😀\u{2027}\u{202a}", "\"é€😀\u{2027}\u{202a}\""),
    ];
    for (s, go) in cases {
        assert_eq!(String::from_utf8(to_vec_unstructured(&json!(s))).unwrap(), go, "{s:?}");
    }
    let keyed = json!({"<k>": "v"});
    assert_eq!(to_vec_unstructured(&keyed), br#"{"\u003ck\u003e":"v"}"#);
}

/// Go's `floatEncoder`: shortest digits, `%f` from 1e-6 to 1e21, `%e` with a cleaned exponent outside.
#[test]
fn numbers_are_written_as_go_writes_them() {
    let cases = [
        (json!(1), "1"),
        (json!(-7), "-7"),
        (json!(u64::MAX), "18446744073709551615"),
        (json!(i64::MIN), "-9223372036854775808"),
        (json!(1.0), "1"),
        (json!(1.5), "1.5"),
        (json!(-0.25), "-0.25"),
        (json!(0.000001), "0.000001"),
        (json!(0.0000001), "1e-7"),
        (json!(1.5e-7), "1.5e-7"),
        (json!(1.5e-10), "1.5e-10"),
        (json!(1e20), "100000000000000000000"),
        (json!(1e21), "1e+21"),
        (json!(-1.25e300), "-1.25e+300"),
        (json!(0.1), "0.1"),
        (json!(123456789.125), "123456789.125"),
    ];
    for (v, go) in cases {
        assert_eq!(String::from_utf8(to_vec_unstructured(&v)).unwrap(), go, "{v}");
    }
}

#[test]
fn status_bodies_leave_out_empty_fields_as_go_does() {
    let mut st = Status::failure(404, "NotFound", "configmaps \"x\" not found");
    st.details = Some(kube_informer::object::StatusDetails {
        name: "x".into(),
        kind: "configmaps".into(),
        ..Default::default()
    });
    assert_eq!(
        String::from_utf8(status_to_vec(&st)).unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
    );
    assert_eq!(
        String::from_utf8(status_to_vec(&Status::success())).unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":200}"#
    );
}
