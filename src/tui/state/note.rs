//! The status bar's short message.
//!
//! Owns: [`Note`], the data `App` sets and `views::status` shows. Does not own: when a
//! note is set or cleared (`app`) or how it looks (`views::status`).

use jiff::Timestamp;

/// A short status-bar message.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub text: String,
    pub warning: bool,
    /// When the status bar stops showing it.
    pub until: Timestamp,
}
