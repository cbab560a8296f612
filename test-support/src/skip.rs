//! Tests that need a program (kubectl, `sh`, `kill`) or a platform (Linux's `/proc`) a machine may lack ask here
//! first: where it is missing, the test prints why and passes without running — unless
//! `KUBE_INFORMER_REQUIRE_PEERS=1` (what `.ci/run` sets), which turns each skip into a failure, so that CI never
//! skips silently.
//!
//! ```ignore
//! let Some(kubectl) = skip::program("kubectl", "KUBECTL", "compares kubectl's output") else { return };
//! if !skip::on_path("sh", "runs an exec plugin written in sh") { return; }
//! if !skip::linux("reads /proc/self/task") { return; }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

/// Set (to anything but `0` or empty) by CI: a missing program or platform fails the test instead of skipping it.
pub const REQUIRE_PEERS: &str = "KUBE_INFORMER_REQUIRE_PEERS";

/// Skips the calling test — printing `reason` on the process's stderr, which the test harness does not capture —
/// or, under [`REQUIRE_PEERS`], fails it.
fn skip(reason: &str) {
    // The test harness names each test's thread after the test; a binary without the harness runs on `main`.
    let test = match std::thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "a test".to_owned()),
    };
    if std::env::var(REQUIRE_PEERS).is_ok_and(|v| !v.is_empty() && v != "0") {
        panic!("{test}: {reason}; {REQUIRE_PEERS} is set, so this test may not be skipped");
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {reason} (with {REQUIRE_PEERS}=1 this is a failure)"
    );
}

/// The program `name` — at `$env` when that variable is set, else the first executable `name` on `PATH` — or
/// `None` (the test is skipped, saying it needs the program for `purpose`).
pub fn program(name: &str, env: &str, purpose: &str) -> Option<PathBuf> {
    let found = match std::env::var_os(env) {
        Some(path) => Some(PathBuf::from(path)).filter(|p| executable(p)),
        None => std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| executable(p))
        }),
    };
    if found.is_none() {
        let place = match std::env::var_os(env) {
            Some(p) => format!("{env}={}", Path::new(&p).display()),
            None => format!("on PATH (or set {env})"),
        };
        skip(&format!("no `{name}` {place}; it {purpose}"));
    }
    found
}

/// True when the program `name` is on `PATH` (where a test's child process finds it); else false (the test is
/// skipped, saying it needs the program for `purpose`).
pub fn on_path(name: &str, purpose: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(name))));
    if !found {
        skip(&format!("no `{name}` on PATH; it {purpose}"));
    }
    found
}

/// True on Linux; elsewhere false (the test is skipped, saying it needs Linux for `purpose`).
pub fn linux(purpose: &str) -> bool {
    if cfg!(target_os = "linux") {
        return true;
    }
    skip(&format!("needs Linux: it {purpose}"));
    false
}

#[cfg(unix)]
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn executable(path: &Path) -> bool {
    path.is_file() || path.with_extension("exe").is_file()
}
