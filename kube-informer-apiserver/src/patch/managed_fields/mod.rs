//! Server-side apply and `metadata.managedFields`, as kube-apiserver keeps them: k8s.io/apimachinery's
//! `pkg/util/managedfields` ([`field_manager`]: what each write does to the entries, [`entries`]: their encoding,
//! [`scale`]: the scale subresource's view) over sigs.k8s.io/structured-merge-diff ([`path`] and [`set`]: field
//! paths and sets of them, [`fields_v1`]: their JSON form, [`schema`]: the types a resource's OpenAPI schema gives
//! its fields, [`typed`], [`compare`], [`merge`]: walks of values with their types, [`updater`]: who owns what after
//! an update or an apply), and the request's manager ([`manager`]).
//!
//! [`strategy`](crate::registry::strategy) calls it on every write: creates, updates and patches are tracked with
//! [`FieldManager::create`] and [`FieldManager::update`]; an apply patch is [`FieldManager::apply`].

mod compare;
mod conflict;
mod entries;
mod field_manager;
mod fields_v1;
mod last_applied;
mod manager;
mod merge;
mod path;
pub(crate) mod scale;
mod schema;
mod set;
mod typed;
mod updater;

pub(crate) use field_manager::{FieldManager, Requested, Subresource, take_requested};
pub use manager::DIRECT_FIELD_MANAGER;
pub(crate) use manager::{SERVER, Writer, writer};
pub(crate) use schema::Schema;

/// How a write's `managedFields` come about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ownership<'a> {
    /// Computed from what the write changes, for this manager (creates, updates, patches but apply).
    Track(&'a str),
    /// Already on the object written (an apply's result, a scale write's).
    Computed,
}
