//! Whether a writing sub-session gets its own git worktree (issue 25): the
//! `isolation:` value of `config.yaml` (the default), of agent frontmatter and of a
//! `task` call.
//!
//! Owns: [`Isolation`] and its spelling, and the precedence of the three places
//! ([`Isolation::choose`]). Does not own: creating worktrees (`isolation`), deciding
//! whether an agent can write (`engine::spawn`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `isolation: worktree | none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A writing sub-session in a git repository runs in its own worktree on a branch
    /// `arbor/<short id>` (the default).
    #[default]
    Worktree,
    /// It works in its parent's working directory.
    None,
}

/// An `isolation:` value that is neither `worktree` nor `none`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("isolation: expected worktree or none, got {got}")]
pub struct BadIsolation {
    /// The value as given (`'copy'`, `42`, …).
    pub got: String,
}

impl Isolation {
    /// The spelling in files and calls (`worktree`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Worktree => "worktree",
            Isolation::None => "none",
        }
    }

    /// Parses a JSON value: `null`/absent is `Ok(None)`; `"worktree"`/`"none"` the
    /// mode; anything else [`BadIsolation`].
    pub fn parse(value: Option<&Value>) -> Result<Option<Self>, BadIsolation> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s == "worktree" => Ok(Some(Isolation::Worktree)),
            Some(Value::String(s)) if s == "none" => Ok(Some(Isolation::None)),
            Some(Value::String(s)) => Err(BadIsolation {
                got: format!("'{s}'"),
            }),
            Some(other) => Err(BadIsolation {
                got: other.to_string(),
            }),
        }
    }

    /// The mode a sub-session gets: the `task` call's, else its agent's frontmatter
    /// (`overlay["isolation"]`; a bad value counts as absent, `agent validate` reports
    /// it), else the config's, else [`Isolation::Worktree`] (issue 25 item 1).
    pub fn choose(call: Option<Self>, overlay: &Value, config: Option<Self>) -> Self {
        call.or_else(|| Self::parse(overlay.get("isolation")).ok().flatten())
            .or(config)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_call_beats_the_agent_which_beats_the_config() {
        let agent = json!({"isolation": "none"});
        assert_eq!(
            Isolation::choose(Some(Isolation::Worktree), &agent, None),
            Isolation::Worktree
        );
        assert_eq!(
            Isolation::choose(None, &agent, Some(Isolation::Worktree)),
            Isolation::None
        );
        assert_eq!(
            Isolation::choose(None, &json!({}), Some(Isolation::None)),
            Isolation::None
        );
        assert_eq!(
            Isolation::choose(None, &json!({}), None),
            Isolation::Worktree
        );
    }

    #[test]
    fn bad_values_are_named() {
        let e = Isolation::parse(Some(&json!("copy"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "isolation: expected worktree or none, got 'copy'"
        );
        assert_eq!(Isolation::parse(Some(&json!(null))), Ok(None));
    }
}
