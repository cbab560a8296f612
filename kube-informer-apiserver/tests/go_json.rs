//! Bodies byte for byte as kube-apiserver writes them (Go's `encoding/json` over the Go types): an object read back
//! with GET, in a LIST, in a watch event, and a `Status`. The golden bodies are k8s.io/api's round-trip fixtures
//! (`tests/fixtures/go-json`, Go's field order with every field set) less the fields the server sets, with the
//! values the server chose put in their place — the only normalization, named field by field.

use std::io::{BufRead, BufReader};

use kube_informer_apiserver::ApiServer;
use serde_json::{Value, json};

fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .proxy(None)
            .http_status_as_error(false)
            .build(),
    )
}

/// The exact body of a GET.
fn get_bytes(url: &str) -> (u16, String) {
    let mut resp = agent().get(url).call().unwrap();
    let code = resp.status().as_u16();
    (code, resp.body_mut().read_to_string().unwrap())
}

fn send(method: &str, url: &str, body: &Value) -> (u16, String) {
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .unwrap();
    let mut resp = agent().run(req).unwrap();
    let code = resp.status().as_u16();
    (code, resp.body_mut().read_to_string().unwrap())
}

/// k8s.io/api's fixture, compacted as Go's `json.Compact` would (whitespace outside strings dropped).
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/go-json/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in text.chars() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c.is_ascii_whitespace() {
            continue;
        } else {
            in_string = c == '"';
        }
        out.push(c);
    }
    out
}

/// Replaces `from` (which must occur exactly once) with `to`: each edit of a fixture named where it is made.
fn edit(body: &str, from: &str, to: &str) -> String {
    assert_eq!(body.matches(from).count(), 1, "{from} in {body}");
    body.replacen(from, to, 1)
}

/// The exact body of a LIST, and the list's resourceVersion.
fn list_and_revision(url: &str) -> (String, String) {
    let (code, list) = get_bytes(url);
    assert_eq!(code, 200, "{list}");
    let v: Value = serde_json::from_str(&list).unwrap();
    let rv = v["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    (list, rv)
}

/// What the server set on an object it stored: uid, resourceVersion, creationTimestamp and the time of its one
/// managed-fields entry.
struct ServerSet {
    uid: String,
    rv: String,
    created: String,
    managed_time: String,
}

fn server_set(body: &str) -> ServerSet {
    let v: Value = serde_json::from_str(body).unwrap();
    let m = &v["metadata"];
    let s = |v: &Value| v.as_str().unwrap().to_owned();
    ServerSet {
        uid: s(&m["uid"]),
        rv: s(&m["resourceVersion"]),
        created: s(&m["creationTimestamp"]),
        managed_time: s(&m["managedFields"][0]["time"]),
    }
}

/// The fixture's ConfigMap as a client would create it (the fields a client may not set removed), and the body
/// kube-apiserver answers for it: the fixture with the server's metadata in the places Go's `ObjectMeta` gives.
fn config_map(set: Option<&ServerSet>) -> String {
    let go = fixture("core.v1.ConfigMap");
    let metadata_head = r#""metadata":{"name":"nameValue","generateName":"generateNameValue","namespace":"namespaceValue","selfLink":"selfLinkValue","uid":"uidValue","resourceVersion":"resourceVersionValue","generation":7,"creationTimestamp":"2008-01-01T01:01:01Z","deletionTimestamp":"2009-01-01T01:01:01Z","deletionGracePeriodSeconds":10,"#;
    let metadata_tail = r#","ownerReferences":[{"apiVersion":"apiVersionValue","kind":"kindValue","name":"nameValue","uid":"uidValue","controller":true,"blockOwnerDeletion":true}],"finalizers":["finalizersValue"],"managedFields":[{"manager":"managerValue","operation":"operationValue","apiVersion":"apiVersionValue","time":"2004-01-01T01:01:01Z","fieldsType":"fieldsTypeValue","fieldsV1":{},"subresource":"subresourceValue"}]},"#;
    // A value Go escapes: its HTML escaping and U+2028.
    let go = edit(
        &go,
        r#""data":{"dataKey":"dataValue"}"#,
        r#""data":{"dataKey":"dataValue","html":"a<b>&c\u2028d"}"#,
    );
    match set {
        None => {
            let go = edit(&go, metadata_head, r#""metadata":{"name":"cm","namespace":"default","#);
            edit(&go, metadata_tail, "},")
        }
        Some(s) => {
            let head = format!(
                r#""metadata":{{"name":"cm","namespace":"default","uid":"{}","resourceVersion":"{}","creationTimestamp":"{}","#,
                s.uid, s.rv, s.created
            );
            let tail = format!(
                r#","managedFields":[{{"manager":"golden","operation":"Update","apiVersion":"v1","time":"{}","fieldsType":"FieldsV1","fieldsV1":{{"f:binaryData":{{".":{{}},"f:binaryDataKey":{{}}}},"f:data":{{".":{{}},"f:dataKey":{{}},"f:html":{{}}}},"f:immutable":{{}},"f:metadata":{{"f:annotations":{{".":{{}},"f:annotationsKey":{{}}}},"f:labels":{{".":{{}},"f:labelsKey":{{}}}}}}}}}}]}},"#,
                s.managed_time
            );
            let go = edit(&go, metadata_head, &head);
            let go = edit(&go, metadata_tail, &tail);
            edit(
                &go,
                r#""html":"a<b>&c\u2028d""#,
                r#""html":"a\u003cb\u003e\u0026c\u2028d""#,
            )
        }
    }
}

#[test]
fn an_object_reads_back_byte_for_byte_as_kube_apiserver_writes_it() {
    let server = ApiServer::start().unwrap();
    let cms = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let request: Value = serde_json::from_str(&config_map(None)).unwrap();
    let (code, created) = send("POST", &format!("{cms}?fieldManager=golden"), &request);
    assert_eq!(code, 201, "{created}");
    let set = server_set(&created);
    let golden = config_map(Some(&set));
    // kube-apiserver's `json.Encoder` ends each document with a newline.
    assert_eq!(created, format!("{golden}\n"));
    let (code, got) = get_bytes(&format!("{cms}/cm"));
    assert_eq!((code, got), (200, format!("{golden}\n")));

    // A list: TypeMeta, ListMeta in its order, then the items as stored.
    let (list, rv) = list_and_revision(&cms);
    assert_eq!(
        list,
        format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{golden}]}}"#
        ) + "\n"
    );
    let (_, page) = get_bytes(&format!("{cms}?limit=1"));
    assert!(
        page.starts_with(r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":""#),
        "{page}"
    );

    // A watch event: `type`, then `object`, the object's bytes as GET gives them.
    let resp = agent()
        .get(&format!("{cms}?watch=1&resourceVersion=0&timeoutSeconds=5"))
        .call()
        .unwrap();
    let mut line = String::new();
    BufReader::new(resp.into_body().into_reader())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, format!(r#"{{"type":"ADDED","object":{golden}}}"#) + "\n");
}

#[test]
fn a_pod_keeps_go_field_order_down_to_its_containers() {
    let server = ApiServer::start().unwrap();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"b": "1", "a": "2"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"protocol": "TCP", "containerPort": 80}]}],
                 "initContainers": [{"name": "i", "image": "busybox", "command": ["true"]}]}});
    let (code, created) = send("POST", &format!("{pods}?fieldManager=golden"), &pod);
    assert_eq!(code, 201, "{created}");
    let (_, got) = get_bytes(&format!("{pods}/p"));
    assert_eq!(got, created);
    // Go's order: kind, apiVersion, ObjectMeta's fields, then PodSpec's — volumes, initContainers (protobuf
    // field 20), containers (2) — and each Container's: name, image, command, … ports, … resources.
    let at = |needle: &str| got.find(needle).unwrap_or_else(|| panic!("{needle} in {got}"));
    assert!(got.starts_with(r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"default","uid":""#));
    assert!(at(r#""labels":{"a":"2","b":"1"}"#) < at(r#""managedFields""#));
    assert!(at(r#""spec":{"#) < at(r#""initContainers":[{"name":"i","image":"busybox","command":["true"]"#));
    assert!(
        at(r#""initContainers""#)
            < at(r#""containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80,"protocol":"TCP"}]"#)
    );
    assert!(at(r#""containers""#) < at(r#""status":{"#));
}

/// kube-rs's cluster test `fetch_fails` reads a Service as a Pod and asserts serde's error at column 17: `kind`
/// is the first field kube-apiserver writes.
#[test]
fn kind_is_the_first_field_as_kube_rs_expects() {
    let server = ApiServer::start().unwrap();
    // The `kubernetes` Service kube-apiserver creates at start, as kube-rs's test reads it.
    let services = format!("{}/api/v1/namespaces/default/services", server.url());
    let (_, got) = get_bytes(&format!("{services}/kubernetes"));
    assert!(
        got.starts_with(r#"{"kind":"Service","apiVersion":"v1","metadata":{"name":"kubernetes","#),
        "{got}"
    );
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct PodKind {
        #[serde(deserialize_with = "pod_kind")]
        kind: String,
    }
    fn pod_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let k = <String as serde::Deserialize>::deserialize(d)?;
        if k == "Pod" {
            Ok(k)
        } else {
            Err(serde::de::Error::invalid_value(serde::de::Unexpected::Str(&k), &"Pod"))
        }
    }
    let err = serde_json::from_str::<PodKind>(&got).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value: string \"Service\", expected Pod at line 1 column 17"
    );
}

#[test]
fn status_bodies_are_written_as_kube_apiserver_writes_them() {
    let server = ApiServer::start().unwrap();
    let cms = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let (code, body) = get_bytes(&format!("{cms}/nope"));
    assert_eq!(
        (code, body),
        (
            404,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"configmaps"},"code":404}"#.to_owned() + "\n"
        )
    );
    // A delete's `Success`: details in StatusDetails' order (name, group, kind, uid).
    let (code, created) = send("POST", &cms, &json!({"metadata": {"name": "x"}}));
    assert_eq!(code, 201);
    let uid = serde_json::from_str::<Value>(&created).unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, body) = send("DELETE", &format!("{cms}/x"), &json!({}));
    assert_eq!(
        (code, body),
        (
            200,
            format!(
                r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Success","details":{{"name":"x","kind":"configmaps","uid":"{uid}"}}}}"#
            ) + "\n"
        )
    );
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// A custom resource is an `unstructured.Unstructured` (a `map[string]interface{}`): every key sorted, its list's
/// too (`apiVersion`, `items`, `kind`, `metadata`, as apimachinery's streaming list encoder writes it).
#[test]
fn custom_resources_and_their_lists_have_sorted_keys() {
    let server = ApiServer::builder().crd(CRD).start().unwrap();
    let widgets = format!("{}/apis/example.com/v1/namespaces/default/widgets", server.url());
    let w = json!({"kind": "Widget", "apiVersion": "example.com/v1", "metadata": {"name": "w"},
        "spec": {"zeta": 1.0, "alpha": {"b": "<&>", "a": [2, 1.5]}}});
    let (code, created) = send("POST", &format!("{widgets}?fieldManager=golden"), &w);
    assert_eq!(code, 201, "{created}");
    let set = server_set(&created);
    let golden = format!(
        concat!(
            r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"creationTimestamp":"{}","generation":1,"#,
            r#""managedFields":[{{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{{"f:spec":{{".":{{}},"#,
            r#""f:alpha":{{".":{{}},"f:a":{{}},"f:b":{{}}}},"f:zeta":{{}}}}}},"manager":"golden","operation":"Update","time":"{}"}}],"#,
            r#""name":"w","namespace":"default","resourceVersion":"{}","uid":"{}"}},"#,
            r#""spec":{{"alpha":{{"a":[2,1.5],"b":"\u003c\u0026\u003e"}},"zeta":1}}}}"#
        ),
        set.created, set.managed_time, set.rv, set.uid
    );
    assert_eq!(created, format!("{golden}\n"));
    let (list, rv) = list_and_revision(&widgets);
    assert_eq!(
        list,
        format!(
            r#"{{"apiVersion":"example.com/v1","items":[{golden}],"kind":"WidgetList","metadata":{{"resourceVersion":"{rv}"}}}}"#
        ) + "\n"
    );
}
