//! Trees and exports of stored sessions, and Amplifier's `find_session` cases.

use arbor::session::export::{export_json, export_markdown};
use arbor::session::ids::{self, SessionId};
use arbor::session::tree::{build_tree, subtree_ids};
use arbor::session::{Message, SessionStore, StoreError};
use serde_json::Value;

use super::{ROOT, child_meta, meta, transcript};

/// root → (planner child, coder child → grandchild), built with real ids.
fn family(store: &SessionStore) -> (String, String, String) {
    let a = SessionId::child_with_span(&ROOT.into(), "planner", "00000000000000aa");
    let b = SessionId::child_with_span(&ROOT.into(), "coder", "00000000000000bb");
    let g = SessionId::child(&b, "Test Writer");
    assert!(
        g.starts_with("00000000000000bb-") && g.ends_with("_test-writer"),
        "{g}"
    );
    let mut w = store.create(&meta(ROOT)).unwrap();
    for m in transcript() {
        w.append_message(&m).unwrap();
    }
    for (id, parent, created) in [
        (&b, ROOT, "2025-01-01T00:00:02Z"),
        (&a, ROOT, "2025-01-01T00:00:01Z"),
        (&g, b.as_str(), "2025-01-01T00:00:03Z"),
    ] {
        let mut w = store.create(&child_meta(id, parent, created)).unwrap();
        w.append_message(&Message::user(format!("task for {id}")))
            .unwrap();
    }
    (a.into(), b.into(), g.into())
}

#[test]
fn tree_of_stored_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let (a, b, g) = family(&store);
    let tree = build_tree(store.list().unwrap());
    assert_eq!(tree.len(), 1);
    assert_eq!(
        subtree_ids(&tree, ROOT),
        [ROOT, a.as_str(), b.as_str(), g.as_str()]
    );
    assert_eq!(subtree_ids(&tree, &b), [b.as_str(), g.as_str()]);
}

#[test]
fn export_holds_the_whole_subtree() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let (a, b, g) = family(&store);

    let md = export_markdown(&store, ROOT).unwrap();
    let pos = |id: &str| md.find(&format!("## Session `{id}`")).unwrap();
    assert!(
        pos(ROOT) < pos(&a) && pos(&a) < pos(&b) && pos(&b) < pos(&g),
        "{md}"
    );
    assert!(md.contains("list the files") && md.contains(&format!("task for {g}")));
    assert!(
        md.contains("Tool call `glob` (`c1`)") && md.contains("a.rs\nb.rs"),
        "{md}"
    );

    let sub = export_markdown(&store, &b).unwrap();
    assert!(sub.contains(&g) && !sub.contains(&a) && !sub.contains("list the files"));

    let doc: Value = serde_json::from_str(&export_json(&store, ROOT).unwrap()).unwrap();
    assert_eq!(doc["format"], "arbor.session-export");
    let root = &doc["session"];
    assert_eq!(root["metadata"]["session_id"], ROOT);
    assert_eq!(root["transcript"].as_array().unwrap().len(), 4);
    assert_eq!(root["children"][0]["metadata"]["session_id"], a.as_str());
    assert_eq!(root["children"][1]["metadata"]["session_id"], b.as_str());
    assert_eq!(
        root["children"][1]["children"][0]["metadata"]["session_id"],
        g.as_str()
    );
    assert_eq!(
        root["children"][1]["children"][0]["transcript"][0]["content"],
        format!("task for {g}")
    );

    assert!(matches!(
        export_json(&store, "nope"),
        Err(StoreError::NotFound(_))
    ));
}

/// Amplifier's `find_session` and `SessionStore.exists` cases against `resolve` and
/// `exists`. Deviations (arbor asserts its own behaviour): arbor resolves sub-sessions
/// too (no `top_level_only`), and its errors are `NotFound`/`Ambiguous`/`InvalidId`
/// rather than Amplifier's message texts.
#[test]
fn amplifier_find_session_cases() {
    let Some(path) = crate::support::shared::fixtures("peer-cases/amplifier-ids.yaml") else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let cases: Vec<Value> = serde_saphyr::from_str(&text).unwrap();
    let mut ran = 0;
    for case in &cases {
        let function = case["function"].as_str().unwrap_or("");
        if function != "app_cli.SessionStore.find_session"
            && function != "app_cli.SessionStore.exists"
        {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let input = &case["input"];
        let tmp = tempfile::tempdir().unwrap();
        for dir in input["existing_dirs"].as_array().unwrap() {
            std::fs::create_dir(tmp.path().join(dir.as_str().unwrap())).unwrap();
        }
        let store = SessionStore::new(tmp.path());
        ran += 1;
        if function == "app_cli.SessionStore.exists" {
            let id = input["session_id"].as_str().unwrap();
            assert_eq!(
                store.exists(id),
                case["expected"].as_bool().unwrap(),
                "{name}"
            );
            continue;
        }
        let partial = input["partial_id"].as_str().unwrap();
        let got = store.resolve(partial);
        let top_level_only = input.get("top_level_only").and_then(Value::as_bool) != Some(false);
        let sub_session_deviation = top_level_only
            && input["existing_dirs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| ids::is_sub_session(d.as_str().unwrap()));
        if sub_session_deviation {
            assert_eq!(
                got.unwrap(),
                input["existing_dirs"][0].as_str().unwrap(),
                "{name}"
            );
        } else if let Some(expected) = case["expected"].as_str() {
            assert_eq!(got.unwrap(), expected, "{name}");
        } else {
            let contains = case["expected_error"]["contains"][0].as_str().unwrap();
            match got {
                Err(StoreError::Ambiguous { matches, .. }) if contains.starts_with("Ambiguous") => {
                    assert_eq!(
                        matches.len(),
                        input["existing_dirs"].as_array().unwrap().len(),
                        "{name}"
                    );
                }
                Err(StoreError::InvalidId { .. }) if contains.contains("cannot be empty") => {}
                Err(StoreError::NotFound(_)) if contains.starts_with("No session found") => {}
                other => panic!("{name}: unexpected {other:?}"),
            }
        }
    }
    assert!(ran >= 10, "only {ran} cases mapped");
}
