//! Decoding through a cache's interner (as an informer's reflector decodes) gives exactly what decoding without one
//! gives — the same objects or the same errors — for ConfigMaps, DynamicObjects, metadata-only objects,
//! `managedFields` lists and owner references (their four strings interned), also when the values it holds came from similar inputs decoded before (a copy of the input
//! with one byte changed, which the interner codes against the first); and what is decoded writes back to JSON that
//! decodes to the same object. The watch decoder, which lends `managedFields` from the text it holds and decodes over
//! the object it was given back, decodes each object (as a MODIFIED event) inside the interner's scope to what the
//! plain decode gives.

#![no_main]

use kube_informer::object::core::ConfigMap;
use kube_informer::object::{DynamicObject, ManagedFields, OwnerReference, PartialObjectMetadata, enter_interner};
use kube_informer::watch::{WatchDecoder, WatchEvent};
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

/// [`same`], and each text that decodes alone decoded as the object of a MODIFIED event by the watch decoder inside
/// the interner's scope (twice, over the object given back the second time): where the event decodes, its object is
/// the plain decode's. (It can fail where the text alone decodes — nested one level past serde_json's limit — so only a
/// decoded event is compared; a text that does not decode alone is not sent: its bytes could end the event early.)
fn same_watched<K: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(texts: &[&[u8]]) {
    same::<K>(texts);
    let plain: Vec<_> = texts.iter().map(|t| serde_json::from_slice::<K>(t).ok()).collect();
    let scope = enter_interner();
    let mut decoder = WatchDecoder::<K>::new();
    for _ in 0..2 {
        for (t, p) in texts.iter().zip(&plain) {
            let Some(p) = p else { continue };
            let mut event = br#"{"type":"MODIFIED","object":"#.to_vec();
            event.extend_from_slice(t);
            event.extend_from_slice(b"}\n");
            decoder.push(&event);
            if let Some(Ok(WatchEvent::Modified(obj))) = decoder.next_event() {
                assert_eq!(&obj, p, "watched");
                decoder.recycle(obj);
            }
            if decoder.next_event().is_some() || decoder.finish().is_err() {
                // An error is the decoder's for good: the next text goes to a new one.
                decoder = WatchDecoder::new();
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
    same_watched::<ConfigMap>(&texts);
    same_watched::<DynamicObject>(&texts);
    same_watched::<PartialObjectMetadata<ConfigMap>>(&texts);
    same::<ManagedFields>(&texts);
    same::<Vec<OwnerReference>>(&texts);
});
