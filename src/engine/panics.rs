//! Panics in the engine's background work, caught and turned into errors.
//!
//! Owns: running a future or a closure so that a panic inside it comes back as a
//! [`Panic`] carrying its message ([`catch`], [`catch_blocking`]) and is logged (`tracing::error!`, with
//! what was running), and reading the message of a panic payload ([`message`]) —
//! also of a `tokio::task::JoinError` (`into_panic`). Does not own: what the caller
//! makes of it (a failed turn in `turn`, a failed tool call in `calls`, an error event
//! in the TUI's executor), or restoring the terminal (the panic hook in
//! `tui::terminal`).
//!
//! Everything a caught future or closure touched is treated as still usable: the
//! engine's shared state sits behind `live::lock`, which recovers a poisoned mutex,
//! and every update under it is a single assignment or push.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

/// A panic caught in the engine's background work: its message (what `panic!` was
/// given). Displays as the message alone; the caller says what panicked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Panic {
    /// The panic's message ([`message`] of its payload).
    pub message: String,
}

/// The message of a panic payload: the `&str` or `String` given to `panic!`, else a
/// placeholder naming no detail.
pub fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Runs `future`; a panic inside it is logged with `what` (e.g. "the turn of
/// session 3f2a…") and returned as a [`Panic`] instead of unwinding further.
pub async fn catch<F: Future>(what: &str, future: F) -> Result<F::Output, Panic> {
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|payload| Panic {
            message: logged(what, &*payload),
        })
}

/// [`catch`] for a synchronous closure (work on a blocking thread).
pub fn catch_blocking<T>(what: &str, work: impl FnOnce() -> T) -> Result<T, Panic> {
    std::panic::catch_unwind(AssertUnwindSafe(work)).map_err(|payload| Panic {
        message: logged(what, &*payload),
    })
}

/// Logs a caught panic of `what` and returns its message.
pub(crate) fn logged(what: &str, payload: &(dyn Any + Send)) -> String {
    let text = message(payload);
    tracing::error!("{what} panicked: {text}");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_its_message_and_a_value_passes_through() {
        assert_eq!(catch("ok", async { 7 }).await, Ok(7));
        let fails = catch("boom", async {
            if true {
                panic!("boom {}", 42);
            }
        });
        let panic = |message: &str| Panic {
            message: message.to_string(),
        };
        assert_eq!(fails.await, Err(panic("boom 42")));
        assert_eq!(
            catch_blocking("static", || -> u8 { panic!("static text") }),
            Err(panic("static text"))
        );
        let odd = catch_blocking("odd", || std::panic::panic_any(5_u8));
        assert_eq!(odd, Err(panic("a panic without a message")));
        assert_eq!(odd.unwrap_err().to_string(), "a panic without a message");
        assert_eq!(catch_blocking("fine", || 1), Ok(1));
    }
}
