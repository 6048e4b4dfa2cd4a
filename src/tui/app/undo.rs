//! What the `App` does with the answer to a merge, discard or "rewind here"
//! (the engine's `Undone` reply, issue 25): a note saying what happened (a refusal names its
//! files), the tree refreshed (a merged or discarded node loses its "unmerged" mark,
//! a fork appears), and a fork's thread opened.
//!
//! Owns: that reaction. Does not own: asking (`components::confirm`) or doing it
//! (`engine::handle::undo`).

use super::App;
use crate::engine::handle::undo::{Rewound, UndoDone, UndoError};
use crate::isolation::IsolationError;
use crate::session::EngineCommand;
use crate::tui::error::UiError;

impl App {
    /// The answer to `MergeSession`, `DiscardSession`, `RewindSession` or
    /// `ForkSession` of `session_id`.
    pub(super) fn on_undone(&mut self, session_id: &str, result: Result<UndoDone, UiError>) {
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                self.set_note(e.to_string(), true);
                if let UiError::Undo(undo) = &e
                    && let UndoError::Isolation(IsolationError::Conflict { files }) = &**undo
                {
                    self.stack
                        .push(super::components::ConfirmPrompt::markers(session_id, files));
                }
                return;
            }
        };
        match done {
            UndoDone::Merged(m) => {
                self.tree.worktree_gone(session_id);
                let n = m.files.len();
                let mut text = format!(
                    "merged {} ({n} file{}) into {}",
                    m.branch,
                    plural(n),
                    m.target.display()
                );
                if !m.conflicted.is_empty() {
                    text = format!(
                        "{text}; conflict markers in {}: resolve them",
                        m.conflicted.join(", ")
                    );
                }
                self.set_note(text, !m.conflicted.is_empty());
            }
            UndoDone::Discarded(d) => {
                self.tree.worktree_gone(session_id);
                self.set_note(format!("discarded {}", d.branch), false);
            }
            UndoDone::Rewound(r) => self.set_note(rewound_note(&r), false),
            UndoDone::Forked { forked, rewound } => {
                let mut text = format!(
                    "forked #{} at turn {}",
                    forked.session_id.short(),
                    forked.forked_from_turn
                );
                if let Some(r) = &rewound {
                    text = format!("{text}; {}", rewound_note(r));
                }
                self.set_note(text, false);
                self.send(EngineCommand::ListSessions);
                self.open_thread(forked.session_id.as_str());
            }
        }
    }
}

/// `restored 2 files to after turn 3: a.py, b.sh` (or that none changed).
fn rewound_note(r: &Rewound) -> String {
    if r.files.is_empty() {
        return format!("no file changed after turn {}", r.to_turn);
    }
    format!(
        "restored {} file{} to after turn {}: {}",
        r.files.len(),
        plural(r.files.len()),
        r.to_turn,
        r.files.join(", ")
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
