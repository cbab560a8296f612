//! Real bodies kubectl 1.32 sent (tests/fixtures/protobuf/, see its README), decoded to exactly the JSON kubectl
//! itself writes for the same object (`--dry-run=client -o json`, Go's encoder over the same Go value); and
//! hand-made messages for what kubectl never sends.

use serde_json::{Value, json};

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/protobuf/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// (fixture, the URL's apiVersion and kind)
const KUBECTL_CREATE: &[(&str, &str, &str)] = &[
    ("configmap", "v1", "ConfigMap"),
    ("secret-generic", "v1", "Secret"),
    ("deployment", "apps/v1", "Deployment"),
    ("namespace", "v1", "Namespace"),
    ("service-clusterip", "v1", "Service"),
    ("service-nodeport", "v1", "Service"),
    ("job", "batch/v1", "Job"),
    ("cronjob", "batch/v1", "CronJob"),
    ("role", "rbac.authorization.k8s.io/v1", "Role"),
    ("priorityclass", "scheduling.k8s.io/v1", "PriorityClass"),
    ("quota", "v1", "ResourceQuota"),
];

#[test]
fn kubectl_create_bodies_decode_to_kubectls_own_json() {
    for (name, api_version, kind) in KUBECTL_CREATE {
        let got = decode_object(&fixture(&format!("{name}.bin")), api_version, kind)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want: Value = serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        assert_eq!(got, want, "{name}:\n{got:#}\n{want:#}");
    }
}

#[test]
fn kubectl_auth_can_i_body_decodes() {
    let got = decode_object(
        &fixture("selfsubjectaccessreview.bin"),
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
    )
    .unwrap();
    assert_eq!(
        got,
        json!({
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}},
            "status": {"allowed": false},
        })
    );
}

/// A protobuf encoder for the hand-made cases.
fn tag(number: u32, wire_type: u8) -> Vec<u8> {
    varint(u64::from(number) << 3 | u64::from(wire_type))
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn num(number: u32, v: u64) -> Vec<u8> {
    [tag(number, 0), varint(v)].concat()
}

fn len(number: u32, payload: &[u8]) -> Vec<u8> {
    [tag(number, 2), varint(payload.len() as u64), payload.to_vec()].concat()
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [len(1, api_version.as_bytes()), len(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), len(1, &type_meta), len(2, raw)].concat()
}

fn meta(name: &str) -> Vec<u8> {
    len(1, &len(1, name.as_bytes()))
}

#[test]
fn go_encoding_rules_hold_for_pointers_zero_values_and_specials() {
    // A Deployment with replicas: 0 (a pointer set to zero: kept), paused false (omitted), minReadySeconds 0
    // (omitted), a template whose container has no name (name has no omitempty: ""), a maxSurge of "25%" and a
    // maxUnavailable of 0 (IntOrString pointers), deletionTimestamp and creationTimestamp set.
    let time = |secs: u64| num(1, secs);
    let metadata = [
        len(1, b"d"),
        num(7, 3),
        len(8, &time(1_700_000_000)),
        // nanos are dropped by Time's Unmarshal
        len(9, &[time(1_700_000_001), num(2, 5)].concat()),
        len(11, &[len(1, b"k"), len(2, b"v")].concat()),
        // a label entry without a value: ""
        len(11, &len(1, b"nv")),
    ]
    .concat();
    let rolling = [
        len(1, &[num(1, 0), num(2, 0)].concat()),
        len(2, &[num(1, 1), len(3, b"25%")].concat()),
    ]
    .concat();
    let strategy = [len(1, b"RollingUpdate"), len(2, &rolling)].concat();
    let container = len(2, b"img");
    let pod_spec = len(2, &container);
    let template = len(2, &pod_spec);
    let spec = [num(1, 0), len(3, &template), len(4, &strategy), num(7, 0)].concat();
    let body = envelope("apps/v1", "Deployment", &[len(1, &metadata), len(2, &spec)].concat());
    let got = decode_object(&body, "apps/v1", "Deployment").unwrap();
    assert_eq!(
        got,
        json!({
            "kind": "Deployment",
            "apiVersion": "apps/v1",
            "metadata": {
                "name": "d",
                "generation": 3,
                "creationTimestamp": "2023-11-14T22:13:20Z",
                "deletionTimestamp": "2023-11-14T22:13:21Z",
                "labels": {"k": "v", "nv": ""},
            },
            "spec": {
                "replicas": 0,
                "selector": null,
                "template": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"containers": [{"name": "", "image": "img", "resources": {}}]},
                },
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
            },
            "status": {},
        })
    );
}

#[test]
fn repeated_messages_merge_and_scalars_take_the_last_value() {
    // metadata sent twice: the two halves merge; name sent twice: the last wins; an unknown field is skipped.
    let raw = [
        meta("first"),
        len(1, &[len(1, b"second"), len(3, b"ns")].concat()),
        len(99, b"ignored"),
        len(2, &[len(1, b"a"), len(2, b"1")].concat()),
        len(2, &[len(1, b"a"), len(2, b"2")].concat()),
    ]
    .concat();
    let got = decode_object(&envelope("v1", "ConfigMap", &raw), "v1", "ConfigMap").unwrap();
    assert_eq!(
        got,
        json!({"kind": "ConfigMap", "apiVersion": "v1",
               "metadata": {"name": "second", "namespace": "ns", "creationTimestamp": null},
               "data": {"a": "2"}})
    );
}

#[test]
fn bytes_and_strings_follow_go() {
    // Secret data: base64; a present empty value is "", stringData not UTF-8 gets U+FFFD per bad byte.
    let raw = [
        meta("s"),
        len(2, &[len(1, b"bin"), len(2, &[0, 0xff, 1])].concat()),
        len(2, &len(1, b"novalue")),
        len(4, &[len(1, b"t"), len(2, b"a\xe2\x82z")].concat()),
        num(5, 0),
    ]
    .concat();
    let got = decode_object(&envelope("v1", "Secret", &raw), "v1", "Secret").unwrap();
    assert_eq!(got["data"], json!({"bin": "AP8B", "novalue": ""}));
    assert_eq!(got["stringData"], json!({"t": "a\u{FFFD}\u{FFFD}z"}));
    assert_eq!(got["immutable"], json!(false), "a pointer set to false is kept");
}

#[test]
fn int64_stays_a_number_and_packed_repeated_fields_are_read() {
    // A Pod with activeDeadlineSeconds (int64 pointer) past 2^53; a container port with a negative hostPort (an
    // int32 sent as a ten-byte varint); supplementalGroups packed, then one more unpacked.
    let big = (1u64 << 60) + 1;
    let port = [num(2, u64::MAX - 4), num(3, 8080)].concat();
    let container = [len(1, b"c"), len(6, &port)].concat();
    let groups = [len(4, &[varint(1), varint(300)].concat()), num(4, 7), len(4, b"")].concat();
    let spec = [len(2, &container), num(5, big), len(14, &groups)].concat();
    let got = decode_object(
        &envelope("v1", "Pod", &[meta("p"), len(2, &spec)].concat()),
        "v1",
        "Pod",
    )
    .unwrap();
    assert_eq!(got["spec"]["activeDeadlineSeconds"], json!(big as i64));
    assert_eq!(
        got["spec"]["containers"][0]["ports"],
        json!([{"hostPort": -5, "containerPort": 8080}])
    );
    assert_eq!(got["spec"]["containers"][0]["name"], "c");
    assert_eq!(
        got["spec"]["securityContext"],
        json!({"supplementalGroups": [1, 300, 7]})
    );
}

#[test]
fn micro_time_keeps_microseconds() {
    // An Event's eventTime (MicroTime) and a Lease's renewTime.
    let renew = [num(1, 1_700_000_000), num(2, 123_456_789)].concat();
    let spec = [len(1, b"holder"), len(4, &renew)].concat();
    let got = decode_object(
        &envelope("coordination.k8s.io/v1", "Lease", &[meta("l"), len(2, &spec)].concat()),
        "coordination.k8s.io/v1",
        "Lease",
    )
    .unwrap();
    assert_eq!(
        got["spec"],
        json!({"holderIdentity": "holder", "renewTime": "2023-11-14T22:13:20.123456Z"})
    );
}

#[test]
fn an_empty_envelope_kind_takes_the_resources() {
    let body = [b"k8s\0".to_vec(), len(2, &meta("x"))].concat();
    let got = decode_object(&body, "v1", "ConfigMap").unwrap();
    assert_eq!((&got["kind"], &got["apiVersion"]), (&json!("ConfigMap"), &json!("v1")));
    // A kind given without a version takes the resource's version.
    let type_meta = len(2, b"Secret");
    let body = [b"k8s\0".to_vec(), len(1, &type_meta), len(2, &meta("x"))].concat();
    let got = decode_object(&body, "v1", "ConfigMap").unwrap();
    assert_eq!((&got["kind"], &got["apiVersion"]), (&json!("Secret"), &json!("v1")));
}

#[test]
fn errors_are_kube_apiservers() {
    let err = |body: &[u8]| decode_object(body, "v1", "ConfigMap").unwrap_err();
    assert_eq!(
        err(b""),
        "the object provided is unrecognized (must be of type ConfigMap): empty data (<empty>)"
    );
    assert_eq!(
        err(b"{\"kind\":\"ConfigMap\"}"),
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a \
         protobuf message, expected prefix [107 56 115 0] ({\"kind\":\"ConfigMap\"})"
    );
    assert_eq!(
        err(b"k8s\0"),
        "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"
    );
    assert_eq!(
        err(b"k8s\0\x0a\x05"),
        "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF (6b3873000a05)"
    );
    assert_eq!(
        err(&envelope("v1", "Widget", b"")),
        "Widget in version \"v1\" cannot be handled as a ConfigMap: no kind \"Widget\" is registered for version \
         \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
    );
    assert_eq!(
        err(&envelope("v1", "ConfigMap", &num(1, 5))),
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: proto: wrong wireType = 0 for field metadata"
    );
    assert_eq!(
        err(&envelope("v1", "ConfigMap", &[0x0a, 0x03, 0x0a])),
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: unexpected EOF"
    );
    let long = [b"k8s\0".as_slice(), &[0x0a, 0x7f], &[0; 40]].concat();
    assert!(err(&long).ends_with("(6b3873000a7f000000000000000000000000000000000000000000000000 ...)"));
}

#[test]
fn delete_options_decode() {
    let pre = [len(1, b"uid-1"), len(2, b"7")].concat();
    let raw = [num(1, 30), len(2, &pre), len(4, b"Foreground"), len(5, b"All")].concat();
    let got = decode_delete_options(&envelope("v1", "DeleteOptions", &raw)).unwrap();
    assert_eq!(
        got,
        json!({"gracePeriodSeconds": 30, "preconditions": {"uid": "uid-1", "resourceVersion": "7"},
               "propagationPolicy": "Foreground", "dryRun": ["All"]})
    );
    assert!(decode_delete_options(&envelope("v1", "ConfigMap", b"")).is_err());
}

#[test]
fn the_default_kinds_are_known_and_custom_ones_are_not() {
    for (v, k) in [
        ("v1", "ConfigMap"),
        ("apps/v1", "Deployment"),
        ("v1", "Event"),
        ("v1", "Node"),
    ] {
        assert!(knows_kind(v, k), "{k}");
    }
    assert!(!knows_kind("example.com/v1", "Widget"));
    assert!(!knows_kind("apps/v1", "ConfigMap"));
}

/// k8s.io/api's (and apiextensions-apiserver's) round-trip fixtures (tests/fixtures/go-json/, every field set): each
/// `.pb` decodes to exactly its `.json` object — the groups the table always had, and those it gained with their Go
/// field order (admissionregistration, apidiscovery, autoscaling/v1, discovery, events, flowcontrol, node, resource,
/// storage, CustomResourceDefinition), whose protobuf bodies were refused (415) before.
#[test]
fn k8s_api_round_trip_fixtures_decode_to_their_json() {
    let dir = format!("{}/tests/fixtures/go-json", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .into_string()
                .ok()?
                .strip_suffix(".pb")
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 38, "{names:?}");
    for name in &names {
        // GROUP.VERSION.KIND, the core group `core`.
        let (group_version, kind) = name.rsplit_once('.').unwrap();
        let api_version = match group_version.rsplit_once('.').unwrap() {
            ("core", version) => version.to_owned(),
            (group, version) => format!("{group}/{version}"),
        };
        let api_version = api_version.as_str();
        let read = |ext: &str| {
            let path = format!("{dir}/{name}.{ext}");
            std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        assert!(knows_kind(api_version, kind), "{name}");
        let got = decode_object(&read("pb"), api_version, kind).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want: Value = serde_json::from_slice(&read("json")).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

/// Kinds described for their JSON order only are not decoded: the discovery documents, Table.
#[test]
fn kinds_described_for_json_order_only_are_not_decoded() {
    for (api_version, kind) in [
        ("v1", "APIResourceList"),
        ("v1", "APIVersions"),
        ("meta.k8s.io/v1", "Table"),
    ] {
        assert!(!knows_kind(api_version, kind), "{kind}");
        assert!(Schema::get().kind(api_version, kind).is_some(), "{kind}");
        let body = envelope(api_version, kind, &meta("x"));
        let e = decode_object(&body, api_version, kind).unwrap_err();
        assert!(e.contains("no kind"), "{kind}: {e}");
    }
}

/// kube-aggregator's APIService (no round-trip fixture of its own): the Go rules over its spec — a pointer to a
/// service reference, `bytes` as base64, int32s without omitempty.
#[test]
fn api_service_decodes() {
    let service = [len(1, b"ns"), len(2, b"svc"), num(3, 443)].concat();
    let spec = [
        len(1, &service),
        len(2, b"example.com"),
        len(3, b"v1"),
        len(5, &[1, 2]),
        num(7, 1000),
        num(8, 15),
    ];
    let body = envelope(
        "apiregistration.k8s.io/v1",
        "APIService",
        &[meta("v1.example.com"), len(2, &spec.concat())].concat(),
    );
    assert_eq!(
        decode_object(&body, "apiregistration.k8s.io/v1", "APIService").unwrap(),
        json!({"kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1",
            "metadata": {"name": "v1.example.com", "creationTimestamp": null},
            "spec": {"service": {"namespace": "ns", "name": "svc", "port": 443}, "group": "example.com",
                "version": "v1", "caBundle": "AQI=", "groupPriorityMinimum": 1000, "versionPriority": 15},
            "status": {}})
    );
}

/// apiextensions' either-or types as their MarshalJSON writes them: `JSONSchemaPropsOrBool` is its schema when set
/// (whatever `allows`), else `allows`; `…OrArray` its schemas when there are any, else its schema; `…OrStringArray`
/// its strings, else its schema, else `null`.
#[test]
fn json_schema_either_or_types_decode_as_go_writes_them() {
    let ty = |t: &[u8]| len(5, t);
    let props = [
        ty(b"object"),
        len(
            24,
            &[len(1, &ty(b"integer")), len(2, &ty(b"a")), len(2, &ty(b"b"))].concat(),
        ),
        len(30, &[num(1, 1), len(2, &ty(b"string"))].concat()),
        len(
            32,
            &[len(1, b"x"), len(2, &[len(2, b"p"), len(2, b"q")].concat())].concat(),
        ),
        len(32, &[len(1, b"y"), len(2, &len(1, &ty(b"s")))].concat()),
        len(32, &len(1, b"z")),
        len(33, &[]),
    ]
    .concat();
    let schema = Schema::get();
    let m = schema.message("apiextensions.v1.JSONSchemaProps").unwrap();
    assert_eq!(
        super::json::message(schema, m, &props).unwrap(),
        json!({"type": "object", "items": [{"type": "a"}, {"type": "b"}], "additionalProperties": {"type": "string"},
            "dependencies": {"x": ["p", "q"], "y": {"type": "s"}, "z": null}, "additionalItems": false})
    );
    let allows = len(30, &num(1, 1));
    let items = len(24, &len(1, &ty(b"integer")));
    assert_eq!(
        super::json::message(schema, m, &[allows, items].concat()).unwrap(),
        json!({"items": {"type": "integer"}, "additionalProperties": true})
    );
}
