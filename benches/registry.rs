//! Registry build for 100 and 1,000 user agent files (SPEC §16): `Registry::load` over a
//! temp `AMPLIFIER_HOME/agents` of generated valid agents (~30 frontmatter lines +
//! body), plus the built-in bundle; and the watcher's reload after one of 1,000 files
//! changed (`Registry::load_cached` with the previous build's cache: the changed file
//! is parsed again, the others reused by stamp). Run: `cargo bench --bench registry`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use arbor::agent::Bundle;
use arbor::agent::Registry;
use arbor::agent::registry::ParseCache;
use arbor::paths::Paths;
use divan::Bencher;
use divan::counter::ItemsCount;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn main() {
    divan::main();
}

/// A temp Amplifier home with `agents` generated agent files, its `Paths`, and the
/// agents directory.
fn setup(agents: usize) -> (tempfile::TempDir, Paths, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let amp = dir.path().join("amp");
    let agents_dir = amp.join("agents");
    generate::write_agents(&agents_dir, agents);
    // Files a person edits are older than the file system's timestamp tick; freshly
    // generated ones are not, and a cache rightly refuses to trust them.
    let old = SystemTime::now() - Duration::from_secs(3600);
    for entry in std::fs::read_dir(&agents_dir).unwrap() {
        let file = std::fs::File::options()
            .write(true)
            .open(entry.unwrap().path())
            .unwrap();
        file.set_modified(old).unwrap();
    }
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let home = dir.path().join("home");
    let env = |k: &str| match k {
        "HOME" => Some(home.display().to_string()),
        "AMPLIFIER_HOME" => Some(amp.display().to_string()),
        _ => None,
    };
    let paths = Paths::from_env_map(&env, work);
    (dir, paths, agents_dir)
}

fn valid_count(registry: &Registry) -> usize {
    registry
        .agents()
        .iter()
        .filter(|a| a.errors.is_empty())
        .count()
}

#[divan::bench(args = [100, 1_000], sample_count = 20)]
fn registry_load(bencher: Bencher, agents: usize) {
    let (_dir, paths, _) = setup(agents);
    let bundle = Bundle::builtin();
    let check = Registry::load(&paths, &bundle, &|_| None);
    assert!(
        valid_count(&check) >= agents,
        "every generated agent is valid"
    );
    bencher
        .counter(ItemsCount::new(agents))
        .bench(|| Registry::load(&paths, &bundle, &|_| None));
}

/// One agent file rewritten (a random one of `agents`, its description edited, new
/// mtime) between reloads; each sample times the rebuild the watcher runs.
#[divan::bench(args = [1_000], sample_count = 20, sample_size = 5)]
fn registry_reload_one_changed(bencher: Bencher, agents: usize) {
    let (_dir, paths, agents_dir) = setup(agents);
    let bundle = Bundle::builtin();
    let mut cache = ParseCache::default();
    let first = Registry::load_cached(&paths, &bundle, &|_| None, &mut cache);
    assert!(valid_count(&first) >= agents);
    let seed: u64 = rand::random();
    eprintln!("registry_reload_one_changed seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let files: Vec<PathBuf> = arbor::agent::registry::agent_files_in(&agents_dir);
    let mut version = 0usize;
    bencher
        .counter(ItemsCount::new(agents))
        .with_inputs(|| {
            version += 1;
            let path = &files[rng.random_range(0..files.len())];
            edit(path, version);
        })
        .bench_local_values(|()| {
            let reg = Registry::load_cached(&paths, &bundle, &|_| None, &mut cache);
            assert!(cache.parsed() >= 1, "the edited file is parsed again");
            reg
        });
}

/// Rewrites the description line of agent file `path` to name `version`.
fn edit(path: &Path, version: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[4] = format!("    edited {version}");
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}
