//! `ManagerOptions`: the grace period, leader election, the probe endpoint, signals, the factory's settings.

use std::fmt;
use std::time::Duration;

use crate::informer::FactoryOptions;
use crate::leaderelection::LeaderElectionConfig;

/// controller-runtime's `GracefulShutdownTimeout` default: how long in-flight reconciles get to finish.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);

/// How a [`Manager`](super::Manager) runs. The defaults follow controller-runtime's manager: a 30 s grace period, no
/// leader election, no probe endpoint, SIGTERM and SIGINT handled.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::manager::ManagerOptions;
///
/// let options = ManagerOptions::default()
///     .leader_election("kube-system", "configmap-sync")
///     .grace_period(Duration::from_secs(10));
/// assert_eq!(options.leader_election.as_ref().unwrap().name, "configmap-sync");
/// assert!(options.handle_signals);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// How long the reconciles in flight at shutdown get to finish; one still running after it is reported and left
    /// detached. Default: [`DEFAULT_GRACE_PERIOD`] (30 s, controller-runtime's). Keep it below the pod's
    /// `terminationGracePeriodSeconds` (30 s by default) less a second, or the kubelet kills the process first.
    pub grace_period: Duration,
    /// Run the controllers only while this replica holds a Lease. Default: none (every replica runs them).
    pub leader_election: Option<ElectionOptions>,
    /// Where to serve `/metrics`, `/healthz` and `/readyz` (feature `probe`): `0.0.0.0:8081` as controller-runtime's
    /// `HealthProbeBindAddress`, port 0 for any. Default: not served.
    #[cfg(feature = "probe")]
    pub probe_addr: Option<String>,
    /// [`run`](super::Manager::run) returns on SIGTERM or SIGINT (feature `signals`, on by default); a second one
    /// during the shutdown ends the process at once, as the signal would have. Default: true. Turn it off when the
    /// program handles signals itself, or runs several managers.
    pub handle_signals: bool,
    /// The settings of the manager's [`SharedInformerFactory`](crate::informer::SharedInformerFactory).
    pub factory: FactoryOptions,
}

/// The Lease a manager's controllers run under.
#[derive(Clone)]
#[non_exhaustive]
pub struct ElectionOptions {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name: the same for every replica of the program.
    pub name: String,
    /// This replica's identity; default: the host name (a pod's name) and a random suffix, as controller-runtime's
    /// `<hostname>_<uuid>`.
    pub identity: Option<String>,
    /// Timing (client-go's 15/10/2 s by default).
    pub config: LeaderElectionConfig,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            grace_period: DEFAULT_GRACE_PERIOD,
            leader_election: None,
            #[cfg(feature = "probe")]
            probe_addr: None,
            handle_signals: true,
            factory: FactoryOptions::default(),
        }
    }
}

impl ManagerOptions {
    /// Sets [`grace_period`](ManagerOptions::grace_period).
    #[must_use]
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace_period = grace;
        self
    }

    /// Runs the controllers only while holding the Lease `namespace/name` (client-go's timing; see
    /// [`leader_election_config`](ManagerOptions::leader_election_config)).
    #[must_use]
    pub fn leader_election(mut self, namespace: &str, name: &str) -> Self {
        let (identity, config) = match self.leader_election.take() {
            Some(e) => (e.identity, e.config),
            None => (None, LeaderElectionConfig::default()),
        };
        self.leader_election = Some(ElectionOptions {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity,
            config,
        });
        self
    }

    /// Sets the timing of the leader election (after [`leader_election`](ManagerOptions::leader_election); alone it
    /// does nothing).
    #[must_use]
    pub fn leader_election_config(mut self, config: LeaderElectionConfig) -> Self {
        if let Some(e) = &mut self.leader_election {
            e.config = config;
        }
        self
    }

    /// Sets this replica's identity in the leader election (after
    /// [`leader_election`](ManagerOptions::leader_election)).
    #[must_use]
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        if let Some(e) = &mut self.leader_election {
            e.identity = Some(identity.into());
        }
        self
    }

    /// Sets [`probe_addr`](ManagerOptions::probe_addr).
    #[cfg(feature = "probe")]
    #[must_use]
    pub fn probe_addr(mut self, addr: impl Into<String>) -> Self {
        self.probe_addr = Some(addr.into());
        self
    }

    /// Sets [`handle_signals`](ManagerOptions::handle_signals).
    #[must_use]
    pub fn handle_signals(mut self, handle: bool) -> Self {
        self.handle_signals = handle;
        self
    }

    /// Sets [`factory`](ManagerOptions::factory).
    #[must_use]
    pub fn factory(mut self, options: FactoryOptions) -> Self {
        self.factory = options;
        self
    }
}

impl fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ManagerOptions");
        d.field("grace_period", &self.grace_period)
            .field("leader_election", &self.leader_election);
        #[cfg(feature = "probe")]
        d.field("probe_addr", &self.probe_addr);
        d.field("handle_signals", &self.handle_signals)
            .field("factory", &self.factory)
            .finish()
    }
}

impl fmt::Debug for ElectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectionOptions")
            .field("lease", &format_args!("{}/{}", self.namespace, self.name))
            .field("identity", &self.identity)
            .field("config", &self.config)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaderelection::default_identity;

    #[test]
    fn identities_differ_between_calls() {
        let (a, b) = (default_identity(), default_identity());
        assert_ne!(a, b);
        assert!(
            a.rsplit_once('_')
                .is_some_and(|(host, id)| !host.is_empty() && id.len() == 16)
        );
    }

    #[test]
    fn election_settings_compose_in_any_order() {
        let cfg = LeaderElectionConfig::default().retry_period(Duration::from_secs(1));
        let o = ManagerOptions::default()
            .leader_election("ns", "lease")
            .identity("me")
            .leader_election_config(cfg);
        let e = o.leader_election.unwrap();
        assert_eq!((e.namespace.as_str(), e.name.as_str()), ("ns", "lease"));
        assert_eq!(e.identity.as_deref(), Some("me"));
        assert_eq!(e.config.retry_period, Duration::from_secs(1));
        // Naming the lease again keeps the identity and timing.
        let again = ManagerOptions::default()
            .leader_election("ns", "a")
            .identity("me")
            .leader_election("ns", "b");
        assert_eq!(again.leader_election.unwrap().identity.as_deref(), Some("me"));
    }
}
