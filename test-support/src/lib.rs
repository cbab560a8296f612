//! What the tests of both crates share, written once: [`skip`] (a test that needs a program or platform a machine
//! may lack), [`eventually`] (a condition polled until a deadline), [`TempDir`] (a scratch folder) and [`tls`] (a
//! TLS handshake done in memory), [`rust_files`] (the sources a layering test reads), [`fixture_in`] and
//! [`define_fixture!`] (a file under a crate's `tests/fixtures/`). A dev-dependency only, never published; each crate's
//! `tests/common` adds what only its own tests need.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod skip;
pub mod tls;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen at once.
pub const WAIT: Duration = Duration::from_secs(20);

/// Polls `cond` until it holds; fails naming `what` at the deadline ([`WAIT`]).
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        // A condition, polled; the sleep only keeps the poll off the CPU the awaited threads need.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A scratch folder removed on drop; unique per process and call.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// A new, empty folder `kube-informer-<name>-<pid>-<n>` under the system's temporary folder.
    pub fn new(name: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kube-informer-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The path of `file` in the folder.
    pub fn path(&self, file: &str) -> std::path::PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Appends the `.rs` files under `dir`, its subfolders' included, to `out`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The path of `path` under `tests/fixtures/` of the crate whose manifest folder is `manifest_dir`.
pub fn fixture_in(manifest_dir: &str, path: &str) -> PathBuf {
    Path::new(manifest_dir).join("tests/fixtures").join(path)
}

/// Defines `pub fn fixture(path: &str) -> PathBuf`, a file under `tests/fixtures/` of the crate whose tests call it:
/// [`fixture_in`] with that crate's `CARGO_MANIFEST_DIR`, which `env!` reads where the macro is expanded (in the
/// calling crate, not here). Each crate's `tests/common` invokes it once.
#[macro_export]
macro_rules! define_fixture {
    () => {
        /// A file under `tests/fixtures/`.
        pub fn fixture(path: &str) -> ::std::path::PathBuf {
            $crate::fixture_in(env!("CARGO_MANIFEST_DIR"), path)
        }
    };
}
