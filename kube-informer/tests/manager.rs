//! The manager against the embedded API server: the order of its shutdown (work stops being taken, reconciles in
//! flight finish with the caches still there, then the informers stop), a reconcile overrunning the grace period,
//! stop handles, and controllers running only while the replica leads.

mod common;

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use kube_informer::client::{Client, Config};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::informer::SharedIndexInformer;
use kube_informer::leaderelection::{LeaderElectionConfig, Lease};
use kube_informer::manager::{Manager, ManagerOptions, StopCause};
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::ApiServer;

use common::{cm, eventually};

const WAIT: Duration = Duration::from_secs(30);

/// What the test's reconcile tells the test.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// A reconcile of this key began.
    Began(String),
    /// The reconcile of `slow` ended; whether the informer was stopped by then.
    SlowEnded { informer_stopped: bool },
}

/// The reconcile's data: where to report, the informer to look at, and what holds `slow` back.
struct Probe {
    seen: Sender<Seen>,
    informer: Arc<SharedIndexInformer<ConfigMap>>,
    release: Receiver<()>,
}

fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, Probe>) -> kube_informer::Result<Action> {
    let probe = ctx.data();
    let _ = probe.seen.send(Seen::Began(ctx.name().to_owned()));
    if ctx.name() == "slow" {
        // Held until the test lets go (or gives up: the channel closes).
        let _ = probe.release.recv();
        let _ = probe.seen.send(Seen::SlowEnded {
            informer_stopped: probe.informer.is_stopped(),
        });
    }
    Ok(Action::await_change())
}

fn options() -> ManagerOptions {
    // Tests never install a signal handler in the test process.
    ManagerOptions::default().handle_signals(false)
}

/// A manager on `server` with one controller of ConfigMaps; the sender that lets `slow` finish; what the reconcile
/// reports.
/// A manager, its controller, the sender that lets `slow` finish, and what the reconcile reports.
type Setup = (
    Arc<Manager>,
    Arc<Controller<ConfigMap, Probe>>,
    Sender<()>,
    Receiver<Seen>,
);

fn manager_with_controller(server: &ApiServer, options: ManagerOptions) -> Setup {
    let client = Client::new(Config::new(server.url()).proxy(None)).unwrap();
    let manager = Arc::new(Manager::new(client, options).unwrap());
    let informer = manager.factory().informer::<ConfigMap>();
    let (release_tx, release) = bounded(0);
    let (seen, seen_rx) = unbounded();
    let probe = Probe {
        seen,
        informer: informer.clone(),
        release,
    };
    let controller = Controller::builder(informer, probe)
        .options(ControllerOptions::default().name("probe"))
        .build(reconcile)
        .unwrap();
    let controller = manager.add_controller(controller).unwrap();
    (manager, controller, release_tx, seen_rx)
}

fn next(rx: &Receiver<Seen>) -> Seen {
    rx.recv_timeout(WAIT).expect("the reconcile reported")
}

#[test]
fn shutdown_stops_taking_work_then_lets_the_reconcile_in_flight_finish_then_stops_the_informers() {
    let server = ApiServer::start().unwrap();
    let (manager, controller, release, seen) = manager_with_controller(&server, options());
    let informer = manager.factory().informer::<ConfigMap>();
    manager.start().unwrap();
    server.create(&cm("default", "slow", "1")).unwrap();
    assert_eq!(next(&seen), Seen::Began("slow".into()));

    // The shutdown begins while `slow` is being reconciled: it waits for it.
    let shutting_down = {
        let manager = manager.clone();
        std::thread::spawn(move || manager.shutdown())
    };
    eventually("the controller to stop taking work", || !controller.is_running());
    // 1. No more work: a change now reaches the cache, but no reconcile.
    server.create(&cm("default", "late", "1")).unwrap();
    eventually("the informer to see the late change", || {
        informer.lister().namespace("default").get("late").is_some()
    });
    assert!(!informer.is_stopped(), "the informers run while reconciles finish");
    // 2. The reconcile in flight finishes, the caches still filled.
    release.send(()).unwrap();
    assert_eq!(
        next(&seen),
        Seen::SlowEnded {
            informer_stopped: false
        }
    );
    // 3. Then the rest stops.
    let report = shutting_down.join().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.cause, StopCause::Requested);
    assert!(informer.is_stopped());
    assert_eq!(informer.running_threads(), 0);
    assert_eq!(controller.running_workers(), 0);
    assert!(
        seen.try_iter().all(|s| s != Seen::Began("late".into())),
        "late was never reconciled"
    );
    // Stopped for good; asking again gives the same report.
    assert_eq!(manager.shutdown(), report);
    assert!(matches!(manager.start(), Err(kube_informer::Error::Stopped)));
}

#[test]
fn a_reconcile_that_overruns_the_grace_period_is_reported_not_waited_for() {
    let server = ApiServer::start().unwrap();
    let (manager, controller, release, seen) =
        manager_with_controller(&server, options().grace_period(Duration::from_millis(200)));
    manager.start().unwrap();
    server.create(&cm("default", "slow", "1")).unwrap();
    assert_eq!(next(&seen), Seen::Began("slow".into()));

    // `slow` is held until after the shutdown returns: the shutdown cannot wait for it.
    let report = manager.shutdown();
    assert!(!report.is_clean());
    assert_eq!(report.unfinished_reconciles, [("probe".to_owned(), 1)], "{report}");
    assert!(
        report
            .to_string()
            .contains("controller probe: 1 reconcile(s) still running"),
        "{report}"
    );
    // Everything else stopped regardless.
    assert!(manager.factory().informer::<ConfigMap>().is_stopped());
    // The detached reconcile ends on its own once let go.
    release.send(()).unwrap();
    assert_eq!(next(&seen), Seen::SlowEnded { informer_stopped: true });
    eventually("the detached worker to end", || controller.running_workers() == 0);
}

#[test]
fn run_returns_on_a_stop_handle_and_controllers_join_before_it_starts() {
    let server = ApiServer::start().unwrap();
    let (manager, controller, _release, seen) = manager_with_controller(&server, options());
    let stop = manager.stop_handle();
    let running = {
        let manager = manager.clone();
        std::thread::spawn(move || manager.run())
    };
    server.create(&cm("default", "one", "1")).unwrap();
    assert_eq!(next(&seen), Seen::Began("one".into()));
    assert!(
        controller.is_running() && manager.is_leader(),
        "no election: always leading"
    );
    // Controllers are added before the start.
    let another = Controller::builder(manager.factory().informer::<ConfigMap>(), ())
        .build(|_: &str, _: &Context<'_, ConfigMap, ()>| Ok::<_, kube_informer::Error>(Action::await_change()))
        .unwrap();
    assert!(manager.add_controller(another).is_err());
    stop.stop();
    let report = running.join().unwrap().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.cause, StopCause::Requested);
    assert_eq!(report.to_string(), "stopped cleanly (stop requested)");
    assert!(!controller.is_running());
}

#[test]
fn under_leader_election_only_the_leader_reconciles_and_its_shutdown_hands_the_lease_over_at_once() {
    let server = ApiServer::start().unwrap();
    // A long lease: a new leader within WAIT proves the old one released it.
    let election = |id: &str| {
        options()
            .leader_election("default", "probe-lease")
            .identity(id)
            .leader_election_config(
                LeaderElectionConfig::default()
                    .lease_duration(Duration::from_secs(60))
                    .renew_deadline(Duration::from_secs(40))
                    .retry_period(Duration::from_millis(100)),
            )
    };
    let (first, first_controller, _r1, first_seen) = manager_with_controller(&server, election("first"));
    first.start().unwrap();
    eventually("first to lead", || first.is_leader());
    let (second, second_controller, _r2, second_seen) = manager_with_controller(&server, election("second"));
    second.start().unwrap();
    assert_eq!(second.identity(), Some("second"));

    server.create(&cm("default", "one", "1")).unwrap();
    assert_eq!(next(&first_seen), Seen::Began("one".into()));
    assert!(first_controller.is_running());
    assert!(
        !second.is_leader() && !second_controller.is_running(),
        "a standby does not reconcile"
    );
    // The standby's informers run (a hot standby).
    eventually("the standby's cache to follow", || {
        let informer = second.factory().informer::<ConfigMap>();
        informer.lister().namespace("default").get("one").is_some()
    });

    let report = first.shutdown();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.leases, [("default/probe-lease".to_owned(), true)], "{report}");
    eventually("second to lead", || second.is_leader());
    assert!(second_controller.is_running());
    // The second leader reconciles what is there (a new term queues every key).
    assert_eq!(next(&second_seen), Seen::Began("one".into()));
    let lease: Lease = server.get(Some("default"), "probe-lease").unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("second"));
    assert_eq!(lease.spec.lease_transitions, Some(1));

    let report = second.shutdown();
    assert!(report.is_clean(), "{report}");
    let lease: Lease = server.get(Some("default"), "probe-lease").unwrap();
    assert_eq!(
        lease.spec.holder_identity.as_deref(),
        Some(""),
        "released by the last leader"
    );
    assert!(
        first_seen.try_iter().next().is_none(),
        "the stopped replica reconciled nothing more"
    );
}

#[test]
fn a_controller_over_the_managers_own_informers_runs_and_its_report_is_the_exit_status() {
    let server = ApiServer::start().unwrap();
    server.create(&cm("default", "a", "1")).unwrap();
    let manager = Manager::new(server.client().unwrap(), options()).unwrap();
    let (tx, rx) = unbounded();
    // The primary's informer is the manager's own (its factory's), as is the client its reconciles write through.
    let controller = manager
        .controller::<ConfigMap, _>(tx)
        .build(|_key, ctx: &Context<'_, ConfigMap, Sender<String>>| {
            let written = ctx.client().is_ok();
            let _ = ctx.data().send(format!("{} {written}", ctx.name()));
            Ok::<_, kube_informer::Error>(Action::await_change())
        })
        .unwrap();
    assert!(Arc::ptr_eq(
        &manager.informer::<ConfigMap>(),
        &manager.factory().informer::<ConfigMap>()
    ));
    manager.add_controller(controller).unwrap();
    let stop = manager.stop_handle();
    let run = std::thread::spawn(move || manager.run().unwrap());
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), "a true");
    stop.stop();
    let report = run.join().unwrap();
    assert_eq!(report.exit_code(), std::process::ExitCode::SUCCESS, "{report}");
}
