//! No cycle between the files of one module (STYLE.md "Layers": inside a module the
//! same holds between files as between top-level modules).
//!
//! `../shared/tools/layers.py cycles` checks the top-level modules; this checks every
//! folder under `src/` (`engine`, `tui/state`, …): each `.rs` file and sub-folder is a
//! node, and a `super::x` / `crate::<folder>::x` path (also inside `use … {…}` groups)
//! from one node to a sibling is an edge. Test code is left out as layers.py leaves it
//! out: files named `tests.rs`, `testing.rs`, `test_fixtures.rs` and `#[cfg(test)] mod
//! … { … }` blocks. Methods of a type defined in another file (`impl Runtime` in a
//! second file) are not seen: keep a type's methods in its own file or below it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `sibling -> (sibling, files giving the edge)` per folder (`"engine"`, `"tui/state"`).
type Graph = BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>>;

/// A source file: its module path (`["engine", "turn"]` for `src/engine/turn.rs`,
/// `["engine"]` for `src/engine/mod.rs`) and its text.
struct Source {
    module: Vec<String>,
    file: String,
    text: String,
}

/// Test code: `tests.rs`, `testing.rs`, `test_fixtures.rs` and files under `tests/`.
fn is_test_file(file: &str) -> bool {
    let parts: Vec<&str> = file.split('/').collect();
    let name = parts.last().copied().unwrap_or_default();
    ["tests.rs", "testing.rs", "test_fixtures.rs"].contains(&name)
        || parts[..parts.len() - 1].contains(&"tests")
}

fn read_tree(src: &Path) -> (Vec<Source>, BTreeMap<Vec<String>, BTreeSet<String>>) {
    let mut sources = Vec::new();
    let mut nodes = BTreeMap::new();
    walk(src, src, &mut sources, &mut nodes);
    (sources, nodes)
}

fn walk(
    root: &Path,
    dir: &Path,
    sources: &mut Vec<Source>,
    nodes: &mut BTreeMap<Vec<String>, BTreeSet<String>>,
) {
    let rel: Vec<String> = dir
        .strip_prefix(root)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            nodes.entry(rel.clone()).or_default().insert(name.clone());
            walk(root, &path, sources, nodes);
            continue;
        }
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        let mut module = rel.clone();
        if !["mod", "lib", "main"].contains(&stem) {
            nodes
                .entry(rel.clone())
                .or_default()
                .insert(stem.to_string());
            module.push(stem.to_string());
        }
        sources.push(Source {
            module,
            file: path.strip_prefix(root).unwrap().display().to_string(),
            text: std::fs::read_to_string(&path).unwrap(),
        });
    }
}

/// `text` without line comments and `#[cfg(test)] mod x { … }` blocks.
fn strip(text: &str) -> String {
    let no_comments: String = text
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = no_comments.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let block = after.find('{').filter(|open| !after[..*open].contains(';'));
        let Some(open) = block.filter(|_| after.starts_with("mod ")) else {
            out.push_str("#[cfg(test)]");
            rest = &rest[at + "#[cfg(test)]".len()..];
            continue;
        };
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path the text names from `super::` or `crate::`, resolved to an absolute
/// module path (`crate::engine::turn::run` → `["engine", "turn", "run"]`), `use`
/// groups expanded.
fn referenced_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let starts_word = i == 0 || (!is_ident(bytes[i - 1] as char) && bytes[i - 1] != b':');
        let head = ["super::", "crate::"]
            .into_iter()
            .find(|h| text[i..].starts_with(h));
        let Some(head) = head.filter(|_| starts_word) else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        };
        // `super` of `a/b.rs` (module `a::b`) and of `a/b/mod.rs` (also `a::b`) is `a`.
        let mut base: Vec<String> = if head == "crate::" {
            Vec::new()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        let mut j = i + head.len();
        while text[j..].starts_with("super::") {
            base.pop();
            j += "super::".len();
        }
        j = parse_path(text, j, base, &mut out);
        i = j.max(i + 1);
    }
    out
}

/// Parses `a::b::{c, d::e}` at `at` (relative to `base`) into `out`; returns the end.
fn parse_path(text: &str, at: usize, mut base: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut j = at;
    loop {
        let rest = &text[j..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut end = group.len();
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner_start = j + 1;
            let inner = &text[inner_start..inner_start + end];
            let mut depth = 0;
            let mut item_start = 0;
            for (k, c) in inner.char_indices().chain([(inner.len(), ',')]) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let item = &inner[item_start..k];
                        let offset = item.len() - item.trim_start().len();
                        let pos = inner_start + item_start + offset;
                        if !item.trim().is_empty() {
                            parse_path(text, pos, base.clone(), out);
                        }
                        item_start = k + 1;
                    }
                    _ => {}
                }
            }
            return inner_start + end + 1;
        }
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len == 0 {
            out.push(base);
            return j;
        }
        let segment = &rest[..len];
        if segment != "self" {
            base.push(segment.to_string());
        }
        j += len;
        if text[j..].starts_with("::") {
            j += 2;
        } else {
            out.push(base);
            return j;
        }
    }
}

/// Edges between siblings of one folder, from every source's references.
fn graph(sources: &[Source], nodes: &BTreeMap<Vec<String>, BTreeSet<String>>) -> Graph {
    let mut graph = Graph::new();
    for source in sources.iter().filter(|s| !is_test_file(&s.file)) {
        for target in referenced_paths(&source.module, &strip(&source.text)) {
            let common = source
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            let (Some(from), Some(to)) = (source.module.get(common), target.get(common)) else {
                continue;
            };
            let folder = source.module[..common].to_vec();
            // The top level is layers.py's; a name that is no file of the folder is an
            // item re-exported by its `mod.rs`.
            if folder.is_empty() || !nodes.get(&folder).is_some_and(|n| n.contains(to)) {
                continue;
            }
            graph
                .entry(folder.join("/"))
                .or_default()
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_default()
                .insert(source.file.clone());
        }
    }
    graph
}

/// The cycles of one folder's graph: each as its node list, the first repeated last.
fn cycles(edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            found.push(cycle);
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flat_map(|m| m.keys()) {
            visit(next, edges, path, done, found);
        }
        path.pop();
        done.insert(node.to_string());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn describe(
    folder: &str,
    cycle: &[String],
    edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
) -> String {
    let mut text = format!("cycle in src/{folder}: {}", cycle.join(" -> "));
    for pair in cycle.windows(2) {
        let files = &edges[&pair[0]][&pair[1]];
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        text.push_str(&format!(
            "\n  {} -> {}: {}",
            pair[0],
            pair[1],
            files.join(", ")
        ));
    }
    text
}

fn source(path: &str, text: &str) -> Source {
    let mut module: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if module.last().is_some_and(|m| m == "mod") {
        module.pop();
    }
    Source {
        module,
        file: path.to_string(),
        text: text.to_string(),
    }
}

fn nodes_of(sources: &[Source]) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut nodes: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        for k in 1..s.module.len() {
            nodes
                .entry(s.module[..k].to_vec())
                .or_default()
                .insert(s.module[k].clone());
        }
    }
    nodes
}

#[test]
fn no_module_has_a_cycle_between_its_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (sources, nodes) = read_tree(&src);
    let graph = graph(&sources, &nodes);
    assert!(
        graph.contains_key("engine") && graph.contains_key("tui/state"),
        "the scan saw no edges in src/engine or src/tui/state: {:?}",
        graph.keys().collect::<Vec<_>>()
    );
    let problems: Vec<String> = graph
        .iter()
        .flat_map(|(folder, edges)| {
            cycles(edges)
                .into_iter()
                .map(move |c| describe(folder, &c, edges))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_sees_super_crate_and_group_paths_but_not_test_code() {
    let mut sources = vec![
        source("m/a.rs", "use super::b::B;\nfn f() {}"),
        source("m/b.rs", "use crate::m::{c::{self, C}, other};\n"),
        source(
            "m/c.rs",
            "pub struct C;\n// use super::a;\n#[cfg(test)]\nmod tests {\n    use super::super::a::f;\n}\n",
        ),
        source("m/d.rs", "pub(super) fn g() { super::super::m::a::f() }"),
        source("m/tests.rs", "use super::d::g;"),
        source("m/mod.rs", "pub use a::f;\nfn h() { super::m::b::B; }"),
    ];
    let nodes = nodes_of(&sources);
    let acyclic = graph(&sources, &nodes);
    let edges: Vec<(&str, &str)> = acyclic["m"]
        .iter()
        .flat_map(|(from, to)| to.keys().map(move |t| (from.as_str(), t.as_str())))
        .collect();
    assert_eq!(edges, [("a", "b"), ("b", "c"), ("d", "a")]);
    assert!(cycles(&acyclic["m"]).is_empty());

    sources[2] = source("m/c.rs", "use super::{a};\n");
    let cyclic = graph(&sources, &nodes);
    let found = cycles(&cyclic["m"]);
    assert_eq!(found, [["a", "b", "c", "a"]]);
    assert_eq!(
        describe("m", &found[0], &cyclic["m"]),
        "cycle in src/m: a -> b -> c -> a\n  a -> b: m/a.rs\n  b -> c: m/b.rs\n  c -> a: m/c.rs"
    );
}
