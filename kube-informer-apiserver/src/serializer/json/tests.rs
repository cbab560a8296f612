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

/// k8s.io/api's (and apiextensions-apiserver's, apimachinery's) round-trip fixtures (v0.34.9 `testdata/HEAD`),
/// every field set.
const FIXTURES: [(&str, &str); 39] = [
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
];

/// k8s.io/api's round-trip fixtures, every field set: parsed (keys sorted), then written back, are Go's bytes.
#[test]
fn built_in_kinds_are_written_in_go_field_order() {
    for (name, text) in FIXTURES {
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

/// Go's `encodeState.string` (HTML escaping on) one character at a time, as the Go source reads: the reference the
/// encoder's run-at-a-time escaper is held to.
fn go_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Every byte that needs an escape (and the near misses: DEL, `/`, `'`, U+2027, U+202A, other `E2` sequences), at the
/// start, the end, the middle and next to each other, in runs of plain bytes of every length up to past 64 (where
/// a run-at-a-time scan changes gear): the encoder writes what Go's character loop writes, as key and as value.
#[test]
fn the_escaper_writes_what_gos_character_loop_writes() {
    let specials: Vec<String> = (0u32..0x20)
        .chain([0x22, 0x5c, 0x3c, 0x3e, 0x26, 0x7f, 0x2f, 0x27, 0xe9])
        .chain([0x2028, 0x2029, 0x2027, 0x202a, 0x20ac, 0x2000, 0x1f600])
        .filter_map(char::from_u32)
        .map(String::from)
        .collect();
    let mut checked = 0;
    for special in &specials {
        for run in [0usize, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130] {
            let plain = "abcdefghijklmnopqrstuvwxyz0123456789".repeat(4)[..run.min(144)].to_owned()
                + &"x".repeat(run.saturating_sub(144));
            for s in [
                format!("{special}{plain}"),
                format!("{plain}{special}"),
                format!("{plain}{special}{plain}"),
                format!("{special}{special}{plain}{special}"),
                plain.clone(),
            ] {
                let got = String::from_utf8(to_vec_unstructured(&json!(s))).unwrap();
                assert_eq!(got, go_string(&s), "{s:?}");
                let keyed = String::from_utf8(to_vec_unstructured(&json!({ s.clone(): 1 }))).unwrap();
                assert_eq!(keyed, format!("{{{}:1}}", go_string(&s)), "{s:?}");
                checked += 1;
            }
        }
    }
    // Every pair of specials once, and a string of all of them.
    for a in &specials {
        for b in &specials {
            let s = format!("{a}{b}");
            assert_eq!(
                String::from_utf8(to_vec_unstructured(&json!(s))).unwrap(),
                go_string(&s),
                "{s:?}"
            );
        }
    }
    let all = specials.concat();
    assert_eq!(
        String::from_utf8(to_vec_unstructured(&json!(all))).unwrap(),
        go_string(&all)
    );
    assert!(checked > 3000);
}

/// The word-at-a-time test agrees with the table for every byte, alone and among plain bytes at each position.
#[test]
fn a_word_is_plain_exactly_when_each_of_its_bytes_is() {
    for c in 0..=255u8 {
        let plain = ESCAPE[usize::from(c)] == 0;
        assert_eq!(plain_word(u64::from_le_bytes([c; 8])), plain, "{c:#04x}");
        for at in 0..8 {
            for filler in [
                b' ', b'!', b'#', b'$', b'%', b'\'', b'=', b'?', b'[', b']', b'a', b'~', 0x7f, 0x80, 0xa8, 0xe0, 0xe1,
                0xe3, 0xe6, 0xea, 0xff,
            ] {
                let mut word = [filler; 8];
                word[at] = c;
                assert_eq!(
                    plain_word(u64::from_le_bytes(word)),
                    plain,
                    "{c:#04x} at {at} among {filler:#04x}"
                );
            }
        }
    }
}

/// Values in a built-in kind's declared fields, map keys and undeclared keys go through the same escaper.
#[test]
fn strings_in_structs_maps_and_undeclared_keys_are_escaped() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a&b", "labels": {"<k>": "v\u{2028}"}, "x-<>": "\"q\""},
        "data": {"script": "if a < b && c > d {\n\treturn\n}"}});
    assert_eq!(
        String::from_utf8(to_vec(&cm)).unwrap(),
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a\u0026b","labels":{"\u003ck\u003e":"v\u2028"},"x-\u003c\u003e":"\"q\""},"data":{"script":"if a \u003c b \u0026\u0026 c \u003e d {\n\treturn\n}"}}"#
    );
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

/// A struct's keys in Go's order whatever their order in the input, with inlined structs' fields in their place
/// (`Probe` inlines `ProbeHandler`, `Volume` inlines `VolumeSource`) and undeclared keys after, sorted, wherever
/// they sort among the declared names (before the first, between two, after the last).
#[test]
fn present_keys_are_placed_by_the_struct_declaration_order() {
    let probe: Value = serde_json::from_str(
        r#"{"zzz": 1, "periodSeconds": 10, "initialDelaySeconds": 1, "httpGet": {"scheme": "HTTP", "port": 8080,
            "path": "/", "hostX": "undeclared"}, "aaa": 2, "failureThreshold": 3}"#,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(to_vec_as(&probe, "core.v1.Probe")).unwrap(),
        r#"{"httpGet":{"path":"/","port":8080,"scheme":"HTTP","hostX":"undeclared"},"initialDelaySeconds":1,"periodSeconds":10,"failureThreshold":3,"aaa":2,"zzz":1}"#
    );
    let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {
        "volumes": [{"configMap": {"name": "c"}, "name": "v"}],
        "containers": [{"A": 0, "stdin": true, "imageX": 1, "name": "c", "image": "i", "~": 2}]}});
    assert_eq!(
        String::from_utf8(to_vec(&pod)).unwrap(),
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"spec":{"volumes":[{"name":"v","configMap":{"name":"c"}}],"containers":[{"name":"c","image":"i","stdin":true,"A":0,"imageX":1,"~":2}]}}"#
    );
    // `kind` and `apiVersion` lead only where TypeMeta is inlined; elsewhere (an owner reference) they are fields
    // in their declared place, and in a struct that declares neither they are undeclared keys.
    let owner = json!({"uid": "u", "name": "n", "kind": "ReplicaSet", "apiVersion": "apps/v1"});
    assert_eq!(
        String::from_utf8(to_vec_as(&owner, "meta.v1.OwnerReference")).unwrap(),
        r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"n","uid":"u"}"#
    );
    assert_eq!(
        String::from_utf8(to_vec_as(
            &json!({"kind": "K", "resourceVersion": "1"}),
            "meta.v1.ListMeta"
        ))
        .unwrap(),
        r#"{"resourceVersion":"1","kind":"K"}"#
    );
}

/// The plain way to the same bytes (what the encoder did before it walked present keys): every declared field
/// looked up in turn, then the keys left, sorted. Only for [`the_walk_of_present_keys_writes_the_plain_walks_bytes`].
fn reference(out: &mut Vec<u8>, o: &Map<String, Value>, layout: &Layout, type_meta: bool) {
    let layouts = Layouts::get();
    let type_meta_keys: &[&str] = if type_meta { &["kind", "apiVersion"] } else { &[] };
    let declared = |k: &str| type_meta_keys.contains(&k) || layout.slots.iter().any(|s| s.name == k);
    let mut fields: Vec<(&str, &Value, Option<&Slot>)> = Vec::new();
    fields.extend(type_meta_keys.iter().filter_map(|&k| o.get(k).map(|v| (k, v, None))));
    for s in layout.slots.iter().filter(|s| !type_meta_keys.contains(&s.name)) {
        fields.extend(o.get(s.name).map(|v| (s.name, v, Some(s))));
    }
    fields.extend(
        o.iter()
            .filter(|(k, _)| !declared(k))
            .map(|(k, v)| (k.as_str(), v, None)),
    );
    out.push(b'{');
    for (i, (k, v, slot)) in fields.into_iter().enumerate() {
        key(out, k, i);
        let element = |out: &mut Vec<u8>, e: &Value, ty: Ty| match (ty, e) {
            (Ty::Struct(m), Value::Object(o)) => reference(out, o, &layouts.structs[m], layouts.kinds[m]),
            _ => any(out, e),
        };
        match (slot, v) {
            (Some(s), Value::Array(a)) if s.each => {
                out.push(b'[');
                for (j, e) in a.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    element(out, e, s.ty);
                }
                out.push(b']');
            }
            (Some(s), Value::Object(m)) if s.each => {
                out.push(b'{');
                for (j, (k, e)) in m.iter().enumerate() {
                    key(out, k, j);
                    element(out, e, s.ty);
                }
                out.push(b'}');
            }
            (Some(s), _) if !s.each => element(out, v, s.ty),
            _ => any(out, v),
        }
    }
    out.push(b'}');
}

/// Every object of `v` with some keys dropped and undeclared ones added (sorting before, among and after the
/// declared names), chosen by `seed`: sparse structs, keys Go's order puts far from their sorted place.
fn thin(v: &mut Value, seed: usize) {
    match v {
        Value::Object(o) => {
            let mut i = seed;
            o.retain(|k, _| {
                i += 1;
                k == "kind" || k == "apiVersion" || !(i + k.len()).is_multiple_of(3)
            });
            if seed.is_multiple_of(2) {
                for k in ["0undeclared", "mUndeclared", "~undeclared"] {
                    o.insert(k.to_owned(), json!(seed));
                }
            }
            for (j, x) in o.values_mut().enumerate() {
                thin(x, seed + j);
            }
        }
        Value::Array(a) => a.iter_mut().enumerate().for_each(|(j, x)| thin(x, seed + j)),
        _ => {}
    }
}

#[test]
fn the_walk_of_present_keys_writes_the_plain_walks_bytes() {
    let layouts = Layouts::get();
    let mut checked = 0;
    for original in golden_corpus().into_iter().chain(sparse_corpus()) {
        for seed in 0..6 {
            let mut v = original.clone();
            if seed > 0 {
                thin(&mut v, seed);
            }
            let Value::Object(o) = &v else { unreachable!() };
            let (Some(Value::String(a)), Some(Value::String(k))) = (o.get("apiVersion"), o.get("kind")) else {
                unreachable!()
            };
            let m = layouts
                .schema
                .kind(a, k)
                .or_else(|| meta_kind(a, k).and_then(|m| layouts.schema.message(m)));
            let mut plain = Vec::new();
            reference(&mut plain, o, &layouts.structs[m.unwrap()], true);
            assert!(
                to_vec(&v) == plain,
                "{k} (seed {seed}):\nwalk  {}\nplain {}",
                String::from_utf8_lossy(&to_vec(&v)),
                String::from_utf8_lossy(&plain)
            );
            checked += 1;
        }
    }
    assert_eq!(checked, (FIXTURES.len() + sparse_corpus().len()) * 6);
}

/// Objects as a server stores them day to day: few of each struct's declared fields set (the bench's ConfigMap
/// with its managedFields entry, a defaulted Pod, a Deployment).
fn sparse_corpus() -> Vec<Value> {
    let managed = |fields: Value| {
        json!([{"manager": "bench", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T10:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": fields}])
    };
    let data: Map<String, Value> = (0..16)
        .map(|k| (format!("key-{k:02}"), json!("x".repeat(100))))
        .collect();
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": data,
        "metadata": {"name": "cm-000001", "namespace": "ns-1", "uid": "6d1e0c52-6f5b-4bd4-9a5c-7e3a1c1f0001",
            "resourceVersion": "1001", "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"app": "bench", "shard": "1"},
            "managedFields": managed(json!({"f:data": {".": {}, "f:key-00": {}}, "f:metadata": {"f:labels": {}}}))}});
    let container = json!({"name": "app", "image": "registry.k8s.io/pause:3.10", "args": ["--port=8080"],
        "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
        "env": [{"name": "MODE", "value": "fast"}],
        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10,
            "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"});
    let pod_spec = json!({"containers": [container], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "serviceAccount": "default",
        "securityContext": {}, "schedulerName": "default-scheduler", "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}]});
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": pod_spec,
        "metadata": {"name": "web-7c9d8f-x2k4q", "generateName": "web-7c9d8f-", "namespace": "default",
            "uid": "6d1e0c52-6f5b-4bd4-9a5c-7e3a1c1f0002", "resourceVersion": "1002",
            "creationTimestamp": "2026-11-29T10:00:00Z", "labels": {"app": "web", "pod-template-hash": "7c9d8f"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7c9d8f",
                "uid": "6d1e0c52-6f5b-4bd4-9a5c-7e3a1c1f0003", "controller": true, "blockOwnerDeletion": true}]},
        "status": {"phase": "Pending", "qosClass": "Burstable"}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "6d1e0c52-6f5b-4bd4-9a5c-7e3a1c1f0004",
            "resourceVersion": "1003", "generation": 1, "creationTimestamp": "2026-11-29T10:00:00Z",
            "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec}},
        "status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
            "availableReplicas": 3, "conditions": [{"type": "Available", "status": "True",
                "lastUpdateTime": "2026-11-29T10:00:00Z", "lastTransitionTime": "2026-11-29T10:00:00Z",
                "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]}});
    vec![config_map, pod, deployment]
}

fn golden_corpus() -> Vec<Value> {
    FIXTURES
        .iter()
        .map(|(_, text)| serde_json::from_str(text).unwrap())
        .collect()
}

#[inline(never)]
fn encode_rounds(corpus: &[Value], rounds: usize) -> usize {
    let mut bytes = 0;
    for _ in 0..rounds {
        for v in corpus {
            bytes += std::hint::black_box(to_vec(std::hint::black_box(v))).len();
        }
    }
    bytes
}

#[inline(never)]
fn serde_rounds(corpus: &[Value], rounds: usize) -> usize {
    let mut bytes = 0;
    for _ in 0..rounds {
        for v in corpus {
            bytes += std::hint::black_box(serde_json::to_vec(std::hint::black_box(v)).unwrap_or_default()).len();
        }
    }
    bytes
}

// The four named entry points callgrind reports (inclusive) one by one.
#[inline(never)]
fn ours_sparse(c: &[Value], n: usize) -> usize {
    encode_rounds(c, n)
}
#[inline(never)]
fn ours_golden(c: &[Value], n: usize) -> usize {
    encode_rounds(c, n)
}
#[inline(never)]
fn serde_sparse(c: &[Value], n: usize) -> usize {
    serde_rounds(c, n)
}
#[inline(never)]
fn serde_golden(c: &[Value], n: usize) -> usize {
    serde_rounds(c, n)
}

/// The encoder's cost beside `serde_json::to_vec` on the same values: a measurement for comparing two builds, not
/// a check (ignored unless asked for). Wall time is printed; the figure that does not move with the machine's load
/// is callgrind's instruction count of the four `ours_*`/`serde_*` functions (inclusive):
///
/// ```text
/// cargo test --release -p kube-informer-apiserver --lib --no-run        # prints the test binary's path
/// ENCODE_ROUNDS=200 valgrind --tool=callgrind --callgrind-out-file=encode.out BINARY \
///     --ignored --exact serializer::json::tests::encode_corpus
/// callgrind_annotate --inclusive=yes encode.out | grep -E 'ours_|serde_'
/// ```
#[test]
#[ignore = "a measurement: run by hand (see its doc)"]
fn encode_corpus() {
    let rounds = std::env::var("ENCODE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2000);
    let (sparse, golden) = (sparse_corpus(), golden_corpus());
    for v in sparse.iter().chain(&golden) {
        // What is written reads back as the value it was written from.
        assert_eq!(serde_json::from_slice::<Value>(&to_vec(v)).unwrap(), *v);
    }
    for (what, corpus, ours, serde) in [
        (
            "sparse",
            &sparse,
            ours_sparse as fn(&[Value], usize) -> usize,
            serde_sparse as fn(&[Value], usize) -> usize,
        ),
        ("golden", &golden, ours_golden, serde_golden),
    ] {
        let t = std::time::Instant::now();
        let bytes = ours(corpus, rounds);
        let ours_t = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        serde(corpus, rounds);
        let serde_t = t.elapsed().as_secs_f64();
        let objects = (rounds * corpus.len()) as f64;
        println!(
            "{what}: {} objects, {:.0} bytes each: ours {:.2} µs/object, serde_json {:.2} µs/object",
            corpus.len(),
            bytes as f64 / objects,
            ours_t * 1e6 / objects,
            serde_t * 1e6 / objects
        );
    }
}
