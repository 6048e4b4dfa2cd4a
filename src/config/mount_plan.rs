//! The mount plan: a session's whole configuration (SPEC §5), as named fields for the
//! keys arbor reads and an `extra` map for every other key.
//!
//! The named keys follow Amplifier's mount plan (amplifier-core 2.0.2
//! `validation/mount_plan.py`: `session.{orchestrator,context}`, `providers`, `tools`,
//! `hooks` as module lists, `agents`) plus the ones arbor's bundles and agent files add
//! (`spawn`, `instruction`, `model_role`, `provider_preferences`). Reading is lenient
//! and lossless: a known key whose value has another type stays in `extra`, a list item
//! that is not a plain module entry is kept as it was ([`ModuleSpec::Other`]), and the
//! keys are written back in the order they were read ([`KeyOrder`]), so Amplifier's
//! files round-trip to the same JSON (tests/all/plan_roundtrip.rs). Does not own:
//! merging plans (`merge`), tightening limits (`limits`).

mod agents;
mod keyed;
mod parsed;
mod preferences;
mod provider;
mod spawn;

pub use agents::{AgentAccess, AgentName};
pub use keyed::KeyOrder;
use keyed::{Fields, json, write_object};
pub use parsed::{Parsed, PlanValue};
pub use preferences::{PreferenceError, ProviderPreference, parse_preferences};
pub use provider::ProviderConfig;
pub use spawn::{Listed, SpawnPolicy, ToolRef};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::approvals::Rules;

/// A session's configuration. Every field is `None` when its key is absent or holds a
/// value of another type (that value is then in `extra`, untouched).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MountPlan {
    /// `session`: the orchestrator and context modules.
    pub session: Option<SessionSection>,
    /// `providers[]`: provider modules.
    pub providers: Option<Vec<ModuleSpec>>,
    /// `tools[]`: tool modules.
    pub tools: Option<Vec<ModuleSpec>>,
    /// `hooks[]`: hook modules.
    pub hooks: Option<Vec<ModuleSpec>>,
    /// `agents`: `all` | `none` | `[names]` | `{include: […]}` | Amplifier's map of
    /// agent configs (see [`AgentAccess`]).
    pub agents: Option<AgentAccess>,
    /// `spawn`: the tool policy for sub-sessions (`tools` / `exclude_tools`, SPEC §6).
    pub spawn: Option<SpawnPolicy>,
    /// `instruction`: the system prompt.
    pub instruction: Option<String>,
    /// `model_role`: one role or a list, in preference order.
    pub model_role: Option<ModelRole>,
    /// `provider_preferences`: `[{provider, model}]` (SPEC §9), read and kept as
    /// written.
    pub provider_preferences: Option<Parsed<Vec<ProviderPreference>>>,
    /// `approvals`: a bundle's approval rules (`config::approvals::Rules`, applied
    /// tighten-only by the gate), read and kept as written.
    pub approvals: Option<Parsed<Rules>>,
    /// Every other top-level key, as read (Amplifier keys arbor does not read).
    pub extra: Map<String, Value>,
    /// The top-level keys in the order read; writing follows it.
    pub order: KeyOrder,
}

/// The `session` section: `orchestrator` and `context`, each a module (Amplifier
/// requires both; arbor reads `orchestrator.config`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionSection {
    /// `session.orchestrator`: `"loop-streaming"` or `{module, source?, config?}`.
    pub orchestrator: Option<ModuleSpec>,
    /// `session.context`: the context manager module.
    pub context: Option<ModuleSpec>,
    /// Every other key of `session`, as read.
    pub extra: Map<String, Value>,
    /// `session`'s keys in the order read.
    pub order: KeyOrder,
}

/// `model_role`: a role name or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelRole {
    /// `model_role: coding`.
    One(String),
    /// `model_role: [reasoning, general]`: the first available wins.
    Many(Vec<String>),
}

/// One item of a module list (`tools`, `providers`, `hooks`) or a `session` module.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleSpec {
    /// A bare module name: `- tool-bash`.
    Name(String),
    /// `{module, id?, source?, config?}` with nothing else (written back the same).
    Entry(ModuleEntry),
    /// Any other item, kept as read: a map with other keys or another key order, a
    /// `config: null`, a non-string `module`, a number…
    Other(Value),
}

impl ModuleSpec {
    /// Reads a list item: a string is a [`ModuleSpec::Name`]; a map is an
    /// [`ModuleSpec::Entry`] when writing the entry gives back exactly this map (keys
    /// and order), else kept as [`ModuleSpec::Other`].
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::String(name) => Self::Name(name),
            Value::Object(ref map) => match serde_json::from_value::<ModuleEntry>(value.clone()) {
                Ok(entry) if same_object(&entry, map) => Self::Entry(entry),
                _ => Self::Other(value),
            },
            other => Self::Other(other),
        }
    }

    /// The item as JSON, exactly as read.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Name(name) => Value::String(name.clone()),
            Self::Entry(entry) => serde_json::to_value(entry).unwrap_or(Value::Null),
            Self::Other(value) => value.clone(),
        }
    }

    /// The item as a module entry: a name gives `{module}`, a map that reads as an entry
    /// gives it (other keys ignored), anything else `None`.
    pub fn entry(&self) -> Option<ModuleEntry> {
        match self {
            Self::Name(name) => Some(ModuleEntry {
                module: name.clone(),
                ..Default::default()
            }),
            Self::Entry(entry) => Some(entry.clone()),
            Self::Other(value) => ModuleEntry::from_value(value),
        }
    }

    /// The module name (`None` for an item without a string `module`).
    pub fn module(&self) -> Option<&str> {
        match self {
            Self::Name(name) => Some(name),
            Self::Entry(entry) => Some(&entry.module),
            Self::Other(value) => module_name(value),
        }
    }

    /// Changes the item as JSON (`edit` gets it as read), then reads it back.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Value)) {
        let mut value = self.to_value();
        edit(&mut value);
        *self = Self::from_value(value);
    }

    /// The item's `config` (null when absent, or for a bare name).
    pub fn config(&self) -> &Value {
        match self {
            Self::Name(_) => &Value::Null,
            Self::Entry(entry) => &entry.config,
            Self::Other(value) => value.get("config").unwrap_or(&Value::Null),
        }
    }
}

/// A built entry (always written back the same).
impl From<ModuleEntry> for ModuleSpec {
    fn from(entry: ModuleEntry) -> Self {
        Self::Entry(entry)
    }
}

/// Whether `entry` writes back as exactly `map` (same keys, values and order).
fn same_object(entry: &ModuleEntry, map: &Map<String, Value>) -> bool {
    match serde_json::to_value(entry) {
        Ok(Value::Object(written)) => {
            written.len() == map.len() && written.iter().zip(map.iter()).all(|(a, b)| a == b)
        }
        _ => false,
    }
}

impl Serialize for ModuleSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ModuleSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from_value)
    }
}

impl SessionSection {
    /// Reads `session` (a non-object reads as empty; see [`MountPlan::from_value`]).
    pub fn from_value(value: Value) -> Self {
        let mut fields = Fields::of(value);
        let orchestrator = fields.take("orchestrator");
        let context = fields.take("context");
        let (extra, order) = fields.finish();
        Self {
            orchestrator,
            context,
            extra,
            order,
        }
    }

    /// `session` as JSON, keys in the order read.
    pub fn to_value(&self) -> Value {
        write_object(
            vec![
                ("orchestrator", json(&self.orchestrator)),
                ("context", json(&self.context)),
            ],
            &self.extra,
            &self.order,
        )
    }
}

impl Serialize for SessionSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for SessionSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if !value.is_object() {
            return Err(serde::de::Error::custom("`session` is not a map"));
        }
        Ok(Self::from_value(value))
    }
}

impl Serialize for MountPlan {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for MountPlan {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from_value)
    }
}

impl From<Value> for MountPlan {
    fn from(value: Value) -> Self {
        Self::from_value(value)
    }
}

/// A module entry in `tools`, `providers` or `hooks`: `{module, source?, config?, id?}`,
/// or a bare string (the module name).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModuleEntry {
    pub module: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub config: Value,
}

/// The module name of the task tool in a plan's `tools[]` (SPEC §9).
pub const TASK_MODULE: &str = super::modules::TASK.name;

/// The module name of a module-list entry (`"tool-x"` or `{module: tool-x}`).
pub fn module_name(entry: &Value) -> Option<&str> {
    match entry {
        Value::String(s) => Some(s),
        Value::Object(m) => m.get("module").and_then(Value::as_str),
        _ => None,
    }
}

/// The module whose entries' `config.allowed_write_paths` say where a session writes.
pub const FILESYSTEM_MODULE: &str = "tool-filesystem";

/// Rewrites the `config.allowed_write_paths` of one plan entry (`entry`: its JSON
/// object) with `change` (see [`MountPlan::edit_write_paths`]). A missing or
/// non-object `config` becomes `{}` first; an entry that is no object is left alone.
fn edit_write_paths(entry: &mut Value, change: impl FnOnce(Vec<String>) -> Vec<String>) {
    let Some(obj) = entry.as_object_mut() else {
        return;
    };
    let config = obj
        .entry("config")
        .or_insert_with(|| Value::Object(Map::new()));
    if !config.is_object() {
        *config = Value::Object(Map::new());
    }
    let current: Vec<String> = config
        .get("allowed_write_paths")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_else(|| vec![".".to_string()]);
    let paths = change(current);
    config["allowed_write_paths"] = Value::from(paths);
}

impl ModuleEntry {
    /// Reads an entry from a mount-plan list item (object or bare string).
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self {
                module: s.clone(),
                ..Default::default()
            }),
            Value::Object(_) => serde_json::from_value(v.clone()).ok(),
            _ => None,
        }
    }

    /// The merge key: `id` if set, else `module`.
    pub fn key(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.module)
    }
}

impl MountPlan {
    /// An empty plan (`{}`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a plan from JSON: each known key into its field when its value has the
    /// field's type, every other key into `extra`. Never fails; a non-object reads as
    /// `{}`.
    pub fn from_value(value: Value) -> Self {
        let mut fields = Fields::of(value);
        let session = fields.take("session");
        let providers = fields.take("providers");
        let tools = fields.take("tools");
        let hooks = fields.take("hooks");
        let agents = fields.take("agents");
        let spawn = fields.take("spawn");
        let instruction = fields.take("instruction");
        let model_role = fields.take("model_role");
        let provider_preferences = fields.take("provider_preferences");
        let approvals = fields.take("approvals");
        let (extra, order) = fields.finish();
        Self {
            session,
            providers,
            tools,
            hooks,
            agents,
            spawn,
            instruction,
            model_role,
            provider_preferences,
            approvals,
            extra,
            order,
        }
    }

    /// The plan as JSON: the keys in the order read, new ones after.
    pub fn to_value(&self) -> Value {
        write_object(
            vec![
                ("session", json(&self.session)),
                ("providers", json(&self.providers)),
                ("tools", json(&self.tools)),
                ("hooks", json(&self.hooks)),
                ("agents", json(&self.agents)),
                ("spawn", json(&self.spawn)),
                ("instruction", json(&self.instruction)),
                ("model_role", json(&self.model_role)),
                ("provider_preferences", json(&self.provider_preferences)),
                ("approvals", json(&self.approvals)),
            ],
            &self.extra,
            &self.order,
        )
    }

    fn modules(list: &Option<Vec<ModuleSpec>>) -> Vec<ModuleEntry> {
        list.iter()
            .flatten()
            .filter_map(ModuleSpec::entry)
            .collect()
    }

    /// The module list named `key` (`tools`, `providers`, `hooks`; empty for any other
    /// key or when absent), items as read.
    pub fn module_list(&self, key: &str) -> &[ModuleSpec] {
        let list = match key {
            "tools" => &self.tools,
            "providers" => &self.providers,
            "hooks" => &self.hooks,
            _ => &None,
        };
        list.as_deref().unwrap_or_default()
    }

    /// `tools[]` as entries (items that are not module entries skipped).
    pub fn tools(&self) -> Vec<ModuleEntry> {
        Self::modules(&self.tools)
    }

    /// `providers[]` as entries.
    pub fn providers(&self) -> Vec<ModuleEntry> {
        Self::modules(&self.providers)
    }

    /// `hooks[]` as entries.
    pub fn hooks(&self) -> Vec<ModuleEntry> {
        Self::modules(&self.hooks)
    }

    /// `instruction`: the system prompt (`""` when absent).
    pub fn instruction(&self) -> &str {
        self.instruction.as_deref().unwrap_or_default()
    }

    /// `session.orchestrator.config` (object or null).
    pub fn orchestrator_config(&self) -> &Value {
        self.session
            .as_ref()
            .and_then(|s| s.orchestrator.as_ref())
            .map_or(&Value::Null, ModuleSpec::config)
    }

    /// `session.orchestrator.config.max_iterations`, default 50.
    pub fn max_iterations(&self) -> u32 {
        self.orchestrator_config()
            .get("max_iterations")
            .and_then(Value::as_u64)
            .map(|n| n.min(u32::MAX as u64) as u32)
            .unwrap_or(50)
    }

    /// The config of the `tool-task` entry in `tools[]` (null if absent).
    pub fn task_tool_config(&self) -> Value {
        self.tools()
            .into_iter()
            .find(|t| t.module == TASK_MODULE)
            .map(|t| t.config)
            .unwrap_or(Value::Null)
    }

    /// `agents`: `all` | `none` | `[names]` | Amplifier roster `{include: […]}` | a map
    /// of agent configs.
    pub fn agents(&self) -> Option<&AgentAccess> {
        self.agents.as_ref()
    }

    /// `spawn` policy, when the plan has one.
    pub fn spawn(&self) -> Option<&SpawnPolicy> {
        self.spawn.as_ref()
    }

    /// `model_role`: a string or list, as a list.
    pub fn model_roles(&self) -> Vec<String> {
        match &self.model_role {
            Some(ModelRole::One(role)) => vec![role.clone()],
            Some(ModelRole::Many(roles)) => roles.clone(),
            None => Vec::new(),
        }
    }

    /// `provider_preferences` as read (none when absent; why not, when malformed).
    pub fn provider_preferences(&self) -> Result<&[ProviderPreference], &PreferenceError> {
        match &self.provider_preferences {
            Some(prefs) => prefs.get().map(Vec::as_slice),
            None => Ok(&[]),
        }
    }

    /// Rewrites the `allowed_write_paths` of every `tool-filesystem` entry of
    /// `tools[]` with `change`, which gets an entry's current list — `["."]` when the
    /// key is absent, as the tool reads it — and returns the new one. Used where a
    /// sub-session's writes move into a worktree (issue 25) and on a worker, which
    /// moves them into its own and narrows them (issues 27, 34).
    pub fn edit_write_paths(&mut self, mut change: impl FnMut(Vec<String>) -> Vec<String>) {
        for spec in self.tools.iter_mut().flatten() {
            if spec.module() == Some(FILESYSTEM_MODULE) {
                spec.edit(|entry| edit_write_paths(entry, &mut change));
            }
        }
    }
}
