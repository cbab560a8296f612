//! The watch-stream and list-stream decoders, through their public API.

use std::collections::BTreeMap;
use std::io::Read;

use kube_informer::object::core::ConfigMap;
use kube_informer::object::{DynamicObject, ListMeta, ObjectMeta};
use kube_informer::watch::{ListDecoder, WatchDecoder, WatchEvent};
use kube_informer::{DecodeError, DecodeErrorKind, Error};
use serde::Deserialize;

type Ev = WatchEvent<DynamicObject>;

/// Everything a decoder produced: the results of `next_event` in order (ending at the first error), then `finish`.
#[derive(Debug, PartialEq)]
struct WatchRun<K> {
    results: Vec<Result<WatchEvent<K>, DecodeError>>,
    finish: Result<(), DecodeError>,
}

/// Decodes `stream` split at `cuts` (sorted offsets).
fn run_watch<K: serde::de::DeserializeOwned>(dec: &mut WatchDecoder<K>, stream: &[u8], cuts: &[usize]) -> WatchRun<K> {
    let mut results = Vec::new();
    let mut from = 0;
    'outer: for &to in cuts.iter().chain(std::iter::once(&stream.len())) {
        dec.push(&stream[from..to]);
        from = to;
        while let Some(r) = dec.next_event() {
            let stop = r.is_err();
            results.push(r);
            if stop {
                break 'outer;
            }
        }
    }
    WatchRun {
        results,
        finish: dec.finish(),
    }
}

fn watch(stream: &[u8], cuts: &[usize]) -> WatchRun<DynamicObject> {
    run_watch(&mut WatchDecoder::new(), stream, cuts)
}

fn events(run: WatchRun<DynamicObject>) -> Vec<Ev> {
    run.finish.unwrap();
    run.results.into_iter().map(Result::unwrap).collect()
}

/// A stream exercising most of the format: every event type, multi-byte UTF-8 (2, 3 and 4 bytes), escapes, braces
/// inside strings, `object` before `type`, several separators (newline, CRLF, tabs, nothing), an event spread over
/// several lines, and an unknown key.
fn mixed_stream() -> String {
    let mut s = String::new();
    s.push_str(r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"caf\u00e9-é","namespace":"ns","resourceVersion":"10","labels":{"app":"日本"}},"data":{"brace":"}{][","quote":"a\"b\\","emoji":"🦀🦀"}}}"#);
    s.push('\n');
    s.push_str(r#"{"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"11"},"data":{"k":"v"}}}"#);
    s.push_str("\r\n");
    s.push_str(r#"{"object":{"metadata":{"name":"c","resourceVersion":"12"}},"type":"DELETED"}"#);
    s.push_str(r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"13","annotations":{"k8s.io/initial-events-end":"true"}}}}"#);
    s.push_str("\t \n\n");
    s.push_str("{\n  \"type\": \"ADDED\",\n  \"object\": {\n    \"metadata\": {\"name\": \"d\"}\n  }\n}\n");
    s.push_str(r#"{"type":"MODIFIED","extra":[1,{"x":"}"}],"object":{"metadata":{"name":"e"}}}"#);
    s.push_str(r#" {"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (13)","reason":"Expired","code":410}}"#);
    s.push('\n');
    s
}

#[test]
fn decodes_every_event_type() {
    let evs = events(watch(mixed_stream().as_bytes(), &[]));
    assert_eq!(evs.len(), 7);
    let WatchEvent::Added(a) = &evs[0] else {
        panic!("{:?}", evs[0])
    };
    assert_eq!(a.metadata.name.as_deref(), Some("café-é"));
    assert_eq!(&a.metadata.labels["app"], "日本");
    let data: BTreeMap<String, String> = a.field("data").unwrap().unwrap();
    assert_eq!(
        (data["brace"].as_str(), data["quote"].as_str(), data["emoji"].as_str()),
        ("}{][", "a\"b\\", "🦀🦀")
    );
    assert!(matches!(&evs[1], WatchEvent::Modified(o) if o.metadata.resource_version.as_deref() == Some("11")));
    assert!(matches!(&evs[2], WatchEvent::Deleted(o) if o.metadata.name.as_deref() == Some("c")));
    let WatchEvent::Bookmark(b) = &evs[3] else {
        panic!("{:?}", evs[3])
    };
    assert_eq!(b.resource_version, "13");
    assert!(b.is_initial_events_end());
    assert!(matches!(&evs[4], WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("d")));
    assert!(matches!(&evs[5], WatchEvent::Modified(o) if o.metadata.name.as_deref() == Some("e")));
    let WatchEvent::Error(st) = &evs[6] else {
        panic!("{:?}", evs[6])
    };
    assert_eq!((st.code, st.reason.as_str()), (410, "Expired"));
    assert!(Error::Api(st.clone()).is_expired());
}

#[test]
fn a_split_at_every_offset_gives_the_same_events() {
    let stream = mixed_stream();
    let bytes = stream.as_bytes();
    let whole = watch(bytes, &[]);
    assert_eq!(whole.results.len(), 7);
    for i in 0..=bytes.len() {
        assert_eq!(watch(bytes, &[i]), whole, "split at {i}");
    }
    let every: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(watch(bytes, &every), whole, "one byte at a time");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200 {
        let mut cuts: Vec<usize> = (0..5)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % bytes.len() as u64) as usize
            })
            .collect();
        cuts.sort_unstable();
        assert_eq!(watch(bytes, &cuts), whole, "cuts {cuts:?}");
    }
}

#[test]
fn errors_do_not_depend_on_the_split() {
    let good = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
    for bad in [
        format!("{good}\n{good} x {good}\n"),
        format!("{good}\n{{\"type\":\"NOPE\",\"object\":{{}}}}\n{good}\n"),
        format!("{good}{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":5}}}}}}{good}\n"),
        format!("{good}\n{{\"type\":\"ADDED\",\n\"object\":[}}\n"),
        format!("{good}\n{good}\n{{\"type\":\"ADDED\""),
    ] {
        let bytes = bad.as_bytes();
        let whole = watch(bytes, &[]);
        assert!(whole.results.last().unwrap().is_err() || whole.finish.is_err(), "{bad}");
        for i in 0..=bytes.len() {
            assert_eq!(watch(bytes, &[i]), whole, "{bad} split at {i}");
        }
    }
}

#[test]
fn events_of_changing_sizes_without_newlines_split_anywhere() {
    // Without newlines the decoder guesses a window from the previous event's size; events much larger or smaller
    // than the previous one must come out the same wherever the stream is split.
    let mut stream = String::new();
    for size in [10, 3000, 5, 700, 12_000, 1, 1, 400] {
        stream.push_str(&format!(
            r#"{{"type":"MODIFIED","object":{{"metadata":{{"name":"n{size}"}},"data":{{"k":"{}"}}}}}}"#,
            "é".repeat(size)
        ));
    }
    let bytes = stream.as_bytes();
    let whole = watch(bytes, &[]);
    assert_eq!(whole.results.len(), 8);
    assert_eq!(whole.finish, Ok(()));
    for i in (0..=bytes.len()).step_by(7) {
        assert_eq!(watch(bytes, &[i]), whole, "split at {i}");
    }
    for step in [1000, 4096, 16 * 1024] {
        let cuts: Vec<usize> = (step..bytes.len()).step_by(step).collect();
        assert_eq!(watch(bytes, &cuts), whole, "chunks of {step}");
    }
}

#[test]
fn whitespace_between_events_is_optional() {
    let ev = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
    for sep in ["", "\n", "\r\n", " \t ", "\n\n\n"] {
        let stream = format!("{sep}{ev}{sep}{ev}{sep}{ev}{sep}");
        assert_eq!(events(watch(stream.as_bytes(), &[])).len(), 3, "{sep:?}");
    }
    let empty = watch(b" \n\t\r\n", &[]);
    assert_eq!((empty.results.len(), empty.finish), (0, Ok(())));
}

#[test]
fn bytes_other_than_whitespace_between_events_are_an_error_at_their_offset() {
    let ev = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
    let stream = format!("{ev}\n,{ev}\n");
    let mut dec = WatchDecoder::<DynamicObject>::new();
    dec.push(stream.as_bytes());
    assert!(dec.next_event().unwrap().is_ok());
    let err = dec.next_event().unwrap().unwrap_err();
    assert_eq!(err.offset, ev.len() as u64 + 1);
    assert!(
        matches!(&err.kind, DecodeErrorKind::Json(m) if m.contains("','")),
        "{err:?}"
    );
    // Poisoned: the event after the garbage is never returned, and the error stays.
    assert_eq!(dec.next_event().unwrap().unwrap_err(), err);
    dec.push(ev.as_bytes());
    assert_eq!(dec.next_event().unwrap().unwrap_err(), err);
    assert_eq!(dec.finish().unwrap_err(), err);
    assert_eq!(dec.buffered(), 0);
}

#[test]
fn a_stream_ending_inside_an_event_is_truncated() {
    let stream = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}{"type":"ADDED","object":{"meta"#;
    let run = watch(stream.as_bytes(), &[]);
    assert_eq!(run.results.len(), 1);
    assert_eq!(
        run.finish,
        Err(DecodeError {
            offset: stream.len() as u64,
            kind: DecodeErrorKind::Truncated
        })
    );
}

#[test]
fn an_event_over_the_limit_fails_as_soon_as_it_crosses_it() {
    let limit = 10_000;
    let first = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
    let mut dec = WatchDecoder::<DynamicObject>::with_max_object_size(limit);
    dec.push(first.as_bytes());
    dec.push(b"\n");
    assert!(dec.next_event().unwrap().is_ok());
    dec.push(br#"{"type":"ADDED","object":{"metadata":{"name":"big"},"data":{"x":""#);
    let chunk = [b'x'; 1000];
    let mut pushed = 0;
    let err = loop {
        dec.push(&chunk);
        pushed += chunk.len();
        assert!(dec.buffered() <= limit + chunk.len(), "{}", dec.buffered());
        match dec.next_event() {
            None => continue,
            Some(r) => break r.unwrap_err(),
        }
    };
    assert!(
        pushed <= limit + chunk.len(),
        "the error came late: after {pushed} bytes"
    );
    assert_eq!(
        err,
        DecodeError {
            offset: first.len() as u64 + 1,
            kind: DecodeErrorKind::TooLarge { limit }
        }
    );
    assert_eq!(dec.buffered(), 0, "a poisoned decoder drops its buffer");
}

#[test]
fn a_complete_event_over_the_limit_is_too_large_too() {
    let ev = r#"{"type":"ADDED","object":{"metadata":{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}}"#;
    let stream = format!("{ev}\n{ev}\n");
    let run = run_watch(
        &mut WatchDecoder::<DynamicObject>::with_max_object_size(ev.len() - 1),
        stream.as_bytes(),
        &[],
    );
    assert_eq!(
        run.results[0],
        Err(DecodeError {
            offset: 0,
            kind: DecodeErrorKind::TooLarge { limit: ev.len() - 1 }
        })
    );
    let run = run_watch(
        &mut WatchDecoder::<DynamicObject>::with_max_object_size(ev.len()),
        stream.as_bytes(),
        &[],
    );
    assert_eq!((run.results.len(), run.finish), (2, Ok(())));
}

#[test]
fn invalid_utf8_is_reported_at_the_bad_byte() {
    let first = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"é\"}}}\n";
    let mut stream = first.as_bytes().to_vec();
    stream.extend_from_slice(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\xff\"}}}\n");
    let bad = stream.iter().position(|&b| b == 0xff).unwrap() as u64;
    for i in 0..=stream.len() {
        let run = watch(&stream, &[i]);
        assert_eq!(run.results.len(), 2, "split at {i}");
        assert!(run.results[0].is_ok());
        assert_eq!(
            run.results[1],
            Err(DecodeError {
                offset: bad,
                kind: DecodeErrorKind::InvalidUtf8
            }),
            "split at {i}"
        );
    }
}

#[test]
fn malformed_json_is_reported_inside_its_event() {
    let first = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\n";
    let stream = format!("{first}{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":tru}}}}}}\n");
    let run = watch(stream.as_bytes(), &[]);
    let err = run.results[1].clone().unwrap_err();
    let at = stream.find("tru}").unwrap() as u64;
    assert!((at..at + 4).contains(&err.offset), "{err:?} (tru at {at})");
    assert!(matches!(err.kind, DecodeErrorKind::Json(_)));
}

#[test]
fn unknown_types_and_missing_keys_are_errors() {
    for (stream, needle) in [
        (r#"{"type":"CHANGED","object":{}}"#, "CHANGED"),
        (r#"{"object":{},"type":"CHANGED"}"#, "CHANGED"),
        (r#"{"object":{}}"#, "type"),
        (r#"{"type":"ADDED"}"#, "object"),
        (r#"{"type":"ADDED","type":"ADDED","object":{}}"#, "type"),
        (r#"{"type":"BOOKMARK","object":{"metadata":{}}}"#, "resourceVersion"),
    ] {
        let run = watch(stream.as_bytes(), &[]);
        let err = run.results[0].clone().unwrap_err();
        assert!(
            matches!(&err.kind, DecodeErrorKind::Json(m) if m.contains(needle)),
            "{stream}: {err:?}"
        );
    }
}

/// A typed object with a field a bookmark's object lacks.
#[derive(Debug, PartialEq, Deserialize)]
struct Strict {
    metadata: ObjectMeta,
    spec: StrictSpec,
}

#[derive(Debug, PartialEq, Deserialize)]
struct StrictSpec {
    replicas: u32,
}

#[test]
fn a_typed_kinds_bookmark_needs_none_of_its_fields() {
    let stream = concat!(
        r#"{"type":"BOOKMARK","object":{"kind":"Strict","apiVersion":"v1","metadata":{"resourceVersion":"55","creationTimestamp":null}}}"#,
        "\n",
        r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"replicas":2}}}"#,
        "\n",
        r#"{"type":"ADDED","object":{"metadata":{"name":"b"}}}"#,
        "\n"
    );
    let run = run_watch(&mut WatchDecoder::<Strict>::new(), stream.as_bytes(), &[]);
    assert!(
        matches!(&run.results[0], Ok(WatchEvent::Bookmark(b)) if b.resource_version == "55" && !b.is_initial_events_end())
    );
    assert!(matches!(&run.results[1], Ok(WatchEvent::Added(s)) if s.spec.replicas == 2));
    assert!(matches!(&run.results[2], Err(DecodeError { kind: DecodeErrorKind::Json(m), .. }) if m.contains("spec")));
}

#[test]
fn object_before_type_decodes_the_same() {
    let a = r#"{"type":"MODIFIED","object":{"metadata":{"name":"x"},"data":{"k":"v"}}}"#;
    let b = r#"{"object":{"metadata":{"name":"x"},"data":{"k":"v"}},"type":"MODIFIED"}"#;
    let ta = run_watch(&mut WatchDecoder::<ConfigMap>::new(), a.as_bytes(), &[]);
    let tb = run_watch(&mut WatchDecoder::<ConfigMap>::new(), b.as_bytes(), &[]);
    assert_eq!(ta, tb);
    assert!(matches!(&ta.results[0], Ok(WatchEvent::Modified(cm)) if &cm.data["k"] == "v"));
    let bm = r#"{"object":{"metadata":{"resourceVersion":"3"}},"type":"BOOKMARK"}"#;
    let run = run_watch(&mut WatchDecoder::<ConfigMap>::new(), bm.as_bytes(), &[]);
    assert!(matches!(&run.results[0], Ok(WatchEvent::Bookmark(b)) if b.resource_version == "3"));
}

#[test]
fn serialised_events_decode_back() {
    let cm = ConfigMap::new(ObjectMeta::namespaced("ns", "n")).with("k", "v");
    let evs = vec![
        WatchEvent::Added(cm.clone()),
        WatchEvent::Deleted(cm),
        WatchEvent::Bookmark(kube_informer::watch::Bookmark {
            resource_version: "4".into(),
            annotations: BTreeMap::from([("k8s.io/initial-events-end".into(), "true".into())]),
        }),
        WatchEvent::Error(Box::new(kube_informer::object::Status::failure(410, "Expired", "old"))),
    ];
    let mut stream = Vec::new();
    for ev in &evs {
        serde_json::to_writer(&mut stream, ev).unwrap();
    }
    let run = run_watch(&mut WatchDecoder::<ConfigMap>::new(), &stream, &[]);
    assert_eq!(run.results.into_iter().map(Result::unwrap).collect::<Vec<_>>(), evs);
}

/// A reader that hands out at most `step` bytes per call and counts its calls.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
    calls: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls += 1;
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn read_from_reads_once_per_call() {
    let stream = mixed_stream();
    let mut r = Trickle {
        data: stream.as_bytes(),
        step: 13,
        calls: 0,
    };
    let mut dec = WatchDecoder::<DynamicObject>::new();
    let mut got = Vec::new();
    let mut reads = 0;
    loop {
        let n = dec.read_from(&mut r).unwrap();
        reads += 1;
        assert_eq!(r.calls, reads);
        while let Some(ev) = dec.next_event() {
            got.push(ev.unwrap());
        }
        if n == 0 {
            break;
        }
    }
    dec.finish().unwrap();
    assert_eq!(got, events(watch(stream.as_bytes(), &[])));
    assert_eq!(dec.bytes_consumed(), stream.len() as u64);
}

#[test]
fn a_large_event_in_small_reads_is_decoded() {
    let value = "v".repeat(3 << 20);
    let stream = format!(r#"{{"type":"ADDED","object":{{"metadata":{{"name":"big"}},"data":{{"k":"{value}"}}}}}}"#);
    for with_newline in [false, true] {
        let mut stream = stream.clone();
        if with_newline {
            stream.push('\n');
        }
        let mut r = Trickle {
            data: stream.as_bytes(),
            step: 16 * 1024,
            calls: 0,
        };
        let mut dec = WatchDecoder::<ConfigMap>::new();
        let mut got = Vec::new();
        while dec.read_from(&mut r).unwrap() > 0 {
            while let Some(ev) = dec.next_event() {
                got.push(ev.unwrap());
            }
        }
        dec.finish().unwrap();
        assert!(matches!(&got[..], [WatchEvent::Added(cm)] if cm.data["k"].len() == 3 << 20));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Lists

#[derive(Debug, PartialEq)]
struct ListRun<K> {
    results: Vec<Result<K, DecodeError>>,
    finish: Result<ListMeta, DecodeError>,
}

fn run_list<K: serde::de::DeserializeOwned>(mut dec: ListDecoder<K>, body: &[u8], cuts: &[usize]) -> ListRun<K> {
    let mut results = Vec::new();
    let mut from = 0;
    'outer: for &to in cuts.iter().chain(std::iter::once(&body.len())) {
        dec.push(&body[from..to]);
        from = to;
        while let Some(r) = dec.next_item() {
            let stop = r.is_err();
            results.push(r);
            if stop {
                break 'outer;
            }
        }
    }
    ListRun {
        results,
        finish: dec.finish(),
    }
}

fn list(body: &str) -> ListRun<DynamicObject> {
    run_list(ListDecoder::new(), body.as_bytes(), &[])
}

fn names(run: &ListRun<DynamicObject>) -> Vec<String> {
    run.results
        .iter()
        .map(|r| r.as_ref().unwrap().metadata.name.clone().unwrap())
        .collect()
}

const META: &str = r#""metadata":{"resourceVersion":"99","continue":"next","remainingItemCount":5}"#;
const ITEMS: &str = r#""items":[{"metadata":{"name":"a"},"data":{"x":"]}{é"}},{"metadata":{"name":"日本"}} , {"metadata":{"name":"c"},"spec":[[],{}]}]"#;

fn expected_meta() -> ListMeta {
    ListMeta {
        resource_version: Some("99".into()),
        continue_token: Some("next".into()),
        remaining_item_count: Some(5),
        shard_info: None,
    }
}

#[test]
fn list_metadata_before_or_after_items() {
    for body in [
        format!(r#"{{"kind":"ConfigMapList","apiVersion":"v1",{META},{ITEMS}}}"#),
        format!("{{{ITEMS},\n  \"kind\": \"ConfigMapList\", {META}, \"apiVersion\":\"v1\"}}\n"),
        format!(r#"{{"unknown":{{"a":[1,"]"]}},"n":-1.5e3,"t":true,"z":null,{ITEMS},{META}}}"#),
    ] {
        let run = list(&body);
        assert_eq!(names(&run), ["a", "日本", "c"], "{body}");
        assert_eq!(run.finish, Ok(expected_meta()), "{body}");
        let bytes = body.as_bytes();
        for i in 0..=bytes.len() {
            assert_eq!(run_list(ListDecoder::new(), bytes, &[i]), run, "{body} split at {i}");
        }
        let every: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(run_list(ListDecoder::new(), bytes, &every), run, "{body} byte by byte");
    }
}

#[test]
fn null_empty_and_missing_items() {
    for body in [
        r#"{"items":null,"metadata":{}}"#,
        r#"{"items":[],"metadata":{}}"#,
        r#"{"items":[ ]}"#,
    ] {
        let run = list(body);
        assert_eq!((run.results.len(), run.finish), (0, Ok(ListMeta::default())), "{body}");
    }
    let run = list(r#"{"kind":"PodList","metadata":{"resourceVersion":"1"}}"#);
    assert!(matches!(run.finish, Err(DecodeError { kind: DecodeErrorKind::Json(m), .. }) if m.contains("items")));
}

#[test]
fn malformed_lists_give_typed_errors_at_their_offset() {
    for (body, at, needle) in [
        (r#"[{"metadata":{}}]"#, 0, "list object"),
        (r#"  "items""#, 2, "list object"),
        (r#"{"items":{}}"#, 9, "array"),
        (r#"{"items":nul}"#, 9, "array or null"),
        (r#"{"items":[1]}"#, 10, "object"),
        (r#"{"items":[{}{}]}"#, 12, "','"),
        (r#"{"items":[],"items":[]}"#, 20, "duplicate"),
        (r#"{"items":[]} x"#, 13, "after the end"),
        (r#"{"items":[] "kind":"L"}"#, 12, "','"),
        (r#"{"metadata":{"resourceVersion":5},"items":[]}"#, 31, "string"),
        (r#"{"items":[{"metadata":{"name":tru}}]}"#, 33, "ident"),
        (r#"{"x":tru,"items":[]}"#, 7, "EOF"),
    ] {
        let run = list(body);
        let err = match run.results.last() {
            Some(Err(e)) => e.clone(),
            _ => run.finish.clone().unwrap_err(),
        };
        assert!(
            matches!(&err.kind, DecodeErrorKind::Json(m) if m.contains(needle)),
            "{body}: {err:?}"
        );
        assert!(err.offset.abs_diff(at) <= 3, "{body}: {err:?}, expected about {at}");
        assert_eq!(run.finish, Err(err), "{body}: finish repeats the error");
    }
}

#[test]
fn a_truncated_list_is_an_error_wherever_it_stops() {
    let body = format!(r#"{{"kind":"List",{META},{ITEMS}}}"#);
    for end in 0..body.len() {
        let run = run_list(ListDecoder::<DynamicObject>::new(), &body.as_bytes()[..end], &[]);
        assert_eq!(
            run.finish,
            Err(DecodeError {
                offset: end as u64,
                kind: DecodeErrorKind::Truncated
            }),
            "cut at {end}"
        );
    }
}

#[test]
fn invalid_utf8_in_an_item() {
    let mut body = br#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"#.to_vec();
    let bad = body.len() as u64;
    body.extend_from_slice(b"\xc3\x28\"}}]}");
    let run = run_list(ListDecoder::<DynamicObject>::new(), &body, &[]);
    assert!(run.results[0].is_ok());
    assert_eq!(
        run.results[1],
        Err(DecodeError {
            offset: bad,
            kind: DecodeErrorKind::InvalidUtf8
        })
    );
}

#[test]
fn an_item_over_the_limit_fails_with_bounded_memory() {
    let limit = 4096;
    let mut dec = ListDecoder::<DynamicObject>::with_max_object_size(limit);
    dec.push(br#"{"items":[{"metadata":{"name":"a"}},"#);
    assert!(dec.next_item().unwrap().is_ok());
    let start = dec.bytes_consumed() + 1; // after the ','
    dec.push(br#"{"metadata":{"name":"big"},"data":{"x":""#);
    let err = loop {
        dec.push(&[b'x'; 100]);
        assert!(dec.buffered() <= limit + 100);
        if let Some(r) = dec.next_item() {
            break r.unwrap_err();
        }
    };
    assert_eq!(
        err,
        DecodeError {
            offset: start,
            kind: DecodeErrorKind::TooLarge { limit }
        }
    );
}

#[test]
fn a_status_body_is_reported_as_the_status() {
    let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the resourceVersion is too old","reason":"Expired","details":{"retryAfterSeconds":2},"code":410}"#;
    let run = list(body);
    assert!(run.results.is_empty());
    let err = run.finish.unwrap_err();
    let DecodeErrorKind::Status(st) = &err.kind else {
        panic!("{err:?}")
    };
    assert_eq!(
        (st.code, st.reason.as_str(), st.status.as_str()),
        (410, "Expired", "Failure")
    );
    assert_eq!(st.details.as_ref().unwrap().retry_after_seconds, Some(2));
    let err = Error::from(err);
    assert!(err.is_expired(), "{err:?}");
    assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(2)));
}

#[test]
fn typed_items() {
    let body = r#"{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"},"data":{"k":"v"}}],"metadata":{"resourceVersion":"3"}}"#;
    let run = run_list(ListDecoder::<ConfigMap>::new(), body.as_bytes(), &[]);
    assert_eq!(
        run.results,
        vec![Ok(ConfigMap::new(ObjectMeta::named("a")).with("k", "v"))]
    );
    assert_eq!(run.finish.unwrap().resource_version.as_deref(), Some("3"));
}

/// Generates a list body of `n` items on the fly, so the test itself holds no large buffer.
struct ListBody {
    n: usize,
    next: usize,
    pending: Vec<u8>,
    done: bool,
}

impl Read for ListBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.len() < buf.len() && !self.done {
            if self.next == 0 {
                self.pending
                    .extend_from_slice(br#"{"kind":"ConfigMapList","apiVersion":"v1","items":["#);
            }
            if self.next == self.n {
                self.pending
                    .extend_from_slice(br#"],"metadata":{"resourceVersion":"77"}}"#);
                self.done = true;
                break;
            }
            if self.next > 0 {
                self.pending.push(b',');
            }
            let item = format!(
                r#"{{"metadata":{{"name":"cm-{}","namespace":"default","resourceVersion":"{}"}},"data":{{"key":"{}"}}}}"#,
                self.next,
                self.next,
                "v".repeat(200)
            );
            self.pending.extend_from_slice(item.as_bytes());
            self.next += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

#[test]
fn a_huge_list_streams_with_bounded_memory() {
    let n = 100_000;
    let mut body = ListBody {
        n,
        next: 0,
        pending: Vec::new(),
        done: false,
    };
    let mut dec = ListDecoder::<ConfigMap>::new();
    let mut count = 0;
    let mut max_buffered = 0;
    while dec.read_from(&mut body).unwrap() > 0 {
        max_buffered = max_buffered.max(dec.buffered());
        while let Some(item) = dec.next_item() {
            let cm = item.unwrap();
            assert_eq!(cm.metadata.name.unwrap(), format!("cm-{count}"));
            count += 1;
        }
        assert!(
            dec.buffered() < 1024,
            "only a partial item stays buffered: {}",
            dec.buffered()
        );
    }
    assert!(max_buffered <= 128 * 1024, "{max_buffered}");
    assert_eq!(count, n);
    let total = dec.bytes_consumed();
    assert!(total > 25_000_000, "{total}");
    assert_eq!(dec.finish().unwrap().resource_version.as_deref(), Some("77"));
}
