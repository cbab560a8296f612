//! Request parameters: list, watch, create, patch, delete; and their query strings.
//!
//! Everything here is pure: building a query string touches no network, so the request shapes are tested here and the
//! embedded API server parses the same names.

use std::time::SystemTime;

use serde::Serialize;

use crate::selector::ShardSelector;

/// `resourceVersionMatch`: how a LIST's `resourceVersion` is interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionMatch {
    /// Data at least as new as the given version (may be served from the watch cache).
    NotOlderThan,
    /// Data at exactly the given version (served from etcd; may be 410 when compacted).
    Exact,
}

impl VersionMatch {
    /// The query-string value.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionMatch::NotOlderThan => "NotOlderThan",
            VersionMatch::Exact => "Exact",
        }
    }
}

/// Adds `selector` to `current` (label or field selector): both must match. An empty selector selects everything,
/// so it adds nothing.
pub(crate) fn and_selector(current: &mut Option<String>, selector: &str) {
    let selector = selector.trim();
    if selector.is_empty() {
        return;
    }
    match current {
        Some(s) if !s.trim().is_empty() => {
            s.push(',');
            s.push_str(selector);
        }
        _ => *current = Some(selector.to_owned()),
    }
}

/// Parameters of one LIST request (one page).
///
/// ```
/// use kube_informer::client::params::{ListParams, VersionMatch};
///
/// let lp = ListParams::default().labels("app=web").limit(500).at("0");
/// assert_eq!((lp.label_selector.as_deref(), lp.limit), (Some("app=web"), Some(500)));
/// let exact = ListParams::default().at("42").matching(VersionMatch::Exact);
/// assert_eq!(exact.resource_version_match, Some(VersionMatch::Exact));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`: page size; `None` or 0 asks for everything at once.
    pub limit: Option<u32>,
    /// `continue`: token from the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion`: `None`/"" = most recent (quorum read), "0" = any (watch cache), else at least or exactly.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<VersionMatch>,
    /// `timeoutSeconds`: server-side limit on the call.
    pub timeout_seconds: Option<u32>,
    /// `shardSelector` (KEP-5866): only objects of this shard, on servers with the `ShardedListAndWatch` gate (the
    /// answer then carries [`ListMeta::shard_info`](crate::object::ListMeta::shard_info)); others ignore it.
    pub shard_selector: Option<ShardSelector>,
}

impl ListParams {
    /// Sets `shardSelector`.
    #[must_use]
    pub fn shard(mut self, selector: ShardSelector) -> Self {
        self.shard_selector = Some(selector);
        self
    }

    /// Adds a label selector: objects must match it and any given before (`labelSelector` holds them joined
    /// by `,`, which the API server reads as *and*).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        and_selector(&mut self.label_selector, selector);
        self
    }

    /// Adds a field selector: objects must match it and any given before (joined by `,`).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        and_selector(&mut self.field_selector, selector);
        self
    }

    /// Sets `limit` (page size).
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets `continue`.
    #[must_use]
    pub fn continue_token(mut self, token: &str) -> Self {
        self.continue_token = Some(token.to_owned());
        self
    }

    /// Sets `resourceVersion`.
    #[must_use]
    pub fn at(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.to_owned());
        self
    }

    /// Sets `resourceVersionMatch`.
    #[must_use]
    pub fn matching(mut self, m: VersionMatch) -> Self {
        self.resource_version_match = Some(m);
        self
    }

    /// Sets `timeoutSeconds`.
    #[must_use]
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Appends this request's parameters to `q`.
    pub(crate) fn append_to(&self, q: &mut Query) {
        q.opt("labelSelector", self.label_selector.as_deref());
        q.opt("fieldSelector", self.field_selector.as_deref());
        if let Some(l) = self.limit.filter(|l| *l > 0) {
            q.push("limit", &l.to_string());
        }
        q.opt("continue", self.continue_token.as_deref());
        q.opt("resourceVersion", self.resource_version.as_deref());
        q.opt(
            "resourceVersionMatch",
            self.resource_version_match.map(VersionMatch::as_str),
        );
        if let Some(t) = self.timeout_seconds {
            q.push("timeoutSeconds", &t.to_string());
        }
        if let Some(s) = &self.shard_selector {
            q.push("shardSelector", &s.to_string());
        }
    }

    /// The query string (without `?`).
    #[cfg(test)]
    fn to_query(&self) -> String {
        let mut q = Query::default();
        self.append_to(&mut q);
        q.into_string()
    }
}

/// Parameters of a WATCH request.
///
/// ```
/// use kube_informer::client::params::WatchParams;
///
/// let wp = WatchParams::default().at("1234").bookmarks(true).timeout(300);
/// assert_eq!(wp.resource_version.as_deref(), Some("1234"));
/// let stream = WatchParams::streaming_list(); // sendInitialEvents, NotOlderThan, bookmarks
/// assert!(stream.send_initial_events && stream.allow_bookmarks);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion` to start after; `None` = "from now" (no initial state unless `send_initial_events`).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (only `NotOlderThan`, with `send_initial_events`).
    pub resource_version_match: Option<VersionMatch>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `timeoutSeconds`: the server closes the watch after this long.
    pub timeout_seconds: Option<u32>,
    /// `sendInitialEvents`: start with ADDED events for the current state, then a BOOKMARK annotated
    /// `k8s.io/initial-events-end: "true"` (streaming list).
    pub send_initial_events: bool,
    /// `shardSelector` (KEP-5866): only events of objects in this shard, on servers with the `ShardedListAndWatch`
    /// gate; others ignore it.
    pub shard_selector: Option<ShardSelector>,
}

impl WatchParams {
    /// A streaming list: `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`, bookmarks on.
    pub fn streaming_list() -> Self {
        WatchParams {
            resource_version_match: Some(VersionMatch::NotOlderThan),
            allow_bookmarks: true,
            send_initial_events: true,
            ..Default::default()
        }
    }

    /// Adds a label selector: objects must match it and any given before (`labelSelector` holds them joined
    /// by `,`, which the API server reads as *and*).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        and_selector(&mut self.label_selector, selector);
        self
    }

    /// Adds a field selector: objects must match it and any given before (joined by `,`).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        and_selector(&mut self.field_selector, selector);
        self
    }

    /// Sets `resourceVersion`.
    #[must_use]
    pub fn at(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.to_owned());
        self
    }

    /// Sets `shardSelector`.
    #[must_use]
    pub fn shard(mut self, selector: ShardSelector) -> Self {
        self.shard_selector = Some(selector);
        self
    }

    /// Sets `allowWatchBookmarks`.
    #[must_use]
    pub fn bookmarks(mut self, allow: bool) -> Self {
        self.allow_bookmarks = allow;
        self
    }

    /// Sets `timeoutSeconds`.
    #[must_use]
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Appends this request's parameters to `q` (starting with `watch=1`).
    pub(crate) fn append_to(&self, q: &mut Query) {
        q.push("watch", "1");
        q.opt("labelSelector", self.label_selector.as_deref());
        q.opt("fieldSelector", self.field_selector.as_deref());
        q.opt("resourceVersion", self.resource_version.as_deref());
        q.opt(
            "resourceVersionMatch",
            self.resource_version_match.map(VersionMatch::as_str),
        );
        if self.allow_bookmarks {
            q.push("allowWatchBookmarks", "true");
        }
        if let Some(t) = self.timeout_seconds {
            q.push("timeoutSeconds", &t.to_string());
        }
        if self.send_initial_events {
            q.push("sendInitialEvents", "true");
        }
        if let Some(s) = &self.shard_selector {
            q.push("shardSelector", &s.to_string());
        }
    }

    /// The query string (without `?`).
    #[cfg(test)]
    fn to_query(&self) -> String {
        let mut q = Query::default();
        self.append_to(&mut q);
        q.into_string()
    }
}

/// Parameters of a create or replace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostParams {
    /// `dryRun=All`: validate and admit without persisting.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
}

impl PostParams {
    /// Appends this request's parameters to `q`.
    pub(crate) fn append_to(&self, q: &mut Query) {
        if self.dry_run {
            q.push("dryRun", "All");
        }
        q.opt("fieldManager", self.field_manager.as_deref());
    }
}

/// Parameters of a patch.
///
/// ```
/// use kube_informer::client::params::PatchParams;
///
/// let pp = PatchParams::apply("my-controller").force(); // fieldManager=my-controller&force=true
/// assert!(pp.force && pp.field_manager.as_deref() == Some("my-controller"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchParams {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `force`: take ownership of conflicting fields (server-side apply only).
    pub force: bool,
    /// `fieldManager`: required for server-side apply.
    pub field_manager: Option<String>,
}

impl PatchParams {
    /// Parameters for server-side apply by `manager`.
    pub fn apply(manager: &str) -> Self {
        PatchParams {
            field_manager: Some(manager.to_owned()),
            ..Default::default()
        }
    }

    /// Sets `force=true`.
    #[must_use]
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Appends this request's parameters to `q`.
    pub(crate) fn append_to(&self, q: &mut Query) {
        if self.dry_run {
            q.push("dryRun", "All");
        }
        q.opt("fieldManager", self.field_manager.as_deref());
        if self.force {
            q.push("force", "true");
        }
    }
}

/// A patch body and its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Patch<P: Serialize> {
    /// RFC 7386 JSON merge patch (`application/merge-patch+json`).
    Merge(P),
    /// RFC 6902 JSON patch: an array of operations (`application/json-patch+json`).
    Json(P),
    /// Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
    Strategic(P),
    /// Server-side apply (`application/apply-patch+yaml`; JSON is valid YAML). Needs a field manager.
    Apply(P),
}

impl<P: Serialize> Patch<P> {
    /// The `Content-Type` of this patch.
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
            Patch::Apply(_) => "application/apply-patch+yaml",
        }
    }

    /// The patch document.
    pub fn body(&self) -> &P {
        match self {
            Patch::Merge(p) | Patch::Json(p) | Patch::Strategic(p) | Patch::Apply(p) => p,
        }
    }
}

/// `propagationPolicy` of a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PropagationPolicy {
    /// Delete dependents in the background.
    Background,
    /// Delete dependents first.
    Foreground,
    /// Leave dependents (remove their owner references).
    Orphan,
}

/// Delete preconditions: the delete only happens if the object still has this UID / resourceVersion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// Required UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Required resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// Parameters of a delete (sent as a `DeleteOptions` body).
///
/// ```
/// use kube_informer::client::params::{DeleteParams, Preconditions, PropagationPolicy};
///
/// // Delete this object, not one re-created under its name since it was read.
/// let dp = DeleteParams::default().precondition_uid("5f1c…");
/// assert_eq!(dp.preconditions.unwrap().uid.as_deref(), Some("5f1c…"));
///
/// let dp = DeleteParams::default()
///     .propagation_policy(PropagationPolicy::Foreground)
///     .precondition_resource_version("7")
///     .grace_period_seconds(0);
/// assert_eq!(dp.preconditions.unwrap().resource_version.as_deref(), Some("7"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<u32>,
    /// `propagationPolicy`.
    pub propagation_policy: Option<PropagationPolicy>,
    /// `preconditions`.
    pub preconditions: Option<Preconditions>,
}

/// The JSON body of a delete.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeleteOptions<'a> {
    kind: &'static str,
    api_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    grace_period_seconds: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    propagation_policy: Option<PropagationPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    preconditions: Option<&'a Preconditions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dry_run: Vec<&'static str>,
}

impl DeleteParams {
    /// Deletes only the object with this uid: a 409 Conflict when the name now holds another object (deleted and
    /// re-created since it was read).
    #[must_use]
    pub fn precondition_uid(mut self, uid: impl Into<String>) -> Self {
        self.preconditions.get_or_insert_with(Preconditions::default).uid = Some(uid.into());
        self
    }

    /// Deletes only if the object is still at this resourceVersion: a 409 Conflict when it changed since it was
    /// read.
    #[must_use]
    pub fn precondition_resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.preconditions
            .get_or_insert_with(Preconditions::default)
            .resource_version = Some(resource_version.into());
        self
    }

    /// Sets what becomes of the object's dependents.
    #[must_use]
    pub fn propagation_policy(mut self, policy: PropagationPolicy) -> Self {
        self.propagation_policy = Some(policy);
        self
    }

    /// Sets the grace period (0: at once).
    #[must_use]
    pub fn grace_period_seconds(mut self, seconds: u32) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Asks the server to check the delete without doing it (`dryRun=All`).
    #[must_use]
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The `DeleteOptions` body for this delete.
    pub(crate) fn to_body(&self) -> DeleteOptions<'_> {
        DeleteOptions {
            kind: "DeleteOptions",
            api_version: "v1",
            grace_period_seconds: self.grace_period_seconds,
            propagation_policy: self.propagation_policy,
            preconditions: self.preconditions.as_ref(),
            dry_run: if self.dry_run { vec!["All"] } else { Vec::new() },
        }
    }
}

/// Where a pod log starts ([`LogParams::since`]): one of `sinceSeconds` and `sinceTime`, never both (kube-apiserver
/// refuses the pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSince {
    /// `sinceSeconds`: lines written in the last this many seconds (at least 1).
    Seconds(u64),
    /// `sinceTime`: lines written at or after this time (sent in whole seconds, RFC 3339).
    Time(SystemTime),
}

/// Parameters of a pod log request (core/v1 `PodLogOptions`), for [`Api::logs`](super::Api::logs) and
/// [`Api::log_stream`](super::Api::log_stream).
///
/// ```
/// use kube_informer::client::params::{LogParams, LogSince};
///
/// let lp = LogParams::default().container("app").follow().tail_lines(100).since_seconds(600);
/// assert_eq!((lp.container.as_deref(), lp.follow, lp.tail_lines), (Some("app"), true, Some(100)));
/// assert_eq!(lp.since, Some(LogSince::Seconds(600)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogParams {
    /// `container`: whose log; needed when the pod has more than one container (kube-apiserver answers 400 "a
    /// container name must be specified" otherwise, and 400 "container … is not valid for pod …" for a wrong one).
    pub container: Option<String>,
    /// `follow`: keep the stream open and send lines as the container writes them, until it ends.
    pub follow: bool,
    /// `previous`: the log of the container's previous instance (before its last restart).
    pub previous: bool,
    /// `sinceSeconds` or `sinceTime`: only lines from then on.
    pub since: Option<LogSince>,
    /// `tailLines`: only the last this many lines (of what `since` selects).
    pub tail_lines: Option<u64>,
    /// `timestamps`: each line starts with its RFC 3339 timestamp and a space.
    pub timestamps: bool,
    /// `limitBytes`: at most this many bytes (the log may end mid-line).
    pub limit_bytes: Option<u64>,
}

impl LogParams {
    /// Sets `container`.
    #[must_use]
    pub fn container(mut self, name: &str) -> Self {
        self.container = Some(name.to_owned());
        self
    }

    /// Sets `follow=true`.
    #[must_use]
    pub fn follow(mut self) -> Self {
        self.follow = true;
        self
    }

    /// Sets `previous=true`.
    #[must_use]
    pub fn previous(mut self) -> Self {
        self.previous = true;
        self
    }

    /// Sets `sinceSeconds` (replacing any `since`).
    #[must_use]
    pub fn since_seconds(mut self, seconds: u64) -> Self {
        self.since = Some(LogSince::Seconds(seconds));
        self
    }

    /// Sets `sinceTime` (replacing any `since`).
    #[must_use]
    pub fn since_time(mut self, time: SystemTime) -> Self {
        self.since = Some(LogSince::Time(time));
        self
    }

    /// Sets `tailLines`.
    #[must_use]
    pub fn tail_lines(mut self, lines: u64) -> Self {
        self.tail_lines = Some(lines);
        self
    }

    /// Sets `timestamps=true`.
    #[must_use]
    pub fn timestamps(mut self) -> Self {
        self.timestamps = true;
        self
    }

    /// Sets `limitBytes`.
    #[must_use]
    pub fn limit_bytes(mut self, bytes: u64) -> Self {
        self.limit_bytes = Some(bytes);
        self
    }

    /// Appends this request's parameters to `q`.
    pub(crate) fn append_to(&self, q: &mut Query) {
        q.opt("container", self.container.as_deref());
        if self.follow {
            q.push("follow", "true");
        }
        if self.previous {
            q.push("previous", "true");
        }
        match self.since {
            Some(LogSince::Seconds(s)) => q.push("sinceSeconds", &s.to_string()),
            Some(LogSince::Time(t)) => q.push("sinceTime", &crate::object::time::format_rfc3339(t)),
            None => {}
        }
        if let Some(n) = self.tail_lines {
            q.push("tailLines", &n.to_string());
        }
        if self.timestamps {
            q.push("timestamps", "true");
        }
        if let Some(n) = self.limit_bytes {
            q.push("limitBytes", &n.to_string());
        }
    }
}

/// A query string under construction; values are percent-encoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Query(String);

impl Query {
    /// Appends `key=value` (both percent-encoded).
    pub(crate) fn push(&mut self, key: &str, value: &str) {
        if !self.0.is_empty() {
            self.0.push('&');
        }
        percent_encode_into(&mut self.0, key);
        self.0.push('=');
        percent_encode_into(&mut self.0, value);
    }

    /// Appends `key=value` when `value` is `Some` and non-empty.
    pub(crate) fn opt(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            self.push(key, v);
        }
    }

    /// The query string (without `?`).
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

/// Everything but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`), as Go's `url.QueryEscape` and
/// `url.PathEscape` leave them.
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn percent_encode_into(out: &mut String, s: &str) {
    out.extend(percent_encoding::utf8_percent_encode(s, NOT_UNRESERVED));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_every_log_parameter() {
        let query = |lp: &LogParams| {
            let mut q = Query::default();
            lp.append_to(&mut q);
            q.into_string()
        };
        assert_eq!(query(&LogParams::default()), "");
        let lp = LogParams::default()
            .container("app")
            .follow()
            .previous()
            .since_seconds(30)
            .tail_lines(10)
            .timestamps()
            .limit_bytes(4096);
        assert_eq!(
            query(&lp),
            "container=app&follow=true&previous=true&sinceSeconds=30&tailLines=10&timestamps=true&limitBytes=4096"
        );
        // One `since` at a time: the last one set wins.
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(
            query(&LogParams::default().since_seconds(30).since_time(at)),
            "sinceTime=2023-11-14T22%3A13%3A20Z"
        );
    }

    #[test]
    fn encodes_every_list_parameter() {
        let lp = ListParams::default()
            .labels("a=b")
            .fields("metadata.name=x")
            .limit(500)
            .continue_token("tok/en=")
            .at("12")
            .matching(VersionMatch::NotOlderThan)
            .timeout(30);
        assert_eq!(
            lp.to_query(),
            "labelSelector=a%3Db&fieldSelector=metadata.name%3Dx&limit=500&continue=tok%2Fen%3D&resourceVersion=12&\
             resourceVersionMatch=NotOlderThan&timeoutSeconds=30"
        );
        assert_eq!(ListParams::default().limit(0).to_query(), "");
    }

    #[test]
    fn a_shard_selector_goes_out_as_shard_selector() {
        use crate::selector::ShardField;
        let half = ShardSelector::split(ShardField::Uid, 2, 1).unwrap();
        let want = "shardSelector=shardRange%28object.metadata.uid%2C%20%270x8000000000000000%27%2C%20\
                    %270x10000000000000000%27%29";
        assert_eq!(ListParams::default().shard(half.clone()).to_query(), want);
        let wp = WatchParams::default().shard(half).to_query();
        assert!(wp.starts_with("watch=1&") && wp.ends_with(want), "{wp}");
    }

    #[test]
    fn selectors_given_twice_must_both_match() {
        let lp = ListParams::default()
            .labels("app=web")
            .labels("tier in (a,b)")
            .labels("")
            .fields("a=1");
        assert_eq!(lp.label_selector.as_deref(), Some("app=web,tier in (a,b)"));
        let lp = lp.fields("b!=2");
        assert_eq!(lp.field_selector.as_deref(), Some("a=1,b!=2"));
        let wp = WatchParams::default()
            .labels("app=web")
            .labels("env=prod")
            .fields("a=1")
            .fields("b=2");
        assert_eq!(
            (wp.label_selector.as_deref(), wp.field_selector.as_deref()),
            (Some("app=web,env=prod"), Some("a=1,b=2"))
        );
    }

    #[test]
    fn encodes_watch_parameters_and_streaming_lists() {
        let wp = WatchParams::default().at("1234").bookmarks(true).timeout(300);
        assert_eq!(
            wp.to_query(),
            "watch=1&resourceVersion=1234&allowWatchBookmarks=true&timeoutSeconds=300"
        );
        assert_eq!(
            WatchParams::streaming_list().to_query(),
            "watch=1&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&sendInitialEvents=true"
        );
        let exact = ListParams::default().at("42").matching(VersionMatch::Exact);
        assert_eq!(exact.to_query(), "resourceVersion=42&resourceVersionMatch=Exact");
    }

    #[test]
    fn patch_and_delete_parameters_encode_as_kube_apiserver_reads_them() {
        let mut q = Query::default();
        PatchParams::apply("my-controller").force().append_to(&mut q);
        assert_eq!(q.into_string(), "fieldManager=my-controller&force=true");
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: Some(Preconditions {
                resource_version: Some("7".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&dp.to_body()).unwrap(),
            r#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground","preconditions":{"resourceVersion":"7"}}"#
        );
    }

    #[test]
    fn query_encodes_all_but_unreserved_characters() {
        let mut q = Query::default();
        q.push("labelSelector", "app in (a,b)");
        q.push("x", "ü");
        assert_eq!(q.into_string(), "labelSelector=app%20in%20%28a%2Cb%29&x=%C3%BC");
        let mut q = Query::default();
        q.push("k", "a b&c=d%/ü-._~");
        assert_eq!(q.into_string(), "k=a%20b%26c%3Dd%25%2F%C3%BC-._~");
    }
}
