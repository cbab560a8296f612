//! [`ApiServer`]: the handle of a running server and its control API for Rust tests (the store, faults, the
//! request log, listening, restarts and shutdown); [`builder`](super::builder) starts one.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::faults::Fault;
use super::kubeconfig::{self, Credential, TempDir};
use super::serving::{restart, start_listening, stop_listening, stop_serving};
use super::shared::Shared;
use crate::http::log::RequestLog;
use crate::http::tls::ClientIdentity;
use crate::registry::bootstrap;
use crate::registry::resource::ResourceSpec;
use kube_informer::Error;

/// The user of [`ApiServerBuilder::rbac`](crate::ApiServerBuilder::rbac)'s kubeconfig and [`ApiServer::client`]: in `system:masters`, so allowed
/// everything, as a kubeadm cluster's `admin.conf`.
pub const ADMIN_USER: &str = "system:admin";

/// An in-process Kubernetes API server on 127.0.0.1, for tests, examples and benchmarks. See the
/// [crate documentation](crate) for what it serves and how faithfully.
///
/// Stops on [`shutdown`](Self::shutdown) or drop; every thread it started is joined by then.
pub struct ApiServer {
    pub(super) shared: Arc<Shared>,
    pub(super) url: String,
    pub(super) tokens: Vec<(String, String)>,
    pub(super) identities: HashMap<String, ClientIdentity>,
    /// Owns the kubeconfig files; removed on drop.
    pub(super) dir: TempDir,
    /// In `dir`, or where [`ApiServerBuilder::kubeconfig_out`](crate::ApiServerBuilder::kubeconfig_out) asked (then kept after stop).
    pub(super) kubeconfig: PathBuf,
    pub(super) kubeconfig_user: String,
    pub(super) compactor: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url)
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

impl ApiServer {
    /// `http://127.0.0.1:PORT` or `https://…` (loopback when listening on every interface).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address clients connect to (the listening address, or loopback when listening on every interface).
    pub fn addr(&self) -> SocketAddr {
        self.shared.client_addr
    }

    /// The address listened on (`0.0.0.0:PORT` when listening on every interface).
    pub fn listen_addr(&self) -> SocketAddr {
        self.shared.listen_addr
    }

    /// The CA certificate (PEM) clients must trust, for HTTPS servers.
    pub fn ca_pem(&self) -> Option<&str> {
        self.shared.pki.as_ref().map(|p| p.ca_pem.as_str())
    }

    /// A kubeconfig for this server (cluster, user, context, current-context), removed when the server drops —
    /// unless it was written where [`ApiServerBuilder::kubeconfig_out`](crate::ApiServerBuilder::kubeconfig_out) asked.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Writes a kubeconfig whose user is `user` (its token or client certificate; a placeholder token when the
    /// user has neither) and returns its path.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn kubeconfig_for(&self, user: &str) -> Result<PathBuf, Error> {
        let placeholder = "kube-informer-unauthenticated";
        let credential = match (self.identities.get(user), self.tokens.iter().find(|(_, u)| u == user)) {
            (_, Some((t, _))) => Credential::Token(t),
            (Some(id), None) => Credential::Certificate(id),
            (None, None) => Credential::Token(placeholder),
        };
        let text = kubeconfig::render(&self.url, self.ca_pem(), user, &credential);
        let name = format!("kubeconfig-{}", user.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        kubeconfig::write(self.dir.path(), &name, &text)
            .map_err(|e| Error::InvalidInput(format!("writing kubeconfig: {e}")))
    }

    /// Writes a kubeconfig for `user` authenticated by `token` (a service account's) and returns its path.
    pub(crate) fn kubeconfig_with_token(&self, user: &str, token: &str) -> Result<PathBuf, Error> {
        let text = kubeconfig::render(&self.url, self.ca_pem(), user, &Credential::Token(token));
        let name = format!("kubeconfig-{}", user.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        kubeconfig::write(self.dir.path(), &name, &text)
            .map_err(|e| Error::InvalidInput(format!("writing kubeconfig: {e}")))
    }

    /// A client configuration for this server, with the credentials of its kubeconfig user and **no client-side
    /// rate limit** ([`Config::no_rate_limit`](kube_informer::client::Config::no_rate_limit)): the library's default
    /// (client-go's 5 requests per second, bursts of 10) would make a test that creates a thousand objects take
    /// minutes. A test of rate limiting sets one with
    /// [`Config::rate_limit`](kube_informer::client::Config::rate_limit).
    ///
    /// # Errors
    /// When the kubeconfig cannot be read back (its directory was removed from under the server).
    pub fn config(&self) -> Result<kube_informer::client::Config, Error> {
        Ok(kube_informer::client::Config::from_kubeconfig_file(&self.kubeconfig, None)?.no_rate_limit())
    }

    /// A client for this server ([`config`](Self::config): no client-side rate limit).
    ///
    /// # Errors
    /// As [`config`](Self::config), or when the client cannot be built.
    pub fn client(&self) -> Result<kube_informer::client::Client, Error> {
        kube_informer::client::Client::new(self.config()?)
    }

    /// The user whose credentials [`kubeconfig_path`](Self::kubeconfig_path) holds.
    pub fn kubeconfig_user(&self) -> &str {
        &self.kubeconfig_user
    }

    /// The bearer token configured for `user` ([`ApiServerBuilder::token`](crate::ApiServerBuilder::token)).
    pub fn token_for(&self, user: &str) -> Option<&str> {
        self.tokens.iter().find(|(_, u)| u == user).map(|(t, _)| t.as_str())
    }

    /// The client certificate and key issued for `user` by [`ApiServerBuilder::client_cert`](crate::ApiServerBuilder::client_cert).
    pub fn client_identity(&self, user: &str) -> Option<&ClientIdentity> {
        self.identities.get(user)
    }

    /// Issues a new client certificate for `user` with `groups` (`O=`), signed by the server's CA. `None` for an
    /// HTTP server.
    pub fn issue_client_cert(&self, user: &str, groups: &[&str]) -> Option<ClientIdentity> {
        self.shared.pki.as_ref()?.issue_client(user, groups).ok()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    // ----- store control -----

    /// The latest resourceVersion (etcd revision).
    pub fn revision(&self) -> u64 {
        self.shared.store.lock().rev()
    }

    /// Compacts to `revision` (at most the latest): lists at older revisions and continue tokens made before it
    /// get 410 Expired, watches from before it get the 410 ERROR event. Returns the compaction revision.
    pub fn compact(&self, revision: u64) -> u64 {
        let r = self.shared.store.lock().compact(revision);
        self.shared.store.notify();
        r
    }

    /// Compacts to the latest revision.
    pub fn compact_to_latest(&self) -> u64 {
        self.compact(u64::MAX)
    }

    /// Creates namespace `name` (nothing when it exists): objects can only be created in a namespace that exists,
    /// as on a cluster.
    ///
    /// # Errors
    /// [`Error::Api`] when the name is not a valid namespace name, or the namespace is being deleted.
    pub fn create_namespace(&self, name: &str) -> Result<(), Error> {
        bootstrap::namespace(&self.shared.store, name).map_err(Error::Api)
    }

    /// Serves one more resource from now on (or replaces a served one's spec, keeping its objects).
    pub fn register(&self, spec: impl Into<ResourceSpec>) {
        self.shared.store.lock().register(spec.into());
    }

    /// Changes the bookmark interval of every watch, running ones included.
    pub fn set_bookmark_interval(&self, interval: Duration) {
        self.shared.set_bookmark_interval(interval);
    }

    /// Turns streaming lists (`sendInitialEvents`) on or off.
    pub fn set_watch_list_enabled(&self, enabled: bool) {
        self.shared.set_watch_list(enabled);
    }

    /// Turns the `ShardedListAndWatch` feature gate on or off for the requests that follow (running watches keep the
    /// selector they started with).
    pub fn set_sharded_list_and_watch_enabled(&self, enabled: bool) {
        self.shared.set_sharded_list_and_watch(enabled);
    }

    // ----- faults and observation -----

    /// Queues a fault for the next request(s) it matches.
    pub fn inject(&self, fault: Fault) {
        self.shared.faults.push(fault);
    }

    /// Drops pending faults and ends every stall waiting to be cleared.
    pub fn clear_faults(&self) {
        self.shared.faults.clear();
    }

    /// Faults not yet used up.
    pub fn pending_faults(&self) -> usize {
        self.shared.faults.pending()
    }

    /// The request log.
    pub fn requests(&self) -> &RequestLog {
        &self.shared.log
    }

    fn resource_id(&self, resource: &str) -> Option<String> {
        let g = self.shared.store.lock();
        g.specs()
            .into_iter()
            .find(|s| s.api.plural == resource || s.id() == resource)
            .map(|s| s.id())
    }

    /// Watches currently streaming `resource` (plural or `plural.group`).
    pub fn watchers(&self, resource: &str) -> usize {
        self.resource_id(resource)
            .map_or(0, |id| self.shared.store.lock().watchers(&id))
    }

    /// Connections being served now (each holds a thread and one file descriptor until the client leaves, a
    /// timeout drops it, or the server stops).
    pub fn connections(&self) -> usize {
        self.shared.conns.lock().live.len()
    }

    /// Waits until at least `n` watches stream `resource`; returns whether they did within `timeout`. Once it
    /// returns true, every later write reaches those watchers.
    pub fn wait_for_watchers(&self, resource: &str, n: usize, timeout: Duration) -> bool {
        let Some(id) = self.resource_id(resource) else {
            return n == 0;
        };
        let deadline = crate::api::util::deadline_after(timeout);
        let mut g = self.shared.store.lock();
        loop {
            if g.watchers(&id) >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.shared.store.wait_until(&mut g, deadline);
        }
    }

    // ----- lifecycle -----

    pub(super) fn spawn_compactor(&self, interval: Duration) -> io::Result<()> {
        let shared = self.shared.clone();
        let handle = thread::Builder::new().name("srv:compactor".to_owned()).spawn(move || {
            let (stop, wake) = &shared.timer;
            let mut previous = shared.store.lock().rev();
            let mut stopped = stop.lock();
            loop {
                let deadline = crate::api::util::deadline_after(interval);
                while !*stopped && Instant::now() < deadline {
                    wake.wait_until(&mut stopped, deadline);
                }
                if *stopped {
                    return;
                }
                let now = shared.store.lock().rev();
                shared.store.lock().compact(previous);
                shared.store.notify();
                previous = now;
            }
        })?;
        *self.compactor.lock() = Some(handle);
        Ok(())
    }

    /// Cuts every connection and stops listening: new connections are refused until
    /// [`start_listening`](Self::start_listening). The stored state is kept.
    pub fn stop_listening(&self) {
        stop_listening(&self.shared, None);
    }

    /// Listens again on the same port (after [`stop_listening`](Self::stop_listening)); does nothing when
    /// listening.
    ///
    /// # Errors
    /// When the port cannot be bound again.
    pub fn start_listening(&self) -> io::Result<()> {
        start_listening(&self.shared)
    }

    /// A restart: every connection cut, the state kept, listening again on the same port at once.
    ///
    /// # Errors
    /// When the port cannot be bound again.
    pub fn restart(&self) -> io::Result<()> {
        restart(&self.shared, None, None)
    }

    /// A restart during which the server is down: every connection cut, connections refused for `down`, then
    /// listening again on the same port. Returns at once; a timer thread (joined on shutdown) brings it back.
    ///
    /// # Errors
    /// When the timer thread cannot be started.
    pub fn restart_refusing_for(&self, down: Duration) -> io::Result<()> {
        restart(&self.shared, Some(down), None)
    }

    /// Stops the server and joins all its threads (also done on drop).
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::Release);
        {
            let (stop, wake) = &self.shared.timer;
            *stop.lock() = true;
            wake.notify_all();
        }
        if let Some(h) = self.compactor.lock().take() {
            let _ = h.join();
        }
        for h in std::mem::take(&mut *self.shared.restarts.lock()) {
            let _ = h.join();
        }
        stop_serving(&self.shared, None);
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpStream;

    use super::*;

    #[test]
    fn servers_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ApiServer>();
        shareable::<RequestLog>();
    }

    #[test]
    fn shutdown_joins_every_thread_even_with_a_stalled_watch_and_an_idle_connection() {
        let server = ApiServer::start().unwrap();
        server.inject(Fault::watch("configmaps").stall_after_events(0));
        let mut watch = TcpStream::connect(server.addr()).unwrap();
        watch
            .write_all(b"GET /api/v1/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        assert!(server.wait_for_watchers("configmaps", 1, Duration::from_secs(20)));
        let _idle = TcpStream::connect(server.addr()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.shared.conns.lock().live.len() < 2 {
            assert!(Instant::now() < deadline, "the idle connection was never accepted");
            thread::yield_now();
        }
        server.shutdown();
        assert!(server.shared.acceptor.lock().is_none() && server.compactor.lock().is_none());
        assert!(server.shared.restarts.lock().is_empty());
        let conns = server.shared.conns.lock();
        assert!(conns.threads.is_empty() && conns.live.is_empty());
        drop(conns);
        // Every thread held a handle on the shared state: they are all gone.
        assert_eq!(Arc::strong_count(&server.shared), 1);
        server.shutdown();
    }
}
