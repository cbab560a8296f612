//! `Api<K>`: typed calls on one resource, in one namespace or across all.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Client;
use super::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use super::request::{ACCEPT_PARTIAL_LIST, ACCEPT_PARTIAL_OBJECT, Request, Target};
use super::watch_stream::WatchStream;
use crate::object::{ApiResource, ListMeta, Object, ObjectList, Representation, Resource, Scale, Status};
use crate::watch::{ListDecoder, json_error};
use crate::{Error, Result};

/// Typed access to one resource: `K` is the object type, the `Api` knows its [`ApiResource`] and namespace.
///
/// ```no_run
/// use kube_informer::client::{Api, Client, params::{ListParams, PatchParams, Patch}};
/// use kube_informer::object::core::ConfigMap;
/// use serde_json::json;
///
/// let client = Client::try_default()?;
/// let cms: Api<ConfigMap> = Api::namespaced(client, "prod");
/// let cm = cms.get("settings")?;
/// let patch = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"color": "blue"}}));
/// cms.patch("settings", &PatchParams::apply("my-controller"), &patch)?;
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct Api<K> {
    client: Client,
    resource: ApiResource,
    /// `None`: all namespaces, or a cluster-scoped resource.
    namespace: Option<String>,
    _object: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            _object: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// What a delete returns ([`Api::delete`]: an object; [`Api::delete_collection`]: a list of them).
#[derive(Clone, Debug, PartialEq)]
pub enum Deleted<K> {
    /// The object: still present with a `deletionTimestamp` when finalizers (or a graceful deletion) keep it, or
    /// its last state when it is gone. For a collection, the list of objects deleted.
    Object(K),
    /// A `Status` (some resources answer a completed delete this way).
    Status(Box<Status>),
}

impl<K: Resource> Api<K> {
    /// All objects across namespaces (or the cluster-scoped resource).
    pub fn all(client: Client) -> Self {
        Api::all_with(client, &K::api_resource())
    }

    /// Objects in `namespace` (ignored for a cluster-scoped resource).
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Api::namespaced_with(client, namespace, &K::api_resource())
    }

    /// Objects in the client's default namespace.
    pub fn default_namespaced(client: Client) -> Self {
        Api::default_namespaced_with(client, &K::api_resource())
    }
}

impl<K: Object> Api<K> {
    /// All objects of `resource` across namespaces; for [`DynamicObject`](crate::object::DynamicObject) or any `K`.
    pub fn all_with(client: Client, resource: &ApiResource) -> Self {
        Api {
            client,
            resource: resource.clone(),
            namespace: None,
            _object: PhantomData,
        }
    }

    /// Objects of `resource` in `namespace`.
    pub fn namespaced_with(client: Client, namespace: &str, resource: &ApiResource) -> Self {
        Api {
            client,
            resource: resource.clone(),
            namespace: Some(namespace.to_owned()),
            _object: PhantomData,
        }
    }

    /// Objects of `resource` in the client's default namespace.
    pub fn default_namespaced_with(client: Client, resource: &ApiResource) -> Self {
        let ns = client.default_namespace().to_owned();
        Api::namespaced_with(client, &ns, resource)
    }

    /// The resource.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace (`None` for all namespaces or a cluster-scoped resource).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref().filter(|_| self.resource.namespaced)
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The same resource and namespace through another client (for example an
    /// [`isolated`](Client::isolated) one).
    pub fn with_client(&self, client: Client) -> Self {
        Api {
            client,
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            _object: PhantomData,
        }
    }

    /// The same resource and namespace, every request ending by `deadline`
    /// ([`Client::with_deadline`]: aborted there, its connection closed).
    #[must_use]
    pub fn with_deadline(&self, deadline: std::time::Instant) -> Self {
        self.with_client(self.client.with_deadline(deadline))
    }

    pub(crate) fn target(&self) -> Target<'_> {
        Target {
            resource: &self.resource,
            namespace: self.namespace.as_deref(),
        }
    }

    fn call<T: DeserializeOwned>(&self, req: &Request) -> Result<T> {
        decode_json(&self.client.request_bytes(req)?)
    }

    /// `req` asking for objects of `K` (one, or a list): a metadata-only type asks for `PartialObjectMetadata`.
    fn shaped(req: Request, list: bool) -> Request {
        match (K::REPRESENTATION, list) {
            (Representation::Full, _) => req,
            (Representation::Metadata, false) => req.accepting(ACCEPT_PARTIAL_OBJECT),
            (Representation::Metadata, true) => req.accepting(ACCEPT_PARTIAL_LIST),
        }
    }

    /// Refuses a write of a whole object from a metadata-only type: the object's content would be erased.
    fn whole_object_write(&self, what: &str) -> Result<()> {
        match K::REPRESENTATION {
            Representation::Full => Ok(()),
            _ => Err(Error::InvalidInput(format!(
                "{what} of {}: a metadata-only object (PartialObjectMetadata) lacks the object's content, which the \
                 write would erase; patch its metadata instead",
                self.resource.qualified_name()
            ))),
        }
    }

    /// One page of objects (`limit` and `continue` in `lp`).
    pub fn list(&self, lp: &ListParams) -> Result<ObjectList<K>> {
        self.call(&Self::shaped(self.target().list(lp)?, true))
    }

    /// Every page of a paged list, following `continue` tokens; see [`ListPages`].
    pub fn list_pages(&self, lp: &ListParams) -> ListPages<K> {
        ListPages {
            api: self.clone(),
            params: lp.clone(),
            next: None,
            done: false,
            restarted: false,
        }
    }

    /// The whole list, fetched page by page (client-go's `pager.List`): when a continue token expires mid-list,
    /// the pages read so far are dropped for one full, unpaged list at the original resourceVersion.
    pub fn list_all(&self, lp: &ListParams) -> Result<ObjectList<K>> {
        let mut all: Option<ObjectList<K>> = None;
        let mut pages = self.list_pages(lp);
        while let Some(page) = pages.next() {
            let page = page?;
            match all.as_mut() {
                Some(acc) if !pages.restarted() => {
                    acc.items.extend(page.items);
                    acc.metadata = page.metadata;
                }
                _ => all = Some(page),
            }
        }
        let mut list = all.unwrap_or_else(|| ObjectList {
            api_version: String::new(),
            kind: String::new(),
            metadata: Default::default(),
            items: Vec::new(),
        });
        list.metadata.continue_token = None;
        Ok(list)
    }

    /// One page of objects, each decoded and handed to `f` while the body streams in: a page of any size is never
    /// held in memory whole (a `resourceVersion=0` list of a large cluster can exceed 100 MB). Returns the list's
    /// metadata (resourceVersion, continue token) once the page is complete.
    ///
    /// An error returned by `f` ends the listing (the connection is dropped) and is returned.
    pub fn list_each(&self, lp: &ListParams, mut f: impl FnMut(K) -> Result<()>) -> Result<ListMeta> {
        self.list_each_hinted(lp, |item, _| f(item))
    }

    /// Like [`list_each`](Api::list_each), also telling `f` whether the next item is already decoded: `true`
    /// means the following call to `f` comes without waiting for the network (the last item of each read gets
    /// `false`). An informer uses this to wake its processing thread once per burst of items.
    pub(crate) fn list_each_hinted(
        &self,
        lp: &ListParams,
        mut f: impl FnMut(K, bool) -> Result<()>,
    ) -> Result<ListMeta> {
        let req = Self::shaped(self.target().list(lp)?, true);
        let what = req.describe();
        let (response, cancel) = self.client.request_stream(&req)?;
        let mut reader = response.into_body().into_reader();
        let mut decoder = ListDecoder::<K>::with_max_object_size(self.client.max_object_size());
        // One item decoded ahead, so that `f` learns whether another follows at once.
        let mut ahead: Option<K> = None;
        loop {
            hand_over_buffered(&mut decoder, &mut ahead, &mut f)?;
            if cancel.is_cancelled() {
                return Err(self.client.stopped(&what));
            }
            match decoder.read_from(&mut reader) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(self.client.map_io(e, &cancel, &what, None)),
            }
        }
        hand_over_buffered(&mut decoder, &mut ahead, &mut f)?;
        Ok(decoder.finish()?)
    }

    /// Opens a watch: a blocking iterator over its events, on a connection of its own (see [`WatchStream`]).
    ///
    /// A refused watch (410 for a too-old resourceVersion, 422 for parameters the server does not support…) is an
    /// [`Error::Api`] here; problems after the stream started come out of the iterator.
    pub fn watch(&self, wp: &WatchParams) -> Result<WatchStream<K>> {
        let req = Self::shaped(self.target().watch(wp)?, false);
        let what = req.describe();
        let (response, canceller) = self.client.request_watch(&req)?;
        Ok(WatchStream::new(response, canceller, self.client.clone(), what))
    }

    /// One object.
    pub fn get(&self, name: &str) -> Result<K> {
        self.call(&Self::shaped(self.target().get(name, None)?, false))
    }

    /// One object, or `None` when it does not exist (404).
    pub fn get_opt(&self, name: &str) -> Result<Option<K>> {
        match self.get(name) {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates `obj`; returns it as stored. Refused for a metadata-only type ([`PartialObjectMetadata`]).
    ///
    /// [`PartialObjectMetadata`]: crate::object::PartialObjectMetadata
    pub fn create(&self, pp: &PostParams, obj: &K) -> Result<K> {
        self.whole_object_write("create")?;
        self.call(&self.target().create(pp, obj)?)
    }

    /// Replaces `name` with `obj` (set `metadata.resourceVersion` for optimistic concurrency: a stale one gives a
    /// 409 Conflict).
    /// Refused for a metadata-only type ([`PartialObjectMetadata`]): the object's content would be erased.
    ///
    /// [`PartialObjectMetadata`]: crate::object::PartialObjectMetadata
    pub fn replace(&self, name: &str, pp: &PostParams, obj: &K) -> Result<K> {
        self.whole_object_write("replace")?;
        self.call(&self.target().replace(name, pp, obj, None)?)
    }

    /// Patches `name`: JSON merge, JSON patch, strategic merge, or server-side apply (needs a field manager:
    /// [`PatchParams::apply`]).
    pub fn patch<P: Serialize>(&self, name: &str, pp: &PatchParams, patch: &Patch<P>) -> Result<K> {
        self.call(&Self::shaped(self.target().patch(name, pp, patch, None)?, false))
    }

    /// Deletes `name`.
    pub fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Deleted<K>> {
        decode_deleted(
            &self
                .client
                .request_bytes(&Self::shaped(self.target().delete(name, dp)?, false))?,
        )
    }

    /// The object through its `status` subresource.
    pub fn get_status(&self, name: &str) -> Result<K> {
        self.call(&Self::shaped(self.target().get(name, Some("status"))?, false))
    }

    /// Replaces the `status` subresource (only `status` changes).
    pub fn replace_status(&self, name: &str, pp: &PostParams, obj: &K) -> Result<K> {
        self.whole_object_write("replace_status")?;
        self.call(&self.target().replace(name, pp, obj, Some("status"))?)
    }

    /// Patches the `status` subresource.
    pub fn patch_status<P: Serialize>(&self, name: &str, pp: &PatchParams, patch: &Patch<P>) -> Result<K> {
        self.call(&Self::shaped(
            self.target().patch(name, pp, patch, Some("status"))?,
            false,
        ))
    }

    /// Deletes every object matching `lp`'s label and field selectors, in this `Api`'s namespace (kube-apiserver
    /// has no deletecollection across namespaces; a cluster-scoped resource deletes across the cluster). An empty
    /// selector deletes them all.
    ///
    /// Returns what the server answers: usually the list of objects deleted — as they were, or still present with
    /// a `deletionTimestamp` where finalizers hold them — or a `Status`.
    ///
    /// ```no_run
    /// use kube_informer::client::{Api, Client, params::{DeleteParams, ListParams}};
    /// use kube_informer::object::core::ConfigMap;
    ///
    /// let cms: Api<ConfigMap> = Api::namespaced(Client::try_default()?, "ci");
    /// cms.delete_collection(&DeleteParams::default(), &ListParams::default().labels("run=1234"))?;
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn delete_collection(&self, dp: &DeleteParams, lp: &ListParams) -> Result<Deleted<ObjectList<K>>> {
        decode_deleted(
            &self
                .client
                .request_bytes(&Self::shaped(self.target().delete_collection(dp, lp)?, true))?,
        )
    }

    /// The `scale` subresource: desired and observed replicas of a Deployment, ReplicaSet, StatefulSet or a
    /// custom resource that declares one.
    pub fn get_scale(&self, name: &str) -> Result<Scale> {
        self.call(&self.target().get(name, Some("scale"))?)
    }

    /// Replaces the `scale` subresource: sets the desired replicas (set `metadata.resourceVersion` for a
    /// conditional write).
    pub fn replace_scale(&self, name: &str, pp: &PostParams, scale: &Scale) -> Result<Scale> {
        self.call(&self.target().replace(name, pp, scale, Some("scale"))?)
    }

    /// Patches the `scale` subresource (`{"spec": {"replicas": 3}}` as a merge patch).
    pub fn patch_scale<P: Serialize>(&self, name: &str, pp: &PatchParams, patch: &Patch<P>) -> Result<Scale> {
        self.call(&self.target().patch(name, pp, patch, Some("scale"))?)
    }
}

/// A delete's answer: a `Status`, or an object (or list).
fn decode_deleted<T: DeserializeOwned>(body: &[u8]) -> Result<Deleted<T>> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(default)]
        kind: String,
    }
    let kind: Kind = decode_json(body)?;
    if kind.kind == "Status" {
        Ok(Deleted::Status(Box::new(decode_json(body)?)))
    } else {
        Ok(Deleted::Object(decode_json(body)?))
    }
}

/// Hands every item the decoder holds to `f`, each with whether another one is already decoded; the last (or the
/// one before an error) goes with `false`, before anything may read from the network.
fn hand_over_buffered<K: DeserializeOwned>(
    decoder: &mut ListDecoder<K>,
    ahead: &mut Option<K>,
    f: &mut impl FnMut(K, bool) -> Result<()>,
) -> Result<()> {
    loop {
        match decoder.next_item() {
            Some(Ok(item)) => {
                if let Some(prev) = ahead.replace(item) {
                    f(prev, true)?;
                }
            }
            Some(Err(e)) => {
                if let Some(prev) = ahead.take() {
                    f(prev, false)?;
                }
                return Err(e.into());
            }
            None => {
                if let Some(prev) = ahead.take() {
                    f(prev, false)?;
                }
                return Ok(());
            }
        }
    }
}

/// The pages of a paged LIST, in order (client-go's pager).
///
/// The first request uses the given [`ListParams`]; each next one sends the previous page's `continue` token and
/// clears `resourceVersion` / `resourceVersionMatch` (the server refuses them with a token). If a token expires
/// (410 Gone) mid-list, the pager falls back to **one full, unpaged list** at the original resourceVersion, as
/// client-go's does: that page holds every object and replaces the pages before it — [`ListPages::restarted`]
/// turns true when it is returned. [`Api::list_all`] handles this for you.
pub struct ListPages<K> {
    api: Api<K>,
    params: ListParams,
    /// The continue token of the next page; `None` before the first page.
    next: Option<String>,
    done: bool,
    restarted: bool,
}

impl<K> ListPages<K> {
    /// True when the last page returned is a complete unpaged list that replaces every page before it.
    pub fn restarted(&self) -> bool {
        self.restarted
    }
}

impl<K: Object> Iterator for ListPages<K> {
    type Item = Result<ObjectList<K>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut lp = self.params.clone();
        if let Some(token) = &self.next {
            lp.continue_token = Some(token.clone());
            lp.resource_version = None;
            lp.resource_version_match = None;
        }
        let page = match self.api.list(&lp) {
            Ok(page) => page,
            Err(e) if e.is_expired() && self.next.is_some() => {
                log::debug!(
                    "continue token of {} expired mid-list; falling back to a full list",
                    self.api.resource.qualified_name()
                );
                self.done = true;
                self.restarted = true;
                let full = ListParams {
                    limit: None,
                    continue_token: None,
                    ..self.params.clone()
                };
                return Some(self.api.list(&full));
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        match page.metadata.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(t) => self.next = Some(t.to_owned()),
            None => self.done = true,
        }
        Some(Ok(page))
    }
}

/// Parses a JSON response body; errors carry the byte offset.
pub(crate) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::from(json_error(0, bytes, &e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_each_hinted_tells_which_items_have_another_decoded_behind_them() {
        let items: Vec<String> = (0..3_000)
            .map(|i| {
                format!(
                    r#"{{"metadata":{{"name":"cm-{i:04}","namespace":"default"}},"data":{{"v":"{}"}}}}"#,
                    "x".repeat(100)
                )
            })
            .collect();
        let body = format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"7"}},"items":[{}]}}"#,
            items.join(",")
        );
        let peer = crate::client::test_peer::answering(1, body);
        let api = Api::<crate::object::core::ConfigMap>::namespaced(peer.client.clone(), "default");
        let mut hinted = Vec::new();
        let meta = api
            .list_each_hinted(&ListParams::default(), |o, more| {
                hinted.push((o.metadata.name.unwrap(), more));
                Ok(())
            })
            .unwrap();
        peer.thread.join().unwrap();
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        // Every item, in order; the last one never claims a follower, and the 3,000 items (~0.4 MB) arrive over
        // several reads, each read's last item saying `false`.
        let names: Vec<String> = (0..3_000).map(|i| format!("cm-{i:04}")).collect();
        assert_eq!(hinted.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), names);
        assert_eq!(hinted.last().map(|h| h.1), Some(false));
        assert!(
            hinted.iter().filter(|h| h.1).count() > 2_000,
            "most items come in bursts"
        );
        assert!(hinted.iter().filter(|h| !h.1).count() > 1, "more than one read");
    }

    #[test]
    fn decode_errors_carry_the_offset() {
        let err = decode_json::<serde_json::Value>(b"{\n  \"a\": tru\n}").unwrap_err();
        match err {
            Error::Decode(d) => assert_eq!(d.offset, 13, "{d}"),
            other => panic!("{other}"),
        }
    }
}
