//! Models through the real binary (issue 15 item 5, SPEC §9, §14): `--model` on `run`
//! and `session resume` reaches the provider and is recorded in metadata; a root
//! started with `--agent` is routed by that agent's `provider_preferences` as a
//! spawned child would be.

use crate::support;

use std::sync::Arc;

use futures::FutureExt;
use support::*;

fn server() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|_| async { Reply::Sse(sse_text("ok")) }.boxed()))
}

/// The `model` of every chat request the server saw.
fn models_sent(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn run_json(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    let out = env
        .cmd()
        .args(args)
        .args(["--output-format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["status"], "success", "{v}");
    v
}

#[test]
fn run_and_resume_send_the_model_given_and_metadata_keeps_it() {
    let server = server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let v = run_json(&env, &["run", "hi", "--model", "picked-model"]);
    let id = v["session_id"].as_str().unwrap().to_string();
    assert_eq!(models_sent(&server), ["picked-model"]);
    let meta = env.metadata(&id);
    // (`model` is what the server said it answered with: the scripted server always
    // names `scripted-model`.)
    assert_eq!(meta["resolved_model"]["via"], "user");
    assert_eq!(meta["resolved_model"]["model"], "picked-model");
    assert_eq!(
        meta["config"]["providers"][0]["config"]["default_model"],
        "picked-model"
    );

    // PROVIDER/MODEL names the configured provider; the session switches for good.
    run_json(
        &env,
        &[
            "session",
            "resume",
            &id[..8],
            "again",
            "--model",
            "openai/second-model",
        ],
    );
    run_json(&env, &["session", "resume", &id[..8], "and again"]);
    assert_eq!(
        models_sent(&server),
        ["picked-model", "second-model", "second-model"]
    );
    let meta = env.metadata(&id);
    assert_eq!(meta["resolved_model"]["model"], "second-model");
    assert_eq!(
        meta["config"]["providers"][0]["config"]["default_model"],
        "second-model"
    );

    // A name whose prefix is no provider is a model name as a whole (OpenRouter).
    run_json(&env, &["run", "hi", "--model", "meta/llama-3"]);
    assert_eq!(models_sent(&server).last().unwrap(), "meta/llama-3");
    // A glob picks a listed model; one matching nothing fails, naming it.
    run_json(&env, &["run", "hi", "--model", "scripted-*"]);
    assert_eq!(models_sent(&server).last().unwrap(), "scripted-model");
    let out = env
        .cmd()
        .args(["run", "hi", "--model", "gpt-9*"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("model gpt-9*: no match"), "{stderr}");
    assert_eq!(
        models_sent(&server).len(),
        5,
        "nothing sent for a bad choice"
    );
}

#[test]
fn a_root_started_with_an_agent_is_routed_by_its_provider_preferences() {
    let server = server();
    let env = TestEnv::new();
    // The configured model is one the server does not list; the agent prefers a glob
    // that resolves against the list.
    std::fs::write(
        &env.config,
        format!(
            "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{}\"\n      api_key: sk-x\n      default_model: configured-model\n",
            server.base_url
        ),
    )
    .unwrap();
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("picky.md"),
        "---\nmeta: {name: picky, description: Prefers scripted models.}\nprovider_preferences:\n  - {provider: openai, model: \"scripted-*\"}\n---\nYou are picky.\n",
    )
    .unwrap();
    let v = run_json(&env, &["run", "hi", "--agent", "picky"]);
    let id = v["session_id"].as_str().unwrap();
    assert_eq!(models_sent(&server), ["scripted-model"]);
    let meta = env.metadata(id);
    assert_eq!(meta["resolved_model"]["via"], "agent preferences");
    assert_eq!(meta["model"], "openai/scripted-model");

    // Without the agent the configured model is used; `--model` beats the agent.
    run_json(&env, &["run", "hi"]);
    run_json(&env, &["run", "hi", "--agent", "picky", "--model", "mine"]);
    assert_eq!(
        models_sent(&server),
        ["scripted-model", "configured-model", "mine"]
    );
}

/// `host:port` of a scripted server.
fn addr(server: &ScriptedServer) -> String {
    server
        .base_url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string()
}

#[test]
fn with_nothing_configured_a_local_server_that_answers_is_used_and_named() {
    let llama = server();
    let env = TestEnv::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let servers = format!(
        "ollama={closed},lmstudio={closed},llamacpp={}",
        addr(&llama)
    );
    let out = env
        .cmd()
        .env("ARBOR_LOCAL_SERVERS", &servers)
        .args(["run", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "using llama.cpp at {} (found locally)",
            addr(&llama)
        )),
        "{stderr}"
    );
    // The server's own model (the first it lists) is what the request names.
    assert_eq!(models_sent(&llama), ["scripted-model"]);
    // Nothing answering: the no-provider message, as before.
    let out = env
        .cmd()
        .env("ARBOR_LOCAL_SERVERS", format!("llamacpp={closed}"))
        .args(["run", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("No model provider is configured"));
}

#[test]
fn when_several_local_servers_answer_the_first_is_used_and_the_others_offered() {
    let (ollama, lmstudio) = (server(), server());
    let env = TestEnv::new();
    let servers = format!("ollama={},lmstudio={}", addr(&ollama), addr(&lmstudio));
    let run = |extra: &[&str]| {
        let out = env
            .cmd()
            .env("ARBOR_LOCAL_SERVERS", &servers)
            .args(["run", "hi"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = run(&[]);
    assert!(stderr.contains("using Ollama at"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "also LM Studio at {} (lmstudio/MODEL)",
            addr(&lmstudio)
        )),
        "{stderr}"
    );
    assert_eq!((ollama.requests().len(), lmstudio.requests().len()), (1, 0));
    // The offer works as written: `--model lmstudio/MODEL` picks the other server.
    run(&["--model", "lmstudio/scripted-model"]);
    assert_eq!((ollama.requests().len(), lmstudio.requests().len()), (1, 1));
    // `doctor` says the same and counts the servers as providers.
    let out = env
        .cmd()
        .env("ARBOR_LOCAL_SERVERS", &servers)
        .arg("doctor")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("local     using Ollama at"), "{stdout}");
}
