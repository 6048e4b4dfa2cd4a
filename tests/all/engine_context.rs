//! Issue 26 in-process (scripted provider, temp dirs): a sub-session's final answer
//! reaches its parent capped (`context.child_answer_max_chars`) with a note saying
//! where the whole answer is, the child's transcript keeping it whole; and
//! `/compact [focus]` (the `Compact` command) summarising all but the newest turn, and
//! keeping nothing when the summary came out larger than what it replaces.

use crate::support::fixture::*;

use arbor::engine::compact::Compacted;
use arbor::engine::testing::{Drive, Step, after_tool_results, last_user_text};
use arbor::session::Message;
use serde_json::json;

#[tokio::test]
async fn a_long_child_answer_reaches_the_parent_cut_with_a_note() {
    let long = "y".repeat(500);
    let answer = long.clone();
    let fx = Fixture::new(
        plan(json!({"session": {"context": {"module": "context-simple",
            "config": {"child_answer_max_chars": 50}}}})),
        &[("helper", HELPER)],
        move |r| match (is_root(r), after_tool_results(r)) {
            (true, true) => vec![Step::text("root done")],
            (true, false) => vec![Step::call(
                "t1",
                "task",
                json!({"agent": "helper", "instruction": "write a lot"}),
            )],
            (false, _) => vec![Step::text(answer.clone())],
        },
    );
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "go".into()).await.unwrap();
    assert_eq!(out.response, "root done");
    let result = task_result(&fx.transcript(&root), "t1");
    let response = result["response"].as_str().unwrap();
    let child = result["session_id"].as_str().unwrap();
    assert!(
        response.starts_with(&format!("{}\n\n[answer cut at 50 of 500", &long[..50])),
        "{response}"
    );
    assert!(response.contains(&format!("arbor session show {child} --transcript")));
    let child_t = fx.transcript(child);
    assert_eq!(child_t.last().unwrap()["content"][0]["text"], long.as_str());
}

#[tokio::test]
async fn compact_now_summarises_all_but_the_newest_turn_with_the_focus() {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if r.system.starts_with("You compact") {
            return vec![Step::text("SUMMARY of turns one and two")];
        }
        // The turns the summary replaces are long enough for it to save something.
        let asked = last_user_text(r);
        let detail = if matches!(asked.as_str(), "one" | "two") {
            " with detail".repeat(200)
        } else {
            String::new()
        };
        vec![Step::text(format!("answer to {asked}{detail}"))]
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    for prompt in ["one", "two", "three"] {
        rt.run_turn(&root, prompt.into()).await.unwrap();
    }
    let done = rt.compact(&root, "the parser").await.unwrap();
    let Compacted::Now(event) = done else {
        panic!("expected a compaction, got {done:?}");
    };
    assert_eq!((event.covers, event.trigger.as_str()), (4, "manual"));
    assert_eq!(event.focus.as_deref(), Some("the parser"));
    let requests = fx.provider.requests();
    let summary_call = requests
        .iter()
        .find(|r| r.system.starts_with("You compact"))
        .unwrap();
    let asked = last_user_text(summary_call);
    assert!(
        asked.contains("Focus the summary on: the parser"),
        "{asked}"
    );
    assert!(
        asked.contains("user: one") && !asked.contains("user: three"),
        "{asked}"
    );
    // The next call sends arbor's note, the summary as the model's own (assistant)
    // words (issue 34: never as the person's), then the newest turn verbatim, then
    // the new one.
    rt.run_turn(&root, "four".into()).await.unwrap();
    let last = fx.provider.requests().pop().unwrap();
    let texts: Vec<String> = last.messages.iter().map(|m| m.text()).collect();
    assert!(
        matches!(&last.messages[0], Message::User(_))
            && texts[0].starts_with("[arbor: the earlier conversation was compacted"),
        "{texts:?}"
    );
    assert!(
        matches!(&last.messages[1], Message::Assistant(_))
            && texts[1] == "SUMMARY of turns one and two",
        "{texts:?}"
    );
    assert_eq!(&texts[2..], ["three", "answer to three", "four"]);
    // The transcript is whole, the event logged.
    assert_eq!(fx.transcript(&root).len(), 8);
    assert!(
        fx.logged_events(&root)
            .iter()
            .any(|e| e == "context:compaction")
    );
}

#[tokio::test]
async fn compact_now_whose_summary_is_larger_keeps_the_context_as_it_was() {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if r.system.starts_with("You compact") {
            return vec![Step::text("SUMMARY ".repeat(2000))];
        }
        vec![Step::text(format!("answer to {}", last_user_text(r)))]
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    for prompt in ["one", "two", "three"] {
        rt.run_turn(&root, prompt.into()).await.unwrap();
    }
    let done = rt.compact(&root, "").await.unwrap();
    let Compacted::NotSmaller { tokens, compacted } = done else {
        panic!("expected nothing saved, got {done:?}");
    };
    assert!(compacted >= tokens, "{compacted} < {tokens}");
    // Nothing recorded: no event, and the next call sends every turn verbatim.
    assert!(
        !fx.logged_events(&root)
            .iter()
            .any(|e| e == "context:compaction")
    );
    rt.run_turn(&root, "four".into()).await.unwrap();
    let last = fx.provider.requests().pop().unwrap();
    let texts: Vec<String> = last.messages.iter().map(|m| m.text()).collect();
    assert!(!texts.iter().any(|t| t.contains("SUMMARY")), "{texts:?}");
    assert_eq!(texts.first().map(String::as_str), Some("one"));
}
