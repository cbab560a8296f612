//! Bodies byte for byte as kube-apiserver writes them (Go's `encoding/json` over the Go types): an object read back
//! with GET, in a LIST, in a watch event, and a `Status`. The golden bodies are k8s.io/api's round-trip fixtures
//! (`tests/fixtures/go-json`, Go's field order with every field set) less the fields the server sets, with the
//! values the server chose put in their place — the only normalization, named field by field.

mod common;

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
    let text = std::fs::read_to_string(common::fixture(&format!("go-json/{name}.json"))).unwrap();
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
    // In a Table, the row's object is the custom resource as it is written alone (Go's json.Marshal of the
    // unstructured map): sorted, where a built-in object keeps its Go order.
    let (code, table) = get_accepting(&format!("{widgets}?includeObject=Object"), TABLE);
    assert_eq!(code, 200, "{table}");
    assert!(table.contains(&format!(r#""object":{golden}}}]}}"#)), "{table}");
}

/// A JSON value with each object's keys in the order the body has them (serde_json's `Value` sorts them).
#[derive(Debug)]
enum Ordered {
    Object(Vec<(String, Ordered)>),
    Array(Vec<Ordered>),
    Other,
}

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut fields = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Ordered>()? {
                    fields.push((k, v));
                }
                Ok(Ordered::Object(fields))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element()? {
                    items.push(v);
                }
                Ok(Ordered::Array(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl Ordered {
    fn parse(body: &str) -> Ordered {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    /// The member `key` of an object.
    fn get(&self, key: &str) -> &Ordered {
        match self {
            Ordered::Object(fields) => fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no {key}: {self:?}")),
            _ => panic!("{key} of a non-object {self:?}"),
        }
    }

    /// The `i`th element of an array.
    fn at(&self, i: usize) -> &Ordered {
        match self {
            Ordered::Array(items) => &items[i],
            _ => panic!("[{i}] of a non-array {self:?}"),
        }
    }

    fn keys(&self) -> Vec<&str> {
        match self {
            Ordered::Object(fields) => fields.iter().map(|(k, _)| k.as_str()).collect(),
            _ => panic!("keys of a non-object {self:?}"),
        }
    }

    /// Asserts that the object's keys are those of `go` (a Go struct's JSON names in declaration order) that it has,
    /// in that order, and that it has those of `present`.
    fn assert_go_order(&self, go: &[&str], present: &[&str], what: &str) {
        let keys = self.keys();
        let expected: Vec<&str> = go.iter().copied().filter(|k| keys.contains(k)).collect();
        assert_eq!(keys, expected, "{what}: keys out of Go's order, or not the struct's");
        for k in present {
            assert!(keys.contains(k), "{what}: no {k} in {keys:?}");
        }
    }
}

/// kubectl get's `Accept`: a Table.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

fn get_accepting(url: &str, accept: &str) -> (u16, String) {
    let mut resp = agent().get(url).header("Accept", accept).call().unwrap();
    let code = resp.status().as_u16();
    (code, resp.body_mut().read_to_string().unwrap())
}

/// A Table answer is meta/v1's `Table` written by Go: its fields, its columns', its rows' and the rows' objects
/// (`PartialObjectMetadata`, or the object itself) each in their struct's declaration order.
#[test]
fn a_table_answer_is_in_go_struct_order() {
    let server = ApiServer::start().unwrap();
    let cms = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let cm = json!({"metadata": {"name": "t", "labels": {"a": "b"}}, "data": {"k": "v"}});
    assert_eq!(send("POST", &format!("{cms}?fieldManager=golden"), &cm).0, 201);
    for (query, kind) in [("", "PartialObjectMetadata"), ("?includeObject=Object", "ConfigMap")] {
        let (code, body) = get_accepting(&format!("{cms}{query}"), TABLE);
        assert_eq!(code, 200, "{body}");
        let table = Ordered::parse(&body);
        assert_eq!(
            table.keys(),
            ["kind", "apiVersion", "metadata", "columnDefinitions", "rows"],
            "{body}"
        );
        table.get("metadata").assert_go_order(
            &["selfLink", "resourceVersion", "continue", "remainingItemCount"],
            &["resourceVersion"],
            "ListMeta",
        );
        let column = table.get("columnDefinitions").at(0);
        assert_eq!(
            column.keys(),
            ["name", "type", "format", "description", "priority"],
            "{body}"
        );
        let row = table.get("rows").at(0);
        row.assert_go_order(&["cells", "conditions", "object"], &["cells", "object"], "TableRow");
        let object = row.get("object");
        let go: &[&str] = match kind {
            "ConfigMap" => &["kind", "apiVersion", "metadata", "immutable", "data", "binaryData"],
            _ => &["kind", "apiVersion", "metadata"],
        };
        object.assert_go_order(go, &["kind", "apiVersion", "metadata"], kind);
        // ObjectMeta's fields a config map has, in their declaration order (types.go).
        let go = [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "labels",
            "managedFields",
        ];
        assert_eq!(object.get("metadata").keys(), go, "{body}");
        assert!(body.contains(&format!(r#""object":{{"kind":"{kind}","#)), "{body}");
    }
}

/// meta/v1's `APIResource` (types.go), in declaration order.
const API_RESOURCE: &[&str] = &[
    "name",
    "singularName",
    "namespaced",
    "group",
    "version",
    "kind",
    "verbs",
    "shortNames",
    "categories",
    "storageVersionHash",
];

/// The legacy discovery documents are meta/v1's `APIResourceList`, `APIGroupList`, `APIGroup`, `APIVersions` and
/// `version.Info` as Go writes them: each struct's fields in declaration order.
#[test]
fn discovery_documents_are_in_go_struct_order() {
    let server = ApiServer::start().unwrap();
    let (code, body) = get_bytes(&format!("{}/apis/apps/v1", server.url()));
    assert_eq!(code, 200, "{body}");
    let list = Ordered::parse(&body);
    assert_eq!(
        list.keys(),
        ["kind", "apiVersion", "groupVersion", "resources"],
        "{body}"
    );
    let Ordered::Array(resources) = list.get("resources") else {
        panic!("{body}")
    };
    for r in resources {
        r.assert_go_order(
            API_RESOURCE,
            &["name", "singularName", "namespaced", "kind", "verbs"],
            "APIResource",
        );
    }
    // A subresource of another group's kind names its group and version: `deployments/scale` is autoscaling/v1.
    assert!(
        body.contains(r#"{"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]}"#),
        "{body}"
    );
    assert!(
        body.contains(
            r#"{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["#
        ),
        "{body}"
    );
    assert!(
        body.contains(r#"],"shortNames":["deploy"],"categories":["all"],"storageVersionHash":""#),
        "{body}"
    );

    let (_, body) = get_bytes(&format!("{}/apis", server.url()));
    let groups = Ordered::parse(&body);
    assert_eq!(groups.keys(), ["kind", "apiVersion", "groups"], "{body}");
    let first = groups.get("groups").at(0);
    let go = ["name", "versions", "preferredVersion", "serverAddressByClientCIDRs"];
    first.assert_go_order(&go, &["name", "versions", "preferredVersion"], "APIGroup");
    assert_eq!(
        first.get("preferredVersion").keys(),
        ["groupVersion", "version"],
        "{body}"
    );
    let (_, body) = get_bytes(&format!("{}/apis/apps", server.url()));
    assert!(body.starts_with(r#"{"kind":"APIGroup","apiVersion":"v1","name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}"#), "{body}");

    // `/api`: kind without apiVersion, as kube-apiserver sends it.
    let (_, body) = get_bytes(&format!("{}/api", server.url()));
    assert!(
        body.starts_with(r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":""#),
        "{body}"
    );
    let (_, body) = get_bytes(&format!("{}/version", server.url()));
    let keys = Ordered::parse(&body).keys().join(",");
    assert_eq!(
        keys, "major,minor,gitVersion,gitCommit,gitTreeState,buildDate,goVersion,compiler,platform",
        "{body}"
    );
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`, as kubectl and client-go ask it first): apidiscovery's structs
/// in their declaration order, down to each resource's `responseKind` (meta/v1 `GroupVersionKind`).
#[test]
fn aggregated_discovery_is_in_go_struct_order() {
    let server = ApiServer::start().unwrap();
    for v in ["v2", "v2beta1"] {
        let accept = format!("application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList");
        let (code, body) = get_accepting(&format!("{}/apis", server.url()), &accept);
        assert_eq!(code, 200, "{body}");
        let doc = Ordered::parse(&body);
        assert_eq!(doc.keys(), ["kind", "apiVersion", "metadata", "items"], "{body}");
        let group = doc.get("items").at(0);
        assert_eq!(group.keys(), ["metadata", "versions"], "{body}");
        assert_eq!(group.get("metadata").keys(), ["name", "creationTimestamp"], "{body}");
        let version = group.get("versions").at(0);
        assert_eq!(version.keys(), ["version", "resources", "freshness"], "{body}");
        let Ordered::Array(resources) = version.get("resources") else {
            panic!("{body}")
        };
        let go = [
            "resource",
            "responseKind",
            "scope",
            "singularResource",
            "verbs",
            "shortNames",
            "categories",
            "subresources",
        ];
        for r in resources {
            r.assert_go_order(
                &go,
                &["resource", "responseKind", "scope", "singularResource", "verbs"],
                "APIResourceDiscovery",
            );
            assert_eq!(r.get("responseKind").keys(), ["group", "version", "kind"], "{body}");
        }
        assert!(
            body.contains(r#"{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]}"#),
            "{body}"
        );
    }
}

/// A kind of a group the field table gained with its Go order (storage.k8s.io): read back in `StorageClass`'s
/// declaration order, not sorted.
#[test]
fn a_storage_class_reads_back_in_go_field_order() {
    let server = ApiServer::start().unwrap();
    let classes = format!("{}/apis/storage.k8s.io/v1/storageclasses", server.url());
    let sc = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
        "volumeBindingMode": "WaitForFirstConsumer", "provisioner": "example.com/p", "parameters": {"b": "1", "a": "2"},
        "reclaimPolicy": "Retain", "allowVolumeExpansion": true, "mountOptions": ["ro"]});
    let (code, created) = send("POST", &classes, &sc);
    assert_eq!(code, 201, "{created}");
    let (_, got) = get_bytes(&format!("{classes}/fast"));
    assert_eq!(got, created);
    assert!(
        got.starts_with(r#"{"kind":"StorageClass","apiVersion":"storage.k8s.io/v1","metadata":{"name":"fast","uid":"#),
        "{got}"
    );
    assert!(
        got.ends_with(concat!(
            r#"},"provisioner":"example.com/p","parameters":{"a":"2","b":"1"},"reclaimPolicy":"Retain","#,
            r#""mountOptions":["ro"],"allowVolumeExpansion":true,"volumeBindingMode":"WaitForFirstConsumer"}"#,
            "\n"
        )),
        "{got}"
    );
}

/// A CustomResourceDefinition is apiextensions' Go struct: its schema's `JSONSchemaProps` in declaration order,
/// also where a `JSONSchemaPropsOrBool` holds one (`additionalProperties`).
#[test]
fn a_custom_resource_definition_reads_back_in_go_field_order() {
    let server = ApiServer::start().unwrap();
    let crds = format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        server.url()
    );
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "additionalProperties": {"type": "string", "maxLength": 3}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    let (code, created) = send("POST", &crds, &crd);
    assert_eq!(code, 201, "{created}");
    let (_, got) = get_bytes(&format!("{crds}/gadgets.example.com"));
    assert!(
        got.starts_with(r#"{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"gadgets.example.com","uid":"#),
        "{got}"
    );
    assert!(
        got.contains(concat!(
            r#""schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","#,
            r#""additionalProperties":{"type":"string","maxLength":3}}}}}"#
        )),
        "{got}"
    );
    let doc = Ordered::parse(&got);
    assert_eq!(
        doc.keys(),
        ["kind", "apiVersion", "metadata", "spec", "status"],
        "{got}"
    );
    let go = [
        "group",
        "names",
        "scope",
        "versions",
        "conversion",
        "preserveUnknownFields",
    ];
    doc.get("spec").assert_go_order(
        &go,
        &["group", "names", "scope", "versions"],
        "CustomResourceDefinitionSpec",
    );
    let go = ["plural", "singular", "shortNames", "kind", "listKind", "categories"];
    doc.get("spec")
        .get("names")
        .assert_go_order(&go, &["plural", "singular", "kind"], "CustomResourceDefinitionNames");
}
