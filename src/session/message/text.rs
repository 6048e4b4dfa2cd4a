//! `Text`: the shared, immutable string of a message's text.
//!
//! Owns: the one allocation of a message text that every holder shares — the engine's
//! in-memory transcript, bus events, the TUI's cells and snapshots all clone a `Text`
//! (a reference-count increment) instead of copying the string. Does not own: which
//! message fields are texts (`message`).

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A cheap-to-clone shared string (`Arc<str>` inside): cloning shares the bytes.
///
/// Serialized as a plain JSON string, so the transcript's wire format is the one a
/// `String` field has. Compares, hashes, displays and debug-prints as its `str`.
/// `Text::ptr_eq` tells whether two values share one allocation.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(Arc<str>);

impl Text {
    /// The text as a `&str` (the same as deref).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `a` and `b` share one allocation (a clone of the other), not merely
    /// equal bytes.
    pub fn ptr_eq(a: &Text, b: &Text) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl Default for Text {
    /// The empty text. Each call allocates only the `Arc` header (no bytes).
    fn default() -> Self {
        Text(Arc::from(""))
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<String> for Text {
    /// Moves the string's bytes into one shared allocation (one copy, the `String`'s
    /// buffer freed).
    fn from(s: String) -> Self {
        Text(Arc::from(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(Arc::from(s))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Self {
        Text(Arc::from(s.as_str()))
    }
}

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Self {
        Text(Arc::from(s))
    }
}

impl From<Arc<str>> for Text {
    fn from(s: Arc<str>) -> Self {
        Text(s)
    }
}

impl From<&Text> for Text {
    fn from(s: &Text) -> Self {
        s.clone()
    }
}

impl From<Text> for String {
    fn from(t: Text) -> Self {
        t.0.to_string()
    }
}

impl From<Text> for Arc<str> {
    fn from(t: Text) -> Self {
        t.0
    }
}

impl<T> FromIterator<T> for Text
where
    String: FromIterator<T>,
{
    /// Collects as a `String` would (strings, `&str`s or chars), then shares it.
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Text::from(iter.into_iter().collect::<String>())
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        &*self.0 == other.as_str()
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == &*other.0
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    /// Reads a JSON string; borrowed input (no escapes) is copied once, straight into
    /// the shared allocation.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text::from(v))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Text, E> {
                Ok(Text::from(v))
            }
        }
        d.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn clones_share_one_allocation() {
        let a = Text::from("hello".to_string());
        let b = a.clone();
        assert!(Text::ptr_eq(&a, &b));
        assert!(std::ptr::eq(a.as_ptr(), b.as_ptr()));
        assert!(!Text::ptr_eq(&a, &Text::from("hello")));
    }

    #[test]
    fn serializes_as_a_plain_json_string() {
        let t = Text::from("a \"q\"\n");
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#""a \"q\"\n""#);
        let back: Text = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert!(serde_json::from_str::<Text>("3").is_err());
    }

    #[test]
    fn compares_hashes_and_prints_as_its_str() {
        let t = Text::from("x");
        assert_eq!(t, "x");
        assert_eq!(t, *"x");
        assert_eq!(t, "x".to_string());
        assert_eq!("x", t);
        assert_eq!(format!("{t}|{t:?}"), "x|\"x\"");
        let set: HashSet<Text> = [t.clone()].into_iter().collect();
        assert!(set.contains("x"));
        assert_eq!(Text::default(), "");
        assert_eq!(String::from(t), "x");
    }
}
