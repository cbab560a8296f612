//! kube-apiserver's field manager: what every write through the API does to `metadata.managedFields`, in the
//! order of k8s.io/apimachinery's `NewDefaultFieldManager` wrappers.
//!
//! - Updates (create, update, every patch but apply): the managers are the request's own `managedFields` when it
//!   sends valid, non-empty ones (`[]` or `[{}]` resets them), the stored ones otherwise (always for a
//!   subresource). An object created through the API is tracked from its creation; an object without managers is
//!   not tracked by updates until something applies to it. The writer's `Update` entry (for its API version and
//!   subresource) gains what it changed, stamped with the time, and the other managers lose it; at most ten
//!   `Update` entries are kept, the oldest merged into `ancient-changes`.
//! - Applies: the configuration must be of the resource's kind and version and carry no `managedFields`; an
//!   object without managers first gets a `before-first-apply` entry owning what it holds; then the configuration
//!   is merged ([`Updater::apply`]), conflicts refused with 409 unless forced — for `kubectl`, except those the
//!   client-side apply annotation allows — and the writer's `Apply` entry owns what the configuration sets.
//! - No entry ever owns `apiVersion`, `kind`, `metadata` itself or the metadata the server sets (`name`,
//!   `namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`, `managedFields`, …); main-resource
//!   writes own no `status` where a status subresource exists, status writes own only `status`.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::conflict;
use super::entries::{self, APPLY, Managed, UPDATE, identifier};
use super::last_applied::{self, KUBECTL};
use super::path::PathElement;
use super::schema::{Schema, Ty};
use super::set::Set;
use super::typed::Typed;
use super::updater::{ApplyError, Conflict, Updater, VersionedSet};
use crate::api::errors::{self, Failure};
use crate::protobuf;

/// The manager name of an update's own changes while they are computed (kube-apiserver's `current-operation`).
const CURRENT: &str = "current-operation";

/// The manager of what an object held before anything applied to it.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The manager the oldest `Update` entries merge into past [`MAX_UPDATE_MANAGERS`].
const ANCIENT: &str = "ancient-changes";

/// How many `Update` entries an object keeps.
const MAX_UPDATE_MANAGERS: usize = 10;

/// What no manager owns.
static STRIPPED: LazyLock<Set> = LazyLock::new(|| {
    let f = |s: &str| PathElement::Field(s.to_owned());
    let mut set = Set::new();
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    set.insert(&[f("metadata")]);
    for m in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(m)]);
    }
    set
});

/// The endpoint of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subresource {
    Main,
    Status,
    Scale,
}

impl Subresource {
    fn name(self) -> &'static str {
        match self {
            Subresource::Main => "",
            Subresource::Status => "status",
            Subresource::Scale => "scale",
        }
    }
}

/// The `managedFields` a create or update body carries, taken out of it before the object is normalized (an empty
/// list means something there).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Requested {
    /// None, or null.
    Absent,
    Entries(Vec<Value>),
}

/// Takes `managedFields` out of a body's metadata.
pub(crate) fn take_requested(meta: &mut Map<String, Value>) -> Requested {
    match meta.remove("managedFields") {
        Some(Value::Array(entries)) => Requested::Entries(entries),
        _ => Requested::Absent,
    }
}

/// The stored entries of an object.
fn entries_of(obj: &Value) -> &[Value] {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Writes the entries into an object's metadata (none: no `managedFields`).
fn set_entries(obj: &mut Value, entries: Vec<Value>) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".to_owned(), Value::Array(entries));
    }
}

/// Why an apply was refused before anything was written.
enum Refused {
    Conflicts(Vec<Conflict>),
    Failed(Failure),
}

/// The field manager of one resource's writes through one endpoint (the registry makes it from the resource's
/// `ResourceSpec`: `ResourceSpec::field_manager`).
pub(crate) struct FieldManager<'a> {
    pub(crate) schema: Schema<'a>,
    /// The version writes are in (`apps/v1`).
    pub(crate) api_version: String,
    pub(crate) kind: &'a str,
    pub(crate) subresource: Subresource,
    /// The resource has a status subresource: main-resource writes own no `status`.
    pub(crate) status_subresource: bool,
    /// A built-in kind: its empty object is Go's zero value, not `apiVersion` and `kind` alone.
    pub(crate) builtin: bool,
    /// The other versions of the resource whose entries stay (a CRD's: with `None` conversion their field sets
    /// are this version's); entries of any other version are dropped, as kube-apiserver drops what it cannot
    /// convert.
    pub(crate) other_versions: &'a [String],
}

fn unstructured_zero(api_version: &str, kind: &str) -> Value {
    serde_json::json!({"apiVersion": api_version, "kind": kind})
}

impl<'a> FieldManager<'a> {
    /// An empty object of the kind, as kube-apiserver makes one: Go's zero value of a built-in kind (what a create
    /// compares the new object with: a field Go always writes is not added by it), `apiVersion` and `kind` alone
    /// otherwise.
    fn zero(&self) -> Value {
        let typed = self
            .builtin
            .then(|| protobuf::zero_object(&self.api_version, self.kind))
            .flatten();
        typed.unwrap_or_else(|| unstructured_zero(&self.api_version, self.kind))
    }

    fn with_updater<T>(&self, f: impl FnOnce(&Updater<'_, '_>) -> T) -> T {
        let known = |v: &str| v == self.api_version || self.other_versions.iter().any(|o| o == v);
        let status = PathElement::Field("status".to_owned());
        // What this endpoint's writes never own.
        let not_status = |set: &Set| set.recursive_difference(&Set::of([std::slice::from_ref(&status)]));
        let only_status = |set: &Set| set.only(&status);
        let reset: Option<&dyn Fn(&Set) -> Set> = match self.subresource {
            Subresource::Main if self.status_subresource => Some(&not_status),
            Subresource::Status => Some(&only_status),
            _ => None,
        };
        f(&Updater {
            schema: &self.schema,
            known_version: &known,
            reset,
        })
    }

    /// Sets `metadata.managedFields` of an object about to be created from a request that carried `requested`.
    pub(crate) fn create(&self, obj: &mut Value, requested: Requested, manager: &str) {
        self.update_from(&self.zero(), true, obj, requested, manager);
    }

    /// Sets `metadata.managedFields` of `new` (without them: see [`take_requested`]), an update of `live` by
    /// `manager`.
    pub(crate) fn update(&self, live: &Value, new: &mut Value, requested: Requested, manager: &str) {
        self.update_from(live, false, new, requested, manager);
    }

    fn update_from(&self, live: &Value, creating: bool, new: &mut Value, requested: Requested, manager: &str) {
        let live_entries = entries_of(live);
        let stored = || entries::decode(live_entries).unwrap_or_default();
        let managed = match requested {
            _ if self.subresource != Subresource::Main => stored(),
            Requested::Entries(e) if entries::is_reset(&e) => Managed::default(),
            Requested::Entries(e) => match entries::decode(&e) {
                Ok(m) if !m.fields.is_empty() => m,
                _ => stored(),
            },
            Requested::Absent => stored(),
        };
        // An object without managers is tracked from its creation only.
        let tracked = if managed.fields.is_empty() && !creating {
            managed
        } else {
            self.update_as(live, new, managed, manager)
        };
        set_entries(new, entries::encode(&tracked));
    }

    /// The managers after `manager` updated `live` to `new`.
    fn update_as(&self, live: &Value, new: &Value, mut managed: Managed, manager: &str) -> Managed {
        let id = identifier(or_unknown(manager), UPDATE, &self.api_version, self.subresource.name());
        // kube-apiserver converts both objects to typed values first, and keeps the stored entries when that fails
        // (an unknown field, a value of the wrong type): for objects its decoding refused before this point. The
        // objects here went through the server's admission (pruned to their schema), and the walks take what does
        // not fit as an untyped value: they are not checked again.
        managed.fields = self.with_updater(|u| {
            u.update(
                live,
                new,
                &self.api_version,
                std::mem::take(&mut managed.fields),
                CURRENT,
            )
        });
        strip(&mut managed, CURRENT);
        if let Some(vs) = managed.fields.remove(CURRENT) {
            let set = match managed.fields.remove(&id) {
                Some(before) => vs.set.union(&before.set),
                None => vs.set,
            };
            managed.fields.insert(
                id.clone(),
                VersionedSet {
                    set,
                    api_version: vs.api_version,
                    applied: vs.applied,
                },
            );
            managed.times.insert(id, entries::now());
        }
        cap_update_managers(&mut managed, MAX_UPDATE_MANAGERS);
        managed
    }

    /// Applies `config` to `live` (`None`: the object does not exist yet) for `manager`: the new object, its
    /// `managedFields` set; the live object itself when the apply changes no field.
    pub(crate) fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
    ) -> Result<Value, Failure> {
        let empty;
        let live = match live {
            Some(l) => l,
            None => {
                empty = self.empty_for_apply();
                &empty
            }
        };
        let managed = entries::decode(entries_of(live))
            .map_err(|e| errors::internal(format!("failed to decode managed fields: {e}")))?;
        self.check_type(config)?;
        let result = match self.apply_as(live, config, managed.clone(), manager, force) {
            // A takeover by kubectl of what client-side apply set, unchanged since, is forced.
            Err(Refused::Conflicts(c)) if manager == KUBECTL => {
                match last_applied::allowed_conflicts(&self.schema, &self.api_version, live) {
                    Some(allowed) => {
                        let rest: Vec<Conflict> = c.into_iter().filter(|c| !allowed.has(&c.path)).collect();
                        if rest.is_empty() {
                            self.apply_as(live, config, managed, manager, true)
                        } else {
                            Err(Refused::Conflicts(rest))
                        }
                    }
                    None => Err(Refused::Conflicts(c)),
                }
            }
            r => r,
        };
        let (mut new, managed) = result.map_err(|r| match r {
            Refused::Conflicts(c) => conflict::failure(&c),
            Refused::Failed(f) => f,
        })?;
        if manager == KUBECTL && last_applied::has(&new) {
            last_applied::record(&mut new, config);
        }
        set_entries(&mut new, entries::encode(&managed));
        Ok(new)
    }

    /// What an apply that creates starts from: an empty object (Go's zero value of a built-in kind adds nothing an
    /// apply could own, and is left out of what is stored).
    fn empty_for_apply(&self) -> Value {
        if self.builtin {
            Value::Object(Map::new())
        } else {
            unstructured_zero(&self.api_version, self.kind)
        }
    }

    /// The apply of one manager, with the managers it starts from.
    fn apply_as(
        &self,
        live: &Value,
        config: &Value,
        mut managed: Managed,
        manager: &str,
        force: bool,
    ) -> Result<(Value, Managed), Refused> {
        if managed.fields.is_empty() {
            managed = self.update_as(&self.zero(), live, managed, BEFORE_FIRST_APPLY);
        }
        let id = identifier(or_unknown(manager), APPLY, "", self.subresource.name());
        if config.pointer("/metadata/managedFields").is_some_and(|m| !m.is_null()) {
            return Err(Refused::Failed(errors::bad_request(
                "metadata.managedFields must be nil",
            )));
        }
        let t = Typed { schema: &self.schema };
        let errs = t.validate(Ty::Root, config, false);
        if !errs.is_empty() {
            return Err(Refused::Failed(errors::internal(format!(
                "failed to create typed patch object ({}): {errs}",
                self.describe(config)
            ))));
        }
        let errs = t.validate(Ty::Root, live, true);
        if !errs.is_empty() {
            return Err(Refused::Failed(errors::internal(format!(
                "failed to create typed live object ({}): {errs}",
                self.describe(live)
            ))));
        }
        let fields = std::mem::take(&mut managed.fields);
        let (new, fields) = self
            .with_updater(|u| u.apply(live, config, &self.api_version, fields, &id, force))
            .map_err(|e| match e {
                ApplyError::Conflicts(c) => Refused::Conflicts(c),
                ApplyError::Merge(e) => Refused::Failed(errors::internal(format!("failed to merge config: {e}"))),
            })?;
        managed.fields = fields;
        strip(&mut managed, &id);
        let new = match new {
            Some(new) => {
                managed.times.insert(id, entries::now());
                new
            }
            None => live.clone(),
        };
        Ok((new, managed))
    }

    /// Refuses a configuration of another kind or version (kube-apiserver's version check).
    fn check_type(&self, config: &Value) -> Result<(), Failure> {
        let text = |k: &str| config.get(k).and_then(Value::as_str).unwrap_or("");
        let (group, version) = match text("apiVersion").split('/').collect::<Vec<_>>()[..] {
            [""] => ("", ""),
            [v] => ("", v),
            [g, v] => (g, v),
            _ => ("", ""),
        };
        let want = match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", self.api_version.as_str()),
        };
        if (group, version) != want || text("kind") != self.kind {
            return Err(errors::bad_request(format!(
                "invalid object type: {group}/{version}, Kind={}",
                text("kind")
            )));
        }
        Ok(())
    }

    /// `namespace/name; group/version, Kind=kind` of an object, as errors name it.
    fn describe(&self, obj: &Value) -> String {
        let meta = |k: &str| {
            obj.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let (group, version) = self.api_version.split_once('/').unwrap_or(("", &self.api_version));
        format!(
            "{}/{}; {group}/{version}, Kind={}",
            meta("namespace"),
            meta("name"),
            self.kind
        )
    }
}

fn or_unknown(manager: &str) -> &str {
    if manager.is_empty() { "unknown" } else { manager }
}

/// Removes what no manager owns from `manager`'s set (and the manager, when nothing is left).
fn strip(managed: &mut Managed, manager: &str) {
    if let Some(vs) = managed.fields.get_mut(manager) {
        vs.set = vs.set.difference(&STRIPPED);
        if vs.set.is_empty() {
            managed.fields.remove(manager);
        }
    }
}

/// Keeps at most `max` `Update` entries: the oldest are merged into an `ancient-changes` entry per API version
/// (the first of a version only once a second one joins it).
fn cap_update_managers(managed: &mut Managed, max: usize) {
    let mut updaters: Vec<String> = managed
        .fields
        .iter()
        .filter(|(_, vs)| !vs.applied)
        .map(|(m, _)| m.clone())
        .collect();
    if updaters.len() <= max {
        return;
    }
    let seconds = |m: &String| {
        managed
            .times
            .get(m)
            .and_then(|t| kube_informer::object::time::parse_rfc3339(t))
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs())
    };
    updaters.sort_by(|a, b| seconds(a).cmp(&seconds(b)).then_with(|| a.cmp(b)));
    let mut first_of_version: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut length = updaters.len();
    for manager in updaters {
        if length <= max {
            break;
        }
        let Some(vs) = managed.fields.get(&manager).cloned() else {
            continue;
        };
        let time = managed.times.get(&manager).cloned();
        let bucket = identifier(ANCIENT, UPDATE, &vs.api_version, "");
        match first_of_version.get(&vs.api_version) {
            None => {
                first_of_version.insert(vs.api_version.clone(), manager);
            }
            Some(first) => {
                if !managed.fields.contains_key(&bucket)
                    && let Some(s) = managed.fields.remove(first)
                {
                    managed.fields.insert(bucket.clone(), s);
                }
                let merged = match managed.fields.get(&bucket) {
                    Some(b) => b.set.union(&vs.set),
                    None => vs.set.clone(),
                };
                managed.fields.insert(
                    bucket.clone(),
                    VersionedSet {
                        set: merged,
                        api_version: vs.api_version.clone(),
                        applied: vs.applied,
                    },
                );
                managed.fields.remove(&manager);
                length -= 1;
                match time {
                    Some(t) => managed.times.insert(bucket, t),
                    None => managed.times.remove(&bucket),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests;
