//! Decoder throughput: the watch and list stream decoders against plain `serde_json::from_slice` on objects that
//! are already split apart.
//!
//! Run: `cargo bench --bench decoder`. Every benchmark decodes the same 20,000 ConfigMap-like objects (~2 KB each,
//! with managedFields): throughput is in bytes of the input each one reads (the watch stream adds the
//! `{"type":"MODIFIED","object":…}` envelope, ~1.5% more bytes), so compare times for the ratio.

use std::sync::OnceLock;

use divan::Bencher;
use divan::counter::BytesCount;
use kube_informer::object::DynamicObject;
use kube_informer::object::core::ConfigMap;
use kube_informer::watch::{ListDecoder, WatchDecoder, WatchEvent};
use serde::de::DeserializeOwned;
use serde_json::json;

const N: usize = 20_000;
const CHUNK: usize = 16 * 1024;

fn main() {
    let d = data();
    eprintln!(
        "{N} objects, {:.0} bytes each on average; watch stream {:.1} MB, list body {:.1} MB",
        d.objects.iter().map(Vec::len).sum::<usize>() as f64 / N as f64,
        d.stream.len() as f64 / 1e6,
        d.list.len() as f64 / 1e6
    );
    divan::main();
}

struct Data {
    /// Each object's JSON, apart.
    objects: Vec<Vec<u8>>,
    /// The same objects as a watch stream of MODIFIED events, one per line.
    stream: Vec<u8>,
    /// The same objects as one list body.
    list: Vec<u8>,
}

/// A realistic ConfigMap: 15 data keys, labels, annotations, a managedFields entry with nested fieldsV1.
fn object(i: usize) -> serde_json::Value {
    let keys: Vec<String> = (0..15).map(|k| format!("config-key-{k:02}.properties")).collect();
    let data: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| {
            (
                key.clone(),
                json!(format!("value-{i}-{k}: some setting = {}", "x".repeat(k * 3))),
            )
        })
        .collect();
    let fields_data: serde_json::Map<String, serde_json::Value> =
        keys.iter().map(|key| (format!("f:{key}"), json!({}))).collect();
    json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": format!("app-config-{i}"),
            "namespace": format!("team-{}", i % 50),
            "uid": format!("6f1c2a3b-{i:08x}-4c5d-8e9f-0a1b2c3d4e5f"),
            "resourceVersion": format!("{}", 1_000_000 + i),
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "labels": {
                "app.kubernetes.io/name": "shop",
                "app.kubernetes.io/component": format!("component-{}", i % 7),
                "app.kubernetes.io/managed-by": "helm",
                "environment": "production"
            },
            "annotations": {
                "meta.helm.sh/release-name": "shop",
                "meta.helm.sh/release-namespace": format!("team-{}", i % 50)
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

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let objects: Vec<Vec<u8>> = (0..N).map(|i| serde_json::to_vec(&object(i)).unwrap()).collect();
        let mut stream = Vec::new();
        let mut list =
            br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"2000000"},"items":["#.to_vec();
        for (i, o) in objects.iter().enumerate() {
            stream.extend_from_slice(br#"{"type":"MODIFIED","object":"#);
            stream.extend_from_slice(o);
            stream.extend_from_slice(b"}\n");
            if i > 0 {
                list.push(b',');
            }
            // The API server omits kind and apiVersion in list items; the bytes differ little.
            list.extend_from_slice(o);
        }
        list.extend_from_slice(b"]}\n");
        Data { objects, stream, list }
    })
}

/// (a) The baseline: `serde_json::from_slice` on each object, already split apart.
#[divan::bench(types = [DynamicObject, ConfigMap])]
fn a_from_slice_each<K: DeserializeOwned>(b: Bencher<'_, '_>) {
    let d = data();
    let bytes: usize = d.objects.iter().map(Vec::len).sum();
    b.counter(BytesCount::new(bytes)).bench(|| {
        for o in &d.objects {
            divan::black_box(serde_json::from_slice::<K>(o).unwrap());
        }
    });
}

/// Decodes the whole stream pushed in 16 KB chunks; with `recycle`, each decoded object goes back to the decoder.
fn watch_decoder<K: DeserializeOwned>(b: Bencher<'_, '_>, recycle: bool) {
    let d = data();
    b.counter(BytesCount::new(d.stream.len())).bench(|| {
        let mut dec = WatchDecoder::<K>::new();
        let mut n = 0;
        for chunk in d.stream.chunks(CHUNK) {
            dec.push(chunk);
            while let Some(ev) = dec.next_event() {
                match divan::black_box(ev.unwrap()) {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) if recycle => {
                        dec.recycle(o)
                    }
                    _ => {}
                }
                n += 1;
            }
        }
        dec.finish().unwrap();
        assert_eq!(n, N);
    });
}

/// (b) `WatchDecoder` over the whole stream, pushed in 16 KB chunks.
#[divan::bench(types = [DynamicObject, ConfigMap])]
fn b_watch_decoder<K: DeserializeOwned>(b: Bencher<'_, '_>) {
    watch_decoder::<K>(b, false);
}

/// (b'') `WatchDecoder` given back each object it decoded, to decode the next into (`recycle`, as the informer does
/// with the objects its cache lets go of).
#[divan::bench(types = [DynamicObject, ConfigMap])]
fn b_watch_decoder_recycling<K: DeserializeOwned>(b: Bencher<'_, '_>) {
    watch_decoder::<K>(b, true);
}

/// (b') `WatchDecoder` fed by `read_from` in 16 KB reads (the client's path).
#[divan::bench(types = [DynamicObject, ConfigMap])]
fn b_watch_decoder_read_from<K: DeserializeOwned>(b: Bencher<'_, '_>) {
    let d = data();
    b.counter(BytesCount::new(d.stream.len())).bench(|| {
        let mut dec = WatchDecoder::<K>::new();
        let mut r = Chunked(&d.stream);
        let mut n = 0;
        while dec.read_from(&mut r).unwrap() > 0 {
            while let Some(ev) = dec.next_event() {
                divan::black_box(ev.unwrap());
                n += 1;
            }
        }
        dec.finish().unwrap();
        assert_eq!(n, N);
    });
}

/// (b'') `WatchDecoder` over a stream without newlines between events: every event goes through the scanner.
#[divan::bench(types = [DynamicObject, ConfigMap])]
fn b_watch_decoder_no_newlines<K: DeserializeOwned>(b: Bencher<'_, '_>) {
    static STREAM: OnceLock<Vec<u8>> = OnceLock::new();
    let stream = STREAM.get_or_init(|| data().stream.iter().copied().filter(|&b| b != b'\n').collect());
    b.counter(BytesCount::new(stream.len())).bench(|| {
        let mut dec = WatchDecoder::<K>::new();
        let mut n = 0;
        for chunk in stream.chunks(CHUNK) {
            dec.push(chunk);
            while let Some(ev) = dec.next_event() {
                divan::black_box(ev.unwrap());
                n += 1;
            }
        }
        dec.finish().unwrap();
        assert_eq!(n, N);
    });
}

/// (c) `ListDecoder` over one list body of all the objects, pushed in 16 KB chunks.
#[divan::bench(types = [DynamicObject, ConfigMap])]
fn c_list_decoder<K: DeserializeOwned>(b: Bencher<'_, '_>) {
    let d = data();
    b.counter(BytesCount::new(d.list.len())).bench(|| {
        let mut dec = ListDecoder::<K>::new();
        let mut n = 0;
        for chunk in d.list.chunks(CHUNK) {
            dec.push(chunk);
            while let Some(item) = dec.next_item() {
                divan::black_box(item.unwrap());
                n += 1;
            }
        }
        dec.finish().unwrap();
        assert_eq!(n, N);
    });
}

/// A reader handing out at most 16 KB per call.
struct Chunked<'a>(&'a [u8]);

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(CHUNK).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}
