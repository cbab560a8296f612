//! `ApiResource`: where a resource lives on the API server.

use std::fmt::Write as _;

/// Identifies a resource type on the API server and builds its URL paths.
///
/// Core resources live under `/api/v1`, every other group under `/apis/{group}/{version}`; namespaced resources add
/// `/namespaces/{namespace}` before the plural when a namespace is given.
///
/// ```
/// use kube_informer::object::ApiResource;
///
/// let deploy = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
/// assert_eq!(deploy.api_version(), "apps/v1");
/// assert_eq!(deploy.collection_path(Some("prod")), "/apis/apps/v1/namespaces/prod/deployments");
/// assert_eq!(deploy.collection_path(None), "/apis/apps/v1/deployments");
///
/// let nodes = ApiResource::new("", "v1", "Node", "nodes", false);
/// assert_eq!(nodes.object_path(None, "n1"), "/api/v1/nodes/n1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiResource {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group (`v1`).
    pub version: String,
    /// Kind of a single object (`ConfigMap`).
    pub kind: String,
    /// The plural used in URLs (`configmaps`).
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ApiResource {
    /// A resource from its parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
        plural: impl Into<String>,
        namespaced: bool,
    ) -> Self {
        ApiResource {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    /// `v1` for the core group, `{group}/{version}` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `/api/v1` for the core group, `/apis/{group}/{version}` otherwise.
    pub fn base_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection URL path: all namespaces (or cluster-scoped) when `namespace` is `None`.
    ///
    /// A namespace given for a cluster-scoped resource is ignored.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let mut p = self.base_path();
        if let Some(ns) = namespace.filter(|_| self.namespaced) {
            let _ = write!(p, "/namespaces/{ns}");
        }
        let _ = write!(p, "/{}", self.plural);
        p
    }

    /// The URL path of one object.
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        let mut p = self.collection_path(namespace);
        p.push('/');
        p.push_str(name);
        p
    }

    /// `plural.group` (`deployments.apps`), or just the plural for the core group: the name kubectl prints.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The resource with its plural guessed from the kind, as kubectl guesses it when discovery is unavailable
    /// (`Ingress` → `ingresses`, `NetworkPolicy` → `networkpolicies`, `Endpoints` → `endpoints`).
    pub fn from_kind(group: &str, version: &str, kind: &str, namespaced: bool) -> Self {
        ApiResource::new(group, version, kind, guess_plural(kind), namespaced)
    }
}

/// kubectl's `UnsafeGuessKindToResource` rules.
fn guess_plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.is_empty() || lower == "endpoints" {
        return lower;
    }
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s') || lower.ends_with("ch") || lower.ends_with("sh") || lower.ends_with('x') {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_paths_for_core_and_groups() {
        let cm = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
        assert_eq!(cm.api_version(), "v1");
        assert_eq!(cm.collection_path(None), "/api/v1/configmaps");
        assert_eq!(cm.object_path(Some("a"), "b"), "/api/v1/namespaces/a/configmaps/b");
        assert_eq!(cm.qualified_name(), "configmaps");
        let crd = ApiResource::new("example.com", "v1alpha1", "Widget", "widgets", false);
        assert_eq!(
            crd.collection_path(Some("ignored")),
            "/apis/example.com/v1alpha1/widgets"
        );
        assert_eq!(crd.qualified_name(), "widgets.example.com");
    }

    #[test]
    fn guesses_plurals_like_kubectl() {
        for (kind, plural) in [
            ("Pod", "pods"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("Gateway", "gateways"),
            ("Endpoints", "endpoints"),
            ("Mesh", "meshes"),
            ("Box", "boxes"),
        ] {
            assert_eq!(ApiResource::from_kind("", "v1", kind, true).plural, plural, "{kind}");
        }
    }
}
