//! Registry build for 1,000 user agent files (SPEC §16): `Registry::load` over a temp
//! `AMPLIFIER_HOME/agents` of generated valid agents (~30 frontmatter lines + body),
//! plus the built-in bundle. Run: `cargo bench --bench registry`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;

use arbor::agent::Bundle;
use arbor::agent::Registry;
use arbor::paths::Paths;
use divan::Bencher;
use divan::counter::ItemsCount;

fn main() {
    divan::main();
}

#[divan::bench(args = [100, 1_000], sample_count = 20)]
fn registry_load(bencher: Bencher, agents: usize) {
    let dir = tempfile::tempdir().unwrap();
    let amp = dir.path().join("amp");
    generate::write_agents(&amp.join("agents"), agents);
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let env = |k: &str| match k {
        "HOME" => Some(dir.path().join("home").display().to_string()),
        "AMPLIFIER_HOME" => Some(amp.display().to_string()),
        _ => None,
    };
    let paths = Paths::from_env_map(&env, work);
    let bundle = Bundle::builtin();
    let check = Registry::load(&paths, &bundle, &|_| None);
    assert!(
        check
            .agents()
            .iter()
            .filter(|a| a.errors.is_empty())
            .count()
            >= agents,
        "every generated agent is valid"
    );
    bencher
        .counter(ItemsCount::new(agents))
        .bench(|| Registry::load(&paths, &bundle, &|_| None));
}
