//! Test support shared by the TUI's unit tests, scenario tests and benches: a rendered
//! buffer as plain text, and synthetic protocol events to feed the `App` and its state
//! with no engine running. Not part of arbor's interface.

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

use crate::session::metadata::SessionUsage;
use crate::session::protocol::{ProviderResponseEvent, SessionForkEvent, SessionStartEvent};
use crate::session::{EngineEvent, Event};

/// `msg` from session `id` (child of `parent`) at `timestamp` (RFC 3339).
pub fn event(msg: EngineEvent, id: &str, parent: Option<&str>, timestamp: &str) -> Event {
    Event {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        timestamp: timestamp.into(),
        msg,
    }
}

/// `session:start` of a root running `agent` (model, bundle and directory unknown).
pub fn start(agent: &str) -> EngineEvent {
    EngineEvent::SessionStart(SessionStartEvent {
        agent: agent.into(),
        ..Default::default()
    })
}

/// `session:fork` of a sub-session of `parent` running `agent` (model unknown).
pub fn fork(parent: &str, agent: &str) -> EngineEvent {
    EngineEvent::SessionFork(SessionForkEvent {
        parent: parent.into(),
        agent: agent.into(),
        ..Default::default()
    })
}

/// `provider:response` with this usage (`cost` in USD) and no model.
pub fn tokens(input_tokens: u64, output_tokens: u64, cost: Option<f64>) -> EngineEvent {
    EngineEvent::ProviderResponse(ProviderResponseEvent {
        usage: SessionUsage {
            input_tokens,
            output_tokens,
            cost,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// `provider:response` from `provider` naming `model`, with no usage.
pub fn response(provider: &str, model: &str) -> EngineEvent {
    EngineEvent::ProviderResponse(ProviderResponseEvent {
        provider: provider.into(),
        model: model.into(),
        ..Default::default()
    })
}

/// `buf` as text: one line per row, right-trimmed, each wide symbol once (the cells it
/// covers are skipped).
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        let mut skip = 0;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            skip = sym.width().saturating_sub(1);
            row.push_str(sym);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}
