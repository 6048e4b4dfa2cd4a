//! The prompt of `arbor run` with what is piped in (issue 23 item 9, as Claude Code's
//! `-p`): when stdin is not a terminal, its text is read to the end and added after the
//! prompt, separated by a blank line (`git diff | arbor run "review this"`); the prompt
//! `-` is the piped text alone (`arbor run - < task.md`). An empty or absent pipe adds
//! nothing.
//!
//! Owns: [`prompt_with_stdin`] and [`combine`], and their [`PromptError`]. Does not
//! own: the turn (`run`).

use std::io::{IsTerminal, Read};

/// Why no prompt could be made (each message says what to do).
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// Reading stdin failed.
    #[error("cannot read the prompt piped to stdin: {0}")]
    Read(std::io::Error),
    /// The piped bytes are not UTF-8 text.
    #[error("the text piped to stdin is not UTF-8; arbor run reads text prompts")]
    NotUtf8,
    /// The prompt is `-` and nothing was piped in.
    #[error(
        "no prompt: `-` reads the prompt from stdin, and nothing was piped in \
         (try: arbor run - < prompt.md)"
    )]
    NothingPiped,
}

/// The prompt argument that means "read the prompt from stdin".
pub const FROM_STDIN: &str = "-";

/// `prompt` with stdin's text when stdin is not a terminal (see the module doc).
///
/// Errors (the message says what to do): stdin cannot be read or is not UTF-8; the
/// prompt is `-` and stdin is a terminal or empty.
pub fn prompt_with_stdin(prompt: String) -> Result<String, PromptError> {
    let stdin = std::io::stdin();
    let piped = if stdin.is_terminal() {
        None
    } else {
        let mut bytes = Vec::new();
        stdin
            .lock()
            .read_to_end(&mut bytes)
            .map_err(PromptError::Read)?;
        Some(String::from_utf8(bytes).map_err(|_| PromptError::NotUtf8)?)
    };
    combine(prompt, piped.as_deref())
}

/// The prompt from the argument and the piped text (`None`: stdin is a terminal).
///
/// Errors: the prompt is `-` with no piped text.
pub fn combine(prompt: String, piped: Option<&str>) -> Result<String, PromptError> {
    let piped = piped
        .map(|p| p.trim_end_matches(['\n', '\r']))
        .filter(|p| !p.trim().is_empty());
    match (prompt.as_str(), piped) {
        (FROM_STDIN, Some(text)) => Ok(text.to_string()),
        (FROM_STDIN, None) => Err(PromptError::NothingPiped),
        (_, Some(text)) => Ok(format!("{prompt}\n\n{text}")),
        (_, None) => Ok(prompt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_text_follows_the_prompt_or_is_the_prompt() {
        assert_eq!(
            combine("review".into(), Some("diff\n")).unwrap(),
            "review\n\ndiff"
        );
        assert_eq!(combine("-".into(), Some("do it\n")).unwrap(), "do it");
        assert_eq!(combine("hi".into(), None).unwrap(), "hi");
        assert_eq!(combine("hi".into(), Some("  \n")).unwrap(), "hi");
        let err = combine("-".into(), Some("")).unwrap_err();
        assert!(matches!(err, PromptError::NothingPiped));
        assert!(
            err.to_string().contains("reads the prompt from stdin"),
            "{err}"
        );
    }
}
