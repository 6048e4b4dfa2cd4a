use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::tool::filesystem::tools;

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::in_dir(dir)
}

fn body(out: &ToolOutput) -> Value {
    serde_json::from_str(&out.content).unwrap_or_else(|e| panic!("{e}: {}", out.content))
}

async fn write(dir: &Path, input: Value) -> ToolOutput {
    WriteFile::default().call(input, ctx(dir)).await
}

async fn edit(dir: &Path, input: Value) -> ToolOutput {
    EditFile::default().call(input, ctx(dir)).await
}

/// Names in `dir`, to prove no temp file is left behind.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn write_file_creates_parents_and_reports_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let out = write(
        dir.path(),
        json!({"file_path": "src/new/a.txt", "content": "one\ntwo\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/new/a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(
        body(&out),
        json!({"file_path": "src/new/a.txt", "bytes": 8, "created": true, "lines_added": 2, "lines_removed": 0})
    );
    assert_eq!(
        out.effect,
        Some(ToolEffect::FileChange(FileChange {
            path: "src/new/a.txt".into(),
            tool: "write_file".into(),
            lines_added: 2,
            lines_removed: 0,
            created: true,
            changes: 1,
            hunks: None,
        }))
    );
    assert_eq!(names(&dir.path().join("src/new")), ["a.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn write_file_replaces_atomically_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sh");
    std::fs::write(&path, "#!/bin/sh\necho old\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let abs = path.to_str().unwrap().to_string();
    let out = write(
        dir.path(),
        json!({"file_path": abs, "content": "#!/bin/sh\necho new\necho more\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    let b = body(&out);
    assert_eq!(b["file_path"], "run.sh");
    assert_eq!(b["created"], false);
    assert_eq!(
        (b["lines_added"].as_u64(), b["lines_removed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(names(dir.path()), ["run.sh"]);
}

#[tokio::test]
async fn edit_file_replaces_one_exact_match() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    let out = edit(
        dir.path(),
        json!({"file_path": "a.rs", "old_string": "fn b() {}", "new_string": "fn b() -> u8 {\n    1\n}"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.rs")).unwrap(),
        "fn a() {}\nfn b() -> u8 {\n    1\n}\n"
    );
    assert_eq!(
        body(&out),
        json!({"file_path": "a.rs", "replacements_made": 1, "bytes_written": 33, "lines_added": 3, "lines_removed": 1})
    );
    let Some(ToolEffect::FileChange(change)) = out.effect else {
        panic!("{:?}", out.effect)
    };
    assert_eq!((change.tool.as_str(), change.created), ("edit_file", false));
    // The change itself, with its place in the file (issue 23 item 11).
    assert_eq!(
        change.hunks.as_deref(),
        Some("@@ -1,2 +1,4 @@\n fn a() {}\n-fn b() {}\n+fn b() -> u8 {\n+    1\n+}\n")
    );
}

#[tokio::test]
async fn edit_file_errors_name_the_match_count_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let original = "let x = 1;\nlet x = 1;\n";
    std::fs::write(dir.path().join("a.rs"), original).unwrap();
    let several = edit(
        dir.path(),
        json!({"file_path": "a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
    )
    .await;
    assert!(several.is_error);
    assert_eq!(
        several.content,
        "old_string matches 2 times in 'a.rs'. Give more surrounding context so it matches \
         exactly once, or set replace_all to true to replace all 2"
    );
    assert_eq!(several.effect, None);
    let none = edit(
        dir.path(),
        json!({"file_path": "a.rs", "old_string": "let y", "new_string": "let z"}),
    )
    .await;
    assert!(none.is_error);
    assert!(
        none.content
            .starts_with("old_string not found in 'a.rs' (0 matches)"),
        "{}",
        none.content
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.rs")).unwrap(),
        original
    );
    let all = edit(
        dir.path(),
        json!({"file_path": "a.rs", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
    )
    .await;
    assert!(!all.is_error, "{}", all.content);
    assert_eq!(body(&all)["replacements_made"], 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.rs")).unwrap(),
        "let x = 2;\nlet x = 2;\n"
    );
    let missing = edit(
        dir.path(),
        json!({"file_path": "nope.rs", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(missing.is_error && missing.content.contains("file not found: 'nope.rs'"));
    let bad = edit(dir.path(), json!({"file_path": "a.rs", "old_string": "x"})).await;
    assert!(bad.is_error && bad.content.contains("needs 'new_string'"));
    let bad = edit(
        dir.path(),
        json!({"file_path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": 3}),
    )
    .await;
    assert!(bad.is_error && bad.content.contains("true or false"));
}

#[tokio::test]
async fn edit_file_refuses_binary_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.bin"), b"ab\0cd").unwrap();
    let out = edit(
        dir.path(),
        json!({"file_path": "b.bin", "old_string": "ab", "new_string": "xy"}),
    )
    .await;
    assert!(
        out.is_error && out.content.contains("binary"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn writes_outside_the_working_directory_are_denied() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let escape = format!(
        "../{}/x.txt",
        outside.path().file_name().unwrap().to_string_lossy()
    );
    for requested in [
        escape.as_str(),
        "../../../../../../../../tmp/arbor-escape.txt",
        outside.path().join("y.txt").to_str().unwrap(),
    ] {
        let out = write(dir.path(), json!({"file_path": requested, "content": "x"})).await;
        assert!(out.is_error, "{requested}: {}", out.content);
        assert!(
            out.content.starts_with(&format!(
                "Access denied: '{requested}' is not within allowed_write_paths"
            )),
            "{}",
            out.content
        );
        let out = edit(
            dir.path(),
            json!({"file_path": requested, "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(out.content.starts_with("Access denied"), "{}", out.content);
    }
    assert!(names(outside.path()).is_empty());
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_are_resolved_before_the_check() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "keep").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    symlink(outside.path(), d.join("outdir")).unwrap();
    symlink(outside.path().join("secret.txt"), d.join("outfile")).unwrap();
    symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    std::fs::write(d.join("real.txt"), "old\n").unwrap();
    symlink(d.join("real.txt"), d.join("inlink")).unwrap();

    // Through a directory link, to an existing or a new file, or a new subdirectory.
    for requested in [
        "outdir/secret.txt",
        "outdir/new.txt",
        "outdir/sub/new.txt",
        "outfile",
    ] {
        let out = write(d, json!({"file_path": requested, "content": "pwned"})).await;
        assert!(out.is_error, "{requested}");
        assert!(out.content.contains("Access denied"), "{}", out.content);
        assert!(out.content.contains("it resolves to"), "{}", out.content);
    }
    let out = edit(
        d,
        json!({"file_path": "outfile", "old_string": "keep", "new_string": "gone"}),
    )
    .await;
    assert!(out.content.contains("Access denied"), "{}", out.content);
    assert_eq!(names(outside.path()), ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "keep"
    );

    let out = write(d, json!({"file_path": "dangling", "content": "x"})).await;
    assert!(
        out.is_error && out.content.contains("symlink"),
        "{}",
        out.content
    );

    // A link inside the root is written through: the target changes, the link stays.
    let out = write(d, json!({"file_path": "inlink", "content": "new\n"})).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(body(&out)["file_path"], "real.txt");
    assert_eq!(
        std::fs::read_to_string(d.join("real.txt")).unwrap(),
        "new\n"
    );
    assert!(
        std::fs::symlink_metadata(d.join("inlink"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn allowed_write_paths_config_sets_the_roots() {
    let extra = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = extra.path().to_str().unwrap();
    let config = WriteConfig::from_config(&json!({"allowed_write_paths": [root]}));
    let tool = WriteFile::new(config);
    let target = extra.path().join("a.txt");
    let out = tool
        .call(
            json!({"file_path": target.to_str().unwrap(), "content": "x"}),
            ctx(dir.path()),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(target.exists());
    // The working directory is not a root unless listed.
    let out = tool
        .call(
            json!({"file_path": "b.txt", "content": "x"}),
            ctx(dir.path()),
        )
        .await;
    assert!(out.content.starts_with("Access denied"), "{}", out.content);

    let none = WriteFile::new(WriteConfig::from_config(
        &json!({"allowed_write_paths": []}),
    ));
    let out = none
        .call(
            json!({"file_path": "b.txt", "content": "x"}),
            ctx(dir.path()),
        )
        .await;
    assert!(
        out.content.contains("(none: the list is empty"),
        "{}",
        out.content
    );

    let bad = WriteFile::new(WriteConfig::from_config(
        &json!({"allowed_write_paths": [".", 7]}),
    ));
    let out = bad
        .call(
            json!({"file_path": "b.txt", "content": "x"}),
            ctx(dir.path()),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("allowed_write_paths must list directory paths as strings, got 7"),
        "{}",
        out.content
    );
    assert!(!dir.path().join("b.txt").exists());
}

#[test]
fn read_only_mounts_only_the_read_tools() {
    let names =
        |config: Value| -> Vec<String> { tools(&config).iter().map(|t| t.spec().name).collect() };
    assert_eq!(
        names(json!({})),
        ["read_file", "list_directory", "write_file", "edit_file"]
    );
    assert_eq!(
        names(json!({"read_only": true})),
        ["read_file", "list_directory"]
    );
    assert_eq!(names(json!({"read_only": false})).len(), 4);
}

#[test]
fn previews_show_the_diff_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\nb\nc\n").unwrap();
    let diff = EditFile::default()
        .preview(
            &json!({"file_path": "a.txt", "old_string": "b", "new_string": "B"}),
            dir.path(),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        diff,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    );
    let created = WriteFile::default()
        .preview(
            &json!({"file_path": "n/new.txt", "content": "hi\n"}),
            dir.path(),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        created,
        "--- /dev/null\n+++ b/n/new.txt\n@@ -0,0 +1 @@\n+hi\n"
    );
    let denied = WriteFile::default()
        .preview(&json!({"file_path": "../x", "content": ""}), dir.path())
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(denied.starts_with("Access denied"), "{denied}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "a\nb\nc\n"
    );
    assert_eq!(names(dir.path()), ["a.txt"]);
}

/// Every file name under `dir`, found without following symlinks.
#[cfg(unix)]
fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                todo.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// Issue 22 "Writes": a directory swapped for a symlink to an outside directory, in a
/// tight loop on another thread while 1,000 writes run into it. Before the writes went
/// through a handle on the write root, 6–52 of them landed outside, each reported as
/// a success; now none does, and every write reported as a success is inside.
#[cfg(unix)]
#[tokio::test]
async fn a_directory_swapped_for_a_symlink_mid_write_never_leads_out() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    const WRITES: usize = 1_000;
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // Written into `sub/deep`, with `sub` swapped: a directory the swapper moves back
    // is never empty, so it never replaces (and loses) one a write just created.
    std::fs::create_dir_all(root.join("sub/deep")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Swap cycles so far: each write waits for a fresh one, so a swapper descheduled
    // on a busy machine cannot leave all the writes to one state.
    let cycles = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let swapper = {
        let (stop, root, cycles) = (stop.clone(), root.clone(), cycles.clone());
        let target = outside.path().to_path_buf();
        std::thread::spawn(move || {
            let sub = root.join("sub");
            let mut swaps = 0usize;
            // The directory stays for 0–127 µs between swaps, so they fall anywhere in a write.
            let mut seed = 0x9e37_79b9_u32;
            let mut hold = || {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let until = std::time::Instant::now()
                    + std::time::Duration::from_micros(u64::from(seed % 128));
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
            };
            while !stop.load(Ordering::Relaxed) {
                let away = root.join(format!("away{swaps}"));
                if std::fs::rename(&sub, &away).is_ok() {
                    if std::os::unix::fs::symlink(&target, &sub).is_ok() {
                        swaps += 1;
                        let _ = std::fs::remove_file(&sub);
                    }
                    let _ = std::fs::rename(&away, &sub);
                }
                cycles.fetch_add(1, Ordering::Relaxed);
                hold();
            }
            swaps
        })
    };
    let mut succeeded = Vec::new();
    let mut failed = 0usize;
    for i in 0..WRITES {
        let seen = cycles.load(Ordering::Relaxed);
        while cycles.load(Ordering::Relaxed) == seen {
            std::thread::yield_now();
        }
        let name = format!("f{i}.txt");
        let out = write(
            &root,
            json!({"file_path": format!("sub/deep/{name}"), "content": "x"}),
        )
        .await;
        if out.is_error {
            failed += 1;
        } else {
            succeeded.push(name);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let escaped = files_below(outside.path());
    let inside = files_below(&root);
    let reported_but_missing: Vec<_> = succeeded.iter().filter(|n| !inside.contains(n)).collect();
    eprintln!(
        "swaps {swaps}; writes: {} succeeded, {failed} failed, {} landed outside, {} \
         reported as written but not inside",
        succeeded.len(),
        escaped.len(),
        reported_but_missing.len()
    );
    assert!(swaps > 0, "the swapper never swapped");
    assert!(escaped.is_empty(), "landed outside: {escaped:?}");
    assert!(reported_but_missing.is_empty(), "{reported_but_missing:?}");
    assert_eq!(succeeded.len() + failed, WRITES);
    assert!(
        !inside.iter().any(|n| n.ends_with(".arbor-tmp")),
        "a temp file was left behind"
    );
}
