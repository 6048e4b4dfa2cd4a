//! The token filter in front of html5ever's tree builder that keeps a page's nesting
//! shallow (issue 34: 5,000 nested `<div>` overflowed the converter's stack; a
//! million made the tree builder quadratic, since each start tag scans the stack of
//! open elements).
//!
//! Owns: [`DepthLimiter`], which counts the elements a page opens and drops start
//! tags past [`TOKEN_DEPTH`] (and as many of their end tags), so their content lands
//! in the deepest element still open. Does not own the guarantee: this count is an
//! approximation of the tree builder's stack (the HTML algorithm reopens formatting
//! elements and adds implied ones), so it errs towards counting too much, and
//! `super::convert` still flattens the built tree at its own depth limit and stops
//! parsing at a deadline.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use html5ever::LocalName;
use html5ever::tokenizer::{TagKind, Token, TokenSink, TokenSinkResult};

/// Elements open at once that the filter lets through; deeper start tags are dropped.
/// Below `super::convert::MAX_DEPTH`, leaving room for elements the tree builder
/// adds itself (`html`, `body`, `tbody` …).
pub const TOKEN_DEPTH: usize = 96;

/// Elements with no content and no end tag: never counted.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input",
    "keygen", "link", "meta", "param", "source", "track", "wbr", "image",
];

/// Elements whose content the tokenizer reads as raw text once the tree builder has
/// seen the start tag: never dropped, or a script's text would become page text.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "noscript",
    "plaintext",
];

/// Elements a start tag of the same name closes when it is the current one
/// (`<p>a<p>b`, `<li>`, table cells).
const SIBLINGS: &[&str] = &[
    "p", "li", "dt", "dd", "td", "th", "tr", "option", "optgroup", "rb", "rt", "rp", "rtc",
];

/// Elements an end tag does not close past (scope boundaries of the HTML algorithm,
/// list and button scopes, foreign content): an end tag whose element is below one of
/// these is not counted as closing anything, since the tree builder may ignore it.
const BOUNDARY: &[&str] = &[
    "applet",
    "caption",
    "html",
    "table",
    "td",
    "th",
    "marquee",
    "object",
    "template",
    "button",
    "ol",
    "ul",
    "select",
    "svg",
    "math",
    "foreignObject",
    "desc",
    "mi",
    "mo",
    "mn",
    "ms",
    "mtext",
    "annotation-xml",
];

/// Formatting elements: their end tag runs the adoption agency algorithm, which may
/// keep elements open, so it closes only when it is the current element.
const FORMATTING: &[&str] = &[
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];

/// A [`TokenSink`] that forwards to `inner` every token except start tags that would
/// open more than [`TOKEN_DEPTH`] elements, and the end tags matching them.
pub struct DepthLimiter<S> {
    /// The tree builder.
    pub inner: S,
    /// The elements counted as open, outermost first.
    open: RefCell<Vec<LocalName>>,
    /// Start tags dropped, by name, whose end tags are still to drop.
    dropped: RefCell<HashMap<LocalName, usize>>,
    /// How many of `open` are `svg` or `math` (inside them, a start tag of the same
    /// name as the current element nests).
    foreign: Cell<usize>,
}

impl<S> DepthLimiter<S> {
    /// A filter in front of `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            open: RefCell::new(Vec::new()),
            dropped: RefCell::new(HashMap::new()),
            foreign: Cell::new(0),
        }
    }

    /// Whether the start tag `name` goes through (and counts it).
    fn admit(&self, name: &LocalName) -> bool {
        let tag: &str = name;
        if VOID.contains(&tag) {
            return true;
        }
        let mut open = self.open.borrow_mut();
        let foreign = self.foreign.get() > 0;
        if !foreign && open.last() == Some(name) && SIBLINGS.contains(&tag) {
            open.pop();
        }
        if open.len() >= TOKEN_DEPTH && !RAW_TEXT.contains(&tag) {
            *self.dropped.borrow_mut().entry(name.clone()).or_insert(0) += 1;
            return false;
        }
        if is_foreign_root(name) {
            self.foreign.set(self.foreign.get() + 1);
        }
        open.push(name.clone());
        true
    }

    /// Whether the end tag `name` goes through (and what it closes).
    fn close(&self, name: &LocalName) -> bool {
        {
            let mut dropped = self.dropped.borrow_mut();
            if let Some(n) = dropped.get_mut(name)
                && *n > 0
            {
                *n -= 1;
                return false;
            }
        }
        let mut open = self.open.borrow_mut();
        let Some(at) = open.iter().rposition(|n| n == name) else {
            return true;
        };
        let top = at + 1 == open.len();
        let blocked = open[at + 1..]
            .iter()
            .any(|n| BOUNDARY.contains(&&**n) || FORMATTING.contains(&&**n));
        if top || (!blocked && !FORMATTING.contains(&&**name)) {
            let closed = open[at..].iter().filter(|n| is_foreign_root(n)).count();
            self.foreign.set(self.foreign.get() - closed);
            open.truncate(at);
        }
        true
    }
}

/// `svg` or `math`: the root of foreign content.
fn is_foreign_root(name: &LocalName) -> bool {
    matches!(&**name, "svg" | "math")
}

impl<S: TokenSink> TokenSink for DepthLimiter<S> {
    type Handle = S::Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<S::Handle> {
        if let Token::TagToken(tag) = &token {
            let pass = match tag.kind {
                TagKind::StartTag => self.admit(&tag.name),
                TagKind::EndTag => self.close(&tag.name),
            };
            if !pass {
                return TokenSinkResult::Continue;
            }
        }
        self.inner.process_token(token, line_number)
    }

    fn end(&self) {
        self.inner.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.inner
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}
