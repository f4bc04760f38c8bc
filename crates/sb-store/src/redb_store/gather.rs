//! How the writer takes a batch from its queue ([`gather`]): every request waiting, and
//! under concurrent load a moment's wait for more (group commit).

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::writer::{Queued, WriteOp};
use crate::traits::StoreResult;

/// Most write requests folded into one transaction.
const MAX_BATCH: usize = 512;

/// Longest a request waits for others to share its commit. Short: under load, batches
/// form on their own while the previous one is being fsynced, and a longer wait only
/// adds latency (a 1 ms window held B1's requests back: bench/profile.md).
const GATHER_WINDOW: Duration = Duration::from_micros(150);
/// A pause this long with nothing new ends the gathering early.
const GATHER_QUIET: Duration = Duration::from_micros(100);
const GATHER_POLL: Duration = Duration::from_micros(50);

/// Takes what is queued; when writers are concurrent, keeps taking until the queue has
/// been quiet for [`GATHER_QUIET`] or [`GATHER_WINDOW`] has passed since the first
/// request was queued. An fsync costs far more CPU than the wait, so fewer, larger
/// commits raise throughput and cut CPU. The window counts from the queueing, not from
/// here: a request that arrived while the last batch was being committed has waited
/// already (counted from here, the window added ~1 ms to the acks' median at 2.4k
/// tasks/s, where every batch waited for all of it).
pub(super) fn gather(
    first: WriteOp,
    first_queued: Instant,
    queue: &mut mpsc::Receiver<Queued>,
    concurrent: bool,
    checkpoint_asked: &mut Vec<oneshot::Sender<StoreResult<()>>>,
) -> Vec<WriteOp> {
    let mut batch = vec![first];
    let started = first_queued;
    let mut last_arrival = Instant::now();
    loop {
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(Queued::Op(op, _)) => {
                    batch.push(op);
                    last_arrival = Instant::now();
                }
                // The loop checks for a due checkpoint after this batch anyway.
                Ok(Queued::Tick) => {}
                Ok(Queued::Checkpoint(reply)) => checkpoint_asked.push(reply),
                Err(_) => break,
            }
        }
        if !concurrent
            || batch.len() >= MAX_BATCH
            || started.elapsed() >= GATHER_WINDOW
            || last_arrival.elapsed() >= GATHER_QUIET
        {
            return batch;
        }
        std::thread::sleep(GATHER_POLL);
    }
}
