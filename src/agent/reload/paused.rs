//! The scheduler on paused tokio time: bursts are built with `advance`, so the quiet
//! window itself is under test (tokio's `test-util` dev feature).

use tokio::time::advance;

use super::*;

/// No further event arrives (paused time auto-advances through the timeout).
async fn assert_quiet(out: &mut SchedulerOutputs) {
    assert!(
        timeout(Duration::from_secs(5), out.reloads.recv())
            .await
            .is_err()
    );
}

#[tokio::test(start_paused = true)]
async fn a_burst_gives_one_rebuild_and_one_event() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    for i in 0..10 {
        tx.send(touch(&format!("/agents/a{i}.md"))).unwrap();
        advance(QUIET_WINDOW / 2).await;
    }
    // Still inside the burst: nothing rebuilt yet.
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    advance(Duration::from_millis(100)).await;
    let event = out.reloads.recv().await.unwrap();
    assert_eq!(
        event,
        ReloadEvent::Agents(RegistryDiff {
            added: vec!["gen-1".into()],
            ..Default::default()
        })
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(out.registry.borrow().valid_names(), ["gen-1"]);
    assert_quiet(&mut out).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn separate_bursts_rebuild_separately() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(touch("/agents/a.md")).unwrap();
    advance(Duration::from_millis(200)).await;
    assert!(matches!(
        out.reloads.recv().await,
        Some(ReloadEvent::Agents(_))
    ));
    tx.send(touch("/agents/a.md")).unwrap();
    tx.send(touch("/agents/b.md")).unwrap();
    advance(Duration::from_millis(200)).await;
    let Some(ReloadEvent::Agents(diff)) = out.reloads.recv().await else {
        panic!()
    };
    assert_eq!(diff.added, ["gen-2"]);
    assert_eq!(diff.removed, ["gen-1"]);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_never_ending_stream_still_rebuilds_after_max_burst() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    let feeder = tokio::spawn(async move {
        for _ in 0..100 {
            let _ = tx.send(touch("/agents/a.md"));
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    });
    let first = timeout(MAX_BURST + Duration::from_millis(200), out.reloads.recv()).await;
    assert!(matches!(first, Ok(Some(ReloadEvent::Agents(_)))));
    feeder.abort();
}

#[tokio::test(start_paused = true)]
async fn config_and_theme_changes_do_not_rebuild_the_registry() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(touch("/config")).unwrap();
    tx.send(touch("/themes/dark.yaml")).unwrap();
    advance(Duration::from_millis(100)).await;
    assert_eq!(out.reloads.recv().await, Some(ReloadEvent::ConfigChanged));
    assert_eq!(out.reloads.recv().await, Some(ReloadEvent::ThemeChanged));
    assert_quiet(&mut out).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
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
    advance(Duration::from_millis(100)).await;
    assert_quiet(&mut out).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    tx.send(touch("/agents/x.md")).unwrap();
    assert_quiet(&mut out).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn rescan_rebuilds_everything() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(Notice::Rescan).unwrap();
    advance(Duration::from_millis(100)).await;
    let mut events = Vec::new();
    for _ in 0..3 {
        events.push(out.reloads.recv().await.unwrap());
    }
    assert!(events.contains(&ReloadEvent::ConfigChanged));
    assert!(events.contains(&ReloadEvent::ThemeChanged));
    assert!(events.iter().any(|e| matches!(e, ReloadEvent::Agents(_))));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
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
            Err(crate::agent::bundle::BundleError::Parse {
                path: "b.yaml".into(),
                line: 2,
                column: 9,
                message: "bad".into(),
            })
        };
        Rebuilt {
            registry: Registry::default(),
            bundle: Some(bundle),
        }
    });
    let (tx, mut out) = start(rebuild);
    tx.send(touch("/bundle/b.yaml")).unwrap();
    advance(Duration::from_millis(100)).await;
    assert!(matches!(
        out.reloads.recv().await,
        Some(ReloadEvent::BundleChanged { .. })
    ));
    assert_eq!(out.bundle.borrow().name, "renamed");
    tx.send(touch("/bundle/b.yaml")).unwrap();
    advance(Duration::from_millis(100)).await;
    assert_eq!(
        out.reloads.recv().await,
        Some(ReloadEvent::BundleInvalid {
            message: "b.yaml:2:9: bad".into()
        })
    );
    assert_eq!(out.bundle.borrow().name, "renamed");
}

fn removed(path: &str) -> Notice {
    Notice::Removed(vec![PathBuf::from(path)])
}

#[tokio::test(start_paused = true)]
async fn an_edit_is_handled_one_quiet_window_after_its_last_notice() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(touch("/agents/a.md")).unwrap();
    advance(QUIET_WINDOW - Duration::from_millis(2)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "still inside the window");
    advance(Duration::from_millis(4)).await;
    assert!(matches!(
        out.reloads.recv().await,
        Some(ReloadEvent::Agents(_))
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn delete_then_create_within_the_grace_is_one_rebuild() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(removed("/agents/a.md")).unwrap();
    // Longer than the quiet window, shorter than the removal grace.
    advance(QUIET_WINDOW * 3).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a removal waits for its file"
    );
    tx.send(touch("/agents/a.md")).unwrap();
    advance(QUIET_WINDOW + Duration::from_millis(2)).await;
    assert!(matches!(
        out.reloads.recv().await,
        Some(ReloadEvent::Agents(_))
    ));
    assert_quiet(&mut out).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_removal_alone_is_handled_after_the_grace() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    tx.send(touch("/agents/a.md")).unwrap();
    tx.send(removed("/agents/b.md")).unwrap();
    advance(REMOVAL_GRACE - Duration::from_millis(2)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    advance(Duration::from_millis(4)).await;
    assert!(matches!(
        out.reloads.recv().await,
        Some(ReloadEvent::Agents(_))
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn removing_an_unrelated_file_does_not_delay_the_reload() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut out) = start(counting_rebuild(calls.clone()));
    // Vim's save: the old file renamed to a backup, the new one written, the backup
    // deleted (not an agent file, so no grace).
    tx.send(removed("/agents/a.md")).unwrap();
    tx.send(touch("/agents/a.md~")).unwrap();
    tx.send(touch("/agents/a.md")).unwrap();
    tx.send(removed("/agents/a.md~")).unwrap();
    advance(QUIET_WINDOW + Duration::from_millis(2)).await;
    assert!(matches!(
        out.reloads.recv().await,
        Some(ReloadEvent::Agents(_))
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
