//! The fixtures beside this checkout (`../shared/fixtures`), and what a test does when
//! they are missing: outside CI it skips with a printed note; under `CI=true` it fails,
//! so a CI run never passes a test that checked nothing. Every test that reads
//! `../shared` finds it through [`fixtures`].
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// `../shared/fixtures`, next to the crate.
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures");

/// `../shared/fixtures/<sub>` (a file or a directory) when it exists. When it does
/// not: `None` after a note on stderr (the caller returns: the test is skipped), or a
/// panic when the `CI` variable is set (to anything but empty, `0` or `false`).
pub fn fixtures(sub: &str) -> Option<PathBuf> {
    let path = Path::new(FIXTURES).join(sub);
    match decide(&path, std::env::var_os("CI").as_deref()) {
        Ok(found) => found,
        Err(message) => panic!("{message}"),
    }
}

/// What [`fixtures`] does for `path` with the `CI` variable `ci`: `Ok(Some)` when it
/// exists, `Ok(None)` (with a note) outside CI, `Err` (the failure message) in CI.
fn decide(path: &Path, ci: Option<&OsStr>) -> Result<Option<PathBuf>, String> {
    if path.exists() {
        return Ok(Some(path.to_path_buf()));
    }
    let in_ci = ci.is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
    if in_ci {
        return Err(format!(
            "{} is missing and CI is set: check out ../shared beside this crate (a test \
             that needs it must not pass without it)",
            path.display()
        ));
    }
    eprintln!("note: {} is absent; skipping", path.display());
    Ok(None)
}

#[test]
fn missing_fixtures_skip_outside_ci_and_fail_in_ci() {
    let missing = Path::new(FIXTURES).join("no-such-fixture");
    let ci = |v: &str| decide(&missing, Some(OsStr::new(v)));
    assert_eq!(decide(&missing, None), Ok(None));
    for off in ["", "0", "false"] {
        assert_eq!(ci(off), Ok(None), "CI={off:?}");
    }
    for on in ["true", "1", "yes"] {
        let err = ci(on).unwrap_err();
        assert!(err.contains("no-such-fixture is missing"), "{err}");
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        decide(here, Some(OsStr::new("true"))),
        Ok(Some(here.to_path_buf()))
    );
}
