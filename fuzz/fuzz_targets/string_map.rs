//! `StringMap` decodes exactly what a `BTreeMap<String, String>` decodes (same entries, same errors-or-not), also
//! when decoded in place over another map, writes it back byte for byte as the `BTreeMap` does, and edits keep it
//! equal to the `BTreeMap` model.

#![no_main]

use std::collections::BTreeMap;

use kube_informer::object::StringMap;
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

fuzz_target!(|data: &[u8]| {
    let compact = serde_json::from_slice::<StringMap>(data);
    // Decoded over a map of another size, reusing its allocation: the same result.
    let mut over = StringMap::from([("a previous key", "and its value"), ("b", "")]);
    let mut de = serde_json::Deserializer::from_slice(data);
    let in_place = StringMap::deserialize_in_place(&mut de, &mut over).and_then(|()| de.end());
    match (&compact, in_place) {
        (Ok(m), Ok(())) => assert_eq!(&over, m),
        (Err(e1), Err(e2)) => assert_eq!(e1.to_string(), e2.to_string()),
        (c, i) => panic!("fresh {:?} vs in place {i:?}", c.as_ref().map(|_| ())),
    }
    let tree = serde_json::from_slice::<Option<BTreeMap<String, String>>>(data);
    match (compact, tree) {
        (Ok(mut m), Ok(t)) => {
            let mut t = t.unwrap_or_default();
            assert_eq!(m, t);
            assert_eq!(serde_json::to_string(&m).unwrap(), serde_json::to_string(&t).unwrap());
            for (k, v) in &t {
                assert_eq!(m.get(k), Some(v.as_str()));
            }
            // Edits driven by the input: remove every other key, then insert each remaining key's value as a new
            // key.
            let keys: Vec<String> = t.keys().cloned().collect();
            for (i, k) in keys.iter().enumerate() {
                if i % 2 == 0 {
                    assert_eq!(m.remove(k), t.remove(k));
                } else if let Some(v) = t.get(k).cloned() {
                    assert_eq!(m.insert(v.clone(), k.clone()), t.insert(v, k.clone()));
                }
            }
            assert_eq!(m, t);
        }
        (Err(_), Err(_)) => {}
        // The one difference by design: more than 16 MiB of text, far beyond what fuzz inputs reach.
        (compact, tree) => panic!("StringMap {:?} vs BTreeMap {:?}", compact.map(|_| ()), tree.map(|_| ())),
    }
});
