//! The built-in kinds' rules through the write paths (create, update, status update, patch), against objects written
//! from Kubernetes' defaulting functions and registry strategies (cases after `pkg/apis/core/v1/defaults_test.go`,
//! `pkg/apis/apps/v1/defaults_test.go` and the service storage tests).

use serde_json::{Value, json};

use crate::admission::Admission;
use crate::patch::managed_fields::Writer;
use crate::registry::Store;
use crate::registry::resource::ResourceSpec;
use crate::registry::strategy::{self, DeleteOptions, PatchType, Target};
use kube_informer::object::Status;

struct Fixture {
    store: Store,
}

impl Fixture {
    fn new() -> Self {
        let store = Store::new(1, 1000, Self::specs(), crate::admission::HOOKS);
        // Objects are created in namespace `ns`, which must exist (NamespaceLifecycle).
        crate::registry::bootstrap::namespace(&store, "ns").unwrap();
        Fixture { store }
    }

    /// The default resources and CRDs, as a server has them.
    fn specs() -> Vec<ResourceSpec> {
        let mut specs = ResourceSpec::defaults();
        specs.push(crate::registry::builtin_kinds::crd_resource());
        specs
    }

    fn spec(&self, plural: &str) -> ResourceSpec {
        Self::specs()
            .into_iter()
            .find(|s| s.api.plural == plural)
            .expect("a default resource")
    }

    fn ns(&self, plural: &str) -> Option<&'static str> {
        self.spec(plural).api.namespaced.then_some("ns")
    }

    fn create(&self, plural: &str, body: Value) -> Result<Value, Box<Status>> {
        self.create_opt(plural, body, false)
    }

    fn create_opt(&self, plural: &str, mut body: Value, dry_run: bool) -> Result<Value, Box<Status>> {
        let spec = self.spec(plural);
        Admission::quiet(&spec).admit(&mut body)?;
        strategy::create(&self.store, &spec, self.ns(plural), body, dry_run, "test", &mut |_| {})
            .map(|w| w.object.to_value())
    }

    fn update(&self, plural: &str, body: Value) -> Result<Value, Box<Status>> {
        self.write(plural, body, false)
    }

    fn update_status(&self, plural: &str, body: Value) -> Result<Value, Box<Status>> {
        self.write(plural, body, true)
    }

    fn write(&self, plural: &str, mut body: Value, status_only: bool) -> Result<Value, Box<Status>> {
        let spec = self.spec(plural);
        Admission::quiet(&spec).admit(&mut body)?;
        let name = body["metadata"]["name"].as_str().unwrap().to_owned();
        strategy::update(
            Target::new(&self.store, &spec, self.ns(plural), &name),
            body,
            status_only,
            "test",
            &mut |_| {},
        )
        .map(|w| w.object.to_value())
    }

    fn patch(&self, plural: &str, name: &str, kind: PatchType, doc: Value) -> Result<Value, Box<Status>> {
        let spec = self.spec(plural);
        strategy::patch(
            Target::new(&self.store, &spec, self.ns(plural), name),
            kind,
            &doc,
            false,
            &Writer {
                manager: "test".into(),
                force: false,
            },
            &mut |obj| Admission::quiet(&spec).admit(obj),
            &mut |_| {},
        )
        .map(|w| w.object.to_value())
    }

    fn delete(&self, plural: &str, name: &str) {
        let spec = self.spec(plural);
        strategy::delete(
            &self.store,
            &spec,
            self.ns(plural),
            name,
            &DeleteOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    }
}

/// The object without the fields the generic registry and the field manager set (uid, times, resourceVersion,
/// generation, managedFields): what defaulting does is compared.
fn without_system_fields(mut v: Value) -> Value {
    if let Some(m) = v["metadata"].as_object_mut() {
        for k in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "generation",
            "managedFields",
        ] {
            m.remove(k);
        }
    }
    v
}

#[test]
fn configmaps_and_leases_change_only_by_go_encoding() {
    let f = Fixture::new();
    let cm = f
        .create("configmaps", json!({"metadata": {"name": "c"}, "data": {"a": "b"}}))
        .unwrap();
    assert_eq!(
        without_system_fields(cm),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "b"}})
    );
    let lease = f.create("leases", json!({"metadata": {"name": "l"}})).unwrap();
    assert_eq!(lease["spec"], json!({}));
}

#[test]
fn secrets_are_opaque_unless_typed() {
    let f = Fixture::new();
    let s = f
        .create("secrets", json!({"metadata": {"name": "pw"}, "data": {"p": "aA=="}}))
        .unwrap();
    assert_eq!(s["type"], "Opaque");
    let typed = json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls"});
    assert_eq!(f.create("secrets", typed).unwrap()["type"], "kubernetes.io/tls");
    let empty = json!({"metadata": {"name": "e"}, "type": ""});
    assert_eq!(f.create("secrets", empty).unwrap()["type"], "Opaque");
    // A PUT without the type, and a merge patch removing it, are defaulted again: nothing changes.
    let before = f.store.lock().rev();
    let put = f
        .update("secrets", json!({"metadata": {"name": "pw"}, "data": {"p": "aA=="}}))
        .unwrap();
    assert_eq!((put["type"].as_str(), f.store.lock().rev()), (Some("Opaque"), before));
    let patched = f
        .patch("secrets", "pw", PatchType::Merge, json!({"type": null}))
        .unwrap();
    assert_eq!(patched["type"], "Opaque");
}

#[test]
fn namespaces_get_label_finalizer_and_phase() {
    let f = Fixture::new();
    let ns = f.create("namespaces", json!({"metadata": {"name": "team"}})).unwrap();
    assert_eq!(
        without_system_fields(ns),
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "team"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        })
    );
    // kubectl 1.32's protobuf body decodes to empty spec and status; a generated name gets its label too.
    let generated = f
        .create(
            "namespaces",
            json!({"metadata": {"generateName": "gen-"}, "spec": {}, "status": {"phase": "Terminating"}}),
        )
        .unwrap();
    let name = generated["metadata"]["name"].as_str().unwrap();
    assert_eq!(generated["metadata"]["labels"]["kubernetes.io/metadata.name"], name);
    assert_eq!(generated["status"], json!({"phase": "Active"}));
    let own = f
        .create(
            "namespaces",
            json!({"metadata": {"name": "own"}, "spec": {"finalizers": ["x.io/y"]}}),
        )
        .unwrap();
    assert_eq!(own["spec"]["finalizers"], json!(["x.io/y", "kubernetes"]));
    // An update keeps spec.finalizers (the finalize subresource changes them) and the label.
    let put = f
        .update(
            "namespaces",
            json!({"metadata": {"name": "team", "labels": {"a": "b"}}, "spec": {"finalizers": []}}),
        )
        .unwrap();
    assert_eq!(put["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(
        put["metadata"]["labels"],
        json!({"a": "b", "kubernetes.io/metadata.name": "team"})
    );
    // A status write without a phase is defaulted to Active; the spec stays.
    let status = f
        .update_status("namespaces", json!({"metadata": {"name": "team"}, "status": {}}))
        .unwrap();
    assert_eq!(
        (status["status"].clone(), status["spec"].clone()),
        (json!({"phase": "Active"}), put["spec"].clone())
    );
}

fn nginx_template() -> Value {
    json!({
        "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {}}]},
    })
}

/// The pod spec kube-apiserver stores for [`nginx_template`]'s.
fn nginx_spec_defaulted() -> Value {
    json!({
        "containers": [{
            "name": "nginx", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        }],
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "securityContext": {}, "terminationGracePeriodSeconds": 30,
    })
}

#[test]
fn pods_get_spec_defaults_and_a_pending_status() {
    let f = Fixture::new();
    let pod = f
        .create("pods", json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}, "status": {"phase": "Running"}}))
        .unwrap();
    let mut spec = nginx_spec_defaulted();
    spec["enableServiceLinks"] = json!(true);
    assert_eq!(pod["spec"], spec);
    assert_eq!(pod["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    assert_eq!(pod["metadata"]["generation"], 1);
}

#[test]
fn pod_containers_probes_and_volumes_are_defaulted() {
    let f = Fixture::new();
    let pod = f
        .create(
            "pods",
            json!({
                "metadata": {"name": "p"},
                "spec": {
                    "hostNetwork": true,
                    "initContainers": [{"name": "init", "image": "busybox", "ports": [{"containerPort": 53, "protocol": "UDP"}]}],
                    "containers": [{
                        "name": "app", "image": "registry.example:5000/app@sha256:0123456789abcdef0123456789abcdef",
                        "ports": [{"containerPort": 8080}, {"containerPort": 9090, "hostPort": 19090}],
                        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}],
                        "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}, "requests": {"cpu": "250m"}},
                        "livenessProbe": {"httpGet": {"port": 8080}},
                        "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5},
                        "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
                        "lifecycle": {"preStop": {"httpGet": {"port": "http", "path": "/stop"}}},
                    }],
                    "volumes": [
                        {"name": "scratch"},
                        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1024Mi"}},
                        {"name": "cfg", "configMap": {"name": "c"}},
                        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
                        {"name": "host", "hostPath": {"path": "/var/log"}},
                        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                        {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                        {"name": "claim", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5Gi"}}}}}},
                    ],
                },
            }),
        )
        .unwrap();
    let spec = &pod["spec"];
    let init = &spec["initContainers"][0];
    assert_eq!(init["imagePullPolicy"], "Always", "no tag means latest");
    assert_eq!(
        init["ports"],
        json!([{"containerPort": 53, "protocol": "UDP", "hostPort": 53}])
    );
    let app = &spec["containers"][0];
    assert_eq!(app["imagePullPolicy"], "IfNotPresent", "a digest and no tag");
    assert_eq!(
        app["ports"],
        json!([{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}, {"containerPort": 9090, "hostPort": 19090, "protocol": "TCP"}])
    );
    assert_eq!(
        app["env"][0]["valueFrom"]["fieldRef"],
        json!({"apiVersion": "v1", "fieldPath": "spec.nodeName"})
    );
    assert_eq!(
        app["env"][1]["valueFrom"]["resourceFieldRef"],
        json!({"resource": "limits.memory", "divisor": "0"})
    );
    assert_eq!(
        app["resources"],
        json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1Gi"}}),
        "requests copied from limits, quantities canonical"
    );
    let probe_defaults =
        json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
    let mut liveness = probe_defaults.clone();
    liveness["httpGet"] = json!({"port": 8080, "path": "/", "scheme": "HTTP"});
    assert_eq!(app["livenessProbe"], liveness);
    let mut readiness = probe_defaults.clone();
    readiness["periodSeconds"] = json!(5);
    readiness["grpc"] = json!({"port": 9000, "service": ""});
    assert_eq!(app["readinessProbe"], readiness);
    assert_eq!(app["startupProbe"]["failureThreshold"], 30);
    assert_eq!(
        app["lifecycle"]["preStop"]["httpGet"],
        json!({"port": "http", "path": "/stop", "scheme": "HTTP"})
    );
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "scratch", "emptyDir": {}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
            {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": ""}},
            {"name": "info", "downwardAPI": {"defaultMode": 420, "items": [{"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
            {"name": "token", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}},
            {"name": "claim", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem", "resources": {"requests": {"storage": "1536Mi"}}}}}},
        ])
    );
    assert_eq!(pod["status"]["qosClass"], "Burstable");
}

#[test]
fn pod_qos_scheduling_gates_label_keys_and_apparmor_on_create() {
    let f = Fixture::new();
    let both = json!({"cpu": "1", "memory": "1Gi"});
    let pod = f
        .create(
            "pods",
            json!({
                "metadata": {"name": "g", "labels": {"app": "web", "tier": "front"},
                             "annotations": {"container.apparmor.security.beta.kubernetes.io/c": "localhost/prof"}},
                "spec": {
                    "containers": [{"name": "c", "image": "x:1", "resources": {"limits": both}}],
                    "schedulingGates": [{"name": "wait"}],
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}},
                        "matchLabelKeys": ["tier"], "mismatchLabelKeys": ["missing"],
                    }]}},
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "matchLabelKeys": ["app"]}],
                },
            }),
        )
        .unwrap();
    assert_eq!(
        pod["status"]["qosClass"], "Guaranteed",
        "requests defaulted from limits"
    );
    let condition = &pod["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"],
            &condition["lastProbeTime"]
        ),
        (
            &json!("PodScheduled"),
            &json!("False"),
            &json!("SchedulingGated"),
            &Value::Null
        )
    );
    assert!(condition["lastTransitionTime"].is_string());
    let term = &pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        term["labelSelector"],
        json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]})
    );
    assert_eq!(
        pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"],
        json!([{"key": "app", "operator": "Exists"}, {"key": "app", "operator": "In", "values": ["web"]}])
    );
    assert_eq!(
        pod["spec"]["containers"][0]["securityContext"],
        json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": "prof"}})
    );
}

#[test]
fn pod_status_writes_keep_qos_and_observed_generations() {
    let f = Fixture::new();
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    f.create("pods", pod.clone()).unwrap();
    let mut status = pod.clone();
    status["status"] = json!({"phase": "Running", "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]});
    f.update_status("pods", status).unwrap();
    let mut next = pod.clone();
    next["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]});
    let got = f.update_status("pods", next).unwrap();
    assert_eq!(
        got["status"],
        json!({"phase": "Running", "qosClass": "BestEffort", "observedGeneration": 1,
               "conditions": [{"type": "Ready", "status": "False", "observedGeneration": 1}]})
    );
}

#[test]
fn deployments_from_kubectl_create_match_kube_apiserver() {
    let f = Fixture::new();
    // kubectl create deployment web --image=nginx:1.27 --replicas=2
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "creationTimestamp": null, "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": nginx_template(), "strategy": {}},
        "status": {},
    });
    let d = f.create("deployments", body).unwrap();
    assert_eq!(
        d["spec"],
        json!({
            "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": nginx_spec_defaulted()},
        })
    );
    assert_eq!(d["status"], json!({}));
    assert_eq!(
        d["spec"]["template"]["spec"].get("enableServiceLinks"),
        None,
        "pod-only default"
    );
    // A controller re-sending its desired spec (no defaults) changes nothing: no write, no generation bump.
    let before = f.store.lock().rev();
    let desired = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": nginx_template()}});
    let same = f.update("deployments", desired.clone()).unwrap();
    assert_eq!(
        (f.store.lock().rev(), &same["metadata"]["generation"]),
        (before, &json!(1))
    );
    // Leaving out replicas means one replica, as on a cluster.
    let mut fewer = desired;
    fewer["spec"].as_object_mut().unwrap().remove("replicas");
    let one = f.update("deployments", fewer).unwrap();
    assert_eq!(
        (one["spec"]["replicas"].clone(), one["metadata"]["generation"].clone()),
        (json!(1), json!(2))
    );
    let recreate = f
        .patch(
            "deployments",
            "web",
            PatchType::Merge,
            json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}),
        )
        .unwrap();
    assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn nodes_keep_their_status_on_create() {
    let f = Fixture::new();
    let node = f
        .create(
            "nodes",
            json!({"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4", "memory": "8388608Ki"}}}),
        )
        .unwrap();
    assert_eq!(node["spec"], json!({}));
    let status = &node["status"];
    assert_eq!(status["capacity"], json!({"cpu": "4", "memory": "8Gi"}));
    assert_eq!(status["allocatable"], status["capacity"]);
    assert_eq!(status["daemonEndpoints"], json!({"kubeletEndpoint": {"Port": 0}}));
    assert_eq!(status["nodeInfo"]["kubeletVersion"], "");
    assert_eq!(status["nodeInfo"].as_object().unwrap().len(), 10);
}

#[test]
fn events_carry_what_go_always_writes() {
    let f = Fixture::new();
    let ev = f
        .create(
            "events",
            json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R"}),
        )
        .unwrap();
    for (k, v) in [
        ("source", json!({})),
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
        ("eventTime", Value::Null),
    ] {
        assert_eq!(ev[k], v, "{k}");
    }
}

fn ip_in_service_range(ip: &str) -> bool {
    let n = u32::from(ip.parse::<std::net::Ipv4Addr>().unwrap());
    n >> 20 == 0x0a6 && n != 0x0a60_0000 && n != 0x0a60_0001 && n != 0x0a6f_ffff
}

#[test]
fn services_get_defaults_and_a_cluster_ip() {
    let f = Fixture::new();
    // kubectl create service clusterip web --tcp=80:8080
    let svc = f
        .create(
            "services",
            json!({"metadata": {"name": "web", "labels": {"app": "web"}},
                   "spec": {"ports": [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}],
                            "selector": {"app": "web"}, "type": "ClusterIP"},
                   "status": {"loadBalancer": {}}}),
        )
        .unwrap();
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
    assert!(ip_in_service_range(&ip), "{ip}");
    assert_eq!(
        svc["spec"],
        json!({
            "clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}],
            "selector": {"app": "web"}, "sessionAffinity": "None", "type": "ClusterIP",
        })
    );
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    // A second service gets another address; one asking for the first's is refused.
    let other = f
        .create(
            "services",
            json!({"metadata": {"name": "other"}, "spec": {"ports": [{"port": 53, "protocol": "UDP"}]}}),
        )
        .unwrap();
    assert_ne!(other["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    assert_eq!(other["spec"]["ports"][0]["targetPort"], 53);
    let taken = f.create(
        "services",
        json!({"metadata": {"name": "dup"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}),
    );
    let e = taken.unwrap_err();
    assert_eq!(e.code, 422);
    assert!(e.message.contains("provided IP is already allocated"), "{}", e.message);
    let outside = f.create(
        "services",
        json!({"metadata": {"name": "far"}, "spec": {"clusterIP": "10.0.0.10", "ports": [{"port": 80}]}}),
    );
    assert!(
        outside
            .unwrap_err()
            .message
            .contains("is not in the valid range. The range of valid IPs is 10.96.0.0/12")
    );
    let kubernetes = f.create(
        "services",
        json!({"metadata": {"name": "k"}, "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 443}]}}),
    );
    assert_eq!(kubernetes.unwrap_err().code, 422, "the kubernetes service's address");
    // Deleting frees the address; a dry run takes none.
    f.delete("services", "web");
    let again = json!({"metadata": {"name": "again"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}});
    assert_eq!(
        f.create_opt("services", again.clone(), true).unwrap()["spec"]["clusterIP"],
        ip.as_str()
    );
    assert_eq!(f.create("services", again).unwrap()["spec"]["clusterIPs"], json!([ip]));
}

#[test]
fn service_updates_keep_allocations_and_refuse_a_new_cluster_ip() {
    let f = Fixture::new();
    let base = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}});
    let created = f.create("services", base.clone()).unwrap();
    let before = f.store.lock().rev();
    // kubectl replace with the manifest: allocated values are kept, nothing changes.
    let same = f.update("services", base.clone()).unwrap();
    assert_eq!(
        (same["spec"].clone(), f.store.lock().rev()),
        (created["spec"].clone(), before)
    );
    let mut moved = base.clone();
    moved["spec"]["clusterIP"] = json!("10.96.7.7");
    let e = f.update("services", moved).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("spec.clusterIPs[0]: Invalid value: []string{\"10.96.7.7\"}: may not change once set"),
        "{}",
        e.message
    );
    // To NodePort: node ports allocated and kept on re-apply; back to ClusterIP: wiped.
    let node_port = f
        .patch("services", "s", PatchType::Merge, json!({"spec": {"type": "NodePort"}}))
        .unwrap();
    let np = node_port["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&np), "{np}");
    assert_eq!(node_port["spec"]["externalTrafficPolicy"], "Cluster");
    let mut as_node_port = base.clone();
    as_node_port["spec"]["type"] = json!("NodePort");
    assert_eq!(
        f.update("services", as_node_port).unwrap()["spec"]["ports"][0]["nodePort"],
        np
    );
    let back = f
        .patch(
            "services",
            "s",
            PatchType::Merge,
            json!({"spec": {"type": "ClusterIP"}}),
        )
        .unwrap();
    assert_eq!(back["spec"]["ports"][0].get("nodePort"), None);
    assert_eq!(back["spec"].get("externalTrafficPolicy"), None);
    assert_eq!(back["spec"]["clusterIP"], created["spec"]["clusterIP"]);
    // To ExternalName: the cluster IP and families go; back: a new address.
    let external = f
        .patch(
            "services",
            "s",
            PatchType::Merge,
            json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
        )
        .unwrap();
    for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert_eq!(external["spec"].get(k), None, "{k}");
    }
    assert_eq!(
        external["spec"]["internalTrafficPolicy"], "Cluster",
        "kept once defaulted, as on a cluster"
    );
    let headful = f
        .patch(
            "services",
            "s",
            PatchType::Merge,
            json!({"spec": {"type": "ClusterIP", "externalName": null}}),
        )
        .unwrap();
    assert!(ip_in_service_range(headful["spec"]["clusterIP"].as_str().unwrap()));
    assert_eq!(headful["spec"]["ipFamilyPolicy"], "SingleStack");
}

#[test]
fn service_kinds_headless_load_balancers_and_families() {
    let f = Fixture::new();
    let headless = f
        .create("services", json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "selector": {"a": "b"}, "ports": [{"port": 80}]}}))
        .unwrap();
    assert_eq!(
        (
            &headless["spec"]["clusterIPs"],
            &headless["spec"]["ipFamilies"],
            &headless["spec"]["ipFamilyPolicy"]
        ),
        (&json!(["None"]), &json!(["IPv4"]), &json!("SingleStack"))
    );
    let selectorless = f
        .create(
            "services",
            json!({"metadata": {"name": "hs"}, "spec": {"clusterIP": "None"}}),
        )
        .unwrap();
    assert_eq!(
        (
            &selectorless["spec"]["ipFamilies"],
            &selectorless["spec"]["ipFamilyPolicy"]
        ),
        (&json!(["IPv4", "IPv6"]), &json!("RequireDualStack"))
    );
    let external = f
        .create(
            "services",
            json!({"metadata": {"name": "x"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
        )
        .unwrap();
    assert_eq!(
        external["spec"],
        json!({"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"})
    );
    let lb = f
        .create(
            "services",
            json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                   "sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": "http"}, {"port": 80, "protocol": "UDP", "nodePort": 31000}]}}),
        )
        .unwrap();
    let spec = &lb["spec"];
    assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
    assert_eq!(
        spec["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
    assert_eq!(spec["ports"][0]["targetPort"], "http");
    assert_eq!(
        (&spec["ports"][0]["nodePort"], &spec["ports"][1]["nodePort"]),
        (&json!(31000), &json!(31000)),
        "same port, one node port"
    );
    let hc = spec["healthCheckNodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&hc) && hc != 31000);
    let clash = f.create(
        "services",
        json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 1, "nodePort": 31000}]}}),
    );
    assert!(
        clash
            .unwrap_err()
            .message
            .contains("spec.ports[0].nodePort: Invalid value: 31000: provided port is already allocated")
    );
    let dual = f.create(
        "services",
        json!({"metadata": {"name": "d"}, "spec": {"ipFamilyPolicy": "RequireDualStack", "ports": [{"port": 1}]}}),
    );
    assert!(
        dual.unwrap_err()
            .message
            .contains("this cluster is not configured for dual-stack services")
    );
    let v6 = f.create(
        "services",
        json!({"metadata": {"name": "v6"}, "spec": {"ipFamilies": ["IPv6"], "ports": [{"port": 1}]}}),
    );
    assert!(
        v6.unwrap_err()
            .message
            .contains("spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster")
    );
    let prefer = f
        .create(
            "services",
            json!({"metadata": {"name": "pr"}, "spec": {"ipFamilyPolicy": "PreferDualStack", "ports": [{"port": 1}]}}),
        )
        .unwrap();
    assert_eq!(prefer["spec"]["ipFamilies"], json!(["IPv4"]));
}

#[test]
fn status_writes_of_services_and_deployments_keep_the_spec() {
    let f = Fixture::new();
    let svc = f
        .create(
            "services",
            json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}),
        )
        .unwrap();
    let mut status = svc.clone();
    status["status"] = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb.example"}]}});
    let got = f.update_status("services", status).unwrap();
    assert_eq!(
        got["status"]["loadBalancer"]["ingress"],
        json!([{"ip": "192.0.2.1", "ipMode": "VIP"}, {"hostname": "lb.example"}])
    );
    assert_eq!(got["spec"], svc["spec"]);
}

#[test]
fn crds_get_their_names_conversion_and_stored_versions() {
    let f = Fixture::new();
    let crd = f
        .create(
            "customresourcedefinitions",
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {
                    "group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}],
                },
            }),
        )
        .unwrap();
    assert_eq!(
        crd["spec"]["names"],
        json!({"plural": "widgets", "kind": "Widget", "singular": "widget", "listKind": "WidgetList"})
    );
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(crd["metadata"]["generation"], 1);
    // Set names and a conversion are kept; a webhook's service gets port 443; a status without stored versions
    // gets the storage version.
    let rules = super::rules("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
    let mut obj = json!({
        "spec": {
            "names": {"plural": "gadgets", "kind": "Gadget", "singular": "gizmo", "listKind": "Gizmos"},
            "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "n", "name": "s"}}}},
            "versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}],
        },
        "status": {"storedVersions": []},
    });
    rules.default(obj.as_object_mut().unwrap());
    assert_eq!(obj["spec"]["names"]["singular"], "gizmo");
    assert_eq!(obj["spec"]["names"]["listKind"], "Gizmos");
    assert_eq!(
        obj["spec"]["conversion"]["webhook"]["clientConfig"]["service"],
        json!({"namespace": "n", "name": "s", "port": 443})
    );
    assert_eq!(obj["status"]["storedVersions"], json!(["v2"]));
}
