//! The kubeconfig file the server writes for its clients, in a temporary directory it removes on drop.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::api::util;
use crate::http::tls::ClientIdentity;

/// A directory removed (with its content) on drop.
#[derive(Debug)]
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A new private directory under the system temp dir.
    pub(crate) fn new() -> io::Result<TempDir> {
        let base = std::env::temp_dir();
        for _ in 0..8 {
            let p = base.join(format!(
                "kube-informer-apiserver-{}-{:016x}",
                std::process::id(),
                util::random_u64()
            ));
            let mut b = fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            match b.create(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "could not create a unique temporary directory",
        ))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// What the kubeconfig user authenticates with.
pub(crate) enum Credential<'a> {
    Token(&'a str),
    Certificate(&'a ClientIdentity),
}

/// A YAML scalar: JSON strings are valid YAML double-quoted scalars.
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// A kubeconfig with one cluster, one user and one current context.
pub(crate) fn render(server: &str, ca_pem: Option<&str>, user: &str, credential: &Credential<'_>) -> String {
    let mut cluster = format!("    server: {}\n", quote(server));
    if let Some(ca) = ca_pem {
        cluster.push_str(&format!(
            "    certificate-authority-data: {}\n",
            util::base64_std(ca.as_bytes())
        ));
    }
    let user_fields = match credential {
        Credential::Token(t) => format!("    token: {}\n", quote(t)),
        Credential::Certificate(id) => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            util::base64_std(id.cert_pem.as_bytes()),
            util::base64_std(id.key_pem.as_bytes())
        ),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-informer-test\n  cluster:\n{cluster}users:\n- name: {u}\n  user:\n{user_fields}contexts:\n- name: kube-informer-test\n  context:\n    cluster: kube-informer-test\n    user: {u}\n    namespace: default\ncurrent-context: kube-informer-test\npreferences: {{}}\n",
        u = quote(user),
    )
}

/// Writes `content` to `dir/name`, readable by the owner only.
pub(crate) fn write(dir: &Path, name: &str, content: &str) -> io::Result<PathBuf> {
    let path = dir.join(name);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(&path)?;
    f.write_all(content.as_bytes())?;
    Ok(path)
}

/// Writes `content` to `path` atomically (into a private file beside it, then renamed over it), readable by the
/// owner only: a reader never sees a half-written kubeconfig.
pub(crate) fn write_atomically(path: &Path, content: &str) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let tmp_name = format!(
        ".{}.tmp-{}-{:08x}",
        file.to_string_lossy(),
        std::process::id(),
        util::random_u64() as u32
    );
    let tmp = write(dir, &tmp_name, content)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_kubeconfig_that_parses() {
        let text = render("https://127.0.0.1:1", Some("PEM"), "admin", &Credential::Token("t\"ok"));
        #[derive(serde::Deserialize)]
        struct Cfg {
            #[serde(rename = "current-context")]
            current: String,
            clusters: Vec<serde_json::Value>,
            users: Vec<serde_json::Value>,
        }
        let cfg: Cfg = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(cfg.current, "kube-informer-test");
        assert_eq!(
            cfg.clusters[0]["cluster"]["certificate-authority-data"],
            util::base64_std(b"PEM")
        );
        assert_eq!(cfg.users[0]["user"]["token"], "t\"ok");
    }

    #[test]
    fn writes_atomically_over_an_existing_file() {
        let d = TempDir::new().unwrap();
        let p = d.path().join("config");
        fs::write(&p, "old").unwrap();
        write_atomically(&p, "new").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        let names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config"], "no temporary file left behind");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(write_atomically(&d.path().join("missing/config"), "x").is_err());
    }

    #[test]
    fn temp_dirs_are_removed_on_drop() {
        let d = TempDir::new().unwrap();
        let p = write(d.path(), "f", "x").unwrap();
        assert!(p.exists());
        let dir = d.path().to_owned();
        drop(d);
        assert!(!dir.exists());
    }
}
