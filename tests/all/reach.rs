//! Issue 34 "Reach from inside the sandbox" through the real binary and a scripted
//! loopback provider: a `bash` command — sandboxed or not — inherits none of arbor's
//! secret variables (`SSH_AUTH_SOCK`, `NATS_CREDS`, `GITHUB_TOKEN`, `AWS_*` secrets,
//! `HF_TOKEN`, any `*_TOKEN`, `*_SECRET*`, `*PASSWORD`, `*_CREDENTIALS`) but those
//! `sandbox.env_pass` names; a sandboxed command cannot read the credential stores the
//! deny list gained (AI tools' logins, database and vault tokens, shell histories,
//! forge and build-tool credentials, the `NATS_CREDS` file); `doctor` shows the
//! pass-list.

use crate::support;

use serde_json::json;
use support::*;

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-bash\n---\nYou run commands.\n";

/// One `bash` call of `command` by a `--yes` agent through the real binary, with
/// `config_yaml` appended to the config, `vars` added to arbor's environment and
/// `prepare` run on the environment first. Returns the tool result the model got
/// back and the environment.
pub(crate) fn bash_once(
    command: &str,
    config_yaml: &str,
    vars: &[(&str, &str)],
    prepare: impl FnOnce(&TestEnv),
) -> (String, TestEnv) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": command}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-reach-key-1");
    env.append_config(config_yaml);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
    prepare(&env);
    let out = env
        .cmd()
        .envs(vars.iter().copied())
        .args([
            "run",
            "--agent",
            "shell",
            "--yes",
            "--output-format",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let text = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap();
    (text, env)
}

/// Secret variables of arbor's environment, each with a value a command would print.
const SECRETS: [(&str, &str); 12] = [
    ("SSH_AUTH_SOCK", "/tmp/agent-sock-v1"),
    ("NATS_CREDS", "/tmp/no-such-user.creds"),
    ("GITHUB_TOKEN", "gh-secret-v3"),
    ("GH_TOKEN", "gh-secret-v4"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-v5"),
    ("AWS_SESSION_TOKEN", "aws-secret-v6"),
    ("HF_TOKEN", "hf-secret-v7"),
    ("VAULT_TOKEN", "vault-secret-v8"),
    ("CLIENT_SECRET", "client-secret-v9"),
    ("PGPASSWORD", "pg-secret-v10"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/tmp/gcp-secret-v11.json"),
    ("SOME_TOOL_API_KEY", "tool-key-v12"),
];

/// `env` output of the command, and the secrets whose value appears in it.
fn leaked(result: &str) -> Vec<&'static str> {
    SECRETS
        .iter()
        .filter(|(_, value)| result.contains(value))
        .map(|(name, _)| *name)
        .collect()
}

#[test]
fn commands_inherit_no_secret_variables_sandboxed_or_not() {
    let mut vars = SECRETS.to_vec();
    vars.push(("ARBOR_TEST_PLAIN", "plain-value-42"));
    let mut inherited = Vec::new();
    for yaml in ["", "sandbox: {mode: off}\n"] {
        let (result, _env) = bash_once("env", yaml, &vars, |_| {});
        assert!(result.contains("plain-value-42"), "{yaml}: {result}");
        let leaked = leaked(&result);
        if !leaked.is_empty() {
            inherited.push(format!("{yaml:?}: {} {leaked:?}", leaked.len()));
        }
    }
    assert!(inherited.is_empty(), "inherited: {inherited:#?}");
}

#[test]
fn env_pass_passes_exactly_the_named_variables() {
    let (result, _env) = bash_once(
        "env",
        "sandbox: {env_pass: [GITHUB_TOKEN, HF_TOKEN]}\n",
        &SECRETS,
        |_| {},
    );
    assert_eq!(leaked(&result), ["GITHUB_TOKEN", "HF_TOKEN"], "{result}");
}

/// Credential stores the deny list gained (relative to `HOME`).
const NEW_STORES: [&str; 14] = [
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".pgpass",
    ".vault-token",
    ".bash_history",
    ".zsh_history",
    ".config/hub",
    ".terraform.d/credentials.tfrc.json",
    ".m2/settings.xml",
    ".my.cnf",
    ".config/nats/context/main.json",
    ".local/share/nats/nsc/keys/creds/op/acct/user.creds",
    ".config/github-copilot/apps.json",
    ".local/share/fish/fish_history",
];

/// Stores that were on the list already (regression checks).
const OLD_STORES: [&str; 4] = [
    ".aws/credentials",
    ".netrc",
    ".config/gh/hosts.yml",
    ".docker/config.json",
];

#[test]
fn sandboxed_commands_cannot_read_credential_stores_or_the_nats_creds_file() {
    let stores: Vec<&str> = NEW_STORES
        .iter()
        .chain(OLD_STORES.iter())
        .copied()
        .collect();
    let creds_dir = tempfile::tempdir().unwrap();
    let creds = creds_dir.path().join("worker.creds");
    std::fs::write(&creds, "NATS-CREDS-SECRET-0").unwrap();
    // Each file holds `STORE-SECRET-<i>`; the command prints every file it can read.
    let command = "for f in $(cat ../list); do cat \"$f\" 2>/dev/null; echo; done";
    let (result, env) = bash_once(
        command,
        "",
        &[("NATS_CREDS", creds.to_str().unwrap())],
        |env| {
            let mut list = String::new();
            for (i, rel) in stores.iter().enumerate() {
                let path = env.home.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, format!("STORE-SECRET-{i}-")).unwrap();
                list.push_str(&format!("{}\n", path.display()));
            }
            list.push_str(&format!("{}\n", creds.display()));
            std::fs::write(env.project.parent().unwrap().join("list"), list).unwrap();
        },
    );
    let read: Vec<&str> = stores
        .iter()
        .enumerate()
        .filter(|(i, _)| result.contains(&format!("STORE-SECRET-{i}-")))
        .map(|(_, rel)| *rel)
        .collect();
    assert!(read.is_empty(), "readable: {read:?}\n{result}");
    assert!(
        !result.contains("NATS-CREDS-SECRET-0"),
        "the NATS_CREDS file was read: {result}"
    );
    // The files are there and readable outside the sandbox: the masks hid them.
    assert!(
        std::fs::read_to_string(env.home.join(NEW_STORES[0]))
            .unwrap()
            .starts_with("STORE-SECRET-0-")
    );
}

#[test]
fn doctor_shows_the_pass_list() {
    let env = TestEnv::new();
    std::fs::write(&env.config, "sandbox: {env_pass: [GITHUB_TOKEN]}\n").unwrap();
    let out = env.cmd().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not inherited: secrets") && text.contains("env_pass: GITHUB_TOKEN"),
        "{text}"
    );
    assert!(text.contains("tty     none"), "{text}");
}
