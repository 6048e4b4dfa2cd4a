//! A temp Amplifier home for agent and hot-reload tests: `Paths` rooted in a temp dir,
//! agent file text, and writing files with their directories.
//! Used by the `agents` and `agent_reload` tests.
#![allow(dead_code)]

use std::path::Path;

use arbor::agent::{Bundle, Registry};
use arbor::paths::Paths;

/// Paths rooted in `root`: `root/home/.amplifier`, config under `root/home/.config`,
/// current directory `root/project` (created).
pub fn paths_in(root: &Path) -> Paths {
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let home = root.join("home");
    let env = move |k: &str| match k {
        "HOME" => Some(home.display().to_string()),
        "AMPLIFIER_HOME" => Some(home.join(".amplifier").display().to_string()),
        "ARBOR_CONFIG" => Some(home.join(".config/arbor/config.yaml").display().to_string()),
        _ => None,
    };
    Paths::from_env_map(&env, project)
}

/// Writes `text` to `path`, creating its directories.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A valid agent file named `name` with `description`.
pub fn agent(name: &str, description: &str) -> String {
    format!("---\nmeta:\n  name: {name}\n  description: {description}\n---\nYou are {name}.\n")
}

/// The built-in bundle without its agents.
pub fn empty_bundle() -> Bundle {
    let mut b = Bundle::builtin();
    b.agent_files.clear();
    b
}

/// The registry for `paths` and `bundle` with no `AMPLIFIER_AGENT_*` variables.
pub fn load(paths: &Paths, bundle: &Bundle) -> Registry {
    Registry::load_with_vars(paths, bundle, &[])
}
