//! Pods: a Deployment's pods, as a cluster holds them (`serve-pods`, `pods`).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

use kube_informer::cache::Fifo;
use kube_informer::client::{Api, Client, Config};
use kube_informer::informer::{InformerOptions, strip_managed_fields};
use kube_informer::object::core::Pod;
use kube_informer::object::{ApiResource, DynamicObject, Object, PartialObjectMetadata};
use kube_informer_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::child::{Proc, num};
use crate::corpus::{NAMESPACES, namespace};
use crate::lean::{Kind, LeanServer};
use crate::report::{mb, medians, run_line};
use crate::sync::{client, reflector_config, run_sync};

/// Pods per ReplicaSet (one Deployment each) in the Pod corpus.
pub(crate) const PODS_PER_DEPLOYMENT: usize = 100;

/// A pseudo-random lowercase alphanumeric suffix of `n` characters (what `generateName` and the token volume add).
pub(crate) fn suffix(seed: u64, n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(ALPHABET[(x % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// A uid of the form the API server writes (`8-4-4-4-12` hex), from a seed.
pub(crate) fn uid_of(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0xD129_0D1C_7B0B_9A25) ^ 0x5DEE_CE66;
    let mut hex = String::with_capacity(32);
    for _ in 0..4 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        hex.push_str(&format!("{:08x}", x as u32));
    }
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The Deployment (and ReplicaSet) of pod `i`: its name, the ReplicaSet's pod-template hash and uid.
pub(crate) fn deployment_of(i: usize) -> (String, String, String) {
    let d = i / PODS_PER_DEPLOYMENT;
    (
        format!("shop-{d:04}"),
        suffix(d as u64 + 7, 10),
        uid_of(d as u64 + 1_000_000),
    )
}

/// The application container of the pod template: image, ports, env, resources, probes, mounts.
pub(crate) fn app_container(image: &str, token_volume: &str) -> Value {
    json!({
        "name": "app",
        "image": image,
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "DATABASE_URL", "value": "postgres://shop-db.shop.svc.cluster.local:5432/shop"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "shop-api", "key": "token"}}}
        ],
        "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/shop", "readOnly": true},
            {"name": token_volume, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
        ],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 10,
                          "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "timeoutSeconds": 1,
                           "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true,
                            "capabilities": {"drop": ["ALL"]}}
    })
}

/// The proxy sidecar of the pod template.
pub(crate) fn proxy_container(token_volume: &str) -> Value {
    json!({
        "name": "proxy",
        "image": "registry.example.com/infra/envoy:v1.30.1",
        "args": ["--config-path", "/etc/envoy/envoy.yaml"],
        "ports": [{"name": "proxy", "containerPort": 15001, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}},
        "volumeMounts": [
            {"name": token_volume, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
    })
}

/// Pod `i` as its ReplicaSet creates it (spec and metadata; the status comes from the kubelet).
pub(crate) fn pod(i: usize) -> Value {
    let (deployment, hash, rs_uid) = deployment_of(i);
    let rs = format!("{deployment}-{hash}");
    let token_volume = format!("kube-api-access-{}", suffix(i as u64 + 99, 5));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("{rs}-{}", suffix(i as u64, 5)),
            "generateName": format!("{rs}-"),
            "namespace": namespace(i / PODS_PER_DEPLOYMENT),
            "labels": {
                "app.kubernetes.io/name": deployment,
                "app.kubernetes.io/part-of": "shop",
                "app.kubernetes.io/version": "1.24.3",
                "pod-template-hash": hash
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2024-05-06T07:08:09Z",
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090"
            },
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs_uid,
                                 "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{deployment}-config"), "defaultMode": 420}},
                {"name": token_volume, "projected": {"sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace",
                                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ], "defaultMode": 420}}
            ],
            "containers": [
                app_container(&format!("registry.example.com/shop/{deployment}:1.24.3"), &token_volume),
                proxy_container(&token_volume)
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "shop",
            "serviceAccount": "shop",
            "nodeName": format!("node-{:03}", i % 200),
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "workload", "operator": "Equal", "value": "shop", "effect": "NoSchedule"}
            ],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"
        }
    })
}

/// The status the kubelet writes for pod `i` once its containers run.
pub(crate) fn pod_status(i: usize) -> Value {
    let (deployment, ..) = deployment_of(i);
    let ip = format!("10.{}.{}.{}", 64 + i / 65536 % 64, i / 256 % 256, i % 256);
    let host = format!("192.168.{}.{}", i % 200 / 100, 10 + i % 100);
    let started = "2024-05-06T07:08:31Z";
    let condition =
        |t: &str, at: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": at});
    let container_status = |name: &str, image: &str, k: u64| {
        json!({
            "name": name,
            "state": {"running": {"startedAt": started}},
            "lastState": {},
            "ready": true,
            "restartCount": 0,
            "image": image,
            "imageID": format!("{image}@sha256:{}", uid_of(k).replace('-', "")),
            "containerID": format!("containerd://{}{}", uid_of(k * 31 + i as u64).replace('-', ""), uid_of(k * 37 + i as u64).replace('-', "")),
            "started": true
        })
    };
    json!({
        "phase": "Running",
        "conditions": [
            condition("PodReadyToStartContainers", "2024-05-06T07:08:30Z"),
            condition("Initialized", "2024-05-06T07:08:12Z"),
            condition("Ready", "2024-05-06T07:08:41Z"),
            condition("ContainersReady", "2024-05-06T07:08:41Z"),
            condition("PodScheduled", "2024-05-06T07:08:12Z")
        ],
        "hostIP": host,
        "hostIPs": [{"ip": host}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": "2024-05-06T07:08:12Z",
        "containerStatuses": [
            container_status("app", &format!("registry.example.com/shop/{deployment}:1.24.3"), 1),
            container_status("proxy", "registry.example.com/infra/envoy:v1.30.1", 2)
        ],
        "qosClass": "Burstable"
    })
}

pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

/// The embedded API server holding `n` Pods, in its own process: each created by the ReplicaSet controller and its
/// status written by the kubelet, over HTTP(S) with their field managers, so that their `managedFields` are the
/// two entries a cluster shows.
pub(crate) fn serve_pods(args: &[String]) {
    let n: usize = args[0].parse().unwrap();
    let https = args[1] == "https";
    let deployments = n.div_ceil(PODS_PER_DEPLOYMENT);
    let names: Vec<String> = (0..deployments.min(NAMESPACES)).map(namespace).collect();
    let mut builder = ApiServer::builder()
        .compaction_interval(None)
        .namespaces(names.iter().map(String::as_str));
    if https {
        builder = builder.https();
    }
    let server = builder.start().unwrap();
    let t = Instant::now();
    let writers = 4;
    let (json_bytes, meta_bytes) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let client = Client::new(
                    Config::from_kubeconfig_file(server.kubeconfig_path(), None)
                        .unwrap()
                        .no_rate_limit(),
                )
                .unwrap();
                s.spawn(move || {
                    let (mut json_bytes, mut meta_bytes) = (0usize, 0usize);
                    for i in (w..n).step_by(writers) {
                        let done = create_pod(&client, i);
                        json_bytes += serde_json::to_vec(&done).unwrap().len();
                        let partial = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                             "metadata": done.metadata});
                        meta_bytes += serde_json::to_vec(&partial).unwrap().len();
                    }
                    (json_bytes, meta_bytes)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    println!(
        "READY url={} kubeconfig={} json={:.1} meta={:.1} setup={:.2}",
        server.url(),
        server.kubeconfig_path().display(),
        json_bytes as f64 / n as f64,
        meta_bytes as f64 / n as f64,
        t.elapsed().as_secs_f64()
    );
    std::io::stdout().flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        match line.unwrap().trim() {
            "sample" => {
                let one = server.list_json(&pods(), Some(&namespace(0))).unwrap().swap_remove(0);
                println!("SAMPLE {}", serde_json::to_string(&one).unwrap());
            }
            _ => break,
        }
        std::io::stdout().flush().unwrap();
    }
    server.shutdown();
}

/// Pod `i` written as a cluster writes it: created by the ReplicaSet controller, its status by the kubelet, over
/// HTTP(S) with their field managers (so that its `managedFields` are the two entries a cluster shows).
pub(crate) fn create_pod(client: &Client, i: usize) -> DynamicObject {
    let manager = |m: &str| kube_informer::client::params::PostParams {
        field_manager: Some(m.into()),
        ..Default::default()
    };
    let ns = namespace(i / PODS_PER_DEPLOYMENT);
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &pods());
    let created = api
        .create(
            &manager("kube-controller-manager"),
            &serde_json::from_value(pod(i)).unwrap(),
        )
        .unwrap();
    let mut with_status = created.clone();
    with_status.set_field("status", &pod_status(i)).unwrap();
    let name = created.metadata.name.clone().unwrap();
    api.replace_status(&name, &manager("kubelet"), &with_status).unwrap()
}

/// What a Pod cache holds: this crate's `Pod`, a `DynamicObject`, metadata only, or k8s-openapi's `Pod`; each
/// with and without managedFields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PodMode {
    Pod,
    Dynamic,
    Metadata,
    OpenApi,
    PodStripped,
    MetadataStripped,
    OpenApiStripped,
}

impl PodMode {
    pub(crate) fn all() -> Vec<PodMode> {
        let mut all = vec![PodMode::Pod, PodMode::Dynamic, PodMode::Metadata];
        if cfg!(feature = "k8s-openapi") {
            all.push(PodMode::OpenApi);
        }
        all.extend([PodMode::PodStripped, PodMode::MetadataStripped]);
        if cfg!(feature = "k8s-openapi") {
            all.push(PodMode::OpenApiStripped);
        }
        all
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            PodMode::Pod => "pod",
            PodMode::Dynamic => "dynamic",
            PodMode::Metadata => "metadata",
            PodMode::OpenApi => "k8s-openapi",
            PodMode::PodStripped => "pod-stripped",
            PodMode::MetadataStripped => "metadata-stripped",
            PodMode::OpenApiStripped => "k8s-openapi-stripped",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            PodMode::Pod => "`object::core::Pod`",
            PodMode::Dynamic => "`DynamicObject`",
            PodMode::Metadata => "`PartialObjectMetadata<Pod>` (metadata only)",
            PodMode::OpenApi => "k8s-openapi's `Pod`",
            PodMode::PodStripped => "`object::core::Pod`, `strip_managed_fields`",
            PodMode::MetadataStripped => "`PartialObjectMetadata<Pod>`, `strip_managed_fields`",
            PodMode::OpenApiStripped => "k8s-openapi's `Pod`, `strip_managed_fields`",
        }
    }
}

/// One informer of Pods synced in this process: its RSS per object, as `sync` measures it.
pub(crate) fn pods_child(args: &[String]) {
    let mode = PodMode::all().into_iter().find(|m| m.name() == args[0]).expect("mode");
    let client = client(&args[1]);
    let n: usize = args[2].parse().unwrap();
    pub(crate) fn opts<K: Object>(strip: bool) -> InformerOptions<K> {
        let opts = InformerOptions::default().reflector(reflector_config(false));
        if strip {
            opts.transform(strip_managed_fields)
        } else {
            opts
        }
    }
    match mode {
        PodMode::Pod | PodMode::PodStripped => run_sync(
            Api::<Pod>::all(client),
            opts(mode == PodMode::PodStripped),
            n,
            false,
            Fifo::default(),
        ),
        PodMode::Dynamic => run_sync(
            Api::<DynamicObject>::all_with(client, &pods()),
            opts(false),
            n,
            false,
            Fifo::default(),
        ),
        PodMode::Metadata | PodMode::MetadataStripped => run_sync(
            Api::<PartialObjectMetadata<Pod>>::all(client),
            opts(mode == PodMode::MetadataStripped),
            n,
            false,
            Fifo::default(),
        ),
        #[cfg(feature = "k8s-openapi")]
        PodMode::OpenApi | PodMode::OpenApiStripped => run_sync(
            Api::<k8s_openapi::api::core::v1::Pod>::all(client),
            opts(mode == PodMode::OpenApiStripped),
            n,
            false,
            Fifo::default(),
        ),
        #[cfg(not(feature = "k8s-openapi"))]
        PodMode::OpenApi | PodMode::OpenApiStripped => unreachable!("k8s-openapi's Pod needs the k8s-openapi feature"),
    }
}

/// The Pod caches measured: the JSON sizes served (whole, metadata), and medians per mode.
pub(crate) struct PodRows {
    /// Served by the lean server (over HTTP) rather than the embedded one.
    pub(crate) lean: bool,
    pub(crate) json: f64,
    pub(crate) meta: f64,
    pub(crate) rows: Vec<(PodMode, HashMap<String, f64>)>,
}

pub(crate) fn run_pods(n: usize, runs: usize, https: bool, lean: bool) -> PodRows {
    let (mut embedded, lean_server) = if lean {
        eprintln!("== {n} Pods: the lean server");
        (None, Some(LeanServer::start(Kind::Pods, n)))
    } else {
        eprintln!("== {n} Pods: populating the server");
        let server = Proc::spawn(&[
            "serve-pods".into(),
            n.to_string(),
            if https { "https" } else { "http" }.into(),
        ]);
        (Some(server), None)
    };
    let (kubeconfig, json, meta) = match (&mut embedded, &lean_server) {
        (Some(server), _) => {
            let ready = server.expect("READY ");
            eprintln!("   setup {:.1} s", num(&ready, "setup"));
            if std::env::var_os("INFORMER_BENCH_SAMPLE").is_some() {
                server.send("sample");
                let mut line = String::new();
                server.stdout.read_line(&mut line).unwrap();
                eprintln!("{line}");
            }
            (ready["kubeconfig"].clone(), num(&ready, "json"), num(&ready, "meta"))
        }
        (None, Some(l)) => (l.kubeconfig.clone(), l.json, l.meta),
        (None, None) => unreachable!(),
    };
    eprintln!("   {json:.0} bytes of JSON per Pod, {meta:.0} of its metadata");
    let mut rows = Vec::new();
    // INFORMER_BENCH_POD_MODES: the caches to measure, by name (default all).
    let only = std::env::var("INFORMER_BENCH_POD_MODES").unwrap_or_default();
    let modes = PodMode::all()
        .into_iter()
        .filter(|m| only.is_empty() || only.split(',').any(|o| o.trim() == m.name()));
    for mode in modes {
        let mut results = Vec::new();
        for run in 0..runs {
            eprintln!("   {} run {}", mode.name(), run + 1);
            let mut p = Proc::spawn(&["pods".into(), mode.name().into(), kubeconfig.clone(), n.to_string()]);
            let r = p.expect("RESULT ");
            p.finish();
            eprintln!("{}", run_line(&r, n));
            results.push(r);
        }
        rows.push((mode, medians(&results)));
    }
    if let Some(mut server) = embedded {
        server.send("quit");
        server.finish();
    }
    PodRows {
        lean: lean_server.is_some(),
        json,
        meta,
        rows,
    }
}

pub(crate) fn report_pods(n: usize, PodRows { lean, json, meta, rows }: &PodRows) {
    println!();
    println!(
        "Memory per Pod: {n} Pods of a Deployment's ReplicaSets ({PODS_PER_DEPLOYMENT} each), {json:.0} bytes of JSON \
         each ({meta:.0} of it metadata; managedFields of the controller and the kubelet included){}",
        if *lean { ", from the lean server over HTTP" } else { "" }
    );
    println!();
    println!("| cache | RSS per Pod (B) | ÷ JSON | ÷ whole | steady RSS (MB) | synced (s) | CPU/object (µs) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let whole = rows
        .iter()
        .find(|(mode, _)| *mode == PodMode::Pod)
        .map_or(f64::NAN, |(_, m)| m["per_object"]);
    for (mode, m) in rows {
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {:.0} | {:.2} | {:.1} |",
            mode.label(),
            m["per_object"],
            m["per_object"] / json,
            m["per_object"] / whole,
            mb(m["steady"]),
            m["synced"],
            m["cpu"] * 1e6 / n as f64
        );
    }
}
