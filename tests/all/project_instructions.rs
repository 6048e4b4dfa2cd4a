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

/// Issue 39 item 2: `CLAUDE.md` and `.claude/CLAUDE.md` are read like `AGENTS.md` (in
/// each directory after it, under the same cap, shown by `agent show --merged`), and a
/// sub-session gets the project instructions of its own working directory too.
#[test]
fn claude_md_is_read_like_agents_md_and_sub_sessions_get_it() {
    use futures::FutureExt;
    let server = ScriptedServer::start(Arc::new(|body: Value| {
        async move {
            if last_role(&body) == "tool" {
                return Reply::Sse(sse_text("parent done"));
            }
            if last_user_text(&body).contains("Look around") {
                return Reply::Sse(sse_text("child done"));
            }
            Reply::Sse(sse_tool_calls(&[(
                "t1",
                "task",
                serde_json::json!({"agent": "explorer", "instruction": "Look around"}),
            )]))
        }
        .boxed()
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(env.project.join("AGENTS.md"), "Agents rule one.").unwrap();
    std::fs::write(env.project.join("CLAUDE.md"), "Claude rule two.").unwrap();
    std::fs::write(env.project.join(".claude/CLAUDE.md"), "Claude rule three.").unwrap();
    let out = env
        .cmd()
        .args(["run", "--yes", "--output-format", "json", "delegate it"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["status"], "success", "{v}");
    let requests = server.requests();
    let root = system_of(&requests[0]);
    let (one, two, three) = (
        root.find("Agents rule one.").expect(&root),
        root.find("Claude rule two.").expect(&root),
        root.find("Claude rule three.").expect(&root),
    );
    assert!(one < two && two < three, "AGENTS.md first: {root}");
    let child = requests
        .iter()
        .find(|r| last_user_text(r).contains("Look around"))
        .map(system_of)
        .expect("the child made a request");
    assert!(
        child.contains("Claude rule two.") && child.contains("Agents rule one."),
        "the sub-session got no project instructions: {child}"
    );

    let out = env
        .cmd()
        .args(["agent", "show", "explorer", "--merged", "--format", "json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = shown["project_instructions"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{shown}");
}
