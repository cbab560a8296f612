//! `Entry`: get-or-create and read-modify-write of one object, in the style of `HashMap::entry`.
//!
//! [`Api::entry`] reads the object once; the entry then holds it (or its absence) while the caller decides what it
//! should be, and [`OccupiedEntry::commit`] writes the outcome: a create for a new object, a replace carrying the
//! resourceVersion that was read (so a concurrent change gets a 409 Conflict instead of being overwritten), or
//! nothing when the object did not change — controller-runtime's `CreateOrUpdate`. Wrapped in
//! [`retry_on_conflict`](super::retry_on_conflict), the whole read-modify-write is retried on a conflict.

use std::fmt;

use super::Api;
use super::params::PostParams;
use crate::object::{MetaAccessor, Object};
use crate::{Error, Result};

/// One object of an [`Api`], present or not; from [`Api::entry`].
///
/// ```
/// use kube_informer::client::{Api, Committed, RetryBackoff, on_error, params::PostParams};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
/// # let server = kube_informer_apiserver::ApiServer::start()?;
/// # let client = server.client()?;
/// let cms: Api<ConfigMap> = Api::namespaced(client, "default");
/// // Get or create, then make sure of one key; retried when another writer raced us.
/// let retriable = |e: &kube_informer::Error| e.is_conflict() || e.is_already_exists();
/// let outcome = on_error(RetryBackoff::DEFAULT_RETRY, retriable, || {
///     let mut entry = cms
///         .entry("settings")?
///         .or_insert(|| ConfigMap::new(ObjectMeta::default()))
///         .and_modify(|cm| {
///             cm.data.insert("color".into(), "blue".into());
///         });
///     entry.commit(&PostParams::default())
/// })?;
/// assert_eq!(outcome, Committed::Created);
/// assert_eq!(cms.get("settings")?.data.get("color"), Some("blue"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub enum Entry<'a, K> {
    /// The object exists.
    Occupied(OccupiedEntry<'a, K>),
    /// The object does not exist.
    Vacant(VacantEntry<'a, K>),
}

/// An object that exists (as read), or that [`commit`](OccupiedEntry::commit) will create.
pub struct OccupiedEntry<'a, K> {
    api: &'a Api<K>,
    name: String,
    object: K,
    /// `None`: not stored yet (commit creates it); `Some(bytes)`: the object as last read or written, serialised,
    /// to tell whether anything changed since.
    stored: Option<Vec<u8>>,
}

/// An object that does not exist; [`insert`](VacantEntry::insert) gives it a value to create.
pub struct VacantEntry<'a, K> {
    api: &'a Api<K>,
    name: String,
}

/// What [`OccupiedEntry::commit`] did (controller-runtime's `OperationResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Committed {
    /// The object was created.
    Created,
    /// The object was replaced.
    Updated,
    /// Nothing changed since it was read: nothing was sent.
    Unchanged,
}

impl<K: Object> Api<K> {
    /// The object `name`, read now, as an [`Entry`] to get or create, modify, and [`commit`](OccupiedEntry::commit).
    ///
    /// # Errors
    /// When the read fails for another reason than 404.
    pub fn entry(&self, name: &str) -> Result<Entry<'_, K>> {
        Ok(match self.get_opt(name)? {
            Some(object) => Entry::Occupied(OccupiedEntry::stored(self, name.to_owned(), object)?),
            None => Entry::Vacant(VacantEntry {
                api: self,
                name: name.to_owned(),
            }),
        })
    }
}

impl<'a, K: Object> Entry<'a, K> {
    /// The object, if it exists (or was inserted).
    pub fn get(&self) -> Option<&K> {
        match self {
            Entry::Occupied(e) => Some(e.get()),
            Entry::Vacant(_) => None,
        }
    }

    /// The object, mutably, if it exists (or was inserted).
    pub fn get_mut(&mut self) -> Option<&mut K> {
        match self {
            Entry::Occupied(e) => Some(e.get_mut()),
            Entry::Vacant(_) => None,
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        match self {
            Entry::Occupied(e) => &e.name,
            Entry::Vacant(e) => &e.name,
        }
    }

    /// Changes the object if it exists.
    #[must_use]
    pub fn and_modify(mut self, f: impl FnOnce(&mut K)) -> Self {
        if let Entry::Occupied(e) = &mut self {
            f(e.get_mut());
        }
        self
    }

    /// The existing object, or `default()` to be created by [`commit`](OccupiedEntry::commit) (its name and
    /// namespace are filled in from the entry when left empty).
    pub fn or_insert(self, default: impl FnOnce() -> K) -> OccupiedEntry<'a, K> {
        match self {
            Entry::Occupied(e) => e,
            Entry::Vacant(e) => e.insert(default()),
        }
    }
}

impl<'a, K: Object> VacantEntry<'a, K> {
    /// Sets the object to create (its name and namespace are filled in from the entry when left empty).
    pub fn insert(self, object: K) -> OccupiedEntry<'a, K> {
        OccupiedEntry {
            api: self.api,
            name: self.name,
            object,
            stored: None,
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<'a, K: Object> OccupiedEntry<'a, K> {
    fn stored(api: &'a Api<K>, name: String, object: K) -> Result<Self> {
        let stored = Some(serialize(&object)?);
        Ok(OccupiedEntry {
            api,
            name,
            object,
            stored,
        })
    }

    /// The object.
    pub fn get(&self) -> &K {
        &self.object
    }

    /// The object, mutably: changes are written by [`commit`](OccupiedEntry::commit).
    pub fn get_mut(&mut self) -> &mut K {
        &mut self.object
    }

    /// Changes the object (builder style).
    #[must_use]
    pub fn and_modify(mut self, f: impl FnOnce(&mut K)) -> Self {
        f(&mut self.object);
        self
    }

    /// The object.
    pub fn into_object(self) -> K {
        self.object
    }

    /// True when [`commit`](OccupiedEntry::commit) will create the object.
    pub fn is_new(&self) -> bool {
        self.stored.is_none()
    }

    /// Writes the object: creates it when new, replaces it when changed since it was read (with the
    /// resourceVersion read, so a concurrent write makes this fail with a 409 Conflict — read again with a new
    /// [`Api::entry`]), does nothing otherwise. The entry then holds the object as the server returned it, so it
    /// can be changed and committed again.
    ///
    /// # Errors
    /// 409 Conflict or AlreadyExists when another writer raced this one; [`Error::InvalidInput`] when the object's
    /// name or namespace was changed to another object's, or its resourceVersion removed.
    pub fn commit(&mut self, pp: &PostParams) -> Result<Committed> {
        self.check_identity()?;
        let outcome = match &self.stored {
            None => {
                self.object = self.api.create(pp, &self.object)?;
                Committed::Created
            }
            Some(before) if *before == serialize(&self.object)? => return Ok(Committed::Unchanged),
            Some(_) => {
                if self.object.meta().resource_version().is_none_or(str::is_empty) {
                    return Err(Error::InvalidInput(format!(
                        "{}: the resourceVersion read was removed; a replace without it would overwrite any \
                         concurrent change",
                        self.name
                    )));
                }
                self.object = self.api.replace(&self.name, pp, &self.object)?;
                Committed::Updated
            }
        };
        if !pp.dry_run {
            self.stored = Some(serialize(&self.object)?);
        }
        Ok(outcome)
    }

    /// Fills in an empty name and namespace; refuses ones naming another object.
    fn check_identity(&mut self) -> Result<()> {
        let api_ns = self.api.namespace().map(str::to_owned);
        let meta = self.object.meta_mut();
        match meta.name() {
            None | Some("") => meta.set_name(self.name.clone()),
            Some(n) if n == self.name => {}
            Some(n) => {
                return Err(Error::InvalidInput(format!(
                    "the entry is for {:?} but the object is named {n:?}",
                    self.name
                )));
            }
        }
        match (meta.namespace().filter(|ns| !ns.is_empty()), api_ns) {
            (None, Some(ns)) => meta.set_namespace(Some(ns)),
            (Some(ns), Some(api_ns)) if ns != api_ns => {
                return Err(Error::InvalidInput(format!(
                    "the entry is in namespace {api_ns:?} but the object in {ns:?}"
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

fn serialize<K: Object>(object: &K) -> Result<Vec<u8>> {
    serde_json::to_vec(object).map_err(|e| Error::Serialize(e.to_string()))
}

impl<K> fmt::Debug for Entry<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Occupied(e) => f.debug_tuple("Occupied").field(e).finish(),
            Entry::Vacant(e) => f.debug_tuple("Vacant").field(e).finish(),
        }
    }
}

impl<K> fmt::Debug for OccupiedEntry<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OccupiedEntry")
            .field("name", &self.name)
            .field("new", &self.stored.is_none())
            .finish_non_exhaustive()
    }
}

impl<K> fmt::Debug for VacantEntry<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VacantEntry").field("name", &self.name).finish()
    }
}
