//! End-to-end informer figures against the embedded API server: initial sync (time, CPU, peak and steady RSS, RSS
//! per cached object against the objects' JSON size), a relist after 410, and a watch burst through 1 and 4
//! handlers compared with the decoder alone.
//!
//! Also the memory of a cache of Secrets (TLS certificates, ~6 KB of data each) held whole and as
//! `PartialObjectMetadata` (a metadata-only informer): RSS per Secret; and of a cache of Pods (a Deployment's pods
//! of ~8 KB of JSON each, with the managedFields of the ReplicaSet controller and the kubelet) as this crate's
//! `Pod`, `DynamicObject`, metadata only and — built with `--features k8s-openapi,k8s-openapi/latest` —
//! k8s-openapi's `Pod`, with and without managedFields.
//!
//! Run: `cargo bench --bench informer` (prints a table; `harness = false`). Environment knobs:
//! `INFORMER_BENCH_SIZES` (default `10000,50000,100000`; empty for none), `INFORMER_BENCH_SECRETS` (default 10000;
//! 0 for none), `INFORMER_BENCH_PODS` (default 100000; 0 for none), `INFORMER_BENCH_SCALE` (the scale run: typed
//! ConfigMaps at each size given, e.g. `10000,100000,1000000`; default none), `INFORMER_BENCH_RUNS` (default 3;
//! medians are reported),
//! `INFORMER_BENCH_EVENTS` (default 200000), `INFORMER_BENCH_RELIST_AT` (default 50000), `INFORMER_BENCH_HTTP=1`
//! (initial syncs over plain HTTP instead of HTTPS), `INFORMER_BENCH_BURST=https|http|none` (default: the watch burst
//! over both), `INFORMER_BENCH_FIFOS` (default `real,delta`: the informers' queue, `Fifo::Real` and `Fifo::Delta`,
//! each measured; one of them alone halves the syncs' and bursts' time).
//!
//! Every measurement runs in a process of its own, so RSS and CPU are the informer's alone: this binary re-executes
//! itself as `serve` (the embedded API server, driven over stdin/stdout), `sync` (one informer's initial sync and
//! relist), `burst` (the watch burst), `stream` (the same replay through `Api::watch` alone, on one thread: what
//! reading and decoding cost without the informer) and `raw` (the server's own list and watch rates read by a client that only
//! counts bytes, and the decoder's own rate on the same bytes: dropping each object, keeping the latest of each name as
//! a cache does, and decoding into the object replaced as the informer does). RSS and CPU come from `/proc/self/status` (VmRSS,
//! VmHWM, reset between phases through `/proc/self/clear_refs`) and `/proc/self/stat` (utime + stime).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube_informer::cache::{EventStream, Fifo, ListWatch, ListerWatcher, ReflectorConfig};
use kube_informer::client::params::{ListParams, VersionMatch, WatchParams};
use kube_informer::client::{Api, Client, Config};
use kube_informer::informer::{InformerOptions, Notification, SharedIndexInformer, strip_managed_fields};
use kube_informer::object::core::{ConfigMap, Pod};
use kube_informer::object::{
    ApiResource, DynamicObject, ListMeta, Object, ObjectMeta, PartialObjectMetadata, StringMap,
};
use kube_informer::unstable::{RecycleFrom, SpareObjects, WatchHooks};
use kube_informer::watch::{WatchDecoder, WatchEvent};
use kube_informer_apiserver::ApiServer;
use serde_json::{Value, json};

const NAMESPACES: usize = 50;
/// Objects the watch burst updates, round robin.
const BURST_OBJECTS: usize = 1000;

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

// ---------------------------------------------------------------------------------------------------------------
// /proc readings

mod procfs {
    use std::fs;

    fn status_kb(field: &str) -> u64 {
        let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// Resident set size, bytes.
    pub(crate) fn rss() -> u64 {
        status_kb("VmRSS:") * 1024
    }

    /// Peak resident set size since start or the last [`reset_peak`], bytes.
    pub(crate) fn peak() -> u64 {
        status_kb("VmHWM:") * 1024
    }

    /// Resets VmHWM to the current RSS.
    pub(crate) fn reset_peak() {
        let _ = fs::write("/proc/self/clear_refs", "5");
    }

    /// User + system CPU time of the whole process (every thread, live or joined), seconds.
    pub(crate) fn cpu() -> f64 {
        let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command name (which may contain spaces) start at state (field 3).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 =
            f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0) + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        ticks as f64 / clock_ticks() as f64
    }

    fn clock_ticks() -> u64 {
        // USER_HZ is 100 on every Linux architecture this runs on (getconf CLK_TCK needs libc).
        100
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The objects

/// A ConfigMap as clusters hold them: 10 data keys, 4 labels, 2 annotations, a managedFields entry (Helm; about 36%
/// of the object), about 2 KB of JSON once the server adds uid, resourceVersion and timestamps.
fn object(i: usize, version: usize) -> Value {
    let keys: Vec<String> = (0..10).map(|k| format!("config-key-{k:02}.properties")).collect();
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| {
            (
                key.clone(),
                json!(format!(
                    "value-{i}-{k}-{version:06}: some setting = {}",
                    "x".repeat(k * 3)
                )),
            )
        })
        .collect();
    let fields_data: serde_json::Map<String, Value> = keys.iter().map(|key| (format!("f:{key}"), json!({}))).collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("app-config-{i:06}"),
            "namespace": namespace(i),
            "labels": {
                "app.kubernetes.io/name": "shop",
                "app.kubernetes.io/component": format!("component-{}", i % 7),
                "app.kubernetes.io/managed-by": "helm",
                "environment": "production"
            },
            "annotations": {
                "meta.helm.sh/release-name": "shop",
                "meta.helm.sh/release-namespace": namespace(i)
            },
            "managedFields": [{
                "manager": "helm",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-05-06T07:08:09Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": fields_data,
                    "f:metadata": {
                        "f:annotations": {".": {}, "f:meta.helm.sh/release-name": {}, "f:meta.helm.sh/release-namespace": {}},
                        "f:labels": {".": {}, "f:app.kubernetes.io/component": {}, "f:app.kubernetes.io/managed-by": {},
                                     "f:app.kubernetes.io/name": {}, "f:environment": {}}
                    }
                }
            }]
        },
        "data": data
    })
}

fn namespace(i: usize) -> String {
    format!("team-{:02}", i % NAMESPACES)
}

// ---------------------------------------------------------------------------------------------------------------
// Child processes and their line protocol

/// `key=value` pairs of a line.
fn parse_kv(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Proc {
    fn spawn(args: &[String]) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("re-executing the bench binary");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Proc { child, stdin, stdout }
    }

    /// The next line starting with `tag`, as key/value pairs (other lines are echoed to stderr).
    fn expect(&mut self, tag: &str) -> HashMap<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                panic!("child exited while waiting for {tag}");
            }
            if let Some(rest) = line.strip_prefix(tag) {
                return parse_kv(rest);
            }
            eprint!("  | {line}");
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn num(m: &HashMap<String, String>, k: &str) -> f64 {
    m.get(k)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("missing {k} in {m:?}"))
}

/// A running `serve` child.
struct Server {
    proc: Proc,
    url: String,
    kubeconfig: String,
    ready: HashMap<String, String>,
}

impl Server {
    fn start(objects: usize, burst: usize, https: bool) -> Server {
        let mut proc = Proc::spawn(&[
            "serve".into(),
            objects.to_string(),
            burst.to_string(),
            if https { "https" } else { "http" }.into(),
        ]);
        let ready = proc.expect("READY ");
        Server {
            url: ready["url"].clone(),
            kubeconfig: ready["kubeconfig"].clone(),
            proc,
            ready,
        }
    }

    /// The server process's CPU seconds so far.
    fn cpu(&mut self) -> f64 {
        self.proc.send("stats");
        num(&self.proc.expect("STATS "), "cpu")
    }

    /// Runs this binary as a child with `args` until its `RESULT` line; adds the server's CPU seconds meanwhile
    /// (`server_cpu`).
    fn measure(&mut self, args: &[String]) -> HashMap<String, String> {
        let cpu0 = self.cpu();
        let mut p = Proc::spawn(args);
        let mut r = p.expect("RESULT ");
        p.finish();
        r.insert("server_cpu".into(), format!("{}", self.cpu() - cpu0));
        r
    }
}

// ---------------------------------------------------------------------------------------------------------------
// `serve`: the embedded API server in its own process

fn serve(args: &[String]) {
    let objects: usize = args[0].parse().unwrap();
    let burst: usize = args[1].parse().unwrap();
    let https = args[2] == "https";
    let names: Vec<String> = (0..NAMESPACES).map(namespace).collect();
    let mut builder = ApiServer::builder()
        .compaction_interval(None)
        .history_size((burst + objects + 10).max(10_000))
        .namespaces(names.iter().map(String::as_str));
    if https {
        builder = builder.https();
    }
    let server = builder.start().unwrap();
    let ar = configmaps();
    let t = Instant::now();
    let (mut json_bytes, mut stripped_bytes) = (0usize, 0usize);
    for i in 0..objects {
        let mut created = server.create_json(&ar, Some(&namespace(i)), object(i, 0)).unwrap();
        json_bytes += serde_json::to_vec(&created).unwrap().len();
        created["metadata"].as_object_mut().unwrap().remove("managedFields");
        stripped_bytes += serde_json::to_vec(&created).unwrap().len();
    }
    let rv0 = server.revision();
    for j in 0..burst {
        let i = j % objects;
        server.replace_json(&ar, Some(&namespace(i)), object(i, j + 1)).unwrap();
    }
    println!(
        "READY url={} kubeconfig={} rv0={rv0} json={:.1} stripped={:.1} setup={:.2}",
        server.url(),
        server.kubeconfig_path().display(),
        json_bytes as f64 / objects as f64,
        stripped_bytes as f64 / objects as f64,
        t.elapsed().as_secs_f64()
    );
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        match line.trim() {
            "stats" => println!(
                "STATS cpu={:.3} rss={} peak={}",
                procfs::cpu(),
                procfs::rss(),
                procfs::peak()
            ),
            "relist" => {
                // A 410 for the informer: cut its watch, move the revision past its resourceVersion (a write to
                // another resource leaves the ConfigMaps as they are) and compact it away.
                server.stop_listening();
                let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
                let name = format!("relist-{}", server.revision());
                server
                    .create_json(&ns, None, json!({"metadata": {"name": name}}))
                    .unwrap();
                server.compact_to_latest();
                server.start_listening().unwrap();
                println!("OK");
            }
            _ => break,
        }
        std::io::stdout().flush().unwrap();
    }
    server.shutdown();
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets, whole and metadata-only: `serve-secrets` and `secrets`

/// A core/v1 Secret as an application declares it: its data kept as the server sends it (base64 text).
#[derive(serde::Serialize, serde::Deserialize)]
struct Secret {
    metadata: ObjectMeta,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    type_: String,
    #[serde(default, skip_serializing_if = "StringMap::is_empty")]
    data: StringMap,
}
kube_informer::object!(Secret, group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true);

/// PEM text of `der_len` pseudo-random bytes (what a certificate or key looks like to a cache: incompressible).
fn pem(label: &str, der_len: usize, seed: u64) -> String {
    use base64::Engine;
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let der: Vec<u8> = (0..der_len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

/// A TLS Secret as a cluster holds hundreds of (cert-manager's): a certificate, its key and the CA's, 4.6 KB of PEM
/// and 6.2 KB once base64-encoded in `data`, with the labels and annotations of its issuer.
fn secret(i: usize) -> Value {
    use base64::Engine;
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    let seed = i as u64 * 3;
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": format!("tls-{i:06}"),
            "namespace": namespace(i),
            "labels": {
                "app.kubernetes.io/name": "shop",
                "app.kubernetes.io/component": format!("component-{}", i % 7),
                "controller.cert-manager.io/fao": "true"
            },
            "annotations": {
                "cert-manager.io/certificate-name": format!("tls-{i:06}"),
                "cert-manager.io/issuer-name": "letsencrypt",
                "cert-manager.io/common-name": format!("shop-{i}.example.com")
            }
        },
        "data": {
            "tls.crt": b64(pem("CERTIFICATE", 1300, seed)),
            "tls.key": b64(pem("PRIVATE KEY", 1220, seed + 1)),
            "ca.crt": b64(pem("CERTIFICATE", 900, seed + 2))
        }
    })
}

fn secrets() -> ApiResource {
    ApiResource::new("", "v1", "Secret", "secrets", true)
}

/// The embedded API server holding `n` Secrets, in its own process.
fn serve_secrets(args: &[String]) {
    let n: usize = args[0].parse().unwrap();
    let names: Vec<String> = (0..NAMESPACES).map(namespace).collect();
    let mut builder = ApiServer::builder()
        .compaction_interval(None)
        .namespaces(names.iter().map(String::as_str));
    if args[1] == "https" {
        builder = builder.https();
    }
    let server = builder.start().unwrap();
    let ar = secrets();
    let (mut json_bytes, mut meta_bytes) = (0usize, 0usize);
    for i in 0..n {
        let created = server.create_json(&ar, Some(&namespace(i)), secret(i)).unwrap();
        json_bytes += serde_json::to_vec(&created).unwrap().len();
        let partial =
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": created["metadata"]});
        meta_bytes += serde_json::to_vec(&partial).unwrap().len();
    }
    println!(
        "READY url={} kubeconfig={} json={:.1} meta={:.1}",
        server.url(),
        server.kubeconfig_path().display(),
        json_bytes as f64 / n as f64,
        meta_bytes as f64 / n as f64,
    );
    std::io::stdout().flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        match line.unwrap().trim() {
            "stats" => println!(
                "STATS cpu={:.3} rss={} peak={}",
                procfs::cpu(),
                procfs::rss(),
                procfs::peak()
            ),
            _ => break,
        }
        std::io::stdout().flush().unwrap();
    }
    server.shutdown();
}

/// What a Secret cache holds: whole objects or metadata, with or without managedFields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SecretMode {
    Whole,
    Metadata,
    WholeStripped,
    MetadataStripped,
}

impl SecretMode {
    fn all() -> [SecretMode; 4] {
        [
            SecretMode::Whole,
            SecretMode::Metadata,
            SecretMode::WholeStripped,
            SecretMode::MetadataStripped,
        ]
    }

    fn name(self) -> &'static str {
        match self {
            SecretMode::Whole => "whole",
            SecretMode::Metadata => "metadata",
            SecretMode::WholeStripped => "whole-stripped",
            SecretMode::MetadataStripped => "metadata-stripped",
        }
    }

    fn label(self) -> &'static str {
        match self {
            SecretMode::Whole => "`Secret` (whole objects)",
            SecretMode::Metadata => "`PartialObjectMetadata<Secret>` (metadata only)",
            SecretMode::WholeStripped => "`Secret`, `strip_managed_fields`",
            SecretMode::MetadataStripped => "`PartialObjectMetadata<Secret>`, `strip_managed_fields`",
        }
    }
}

/// One informer of Secrets synced in this process: its RSS per object, as `sync` measures it.
fn secrets_child(args: &[String]) {
    let mode = SecretMode::all()
        .into_iter()
        .find(|m| m.name() == args[0])
        .expect("mode");
    let client = client(&args[1]);
    let n: usize = args[2].parse().unwrap();
    match mode {
        SecretMode::Whole | SecretMode::WholeStripped => {
            let mut opts = InformerOptions::default().reflector(reflector_config(false));
            if mode == SecretMode::WholeStripped {
                opts = opts.transform(strip_managed_fields);
            }
            run_sync(Api::<Secret>::all(client), opts, n, false, Fifo::default())
        }
        SecretMode::Metadata | SecretMode::MetadataStripped => {
            let mut opts = InformerOptions::default().reflector(reflector_config(false));
            if mode == SecretMode::MetadataStripped {
                opts = opts.transform(strip_managed_fields);
            }
            run_sync(
                Api::<PartialObjectMetadata<Secret>>::all(client),
                opts,
                n,
                false,
                Fifo::default(),
            )
        }
    }
}

/// The Secret caches measured: the JSON sizes served (whole, metadata), and medians per mode.
struct SecretRows {
    json: f64,
    meta: f64,
    rows: Vec<(SecretMode, HashMap<String, f64>)>,
}

fn run_secrets(n: usize, runs: usize, https: bool) -> SecretRows {
    eprintln!("== {n} Secrets: populating the server");
    let mut server = Proc::spawn(&[
        "serve-secrets".into(),
        n.to_string(),
        if https { "https" } else { "http" }.into(),
    ]);
    let ready = server.expect("READY ");
    let (json, meta) = (num(&ready, "json"), num(&ready, "meta"));
    eprintln!("   {json:.0} bytes of JSON per Secret, {meta:.0} of its metadata");
    let mut rows = Vec::new();
    for mode in SecretMode::all() {
        let mut results = Vec::new();
        for run in 0..runs {
            eprintln!("   {} run {}", mode.name(), run + 1);
            let mut p = Proc::spawn(&[
                "secrets".into(),
                mode.name().into(),
                ready["kubeconfig"].clone(),
                n.to_string(),
            ]);
            results.push(p.expect("RESULT "));
            p.finish();
        }
        rows.push((mode, medians(&results)));
    }
    server.send("quit");
    server.finish();
    SecretRows { json, meta, rows }
}

fn report_secrets(n: usize, SecretRows { json, meta, rows }: &SecretRows) {
    println!();
    println!(
        "Memory per Secret: {n} TLS Secrets of {json:.0} bytes of JSON each ({meta:.0} of it metadata, managedFields \
         included), cached whole and as metadata only"
    );
    println!();
    println!("| cache | RSS per Secret (B) | ÷ whole | steady RSS (MB) | synced (s) | CPU/object (µs) |");
    println!("|---|---:|---:|---:|---:|---:|");
    let whole = rows[0].1["per_object"];
    for (mode, m) in rows {
        println!(
            "| {} | {:.0} | {:.2} | {:.0} | {:.2} | {:.1} |",
            mode.label(),
            m["per_object"],
            m["per_object"] / whole,
            mb(m["steady"]),
            m["synced"],
            m["cpu"] * 1e6 / n as f64
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Pods: a Deployment's pods, as a cluster holds them

/// Pods per ReplicaSet (one Deployment each) in the Pod corpus.
const PODS_PER_DEPLOYMENT: usize = 100;

/// A pseudo-random lowercase alphanumeric suffix of `n` characters (what `generateName` and the token volume add).
fn suffix(seed: u64, n: usize) -> String {
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
fn uid_of(seed: u64) -> String {
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
fn deployment_of(i: usize) -> (String, String, String) {
    let d = i / PODS_PER_DEPLOYMENT;
    (
        format!("shop-{d:04}"),
        suffix(d as u64 + 7, 10),
        uid_of(d as u64 + 1_000_000),
    )
}

/// The application container of the pod template: image, ports, env, resources, probes, mounts.
fn app_container(image: &str, token_volume: &str) -> Value {
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
fn proxy_container(token_volume: &str) -> Value {
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
fn pod(i: usize) -> Value {
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
fn pod_status(i: usize) -> Value {
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

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

/// The embedded API server holding `n` Pods, in its own process: each created by the ReplicaSet controller and its
/// status written by the kubelet, over HTTP(S) with their field managers, so that their `managedFields` are the
/// two entries a cluster shows.
fn serve_pods(args: &[String]) {
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
                    let api = Api::<DynamicObject>::all_with(client, &pods());
                    let (mut json_bytes, mut meta_bytes) = (0usize, 0usize);
                    let manager = |m: &str| kube_informer::client::params::PostParams {
                        field_manager: Some(m.into()),
                        ..Default::default()
                    };
                    for i in (w..n).step_by(writers) {
                        let ns = namespace(i / PODS_PER_DEPLOYMENT);
                        let api = Api::<DynamicObject>::namespaced_with(api.client().clone(), &ns, &pods());
                        let created = api
                            .create(
                                &manager("kube-controller-manager"),
                                &serde_json::from_value(pod(i)).unwrap(),
                            )
                            .unwrap();
                        let mut with_status = created.clone();
                        with_status.set_field("status", &pod_status(i)).unwrap();
                        let name = created.metadata.name.clone().unwrap();
                        let done = api.replace_status(&name, &manager("kubelet"), &with_status).unwrap();
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

/// What a Pod cache holds: this crate's `Pod`, a `DynamicObject`, metadata only, or k8s-openapi's `Pod`; each
/// with and without managedFields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodMode {
    Pod,
    Dynamic,
    Metadata,
    OpenApi,
    PodStripped,
    MetadataStripped,
    OpenApiStripped,
}

impl PodMode {
    fn all() -> Vec<PodMode> {
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

    fn name(self) -> &'static str {
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

    fn label(self) -> &'static str {
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
fn pods_child(args: &[String]) {
    let mode = PodMode::all().into_iter().find(|m| m.name() == args[0]).expect("mode");
    let client = client(&args[1]);
    let n: usize = args[2].parse().unwrap();
    fn opts<K: Object>(strip: bool) -> InformerOptions<K> {
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
struct PodRows {
    json: f64,
    meta: f64,
    rows: Vec<(PodMode, HashMap<String, f64>)>,
}

fn run_pods(n: usize, runs: usize, https: bool) -> PodRows {
    eprintln!("== {n} Pods: populating the server");
    let mut server = Proc::spawn(&[
        "serve-pods".into(),
        n.to_string(),
        if https { "https" } else { "http" }.into(),
    ]);
    let ready = server.expect("READY ");
    let (json, meta) = (num(&ready, "json"), num(&ready, "meta"));
    eprintln!(
        "   {json:.0} bytes of JSON per Pod, {meta:.0} of its metadata, setup {:.1} s",
        num(&ready, "setup")
    );
    if std::env::var_os("INFORMER_BENCH_SAMPLE").is_some() {
        server.send("sample");
        let mut line = String::new();
        server.stdout.read_line(&mut line).unwrap();
        eprintln!("{line}");
    }
    let mut rows = Vec::new();
    for mode in PodMode::all() {
        let mut results = Vec::new();
        for run in 0..runs {
            eprintln!("   {} run {}", mode.name(), run + 1);
            let mut p = Proc::spawn(&[
                "pods".into(),
                mode.name().into(),
                ready["kubeconfig"].clone(),
                n.to_string(),
            ]);
            results.push(p.expect("RESULT "));
            p.finish();
        }
        rows.push((mode, medians(&results)));
    }
    server.send("quit");
    server.finish();
    PodRows { json, meta, rows }
}

fn report_pods(n: usize, PodRows { json, meta, rows }: &PodRows) {
    println!();
    println!(
        "Memory per Pod: {n} Pods of a Deployment's ReplicaSets ({PODS_PER_DEPLOYMENT} each), {json:.0} bytes of JSON \
         each ({meta:.0} of it metadata; managedFields of the controller and the kubelet included)"
    );
    println!();
    println!("| cache | RSS per Pod (B) | ÷ JSON | ÷ whole | steady RSS (MB) | synced (s) | CPU/object (µs) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let whole = rows[0].1["per_object"];
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

// ---------------------------------------------------------------------------------------------------------------
// `sync`: one informer's initial sync (and relist), measured in its own process

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Typed,
    Dynamic,
    Stripped,
    /// Typed, initial state from a streaming list (`sendInitialEvents`) instead of LIST.
    TypedWatchList,
}

impl Mode {
    fn all() -> [Mode; 4] {
        [Mode::Typed, Mode::Dynamic, Mode::Stripped, Mode::TypedWatchList]
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Typed => "typed",
            Mode::Dynamic => "dynamic",
            Mode::Stripped => "stripped",
            Mode::TypedWatchList => "typed-watchlist",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::Typed => "ConfigMap",
            Mode::Dynamic => "DynamicObject",
            Mode::Stripped => "ConfigMap, managedFields stripped",
            Mode::TypedWatchList => "ConfigMap, streaming list",
        }
    }

    fn parse(s: &str) -> Mode {
        Mode::all().into_iter().find(|m| m.name() == s).expect("mode")
    }
}

fn client(kubeconfig: &str) -> Client {
    Client::new(Config::from_kubeconfig_file(kubeconfig, None).unwrap()).unwrap()
}

fn reflector_config(streaming: bool) -> ReflectorConfig {
    ReflectorConfig {
        streaming_list: streaming,
        relist_jitter: Duration::ZERO,
        ..Default::default()
    }
}

/// `real` or `delta`: the queue of a `sync` or `burst` child.
fn fifo_arg(name: &str) -> Fifo {
    match name {
        "real" => Fifo::Real,
        "delta" => Fifo::Delta,
        other => panic!("queue {other:?}: real or delta"),
    }
}

fn fifo_name(fifo: Fifo) -> &'static str {
    match fifo {
        Fifo::Real => "real",
        Fifo::Delta => "delta",
    }
}

fn sync_child(args: &[String]) {
    let mode = Mode::parse(&args[0]);
    let kubeconfig = &args[1];
    let n: usize = args[2].parse().unwrap();
    let relist = args[3] == "relist";
    let fifo = args.get(4).map_or(Fifo::default(), |f| fifo_arg(f));
    let client = client(kubeconfig);
    let opts = |o: InformerOptions<ConfigMap>| o.reflector(reflector_config(mode == Mode::TypedWatchList));
    match mode {
        Mode::Typed | Mode::TypedWatchList => run_sync(
            Api::<ConfigMap>::all(client),
            opts(InformerOptions::default()),
            n,
            relist,
            fifo,
        ),
        Mode::Stripped => run_sync(
            Api::<ConfigMap>::all(client),
            opts(InformerOptions::default()).transform(strip_managed_fields),
            n,
            relist,
            fifo,
        ),
        Mode::Dynamic => run_sync(
            Api::<DynamicObject>::all_with(client, &configmaps()),
            InformerOptions::default().reflector(reflector_config(false)),
            n,
            relist,
            fifo,
        ),
    }
}

fn run_sync<K: Object>(api: Api<K>, opts: InformerOptions<K>, n: usize, relist: bool, fifo: Fifo) {
    let base = procfs::rss();
    procfs::reset_peak();
    let (t0, cpu0) = (Instant::now(), procfs::cpu());
    let informer = SharedIndexInformer::for_api(&api, opts.fifo(fifo));
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    informer
        .add_event_handler(move |_: &Notification<K>| {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    informer.start().unwrap();
    assert!(
        informer.wait_for_cache_sync(Duration::from_secs(600)).is_ok(),
        "sync timed out"
    );
    let (synced, cpu) = (t0.elapsed().as_secs_f64(), procfs::cpu() - cpu0);
    let peak = procfs::peak();
    assert_eq!(informer.lister().len(), n);
    assert_eq!(seen.load(Ordering::Relaxed), n);
    // Steady state: the watch is idle; give the allocator's deferred work a moment.
    std::thread::sleep(Duration::from_millis(500));
    let steady = procfs::rss();
    let mut out = format!(
        "RESULT synced={synced:.4} cpu={cpu:.4} base={base} peak={peak} steady={steady} per_object={:.1}",
        (steady.saturating_sub(base)) as f64 / n as f64
    );
    if relist {
        let before = informer.metrics().reflector;
        procfs::reset_peak();
        let cpu0 = procfs::cpu();
        println!("NEED relist");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        // Done: a new list ran, the watch after it is open, and everything it queued reached the store and the
        // handler.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let m = informer.metrics();
            if m.reflector.lists > before.lists
                && m.reflector.watches >= before.watches + 2
                && m.fifo_depth == 0
                && m.handlers.iter().all(|h| h.pending == 0)
            {
                break;
            }
            assert!(Instant::now() < deadline, "relist timed out: {m:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
        let m = informer.metrics();
        assert_eq!(m.reflector.relists_gone, before.relists_gone + 1, "{m:?}");
        assert_eq!(informer.lister().len(), n);
        let relist_peak = procfs::peak();
        let relist_cpu = procfs::cpu() - cpu0;
        out += &format!(
            " relist_peak={relist_peak} relist_cpu={relist_cpu:.4} after_relist={}",
            procfs::rss()
        );
    }
    println!("{out}");
    std::io::stdout().flush().unwrap();
    // Tearing down 100k objects is not what is measured.
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------------------------------
// `burst`: a watch replaying the server's history through the informer to 1 or 4 handlers

/// Lists at an exact past revision, so that the watch after it replays every event written since.
struct FromRevision {
    inner: ListWatch<ConfigMap>,
    rv0: String,
    /// When and at what process CPU the first watch opened.
    opened: parking_lot::Mutex<Option<(Instant, f64)>>,
}

impl ListerWatcher<ConfigMap> for FromRevision {
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> kube_informer::Result<ListMeta> {
        let mut p = params.clone();
        if p.continue_token.is_none() {
            p.resource_version = Some(self.rv0.clone());
            p.resource_version_match = Some(VersionMatch::Exact);
        }
        self.inner.list_page(&p, on_item)
    }

    fn watch(&self, params: &WatchParams) -> kube_informer::Result<EventStream<ConfigMap>> {
        self.opened
            .lock()
            .get_or_insert_with(|| (Instant::now(), procfs::cpu()));
        self.inner.watch(params)
    }

    fn interrupt(&self) {
        self.inner.interrupt();
    }

    fn unstable_hooks(&self) -> Option<&dyn WatchHooks<ConfigMap>> {
        Some(self)
    }
}

impl WatchHooks<ConfigMap> for FromRevision {
    fn watch_recycling(
        &self,
        params: &WatchParams,
        spares: Arc<dyn SpareObjects<ConfigMap>>,
    ) -> kube_informer::Result<EventStream<ConfigMap>> {
        self.opened
            .lock()
            .get_or_insert_with(|| (Instant::now(), procfs::cpu()));
        let hooks = self.inner.unstable_hooks().expect("a ListWatch recycles");
        hooks.watch_recycling(params, spares)
    }
}

fn burst_child(args: &[String]) {
    let kubeconfig = &args[0];
    let rv0 = args[1].clone();
    let events: usize = args[2].parse().unwrap();
    let handlers: usize = args[3].parse().unwrap();
    let fifo = args.get(4).map_or(Fifo::default(), |f| fifo_arg(f));
    let api = Api::<ConfigMap>::all(client(kubeconfig));
    let lw = Arc::new(FromRevision {
        inner: ListWatch::new(&api),
        rv0,
        opened: parking_lot::Mutex::new(None),
    });
    let informer = SharedIndexInformer::from_arc(
        lw.clone(),
        InformerOptions::default().reflector(reflector_config(false)).fifo(fifo),
    );
    let (tx, rx) = crossbeam_channel::unbounded();
    for _ in 0..handlers {
        let tx = tx.clone();
        let mut updates = 0;
        informer
            .add_event_handler(move |ev: &Notification<ConfigMap>| {
                if let Notification::Update { .. } = ev {
                    updates += 1;
                    if updates == events {
                        let _ = tx.send(Instant::now());
                    }
                }
            })
            .unwrap();
    }
    informer.start().unwrap();
    let mut last = Instant::now();
    for _ in 0..handlers {
        last = last.max(rx.recv_timeout(Duration::from_secs(600)).expect("burst timed out"));
    }
    let cpu_end = procfs::cpu();
    let (opened, cpu0) = lw.opened.lock().expect("a watch opened");
    let secs = last.duration_since(opened).as_secs_f64();
    println!(
        "RESULT secs={secs:.4} rate={:.1} cpu_us={:.3}",
        events as f64 / secs,
        (cpu_end - cpu0) * 1e6 / events as f64
    );
    std::io::stdout().flush().unwrap();
    std::process::exit(0);
}

/// `stream`: the same replay through `Api::watch` alone, on this one thread — reading and decoding as the reflector
/// does, keeping the latest object of each name as a cache would, without the informer's queue, threads or handlers.
fn stream_child(args: &[String]) {
    let kubeconfig = &args[0];
    let rv0 = args[1].clone();
    let events: usize = args[2].parse().unwrap();
    let api = Api::<ConfigMap>::all(client(kubeconfig));
    let mut live: HashMap<String, Arc<ConfigMap>> = HashMap::with_capacity(BURST_OBJECTS);
    let (t, cpu0) = (Instant::now(), procfs::cpu());
    let params = WatchParams {
        resource_version: Some(rv0),
        timeout_seconds: Some(600),
        ..Default::default()
    };
    let mut n = 0;
    for ev in api.watch(&params).unwrap() {
        if let WatchEvent::Modified(cm) = ev.unwrap() {
            let name = cm.metadata.name.as_deref().unwrap_or_default();
            match live.get_mut(name) {
                Some(slot) => *slot = Arc::new(cm),
                None => {
                    live.insert(name.to_owned(), Arc::new(cm));
                }
            }
            n += 1;
            if n == events {
                break;
            }
        }
    }
    assert_eq!(n, events, "the watch ended early");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "RESULT secs={secs:.4} rate={:.1} cpu_us={:.3}",
        events as f64 / secs,
        (procfs::cpu() - cpu0) * 1e6 / events as f64
    );
    std::io::stdout().flush().unwrap();
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------------------------------
// `raw`: the server's own rates (a client that only counts bytes), and the decoder's own rate on the same bytes

fn raw_agent() -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder().disable_verification(true).build();
    ureq::Agent::new_with_config(ureq::Agent::config_builder().tls_config(tls).proxy(None).build())
}

fn raw_child(args: &[String]) {
    let what = args[0].as_str();
    let url = &args[1];
    let agent = raw_agent();
    match what {
        "list" => {
            let (t, cpu0) = (Instant::now(), procfs::cpu());
            let mut reader = agent
                .get(&format!("{url}/api/v1/configmaps?resourceVersion=0"))
                .call()
                .unwrap()
                .into_body()
                .into_reader();
            let mut buf = vec![0; 256 * 1024];
            let mut bytes = 0;
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                bytes += n;
            }
            println!(
                "RESULT secs={:.4} bytes={bytes} cpu={:.4}",
                t.elapsed().as_secs_f64(),
                procfs::cpu() - cpu0
            );
        }
        "watch" => {
            let rv0 = &args[2];
            let events: usize = args[3].parse().unwrap();
            let url = format!("{url}/api/v1/configmaps?watch=1&resourceVersion={rv0}&timeoutSeconds=600");
            // The server and the transport alone: read the replay, count events, keep nothing.
            let t = Instant::now();
            let mut reader = agent.get(&url).call().unwrap().into_body().into_reader();
            let mut buf = vec![0; 64 * 1024];
            let mut lines = 0;
            while lines < events {
                let n = reader.read(&mut buf).unwrap();
                assert!(n > 0, "watch ended after {lines} events");
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
            }
            let read_secs = t.elapsed().as_secs_f64();
            drop(reader);
            // The same replay kept in memory, for the decoder.
            let mut reader = agent.get(&url).call().unwrap().into_body().into_reader();
            let mut stream = Vec::with_capacity(events * 2200);
            let mut lines = 0;
            while lines < events {
                let n = reader.read(&mut buf).unwrap();
                assert!(n > 0, "watch ended after {lines} events");
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
                stream.extend_from_slice(&buf[..n]);
            }
            drop(reader);
            // The decoder alone, on exactly those bytes, fed as the client feeds it (reads of 128 KiB); median of 3. Then,
            // once each, keeping the last object of each name alive as a cache does, and decoding into the object
            // each replaces as the informer does.
            let decode_secs = median((0..3).map(|_| time_decode(&stream, events, Keep::Nothing)).collect());
            let live_secs = time_decode(&stream, events, Keep::Live);
            let recycling_secs = time_decode(&stream, events, Keep::LiveRecycling);
            println!(
                "RESULT read_rate={:.1} decode_rate={:.1} bytes_per_event={:.1} live_rate={:.1} live_recycling_rate={:.1}",
                events as f64 / read_secs,
                events as f64 / decode_secs,
                stream.len() as f64 / lines as f64,
                events as f64 / live_secs,
                events as f64 / recycling_secs,
            );
        }
        other => panic!("raw {other}?"),
    }
    std::io::stdout().flush().unwrap();
}

/// What the decoder keeps of what it decodes, in [`time_decode`].
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// Each object is dropped at once (memory just freed is reused at once, hot in cache).
    Nothing,
    /// The latest object of each of the `BURST_OBJECTS` names stays alive, as in a cache; the one it replaces is
    /// dropped (the replay cycles through the names in order).
    Live,
    /// As `Live`, the replaced object being decoded into (as the informer's recycler does).
    LiveRecycling,
}

/// Seconds to decode the first `events` events of `stream`, read as a watch stream reads (128 KiB at a time).
fn time_decode(stream: &[u8], events: usize, keep: Keep) -> f64 {
    let t = Instant::now();
    let mut dec = WatchDecoder::<ConfigMap>::new();
    let mut live: Vec<Option<ConfigMap>> = (0..BURST_OBJECTS).map(|_| None).collect();
    let mut r = stream;
    let mut n = 0;
    while n < events && dec.read_from(&mut r).unwrap() > 0 {
        loop {
            let slot = &mut live[n % BURST_OBJECTS];
            if keep == Keep::LiveRecycling
                && !dec.has_spare()
                && let Some(old) = slot.take()
            {
                dec.recycle(old);
            }
            let Some(ev) = dec.next_event() else { break };
            match ev.unwrap() {
                WatchEvent::Modified(cm) if keep != Keep::Nothing => *slot = Some(cm),
                ev => drop(std::hint::black_box(ev)),
            }
            n += 1;
        }
    }
    assert!(n >= events);
    t.elapsed().as_secs_f64()
}

// ---------------------------------------------------------------------------------------------------------------
// The orchestrator

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Medians of each key over runs.
fn medians(runs: &[HashMap<String, String>]) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for k in runs[0].keys() {
        out.insert(k.clone(), median(runs.iter().map(|r| num(r, k)).collect()));
    }
    out
}

fn mb(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

struct SyncRow {
    n: usize,
    mode: Mode,
    fifo: Fifo,
    json: f64,
    m: HashMap<String, f64>,
    server_cpu: f64,
}

fn run_sizes(
    sizes: &[usize],
    modes: &[Mode],
    runs: usize,
    relist_at: usize,
    https: bool,
    fifos: &[Fifo],
) -> (Vec<SyncRow>, Vec<String>) {
    let mut rows = Vec::new();
    let mut server_lines = Vec::new();
    for &n in sizes {
        eprintln!("== {n} objects: populating the server");
        let mut server = Server::start(n, 0, https);
        let json = num(&server.ready, "json");
        let stripped = num(&server.ready, "stripped");
        eprintln!(
            "   {:.0} bytes of JSON per object ({stripped:.0} without managedFields), setup {:.1} s",
            json,
            num(&server.ready, "setup")
        );
        // The server alone: a LIST at resourceVersion=0 read by a client that only counts bytes.
        let mut raw = Vec::new();
        for _ in 0..runs {
            let url = server.url.clone();
            let r = server.measure(&["raw".into(), "list".into(), url]);
            raw.push(r);
        }
        let r = medians(&raw);
        server_lines.push(format!(
            "| LIST rv=0, {n} objects ({:.0} MB), raw client | {:.3} s | {:.0} objects/s | {:.0} MB/s | server CPU {:.2} s, client CPU {:.2} s |",
            r["bytes"] / 1e6,
            r["secs"],
            n as f64 / r["secs"],
            r["bytes"] / 1e6 / r["secs"],
            r["server_cpu"],
            r["cpu"],
        ));
        for &mode in modes {
            if mode == Mode::TypedWatchList && n != relist_at {
                continue;
            }
            let relist = n == relist_at && mode != Mode::TypedWatchList;
            // Each run measures every queue in turn, so that a change of load on the machine touches them alike.
            let mut results: Vec<Vec<HashMap<String, String>>> = vec![Vec::new(); fifos.len()];
            for run in 0..runs {
                for (&fifo, results) in fifos.iter().zip(&mut results) {
                    eprintln!("   {} {} run {}", mode.name(), fifo.name(), run + 1);
                    let cpu0 = server.cpu();
                    let mut p = Proc::spawn(&[
                        "sync".into(),
                        mode.name().into(),
                        server.kubeconfig.clone(),
                        n.to_string(),
                        if relist { "relist" } else { "no" }.into(),
                        fifo_name(fifo).into(),
                    ]);
                    if relist {
                        p.expect("NEED ");
                        server.proc.send("relist");
                        server.proc.expect("OK");
                        p.send("go");
                    }
                    let mut r = p.expect("RESULT ");
                    p.finish();
                    r.insert("server_cpu".into(), format!("{}", server.cpu() - cpu0));
                    results.push(r);
                }
            }
            for (&fifo, results) in fifos.iter().zip(&results) {
                let m = medians(results);
                rows.push(SyncRow {
                    n,
                    mode,
                    fifo,
                    json,
                    server_cpu: m["server_cpu"],
                    m,
                });
            }
        }
        server.proc.send("quit");
        server.proc.finish();
    }
    (rows, server_lines)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => return serve(&args[1..]),
        Some("sync") => return sync_child(&args[1..]),
        Some("burst") => return burst_child(&args[1..]),
        Some("stream") => return stream_child(&args[1..]),
        Some("raw") => return raw_child(&args[1..]),
        Some("serve-secrets") => return serve_secrets(&args[1..]),
        Some("secrets") => return secrets_child(&args[1..]),
        Some("serve-pods") => return serve_pods(&args[1..]),
        Some("pods") => return pods_child(&args[1..]),
        _ => {}
    }
    // `cargo test --benches` runs bench binaries without `--bench`: keep that quick.
    if !args.iter().any(|a| a == "--bench") {
        println!("informer bench: run with `cargo bench --bench informer`");
        return;
    }
    let sizes: Vec<usize> = std::env::var("INFORMER_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,50000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs: usize = env_or("INFORMER_BENCH_RUNS", 3);
    let events: usize = env_or("INFORMER_BENCH_EVENTS", 200_000);
    let relist_at: usize = env_or("INFORMER_BENCH_RELIST_AT", 50_000);
    let https = env_or("INFORMER_BENCH_HTTP", 0) == 0;
    let fifos: Vec<Fifo> = std::env::var("INFORMER_BENCH_FIFOS")
        .unwrap_or_else(|_| "real,delta".into())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| fifo_arg(s.trim()))
        .collect();

    let (rows, mut server_lines) = run_sizes(&sizes, &Mode::all(), runs, relist_at, https, &fifos);

    // Watch burst, over each transport.
    let transports: Vec<bool> = match std::env::var("INFORMER_BENCH_BURST").as_deref() {
        Ok("https") => vec![true],
        Ok("http") => vec![false],
        Ok("none") => vec![],
        _ if events > 0 => vec![true, false],
        _ => vec![],
    };
    let bursts: Vec<Burst> = transports
        .into_iter()
        .map(|https| run_burst(events, runs, https, &fifos, &mut server_lines))
        .collect();

    report(&rows, &server_lines, &bursts, events, https, runs);

    let secrets: usize = env_or("INFORMER_BENCH_SECRETS", 10_000);
    if secrets > 0 {
        report_secrets(secrets, &run_secrets(secrets, runs, https));
    }

    let scale: Vec<usize> = std::env::var("INFORMER_BENCH_SCALE")
        .unwrap_or_default()
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    if !scale.is_empty() {
        let (rows, _) = run_sizes(&scale, &[Mode::Typed], runs, 0, https, &[Fifo::Real]);
        report_scale(&rows);
    }

    let pods: usize = env_or("INFORMER_BENCH_PODS", 100_000);
    if pods > 0 {
        report_pods(pods, &run_pods(pods, runs, https));
    }
}

/// The watch burst over one transport: per run, the raw client and the decoder, then the informer with 1 and with
/// 4 handlers, interleaved so that a change of load on the machine touches every figure alike.
struct Burst {
    https: bool,
    /// Medians of the raw client's runs (`read_rate`, `decode_rate`, `bytes_per_event`, `server_cpu`).
    raw: HashMap<String, f64>,
    /// Medians per queue and handler count (`rate`, `cpu_us`, `server_cpu`, and `vs_decoder`: the ratio within each
    /// run).
    informer: Vec<((Fifo, usize), HashMap<String, f64>)>,
    /// Per queue, the median over runs of (4 handlers ÷ 1 handler), within each run.
    four_vs_one: Vec<(Fifo, f64)>,
    /// Medians of `Api::watch` read alone on one thread (`rate`, `cpu_us`, `vs_decoder`).
    stream: HashMap<String, f64>,
}

fn run_burst(events: usize, runs: usize, https: bool, fifos: &[Fifo], server_lines: &mut Vec<String>) -> Burst {
    let transport = if https { "HTTPS" } else { "HTTP" };
    eprintln!("== watch burst over {transport}: writing {events} updates of {BURST_OBJECTS} objects");
    let mut server = Server::start(BURST_OBJECTS, events, https);
    eprintln!("   setup {:.1} s", num(&server.ready, "setup"));
    let rv0 = server.ready["rv0"].clone();
    let mut raws = Vec::new();
    // Per (queue, handler count), in that order: each run's results.
    let slots: Vec<(Fifo, usize)> = fifos.iter().flat_map(|&f| [(f, 1usize), (f, 4)]).collect();
    let mut per_slot: Vec<Vec<HashMap<String, String>>> = vec![Vec::new(); slots.len()];
    let mut four_vs_one: Vec<Vec<f64>> = vec![Vec::new(); fifos.len()];
    let mut streams = Vec::new();
    for run in 0..runs {
        eprintln!("   run {}", run + 1);
        let (url, kubeconfig) = (server.url.clone(), server.kubeconfig.clone());
        let raw = server.measure(&["raw".into(), "watch".into(), url, rv0.clone(), events.to_string()]);
        let decode_rate = num(&raw, "decode_rate");
        raws.push(raw);
        let mut st = server.measure(&["stream".into(), kubeconfig.clone(), rv0.clone(), events.to_string()]);
        let rate = num(&st, "rate");
        st.insert("vs_decoder".into(), format!("{}", rate / decode_rate));
        streams.push(st);
        let mut rates = Vec::new();
        for (slot, &(fifo, handlers)) in slots.iter().enumerate() {
            let mut r = server.measure(&[
                "burst".into(),
                kubeconfig.clone(),
                rv0.clone(),
                events.to_string(),
                handlers.to_string(),
                fifo_name(fifo).into(),
            ]);
            let rate = num(&r, "rate");
            r.insert("vs_decoder".into(), format!("{}", rate / decode_rate));
            rates.push(rate);
            per_slot[slot].push(r);
        }
        for (q, ratios) in four_vs_one.iter_mut().enumerate() {
            ratios.push(rates[2 * q + 1] / rates[2 * q]);
        }
    }
    server.proc.send("quit");
    server.proc.finish();
    let raw = medians(&raws);
    server_lines.push(format!(
        "| WATCH replay of {events} events (~{:.0} B) over {transport}, raw client | {:.0} events/s | server CPU {:.1} µs/event |",
        raw["bytes_per_event"],
        raw["read_rate"],
        // The raw client reads the replay twice (once counting, once keeping the bytes for the decoder).
        raw["server_cpu"] * 1e6 / (2 * events) as f64
    ));
    Burst {
        https,
        raw,
        informer: slots.into_iter().zip(per_slot.iter().map(|r| medians(r))).collect(),
        four_vs_one: fifos.iter().copied().zip(four_vs_one.into_iter().map(median)).collect(),
        stream: medians(&streams),
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn report(rows: &[SyncRow], server_lines: &[String], bursts: &[Burst], events: usize, https: bool, runs: usize) {
    println!();
    println!(
        "kube-informer end-to-end (sync over {}; medians of {runs} runs; each figure measured in a process of its own; \
         load average at the end {})",
        if https { "HTTPS" } else { "HTTP" },
        load_average()
    );
    println!();
    println!("Initial sync (LIST resourceVersion=0, streamed into the cache; one no-op handler)");
    println!();
    println!(
        "| objects | type | queue | synced (s) | CPU (s) | CPU/object (µs) | peak RSS (MB) | steady RSS (MB) | peak ÷ steady | RSS/object (B) | ÷ JSON | server CPU (s) |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let m = &r.m;
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.1} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} |",
            r.n,
            r.mode.label(),
            r.fifo.name(),
            m["synced"],
            m["cpu"],
            m["cpu"] * 1e6 / r.n as f64,
            mb(m["peak"]),
            mb(m["steady"]),
            m["peak"] / m["steady"],
            m["per_object"],
            m["per_object"] / r.json,
            r.server_cpu,
        );
    }
    if let Some(json) = rows.first().map(|r| r.json) {
        println!();
        println!("JSON size per object as served: {json:.0} bytes (with managedFields).");
    }
    let relists: Vec<&SyncRow> = rows.iter().filter(|r| r.m.contains_key("relist_peak")).collect();
    if !relists.is_empty() {
        println!();
        println!("Relist after 410 (compacted and watch cut), cache already full");
        println!();
        println!(
            "| objects | type | queue | steady RSS (MB) | peak RSS during relist (MB) | peak ÷ steady | RSS after (MB) | CPU (s) |"
        );
        println!("|---:|---|---|---:|---:|---:|---:|---:|");
        for r in relists {
            let m = &r.m;
            println!(
                "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} |",
                r.n,
                r.mode.label(),
                r.fifo.name(),
                mb(m["steady"]),
                mb(m["relist_peak"]),
                m["relist_peak"] / m["steady"],
                mb(m["after_relist"]),
                m["relist_cpu"]
            );
        }
    }
    if !bursts.is_empty() {
        println!();
        println!(
            "Watch burst: {events} MODIFIED events (typed ConfigMap, ~2 KB) replayed from the server's history \
             (ratios taken within each run)"
        );
        println!();
        println!("| transport | path | events/s | CPU/event (µs) | ÷ decoder | server CPU (s) |");
        println!("|---|---|---:|---:|---:|---:|");
        for b in bursts {
            let t = if b.https { "HTTPS" } else { "HTTP" };
            println!(
                "| {t} | WatchDecoder alone, same bytes in memory | {:.0} | {:.2} | 1.00 | |",
                b.raw["decode_rate"],
                1e6 / b.raw["decode_rate"]
            );
            for (what, key) in [
                ("keeping the last object of each name", "live_rate"),
                ("and decoding into the object replaced", "live_recycling_rate"),
            ] {
                println!(
                    "| {t} | WatchDecoder alone, {what} | {:.0} | {:.2} | {:.2} | |",
                    b.raw[key],
                    1e6 / b.raw[key],
                    b.raw[key] / b.raw["decode_rate"]
                );
            }
            println!(
                "| {t} | `Api::watch` alone on one thread (read, decode, keep the latest of each name) | {:.0} | {:.2} | {:.2} | |",
                b.stream["rate"], b.stream["cpu_us"], b.stream["vs_decoder"]
            );
            for ((fifo, h), m) in &b.informer {
                println!(
                    "| {t} | informer ({}), {h} handler(s) | {:.0} | {:.2} | {:.2} | {:.2} |",
                    fifo.name(),
                    m["rate"],
                    m["cpu_us"],
                    m["vs_decoder"],
                    m["server_cpu"]
                );
            }
        }
    }
    println!();
    println!("Embedded API server alone (separate process; a client that only counts bytes)");
    println!();
    for l in server_lines {
        println!("{l}");
    }
    println!();
    println!("Targets");
    for r in rows.iter().filter(|r| r.mode != Mode::TypedWatchList) {
        let m = &r.m;
        let per_json = m["per_object"] / r.json;
        let limit = match r.mode {
            Mode::Typed => 1.5,
            Mode::Dynamic => 2.0,
            _ => 1.0,
        };
        println!(
            "  {:>6} {:<36} {:<9} CPU/object {:>5.1} µs (≤ 20) | RSS/object ÷ JSON {:.2} (≤ {limit}) | sync peak ÷ steady {:.2} (≤ 1.3){}",
            r.n,
            r.mode.label(),
            r.fifo.name(),
            m["cpu"] * 1e6 / r.n as f64,
            per_json,
            m["peak"] / m["steady"],
            m.get("relist_peak")
                .map(|p| format!(" | relist peak ÷ steady {:.2} (≤ 1.3)", p / m["steady"]))
                .unwrap_or_default()
        );
    }
    for b in bursts {
        for (fifo, four_vs_one) in &b.four_vs_one {
            let one = b
                .informer
                .iter()
                .find(|((f, h), _)| f == fifo && *h == 1)
                .map_or(f64::NAN, |(_, m)| m["vs_decoder"]);
            println!(
                "  watch burst over {} ({}): 1 handler ÷ decoder {one:.2} (≥ 0.7) | 4 handlers ÷ 1 handler {four_vs_one:.2} (≥ 0.8)",
                if b.https { "HTTPS" } else { "HTTP" },
                fifo.name(),
            );
        }
    }
}

/// Cost per object as the cache grows: the scale run's table.
fn report_scale(rows: &[SyncRow]) {
    println!();
    println!("Scale: the same ConfigMaps from 10k to 1M objects (cost per object should not grow with the cache)");
    println!();
    println!("| objects | type | synced (s) | CPU/object (µs) | RSS/object (B) | ÷ JSON | peak ÷ steady |");
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let m = &r.m;
        println!(
            "| {} | {} | {:.2} | {:.1} | {:.0} | {:.2} | {:.2} |",
            r.n,
            r.mode.label(),
            m["synced"],
            m["cpu"] * 1e6 / r.n as f64,
            m["per_object"],
            m["per_object"] / r.json,
            m["peak"] / m["steady"],
        );
    }
}
