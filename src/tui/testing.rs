//! Test support shared by the TUI's unit tests, scenario tests and benches: a rendered
//! buffer as plain text. Not part of arbor's interface.

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

/// `buf` as text: one line per row, right-trimmed, each wide symbol once (the cells it
/// covers are skipped).
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        let mut skip = 0;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            skip = sym.width().saturating_sub(1);
            row.push_str(sym);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}
