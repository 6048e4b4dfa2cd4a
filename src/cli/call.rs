//! One engine command waited for: what a headless subcommand that asks one thing at a
//! time uses (`arbor session rename|merge|discard|rewind|fork|tree`, `continue --tree`'s
//! look at the tree, `arbor run`'s model switch and its report of unmerged work).
//!
//! Owns: submitting the command on a connection of its own and taking its first
//! reply off the stream; the error for an answer a command does not expect. Does not
//! own: what the reply means (each subcommand).

use std::fmt::Debug;

use crate::engine::{Engine, EngineError, EngineOutput, EngineReply};
use crate::session::EngineCommand;

/// Submits `command` on a connection of its own to `engine` and waits for its first
/// reply (the events and other items on the way are not this command's: skipped).
///
/// Errors: the engine answered the command with no reply ([`no_answer`]).
pub async fn reply(engine: &Engine, command: EngineCommand) -> Result<EngineReply, EngineError> {
    let (client, mut stream) = engine.connect();
    let command = client.submit(command);
    loop {
        match stream.next().await {
            Some(EngineOutput::Reply { command: of, reply }) if of == command => return Ok(reply),
            Some(EngineOutput::Answered { command: of }) if of == command => {
                return Err(no_answer());
            }
            None => return Err(no_answer()),
            Some(
                EngineOutput::Event(_) | EngineOutput::Reply { .. } | EngineOutput::Answered { .. },
            ) => {}
        }
    }
}

/// The error for a command the engine ended without an answer.
pub fn no_answer() -> EngineError {
    EngineError::TaskFailed {
        what: "the command",
        message: "the engine ended it without an answer".into(),
    }
}

/// The error for a reply (or query reply) a command does not expect.
pub fn unexpected(reply: impl Debug) -> EngineError {
    EngineError::Other(format!("unexpected engine reply: {reply:?}"))
}
