//! Selector parsing never panics; whatever parses prints to a string that parses back to an equal selector (label
//! and field selectors), and matching never panics.

#![no_main]

use std::collections::BTreeMap;

use kube_informer::selector::{FieldSelector, Selector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = text.parse::<Selector>() {
        let printed = sel.to_string();
        let back: Selector = printed
            .parse()
            .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
        assert_eq!(back, sel, "{text:?} printed as {printed:?}");
        assert_eq!(back.to_string(), printed);
        // Labels that satisfy some requirements and not others.
        let labels: BTreeMap<String, String> = sel
            .requirements()
            .iter()
            .map(|r| (r.key().to_string(), r.values().first().cloned().unwrap_or_default()))
            .collect();
        let _ = sel.matches(&labels);
        let _ = sel.matches(&BTreeMap::new());
    }
    if let Ok(sel) = text.parse::<FieldSelector>() {
        let printed = sel.to_string();
        let back: FieldSelector = printed
            .parse()
            .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
        assert_eq!(back, sel, "{text:?} printed as {printed:?}");
        assert_eq!(back.to_string(), printed);
        let _ = sel.matches(|f| sel.terms().iter().find(|t| t.field == f).map(|t| t.value.as_str()));
    }
});
