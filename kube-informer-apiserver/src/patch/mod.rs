//! Patches, pure libraries over JSON values (apimachinery's `strategicpatch`, evanphx's `json-patch`,
//! `managedfields` over structured-merge-diff): JSON merge patch and JSON patch ([`json`]), strategic merge
//! patch ([`strategic_merge`]), managed fields and server-side apply ([`managed_fields`]).

pub(crate) mod json;
pub(crate) mod managed_fields;
pub mod strategic_merge;
