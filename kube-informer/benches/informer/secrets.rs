//! Secrets, whole and metadata-only: `serve-secrets` and `secrets`.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use kube_informer::cache::Fifo;
use kube_informer::client::Api;
use kube_informer::informer::{InformerOptions, strip_managed_fields};
use kube_informer::object::{ApiResource, ObjectMeta, PartialObjectMetadata, StringMap};
use kube_informer_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::child::{Proc, num};
use crate::corpus::{NAMESPACES, namespace};
use crate::procfs;
use crate::report::{mb, medians};
use crate::sync::{client, reflector_config, run_sync};

/// A core/v1 Secret as an application declares it: its data kept as the server sends it (base64 text).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Secret {
    pub(crate) metadata: ObjectMeta,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub(crate) type_: String,
    #[serde(default, skip_serializing_if = "StringMap::is_empty")]
    pub(crate) data: StringMap,
}
kube_informer::object!(Secret, group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true);

/// PEM text of `der_len` pseudo-random bytes (what a certificate or key looks like to a cache: incompressible).
pub(crate) fn pem(label: &str, der_len: usize, seed: u64) -> String {
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
pub(crate) fn secret(i: usize) -> Value {
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

pub(crate) fn secrets() -> ApiResource {
    ApiResource::new("", "v1", "Secret", "secrets", true)
}

/// The embedded API server holding `n` Secrets, in its own process.
pub(crate) fn serve_secrets(args: &[String]) {
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
pub(crate) enum SecretMode {
    Whole,
    Metadata,
    WholeStripped,
    MetadataStripped,
}

impl SecretMode {
    pub(crate) fn all() -> [SecretMode; 4] {
        [
            SecretMode::Whole,
            SecretMode::Metadata,
            SecretMode::WholeStripped,
            SecretMode::MetadataStripped,
        ]
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SecretMode::Whole => "whole",
            SecretMode::Metadata => "metadata",
            SecretMode::WholeStripped => "whole-stripped",
            SecretMode::MetadataStripped => "metadata-stripped",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            SecretMode::Whole => "`Secret` (whole objects)",
            SecretMode::Metadata => "`PartialObjectMetadata<Secret>` (metadata only)",
            SecretMode::WholeStripped => "`Secret`, `strip_managed_fields`",
            SecretMode::MetadataStripped => "`PartialObjectMetadata<Secret>`, `strip_managed_fields`",
        }
    }
}

/// One informer of Secrets synced in this process: its RSS per object, as `sync` measures it.
pub(crate) fn secrets_child(args: &[String]) {
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
pub(crate) struct SecretRows {
    pub(crate) json: f64,
    pub(crate) meta: f64,
    pub(crate) rows: Vec<(SecretMode, HashMap<String, f64>)>,
}

pub(crate) fn run_secrets(n: usize, runs: usize, https: bool) -> SecretRows {
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

pub(crate) fn report_secrets(n: usize, SecretRows { json, meta, rows }: &SecretRows) {
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
