//! The in-process event bus: one broadcast channel per watched task, created on the first
//! subscription and dropped when nobody watches any more (the mini-redis `db.rs` model).

use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot};

use crate::record::StoredEvent;
use crate::traits::{EventBus, StoreResult};

/// How many events a slow subscriber may fall behind before it must refill from the log.
/// Small on purpose: a channel's slots are allocated up front, per watched task, and a
/// subscriber that lags reads the log instead, losing nothing.
const CHANNEL_CAPACITY: usize = 8;

/// How far the all-tasks channel may run ahead of its slowest receiver.
const ALL_CAPACITY: usize = 8192;

#[derive(Debug)]
pub struct LocalBus {
    channels: Mutex<Channels>,
    turn_watchers: Mutex<crate::IdMap<String, Vec<oneshot::Sender<()>>>>,
    all: broadcast::Sender<StoredEvent>,
}

/// The per-task channels, and when to next sweep out the ones nobody watches.
#[derive(Debug, Default)]
struct Channels {
    by_task: crate::IdMap<std::sync::Arc<str>, broadcast::Sender<StoredEvent>>,
    sweep_at: usize,
}

impl Channels {
    /// Drops unwatched channels once their number has doubled since the last sweep, so
    /// a subscription costs O(1) amortised, not a walk over every watched task.
    fn sweep_if_due(&mut self) {
        if self.by_task.len() < self.sweep_at {
            return;
        }
        self.by_task.retain(|_, sender| sender.receiver_count() > 0);
        self.sweep_at = (self.by_task.len() * 2).max(64);
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        LocalBus {
            channels: Mutex::default(),
            turn_watchers: Mutex::default(),
            all: broadcast::channel(ALL_CAPACITY).0,
        }
    }
}

impl LocalBus {
    pub fn new() -> LocalBus {
        LocalBus::default()
    }

    /// [`EventBus::subscribe`] without the `async`: the local bus is in place at once.
    pub fn subscribe_now(&self, task_id: &str) -> broadcast::Receiver<StoredEvent> {
        let mut channels = self.channels.lock();
        channels.sweep_if_due();
        if let Some(sender) = channels.by_task.get(task_id) {
            return sender.subscribe();
        }
        let (sender, receiver) = broadcast::channel(CHANNEL_CAPACITY);
        channels.by_task.insert(task_id.into(), sender);
        receiver
    }

    /// Number of tasks currently watched.
    pub fn watched(&self) -> usize {
        let channels = self.channels.lock();
        channels
            .by_task
            .values()
            .filter(|sender| sender.receiver_count() > 0)
            .count()
    }
}

#[async_trait::async_trait]
impl EventBus for LocalBus {
    fn publish(&self, event: &StoredEvent) {
        if self.all.receiver_count() > 0 {
            let _ = self.all.send(event.clone());
        }
        let mut channels = self.channels.lock();
        let Some(sender) = channels.by_task.get(&event.task_id) else {
            return;
        };
        if sender.send(event.clone()).is_err() {
            // Every receiver is gone: forget the channel so idle tasks cost nothing.
            channels.by_task.remove(&event.task_id);
        }
    }

    async fn subscribe(&self, task_id: &str) -> StoreResult<broadcast::Receiver<StoredEvent>> {
        Ok(self.subscribe_now(task_id))
    }

    /// In one process every group has one member, so each subscriber sees every event.
    async fn subscribe_all(&self, _group: &str) -> StoreResult<broadcast::Receiver<StoredEvent>> {
        Ok(self.all.subscribe())
    }

    async fn announce_turn_over(&self, turn_key: &str) -> StoreResult<()> {
        let watchers = self.turn_watchers.lock().remove(turn_key);
        for watcher in watchers.into_iter().flatten() {
            let _ = watcher.send(());
        }
        Ok(())
    }

    async fn watch_turn(&self, turn_key: &str) -> StoreResult<oneshot::Receiver<()>> {
        let (sender, receiver) = oneshot::channel();
        let mut watchers = self.turn_watchers.lock();
        // Forget watchers whose waiter gave up, so abandoned waits cost nothing.
        watchers.retain(|_, list| {
            list.retain(|w| !w.is_closed());
            !list.is_empty()
        });
        watchers
            .entry(turn_key.to_owned())
            .or_default()
            .push(sender);
        Ok(receiver)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sb_protocol::{Message, StreamResponse};

    fn event(task: &str, seq: u64) -> StoredEvent {
        StoredEvent {
            task_id: task.into(),
            seq,
            event: StreamResponse::Message(Message::agent_text("x")).into(),
            traceparent: None,
            json: Default::default(),
        }
    }

    #[tokio::test]
    async fn delivers_to_watchers_of_that_task_only() {
        let bus = LocalBus::new();
        let mut a = bus.subscribe_now("a");
        let mut b = bus.subscribe_now("b");
        bus.publish(&event("a", 1));
        assert_eq!(a.recv().await.unwrap().seq, 1);
        assert!(b.try_recv().is_err());
        drop(a);
        drop(b);
        bus.publish(&event("a", 2));
        assert_eq!(bus.channels.lock().by_task.len(), 1, "a's went on publish");
        assert_eq!(bus.watched(), 0);
        let _c = bus.subscribe_now("c");
        assert_eq!(bus.watched(), 1);
    }

    #[tokio::test]
    async fn unwatched_channels_are_swept_as_subscriptions_come_and_go() {
        let bus = LocalBus::new();
        let kept = bus.subscribe_now("kept");
        for i in 0..10_000 {
            drop(bus.subscribe_now(&format!("t{i}")));
        }
        let held = bus.channels.lock().by_task.len();
        assert!(held <= 128, "{held} channels held for 1 watched task");
        assert_eq!(bus.watched(), 1);
        drop(kept);
    }
}
