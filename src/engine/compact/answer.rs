//! A sub-session's final answer as its parent receives it (issue 26 item 5): capped,
//! so a root that delegates for hours does not fill its own context with children's
//! results. The whole answer stays in the child's transcript.
//!
//! Owns: the cut and the note saying where the rest is. Does not own: the cap's
//! config key (`config::context`) or the task result (`spawn`, `tool::task`).

/// `response` cut to `max_chars` characters, with a note naming sub-session `id` and
/// how to read the whole answer; unchanged when it fits.
pub fn cap(response: String, max_chars: usize, id: &str) -> String {
    let total = response.chars().count();
    if total <= max_chars {
        return response;
    }
    let end = response
        .char_indices()
        .nth(max_chars)
        .map_or(response.len(), |(i, _)| i);
    format!(
        "{}\n\n[answer cut at {max_chars} of {total} characters (config \
         context.child_answer_max_chars); the whole answer is the last message of \
         sub-session {id}: read it with `arbor session show {id} --transcript`, or call \
         task with session_id \"{id}\" to ask for the part you need]",
        &response[..end]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_cut_with_a_note_short_ones_kept() {
        assert_eq!(cap("short".into(), 10, "c1"), "short");
        let cut = cap("ééééé".repeat(4), 7, "c1");
        assert!(
            cut.starts_with("ééééééé\n\n[answer cut at 7 of 20 characters"),
            "{cut}"
        );
        assert!(cut.contains("arbor session show c1 --transcript"));
    }
}
