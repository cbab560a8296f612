//! Thread names: a short one that the operating system shows whole, and the full one that logs use.
//!
//! Linux keeps the first 15 bytes of a thread's name, and `ps -L`, `top -H`, `gdb` and `/proc/<pid>/task/*/comm`
//! show only those: `kube-informer/pods/reflector` and `kube-informer/pods/handler-1` would both read
//! `kube-informer/p`. Each thread is therefore named `<role>:<subject>` within 15 bytes — a short role (`refl`,
//! `proc`, `h2`, `w0`) and the resource or component it works for, shortened to fit (`refl:configmaps`,
//! `h1:deployments`) — while log lines keep the full descriptive name.

/// The bytes of a thread name the OS keeps (Linux: 16 with the terminating NUL).
pub(crate) const OS_NAME_MAX: usize = 15;

/// A thread's two names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ThreadName {
    /// For logs: `kube-informer/configmaps/reflector`.
    pub(crate) full: String,
    /// For the OS, at most [`OS_NAME_MAX`] bytes: `refl:configmaps`.
    pub(crate) short: String,
}

impl ThreadName {
    /// A thread doing `role` (a few letters) for `subject` (a resource or component name), logged as `full`.
    pub(crate) fn new(role: &str, subject: &str, full: impl Into<String>) -> Self {
        ThreadName {
            full: full.into(),
            short: os_thread_name(role, subject),
        }
    }
}

/// `role:subject` within [`OS_NAME_MAX`] bytes. The role is kept whole (cut only if it alone is too long); a subject
/// too long keeps only its last `/`-separated part (`leases/kube-system/my-lock` → `my-lock`), then loses its API
/// group (`deployments.apps` → `deployments`), then its end. Control characters (a NUL would make the thread
/// unnamable) are dropped.
pub(crate) fn os_thread_name(role: &str, subject: &str) -> String {
    let role = printable(role);
    let role = cut(&role, OS_NAME_MAX);
    let budget = OS_NAME_MAX.saturating_sub(role.len() + 1);
    let mut subject = printable(subject);
    if subject.len() > budget
        && let Some((_, last)) = subject.rsplit_once('/')
    {
        subject = last.to_owned();
    }
    if subject.len() > budget
        && let Some((resource, _group)) = subject.split_once('.')
    {
        subject = resource.to_owned();
    }
    let subject = cut(&subject, budget);
    if subject.is_empty() {
        role.to_owned()
    } else {
        format!("{role}:{subject}")
    }
}

fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).collect()
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_in_15_bytes_and_tell_threads_apart() {
        let informer: Vec<String> = ["refl", "proc", "sync", "h1", "h2"]
            .iter()
            .map(|role| os_thread_name(role, "configmaps"))
            .collect();
        assert_eq!(
            informer,
            [
                "refl:configmaps",
                "proc:configmaps",
                "sync:configmaps",
                "h1:configmaps",
                "h2:configmaps"
            ]
        );
        assert_eq!(os_thread_name("refl", "pods"), "refl:pods");
        assert_eq!(
            os_thread_name("refl", "deployments.apps"),
            "refl:deployment",
            "group dropped, then cut"
        );
        assert_eq!(
            os_thread_name("h12", "leases.coordination.k8s.io"),
            "h12:leases",
            "group dropped"
        );
        assert_eq!(
            os_thread_name("w0", "cm.example.com"),
            "w0:cm",
            "the first label of a dotted name"
        );
        assert_eq!(
            os_thread_name("w0", "cm.example"),
            "w0:cm.example",
            "kept whole while it fits"
        );
        assert_eq!(
            os_thread_name("refl", "customresourcedefinitions.apiextensions.k8s.io"),
            "refl:customreso"
        );
        assert_eq!(os_thread_name("delay", ""), "delay");
        assert_eq!(
            os_thread_name("le", "leases/kube-system/my-lock"),
            "le:my-lock",
            "the last part of a path"
        );
        assert_eq!(
            os_thread_name("le", "ns/my-lock"),
            "le:ns/my-lock",
            "whole while it fits"
        );
        assert_eq!(os_thread_name("a-role-far-too-long", "pods"), "a-role-far-too-");
        assert_eq!(os_thread_name("h1", "nul\0and\ncontrol"), "h1:nulandcontro");
        // Multi-byte characters are never split.
        assert_eq!(os_thread_name("refl", "héhéhéhéhé"), "refl:héhéhéh");
        for name in informer {
            assert!(name.len() <= OS_NAME_MAX);
        }
        let t = ThreadName::new("refl", "pods", "kube-informer/pods/reflector");
        assert_eq!(
            (t.short.as_str(), t.full.as_str()),
            ("refl:pods", "kube-informer/pods/reflector")
        );
    }
}
