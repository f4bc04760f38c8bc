//! B4: idle subscribers. Opens streams on tasks that stay working (`hold`), step by
//! step, and reports the server's resident memory per open stream.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{Ids, Load, Tally};
use crate::a2a::{self, Send};
use crate::http::Connection;
use crate::procstat;
use crate::stats::{Latencies, Outcome};

/// Streams being opened at once (so the listen backlog never overflows).
const OPENING_AT_ONCE: usize = 64;

/// Longest one step may take; what is not open by then counts as errors and ends B4.
const STEP_DEADLINE: Duration = Duration::from_secs(120);

/// Opens one held stream and keeps reading it until the task or the harness ends.
async fn hold(
    target: crate::http::Target,
    ids: Ids,
    opening: OwnedSemaphorePermit,
    opened: mpsc::Sender<anyhow::Result<Duration>>,
) {
    let began = Instant::now();
    let attempt = async {
        let mut conn = Connection::open(&target).await?;
        let body = a2a::send(
            &ids.next("b4"),
            Send {
                text: "hold",
                streaming: true,
                ..Send::default()
            },
        );
        let (status, events) = conn.stream(body).await?;
        anyhow::ensure!(status == 200, "HTTP {status}");
        let mut events = Box::pin(events);
        match events.next().await {
            Some(Ok(_)) => Ok((conn, events)),
            Some(Err(e)) => Err(e),
            None => anyhow::bail!("the stream ended before its first event"),
        }
    };
    let attempt = attempt.await;
    drop(opening);
    match attempt {
        Ok((_conn, mut events)) => {
            let _ = opened.send(Ok(began.elapsed())).await;
            drop(opened);
            while let Some(Ok(_)) = events.next().await {}
        }
        Err(e) => {
            let _ = opened.send(Err(e)).await;
        }
    }
}

/// Opens streams up to each of `steps` (cumulative) and reports memory per stream at
/// each; the streams stay open until the returned set is dropped.
pub async fn idle(load: &Load, steps: &[usize]) -> (Vec<Outcome>, JoinSet<()>) {
    let mut outcomes = Vec::new();
    let mut streams = JoinSet::new();
    let ids = Ids::default();
    let gate = Arc::new(Semaphore::new(OPENING_AT_ONCE));
    let base = procstat::rss_bytes(&load.pids);
    let mut open = 0usize;
    let mut errors = 0u64;
    for &goal in steps {
        let name = format!("B4 idle n={goal}");
        let began = Instant::now();
        let (tx, mut rx) = mpsc::channel(goal.max(1));
        let mut tally = Tally::default();
        let mut times = Latencies::default();
        let wanted = goal.saturating_sub(open);
        let deadline = began + STEP_DEADLINE;
        let mut answered = 0;
        for i in 0..wanted {
            let Ok(Ok(permit)) =
                tokio::time::timeout_at(deadline, gate.clone().acquire_owned()).await
            else {
                break;
            };
            let (target, ids, tx) = (load.target(open + i).clone(), ids.clone(), tx.clone());
            streams.spawn(hold(target, ids, permit, tx));
            while let Ok(result) = rx.try_recv() {
                answered += 1;
                count(result, &mut open, &mut times, &mut tally);
            }
        }
        drop(tx);
        while answered < wanted {
            let Ok(Some(result)) = tokio::time::timeout_at(deadline, rx.recv()).await else {
                break;
            };
            answered += 1;
            count(result, &mut open, &mut times, &mut tally);
        }
        let stuck = wanted - answered;
        if stuck > 0 {
            tally.errors += stuck as u64;
            tally.first_error.get_or_insert_with(|| {
                format!(
                    "{stuck} streams not open after {} s",
                    STEP_DEADLINE.as_secs()
                )
            });
        }
        let opening = began.elapsed();
        tally.print_first(&name, &load.server);
        // Errors add up over the steps; the first reason is each step's own.
        errors += tally.errors;
        // Let allocators and buffers settle before reading memory.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut outcome = Outcome {
            name,
            server: load.server.clone(),
            rps: wanted as f64 / opening.as_secs_f64(),
            p50_ms: times.percentile_ms(50.0),
            p99_ms: times.percentile_ms(99.0),
            errors,
            ..Outcome::default()
        }
        .with("open", open as f64);
        if let (Ok(base), Ok(now)) = (&base, procstat::rss_bytes(&load.pids))
            && open > 0
        {
            let per_stream = now.saturating_sub(*base) as f64 / open as f64 / 1024.0;
            outcome = outcome.with("rss_kb_per_stream", per_stream);
        }
        outcomes.push(outcome);
        if stuck > 0 {
            break;
        }
    }
    (outcomes, streams)
}

fn count(
    result: anyhow::Result<Duration>,
    open: &mut usize,
    times: &mut Latencies,
    tally: &mut Tally,
) {
    match result {
        Ok(took) => {
            *open += 1;
            times.record(took);
        }
        Err(e) => tally.note(true, e),
    }
}
