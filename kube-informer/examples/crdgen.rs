//! crdgen: prints the CustomResourceDefinition of the fleet example's `Fleet`, derived from its Rust types.
//!
//! ```text
//! cargo run --example crdgen > crd.yaml && kubectl apply -f crd.yaml
//! ```

use kube_informer::crd::CustomResourceExt;

#[allow(dead_code)]
#[path = "fleet.rs"]
mod fleet;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    print!("{}", fleet::Fleet::crd_yaml()?);
    Ok(())
}
