use serde_json::{Value, json};

use super::*;
use crate::ResourceSpec;

/// The schema of apimachinery's test type `MergeItem` (written here from its field tags), nested `depth` deep.
fn merge_item(depth: usize) -> Value {
    let item = if depth == 0 {
        json!({"type": "object"})
    } else {
        merge_item(depth - 1)
    };
    let merging = |item: &Value, strategy: &str| {
        json!({"type": "array", "items": item, "x-kubernetes-patch-strategy": strategy,
               "x-kubernetes-patch-merge-key": "name"})
    };
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let ints = json!({"type": "array", "items": {"type": "integer"}});
    let mut merge_int = ints.clone();
    merge_int["x-kubernetes-patch-strategy"] = json!("merge");
    let mut pointer = item.clone();
    pointer["x-kubernetes-patch-strategy"] = json!("merge");
    pointer["x-kubernetes-patch-merge-key"] = json!("name");
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "value": {"type": "string"}, "other": {"type": "string"},
        "mergingList": merging(&item, "merge"),
        "nonMergingList": {"type": "array", "items": item},
        "mergingIntList": merge_int,
        "nonMergingIntList": ints,
        "mergeItemPtr": pointer,
        "simpleMap": strings,
        "replacingItem": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                          "x-kubernetes-patch-strategy": "replace"},
        "retainKeysMap": {"type": "object", "x-kubernetes-patch-strategy": "retainKeys", "properties": {
            "name": {"type": "string"}, "value": {"type": "string"}, "other": {"type": "string"},
            "simpleMap": strings, "mergingIntList": merge_int, "mergingList": merging(&item, "merge"),
            "nonMergingList": {"type": "array", "items": item},
        }},
        "retainKeysMergingList": merging(&item, "merge,retainKeys"),
    }})
}

/// Sorts every merging list (by merge key, or primitives by value) so that two documents compare regardless of
/// the order of those lists.
fn sorted(v: Value, schema: Option<&Value>) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let meta = field(schema, &k);
                    let v = match v {
                        Value::Array(items) => {
                            let mut items: Vec<Value> = items.into_iter().map(|i| sorted(i, meta.items())).collect();
                            if meta.strategies.contains(&"merge") {
                                let key = meta.merge_key;
                                items.sort_by_key(|i| if key.is_empty() { key_of(i) } else { key_of(&i[key]) });
                            }
                            Value::Array(items)
                        }
                        other => sorted(other, meta.schema),
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

#[test]
fn apimachinery_cases_apply_as_upstream() {
    let schema = merge_item(6);
    let document: Value = serde_json::from_str(include_str!("apimachinery_cases.json")).unwrap();
    let cases = document["cases"].as_array().unwrap();
    assert!(cases.len() > 250, "{}", cases.len());
    for case in cases {
        let from = case["from"].as_str().unwrap();
        let got = apply(case["original"].clone(), case["patch"].clone(), &schema);
        if let Some(error) = case.get("error").and_then(Value::as_str) {
            let e = got.expect_err(from);
            assert!(e.message().contains(error), "{from}: {e}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{from}: {e}\npatch: {}", case["patch"]));
        let want = case["result"].clone();
        if case["unordered"] == true {
            assert_eq!(sorted(got, Some(&schema)), sorted(want, Some(&schema)), "{from}");
        } else {
            assert_eq!(got, want, "{from}\npatch: {}", case["patch"]);
        }
    }
}

fn deployment_schema() -> Value {
    let spec = ResourceSpec::defaults()
        .into_iter()
        .find(|s| s.api_resource().kind == "Deployment")
        .unwrap();
    spec.object_schema().unwrap().clone()
}

fn pod_schema() -> Value {
    let spec = ResourceSpec::defaults()
        .into_iter()
        .find(|s| s.api_resource().kind == "Pod")
        .unwrap();
    spec.object_schema().unwrap().clone()
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}},
    })
}

fn two_containers() -> Value {
    json!([
        {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        {"name": "b", "image": "redis:7", "ports": [{"containerPort": 6379, "protocol": "TCP"}]},
    ])
}

/// No key of the document, at any depth, is a directive.
fn assert_no_directive(v: &Value) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                assert!(!is_directive_key(k), "directive {k} stored");
                assert_no_directive(v);
            }
        }
        Value::Array(a) => a.iter().for_each(assert_no_directive),
        _ => {}
    }
}

#[test]
fn kubectl_apply_changing_one_image_keeps_the_other_container_and_the_ports() {
    // What kubectl's client-side apply sends when only container a's image changed (issue 16's first corruption).
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"image": "nginx:2", "name": "a"}],
    }}}});
    let got = apply(deployment(two_containers()), patch, &deployment_schema()).unwrap();
    let mut want = two_containers();
    want[0]["image"] = json!("nginx:2");
    assert_eq!(got, deployment(want));
    assert_no_directive(&got);
}

#[test]
fn kubectl_apply_removing_a_container_removes_just_it() {
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "a"}],
        "containers": [{"$patch": "delete", "name": "b"}],
    }}}});
    let got = apply(deployment(two_containers()), patch, &deployment_schema()).unwrap();
    assert_eq!(got, deployment(json!([two_containers()[0].clone()])));
    assert_no_directive(&got);
}

#[test]
fn kubectl_apply_adding_and_reordering_containers_follows_set_element_order() {
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
        "containers": [{"name": "c", "image": "busybox"}],
    }}}});
    let got = apply(deployment(two_containers()), patch, &deployment_schema()).unwrap();
    let containers = &got["spec"]["template"]["spec"]["containers"];
    let names: Vec<&str> = containers
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "b", "a"]);
    assert_eq!(containers[2]["ports"][0]["containerPort"], 80);
    assert_no_directive(&got);
}

#[test]
fn set_element_order_of_a_list_the_original_lacks_is_not_stored() {
    // A new list, and a directive for a list that exists nowhere: neither leaves a trace.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/initContainers": [{"name": "init"}],
        "initContainers": [{"name": "init", "image": "busybox", "$setElementOrder/env": [{"name": "X"}],
                            "env": [{"name": "X", "value": "1"}, {"$patch": "delete", "name": "gone"}]}],
        "$setElementOrder/volumes": [{"name": "v"}],
    }}}});
    let got = apply(deployment(two_containers()), patch, &deployment_schema()).unwrap();
    assert_no_directive(&got);
    let spec = &got["spec"]["template"]["spec"];
    assert_eq!(
        spec["initContainers"],
        json!([{"name": "init", "image": "busybox", "env": [{"name": "X", "value": "1"}]}])
    );
    assert!(spec.get("volumes").is_none());
}

#[test]
fn built_in_merge_keys_apply() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["a/one", "a/two"],
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}]},
        "spec": {
            "containers": [{
                "name": "app", "image": "app:1",
                "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443, "name": "https"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "tmp", "mountPath": "/tmp"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "args": ["--x", "--y"],
            }],
            "imagePullSecrets": [{"name": "reg"}],
            "tolerations": [{"key": "k1", "operator": "Exists"}, {"key": "k2", "operator": "Exists"}],
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
        },
    });
    let patch = json!({
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["a/one"],
            "finalizers": ["a/three"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
                                 "controller": true}],
        },
        "spec": {
            "containers": [{
                "name": "app",
                "ports": [{"containerPort": 443, "name": "tls"}],
                "volumeMounts": [{"mountPath": "/tmp", "readOnly": true}],
                "env": [{"name": "B", "value": "3"}, {"name": "A", "$patch": "delete"}],
                "args": ["--z"],
            }],
            "imagePullSecrets": [{"name": "other"}],
            "tolerations": [{"key": "k3", "operator": "Exists"}],
            "volumes": [{"name": "data", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}],
        },
    });
    let got = apply(pod, patch, &pod_schema()).unwrap();
    assert_eq!(got["metadata"]["finalizers"], json!(["a/three", "a/two"]));
    assert_eq!(got["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(got["metadata"]["ownerReferences"].as_array().unwrap().len(), 1);
    let c = &got["spec"]["containers"][0];
    assert_eq!(c["image"], "app:1");
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "name": "http"}, {"containerPort": 443, "name": "tls"}])
    );
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "data", "mountPath": "/data"}, {"name": "tmp", "mountPath": "/tmp", "readOnly": true}])
    );
    assert_eq!(c["env"], json!([{"name": "B", "value": "3"}]));
    // Lists without a strategy are replaced.
    assert_eq!(c["args"], json!(["--z"]));
    assert_eq!(got["spec"]["tolerations"], json!([{"key": "k3", "operator": "Exists"}]));
    // A new merge-list item comes before the original's items the patch does not name.
    assert_eq!(
        got["spec"]["imagePullSecrets"],
        json!([{"name": "other"}, {"name": "reg"}])
    );
    // retainKeys: the volume's source changes from emptyDir to configMap.
    assert_eq!(
        got["spec"]["volumes"],
        json!([{"name": "data", "configMap": {"name": "cm"}}, {"name": "tmp", "emptyDir": {}}])
    );
}

#[test]
fn deployment_strategy_retain_keys_and_map_directives() {
    let mut original = deployment(two_containers());
    original["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}});
    // kubectl apply switching to Recreate: retainKeys drops rollingUpdate.
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let got = apply(original.clone(), patch, &deployment_schema()).unwrap();
    assert_eq!(got["spec"]["strategy"], json!({"type": "Recreate"}));
    // A patch key outside the retained ones is malformed.
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}});
    let e = apply(original.clone(), patch, &deployment_schema()).unwrap_err();
    assert_eq!(
        e,
        StrategicMergeError::BadRequest("invalid patch format of retainKeys".into())
    );
    // $patch: replace on a map replaces it; $patch: delete empties it; null removes a key.
    let patch = json!({"metadata": {"labels": {"$patch": "replace", "tier": "front"}},
                       "spec": {"selector": {"$patch": "delete"}, "replicas": null}});
    let got = apply(original, patch, &deployment_schema()).unwrap();
    assert_eq!(got["metadata"]["labels"], json!({"tier": "front"}));
    assert_eq!(got["spec"]["selector"], json!({}));
    assert!(got["spec"].get("replicas").is_none());
    assert_no_directive(&got);
}

#[test]
fn malformed_directives_answer_as_kube_apiserver() {
    let schema = deployment_schema();
    let original = deployment(two_containers());
    let at_pod_spec = |spec: Value| json!({"spec": {"template": {"spec": spec}}});
    let cases = [
        (
            json!({"metadata": {"$retainKeys": "name"}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            at_pod_spec(json!({"$setElementOrderX": []})),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveList": ["x"]}}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            json!({"metadata": {"finalizers": [["a"]]}}),
            422,
            "lists of lists are not supported",
        ),
        (
            at_pod_spec(json!({"containers": [{"image": "x"}]})),
            500,
            "map: map[image:x] does not contain declared merge key: name",
        ),
        (
            at_pod_spec(json!({"containers": [{"name": "a", "$patch": "frobnicate"}]})),
            500,
            "unknown patch type: frobnicate in map: map[$patch:frobnicate name:a]",
        ),
        (
            json!({"spec": {"selector": {"$patch": 7}}}),
            500,
            "unknown patch type: %!s(int64=7) in map: map[$patch:7]",
        ),
        (
            at_pod_spec(json!({"containers": [{"$patch": "merge"}]})),
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            at_pod_spec(json!({"$setElementOrder/containers": [{"name": "b"}], "containers": [{"name": "a"}]})),
            500,
            "doesn't match $setElementOrder list",
        ),
        (
            at_pod_spec(json!({"$setElementOrder/containers": "a"})),
            500,
            "expected a []interface {}, but received a string",
        ),
        (
            json!({"metadata": {"finalizers": ["x", 1]}}),
            500,
            "list element types are not identical: [[] [x 1]]",
        ),
    ];
    for (patch, code, message) in cases {
        let mut original = original.clone();
        original["metadata"]["finalizers"] = json!([]);
        let e = apply(original, patch.clone(), &schema).expect_err(&patch.to_string());
        assert_eq!(e.code(), code, "{patch}: {e}");
        assert!(e.message().contains(message), "{patch}: {e}");
    }
}

#[test]
fn whole_patch_shapes() {
    let schema = deployment_schema();
    let original = deployment(two_containers());
    assert_eq!(apply(original.clone(), json!({}), &schema).unwrap(), original);
    assert_eq!(apply(original.clone(), Value::Null, &schema).unwrap(), original);
    for (patch, what) in [
        (json!([]), "array"),
        (json!("x"), "string"),
        (json!(1), "number"),
        (json!(true), "bool"),
    ] {
        assert_eq!(
            apply(original.clone(), patch, &schema).unwrap_err(),
            StrategicMergeError::BadRequest(format!(
                "json: cannot unmarshal {what} into Go value of type map[string]interface {{}}"
            ))
        );
    }
    assert!(apply(json!([]), json!({}), &schema).is_err());
}

#[test]
fn unknown_fields_merge_as_a_merge_patch_would() {
    // The server keeps fields its schema does not know (kube-apiserver would have dropped them): maps merge,
    // lists are replaced.
    let mut original = deployment(two_containers());
    original["spec"]["extra"] = json!({"a": 1, "list": [1, 2], "keep": true});
    let patch = json!({"spec": {"extra": {"a": null, "b": 2, "list": [3]}}});
    let got = apply(original, patch, &deployment_schema()).unwrap();
    assert_eq!(got["spec"]["extra"], json!({"b": 2, "list": [3], "keep": true}));
}

#[test]
fn strategic_information_is_that_of_the_built_in_kinds() {
    for spec in ResourceSpec::defaults() {
        assert!(spec.strategic_merge_schema().is_some(), "{}", spec.api_resource().kind);
    }
    let crd_like = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    }}}});
    assert!(!has_strategy(&crd_like));
}

#[test]
fn large_lists_merge_without_comparing_every_pair() {
    // 20,000 finalizers and 20,000 containers: each side is looked up through a hash map, not scanned per item.
    let n = 20_000;
    let finalizers: Vec<Value> = (0..n).map(|i| json!(format!("f/{i}"))).collect();
    let containers: Vec<Value> = (0..n).map(|i| json!({"name": format!("c{i}"), "image": "x"})).collect();
    let mut original = deployment(Value::Array(containers.clone()));
    original["metadata"]["finalizers"] = Value::Array(finalizers.clone());
    let reversed: Vec<Value> = containers.iter().rev().map(|c| json!({"name": c["name"]})).collect();
    let patch = json!({
        "metadata": {"finalizers": ["f/new"], "$deleteFromPrimitiveList/finalizers": ["f/0"]},
        "spec": {"template": {"spec": {"$setElementOrder/containers": reversed,
                                       "containers": [{"name": "c1", "image": "y"}]}}},
    });
    let got = apply(original, patch, &deployment_schema()).unwrap();
    let f = got["metadata"]["finalizers"].as_array().unwrap();
    assert_eq!((f.len(), &f[0], &f[1]), (n, &json!("f/new"), &json!("f/1")));
    let c = got["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(
        (c.len(), &c[0]["name"], &c[n - 2]),
        (n, &json!(format!("c{}", n - 1)), &json!({"name": "c1", "image": "y"}))
    );
}
