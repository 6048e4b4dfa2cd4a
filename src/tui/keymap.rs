//! The keymap as data: one table of (action, default keys, description, context) drives
//! key dispatch, the help overlay and the status-bar hints. Config `keymap:` overrides
//! replace an action's keys; conflicts are rejected at load.
//!
//! Config shape (`config.yaml`): action name → key or list of keys (an empty list
//! unbinds), e.g. `keymap: {tree.cancel: "d", global.agents: ["f2", "ctrl+g"]}`.
//! Key syntax: see [`KeyBinding::parse`].
//!
//! Non-responsibilities: what an action does (`app`), text editing keys inside the
//! composer (ratatui-textarea's own bindings apply to keys the keymap does not claim).

use std::collections::HashMap;

use serde_json::{Map, Value};

pub use super::key::{KeyBinding, KeyParseError};

/// Where a binding applies. `Global` bindings work in the three panes; `Browser`,
/// `Help`, `Mcp` (the MCP servers view), `Hooks` (the hooks view), `Approval` (the modal approval prompt, above
/// everything) and `Trust` (the start-up trust prompt) are overlay modes that only see
/// their own bindings plus `global.quit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    Global,
    Tree,
    Chat,
    Composer,
    Browser,
    Help,
    Mcp,
    /// The hooks view (`/hooks`, F7).
    Hooks,
    Approval,
    Trust,
    /// A y/n confirmation (merge, discard, rewind here): modal above the overlays.
    Confirm,
    Diff,
    Wall,
    /// The composer's popup (slash commands, `@` files, history search) while it is
    /// open: its own keys, other keys edit the composer.
    Palette,
    /// The find bar (open over the chat or the tree): its own keys, then the pane's.
    Find,
}

impl Context {
    /// Every context, in the help overlay's order (each gets a section there).
    pub const ALL: [Context; 15] = [
        Context::Global,
        Context::Tree,
        Context::Chat,
        Context::Composer,
        Context::Palette,
        Context::Find,
        Context::Wall,
        Context::Diff,
        Context::Browser,
        Context::Mcp,
        Context::Hooks,
        Context::Approval,
        Context::Trust,
        Context::Confirm,
        Context::Help,
    ];

    /// Heading used in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Tree => "Session tree",
            Context::Chat => "Chat",
            Context::Composer => "Composer",
            Context::Browser => "Agent browser",
            Context::Help => "Help",
            Context::Mcp => "MCP servers",
            Context::Hooks => "Hooks",
            Context::Approval => "Approval prompt",
            Context::Trust => "Trust prompt",
            Context::Confirm => "Confirmation (merge, discard, rewind here)",
            Context::Diff => "Diff",
            Context::Wall => "Wall",
            Context::Palette => "Composer popup (/ commands, @ files, history search)",
            Context::Find => "Find in the thread",
        }
    }

    fn is_overlay(self) -> bool {
        matches!(
            self,
            Context::Browser
                | Context::Help
                | Context::Mcp
                | Context::Hooks
                | Context::Approval
                | Context::Trust
                | Context::Confirm
                | Context::Diff
                | Context::Wall
                | Context::Palette
                | Context::Find
        )
    }
}

macro_rules! actions {
    ($($variant:ident = $name:literal, $ctx:ident, [$($key:literal),*], $hint:literal, $desc:literal;)*) => {
        /// Every bindable action. The config name is `<context>.<action>`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action { $($variant,)* }

        /// The default table: one row per action.
        pub const TABLE: &[ActionSpec] = &[
            $(ActionSpec {
                action: Action::$variant,
                name: $name,
                context: Context::$ctx,
                default_keys: &[$($key),*],
                hint: $hint,
                description: $desc,
            },)*
        ];
    };
}

actions! {
    Quit = "global.quit", Global, ["ctrl+c"], false, "Quit (press twice)";
    FocusNext = "global.focus_next", Global, ["tab"], true, "Next pane";
    FocusPrev = "global.focus_prev", Global, ["shift+tab"], false, "Previous pane";
    Help = "global.help", Global, ["f1"], false, "Help";
    Agents = "global.agents", Global, ["f2"], true, "Agent browser";
    CancelTurn = "global.cancel", Global, ["esc"], true, "Cancel the open thread's turn";
    NewSession = "global.new_session", Global, ["ctrl+n"], false, "New root session";
    SwitchModel = "global.model", Global, ["ctrl+o"], false, "Switch the model to the composer's text";
    NextNeedsYou = "global.next_needs_you", Global, ["ctrl+g"], false, "Next session that needs you";
    PageUp = "global.page_up", Global, ["pgup"], false, "Scroll chat up a page";
    PageDown = "global.page_down", Global, ["pgdn"], false, "Scroll chat down a page";
    TreeUp = "tree.up", Tree, ["up", "k"], false, "Select previous session";
    TreeDown = "tree.down", Tree, ["down", "j"], false, "Select next session";
    TreeTop = "tree.top", Tree, ["home", "g"], false, "First session";
    TreeBottom = "tree.bottom", Tree, ["end", "G"], false, "Last session";
    TreeOpen = "tree.open", Tree, ["enter"], true, "Open thread";
    TreeCancel = "tree.cancel", Tree, ["x"], true, "Cancel subtree";
    TreeContinue = "tree.continue", Tree, ["r"], false, "Continue a stopped session";
    TreeContinueInterrupted = "tree.continue_interrupted", Tree, ["R"], false, "Resume interrupted sessions of the tree";
    TreeCollapse = "tree.collapse", Tree, ["left", "h"], false, "Collapse";
    TreeExpand = "tree.expand", Tree, ["right", "l"], false, "Expand";
    TreeHelp = "tree.help", Tree, ["?"], true, "Help";
    TreeAgents = "tree.agents", Tree, ["a"], false, "Agent browser";
    TreeDiff = "tree.diff", Tree, ["d"], false, "Diff of the session's changes";
    TreeWall = "tree.wall", Tree, ["w"], false, "Wall of running sub-sessions";
    TreeMerge = "tree.merge", Tree, ["m"], false, "Merge the session's worktree into its parent's checkout (asks first)";
    TreeDiscard = "tree.discard", Tree, ["D"], false, "Discard the session's worktree and branch (asks first)";
    ChatUp = "chat.up", Chat, ["up", "k"], false, "Select previous cell";
    ChatDown = "chat.down", Chat, ["down", "j"], false, "Select next cell";
    ChatActivate = "chat.activate", Chat, ["enter"], true, "Open task / expand card";
    ChatToggle = "chat.toggle", Chat, ["space"], false, "Expand/collapse card";
    ChatTop = "chat.top", Chat, ["home", "g"], false, "Oldest message";
    ChatBottom = "chat.bottom", Chat, ["end", "G"], false, "Newest message (follow)";
    ChatHelp = "chat.help", Chat, ["?"], true, "Help";
    ChatAgents = "chat.agents", Chat, ["a"], false, "Agent browser";
    ChatDiff = "chat.diff", Chat, ["d"], false, "Diff of the open session's changes";
    ChatWall = "chat.wall", Chat, ["w"], false, "Wall of running sub-sessions";
    ChatRewind = "chat.rewind", Chat, ["u"], false, "Rewind here: fork at the cursor's turn and restore the files changed after it (asks first)";
    Submit = "composer.submit", Composer, ["enter"], true, "Send";
    Newline = "composer.newline", Composer, ["shift+enter", "ctrl+j", "alt+enter"], true, "New line";
    EditQueued = "composer.edit_queued", Composer, ["alt+up"], false, "Take the newest waiting (steer/queued) message back to edit";
    RemoveQueued = "composer.remove_queued", Composer, ["alt+x"], false, "Remove the newest waiting (steer/queued) message";
    HistoryPrev = "composer.history_prev", Composer, ["up"], false, "Earlier prompt (in an empty composer)";
    HistoryNext = "composer.history_next", Composer, ["down"], false, "Later prompt (while walking the history)";
    HistorySearch = "composer.history_search", Composer, ["ctrl+r"], false, "Search earlier prompts";
    PaletteUp = "palette.up", Palette, ["up", "ctrl+p"], false, "Previous row";
    PaletteDown = "palette.down", Palette, ["down", "ctrl+n"], false, "Next row";
    PaletteAccept = "palette.accept", Palette, ["enter", "tab"], true, "Accept";
    PaletteClose = "palette.close", Palette, ["esc"], true, "Close";
    BrowserUp = "browser.up", Browser, ["up", "k"], false, "Previous agent";
    BrowserDown = "browser.down", Browser, ["down", "j"], false, "Next agent";
    BrowserStart = "browser.start", Browser, ["enter"], true, "New session with agent";
    BrowserEdit = "browser.edit", Browser, ["e", "ctrl+e"], true, "Edit file in $EDITOR";
    BrowserFilter = "browser.filter", Browser, ["/"], true, "Filter";
    BrowserClose = "browser.close", Browser, ["esc", "q"], true, "Close";
    HelpUp = "help.up", Help, ["up", "k"], false, "Scroll up";
    HelpDown = "help.down", Help, ["down", "j"], false, "Scroll down";
    HelpPageUp = "help.page_up", Help, ["pgup"], false, "Scroll up a page";
    HelpPageDown = "help.page_down", Help, ["pgdn", "space"], false, "Scroll down a page";
    HelpTop = "help.top", Help, ["home", "g"], false, "Top";
    HelpBottom = "help.bottom", Help, ["end", "G"], false, "Bottom";
    HelpClose = "help.close", Help, ["esc", "q", "?", "f1"], true, "Close";
    Mcp = "global.mcp", Global, ["f6"], false, "MCP servers: status and tools";
    McpUp = "mcp.up", Mcp, ["up", "k"], false, "Scroll up";
    McpDown = "mcp.down", Mcp, ["down", "j"], false, "Scroll down";
    McpRefresh = "mcp.refresh", Mcp, ["r"], true, "Refresh";
    McpClose = "mcp.close", Mcp, ["esc", "q", "f6"], true, "Close";
    Hooks = "global.hooks", Global, ["f7"], false, "Hooks: active and skipped";
    HooksUp = "hooks.up", Hooks, ["up", "k"], false, "Scroll up";
    HooksDown = "hooks.down", Hooks, ["down", "j"], false, "Scroll down";
    HooksRefresh = "hooks.refresh", Hooks, ["r"], true, "Refresh";
    HooksClose = "hooks.close", Hooks, ["esc", "q", "f7"], true, "Close";
    ApprovalAllow = "approval.allow", Approval, ["y"], true, "Allow once";
    ApprovalAlways = "approval.always", Approval, ["a"], true, "Always allow (tool or command prefix, tree)";
    ApprovalAlwaysSave = "approval.always_save", Approval, ["A"], true, "Always allow and save the rule to config.yaml";
    ApprovalDeny = "approval.deny", Approval, ["n"], true, "Deny, with a reason for the model";
    ApprovalDenyNow = "approval.deny_now", Approval, ["esc"], true, "Deny";
    ApprovalUp = "approval.up", Approval, ["up", "k"], false, "Scroll command or diff up";
    ApprovalDown = "approval.down", Approval, ["down", "j"], false, "Scroll command or diff down";
    ApprovalDiff = "approval.diff", Approval, ["d"], true, "Show or fold the diff (a merge review shows its files first)";
    ApprovalThread = "approval.thread", Approval, ["ctrl+g", "t"], true, "Read the asking session's thread (the prompt stays docked below; again: back)";
    TrustYes = "trust.yes", Trust, ["y"], true, "Trust this project";
    TrustNo = "trust.no", Trust, ["n", "esc"], true, "Not now (ask again next start)";
    ConfirmYes = "confirm.yes", Confirm, ["y"], true, "Yes, do it";
    ConfirmNo = "confirm.no", Confirm, ["n", "esc"], true, "No";
    DiffUp = "diff.up", Diff, ["up", "k"], false, "Scroll up";
    DiffDown = "diff.down", Diff, ["down", "j"], false, "Scroll down";
    DiffPageUp = "diff.page_up", Diff, ["pgup"], false, "Scroll up a page";
    DiffPageDown = "diff.page_down", Diff, ["pgdn", "space"], false, "Scroll down a page";
    DiffTop = "diff.top", Diff, ["home", "g"], false, "First line";
    DiffBottom = "diff.bottom", Diff, ["end", "G"], false, "Last line";
    DiffSubtree = "diff.subtree", Diff, ["s"], true, "Include sub-sessions' changes (toggle)";
    DiffClose = "diff.close", Diff, ["esc", "q", "d"], true, "Close";
    WallLeft = "wall.left", Wall, ["left", "h"], false, "Previous tile";
    WallRight = "wall.right", Wall, ["right", "l"], false, "Next tile";
    WallUp = "wall.up", Wall, ["up", "k"], false, "Tile above";
    WallDown = "wall.down", Wall, ["down", "j"], false, "Tile below";
    WallOpen = "wall.open", Wall, ["enter"], true, "Open the tile's thread";
    WallPageUp = "wall.page_up", Wall, ["pgup"], false, "Previous page of tiles";
    WallPageDown = "wall.page_down", Wall, ["pgdn", "space"], true, "Next page of tiles";
    WallClose = "wall.close", Wall, ["esc", "q", "w"], true, "Close the wall";
    Find = "global.find", Global, ["ctrl+f"], false, "Find in the thread";
    Mouse = "global.mouse", Global, ["alt+m"], false, "Mouse capture on/off (off: the terminal selects text)";
    PrevMessage = "chat.prev_message", Chat, ["["], false, "Cursor to the previous message";
    NextMessage = "chat.next_message", Chat, ["]"], false, "Cursor to the next message";
    Copy = "chat.copy", Chat, ["y"], false, "Copy the message under the cursor (OSC 52)";
    CopyCode = "chat.copy_code", Chat, ["Y"], false, "Copy the code block nearest the cursor (OSC 52)";
    FindNext = "find.next", Find, ["enter", "n"], true, "Next match";
    FindPrev = "find.prev", Find, ["shift+enter", "N"], true, "Previous match";
    FindClose = "find.close", Find, ["esc"], true, "Close the find bar";
}

/// One row of the keymap table.
#[derive(Debug, Clone, Copy)]
pub struct ActionSpec {
    pub action: Action,
    /// Config name, `<context>.<action>`.
    pub name: &'static str,
    pub context: Context,
    /// Default chords in [`KeyBinding::parse`] syntax.
    pub default_keys: &'static [&'static str],
    /// Shown in the status bar when its context is active.
    pub hint: bool,
    pub description: &'static str,
}

/// A keymap that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeymapError {
    #[error("keymap: unknown action {name:?} (known: {known})")]
    UnknownAction { name: String, known: String },
    #[error("keymap: {action}: {source}")]
    BadKey {
        action: String,
        source: KeyParseError,
    },
    #[error("keymap: {action}: expected a key string or a list of key strings")]
    BadValue { action: String },
    #[error("keymap: key {key} is bound to both {first} and {second}")]
    Conflict {
        key: String,
        first: String,
        second: String,
    },
    #[error(
        "keymap: {action}: {key} is a plain character and would block typing; add ctrl+ or alt+"
    )]
    BlocksTyping { action: String, key: String },
}

/// The resolved keymap: defaults with overrides applied, conflict-free.
#[derive(Debug, Clone)]
pub struct Keymap {
    keys: HashMap<Action, Vec<KeyBinding>>,
    lookup: HashMap<(Context, KeyBinding), Action>,
}

impl Keymap {
    /// The default keymap.
    pub fn defaults() -> Self {
        Self::with_overrides(&Map::new()).unwrap_or_else(|_| Self {
            keys: HashMap::new(),
            lookup: HashMap::new(),
        })
    }

    /// Defaults with `overrides` (config `keymap:`) applied.
    ///
    /// Errors: unknown action names, unparsable keys, non-string values, two actions
    /// that can be active together sharing a key, or a plain character bound globally
    /// or in the composer.
    pub fn with_overrides(overrides: &Map<String, Value>) -> Result<Self, KeymapError> {
        let mut keys: HashMap<Action, Vec<KeyBinding>> = HashMap::new();
        for spec in TABLE {
            let parsed = spec
                .default_keys
                .iter()
                .map(|k| KeyBinding::parse(k))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| KeymapError::BadKey {
                    action: spec.name.to_string(),
                    source,
                })?;
            keys.insert(spec.action, parsed);
        }
        for (name, value) in overrides {
            let spec = TABLE.iter().find(|s| s.name == name).ok_or_else(|| {
                KeymapError::UnknownAction {
                    name: name.clone(),
                    known: TABLE.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                }
            })?;
            let strings: Vec<&str> = match value {
                Value::String(s) => vec![s.as_str()],
                Value::Array(items) => items
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| KeymapError::BadValue {
                        action: name.clone(),
                    })?,
                _ => {
                    return Err(KeymapError::BadValue {
                        action: name.clone(),
                    });
                }
            };
            let parsed = strings
                .iter()
                .map(|k| KeyBinding::parse(k))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| KeymapError::BadKey {
                    action: name.clone(),
                    source,
                })?;
            keys.insert(spec.action, parsed);
        }
        let map = Self {
            keys,
            lookup: HashMap::new(),
        };
        map.check()?;
        Ok(map.indexed())
    }

    fn check(&self) -> Result<(), KeymapError> {
        let bound: Vec<(&ActionSpec, KeyBinding)> = TABLE
            .iter()
            .flat_map(|s| self.keys_for(s.action).iter().map(move |k| (s, *k)))
            .collect();
        for (spec, key) in &bound {
            if matches!(
                spec.context,
                Context::Global | Context::Composer | Context::Palette
            ) && key.is_text()
            {
                return Err(KeymapError::BlocksTyping {
                    action: spec.name.to_string(),
                    key: key.to_string(),
                });
            }
        }
        for (i, (a, ka)) in bound.iter().enumerate() {
            for (b, kb) in &bound[i + 1..] {
                if ka == kb && a.action != b.action && overlap(a, b) {
                    return Err(KeymapError::Conflict {
                        key: ka.to_string(),
                        first: a.name.to_string(),
                        second: b.name.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    fn indexed(mut self) -> Self {
        for spec in TABLE {
            for key in self.keys.get(&spec.action).cloned().unwrap_or_default() {
                self.lookup.insert((spec.context, key), spec.action);
            }
        }
        self
    }

    /// The action `key` triggers in `context` (context bindings only; callers try
    /// `Context::Global` separately, see [`Keymap::resolve`]).
    pub fn action(&self, context: Context, key: &KeyBinding) -> Option<Action> {
        self.lookup.get(&(context, *key)).copied()
    }

    /// The action for `key` with `context` focused: overlays see their own bindings and
    /// `global.quit`; panes see global bindings first, then their own.
    pub fn resolve(&self, context: Context, key: &KeyBinding) -> Option<Action> {
        if context.is_overlay() {
            return self.action(context, key).or_else(|| {
                (self.action(Context::Global, key) == Some(Action::Quit)).then_some(Action::Quit)
            });
        }
        self.action(Context::Global, key)
            .or_else(|| self.action(context, key))
    }

    /// The chords bound to `action` (empty when unbound).
    pub fn keys_for(&self, action: Action) -> &[KeyBinding] {
        self.keys.get(&action).map(Vec::as_slice).unwrap_or(&[])
    }

    /// `"Ctrl+j/Shift+Enter"`-style label of `action`'s chords.
    pub fn label(&self, action: Action) -> String {
        self.keys_for(action)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Status-bar hints for `context`: `(first key, description)` of hinted actions,
    /// context actions first, then global ones.
    pub fn hints(&self, context: Context) -> Vec<(String, &'static str)> {
        let mut rows: Vec<&ActionSpec> = TABLE
            .iter()
            .filter(|s| s.hint && s.context == context)
            .collect();
        if !context.is_overlay() {
            rows.extend(
                TABLE
                    .iter()
                    .filter(|s| s.hint && s.context == Context::Global),
            );
        }
        rows.into_iter()
            .filter_map(|s| {
                let key = self.keys_for(s.action).first()?;
                Some((key.to_string(), s.description))
            })
            .collect()
    }
}

fn overlap(a: &ActionSpec, b: &ActionSpec) -> bool {
    if a.context == b.context {
        return true;
    }
    let quit_in_overlay =
        |x: &ActionSpec, y: &ActionSpec| x.action == Action::Quit && y.context.is_overlay();
    let global_in_pane =
        |x: &ActionSpec, y: &ActionSpec| x.context == Context::Global && !y.context.is_overlay();
    quit_in_overlay(a, b) || quit_in_overlay(b, a) || global_in_pane(a, b) || global_in_pane(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};
    use serde_json::json;

    fn overrides(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn defaults_resolve_and_give_hints() {
        let km = Keymap::with_overrides(&Map::new()).unwrap();
        let x = KeyBinding::new(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(km.resolve(Context::Tree, &x), Some(Action::TreeCancel));
        assert_eq!(km.resolve(Context::Composer, &x), None);
        let ctrl_c = KeyBinding::parse("ctrl+c").unwrap();
        assert_eq!(km.resolve(Context::Browser, &ctrl_c), Some(Action::Quit));
        let tab = KeyBinding::parse("tab").unwrap();
        assert_eq!(km.resolve(Context::Browser, &tab), None);
        assert!(
            km.hints(Context::Tree)
                .iter()
                .any(|(k, d)| k == "x" && *d == "Cancel subtree")
        );
    }

    #[test]
    fn overrides_replace_and_conflicts_are_rejected() {
        let km =
            Keymap::with_overrides(&overrides(json!({"tree.cancel": ["c", "ctrl+x"]}))).unwrap();
        assert_eq!(km.label(Action::TreeCancel), "c/Ctrl+x");
        // The defaults hold no conflict (`defaults()` would hide one as an empty map).
        assert!(Keymap::with_overrides(&Map::new()).is_ok());
        let err = Keymap::with_overrides(&overrides(json!({"tree.cancel": "enter"}))).unwrap_err();
        assert!(matches!(err, KeymapError::Conflict { .. }), "{err}");
        assert!(err.to_string().contains("tree.open"), "{err}");
        let err =
            Keymap::with_overrides(&overrides(json!({"global.agents": "ctrl+c"}))).unwrap_err();
        assert!(err.to_string().contains("global.quit"), "{err}");
        let err = Keymap::with_overrides(&overrides(json!({"global.help": "?"}))).unwrap_err();
        assert!(matches!(err, KeymapError::BlocksTyping { .. }));
        let err = Keymap::with_overrides(&overrides(json!({"tree.nope": "x"}))).unwrap_err();
        assert!(matches!(err, KeymapError::UnknownAction { .. }));
        let err = Keymap::with_overrides(&overrides(json!({"tree.open": 3}))).unwrap_err();
        assert!(matches!(err, KeymapError::BadValue { .. }));
        // Overlays may reuse pane keys.
        assert!(Keymap::with_overrides(&overrides(json!({"browser.start": "x"}))).is_ok());
    }
}
