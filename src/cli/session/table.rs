//! The `arbor session list` table (issue 23 item 10): full session and parent ids,
//! times to the second in local time, and with `--all-projects` a PROJECT column (the
//! session's working directory, else its project's directory name under
//! `$AMPLIFIER_HOME/projects`: the engine's `engine::handle::sessions::project_of`).
//! WORK says where a worktree child's work stands (`merged`, `discarded`, `unmerged
//! ✎3`, `conflict`; issue 35). Unreadable directories come last, with the reason where
//! the update time would be.
//!
//! Owns: the table's text. Does not own: which sessions are listed, or their projects
//! (`engine::handle::sessions`).

use crate::outln;
use crate::session::Metadata;
use crate::session::store::Unreadable;

/// `rfc3339` as `YYYY-MM-DD HH:MM:SS` in the local time zone (`$TZ`, else the
/// system's); the text as it is when it does not parse.
pub fn to_the_second(rfc3339: &str) -> String {
    match rfc3339.parse::<jiff::Timestamp>() {
        Ok(ts) => ts
            .to_zoned(jiff::tz::TimeZone::system())
            .strftime("%Y-%m-%d %H:%M:%S")
            .to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

/// Prints the table: `projects` (one per session, in order) adds the PROJECT column.
pub fn print(
    list: &[Metadata],
    projects: Option<&[String]>,
    unreadable: &[Unreadable],
) -> std::io::Result<()> {
    let width =
        |ids: &mut dyn Iterator<Item = usize>, title: &str| ids.max().unwrap_or(0).max(title.len());
    let id_w = width(
        &mut list
            .iter()
            .map(|m| m.session_id.len())
            .chain(unreadable.iter().map(|u| u.session_id.len())),
        "SESSION",
    );
    let parent_w = width(
        &mut list
            .iter()
            .map(|m| m.parent_id.as_deref().map_or(1, str::len)),
        "PARENT",
    );
    let project_w = projects.map(|p| width(&mut p.iter().map(String::len), "PROJECT"));
    let project_cell = |text: &str| match project_w {
        Some(w) => format!("{text:<w$}  "),
        None => String::new(),
    };
    outln!(
        "{}{:<id_w$}  {:<parent_w$}  {:<18}  {:<11}  {:<12}  {:>5}  {:<19}  TITLE",
        project_cell("PROJECT"),
        "SESSION",
        "PARENT",
        "AGENT",
        "STATUS",
        "WORK",
        "TURNS",
        "UPDATED"
    )?;
    for (i, m) in list.iter().enumerate() {
        let project = projects.and_then(|p| p.get(i)).map_or("-", String::as_str);
        outln!(
            "{}{:<id_w$}  {:<parent_w$}  {:<18}  {:<11}  {:<12}  {:>5}  {:<19}  {}",
            project_cell(project),
            m.session_id,
            m.parent_id.as_deref().unwrap_or("-"),
            m.agent_name.as_deref().unwrap_or("-"),
            m.status.as_str(),
            super::isolation::list_cell(m),
            m.turn_count,
            to_the_second(&m.last_updated),
            m.name.as_deref().unwrap_or("-")
        )?;
    }
    for u in unreadable {
        outln!(
            "{}{:<id_w$}  {:<parent_w$}  {:<18}  {:<11}  {:<12}  {:>5}  {}",
            project_cell("-"),
            u.session_id,
            "-",
            "-",
            "unreadable",
            "-",
            "-",
            u.reason
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_cut_to_the_second() {
        let text = to_the_second("2025-03-01T12:00:05.123456789Z");
        assert_eq!(text.len(), "2025-03-01 12:00:05".len(), "{text}");
        assert!(text.ends_with(":05"), "{text}");
        assert_eq!(to_the_second("yesterday"), "yesterday");
    }
}
