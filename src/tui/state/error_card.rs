//! Provider error cells: a model call that failed (or is about to be retried), shown
//! with its kind as a heading, the API's own message, provider, model and HTTP status,
//! and a hint fitting the kind.
//!
//! Built from a `provider:error` event ([`ProviderErrorEvent`], published by
//! `engine::stream`); a failure of no known kind shows as a generic "Provider error".
//!
//! Placement: a retry shows as a one-line notice; the next retry or the final error of
//! the same call replaces it when it is still the last cell, so a call that gave up
//! leaves one error card ("after 4 attempts"). A plain error cell with the same text
//! (the turn's outcome can arrive first) is replaced by the card too.
//!
//! Owns: parsing that data, the heading/hint per kind and the rows. Does not own: when
//! events arrive and where the card goes (`Thread::push_failure` in `thread_events`)
//! or other cells (`cells`).

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use super::rows::Row;
use crate::provider::ProviderErrorKind;
use crate::session::protocol::ProviderErrorEvent;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::RLine;

/// One `provider:error`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderFailure {
    /// `None`: no known kind (a generic "Provider error").
    pub kind: Option<ProviderErrorKind>,
    /// Provider id (`openai`, `anthropic`, …); may be empty.
    pub provider: String,
    /// `provider-openai`, `provider-anthropic`, … when known.
    pub module: Option<String>,
    pub model: Option<String>,
    pub status: Option<u16>,
    /// The API's own message (else a description of the failure).
    pub message: String,
    /// The full error text (`provider: message (HTTP n)`), as the turn outcome has it.
    pub error: String,
    /// The attempt that failed (1-based) and the most attempts per call.
    pub attempt: u32,
    pub max_attempts: u32,
    /// While a retry is pending: the wait before it, in milliseconds.
    pub retry_in_ms: Option<u64>,
    /// The server's requested wait, in milliseconds.
    pub retry_after_ms: Option<u64>,
}

/// The heading of an error of `kind`.
pub fn heading(kind: Option<ProviderErrorKind>) -> &'static str {
    use ProviderErrorKind::*;
    match kind {
        Some(Auth) => "Authentication failed",
        Some(RateLimit) => "Rate limited",
        Some(Overloaded) => "Provider overloaded",
        Some(ContextTooLong) => "Context too long",
        Some(InvalidRequest) => "Request rejected",
        Some(Server) => "Provider server error",
        Some(Network) => "Network error",
        Some(Stream) => "Response stream failed",
        Some(Cancelled) => "Cancelled",
        Some(NotConfigured) => "No provider configured",
        None => "Provider error",
    }
}

/// `ms` milliseconds for people: `1.5s`, `45s`, `2m05s`, `250ms`, `3h07m`, `12d04h`
/// (see `config::retry::describe_wait`); `u64::MAX`, what a wait too long to count
/// in milliseconds is sent as, reads as the longest wait there is.
pub fn format_wait(ms: u64) -> String {
    let wait = match ms {
        u64::MAX => std::time::Duration::MAX,
        ms => std::time::Duration::from_millis(ms),
    };
    crate::config::retry::describe_wait(wait)
}

impl From<&ProviderErrorEvent> for ProviderFailure {
    fn from(e: &ProviderErrorEvent) -> Self {
        Self {
            kind: Some(e.kind),
            provider: e.provider.clone(),
            module: Some(e.module.clone()).filter(|m| !m.is_empty()),
            model: Some(e.model.clone()).filter(|m| !m.is_empty()),
            status: e.status,
            message: e.message.clone(),
            error: e.error.clone(),
            attempt: e.attempt,
            max_attempts: e.max_attempts,
            retry_in_ms: e.retrying.then(|| e.wait_ms.unwrap_or(0)),
            retry_after_ms: e.retry_after_ms,
        }
    }
}

impl ProviderFailure {
    /// Whether a retry is pending (a notice, not the final error).
    pub fn is_retry(&self) -> bool {
        self.retry_in_ms.is_some()
    }

    /// The environment variable arbor reads this provider's key from, by the provider
    /// table (`config::modules::key_var_hint`: any OpenAI-compatible server, OpenRouter
    /// and Azure included, uses `OPENAI_API_KEY`).
    fn key_var(&self) -> &'static str {
        crate::config::modules::key_var_hint(&format!(
            "{} {}",
            self.provider,
            self.module.as_deref().unwrap_or_default()
        ))
    }

    /// Whether the API's message is about quota, billing or credit.
    fn is_billing(&self) -> bool {
        let m = self.message.to_ascii_lowercase();
        ["quota", "billing", "credit", "payment"]
            .iter()
            .any(|w| m.contains(w))
    }

    /// What the user can do about it.
    pub fn hint(&self) -> String {
        use ProviderErrorKind::*;
        let wait = self
            .retry_after_ms
            .filter(|ms| *ms > 0)
            .map(|ms| format!("the server asks to wait {}; ", format_wait(ms)))
            .unwrap_or_default();
        match self.kind {
            Some(Auth) => format!(
                "check {} (or `api_key` in config.yaml), then resend to retry",
                self.key_var()
            ),
            Some(RateLimit) => format!("{wait}wait a moment, then resend to retry"),
            Some(Overloaded) => format!("{wait}the provider is busy: resend in a moment to retry"),
            Some(ContextTooLong) => {
                "the conversation no longer fits the model: start a new session or use a model with a larger context".into()
            }
            Some(InvalidRequest) if self.is_billing() => {
                "the account is out of quota or credit: check billing with the provider; resending unchanged fails again".into()
            }
            Some(InvalidRequest) => {
                "check the model name and provider config; resending unchanged fails again".into()
            }
            Some(Server) => format!("{wait}resend to retry; if it persists, check the provider's status"),
            Some(Network) => "check the connection and the provider's base_url, then resend to retry".into(),
            Some(Stream) => "the partial reply is kept; resend to retry".into(),
            Some(Cancelled) => "resend to continue".into(),
            Some(NotConfigured) => "configure a provider (`arbor doctor` shows what was found)".into(),
            None => "resend to retry".into(),
        }
    }

    /// `openai · gpt-4o · HTTP 429 · after 4 attempts` (empty parts left out).
    pub fn meta(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if !self.provider.is_empty() {
            parts.push(self.provider.clone());
        }
        if let Some(m) = &self.model {
            parts.push(m.clone());
        }
        if let Some(s) = self.status {
            parts.push(format!("HTTP {s}"));
        }
        if self.attempt > 1 && !self.is_retry() {
            parts.push(format!("after {} attempts", self.attempt));
        }
        parts.join(" · ")
    }

    /// The cell's logical rows.
    pub(crate) fn rows(&self, theme: &Theme) -> Vec<Row> {
        let error = theme.style(Slot::ChatError);
        let notice = theme.style(Slot::ChatNotice);
        let meta = theme.style(Slot::ChatToolResult);
        let message = first_lines(&self.message, 6);
        if let Some(wait) = self.retry_in_ms {
            let mut head = format!("↻ {}", heading(self.kind));
            if let Some(s) = self.status {
                head.push_str(&format!(" (HTTP {s})"));
            }
            head.push_str(&format!(
                " · retry {} of {} in {} · Esc cancels",
                self.attempt + 1,
                self.max_attempts.max(self.attempt + 1),
                format_wait(wait)
            ));
            let mut rows = vec![wrapped(vec![Span::styled(head, notice)], 2)];
            if let Some(first) = message.first() {
                rows.push(wrapped(vec![Span::styled(format!("  {first}"), meta)], 2));
            }
            return rows;
        }
        let mut rows = vec![wrapped(
            vec![Span::styled(
                format!("✗ {}", heading(self.kind)),
                error.add_modifier(Modifier::BOLD),
            )],
            2,
        )];
        for line in message {
            rows.push(wrapped(vec![Span::styled(format!("  {line}"), error)], 2));
        }
        let meta_text = self.meta();
        if !meta_text.is_empty() {
            rows.push(wrapped(
                vec![Span::styled(format!("  {meta_text}"), meta)],
                2,
            ));
        }
        rows.push(wrapped(
            vec![Span::styled(format!("  ↳ {}", self.hint()), notice)],
            4,
        ));
        rows
    }
}

fn wrapped(spans: Vec<Span<'static>>, indent: u16) -> Row {
    Row::Wrap(RLine::indented(Line::from(spans), indent))
}

/// Up to `max` non-blank lines of `text` (the last says how many were left out).
fn first_lines(text: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out: Vec<String> = lines.iter().take(max).map(|l| l.to_string()).collect();
    if lines.len() > max {
        out.push(format!("… {} more lines", lines.len() - max));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::state::cells::{Cell, CellKind};
    use crate::tui::state::thread::Thread;
    use crate::tui::wrap::plain;

    /// A final (not retrying) `provider:error` of `kind` from `provider`.
    fn event(kind: ProviderErrorKind, provider: &str) -> ProviderErrorEvent {
        ProviderErrorEvent {
            provider: provider.into(),
            module: String::new(),
            model: String::new(),
            kind,
            status: Some(401),
            message: "invalid x-api-key".into(),
            error: "anthropic: invalid x-api-key (HTTP 401)".into(),
            retryable: false,
            retrying: false,
            attempt: 1,
            max_attempts: 4,
            wait_ms: None,
            retry_after_ms: None,
        }
    }

    fn text(f: &ProviderFailure) -> String {
        let theme = Theme::builtin_dark(true);
        let mut cell = Cell::new(CellKind::Failure(Box::new(f.clone())));
        let mut stats = Default::default();
        cell.ensure_layout(200, &theme, &mut stats);
        (0..cell.height())
            .filter_map(|i| cell.row(i).map(plain))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn each_kind_has_a_heading_and_a_fitting_hint() {
        use ProviderErrorKind::*;
        let data = |kind, provider: &str| ProviderFailure::from(&event(kind, provider));
        let auth = data(Auth, "anthropic");
        let t = text(&auth);
        assert!(t.starts_with("✗ Authentication failed"), "{t}");
        assert!(t.contains("invalid x-api-key") && t.contains("anthropic · HTTP 401"));
        assert!(t.contains("check ANTHROPIC_API_KEY"), "{t}");
        let openai = data(Auth, "openai");
        assert!(openai.hint().contains("OPENAI_API_KEY"));
        let ctx = data(ContextTooLong, "openai");
        assert!(text(&ctx).contains("Context too long") && ctx.hint().contains("new session"));
        for kind in [RateLimit, Overloaded, Server, Network] {
            let f = data(kind, "openai");
            assert!(f.hint().contains("retry"), "{kind:?}: {}", f.hint());
            assert_ne!(heading(f.kind), "Provider error", "{kind:?}");
        }
        // OpenRouter is an OpenAI-compatible server: its key is OPENAI_API_KEY to arbor.
        let openrouter = data(Auth, "openrouter");
        assert!(
            openrouter.hint().contains("OPENAI_API_KEY"),
            "{}",
            openrouter.hint()
        );
        let quota = ProviderFailure::from(&ProviderErrorEvent {
            status: Some(429),
            message: "You exceeded your current quota, please check your plan and billing details."
                .into(),
            ..event(InvalidRequest, "openai")
        });
        assert!(quota.hint().contains("billing"), "{}", quota.hint());
        let bad_model = data(InvalidRequest, "openai");
        assert!(
            bad_model.hint().contains("model name"),
            "{}",
            bad_model.hint()
        );
        let unknown = ProviderFailure {
            kind: None,
            ..data(Server, "openai")
        };
        assert!(text(&unknown).starts_with("✗ Provider error"));
    }

    #[test]
    fn a_retry_is_a_notice_that_the_final_error_replaces() {
        let retry = ProviderErrorEvent {
            provider: "openai".into(),
            status: Some(429),
            message: "slow down".into(),
            error: "openai: slow down (HTTP 429)".into(),
            retryable: true,
            retrying: true,
            wait_ms: Some(1500),
            retry_after_ms: Some(1500),
            ..event(ProviderErrorKind::RateLimit, "openai")
        };
        let f = ProviderFailure::from(&retry);
        assert_eq!(
            text(&f),
            "↻ Rate limited (HTTP 429) · retry 2 of 4 in 1.5s · Esc cancels\n  slow down"
        );
        let mut t = Thread::new_root(None);
        t.push_failure(f.clone());
        let mut second = f.clone();
        second.attempt = 2;
        t.push_failure(second);
        assert_eq!(t.cells.len(), 1, "the next retry replaces the notice");
        let mut last = f;
        last.attempt = 4;
        last.retry_in_ms = None;
        t.push_failure(last.clone());
        assert_eq!(t.cells.len(), 1);
        let CellKind::Failure(card) = &t.cells[0].kind else {
            panic!("not a failure card");
        };
        assert!(text(card).contains("openai · HTTP 429 · after 4 attempts"));
        // The turn's outcome repeats the error text: no second cell.
        t.push_error(&last.error);
        assert_eq!(t.cells.len(), 1);
        assert_eq!(format_wait(65_000), "1m05s");
        assert_eq!(format_wait(2_000), "2s");
        assert_eq!(format_wait(250), "250ms");
        assert_eq!(format_wait(3 * 3_600_000 + 7 * 60_000), "3h07m");
        assert_eq!(format_wait(u64::MAX - 1), "213503982334d14h");
        assert_eq!(format_wait(u64::MAX), "over 584 billion years");
    }
}
