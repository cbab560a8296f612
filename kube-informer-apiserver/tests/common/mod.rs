//! Helpers shared by the server's integration tests.

#![allow(dead_code)]

pub mod skip;

use std::time::{Duration, Instant};

/// How long a test waits for something that should happen at once.
pub const WAIT: Duration = Duration::from_secs(20);

/// Polls `cond` until it holds; fails naming `what` at the deadline.
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
    pub fn new(name: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kube-informer-apiserver-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, file: &str) -> std::path::PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file under `tests/fixtures/`.
pub fn fixture(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}
