//! Snapshots of the MCP servers overlay at 80 and 40 columns: a running server with
//! its tools, a failed one with its reason, one not started yet; and the empty list.

use super::mcp::McpView;
use super::tests::render;
use crate::tool::mcp::{McpServerStatus, ServerState};
use crate::tui::theme::Theme;

fn servers() -> Vec<McpServerStatus> {
    vec![
        McpServerStatus {
            name: "calc".into(),
            origin: "config.yaml".into(),
            target: "calc-server --stdio".into(),
            state: ServerState::Running {
                tools: vec!["add".into(), "slow".into()],
            },
        },
        McpServerStatus {
            name: "ghost".into(),
            origin: "/work/project/.mcp.json".into(),
            target: "/nonexistent/mcp-ghost".into(),
            state: ServerState::Failed {
                reason:
                    "cannot start '/nonexistent/mcp-ghost': No such file or directory (os error 2)"
                        .into(),
            },
        },
        McpServerStatus {
            name: "github".into(),
            origin: "config.yaml".into(),
            target: "https://api.example.com/mcp".into(),
            state: ServerState::NotStarted,
        },
    ]
}

#[test]
fn servers_states_and_tools() {
    let theme = Theme::builtin_dark(true);
    let servers = servers();
    let view = McpView {
        servers: &servers,
        theme: &theme,
        scroll: 0,
    };
    insta::assert_snapshot!("mcp_80", render(&view, 80, 16));
    insta::assert_snapshot!("mcp_40", render(&view, 40, 16));
    let empty = McpView {
        servers: &[],
        theme: &theme,
        scroll: 0,
    };
    insta::assert_snapshot!("mcp_empty_80", render(&empty, 80, 5));
}
