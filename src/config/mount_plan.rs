//! The mount plan: a session's whole configuration as a dynamic JSON map (SPEC §5).
//!
//! Keys the engine reads have typed accessors; every other key passes through.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A session's configuration (`serde_json::Value` object). Keys the engine reads:
/// `session.orchestrator.{module,config}`, `session.context`, `providers[]`, `tools[]`,
/// `hooks[]`, `spawn`, `agents`, `instruction`, `model_role`, `provider_preferences`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MountPlan(pub Value);

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
        Self(Value::Object(Map::new()))
    }

    /// The top-level value at `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets a top-level key (turning a non-object plan into an object).
    pub fn set(&mut self, key: &str, value: Value) {
        if !self.0.is_object() {
            self.0 = Value::Object(Map::new());
        }
        if let Value::Object(map) = &mut self.0 {
            map.insert(key.to_string(), value);
        }
    }

    fn modules(&self, key: &str) -> Vec<ModuleEntry> {
        self.0
            .get(key)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(ModuleEntry::from_value).collect())
            .unwrap_or_default()
    }

    /// `tools[]`.
    pub fn tools(&self) -> Vec<ModuleEntry> {
        self.modules("tools")
    }

    /// `providers[]`.
    pub fn providers(&self) -> Vec<ModuleEntry> {
        self.modules("providers")
    }

    /// `hooks[]`.
    pub fn hooks(&self) -> Vec<ModuleEntry> {
        self.modules("hooks")
    }

    /// `instruction`: the system prompt.
    pub fn instruction(&self) -> &str {
        self.0
            .get("instruction")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `session.orchestrator.config` (object or null).
    pub fn orchestrator_config(&self) -> &Value {
        self.0
            .pointer("/session/orchestrator/config")
            .unwrap_or(&Value::Null)
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

    /// `agents`: `all` | `none` | `[names]` | Amplifier roster `{include: […]}`.
    pub fn agents(&self) -> Option<&Value> {
        self.0.get("agents")
    }

    /// `spawn` policy (object or null).
    pub fn spawn(&self) -> &Value {
        self.0.get("spawn").unwrap_or(&Value::Null)
    }

    /// `model_role`: a string or list, as a list.
    pub fn model_roles(&self) -> Vec<String> {
        match self.0.get("model_role") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `provider_preferences` (array or null).
    pub fn provider_preferences(&self) -> &Value {
        self.0.get("provider_preferences").unwrap_or(&Value::Null)
    }
}
