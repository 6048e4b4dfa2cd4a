//! Agent browser state (filter, selection) and the registry reload diff with its
//! "reloaded" mark.
//!
//! Owns: which agents match the filter, which one is selected, what changed between
//! two registries. Does not own: loading the registry (`agent::registry`, the watcher)
//! or drawing (`views::browser`).

use jiff::Timestamp;
use serde_json::Value;

use crate::agent::reload::RegistryDiff;
use crate::agent::{AgentDef, Registry};

/// How long the "reloaded" mark stays visible.
pub const RELOAD_MARK_MS: i64 = 4_000;

/// Filter text and selection of the agent browser.
#[derive(Debug, Clone, Default)]
pub struct BrowserState {
    pub filter: String,
    /// Typing edits the filter (entered with `/`).
    pub filtering: bool,
    /// Name of the selected agent (stable across reloads).
    pub selected: Option<String>,
}

impl BrowserState {
    /// Agents matching the filter (case-insensitive substring of name, namespace,
    /// description or path), best first: a name starting with it (`tester` for
    /// `test`), then a name containing it, then the rest; registry order within each.
    pub fn visible<'r>(&self, registry: &'r Registry) -> Vec<&'r AgentDef> {
        let needle = self.filter.to_lowercase();
        let rank = |a: &AgentDef| -> Option<u8> {
            let name = a.name.to_lowercase();
            if needle.is_empty() || name.starts_with(&needle) {
                Some(0)
            } else if name.contains(&needle) {
                Some(1)
            } else if a.description.to_lowercase().contains(&needle)
                || a.namespace
                    .as_deref()
                    .unwrap_or("")
                    .to_lowercase()
                    .contains(&needle)
                || a.display_path().to_lowercase().contains(&needle)
            {
                Some(2)
            } else {
                None
            }
        };
        let mut ranked: Vec<(u8, &AgentDef)> = registry
            .agents()
            .iter()
            .filter_map(|a| rank(a).map(|r| (r, a)))
            .collect();
        // Stable: registry order within a rank.
        ranked.sort_by_key(|(r, _)| *r);
        ranked.into_iter().map(|(_, a)| a).collect()
    }

    /// Index of the selected agent in `visible` (first when unset or filtered out).
    pub fn selected_index(&self, visible: &[&AgentDef]) -> usize {
        self.selected
            .as_deref()
            .and_then(|s| visible.iter().position(|a| a.name == s))
            .unwrap_or(0)
    }

    /// Moves the selection by `delta` within the visible agents.
    pub fn move_selection(&mut self, registry: &Registry, delta: isize) {
        let visible = self.visible(registry);
        if visible.is_empty() {
            return;
        }
        let i = self
            .selected_index(&visible)
            .saturating_add_signed(delta)
            .min(visible.len() - 1);
        self.selected = Some(visible[i].name.clone());
    }

    /// The selected agent, if any is visible.
    pub fn current<'r>(&self, registry: &'r Registry) -> Option<&'r AgentDef> {
        let visible = self.visible(registry);
        let i = self.selected_index(&visible);
        visible.get(i).copied()
    }
}

/// `↻ reloaded: zen-architect (changed), helper (added)`; at most 3 names.
pub fn reload_summary(diff: &RegistryDiff) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (names, what) in [
        (&diff.added, "added"),
        (&diff.changed, "changed"),
        (&diff.now_invalid, "now invalid"),
        (&diff.removed, "removed"),
    ] {
        parts.extend(names.iter().map(|n| format!("{n} ({what})")));
    }
    let more = parts.len().saturating_sub(3);
    parts.truncate(3);
    let mut s = format!("↻ reloaded: {}", parts.join(", "));
    if more > 0 {
        s.push_str(&format!(" +{more} more"));
    }
    s
}

/// Whether `name` is touched by `diff`.
pub fn diff_touches(diff: &RegistryDiff, name: &str) -> bool {
    [&diff.added, &diff.changed, &diff.now_invalid, &diff.removed]
        .iter()
        .any(|l| l.iter().any(|n| n == name))
}

/// The last reload, shown until `until`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReloadMark {
    pub diff: RegistryDiff,
    pub until: Timestamp,
}

/// An agent's model role(s) from its overlay: top-level `model_role` wins over
/// `meta.model_role`; a list is joined with ` → ` (fallback order).
pub fn model_role(agent: &AgentDef) -> Option<String> {
    let v = agent
        .overlay
        .get("model_role")
        .or_else(|| agent.overlay.get("meta").and_then(|m| m.get("model_role")))?;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" → "),
        ),
        _ => None,
    }
}

/// Tool module names of an agent's overlay (`tools:` entries: string or `{module}`).
pub fn tools(agent: &AgentDef) -> Vec<String> {
    agent
        .overlay
        .get("tools")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|t| match t {
                    Value::String(s) => Some(s.clone()),
                    other => other
                        .get("module")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AgentDef, AgentSource};

    fn def(name: &str, description: &str) -> AgentDef {
        AgentDef {
            name: name.into(),
            namespace: None,
            source: AgentSource::User,
            path: None,
            description: description.into(),
            instruction: String::new(),
            overlay: serde_json::json!({}),
            errors: Vec::new(),
            warnings: Vec::new(),
            shadows: Vec::new(),
        }
    }

    #[test]
    fn a_name_starting_with_the_filter_comes_first() {
        let registry = Registry::from_defs(vec![
            def("bug-hunter", "Writes a failing test first."),
            def("unit-tester", "Adds tests."),
            def("tester", "Runs the tests."),
            def("zen", "Simplifies."),
        ]);
        let state = BrowserState {
            filter: "test".into(),
            ..Default::default()
        };
        let names: Vec<&str> = state
            .visible(&registry)
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["tester", "unit-tester", "bug-hunter"]);
    }
}
