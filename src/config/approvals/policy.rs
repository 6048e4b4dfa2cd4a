//! One decision per tool call from every source of approval rules (SPEC §12).
//!
//! Owns: layering rules by authority, the precedence between keys, and the
//! "always allow" grants of the running tree. Does not own: parsing (`super`), asking
//! the person or publishing `approval:*` events (the engine's gate).
//!
//! # How a call is decided
//!
//! 1. **Full-authority rules** — the config file's `approvals:`, then the session
//!    agent's own when it comes from the user's agents directory or
//!    `AMPLIFIER_AGENT_<NAME>` (the agent's key replaces the config's identical key,
//!    unless that one is `deny`). Among the rules that match the call, the most
//!    specific kind decides: command pattern > tool name > tool-name glob > module id;
//!    several matches of that kind combine to the most restrictive (`bash(cargo *):
//!    allow` with `bash(cargo publish*): ask` asks for `cargo publish`). No match: the
//!    built-in default ([`super::default_decision`]).
//! 2. **`deny` is never overridden**: any matching full-authority `deny`, of any kind,
//!    decides.
//! 3. **Tighten-only rules** — any other agent file (project, bundle): every matching
//!    rule is a floor, so the result is the most restrictive of step 1–2's decision and
//!    theirs. They can turn `allow` into `ask` or `deny`, never the other way.
//! 4. **Grants** ("always allow" answers of this tree) turn an `ask` into `allow`;
//!    they never lift a `deny`.
//!
//! # Command patterns
//!
//! The call's `command` is read once with a shell grammar ([`super::command::Script`]).
//! For the command kind to decide `allow`, the script must have a plain reading (simple
//! commands joined by `&&`, `||`, `;`, newlines or `|`, plain or safely quoted words,
//! no redirection but `2>&1`/`>/dev/null`), run no wrapper (`sh`, `env`, `xargs`,
//! `python3` …, [`super::wrappers::WRAPPERS`]), and every simple command must match an
//! `allow` pattern at a word boundary ([`super::pattern::CommandPattern::allows`]):
//! `bash(cargo test*): allow` does not allow `cargo test && rm -rf ~`, `cargo test #
//! x⏎touch M` or `cargo testify`, which fall back to the `bash` rule. An `ask` or
//! `deny` pattern decides when it matches any command the script runs, anywhere
//! (substitutions, subshells, `sh -c` payloads, `nohup rm …`), and fails closed on what
//! cannot be read ([`super::pattern::CommandPattern::restricts`]): `bash(rm*): deny`
//! denies `ls; \rm -rf x`, `$(echo rm) x` and `sh -c 'rm x'`.

use serde_json::Value;

use crate::session::protocol::AllowScope;

use super::command::Script;
use super::pattern::{grantable, prefix_covers};
use super::{Decision, KeyKind, Rule, Rules, command_field, default_decision};

/// How much a source of rules may say (SPEC §12 "Trust", one rule per tier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Authority {
    /// The user's config, the user's agents directory, `AMPLIFIER_AGENT_<NAME>`: may
    /// set anything.
    Full,
    /// Project and bundle agent files: may only tighten (allow → ask → deny).
    TightenOnly,
}

/// Where a rule came from, for the reason shown with a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSource {
    /// arbor's config file.
    Config,
    /// An agent file's frontmatter; `tier` is how it was found (`user`, `project` …).
    Agent { name: String, tier: String },
}

impl std::fmt::Display for RuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config => f.write_str("config"),
            Self::Agent { name, tier } => write!(f, "agent '{name}' ({tier})"),
        }
    }
}

/// An "always allow" answer, kept in memory for one tree (the gate owns the list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Every call of this tool.
    Tool(String),
    /// Calls of `tool` whose command starts with `prefix` (see
    /// [`super::command::prefix_covers`]).
    CommandPrefix { tool: String, prefix: String },
}

impl Grant {
    /// The grant a person's "always" answer (`a`) to a call of `tool` makes, or `None`
    /// for a once-only answer. Never a grant of a whole command tool (`bash`) nor of a
    /// prefix that is not [`grantable`] (a wrapper such as `sh`, `env`, `python3`, or
    /// shell characters): those answers count as "once" (issue 22).
    pub fn from_scope(tool: &str, scope: &AllowScope) -> Option<Self> {
        let command_tool = command_field(tool).is_some();
        match scope {
            AllowScope::Once => None,
            AllowScope::AlwaysTool => (!command_tool).then(|| Self::Tool(tool.to_string())),
            AllowScope::AlwaysPrefix(prefix) => {
                (command_tool && grantable(prefix)).then(|| Self::CommandPrefix {
                    tool: tool.to_string(),
                    prefix: prefix.clone(),
                })
            }
        }
    }

    /// The grant written as a policy key, for the `rule` of `approval:granted` and for
    /// saving into `approvals:`: `write_file`, `bash(cargo test*)`. As an `allow` rule
    /// that key covers exactly what the grant does (word bounded, every command of a
    /// plain reading, no wrappers).
    pub fn key(&self) -> String {
        match self {
            Self::Tool(t) => t.clone(),
            Self::CommandPrefix { tool, prefix } => format!("{tool}({prefix}*)"),
        }
    }

    fn covers(&self, tool: &str, input: &Value) -> bool {
        match self {
            Self::Tool(t) => t == tool,
            Self::CommandPrefix { tool: t, prefix } => {
                t == tool && command_of(tool, input).is_some_and(|c| prefix_covers(prefix, c))
            }
        }
    }
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tool(t) => write!(f, "always allow {t} in this tree"),
            Self::CommandPrefix { tool, prefix } => {
                write!(f, "always allow {tool} `{prefix}…` in this tree")
            }
        }
    }
}

/// The grants of one tree, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants(pub Vec<Grant>);

impl Grants {
    /// Adds `grant` unless it is already there.
    pub fn add(&mut self, grant: Grant) {
        if !self.0.contains(&grant) {
            self.0.push(grant);
        }
    }

    fn find(&self, tool: &str, input: &Value) -> Option<&Grant> {
        self.0.iter().find(|g| g.covers(tool, input))
    }
}

/// What decided a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedBy {
    /// No rule matched: arbor's built-in default for the tool.
    Default,
    /// This key of this source.
    Rule { key: String, source: RuleSource },
    /// An "always allow" answer of this tree.
    Grant(Grant),
}

impl std::fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Default => f.write_str("arbor's default"),
            Self::Rule { key, source } => write!(f, "{source} approvals \"{key}\""),
            Self::Grant(g) => write!(f, "{g}"),
        }
    }
}

/// A decision and the reason for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub decided_by: DecidedBy,
}

#[derive(Debug, Clone)]
struct Sourced {
    rule: Rule,
    source: RuleSource,
}

/// Every rule that applies to one session's calls. Cheap to clone; build one per
/// session: `ApprovalPolicy::new(&config.approvals)` then [`ApprovalPolicy::with_layer`]
/// for its agent (and for the bundle's plan, tighten-only).
#[derive(Debug, Clone, Default)]
pub struct ApprovalPolicy {
    full: Vec<Sourced>,
    tighten: Vec<Sourced>,
}

impl ApprovalPolicy {
    /// The config file's rules, full authority.
    pub fn new(config: &Rules) -> Self {
        Self::default().with_layer(RuleSource::Config, Authority::Full, config)
    }

    /// This policy with `rules` from `source` added at `authority`. A full-authority
    /// key replaces an identical earlier key unless that one is `deny`.
    pub fn with_layer(mut self, source: RuleSource, authority: Authority, rules: &Rules) -> Self {
        let sourced = rules.rules().iter().map(|rule| Sourced {
            rule: rule.clone(),
            source: source.clone(),
        });
        match authority {
            Authority::Full => {
                for new in sourced {
                    self.full.retain(|old| {
                        old.rule.key != new.rule.key || old.rule.decision == Decision::Deny
                    });
                    self.full.push(new);
                }
            }
            Authority::TightenOnly => self.tighten.extend(sourced),
        }
        self
    }

    /// Decides a call of `tool` (module `module`, input `input` — `bash` reads its
    /// `command`) given this tree's `grants`. Never fails; the module may be empty when
    /// unknown (module keys then do not match).
    pub fn decide(&self, tool: &str, module: &str, input: &Value, grants: &Grants) -> Verdict {
        let call = Call::new(tool, module, input);
        let mut verdict = self.decide_full(&call);
        // Tighten-only: every matching rule is a floor.
        for s in &self.tighten {
            if let Some(d) = call.matches(&s.rule)
                && d > verdict.decision
            {
                verdict = decided(d, s);
            }
        }
        if verdict.decision == Decision::Ask
            && let Some(grant) = grants.find(tool, input)
        {
            verdict = Verdict {
                decision: Decision::Allow,
                decided_by: DecidedBy::Grant(grant.clone()),
            };
        }
        verdict
    }

    fn decide_full(&self, call: &Call<'_>) -> Verdict {
        let matched: Vec<(Decision, &Sourced)> = self
            .full
            .iter()
            .filter_map(|s| call.matches(&s.rule).map(|d| (d, s)))
            .collect();
        if let Some((d, s)) = matched.iter().find(|(d, _)| *d == Decision::Deny) {
            return decided(*d, s);
        }
        // Command patterns decide as a group (every simple command must be allowed).
        let commands: Vec<&Sourced> = self
            .full
            .iter()
            .filter(|s| matches!(s.rule.kind, KeyKind::Command { .. }))
            .collect();
        if let Some(verdict) = call.command_verdict(&commands) {
            return verdict;
        }
        let best = matched
            .iter()
            .filter(|(_, s)| !matches!(s.rule.kind, KeyKind::Command { .. }))
            .max_by_key(|(d, s)| (s.rule.kind.specificity(), *d));
        match best {
            Some((d, s)) => decided(*d, s),
            None => Verdict {
                decision: default_decision(call.tool),
                decided_by: DecidedBy::Default,
            },
        }
    }
}

fn decided(decision: Decision, s: &Sourced) -> Verdict {
    Verdict {
        decision,
        decided_by: DecidedBy::Rule {
            key: s.rule.key.clone(),
            source: s.source.clone(),
        },
    }
}

/// The command string of a call of `tool`, when `tool` takes command patterns.
fn command_of<'a>(tool: &str, input: &'a Value) -> Option<&'a str> {
    let field = command_field(tool)?;
    input.get(field)?.as_str()
}

struct Call<'a> {
    tool: &'a str,
    module: &'a str,
    script: Option<Script>,
}

impl<'a> Call<'a> {
    fn new(tool: &'a str, module: &'a str, input: &'a Value) -> Self {
        Self {
            tool,
            module,
            script: command_of(tool, input).map(Script::parse),
        }
    }

    /// The rule's decision when it matches this call. A command pattern matches when
    /// it restricts the script ([`super::pattern::CommandPattern::restricts`]); for
    /// `allow` that is not enough to decide: see [`Call::command_verdict`].
    fn matches(&self, rule: &Rule) -> Option<Decision> {
        let hit = match &rule.kind {
            KeyKind::Module(m) => !self.module.is_empty() && m == self.module,
            KeyKind::ToolGlob(g) => g.is_match(self.tool),
            KeyKind::Tool(t) => t == self.tool,
            KeyKind::Command { tool, pattern } => {
                tool == self.tool && self.script.as_ref().is_some_and(|s| pattern.restricts(s))
            }
        };
        hit.then_some(rule.decision)
    }

    /// The decision of the command-pattern kind, when it has one: `deny`/`ask` when a
    /// pattern with that decision restricts the script (the most restrictive), `allow`
    /// when the script is coverable and each of its commands matches an `allow`
    /// pattern, else `None` (the next kind decides).
    fn command_verdict(&self, rules: &[&Sourced]) -> Option<Verdict> {
        let script = self.script.as_ref()?;
        let strict = rules
            .iter()
            .filter_map(|s| self.matches(&s.rule).map(|d| (d, *s)))
            .filter(|(d, _)| *d != Decision::Allow)
            .max_by_key(|(d, _)| *d);
        if let Some((d, s)) = strict {
            return Some(decided(d, s));
        }
        let mut first = None;
        for words in script.coverable()? {
            let allowed = rules.iter().find(|s| match &s.rule.kind {
                KeyKind::Command { tool, pattern } => {
                    s.rule.decision == Decision::Allow && tool == self.tool && pattern.allows(words)
                }
                _ => false,
            })?;
            first.get_or_insert(*allowed);
        }
        first.map(|s| decided(Decision::Allow, s))
    }
}
