//! One run of an exec credential plugin's process, bounded: it ends when the plugin exits, when its time is up, or
//! when nobody waits for its credential any more — and in the last two cases the plugin is killed (with every
//! process it started: it runs in a process group of its own) and reaped before the run returns.
//!
//! The plugin's standard error is the process's own (client-go does the same): what a failing plugin prints there
//! reaches the person running the program and never an error's text or a log line, where a token or key it printed
//! could travel further. Standard output, where the credential is, is read by a helper thread and kept in memory
//! only, up to [`MAX_STDOUT`].

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select};

use super::abort::Never;
use crate::clock::deadline::deadline_after;
use crate::thread_name::os_thread_name;

/// The most a plugin may print on standard output (a credential takes a few kilobytes; a certificate chain, tens).
pub(crate) const MAX_STDOUT: usize = 1 << 20;

/// How a run ended.
#[derive(Debug)]
pub(crate) enum RunEnd {
    /// The plugin exited by itself, with what it printed on standard output.
    Exited(ExitStatus, Vec<u8>),
    /// It was still running when its time was up; killed.
    TimedOut,
    /// Nobody waited for its credential any more (every request gave up: a stop, an abort); killed.
    Abandoned,
    /// It printed more than [`MAX_STDOUT`] bytes on standard output; killed.
    TooMuchOutput,
}

/// What the reader thread hands over: standard output up to its end (or `None` when it was too long).
type Output = std::io::Result<Option<Vec<u8>>>;

/// Runs `cmd` (stdin closed, stdout read here, stderr inherited) for at most `timeout` (`Duration::MAX`: no limit),
/// killing it early when `abandoned` disconnects. `reaped` is dropped once the plugin's process has been reaped,
/// whatever the outcome, so that a caller who gave up can wait for the kill to be complete. `name` names the
/// helper thread. An error: the process could not be started.
pub(crate) fn run(
    mut cmd: Command,
    name: &str,
    timeout: Duration,
    abandoned: &Receiver<Never>,
    reaped: Sender<Never>,
) -> std::io::Result<RunEnd> {
    let start = Instant::now();
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn()?;
    let Some(mut stdout) = child.stdout.take() else {
        return Err(std::io::Error::other("the plugin's standard output was not captured"));
    };
    let (out_tx, out_rx) = crossbeam_channel::bounded::<Output>(1);
    let reader = std::thread::Builder::new()
        .name(os_thread_name("exout", name))
        .spawn(move || {
            let mut buf = Vec::new();
            let read = (&mut stdout).take(MAX_STDOUT as u64 + 1).read_to_end(&mut buf);
            let _ = out_tx.send(read.map(|n| (n <= MAX_STDOUT).then_some(buf)));
        });
    let reader = match reader {
        Ok(handle) => handle,
        Err(e) => {
            kill_and_reap(&mut child, reaped);
            return Err(e);
        }
    };
    let timer = if timeout >= crate::clock::deadline::FAR_FUTURE {
        crossbeam_channel::never()
    } else {
        crossbeam_channel::at(deadline_after(start, timeout))
    };
    let end = select! {
        recv(out_rx) -> out => match out {
            Ok(Ok(Some(stdout))) => wait_for_exit(&mut child, &timer, abandoned).map(|status| RunEnd::Exited(status, stdout)),
            Ok(Ok(None)) => Err(RunEnd::TooMuchOutput),
            // Reading failed, or the reader is gone: its exit status says more.
            Ok(Err(_)) | Err(_) => wait_for_exit(&mut child, &timer, abandoned).map(|status| RunEnd::Exited(status, Vec::new())),
        },
        recv(timer) -> _ => Err(RunEnd::TimedOut),
        recv(abandoned) -> _ => Err(RunEnd::Abandoned),
    };
    match end {
        Ok(exited) => {
            drop(reaped);
            let _ = reader.join();
            Ok(exited)
        }
        Err(killed) => {
            kill_and_reap(&mut child, reaped);
            join_reader(reader, &out_rx, name);
            Ok(killed)
        }
    }
}

/// Waits for a plugin that closed its standard output to exit, bounded like the run. It has almost always exited
/// already (closing its output is usually the last thing a process does): a few short polls find it.
fn wait_for_exit(
    child: &mut Child,
    timer: &Receiver<Instant>,
    abandoned: &Receiver<Never>,
) -> Result<ExitStatus, RunEnd> {
    let mut poll = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => {}
            // Cannot be waited for (not ours any more?): kill and reap below, as for a timeout.
            Err(_) => return Err(RunEnd::TimedOut),
        }
        select! {
            recv(timer) -> _ => return Err(RunEnd::TimedOut),
            recv(abandoned) -> _ => return Err(RunEnd::Abandoned),
            default(poll) => {}
        }
        poll = (poll * 2).min(Duration::from_millis(50));
    }
}

/// Kills the plugin and every process of its group, then reaps it and drops `reaped`.
fn kill_and_reap(child: &mut Child, reaped: Sender<Never>) {
    #[cfg(unix)]
    {
        // The group is the plugin's own (`process_group(0)`), named by its pid; the plugin is not reaped yet, so the
        // pid cannot have been reused.
        let group = rustix::process::Pid::from_child(child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(reaped);
}

/// Joins the reader of a killed plugin once its output closed: at once, normally, as the whole group died. A process
/// that left the group (a daemon) and still holds the output open keeps the reader (and only it) until it exits.
fn join_reader(reader: JoinHandle<()>, out: &Receiver<Output>, name: &str) {
    match out.recv_timeout(Duration::from_secs(1)) {
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
            log::debug!("exec plugin {name:?}: killed, but a process outside its group still holds its output open");
        }
        _ => {
            let _ = reader.join();
        }
    }
}
