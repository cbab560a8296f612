//! The request log: every request the server answered, for assertions such as "no relist happened".

use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};

/// What a request asked for, as RBAC names verbs. Non-resource requests (discovery, `/version`) are `Get`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verb {
    /// GET of one object (or a non-resource path).
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The RBAC verb (`list`, `watch`, `deletecollection`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// One answered request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestRecord {
    /// HTTP method.
    pub method: String,
    /// Path, as sent (percent-encoded).
    pub path: String,
    /// Query string without `?`.
    pub query: String,
    /// The verb.
    pub verb: Verb,
    /// The resource (`configmaps`, `leases.coordination.k8s.io`), `None` for non-resource paths.
    pub resource: Option<String>,
    /// The subresource (`status`).
    pub subresource: Option<String>,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// The authenticated user, when authentication is on.
    pub user: Option<String>,
    /// HTTP status code sent (200 for a watch, even one that ends with an ERROR event). 0 when the connection was
    /// cut or stalled before a status line.
    pub code: u16,
    /// The injected fault that shaped the answer, described.
    pub fault: Option<String>,
    /// Which connection carried the request (numbered from 0 per server): requests on one keep-alive connection
    /// share it.
    pub connection: u64,
    /// When the request was answered (for a watch: when its stream started).
    pub time: SystemTime,
}

impl RequestRecord {
    /// True when this request concerned `resource`, given as a plural (`configmaps`, `leases`) or
    /// `plural.group`.
    pub fn is_for(&self, resource: &str) -> bool {
        self.resource
            .as_deref()
            .is_some_and(|r| r == resource || r.split_once('.').is_some_and(|(plural, _)| plural == resource))
    }

    /// True for a `verb` request on `resource`.
    pub fn is(&self, verb: Verb, resource: &str) -> bool {
        self.verb == verb && self.is_for(resource)
    }
}

/// A request's record on its way into the log, which it reaches no later than the moment anything the request did
/// can be observed: [`commit`](Self::commit) logs it from under the store's lock as the request's first write
/// commits (before any other request or watcher can see the write), [`answer`](Self::answer) logs it — or corrects
/// the code the commit logged — before the answer is written.
pub(crate) struct PendingRecord<'a> {
    log: &'a RequestLog,
    /// The record until it is logged.
    record: Option<RequestRecord>,
    /// Where it was logged and with which code, once it was (then `record` is `None`).
    logged: Option<(usize, u16)>,
}

impl<'a> PendingRecord<'a> {
    pub(crate) fn new(log: &'a RequestLog, record: RequestRecord) -> Self {
        PendingRecord {
            log,
            record: Some(record),
            logged: None,
        }
    }

    /// A write of the request commits, answering `code` if all goes well: logs the record unless it already is.
    pub(crate) fn commit(&mut self, code: u16) {
        if let Some(mut record) = self.record.take() {
            record.code = code;
            self.logged = Some((self.log.push(record), code));
        }
    }

    /// The request is answered with `code`.
    pub(crate) fn answer(mut self, code: u16) {
        match self.logged {
            Some((index, logged)) if logged != code => self.log.set_code(index, code),
            Some(_) => {}
            None => self.commit(code),
        }
    }
}

/// A position in the log: count what happened after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogMark(pub(crate) usize);

/// Every request the server answered, in order.
///
/// A request is in the log before any client can observe its effect: a write is logged under the store's lock
/// as it commits, before a watcher or another request can see it, and a watch as it is registered, so a test that
/// saw an object appear (by a list, a get, a watch or an informer) finds the request that wrote it here, with the
/// status code it was answered with. Requests that have no effect (reads, failures) are logged before their answer
/// is written, so a client that got an answer finds its record too.
///
/// ```
/// # use kube_informer_apiserver::{ApiServer, Verb};
/// let server = ApiServer::start().unwrap();
/// let mark = server.requests().mark();
/// ureq::get(&format!("{}/api/v1/configmaps", server.url())).call().unwrap();
/// assert_eq!(server.requests().count_since(mark, Verb::List, "configmaps"), 1);
/// assert_eq!(server.requests().count_since(mark, Verb::Watch, "configmaps"), 0, "no watch");
/// ```
#[derive(Debug, Default)]
pub struct RequestLog {
    records: Mutex<Vec<RequestRecord>>,
    added: Condvar,
}

impl RequestLog {
    /// Appends a record; returns its index.
    pub(crate) fn push(&self, record: RequestRecord) -> usize {
        let index = {
            let mut records = self.records.lock();
            records.push(record);
            records.len() - 1
        };
        self.added.notify_all();
        index
    }

    /// Corrects the status code of the record at `index`.
    fn set_code(&self, index: usize, code: u16) {
        if let Some(r) = self.records.lock().get_mut(index) {
            r.code = code;
        }
        self.added.notify_all();
    }

    /// The current end of the log.
    pub fn mark(&self) -> LogMark {
        LogMark(self.records.lock().len())
    }

    /// Every record so far.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.records.lock().clone()
    }

    /// The records after `mark`.
    pub fn since(&self, mark: LogMark) -> Vec<RequestRecord> {
        self.records.lock().get(mark.0..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// How many `verb` requests on `resource` (plural or `plural.group`) came after `mark`.
    pub fn count_since(&self, mark: LogMark, verb: Verb, resource: &str) -> usize {
        let records = self.records.lock();
        records
            .get(mark.0..)
            .map_or(0, |r| r.iter().filter(|r| r.is(verb, resource)).count())
    }

    /// LIST requests on `resource` since `mark` (a relist shows up here).
    pub fn lists_since(&self, mark: LogMark, resource: &str) -> usize {
        self.count_since(mark, Verb::List, resource)
    }

    /// WATCH requests on `resource` since `mark`.
    pub fn watches_since(&self, mark: LogMark, resource: &str) -> usize {
        self.count_since(mark, Verb::Watch, resource)
    }

    /// Waits until `condition` holds on the records after `mark`, at most `timeout`; returns whether it held.
    ///
    /// `condition` runs with the log locked, and the server logs writes while it holds its store: it must look at
    /// the records only, not call into the server (which could wait for the log).
    pub fn wait_for(&self, mark: LogMark, timeout: Duration, condition: impl Fn(&[RequestRecord]) -> bool) -> bool {
        let deadline = crate::api::util::deadline_after(timeout);
        let mut records = self.records.lock();
        loop {
            if condition(records.get(mark.0..).unwrap_or(&[])) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.added.wait_until(&mut records, deadline);
        }
    }

    /// Waits until at least `n` `verb` requests on `resource` came after `mark`; returns whether they did.
    pub fn wait_for_count(&self, mark: LogMark, verb: Verb, resource: &str, n: usize, timeout: Duration) -> bool {
        self.wait_for(mark, timeout, |r| {
            r.iter().filter(|r| r.is(verb, resource)).count() >= n
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(verb: Verb, resource: &str) -> RequestRecord {
        RequestRecord {
            method: "GET".into(),
            path: "/".into(),
            query: String::new(),
            verb,
            resource: Some(resource.into()),
            subresource: None,
            namespace: None,
            name: None,
            user: None,
            code: 200,
            fault: None,
            connection: 0,
            time: SystemTime::now(),
        }
    }

    #[test]
    fn counts_by_verb_and_resource_since_a_mark() {
        let log = RequestLog::default();
        log.push(rec(Verb::List, "configmaps"));
        let mark = log.mark();
        log.push(rec(Verb::Watch, "configmaps"));
        log.push(rec(Verb::List, "leases.coordination.k8s.io"));
        assert_eq!(log.lists_since(mark, "configmaps"), 0);
        assert_eq!(log.watches_since(mark, "configmaps"), 1);
        assert_eq!(log.lists_since(mark, "leases"), 1);
        assert_eq!(log.lists_since(mark, "leases.coordination.k8s.io"), 1);
        assert_eq!(log.since(mark).len(), 2);
        assert!(log.wait_for_count(mark, Verb::Watch, "configmaps", 1, Duration::ZERO));
        assert!(!log.wait_for_count(mark, Verb::Watch, "configmaps", 2, Duration::ZERO));
    }
}
