//! `WatchStream`: the events of one WATCH, decoded as the chunked body arrives.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::Client;
use super::abort::{Canceller, WatchStopper};
use crate::cache::Recycler;
use crate::watch::{WatchDecoder, WatchEvent};
use crate::{Error, Result};

/// A blocking iterator over the events of one watch.
///
/// * `Some(Ok(event))` for each event, `WatchEvent::Error` included (a 410 there means: relist);
/// * `None` once the server closed the stream cleanly (its `timeoutSeconds` elapsed): re-watch from the last
///   resourceVersion seen;
/// * on a problem, exactly one `Some(Err(_))`, then `None`: [`Error::Decode`] (malformed or truncated stream),
///   [`Error::WatchIdle`] (no byte for longer than the idle limit — a dead connection), [`Error::Transport`], or
///   [`Error::Stopped`] after [`WatchStopper::stop`] or the client's abort.
///
/// Each watch has its own connection: stopping it (from any thread, through [`WatchStream::stopper`]) closes that
/// connection and nothing else. Dropping the stream closes it too.
///
/// The stream decodes one event ahead, from bytes already received (never reading for it), so that `size_hint()`
/// is exact about what comes without blocking: a lower bound of 1 means the next `next()` returns at once. A
/// reflector uses that to wake the informer's processing thread once per burst of events instead of once per event.
pub struct WatchStream<K> {
    reader: ureq::BodyReader<'static>,
    decoder: WatchDecoder<K>,
    canceller: Arc<Canceller>,
    client: Client,
    /// `GET /path` for messages.
    what: String,
    idle_limit: Duration,
    /// Once true, `next` returns `None` (after `ahead`, if any).
    finished: bool,
    /// The next item, decoded from buffered bytes without reading (an event, or the decoder's error).
    ahead: Option<Result<WatchEvent<K>>>,
    /// The recycler of the reflector that opened this watch, if any: objects its cache let go of, which the decoder
    /// decodes the next events into.
    recycler: Option<Arc<Recycler<K>>>,
}

impl<K: DeserializeOwned + Send + Sync + 'static> WatchStream<K> {
    pub(crate) fn new(
        response: ureq::http::Response<ureq::Body>,
        canceller: Arc<Canceller>,
        client: Client,
        what: String,
    ) -> Self {
        let idle_limit = client.watch_idle_limit();
        WatchStream {
            reader: response.into_body().into_reader(),
            decoder: WatchDecoder::with_max_object_size(client.max_object_size()),
            canceller,
            client,
            what,
            idle_limit,
            finished: false,
            ahead: None,
            recycler: Recycler::current(),
        }
    }
}

impl<K: DeserializeOwned> WatchStream<K> {
    /// A handle that ends this watch from any thread.
    pub fn stopper(&self) -> WatchStopper {
        WatchStopper {
            inner: Arc::clone(&self.canceller),
        }
    }

    /// The idle limit of this watch.
    pub fn idle_limit(&self) -> Duration {
        self.idle_limit
    }

    fn fail(&mut self, e: Error) -> Option<Result<WatchEvent<K>>> {
        self.finished = true;
        Some(Err(e))
    }

    /// Gives the decoder a retired object to decode into, when it has none and the recycler has one.
    fn refill(&mut self) {
        if !self.decoder.has_spare()
            && let Some(obj) = self.recycler.as_ref().and_then(|r| r.take())
        {
            self.decoder.recycle(obj);
        }
    }

    /// Decodes the next event from the bytes already received, if they hold one (no read).
    fn look_ahead(&mut self) {
        self.refill();
        self.ahead = match self.decoder.next_event() {
            Some(Ok(ev)) => Some(Ok(ev)),
            Some(Err(e)) => {
                self.finished = true;
                Some(Err(e.into()))
            }
            None => None,
        };
    }
}

impl<K: DeserializeOwned> Iterator for WatchStream<K> {
    type Item = Result<WatchEvent<K>>;

    fn next(&mut self) -> Option<Self::Item> {
        // A stopped watch reports it, even when the shutdown read looked like a clean end of stream.
        if self.canceller.is_cancelled() && !(self.finished && self.ahead.is_none()) {
            self.ahead = None;
            return self.fail(Error::Stopped);
        }
        if let Some(item) = self.ahead.take() {
            if item.is_ok() {
                self.look_ahead();
            }
            return Some(item);
        }
        loop {
            if self.finished {
                return None;
            }
            self.refill();
            if let Some(ev) = self.decoder.next_event() {
                return match ev {
                    Ok(ev) => {
                        self.look_ahead();
                        Some(Ok(ev))
                    }
                    Err(e) => self.fail(e.into()),
                };
            }
            match self.decoder.read_from(&mut self.reader) {
                Ok(0) => {
                    if self.canceller.is_cancelled() {
                        return self.fail(Error::Stopped);
                    }
                    self.finished = true;
                    return self.decoder.finish().err().map(|e| Err(e.into()));
                }
                Ok(_) => {
                    if self.canceller.is_cancelled() {
                        return self.fail(Error::Stopped);
                    }
                }
                Err(e) => {
                    let err = self
                        .client
                        .map_io(e, &self.canceller.signal(), &self.what, Some(self.idle_limit));
                    return self.fail(err);
                }
            }
        }
    }

    /// `(1, None)` when the next item is already decoded (`next` will not block), else `(0, None)`.
    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::from(self.ahead.is_some()), None)
    }
}

impl<K> Drop for WatchStream<K> {
    fn drop(&mut self) {
        // Closes the dedicated connection and releases its agent; stoppers held elsewhere now report stopped.
        self.canceller.cancel();
    }
}

impl<K> fmt::Debug for WatchStream<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream")
            .field("what", &self.what)
            .field("idle_limit", &self.idle_limit)
            .field("finished", &self.finished)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Api;
    use crate::client::params::{PostParams, WatchParams};
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;
    use crate::testing::ApiServer;

    #[test]
    fn a_watch_opened_by_a_reflector_decodes_into_what_its_cache_retired() {
        let server = ApiServer::start().unwrap();
        let api = Api::<ConfigMap>::namespaced(server.client().unwrap(), "default");
        let pp = PostParams::default();
        let created = api.create(&pp, &ConfigMap::new(ObjectMeta::named("a"))).unwrap();
        let wp = WatchParams {
            resource_version: created.metadata.resource_version.clone(),
            ..Default::default()
        };

        // A watch opened outside a reflector has no recycler; one opened while a recycler is entered keeps it.
        assert!(api.watch(&wp).unwrap().recycler.is_none());
        let recycler = Arc::new(Recycler::new());
        let mut stream = {
            let _entered = recycler.enter();
            api.watch(&wp).unwrap()
        };
        assert!(
            Recycler::<ConfigMap>::current().is_none(),
            "the guard restored the thread"
        );

        // What the cache lets go of is decoded into: the next event's object has the retired one's name buffer.
        let retired = Arc::new(ConfigMap::new(ObjectMeta::named("a-retired-object-with-a-long-name")));
        let name = retired.metadata.name.as_ref().unwrap().as_ptr();
        recycler.retire(retired);
        api.replace("a", &pp, &created.clone().with("k", "v")).unwrap();
        let Some(Ok(WatchEvent::Modified(cm))) = stream.next() else {
            panic!("expected the update")
        };
        assert_eq!(cm.metadata.name.as_deref(), Some("a"));
        assert_eq!(cm.data.get("k"), Some("v"));
        assert_eq!(cm.metadata.name.as_ref().unwrap().as_ptr(), name);
    }
}
