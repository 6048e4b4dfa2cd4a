//! Whether a writing sub-session gets its own git worktree, and how its work comes
//! home (issues 25 and 35): the `isolation:` value of `config.yaml` (the default), of
//! agent frontmatter and of a `task` call.
//!
//! Spelled either as a plain mode (`isolation: worktree | none`) or as a map
//! (`isolation: {mode: worktree, merge: auto | review | manual}`, both keys
//! optional). Each key is chosen on its own: the call's, else the agent's, else the
//! config's, else the default (`worktree`, `auto`).
//!
//! Owns: [`Isolation`], the spelling of it and of [`MergePolicy`] ([`IsolationSetting`]) and the
//! precedence of the three places ([`IsolationSetting::choose`]). Does not own:
//! creating or merging worktrees (`isolation`, `engine::isolate`), deciding whether an
//! agent can write (`engine::isolate`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

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

/// `isolation: {merge: auto | review | manual}` (its shape is metadata's, where a
/// worktree child keeps its policy as `merge_policy`).
pub use crate::session::metadata::MergePolicy;

/// An `isolation:` value that does not parse; the text says which key and value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadIsolation(pub String);

impl Isolation {
    /// The spelling in files and calls (`worktree`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Worktree => "worktree",
            Isolation::None => "none",
        }
    }

    fn from_value(value: &Value) -> Result<Self, BadIsolation> {
        match value {
            Value::String(s) if s == "worktree" => Ok(Isolation::Worktree),
            Value::String(s) if s == "none" => Ok(Isolation::None),
            Value::String(s) => Err(BadIsolation(format!(
                "isolation: expected worktree or none, got '{s}'"
            ))),
            other => Err(BadIsolation(format!(
                "isolation: expected worktree or none, got {other}"
            ))),
        }
    }
}

/// One place's `isolation:` value: the mode and the merge policy it sets (each
/// `None` when that place leaves it to the next).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IsolationSetting {
    /// `worktree` or `none`.
    pub mode: Option<Isolation>,
    /// `auto`, `review` or `manual`.
    pub merge: Option<MergePolicy>,
}

impl IsolationSetting {
    /// Parses a JSON value: `null`/absent is `Ok(None)`; `"worktree"`/`"none"` the
    /// mode; `{mode?, merge?}` either or both; anything else [`BadIsolation`] naming
    /// the key and value.
    pub fn parse(value: Option<&Value>) -> Result<Option<Self>, BadIsolation> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Self::from_map(map).map(Some),
            Some(other) => Ok(Some(Self {
                mode: Some(Isolation::from_value(other)?),
                merge: None,
            })),
        }
    }

    fn from_map(map: &Map<String, Value>) -> Result<Self, BadIsolation> {
        let mut setting = Self::default();
        for (key, value) in map {
            match key.as_str() {
                "mode" => setting.mode = Some(Isolation::from_value(value)?),
                "merge" => {
                    let policy = value.as_str().and_then(MergePolicy::from_name);
                    setting.merge = Some(policy.ok_or_else(|| {
                        let got = match value {
                            Value::String(s) => format!("'{s}'"),
                            other => other.to_string(),
                        };
                        BadIsolation(format!(
                            "isolation.merge: expected auto, review or manual, got {got}"
                        ))
                    })?);
                }
                other => {
                    return Err(BadIsolation(format!(
                        "isolation: unknown key '{other}' (expected mode or merge)"
                    )));
                }
            }
        }
        Ok(setting)
    }

    /// The value as written: the plain mode when only it is set, else the map.
    pub fn to_value(self) -> Value {
        match (self.mode, self.merge) {
            (Some(mode), None) => json!(mode.as_str()),
            (mode, merge) => {
                let mut map = Map::new();
                if let Some(mode) = mode {
                    map.insert("mode".into(), json!(mode.as_str()));
                }
                if let Some(merge) = merge {
                    map.insert("merge".into(), json!(merge.as_str()));
                }
                Value::Object(map)
            }
        }
    }

    /// The mode and merge policy a sub-session gets, each on its own: the `task`
    /// call's, else its agent's frontmatter (`overlay["isolation"]`; a bad value
    /// counts as absent, `agent validate` reports it), else the config's, else
    /// [`Isolation::Worktree`] and [`MergePolicy::Auto`].
    pub fn choose(
        call: Option<Self>,
        overlay: &Value,
        config: Option<Self>,
    ) -> (Isolation, MergePolicy) {
        let agent = Self::parse(overlay.get("isolation")).ok().flatten();
        let places = [call, agent, config];
        let mode = places.iter().flatten().find_map(|s| s.mode);
        let merge = places.iter().flatten().find_map(|s| s.merge);
        (mode.unwrap_or_default(), merge.unwrap_or_default())
    }
}

impl Serialize for IsolationSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for IsolationSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::parse(Some(&value))
            .map_err(serde::de::Error::custom)?
            .ok_or_else(|| serde::de::Error::custom("isolation: expected a value, got null"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(value: Value) -> Option<IsolationSetting> {
        IsolationSetting::parse(Some(&value)).unwrap()
    }

    #[test]
    fn the_call_beats_the_agent_which_beats_the_config() {
        let agent = json!({"isolation": "none"});
        let choose = IsolationSetting::choose;
        assert_eq!(
            choose(set(json!("worktree")), &agent, None).0,
            Isolation::Worktree
        );
        assert_eq!(
            choose(None, &agent, set(json!("worktree"))).0,
            Isolation::None
        );
        assert_eq!(
            choose(None, &json!({}), set(json!("none"))).0,
            Isolation::None
        );
        assert_eq!(
            choose(None, &json!({}), None),
            (Isolation::Worktree, MergePolicy::Auto)
        );
    }

    #[test]
    fn mode_and_merge_are_chosen_each_on_its_own() {
        let agent = json!({"isolation": {"merge": "review"}});
        assert_eq!(
            IsolationSetting::choose(
                set(json!("worktree")),
                &agent,
                set(json!({"mode": "none", "merge": "manual"}))
            ),
            (Isolation::Worktree, MergePolicy::Review)
        );
        assert_eq!(
            IsolationSetting::choose(None, &json!({}), set(json!({"merge": "manual"}))),
            (Isolation::Worktree, MergePolicy::Manual)
        );
    }

    #[test]
    fn bad_values_are_named() {
        let bad = |v: Value| IsolationSetting::parse(Some(&v)).unwrap_err().to_string();
        assert_eq!(
            bad(json!("copy")),
            "isolation: expected worktree or none, got 'copy'"
        );
        assert_eq!(
            bad(json!({"merge": "later"})),
            "isolation.merge: expected auto, review or manual, got 'later'"
        );
        assert_eq!(
            bad(json!({"when": "now"})),
            "isolation: unknown key 'when' (expected mode or merge)"
        );
        assert_eq!(IsolationSetting::parse(Some(&json!(null))), Ok(None));
    }

    #[test]
    fn the_plain_form_round_trips_through_yaml() {
        let plain: IsolationSetting = serde_json::from_value(json!("none")).unwrap();
        assert_eq!(plain.to_value(), json!("none"));
        let map: IsolationSetting = serde_json::from_value(json!({"merge": "manual"})).unwrap();
        assert_eq!(map.merge, Some(MergePolicy::Manual));
        assert_eq!(map.to_value(), json!({"merge": "manual"}));
    }
}
