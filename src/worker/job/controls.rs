//! The root's control messages of a job (`remote::wire::Control`) as engine commands.
//!
//! Owns: [`command_of`]. Does not own: receiving them (`job::run_engine`), answering a
//! spawn's reservation (`tree::RootRoom`).

use crate::remote::wire::Control;
use crate::session::EngineCommand;

/// The engine command a root's control message asks for (`Reserved` is none: it
/// answers a spawn waiting in [`RootRoom`]).
pub(super) fn command_of(
    id: &crate::session::SessionId,
    control: Control,
) -> Option<EngineCommand> {
    let session_id = id.clone();
    Some(match control {
        Control::Approval {
            tool_call_id,
            decision,
        } => EngineCommand::ResolveApproval {
            session_id,
            tool_call_id: tool_call_id.into(),
            decision: decision.into(),
        },
        Control::Steer { text } => EngineCommand::Steer { session_id, text },
        Control::Queue { text } => EngineCommand::Queue {
            session_id,
            text,
            position: None,
        },
        Control::Cancel => EngineCommand::Cancel { session_id },
        Control::Unqueue { id } => EngineCommand::Unqueue { session_id, id },
        // One level only: the root never nests them.
        Control::Of {
            session_id,
            control,
        } => match *control {
            Control::Of { .. } => return None,
            control => return command_of(&session_id.into(), control),
        },
        Control::Reserved { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::wire::{WireDecision, WireScope};
    use crate::session::protocol::{AllowScope, ApprovalDecision};

    #[test]
    fn control_messages_become_the_matching_engine_commands() {
        let id = crate::session::SessionId::from("a-b_c");
        let command = |id: &crate::session::SessionId, control| command_of(id, control).unwrap();
        assert_eq!(
            command(
                &id,
                Control::Approval {
                    tool_call_id: "call-1".into(),
                    decision: WireDecision::Allow(WireScope::Once),
                }
            ),
            EngineCommand::ResolveApproval {
                session_id: id.clone(),
                tool_call_id: "call-1".into(),
                decision: ApprovalDecision::Allow {
                    scope: AllowScope::Once
                },
            }
        );
        assert_eq!(
            command(&id, Control::Steer { text: "go".into() }),
            EngineCommand::Steer {
                session_id: id.clone(),
                text: "go".into()
            }
        );
        assert_eq!(
            command(
                &id,
                Control::Queue {
                    text: "next".into()
                }
            ),
            EngineCommand::Queue {
                session_id: id.clone(),
                text: "next".into(),
                position: None
            }
        );
        assert_eq!(
            command(&id, Control::Cancel),
            EngineCommand::Cancel {
                session_id: id.clone()
            }
        );
        // One of the job's own sub-sessions; a root's answer to a spawn is no command.
        assert_eq!(
            command(
                &id,
                Control::Of {
                    session_id: "g-1".into(),
                    control: Box::new(Control::Cancel)
                }
            ),
            EngineCommand::Cancel {
                session_id: "g-1".into()
            }
        );
        let nested = Control::Of {
            session_id: "g-1".into(),
            control: Box::new(Control::Cancel),
        };
        assert_eq!(
            command_of(
                &id,
                Control::Of {
                    session_id: "g-2".into(),
                    control: Box::new(nested)
                }
            ),
            None
        );
        assert_eq!(
            command_of(
                &id,
                Control::Reserved {
                    child: "g-2".into(),
                    refused: None
                }
            ),
            None
        );
    }
}
