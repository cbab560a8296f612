//! The classic client-go Pod informer sample, in Rust: load a kubeconfig, watch pods in every namespace with a
//! one-minute resync, print adds, updates and deletes. Runs until SIGTERM or Ctrl-C, then stops the informer and
//! exits.
//!
//! ```sh
//! cargo run --example pods -- --kubeconfig ~/.kube/config
//! ```

use std::time::Duration;

use kube_informer::client::{Client, Config};
use kube_informer::informer::{FactoryOptions, HandlerFuncs};
use kube_informer::manager::{Manager, ManagerOptions};
use kube_informer::object::{ApiResource, DynamicObject};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr: the library's warnings and recoveries by default, everything with RUST_LOG=debug.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().collect();
    let config = match args
        .iter()
        .position(|a| a == "--kubeconfig")
        .and_then(|i| args.get(i + 1))
    {
        Some(path) => Config::from_kubeconfig_file(path, None)?,
        None => Config::infer()?,
    };
    let options = ManagerOptions::default().factory(FactoryOptions::default().resync(Duration::from_secs(60)));
    let manager = Manager::new(Client::new(config)?, options)?;
    let pods = manager
        .factory()
        .informer_for::<DynamicObject>(&ApiResource::new("", "v1", "Pod", "pods", true));
    let name = |p: &DynamicObject| p.metadata.name.clone().unwrap_or_default();
    pods.add_event_handler(
        HandlerFuncs::new()
            .on_add(move |p, _| println!("New Pod Added to Store: {}", name(p)))
            .on_update(move |old, new| println!("{} Pod Updated to {}", name(old), name(new)))
            .on_delete(move |d| println!("Pod Deleted from Store: {}", name(d.object()))),
    )?;
    println!("{}", manager.run()?);
    Ok(())
}
