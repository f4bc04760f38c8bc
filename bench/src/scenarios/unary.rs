//! B1 (SendMessage), B3 (GetTask) and the acknowledgment latency of a non-blocking
//! SendMessage at a fixed arrival rate: one request at a time per connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::{Ids, Load, Tally, Window, connected, with_cpu};
use crate::a2a::{self, Send};
use crate::http::Reply;
use crate::stats::{Latencies, Outcome};

/// Which request every worker repeats.
#[derive(Debug, Clone)]
pub enum Unary {
    /// Blocking SendMessage to the echo agent: the answer must be the completed task.
    SendBlocking,
    /// SendMessage with `returnImmediately`: the answer is the acknowledged task.
    SendAck,
    /// GetTask on one existing task.
    Get { task_id: String },
    /// Non-blocking SendMessage whose task posts its updates to a webhook.
    SendWithPush { text: String, url: String },
}

impl Unary {
    fn body(&self, ids: &Ids) -> Bytes {
        match self {
            Unary::SendBlocking | Unary::SendAck => a2a::send(
                &ids.next("b1"),
                Send {
                    text: "hello",
                    return_immediately: matches!(self, Unary::SendAck),
                    ..Send::default()
                },
            ),
            Unary::Get { task_id } => a2a::get_task(task_id),
            Unary::SendWithPush { text, url } => a2a::send(
                &ids.next("b6"),
                Send {
                    text,
                    return_immediately: true,
                    push_url: Some(url),
                    ..Send::default()
                },
            ),
        }
    }

    fn accepts(&self, reply: &Reply) -> bool {
        reply.status == 200
            && a2a::is_success(&reply.body)
            && (!matches!(self, Unary::SendBlocking) || a2a::is_completed(&reply.body))
    }
}

#[derive(Debug, Default)]
struct WorkerResult {
    latencies: Latencies,
    tally: Tally,
}

/// Runs `request` on `load.concurrency` connections; with `rate`, requests start on a
/// fixed schedule (open loop) and a request that starts late because every connection
/// was waiting on slower answers counts its latency from its scheduled start, so a slow
/// answer is not hidden by the requests it delayed.
pub async fn unary(name: &str, load: &Load, request: Unary, rate: Option<f64>) -> Outcome {
    let window = Window::after_warmup(load);
    let ids = Ids::default();
    let schedule = Arc::new(AtomicU64::new(0));
    let origin = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..load.concurrency {
        let (target, request, ids, window, schedule) = (
            load.target(worker).clone(),
            request.clone(),
            ids.clone(),
            window.clone(),
            schedule.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut result = WorkerResult::default();
            let mut connection = None;
            loop {
                let began = match rate {
                    Some(rate) => {
                        let slot = schedule.fetch_add(1, Ordering::Relaxed);
                        let at = origin + Duration::from_secs_f64(slot as f64 / rate);
                        if at > Instant::now() {
                            // Ahead of schedule: the request starts when the timer wakes
                            // this worker, up to a millisecond late (tokio's timer ticks
                            // in whole milliseconds). That lateness is the generator's
                            // own, so the latency counts from the wake-up.
                            tokio::time::sleep_until(at).await;
                            Instant::now()
                        } else {
                            // Behind: every connection was busy with slower answers.
                            at
                        }
                    }
                    None => Instant::now(),
                };
                if window.is_over() {
                    break;
                }
                let counted = began >= window.start;
                let Some(conn) =
                    connected(&mut connection, &target, &mut result.tally, counted).await
                else {
                    continue;
                };
                let reply = conn.call(request.body(&ids)).await;
                let ended = Instant::now();
                match reply {
                    Ok(reply) if request.accepts(&reply) => {
                        if window.contains(began, ended) {
                            result.latencies.record(ended - began);
                        }
                    }
                    Ok(reply) => {
                        let body = String::from_utf8_lossy(&reply.body);
                        let why = format!("HTTP {}: {}", reply.status, truncate(&body));
                        result.tally.note(counted, why);
                    }
                    Err(e) => {
                        connection = None;
                        result.tally.note(counted, e);
                    }
                }
            }
            result
        }));
    }
    let cpu = window.server_cpu(&load.pids).await;
    let mut latencies = Latencies::default();
    let mut tally = Tally::default();
    for worker in workers {
        if let Ok(result) = worker.await {
            latencies.merge(result.latencies);
            tally.merge(result.tally);
        }
    }
    tally.print_first(name, &load.server);
    let completed = latencies.len();
    let outcome = Outcome {
        name: name.to_owned(),
        server: load.server.clone(),
        rps: completed as f64 / load.duration.as_secs_f64(),
        p50_ms: latencies.percentile_ms(50.0),
        p99_ms: latencies.percentile_ms(99.0),
        errors: tally.errors,
        ..Outcome::default()
    };
    match cpu {
        Ok(cpu) => with_cpu(outcome, cpu, completed),
        Err(_) => outcome,
    }
}

pub(super) fn truncate(text: &str) -> &str {
    let end = text.char_indices().nth(200).map_or(text.len(), |(i, _)| i);
    &text[..end]
}
