//! Authentication at request time: the `Authorization` header of each request, and what to do after a 401.
//!
//! * fixed token / basic auth: the same header every time;
//! * token file: re-read when its modification time or length changes (checked at most once a second) and after a
//!   401 — kubelet rewrites bound service-account tokens well before they expire;
//! * exec plugin: the cached credential until it expires, a fresh one after a 401 (see [`exec`](super::exec)); a
//!   client certificate it issues goes to the TLS layer's [`ClientCertSlot`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use log::debug;
use parking_lot::Mutex;

use super::abort::CancelSignal;
use super::config::{Credential, Material};
use super::exec::ExecAuth;
use super::secret::{Secret, base64_encode};
use super::tls::ClientCertSlot;
use crate::{Error, Result};

/// How often a token file's metadata is checked.
const TOKEN_FILE_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Produces the `Authorization` header of each request; shared by every clone and isolated copy of a client.
pub(crate) enum Authenticator {
    None,
    /// A header that never changes (fixed token, basic auth).
    Fixed(Secret),
    TokenFile(TokenFile),
    Exec {
        exec: Arc<ExecAuth>,
        identity: Arc<ClientCertSlot>,
    },
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Authenticator::None => f.write_str("Authenticator::None"),
            Authenticator::Fixed(_) => f.write_str("Authenticator::Fixed(<redacted>)"),
            Authenticator::TokenFile(t) => write!(f, "Authenticator::TokenFile({})", t.path.display()),
            Authenticator::Exec { exec, .. } => write!(f, "Authenticator::Exec({exec:?})"),
        }
    }
}

/// Which credential a request used, to invalidate exactly that one after a 401.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Used {
    Nothing,
    Fixed,
    TokenFile(Secret),
    Exec(u64),
}

/// The header to send and the credential it came from.
pub(crate) struct Authorization {
    pub(crate) header: Option<Secret>,
    pub(crate) used: Used,
}

impl Authenticator {
    /// The authenticator for a configured credential.
    pub(crate) fn new(credential: &Credential, exec: Option<Arc<ExecAuth>>, identity: &Arc<ClientCertSlot>) -> Self {
        match credential {
            Credential::None => Authenticator::None,
            Credential::Token(t) => Authenticator::Fixed(bearer(t.value.expose())),
            Credential::Basic { username, password } => {
                let mut raw = username.as_bytes().to_vec();
                raw.push(b':');
                raw.extend_from_slice(password.expose());
                Authenticator::Fixed(Secret::from(format!("Basic {}", base64_encode(&raw))))
            }
            Credential::TokenFile { path, fallback } => {
                Authenticator::TokenFile(TokenFile::new(path, fallback.clone()))
            }
            Credential::Exec(_) => match exec {
                Some(exec) => Authenticator::Exec {
                    exec,
                    identity: Arc::clone(identity),
                },
                None => Authenticator::None,
            },
        }
    }

    /// The header for the next request. May run an exec plugin (giving up with `Error::Stopped` on `cancel`, and
    /// with an error at `deadline`, leaving the plugin to finish for the requests that follow).
    pub(crate) fn authorize(&self, cancel: &CancelSignal, deadline: Option<Instant>) -> Result<Authorization> {
        Ok(match self {
            Authenticator::None => Authorization {
                header: None,
                used: Used::Nothing,
            },
            Authenticator::Fixed(h) => Authorization {
                header: Some(h.clone()),
                used: Used::Fixed,
            },
            Authenticator::TokenFile(t) => {
                let header = t.header()?;
                Authorization {
                    header: Some(header.clone()),
                    used: Used::TokenFile(header),
                }
            }
            Authenticator::Exec { exec, identity } => {
                let cred = exec.credential(cancel, deadline)?;
                if let Some(key) = &cred.identity
                    && !identity.holds(key)
                {
                    identity.set(Some(Arc::clone(key)));
                }
                Authorization {
                    header: cred.token.as_ref().map(|t| bearer(t.expose())),
                    used: Used::Exec(cred.generation),
                }
            }
        })
    }

    /// A request that used `used` got a 401: drop that credential. Returns true when a retry may succeed (a
    /// different credential is now available or will be fetched).
    pub(crate) fn unauthorized(&self, used: &Used) -> bool {
        match (self, used) {
            (Authenticator::TokenFile(t), Used::TokenFile(old)) => t.refresh_after_401(old),
            (Authenticator::Exec { exec, .. }, Used::Exec(generation)) => {
                exec.invalidate(*generation);
                true
            }
            _ => false,
        }
    }
}

/// `Bearer <token>`.
fn bearer(token: &[u8]) -> Secret {
    let mut h = b"Bearer ".to_vec();
    h.extend_from_slice(token);
    Secret::new(h)
}

/// A token file and the header made from its last content.
pub(crate) struct TokenFile {
    path: PathBuf,
    /// A token written beside `tokenFile` in the kubeconfig: used when the file cannot be read.
    fallback: Option<Secret>,
    state: Mutex<TokenFileState>,
}

#[derive(Default)]
struct TokenFileState {
    /// `Bearer <token>` from the last successful read.
    header: Option<Secret>,
    /// When the metadata was last checked; `None` forces a check.
    checked: Option<Instant>,
    /// Modification time and length at the last read.
    stamp: Option<(Option<SystemTime>, u64)>,
}

impl TokenFile {
    fn new(path: &Material<PathBuf>, fallback: Option<Secret>) -> Self {
        TokenFile {
            path: path.value.clone(),
            fallback,
            state: Mutex::new(TokenFileState::default()),
        }
    }

    /// The current header: re-read when the file changed since the last read (checked at most once a second).
    fn header(&self) -> Result<Secret> {
        let mut st = self.state.lock();
        let due = st.checked.is_none_or(|t| t.elapsed() >= TOKEN_FILE_CHECK_INTERVAL) || st.header.is_none();
        if due {
            st.checked = Some(Instant::now());
            if let Err(e) = self.reload(&mut st) {
                match (&st.header, &self.fallback) {
                    (Some(_), _) => debug!("{e}; keeping the previous token"),
                    (None, Some(fb)) => {
                        debug!("{e}; using the token from the kubeconfig");
                        return Ok(bearer(fb.expose()));
                    }
                    (None, None) => return Err(e),
                }
            }
        }
        st.header
            .clone()
            .ok_or_else(|| Error::Auth(format!("no token in {}", self.path.display())))
    }

    /// Reads the file if its stamp changed (or was forgotten).
    fn reload(&self, st: &mut TokenFileState) -> Result<()> {
        let unreadable =
            |e: std::io::Error| Error::Auth(format!("cannot read token file {}: {e}", self.path.display()));
        let meta = std::fs::metadata(&self.path).map_err(unreadable)?;
        let stamp = (meta.modified().ok(), meta.len());
        if st.stamp == Some(stamp) && st.header.is_some() {
            return Ok(());
        }
        let text = std::fs::read(&self.path).map_err(unreadable)?;
        let token = text.trim_ascii();
        if token.is_empty() {
            return Err(Error::Auth(format!("token file {} is empty", self.path.display())));
        }
        if st.header.is_some() {
            debug!("token file {} changed; using the new token", self.path.display());
        }
        st.header = Some(bearer(token));
        st.stamp = Some(stamp);
        Ok(())
    }

    /// After a 401 with `old`: re-read now; a retry helps only if the token changed.
    fn refresh_after_401(&self, old: &Secret) -> bool {
        let mut st = self.state.lock();
        st.stamp = None;
        st.checked = Some(Instant::now());
        match self.reload(&mut st) {
            Ok(()) => st.header.as_ref() != Some(old),
            Err(e) => {
                debug!("{e}");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::abort::Canceller;
    use crate::client::config::Origin;

    fn file_credential(path: &std::path::Path) -> Credential {
        Credential::TokenFile {
            path: Material {
                value: path.to_path_buf(),
                origin: Origin::default(),
            },
            fallback: None,
        }
    }

    #[test]
    fn token_file_is_reread_after_a_401() {
        let dir = std::env::temp_dir().join(format!("kube-informer-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "first\n").unwrap();
        let auth = Authenticator::new(&file_credential(&path), None, &Arc::default());
        let cancel = Canceller::new().signal();
        let a = auth.authorize(&cancel, None).unwrap();
        assert_eq!(a.header.as_ref().unwrap().expose(), b"Bearer first");
        // Same length: only the 401 path (which forgets the stamp) is sure to see it within the second.
        std::fs::write(&path, "secnd").unwrap();
        assert!(auth.unauthorized(&a.used), "the token changed: a retry may succeed");
        let b = auth.authorize(&cancel, None).unwrap();
        assert_eq!(b.header.unwrap().expose(), b"Bearer secnd");
        assert!(!auth.unauthorized(&b.used), "same token again: retrying is pointless");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_token_file_is_an_auth_error_naming_the_file() {
        let path = std::path::Path::new("/nonexistent/kube-informer/token");
        let auth = Authenticator::new(&file_credential(path), None, &Arc::default());
        let err = auth
            .authorize(&Canceller::new().signal(), None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("/nonexistent/kube-informer/token"), "{err}");
    }

    #[test]
    fn basic_auth_header() {
        let auth = Authenticator::new(
            &Credential::Basic {
                username: "Aladdin".into(),
                password: "open sesame".into(),
            },
            None,
            &Arc::default(),
        );
        let a = auth.authorize(&Canceller::new().signal(), None).unwrap();
        assert_eq!(a.header.unwrap().expose(), b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert!(!format!("{auth:?}").contains("QWxh"));
    }
}
