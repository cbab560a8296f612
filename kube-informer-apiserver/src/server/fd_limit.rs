//! The soft limit on open file descriptors raised to the hard one, once per process, as Go's runtime does at start
//! (since Go 1.19; kube-apiserver, a Go program, always runs so): each connection holds a descriptor, and a default
//! soft limit of 1,024 would otherwise refuse connections well before the hard limit a system allows.

use std::sync::OnceLock;

/// The soft limit after raising it (`None` where there is no such limit, or it cannot be read).
pub(crate) fn raise() -> Option<u64> {
    static RAISED: OnceLock<Option<u64>> = OnceLock::new();
    *RAISED.get_or_init(raise_now)
}

#[cfg(unix)]
fn raise_now() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current?;
    // An unlimited hard limit (macOS) takes no soft limit above what the kernel opens: stay within a large one.
    let hard = limit.maximum.unwrap_or(1 << 20);
    if hard <= soft {
        return Some(soft);
    }
    match setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: limit.maximum,
        },
    ) {
        Ok(()) => Some(hard),
        Err(e) => {
            log::debug!("embedded API server: cannot raise the open-files limit from {soft} to {hard}: {e}");
            Some(soft)
        }
    }
}

#[cfg(not(unix))]
fn raise_now() -> Option<u64> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let raised = super::raise().unwrap();
        let now = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(now.current, Some(raised));
        assert!(now.maximum.is_none_or(|hard| raised == hard));
        // Once per process: a second call changes nothing.
        assert_eq!(super::raise(), Some(raised));
    }
}
