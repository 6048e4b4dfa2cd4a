//! Issue 26 item 5: a sub-session's final answer reaches its parent capped
//! (`context.child_answer_max_chars`), with a note saying where the whole answer is;
//! the child's transcript keeps it whole.

use crate::support::fixture::*;

use arbor::engine::testing::{Step, after_tool_results};
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
    let rt = fx.runtime();
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
