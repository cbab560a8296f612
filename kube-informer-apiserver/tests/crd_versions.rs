//! A CRD served in several versions, as apiextensions-apiserver serves one with `conversion: {strategy: None}`:
//! one store, objects in the storage version, served in the version asked for with only `apiVersion` changed —
//! through GET, LIST, WATCH, writes, tables and the Rust API — each version validated, pruned and defaulted by its
//! own schema; discovery's preferred version; deprecated versions' warnings; a storage version that moves; webhook
//! conversion refused rather than faked; selectable fields.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::cache::ListWatch;
use kube_informer::client::Api;
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

/// v1 (storage), v2 (adds `spec.size` with a default and requires `color`), v1beta1 (deprecated).
const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
          status: {type: object, properties: {ready: {type: boolean}}}
  - name: v2
    served: true
    storage: false
    subresources: {status: {}}
    selectableFields:
    - {jsonPath: .spec.color}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              color: {type: string}
              size: {type: integer, default: 3}
          status: {type: object, properties: {ready: {type: boolean}}}
"#;

fn widgets(version: &str) -> ApiResource {
    ApiResource::new("example.com", version, "Widget", "widgets", true)
}

fn url(server: &ApiServer, version: &str, tail: &str) -> String {
    format!(
        "{}/apis/example.com/{version}/namespaces/default/widgets{tail}",
        server.url()
    )
}

fn server() -> ApiServer {
    let server = ApiServer::start().unwrap();
    server.install_crd(CRD).unwrap();
    server
}

/// Creates the Widget `name` of `color` in `default`, written in `version` through the Rust API.
fn make(server: &ApiServer, version: &str, name: &str, color: &str) {
    let body = json!({"metadata": {"name": name}, "spec": {"color": color}});
    server.create_json(&widgets(version), Some("default"), body).unwrap();
}

#[test]
fn every_version_reads_and_writes_the_same_objects() {
    let server = server();
    // Written in v2: defaulted by v2's schema (size 3), stored in v1, whose schema has no size: pruned on its way
    // to storage as the CRD storage's codec prunes by the storage version's schema, so the answer (read back from
    // storage, in v2) has none — kube-apiserver loses such a field just so with `conversion: {strategy: None}`.
    let (code, w) = post(
        &url(&server, "v2", ""),
        &json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"color": "red"}}),
    );
    assert_eq!(code, 201, "{w}");
    assert_eq!(w["apiVersion"], "example.com/v2");
    assert_eq!(w["spec"], json!({"color": "red"}));
    // Read in v1: the same object in v1, pruned by v1's schema, which has no size (as the CRD storage's codec
    // prunes an object converted to the version asked for).
    let (_, v1) = get(&url(&server, "v1", "/a"));
    assert_eq!(v1["apiVersion"], "example.com/v1");
    let mut same = w.clone();
    same["apiVersion"] = json!("example.com/v1");
    same["spec"].as_object_mut().unwrap().remove("size");
    assert_eq!(v1, same);
    // Listed in v1beta1: its own list kind and items' apiVersion.
    let (_, list) = get(&url(&server, "v1beta1", ""));
    assert_eq!(list["apiVersion"], "example.com/v1beta1");
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v1beta1");
    // Written in v1, read in v2: v2 sees the write (a new resourceVersion, the same uid).
    let mut changed = v1.clone();
    changed["spec"]["color"] = json!("blue");
    let (code, after) = put(&url(&server, "v1", "/a"), &changed);
    assert_eq!((code, after["apiVersion"].as_str()), (200, Some("example.com/v1")));
    let (_, v2) = get(&url(&server, "v2", "/a"));
    assert_eq!(
        (
            v2["spec"]["color"].as_str(),
            &v2["metadata"]["resourceVersion"],
            &v2["metadata"]["uid"]
        ),
        (
            Some("blue"),
            &after["metadata"]["resourceVersion"],
            &w["metadata"]["uid"]
        )
    );
    // A patch through v2 of what v1 wrote; a stale update through v1beta1 conflicts.
    let (code, p) = send(
        "PATCH",
        &url(&server, "v2", "/a"),
        "application/merge-patch+json",
        r#"{"spec": {"size": 5}}"#,
    );
    // Accepted by v2's schema, gone in storage (v1 has no size).
    assert_eq!(
        (code, p["spec"]["size"].as_i64(), p["apiVersion"].as_str()),
        (200, None, Some("example.com/v2"))
    );
    let mut stale = changed.clone();
    stale["apiVersion"] = json!("example.com/v1beta1");
    let (code, _) = put(&url(&server, "v1beta1", "/a"), &stale);
    assert_eq!(code, 409);
    // The body must say the version of the URL it is sent to.
    let (code, st) = post(
        &url(&server, "v2", ""),
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"color": "red"}}),
    );
    assert_eq!(code, 400);
    assert_eq!(
        st["message"],
        "the API version in the data (example.com/v1) does not match the expected API version (example.com/v2)"
    );
    // The Rust API serves each version too.
    assert_eq!(
        server.get_json(&widgets("v1beta1"), Some("default"), "a").unwrap()["apiVersion"],
        "example.com/v1beta1"
    );
    let listed = server.list_json(&widgets("v2"), Some("default")).unwrap();
    assert_eq!(listed[0]["apiVersion"], "example.com/v2");
}

#[test]
fn each_version_validates_with_its_own_schema() {
    let server = server();
    // v2 requires color; v1 does not.
    let (code, st) = post(&url(&server, "v2", ""), &json!({"metadata": {"name": "x"}, "spec": {}}));
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.color");
    let (code, v1) = post(
        &url(&server, "v1", ""),
        &json!({"metadata": {"name": "y"}, "spec": {"size": 9}}),
    );
    assert_eq!(
        (code, &v1["spec"]),
        (201, &json!({})),
        "v1 requires nothing; its schema prunes size"
    );
    let (code, v1) = post(
        &url(&server, "v1", ""),
        &json!({"metadata": {"name": "x"}, "spec": {"color": "red", "size": 9}}),
    );
    assert_eq!(code, 201);
    assert_eq!(
        v1["spec"],
        json!({"color": "red"}),
        "v2's default is not applied to a v1 write"
    );
    // The status subresource exists where the version declares it: v1beta1 declares none.
    let (code, _) = send(
        "PATCH",
        &url(&server, "v1beta1", "/x/status"),
        "application/merge-patch+json",
        "{}",
    );
    assert_eq!(code, 404);
    let (code, st) = send(
        "PATCH",
        &url(&server, "v2", "/x/status"),
        "application/merge-patch+json",
        r#"{"status": {"ready": true}}"#,
    );
    assert_eq!((code, st["status"]["ready"].as_bool()), (200, Some(true)), "{st}");
}

#[test]
fn discovery_prefers_the_highest_version_and_deprecated_ones_warn() {
    let server = server();
    let (_, group) = get(&format!("{}/apis/example.com", server.url()));
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1", "v1beta1"]);
    assert_eq!(group["preferredVersion"]["version"], "v2");
    for v in ["v1beta1", "v1", "v2"] {
        let (code, list) = get(&format!("{}/apis/example.com/{v}", server.url()));
        assert_eq!(code, 200);
        assert_eq!(list["resources"][0]["name"], "widgets", "{v}");
    }
    let (_, openapi) = get(&format!("{}/openapi/v3", server.url()));
    for v in ["v1beta1", "v1", "v2"] {
        assert!(openapi["paths"][format!("apis/example.com/{v}")].is_object(), "{v}");
    }
    // Every request of the deprecated version gets kube-apiserver's warning; the others none.
    let warning = "299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v2 Widget\"";
    let r = agent().get(&url(&server, "v1beta1", "")).call().unwrap();
    assert_eq!(r.headers().get("warning").unwrap(), warning);
    let r = agent().get(&url(&server, "v1", "")).call().unwrap();
    assert!(r.headers().get("warning").is_none());
    let watch = Raw::watch(&server, "/apis/example.com/v1beta1/namespaces/default/widgets?watch=1");
    assert_eq!(watch.header("warning"), Some(warning));
}

#[test]
fn watches_and_informers_see_every_write_in_their_version() {
    let server = server();
    let (_, list) = get(&url(&server, "v1beta1", ""));
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watch = Raw::watch(
        &server,
        &format!("/apis/example.com/v1beta1/namespaces/default/widgets?watch=1&resourceVersion={rv}"),
    );
    let api: Api<DynamicObject> = Api::namespaced_with(server.client().unwrap(), "default", &widgets("v2"));
    let informer = SharedIndexInformer::new(ListWatch::new(&api), InformerOptions::default());
    informer.start().unwrap();
    common::eventually("the informer syncs", || informer.has_synced());
    make(&server, "v1", "w", "red");
    let e = watch.change();
    assert_eq!(
        (e["type"].as_str(), e["object"]["apiVersion"].as_str()),
        (Some("ADDED"), Some("example.com/v1beta1"))
    );
    common::eventually("the v2 informer has the object", || informer.lister().len() == 1);
    let cached = informer.lister().list(&Default::default());
    assert_eq!(&*cached[0].api_version, "example.com/v2");
    server.delete_json(&widgets("v2"), Some("default"), "w").unwrap();
    let e = watch.change();
    assert_eq!(
        (e["type"].as_str(), e["object"]["apiVersion"].as_str()),
        (Some("DELETED"), Some("example.com/v1beta1"))
    );
    common::eventually("the v2 informer saw the deletion", || informer.lister().is_empty());
    informer.stop();
}

#[test]
fn tables_show_each_versions_columns() {
    let server = server();
    make(&server, "v1", "w", "red");
    let table = |version: &str| -> Value {
        let r = agent()
            .get(&url(&server, version, ""))
            .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .call()
            .unwrap();
        serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap()
    };
    let names = |t: &Value| -> Vec<String> {
        t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let v1 = table("v1");
    assert_eq!(names(&v1), ["Name", "Color"]);
    assert_eq!(v1["rows"][0]["cells"], json!(["w", "red"]));
    assert_eq!(v1["rows"][0]["object"]["metadata"]["name"], "w");
    assert_eq!(names(&table("v2")), ["Name", "Age"]);
}

#[test]
fn selectable_fields_filter_lists_and_watches() {
    let server = server();
    for (name, color) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        make(&server, "v2", name, color);
    }
    let (code, list) = get(&url(&server, "v2", "?fieldSelector=spec.color%3Dred"));
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "c"]);
    // v1 declares no selectable field: kube-apiserver's 400.
    let (code, st) = get(&url(&server, "v1", "?fieldSelector=spec.color%3Dred"));
    assert_eq!(code, 400);
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("field label not supported: spec.color"),
        "{st}"
    );
}

#[test]
fn the_storage_version_can_move_and_stored_versions_are_kept() {
    let server = server();
    make(&server, "v1", "old", "red");
    // v2 becomes the storage version: objects stored in v1 are still served in every version.
    let moved = CRD
        .replace("    storage: true\n", "    storage: STORAGE\n")
        .replace(
            "  - name: v2\n    served: true\n    storage: false\n",
            "  - name: v2\n    served: true\n    storage: true\n",
        )
        .replace("    storage: STORAGE\n", "    storage: false\n");
    server.install_crd(&moved).unwrap();
    let crd_url = format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        server.url()
    );
    let (_, crd) = get(&crd_url);
    assert_eq!(crd["status"]["storedVersions"], json!(["v1", "v2"]));
    for v in ["v1beta1", "v1", "v2"] {
        let (code, o) = get(&url(&server, v, "/old"));
        assert_eq!(
            (code, o["apiVersion"].as_str()),
            (200, Some(format!("example.com/{v}").as_str()))
        );
    }
    let (_, list) = get(&url(&server, "v2", ""));
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v2");
    // A version objects may still be stored in cannot be dropped.
    let without_v1 = {
        let mut v: Value = serde_json::from_str(&serde_json::to_string(&crd).unwrap()).unwrap();
        let versions = v["spec"]["versions"].as_array_mut().unwrap();
        versions.retain(|x| x["name"] != "v1");
        v
    };
    let (code, st) = put(&crd_url, &without_v1);
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains(r#"status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions"#),
        "{st}"
    );
    // Once a storage migration says so (status.storedVersions: [v2]), it can.
    let mut migrated = crd.clone();
    migrated["status"]["storedVersions"] = json!(["v2"]);
    let (code, _) = put(&format!("{crd_url}/status"), &migrated);
    assert_eq!(code, 200);
    let (_, crd) = get(&crd_url);
    let mut without_v1 = crd.clone();
    without_v1["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .retain(|x| x["name"] != "v1");
    let (code, st) = put(&crd_url, &without_v1);
    assert_eq!(code, 200, "{st}");
    let (code, _) = get(&url(&server, "v1", "/old"));
    assert_eq!(code, 404, "v1 is no longer served");
    let (_, o) = get(&url(&server, "v2", "/old"));
    assert_eq!(o["apiVersion"], "example.com/v2");
}

#[test]
fn webhook_conversion_is_refused_instead_of_faked() {
    let server = ApiServer::start().unwrap();
    let webhook = CRD.replace(
        "  scope: Namespaced\n",
        "  scope: Namespaced\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {url: \"https://conversion.example.com/convert\"}\n",
    );
    server.install_crd(&webhook).unwrap();
    let (code, _) = post(
        &url(&server, "v1", ""),
        &json!({"metadata": {"name": "a"}, "spec": {"color": "red"}}),
    );
    assert_eq!(code, 201, "the storage version needs no conversion");
    let (code, st) = get(&url(&server, "v2", "/a"));
    assert_eq!(code, 500);
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("conversion webhook for example.com/v2, Kind=Widget failed"),
        "{st}"
    );
    let e = server.get_json(&widgets("v2"), Some("default"), "a").unwrap_err();
    assert!(matches!(e, kube_informer::Error::Api(st) if st.code == 500));
}

#[test]
fn server_side_apply_keeps_the_owners_of_every_version() {
    let server = server();
    let apply = |version: &str, manager: &str, spec: Value| {
        let body = json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
                          "metadata": {"name": "w"}, "spec": spec});
        send(
            "PATCH",
            &url(&server, version, &format!("/w?fieldManager={manager}")),
            "application/apply-patch+yaml",
            &body.to_string(),
        )
    };
    assert_eq!(apply("v1", "a", json!({"color": "red"})).0, 201);
    // b applies the same color through v1beta1 (shared, no conflict).
    let (code, w) = apply("v1beta1", "b", json!({"color": "red"}));
    assert_eq!(code, 200, "{w}");
    // a stops applying the color through v1: b still owns it, so it stays; b's v1beta1 entry survives a's v1 write.
    let (code, w) = apply("v1", "a", json!({}));
    assert_eq!(code, 200, "{w}");
    assert_eq!(w["spec"], json!({"color": "red"}));
    let entries: Vec<(String, String)> = w["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_owned(),
                e["apiVersion"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        entries.contains(&("b".into(), "example.com/v1beta1".into())),
        "{entries:?}"
    );
    assert!(entries.contains(&("a".into(), "example.com/v1".into())), "{entries:?}");
}

#[test]
fn objects_are_read_with_todays_schema_of_each_version() {
    let server = server();
    let (code, _) = post(
        &url(&server, "v2", ""),
        &json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"color": "red", "size": 5}}),
    );
    assert_eq!(code, 201);
    // v1, the storage version, does not know size: pruned by its schema on the way to storage, served in no
    // version, as on a cluster.
    let (_, v1) = get(&url(&server, "v1", "/a"));
    assert_eq!(v1["spec"], json!({"color": "red"}));
    let (_, v2) = get(&url(&server, "v2", "/a"));
    assert_eq!(v2["spec"], json!({"color": "red"}));
    let (code, _) = put(&url(&server, "v1", "/a"), &v1);
    assert_eq!(code, 200);
    let (_, v2) = get(&url(&server, "v2", "/a"));
    // Dropped by the v1 write; v2's default is not applied on read: an object is defaulted by the schema of the
    // version it is stored in (v1) before it is converted.
    assert_eq!(v2["spec"], json!({"color": "red"}));
    // A default added to v1's schema later shows on read, without a write (no new resourceVersion).
    let rv = v2["metadata"]["resourceVersion"].clone();
    let shaped = CRD.replacen(
        "          spec: {type: object, properties: {color: {type: string}}}\n          status",
        "          spec: {type: object, properties: {color: {type: string}, shape: {type: string, default: round}}}\n          status",
        1,
    );
    assert_ne!(shaped, CRD);
    server.install_crd(&shaped).unwrap();
    let (_, v1) = get(&url(&server, "v1", "/a"));
    assert_eq!(v1["spec"], json!({"color": "red", "shape": "round"}));
    assert_eq!(v1["metadata"]["resourceVersion"], rv);
    let (_, list) = get(&url(&server, "v1", ""));
    assert_eq!(list["items"][0]["spec"]["shape"], "round");
}

/// v1 knows `spec.a` and `spec.b`; v2, the storage version, only `spec.a`.
const NARROWING: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {plural: gadgets, kind: Gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {a: {type: string}, b: {type: string}}}
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {a: {type: string}}}
"#;

#[test]
fn an_object_written_through_an_old_version_is_pruned_by_the_storage_schema() {
    let server = ApiServer::start().unwrap();
    server.install_crd(NARROWING).unwrap();
    let gadgets = |v: &str| format!("{}/apis/example.com/{v}/namespaces/default/gadgets", server.url());
    let (code, created) = post(
        &gadgets("v1"),
        &json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
                "spec": {"a": "x", "b": "y"}}),
    );
    assert_eq!(code, 201, "{created}");
    // Stored in v2, whose schema knows no `b`: gone from the answer and from every read, in every version.
    assert_eq!(created["spec"], json!({"a": "x"}), "{created}");
    for v in ["v1", "v2"] {
        let (_, o) = get(&format!("{}/g", gadgets(v)));
        assert_eq!(o["spec"], json!({"a": "x"}), "{v}: {o}");
    }
}

#[test]
fn a_created_crd_answers_the_status_kube_apiserver_s_strategy_gives_it() {
    let server = ApiServer::start().unwrap();
    let crd: Value = serde_saphyr::from_str(NARROWING).unwrap();
    let (code, created) = post(
        &format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            server.url()
        ),
        &crd,
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["status"],
        json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v2"]})
    );
    // The controllers' write follows.
    let (_, got) = get(&format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
        server.url()
    ));
    assert_eq!(got["status"]["acceptedNames"]["kind"], "Gadget");
}
