//! The list decoder never panics, holds at most limit + one chunk, and decodes a body the same however it is split;
//! a list body serialised from a recipe decodes back to its items and metadata (or to its Status).

#![no_main]

use kube_informer::object::{DynamicObject, ListMeta, ObjectMeta, Status};
use kube_informer::watch::ListDecoder;
use kube_informer::{DecodeError, DecodeErrorKind};
use kube_informer_fuzz::{Input, arbitrary_bytes, cuts, run};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    match input.byte() % 2 {
        0 => {
            arbitrary_bytes::<ListDecoder<DynamicObject>>(input);
        }
        _ => recipe(input),
    }
});

fn recipe(mut input: Input<'_>) {
    let pretty = input.byte() % 4 == 0;
    let to_text = |v: &serde_json::Value| {
        if pretty {
            serde_json::to_string_pretty(v).unwrap()
        } else {
            v.to_string()
        }
    };
    let mut expected_items = Vec::new();
    let mut expected_meta = ListMeta::default();
    let mut fields: Vec<String> = Vec::new();
    let is_status = input.below(8) == 0;
    if is_status {
        let st = Status::failure(500 + input.below(10) as u16, "InternalError", input.string());
        let text = serde_json::to_string(&st).unwrap();
        let whole = run::<ListDecoder<DynamicObject>>(1 << 20, text.as_bytes(), &[]);
        assert!(whole.items.is_empty());
        match whole.finish {
            Err(DecodeError {
                kind: DecodeErrorKind::Status(ref got),
                ..
            }) => assert_eq!(**got, st),
            other => panic!("{other:?}"),
        }
        let split = run::<ListDecoder<DynamicObject>>(1 << 20, text.as_bytes(), &cuts(input.rest(), text.len()));
        assert_eq!(split.finish, whole.finish);
        return;
    }
    // items
    let n = input.below(12);
    let items_text = if n == 0 && input.byte() % 2 == 0 {
        "null".to_string()
    } else {
        let mut parts = Vec::new();
        for i in 0..n {
            let mut o = DynamicObject::default();
            o.metadata = ObjectMeta::namespaced(input.string(), input.string());
            o.metadata.resource_version = Some(i.to_string());
            let data: std::collections::BTreeMap<String, String> =
                (0..input.below(4)).map(|_| (input.string(), input.string())).collect();
            o.set_field("data", &data).unwrap();
            let v = serde_json::to_value(&o).unwrap();
            parts.push(to_text(&v));
            expected_items.push(v);
        }
        format!("[{}]", parts.join([",", " , ", ",\n"][input.below(3)]))
    };
    fields.push(format!(r#""items":{items_text}"#));
    if input.byte() % 4 != 0 {
        expected_meta = ListMeta {
            resource_version: Some(input.string()),
            continue_token: (input.byte() % 2 == 0).then(|| input.string()),
            remaining_item_count: (input.byte() % 2 == 0).then(|| input.byte() as i64),
            ..ListMeta::default()
        };
        fields.push(format!(
            r#""metadata":{}"#,
            to_text(&serde_json::to_value(&expected_meta).unwrap())
        ));
    }
    fields.push(r#""kind":"ConfigMapList""#.into());
    fields.push(r#""apiVersion":"v1""#.into());
    if input.byte() % 2 == 0 {
        fields.push(format!(
            r#""{}":{{"nested":["]",{{"}}":1}}],"n":-1.5e3,"t":true,"z":null}}"#,
            "unknown"
        ));
    }
    // A permutation of the top-level keys.
    for i in (1..fields.len()).rev() {
        let j = input.below(i + 1);
        fields.swap(i, j);
    }
    let body = format!("{{{}}}\n", fields.join([",", " ,\n  "][input.below(2)]));
    let body = body.as_bytes();
    let whole = run::<ListDecoder<DynamicObject>>(1 << 20, body, &[]);
    assert_eq!(whole.finish, Ok(expected_meta), "{}", String::from_utf8_lossy(body));
    let got: Vec<serde_json::Value> = whole
        .items
        .iter()
        .map(|r| serde_json::to_value(r.as_ref().unwrap()).unwrap())
        .collect();
    assert_eq!(got, expected_items);
    let split = run::<ListDecoder<DynamicObject>>(1 << 20, body, &cuts(input.rest(), body.len()));
    assert_eq!(whole, split);
}
