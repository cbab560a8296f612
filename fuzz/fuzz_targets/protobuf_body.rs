//! The embedded server's protobuf body decoder never panics on any bytes, and whatever it accepts is a JSON object
//! naming its kind and apiVersion. Each input is tried as the body itself, for the kinds the fuzzer's first byte
//! picks, and wrapped in an envelope whose raw message is the input (so mutations reach the object decoder without
//! first having to find the envelope's framing).

#![no_main]

use kube_informer_apiserver::decode_protobuf_body;
use libfuzzer_sys::fuzz_target;

const KINDS: &[(&str, &str)] = &[
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Namespace"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Event"),
    ("apps/v1", "Deployment"),
    ("coordination.k8s.io/v1", "Lease"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("example.com/v1", "Widget"),
];

fn varint(mut v: usize, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn check(body: &[u8], api_version: &str, kind: &str) {
    match decode_protobuf_body(body, api_version, kind) {
        Ok(v) => {
            let obj = v.as_object().expect("an object");
            assert!(obj["kind"].is_string() && obj["apiVersion"].is_string(), "{v}");
            // What the server then writes back never fails either.
            serde_json::to_vec(&v).unwrap();
        }
        Err(e) => assert!(!e.is_empty()),
    }
}

fuzz_target!(|data: &[u8]| {
    let (api_version, kind) = KINDS[usize::from(data.first().copied().unwrap_or(0)) % KINDS.len()];
    check(data, api_version, kind);
    // k8s\0, then Unknown{typeMeta: {}, raw: data}: the kind comes from the resource.
    let mut body = b"k8s\0\x12".to_vec();
    varint(data.len(), &mut body);
    body.extend_from_slice(data);
    check(&body, api_version, kind);
});
