//! Decoding through a cache's interner (as an informer's reflector decodes) gives exactly what decoding without one
//! gives — the same objects or the same errors — for ConfigMaps, DynamicObjects, metadata-only objects,
//! `managedFields` lists and owner references (their four strings interned), also when the values it holds came from similar inputs decoded before (a copy of the input
//! with one byte changed, which the interner codes against the first); and what is decoded writes back to JSON that
//! decodes to the same object.

#![no_main]

use kube_informer::object::core::ConfigMap;
use kube_informer::object::{DynamicObject, ManagedFields, OwnerReference, PartialObjectMetadata, enter_interner};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `text` decoded as `K` without an interner (the reference), then inside `scope`'s: equal, and each round-trips.
fn same<K: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(texts: &[&[u8]]) {
    let plain: Vec<_> = texts.iter().map(|t| serde_json::from_slice::<K>(t)).collect();
    let scope = enter_interner();
    // Twice: the second time every value is found in the interner.
    for _ in 0..2 {
        for (t, p) in texts.iter().zip(&plain) {
            match (serde_json::from_slice::<K>(t), p) {
                (Ok(shared), Ok(p)) => {
                    assert_eq!(&shared, p);
                    let back = serde_json::to_vec(&shared).unwrap();
                    assert_eq!(&serde_json::from_slice::<K>(&back).unwrap(), p, "round trip");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("shared {a:?} vs plain {b:?}"),
            }
        }
    }
    drop(scope);
}

fuzz_target!(|data: &[u8]| {
    // A copy with the middle byte changed: decoded after the original, what differs is coded against it.
    let mut other = data.to_vec();
    if let Some(b) = other.get_mut(data.len() / 2) {
        *b = b.wrapping_add(1);
    }
    let texts: [&[u8]; 2] = [data, &other];
    same::<ConfigMap>(&texts);
    same::<DynamicObject>(&texts);
    same::<PartialObjectMetadata<ConfigMap>>(&texts);
    same::<ManagedFields>(&texts);
    same::<Vec<OwnerReference>>(&texts);
});
