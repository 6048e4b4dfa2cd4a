//! The serialized forms of every event: snapshots of the `--output-format jsonl`
//! object and of the `events.jsonl` line (a renamed or reordered key changes a
//! snapshot), read back to the same event, and old lines still read.

use serde_json::json;

use super::*;
use crate::session::Message;
use crate::session::SessionStatus;
use crate::session::metadata::SessionUsage;

const ROOT: &str = "0d9e1c52-6f1a-4c1e-9c55-2f4f2b8a7e10";
const CHILD: &str = "0d9e1c526f1a4c1e-3f2a9b7c1d4e5f60_explorer";
const TS: &str = "2025-03-01T12:00:00.000Z";

fn resolved() -> ResolvedModel {
    ResolvedModel {
        provider: "openai".into(),
        model: "gpt-4o".into(),
        via: Via::AgentRole,
        role: Some("general".into()),
        reason: None,
    }
}

fn usage(cost: Option<f64>) -> SessionUsage {
    SessionUsage {
        input_tokens: 1200,
        output_tokens: 300,
        cache_read_tokens: 1000,
        cache_creation_tokens: 0,
        cost,
    }
}

fn task() -> Option<TaskCallFields> {
    Some(TaskCallFields {
        sub_session_id: CHILD.into(),
        parent_session_id: ROOT.into(),
        depth: 1,
    })
}

/// One event of every variant, as the engine publishes them.
fn samples() -> Vec<Event> {
    use EngineEvent as E;
    let root = |msg| Event {
        session_id: ROOT.into(),
        parent_id: None,
        timestamp: TS.into(),
        msg,
    };
    let child = |msg| Event {
        session_id: CHILD.into(),
        parent_id: Some(ROOT.into()),
        timestamp: TS.into(),
        msg,
    };
    let message: Message = serde_json::from_value(json!({"role": "assistant", "content": [
        {"type": "text", "text": "Delegating."},
        {"type": "tool_call", "id": "call_1", "name": "task", "input": {"agent": "explorer", "instruction": "Map the crate"}}
    ], "tool_calls": [{"id": "call_1", "tool": "task", "arguments": {"agent": "explorer", "instruction": "Map the crate"}}]}))
    .unwrap();
    vec![
        root(E::SessionStart(SessionStartEvent {
            agent: "zen-architect".into(),
            depth: 0,
            bundle: Some("foundation".into()),
            model: Some("openai/gpt-4o".into()),
            working_dir: Some("/work/project".into()),
        })),
        child(E::SessionFork(SessionForkEvent {
            parent: ROOT.into(),
            agent: "explorer".into(),
            depth: 1,
            resolved_model: Some(resolved()),
        })),
        child(E::SessionResume(SessionResumeEvent {
            agent: "explorer".into(),
            depth: 1,
            turn_count: 2,
            status: SessionStatus::Completed,
        })),
        child(E::ProviderEndpointChanged(ProviderEndpointChangedEvent {
            provider: "openai".into(),
            from: "http://127.0.0.1:8080/v1".into(),
            to: "http://127.0.0.1:9090/v1".into(),
        })),
        root(E::SessionRebuilt(SessionRebuiltEvent {
            bundle: Some("bundle:foundation".into()),
            note: Some("bundle 'bundle:foundation' is not on this machine; rebuilt from arbor's active bundle 'arbor' (no stored config)".into()),
        })),
        root(E::SessionEnd(SessionEndEvent {
            status: SessionStatus::Completed,
        })),
        root(E::PromptSubmit(PromptSubmitEvent {
            prompt: "Map the crate".into(),
        })),
        root(E::ProviderRequest(ProviderRequestEvent {
            provider: "openai".into(),
            model: "gpt-4o".into(),
            iteration: 1,
            message_count: 3,
            tools: vec!["read_file".into(), "task".into()],
        })),
        root(E::ProviderResponse(ProviderResponseEvent {
            provider: "openai".into(),
            model: "gpt-4o".into(),
            response_model: Some("gpt-4o-2024-08-06".into()),
            usage: usage(Some(0.0075)),
            stop_reason: Some("tool_calls".into()),
            tool_calls: 1,
        })),
        root(E::ProviderError(ProviderErrorEvent {
            provider: "openai".into(),
            module: "provider-openai".into(),
            model: "gpt-4o".into(),
            kind: ProviderErrorKind::RateLimit,
            status: Some(429),
            message: "slow down".into(),
            error: "openai: slow down (HTTP 429)".into(),
            retryable: true,
            retrying: true,
            attempt: 1,
            max_attempts: 4,
            wait_ms: Some(1500),
            retry_after_ms: None,
        })),
        root(E::ProviderWarning(ProviderWarningEvent {
            provider: "openai".into(),
            model: "gpt-4o".into(),
            message: "3 malformed stream events skipped".into(),
            malformed_events: 3,
            first_malformed: "{\"choices\": [".into(),
        })),
        root(E::ContentBlockDelta(ContentBlockDeltaEvent {
            delta: "Deleg".into(),
            kind: DeltaKind::Text,
        })),
        root(E::ToolPre(ToolPreEvent {
            tool_name: "task".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({"agent": "explorer", "instruction": "Map the crate"}),
            task: task(),
        })),
        root(E::ToolPost(ToolPostEvent {
            tool_name: "read_file".into(),
            tool_call_id: "call_2".into(),
            result: "pub mod agent;".into(),
            truncated: true,
            tool_response: Some(ToolResponse::ok("pub mod agent;")),
            effect: None,
            task: None,
        })),
        root(E::ToolError(ToolErrorEvent {
            tool_name: "task".into(),
            tool_call_id: "call_1".into(),
            error: "unknown agent 'ghost'".into(),
            truncated: false,
            tool_response: Some(ToolResponse::failed("unknown agent 'ghost'")),
            task: task(),
        })),
        root(E::TaskAgentSpawned(TaskAgentSpawnedEvent {
            agent: "explorer".into(),
            sub_session_id: CHILD.into(),
            tool_call_id: "call_1".into(),
            depth: 1,
            resolved_model: resolved(),
        })),
        root(E::TaskAgentResumed(TaskAgentResumedEvent {
            agent: "explorer".into(),
            sub_session_id: CHILD.into(),
            tool_call_id: "call_3".into(),
            depth: 1,
            resolved_model: None,
        })),
        root(E::TaskAgentCompleted(TaskAgentCompletedEvent {
            agent: "explorer".into(),
            sub_session_id: CHILD.into(),
            tool_call_id: "call_1".into(),
            status: SessionStatus::Completed,
            turn_count: 1,
        })),
        root(E::CancelRequested(CancelRequestedEvent {})),
        child(E::CancelCompleted(CancelCompletedEvent {})),
        root(E::OrchestratorComplete(OrchestratorCompleteEvent {
            status: SessionStatus::Failed,
            turn_count: 3,
            usage: usage(None),
            error: Some("openai: slow down (HTTP 429)".into()),
        })),
        child(E::ApprovalRequired(ApprovalRequiredEvent {
            tool_call_id: "call_4".into(),
            tool_name: "bash".into(),
            agent: "explorer".into(),
            summary: "cargo test --lib".into(),
            command: Some("cargo test --lib".into()),
            diff: None,
            sandbox: None,
            escalation: None,
        })),
        child(E::ApprovalGranted(ApprovalGrantedEvent {
            tool_call_id: "call_4".into(),
            tool_name: "bash".into(),
            agent: "explorer".into(),
            decision: DecisionKind::Always,
            rule: Some("bash(cargo test*)".into()),
            reason: None,
        })),
        child(E::ApprovalDenied(ApprovalDeniedEvent {
            tool_call_id: "call_5".into(),
            tool_name: "write_file".into(),
            agent: "explorer".into(),
            decision: DecisionKind::Once,
            reason: Some("not in src/".into()),
        })),
        child(E::SessionStatus(SessionStatusEvent {
            status: SessionStatus::Waiting,
        })),
        root(E::SessionRenamed(SessionRenamedEvent {
            name: "Map the crate".into(),
        })),
        child(E::SessionNotice(SessionNoticeEvent {
            message: "no live worker in pool gpu".into(),
        })),
        root(E::MessageAppended(MessageAppendedEvent { message })),
        child(E::PromptQueued(PromptQueuedEvent {
            id: 2,
            mode: PromptMode::Queue,
            prompt: "then run the tests".into(),
            position: Some(0),
        })),
        root(E::PromptSent(PromptSentEvent {
            id: 1,
            mode: PromptMode::Steer,
            prompt: "also check the README".into(),
        })),
        child(E::PromptUnqueued(PromptUnqueuedEvent {
            id: 2,
            mode: PromptMode::Queue,
            prompt: "then run the tests".into(),
            reason: UnqueueReason::Returned,
        })),
        child(E::SessionBudget(SessionBudgetEvent {
            tokens: Some(10),
            cost_usd: Some(0.5),
            since_tokens: 15,
            since_cost_usd: None,
        })),
        root(E::AgentTransfer(AgentTransferEvent {
            from: "helpdesk".into(),
            to: "billing".into(),
            tool_call_id: "call_6".into(),
        })),
        root(E::McpServerFailed(McpServerFailedEvent {
            server: "calc".into(),
            error: "cannot start 'calc-server': No such file or directory (os error 2)".into(),
        })),
        root(E::HookRan(super::HookRanEvent {
            hook_event_name: "PreToolUse".into(),
            command: "~/bin/check.sh".into(),
            source: "user".into(),
            outcome: super::HookOutcome::Blocked,
            exit_code: Some(2),
            reason: Some("no force pushes".into()),
            additional_context: None,
            tool_name: Some("bash".into()),
            tool_call_id: Some("call_7".into()),
            duration_ms: 12,
        })),
        root(E::ContextCompaction(ContextCompactionEvent {
            before_tokens: 3400,
            after_tokens: 1500,
            before_messages: 14,
            after_messages: 5,
            messages_removed: 10,
            messages_truncated: 2,
            strategy_level: 2,
            budget: 4000,
            target_tokens: 2000,
            summary: Some("The user asked for …".into()),
            covers: 10,
            stubbed_before: 12,
            at_message: 14,
            trigger: "auto".into(),
            focus: None,
            summary_tokens: 900,
            duration_ms: 12,
        })),
        root(E::ContextCompacting(ContextCompactingEvent {
            trigger: "auto".into(),
            messages: 10,
        })),
        root(E::ContextUsage(ContextUsageEvent {
            tokens: 3400,
            max_tokens: 4000,
            compact_threshold: 0.8,
        })),
    ]
}

#[test]
fn the_samples_cover_every_event_once() {
    let names: Vec<&str> = samples().iter().map(|e| e.msg.name()).collect();
    assert_eq!(names, EngineEvent::NAMES);
}

#[test]
fn jsonl_output_form_of_every_event() {
    let lines: Vec<String> = samples()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn events_jsonl_line_of_every_logged_event() {
    let samples = samples();
    let unlogged: Vec<&str> = samples
        .iter()
        .filter(|e| !e.is_logged())
        .map(|e| e.msg.name())
        .collect();
    assert_eq!(
        unlogged,
        [
            "content_block:delta",
            "message:appended",
            "context:compacting",
            "context:usage"
        ]
    );
    let lines: Vec<String> = samples
        .iter()
        .filter(|e| e.is_logged())
        .map(|e| serde_json::to_string(&e.to_log_line()).unwrap())
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn both_forms_read_back_to_the_same_event() {
    for event in samples() {
        let jsonl = serde_json::to_string(&event).unwrap();
        let back: Event = serde_json::from_str(&jsonl).unwrap();
        assert_eq!(back, event, "{jsonl}");
        let line = serde_json::to_string(&event.to_log_line()).unwrap();
        assert_eq!(Event::from_log_line(&line).unwrap(), event, "{line}");
    }
}

#[test]
fn lines_written_by_older_arbor_still_read() {
    // `tool:pre` carried the input as `arguments` before `tool_input`.
    let old = r#"{"ts":"2025-03-01T12:00:00.000Z","lvl":"INFO","schema":{"name":"amplifier.log","ver":"1.0.0"},"event":"tool:pre","session_id":"s1","data":{"tool_name":"read_file","tool_call_id":"c1","arguments":{"file_path":"a.rs"},"parent_id":null,"timestamp":"2025-03-01T12:00:00.000Z"}}"#;
    let event = Event::from_log_line(old).unwrap();
    assert_eq!(
        event.msg,
        EngineEvent::ToolPre(ToolPreEvent {
            tool_name: "read_file".into(),
            tool_call_id: "c1".into(),
            tool_input: json!({"file_path": "a.rs"}),
            task: None,
        })
    );
    assert_eq!((event.session_id.as_str(), event.parent_id), ("s1", None));
    let unknown = old.replace("tool:pre", "tool:sideways");
    assert!(Event::from_log_line(&unknown).is_err());
}

#[test]
fn error_events_log_at_error_level() {
    let levels: Vec<(&str, String)> = samples()
        .iter()
        .filter(|e| e.is_logged())
        .map(|e| {
            let line = serde_json::to_value(e.to_log_line()).unwrap();
            (e.msg.name(), line["lvl"].as_str().unwrap().to_string())
        })
        .filter(|(_, lvl)| lvl != "INFO")
        .collect();
    assert_eq!(
        levels,
        [
            ("provider:error", "ERROR".to_string()),
            ("tool:error", "ERROR".to_string())
        ]
    );
}

#[test]
fn an_edit_approval_carries_its_diff_and_omits_the_command() {
    let event = EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
        tool_call_id: "call_6".into(),
        tool_name: "edit_file".into(),
        agent: "implementer".into(),
        summary: "edit src/lib.rs".into(),
        command: None,
        diff: Some("--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-old\n+new\n".into()),
        sandbox: None,
        escalation: None,
    });
    let data = serde_json::to_value(super::event::Data(&event)).unwrap();
    assert_eq!(
        data,
        json!({
            "tool_call_id": "call_6",
            "tool_name": "edit_file",
            "agent": "implementer",
            "summary": "edit src/lib.rs",
            "diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-old\n+new\n"
        })
    );
    let denied = r#"{"event":"approval:denied","session_id":"s1","timestamp":"t","data":{"tool_call_id":"c","tool_name":"bash","agent":"a","decision":"cancelled"}}"#;
    let back: Event = serde_json::from_str(denied).unwrap();
    assert_eq!(
        back.msg,
        EngineEvent::ApprovalDenied(ApprovalDeniedEvent {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            agent: "a".into(),
            decision: DecisionKind::Cancelled,
            reason: None,
        })
    );
}

#[test]
fn a_write_tool_post_carries_the_file_it_changed() {
    let change = crate::session::metadata::FileChange {
        path: "src/lib.rs".into(),
        tool: "edit_file".into(),
        lines_added: 3,
        lines_removed: 1,
        created: false,
        changes: 1,
        hunks: None,
    };
    let event = Event {
        session_id: ROOT.into(),
        parent_id: None,
        timestamp: TS.into(),
        msg: EngineEvent::ToolPost(ToolPostEvent {
            tool_name: "edit_file".into(),
            tool_call_id: "call_9".into(),
            result: "edited".into(),
            truncated: false,
            tool_response: None,
            effect: Some(ToolEffect::FileChange(change.clone())),
            task: None,
        }),
    };
    let wire = serde_json::to_value(&event).unwrap();
    assert_eq!(
        wire["data"],
        json!({
            "tool_name": "edit_file",
            "tool_call_id": "call_9",
            "result": "edited",
            "file_changed": {"path": "src/lib.rs", "tool": "edit_file", "lines_added": 3,
                             "lines_removed": 1, "created": false, "changes": 1},
        })
    );
    let line = serde_json::to_string(&event.to_log_line()).unwrap();
    let back = Event::from_log_line(&line).unwrap();
    let EngineEvent::ToolPost(post) = back.msg else {
        panic!("{back:?}")
    };
    assert_eq!(post.effect, Some(ToolEffect::FileChange(change)));
}

/// Each effect is one key of `tool:post`'s data, beside a task call's fields; a post
/// without one has no such key, and every form reads back from `events.jsonl`.
#[test]
fn a_tool_post_carries_its_effect_as_one_key() {
    let result = TaskResult {
        response: "done".into(),
        session_id: "child".into(),
        agent: "zen".into(),
        status: SessionStatus::Completed,
        turn_count: 1,
        error: None,
        budget: None,
        isolation: None,
    };
    let todo = TodoItem {
        content: "Run tests".into(),
        active_form: "Running tests".into(),
        status: TodoStatus::InProgress,
    };
    let cases = [
        (None, None),
        (
            Some(ToolEffect::Todo(vec![todo])),
            Some((
                "todos",
                json!([{"content": "Run tests", "activeForm": "Running tests", "status": "in_progress"}]),
            )),
        ),
        (
            Some(ToolEffect::Task(result)),
            Some((
                "task_result",
                json!({"response": "done", "session_id": "child", "agent": "zen",
                       "status": "completed", "turn_count": 1}),
            )),
        ),
        (
            Some(ToolEffect::Transfer("billing".into())),
            Some(("transferred_to", json!("billing"))),
        ),
    ];
    for (effect, key) in cases {
        let event = Event {
            session_id: ROOT.into(),
            parent_id: None,
            timestamp: TS.into(),
            msg: EngineEvent::ToolPost(ToolPostEvent {
                tool_name: "t".into(),
                tool_call_id: "c".into(),
                result: "r".into(),
                truncated: false,
                tool_response: None,
                effect: effect.clone(),
                task: Some(TaskCallFields {
                    sub_session_id: "child".into(),
                    parent_session_id: ROOT.into(),
                    depth: 1,
                }),
            }),
        };
        let wire = serde_json::to_value(&event).unwrap();
        let mut expected = json!({"tool_name": "t", "tool_call_id": "c", "result": "r",
                                  "sub_session_id": "child", "parent_session_id": ROOT,
                                  "depth": 1});
        if let Some((key, value)) = key {
            expected[key] = value;
        }
        assert_eq!(wire["data"], expected);
        let line = serde_json::to_string(&event.to_log_line()).unwrap();
        let back = Event::from_log_line(&line).unwrap();
        assert_eq!(back.msg, event.msg, "{line}");
    }
}
