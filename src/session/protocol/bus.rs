//! The one in-process event bus (SPEC §7: "all sessions of a process publish to one
//! in-process event bus that the TUI and headless output subscribe to").
//!
//! Unbounded per subscriber on purpose: a subscriber that falls behind must never lose
//! a `content_block:delta` (the TUI would show a gap), and every producer is bounded by
//! the turn loop anyway.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::Event;

/// The process-wide event bus: every session publishes here; the TUI, headless output
/// and the store writers subscribe. Cheap to clone (an `Arc` inside).
#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<Sink>>>,
}

/// One subscriber: called with each event, in publish order, on the publishing
/// thread; `false` once it is gone (then it is dropped).
type Sink = Box<dyn Fn(Arc<Event>) -> bool + Send>;

impl EventBus {
    /// A bus with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers `event` to every live subscriber; closed subscribers are dropped.
    pub fn publish(&self, event: Event) {
        let event = Arc::new(event);
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.retain(|deliver| deliver(event.clone()));
        }
    }

    /// A new subscription receiving every event published from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<Event>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribe_with(move |event| tx.send(event).is_ok());
        rx
    }

    /// Subscribes `deliver`, called with every event published from now on, in order,
    /// on the publishing thread while the bus is locked (so it must not block or
    /// publish); it returns `false` once its receiver is gone. What lets a front end's
    /// one stream carry events and command replies in the order they happened
    /// (`engine::handle::stream`).
    pub fn subscribe_with(&self, deliver: impl Fn(Arc<Event>) -> bool + Send + 'static) {
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.push(Box::new(deliver));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::{CancelCompletedEvent, CancelRequestedEvent, EngineEvent};

    #[tokio::test]
    async fn every_subscriber_gets_every_event() {
        let bus = EventBus::new();
        let mut a = bus.subscribe();
        let mut b = bus.subscribe();
        let requested = EngineEvent::CancelRequested(CancelRequestedEvent {});
        bus.publish(Event::new("s1", None, requested.clone()));
        assert_eq!(a.recv().await.unwrap().session_id, "s1");
        assert_eq!(b.recv().await.unwrap().msg, requested);
        drop(a);
        let completed = EngineEvent::CancelCompleted(CancelCompletedEvent {});
        bus.publish(Event::new("s1", None, completed.clone()));
        assert_eq!(b.recv().await.unwrap().msg, completed);
    }
}
