//! The publisher of one job's stream to its root (issue 38 item 8): a task that takes
//! what the job sends in order, joins streamed deltas (`batch`), publishes without
//! waiting for each acknowledgement, and reads the acknowledgements in order behind the
//! publishes.
//!
//! Owns: [`Pipe`] — packing the events handed over within [`PACK_AFTER`] of each other
//! into one [`WorkerMsg::Events`] (up to [`PACK_BYTES`]; only when the root takes them,
//! `Job::packed_events`: a trivial sub-session's dozen events then cross NATS as one or
//! two messages, each signed, stored, delivered and checked once; when the root takes
//! [`WorkerMsg::Many`], `Job::packed_many`, a first delivery's `Started` opens the
//! first pack and the run's end closes the last, so a short run is one message),
//! numbering, signing and naming each published message (`Arbor-Seq` from 0, the run's
//! signature, the message id `<session token>-r<run>-e<epoch>-<n>`), the window of
//! messages published and not yet acknowledged (at most [`WINDOW`]), the flush of a
//! held delta when it is due, waiting for everything before a [`Item::Sync`] message to
//! be stored, and recovering from a failed publish: the acknowledgements still out are
//! read, then every message from the failed one on that the stream did not confirm is
//! published again in order with its own id (the stream's duplicate window drops a copy
//! it already stored), [`ATTEMPTS`] attempts each with 0.2 s doubling to 2 s between
//! them (about 17 s: longer than a stream leader's election, so a failover costs no ack
//! wait; issue 38 item 5). Messages of one connection reach the stream in the order
//! they were published, so the root's fence (a sequence number above the last applied)
//! sees them in order; the one case recovery cannot put back in order — a message
//! stored only by its retry after a later one was stored — gives the job up like a
//! publish that never works (the lease is dropped, the job is redelivered). Once the
//! lease is lost (`stale`) nothing more is published and nothing is waited for. Does
//! not own: what is sent (`job`), the coalescing rule (`batch`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{
    self, context::PublishError, message::PublishMessage, publish::PublishAck,
};
use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesOrdered;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Sent;
use super::batch::Batch;
use crate::remote::RemoteError;
use crate::remote::seal::{self, Signer};
use crate::remote::wire::WorkerMsg;
use crate::session::Event;

/// How many times one message is published before the job gives up on its root.
const ATTEMPTS: u32 = 12;
/// The longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// The first wait between attempts (doubling).
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// How many messages may be published and not yet acknowledged; the next publish
/// waits for the oldest acknowledgement.
pub(crate) const WINDOW: usize = 256;
/// How long an event waits for the ones that follow it before its pack goes out: the
/// root sees every event at most this much later than unpacked.
pub(crate) const PACK_AFTER: Duration = Duration::from_millis(10);
/// The size (bytes of JSON) past which a pack goes out before the next event joins it;
/// a pack is larger only when one event alone is.
pub(crate) const PACK_BYTES: usize = 64 * 1024;

/// What the job hands the publisher, in order.
pub(crate) enum Item {
    /// One event of the session: a delta may be joined with the next ones.
    Event(Box<Event>),
    /// A message whose storing the job waits for (`Started`, `Done`, `Failed`):
    /// published after everything before it, answered once all of it is stored.
    Sync(Box<WorkerMsg>, oneshot::Sender<Result<Sent, RemoteError>>),
    /// A first delivery's `Started` when the root takes [`WorkerMsg::Many`]: it opens
    /// the next pack, and the job does not wait for it.
    Lead(Box<WorkerMsg>),
}

/// The lease side the publisher shares with the job: `stale` cancelled once nothing
/// more may be sent, `lost` set when that is because the lease (or the root) is lost.
#[derive(Clone)]
pub(crate) struct Quiet {
    pub stale: CancellationToken,
    pub lost: Arc<AtomicBool>,
}

impl Quiet {
    /// The lease is lost (or the root unreachable): nothing more is sent.
    pub fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
        self.stale.cancel();
    }
}

/// Who publishes and how each message is named and signed.
pub(crate) struct Channel {
    pub js: jetstream::Context,
    pub subject: String,
    pub id_prefix: String,
    pub session: String,
    pub epoch: u64,
    pub worker: String,
    pub signer: Arc<Signer>,
    /// What the root takes packed.
    pub packing: super::Packing,
}

/// What waits to go out as one message: a first delivery's `Started` (`lead`) and
/// events (their JSON, comma-separated, for one [`WorkerMsg::Events`]), and when the
/// pack is due.
#[derive(Default)]
struct Pack {
    lead: Option<Vec<u8>>,
    json: Vec<u8>,
    count: usize,
    due: Option<Instant>,
}

impl Pack {
    /// Adds `event` (serialized) at `now`; the pack is due [`PACK_AFTER`] after what
    /// came first into it.
    fn add(&mut self, event: &[u8], now: Instant) {
        if self.count > 0 {
            self.json.push(b',');
        }
        self.json.extend_from_slice(event);
        self.count += 1;
        self.due.get_or_insert(now + PACK_AFTER);
    }

    /// Puts `msg` (a serialized `Started`) before the events, at `now`: it goes out
    /// with what follows it within [`PACK_AFTER`], or alone then.
    fn lead(&mut self, msg: Vec<u8>, now: Instant) {
        self.lead = Some(msg);
        self.due.get_or_insert(now + PACK_AFTER);
    }

    /// Whether an event of `more` bytes (and its comma) would take the pack past
    /// [`PACK_BYTES`].
    fn full_with(&self, more: usize) -> bool {
        self.count > 0 && self.json.len() + 1 + more > PACK_BYTES
    }

    /// The pack as one message body: the lead or the [`WorkerMsg::Events`] alone, or
    /// both as a [`WorkerMsg::Many`] (the wire's `kind` tags spelled as serde spells
    /// them); `None` when empty.
    fn take(&mut self) -> Option<Vec<u8>> {
        let parts = self.parts();
        many(parts)
    }

    /// The pack closed by `end` (a serialized `Done` or `Failed`) as one message
    /// body: `end` alone when the pack is empty, else a [`WorkerMsg::Many`].
    fn take_with(&mut self, end: Vec<u8>) -> Vec<u8> {
        let mut parts = self.parts();
        parts.push(end);
        many(parts).unwrap_or_default()
    }

    /// The lead and the events message, emptying the pack.
    fn parts(&mut self) -> Vec<Vec<u8>> {
        let taken = std::mem::take(self);
        let mut parts: Vec<Vec<u8>> = taken.lead.into_iter().collect();
        if taken.count > 0 {
            let head = br#"{"kind":"events","events":["#;
            let mut events = Vec::with_capacity(head.len() + taken.json.len() + 2);
            events.extend_from_slice(head);
            events.extend_from_slice(&taken.json);
            events.extend_from_slice(b"]}");
            parts.push(events);
        }
        parts
    }
}

/// `parts` (serialized messages) as one body: the only one as itself, more as a
/// [`WorkerMsg::Many`]; `None` for none.
fn many(mut parts: Vec<Vec<u8>>) -> Option<Vec<u8>> {
    if parts.len() <= 1 {
        return parts.pop();
    }
    let len: usize = parts.iter().map(|p| p.len() + 1).sum();
    let mut body = Vec::with_capacity(len + 24);
    body.extend_from_slice(br#"{"kind":"many","msgs":["#);
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(part);
    }
    body.extend_from_slice(b"]}");
    Some(body)
}

/// One published message, kept until the stream acknowledged it.
struct Record {
    id: String,
    body: Bytes,
    headers: HeaderMap,
}

type Ack = BoxFuture<'static, Result<PublishAck, PublishError>>;

/// The publisher of one job (see the module doc).
pub(crate) struct Pipe {
    channel: Channel,
    quiet: Quiet,
    /// The next sequence number.
    next: u64,
    batch: Batch,
    pack: Pack,
    /// Published, not yet acknowledged, oldest first; `acks` holds their
    /// acknowledgements in the same order.
    flight: VecDeque<Record>,
    acks: FuturesOrdered<Ack>,
    /// Why the job gave up on its root, once it did.
    failed: Option<String>,
}

impl Pipe {
    /// A publisher on `channel`, quiet by `quiet`.
    pub fn new(channel: Channel, quiet: Quiet) -> Self {
        Self {
            channel,
            quiet,
            next: 0,
            batch: Batch::default(),
            pack: Pack::default(),
            flight: VecDeque::new(),
            acks: FuturesOrdered::new(),
            failed: None,
        }
    }

    /// Publishes what comes from `items` until the job drops its end or the lease is
    /// lost; a [`Item::Sync`] still waiting then hears nothing (its sender is dropped).
    pub async fn run(mut self, mut items: mpsc::UnboundedReceiver<Item>) {
        loop {
            let (due, packed) = (self.batch.due(), self.pack.due);
            tokio::select! {
                biased;
                () = self.quiet.stale.cancelled() => break,
                () = until(due), if due.is_some() => {
                    if let Some(event) = self.batch.take(Instant::now()) {
                        self.publish_event(event).await;
                    }
                }
                () = until(packed), if packed.is_some() => self.publish_pack().await,
                Some(ack) = self.acks.next(), if !self.acks.is_empty() => self.acked(ack).await,
                item = items.recv() => match item {
                    Some(Item::Event(event)) => {
                        for event in self.batch.push(*event, Instant::now()) {
                            self.publish_event(event).await;
                        }
                    }
                    Some(Item::Sync(msg, answer)) => {
                        let sent = self.sync(&msg).await;
                        let _ = answer.send(sent);
                    }
                    Some(Item::Lead(msg)) => self.lead(&msg).await,
                    None => break,
                },
            }
        }
        // The job dropped its end after its last `Sync` (`Done`, `Failed`), which took
        // everything held before it: what came after is not the run's to send.
    }

    /// Publishes everything held and `msg`, and waits until all of it is stored:
    /// [`Sent::Stored`], [`Sent::Quiet`] when the lease was lost first.
    ///
    /// Errors: [`RemoteError::Json`] when `msg` does not serialize;
    /// [`RemoteError::Nats`] when a message could not be stored.
    async fn sync(&mut self, msg: &WorkerMsg) -> Result<Sent, RemoteError> {
        if let Some(event) = self.batch.take(Instant::now()) {
            self.publish_event(event).await;
        }
        let body = serde_json::to_vec(msg)?;
        let ends = matches!(msg, WorkerMsg::Done { .. } | WorkerMsg::Failed { .. });
        let body = if ends && self.channel.packing.many {
            // The run's end closes the last pack: one message for all of it.
            self.pack.take_with(body)
        } else {
            self.publish_pack().await;
            body
        };
        let queued = self.publish(body).await;
        while !self.acks.is_empty() {
            tokio::select! {
                biased;
                () = self.quiet.stale.cancelled() => break,
                Some(ack) = self.acks.next() => self.acked(ack).await,
            }
        }
        if let Some(error) = &self.failed {
            return Err(RemoteError::nats(
                format!("cannot publish on {}", self.channel.subject),
                error.clone(),
            ));
        }
        Ok(if queued && self.flight.is_empty() {
            Sent::Stored
        } else {
            Sent::Quiet
        })
    }

    /// Publishes `event`: packed with its neighbours when the channel is `packed`
    /// (the pack going out first when `event` would overfill it), else at once.
    async fn publish_event(&mut self, event: Event) {
        if !self.channel.packing.events {
            let msg = WorkerMsg::Event {
                event: Box::new(event),
            };
            match serde_json::to_vec(&msg) {
                Ok(body) => {
                    self.publish(body).await;
                }
                Err(e) => self.give_up(format!("an event does not serialize: {e}")),
            }
            return;
        }
        match serde_json::to_vec(&event) {
            Ok(json) => {
                if self.pack.full_with(json.len()) {
                    self.publish_pack().await;
                }
                self.pack.add(&json, Instant::now());
            }
            Err(e) => self.give_up(format!("an event does not serialize: {e}")),
        }
    }

    /// Opens the next pack with `msg` (what is held goes out first).
    async fn lead(&mut self, msg: &WorkerMsg) {
        if let Some(event) = self.batch.take(Instant::now()) {
            self.publish_event(event).await;
        }
        self.publish_pack().await;
        match serde_json::to_vec(msg) {
            Ok(body) => self.pack.lead(body, Instant::now()),
            Err(e) => self.give_up(format!("a message does not serialize: {e}")),
        }
    }

    /// Publishes the pack, if anything is in it.
    async fn publish_pack(&mut self) {
        if let Some(body) = self.pack.take() {
            self.publish(body).await;
        }
    }

    /// Publishes `body` as the next message without waiting for its acknowledgement
    /// (the oldest one first when [`WINDOW`] are out); `false` when nothing may be
    /// published any more.
    async fn publish(&mut self, body: Vec<u8>) -> bool {
        while self.flight.len() >= WINDOW && self.open() {
            if let Some(ack) = self.acks.next().await {
                self.acked(ack).await;
            }
        }
        if !self.open() {
            return false;
        }
        let n = self.next;
        self.next += 1;
        let c = &self.channel;
        let headers = seal::headers(&c.signer, (&c.session, c.epoch, n), &c.worker, &body);
        let record = Record {
            id: format!("{}-{n}", c.id_prefix),
            body: body.into(),
            headers,
        };
        let ack = self.channel.send(&record).await;
        self.flight.push_back(record);
        self.acks.push_back(ack);
        true
    }

    /// Whether messages may still be published.
    fn open(&self) -> bool {
        self.failed.is_none() && !self.quiet.stale.is_cancelled()
    }

    /// The oldest message's acknowledgement: stored, or the recovery.
    async fn acked(&mut self, ack: Result<PublishAck, PublishError>) {
        match ack {
            Ok(_) => {
                self.flight.pop_front();
            }
            Err(e) => self.recover(e.to_string()).await,
        }
    }

    /// The oldest message failed with `error` (see the module doc): waits for the
    /// acknowledgements still out, then publishes again, in order and one at a time,
    /// every message the stream did not confirm.
    async fn recover(&mut self, error: String) {
        tracing::warn!(
            subject = %self.channel.subject,
            attempt = 1,
            "worker: publishing to the root failed: {error}"
        );
        let mut stored = vec![false];
        loop {
            tokio::select! {
                biased;
                () = self.quiet.stale.cancelled() => return,
                ack = self.acks.next() => match ack {
                    Some(ack) => stored.push(ack.is_ok()),
                    None => break,
                },
            }
        }
        let records: Vec<Record> = self.flight.drain(..).collect();
        for (i, record) in records.iter().enumerate() {
            if stored.get(i).copied().unwrap_or(false) {
                continue;
            }
            match retry((&self.channel, &self.quiet), record, &error).await {
                Retried::Stored(ack) => {
                    let later = stored.get(i + 1..).is_some_and(|s| s.contains(&true));
                    if !ack.duplicate && later {
                        self.give_up(format!(
                            "message {} was stored after a later one (the connection dropped between them)",
                            record.id
                        ));
                        return;
                    }
                }
                Retried::Quiet => return,
                Retried::Failed(last) => {
                    self.give_up(last);
                    return;
                }
            }
        }
    }

    /// The root cannot be reached (or the order cannot be kept): nothing more is
    /// sent, and the job goes quiet (its turn is cancelled, the job left for
    /// redelivery).
    fn give_up(&mut self, why: String) {
        tracing::warn!(subject = %self.channel.subject, "worker: {why}; stopping the job");
        self.failed = Some(why);
        self.flight.clear();
        self.acks = FuturesOrdered::new();
        self.quiet.lose();
    }
}

impl Channel {
    /// Hands `record` to the connection; its acknowledgement to wait for (an error at
    /// once when it could not be handed over).
    async fn send(&self, record: &Record) -> Ack {
        let publish = PublishMessage::build()
            .payload(record.body.clone())
            .headers(record.headers.clone())
            .message_id(&record.id);
        match self.js.send_publish(self.subject.clone(), publish).await {
            Ok(ack) => Box::pin(ack.into_future()),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

/// Publishes `record` again on `channel` and waits for its acknowledgement, attempts
/// 2 to [`ATTEMPTS`] (attempt 1 failed with `first`), waiting 0.2 s doubling (to
/// [`MAX_BACKOFF`]) before each; [`Retried::Quiet`] once `quiet` says the lease is lost.
async fn retry((channel, quiet): (&Channel, &Quiet), record: &Record, first: &str) -> Retried {
    let mut backoff = FIRST_BACKOFF;
    let mut last = first.to_string();
    for attempt in 2..=ATTEMPTS {
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = quiet.stale.cancelled() => return Retried::Quiet,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
        match channel.send(record).await.await {
            Ok(ack) => return Retried::Stored(ack),
            Err(e) => {
                tracing::warn!(
                    subject = %channel.subject,
                    attempt,
                    "worker: publishing to the root failed: {e}"
                );
                last = e.to_string();
            }
        }
    }
    Retried::Failed(last)
}

/// How a message published again ended.
enum Retried {
    Stored(PublishAck),
    /// The lease was lost meanwhile.
    Quiet,
    /// Every attempt failed: the last error.
    Failed(String),
}

/// Sleeps until `due` (never when `None`).
async fn until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::{ContentBlockDeltaEvent, DeltaKind};
    use crate::session::{EngineEvent, Event};

    fn delta(text: &str) -> Event {
        Event::new(
            "s",
            Some("parent"),
            EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent {
                delta: text.into(),
                kind: DeltaKind::Text,
            }),
        )
    }

    #[test]
    fn a_pack_is_the_root_s_events_message_with_its_events_in_order() {
        let t0 = Instant::now();
        let mut pack = Pack::default();
        assert!(pack.take().is_none(), "nothing to send");
        let events: Vec<Event> = ["a", "b\"c", "ü"].into_iter().map(delta).collect();
        for (i, event) in events.iter().enumerate() {
            let at = t0 + Duration::from_millis(i as u64);
            pack.add(&serde_json::to_vec(event).unwrap(), at);
        }
        assert_eq!(pack.due, Some(t0 + PACK_AFTER), "due after the first one");
        let body = pack.take().unwrap();
        let msg: WorkerMsg = serde_json::from_slice(&body).unwrap();
        assert_eq!(msg, WorkerMsg::Events { events });
        assert!(pack.take().is_none() && pack.due.is_none(), "emptied");
    }

    #[test]
    fn a_lead_and_the_runs_end_join_a_pack_as_the_root_s_many_message() {
        let t0 = Instant::now();
        let started = WorkerMsg::Started {
            ran_on: crate::remote::wire::RanOn {
                worker: "w-1".into(),
                host: "h".into(),
                pid: 7,
            },
            epoch: 3,
            attempt: 1,
        };
        let end = WorkerMsg::Failed {
            run: 2,
            error: "no \"provider\"".into(),
        };
        let json = |m: &WorkerMsg| serde_json::to_vec(m).unwrap();
        let parse = |b: Vec<u8>| serde_json::from_slice::<WorkerMsg>(&b).unwrap();
        let events: Vec<Event> = ["a", "b"].into_iter().map(delta).collect();
        let mut pack = Pack::default();
        // Nothing held: the end alone, as itself.
        assert_eq!(parse(pack.take_with(json(&end))), end);
        // A lead alone goes out as itself, when due.
        pack.lead(json(&started), t0);
        assert_eq!(pack.due, Some(t0 + PACK_AFTER));
        assert_eq!(parse(pack.take().unwrap()), started);
        assert!(pack.take().is_none() && pack.due.is_none(), "emptied");
        // The lead, the events and the end: one message, in that order.
        pack.lead(json(&started), t0);
        for event in &events {
            pack.add(&json_event(event), t0 + Duration::from_millis(3));
        }
        assert_eq!(pack.due, Some(t0 + PACK_AFTER), "due after the lead");
        assert_eq!(
            parse(pack.take_with(json(&end))),
            WorkerMsg::Many {
                msgs: vec![
                    started.clone(),
                    WorkerMsg::Events {
                        events: events.clone()
                    },
                    end
                ]
            }
        );
        // The lead and events without an end (due, or before a `Reserve`).
        pack.lead(json(&started), t0);
        pack.add(&json_event(&events[0]), t0);
        assert_eq!(
            parse(pack.take().unwrap()),
            WorkerMsg::Many {
                msgs: vec![
                    started,
                    WorkerMsg::Events {
                        events: vec![events[0].clone()]
                    }
                ]
            }
        );
    }

    fn json_event(event: &Event) -> Vec<u8> {
        serde_json::to_vec(event).unwrap()
    }

    #[test]
    fn a_pack_is_full_before_it_passes_its_size_unless_one_event_is_larger() {
        let mut pack = Pack::default();
        let big = vec![b'x'; PACK_BYTES + 1];
        assert!(!pack.full_with(big.len()), "an empty pack takes any event");
        pack.add(b"{}", Instant::now());
        assert!(!pack.full_with(PACK_BYTES - 3));
        assert!(pack.full_with(PACK_BYTES - 2), "one byte more than fits");
    }
}
