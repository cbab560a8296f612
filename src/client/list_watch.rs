//! `ListWatch`: the [`ListerWatcher`] an informer uses to reach the API server (client-go's
//! `cache.NewFilteredListWatchFromClient`).

use std::fmt;

use super::Api;
use super::params::{ListParams, WatchParams};
use crate::Result;
use crate::cache::{EventStream, ListerWatcher};
use crate::object::{ListMeta, Object};

/// Lists and watches one resource through its own isolated client, so that
/// [`interrupt`](ListerWatcher::interrupt) (an informer stopping) aborts this informer's requests and nobody
/// else's.
///
/// ```no_run
/// use kube_informer::client::{Api, Client, ListWatch};
/// use kube_informer::object::core::ConfigMap;
///
/// let client = Client::try_default()?;
/// let lw = ListWatch::new(&Api::<ConfigMap>::default_namespaced(client)).labels("app=web");
/// # let _ = lw;
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct ListWatch<K> {
    api: Api<K>,
    label_selector: Option<String>,
    field_selector: Option<String>,
}

impl<K: Object> ListWatch<K> {
    /// Lists and watches what `api` addresses (its resource and namespace), on an isolated copy of its client.
    pub fn new(api: &Api<K>) -> Self {
        ListWatch {
            api: api.with_client(api.client().isolated()),
            label_selector: None,
            field_selector: None,
        }
    }

    /// Only objects matching this label selector.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Only objects matching this field selector.
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }
}

impl<K: Object> ListerWatcher<K> for ListWatch<K> {
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(K)) -> Result<ListMeta> {
        self.list_page_hinted(params, &mut |obj, _| on_item(obj))
    }

    fn list_page_hinted(&self, params: &ListParams, on_item: &mut dyn FnMut(K, bool)) -> Result<ListMeta> {
        let params = ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..params.clone()
        };
        self.api.list_each_hinted(&params, |obj, more| {
            on_item(obj, more);
            Ok(())
        })
    }

    fn watch(&self, params: &WatchParams) -> Result<EventStream<K>> {
        let params = WatchParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..params.clone()
        };
        Ok(Box::new(self.api.watch(&params)?))
    }

    fn interrupt(&self) {
        self.api.client().abort_handle().abort();
    }
}

impl<K> fmt::Debug for ListWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListWatch")
            .field("api", &self.api)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .finish()
    }
}
