//! The kubeconfig loader never panics on any bytes: `Kubeconfig::parse` and, for every context, `to_config` and
//! `Client::new` (which checks URLs, certificates, keys and exec settings without touching the network) either
//! succeed or return one of the crate's typed configuration errors.
//!
//! Paths in a kubeconfig are read as kubectl reads them; inputs naming a device or a kernel file system are skipped
//! so that the target never reads `/dev/zero` or blocks on `/dev/stdin`.

#![no_main]

use kube_informer::Error;
use kube_informer::client::{Client, Kubeconfig};
use libfuzzer_sys::fuzz_target;

fn typed(e: &Error) {
    assert!(
        matches!(e, Error::Config(_) | Error::InvalidInput(_) | Error::Auth(_)),
        "untyped error: {e:?}"
    );
    // Display and Debug never panic either.
    let _ = (e.to_string(), format!("{e:?}"));
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if ["/dev", "/proc", "/sys"].iter().any(|p| text.contains(p)) {
        return;
    }
    let kc = match Kubeconfig::parse(&text, None) {
        Ok(kc) => kc,
        Err(e) => return typed(&e),
    };
    let _ = format!("{kc:?}");
    let contexts: Vec<Option<String>> = std::iter::once(None)
        .chain(kc.context_names().into_iter().take(8).map(|c| Some(c.to_owned())))
        .collect();
    for context in contexts {
        match kc.to_config(context.as_deref()) {
            Ok(config) => {
                let _ = (format!("{config:?}"), config.cluster_url(), config.namespace());
                match Client::new(config) {
                    Ok(client) => {
                        let _ = (format!("{client:?}"), client.default_namespace());
                    }
                    Err(e) => typed(&e),
                }
            }
            Err(e) => typed(&e),
        }
    }
    // Merging with itself keeps the first definitions: never panics.
    let merged = kc.clone().merge(kc);
    let _ = merged.to_config(None).map_err(|e| typed(&e));
});
