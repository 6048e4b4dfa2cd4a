//! Capping a command's output: the first and the last bytes are kept, the middle is
//! counted and replaced by a line that says how much was cut.
//!
//! Owns: [`Capped`], a buffer of bounded size however much is pushed into it. Does not
//! own: reading the pipes or the result shape (`bash`).

use std::collections::VecDeque;

/// Bytes kept from the start of a stream.
pub const HEAD_BYTES: usize = 20 * 1024;
/// Bytes kept from the end of a stream (the end of a build or test run says most).
pub const TAIL_BYTES: usize = 30 * 1024;

/// One stream's output: at most `head + tail` bytes held, the total counted.
#[derive(Debug, Clone)]
pub struct Capped {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: usize,
}

impl Default for Capped {
    fn default() -> Self {
        Self::new(HEAD_BYTES, TAIL_BYTES)
    }
}

impl Capped {
    /// A buffer keeping the first `head_cap` and the last `tail_cap` bytes.
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    /// Appends `bytes`.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(bytes[bytes.len() - self.tail_cap..].iter().copied());
            return;
        }
        self.tail.extend(bytes.iter().copied());
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
    }

    /// How many bytes were pushed in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Whether bytes between head and tail were dropped.
    pub fn was_cut(&self) -> bool {
        self.total > self.head.len() + self.tail.len()
    }

    /// The kept text (invalid UTF-8 replaced): head, then `"\n… N bytes cut …\n"` when
    /// the middle was dropped, then tail. A character split by the cut is dropped
    /// whole rather than shown half.
    pub fn into_text(self) -> String {
        let cut = self.total - self.head.len() - self.tail.len();
        let mut tail: Vec<u8> = self.tail.into_iter().collect();
        if cut == 0 {
            let mut all = self.head;
            all.append(&mut tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head_end = utf8_prefix_len(&self.head);
        let tail_start = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
            .count();
        let dropped = cut + (self.head.len() - head_end) + tail_start;
        format!(
            "{}\n… {dropped} bytes cut …\n{}",
            String::from_utf8_lossy(&self.head[..head_end]),
            String::from_utf8_lossy(&tail[tail_start..])
        )
    }
}

/// The length of `bytes` without a trailing incomplete UTF-8 character.
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Capped::new(4, 4);
        c.push(b"abc");
        c.push(b"defgh");
        assert!(!c.was_cut());
        assert_eq!(c.into_text(), "abcdefgh");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_states_the_cut() {
        let mut c = Capped::new(4, 3);
        for chunk in [&b"0123"[..], b"456789", b"ab", b"cdef"] {
            c.push(chunk);
        }
        assert_eq!(c.total(), 16);
        assert!(c.was_cut());
        assert_eq!(c.into_text(), "0123\n… 9 bytes cut …\ndef");
        let mut big = Capped::new(2, 2);
        big.push(&[b'x'; 10_000]);
        assert_eq!(big.into_text(), "xx\n… 9996 bytes cut …\nxx");
    }

    #[test]
    fn a_character_split_by_the_cut_is_dropped_whole() {
        let mut c = Capped::new(2, 2);
        c.push("aé----éb".as_bytes());
        // head "a" + half of "é" (dropped), tail: half of "é" (dropped) + "b".
        assert_eq!(c.into_text(), "a\n… 8 bytes cut …\nb");
    }
}
