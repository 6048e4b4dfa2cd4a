//! Scheduler tests on paused tokio time: fake notifications in, rebuilds counted.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::time::timeout;

use super::*;
use crate::agent::{AgentDef, AgentIssue, AgentSource};

fn def(name: &str, description: &str, valid: bool) -> AgentDef {
    AgentDef {
        name: name.into(),
        namespace: None,
        source: AgentSource::User,
        path: None,
        description: description.into(),
        instruction: String::new(),
        overlay: json!({}),
        errors: if valid {
            Vec::new()
        } else {
            vec![AgentIssue {
                path: "x".into(),
                line: 1,
                column: 1,
                message: "bad".into(),
            }]
        },
        warnings: Vec::new(),
        shadows: Vec::new(),
    }
}

/// Classifies `/agents/...` as agents, `/config` as config, `/themes/...` as themes.
fn classify() -> ClassifyFn {
    Arc::new(|p: &Path| ChangeSet {
        agents: p.starts_with("/agents") && p.extension().is_some_and(|x| x == "md"),
        bundle: p.starts_with("/bundle"),
        config: p == Path::new("/config"),
        themes: p.starts_with("/themes"),
    })
}

/// A rebuild that counts calls and returns a registry with one agent `gen-<n>`.
fn counting_rebuild(calls: Arc<AtomicUsize>) -> RebuildFn {
    Arc::new(move |_changes, _bundle| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        Rebuilt {
            registry: Registry::from_defs(vec![def(&format!("gen-{n}"), "", true)]),
            bundle: None,
        }
    })
}

fn start(rebuild: RebuildFn) -> (mpsc::UnboundedSender<Notice>, SchedulerOutputs) {
    let (tx, rx) = mpsc::unbounded_channel();
    let out = ReloadScheduler::new(classify(), rebuild).spawn(
        rx,
        Arc::new(Registry::default()),
        Arc::new(Bundle::builtin()),
    );
    (tx, out)
}

fn touch(path: &str) -> Notice {
    Notice::Paths(vec![PathBuf::from(path)])
}

/// The scheduler's timing, on paused tokio time (`start_paused` + `advance`).
#[path = "paused.rs"]
mod paused;

#[test]
fn diff_classifies_names() {
    let old = Registry::from_defs(vec![
        def("same", "s", true),
        def("edited", "v1", true),
        def("breaks", "ok", true),
        def("fixed", "", false),
        def("gone", "", true),
    ]);
    let new = Registry::from_defs(vec![
        def("same", "s", true),
        def("edited", "v2", true),
        def("breaks", "ok", false),
        def("fixed", "", true),
        def("new-ok", "", true),
        def("new-bad", "", false),
    ]);
    let d = RegistryDiff::between(&old, &new);
    assert_eq!(d.added, ["new-ok"]);
    assert_eq!(d.changed, ["edited", "fixed"]);
    assert_eq!(d.removed, ["gone"]);
    assert_eq!(d.now_invalid, ["breaks", "new-bad"]);
    assert!(RegistryDiff::between(&old, &old).is_empty());
}
