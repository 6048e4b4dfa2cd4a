//! How arbor authenticates to NATS, and keeping those credentials out of everything it
//! prints, logs, stores or sends (issue 38 items 1–2).
//!
//! Owns: [`RemoteAuth`] — every credential form async-nats supports (a `.creds` file,
//! an nkey seed file, a token, user and password, a client certificate) plus an extra
//! CA certificate for a private CA — read from the environment variables the `nats`
//! CLI uses ([`RemoteAuth::from_env`]) and turned into connect options; [`Scrub`] (removing a
//! connection's secrets from a text before it goes anywhere); and installing the
//! process's TLS crypto provider ([`install_crypto_provider`]).
//!
//! Does not own: connecting and the streams (`nats`), showing a URL redacted
//! (`config::remote::redact_url`, re-exported here), which variables a sandboxed
//! command inherits (`sandbox::env` strips these names), the key files it masks
//! (`config::private`).

use std::path::PathBuf;

pub use crate::config::remote::{redact_url, split_userinfo};

/// The environment variables [`RemoteAuth::from_env`] reads, as the `nats` CLI names
/// them: a `.creds` file, an nkey seed file, a token, a user and password, a client
/// certificate and its key (PEM files), an extra CA certificate (PEM).
pub const AUTH_VARS: [&str; 8] = [
    "NATS_CREDS",
    "NATS_NKEY",
    "NATS_TOKEN",
    "NATS_USER",
    "NATS_PASSWORD",
    "NATS_CERT",
    "NATS_KEY",
    "NATS_CA",
];

/// How to authenticate to NATS, all optional: at most one of `creds` (NATS
/// decentralized auth, a `.creds` file), `nkey` (a file holding an nkey seed, `SU…`),
/// `token`, or `user` with `password`; and for TLS an extra CA certificate `ca` (PEM,
/// a private CA) and a client certificate `cert` with its `key` (PEM files, for a
/// server that verifies clients). Credentials in the URL (`nats://user:pass@host`,
/// `nats://token@host`) work too; they are the client's own parsing.
///
/// `Debug` shows which forms are set, never a token or password.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RemoteAuth {
    pub creds: Option<PathBuf>,
    pub nkey: Option<PathBuf>,
    pub token: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl std::fmt::Debug for RemoteAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "***");
        f.debug_struct("RemoteAuth")
            .field("creds", &self.creds)
            .field("nkey", &self.nkey)
            .field("token", &hidden(&self.token))
            .field("user", &self.user)
            .field("password", &hidden(&self.password))
            .field("ca", &self.ca)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish()
    }
}

impl RemoteAuth {
    /// Reads [`AUTH_VARS`] through `env` (a lookup, so tests and the engine's own
    /// environment can stand in for the process's); an empty or blank value counts as
    /// unset.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let text = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let path = |name: &str| text(name).map(PathBuf::from);
        Self {
            creds: path("NATS_CREDS"),
            nkey: path("NATS_NKEY"),
            token: text("NATS_TOKEN"),
            user: text("NATS_USER"),
            password: text("NATS_PASSWORD"),
            ca: path("NATS_CA"),
            cert: path("NATS_CERT"),
            key: path("NATS_KEY"),
        }
    }

    /// The secrets these credentials hold in the clear (token, password), for a
    /// [`Scrub`].
    fn secrets(&self) -> Vec<String> {
        [&self.token, &self.password]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// The servers of `url` (comma-separated) with their user-info taken out, and
    /// async-nats connect options carrying these credentials — or the URL's own
    /// (`user:password@`, `token@`, percent-decoded) — and certificates. The client
    /// never sees a credential inside a URL, so none reaches its logs.
    ///
    /// Errors (text for `RemoteError::Connect`): more than one credential form set (the
    /// URL's counting as one); servers of one URL with different user-info; a password
    /// without a user (or the reverse); a client certificate without its key (or the
    /// reverse); a `.creds` or nkey file that cannot be read or holds no seed.
    pub(super) async fn connect_plan(
        &self,
        url: &str,
    ) -> Result<(async_nats::ConnectOptions, Vec<String>), AuthError> {
        let mut servers = Vec::new();
        let mut in_url: Option<String> = None;
        for one in url.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (server, userinfo) = split_userinfo(one);
            if let Some(info) = userinfo {
                if in_url.as_ref().is_some_and(|seen| *seen != info) {
                    return Err(AuthError::MixedUrlCredentials);
                }
                in_url = Some(info);
            }
            servers.push(server);
        }
        let mut auth = self.clone();
        if let Some(info) = in_url {
            if auth.form_names().is_empty() {
                match info.split_once(':') {
                    Some((user, password)) => {
                        auth.user = Some(percent_decode(user));
                        auth.password = Some(percent_decode(password));
                    }
                    None => auth.token = Some(percent_decode(&info)),
                }
            } else {
                return Err(AuthError::UrlAndEnvironment(auth.form_names().join(", ")));
            }
        }
        Ok((auth.options().await?, servers))
    }

    /// The credential forms set, by the variable that sets them.
    fn form_names(&self) -> Vec<&'static str> {
        [
            self.creds.as_ref().map(|_| "NATS_CREDS"),
            self.nkey.as_ref().map(|_| "NATS_NKEY"),
            self.token.as_ref().map(|_| "NATS_TOKEN"),
            (self.user.is_some() || self.password.is_some()).then_some("NATS_USER/NATS_PASSWORD"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// async-nats connect options carrying these credentials and certificates; errors
    /// as [`RemoteAuth::connect_plan`].
    async fn options(&self) -> Result<async_nats::ConnectOptions, AuthError> {
        let forms = self.form_names();
        if forms.len() > 1 {
            return Err(AuthError::SeveralForms(forms.join(", ")));
        }
        let mut options = if let Some(path) = &self.creds {
            async_nats::ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|e| AuthError::File {
                    what: "credentials",
                    path: path.clone(),
                    reason: e.to_string(),
                })?
        } else if let Some(path) = &self.nkey {
            async_nats::ConnectOptions::with_nkey(read_seed(path)?)
        } else if let Some(token) = &self.token {
            async_nats::ConnectOptions::with_token(token.clone())
        } else {
            match (&self.user, &self.password) {
                (Some(user), Some(password)) => async_nats::ConnectOptions::with_user_and_password(
                    user.clone(),
                    password.clone(),
                ),
                (Some(_), None) => {
                    return Err(AuthError::Half("NATS_USER is set without NATS_PASSWORD"));
                }
                (None, Some(_)) => {
                    return Err(AuthError::Half("NATS_PASSWORD is set without NATS_USER"));
                }
                (None, None) => async_nats::ConnectOptions::new(),
            }
        };
        if let Some(ca) = &self.ca {
            options = options.add_root_certificates(ca.clone());
        }
        match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                options = options.add_client_certificate(cert.clone(), key.clone());
            }
            (Some(_), None) => {
                return Err(AuthError::Half(
                    "a client certificate (NATS_CERT, --cert) needs its key (NATS_KEY, --key)",
                ));
            }
            (None, Some(_)) => {
                return Err(AuthError::Half(
                    "a client key (NATS_KEY, --key) needs its certificate (NATS_CERT, --cert)",
                ));
            }
            (None, None) => {}
        }
        Ok(options)
    }
}

/// The nkey seed in the file at `path`: its first line starting with `SU` (a user
/// seed), as `nsc` writes it.
fn read_seed(path: &std::path::Path) -> Result<String, AuthError> {
    let failed = |reason: String| AuthError::File {
        what: "nkey seed",
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with("SU"))
        .map(str::to_string)
        .ok_or_else(|| failed("no user seed (a line starting with SU)".into()))
}

/// Credentials arbor cannot use, said before connecting (`RemoteError::Connect`'s
/// reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// More than one credential form is set (the variables that set them).
    #[error("more than one NATS credential given ({0}): set one")]
    SeveralForms(String),
    /// The URL carries credentials and so does the environment (its variables).
    #[error("credentials both in the URL and in {0}: set one")]
    UrlAndEnvironment(String),
    /// The comma-separated servers of one URL carry different credentials.
    #[error("the servers of the URL carry different credentials")]
    MixedUrlCredentials,
    /// One half of a pair is set without the other (which, as a sentence).
    #[error("{0}")]
    Half(&'static str),
    /// A `.creds` or nkey seed file cannot be used.
    #[error("{what} {}: {reason}", path.display())]
    File {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
}

/// The secrets of one connection (a URL's password or token, [`RemoteAuth`]'s token
/// and password), to remove from any text that leaves arbor: an error a child reports
/// to its parent (and so to the model), a log line, the worker's stderr.
#[derive(Clone, Default)]
pub struct Scrub {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Scrub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scrub({} secrets)", self.secrets.len())
    }
}

impl Scrub {
    /// The secrets of connecting to `url` with `auth`.
    pub fn new(url: &str, auth: &RemoteAuth) -> Self {
        let mut secrets = auth.secrets();
        for one in url.split(',') {
            if let (_, Some(userinfo)) = split_userinfo(one.trim()) {
                let secret = userinfo
                    .split_once(':')
                    .map_or(userinfo.as_str(), |(_, p)| p);
                secrets.push(secret.to_string());
                // As a client may print it: percent-decoded.
                secrets.push(percent_decode(secret));
            }
        }
        secrets.retain(|s| s.len() >= 3);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with every secret replaced by `***`.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Installs ring as the process's rustls crypto provider, once. rustls cannot pick one
/// by itself here (reqwest brings aws-lc-rs, async-nats ring), and async-nats builds its
/// TLS config from the process default: without this every TLS connection to NATS
/// panics. A provider installed earlier (by anyone) is kept.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = async_nats::rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password_or_token() {
        for (url, shown) in [
            ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
            ("nats://arbor:s3cret@h:4222", "nats://arbor:***@h:4222"),
            ("tls://tok3n@h:4222", "tls://***@h:4222"),
            (
                "nats://a:p%40ss@h1:4222, nats://h2:4222,tls://u:x@h3",
                "nats://a:***@h1:4222, nats://h2:4222,tls://u:***@h3",
            ),
            ("h:4222", "h:4222"),
            ("u:pw@h:4222", "u:***@h:4222"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn a_scrub_removes_every_secret_of_the_connection() {
        let auth = RemoteAuth {
            token: Some("tok-123456".into()),
            ..Default::default()
        };
        let scrub = Scrub::new("nats://arbor:p%40ssw0rd@h:4222", &auth);
        let text =
            "cannot reach NATS at nats://arbor:p%40ssw0rd@h:4222: bad p@ssw0rd; token tok-123456";
        let clean = scrub.text(text);
        assert!(!clean.contains("ssw0rd"), "{clean}");
        assert!(!clean.contains("tok-123456"), "{clean}");
        assert!(clean.contains("nats://arbor:***@h:4222"), "{clean}");
        assert!(!format!("{auth:?}").contains("tok-123456"));
    }

    #[tokio::test]
    async fn conflicting_or_half_credentials_are_refused_with_their_names() {
        let two = RemoteAuth {
            token: Some("t0ken".into()),
            user: Some("u".into()),
            password: Some("p".into()),
            ..Default::default()
        };
        let e = two
            .options()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("NATS_TOKEN, NATS_USER/NATS_PASSWORD"), "{e}");
        let half = RemoteAuth {
            user: Some("u".into()),
            ..Default::default()
        };
        let e = half
            .options()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "NATS_USER is set without NATS_PASSWORD");
        let cert = RemoteAuth {
            cert: Some("c.pem".into()),
            ..Default::default()
        };
        let e = cert
            .options()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("needs its key"), "{e}");
        let seed = RemoteAuth {
            nkey: Some("/nonexistent/seed.nk".into()),
            ..Default::default()
        };
        let e = seed
            .options()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("nkey seed /nonexistent/seed.nk:"), "{e}");
    }

    #[test]
    fn the_environment_gives_every_form() {
        let env = |name: &str| match name {
            "NATS_TOKEN" => Some("t".to_string()),
            "NATS_CA" => Some("/ca.pem".to_string()),
            "NATS_USER" => Some("  ".to_string()),
            _ => None,
        };
        let auth = RemoteAuth::from_env(&env);
        assert_eq!(auth.token.as_deref(), Some("t"));
        assert_eq!(auth.ca, Some(PathBuf::from("/ca.pem")));
        assert_eq!(auth.user, None);
    }
}
