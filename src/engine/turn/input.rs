//! What starts a turn, around the person's prompt hooks: the prompts an input
//! submits ([`prompts_of`], nothing stored yet), storing them once the hooks let the
//! turn go ([`append_input`], which names a new root), and the system notes hooks add
//! ([`system_note`]). Does not own: running the hooks (`tool_hooks`) or the turn
//! loop (`turn`).

use super::{CONTINUE_PROMPT, Input};
use crate::engine::live::LiveSession;
use crate::session::EngineEvent;
use crate::session::message::{Message, now_rfc3339};
use crate::session::protocol::SessionRenamedEvent;
use crate::session::title::title_from;

/// How many times a blocking `Stop` hook may continue one turn.
pub(super) const STOP_CONTINUES: usize = 8;

/// The prompts `input` submits: a prompt, `Continue.` when the model had already
/// answered (none when a user message or tool result waits for its answer), or the
/// messages waiting in the inbox, in order. Nothing is stored yet.
pub(super) fn prompts_of(live: &LiveSession, input: &Input) -> Vec<String> {
    match input {
        Input::Prompt(prompt) => vec![prompt.clone()],
        Input::Continue => continue_prompt(live).into_iter().collect(),
        Input::Inbox(waiting) => waiting.iter().map(|p| p.text.clone()).collect(),
    }
}

/// `Continue.` unless a user message or tool result already waits for its answer.
pub(super) fn continue_prompt(live: &LiveSession) -> Option<String> {
    let answered = !matches!(
        live.transcript_snapshot().last(),
        Some(Message::User(_) | Message::Tool(_))
    );
    answered.then(|| CONTINUE_PROMPT.to_string())
}

/// Appends what starts a turn (the prompts of [`prompts_of`]) to the transcript; a
/// first prompt names a new root.
pub(super) fn append_input(live: &LiveSession, input: Input) {
    match input {
        Input::Prompt(prompt) => {
            name_root(live, &prompt);
            live.append(Message::user(prompt));
        }
        Input::Continue => {
            if let Some(prompt) = continue_prompt(live) {
                live.append(Message::user(prompt));
            }
        }
        Input::Inbox(waiting) => {
            if let Some(first) = waiting.first() {
                name_root(live, &first.text);
            }
            waiting.into_iter().for_each(|p| live.deliver(p));
        }
    }
}

/// A system note for the model (a hook's words), stamped now.
pub(super) fn system_note(text: String) -> Message {
    Message::System(crate::session::message::UserMessage {
        content: text.into(),
        timestamp: Some(now_rfc3339()),
        metadata: None,
    })
}

/// Gives a root without a name the title of its first prompt (`session::title`),
/// stored as metadata `name` and published as `session:renamed`. A root another tool
/// started (Amplifier writes no `name`) is titled by the first user message already in
/// its transcript, not by the prompt arbor sends it now.
fn name_root(live: &LiveSession, prompt: &str) {
    if live.parent_id.is_some() || live.metadata().name.is_some() {
        return;
    }
    let earlier = live
        .transcript_snapshot()
        .iter()
        .find(|m| matches!(m, Message::User(_)))
        .map(Message::text);
    let Some(name) = earlier
        .as_deref()
        .and_then(title_from)
        .or_else(|| title_from(prompt))
    else {
        return;
    };
    // Written with the next metadata write (the turn's first response, or its end):
    // the turn's start stays one write (SPEC §16 spawn cost).
    live.stage_metadata(|m| m.name = Some(name.clone()));
    live.emit(EngineEvent::SessionRenamed(SessionRenamedEvent { name }));
}
