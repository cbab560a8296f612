//! `WatchStream`: the events of one WATCH, decoded as the chunked body arrives.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::Client;
use super::abort::{Canceller, StreamStopper};
use crate::watch::spares::SpareObjects;
use crate::watch::{WatchDecoder, WatchEvent};
use crate::{Error, Result};

/// A blocking iterator over the events of one watch.
///
/// * `Some(Ok(event))` for each event, `WatchEvent::Error` included (a 410 there means: relist);
/// * `None` once the server closed the stream cleanly (its `timeoutSeconds` elapsed): re-watch from the last
///   resourceVersion seen;
/// * on a problem, exactly one `Some(Err(_))`, then `None`: [`Error::Decode`] (malformed or truncated stream),
///   [`Error::WatchIdle`] (no byte for longer than the idle limit — a dead connection), [`Error::Transport`], or
///   [`Error::Stopped`] after [`StreamStopper::stop`] or the client's abort.
///
/// Each watch has its own connection: stopping it (from any thread, through [`WatchStream::stopper`]) closes that
/// connection and nothing else. Dropping the stream closes it too.
///
/// After each read the stream decodes the events in the bytes received (up to 128 ahead, never reading for them), so
/// that `size_hint()` is exact about what comes without blocking: its lower bound is how many `next()` calls return
/// at once. A reflector uses that to queue a burst of events under one lock and to wake the informer's processing
/// thread once per burst instead of once per event; decoding a burst back to back is also faster than alternating
/// each decode with queueing.
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
    /// The next items, decoded from buffered bytes without reading: events, possibly ending with the decoder's error.
    /// Invariant: empty only when the decoder holds no complete event, or once `finished`.
    ahead: VecDeque<Result<WatchEvent<K>>>,
    /// Objects to decode the next events into (an informer's retired versions), when given by
    /// [`recycling`](WatchStream::recycling).
    spares: Option<Arc<dyn SpareObjects<K>>>,
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
            ahead: VecDeque::new(),
            spares: None,
        }
    }
}

impl<K: DeserializeOwned> WatchStream<K> {
    // Reached from outside through `crate::unstable::Recycling`.
    /// Decodes the events into objects taken from `spares` (an informer's reflector hands its `ListerWatcher` the
    /// versions its cache let go of), reusing their memory; the events decoded are the same. A `ListerWatcher`
    /// built on [`Api::watch`](super::Api::watch) opts in with this.
    #[must_use]
    pub(crate) fn recycling(mut self, spares: Arc<dyn SpareObjects<K>>) -> Self {
        self.spares = Some(spares);
        self
    }

    /// A handle that ends this watch from any thread.
    pub fn stopper(&self) -> StreamStopper {
        StreamStopper {
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

    /// Decodes what the buffered bytes hold into `ahead` (see [`decode_ahead`]).
    fn look_ahead(&mut self) {
        if decode_ahead(&mut self.decoder, self.spares.as_deref(), &mut self.ahead) {
            self.finished = true;
        }
    }
}

/// Most events a stream decodes ahead of its consumer.
const AHEAD: usize = 128;

/// Decodes the complete events `decoder` holds into `ahead`, until it holds [`AHEAD`]; before each decode, gives the
/// decoder an object from `spares` to decode into if it has none. True when decoding failed: the error is
/// then the last item of `ahead`, and nothing more may be decoded.
fn decode_ahead<K: DeserializeOwned>(
    decoder: &mut WatchDecoder<K>,
    spares: Option<&dyn SpareObjects<K>>,
    ahead: &mut VecDeque<Result<WatchEvent<K>>>,
) -> bool {
    while ahead.len() < AHEAD {
        if let Some(spares) = spares {
            decoder.recycle_from(spares);
        }
        match decoder.next_event() {
            Some(Ok(ev)) => ahead.push_back(Ok(ev)),
            Some(Err(e)) => {
                ahead.push_back(Err(e.into()));
                return true;
            }
            None => break,
        }
    }
    false
}

impl<K: DeserializeOwned> Iterator for WatchStream<K> {
    type Item = Result<WatchEvent<K>>;

    fn next(&mut self) -> Option<Self::Item> {
        // A stopped watch reports it, even when the shutdown read looked like a clean end of stream.
        if self.canceller.is_cancelled() && !(self.finished && self.ahead.is_empty()) {
            self.ahead.clear();
            return self.fail(self.client.stopped(&self.what));
        }
        loop {
            if let Some(item) = self.ahead.pop_front() {
                if self.ahead.is_empty() && !self.finished {
                    self.look_ahead();
                }
                return Some(item);
            }
            if self.finished {
                return None;
            }
            // Nothing decoded ahead: the decoder holds no complete event (the invariant on `ahead`).
            match self.decoder.read_from(&mut self.reader) {
                Ok(0) => {
                    if self.canceller.is_cancelled() {
                        return self.fail(self.client.stopped(&self.what));
                    }
                    self.finished = true;
                    return self.decoder.finish().err().map(|e| Err(e.into()));
                }
                Ok(_) => {
                    if self.canceller.is_cancelled() {
                        return self.fail(self.client.stopped(&self.what));
                    }
                    self.look_ahead();
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

    /// `(n, None)`: the next `n` calls of `next` return at once (events already decoded, maybe ending with an error).
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.ahead.len(), None)
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
    use crate::client::params::WatchParams;
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    /// Spares handed out oldest first, as an informer's recycler does.
    #[derive(Default)]
    struct Pile(parking_lot::Mutex<VecDeque<ConfigMap>>);

    impl SpareObjects<ConfigMap> for Pile {
        fn take(&self) -> Option<ConfigMap> {
            self.0.lock().pop_front()
        }
    }

    impl Pile {
        /// Adds a spare; returns its name buffer's address, which an object decoded into it keeps.
        fn add(&self, name: &str) -> *const u8 {
            let obj = ConfigMap::new(ObjectMeta::named(name));
            let at = obj.metadata.name.as_ref().unwrap().as_ptr();
            self.0.lock().push_back(obj);
            at
        }
    }

    #[test]
    fn a_watch_given_spares_decodes_into_them() {
        let event = r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1",
            "metadata":{"name":"a","namespace":"default","resourceVersion":"2"},"data":{"k":"v"}}}"#;
        let peer = crate::client::test_peer::answering(2, format!("{}\n", event.replace('\n', "")));
        let api = Api::<ConfigMap>::namespaced(peer.client.clone(), "default");
        let wp = WatchParams {
            resource_version: Some("1".into()),
            ..Default::default()
        };

        // A watch has no spares unless given some.
        assert!(api.watch(&wp).unwrap().spares.is_none());
        let pile = Arc::new(Pile::default());
        let mut stream = api.watch(&wp).unwrap().recycling(pile.clone());

        // The next event's object is decoded into the spare: it keeps the spare's name buffer (one that fits the new
        // name with less than one allocator step to spare: a cached string carries no slack).
        let name = pile.add("a-retired");
        let Some(Ok(WatchEvent::Modified(cm))) = stream.next() else {
            panic!("expected the update")
        };
        assert_eq!(cm.metadata.name.as_deref(), Some("a"));
        assert_eq!(cm.data.get("k"), Some("v"));
        assert_eq!(cm.metadata.name.as_ref().unwrap().as_ptr(), name);
        assert!(pile.0.lock().is_empty());
        peer.thread.join().unwrap();
    }

    fn modified(name: &str) -> String {
        format!(
            "{{\"type\":\"MODIFIED\",\"object\":{{\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\",\
             \"resourceVersion\":\"1\"}}}}}}\n"
        )
    }

    fn names(ahead: &VecDeque<Result<WatchEvent<ConfigMap>>>) -> Vec<String> {
        ahead
            .iter()
            .map(|item| match item {
                Ok(WatchEvent::Modified(cm)) => cm.metadata.name.clone().unwrap(),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn decoding_ahead_takes_every_complete_event_received_up_to_its_limit() {
        let total = AHEAD + 36;
        let mut decoder = WatchDecoder::<ConfigMap>::new();
        for i in 0..total {
            decoder.push(modified(&format!("cm-{i}")).as_bytes());
        }
        decoder.push(&modified("partial").as_bytes()[..20]);
        let mut ahead = VecDeque::new();

        assert!(!decode_ahead(&mut decoder, None, &mut ahead));
        assert_eq!(names(&ahead), (0..AHEAD).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
        // A full queue is left as it is; once consumed, the rest of what was received follows, then nothing: the
        // partial line waits for its bytes.
        assert!(!decode_ahead(&mut decoder, None, &mut ahead));
        assert_eq!(ahead.len(), AHEAD);
        ahead.clear();
        assert!(!decode_ahead(&mut decoder, None, &mut ahead));
        assert_eq!(
            names(&ahead),
            (AHEAD..total).map(|i| format!("cm-{i}")).collect::<Vec<_>>()
        );
        ahead.clear();
        assert!(!decode_ahead(&mut decoder, None, &mut ahead));
        assert!(ahead.is_empty());
    }

    #[test]
    fn decoding_ahead_stops_at_an_error_after_the_events_before_it() {
        let mut decoder = WatchDecoder::<ConfigMap>::new();
        decoder.push(modified("a").as_bytes());
        decoder.push(b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":7}}\n");
        decoder.push(modified("b").as_bytes());
        let mut ahead = VecDeque::new();
        assert!(decode_ahead(&mut decoder, None, &mut ahead));
        assert_eq!(ahead.len(), 2);
        assert!(matches!(&ahead[0], Ok(WatchEvent::Modified(cm)) if cm.metadata.name.as_deref() == Some("a")));
        assert!(matches!(ahead[1], Err(Error::Decode(_))));
    }

    #[test]
    fn decoding_ahead_gives_each_decode_a_spare() {
        let pile = Pile::default();
        let spares: Vec<_> = (0..3).map(|i| pile.add(&format!("retired-{i}"))).collect();
        let mut decoder = WatchDecoder::<ConfigMap>::new();
        for name in ["a", "b", "c"] {
            decoder.push(modified(name).as_bytes());
        }
        let mut ahead = VecDeque::new();
        assert!(!decode_ahead(&mut decoder, Some(&pile), &mut ahead));
        let reused: Vec<_> = ahead
            .iter()
            .map(|item| match item {
                Ok(WatchEvent::Modified(cm)) => cm.metadata.name.as_ref().unwrap().as_ptr(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(names(&ahead), ["a", "b", "c"]);
        assert_eq!(reused, spares, "each event decoded into the next spare, in order");
    }
}
