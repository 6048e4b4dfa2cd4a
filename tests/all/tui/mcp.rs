//! The MCP servers overlay in the App: F6 opens it and asks the engine for the list
//! (`ListMcpServers`), the answer is drawn (state, tools as the model sees them, the
//! failure), `r` asks again, Esc closes it.

use arbor::tool::mcp::{McpServerStatus, ServerState};

use super::*;

#[test]
fn f6_lists_the_servers_and_esc_closes() {
    let mut h = harness();
    h.press(KeyCode::F(6));
    assert_eq!(h.app.overlay(), Overlay::Mcp);
    assert_eq!(h.drain(), [EngineCommand::ListMcpServers]);
    h.app.handle(AppEvent::Reply(EngineReply::McpServers(vec![
        McpServerStatus {
            name: "calc".into(),
            origin: "config.yaml".into(),
            target: "calc-server".into(),
            state: ServerState::Running {
                tools: vec!["add".into()],
            },
        },
        McpServerStatus {
            name: "ghost".into(),
            origin: "config.yaml".into(),
            target: "/nonexistent/ghost".into(),
            state: ServerState::Failed {
                reason: "cannot start '/nonexistent/ghost'".into(),
            },
        },
    ])));
    let screen = h.screen(100, 30);
    assert!(screen.contains("MCP servers"), "{screen}");
    assert!(screen.contains("● calc  running  config.yaml"), "{screen}");
    assert!(screen.contains("mcp__calc__add"), "{screen}");
    assert!(
        screen.contains("cannot start '/nonexistent/ghost'"),
        "{screen}"
    );
    h.press(KeyCode::Char('r'));
    assert_eq!(h.drain(), [EngineCommand::ListMcpServers]);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), Overlay::None);
    assert!(!h.screen(100, 30).contains("mcp__calc__add"));
}
