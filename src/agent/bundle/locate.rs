//! Finding a bundle by the reference a session's metadata records (`bundle`), and
//! publishing arbor's built-in bundle as a file Amplifier can load.
//!
//! References are resolved the way amplifier-app-cli does for the cases that exist on
//! this machine (`lib/bundle_loader/prepare.py` `load_and_prepare_bundle`,
//! `discovery.py` `find` / `_find_in_path`, foundation's `registry.json`): a
//! `bundle:` prefix is dropped (`session_store.extract_session_mode`); `file://` URIs
//! (with an optional `#subdirectory=`) and paths are used directly; a name is looked
//! up as `<name>/bundle.md`, `<name>/bundle.yaml`, `<name>.yaml`, `<name>.md` in
//! `.amplifier/bundles` (the current directory or an ancestor — only when that
//! project is trusted, `config::trust`) and
//! `$AMPLIFIER_HOME/bundles`, then in `$AMPLIFIER_HOME/registry.json`
//! (`bundles.<name>.local_path`, or a `file://` `uri`). `git+…`, `http(s)://` and
//! `zip+…` are remote: never fetched. Amplifier's well-known bundles resolved from
//! installed Python packages (`foundation` → the package's directory) are not
//! found here unless registered in one of those places.
//!
//! Owns: [`locate`], [`file_uri`], [`publish_builtin`], what a new root records
//! ([`reference_of`]) and which bundle a stored one stands for ([`bundle_for`]). Does not own: loading the
//! bundle file (`bundle`), or deciding what to do when nothing is found (`engine`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{BUILTIN_AGENTS, BUILTIN_BUNDLE, Bundle};
use crate::config::trust;
use crate::paths::Paths;

/// The prefix Amplifier writes before a bundle name in `metadata.bundle`.
pub const BUNDLE_PREFIX: &str = "bundle:";

/// Where a bundle reference led.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// A bundle file or directory on this machine.
    Path(PathBuf),
    /// A remote URI (`git+…`, `http(s)://…`, `zip+…`): arbor does not fetch it.
    Remote(String),
    /// Nothing matched; the name or path that was looked for.
    NotFound(String),
}

/// `file://` + the path, as Amplifier writes bundle URIs (no percent-encoding).
pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Resolves a `metadata.bundle` value (see the module docs for the order).
pub fn locate(reference: &str, paths: &Paths) -> Located {
    let reference = reference.trim();
    let reference = reference.strip_prefix(BUNDLE_PREFIX).unwrap_or(reference);
    if let Some(rest) = reference.strip_prefix("file://") {
        let (path, fragment) = rest.split_once('#').unwrap_or((rest, ""));
        let mut path = PathBuf::from(path);
        if let Some(sub) = fragment.strip_prefix("subdirectory=") {
            path = path.join(sub);
        }
        return existing(path);
    }
    if ["git+", "http://", "https://", "zip+"]
        .iter()
        .any(|p| reference.starts_with(p))
    {
        return Located::Remote(reference.to_string());
    }
    let as_path = Path::new(reference);
    if as_path.is_absolute() || reference.starts_with('.') || reference.contains(['/', '\\']) {
        let path = if as_path.is_absolute() {
            as_path.to_path_buf()
        } else {
            paths.cwd.join(as_path)
        };
        if path.exists() {
            return Located::Path(path);
        }
    }
    if reference.is_empty() {
        return Located::NotFound(String::new());
    }
    let mut search: Vec<PathBuf> = project_bundles(paths)
        .filter(|(root, _)| trust::is_trusted(paths, root))
        .map(|(_, dir)| dir)
        .into_iter()
        .collect();
    search.push(paths.amplifier_home.join("bundles"));
    for base in &search {
        if let Some(found) = find_in(base, reference) {
            return Located::Path(found);
        }
    }
    match registered(&paths.amplifier_home.join("registry.json"), reference) {
        Some(Located::Path(p)) => existing(p),
        Some(other) => other,
        None => Located::NotFound(reference.to_string()),
    }
}

/// What a new root records as `metadata.bundle`: a `file://` URI Amplifier's resume
/// loads directly (`load_and_prepare_bundle` takes URIs as they are) — the bundle
/// file of a bundle loaded from disk, else the built-in bundle published under
/// [`Paths::bundles_dir`]. When publishing fails (a read-only state directory) the
/// bundle's name, logged.
pub fn reference_of(active: &Bundle, paths: &Paths) -> String {
    if let Some(path) = &active.path {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        return file_uri(&path);
    }
    match publish_builtin(&paths.bundles_dir()) {
        Ok(dir) => file_uri(&dir),
        Err(e) => {
            tracing::warn!(
                "cannot publish the built-in bundle under {}: {e}; recording its name",
                paths.bundles_dir().display()
            );
            active.name.clone()
        }
    }
}

/// The bundle a stored root's `bundle` reference (`None`: none recorded) stands
/// for: the active bundle when the reference names it (its name, `bundle:` + name, or
/// the URI [`reference_of`] records), else the one [`locate`] finds on this machine.
/// When none is found, it is remote, it lies in a project that is not trusted (a
/// cloned repository's bundle never loads, nor starts its MCP servers, for a resumed
/// session: issue 22), or it does not load, the active bundle stands in and the
/// second value says why (a note for the thread and `session show`).
pub fn bundle_for(
    active: &Bundle,
    paths: &Paths,
    reference: Option<&str>,
) -> (Bundle, Option<String>) {
    let fallback = |why: String| {
        let note = format!(
            "{why}; rebuilt from arbor's active bundle '{}' (no stored config)",
            active.name
        );
        (active.clone(), Some(note))
    };
    let Some(reference) = reference
        .map(str::trim)
        .filter(|r| !r.is_empty() && *r != "unknown")
    else {
        return fallback("the session names no bundle".into());
    };
    let name = reference.strip_prefix(BUNDLE_PREFIX).unwrap_or(reference);
    if name == active.name || reference == reference_of(active, paths) {
        return (active.clone(), None);
    }
    match locate(reference, paths) {
        Located::Path(path) => {
            if let Some(why) = untrusted_home(&path, paths) {
                return fallback(format!("bundle '{reference}' is not loaded: {why}"));
            }
            match Bundle::load(&path) {
                Ok(bundle) => (bundle, None),
                Err(e) => fallback(format!("bundle '{reference}' does not load ({e})")),
            }
        }
        Located::Remote(uri) => fallback(format!("bundle '{uri}' is remote (not fetched)")),
        Located::NotFound(_) => {
            let skipped = project_bundles(paths)
                .and_then(|(_, dir)| find_in(&dir, name))
                .and_then(|p| untrusted_home(&p, paths));
            match skipped {
                Some(why) => fallback(format!("bundle '{reference}' is not loaded: {why}")),
                None => fallback(format!("bundle '{reference}' is not on this machine")),
            }
        }
    }
}

/// The nearest `.amplifier/bundles` of `paths.cwd` or an ancestor, with that
/// project's root.
fn project_bundles(paths: &Paths) -> Option<(PathBuf, PathBuf)> {
    paths.cwd.ancestors().find_map(|d| {
        let dir = d.join(trust::BUNDLES_DIR);
        dir.is_dir().then(|| (d.to_path_buf(), dir))
    })
}

/// Why `path` (a located bundle) may not be loaded for a stored session: it lies in
/// a project that is not trusted (SPEC §12 "Trust", issue 22).
fn untrusted_home(path: &Path, paths: &Paths) -> Option<String> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let root = trust::project_root(&path)?;
    (!trust::is_trusted(paths, &root)).then(|| {
        format!(
            "it is in the project {}, which is not trusted (run `arbor trust` there to load it)",
            root.display()
        )
    })
}

fn existing(path: PathBuf) -> Located {
    if path.exists() {
        Located::Path(path)
    } else {
        Located::NotFound(path.display().to_string())
    }
}

/// Amplifier's `_find_in_path`: `<name>/bundle.md`, `<name>/bundle.yaml`,
/// `<name>.yaml`, `<name>.md` under `base`.
fn find_in(base: &Path, name: &str) -> Option<PathBuf> {
    let dir = base.join(name);
    let candidates = [
        dir.join("bundle.md"),
        dir.join("bundle.yaml"),
        base.join(format!("{name}.yaml")),
        base.join(format!("{name}.md")),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

/// `registry.json` → `bundles.<name>`: its `local_path`, else its `uri` (a `file://`
/// one as a path, another as remote). `None` when the file or entry is missing or
/// unreadable.
fn registered(registry: &Path, name: &str) -> Option<Located> {
    let text = std::fs::read_to_string(registry).ok()?;
    let doc: Value = serde_json::from_str(&text).ok()?;
    let entry = doc.get("bundles")?.get(name)?;
    if let Some(local) = entry.get("local_path").and_then(Value::as_str) {
        return Some(Located::Path(PathBuf::from(local)));
    }
    let uri = entry.get("uri").and_then(Value::as_str)?;
    match uri.strip_prefix("file://") {
        Some(path) => Some(Located::Path(PathBuf::from(
            path.split_once('#').map_or(path, |(p, _)| p),
        ))),
        None => Some(Located::Remote(uri.to_string())),
    }
}

/// Writes arbor's built-in bundle (`bundle.md` + `agents/*.md`, the embedded files
/// as they are) to `<dir>/arbor/` and returns that directory, which Amplifier loads
/// as `file://<dir>/arbor`. Files already holding the same text are left alone, so
/// the URI stays stable and a running Amplifier never sees a half-written file
/// twice; a changed file is written to a temp file and renamed over.
///
/// Errors: the I/O error of creating a directory or writing a file.
pub fn publish_builtin(dir: &Path) -> std::io::Result<PathBuf> {
    let root = dir.join("arbor");
    let agents = root.join("agents");
    std::fs::create_dir_all(&agents)?;
    write_if_changed(&root.join("bundle.md"), BUILTIN_BUNDLE)?;
    for (stem, text) in BUILTIN_AGENTS {
        write_if_changed(&agents.join(format!("{stem}.md")), text)?;
    }
    Ok(root)
}

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths_in(root: &Path) -> Paths {
        let home = root.join("home");
        let cwd = root.join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        let env = move |k: &str| match k {
            "HOME" => Some(home.display().to_string()),
            "AMPLIFIER_HOME" => Some(root.join("amp").display().to_string()),
            _ => None,
        };
        Paths::from_env_map(&env, cwd)
    }

    #[test]
    fn names_resolve_through_amplifier_search_paths_and_registry() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths_in(tmp.path());
        let user = paths.amplifier_home.join("bundles").join("mine");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("bundle.md"), "---\nbundle: {name: mine}\n---\n").unwrap();
        assert_eq!(
            locate("bundle:mine", &paths),
            Located::Path(user.join("bundle.md"))
        );
        let project = paths.cwd.join(".amplifier").join("bundles");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("mine.yaml"), "bundle: {name: mine}\n").unwrap();
        // An untrusted project's bundles are not searched, and never load by name.
        assert_eq!(
            locate("mine", &paths),
            Located::Path(user.join("bundle.md"))
        );
        let active = Bundle::builtin();
        let (bundle, note) =
            bundle_for(&active, &paths, Some(&file_uri(&project.join("mine.yaml"))));
        assert_eq!(bundle.name, active.name);
        assert!(note.unwrap().contains("which is not trusted"));
        crate::config::trust::TrustStore::load(&paths.trust_file())
            .unwrap()
            .trust(&paths.cwd)
            .unwrap();
        assert_eq!(
            locate("mine", &paths),
            Located::Path(project.join("mine.yaml"))
        );
        let elsewhere = tmp.path().join("reg");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let registry = serde_json::json!({"version": 1, "bundles": {
            "reg": {"uri": format!("file://{}", elsewhere.display())},
            "far": {"uri": "git+https://example.invalid/b@main"}}});
        std::fs::write(
            paths.amplifier_home.join("registry.json"),
            registry.to_string(),
        )
        .unwrap();
        assert_eq!(locate("reg", &paths), Located::Path(elsewhere));
        assert_eq!(
            locate("bundle:far", &paths),
            Located::Remote("git+https://example.invalid/b@main".into())
        );
        assert_eq!(
            locate("bundle:foundation", &paths),
            Located::NotFound("foundation".into())
        );
    }

    #[test]
    fn file_uris_and_remote_uris() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths_in(tmp.path());
        let dir = tmp.path().join("b");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        assert_eq!(locate(&file_uri(&dir), &paths), Located::Path(dir.clone()));
        let with_sub = format!("{}#subdirectory=sub", file_uri(&dir));
        assert_eq!(locate(&with_sub, &paths), Located::Path(dir.join("sub")));
        assert!(matches!(
            locate("file:///no/such/bundle", &paths),
            Located::NotFound(_)
        ));
        assert!(matches!(
            locate("https://example.invalid/b.md", &paths),
            Located::Remote(_)
        ));
    }

    #[test]
    fn the_builtin_bundle_is_published_once_and_loads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = publish_builtin(tmp.path()).unwrap();
        let modified = std::fs::metadata(root.join("bundle.md"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(publish_builtin(tmp.path()).unwrap(), root);
        let again = std::fs::metadata(root.join("bundle.md"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(modified, again, "unchanged files are not rewritten");
        let loaded = super::super::Bundle::load(&root).unwrap();
        let builtin = super::super::Bundle::builtin();
        assert_eq!(loaded.name, builtin.name);
        assert_eq!(loaded.mount_plan, builtin.mount_plan);
        assert_eq!(loaded.agent_files.len(), BUILTIN_AGENTS.len());
    }
}
