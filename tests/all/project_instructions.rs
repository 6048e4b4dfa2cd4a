//! Issue 26 item 6 through the real binary: the project's `AGENTS.md` files reach a
//! root session's system prompt (outermost first, re-read after an edit) and
//! `agent show --merged` shows them.

use crate::support::*;
use serde_json::Value;
use std::sync::Arc;

fn system_of(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn agents_md_from_root_to_cwd_reach_the_root_prompt_and_edits_apply() {
    let server =
        ScriptedServer::start(Arc::new(|_| Box::pin(async { Reply::Sse(sse_text("ok")) })));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    std::fs::create_dir_all(env.project.join("sub/.amplifier")).unwrap();
    std::fs::write(env.project.join("AGENTS.md"), "Always answer in French.").unwrap();
    std::fs::write(
        env.project.join("sub/.amplifier/AGENTS.md"),
        "Run `make check` before saying done.",
    )
    .unwrap();
    let sub = env.project.join("sub");
    let out = env
        .cmd()
        .current_dir(&sub)
        .args(["run", "--output-format", "json", "hello"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "success", "{v}");
    let system = system_of(&server.requests()[0]);
    let (french, make) = (
        system.find("Always answer in French.").expect(&system),
        system.find("Run `make check`").expect(&system),
    );
    assert!(french < make, "outermost first: {system}");

    // An edit applies to the next model call.
    std::fs::write(env.project.join("AGENTS.md"), "Always answer in Dutch.").unwrap();
    let id = v["session_id"].as_str().unwrap();
    let out = env
        .cmd()
        .current_dir(&sub)
        .args(["session", "resume", id, "again", "--output-format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let system = system_of(server.requests().last().unwrap());
    assert!(system.contains("Always answer in Dutch."), "{system}");
    assert!(!system.contains("French"), "{system}");

    // `agent show --merged` shows what a root started here gets.
    let out = env
        .cmd()
        .current_dir(&sub)
        .args(["agent", "show", "explorer", "--merged", "--format", "json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let pi = &shown["project_instructions"];
    assert_eq!(pi["files"].as_array().unwrap().len(), 2, "{pi}");
    assert!(
        pi["text"]
            .as_str()
            .unwrap()
            .contains("Always answer in Dutch.")
    );
    assert_eq!(pi["cut"], false);
}
