//! What the embedded server stores for the objects `kubectl create` makes, compared with what kube-apiserver 1.34
//! stores for them: the request bodies are kubectl 1.32's own (tests/fixtures/protobuf/, both its protobuf bytes and
//! the JSON of the same objects, which kubectl 1.20 sends), the expected objects are written from Kubernetes'
//! defaulting functions (`pkg/apis/core/v1/defaults.go`, `pkg/apis/apps/v1/defaults.go`), registry strategies and
//! the service allocators, and their `managedFields` as kube-apiserver's field manager computes them for kubectl's
//! `fieldManager=kubectl-create` (what the request set, defaults included; not what the strategies and allocators
//! add afterwards). Only what the server makes up differs between runs (uid, times, resourceVersion, the allocated
//! cluster IP), and those are checked for their form.

mod common;
#[path = "common/raw_http.rs"]
#[allow(unused_imports)] // its re-export of `eventually`
mod raw_http;

use common::fixture;
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A server with the namespaces these tests write in.
fn server() -> ApiServer {
    ApiServer::builder()
        .namespaces(["pb", "js", "other", "ns"])
        .start()
        .unwrap()
}

/// Creates the fixture's object at `path` (a collection URL path), sent as kubectl 1.32 sent it (protobuf, with its
/// `fieldManager=kubectl-create`) or as JSON, and reads it back.
fn create(server: &ApiServer, path: &str, fixture_name: &str, protobuf: bool) -> Value {
    let (content_type, body) = if protobuf {
        (
            PROTOBUF,
            std::fs::read(fixture(&format!("protobuf/{fixture_name}.bin"))).unwrap(),
        )
    } else {
        (
            "application/json",
            std::fs::read(fixture(&format!("protobuf/{fixture_name}.json"))).unwrap(),
        )
    };
    let url = format!("{}{path}", server.url());
    let r = agent()
        .post(&format!("{url}?fieldManager=kubectl-create"))
        .header("Content-Type", content_type)
        .send(&body[..])
        .unwrap();
    let code = r.status().as_u16();
    let created: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(code, 201, "{fixture_name}: {created}");
    let name = created["metadata"]["name"].as_str().unwrap();
    let text = agent()
        .get(&format!("{url}/{name}"))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(stored, created, "the answer to the create is what a read gives");
    stored
}

/// Checks and removes what the server makes up: uid, creationTimestamp, resourceVersion, the time of the managed
/// fields entry.
fn without_system_fields(mut v: Value) -> Value {
    let meta = v["metadata"].as_object_mut().unwrap();
    for entry in meta["managedFields"].as_array_mut().unwrap() {
        assert!(
            entry
                .as_object_mut()
                .unwrap()
                .remove("time")
                .unwrap()
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
    }
    assert_eq!(meta.remove("uid").unwrap().as_str().unwrap().len(), 36);
    assert!(
        meta.remove("creationTimestamp")
            .unwrap()
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert!(
        meta.remove("resourceVersion")
            .unwrap()
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
    v
}

/// Checks the allocated cluster IP (in 10.96.0.0/12, the same in `clusterIP` and `clusterIPs`) and replaces it with
/// `CLUSTER-IP`.
fn with_cluster_ip_checked(mut v: Value) -> Value {
    let ip: std::net::Ipv4Addr = v["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
    assert_eq!(u32::from(ip) >> 20, 0x0a6, "{ip} in 10.96.0.0/12");
    assert_eq!(v["spec"]["clusterIPs"], json!([ip.to_string()]));
    v["spec"]["clusterIP"] = json!("CLUSTER-IP");
    v["spec"]["clusterIPs"] = json!(["CLUSTER-IP"]);
    v
}

#[test]
fn kubectl_create_deployment_is_stored_as_kube_apiserver_stores_it() {
    // kubectl create deployment d --image=nginx --replicas=2 --port=80
    let server = server();
    for (ns, protobuf) in [("pb", true), ("js", false)] {
        let stored = create(
            &server,
            &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            "deployment",
            protobuf,
        );
        assert_eq!(
            without_system_fields(stored),
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "d", "namespace": ns, "generation": 1, "labels": {"app": "d"},
                    "managedFields": [{
                        "manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                            "f:spec": {
                                "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
                                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                                "f:template": {
                                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                    "f:spec": {
                                        "f:containers": {"k:{\"name\":\"nginx\"}": {
                                            ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                                            "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                                ".": {}, "f:containerPort": {}, "f:protocol": {}}},
                                            "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                                        "f:terminationGracePeriodSeconds": {}}}}},
                    }],
                },
                "spec": {
                    "progressDeadlineSeconds": 600,
                    "replicas": 2,
                    "revisionHistoryLimit": 10,
                    "selector": {"matchLabels": {"app": "d"}},
                    "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
                    "template": {
                        "metadata": {"labels": {"app": "d"}},
                        "spec": {
                            "containers": [{
                                "image": "nginx",
                                "imagePullPolicy": "Always",
                                "name": "nginx",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }],
                            "dnsPolicy": "ClusterFirst",
                            "restartPolicy": "Always",
                            "schedulerName": "default-scheduler",
                            "securityContext": {},
                            "terminationGracePeriodSeconds": 30,
                        },
                    },
                },
                "status": {},
            }),
            "protobuf body: {protobuf}"
        );
    }
}

#[test]
fn kubectl_create_secret_generic_is_stored_as_kube_apiserver_stores_it() {
    // kubectl create secret generic s --from-literal=k=v --from-literal=bin=$'\xff'
    let server = server();
    for (ns, protobuf) in [("pb", true), ("js", false)] {
        let stored = create(
            &server,
            &format!("/api/v1/namespaces/{ns}/secrets"),
            "secret-generic",
            protobuf,
        );
        assert_eq!(
            without_system_fields(stored),
            json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": ns, "managedFields": [{
                    "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:bin": {}, "f:k": {}}, "f:type": {}},
                }]},
                "data": {"bin": "/w==", "k": "dg=="},
                "type": "Opaque",
            }),
            "protobuf body: {protobuf}"
        );
    }
}

#[test]
fn kubectl_create_service_clusterip_is_stored_as_kube_apiserver_stores_it() {
    // kubectl create service clusterip svc --tcp=80:8080 --tcp=443:https
    let server = server();
    let mut ips = Vec::new();
    for (ns, protobuf) in [("pb", true), ("js", false)] {
        let stored = create(
            &server,
            &format!("/api/v1/namespaces/{ns}/services"),
            "service-clusterip",
            protobuf,
        );
        ips.push(stored["spec"]["clusterIP"].clone());
        assert_eq!(
            with_cluster_ip_checked(without_system_fields(stored)),
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "svc", "namespace": ns, "labels": {"app": "svc"}, "managedFields": [{
                    "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        // The cluster IP and the IP families, allocated after the field manager ran, are no one's.
                        "f:spec": {
                            "f:internalTrafficPolicy": {},
                            "f:ports": {
                                ".": {},
                                "k:{\"port\":443,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}},
                                "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}},
                            },
                            "f:selector": {}, "f:sessionAffinity": {}, "f:type": {},
                        },
                    },
                }]},
                "spec": {
                    "clusterIP": "CLUSTER-IP",
                    "clusterIPs": ["CLUSTER-IP"],
                    "internalTrafficPolicy": "Cluster",
                    "ipFamilies": ["IPv4"],
                    "ipFamilyPolicy": "SingleStack",
                    "ports": [
                        {"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080},
                        {"name": "443-https", "port": 443, "protocol": "TCP", "targetPort": "https"},
                    ],
                    "selector": {"app": "svc"},
                    "sessionAffinity": "None",
                    "type": "ClusterIP",
                },
                "status": {"loadBalancer": {}},
            }),
            "protobuf body: {protobuf}"
        );
    }
    assert_ne!(ips[0], ips[1], "two services, two addresses");
}

#[test]
fn kubectl_create_service_nodeport_is_stored_as_kube_apiserver_stores_it() {
    // kubectl create service nodeport np --tcp=80:8080 --node-port=30080
    let server = server();
    let stored = create(&server, "/api/v1/namespaces/pb/services", "service-nodeport", true);
    assert_eq!(
        with_cluster_ip_checked(without_system_fields(stored)),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "np", "namespace": "pb", "labels": {"app": "np"}, "managedFields": [{
                "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:externalTrafficPolicy": {}, "f:internalTrafficPolicy": {},
                        "f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:name": {}, "f:nodePort": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
                        "f:selector": {}, "f:sessionAffinity": {}, "f:type": {},
                    },
                },
            }]},
            "spec": {
                "clusterIP": "CLUSTER-IP",
                "clusterIPs": ["CLUSTER-IP"],
                "externalTrafficPolicy": "Cluster",
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"name": "80-8080", "nodePort": 30080, "port": 80, "protocol": "TCP", "targetPort": 8080}],
                "selector": {"app": "np"},
                "sessionAffinity": "None",
                "type": "NodePort",
            },
            "status": {"loadBalancer": {}},
        })
    );
    // The node port is taken now: the same request in another namespace is refused as kube-apiserver refuses it.
    let body = std::fs::read(fixture("protobuf/service-nodeport.bin")).unwrap();
    let url = format!("{}/api/v1/namespaces/other/services", server.url());
    let r = agent()
        .post(&url)
        .header("Content-Type", PROTOBUF)
        .send(&body[..])
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let status: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(
        status["message"],
        "Service \"np\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
    );
}

#[test]
fn kubectl_create_namespace_is_stored_as_kube_apiserver_stores_it() {
    // kubectl create namespace n1
    for protobuf in [true, false] {
        let server = server();
        let stored = create(&server, "/api/v1/namespaces", "namespace", protobuf);
        assert_eq!(
            without_system_fields(stored),
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "n1", "labels": {"kubernetes.io/metadata.name": "n1"}, "managedFields": [{
                    "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                    // The `kubernetes` finalizer, added by the strategy, is no one's.
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}},
                }]},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }),
            "protobuf body: {protobuf}"
        );
    }
}

#[test]
fn a_controller_writing_its_desired_spec_back_changes_nothing() {
    // The classic endless reconcile: a controller compares the stored deployment with what it wants, finds the
    // server's defaults "missing" and writes again. Against kube-apiserver (and now here) the second write of the
    // same desired object is a no-op: same resourceVersion, same generation, no watch event.
    let server = server();
    let url = format!("{}/apis/apps/v1/namespaces/ns/deployments", server.url());
    let desired = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}},
        },
    });
    let r = agent()
        .post(&url)
        .header("Content-Type", "application/json")
        .send(desired.to_string())
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let created: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    let r = agent()
        .put(&format!("{url}/web"))
        .header("Content-Type", "application/json")
        .send(desired.to_string())
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let replaced: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(replaced, created);
}
