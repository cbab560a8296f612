//! In-cluster configuration: the service account a pod runs as.
//!
//! client-go's `rest.InClusterConfig`: the API server is `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`,
//! trusted through the service account's `ca.crt`, authenticated by its token file — re-read as kubelet rotates it
//! (bound tokens live one hour by default) — and the default namespace is the pod's.

use std::path::PathBuf;

use super::config::{Config, Credential, Material, Origin};
use crate::{ConfigError, Error, Result};

/// Where kubelet mounts the service account.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// True when the process looks like it runs in a pod (`KUBERNETES_SERVICE_HOST` and `_PORT` are set).
pub(crate) fn is_available() -> bool {
    ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"]
        .iter()
        .all(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// In-cluster settings; the defaults read the real environment and mount, tests point them elsewhere.
#[derive(Clone, Debug)]
pub(crate) struct InCluster {
    pub(crate) host: Option<String>,
    pub(crate) port: Option<String>,
    pub(crate) dir: PathBuf,
}

impl Default for InCluster {
    fn default() -> Self {
        InCluster {
            host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
            port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
            dir: PathBuf::from(SERVICE_ACCOUNT_DIR),
        }
    }
}

impl InCluster {
    pub(crate) fn load(&self) -> Result<Config> {
        let (host, port) = match (self.host.as_deref(), self.port.as_deref()) {
            (Some(h), Some(p)) if !h.is_empty() && !p.is_empty() => (h, p),
            _ => {
                return Err(Error::config(ConfigError::new(
                    "not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set",
                )));
            }
        };
        // An IPv6 service address needs brackets in a URL.
        let url = if host.contains(':') && !host.starts_with('[') {
            format!("https://[{host}]:{port}")
        } else {
            format!("https://{host}:{port}")
        };
        let file_error = |name: &str, e: std::io::Error| {
            Error::config(
                ConfigError::new(format!("cannot read the service account {name}: {e}")).file(self.dir.join(name)),
            )
        };
        let token_path = self.dir.join("token");
        std::fs::metadata(&token_path).map_err(|e| file_error("token", e))?;
        let ca_path = self.dir.join("ca.crt");
        let ca = std::fs::read(&ca_path).map_err(|e| file_error("ca.crt", e))?;
        let namespace = std::fs::read_to_string(self.dir.join("namespace"))
            .ok()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());

        let mut config = Config::new(url).default_namespace(namespace);
        config.cluster_url.origin = Origin::new(None, "KUBERNETES_SERVICE_HOST");
        config.ca_pem = Some(Material {
            value: ca,
            origin: Origin::new(Some(&ca_path), "ca.crt"),
        });
        config.credential = Credential::TokenFile {
            path: Material {
                value: token_path.clone(),
                origin: Origin::new(Some(&token_path), "token"),
            },
            fallback: None,
        };
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_the_service_environment() {
        let ic = InCluster {
            host: None,
            port: Some("443".into()),
            dir: PathBuf::from("/nonexistent"),
        };
        assert!(ic.load().unwrap_err().to_string().contains("KUBERNETES_SERVICE_HOST"));
    }

    #[test]
    fn names_the_missing_file() {
        let ic = InCluster {
            host: Some("10.96.0.1".into()),
            port: Some("443".into()),
            dir: PathBuf::from("/nonexistent/sa"),
        };
        let err = ic.load().unwrap_err().to_string();
        assert!(err.contains("/nonexistent/sa/token"), "{err}");
    }
}
