//! What a controller binary uses, in one `use kube_informer::prelude::*;`: the client and its parameters, the
//! controller toolkit, the manager, the object traits and metadata, and (feature `schema`) the CRD of a custom
//! resource. Object types (`object::core::ConfigMap`…) are imported by name.
//!
//! ```no_run
//! use kube_informer::prelude::*;
//! use kube_informer::object::core::ConfigMap;
//!
//! fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, ()>) -> Result<Action> {
//!     println!("reconciling {}", ctx.name());
//!     Ok(Action::await_change())
//! }
//!
//! fn main() -> std::result::Result<ShutdownReport, Box<dyn std::error::Error>> {
//!     let manager = Manager::try_default()?;
//!     manager.add_controller(manager.controller::<ConfigMap, _>(()).build(reconcile)?)?;
//!     Ok(manager.run()?) // until SIGTERM or Ctrl-C; the exit status says whether everything stopped cleanly
//! }
//! ```

pub use crate::client::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
pub use crate::client::{Api, Client, Committed};
pub use crate::controller::predicate::GenerationChanged;
pub use crate::controller::{
    Action, Context, Controller, ControllerOptions, FinalizerError, FinalizerEvent, OperationResult,
};
#[cfg(feature = "schema")]
pub use crate::crd::CustomResourceExt;
pub use crate::error::{Error, Result};
pub use crate::informer::SharedInformerFactory;
pub use crate::manager::{Manager, ManagerOptions, ShutdownReport};
pub use crate::object::{CrdOptions, CustomResource, MetaAccessor, Object, ObjectMeta, Resource};
