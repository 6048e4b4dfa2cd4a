use proptest::prelude::*;

use super::*;

fn meta(id: &str, parent: Option<&str>, created: &str, updated: &str) -> Metadata {
    Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        created: created.into(),
        last_updated: updated.into(),
        ..Default::default()
    }
}

const T1: &str = "2025-01-01T00:00:01Z";
const T2: &str = "2025-01-01T00:00:02Z";
const T3: &str = "2025-01-01T00:00:03Z";

/// Ids of `f.roots` and of each input's children, for readable asserts.
fn shape<'a>(ids: &[&'a str], f: &Forest) -> (Vec<&'a str>, Vec<Vec<&'a str>>) {
    let name = |v: &Vec<usize>| v.iter().map(|&i| ids[i]).collect::<Vec<_>>();
    (name(&f.roots), f.children.iter().map(name).collect())
}

#[test]
fn forest_keeps_spawn_order_for_roots_and_children() {
    let links = [
        ("r1", None),
        ("a", Some("r1")),
        ("r2", None),
        ("b", Some("r1")),
        ("g", Some("a")),
    ];
    let f = forest(links);
    let ids: Vec<&str> = links.iter().map(|l| l.0).collect();
    let (roots, children) = shape(&ids, &f);
    assert_eq!(roots, ["r1", "r2"]);
    assert_eq!(children[0], ["a", "b"]);
    assert_eq!(children[1], ["g"]);
    assert_eq!(f.parent[4], Some(1));
    assert!(f.detached.iter().all(Option::is_none));
}

#[test]
fn missing_and_self_parents_make_marked_roots() {
    let f = forest([("a", Some("gone")), ("s", Some("s")), ("c", Some("a"))]);
    assert_eq!(f.roots, [0, 1]);
    assert_eq!(f.children[0], [2]);
    assert_eq!(
        f.detached,
        [
            Some(Detached::MissingParent),
            Some(Detached::SelfParent),
            None
        ]
    );
}

#[test]
fn a_parent_cycle_is_cut_above_its_oldest_member() {
    // x hangs below the cycle a → b → c → a; y is an unrelated root. x is older than
    // every cycle member, yet the cut goes between the cycle's members.
    let links = [
        ("y", None),
        ("x", Some("b")),
        ("b", Some("a")),
        ("a", Some("c")),
        ("c", Some("b")),
    ];
    let ids: Vec<&str> = links.iter().map(|l| l.0).collect();
    let f = forest(links);
    let (roots, children) = shape(&ids, &f);
    assert_eq!(roots, ["y", "b"]);
    assert_eq!(f.detached[2], Some(Detached::Cycle));
    assert_eq!(children[2], ["x", "c"]);
    assert_eq!(children[4], ["a"]);
    assert!(children[3].is_empty());
    // Two sessions naming each other: both shown, the older one on top.
    let f = forest([("p", Some("q")), ("q", Some("p"))]);
    assert_eq!((f.roots.clone(), f.children[0].clone()), (vec![0], vec![1]));
    assert_eq!(f.detached, [Some(Detached::Cycle), None]);
}

#[test]
fn deep_chains_link_without_recursion() {
    const DEPTH: usize = 200_000;
    let ids: Vec<String> = (0..DEPTH).map(|i| format!("s{i}")).collect();
    let f =
        forest((0..DEPTH).map(|i| (ids[i].as_str(), i.checked_sub(1).map(|p| ids[p].as_str()))));
    assert_eq!(f.roots, [0]);
    assert!((1..DEPTH).all(|i| f.parent[i] == Some(i - 1)));
    // The same chain closed into a cycle: the cut is above the oldest.
    let f =
        forest((0..DEPTH).map(|i| (ids[i].as_str(), Some(ids[(i + DEPTH - 1) % DEPTH].as_str()))));
    assert_eq!(f.roots, [0]);
    assert_eq!(f.detached[0], Some(Detached::Cycle));
    let tree = build_tree(
        (0..2_000usize)
            .map(|i| {
                let parent = i.checked_sub(1).map(|p| ids[p].as_str());
                meta(&ids[i], parent, T1, T1)
            })
            .collect(),
    );
    assert_eq!(tree.len(), 1);
    assert_eq!(tree[0].walk().len(), 2_000);
}

proptest! {
    /// Whatever the parent links, every session is placed exactly once, tree parents
    /// match children lists, following tree parents always ends at a root, and a root
    /// is marked exactly when it names a parent.
    #[test]
    fn every_session_appears_exactly_once(parents in prop::collection::vec(prop::option::of(0usize..40), 0..40)) {
        let ids: Vec<String> = (0..parents.len()).map(|i| format!("s{i}")).collect();
        let names: Vec<Option<String>> =
            parents.iter().map(|p| p.map(|p| format!("s{p}"))).collect();
        let f = forest(ids.iter().zip(&names).map(|(id, p)| (id.as_str(), p.as_deref())));
        let mut count = vec![0; ids.len()];
        for &r in &f.roots {
            count[r] += 1;
            prop_assert_eq!(f.parent[r], None);
        }
        for (p, kids) in f.children.iter().enumerate() {
            for &c in kids {
                count[c] += 1;
                prop_assert_eq!(f.parent[c], Some(p));
            }
        }
        prop_assert!(count.iter().all(|&c| c == 1), "{:?}", count);
        for (i, name) in names.iter().enumerate() {
            let mut cur = i;
            for _ in 0..=ids.len() {
                match f.parent[cur] {
                    Some(p) => cur = p,
                    None => break,
                }
            }
            prop_assert_eq!(f.parent[cur], None, "no root above {}", i);
            let is_root = f.parent[i].is_none();
            prop_assert_eq!(is_root && name.is_some(), f.detached[i].is_some());
        }
    }
}

#[test]
fn children_by_created_roots_newest_first() {
    let tree = build_tree(vec![
        meta("c2", Some("r1"), T3, T3),
        meta("r1", None, T1, T1),
        meta("c1", Some("r1"), T2, T2),
        meta("g1", Some("c1"), T3, T3),
        meta("r2", None, T1, T2),
        meta("orphan", Some("gone"), T1, T3),
    ]);
    let roots: Vec<&str> = tree.iter().map(SessionNode::id).collect();
    assert_eq!(roots, ["orphan", "r2", "r1"]);
    assert_eq!(tree[0].detached, Some(Detached::MissingParent));
    assert_eq!(tree[1].detached, None);
    let r1 = find(&tree, "r1").unwrap();
    let kids: Vec<&str> = r1.children.iter().map(SessionNode::id).collect();
    assert_eq!(kids, ["c1", "c2"]);
    assert_eq!(subtree_ids(&tree, "r1"), ["r1", "c1", "g1", "c2"]);
    assert_eq!(subtree_ids(&tree, "c1"), ["c1", "g1"]);
    assert!(subtree_ids(&tree, "nope").is_empty());
}

#[test]
fn cycles_self_parents_and_duplicates_keep_every_session_once() {
    let tree = build_tree(vec![
        meta("b", Some("a"), T2, T2),
        meta("a", Some("b"), T1, T1),
        meta("s", Some("s"), T1, T1),
        meta("s", None, T3, T3),
    ]);
    let roots: Vec<(&str, Option<Detached>)> = tree.iter().map(|n| (n.id(), n.detached)).collect();
    // Roots newest update first; the cycle is cut above its oldest member, `a`.
    assert_eq!(
        roots,
        [
            ("a", Some(Detached::Cycle)),
            ("s", Some(Detached::SelfParent))
        ]
    );
    assert_eq!(subtree_ids(&tree, "a"), ["a", "b"]);
}

#[test]
fn children_first_waves_put_every_session_after_its_descendants() {
    use crate::session::SessionStatus;
    // r ─ a ─ g ─ gg
    //   └ b
    //   └ c (completed: not picked)
    let list = vec![
        meta("r", None, T1, T1),
        meta("a", Some("r"), T2, T2),
        meta("b", Some("r"), T3, T3),
        meta("g", Some("a"), T3, T3),
        meta("gg", Some("g"), T3, T3),
        Metadata {
            status: SessionStatus::Completed,
            ..meta("c", Some("r"), T3, T3)
        },
    ];
    let roots = build_tree(list);
    let waves = children_first_waves(&roots[0], |m| m.status != SessionStatus::Completed);
    assert_eq!(waves, [vec!["gg", "b"], vec!["g"], vec!["a"], vec!["r"]]);
    // Nothing picked: no wave.
    assert!(children_first_waves(&roots[0], |_| false).is_empty());
    // A picked parent above unpicked children still waits for their height.
    let waves = children_first_waves(&roots[0], |m| m.session_id == "r" || m.session_id == "b");
    assert_eq!(waves, [vec!["b"], vec!["r"]]);
}
