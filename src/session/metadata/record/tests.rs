//! `metadata.json` files written before arbor's keys were typed, and files Amplifier
//! writes, read into [`Metadata`] and written back.

use serde_json::{Value, json};

use super::*;

/// A worktree child's `metadata.json` as arbor wrote it before its keys were typed
/// (they were kept in `extra`, in the order arbor added them), with a key of another
/// tool at the end.
const BEFORE: &str = r#"{
  "session_id": "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer",
  "parent_id": "5f0e1c2a-1111-4222-8333-444455556666",
  "agent_name": "explorer",
  "created": "2026-01-02T10:00:00Z",
  "last_updated": "2026-01-02T10:05:00Z",
  "turn_count": 2,
  "working_dir": "/state/worktrees/proj/0a1b2c3d/src",
  "bundle": "bundle:foundation",
  "model": "openai/gpt-x",
  "status": "completed",
  "depth": 1,
  "config": {
    "tools": [
      {
        "module": "tool-filesystem"
      }
    ]
  },
  "agent_overlay": {
    "description": "Looks around"
  },
  "usage": {
    "input_tokens": 120,
    "output_tokens": 30,
    "cache_read_tokens": 0,
    "cache_creation_tokens": 0,
    "cost": 0.01
  },
  "name": "Look around",
  "files_changed": [
    {
      "path": "app.py",
      "tool": "edit_file",
      "lines_added": 1,
      "lines_removed": 1,
      "created": false,
      "changes": 1
    }
  ],
  "active_agent": "explorer",
  "turn_started": "2026-01-02T10:04:00Z",
  "budget": {
    "tokens": 100000,
    "since": {
      "tokens": 0
    }
  },
  "awaiting_approval": [
    "call_1"
  ],
  "context": {
    "tokens": 1500,
    "max_tokens": 200000
  },
  "model_role": "fast",
  "provider_preferences": [
    {
      "provider": "openai",
      "model": "gpt-*"
    }
  ],
  "resolved_model": {
    "provider": "openai",
    "model": "gpt-x",
    "via": "call preferences"
  },
  "agent_source": "project",
  "worktree": {
    "path": "/state/worktrees/proj/0a1b2c3d",
    "branch": "arbor/0a1b2c3d",
    "base": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "repo": "/home/me/proj",
    "subdir": "src",
    "state": "active",
    "git_dir": "/home/me/proj/.git/worktrees/0a1b2c3d",
    "common_dir": "/home/me/proj/.git",
    "changed": 3
  },
  "merge_policy": "review",
  "remote_runs": 2,
  "ran_on": {
    "worker": "w-1a2b3c4d",
    "host": "build-1",
    "pid": 4242
  },
  "todos": [
    {
      "content": "Run tests",
      "activeForm": "Running tests",
      "status": "in_progress"
    }
  ],
  "merge_conflict": [
    "app.py"
  ],
  "isolation_noted": true,
  "custom": {
    "kept": [
      1,
      2
    ]
  }
}"#;

#[test]
fn a_file_written_before_reads_typed_and_writes_back_byte_for_byte() {
    let m: Metadata = serde_json::from_str(BEFORE).unwrap();
    let a = &m.arbor;
    assert_eq!(a.files_changed.len(), 1);
    assert_eq!(a.active_agent.as_deref(), Some("explorer"));
    assert_eq!(a.awaiting_approval, ["call_1"]);
    assert_eq!(a.context.map(|c| c.max_tokens), Some(200_000));
    assert_eq!(a.model_role, Some(json!("fast")));
    assert_eq!(
        a.provider_preferences
            .as_ref()
            .map(|p| p[0]["model"].clone()),
        Some(json!("gpt-*"))
    );
    let resolved = a.resolved_model.as_ref().unwrap();
    assert_eq!(
        (resolved.label(), resolved.via),
        ("openai/gpt-x".into(), super::super::Via::CallPreferences)
    );
    assert_eq!(a.agent_source, Some(AgentSource::Project));
    let worktree = a.worktree.as_ref().unwrap();
    assert_eq!(worktree.branch, "arbor/0a1b2c3d");
    assert_eq!(worktree.changed, Some(3));
    assert_eq!(
        worktree.working_dir(),
        std::path::Path::new("/state/worktrees/proj/0a1b2c3d/src")
    );
    assert_eq!(a.merge_policy, Some(MergePolicy::Review));
    assert_eq!(a.remote_runs, Some(2));
    assert_eq!(a.ran_on.as_ref().map(|r| r.pid), Some(4242));
    assert_eq!(
        a.todos.as_ref().map(|t| t[0].status),
        Some(TodoStatus::InProgress)
    );
    assert_eq!(
        a.merge_conflict.as_deref(),
        Some(&["app.py".to_string()][..])
    );
    assert!(a.isolation_noted);
    // Only the other tool's key is left untyped.
    assert_eq!(m.extra.keys().collect::<Vec<_>>(), ["custom"]);
    assert_eq!(serde_json::to_string_pretty(&m).unwrap(), BEFORE);
}

#[test]
fn keys_in_another_order_write_back_key_for_key() {
    // The same keys, arbor's among another tool's and in another order.
    let mut shuffled = serde_json::Map::new();
    let before: Value = serde_json::from_str(BEFORE).unwrap();
    let mut entries: Vec<(String, Value)> =
        before.as_object().unwrap().clone().into_iter().collect();
    entries.reverse();
    shuffled.extend(entries);
    let m: Metadata = serde_json::from_value(Value::Object(shuffled.clone())).unwrap();
    let back = serde_json::to_value(&m).unwrap();
    assert_eq!(back, Value::Object(shuffled));
    assert_eq!(back, before);
}

#[test]
fn amplifiers_files_read_and_write_back_their_keys() {
    // A sub-session as amplifier-app-cli's `session_spawner.py` (f16375f) saves it.
    let spawned = json!({
        "session_id": "0000000000000000-0a1b2c3d4e5f6071_explorer",
        "parent_id": "5f0e1c2a-1111-4222-8333-444455556666",
        "trace_id": "5f0e1c2a-1111-4222-8333-444455556666",
        "agent_name": "explorer",
        "child_span": "0a1b2c3d4e5f6071",
        "created": "2026-01-02T10:00:00+00:00",
        "config": {"session": {"orchestrator": "loop-streaming", "context": "context-simple"}},
        "agent_overlay": {"description": "Looks around"},
        "turn_count": 1,
        "bundle_context": {"module_paths": {}, "mention_mappings": {}},
        "self_delegation_depth": 0,
        "working_dir": "/home/me/proj",
    });
    // A fork as amplifier-foundation's `session/fork.py` (d0d96f7) writes it.
    let forked = json!({
        "session_id": "77777777-1111-4222-8333-444455556666",
        "parent_id": "5f0e1c2a-1111-4222-8333-444455556666",
        "forked_from_turn": 2,
        "forked_at": "2026-01-02T11:00:00+00:00",
        "created": "2026-01-02T11:00:00+00:00",
        "turn_count": 2,
        "bundle": "bundle:foundation",
        "model": null,
    });
    for file in [&spawned, &forked] {
        let m: Metadata = serde_json::from_value(file.clone()).unwrap();
        assert_eq!(m.arbor, ArborKeys::default(), "no arbor key in {file}");
        let back = serde_json::to_value(&m).unwrap();
        for (key, value) in file.as_object().unwrap() {
            assert_eq!(&back[key], value, "{key} of {file}");
        }
    }
    let m: Metadata = serde_json::from_value(spawned).unwrap();
    assert_eq!(
        m.extra.keys().collect::<Vec<_>>(),
        [
            "trace_id",
            "child_span",
            "bundle_context",
            "self_delegation_depth"
        ]
    );
    let fork: Metadata = serde_json::from_value(forked).unwrap();
    assert_eq!(fork.forked_from_turn(), Some(2));
    assert_eq!(fork.forked_at.as_deref(), Some("2026-01-02T11:00:00+00:00"));
    assert!(fork.extra.is_empty());
}

#[test]
fn a_key_of_another_shape_reads_as_absent() {
    let m: Metadata = serde_json::from_value(json!({
        "session_id": "s",
        "worktree": "somewhere",
        "ran_on": 5,
        "merge_policy": "sometimes",
        "merge_conflict": "app.py",
        "isolation_noted": "yes",
        "agent_source": "martian",
        "todos": [{"content": "no status"}],
        "remote_runs": -1,
        "forked_from_turn": "three",
        "awaiting_approval": ["call_1", 7],
        "budget": "lots",
    }))
    .unwrap();
    assert_eq!(
        m.arbor,
        ArborKeys {
            awaiting_approval: vec!["call_1".into()],
            ..Default::default()
        }
    );
    assert_eq!(m.forked_from_turn(), None);
    assert!(m.extra.is_empty());
}

#[test]
fn the_accessors_answer_from_the_typed_keys() {
    let record = |state: &str| json!({"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": state});
    let of = |keys: Value| -> Metadata {
        let mut v = keys;
        v["session_id"] = json!("s");
        serde_json::from_value(v).unwrap()
    };
    let none = of(json!({}));
    assert_eq!((none.worktree(), none.active_worktree()), (None, None));
    // A child stored before issue 35 has no policy: manual.
    assert_eq!(none.merge_policy(), MergePolicy::Manual);
    assert_eq!(none.forked_from_turn(), None);

    let active =
        of(json!({"worktree": record("active"), "merge_policy": "auto", "forked_from_turn": 3}));
    assert_eq!(
        active.active_worktree().map(|r| r.branch.as_str()),
        Some("arbor/1a2b3c4d")
    );
    assert_eq!(active.merge_policy(), MergePolicy::Auto);
    assert_eq!(active.forked_from_turn(), Some(3));

    for state in ["clean", "merged", "discarded"] {
        let gone = of(json!({"worktree": record(state)}));
        assert!(gone.worktree().is_some(), "{state}");
        assert_eq!(gone.active_worktree(), None, "{state}");
    }
    let merged = active
        .active_worktree()
        .unwrap()
        .with_state(WorktreeState::Merged);
    assert_eq!(merged.state, WorktreeState::Merged);
    assert_eq!(merged.branch, "arbor/1a2b3c4d");
}
