//! Helpers shared by the server's integration tests.

#![allow(dead_code)]

// The helpers both crates' tests share; each test binary uses some of them.
#[allow(unused_imports)]
pub use kube_informer_test_support::{TempDir, WAIT, eventually, skip};

/// A file under `tests/fixtures/`.
pub fn fixture(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}
