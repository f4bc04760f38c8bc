//! The fan-out service: turns a task's durable event log plus the live event bus into
//! one ordered stream per subscriber, from any sequence number.
//!
//! # Layout
//! - [`Fanout`]: the trait the gateway streams from (in process now, over gRPC later).
//! - [`LocalFanout`]: log replay, then live events from the bus, switching over by
//!   comparing sequence numbers: the bus only wakes the reader, the log is the order, so
//!   there is no gap and no duplicate however events race or a subscriber lags.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use sb_protocol::A2AError;
use sb_store::{EventBus, StoredEvent};
use sb_tasks::TaskService;
use tokio::sync::broadcast;

/// Events read from the log per refill.
const REPLAY_BATCH: usize = 256;

pub type EventStream = BoxStream<'static, Result<StoredEvent, A2AError>>;

/// Subscriptions to task events.
pub trait Fanout: Send + Sync + std::fmt::Debug + 'static {
    /// Every event of `task_id` with `seq > after`, in order, then live events. The stream
    /// only ends if the bus closes or the log cannot be read (one error item, then end).
    fn subscribe(&self, task_id: &str, after: u64) -> EventStream;
}

#[derive(Debug, Clone)]
pub struct LocalFanout {
    tasks: Arc<dyn TaskService>,
    bus: Arc<dyn EventBus>,
    served: Family<SourceLabel, Counter>,
    counters: Served,
}

/// The family's two counters, looked up once: an event is counted per subscriber, and a
/// family lookup takes a lock and hashes the label.
#[derive(Debug, Clone)]
struct Served {
    from_log: Counter,
    live: Counter,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct SourceLabel {
    /// `log`: replayed (a resume, a late subscriber, a lagging one refilling); `live`:
    /// straight from the bus.
    source: &'static str,
}

impl LocalFanout {
    pub fn new(tasks: Arc<dyn TaskService>, bus: Arc<dyn EventBus>) -> LocalFanout {
        let served = Family::<SourceLabel, Counter>::default();
        let counter = |source| served.get_or_create(&SourceLabel { source }).clone();
        let counters = Served {
            from_log: counter("log"),
            live: counter("live"),
        };
        LocalFanout {
            tasks,
            bus,
            served,
            counters,
        }
    }

    /// Events served by source: how much subscribers read from the log to catch up
    /// (the replay lag) against what reached them live.
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "switchboard_fanout_events",
            "Task events served to subscribers, by source (log replay or live)",
            self.served.clone(),
        );
    }
}

// A short-lived return value, never stored, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Next {
    Event(Option<Result<StoredEvent, A2AError>>),
    Resubscribe,
}

struct Cursor {
    task_id: String,
    last: u64,
    backlog: VecDeque<StoredEvent>,
    /// The log may hold more than the backlog: read it before waiting on the bus.
    more_in_log: bool,
    /// Taken on the first read, before the log is read.
    live: Option<broadcast::Receiver<StoredEvent>>,
    bus: Arc<dyn EventBus>,
    tasks: Arc<dyn TaskService>,
    failed: bool,
    served: Served,
}

impl Cursor {
    async fn refill(&mut self) -> Result<(), A2AError> {
        let events = self
            .tasks
            .events_after(&self.task_id, self.last, REPLAY_BATCH)
            .await?;
        self.more_in_log = events.len() == REPLAY_BATCH;
        self.backlog.extend(events);
        Ok(())
    }

    async fn next(&mut self) -> Option<Result<StoredEvent, A2AError>> {
        if self.failed {
            return None;
        }
        loop {
            let mut live = match self.live.take() {
                Some(live) => live,
                // Subscribe before reading the log, so nothing committed in between is missed.
                None => match self.bus.subscribe(&self.task_id).await {
                    Ok(live) => {
                        self.more_in_log = true;
                        live
                    }
                    Err(e) => {
                        self.failed = true;
                        tracing::error!(task_id = %self.task_id, error = %e, "cannot follow task events");
                        return Some(Err(A2AError::internal(
                            "live task events are unavailable; resume with Last-Event-ID",
                        )
                        .retryable(true)));
                    }
                },
            };
            match self.next_event(&mut live).await {
                Next::Event(event) => {
                    self.live = Some(live);
                    return event;
                }
                // The bus dropped this subscription (e.g. its Redis connection was
                // replaced): subscribe again and read the log for what was in flight.
                Next::Resubscribe => {}
            }
        }
    }

    async fn next_event(&mut self, live: &mut broadcast::Receiver<StoredEvent>) -> Next {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.seq <= self.last {
                    continue;
                }
                self.last = event.seq;
                self.served.from_log.inc();
                return Next::Event(Some(Ok(event)));
            }
            if self.more_in_log {
                if let Err(e) = self.refill().await {
                    self.failed = true;
                    return Next::Event(Some(Err(e)));
                }
                continue;
            }
            match live.recv().await {
                Ok(event) if event.seq <= self.last => continue,
                Ok(event) if event.seq == self.last + 1 => {
                    self.last = event.seq;
                    self.served.live.inc();
                    return Next::Event(Some(Ok(event)));
                }
                // A gap (events published out of order) or a lagging subscriber: the
                // log has everything, read it.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    if let Err(e) = self.refill().await {
                        self.failed = true;
                        return Next::Event(Some(Err(e)));
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return Next::Resubscribe,
            }
        }
    }
}

impl Fanout for LocalFanout {
    fn subscribe(&self, task_id: &str, after: u64) -> EventStream {
        let cursor = Cursor {
            task_id: task_id.to_owned(),
            last: after,
            backlog: VecDeque::new(),
            more_in_log: true,
            live: None,
            bus: self.bus.clone(),
            tasks: self.tasks.clone(),
            failed: false,
            served: self.counters.clone(),
        };
        stream::unfold(cursor, |mut cursor| async move {
            let item = cursor.next().await?;
            Some((item, cursor))
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sb_protocol::{Message, Role, TaskState};
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope, TaskUpdate};

    fn setup() -> (Arc<LocalTaskService>, LocalFanout) {
        let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            bus.clone(),
        ));
        let fanout = LocalFanout::new(tasks.clone(), bus);
        (tasks, fanout)
    }

    async fn new_task(tasks: &LocalTaskService) -> String {
        let message = Message {
            role: Role::User,
            ..Message::agent_text("hi")
        };
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        tasks
            .create(NewTask {
                scope,
                message,
                metadata: None,
            })
            .await
            .unwrap()
            .task
            .id
    }

    fn working() -> TaskUpdate {
        TaskUpdate::Status {
            state: TaskState::Working,
            message: Some(Message::agent_text("step")),
            metadata: None,
        }
    }

    /// Counts of events served from the log and live, as the metric reports them.
    fn served(registry: &prometheus_client::registry::Registry) -> (u64, u64) {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        let count = |source: &str| {
            let prefix = format!("switchboard_fanout_events_total{{source=\"{source}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .map_or(0, |n| n.parse().unwrap())
        };
        (count("log"), count("live"))
    }

    /// Reads the stream's next events up to seq `last`, checking they are `*next`,
    /// `*next + 1`, … with no gap and no duplicate.
    async fn read_through(stream: &mut EventStream, next: &mut u64, last: u64) {
        while *next <= last {
            let ev = stream.next().await.unwrap().unwrap();
            assert_eq!(ev.seq, *next);
            *next += 1;
        }
    }

    /// A late subscriber replays the log, including what is committed while it replays
    /// (more than the bus buffers), then follows the bus live: every event once, in
    /// order, from both sources.
    #[tokio::test]
    async fn replays_then_goes_live_without_gaps() {
        let (tasks, fanout) = setup();
        let mut registry = prometheus_client::registry::Registry::default();
        fanout.register(&mut registry);
        let id = new_task(&tasks).await;
        for _ in 0..300 {
            tasks.update(&id, working()).await.unwrap();
        }
        let mut stream = fanout.subscribe(&id, 10);
        let mut next = 11;
        // Halfway through the replay, 100 more commits: the log has them, the bus
        // keeps only a few.
        read_through(&mut stream, &mut next, 150).await;
        for _ in 0..100 {
            tasks.update(&id, working()).await.unwrap();
        }
        read_through(&mut stream, &mut next, 401).await;
        // Caught up and waiting on the bus (a reader of its own, run until it waits):
        // each event committed now reaches the subscriber live.
        let (read, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            for seq in 402..=501 {
                read_through(&mut stream, &mut next, seq).await;
                read.send(seq).unwrap();
            }
        });
        for seq in 402..=501 {
            tokio::task::yield_now().await;
            tasks.update(&id, working()).await.unwrap();
            assert_eq!(seen.recv().await, Some(seq));
        }
        reader.await.unwrap();
        let (from_log, live) = served(&registry);
        assert_eq!(
            (from_log, live),
            (391, 100),
            "the replay from the log, then every event committed after it live"
        );
    }

    #[tokio::test]
    async fn events_are_counted_by_where_they_came_from() {
        let (tasks, fanout) = setup();
        let mut registry = prometheus_client::registry::Registry::default();
        fanout.register(&mut registry);
        let id = new_task(&tasks).await;
        for _ in 0..4 {
            tasks.update(&id, working()).await.unwrap();
        }
        let mut stream = fanout.subscribe(&id, 0);
        for seq in 1..=5 {
            assert_eq!(stream.next().await.unwrap().unwrap().seq, seq);
        }
        for _ in 0..3 {
            tasks.update(&id, working()).await.unwrap();
        }
        for seq in 6..=8 {
            assert_eq!(stream.next().await.unwrap().unwrap().seq, seq);
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains("source=\"log\"} 5\n"), "{text}");
        assert!(text.contains("source=\"live\"} 3\n"), "{text}");
    }

    #[tokio::test]
    async fn slow_subscriber_does_not_stall_the_producer_and_loses_nothing() {
        let (tasks, fanout) = setup();
        let mut registry = prometheus_client::registry::Registry::default();
        fanout.register(&mut registry);
        let id = new_task(&tasks).await;
        let mut slow = fanout.subscribe(&id, 0);
        // A stream follows the bus from its first read: read one event, so the
        // subscriber is on the bus while the producer runs.
        assert_eq!(slow.next().await.unwrap().unwrap().seq, 1);
        // Far more events than the bus buffers, while the subscriber reads nothing.
        let produce = async {
            for _ in 0..1000 {
                tasks.update(&id, working()).await.unwrap();
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), produce)
            .await
            .expect("the producer waited for the slow subscriber");
        let seqs: Vec<u64> = (&mut slow)
            .take(1000)
            .map(|e| e.unwrap().seq)
            .collect()
            .await;
        assert_eq!(seqs, (2..=1001).collect::<Vec<_>>());
        // It fell behind the bus, and caught up from the log.
        assert_eq!(served(&registry), (1001, 0));
    }
}
