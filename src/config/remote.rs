//! Config `remote:` and agent frontmatter `remote:` (issue 27 item 2): which
//! sub-sessions a root hands to `arbor worker`s through NATS JetStream instead of
//! running them in its own process.
//!
//! ```yaml
//! remote:
//!   nats_url: nats://127.0.0.1:4222   # required: the NATS server the workers use
//!   pool: default                     # optional: the workers' pool (default `default`)
//!   agents: all                       # all | none | [explorer, builder] (default none)
//!   ack_wait: 30                      # optional: seconds before an unacknowledged job
//!                                     # is redelivered (default 30; the workers' --ack-wait)
//! ```
//!
//! Frontmatter `remote: true | false` in an agent file overrides `agents` for that
//! agent. Without a `remote:` section every sub-session runs locally, even one whose
//! agent says `remote: true` (`arbor doctor` warns about that).
//!
//! Owns: the shape and spelling of that section ([`RemoteConfig`]), reading the
//! frontmatter value ([`frontmatter`]), the placement rule ([`placement`]) and how a
//! server URL is shown, without its password or token ([`redact_url`]). A bad
//! key or value makes the whole config file unusable, the error naming the key
//! (`remote.agents: …`), so a typo never silently runs a child locally or remotely.
//! Does not own: talking to NATS (`remote`), dispatching a run (`engine::remote`).

use std::time::Duration;

use super::approvals::describe;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ArborConfig;

/// The pool a `remote:` section without `pool:` uses (and `arbor worker`'s default).
pub const DEFAULT_POOL: &str = "default";

/// The ack wait a `remote:` section without `ack_wait:` uses (`arbor worker`'s
/// default `--ack-wait`).
pub const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(30);

/// Config `remote:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub struct RemoteConfig {
    /// `nats_url:` the server URL (`nats://`, `tls://`, `ws://` or `wss://`; a list of
    /// servers is one string, comma separated, as NATS clients take it).
    pub nats_url: String,
    /// `pool:` the pool whose workers take this root's jobs ([`DEFAULT_POOL`] when
    /// absent); a NATS subject token (`[A-Za-z0-9_-]`).
    pub pool: String,
    /// `agents:` which agents run remotely unless their frontmatter says otherwise.
    pub agents: RemoteAgents,
    /// `ack_wait:` in whole seconds (≥ 1), [`DEFAULT_ACK_WAIT`] when absent.
    pub ack_wait: Duration,
}

/// `remote.agents:`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RemoteAgents {
    /// `all`: every sub-session runs remotely.
    All,
    /// `none` or absent: only agents whose frontmatter says `remote: true`.
    #[default]
    None,
    /// `[a, b]`: these agents (by name).
    Named(Vec<String>),
}

/// Where a sub-session of a remote agent runs: the server, pool and ack wait its job
/// is published with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePlacement {
    /// The NATS server URL (from `remote.nats_url`).
    pub nats_url: String,
    /// The workers' pool (`remote.pool`).
    pub pool: String,
    /// How long a job may go unacknowledged before JetStream redelivers it.
    pub ack_wait: Duration,
}

/// The keys `remote:` accepts.
const KEYS: &[&str] = &["nats_url", "pool", "agents", "ack_wait"];

/// The URL schemes `remote.nats_url` (and `arbor worker --nats`) accepts.
pub const SCHEMES: &[&str] = &["nats://", "tls://", "ws://", "wss://"];

/// Whether `s` is a valid NATS subject token / KV key part (`[A-Za-z0-9_-]+`).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A `remote:` section that does not parse: each text names the key
/// (`remote.nats_url: …`) and quotes the bad value (as `describe` shows it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRemoteSection {
    /// The section is not a mapping.
    #[error("remote: expected a mapping with nats_url, got {0}")]
    NotAMapping(String),
    /// A key arbor does not know.
    #[error("remote: unknown key '{0}' (expected one of {keys})", keys = KEYS.join(", "))]
    UnknownKey(String),
    /// `nats_url` is a string with another scheme.
    #[error("remote.nats_url: expected a URL starting with {schemes}, got {0}", schemes = SCHEMES.join(", "))]
    Scheme(String),
    /// `nats_url` is not a string.
    #[error("remote.nats_url: expected a URL, got {0}")]
    NotAUrl(String),
    /// `nats_url` is missing.
    #[error("remote.nats_url: missing (the NATS server's URL)")]
    NoUrl,
    /// `pool` cannot name a subject.
    #[error("remote.pool: expected a name of letters, digits, '-' and '_', got {0}")]
    Pool(String),
    /// `agents` is a list with an item that is no name.
    #[error(
        "remote.agents: expected all, none or a list of agent names, got a list containing {0}"
    )]
    AgentName(String),
    /// `agents` is neither `all`, `none` nor a list.
    #[error("remote.agents: expected all, none or a list of agent names, got {0}")]
    Agents(String),
    /// `ack_wait` is not a whole number of seconds, at least 1.
    #[error("remote.ack_wait: expected whole seconds (at least 1), got {0}")]
    AckWait(String),
}

impl TryFrom<Value> for RemoteConfig {
    type Error = BadRemoteSection;

    /// Reads the section.
    ///
    /// Errors: [`BadRemoteSection`] for the first bad key.
    fn try_from(value: Value) -> Result<Self, BadRemoteSection> {
        let Value::Object(map) = value else {
            return Err(BadRemoteSection::NotAMapping(describe(&value)));
        };
        if let Some(unknown) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(BadRemoteSection::UnknownKey(unknown.clone()));
        }
        let nats_url = match map.get("nats_url") {
            Some(Value::String(url)) if SCHEMES.iter().any(|s| url.trim().starts_with(s)) => {
                url.trim().to_string()
            }
            Some(Value::String(url)) => {
                // Shown without a password the URL may carry.
                let shown = Value::String(redact_url(url));
                return Err(BadRemoteSection::Scheme(describe(&shown)));
            }
            Some(other) => return Err(BadRemoteSection::NotAUrl(describe(other))),
            None => return Err(BadRemoteSection::NoUrl),
        };
        let pool = match map.get("pool") {
            None | Some(Value::Null) => DEFAULT_POOL.to_string(),
            Some(Value::String(p)) if is_token(p) => p.clone(),
            Some(other) => return Err(BadRemoteSection::Pool(describe(other))),
        };
        let agents = match map.get("agents") {
            None | Some(Value::Null) => RemoteAgents::None,
            Some(Value::String(s)) if s == "all" => RemoteAgents::All,
            Some(Value::String(s)) if s == "none" => RemoteAgents::None,
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => RemoteAgents::Named(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            ),
            Some(Value::Array(items)) => {
                let bad = items
                    .iter()
                    .find(|i| !i.is_string())
                    .unwrap_or(&Value::Null);
                return Err(BadRemoteSection::AgentName(describe(bad)));
            }
            Some(other) => return Err(BadRemoteSection::Agents(describe(other))),
        };
        let ack_wait = match map.get("ack_wait") {
            None | Some(Value::Null) => DEFAULT_ACK_WAIT,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|s| s >= 1) => {
                Duration::from_secs(n.as_u64().unwrap_or(1))
            }
            Some(other) => return Err(BadRemoteSection::AckWait(describe(other))),
        };
        Ok(Self {
            nats_url,
            pool,
            agents,
            ack_wait,
        })
    }
}

impl From<RemoteConfig> for Value {
    fn from(config: RemoteConfig) -> Value {
        let agents = match config.agents {
            RemoteAgents::All => Value::from("all"),
            RemoteAgents::None => Value::from("none"),
            RemoteAgents::Named(names) => Value::from(names),
        };
        serde_json::json!({
            "nats_url": config.nats_url,
            "pool": config.pool,
            "agents": agents,
            "ack_wait": config.ack_wait.as_secs(),
        })
    }
}

/// An agent frontmatter `remote:` value that is not `true` or `false`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("remote: expected true or false, got {got}")]
pub struct BadRemote {
    /// The value as given (`'yes'`, `1`, …).
    pub got: String,
}

/// Reads an agent's frontmatter `remote:` (`overlay["remote"]`): absent or null is
/// `Ok(None)`, a boolean `Ok(Some(b))`, anything else [`BadRemote`] (reported by
/// `agent validate`).
pub fn frontmatter(overlay: &Value) -> Result<Option<bool>, BadRemote> {
    parse(overlay.get("remote"))
}

/// Reads a frontmatter `remote:` value (`None`: the key is absent); as [`frontmatter`].
pub fn parse(value: Option<&Value>) -> Result<Option<bool>, BadRemote> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(BadRemote {
            got: describe(other),
        }),
    }
}

/// Where a sub-session of agent `agent_name` (frontmatter `overlay`) runs: `Some`
/// when it goes to a worker, `None` when it runs in this process.
///
/// The rule: no `remote:` section → local, whatever the frontmatter says; the
/// agent's frontmatter `remote: true|false` decides when given (a bad value counts as
/// absent; `agent validate` reports it); otherwise `remote.agents` (`all`, or the
/// agent named in the list).
pub fn placement(cfg: &ArborConfig, agent_name: &str, overlay: &Value) -> Option<RemotePlacement> {
    placed(cfg, overlay, |remote| match &remote.agents {
        RemoteAgents::All => true,
        RemoteAgents::None => false,
        RemoteAgents::Named(names) => names.iter().any(|n| n == agent_name),
    })
}

/// Where a sub-session that ran inside a remote sub-session's job (its worker's
/// engine created it, issue 38 item 7) runs a person's next turn: on a worker of the
/// `remote:` section's pool, where its parent runs, unless its agent's frontmatter
/// says `remote: false`; `None` without a `remote:` section.
pub fn placement_in_remote_tree(cfg: &ArborConfig, overlay: &Value) -> Option<RemotePlacement> {
    placed(cfg, overlay, |_| true)
}

/// The `remote:` section's placement when the agent's frontmatter (`overlay`) says
/// `remote: true`, or says nothing and `otherwise` chooses it.
fn placed(
    cfg: &ArborConfig,
    overlay: &Value,
    otherwise: impl FnOnce(&RemoteConfig) -> bool,
) -> Option<RemotePlacement> {
    let remote = cfg.remote.as_ref()?;
    let chosen = frontmatter(overlay)
        .ok()
        .flatten()
        .unwrap_or_else(|| otherwise(remote));
    chosen.then(|| RemotePlacement {
        nats_url: remote.nats_url.clone(),
        pool: remote.pool.clone(),
        ack_wait: remote.ack_wait,
    })
}

/// `url` as arbor shows it: the user-info of each comma-separated server URL replaced,
/// `nats://user:pass@h:4222` → `nats://user:***@h:4222`, `nats://token@h` →
/// `nats://***@h`; a URL without one is unchanged.
pub fn redact_url(url: &str) -> String {
    url.split(',').map(redact_one).collect::<Vec<_>>().join(",")
}

fn redact_one(url: &str) -> String {
    let (server, userinfo) = split_userinfo(url);
    let Some(userinfo) = userinfo else {
        return url.to_string();
    };
    let shown = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***@"),
        None => "***@".to_string(),
    };
    let start = server.find("://").map_or(0, |i| i + 3);
    format!("{}{shown}{}", &server[..start], &server[start..])
}

/// One server URL without its user-info (`nats://u:p@h:1` → `nats://h:1`), and that
/// user-info as written (`u:p`), when it has one.
pub fn split_userinfo(url: &str) -> (String, Option<String>) {
    let start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => (
            format!("{}{}", &url[..start], &rest[at + 1..]),
            Some(rest[..at].to_string()),
        ),
        None => (url.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(yaml: &str) -> Result<ArborConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.yaml");
        std::fs::write(&p, yaml).unwrap();
        ArborConfig::load(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_section_parses_and_defaults_fill_the_rest() {
        let c = load(
            "remote:\n  nats_url: nats://127.0.0.1:4222\n  pool: gpu\n  agents: [explorer, builder]\n  ack_wait: 5\n",
        )
        .unwrap();
        assert_eq!(
            c.remote,
            Some(RemoteConfig {
                nats_url: "nats://127.0.0.1:4222".into(),
                pool: "gpu".into(),
                agents: RemoteAgents::Named(vec!["explorer".into(), "builder".into()]),
                ack_wait: Duration::from_secs(5),
            })
        );
        let c = load("remote: {nats_url: 'tls://nats.example:4222'}\n").unwrap();
        let remote = c.remote.unwrap();
        assert_eq!(remote.pool, DEFAULT_POOL);
        assert_eq!(remote.agents, RemoteAgents::None);
        assert_eq!(remote.ack_wait, DEFAULT_ACK_WAIT);
        assert_eq!(load("theme: dark\n").unwrap().remote, None);
    }

    #[test]
    fn bad_values_make_the_file_unusable_naming_the_key() {
        for (yaml, key, quoted) in [
            ("remote: {pool: x}\n", "remote.nats_url", "missing"),
            (
                "remote: {nats_url: http://x:4222}\n",
                "remote.nats_url",
                "'http://x:4222'",
            ),
            ("remote: {nats_url: 4222}\n", "remote.nats_url", "4222"),
            (
                "remote: {nats_url: nats://x, pool: 'a.b'}\n",
                "remote.pool",
                "'a.b'",
            ),
            (
                "remote: {nats_url: nats://x, agents: some}\n",
                "remote.agents",
                "'some'",
            ),
            (
                "remote: {nats_url: nats://x, agents: [a, 3]}\n",
                "remote.agents",
                "3",
            ),
            (
                "remote: {nats_url: nats://x, ack_wait: 0}\n",
                "remote.ack_wait",
                "0",
            ),
            (
                "remote: {nats_url: nats://x, ack_wait: soon}\n",
                "remote.ack_wait",
                "'soon'",
            ),
            (
                "remote: {nats_url: nats://x, poool: a}\n",
                "remote: unknown key",
                "'poool'",
            ),
            (
                "remote: nats://x\n",
                "remote: expected a mapping",
                "'nats://x'",
            ),
        ] {
            let err = load(yaml).unwrap_err();
            assert!(err.contains(key), "{yaml}: {err}");
            assert!(err.contains(quoted), "{yaml}: {err}");
        }
    }

    #[test]
    fn the_section_round_trips_through_serialization() {
        let c = load("remote: {nats_url: nats://h:1, agents: all, ack_wait: 7}\n").unwrap();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v["remote"],
            json!({"nats_url": "nats://h:1", "pool": "default", "agents": "all", "ack_wait": 7})
        );
        let back: ArborConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn frontmatter_reads_booleans_only() {
        assert_eq!(frontmatter(&json!({})), Ok(None));
        assert_eq!(frontmatter(&json!({"remote": true})), Ok(Some(true)));
        assert_eq!(frontmatter(&json!({"remote": false})), Ok(Some(false)));
        assert_eq!(
            frontmatter(&json!({"remote": "yes"}))
                .unwrap_err()
                .to_string(),
            "remote: expected true or false, got 'yes'"
        );
    }

    #[test]
    fn a_session_of_a_remote_job_stays_remote_unless_its_frontmatter_says_no() {
        let none = ArborConfig::default();
        assert_eq!(placement_in_remote_tree(&none, &json!({})), None);
        let named = load("remote: {nats_url: nats://h:1, pool: p1, agents: [explorer]}\n").unwrap();
        // Not named in `agents`: it ran where its parent ran.
        let placed = placement_in_remote_tree(&named, &json!({})).unwrap();
        assert_eq!(placed.pool, "p1");
        assert_eq!(
            placement_in_remote_tree(&named, &json!({"remote": false})),
            None
        );
    }

    #[test]
    fn placement_follows_config_then_frontmatter() {
        let none = ArborConfig::default();
        assert_eq!(placement(&none, "explorer", &json!({"remote": true})), None);
        let named = load("remote: {nats_url: nats://h:1, pool: p1, agents: [explorer]}\n").unwrap();
        let placed = placement(&named, "explorer", &json!({})).unwrap();
        assert_eq!(
            placed,
            RemotePlacement {
                nats_url: "nats://h:1".into(),
                pool: "p1".into(),
                ack_wait: DEFAULT_ACK_WAIT
            }
        );
        assert_eq!(placement(&named, "builder", &json!({})), None);
        assert_eq!(
            placement(&named, "explorer", &json!({"remote": false})),
            None
        );
        assert!(placement(&named, "builder", &json!({"remote": true})).is_some());
        // A bad frontmatter value counts as absent.
        assert!(placement(&named, "explorer", &json!({"remote": "no"})).is_some());
        let all = load("remote: {nats_url: nats://h:1, agents: all}\n").unwrap();
        assert!(placement(&all, "anyone", &json!({})).is_some());
        assert_eq!(placement(&all, "anyone", &json!({"remote": false})), None);
        let default = load("remote: {nats_url: nats://h:1}\n").unwrap();
        assert_eq!(placement(&default, "anyone", &json!({})), None);
        assert!(placement(&default, "anyone", &json!({"remote": true})).is_some());
    }
}
