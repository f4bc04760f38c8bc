//! The in-process event bus: one broadcast channel per watched task, created on the first
//! subscription and dropped when nobody watches any more (the mini-redis `db.rs` model).

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot};

use crate::record::StoredEvent;
use crate::traits::{EventBus, StoreResult};

/// How many events a slow subscriber may fall behind before it must refill from the log.
const CHANNEL_CAPACITY: usize = 256;

/// How far the all-tasks channel may run ahead of its slowest receiver.
const ALL_CAPACITY: usize = 8192;

#[derive(Debug)]
pub struct LocalBus {
    channels: Mutex<HashMap<String, broadcast::Sender<StoredEvent>>>,
    turn_watchers: Mutex<HashMap<String, Vec<oneshot::Sender<()>>>>,
    all: broadcast::Sender<StoredEvent>,
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
        channels.retain(|_, sender| sender.receiver_count() > 0);
        channels
            .entry(task_id.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe()
    }

    /// Number of tasks currently watched.
    pub fn watched(&self) -> usize {
        self.channels.lock().len()
    }
}

#[async_trait::async_trait]
impl EventBus for LocalBus {
    fn publish(&self, event: &StoredEvent) {
        if self.all.receiver_count() > 0 {
            let _ = self.all.send(event.clone());
        }
        let mut channels = self.channels.lock();
        let Some(sender) = channels.get(&event.task_id) else {
            return;
        };
        if sender.send(event.clone()).is_err() {
            // Every receiver is gone: forget the channel so idle tasks cost nothing.
            channels.remove(&event.task_id);
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
            event: StreamResponse::Message(Message::agent_text("x")),
            traceparent: None,
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
        assert_eq!(
            bus.watched(),
            1,
            "b's channel stays until the next subscribe sweeps it"
        );
        let _c = bus.subscribe_now("c");
        assert_eq!(bus.watched(), 1);
    }
}
