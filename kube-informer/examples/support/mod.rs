//! What the controller examples share (not an example itself: cargo builds only `examples/*.rs` and
//! `examples/*/main.rs`).

use std::io::BufRead;
use std::time::Duration;

use kube_informer::Error;
use kube_informer::client::Config;
use kube_informer_apiserver::ApiServer;

/// Where an example works: the cluster of a kubeconfig (`--kubeconfig`, `--context`), or else an embedded API server
/// started here, returned so that it lives as long as the caller keeps it. With a kubeconfig nothing of the embedded
/// server runs.
pub fn connect(kubeconfig: Option<&str>, context: Option<&str>) -> Result<(Option<ApiServer>, Config), Error> {
    match kubeconfig {
        Some(path) => Ok((None, Config::from_kubeconfig_file(path, context)?)),
        None => {
            let server = ApiServer::start()?;
            let config = Config::from_kubeconfig_file(server.kubeconfig_path(), None)?.proxy(None);
            Ok((Some(server), config))
        }
    }
}

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
