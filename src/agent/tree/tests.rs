use serde_json::json;

use super::*;
use crate::agent::AgentSource;

fn def(name: &str, overlay: serde_json::Value) -> AgentDef {
    AgentDef::for_test(name, AgentSource::User, overlay)
}

fn errors(agents: &[AgentDef], name: &str) -> Vec<String> {
    agents
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.errors.iter().map(|e| e.message.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn a_cycle_names_its_path_on_every_member() {
    let mut agents = vec![
        def("a", json!({"sub_agents": ["b"]})),
        def("b", json!({"sub_agents": ["c"]})),
        def("c", json!({"sub_agents": ["a"]})),
        def("d", json!({})),
    ];
    check(&mut agents);
    for name in ["a", "b", "c"] {
        assert_eq!(errors(&agents, name), ["sub_agents cycle: a → b → c → a"]);
    }
    assert!(agents[3].is_valid());
}

#[test]
fn a_self_listing_is_a_cycle() {
    let mut agents = vec![def("a", json!({"sub_agents": ["a"]}))];
    check(&mut agents);
    assert_eq!(errors(&agents, "a"), ["sub_agents cycle: a → a"]);
}

#[test]
fn unknown_names_and_two_parents_are_errors() {
    let mut agents = vec![
        def("helpdesk", json!({"sub_agents": ["billing", "ghost"]})),
        def("sales", json!({"sub_agents": ["billing"]})),
        def("billing", json!({})),
    ];
    check(&mut agents);
    assert_eq!(
        errors(&agents, "helpdesk"),
        ["sub_agents: unknown agent 'ghost'"]
    );
    assert_eq!(
        errors(&agents, "billing"),
        ["two parents: listed in sub_agents of 'helpdesk' and 'sales'"]
    );
    assert!(errors(&agents, "sales").is_empty());
}

#[test]
fn a_valid_tree_has_no_errors_and_an_outline() {
    let mut agents = vec![
        def("helpdesk", json!({"sub_agents": ["billing", "tech"]})),
        def("billing", json!({"disallow_transfer_to_parent": true})),
        def("tech", json!({"disallow_transfer_to_peers": true})),
    ];
    check(&mut agents);
    assert!(agents.iter().all(AgentDef::is_valid));
    let get = |n: &str| agents.iter().find(|a| a.name == n);
    let tree = AgentTree::from_agents(&get, "helpdesk");
    assert_eq!(
        tree.outline(),
        ["helpdesk", "  billing (no parent)", "  tech (no peers)"]
    );
    let from_billing = AgentTree::from_agents(&get, "billing");
    assert!(!from_billing.has_transfers());
}

#[test]
fn transfer_targets_follow_the_flags() {
    let mut tree = AgentTree::new(TreeAgent::new("root"));
    let a = tree.add(0, TreeAgent::new("a")).unwrap();
    let b = tree
        .add(
            0,
            TreeAgent {
                disallow_transfer_to_parent: true,
                disallow_transfer_to_peers: true,
                ..TreeAgent::new("b")
            },
        )
        .unwrap();
    let task = tree
        .add(
            0,
            TreeAgent {
                mode: Some("task".into()),
                ..TreeAgent::new("task")
            },
        )
        .unwrap();
    assert_eq!(tree.transfer_targets(0), [a, b]);
    assert_eq!(tree.transfer_targets(a), [0, b]);
    assert!(tree.transfer_targets(b).is_empty());
    assert!(
        tree.add(a, TreeAgent::new("b")).is_none(),
        "names are unique"
    );
    assert!(tree.is_transferable_across_agent_tree(a));
    assert!(!tree.is_transferable_across_agent_tree(b));
    assert!(tree.is_transferable_across_agent_tree(task));
}
