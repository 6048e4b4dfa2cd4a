//! The write and shell tools through the real binary and a scripted loopback
//! provider: an agent of the user's own directory (it turns `read_only` off and adds
//! `tool-bash` itself), allowed to act with `--yes`, runs `env` with a provider key in the
//! environment and writes a file; the key reaches neither the model nor any session
//! file, and `session show --json` lists the file in `files_changed`.

use crate::support;

use serde_json::{Value, json};
use support::*;

const CONFIG_KEY: &str = "sk-config-key-77777777";
const ENV_KEY: &str = "sk-env-key-OPENAI-123456789";

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-filesystem\n    config:\n      read_only: false\n  - module: tool-bash\n---\nYou run commands.\n";

#[test]
fn env_output_is_scrubbed_and_writes_are_listed() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[
            ("b1", "bash", json!({"command": "env"})),
            (
                "w1",
                "write_file",
                json!({"file_path": "out/report.md", "content": "# Report\nok\n"}),
            ),
        ])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, CONFIG_KEY);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();

    let out = env
        .cmd()
        .env("OPENAI_API_KEY", ENV_KEY)
        // `*_API_KEY` variables are not inherited by bash at all; a copy of the key
        // under another name is, and must come back scrubbed.
        .env("KEY_COPY", ENV_KEY)
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    let id = result["session_id"].as_str().unwrap().to_string();

    // What the model got back from `env`.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let bash_result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap();
    let body: Value = serde_json::from_str(&bash_result).unwrap();
    let printed = body["stdout"].as_str().unwrap();
    assert!(printed.contains("KEY_COPY=[REDACTED]"), "{printed}");
    assert!(!printed.contains("OPENAI_API_KEY="), "{printed}");
    for key in [ENV_KEY, CONFIG_KEY] {
        assert!(
            !requests[1].to_string().contains(key),
            "{key} reached the model"
        );
        assert!(
            files_containing(&env.sessions_dir(), key).is_empty(),
            "{key} is in a session file"
        );
    }

    assert_eq!(
        std::fs::read_to_string(env.project.join("out/report.md")).unwrap(),
        "# Report\nok\n"
    );
    let show = env
        .cmd()
        .args(["session", "show", &id, "--json"])
        .output()
        .unwrap();
    assert!(show.status.success());
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(
        show["files_changed"],
        json!([{"path": "out/report.md", "tool": "write_file", "lines_added": 2, "lines_removed": 0, "created": true, "changes": 1}])
    );
    let text = env.cmd().args(["session", "show", &id]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("changed   out/report.md (+2 -0, write_file)")
    );
}
