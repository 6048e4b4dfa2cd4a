//! The real terminal's input stream and host: crossterm's `EventStream` wrapped so it
//! can be dropped while `$EDITOR` owns the terminal (its reader thread would otherwise
//! steal the editor's keystrokes) and recreated afterwards.
//!
//! Owns: pausing input around the editor. Does not own: terminal modes (`terminal`).

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crossterm::event::{Event, EventStream};
use futures::Stream;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::runloop::Host;

type Shared = Arc<Mutex<Option<EventStream>>>;

/// Terminal input that the [`TerminalHost`] can pause.
pub struct PausableInput {
    inner: Shared,
}

impl PausableInput {
    /// Starts reading terminal events.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Some(EventStream::new()))),
        }
    }

    /// A host sharing this input.
    pub fn host(&self) -> TerminalHost {
        TerminalHost {
            input: self.inner.clone(),
        }
    }
}

impl Default for PausableInput {
    fn default() -> Self {
        Self::new()
    }
}

impl Stream for PausableInput {
    type Item = io::Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Ok(mut guard) = self.inner.lock() else {
            return Poll::Ready(None);
        };
        match guard.as_mut() {
            Some(stream) => Pin::new(stream).poll_next(cx),
            // Paused: the loop is not polling input while the editor runs anyway.
            None => Poll::Pending,
        }
    }
}

/// The real terminal host.
pub struct TerminalHost {
    input: Shared,
}

impl Host<CrosstermBackend<io::Stdout>> for TerminalHost {
    fn open_editor(
        &mut self,
        terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
        path: &Path,
    ) -> io::Result<()> {
        if let Ok(mut g) = self.input.lock() {
            g.take();
        }
        let result = super::terminal::run_editor(terminal, path);
        if let Ok(mut g) = self.input.lock() {
            *g = Some(EventStream::new());
        }
        result
    }

    fn notify(
        &mut self,
        terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
        notification: &super::notify::Notification,
    ) -> io::Result<()> {
        super::runloop::notify_crossterm(terminal, notification)
    }

    fn write_terminal(
        &mut self,
        terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
        write: &super::term_write::TerminalWrite,
    ) -> io::Result<()> {
        super::runloop::write_crossterm(terminal, write)
    }
}
