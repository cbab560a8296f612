//! Waiting for a condition, with a deadline: on an informer's cache ([`until`]: client-go's
//! `wait.PollUntilContextTimeout` over a lister, without the polling) or on one object of the server ([`object`]:
//! kube-runtime's `await_condition`).
//!
//! Each wait comes three ways, as crossbeam-channel's blocking calls do: `x` (no limit), `x_timeout` (a duration)
//! and `x_deadline` (an instant); a timeout is a deadline. Nothing polls: a cache wait checks its condition again
//! on each event of the informer (through a handler of its own, removed when the wait returns), an object wait on
//! each event of a watch of that one object.
//!
//! ```
//! use std::time::Duration;
//! use kube_informer::informer::SharedInformerFactory;
//! use kube_informer::object::{core::ConfigMap, ObjectMeta};
//! use kube_informer::wait;
//! # let server = kube_informer_apiserver::ApiServer::start()?;
//! # let client = server.client()?;
//! let factory = SharedInformerFactory::new(client.clone(), Default::default());
//! let configmaps = factory.informer::<ConfigMap>();
//! factory.start()?;
//! server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "settings")).with("mode", "fast"))?;
//! // The cache holds it within 10 s, or a WaitError::Timeout.
//! wait::until_timeout(&configmaps, Duration::from_secs(10), |cache| cache.get("default/settings").is_some())?;
//!
//! // The server's object: true when the condition held (here, as soon as it exists), with the object.
//! let api = kube_informer::client::Api::<ConfigMap>::namespaced(client, "default");
//! let cm = wait::object_timeout(&api, "settings", Duration::from_secs(10), |cm| cm.is_some())?;
//! assert_eq!(cm.unwrap().data.get("mode"), Some("fast"));
//! # factory.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;

use crate::cache::Lister;
use crate::client::Api;
use crate::client::params::{ListParams, WatchParams};
use crate::clock::deadline::deadline_after;
use crate::error::Error;
use crate::informer::{HandlerOptions, Notification, SharedIndexInformer};
use crate::object::Object;
use crate::watch::WatchEvent;

/// How often a wait without an event checks whether its informer stopped (an informer's stop removes no handler
/// of its own accord).
const STOP_CHECK: Duration = Duration::from_secs(1);

/// Why a wait returned without its condition holding.
#[derive(Debug)]
#[non_exhaustive]
pub enum WaitError {
    /// The deadline passed.
    Timeout,
    /// The informer was stopped.
    Stopped,
    /// A request failed (an object wait), or the informer refused the wait's handler.
    Failed(Error),
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::Timeout => f.write_str("the condition did not hold by the deadline"),
            WaitError::Stopped => f.write_str("the informer stopped before the condition held"),
            WaitError::Failed(e) => write!(f, "waiting failed: {e}"),
        }
    }
}

impl std::error::Error for WaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WaitError::Failed(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Error> for WaitError {
    fn from(e: Error) -> Self {
        WaitError::Failed(e)
    }
}

/// Blocks until `condition` holds on `informer`'s cache, checking it now and after each event the informer
/// delivers; no limit but the informer's stop.
///
/// # Errors
/// [`WaitError::Stopped`] once the informer is stopped; [`WaitError::Failed`] when the wait's handler cannot be
/// added.
pub fn until<K: Object>(
    informer: &SharedIndexInformer<K>,
    condition: impl FnMut(&Lister<K>) -> bool,
) -> Result<(), WaitError> {
    wait_cache(informer, None, condition)
}

/// [`until`], giving up after `timeout`.
///
/// # Errors
/// [`WaitError::Timeout`]; as [`until`].
pub fn until_timeout<K: Object>(
    informer: &SharedIndexInformer<K>,
    timeout: Duration,
    condition: impl FnMut(&Lister<K>) -> bool,
) -> Result<(), WaitError> {
    wait_cache(informer, Some(deadline_after(Instant::now(), timeout)), condition)
}

/// [`until`], giving up at `deadline`.
///
/// # Errors
/// [`WaitError::Timeout`]; as [`until`].
pub fn until_deadline<K: Object>(
    informer: &SharedIndexInformer<K>,
    deadline: Instant,
    condition: impl FnMut(&Lister<K>) -> bool,
) -> Result<(), WaitError> {
    wait_cache(informer, Some(deadline), condition)
}

fn wait_cache<K: Object>(
    informer: &SharedIndexInformer<K>,
    deadline: Option<Instant>,
    mut condition: impl FnMut(&Lister<K>) -> bool,
) -> Result<(), WaitError> {
    let lister = informer.lister();
    if condition(&lister) {
        return Ok(());
    }
    if informer.is_stopped() {
        return Err(WaitError::Stopped);
    }
    // One wake-up pending at most: the condition reads the whole cache, whatever the events were.
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    let registration = informer.add_event_handler_with(
        move |_: &Notification<K>| {
            let _ = tx.try_send(());
        },
        HandlerOptions::default().name("wait"),
    )?;
    let outcome = loop {
        if condition(&lister) {
            break Ok(());
        }
        if informer.is_stopped() {
            break Err(WaitError::Stopped);
        }
        let now = Instant::now();
        let check = deadline_after(now, STOP_CHECK);
        let until = deadline.map_or(check, |d| d.min(check));
        match rx.recv_timeout(until.saturating_duration_since(now)) {
            Ok(()) => {}
            Err(RecvTimeoutError::Timeout) if deadline.is_some_and(|d| Instant::now() >= d) => {
                break if condition(&lister) {
                    Ok(())
                } else {
                    Err(WaitError::Timeout)
                };
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break Err(WaitError::Stopped),
        }
    };
    registration.remove();
    outcome
}

/// Blocks until `condition` holds for the object `name` of `api` (`None` while it does not exist), read from the
/// server and then followed by a watch of that object alone; returns the object it held for (`None`: it held for
/// the object's absence). Waits for a deletion with `|o| o.is_none()`.
///
/// # Errors
/// [`WaitError::Failed`] when a read or the watch fails for another reason than an expired resourceVersion
/// (which reads again).
pub fn object<K: Object + Clone>(
    api: &Api<K>,
    name: &str,
    condition: impl FnMut(Option<&K>) -> bool,
) -> Result<Option<K>, WaitError> {
    wait_object(api, name, None, condition)
}

/// [`object`], giving up after `timeout`.
///
/// # Errors
/// [`WaitError::Timeout`]; as [`object`].
pub fn object_timeout<K: Object + Clone>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl FnMut(Option<&K>) -> bool,
) -> Result<Option<K>, WaitError> {
    wait_object(api, name, Some(deadline_after(Instant::now(), timeout)), condition)
}

/// [`object`], giving up at `deadline` (every request of the wait is aborted there).
///
/// # Errors
/// [`WaitError::Timeout`]; as [`object`].
pub fn object_deadline<K: Object + Clone>(
    api: &Api<K>,
    name: &str,
    deadline: Instant,
    condition: impl FnMut(Option<&K>) -> bool,
) -> Result<Option<K>, WaitError> {
    wait_object(api, name, Some(deadline), condition)
}

fn wait_object<K: Object + Clone>(
    api: &Api<K>,
    name: &str,
    deadline: Option<Instant>,
    mut condition: impl FnMut(Option<&K>) -> bool,
) -> Result<Option<K>, WaitError> {
    if name.is_empty() {
        return Err(Error::InvalidInput("wait::object: an empty name".into()).into());
    }
    let api = match deadline {
        Some(d) => api.with_deadline(d),
        None => api.clone(),
    };
    let only = format!("metadata.name={name}");
    // A failure past the deadline is the deadline's (the client aborts what is in flight there).
    let failed = |e: Error| match deadline {
        Some(d) if Instant::now() >= d => WaitError::Timeout,
        _ => WaitError::Failed(e),
    };
    loop {
        let list = api.list(&ListParams::default().fields(&only)).map_err(failed)?;
        let current = list.items.into_iter().next();
        if condition(current.as_ref()) {
            return Ok(current);
        }
        let at = list.metadata.resource_version.unwrap_or_default();
        let watch = api.watch(&WatchParams::default().fields(&only).at(&at).bookmarks(true));
        let stream = match watch {
            Ok(s) => s,
            Err(e) if e.is_expired() => continue,
            Err(e) => return Err(failed(e)),
        };
        for event in stream {
            match event.map_err(failed)? {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    if condition(Some(&o)) {
                        return Ok(Some(o));
                    }
                }
                WatchEvent::Deleted(_) => {
                    if condition(None) {
                        return Ok(None);
                    }
                }
                WatchEvent::Bookmark(_) => {}
                // Expired (or another end the server chose): read again.
                WatchEvent::Error(_) => break,
            }
        }
        // The watch ended (the server's timeout): read again, which also covers what passed meanwhile.
    }
}
