//! Server-side apply and `managedFields` over HTTP against the embedded server, as kube-apiserver does them: what a
//! controller re-applying without a field gets (the field goes), conflicts between managers (kube-apiserver's 409
//! body) and `force`, updates taking ownership, keyed, set and atomic lists of a CRD and of a deployment, the status
//! and scale subresources, the checks of apply requests, resets, and the library's own client.

mod common;
#[path = "common/raw_http.rs"]
#[allow(unused_imports)] // its re-export of `eventually`
mod raw_http;

use kube_informer::client::Api;
use kube_informer::client::params::{Patch, PatchParams};
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::{ApiServer, DIRECT_FIELD_MANAGER};
use raw_http::*;
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";

fn apply(url: &str, query: &str, body: &Value) -> (u16, Value) {
    send("PATCH", &format!("{url}?{query}"), APPLY, &body.to_string())
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": data})
}

/// The entries without their times (each checked to be one, when present).
fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut e| {
            if let Some(t) = e.as_object_mut().unwrap().remove("time") {
                assert!(t.as_str().unwrap().ends_with('Z'), "{t}");
            }
            e
        })
        .collect()
}

fn fields_of(obj: &Value, manager: &str) -> Value {
    entries(obj)
        .into_iter()
        .find(|e| e["manager"] == manager)
        .map_or(Value::Null, |e| e["fieldsV1"].clone())
}

#[test]
fn a_controller_reapplying_without_a_field_removes_it() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/app", cms(&server, "default"));
    let (code, v) = apply(&url, "fieldManager=ctl", &config_map(json!({"a": "1", "b": "1"})));
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        entries(&v),
        [
            json!({"manager": "ctl", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}})
        ]
    );
    assert_eq!(get(&url).1, v, "stored as answered");
    // The controller's next configuration has no `b`: it goes.
    let (code, v) = apply(&url, "fieldManager=ctl", &config_map(json!({"a": "1"})));
    assert_eq!((code, v["data"].clone()), (200, json!({"a": "1"})));
    assert_eq!(fields_of(&v, "ctl"), json!({"f:data": {"f:a": {}}}));
    // What another manager applied stays when the controller stops applying its own fields.
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"c": "1"}});
    assert_eq!(apply(&url, "fieldManager=other", &other).0, 200);
    let (code, v) = apply(
        &url,
        "fieldManager=ctl",
        &json!({"apiVersion": "v1", "kind": "ConfigMap"}),
    );
    assert_eq!((code, v["data"].clone()), (200, json!({"c": "1"})));
    assert_eq!(
        entries(&v).iter().map(|e| e["manager"].clone()).collect::<Vec<_>>(),
        ["other"],
        "the controller owns nothing left"
    );
    // Re-applying what is there writes nothing.
    let before = get(&url).1;
    assert_eq!(apply(&url, "fieldManager=other", &other).1, before);
}

#[test]
fn managers_conflict_share_equal_values_and_force_takes_ownership() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/app", cms(&server, "default"));
    assert_eq!(
        apply(&url, "fieldManager=ctl", &config_map(json!({"a": "1", "b": "1"}))).0,
        201
    );
    let (code, st) = apply(&url, "fieldManager=other", &config_map(json!({"a": "2"})));
    assert_eq!(code, 409);
    assert_eq!(
        st,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Apply failed with 1 conflict: conflict with \"ctl\": .data.a",
            "reason": "Conflict",
            "details": {"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"ctl\"", "field": ".data.a"}]},
            "code": 409,
        })
    );
    let (code, st) = apply(&url, "fieldManager=other", &config_map(json!({"a": "2", "b": "2"})));
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            409,
            "Apply failed with 2 conflicts: conflicts with \"ctl\":\n- .data.a\n- .data.b"
        )
    );
    // The same value is no conflict: both own it.
    let (code, v) = apply(&url, "fieldManager=other", &config_map(json!({"a": "1"})));
    assert_eq!(code, 200);
    assert_eq!(fields_of(&v, "other"), json!({"f:data": {"f:a": {}}}));
    assert_eq!(fields_of(&v, "ctl"), json!({"f:data": {"f:a": {}, "f:b": {}}}));
    // Forced: the other manager takes both.
    let (code, v) = apply(
        &url,
        "fieldManager=other&force=true",
        &config_map(json!({"a": "2", "b": "2"})),
    );
    assert_eq!((code, v["data"].clone()), (200, json!({"a": "2", "b": "2"})));
    assert_eq!(fields_of(&v, "other"), json!({"f:data": {"f:a": {}, "f:b": {}}}));
    assert_eq!(fields_of(&v, "ctl"), Value::Null, "ctl owns nothing any more");
}

#[test]
fn updates_take_ownership_away_from_appliers() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/app", cms(&server, "default"));
    apply(&url, "fieldManager=ctl", &config_map(json!({"a": "1", "b": "1"})));
    // kubectl edit: a merge patch by `kubectl-edit`.
    let (code, v) = send(
        "PATCH",
        &format!("{url}?fieldManager=kubectl-edit"),
        "application/merge-patch+json",
        r#"{"data": {"a": "edited"}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(
        entries(&v),
        [
            json!({"manager": "ctl", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:data": {"f:b": {}}}}),
            json!({"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:data": {"f:a": {}}}}),
        ]
    );
    let (code, st) = apply(&url, "fieldManager=ctl", &config_map(json!({"a": "1", "b": "1"})));
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            409,
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .data.a"
        )
    );
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "conflict with \"kubectl-edit\" using v1"
    );
    // The applier no longer owns `a`: leaving it out keeps it.
    let (_, v) = apply(&url, "fieldManager=ctl", &config_map(json!({"b": "1"})));
    assert_eq!(v["data"], json!({"a": "edited", "b": "1"}));
    // Without a fieldManager, the User-Agent names the manager (kubectl's first word).
    let mut current = get(&url).1;
    current["data"]["c"] = json!("3");
    let r = agent()
        .put(&url)
        .header("Content-Type", "application/json")
        .header("User-Agent", "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9")
        .send(current.to_string())
        .unwrap();
    let v: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(fields_of(&v, "kubectl"), json!({"f:data": {"f:c": {}}}));
    // Removing a field takes it from everyone.
    let (_, v) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        r#"{"data": {"b": null}}"#,
    );
    assert_eq!(fields_of(&v, "ctl"), Value::Null);
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    protocol: {type: string, default: TCP}
                    name: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              args:
                type: array
                items: {type: string}
              settings:
                type: object
                additionalProperties: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

fn gadget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec})
}

#[test]
fn custom_resources_merge_keyed_and_set_lists_item_by_item_and_atomic_ones_whole() {
    let server = ApiServer::start().unwrap();
    server.install_crd(CRD).unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/gadgets/g", server.url());
    let a = gadget(json!({
        "ports": [{"port": 80, "name": "web"}], "tags": ["a"], "args": ["x"],
        "settings": {"one": "1"}, "selector": {"app": "g"},
    }));
    let (code, v) = apply(&url, "fieldManager=a", &a);
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        fields_of(&v, "a"),
        json!({"f:spec": {
            "f:args": {},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:selector": {},
            "f:settings": {"f:one": {}},
            "f:tags": {"v:\"a\"": {}},
        }})
    );
    // Another manager's atomic list and atomic map conflict whole…
    let b = gadget(
        json!({"ports": [{"port": 443, "name": "tls"}], "tags": ["b"], "args": ["y"],
                          "settings": {"two": "2"}, "selector": {"tier": "b"}}),
    );
    let (code, st) = apply(&url, "fieldManager=b", &b);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            409,
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.args\n- .spec.selector"
        )
    );
    // …keyed lists, sets and granular maps merge item by item.
    let b = gadget(json!({"ports": [{"port": 443, "name": "tls"}], "tags": ["b"], "settings": {"two": "2"}}));
    let (code, v) = apply(&url, "fieldManager=b", &b);
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        v["spec"],
        json!({
            "ports": [{"port": 80, "name": "web", "protocol": "TCP"}, {"port": 443, "name": "tls", "protocol": "TCP"}],
            "tags": ["a", "b"], "args": ["x"], "settings": {"one": "1", "two": "2"}, "selector": {"app": "g"},
        })
    );
    // `a` moves to port 8080 and drops its tag: its port 80 and tag go, `b`'s stay.
    let a2 =
        gadget(json!({"ports": [{"port": 8080}], "args": ["x"], "settings": {"one": "1"}, "selector": {"app": "g"}}));
    let (_, v) = apply(&url, "fieldManager=a", &a2);
    assert_eq!(
        v["spec"]["ports"],
        json!([{"port": 443, "name": "tls", "protocol": "TCP"}, {"port": 8080, "protocol": "TCP"}])
    );
    assert_eq!(v["spec"]["tags"], json!(["b"]));
    // Forced, `b` takes the atomic list whole.
    let (code, v) = apply(&url, "fieldManager=b&force=true", &gadget(json!({"args": ["y"]})));
    assert_eq!((code, v["spec"]["args"].clone()), (200, json!(["y"])));
    assert!(fields_of(&v, "a")["f:spec"].get("f:args").is_none());
    // Everything `b` applied before and no longer applies goes: its port, tag and setting.
    let (_, v) = apply(&url, "fieldManager=b", &gadget(json!({"args": ["y"]})));
    assert_eq!(
        v["spec"],
        json!({"ports": [{"port": 8080, "protocol": "TCP"}], "args": ["y"], "settings": {"one": "1"}, "selector": {"app": "g"}})
    );
}

#[test]
fn status_applies_own_only_the_status_and_main_applies_no_status() {
    let server = ApiServer::start().unwrap();
    server.install_crd(CRD).unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/gadgets/g", server.url());
    let mut with_status = gadget(json!({"tags": ["a"]}));
    with_status["status"] = json!({"ready": true});
    let (code, v) = apply(&url, "fieldManager=ctl", &with_status);
    assert_eq!(code, 201);
    assert!(v.get("status").is_none(), "a create drops the status");
    assert_eq!(fields_of(&v, "ctl"), json!({"f:spec": {"f:tags": {"v:\"a\"": {}}}}));
    let (code, v) = apply(&format!("{url}/status"), "fieldManager=ctl-status", &with_status);
    assert_eq!(
        (code, v["status"].clone(), v["spec"].clone()),
        (200, json!({"ready": true}), json!({"tags": ["a"]}))
    );
    let status_entry = entries(&v).into_iter().find(|e| e["manager"] == "ctl-status").unwrap();
    assert_eq!(
        status_entry,
        json!({"manager": "ctl-status", "operation": "Apply", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:status": {"f:ready": {}}}, "subresource": "status"})
    );
    // The main resource's applier neither removes nor conflicts with the status.
    with_status["status"] = json!({"ready": false});
    let (code, v) = apply(&url, "fieldManager=ctl", &with_status);
    assert_eq!((code, v["status"].clone()), (200, json!({"ready": true})));
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}},
        },
    })
}

#[test]
fn deployment_containers_merge_by_name_and_scale_writes_take_the_replicas() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/apis/apps/v1/namespaces/default/deployments/web", server.url());
    let app = deployment(json!([{"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}]}]));
    let (code, v) = apply(&url, "fieldManager=ctl", &app);
    assert_eq!(code, 201, "{v}");
    let container = &fields_of(&v, "ctl")["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"];
    assert_eq!(
        container,
        &json!({".": {}, "f:image": {}, "f:name": {},
                "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}})
    );
    // A sidecar injector applies its own container: both stay, whoever re-applies.
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                         "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy"}]}}}});
    assert_eq!(apply(&url, "fieldManager=injector", &sidecar).0, 200);
    let (_, v) = apply(&url, "fieldManager=ctl", &app);
    let names: Vec<&str> = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "sidecar"]);
    // `kubectl scale`: the scale subresource's writer owns the replicas now.
    let scale_url = format!("{url}/scale");
    let r = agent()
        .patch(&scale_url)
        .header("Content-Type", "application/merge-patch+json")
        .header("User-Agent", "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9")
        .send(r#"{"spec": {"replicas": 5}}"#)
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v = get(&url).1;
    assert_eq!(v["spec"]["replicas"], 5);
    let scaler = v["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subresource"] == "scale")
        .unwrap()
        .clone();
    assert_eq!(
        scaler,
        json!({"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"})
    );
    assert!(fields_of(&v, "ctl")["f:spec"].get("f:replicas").is_none());
    let (code, st) = apply(&url, "fieldManager=ctl", &app);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            409,
            "Apply failed with 1 conflict: conflict with \"kubectl\" with subresource \"scale\" using apps/v1: .spec.replicas"
        )
    );
    // The injector removes its sidecar; the controller's container stays.
    let none = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    let (_, v) = apply(&url, "fieldManager=injector", &none);
    assert_eq!(v["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(), 1);
    assert_eq!(v["spec"]["template"]["spec"]["containers"][0]["name"], "app");
}

#[test]
fn apply_requests_are_checked_as_kube_apiserver_checks_them() {
    let server = ApiServer::start().unwrap();
    let base = cms(&server, "default");
    let url = format!("{base}/app");
    let body = config_map(json!({"a": "1"}));
    let (code, st) = apply(&url, "", &body);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            422,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        )
    );
    let (code, st) = send(
        "PATCH",
        &format!("{url}?force=true"),
        "application/merge-patch+json",
        "{}",
    );
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            422,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        )
    );
    let (code, st) = apply(&url, &format!("fieldManager={}", "m".repeat(129)), &body);
    assert_eq!(
        (code, st["details"]["causes"][0]["reason"].as_str()),
        (422, Some("FieldValueTooLong"))
    );
    let (code, st) = post(
        &format!("{base}?fieldManager=%07bell"),
        &json!({"metadata": {"name": "x"}}),
    );
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")), "{st}");
    let wrong_kind = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app"}});
    let (code, st) = apply(&url, "fieldManager=m", &wrong_kind);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (400, "invalid object type: /v1, Kind=Secret")
    );
    let mut with_fields = body.clone();
    with_fields["metadata"]["managedFields"] = json!([]);
    let (code, st) = apply(&url, "fieldManager=m", &with_fields);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (400, "metadata.managedFields must be nil")
    );
    let mut with_uid = body.clone();
    with_uid["metadata"]["uid"] = json!("0d6a3f1e-0000-4000-8000-000000000000");
    let (code, st) = apply(&url, "fieldManager=m", &with_uid);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            409,
            "Operation cannot be fulfilled on configmaps \"app\": uid mismatch: the provided object specified uid 0d6a3f1e-0000-4000-8000-000000000000, and no existing object was found"
        )
    );
    let unknown = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "dta": {"a": "1"}});
    let (code, st) = apply(&url, "fieldManager=m", &unknown);
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            500,
            "failed to create typed patch object (/app; /v1, Kind=ConfigMap): .dta: field not declared in schema"
        )
    );
    // A dry run answers what would be stored, managed fields included, and stores nothing.
    let (code, v) = apply(&url, "fieldManager=m&dryRun=All", &body);
    assert_eq!((code, fields_of(&v, "m")), (201, json!({"f:data": {"f:a": {}}})));
    assert_eq!(get(&url).0, 404);
}

#[test]
fn managed_fields_sent_in_writes_replace_or_reset_the_stored_ones() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/app", cms(&server, "default"));
    apply(&url, "fieldManager=ctl", &config_map(json!({"a": "1"})));
    // kubectl's client-side to server-side migration replaces the entries with a JSON patch, the resourceVersion
    // its precondition.
    let rv = get(&url).1["metadata"]["resourceVersion"].clone();
    let migrated = json!([
        {"op": "replace", "path": "/metadata/managedFields", "value": [{
            "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": rv},
    ]);
    let (code, v) = send("PATCH", &url, "application/json-patch+json", &migrated.to_string());
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["metadata"]["managedFields"], migrated[0]["value"]);
    let (code, _) = send("PATCH", &url, "application/json-patch+json", &migrated.to_string());
    assert_eq!(code, 409, "the resourceVersion is stale now");
    // `[{}]` resets them; an untracked object stays untracked by updates…
    let (_, v) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        r#"{"metadata": {"managedFields": [{}]}}"#,
    );
    assert!(v["metadata"].get("managedFields").is_none(), "{v}");
    let (_, v) = send("PATCH", &url, "application/merge-patch+json", r#"{"data": {"b": "2"}}"#);
    assert!(v["metadata"].get("managedFields").is_none(), "{v}");
    // …until an apply: what it holds then belongs to `before-first-apply`.
    let (code, st) = apply(&url, "fieldManager=ctl", &config_map(json!({"a": "changed"})));
    assert_eq!(
        (code, st["message"].as_str().unwrap()),
        (
            409,
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.a"
        )
    );
}

#[test]
fn the_library_client_applies_with_force() {
    let server = ApiServer::start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let body = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": v}});
    api.patch("c", &PatchParams::apply("first"), &Patch::Apply(body("1")))
        .unwrap();
    let e = api
        .patch("c", &PatchParams::apply("second"), &Patch::Apply(body("2")))
        .unwrap_err();
    assert_eq!(e.code(), Some(409), "{e}");
    let cm = api
        .patch("c", &PatchParams::apply("second").force(), &Patch::Apply(body("2")))
        .unwrap();
    assert_eq!(&cm.data["k"], "2");
    let managed: Value = serde_json::to_value(cm.metadata.managed_fields.as_ref().unwrap()).unwrap();
    assert_eq!(managed.as_array().unwrap().len(), 1);
    assert_eq!(managed[0]["manager"], "second");
    // The Rust-side calls are tracked under their own manager.
    let created = server
        .create_json(
            &cm_resource(),
            Some("default"),
            json!({"metadata": {"name": "d"}, "data": {"x": "1"}}),
        )
        .unwrap();
    assert_eq!(
        entries(&created),
        [
            json!({"manager": DIRECT_FIELD_MANAGER, "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:x": {}}}})
        ]
    );
}

fn cm_resource() -> kube_informer::object::ApiResource {
    cm()
}
