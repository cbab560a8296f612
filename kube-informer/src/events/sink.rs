//! `ApiEventSink`: writes events to the API server.

use std::fmt;

use super::{Event, EventSink};
use crate::client::params::{Patch, PatchParams, PostParams};
use crate::client::{Api, Client};
use crate::error::Result;

/// An [`EventSink`] writing core/v1 Events through a [`Client`] (client-go's `EventSinkImpl`).
///
/// ```no_run
/// use kube_informer::client::Client;
/// use kube_informer::events::{ApiEventSink, EventRecorder, RecorderOptions};
///
/// let recorder = EventRecorder::new(ApiEventSink::new(Client::try_default()?), RecorderOptions::new("my-controller"))?;
/// # let _ = recorder;
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone)]
pub struct ApiEventSink {
    client: Client,
}

impl ApiEventSink {
    /// A sink writing through `client`.
    pub fn new(client: Client) -> ApiEventSink {
        ApiEventSink { client }
    }

    fn api(&self, namespace: &str) -> Api<Event> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

impl EventSink for ApiEventSink {
    fn create(&self, event: &Event) -> Result<Event> {
        let ns = event.metadata.namespace.as_deref().unwrap_or("default");
        self.api(ns).create(&PostParams::default(), event)
    }

    fn patch(&self, namespace: &str, name: &str, patch: &serde_json::Value) -> Result<Event> {
        self.api(namespace)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
    }
}

impl fmt::Debug for ApiEventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiEventSink").finish_non_exhaustive()
    }
}
