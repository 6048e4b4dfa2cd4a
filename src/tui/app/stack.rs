//! The modal stack (issue 24 item 2, after helix's compositor): the
//! [`Component`]s over the panes in [`Layer`] order. Key routing
//! ([`App::on_key`](super::App)), the key context (status-bar hints) and drawing all
//! walk this one order, so "which mode gets the keys" is written once
//! ([`Stack::order`]).
//!
//! Owns: the order, the walk, and applying what components ask ([`Effect`]). Does not
//! own: the trait (`component`), the components themselves (`components`, which also
//! holds the table of what opens each one) or the panes under them (`draw`).

use std::any::Any;

use crossterm::event::KeyEvent;
use ratatui::Frame;

use super::component::{Component, Ctx, DrawCtx, Effect, Layer};
use super::components;
use super::components::WallOverlay;
use super::components::approval::ApprovalPrompt;
use super::panes::Panes;
use super::{App, Focus, Overlay};
use crate::tui::action::KeyOutcome;
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::approvals::ApprovalQueue;
use crate::tui::state::wall::Wall;

/// A position in the walk: the pinned approval prompt or a pushed component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The pinned approval prompt.
    Approval,
    /// The pushed component at this index (bottom first).
    Pushed(usize),
}

/// The components over the panes: the approval prompt (always there; shown while
/// something waits) and the pushed ones in [`Layer`] order (pushed later is higher
/// within a layer).
#[derive(Default)]
pub(crate) struct Stack {
    /// The approval prompt, pinned (shown while something waits).
    pub approval: ApprovalPrompt,
    pushed: Vec<Box<dyn Component>>,
}

impl Stack {
    /// Top to bottom: the approval prompt while it asks, the pushed components from
    /// the top, the approval prompt while docked. Keys, the key context and (bottom
    /// up) drawing walk this order.
    pub fn order(&self) -> Vec<Slot> {
        let docked = self.approval.queue.docked();
        let mut order = Vec::with_capacity(self.pushed.len() + 1);
        if !docked {
            order.push(Slot::Approval);
        }
        order.extend((0..self.pushed.len()).rev().map(Slot::Pushed));
        if docked {
            order.push(Slot::Approval);
        }
        order
    }

    /// The component at `slot`.
    pub fn get(&self, slot: Slot) -> Option<&dyn Component> {
        match slot {
            Slot::Approval => Some(&self.approval),
            Slot::Pushed(i) => self.pushed.get(i).map(|c| &**c),
        }
    }

    /// The component at `slot`, to change.
    pub fn get_mut(&mut self, slot: Slot) -> Option<&mut dyn Component> {
        match slot {
            Slot::Approval => Some(&mut self.approval),
            Slot::Pushed(i) => self.pushed.get_mut(i).map(|c| &mut **c),
        }
    }

    /// Pushes `component` above the others of its layer. An overlay replaces the
    /// open overlay (one at a time); a component of a kind already open replaces it
    /// unless that one keeps itself ([`Component::reopen`]: it was asked first).
    pub fn push(&mut self, component: Box<dyn Component>) {
        let layer = component.layer();
        let kind = (*component).type_id();
        self.pushed.retain(|c| {
            (**c).type_id() != kind && !(layer == Layer::Overlay && c.layer() == layer)
        });
        let at = self
            .pushed
            .iter()
            .position(|c| c.layer() > layer)
            .unwrap_or(self.pushed.len());
        self.pushed.insert(at, component);
    }

    /// The open component of type `T`, if any.
    pub fn find<T: Component>(&self) -> Option<&T> {
        self.pushed
            .iter()
            .find_map(|c| (&**c as &dyn Any).downcast_ref::<T>())
    }

    /// What engine events change here: the approval prompts' queue and the open
    /// wall's tiles (`App::on_engine_event` hands them to the dispatcher).
    pub fn listeners(&mut self) -> (&mut ApprovalQueue, Option<&mut Wall>) {
        let wall = self
            .pushed
            .iter_mut()
            .find_map(|c| (&mut **c as &mut dyn Any).downcast_mut::<WallOverlay>())
            .map(WallOverlay::wall_mut);
        (&mut self.approval.queue, wall)
    }

    /// The open component of type `T`, to change.
    pub fn find_mut<T: Component>(&mut self) -> Option<&mut T> {
        self.pushed
            .iter_mut()
            .find_map(|c| (&mut **c as &mut dyn Any).downcast_mut::<T>())
    }

    /// The slot of the open component of the same type as `like`.
    pub fn slot_of_kind(&self, like: &dyn Component) -> Option<Slot> {
        let kind = (*like).type_id();
        self.pushed
            .iter()
            .position(|c| (**c).type_id() == kind)
            .map(Slot::Pushed)
    }

    /// Takes the component at `slot` off the stack (the approval prompt stays).
    pub fn remove(&mut self, slot: Slot) {
        if let Slot::Pushed(i) = slot
            && i < self.pushed.len()
        {
            self.pushed.remove(i);
        }
    }

    /// Takes the open component of type `T` off the stack.
    pub fn close<T: Component>(&mut self) {
        self.pushed.retain(|c| !(&**c as &dyn Any).is::<T>());
    }

    /// Closes every overlay.
    pub fn close_overlays(&mut self) {
        self.pushed.retain(|c| c.layer() != Layer::Overlay);
    }

    /// The open overlay's tag (`Overlay::None` when none is open).
    pub fn overlay(&self) -> Overlay {
        self.order()
            .into_iter()
            .filter_map(|s| self.get(s))
            .map(|c| c.overlay())
            .find(|o| *o != Overlay::None)
            .unwrap_or(Overlay::None)
    }

    /// The context of the topmost component with the keyboard (`None`: the panes').
    pub fn context(&self, focus: Focus) -> Option<Context> {
        self.order()
            .into_iter()
            .filter_map(|s| self.get(s))
            .find_map(|c| c.context(focus))
    }

    /// Whether a bar is open (the panes keep a row under the chat for it).
    pub fn bar_open(&self) -> bool {
        self.pushed.iter().any(|c| c.layer() == Layer::Bar)
    }

    /// Whether a modal component is open (the composer does not type then).
    pub fn any_modal(&self) -> bool {
        self.order()
            .into_iter()
            .filter_map(|s| self.get(s))
            .any(|c| c.modal())
    }
}

impl App {
    /// What a component sees of the `App` (the stack itself taken out meanwhile).
    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            keymap: &self.keymap,
            theme: &self.theme,
            registry: &self.registry,
            tree: &mut self.tree,
            thread: &mut self.thread,
            inflight: &self.inflight,
            focus: self.focus,
            areas: self.areas,
            now: self.clock.now(),
            effects: Vec::new(),
        }
    }

    /// Calls `f` with the component at `slot`, then applies what it asked for.
    fn with_component<R>(
        &mut self,
        slot: Slot,
        f: impl FnOnce(&mut dyn Component, &mut Ctx<'_>) -> R,
    ) -> Option<R> {
        let mut stack = std::mem::take(&mut self.stack);
        let (result, effects) = {
            let mut cx = self.ctx();
            let result = stack.get_mut(slot).map(|c| f(c, &mut cx));
            (result, cx.effects)
        };
        self.stack = stack;
        self.run_effects(Some(slot), effects);
        result
    }

    /// Applies a component's effects in order; a `Close` (from the component at
    /// `from`) first of all.
    fn run_effects(&mut self, from: Option<Slot>, effects: Vec<Effect>) {
        if let Some(slot) = from
            && effects.iter().any(|e| matches!(e, Effect::Close))
        {
            self.stack.remove(slot);
        }
        for effect in effects {
            match effect {
                Effect::Close => {}
                Effect::CloseOverlays => self.stack.close_overlays(),
                Effect::Ui(action) => self.apply(action),
                Effect::Send(command) => self.send(command),
                Effect::Note { text, warning } => self.set_note(text, warning),
                Effect::Focus(focus) => self.focus = focus,
            }
        }
    }

    /// Opens the component `action` opens (`components::opener`); returns whether
    /// `action` is one that opens a component (opened or refused with a note).
    pub(super) fn open_component(&mut self, action: Action) -> bool {
        let Some(open) = components::opener(action) else {
            return false;
        };
        let (made, effects) = {
            let mut cx = self.ctx();
            (open(&mut cx), cx.effects)
        };
        self.run_effects(None, effects);
        let Some(made) = made else {
            return true;
        };
        let kept = self
            .stack
            .slot_of_kind(&*made)
            .and_then(|slot| self.with_component(slot, |open, cx| open.reopen(cx)));
        if kept != Some(true) {
            self.stack.push(made);
        }
        true
    }

    /// The keymap context of the keyboard now: the topmost component's that has the
    /// keyboard, else the focused pane's (the composer's popup while it is open).
    pub(super) fn key_context(&self) -> Context {
        self.stack
            .context(self.focus)
            .unwrap_or_else(|| self.pane_context())
    }

    /// The focused pane's context.
    pub(super) fn pane_context(&self) -> Context {
        match self.focus {
            Focus::Tree => Context::Tree,
            Focus::Chat => Context::Chat,
            Focus::Composer if self.prompt.popup.is_some() => Context::Palette,
            Focus::Composer => Context::Composer,
        }
    }

    /// Walks the stack from the top with a key; returns whether a component took it
    /// (a modal one takes every key; `global.quit` it passes to [`App::act`]).
    pub(super) fn stack_key(&mut self, key: &KeyEvent, binding: &KeyBinding) -> bool {
        for slot in self.stack.order() {
            let Some(c) = self.stack.get(slot) else {
                continue;
            };
            let modal = c.modal();
            let action = c
                .context(self.focus)
                .and_then(|k| self.keymap.resolve(k, binding));
            match self.with_component(slot, |c, cx| c.handle_key(key, binding, action, cx)) {
                Some(KeyOutcome::Consumed) => return true,
                Some(KeyOutcome::Emit(a)) => {
                    self.apply(a);
                    return true;
                }
                Some(KeyOutcome::Ignored) | None if modal => {
                    if action == Some(Action::Quit) {
                        self.act(Action::Quit);
                    }
                    return true;
                }
                Some(KeyOutcome::Ignored) | None => {}
            }
        }
        false
    }

    /// Walks the stack from the top with a paste; returns whether a component took it.
    pub(super) fn stack_paste(&mut self, text: &str) -> bool {
        self.stack
            .order()
            .into_iter()
            .any(|slot| self.with_component(slot, |c, cx| c.paste(text, cx)) == Some(true))
    }

    /// Walks the stack from the top with a wheel notch; returns whether a component
    /// scrolled.
    pub(super) fn stack_wheel(&mut self, up: bool, pos: ratatui::layout::Position) -> bool {
        self.stack
            .order()
            .into_iter()
            .any(|slot| self.with_component(slot, |c, cx| c.wheel(up, pos, cx)) == Some(true))
    }

    /// Every component's update step before a frame with `panes`.
    pub(super) fn stack_layout(&mut self, panes: &Panes) {
        for slot in self.stack.order() {
            self.with_component(slot, |c, cx| c.layout(panes, cx));
        }
    }

    /// Draws the components bottom up.
    pub(super) fn draw_stack(&self, frame: &mut Frame<'_>, panes: &Panes) {
        let cx = DrawCtx {
            keymap: &self.keymap,
            theme: &self.theme,
            registry: &self.registry,
            tree: &self.tree,
            thread: self.thread.as_ref(),
            reload_mark: self.status.reload_mark.as_ref(),
            now: self.clock.now(),
        };
        for slot in self.stack.order().into_iter().rev() {
            if let Some(c) = self.stack.get(slot) {
                c.draw(frame, panes, &cx);
            }
        }
    }
}
