//! `/proc/self` readings: RSS, its peak (reset between phases) and the process's CPU time.

use std::fs;

pub(crate) fn status_kb(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resident set size, bytes.
pub(crate) fn rss() -> u64 {
    status_kb("VmRSS:") * 1024
}

/// Peak resident set size since start or the last [`reset_peak`], bytes.
pub(crate) fn peak() -> u64 {
    status_kb("VmHWM:") * 1024
}

/// Resets VmHWM to the current RSS.
pub(crate) fn reset_peak() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// User + system CPU time of the whole process (every thread, live or joined), seconds.
pub(crate) fn cpu() -> f64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at state (field 3).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0) + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    ticks as f64 / clock_ticks() as f64
}

pub(crate) fn clock_ticks() -> u64 {
    // USER_HZ is 100 on every Linux architecture this runs on (getconf CLK_TCK needs libc).
    100
}
