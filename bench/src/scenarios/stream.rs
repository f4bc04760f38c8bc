//! B2: SendStreamingMessage to the echo agent, read to the end of the stream; time to
//! the first and to the last event.

use futures::StreamExt;
use tokio::time::Instant;

use super::{Ids, Load, Tally, Window, connected, with_cpu};
use crate::a2a::{self, Send};
use crate::http::Connection;
use crate::stats::{Latencies, Outcome};

#[derive(Debug, Default)]
struct WorkerResult {
    first: Latencies,
    last: Latencies,
    tally: Tally,
}

/// One stream: the times of its first and last events, if it ended completed.
async fn one_stream(conn: &mut Connection, ids: &Ids) -> anyhow::Result<(Instant, Instant)> {
    let body = a2a::send(
        &ids.next("b2"),
        Send {
            text: "hello",
            streaming: true,
            ..Send::default()
        },
    );
    let (status, events) = conn.stream(body).await?;
    anyhow::ensure!(status == 200, "HTTP {status}");
    let mut events = std::pin::pin!(events);
    let mut first = None;
    let mut last = String::new();
    while let Some(event) = events.next().await {
        last = event?;
        first.get_or_insert_with(Instant::now);
    }
    let ended = Instant::now();
    anyhow::ensure!(
        a2a::is_completed(last.as_bytes()),
        "the stream did not end completed; last event: {}",
        super::unary::truncate(&last)
    );
    Ok((first.unwrap_or(ended), ended))
}

pub async fn stream(name: &str, load: &Load) -> Outcome {
    let window = Window::after_warmup(load);
    let ids = Ids::default();
    let mut workers = Vec::new();
    for worker in 0..load.concurrency {
        let (target, ids, window) = (load.target(worker).clone(), ids.clone(), window.clone());
        workers.push(tokio::spawn(async move {
            let mut result = WorkerResult::default();
            let mut connection: Option<Connection> = None;
            while !window.is_over() {
                let began = Instant::now();
                let Some(conn) = connected(&mut connection, &target, &mut result.tally, true).await
                else {
                    continue;
                };
                match one_stream(conn, &ids).await {
                    Ok((first, last)) => {
                        if window.contains(began, last) {
                            result.first.record(first - began);
                            result.last.record(last - began);
                        }
                    }
                    Err(e) => {
                        // A stream that went wrong leaves its connection unusable.
                        connection = None;
                        result.tally.note(began >= window.start, e);
                    }
                }
            }
            result
        }));
    }
    let cpu = window.server_cpu(&load.pids).await;
    let (mut first, mut last, mut tally) =
        (Latencies::default(), Latencies::default(), Tally::default());
    for worker in workers {
        if let Ok(result) = worker.await {
            first.merge(result.first);
            last.merge(result.last);
            tally.merge(result.tally);
        }
    }
    tally.print_first(name, &load.server);
    let completed = last.len();
    let mut outcome = Outcome {
        name: name.to_owned(),
        server: load.server.clone(),
        rps: completed as f64 / load.duration.as_secs_f64(),
        p50_ms: last.percentile_ms(50.0),
        p99_ms: last.percentile_ms(99.0),
        errors: tally.errors,
        ..Outcome::default()
    };
    if let (Some(p50), Some(p99)) = (first.percentile_ms(50.0), first.percentile_ms(99.0)) {
        outcome = outcome.with("first_p50_ms", p50).with("first_p99_ms", p99);
    }
    match cpu {
        Ok(cpu) => with_cpu(outcome, cpu, completed),
        Err(_) => outcome,
    }
}
