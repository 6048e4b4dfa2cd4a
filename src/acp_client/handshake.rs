//! The opening of a hosted agent's ACP session (ACP v1, schema 1.20): `initialize`,
//! `authenticate` when a method applies, `session/new`.
//!
//! Owns: the capabilities arbor advertises as a client ([`client_capabilities`]: fs
//! read and write, terminals), checking the protocol version the agent answers,
//! choosing the auth method ([`choose_auth`]: `acp.auth`, else the first `env_var`
//! method whose variables are all set in the node's environment, else none), and
//! `session/load` of the node's earlier ACP session when the agent can load one
//! (`loadSession`; a node resumed by a new arbor process), else `session/new`, with
//! the node's working directory and no MCP servers. Does not own:
//! the transport (`rpc`), the process (`process`), the prompt turn (`engine::hosted`).

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AuthenticateRequest, ClientCapabilities, FileSystemCapabilities, Implementation,
    InitializeRequest, LoadSessionRequest, NewSessionRequest,
};
use serde::Deserialize;
use serde_json::Value;

use super::AcpClientError;
use super::rpc::Connection;
use crate::config::acp_agent::AcpAgentSpec;

/// What the handshake learnt: the agent's session id and who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The ACP `sessionId` `session/new` answered (every later call names it).
    pub session_id: String,
    /// `agentInfo.name` `agentInfo.version` when the agent said (for logs).
    pub agent: Option<String>,
    /// The auth method `authenticate` was called with, if any.
    pub authenticated: Option<String>,
    /// The session was loaded (`session/load`), not created: the agent replayed its
    /// history as `session/update`s, already queued, which the caller drops.
    pub loaded: bool,
}

/// `initialize`'s answer, read leniently (only what arbor uses).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeAnswer {
    protocol_version: u16,
    #[serde(default)]
    auth_methods: Vec<Value>,
    #[serde(default)]
    agent_info: Option<Implementation>,
    #[serde(default)]
    agent_capabilities: Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSessionAnswer {
    session_id: String,
}

/// The client capabilities arbor advertises: `fs.readTextFile`, `fs.writeTextFile`,
/// `terminal` (each served through the node's confined tools).
pub fn client_capabilities() -> ClientCapabilities {
    ClientCapabilities::new()
        .fs(FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true))
        .terminal(true)
}

/// Runs the handshake over `conn` for `spec` in `cwd`; `env` is the node's
/// environment (with `acp.env`), which an `env_var` auth method is checked against;
/// `earlier` the ACP session id the node had (loaded when the agent can; a refused
/// load falls back to a new session).
///
/// Errors: the agent failed a request (`Rpc`, its own message), exited (`Closed`),
/// answered another protocol version or unreadable results (`Protocol`), or names
/// no auth method `acp.auth` asks for (`Auth`).
pub async fn open(
    conn: &Connection,
    spec: &AcpAgentSpec,
    cwd: &Path,
    env: &HashMap<String, String>,
    earlier: Option<&str>,
) -> Result<Opened, AcpClientError> {
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(client_capabilities())
        .client_info(Implementation::new("arbor", env!("CARGO_PKG_VERSION")));
    let answer: InitializeAnswer = conn.request("initialize", &init).await?;
    if answer.protocol_version != 1 {
        return Err(AcpClientError::Protocol {
            method: "initialize".into(),
            reason: format!(
                "the agent speaks ACP version {}, arbor speaks 1",
                answer.protocol_version
            ),
        });
    }
    let method = choose_auth(spec.auth.as_deref(), &answer.auth_methods, env)?;
    if let Some(id) = &method {
        conn.request::<Value>("authenticate", &AuthenticateRequest::new(id.clone()))
            .await?;
    }
    let agent = answer
        .agent_info
        .map(|i| format!("{} {}", i.name, i.version));
    let can_load = answer.agent_capabilities.get("loadSession") == Some(&Value::Bool(true));
    if let Some(id) = earlier.filter(|_| can_load) {
        let load = LoadSessionRequest::new(id.to_string(), cwd.to_path_buf());
        match conn.request::<Value>("session/load", &load).await {
            Ok(_) => {
                return Ok(Opened {
                    session_id: id.to_string(),
                    agent,
                    authenticated: method,
                    loaded: true,
                });
            }
            Err(AcpClientError::Rpc(e)) => {
                tracing::info!("the ACP agent did not load session {id} ({e}); opening a new one");
            }
            Err(e) => return Err(e),
        }
    }
    let new = NewSessionRequest::new(cwd.to_path_buf()).mcp_servers(Vec::new());
    let session: NewSessionAnswer = conn.request("session/new", &new).await?;
    Ok(Opened {
        session_id: session.session_id,
        agent,
        authenticated: method,
        loaded: false,
    })
}

/// The `authenticate` method to use from the agent's `authMethods`: `wanted`
/// (`acp.auth`) when given, else the first method of type `env_var` whose variables
/// (`vars[].name`, or the older `varName`) are all set and non-empty in `env`, else
/// none (the agent needs no login, or finds its key itself).
///
/// Errors: `wanted` is not among the agent's methods (`Auth`, listing them).
pub fn choose_auth(
    wanted: Option<&str>,
    methods: &[Value],
    env: &HashMap<String, String>,
) -> Result<Option<String>, AcpClientError> {
    let id = |m: &Value| m.get("id").and_then(Value::as_str).map(str::to_string);
    if let Some(wanted) = wanted {
        return match methods.iter().filter_map(id).find(|m| m == wanted) {
            Some(found) => Ok(Some(found)),
            None => Err(AcpClientError::Auth(format!(
                "acp.auth '{wanted}' is not one of the agent's auth methods ({})",
                methods.iter().filter_map(id).collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    let set = |name: &str| env.get(name).is_some_and(|v| !v.is_empty());
    Ok(methods
        .iter()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("env_var"))
        .find(|m| {
            let mut names: Vec<&str> = m
                .get("vars")
                .and_then(Value::as_array)
                .map(|vars| {
                    vars.iter()
                        .filter_map(|v| v.get("name").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            names.extend(m.get("varName").and_then(Value::as_str));
            !names.is_empty() && names.iter().all(|n| set(n))
        })
        .and_then(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_named_method_wins_else_the_first_env_var_method_whose_vars_are_set() {
        let methods = vec![
            json!({"id": "chatgpt", "name": "Login"}),
            json!({"id": "needs-two", "type": "env_var", "vars": [{"name": "A"}, {"name": "B"}]}),
            json!({"id": "key", "type": "env_var", "vars": [{"name": "A"}]}),
        ];
        let env: HashMap<String, String> = [("A".to_string(), "x".to_string())].into();
        assert_eq!(
            choose_auth(None, &methods, &env).unwrap().as_deref(),
            Some("key")
        );
        assert_eq!(
            choose_auth(Some("chatgpt"), &methods, &env)
                .unwrap()
                .as_deref(),
            Some("chatgpt")
        );
        assert!(choose_auth(Some("nope"), &methods, &env).is_err());
        assert_eq!(choose_auth(None, &methods, &HashMap::new()).unwrap(), None);
    }
}
