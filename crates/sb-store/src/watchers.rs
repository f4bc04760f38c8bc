//! One-shot watchers by key: whoever waits for a signal (a turn's end, a task's end)
//! holds a receiver; the signal fires and forgets every watcher of its key.

use tokio::sync::oneshot;

use crate::IdMap;

#[derive(Debug, Default)]
pub struct Watchers {
    by_key: IdMap<String, Vec<oneshot::Sender<()>>>,
    /// When watchers whose waiter gave up are next dropped ([`crate::sweep_when_doubled`]).
    sweep_at: usize,
}

impl Watchers {
    pub fn watch(&mut self, key: &str) -> oneshot::Receiver<()> {
        crate::sweep_when_doubled(&mut self.by_key, &mut self.sweep_at, |_, list| {
            list.retain(|w| !w.is_closed());
            !list.is_empty()
        });
        let (sender, receiver) = oneshot::channel();
        self.by_key.entry(key.to_owned()).or_default().push(sender);
        receiver
    }

    /// Wakes and forgets `key`'s watchers.
    pub fn fire(&mut self, key: &str) {
        for watcher in self.by_key.remove(key).into_iter().flatten() {
            let _ = watcher.send(());
        }
    }

    /// Keys watched, including watchers not swept yet.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_wakes_its_keys_watchers_only_and_abandoned_ones_are_swept() {
        let mut watchers = Watchers::default();
        let mut a1 = watchers.watch("a");
        let mut a2 = watchers.watch("a");
        let mut b = watchers.watch("b");
        watchers.fire("a");
        assert_eq!(a1.try_recv(), Ok(()));
        assert_eq!(a2.try_recv(), Ok(()));
        assert!(b.try_recv().is_err(), "b was not signalled");
        // A waiter that gives up leaves its watcher behind until a sweep: many of them
        // stay within twice the live count, however many came and went.
        let live: Vec<_> = (0..10)
            .map(|i| watchers.watch(&format!("live{i}")))
            .collect();
        for i in 0..10_000 {
            drop(watchers.watch(&format!("gone{i}")));
        }
        assert!(watchers.len() <= 2 * 64, "{} keys kept", watchers.len());
        watchers.fire("b");
        assert_eq!(b.try_recv(), Ok(()));
        drop(live);
    }
}
