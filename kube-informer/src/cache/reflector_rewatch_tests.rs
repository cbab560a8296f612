//! Reflector tests of how a watch's end sets the next attempt: a productive watch cut (reset, timed out, gone
//! silent) re-watches at once, however often it happens; failures still step the back-off.

use super::*;

const H: Duration = Duration::from_secs(3600);

/// A rig whose back-off steps are hours long (1 h, 2 h, 4 h, never reset in a test's time): any step taken shows.
fn slow_backoff_rig() -> Rig {
    let mut t = rig(false);
    t.r.backoff = Backoff::new(BackoffConfig {
        initial: H,
        max: 4 * H,
        factor: 2.0,
        reset_after: 24 * H,
    });
    t.script.page(vec![], "10", None);
    assert!(t.r.step(), "listed");
    t
}

/// The `i`-th of the ways a watch's connection goes away (modulo 5).
fn cut(i: usize) -> Error {
    match i % 5 {
        0 => TransportError::new(TransportErrorKind::ConnectionLost, "connection reset by peer").into(),
        1 => TransportError::new(TransportErrorKind::ConnectionLost, "unexpected end of the chunked body").into(),
        2 => TransportError::new(TransportErrorKind::Timeout, "read timed out").into(),
        3 => Error::WatchIdle(Duration::from_secs(300)),
        _ => Error::Decode(Box::new(crate::error::DecodeError {
            offset: 4096,
            kind: DecodeErrorKind::Truncated,
        })),
    }
}

/// Opens the next scripted watch, delivers `event` on it, then ends it with `end`; returns the state reached.
fn watch_then(t: &mut Rig, event: Option<WatchEvent<ConfigMap>>, end: Error) -> String {
    let events = t.script.open_watch();
    assert!(t.r.step(), "watch opened");
    assert_eq!(t.r.state_name(), "Watching(0 events)");
    if let Some(ev) = event {
        events.send(Ok(ev)).unwrap();
        assert!(t.r.step(), "event read");
    }
    events.send(Err(end)).unwrap();
    assert!(t.r.step(), "end read");
    t.r.state_name()
}

#[test]
fn repeated_cuts_of_productive_watches_rewatch_at_once_from_the_last_resource_version() {
    let mut t = slow_backoff_rig();
    // An API server restarted again and again (a rolling upgrade), a load balancer cutting idle connections: each
    // watch delivered something, then its connection went away.
    for round in 0..12u64 {
        let rv = (11 + round).to_string();
        let event = if round % 3 == 2 {
            WatchEvent::Bookmark(Bookmark {
                resource_version: rv.clone(),
                ..Default::default()
            })
        } else {
            WatchEvent::Modified(cm("a", &rv))
        };
        assert_eq!(
            watch_then(&mut t, Some(event), cut(round as usize)),
            "Watch",
            "round {round}: no back-off"
        );
        assert_eq!(t.r.backoff.current_step(), H, "round {round}: no back-off step taken");
        assert!(t.r.backoff.is_fresh(Instant::now()), "round {round}: no failure noted");
    }
    let calls = t.script.take_calls();
    assert_eq!(
        calls.iter().filter(|c| matches!(c, Call::List(_))).count(),
        1,
        "no relist"
    );
    let rvs: Vec<_> = calls.iter().skip(1).map(watch_rv).collect();
    assert_eq!(rvs[0].as_deref(), Some("10"));
    for (round, rv) in rvs.iter().skip(1).enumerate() {
        assert_eq!(
            rv.as_deref(),
            Some((11 + round as u64).to_string().as_str()),
            "from the last version"
        );
    }
    let m = t.r.stats.snapshot();
    assert_eq!(m.watch_restarts, 12);
    assert!(t.r.stats.health.last_error(Instant::now()).is_none(), "never unhealthy");
}

#[test]
fn failures_still_back_off_step_by_step() {
    let mut t = slow_backoff_rig();
    let reset = || cut(0);
    // Cut before any event: a failed attempt (1 h, then 2 h).
    for step in [H, 2 * H] {
        assert_eq!(watch_then(&mut t, None, reset()), "BackingOff(then Watch)");
        let remaining = t.r.backoff_remaining().unwrap();
        assert!(
            remaining > step - Duration::from_secs(60) && remaining <= 2 * step,
            "{remaining:?}"
        );
        t.r.state = State::Watch;
    }
    // A productive watch ended by an error that is not a cut (a 500 ERROR event, garbage on the wire) still steps
    // the back-off (4 h, then 4 h: the cap), as client-go's back-off manager steps after any error.
    for end in [
        api_error(500, "InternalError"),
        Error::Decode(Box::new(crate::error::DecodeError {
            offset: 10,
            kind: DecodeErrorKind::Json("expected value".into()),
        })),
    ] {
        let state = watch_then(&mut t, Some(WatchEvent::Modified(cm("a", "20"))), end);
        assert_eq!(state, "BackingOff(then Watch)");
        let remaining = t.r.backoff_remaining().unwrap();
        assert!(
            remaining > 4 * H - Duration::from_secs(60) && remaining <= 8 * H,
            "{remaining:?}"
        );
        t.r.state = State::Watch;
    }
    // A cut after events in the middle of the streak re-watches at once all the same, and leaves the streak as it
    // was: the next failure takes the next step.
    assert_eq!(
        watch_then(&mut t, Some(WatchEvent::Modified(cm("a", "21"))), reset()),
        "Watch"
    );
    assert_eq!(t.r.backoff.current_step(), 4 * H);
}
