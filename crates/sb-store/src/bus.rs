//! The in-process event bus: one broadcast channel per watched task, created on the first
//! subscription and dropped when nobody watches any more (the mini-redis `db.rs` model).

use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot};

use crate::record::{EventNotice, StoredEvent};
use crate::traits::{EventBus, StoreResult};
use crate::watchers::Watchers;

/// How many events a slow subscriber may fall behind before it must refill from the log.
/// Small on purpose: a channel's slots are allocated up front, per watched task, and a
/// subscriber that lags reads the log instead, losing nothing.
const CHANNEL_CAPACITY: usize = 8;

/// How far the all-tasks channel may run ahead of its slowest receiver.
const ALL_CAPACITY: usize = 8192;

#[derive(Debug)]
pub struct LocalBus {
    channels: Mutex<Channels>,
    turn_watchers: Mutex<Watchers>,
    end_watchers: Mutex<Watchers>,
    all: broadcast::Sender<EventNotice>,
}

/// The per-task channels, and when to next sweep out the ones nobody watches.
#[derive(Debug, Default)]
struct Channels {
    by_task: crate::IdMap<std::sync::Arc<str>, broadcast::Sender<StoredEvent>>,
    sweep_at: usize,
}

impl Channels {
    /// Drops the channels nobody watches any more (see [`crate::sweep_when_doubled`]).
    fn sweep_if_due(&mut self) {
        crate::sweep_when_doubled(&mut self.by_task, &mut self.sweep_at, |_, sender| {
            sender.receiver_count() > 0
        });
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        LocalBus {
            channels: Mutex::default(),
            turn_watchers: Mutex::default(),
            end_watchers: Mutex::default(),
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
        if event.event.state().is_some_and(|s| s.is_terminal()) {
            let mut ends = self.end_watchers.lock();
            if !ends.is_empty() {
                ends.fire(&event.task_id);
            }
        }
        if self.all.receiver_count() > 0 {
            let _ = self.all.send(EventNotice::from(event));
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
    async fn subscribe_all(&self, _group: &str) -> StoreResult<broadcast::Receiver<EventNotice>> {
        Ok(self.all.subscribe())
    }

    async fn announce_turn_over(&self, turn_key: &str) -> StoreResult<()> {
        self.turn_watchers.lock().fire(turn_key);
        Ok(())
    }

    async fn watch_turn(&self, turn_key: &str) -> StoreResult<oneshot::Receiver<()>> {
        Ok(self.turn_watchers.lock().watch(turn_key))
    }

    async fn watch_end(&self, task_id: &str) -> StoreResult<oneshot::Receiver<()>> {
        Ok(self.end_watchers.lock().watch(task_id))
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

    #[tokio::test]
    async fn a_terminal_event_signals_the_tasks_end_and_others_do_not() {
        use sb_protocol::{TaskState, TaskStatus, TaskStatusUpdateEvent};
        let bus = LocalBus::new();
        let status = |task: &str, state| StoredEvent {
            event: StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task.into(),
                context_id: "c".into(),
                status: TaskStatus {
                    state,
                    message: None,
                    timestamp: None,
                },
                metadata: None,
            })
            .into(),
            ..event(task, 2)
        };
        let mut a = bus.watch_end("a").await.unwrap();
        let mut b = bus.watch_end("b").await.unwrap();
        bus.publish(&event("a", 1));
        bus.publish(&status("a", TaskState::InputRequired));
        assert!(a.try_recv().is_err(), "a message and a wait are no end");
        bus.publish(&status("a", TaskState::Failed));
        assert_eq!(a.try_recv(), Ok(()));
        assert!(b.try_recv().is_err());
    }
}
