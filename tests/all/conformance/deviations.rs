//! `tests/all/conformance/deviations.yaml`: the cases arbor answers differently on purpose
//! (`deviation`), those with no arbor counterpart (`not_applicable`), and known bugs
//! awaiting a fix (`kind: deviation, status: bug`).
//!
//! Owns: loading the list, rejecting duplicates, and classifying one case's outcome
//! against it. Does not own: running cases (`eval`, the per-file runners).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// Why a case is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// arbor runs the case and answers differently on purpose (or, with `status: bug`,
    /// by mistake until the fix lands).
    Deviation,
    /// arbor has no counterpart of the case's function.
    NotApplicable,
}

/// One entry of `deviations.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub file: String,
    pub name: String,
    pub kind: Kind,
    pub reason: String,
    /// `bug`: not deliberate; remove once arbor is fixed.
    #[serde(default)]
    pub status: Option<String>,
}

/// The entries keyed by `(file, case name)`, plus the keys no case has used yet.
pub struct Deviations {
    entries: BTreeMap<(String, String), Entry>,
    unused: BTreeSet<(String, String)>,
}

/// How one case ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Deviation,
    NotApplicable,
    /// Neither passed nor listed, or listed wrongly; the text says why.
    Failed(String),
}

impl Deviations {
    /// Parses the YAML list; duplicates, empty reasons and unknown `status` values are
    /// errors.
    pub fn parse(text: &str) -> Result<Self, String> {
        let list: Vec<Entry> = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let mut entries = BTreeMap::new();
        for entry in list {
            if entry.reason.trim().is_empty() {
                return Err(format!("{}: '{}' has no reason", entry.file, entry.name));
            }
            if entry.status.as_deref().is_some_and(|s| s != "bug") {
                return Err(format!(
                    "{}: '{}': status must be 'bug'",
                    entry.file, entry.name
                ));
            }
            let key = (entry.file.clone(), entry.name.clone());
            if entries.insert(key, entry.clone()).is_some() {
                return Err(format!("{}: '{}' is listed twice", entry.file, entry.name));
            }
        }
        let unused = entries.keys().cloned().collect();
        Ok(Self { entries, unused })
    }

    /// Classifies a case of `file` named `name` whose run gave `outcome` (`None`: arbor
    /// has no mapping for its function).
    pub fn judge(
        &mut self,
        file: &str,
        name: &str,
        outcome: Option<Result<(), String>>,
    ) -> Verdict {
        let key = (file.to_string(), name.to_string());
        self.unused.remove(&key);
        let kind = self.entries.get(&key).map(|e| e.kind);
        match (kind, outcome) {
            (None, Some(Ok(()))) => Verdict::Passed,
            (None, Some(Err(e))) => Verdict::Failed(e),
            (None, None) => {
                Verdict::Failed("no arbor mapping for its function, and not listed".into())
            }
            (Some(Kind::Deviation), Some(Err(_))) => Verdict::Deviation,
            (Some(Kind::Deviation), Some(Ok(()))) => {
                Verdict::Failed("passes now: remove from deviations".into())
            }
            (Some(Kind::Deviation), None) => {
                Verdict::Failed("listed as a deviation but its function is not mapped".into())
            }
            (Some(Kind::NotApplicable), None) => Verdict::NotApplicable,
            (Some(Kind::NotApplicable), Some(_)) => Verdict::Failed(
                "listed as not applicable but arbor maps its function: remove from deviations"
                    .into(),
            ),
        }
    }

    /// The entry for a case, if listed.
    pub fn entry(&self, file: &str, name: &str) -> Option<&Entry> {
        self.entries.get(&(file.to_string(), name.to_string()))
    }

    /// Entries that matched no case (stale names or files).
    pub fn unused(&self) -> impl Iterator<Item = &(String, String)> {
        self.unused.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"
- {file: f.yaml, name: dev, kind: deviation, reason: on purpose}
- {file: f.yaml, name: na, kind: not_applicable, reason: no counterpart}
- {file: f.yaml, name: stale, kind: deviation, status: bug, reason: gone}
"#;

    #[test]
    fn listed_cases_must_still_differ() {
        let mut d = Deviations::parse(LIST).unwrap();
        assert_eq!(d.judge("f.yaml", "ok", Some(Ok(()))), Verdict::Passed);
        assert_eq!(
            d.judge("f.yaml", "dev", Some(Err("x".into()))),
            Verdict::Deviation
        );
        assert_eq!(d.judge("f.yaml", "na", None), Verdict::NotApplicable);
        let Verdict::Failed(why) = d.judge("f.yaml", "dev", Some(Ok(()))) else {
            panic!("a listed case that passes must fail");
        };
        assert!(why.contains("remove from deviations"), "{why}");
        assert!(matches!(
            d.judge("f.yaml", "na", Some(Ok(()))),
            Verdict::Failed(_)
        ));
        assert!(matches!(d.judge("f.yaml", "new", None), Verdict::Failed(_)));
        assert!(matches!(
            d.judge("f.yaml", "bad", Some(Err("x".into()))),
            Verdict::Failed(_)
        ));
        let unused: Vec<_> = d.unused().map(|(_, n)| n.as_str()).collect();
        assert_eq!(unused, ["stale"]);
    }

    #[test]
    fn malformed_lists_are_refused() {
        let twice = "- {file: f, name: a, kind: deviation, reason: r}\n".repeat(2);
        assert!(Deviations::parse(&twice).is_err());
        assert!(Deviations::parse("- {file: f, name: a, kind: deviation, reason: ' '}").is_err());
        assert!(Deviations::parse("- {file: f, name: a, kind: maybe, reason: r}").is_err());
        assert!(
            Deviations::parse("- {file: f, name: a, kind: deviation, status: wip, reason: r}")
                .is_err()
        );
    }
}
