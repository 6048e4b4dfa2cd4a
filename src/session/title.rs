//! Session titles (issue 10 item 5): the metadata `name` a root gets from its first
//! prompt, or that a person gives it (`arbor session rename`).
//!
//! Owns: turning text into a title — its first non-blank line, whitespace runs folded
//! to one space, secrets scrubbed (`redact::scrub`), at most [`TITLE_MAX_CHARS`]
//! characters, cut on a character boundary with `…`. Does not own: when a title is set
//! (`engine`, `cli`) or how it is drawn (`tui`).

use super::redact::scrub;

/// The longest title, in characters (Unicode scalar values), `…` included.
pub const TITLE_MAX_CHARS: usize = 60;

/// The title for `text`: its first line that is not blank, trimmed, each run of
/// whitespace folded to one space, secrets scrubbed; longer than [`TITLE_MAX_CHARS`]
/// characters → the first 59 and `…`. `None` when `text` has no visible character.
///
/// `"  Fix the parser\nso that…"` → `"Fix the parser"`.
///
/// Files attached before the text (`<context_file …>…</context_file>` blocks, as the
/// TUI attaches `@file` mentions) are skipped: the title is the person's words.
pub fn title_from(text: &str) -> Option<String> {
    let text = without_attachments(text);
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let folded = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let clean = scrub(&folded).into_owned();
    if clean.chars().count() <= TITLE_MAX_CHARS {
        return Some(clean);
    }
    let mut cut: String = clean.chars().take(TITLE_MAX_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

/// `text` after its leading `<context_file …>…</context_file>` and
/// `<context_image …>…</context_image>` blocks (all of `text` when nothing follows).
fn without_attachments(text: &str) -> &str {
    let mut rest = text;
    while let Some(end) = ["context_file", "context_image"]
        .into_iter()
        .filter(|tag| rest.trim_start().starts_with(&format!("<{tag}")))
        .find_map(|tag| {
            let close = format!("</{tag}>");
            rest.find(&close).map(|at| at + close.len())
        })
    {
        rest = &rest[end..];
    }
    if rest.trim().is_empty() { text } else { rest }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attached_files_are_not_the_title() {
        let text = "<context_file paths=\"@a.md → /p/a.md\">\nalpha\n</context_file>\n\n<context_file paths=\"@b → /p/b\">\nb\n</context_file>\n\nwhat is in @a.md";
        assert_eq!(title_from(text).as_deref(), Some("what is in @a.md"));
        let image = "<context_image paths=\"@s.png → /p/s.png\"><arbor-image media_type=\"image/png\">QUJD</arbor-image></context_image>\n\nwhat is this";
        assert_eq!(title_from(image).as_deref(), Some("what is this"));
        assert_eq!(
            title_from("<context_file x>\nonly\n</context_file>").as_deref(),
            Some("<context_file x>")
        );
    }

    #[test]
    fn a_title_is_the_first_visible_line_folded() {
        assert_eq!(
            title_from("\n  \n  Fix   the\tparser  \nthen the lexer").as_deref(),
            Some("Fix the parser")
        );
        assert_eq!(title_from(" \n\t\n"), None);
        assert_eq!(title_from(""), None);
    }

    #[test]
    fn long_titles_are_cut_on_a_character_boundary_with_an_ellipsis() {
        let exact = "x".repeat(TITLE_MAX_CHARS);
        assert_eq!(title_from(&exact).as_deref(), Some(exact.as_str()));
        let long = "é".repeat(100);
        let title = title_from(&long).unwrap();
        assert_eq!(title.chars().count(), TITLE_MAX_CHARS);
        assert!(title.ends_with('…'), "{title}");
        assert_eq!(title, format!("{}…", "é".repeat(TITLE_MAX_CHARS - 1)));
        // A cut just after a space drops it before the ellipsis.
        let words = format!("{} tail of it", "a".repeat(58));
        assert_eq!(title_from(&words).unwrap(), format!("{}…", "a".repeat(58)));
        // Wide characters and emoji are never split.
        let emoji = "🦀".repeat(70);
        assert_eq!(title_from(&emoji).unwrap().chars().count(), TITLE_MAX_CHARS);
    }

    #[test]
    fn a_known_key_in_the_prompt_never_reaches_the_title() {
        let key = "sk-title-test-0123456789abcdef";
        crate::session::redact::register_secrets([key]);
        let title = title_from(&format!("use {key} please")).unwrap();
        assert_eq!(title, "use [REDACTED] please");
    }
}
