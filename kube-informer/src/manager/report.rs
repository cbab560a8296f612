//! `ShutdownReport`: what a manager's shutdown achieved, and why it happened.

use std::fmt;
use std::process::{ExitCode, Termination};
use std::time::Duration;

/// Why a manager stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopCause {
    /// A signal (`"SIGTERM"`, `"SIGINT"`).
    Signal(&'static str),
    /// [`StopHandle::stop`](super::StopHandle::stop) or [`Manager::shutdown`](super::Manager::shutdown).
    Requested,
}

impl fmt::Display for StopCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopCause::Signal(name) => f.write_str(name),
            StopCause::Requested => f.write_str("stop requested"),
        }
    }
}

/// What a manager's shutdown achieved: [`is_clean`](ShutdownReport::is_clean) when every reconcile finished within
/// the grace period, every Lease held was released and every thread was joined. A program's exit status follows it:
/// return it from `main` ([`Termination`]), or use [`exit_code`](ShutdownReport::exit_code).
///
/// ```
/// # use kube_informer::manager::{ShutdownReport, StopCause};
/// # fn report() -> ShutdownReport { unimplemented!() }
/// # fn main_() -> std::process::ExitCode {
/// let report = report(); // manager.run()?
/// println!("{report}"); // "stopped cleanly (SIGTERM)" or what did not stop
/// report.exit_code()
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Why the manager stopped.
    pub cause: StopCause,
    /// The grace period the reconciles in flight had.
    pub grace_period: Duration,
    /// Controllers whose reconciles were still running when the grace period ended, with how many: their threads
    /// were left detached (they end with the process).
    pub unfinished_reconciles: Vec<(String, usize)>,
    /// Each Lease held at the stop (by its election's name) and whether it was released, so that another replica
    /// leads at once rather than after the lease duration.
    pub leases: Vec<(String, bool)>,
    /// Components whose threads had not ended a second after the grace period (left detached).
    pub stragglers: Vec<String>,
}

impl ShutdownReport {
    /// Every reconcile finished, every Lease held was released, every thread was joined.
    pub fn is_clean(&self) -> bool {
        self.unfinished_reconciles.is_empty()
            && self.leases.iter().all(|(_, released)| *released)
            && self.stragglers.is_empty()
    }
}

impl ShutdownReport {
    /// The process's exit status: success when [`is_clean`](Self::is_clean), failure otherwise.
    pub fn exit_code(&self) -> ExitCode {
        if self.is_clean() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// `main` may return the report (or a `Result` of it): the process exits with its
/// [`exit_code`](ShutdownReport::exit_code), having printed the report on stderr when it is not clean (what did
/// not stop).
///
/// ```no_run
/// use kube_informer::manager::{Manager, ShutdownReport};
///
/// fn main() -> Result<ShutdownReport, Box<dyn std::error::Error>> {
///     let manager = Manager::try_default()?;
///     // manager.add_controller(...)?;
///     Ok(manager.run()?) // until SIGTERM or Ctrl-C; exits 0 when everything stopped cleanly
/// }
/// ```
impl Termination for ShutdownReport {
    fn report(self) -> ExitCode {
        if !self.is_clean() {
            eprintln!("{self}");
        }
        self.exit_code()
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_clean() {
            write!(f, "stopped cleanly ({})", self.cause)?;
        } else {
            write!(f, "stopped ({})", self.cause)?;
        }
        for (name, released) in &self.leases {
            let what = if *released {
                "released"
            } else {
                "NOT released: it expires on its own"
            };
            write!(f, "; lease {name} {what}")?;
        }
        for (name, n) in &self.unfinished_reconciles {
            write!(
                f,
                "; controller {name}: {n} reconcile(s) still running after the {:?} grace period",
                self.grace_period
            )?;
        }
        if !self.stragglers.is_empty() {
            write!(f, "; threads left running: {}", self.stragglers.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_says_what_did_not_stop() {
        let mut r = ShutdownReport {
            cause: StopCause::Signal("SIGTERM"),
            grace_period: Duration::from_secs(30),
            unfinished_reconciles: vec![],
            leases: vec![("kube-system/app".into(), true)],
            stragglers: vec![],
        };
        assert!(r.is_clean());
        assert_eq!(r.exit_code(), ExitCode::SUCCESS);
        assert_eq!(
            r.to_string(),
            "stopped cleanly (SIGTERM); lease kube-system/app released"
        );
        r.unfinished_reconciles.push(("app".into(), 2));
        r.leases[0].1 = false;
        assert!(!r.is_clean());
        assert_eq!(r.exit_code(), ExitCode::FAILURE);
        assert_eq!(
            r.to_string(),
            "stopped (SIGTERM); lease kube-system/app NOT released: it expires on its own; \
             controller app: 2 reconcile(s) still running after the 30s grace period"
        );
    }
}
