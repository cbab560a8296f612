//! Helpers shared by the server's integration tests.

#![allow(dead_code)]

// The helpers both crates' tests share; each test binary uses some of them.
#[allow(unused_imports)]
pub use kube_informer_test_support::{TempDir, WAIT, eventually, skip};

// `fixture(path)`: a file under this crate's `tests/fixtures/`.
kube_informer_test_support::define_fixture!();
