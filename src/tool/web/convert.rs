//! HTML → Markdown for `web_fetch`, bounded in depth, input size and time, and run
//! where it cannot take the process down (issue 34: 5,000 nested `<div>` — 55 KB —
//! overflowed the converter's stack and aborted every session of the process; a
//! million ran past the fetch's timeout and past SIGTERM).
//!
//! Owns: [`convert`] (on the calling thread) and [`spawn`] (on a thread of its own
//! with a [`STACK_SIZE`] stack, cancelled through a flag). The page is parsed by
//! html5ever in [`CHUNK`]-byte steps behind [`super::limit::DepthLimiter`], checking
//! the [`Budget`] (cancel flag and deadline) between steps; the tree is then
//! flattened below [`MAX_DEPTH`] (the text of deeper elements, in order, becomes the
//! content of the element at the limit; scripts, styles and other dropped tags stay
//! dropped) and runs of alike inline siblings are merged in one pass (htmd merges
//! them with a `Vec::remove` each, quadratic in a flat page of a million `<b>`).
//! Only then does htmd (which recurses once per level) write the Markdown. The tree
//! is freed without recursion (`markup5ever_rcdom`'s `Drop` is iterative).
//!
//! Does not own: fetching, the 30 s limit of the whole fetch, or which content types
//! are HTML (`super`).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, Tokenizer, TokenizerOpts};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts};
use html5ever::{LocalName, TokenizerResult};
use markup5ever_rcdom::{Handle, Node, NodeData, RcDom};

use crate::tool::confine::truncate_chars;

use super::limit::DepthLimiter;

/// Depth of the tree htmd walks at most (the document is depth 0): the element at
/// this depth gets the text of everything below it as flat content.
pub const MAX_DEPTH: usize = 128;
/// Nested elements that indent their content in Markdown (lists, quotes) kept at
/// most: 8. htmd re-indents the whole content of each level, so a page of nested
/// `<ul><li>` would cost (and print) a line's indentation per level for every line
/// below; deeper ones are flattened as past [`MAX_DEPTH`].
pub const MAX_INDENTS: usize = 8;
/// Elements counted by [`MAX_INDENTS`].
const INDENTING: &[&str] = &["ul", "ol", "li", "blockquote", "dl", "dd", "menu", "dir"];
/// Bytes of HTML converted at most: 5 MiB (`super::MAX_DOWNLOAD`); the rest is cut
/// at a character boundary.
pub const MAX_INPUT: usize = super::MAX_DOWNLOAD;
/// How long parsing and flattening may take: 10 s.
pub const CONVERT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes fed to the parser between two checks of the [`Budget`]: 16 KiB.
pub const CHUNK: usize = 16 << 10;
/// The converting thread's stack: 64 MiB (reserved, not committed; htmd's walk of
/// [`MAX_DEPTH`] levels needs a fraction of it in a debug build).
pub const STACK_SIZE: usize = 64 << 20;

/// Tags whose content is dropped (htmd skips them; flattening drops them too).
pub const SKIP_TAGS: &[&str] = &[
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe", "svg",
    "canvas", "template", "head",
];

/// Why a conversion stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The cancel flag was set (the fetch was cancelled or timed out).
    #[error("the conversion was cancelled")]
    Cancelled,
    /// [`CONVERT_TIMEOUT`] passed; `parsed` of `total` bytes had been read.
    #[error(
        "the page is too complex: converting it took more than {} s ({parsed} of {total} bytes parsed)",
        CONVERT_TIMEOUT.as_secs()
    )]
    TimedOut { parsed: usize, total: usize },
    /// The converting thread could not start or ended without an answer (a panic).
    #[error("the converter failed: {0}")]
    Failed(String),
}

/// What a conversion may spend: a cancel flag (set by the caller, read between
/// steps) and a deadline.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Set to stop the conversion at its next check.
    pub cancel: Arc<AtomicBool>,
    /// When the conversion gives up.
    pub deadline: Instant,
}

impl Budget {
    /// A fresh flag and a deadline [`CONVERT_TIMEOUT`] from now.
    pub fn new() -> Self {
        Self {
            cancel: Arc::new(AtomicBool::new(false)),
            deadline: Instant::now() + CONVERT_TIMEOUT,
        }
    }

    fn check(&self, parsed: usize, total: usize) -> Result<(), ConvertError> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(ConvertError::Cancelled);
        }
        if Instant::now() >= self.deadline {
            return Err(ConvertError::TimedOut { parsed, total });
        }
        Ok(())
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::new()
    }
}

/// Sets the flag when dropped: the conversion stops when the future awaiting it is
/// dropped (the tool call cancelled, the fetch timed out, the process ending).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Converts `html` on a thread of its own ([`STACK_SIZE`] stack) under a fresh
/// [`Budget`]. Dropping the returned future sets the cancel flag; the thread stops at
/// its next check and never holds up the process's exit (it is not a runtime task).
pub async fn spawn(html: String) -> Result<String, ConvertError> {
    let budget = Budget::new();
    let _guard = CancelOnDrop(budget.cancel.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("web-convert".into())
        .stack_size(STACK_SIZE)
        .spawn(move || {
            let _ = tx.send(convert(&html, &budget));
        })
        .map_err(|e| ConvertError::Failed(e.to_string()))?;
    rx.await
        .unwrap_or_else(|_| Err(ConvertError::Failed("the converting thread ended".into())))
}

/// `html` (its first [`MAX_INPUT`] bytes) as Markdown, scripts, styles, navigation,
/// headers, footers, forms and embedded content dropped, within `budget`. Recursion
/// is bounded by [`MAX_DEPTH`]; run it on a thread with a stack of [`STACK_SIZE`].
pub fn convert(html: &str, budget: &Budget) -> Result<String, ConvertError> {
    let html = truncate_chars(html, MAX_INPUT);
    let document = parse(html, budget)?;
    flatten(&document, budget, html.len())?;
    merge_alike(&document);
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIP_TAGS.to_vec())
        .build();
    Ok(converter.tree_to_markdown(&document).trim().to_string())
}

/// The document `html` parses to, fed in [`CHUNK`]s behind the depth filter.
fn parse(html: &str, budget: &Budget) -> Result<Handle, ConvertError> {
    let builder = TreeBuilder::new(
        RcDom::default(),
        TreeBuilderOpts {
            scripting_enabled: true,
            ..TreeBuilderOpts::default()
        },
    );
    let tokenizer = Tokenizer::new(DepthLimiter::new(builder), TokenizerOpts::default());
    let queue = BufferQueue::default();
    let mut at = 0;
    while at < html.len() {
        budget.check(at, html.len())?;
        let piece = truncate_chars(&html[at..], CHUNK);
        // A chunk shorter than one character cannot happen with CHUNK ≥ 4.
        let piece = if piece.is_empty() { &html[at..] } else { piece };
        queue.push_back(StrTendril::from_slice(piece));
        at += piece.len();
        while let TokenizerResult::Script(_) = tokenizer.feed(&queue) {}
    }
    budget.check(at, html.len())?;
    tokenizer.end();
    Ok(tokenizer.sink.inner.sink.document.clone())
}

/// The element name of `node`, if it is an element.
fn tag(node: &Node) -> Option<&LocalName> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// Inline elements: flattened without a space around their text.
const INLINE: &[&str] = &[
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd",
    "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "tt", "u", "var",
];

/// Rewrites the tree under `document` so that no node is deeper than
/// [`MAX_DEPTH`] + 1 and none is inside more than [`MAX_INDENTS`] indenting
/// elements: each element at that depth or that many indenting elements (itself
/// included) gets, as its only
/// children, the text nodes below it in document order (a space between block
/// elements; the content of [`SKIP_TAGS`] dropped). Iterative; checks `budget` every
/// 4,096 nodes.
fn flatten(document: &Handle, budget: &Budget, total: usize) -> Result<(), ConvertError> {
    let mut stack: Vec<(Handle, usize, usize)> = vec![(document.clone(), 0, 0)];
    let mut seen = 0usize;
    while let Some((node, depth, indents)) = stack.pop() {
        seen += 1;
        if seen.is_multiple_of(4096) {
            budget.check(total, total)?;
        }
        let indenting = tag(&node).is_some_and(|t| INDENTING.contains(&&**t));
        let indents = indents + usize::from(indenting);
        if depth < MAX_DEPTH && indents < MAX_INDENTS {
            let children = node.children.borrow();
            stack.extend(children.iter().map(|c| (c.clone(), depth + 1, indents)));
            continue;
        }
        let mut pending: Vec<Handle> = node.children.take();
        pending.reverse();
        let mut flat = Vec::new();
        while let Some(below) = pending.pop() {
            seen += 1;
            if seen.is_multiple_of(4096) {
                budget.check(total, total)?;
            }
            let children = below.children.take();
            match tag(&below) {
                Some(name) if SKIP_TAGS.contains(&&**name) => {}
                Some(name) => {
                    if !INLINE.contains(&&**name) {
                        flat.push(text_node(" "));
                    }
                    pending.extend(children.into_iter().rev());
                }
                None => {
                    if matches!(below.data, NodeData::Text { .. }) {
                        flat.push(below);
                    }
                }
            }
        }
        for child in &flat {
            child.parent.set(Some(Rc::downgrade(&node)));
        }
        *node.children.borrow_mut() = flat;
    }
    Ok(())
}

fn text_node(text: &str) -> Handle {
    Node::new(NodeData::Text {
        contents: RefCell::new(StrTendril::from_slice(text)),
    })
}

/// htmd's block elements (`dom_walker::BLOCK_ELEMENTS` of htmd 0.5): never merged.
const BLOCK: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "pre",
    "script",
    "search",
    "section",
    "style",
    "summary",
    "table",
    "tbody",
    "td",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

/// Whether htmd would merge the adjacent elements `a` and `b`
/// (`dom_walker::can_combine` of htmd 0.5): both inline and not `a`, the same name (or
/// `i`/`em`, `b`/`strong`) and attributes, each with a single text child.
fn alike(a: &Node, b: &Node) -> bool {
    let (
        NodeData::Element {
            name: n1,
            attrs: a1,
            template_contents: t1,
            mathml_annotation_xml_integration_point: m1,
        },
        NodeData::Element {
            name: n2,
            attrs: a2,
            template_contents: t2,
            mathml_annotation_xml_integration_point: m2,
        },
    ) = (&a.data, &b.data)
    else {
        return false;
    };
    let (l1, l2): (&str, &str) = (&n1.local, &n2.local);
    let same_name = n1 == n2
        || matches!(
            (l1, l2),
            ("i", "em") | ("em", "i") | ("b", "strong") | ("strong", "b")
        );
    same_name
        && !BLOCK.contains(&l1)
        && l1 != "a"
        && single_text(a).is_some()
        && single_text(b).is_some()
        && t1.borrow().is_none()
        && t2.borrow().is_none()
        && m1 == m2
        && *a1.borrow() == *a2.borrow()
}

/// The only child of `node` when it is a text node.
fn single_text(node: &Node) -> Option<Handle> {
    let children = node.children.borrow();
    match children.as_slice() {
        [only] if matches!(only.data, NodeData::Text { .. }) => Some(only.clone()),
        _ => None,
    }
}

/// Merges every run of [`alike`] siblings under `document` into its first element
/// (their texts joined), in one pass over each child list, so htmd finds nothing left
/// to merge. Iterative.
fn merge_alike(document: &Handle) {
    let mut stack = vec![document.clone()];
    while let Some(node) = stack.pop() {
        let children = node.children.take();
        let mut kept: Vec<Handle> = Vec::with_capacity(children.len());
        for child in children {
            if let Some(last) = kept.last()
                && alike(last, &child)
                && let (Some(into), Some(from)) = (single_text(last), single_text(&child))
                && let (NodeData::Text { contents: into }, NodeData::Text { contents: from }) =
                    (&into.data, &from.data)
            {
                into.borrow_mut().push_tendril(&from.borrow());
                continue;
            }
            kept.push(child);
        }
        stack.extend(kept.iter().cloned());
        *node.children.borrow_mut() = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize, inner: &str) -> String {
        format!(
            "<html><body>{}{inner}{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        )
    }

    /// Converts through [`spawn`] (the path `web_fetch` takes) and says how long it took.
    async fn timed(html: String) -> (Result<String, ConvertError>, Duration) {
        let start = Instant::now();
        let out = spawn(html).await;
        (out, start.elapsed())
    }

    #[tokio::test]
    async fn deep_nesting_converts_quickly_with_its_text() {
        for depth in [5_000, 100_000] {
            let html = nested(
                depth,
                "<p>deep <b>text</b></p><script>var leak = 1;</script>",
            );
            let (md, took) = timed(html).await;
            let md = md.unwrap();
            assert!(md.contains("deep") && md.contains("text"), "{depth}: {md}");
            assert!(!md.contains("leak") && !md.contains('<'), "{depth}: {md}");
            assert!(took < Duration::from_secs(5), "{depth}: {took:?}");
        }
    }

    #[tokio::test]
    async fn a_million_nested_divs_and_a_flat_page_finish_in_time() {
        // 1,000,000 `<div>` (5.5 MB, cut at MAX_INPUT).
        let (md, took) = timed(nested(1_000_000, "never reached")).await;
        assert!(md.is_ok(), "{md:?}");
        assert!(took < Duration::from_secs(8), "{took:?}");
        // 500,000 alike inline siblings (htmd alone merges them quadratically), with
        // text before and after.
        let html = format!(
            "<html><body><h1>Top</h1><p>{}</p><p>end</p></body></html>",
            "<b>x</b>".repeat(500_000)
        );
        let (md, took) = timed(html).await;
        let md = md.unwrap();
        assert!(md.starts_with("# Top"), "{}", &md[..40]);
        assert!(md.ends_with("end"), "{}", &md[md.len() - 40..]);
        assert_eq!(md.matches('x').count(), 500_000);
        assert!(took < Duration::from_secs(8), "{took:?}");
    }

    #[test]
    fn nesting_past_the_limit_is_flattened_in_order() {
        let html = nested(
            300,
            "<p>one</p><div><span>two</span><style>p{}</style></div><p>three</p>",
        );
        let document = parse(&html, &Budget::new()).unwrap();
        flatten(&document, &Budget::new(), html.len()).unwrap();
        let mut deepest = 0;
        let mut stack = vec![(document.clone(), 0)];
        while let Some((node, depth)) = stack.pop() {
            deepest = deepest.max(depth);
            stack.extend(
                node.children
                    .borrow()
                    .iter()
                    .map(|c| (c.clone(), depth + 1)),
            );
        }
        assert!(deepest <= MAX_DEPTH + 1, "{deepest}");
        let md = convert(&html, &Budget::new()).unwrap();
        let (one, two, three) = (md.find("one"), md.find("two"), md.find("three"));
        assert!(one < two && two < three && one.is_some(), "{md}");
        assert!(!md.contains("p{}"), "{md}");
    }

    #[test]
    fn a_set_flag_or_a_passed_deadline_stops_the_conversion() {
        let html = nested(10_000, "x");
        let cancelled = Budget::new();
        cancelled.cancel.store(true, Ordering::Relaxed);
        assert_eq!(convert(&html, &cancelled), Err(ConvertError::Cancelled));
        let late = Budget {
            deadline: Instant::now(),
            ..Budget::new()
        };
        let err = convert(&html, &late).unwrap_err();
        assert!(
            matches!(err, ConvertError::TimedOut { parsed: 0, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("too complex"), "{err}");
    }

    #[test]
    fn ordinary_pages_keep_their_structure() {
        let md = convert(
            "<html><body><ul><li>a<li>b</ul><table><tr><th>h<tr><td>c</table>\
             <p>one<p>two <em>x</em><i>y</i></p></body></html>",
            &Budget::new(),
        )
        .unwrap();
        assert!(md.contains("*   a\n*   b"), "{md}");
        assert!(md.contains("| h |") && md.contains("| c |"), "{md}");
        assert!(md.contains("one\n\ntwo *xy*"), "{md}");
    }
}
