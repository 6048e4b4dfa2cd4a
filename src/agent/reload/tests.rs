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
        agents: p.starts_with("/agents"),
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

/// Generous bound for waits on real time; tests never sleep for a fixed time.
const WAIT: Duration = Duration::from_secs(10);

/// The next event, failing the test after [`WAIT`].
async fn next(out: &mut SchedulerOutputs) -> Option<ReloadEvent> {
    timeout(WAIT, out.reloads.recv())
        .await
        .expect("no reload event in time")
}

/// Closes the notice channel and returns every event still to come (the scheduler
/// finishes its last burst, then the event channel closes).
async fn drain(tx: mpsc::UnboundedSender<Notice>, out: &mut SchedulerOutputs) -> Vec<ReloadEvent> {
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = next(out).await {
        events.push(e);
    }
    events
}

// These run on real time without fixed sleeps: a burst is queued before the scheduler
// task first runs (current-thread runtime), and closing the notice channel ends the
// scheduler, so "no further event" is observed deterministically. The same scenarios on
// paused time (`paused`) need tokio's `test-util` feature as a dev-dependency.

#[tokio::test]
async fn a_burst_gives_one_rebuild_and_one_event() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    for i in 0..10 {
        tx.send(touch(&format!("/agents/a{i}.md"))).unwrap();
    }
    let event = next(&mut out).await.unwrap();
    assert_eq!(
        event,
        ReloadEvent::Agents(RegistryDiff {
            added: vec!["gen-1".into()],
            ..Default::default()
        })
    );
    assert_eq!(out.registry.borrow().valid_names(), ["gen-1"]);
    assert!(drain(tx, &mut out).await.is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn separate_bursts_rebuild_separately() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(touch("/agents/a.md")).unwrap();
    assert!(matches!(next(&mut out).await, Some(ReloadEvent::Agents(_))));
    tx.send(touch("/agents/a.md")).unwrap();
    tx.send(touch("/agents/b.md")).unwrap();
    let Some(ReloadEvent::Agents(diff)) = next(&mut out).await else {
        panic!()
    };
    assert_eq!(diff.added, ["gen-2"]);
    assert_eq!(diff.removed, ["gen-1"]);
    assert!(drain(tx, &mut out).await.is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_never_ending_stream_still_rebuilds_after_max_burst() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::unbounded_channel();
    let mut scheduler = ReloadScheduler::new(classify(), counting_rebuild(calls.clone()));
    scheduler.quiet = Duration::from_millis(200);
    scheduler.max_burst = Duration::from_millis(50);
    let mut out = scheduler.spawn(
        rx,
        Arc::new(Registry::default()),
        Arc::new(Bundle::builtin()),
    );
    let feeder = tokio::spawn(async move {
        loop {
            if tx.send(touch("/agents/a.md")).is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert!(matches!(next(&mut out).await, Some(ReloadEvent::Agents(_))));
    feeder.abort();
}

#[tokio::test]
async fn config_and_theme_changes_do_not_rebuild_the_registry() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(touch("/config")).unwrap();
    tx.send(touch("/themes/dark.yaml")).unwrap();
    let events = drain(tx, &mut out).await;
    assert_eq!(
        events,
        [ReloadEvent::ConfigChanged, ReloadEvent::ThemeChanged]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn unrelated_paths_are_ignored_and_unchanged_registries_send_nothing() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let same: RebuildFn = Arc::new(move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Rebuilt {
            registry: Registry::default(),
            bundle: None,
        }
    });
    let (tx, mut out) = start(same);
    tx.send(touch("/elsewhere/x")).unwrap();
    tx.send(touch("/agents/x.md")).unwrap();
    assert!(drain(tx, &mut out).await.is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn rescan_rebuilds_everything() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(Notice::Rescan).unwrap();
    let events = drain(tx, &mut out).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events.contains(&ReloadEvent::ConfigChanged));
    assert!(events.contains(&ReloadEvent::ThemeChanged));
    assert!(events.iter().any(|e| matches!(e, ReloadEvent::Agents(_))));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bundle_results_are_published_or_reported() {
    let attempt = Arc::new(AtomicUsize::new(0));
    let a = attempt.clone();
    let rebuild: RebuildFn = Arc::new(move |changes, current| {
        assert!(changes.bundle);
        let n = a.fetch_add(1, Ordering::SeqCst);
        let bundle = if n == 0 {
            let mut b = (*current).clone();
            b.name = "renamed".into();
            Ok(b)
        } else {
            Err("b.yaml:2:9: bad".to_string())
        };
        Rebuilt {
            registry: Registry::default(),
            bundle: Some(bundle),
        }
    });
    let (tx, mut out) = start(rebuild);
    tx.send(touch("/bundle/b.yaml")).unwrap();
    assert!(matches!(
        next(&mut out).await,
        Some(ReloadEvent::BundleChanged { .. })
    ));
    assert_eq!(out.bundle.borrow().name, "renamed");
    tx.send(touch("/bundle/b.yaml")).unwrap();
    assert_eq!(
        next(&mut out).await,
        Some(ReloadEvent::BundleInvalid {
            message: "b.yaml:2:9: bad".into()
        })
    );
    assert_eq!(out.bundle.borrow().name, "renamed");
}

/// Paused-time versions (`start_paused` + `advance`).
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
