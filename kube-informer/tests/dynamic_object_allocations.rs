//! How a decode allocates: a `DynamicObject`'s fields and `ObjectMeta`'s owner references and finalizers are boxed
//! once at their exact count, never grown and shrunk; the decoders read `managedFields` without copying its text.
//!
//! Growing a `Vec` and shrinking it into the box (a `realloc` to a smaller size) split a small free chunk off each
//! object decoded, which glibc's fast bins keep from joining its neighbours: the heap a relist reuses came out
//! fragmented, and a relist of `DynamicObject`s raised RSS ~2.5 points more than the live heap grew. This needs a
//! counting allocator, hence a test binary of its own (and the one `unsafe` block the allocator interface asks for).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kube_informer::object::core::ConfigMap;
use kube_informer::object::{DynamicObject, ObjectMeta};
use kube_informer::watch::{ListDecoder, WatchDecoder, WatchEvent};
use serde::Deserialize;

struct Counting;

thread_local! {
    /// Reallocations on this thread while counting; `None` when not counting.
    static REALLOCS: Cell<Option<usize>> = const { Cell::new(None) };
    /// The largest allocation on this thread while measuring; `None` when not measuring.
    static LARGEST: Cell<Option<usize>> = const { Cell::new(None) };
}

// SAFETY: every call is passed on to `System` unchanged; the counters are const-initialised thread-locals without a
// destructor, which allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|c| c.set(c.get().map(|n| n.max(layout.size()))));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = REALLOCS.try_with(|c| c.set(c.get().map(|n| n + 1)));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Reallocations `f` made on this thread.
fn reallocs(f: impl FnOnce()) -> usize {
    REALLOCS.with(|c| c.set(Some(0)));
    f();
    REALLOCS.with(|c| c.replace(None)).unwrap()
}

/// The largest allocation `f` made on this thread (0 for none).
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|c| c.set(Some(0)));
    f();
    LARGEST.with(|c| c.replace(None)).unwrap()
}

/// The fields of `o` as a JSON object.
fn fields(o: &DynamicObject) -> serde_json::Value {
    o.fields()
        .map(|(k, v)| (k.to_owned(), v.parse::<serde_json::Value>().unwrap()))
        .collect()
}

#[test]
fn a_dynamic_objects_fields_are_boxed_at_their_exact_count() {
    // No metadata: what is measured is the object's own decode, not `ObjectMeta`'s.
    let texts = [
        r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}"#,
        r#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3},"status":{}}"#,
        r#"{"kind":"X","a":1,"b":[2],"c":"3","d":null,"e":{},"a":4}"#,
    ];
    // The thread's scratch list grows once, to the most fields an object had.
    for text in texts {
        serde_json::from_str::<DynamicObject>(text).unwrap();
    }
    for text in texts {
        let mut decoded = None;
        assert_eq!(
            reallocs(|| decoded = Some(serde_json::from_str::<DynamicObject>(text).unwrap())),
            0,
            "{text}"
        );
        let decoded = decoded.unwrap();
        // What was decoded is unchanged: every field (of a duplicate key, the last value).
        let mut expected: serde_json::Value = serde_json::from_str(text).unwrap();
        let map = expected.as_object_mut().unwrap();
        map.remove("apiVersion");
        map.remove("kind");
        assert_eq!(fields(&decoded), expected, "{text}");
        // Decoding in place, over an object with other fields, boxes them at their count too.
        let mut place: DynamicObject = serde_json::from_str(r#"{"kind":"Y","x":1}"#).unwrap();
        let n = reallocs(|| {
            DynamicObject::deserialize_in_place(&mut serde_json::Deserializer::from_str(text), &mut place).unwrap()
        });
        assert_eq!(n, 0, "in place: {text}");
        assert_eq!(place, decoded, "{text}");
    }
}

#[test]
fn owner_references_and_finalizers_are_read_at_their_exact_count() {
    let reference = r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9","uid":"5c1e","controller":true}"#;
    let meta = |refs: usize, finalizers: usize| {
        let refs = vec![reference; refs].join(",");
        let finalizers: Vec<String> = (0..finalizers).map(|i| format!(r#""example.com/f{i}""#)).collect();
        format!(
            r#"{{"name":"a","ownerReferences":[{refs}],"finalizers":[{}]}}"#,
            finalizers.join(",")
        )
    };
    let texts = [meta(1, 1), meta(2, 5), meta(5, 9), meta(0, 0), meta(3, 2)];
    // The thread's scratch lists grow once, to the most elements a list had.
    for text in &texts {
        serde_json::from_str::<ObjectMeta>(text).unwrap();
    }
    let mut place = ObjectMeta::default();
    for text in &texts {
        let mut decoded = None;
        assert_eq!(
            reallocs(|| decoded = Some(serde_json::from_str::<ObjectMeta>(text).unwrap())),
            0,
            "{text}"
        );
        let decoded = decoded.unwrap();
        assert_eq!(decoded.owner_references.capacity(), decoded.owner_references.len());
        assert_eq!(decoded.finalizers.capacity(), decoded.finalizers.len());
        // What was decoded is unchanged, and written back as read.
        let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        let mut expected = value(text);
        for key in ["ownerReferences", "finalizers"] {
            if expected[key] == serde_json::json!([]) {
                expected.as_object_mut().unwrap().remove(key);
            }
        }
        assert_eq!(value(&serde_json::to_string(&decoded).unwrap()), expected, "{text}");
        // Decoded in place, over the metadata before it, the same.
        let n = reallocs(|| {
            ObjectMeta::deserialize_in_place(&mut serde_json::Deserializer::from_str(text), &mut place).unwrap()
        });
        assert_eq!(n, 0, "in place: {text}");
        assert_eq!(place, decoded, "{text}");
        assert_eq!(place.owner_references.capacity(), place.owner_references.len());
    }
    // `null` is empty, and a list that is not one is refused as before.
    let m: ObjectMeta = serde_json::from_str(r#"{"ownerReferences":null,"finalizers":null}"#).unwrap();
    assert_eq!(m, ObjectMeta::default());
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct AsBefore {
        finalizers: Option<Vec<String>>,
    }
    for bad in [
        r#"{"finalizers":5}"#,
        r#"{"finalizers":["a",1]}"#,
        r#"{"finalizers":{}}"#,
    ] {
        let e = serde_json::from_str::<ObjectMeta>(bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            serde_json::from_str::<AsBefore>(bad).err().unwrap().to_string()
        );
    }
}

#[test]
fn a_string_handed_over_with_slack_is_copied_at_its_length_not_shrunk() {
    use serde::de::value::{Error, MapDeserializer};
    let mut name = String::with_capacity(100);
    name.push_str("web-1");
    let mut decoded = None;
    let n = reallocs(|| {
        let d = MapDeserializer::<_, Error>::new([("name", name)].into_iter());
        decoded = Some(ObjectMeta::deserialize(d).unwrap());
    });
    assert_eq!(n, 0);
    let name = decoded.unwrap().name.unwrap();
    assert_eq!(name, "web-1");
    assert!(name.capacity() < 16, "{}", name.capacity());
}

/// A `managedFields` list of about 4 KB (a controller's entry owning 100 fields).
fn managed_fields() -> String {
    let fields: Vec<String> = (0..100)
        .map(|i| format!(r#""f:config-key-{i:03}.properties":{{}}"#))
        .collect();
    format!(
        r#"[{{"manager":"helm","operation":"Update","apiVersion":"v1","time":"2024-05-06T07:08:09Z","fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{{}}}}}}}]"#,
        fields.join(",")
    )
}

#[test]
fn the_decoders_read_managed_fields_without_copying_their_text() {
    let list = managed_fields();
    let object = format!(r#"{{"metadata":{{"name":"a","managedFields":{list}}},"data":{{"k":"v"}}}}"#);
    let expected: ConfigMap = serde_json::from_reader(object.as_bytes()).unwrap();
    assert!(expected.metadata.managed_fields.is_some());
    // Outside the decoders, serde_json's own functions: from text too the list is copied (to a box of its length).
    let largest = largest_allocation(|| assert_eq!(serde_json::from_str::<ConfigMap>(&object).unwrap(), expected));
    assert!(largest >= list.len(), "{largest} < {}", list.len());

    let event = format!("{{\"type\":\"MODIFIED\",\"object\":{object}}}\n");
    let mut watch = WatchDecoder::<ConfigMap>::new();
    watch.push(format!("{event}{event}").as_bytes());
    let mut events = Vec::new();
    for _ in 0..2 {
        let largest = largest_allocation(|| events.push(watch.next_event().unwrap().unwrap()));
        assert!(
            largest < list.len(),
            "watch: an allocation of {largest} bytes, the list has {}",
            list.len()
        );
    }
    assert!(events.iter().all(|e| *e == WatchEvent::Modified(expected.clone())));

    let mut list_decoder = ListDecoder::<ConfigMap>::new();
    list_decoder.push(format!(r#"{{"kind":"ConfigMapList","metadata":{{}},"items":[{object},{object}]}}"#).as_bytes());
    for _ in 0..2 {
        let mut item = None;
        let largest = largest_allocation(|| item = Some(list_decoder.next_item().unwrap().unwrap()));
        assert!(
            largest < list.len(),
            "list: an allocation of {largest} bytes, the list has {}",
            list.len()
        );
        assert_eq!(item.unwrap(), expected);
    }
}
