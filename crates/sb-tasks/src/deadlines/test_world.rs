//! The world the keeper's tests run in: a task service over a memory store and a local
//! bus, with a keeper following it.

use std::sync::Arc;
use std::time::Duration;

use sb_protocol::{Message, Role, TaskState};
use sb_store::{EventBus, LocalBus, MemoryStore};
use tokio_util::sync::CancellationToken;

use super::{DeadlineConfig, DeadlineKeeper};
use crate::lifecycle::TaskUpdate;
use crate::service::{LocalTaskService, NewTask, Scope, TaskService};

pub(super) struct World {
    pub(super) tasks: Arc<LocalTaskService>,
    pub(super) bus: Arc<dyn EventBus>,
    pub(super) store: Arc<MemoryStore>,
    pub(super) stop: CancellationToken,
}

pub(super) async fn world() -> World {
    let store = Arc::new(MemoryStore::new());
    let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
    let tasks = Arc::new(LocalTaskService::new(store.clone(), bus.clone()));
    let config = DeadlineConfig {
        terminal_ttl: Duration::from_secs(3600),
        input_timeout: Duration::from_secs(600),
        stall_timeout: Duration::from_secs(900),
    };
    let keeper = DeadlineKeeper::new(config, tasks.clone(), store.clone(), store.clone());
    let stop = CancellationToken::new();
    tokio::spawn(keeper.run(bus.clone(), stop.clone()));
    // Let the keeper subscribe before the test commits anything.
    tokio::task::yield_now().await;
    World {
        tasks,
        bus,
        store,
        stop,
    }
}

pub(super) fn scope() -> Scope {
    Scope {
        agent: "a".into(),
        owner: String::new(),
    }
}

pub(super) async fn task_in(w: &World, state: TaskState) -> String {
    let message = Message {
        role: Role::User,
        ..Message::agent_text("hi")
    };
    let id = w
        .tasks
        .create(NewTask {
            scope: scope(),
            message,
            metadata: None,
        })
        .await
        .unwrap()
        .task
        .id;
    w.tasks
        .update(
            &id,
            TaskUpdate::Status {
                state,
                message: None,
                metadata: None,
            },
        )
        .await
        .unwrap();
    id
}

pub(super) async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}
