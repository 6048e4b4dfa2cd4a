//! The full-screen TUI. TODO(tui helper)
