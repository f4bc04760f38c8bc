//! Freeing what the cache forgets ([`Dropper`]): away from the writer's path and the
//! cache's lock.

use super::hot::{Forgotten, Hot, SharedHot};

/// Frees what the cache forgets on the async runtime that opened the store. The
/// runtime's threads allocated it (a task's record and events are built by the request
/// that commits them), so it is freed where it was allocated instead of block by block
/// across threads, and off the writer's path to the next batch's fsync, where freeing
/// it under the cache's lock showed in profiles (bench/profile.md).
#[derive(Debug)]
pub(super) struct Dropper(Option<tokio::sync::mpsc::UnboundedSender<Vec<Forgotten>>>);

impl Dropper {
    /// One on the current runtime, if there is one; without, the writer frees itself.
    pub(super) fn on_current_runtime() -> Dropper {
        Dropper(tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<Forgotten>>();
            runtime.spawn(async move { while rx.recv().await.is_some() {} });
            tx
        }))
    }

    /// Changes the cache under its lock, then frees what the change made it forget:
    /// the one way to change the cache where it may forget (what `Hot::forget` keeps is
    /// only freed when taken).
    pub(super) fn change_cache(&self, hot: &SharedHot, change: impl FnOnce(&mut Hot)) {
        let forgotten = {
            let mut hot = hot.write();
            change(&mut hot);
            hot.take_forgotten()
        };
        self.drop_later(forgotten);
    }

    /// Frees `forgotten` later, or now when the runtime is gone.
    fn drop_later(&self, forgotten: Vec<Forgotten>) {
        if let Some(tx) = self.0.as_ref().filter(|_| !forgotten.is_empty()) {
            // A send that fails hands the value back, freed here with the error.
            let _ = tx.send(forgotten);
        }
    }
}
