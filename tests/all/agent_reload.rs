//! Hot reload on a real file system (real `notify`; bounded waits): edits, each editor
//! save pattern giving one reload with the final content, directories created after
//! start, bundle changes. Never touches the real home (`support/agent_home.rs`).

use crate::support::agent_home;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_home::{agent, empty_bundle, load, paths_in, write};
use arbor::agent::reload::{RegistryDiff, ReloadEvent};
use arbor::agent::watcher::{AgentEnv, WatchSpec, WatcherHandle, spawn_watcher_with};
use arbor::agent::{AgentSource, Bundle, Registry};
use arbor::paths::Paths;

const WAIT: Duration = Duration::from_secs(15);

fn watch(paths: &Paths) -> WatcherHandle {
    let bundle = Arc::new(empty_bundle());
    let registry = Arc::new(load(paths, &bundle));
    spawn_watcher_with(WatchSpec {
        paths: paths.clone(),
        bundle_path: None,
        env: AgentEnv::Vars(Arc::from(Vec::new())),
        bundle,
        registry,
    })
    .unwrap()
}

/// Waits (bounded) for an event after which `done(event, registry)` holds.
async fn wait_for(
    h: &mut WatcherHandle,
    what: &str,
    done: impl Fn(&ReloadEvent, &Registry) -> bool,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, h.reloads.recv()).await {
            Ok(Some(e)) => {
                let reg = h.registry.borrow().clone();
                if done(&e, &reg) {
                    return;
                }
            }
            Ok(None) => panic!("watcher stopped while waiting for {what}"),
            Err(_) => panic!("timed out waiting for {what}"),
        }
    }
}

fn description(reg: &Registry, name: &str) -> Option<String> {
    reg.get(name).map(|a| a.description.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_and_editor_save_patterns_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    let dir = paths.user_agents_dir();
    let file = dir.join("alpha.md");
    write(&file, &agent("alpha", "v1"));
    let mut h = watch(&paths);

    write(&file, &agent("alpha", "v2"));
    wait_for(&mut h, "in-place edit", |e, reg| {
        matches!(e, ReloadEvent::Agents(d) if d.changed == ["alpha"])
            && description(reg, "alpha").as_deref() == Some("v2")
    })
    .await;

    let temp = dir.join(".alpha.md.tmp");
    write(&temp, &agent("alpha", "v3"));
    std::fs::rename(&temp, &file).unwrap();
    wait_for(&mut h, "write-temp-then-rename", |e, reg| {
        matches!(e, ReloadEvent::Agents(d) if d.changed == ["alpha"])
            && description(reg, "alpha").as_deref() == Some("v3")
    })
    .await;

    std::fs::remove_file(&file).unwrap();
    write(&file, &agent("alpha", "v4"));
    wait_for(&mut h, "delete-then-create", |_, reg| {
        description(reg, "alpha").as_deref() == Some("v4")
    })
    .await;

    write(
        &file,
        "---\nmeta:\n  name: alpha\nagents: maybe\n---\nBody\n",
    );
    wait_for(
        &mut h,
        "now invalid",
        |e, _| matches!(e, ReloadEvent::Agents(d) if d.now_invalid == ["alpha"]),
    )
    .await;

    write(&dir.join("beta.md"), &agent("beta", "b"));
    wait_for(
        &mut h,
        "added",
        |e, _| matches!(e, ReloadEvent::Agents(d) if d.added == ["beta"]),
    )
    .await;
    std::fs::remove_file(dir.join("beta.md")).unwrap();
    wait_for(
        &mut h,
        "removed",
        |e, _| matches!(e, ReloadEvent::Agents(d) if d.removed == ["beta"]),
    )
    .await;

    write(&paths.config_file, "theme: dark\n");
    wait_for(&mut h, "config change", |e, _| {
        *e == ReloadEvent::ConfigChanged
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_directories_created_after_start_are_picked_up() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    assert!(!paths.user_agents_dir().exists());
    let mut h = watch(&paths);

    write(
        &paths.user_agents_dir().join("late-user.md"),
        &agent("late-user", "u"),
    );
    wait_for(
        &mut h,
        "user agent in a new dir",
        |e, _| matches!(e, ReloadEvent::Agents(d) if d.added == ["late-user"]),
    )
    .await;

    write(
        &paths.cwd.join(".amplifier/agents/late-project.md"),
        &agent("late-project", "p"),
    );
    wait_for(&mut h, "project agent in a new dir", |e, reg| {
        matches!(e, ReloadEvent::Agents(d) if d.added == ["late-project"])
            && reg
                .get("late-project")
                .is_some_and(|a| a.source == AgentSource::Project)
    })
    .await;

    // The new directory itself is now watched: a later edit is seen too.
    write(
        &paths.cwd.join(".amplifier/agents/late-project.md"),
        &agent("late-project", "p2"),
    );
    wait_for(&mut h, "edit in the new dir", |_, reg| {
        description(reg, "late-project").as_deref() == Some("p2")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundle_file_changes_reload_the_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    let bundle_file = tmp.path().join("mybundle/bundle.md");
    write(&bundle_file, "---\nbundle: {name: mine}\n---\nRoot v1\n");
    write(
        &tmp.path().join("mybundle/agents/helper.md"),
        &agent("helper", "h1"),
    );
    let bundle = Arc::new(Bundle::load(&bundle_file).unwrap());
    let registry = Arc::new(load(&paths, &bundle));
    assert_eq!(registry.get("mine:helper").unwrap().description, "h1");
    let mut h = spawn_watcher_with(WatchSpec {
        paths: paths.clone(),
        bundle_path: Some(bundle_file.clone()),
        env: AgentEnv::Vars(Arc::from(Vec::new())),
        bundle,
        registry,
    })
    .unwrap();

    write(&bundle_file, "---\nbundle: {name: mine}\n---\nRoot v2\n");
    wait_for(&mut h, "bundle change", |e, _| {
        matches!(e, ReloadEvent::BundleChanged { .. })
    })
    .await;
    assert_eq!(h.bundle.borrow().mount_plan.instruction(), "Root v2");

    write(
        &tmp.path().join("mybundle/agents/helper.md"),
        &agent("helper", "h2"),
    );
    wait_for(&mut h, "bundle agent change", |e, reg| {
        matches!(e, ReloadEvent::Agents(d) if d.changed == ["helper"])
            && description(reg, "mine:helper").as_deref() == Some("h2")
    })
    .await;

    write(
        &bundle_file,
        "---\nbundle: {name: mine}\nagents: maybe\n---\nRoot v3\n",
    );
    wait_for(
        &mut h,
        "bundle error",
        |e, _| matches!(e, ReloadEvent::BundleInvalid { message } if message.contains("'maybe'")),
    )
    .await;
    assert_eq!(h.bundle.borrow().mount_plan.instruction(), "Root v2");
}

/// Longer than the scheduler's removal grace and quiet window together: a second
/// reload of the same save would have come by then.
const SETTLE: Duration = Duration::from_millis(800);

/// Starts watching a user agent `alpha` (description `v1`), saves `v2` over it with
/// `save`, and asserts exactly one reload: `alpha` changed, with the final content.
async fn one_reload_for(what: &str, save: impl FnOnce(&Path, &str)) {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    let file = paths.user_agents_dir().join("alpha.md");
    write(&file, &agent("alpha", "v1"));
    let mut h = watch(&paths);
    save(&file, &agent("alpha", "v2"));
    let first = tokio::time::timeout(WAIT, h.reloads.recv())
        .await
        .unwrap_or_else(|_| panic!("{what}: no reload"));
    let changed = RegistryDiff {
        changed: vec!["alpha".into()],
        ..Default::default()
    };
    assert_eq!(first, Some(ReloadEvent::Agents(changed)), "{what}");
    assert_eq!(
        description(&h.registry.borrow(), "alpha").as_deref(),
        Some("v2"),
        "{what}"
    );
    let second = tokio::time::timeout(SETTLE, h.reloads.recv()).await;
    assert!(second.is_err(), "{what}: a second reload {second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_place_save_is_one_reload() {
    one_reload_for("truncate, then write in two parts", |file, text| {
        let mut f = std::fs::File::create(file).unwrap();
        let (a, b) = text.split_at(text.len() / 2);
        f.write_all(a.as_bytes()).unwrap();
        f.flush().unwrap();
        f.write_all(b.as_bytes()).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_temp_then_rename_is_one_reload() {
    one_reload_for("write-temp-then-rename", |file, text| {
        let temp = file.with_file_name(".alpha.md.tmp");
        std::fs::write(&temp, text).unwrap();
        std::fs::rename(&temp, file).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_then_create_is_one_reload() {
    one_reload_for("delete-then-create", |file, text| {
        std::fs::remove_file(file).unwrap();
        std::fs::write(file, text).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_delete_then_create_is_one_reload() {
    one_reload_for("delete, 60 ms, create", |file, text| {
        std::fs::remove_file(file).unwrap();
        // Longer than the quiet window: only the removal grace keeps it one burst.
        std::thread::sleep(Duration::from_millis(60));
        std::fs::write(file, text).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_to_backup_then_write_is_one_reload() {
    one_reload_for(
        "vim: rename to backup, write, delete backup",
        |file, text| {
            let backup = file.with_file_name("alpha.md~");
            std::fs::rename(file, &backup).unwrap();
            std::fs::write(file, text).unwrap();
            std::fs::remove_file(&backup).unwrap();
        },
    )
    .await;
}
