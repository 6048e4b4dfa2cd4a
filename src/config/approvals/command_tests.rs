//! Tests of the shell-grammar reading of commands (`super`).

use super::*;

fn plain(c: &str) -> Option<Vec<Vec<String>>> {
    Script::parse(c).plain().map(<[Vec<String>]>::to_vec)
}

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

/// Whether a restricting pattern with plain-glob semantics `*`-suffix on `word`
/// (e.g. `rm*`) applies to `c`.
fn restricted(word: &str, c: &str) -> bool {
    let w = word.to_string();
    Script::parse(c).restricted_by(&|t: &str| t.starts_with(&w), word)
}

#[test]
fn plain_scripts_read_as_unquoted_words() {
    assert_eq!(plain("cargo test"), Some(vec![words("cargo test")]));
    assert_eq!(
        plain("a && b || c | d; e\nf"),
        Some(["a", "b", "c", "d", "e", "f"].map(words).to_vec())
    );
    assert_eq!(
        plain("echo 'a; b' \"c && d\" x'y'\"z\""),
        Some(vec![vec![
            "echo".to_string(),
            "a; b".into(),
            "c && d".into(),
            "xyz".into()
        ]])
    );
    assert_eq!(
        plain("cargo test --lib 2>&1 | tail -5"),
        Some(vec![words("cargo test --lib"), words("tail -5")])
    );
    assert_eq!(plain("ls > /dev/null"), Some(vec![words("ls")]));
    assert_eq!(
        plain("git log -n 3 --format=%h:%s"),
        Some(vec![words("git log -n 3 --format=%h:%s")])
    );
    assert_eq!(plain(""), Some(vec![]));
}

#[test]
fn anything_else_has_no_plain_reading() {
    for c in [
        "cargo test # it's fine\ntouch M",
        "cargo test $\\\n(touch M)",
        "cargo test \\\n--lib",
        "cat <<EOF\nhi\nEOF",
        "cat <<'EOF'\nhi\nEOF",
        "cat <<< hi",
        "cargo test >& ~/.bashrc",
        "cargo test > out",
        "cargo test >> out",
        "cargo test &> out",
        "cargo test 2> err",
        "cargo test >/dev/null2",
        "cat < input",
        "echo $(id)",
        "echo `id`",
        "echo \"$(id)\"",
        "echo \"$HOME\"",
        "echo $HOME",
        "echo ${HOME}",
        "echo $((1+2))",
        "diff <(ls a) <(ls b)",
        "echo *",
        "echo a?",
        "echo {a,b}",
        "echo [ab]",
        "FOO=1 cargo test",
        "(cargo test)",
        "{ cargo test; }",
        "f() { ls; }",
        "cargo test &",
        "cargo test |& tail",
        "! cargo test",
        "if true; then ls; fi",
        "for i in a; do ls; done",
        "[[ -f x ]]",
        "echo a\\ b",
        "echo \\rm",
        "echo $'x'",
        "echo 'unclosed",
        "echo \"unclosed",
        "echo ok\r\ntouch M",
        "echo\u{a0}ok",
        "export A=1",
        "echo \"a\\\"b\"",
        "echo ~",
        "echo a#b",
        "echo ok;;",
    ] {
        assert_eq!(plain(c), None, "{c:?}");
    }
}

#[test]
fn wrappers_are_never_coverable() {
    for c in [
        "sh -c 'ls'",
        "bash x.sh",
        "env ls",
        "/usr/bin/env ls",
        "xargs ls",
        "python3 -c 1",
        "python3.12 x.py",
        "node x.js",
        "nohup ls",
        "timeout 5 ls",
        "command ls",
        "exec ls",
        "eval ls",
        "sudo ls",
        "find . -exec ls '{}' ';'",
        "ls && sh",
    ] {
        let s = Script::parse(c);
        assert!(s.plain().is_some(), "{c:?} reads as plain");
        assert!(s.coverable().is_none(), "{c:?}");
    }
    assert!(Script::parse("find . -name x").coverable().is_some());
    assert!(Script::parse("").coverable().is_none());
}

#[test]
fn restricting_patterns_see_every_command_run() {
    for c in [
        "rm x",
        "\\rm x",
        "r''m x",
        "\"rm\" x",
        "/bin/rm x",
        "$(echo rm) x",
        "command rm x",
        "env A=1 rm x",
        "sh -c 'rm x'",
        "bash -lc \"ls; rm x\"",
        "x=rm; $x v",
        "eval rm x",
        "eval 'ls; rm x'",
        "echo hi # it's\nrm x",
        "(rm x)",
        "f() { rm x; }; f",
        "`echo rm` x",
        "sh <<EOF\nrm x\nEOF",
        "echo x | xargs rm",
        "find . -name x -exec rm {} \\;",
        "busybox rm x",
        "nohup rm x",
        "timeout 5 rm x",
        "nice -n 5 rm x",
        "sudo -u root rm x",
        "ls $(rm x)",
        "echo \"$(rm x)\"",
        "cat <<EOF\n$(rm x)\nEOF",
        "if true; then rm x; fi",
        "true && { rm x; }",
        "r\\\nm x",
        "echo ok $\\\n(rm x)",
        "/bin/r? x",
        "python3 -c 'import os; os.system(\"rm x\")'",
        "echo rm x | sh",
        "echo 'unclosed; rm x",
        "nohup env sh -c 'sudo rm x'",
        "trap 'rm x' EXIT",
    ] {
        assert!(restricted("rm", c), "{c:?}");
    }
    for c in ["ls", "echo rm", "git commit -m 'rm old'", "ls rm"] {
        assert!(!restricted("rm", c), "{c:?}");
    }
    assert!(!restricted("rm", "ls -la && git status"));
    assert!(!restricted("rm", "echo 'rm x'"));
}

#[test]
fn opaque_and_unknown_scripts_fail_closed() {
    assert!(Script::parse("$cmd x").is_opaque());
    assert!(Script::parse("python3 x.py").is_opaque());
    assert!(Script::parse("echo 'x").is_opaque());
    assert!(!Script::parse("ls -la | wc -l").is_opaque());
    // An opaque script is restricted by a pattern whose literal word it contains.
    assert!(restricted("rm", "python3 -c 'r\"m\"'"));
    assert!(!restricted("curl", "python3 x.py"));
    assert!(!restricted("rm", "python3 -c 'print(format(1))'"));
    assert!(restricted(
        "rm",
        "python3 -c 'import os; os.system(\"rm x\")'"
    ));
    assert_eq!(literal_word("rm*"), "rm");
    assert_eq!(literal_word("git push*"), "git");
    assert_eq!(literal_word("*"), "");
}

#[test]
fn hostile_sizes_do_not_overflow() {
    let deep = format!("{}ls{}", "$(".repeat(2000), ")".repeat(2000));
    let _ = Script::parse(&deep);
    let long = "ls && ".repeat(5000) + "ls";
    assert_eq!(Script::parse(&long).plain().map(<[_]>::len), Some(5001));
    let nested = "sh -c ".repeat(50) + "'rm x'";
    assert!(restricted("rm", &nested));
}
