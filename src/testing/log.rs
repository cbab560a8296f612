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

/// A position in the log: count what happened after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogMark(usize);

/// Every request the server answered, in order.
///
/// ```
/// # use kube_informer::testing::{ApiServer, Verb};
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
    pub(crate) fn push(&self, record: RequestRecord) {
        self.records.lock().push(record);
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
    pub fn wait_for(&self, mark: LogMark, timeout: Duration, condition: impl Fn(&[RequestRecord]) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
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
