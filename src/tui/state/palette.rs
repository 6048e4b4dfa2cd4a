//! The composer's popup (issue 15): one list drawn above the composer for slash
//! commands (`/…`), stored sessions (`/resume …`), project files (`@…`) and the prompt
//! history search (Ctrl+R), with the selected row.
//!
//! Owns: the rows shown, the selection and moving it. Does not own: which rows a
//! text yields (`palette_commands`, `mentions`, `history`), what accepting a row does
//! (`app::palette`), or drawing (`views::palette`).

/// What the popup lists, and so what accepting a row does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopupKind {
    /// Slash commands matching the composer's `/name` (accept: run or complete it).
    Commands,
    /// Stored root sessions of this project matching `/resume QUERY` (accept: open).
    Sessions,
    /// Project files matching the `@partial` before the cursor (accept: complete).
    Files,
    /// Earlier prompts matching the search query (accept: put it in the composer).
    History,
}

impl PopupKind {
    /// The popup's border title.
    pub fn title(self) -> &'static str {
        match self {
            PopupKind::Commands => "Commands",
            PopupKind::Sessions => "Resume a session",
            PopupKind::Files => "Files",
            PopupKind::History => "History search",
        }
    }
}

/// One row: what is shown (`label`, then `detail` dimmed) and what accepting it uses
/// (`value`: a command name, a session id, a path relative to the project, a prompt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopupItem {
    pub label: String,
    pub detail: String,
    pub value: String,
}

/// The open popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    pub kind: PopupKind,
    /// The text the rows were filtered by (shown in the title of a history search).
    pub query: String,
    pub items: Vec<PopupItem>,
    /// Index into `items` (always valid while `items` is non-empty).
    pub selected: usize,
}

/// Rows the popup shows at most before it scrolls: every slash command fits.
pub const MAX_VISIBLE: usize = 13;

impl Popup {
    /// A popup of `items` with the first selected.
    pub fn new(kind: PopupKind, query: impl Into<String>, items: Vec<PopupItem>) -> Self {
        Self {
            kind,
            query: query.into(),
            items,
            selected: 0,
        }
    }

    /// Moves the selection by `delta`, wrapping at both ends.
    pub fn move_selection(&mut self, delta: isize) {
        let n = self.items.len();
        if n == 0 {
            return;
        }
        let n = isize::try_from(n).unwrap_or(isize::MAX);
        let i = isize::try_from(self.selected).unwrap_or(0);
        self.selected = usize::try_from((i + delta).rem_euclid(n)).unwrap_or(0);
    }

    /// The selected row.
    pub fn current(&self) -> Option<&PopupItem> {
        self.items.get(self.selected)
    }

    /// Keeps the selection on the row with the same `value` when the rows are
    /// recomputed for a new query (else the first row).
    pub fn keep_selection_from(&mut self, old: &Popup) {
        if old.kind != self.kind {
            return;
        }
        if let Some(v) = old.current().map(|i| &i.value) {
            self.selected = self.items.iter().position(|i| &i.value == v).unwrap_or(0);
        }
    }

    /// The first row shown so that the selection is visible in `rows` rows.
    pub fn offset(&self, rows: usize) -> usize {
        self.selected.saturating_sub(rows.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(v: &str) -> PopupItem {
        PopupItem {
            label: v.into(),
            detail: String::new(),
            value: v.into(),
        }
    }

    #[test]
    fn selection_wraps_and_survives_a_refilter() {
        let mut p = Popup::new(
            PopupKind::Commands,
            "",
            vec![item("a"), item("b"), item("c")],
        );
        p.move_selection(-1);
        assert_eq!(p.current().unwrap().value, "c");
        p.move_selection(1);
        assert_eq!(p.current().unwrap().value, "a");
        p.move_selection(2);
        let mut q = Popup::new(PopupKind::Commands, "x", vec![item("b"), item("c")]);
        q.keep_selection_from(&p);
        assert_eq!(q.current().unwrap().value, "c");
        assert_eq!(q.offset(1), 1);
    }
}
