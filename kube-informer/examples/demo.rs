//! The demo: an informer against the embedded API server — no cluster needed.
//!
//! It starts the server, seeds some ConfigMaps, starts an informer whose handler prints every event, changes objects
//! for a few seconds (creates, updates, deletes; one connection cut along the way), prints the final cache and exits.
//!
//! ```sh
//! cargo run --example demo
//! ```

use std::sync::Arc;
use std::time::Duration;

use kube_informer::cache::DeletedObject;
use kube_informer::client::Api;
use kube_informer::informer::{FactoryOptions, HandlerFuncs, SharedInformerFactory};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, key_of};
use kube_informer_apiserver::ApiServer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr: the library's warnings and recoveries by default, everything with RUST_LOG=debug.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let server = ApiServer::builder().namespaces(["demo"]).start()?;
    println!("embedded API server at {}", server.url());
    for (name, colour) in [("alpha", "red"), ("beta", "green"), ("gamma", "blue")] {
        server.create(&configmap(name, colour))?;
    }

    let client = server.client()?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), "demo");
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default().namespace("demo"));
    let informer = factory.informer::<ConfigMap>();
    informer.add_event_handler(
        HandlerFuncs::new()
            .on_add(|cm: &Arc<ConfigMap>, initial| {
                let when = if initial { "initial list" } else { "new" };
                println!("ADDED    {} colour={} ({when})", key_of(&**cm), colour(cm));
            })
            .on_update(|old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                println!("MODIFIED {} colour={} -> {}", key_of(&**new), colour(old), colour(new));
            })
            .on_delete(|d: &DeletedObject<ConfigMap>| {
                let how = if d.is_final_state_unknown() {
                    " (missed while disconnected)"
                } else {
                    ""
                };
                println!("DELETED  {}{how}", key_of(&**d.object()));
            }),
    )?;
    factory.start()?;
    factory.wait_for_cache_sync(Duration::from_secs(30))?;
    println!("-- synced: {} objects cached --", informer.lister().len());

    // Change things through the API, as another client would.
    for round in 1..=5u32 {
        api.create(&Default::default(), &configmap(&format!("delta-{round}"), "white"))?;
        let mut beta = api.get("beta")?;
        beta.data.insert("colour".into(), format!("shade-{round}"));
        api.replace("beta", &Default::default(), &beta)?;
        if round == 3 {
            api.delete("gamma", &Default::default())?;
            // A network blip: every connection cut; the informer re-watches from where it was.
            println!("-- cutting every connection to the API server; the informer re-watches from where it was --");
            server.restart()?;
        }
        std::thread::sleep(Duration::from_millis(400));
    }
    api.delete("delta-1", &Default::default())?;
    // Wait until the informer has seen the last change (its resource version reaches the server's).
    let target = server.revision().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while informer.last_sync_resource_version() != target || informer.metrics().fifo_depth > 0 {
        if std::time::Instant::now() > deadline {
            return Err("the informer did not catch up".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut cached: Vec<String> = informer
        .lister()
        .list(&Default::default())
        .iter()
        .map(|cm| format!("{} colour={}", key_of(&**cm), colour(cm)))
        .collect();
    cached.sort();
    println!("-- final cache ({} objects) --", cached.len());
    for line in &cached {
        println!("  {line}");
    }
    let m = informer.metrics();
    println!(
        "-- watch events: {}, watch restarts: {}, relists: {} --",
        m.reflector.watch_events,
        m.reflector.watch_restarts,
        m.reflector.relists_gone + m.reflector.relists_after_error
    );
    factory.shutdown();
    Ok(())
}

fn configmap(name: &str, colour: &str) -> ConfigMap {
    ConfigMap::new(ObjectMeta::namespaced("demo", name)).with("colour", colour)
}

fn colour(cm: &ConfigMap) -> &str {
    cm.data.get("colour").unwrap_or("?")
}
