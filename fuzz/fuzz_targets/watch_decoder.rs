//! The watch decoder never panics, holds at most limit + one chunk, and decodes a stream the same however it is
//! split, and the same when given back each object it decoded to decode the next into; a stream serialised from a
//! recipe of events decodes back to those events.

#![no_main]

use kube_informer::object::{DynamicObject, ObjectMeta, Status};
use kube_informer::watch::{Bookmark, INITIAL_EVENTS_END_ANNOTATION, WatchDecoder, WatchEvent};
use kube_informer_fuzz::{Input, Recycling, arbitrary_bytes, cuts, run};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    match input.byte() % 2 {
        0 => {
            let split = arbitrary_bytes::<WatchDecoder<DynamicObject>>(input);
            let recycled = run::<Recycling>(split.limit, split.stream, &split.cuts);
            assert_eq!(split.run, recycled);
        }
        _ => recipe(input),
    }
});

fn recipe(mut input: Input<'_>) {
    let n = input.below(8) + 1;
    let mut stream = String::new();
    let mut expected = Vec::new();
    for i in 0..n {
        let ev = match input.below(5) {
            t @ 0..=2 => {
                let mut meta = ObjectMeta::namespaced(input.string(), input.string());
                meta.resource_version = Some(format!("{i}"));
                if input.byte() % 2 == 0 {
                    meta.labels.insert(input.string(), input.string());
                }
                let mut o = DynamicObject::default();
                o.api_version = "v1".into();
                o.kind = "ConfigMap".into();
                o.metadata = meta;
                let data: std::collections::BTreeMap<String, String> =
                    (0..input.below(4)).map(|_| (input.string(), input.string())).collect();
                o.set_field("data", &data).unwrap();
                match t {
                    0 => WatchEvent::Added(o),
                    1 => WatchEvent::Modified(o),
                    _ => WatchEvent::Deleted(o),
                }
            }
            3 => {
                let mut b = Bookmark {
                    resource_version: format!("{}", 100 + i),
                    ..Default::default()
                };
                if input.byte() % 2 == 0 {
                    b.annotations
                        .insert(INITIAL_EVENTS_END_ANNOTATION.into(), "true".into());
                }
                WatchEvent::Bookmark(b)
            }
            _ => WatchEvent::Error(Box::new(Status::failure(410, "Expired", input.string()))),
        };
        let value = serde_json::to_value(&ev).unwrap();
        let text = match input.below(4) {
            0 => serde_json::to_string(&ev).unwrap(),
            1 => format!(r#"{{"object":{},"type":"{}"}}"#, value["object"], ev.type_name()),
            2 => serde_json::to_string_pretty(&ev).unwrap(),
            _ => format!(
                r#"{{"extra":[{{"}}":"{{"}}],"type":"{}","object":{}}}"#,
                ev.type_name(),
                value["object"]
            ),
        };
        stream.push_str(&text);
        stream.push_str(["", "\n", "\r\n", " ", "\n\n\t"][input.below(5)]);
        expected.push(value);
    }
    let limit = kube_informer::watch::DEFAULT_MAX_OBJECT_SIZE;
    let stream = stream.as_bytes();
    let whole = run::<WatchDecoder<DynamicObject>>(limit, stream, &[]);
    assert_eq!(whole.finish, Ok(()));
    let got: Vec<serde_json::Value> = whole
        .items
        .iter()
        .map(|r| serde_json::to_value(r.as_ref().unwrap()).unwrap())
        .collect();
    assert_eq!(got, expected);
    let cuts = cuts(input.rest(), stream.len());
    let split = run::<WatchDecoder<DynamicObject>>(limit, stream, &cuts);
    assert_eq!(whole, split);
    assert_eq!(run::<Recycling>(limit, stream, &cuts), whole);
}
