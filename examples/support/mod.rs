//! What the controller examples share (not an example itself: cargo builds only `examples/*.rs` and
//! `examples/*/main.rs`).

use std::io::BufRead;
use std::time::Duration;

/// Blocks until Enter is pressed, stdin closes, or `run_for` passes. The thread reading stdin (`<name>/stdin`) is
/// left to the process's exit: a read of stdin cannot be interrupted.
pub fn wait_for_exit(name: &str, run_for: Option<Duration>) {
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    let _stdin = std::thread::Builder::new()
        .name(format!("{name}/stdin"))
        .spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            let _ = tx.send(());
        });
    println!("running; press Enter to stop");
    match run_for {
        Some(d) => {
            let _ = rx.recv_timeout(d);
        }
        None => {
            let _ = rx.recv();
        }
    }
}
