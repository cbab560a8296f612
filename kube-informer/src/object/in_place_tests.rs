//! Decoding in place (`Deserialize::deserialize_in_place`, what the watch decoder does with a recycled object) gives
//! exactly what a fresh decode gives, whatever the object decoded over held; and it reuses that object's memory.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::de::DeserializeSeed;

use super::core::ConfigMap;
use super::meta::InPlace;
use super::{DynamicObject, ObjectMeta, StringMap};
use crate::workqueue::queue::Rng;

/// JSON text of every shape the decoders meet: valid objects with any subset of fields, nulls, empty and unsorted
/// maps, escapes, duplicate keys, wrong types.
struct Gen(Rng);

impl Gen {
    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[self.0.below(of.len() as u64) as usize]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.0.below(100) < percent
    }

    /// A string field's value: mostly strings of varied lengths, sometimes null or the wrong type.
    fn string(&mut self) -> String {
        match self.0.below(20) {
            0 => "null".into(),
            1 => "5".into(),
            2 => "{}".into(),
            _ => format!(
                "\"{}\"",
                self.pick(&[
                    "",
                    "a",
                    "web-1",
                    "app-config-000123",
                    "é\\u00e9",
                    "tab\\tquote\\\"",
                    &"x".repeat(300)
                ])
            ),
        }
    }

    fn map(&mut self) -> String {
        match self.0.below(12) {
            0 => "null".into(),
            1 => "{}".into(),
            2 => "[]".into(),
            _ => {
                let n = self.0.below(5);
                let entries: Vec<String> = (0..n)
                    .map(|_| {
                        let key = self.pick(&["app", "tier", "a", "zz", "app.kubernetes.io/name", "é"]);
                        let value = if self.chance(5) {
                            "1".to_string()
                        } else {
                            self.string_value()
                        };
                        format!("\"{key}\":{value}")
                    })
                    .collect();
                format!("{{{}}}", entries.join(","))
            }
        }
    }

    fn string_value(&mut self) -> String {
        format!(
            "\"{}\"",
            self.pick(&["", "v", "shop", "production", "value-1-2-000007: x", "ü\\n"])
        )
    }

    fn meta(&mut self) -> String {
        if self.chance(3) {
            return self.pick(&["null", "[]", "\"x\""]).into();
        }
        let mut fields = Vec::new();
        for key in [
            "name",
            "generateName",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
        ] {
            if self.chance(60) {
                fields.push(format!("\"{key}\":{}", self.string()));
            }
        }
        if self.chance(30) {
            fields.push(format!("\"generation\":{}", self.pick(&["1", "null", "\"2\""])));
        }
        for key in ["labels", "annotations"] {
            if self.chance(60) {
                fields.push(format!("\"{key}\":{}", self.map()));
            }
        }
        if self.chance(30) {
            let v = self.pick(&[
                "null",
                "[]",
                r#"[{"manager":"helm","operation":"Update","fieldsV1":{"f:data":{"f:a":{}}}}]"#,
            ]);
            fields.push(format!("\"managedFields\":{v}"));
        }
        if self.chance(10) {
            fields.push(r#""ownerReferences":[{"apiVersion":"v1","kind":"K","name":"n","uid":"u"}]"#.into());
        }
        if self.chance(10) {
            fields.push(r#""finalizers":["f"]"#.into());
        }
        if self.chance(10) {
            fields.push(r#""selfLink":"/x""#.into());
        }
        if self.chance(5) {
            fields.push(format!("\"name\":{}", self.string()));
        }
        self.shuffle(&mut fields);
        format!("{{{}}}", fields.join(","))
    }

    /// A ConfigMap, a DynamicObject's JSON as well.
    fn object(&mut self) -> String {
        if self.chance(3) {
            return self.pick(&["null", "[]", "5"]).into();
        }
        let mut fields = Vec::new();
        if self.chance(70) {
            fields.push(format!(
                "\"apiVersion\":{}",
                self.pick(&["\"v1\"", "\"apps/v1\"", "null"])
            ));
        }
        if self.chance(70) {
            fields.push(r#""kind":"ConfigMap""#.into());
        }
        if self.chance(90) {
            fields.push(format!("\"metadata\":{}", self.meta()));
        }
        for key in ["data", "binaryData"] {
            if self.chance(60) {
                fields.push(format!("\"{key}\":{}", self.map()));
            }
        }
        if self.chance(20) {
            fields.push(format!("\"immutable\":{}", self.pick(&["true", "null", "\"yes\""])));
        }
        if self.chance(10) {
            fields.push(r#""spec":{"replicas":3}"#.into());
        }
        if self.chance(5) {
            let dup = self.pick(&["metadata", "data", "immutable", "kind", "spec"]);
            fields.push(format!("\"{dup}\":{{}}"));
        }
        self.shuffle(&mut fields);
        format!("{{{}}}", fields.join(","))
    }

    fn shuffle(&mut self, v: &mut [String]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.0.below(i as u64 + 1) as usize);
        }
    }
}

/// Decodes `text` over `place`, as `serde_json::from_str` would decode it fresh.
fn decode_over<T: DeserializeOwned>(text: &str, place: &mut T) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_str(text);
    InPlace(place).deserialize(&mut de)?;
    de.end()
}

/// For many pairs `(a, b)`: `b` decoded over the decoded `a` is `b` decoded fresh (or the same error).
fn same_as_fresh<T: DeserializeOwned + PartialEq + Debug>(make: fn(&mut Gen) -> String) {
    let mut g = Gen(Rng(7));
    let (mut compared, mut errors) = (0, 0);
    for _ in 0..3000 {
        let (a, b) = (make(&mut g), make(&mut g));
        let Ok(mut place) = serde_json::from_str::<T>(&a) else {
            continue;
        };
        let over = decode_over(&b, &mut place);
        match (over, serde_json::from_str::<T>(&b)) {
            (Ok(()), Ok(fresh)) => assert_eq!(place, fresh, "{b} decoded over {a}"),
            (Err(e1), Err(e2)) => {
                assert_eq!(e1.to_string(), e2.to_string(), "{b} decoded over {a}");
                errors += 1;
            }
            (over, fresh) => panic!("{b} decoded over {a}: {over:?}, fresh: {fresh:?}"),
        }
        compared += 1;
    }
    // The generator reaches both outcomes often.
    assert!(
        compared > 1000 && errors > 50,
        "{compared} pairs compared, {errors} errors"
    );
}

#[test]
fn string_map_decoded_over_another_is_the_fresh_decode() {
    same_as_fresh::<StringMap>(Gen::map);
}

#[test]
fn object_meta_decoded_over_another_is_the_fresh_decode() {
    same_as_fresh::<ObjectMeta>(Gen::meta);
}

#[test]
fn config_map_decoded_over_another_is_the_fresh_decode() {
    same_as_fresh::<ConfigMap>(Gen::object);
}

#[test]
fn dynamic_object_decoded_over_another_is_the_fresh_decode() {
    same_as_fresh::<DynamicObject>(Gen::object);
}

mod derived {
    use serde::Deserialize;

    use crate::object::{ObjectMeta, StringMap};

    /// The ConfigMap as it was declared before its decoder was written by hand (serde's derive).
    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct ConfigMap {
        #[serde(default)]
        pub(super) metadata: ObjectMeta,
        #[serde(default)]
        pub(super) data: StringMap,
        #[serde(default)]
        pub(super) binary_data: StringMap,
        #[serde(default)]
        pub(super) immutable: Option<bool>,
    }
}

#[test]
fn hand_written_config_map_decoder_reads_what_the_derived_one_read() {
    let mut g = Gen(Rng(11));
    let mut ok = 0;
    for _ in 0..3000 {
        let text = g.object();
        match (
            serde_json::from_str::<ConfigMap>(&text),
            serde_json::from_str::<derived::ConfigMap>(&text),
        ) {
            (Ok(cm), Ok(d)) => {
                assert_eq!(
                    (cm.metadata, cm.data, cm.binary_data, cm.immutable),
                    (d.metadata, d.data, d.binary_data, d.immutable)
                );
                ok += 1;
            }
            (Err(e1), Err(e2)) => assert_eq!(e1.to_string(), e2.to_string(), "{text}"),
            // The derived decoder also read a struct from an array (its fields in order), which no API server sends
            // and k8s-openapi's types refuse; the hand-written one refuses it too.
            (Err(_), Ok(_)) if text.starts_with('[') => {}
            (a, b) => panic!("{text}: hand-written {a:?}, derived {b:?}"),
        }
    }
    assert!(ok > 1000, "{ok}");
}

#[test]
fn metadata_strings_read_as_optional_strings_did() {
    // The in-place string reader against `Option<String>`, on every shape of value (reusing a buffer or not).
    let mut g = Gen(Rng(3));
    for _ in 0..500 {
        let v = g.string();
        let meta = serde_json::from_str::<ObjectMeta>(&format!("{{\"uid\":{v}}}")).map(|m| m.uid);
        let mut over = ObjectMeta {
            uid: Some("a previous, longer value".into()),
            ..Default::default()
        };
        let in_place = decode_over(&format!("{{\"uid\":{v}}}"), &mut over).map(|()| over.uid);
        let plain = serde_json::from_str::<Option<String>>(&v);
        assert_eq!(meta.as_ref().ok(), plain.as_ref().ok(), "{v}");
        assert_eq!(in_place.as_ref().ok(), plain.as_ref().ok(), "{v}");
        if let (Err(a), Err(b)) = (&meta, &plain) {
            // Same complaint; only the position differs (the value sits after `{"uid":`).
            let what = |e: &serde_json::Error| e.to_string().split(" at line").next().unwrap_or_default().to_owned();
            assert_eq!(what(a), what(b), "{v}");
        }
    }
}

#[test]
fn decoding_over_an_object_reuses_its_strings() {
    let a = r#"{"metadata":{"name":"web-1","namespace":"prod","resourceVersion":"41","labels":{"app":"web"}},"data":{"k":"v1"}}"#;
    let b = r#"{"metadata":{"name":"web-2","namespace":"prod","resourceVersion":"42","labels":{"app":"api"}},"data":{"k":"v2"}}"#;
    let mut cm: ConfigMap = serde_json::from_str(a).unwrap();
    let addr = |cm: &ConfigMap| {
        (
            cm.metadata.name.as_ref().unwrap().as_ptr(),
            cm.metadata.resource_version.as_ref().unwrap().as_ptr(),
        )
    };
    let before = addr(&cm);
    decode_over(b, &mut cm).unwrap();
    assert_eq!(cm, serde_json::from_str::<ConfigMap>(b).unwrap());
    // The old object stayed alive during the decode, so equal addresses mean the same allocations, reused.
    assert_eq!(addr(&cm), before);

    let mut dynamic: DynamicObject = serde_json::from_str(a).unwrap();
    let name = dynamic.metadata.name.as_ref().unwrap().as_ptr();
    decode_over(b, &mut dynamic).unwrap();
    assert_eq!(dynamic.metadata.name.as_ref().unwrap().as_ptr(), name);
}

#[test]
fn a_string_reused_keeps_no_slack() {
    let mut cm: ConfigMap =
        serde_json::from_str(&format!(r#"{{"metadata":{{"name":"{}"}}}}"#, "x".repeat(200))).unwrap();
    decode_over(r#"{"metadata":{"name":"short"}}"#, &mut cm).unwrap();
    assert_eq!(
        cm.metadata.name.as_ref().unwrap().capacity(),
        5,
        "a string far too large is not kept"
    );
}

#[test]
fn decoded_in_a_scope_objects_share_what_repeats() {
    let text = |i: u32| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"prod","creationTimestamp":"2024-05-06T07:08:09Z","labels":{{"app":"web","tier":"{}"}},"managedFields":[{{"manager":"helm","operation":"Update","time":"2024-05-06T07:08:{i:02}Z","fieldsV1":{{"f:data":{{"f:k":{{}}}}}}}}]}},"data":{{"k":"value {i}"}}}}"#,
            if i.is_multiple_of(2) { "front" } else { "back" }
        )
    };
    let decode = || -> Vec<ConfigMap> { (0..4).map(|i| serde_json::from_str(&text(i)).unwrap()).collect() };
    let plain = decode();
    let scope = super::interner::Interner::enter();
    let shared = decode();
    let dynamic: Vec<DynamicObject> = (0..4).map(|i| serde_json::from_str(&text(i)).unwrap()).collect();
    drop(scope);
    assert_eq!(plain, shared, "interning changes nothing of what is decoded");
    let ns = |cm: &ConfigMap| cm.metadata.namespace.as_ref().unwrap().as_ptr();
    assert_ne!(ns(&plain[0]), ns(&plain[1]), "outside a scope: values of their own");
    assert_eq!(ns(&shared[0]), ns(&shared[3]));
    assert_eq!(
        shared[0].metadata.labels.keys_ptr(),
        shared[1].metadata.labels.keys_ptr()
    );
    assert_eq!(
        shared[0].metadata.labels.values_ptr(),
        shared[2].metadata.labels.values_ptr(),
        "same label set"
    );
    assert_ne!(
        shared[0].metadata.labels.values_ptr(),
        shared[1].metadata.labels.values_ptr()
    );
    assert_eq!(
        shared[0].data.keys_ptr(),
        shared[3].data.keys_ptr(),
        "data keys shared, values not"
    );
    assert_ne!(shared[0].data.values_ptr(), shared[3].data.values_ptr());
    let created = |cm: &ConfigMap| cm.metadata.creation_timestamp.as_ref().unwrap().as_ptr();
    assert_eq!(created(&shared[0]), created(&shared[1]));
    assert_eq!(
        shared[0].metadata.managed_fields.as_ref().unwrap().to_json(),
        plain[0].metadata.managed_fields.as_ref().unwrap().to_json()
    );
    assert_eq!(dynamic[0].api_version.as_ptr(), dynamic[3].api_version.as_ptr());
    assert_eq!(dynamic[1].kind.as_ptr(), dynamic[2].kind.as_ptr());
    assert_eq!(
        dynamic[0].fields().next().unwrap().0.as_ptr(),
        dynamic[1].fields().next().unwrap().0.as_ptr(),
        "field names shared"
    );
}
