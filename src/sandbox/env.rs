//! What a command, hook or stdio MCP server inherits from arbor's environment
//! (issue 22 for provider keys, issue 34 scope 8 for the rest): every variable that
//! holds a secret or reaches one is removed, sandboxed or not, except those the user
//! passes on by name (`sandbox.env_pass`).
//!
//! Owns: the rule of which variable names are secrets ([`is_secret_var`]) and
//! removing them from a command ([`strip_secrets`]). Does not own: the pass-list's
//! config (`config::sandbox`), or an MCP server's own `env:` entries (set by
//! `tool::mcp` after stripping, so they still apply).

/// Variable names (exact, compared in upper case) that reach a secret without
/// holding it: the SSH agent's socket (the agent signs for whoever connects), the GnuPG
/// agent, the NATS key files arbor's remote runs use (`.creds`, nkey seed, the client
/// certificate's key).
pub const SECRET_NAMES: [&str; 6] = [
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "NATS_CREDS",
    "NATS_NKEY",
    "NATS_JWT",
    "NATS_KEY",
];

/// Name endings (compared in upper case) of variables that hold a secret:
/// `OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SESSION_TOKEN`, `PGPASSWORD`,
/// `DOCKER_PASSWORD`, `GOOGLE_APPLICATION_CREDENTIALS`, `…_PRIVATE_KEY`, ….
pub const SECRET_SUFFIXES: [&str; 10] = [
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_TOKEN_FILE",
    "PASSWORD",
    "PASSWD",
    "_CREDENTIALS",
    "_CREDS",
    "_PRIVATE_KEY",
    "_AUTH_SOCK",
];

/// Whether an environment variable named `name` holds a provider key by arbor's
/// rule: `*_API_KEY` (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …, case-insensitive).
/// These are the variables arbor reads keys from (README "Providers and keys").
pub fn is_provider_key_var(name: &str) -> bool {
    name.to_ascii_uppercase().ends_with("_API_KEY")
}

/// Whether an environment variable named `name` holds or reaches a secret
/// (case-insensitive): a provider key ([`is_provider_key_var`]), a name ending in one
/// of [`SECRET_SUFFIXES`], a name containing `SECRET` (`AWS_SECRET_ACCESS_KEY`,
/// `CLIENT_SECRET`), `TOKEN` or `PASSWORD` alone, or one of [`SECRET_NAMES`].
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    is_provider_key_var(&upper)
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || upper.contains("SECRET")
        || upper == "TOKEN"
        || SECRET_NAMES.contains(&upper.as_str())
}

/// The secret variables ([`is_secret_var`]) of arbor's own environment that a child
/// must not inherit: all of them but those named in `pass` (exact names, as in
/// `sandbox.env_pass`).
pub fn secret_vars(pass: &[String]) -> Vec<std::ffi::OsString> {
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            name.to_str()
                .is_some_and(|n| is_secret_var(n) && !pass.iter().any(|p| p == n))
        })
        .collect()
}

/// Removes the secret variables of arbor's environment ([`secret_vars`] with `pass`)
/// from what `cmd` inherits, so a command, hook or MCP server — sandboxed or not —
/// cannot read them. A value the caller sets afterwards (an MCP server's own `env:`
/// entry) still applies.
pub fn strip_secrets(cmd: &mut tokio::process::Command, pass: &[String]) {
    for name in secret_vars(pass) {
        cmd.env_remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised_and_ordinary_variables_are_not() {
        for name in [
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "HF_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "CLIENT_SECRET",
            "PGPASSWORD",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NATS_CREDS",
            "NATS_KEY",
            "NATS_TOKEN",
            "NATS_PASSWORD",
            "SSH_AUTH_SOCK",
            "VAULT_TOKEN",
            "TOKEN",
            "DEPLOY_PRIVATE_KEY",
        ] {
            assert!(is_secret_var(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TERM",
            "LANG",
            "AWS_ACCESS_KEY_ID",
            "AWS_REGION",
            "TOKENIZERS_PARALLELISM",
            "NATS_URL",
            "SSH_CONNECTION",
        ] {
            assert!(!is_secret_var(name), "{name}");
        }
    }
}
