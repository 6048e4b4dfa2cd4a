//! Paths no agent file or composer `@mention` may read (SPEC §12 "Trust", issue 22):
//! the kernel's pseudo-files (`/proc` — `/proc/self/environ` holds every key of the
//! process —, `/dev`, `/sys`), arbor's config directory and config file, Amplifier's
//! key and settings files under `$AMPLIFIER_HOME`, and the usual credential
//! directories of the home directory (`~/.ssh`, `~/.aws`, …).
//!
//! Owns: the list ([`private_paths`]) and the test of one path against it
//! ([`is_private`]). Does not own: resolving mentions (`agent::mentions`,
//! `tui::state::mentions`) or confining processes.

use std::path::{Path, PathBuf};

use crate::paths::Paths;

/// Kernel pseudo-file trees: never read as context.
const SYSTEM: [&str; 3] = ["/proc", "/dev", "/sys"];

/// Files under `$AMPLIFIER_HOME` that hold keys or provider settings
/// (amplifier-app-cli's `keys.env`, some distributions' `keys.yaml`, and the
/// `settings.yaml` / `settings.local.yaml` that may carry provider config).
pub const AMPLIFIER_KEY_FILES: [&str; 4] = [
    "keys.env",
    "keys.yaml",
    "settings.yaml",
    "settings.local.yaml",
];

/// Credential files and directories relative to the home directory: SSH, cloud CLIs,
/// GnuPG, git and forge CLIs, container and package registries, databases, secret
/// stores, AI coding tools' logins, NATS keys and shell and REPL histories (they keep
/// typed passwords and tokens). Also the sandbox's deny list (`sandbox::deny_list`),
/// so a mention and a sandboxed command are kept from the same files.
pub const HOME_SECRETS: [&str; 50] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".config/containers/auth.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".config/github-copilot",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".terraform.d/credentials.tfrc.json",
    ".terraformrc",
    ".pulumi/credentials.json",
    ".config/doctl",
    ".oci",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".config/nats",
    ".local/share/nats",
    ".nkeys",
    ".bash_history",
    ".zsh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".psql_history",
];

/// The environment variables naming NATS key files arbor's remote runs use
/// (`remote::auth`): the `.creds` file, the nkey seed, the client certificate's key.
/// The files they name are key files too.
pub const NATS_KEY_FILE_VARS: [&str; 3] = ["NATS_CREDS", "NATS_NKEY", "NATS_KEY"];

/// The key files alone — arbor's config file and config directory, Amplifier's
/// [`AMPLIFIER_KEY_FILES`], the home directory's [`HOME_SECRETS`], the files this
/// process's `NATS_CREDS`, `NATS_NKEY` and `NATS_KEY` name ([`NATS_KEY_FILE_VARS`],
/// when set; relative to the working directory) — as
/// absolute paths, as written (not canonicalized): what a sandboxed command must not
/// read.
pub fn key_files(paths: &Paths, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![paths.config_file.clone()];
    for var in NATS_KEY_FILE_VARS {
        if let Some(file) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            out.push(paths.cwd.join(file));
        }
    }
    if let Some(dir) = paths.themes_dir.parent() {
        out.push(dir.to_path_buf());
    }
    for file in AMPLIFIER_KEY_FILES {
        out.push(paths.amplifier_home.join(file));
    }
    if let Some(home) = home {
        for rel in HOME_SECRETS {
            out.push(home.join(rel));
        }
    }
    out.retain(|p| p.is_absolute());
    out.dedup();
    out
}

/// Every private path for `paths` and the home directory `home` (when known): the
/// [`SYSTEM`] trees, arbor's config file and config directory, Amplifier's key files,
/// and the home directory's credential files. Each is given as written and, when it
/// exists, canonicalized too (so a symlinked home still matches).
pub fn private_paths(paths: &Paths, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    out.extend(key_files(paths, home));
    // A stat first: most of these do not exist, and `canonicalize` resolves every
    // component of the path (a `readlink` each) before it finds that out — once per
    // engine built, so once per job on a worker.
    let canonical: Vec<PathBuf> = out
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    out.extend(canonical);
    out.sort();
    out.dedup();
    out
}

/// Whether `path` (best canonicalized by the caller) is one of `private` or lies
/// under one of them.
pub fn is_private(path: &Path, private: &[PathBuf]) -> bool {
    private.iter().any(|p| path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_trees_config_and_key_files_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let env = {
            let home = home.clone();
            move |k: &str| (k == "HOME").then(|| home.display().to_string())
        };
        let paths = Paths::from_env_map(&env, tmp.path().to_path_buf());
        let private = private_paths(&paths, Some(&home));
        for p in [
            PathBuf::from("/proc/self/environ"),
            PathBuf::from("/dev/null"),
            PathBuf::from("/sys/kernel"),
            paths.config_file.clone(),
            home.join(".config/arbor/themes/x.yaml"),
            paths.amplifier_home.join("keys.env"),
            home.join(".ssh/id_ed25519"),
            home.join(".aws/credentials"),
            home.join(".codex/auth.json"),
            home.join(".claude/.credentials.json"),
            home.join(".pgpass"),
            home.join(".vault-token"),
            home.join(".bash_history"),
            home.join(".zsh_history"),
            home.join(".config/hub"),
            home.join(".terraform.d/credentials.tfrc.json"),
            home.join(".m2/settings.xml"),
        ] {
            assert!(is_private(&p, &private), "{}", p.display());
        }
        for p in [
            tmp.path().join("project/README.md"),
            paths.amplifier_home.join("agents/x.md"),
            home.join("notes.md"),
            PathBuf::from("/processes"),
        ] {
            assert!(!is_private(&p, &private), "{}", p.display());
        }
    }
}
