//! CustomResourceDefinitions end to end: installed from a YAML manifest (Rust API and `POST`), served in discovery
//! and OpenAPI, objects validated (422), pruned and defaulted by the schema, the status subresource, strategic merge
//! refused, an informer over `DynamicObject`s, and the removal of everything when the CRD is deleted.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use kube_informer::cache::ListWatch;
use kube_informer::client::Api;
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  scope: Namespaced
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
            required: [color]
            properties:
              color: {type: string, enum: [red, blue]}
              size: {type: integer, minimum: 1, default: 1}
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

fn widgets() -> ApiResource {
    ApiResource::new("example.com", "v1", "Widget", "widgets", true)
}

fn url(server: &ApiServer, tail: &str) -> String {
    format!("{}/apis/example.com/v1/namespaces/default/widgets{tail}", server.url())
}

#[test]
fn installed_crds_are_established_served_and_discovered() {
    let server = ApiServer::start().unwrap();
    assert_eq!(server.install_crd(CRD).unwrap(), ["widgets.example.com"]);
    let (code, crd) = get(&format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        server.url()
    ));
    assert_eq!(code, 200);
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    for t in ["NamesAccepted", "Established"] {
        assert!(
            conditions.iter().any(|c| c["type"] == t && c["status"] == "True"),
            "{t}: {crd}"
        );
    }
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    let (_, list) = get(&format!("{}/apis/example.com/v1", server.url()));
    let w = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "widgets")
        .unwrap()
        .clone();
    assert_eq!(
        (w["kind"].as_str(), w["singularName"].as_str()),
        (Some("Widget"), Some("widget"))
    );
    assert_eq!(
        (w["shortNames"].clone(), w["categories"].clone()),
        (json!(["wd"]), json!(["all"]))
    );
    let (_, index) = get(&format!("{}/openapi/v3", server.url()));
    assert!(index["paths"]["apis/example.com/v1"].is_object());
    // Installing again changes nothing and succeeds, as kubectl apply.
    server.install_crd(CRD).unwrap();
}

#[test]
fn custom_objects_are_validated_pruned_and_defaulted_by_their_schema() {
    let server = ApiServer::builder().crd(CRD).start().unwrap();
    let (code, st) = post(
        &url(&server, ""),
        &json!({"metadata": {"name": "bad"}, "spec": {"color": "green", "size": 0}}),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["message"],
        r#"Widget.example.com "bad" is invalid: [spec.color: Unsupported value: "green": supported values: "red", "blue", spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1]"#
    );
    assert_eq!(st["details"]["causes"][0]["field"], "spec.color");
    let (code, st) = post(&url(&server, ""), &json!({"metadata": {"name": "none"}, "spec": {}}));
    assert_eq!(
        (code, st["details"]["causes"][0]["message"].as_str()),
        (422, Some("Required value"))
    );
    let (code, w) = post(
        &url(&server, ""),
        &json!({"metadata": {"name": "w"}, "spec": {"color": "red", "extra": 1}}),
    );
    assert_eq!(code, 201, "{w}");
    assert_eq!(w["spec"], json!({"color": "red", "size": 1}));
    assert_eq!(w["metadata"]["generation"], 1);
    // The status subresource: the main resource ignores .status, /status changes only it.
    let (code, w) = send(
        "PATCH",
        &url(&server, "/w"),
        "application/merge-patch+json",
        r#"{"status": {"ready": true}}"#,
    );
    assert_eq!((code, w.get("status")), (200, None));
    let (code, w) = send(
        "PATCH",
        &url(&server, "/w/status"),
        "application/merge-patch+json",
        r#"{"status": {"ready": true}}"#,
    );
    assert_eq!((code, w["status"]["ready"].as_bool()), (200, Some(true)));
    // No merge keys for a custom resource: 415, as kube-apiserver.
    let (code, st) = send(
        "PATCH",
        &url(&server, "/w"),
        "application/strategic-merge-patch+json",
        r#"{"spec": {}}"#,
    );
    assert_eq!((code, st["reason"].as_str()), (415, Some("UnsupportedMediaType")));
    // Direct Rust calls follow the same rules.
    let e = server.create_json(
        &widgets(),
        Some("default"),
        json!({"metadata": {"name": "x"}, "spec": {}}),
    );
    assert!(matches!(e, Err(kube_informer::Error::Api(st)) if st.code == 422));
}

#[test]
fn invalid_crds_are_refused_with_kube_apiserver_wording() {
    let server = ApiServer::start().unwrap();
    let bad = CRD.replace("scope: Namespaced", "scope: Everywhere");
    let e = server.install_crd(&bad).unwrap_err();
    let kube_informer::Error::Api(st) = e else {
        panic!("{e:?}")
    };
    assert_eq!(st.code, 422);
    assert!(
        st.message.contains(r#"spec.scope: Unsupported value: "Everywhere""#),
        "{}",
        st.message
    );
    let (code, _) = get(&url(&server, ""));
    assert_eq!(code, 404);
}

#[test]
fn an_informer_follows_custom_objects_and_deleting_the_crd_removes_them() {
    let server = ApiServer::builder().crd(CRD).start().unwrap();
    server
        .create_json(
            &widgets(),
            Some("default"),
            json!({"metadata": {"name": "a"}, "spec": {"color": "blue"}}),
        )
        .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(server.client().unwrap(), "default", &widgets());
    let informer = SharedIndexInformer::new(ListWatch::new(&api), InformerOptions::default());
    informer.start().unwrap();
    common::eventually("the informer syncs", || informer.has_synced());
    assert_eq!(informer.lister().len(), 1);

    // A raw watch sees the objects deleted, then its stream ends, as on a cluster.
    let (_, list) = get(&url(&server, ""));
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watch = TcpStream::connect(server.addr()).unwrap();
    let path = format!("/apis/example.com/v1/namespaces/default/widgets?watch=1&resourceVersion={rv}");
    write!(watch, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    assert!(server.wait_for_watchers("widgets.example.com", 2, WAIT));
    let (code, _) = send(
        "DELETE",
        &format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            server.url()
        ),
        "",
        "",
    );
    assert_eq!(code, 200);
    watch.set_read_timeout(Some(WAIT)).unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(watch).lines() {
        let line = line.unwrap();
        if line.starts_with('{') {
            lines.push(serde_json::from_str::<Value>(&line).unwrap());
        }
    }
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        (
            lines[0]["type"].as_str(),
            lines[0]["object"]["metadata"]["name"].as_str()
        ),
        (Some("DELETED"), Some("a"))
    );
    common::eventually("the informer sees the deletion", || informer.lister().is_empty());
    let (code, _) = get(&url(&server, ""));
    assert_eq!(code, 404);
    let (_, apis) = get(&format!("{}/apis", server.url()));
    assert!(
        !apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "example.com")
    );
    informer.stop();
}

#[test]
fn a_folder_of_manifests_brings_crds_before_their_objects() {
    let dir = std::env::temp_dir().join(format!("kube-informer-crd-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The object's file sorts first: the CRD is installed before it all the same.
    std::fs::write(
        dir.join("a-widget.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {color: red}\n",
    )
    .unwrap();
    std::fs::write(dir.join("b-crd.yaml"), CRD).unwrap();
    let server = ApiServer::start().unwrap();
    let created = server.load_manifests(&dir).unwrap();
    assert_eq!(created.len(), 2);
    assert_eq!(
        server.get_json(&widgets(), Some("default"), "w").unwrap()["spec"]["size"],
        1
    );
    let folder = ApiServer::builder().crds_from_folder(&dir).start().unwrap();
    let (code, _) = get(&url(&folder, ""));
    assert_eq!(code, 200);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn crd_url(server: &ApiServer, name: &str) -> String {
    format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
        server.url()
    )
}

fn condition(crd: &Value, kind: &str) -> (String, String, String) {
    let c = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} condition: {crd}"));
    let s = |k: &str| c[k].as_str().unwrap_or("").to_owned();
    (s("status"), s("reason"), s("message"))
}

#[test]
fn names_another_crd_of_the_group_holds_are_refused_until_it_lets_go() {
    let server = ApiServer::builder().crd(CRD).start().unwrap();
    let gadgets = CRD.replace("widgets.example.com", "gadgets.example.com").replace(
        "plural: widgets, singular: widget, kind: Widget",
        "plural: gadgets, singular: gadget, kind: Gadget",
    );
    // Created as on a cluster (201), but its short name `wd` is the widgets'.
    let (code, created) = send(
        "POST",
        &format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            server.url()
        ),
        "application/yaml",
        &gadgets,
    );
    assert_eq!(code, 201, "{created}");
    let (_, crd) = get(&crd_url(&server, "gadgets.example.com"));
    assert_eq!(
        condition(&crd, "NamesAccepted"),
        (
            "False".into(),
            "ShortNamesConflict".into(),
            r#""wd" is already in use"#.into()
        )
    );
    assert_eq!(
        condition(&crd, "Established"),
        (
            "False".into(),
            "NotAccepted".into(),
            "not all names are accepted".into()
        )
    );
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], Value::Null);
    let gadgets_url = format!("{}/apis/example.com/v1/namespaces/default/gadgets", server.url());
    assert_eq!(get(&gadgets_url).0, 404, "not served while its names are refused");
    // The Rust API says why.
    let e = server.install_crd(&gadgets).unwrap_err();
    let kube_informer::Error::Api(st) = e else {
        panic!("{e:?}")
    };
    assert_eq!(st.code, 409);
    assert!(
        st.message.contains(r#"ShortNamesConflict: "wd" is already in use"#),
        "{}",
        st.message
    );
    // The widgets go: the name is free, the gadgets are accepted and served.
    assert_eq!(send("DELETE", &crd_url(&server, "widgets.example.com"), "", "").0, 200);
    let (_, crd) = get(&crd_url(&server, "gadgets.example.com"));
    assert_eq!(condition(&crd, "NamesAccepted").0, "True");
    assert_eq!(condition(&crd, "Established").0, "True");
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["wd"]));
    assert_eq!(get(&gadgets_url).0, 200);
}

#[test]
fn a_deleted_crd_waits_for_the_finalizers_of_its_objects() {
    let server = ApiServer::builder().crd(CRD).start().unwrap();
    for (name, finalizers) in [("plain", json!([])), ("guarded", json!(["example.com/cleanup"]))] {
        let (code, _) = post(
            &url(&server, ""),
            &json!({"metadata": {"name": name, "finalizers": finalizers}, "spec": {"color": "red"}}),
        );
        assert_eq!(code, 201);
    }
    let (code, crd) = send("DELETE", &crd_url(&server, "widgets.example.com"), "", "");
    assert_eq!(code, 200);
    assert!(crd["metadata"]["deletionTimestamp"].is_string(), "{crd}");
    assert_eq!(
        crd["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    // The object without finalizers is gone; the guarded one is being deleted and keeps the CRD.
    assert_eq!(get(&url(&server, "/plain")).0, 404);
    let (code, guarded) = get(&url(&server, "/guarded"));
    assert_eq!(code, 200);
    assert!(guarded["metadata"]["deletionTimestamp"].is_string());
    let (_, crd) = get(&crd_url(&server, "widgets.example.com"));
    let (status, reason, _) = condition(&crd, "Terminating");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InstanceDeletionInProgress")
    );
    // No new object meanwhile: kube-apiserver's 405.
    let (code, st) = post(
        &url(&server, ""),
        &json!({"metadata": {"name": "late"}, "spec": {"color": "red"}}),
    );
    assert_eq!(code, 405);
    assert_eq!(
        st["message"],
        "create not allowed while custom resource definition is terminating"
    );
    // Its controller finishes: the object goes, then the CRD, then the resource.
    let (code, _) = send(
        "PATCH",
        &url(&server, "/guarded"),
        "application/merge-patch+json",
        r#"{"metadata": {"finalizers": null}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(get(&crd_url(&server, "widgets.example.com")).0, 404);
    assert_eq!(get(&url(&server, "")).0, 404);
}
