//! B5: fan-out latency. One task sends a working update every `interval`, stamped with
//! the time it was sent (`tick`); `subscribers` SubscribeToTask streams follow it, and
//! each update's latency is receipt time minus stamp (same host, same clock).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{Ids, Load, Tally, with_cpu};
use crate::a2a::{self, Send};
use crate::http::{Connection, Target};
use crate::stats::{Latencies, Outcome};

/// What to send and to how many.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    pub subscribers: usize,
    pub count: u32,
    pub interval: Duration,
    /// Time the subscribers have to attach before the first tick.
    pub delay: Duration,
}

#[derive(Debug, Default)]
struct Subscriber {
    latencies: Latencies,
    completed: bool,
}

async fn subscribe(
    target: Target,
    task_id: String,
    opening: OwnedSemaphorePermit,
) -> anyhow::Result<Subscriber> {
    let mut conn = Connection::open(&target).await?;
    let (status, events) = conn.stream(a2a::subscribe(&task_id)).await?;
    anyhow::ensure!(status == 200, "HTTP {status}");
    let mut events = std::pin::pin!(events);
    let mut result = Subscriber::default();
    // The first event is the task as it stands: an old stamp, not a live update.
    let _snapshot = events.next().await;
    drop(opening);
    while let Some(event) = events.next().await {
        let data = event?;
        let now = a2a::unix_micros();
        if let Some(sent) = a2a::tick_micros(data.as_bytes()) {
            result.latencies.record_micros(now.saturating_sub(sent));
        }
        result.completed |= a2a::is_completed(data.as_bytes());
    }
    Ok(result)
}

pub async fn fanout(name: &str, load: &Load, ticks: Ticks) -> Outcome {
    let started = Instant::now();
    let text = format!(
        "tick {} {} {}",
        ticks.count,
        ticks.interval.as_millis(),
        ticks.delay.as_millis()
    );
    let body = a2a::send(
        &Ids::default().next(&format!("b5-{}", a2a::unix_micros())),
        Send {
            text: &text,
            return_immediately: true,
            ..Send::default()
        },
    );
    let task_id = match Connection::open(load.target(0)).await {
        Ok(mut conn) => match conn.call(body).await {
            Ok(reply) => a2a::task_id(&reply.body)
                .ok_or_else(|| format!("no task id in {}", String::from_utf8_lossy(&reply.body))),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    };
    let task_id = match task_id {
        Ok(id) => id,
        Err(why) => return Outcome::skipped(name, &load.server, &format!("cannot start: {why}")),
    };
    let gate = Arc::new(Semaphore::new(64));
    let mut subscribers = JoinSet::new();
    for i in 0..ticks.subscribers {
        let (target, task_id, gate) = (load.target(i).clone(), task_id.clone(), gate.clone());
        subscribers.spawn(async move {
            // Connect 64 at a time; the permit goes once the stream is open.
            let permit = gate.acquire_owned().await?;
            subscribe(target, task_id, permit).await
        });
    }
    let cpu_before = crate::procstat::cpu_time(&load.pids);
    let mut latencies = Latencies::default();
    let mut tally = Tally::default();
    while let Some(joined) = subscribers.join_next().await {
        match joined {
            Ok(Ok(sub)) if sub.completed => latencies.merge(sub.latencies),
            Ok(Ok(sub)) => {
                latencies.merge(sub.latencies);
                tally.note(true, "a stream ended before completion");
            }
            Ok(Err(e)) => tally.note(true, e),
            Err(e) => tally.note(true, e),
        }
    }
    let cpu = cpu_before
        .and_then(|before| Ok(crate::procstat::cpu_time(&load.pids)?.saturating_sub(before)));
    tally.print_first(name, &load.server);
    let delivered = latencies.len();
    let expected = ticks.subscribers * ticks.count as usize;
    let ticking = started.elapsed().saturating_sub(ticks.delay);
    let outcome = Outcome {
        name: name.to_owned(),
        server: load.server.clone(),
        rps: delivered as f64 / ticking.as_secs_f64().max(1e-3),
        p50_ms: latencies.percentile_ms(50.0),
        p99_ms: latencies.percentile_ms(99.0),
        errors: tally.errors,
        ..Outcome::default()
    }
    .with(
        "delivered_pct",
        100.0 * delivered as f64 / expected.max(1) as f64,
    );
    match cpu {
        Ok(cpu) => with_cpu(outcome, cpu, delivered),
        Err(_) => outcome,
    }
}
