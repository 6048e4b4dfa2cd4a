//! The parse cache against a real directory: reuse by stamp, re-parse on change, the
//! racy rule, dropping removed files, and the same registry as a build without cache.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::*;
use crate::agent::{Bundle, Registry};
use crate::paths::Paths;

fn paths(root: &Path) -> Paths {
    Paths {
        amplifier_home: root.join("home/.amplifier"),
        config_file: root.join("home/.config/arbor/config.yaml"),
        themes_dir: root.join("home/.config/arbor/themes"),
        log_file: root.join("log"),
        cwd: root.join("project"),
        store_home: None,
    }
}

fn agent(name: &str, description: &str) -> String {
    format!("---\nmeta:\n  name: {name}\n  description: {description}\n---\nYou are {name}.\n")
}

/// Writes `text` to `path` with an mtime `age` ago.
fn write_aged(path: &Path, text: &str, age: Duration) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

const OLD: Duration = Duration::from_secs(3600);

fn build(paths: &Paths, cache: &mut ParseCache) -> Registry {
    Registry::load_with_vars_cached(paths, &Bundle::builtin(), &[], Some(cache))
}

#[test]
fn unchanged_files_are_reused_and_changed_ones_parsed_again() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths(tmp.path());
    let dir = paths.user_agents_dir();
    for name in ["a", "b", "c"] {
        write_aged(&dir.join(format!("{name}.md")), &agent(name, "v1"), OLD);
    }
    let mut cache = ParseCache::default();
    build(&paths, &mut cache);
    assert_eq!(cache.parsed(), 3);
    assert_eq!(cache.len(), 3);
    let again = build(&paths, &mut cache);
    assert_eq!(cache.parsed(), 0, "nothing changed");
    assert_eq!(again.get("b").unwrap().description, "v1");

    // Same size, new (old enough) mtime: parsed again.
    write_aged(&dir.join("b.md"), &agent("b", "v2"), OLD / 2);
    let edited = build(&paths, &mut cache);
    assert_eq!(cache.parsed(), 1);
    assert_eq!(edited.get("b").unwrap().description, "v2");
    assert_eq!(
        edited,
        Registry::load_with_vars(&paths, &Bundle::builtin(), &[]),
        "the cached build equals a fresh one"
    );

    std::fs::remove_file(dir.join("c.md")).unwrap();
    let removed = build(&paths, &mut cache);
    assert!(removed.get("c").is_none());
    assert_eq!(cache.len(), 2, "the removed file left the cache");
}

#[test]
fn a_file_written_within_the_timestamp_tick_is_never_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths(tmp.path());
    let file = paths.user_agents_dir().join("a.md");
    // Fresh: its mtime is within `RACY` of the build that reads it.
    write_aged(&file, &agent("a", "v1"), Duration::ZERO);
    let mut cache = ParseCache::default();
    build(&paths, &mut cache);
    // Rewritten with the same size and the same mtime (as within one tick).
    let stamp = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, agent("a", "v2")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(stamp)
        .unwrap();
    let reg = build(&paths, &mut cache);
    assert_eq!(cache.parsed(), 1);
    assert_eq!(reg.get("a").unwrap().description, "v2");
}

#[test]
fn a_file_replaced_by_rename_is_parsed_again() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths(tmp.path());
    let dir = paths.user_agents_dir();
    write_aged(&dir.join("a.md"), &agent("a", "v1"), OLD);
    let mut cache = ParseCache::default();
    build(&paths, &mut cache);
    // Same size and mtime, another inode (`mv` of a file with a preserved mtime).
    write_aged(&dir.join(".a.tmp"), &agent("a", "v2"), OLD);
    std::fs::rename(dir.join(".a.tmp"), dir.join("a.md")).unwrap();
    let reg = build(&paths, &mut cache);
    assert_eq!(reg.get("a").unwrap().description, "v2");
}

#[test]
fn many_files_parse_in_parallel_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agents");
    for i in 0..(PARALLEL_FROM * 3 + 1) {
        write_aged(
            &dir.join(format!("agent-{i:03}.md")),
            &agent(&format!("agent-{i:03}"), "d"),
            OLD,
        );
    }
    let defs = load_dir(&dir, AgentSource::User, &Confinement::unconfined(), None);
    let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
    let expected: Vec<String> = (0..(PARALLEL_FROM * 3 + 1))
        .map(|i| format!("agent-{i:03}"))
        .collect();
    assert_eq!(names, expected);
    assert!(defs.iter().all(AgentDef::is_valid));
}
