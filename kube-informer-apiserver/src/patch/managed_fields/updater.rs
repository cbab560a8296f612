//! Who owns what after a write, as structured-merge-diff's `merge.Updater` decides it.
//!
//! - An update (any write but apply) gives its manager every field it changed, and takes those away from the other
//!   managers; a field it removed is removed from everyone.
//! - An apply merges the configuration into the object, makes its manager own exactly what the configuration sets,
//!   and removes from the object what the manager applied before and applies no more, unless another manager owns
//!   it. A field the apply changes while another manager owns it is a conflict, unless forced (the other manager then
//!   loses it); setting a field to the value it already has shares its ownership.

use std::collections::BTreeMap;

use serde_json::Value;

use super::compare::{Comparison, compare};
use super::merge::{merge, remove_items};
use super::path::{PathElement, values_equal};
use super::schema::{Schema, Ty};
use super::set::Set;
use super::typed::{Typed, ValidationErrors};

/// What one manager owns, in which API version, and whether by applying.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VersionedSet {
    pub(crate) set: Set,
    pub(crate) api_version: String,
    pub(crate) applied: bool,
}

/// Every manager's fields, by manager identifier.
pub(crate) type ManagedFields = BTreeMap<String, VersionedSet>;

/// A field another manager owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The other manager's identifier.
    pub(crate) manager: String,
    pub(crate) path: Vec<PathElement>,
}

/// Why an apply failed.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// Fields other managers own, by manager identifier then path.
    Conflicts(Vec<Conflict>),
    /// The configuration could not be merged (structured-merge-diff's validation errors).
    Merge(ValidationErrors),
}

/// The updater of one resource: its schema, the API versions whose managers it keeps, and the fields no manager of
/// this write may own (a strategy's reset fields: `status` for the main resource, all but `status` for the status
/// subresource).
pub(crate) struct Updater<'a, 's> {
    pub(crate) schema: &'a Schema<'s>,
    /// True for an API version the resource serves; managers of other versions are dropped, as kube-apiserver
    /// drops managers whose version it cannot convert to.
    pub(crate) known_version: &'a dyn Fn(&str) -> bool,
    /// Removes the reset fields from a set (`None`: there are none).
    pub(crate) reset: Option<&'a dyn Fn(&Set) -> Set>,
}

impl Updater<'_, '_> {
    fn typed(&self) -> Typed<'_, '_> {
        Typed { schema: self.schema }
    }

    fn without_reset(&self, set: Set) -> Set {
        match self.reset {
            Some(reset) => reset(&set),
            None => set,
        }
    }

    /// Takes away from the managers other than `workflow` what changed from `old` to `new`; refuses when they owned
    /// something that changed, unless `force`.
    fn settle(
        &self,
        old: &Value,
        new: &Value,
        managers: &mut ManagedFields,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, Vec<Conflict>> {
        let cmp = compare(self.schema, Ty::Root, old, new).filtered(|s| self.without_reset(s));
        managers.retain(|m, vs| m == workflow || (self.known_version)(&vs.api_version));
        let changed = cmp.modified.union(&cmp.added);
        let mut conflicts: Vec<(String, Set)> = Vec::new();
        for (m, vs) in managers.iter() {
            if m == workflow {
                continue;
            }
            let owned = vs.set.intersection(&changed);
            if !owned.is_empty() {
                conflicts.push((m.clone(), owned));
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(conflicts
                .iter()
                .flat_map(|(m, set)| {
                    set.paths().into_iter().map(move |path| Conflict {
                        manager: m.clone(),
                        path,
                    })
                })
                .collect());
        }
        for (m, owned) in conflicts {
            if let Some(vs) = managers.get_mut(&m) {
                vs.set = vs.set.difference(&owned);
            }
        }
        if !cmp.removed.is_empty() {
            for (m, vs) in managers.iter_mut() {
                if m != workflow {
                    vs.set = vs.set.difference(&cmp.removed);
                }
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(cmp)
    }

    /// The managers after an update from `live` to `new` by `manager` in `version`.
    pub(crate) fn update(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        mut managers: ManagedFields,
        manager: &str,
    ) -> ManagedFields {
        let Ok(cmp) = self.settle(live, new, &mut managers, manager, true) else {
            return managers;
        };
        let before = managers.remove(manager).map(|vs| vs.set).unwrap_or_default();
        let set = before.difference(&cmp.removed).union(&cmp.modified).union(&cmp.added);
        let set = self.without_reset(set);
        if !set.is_empty() {
            managers.insert(
                manager.to_owned(),
                VersionedSet {
                    set,
                    api_version: version.to_owned(),
                    applied: false,
                },
            );
        }
        managers
    }

    /// `config` applied to `live` by `manager` in `version`: the new object (`None` when nothing changed) and the
    /// managers.
    pub(crate) fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        mut managers: ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<(Option<Value>, ManagedFields), ApplyError> {
        let merged = merge(self.schema, Ty::Root, live, config)
            .map_err(ApplyError::Merge)?
            .unwrap_or(Value::Null);
        let last = managers.get(manager).cloned();
        let set = self.without_reset(self.typed().to_set(Ty::Root, config));
        managers.insert(
            manager.to_owned(),
            VersionedSet {
                set,
                api_version: version.to_owned(),
                applied: true,
            },
        );
        let new = match &last {
            Some(last) if !last.set.is_empty() && (self.known_version)(&last.api_version) => {
                self.prune(&merged, &managers, &last.set)
            }
            _ => merged,
        };
        self.settle(live, &new, &mut managers, manager, force)
            .map_err(ApplyError::Conflicts)?;
        let changed = !values_equal(live, &new);
        Ok((changed.then_some(new), managers))
    }

    /// Removes from `merged` what the applier owned before (`last`) and no manager owns now.
    fn prune(&self, merged: &Value, managers: &ManagedFields, last: &Set) -> Value {
        let t = self.typed();
        let named = |s: &Set| t.with_named_fields(s, Some(Ty::Root));
        let pruned = remove_items(self.schema, Ty::Root, merged, &named(last));
        // Add back what any manager (the applier's new configuration included) owns.
        let managed = managers
            .values()
            .filter(|vs| (self.known_version)(&vs.api_version))
            .fold(Set::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = named(&t.to_set(Ty::Root, merged));
        let pruned_set = named(&t.to_set(Ty::Root, &pruned));
        let pruned = remove_items(
            self.schema,
            Ty::Root,
            merged,
            &merged_set.difference(&pruned_set.union(&named(&managed))),
        );
        // Only what the applier owned before may go: add back what it never owned.
        let pruned_set = named(&t.to_set(Ty::Root, &pruned));
        remove_items(
            self.schema,
            Ty::Root,
            merged,
            &merged_set.difference(&pruned_set).intersection(&named(last)),
        )
    }
}

#[cfg(test)]
mod tests;
