//! SIGTERM and SIGINT for a running manager (feature `signals`): one thread, `sig:manager`, turning the first
//! signal into a stop and a second one into the signal's default action.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use crossbeam_channel::Sender;
use log::{info, warn};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use super::StopCause;
use crate::error::{Error, Result};
use crate::thread_name::ThreadName;
use crate::worker::Worker;

/// The signal thread; [`stop_by`](SignalWatch::stop_by) ends and joins it.
pub(crate) struct SignalWatch {
    handle: Handle,
    worker: Worker,
}

impl SignalWatch {
    /// Starts handling SIGTERM and SIGINT: the first sends its [`StopCause`] on `stop`; another one, during the
    /// shutdown, has the signal's default effect (the process ends), as controller-runtime's signal handler does —
    /// an operator pressing Ctrl-C twice means it.
    pub(crate) fn start(stop: Sender<StopCause>) -> Result<SignalWatch> {
        let mut signals = Signals::new([SIGTERM, SIGINT])
            .map_err(|e| Error::InvalidInput(format!("manager: cannot handle SIGTERM and SIGINT: {e}")))?;
        let handle = signals.handle();
        let live = Arc::new(AtomicUsize::new(0));
        let name = ThreadName::new("sig", "manager", "kube-informer/manager/signals");
        let worker = Worker::spawn(name, &live, move || {
            let mut seen = false;
            for signal in signals.forever() {
                let name = if signal == SIGTERM { "SIGTERM" } else { "SIGINT" };
                if seen {
                    warn!("{name} during the shutdown: ending the process now");
                    if let Err(e) = signal_hook::low_level::emulate_default_handler(signal) {
                        warn!("cannot end the process as {name} would ({e}); exiting with status 1");
                    }
                    std::process::exit(1);
                }
                seen = true;
                info!("{name}: shutting down (again to end at once)");
                let _ = stop.send(StopCause::Signal(name));
            }
        })?;
        Ok(SignalWatch { handle, worker })
    }

    /// Stops listening and joins the thread until `deadline`; true when joined.
    pub(crate) fn stop_by(self, deadline: Instant) -> bool {
        self.handle.close();
        self.worker.join_until(deadline)
    }
}
