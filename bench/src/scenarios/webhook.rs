//! B6: webhook deliveries. A local receiver counts POSTs; tasks that send stamped
//! updates (`tick 10 0 0`: 12 updates each) are created as fast as the server takes
//! them (throughput) or at a fixed rate (latency from the update to its delivery).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use bytes::Bytes;
use tokio::time::Instant;

use super::{Load, Unary, unary, with_cpu};
use crate::a2a;
use crate::stats::{Latencies, Outcome};

/// The receiver's tally, behind a mutex held only for a few instructions.
#[derive(Debug, Default)]
struct Receipts {
    count: usize,
    first: Option<Instant>,
    last: Option<Instant>,
    latencies: Latencies,
}

type Shared = Arc<std::sync::Mutex<Receipts>>;

async fn receive(State(receipts): State<Shared>, body: Bytes) -> &'static str {
    let now = Instant::now();
    let sent = a2a::tick_micros(&body);
    let micros = a2a::unix_micros();
    if let Ok(mut r) = receipts.lock() {
        r.count += 1;
        r.first.get_or_insert(now);
        r.last = Some(now);
        if let Some(sent) = sent {
            r.latencies.record_micros(micros.saturating_sub(sent));
        }
    }
    "ok"
}

/// Starts the receiver on a free loopback port; returns its URL and tally.
async fn start_receiver() -> anyhow::Result<(String, Shared)> {
    let receipts = Shared::default();
    let app = axum::Router::new()
        .route("/hook", post(receive))
        .with_state(receipts.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, receipts))
}

/// Updates (and so deliveries) per task: working, the ticks, completed.
const TICKS: usize = 10;

pub async fn webhooks(name: &str, load: &Load, tasks_per_second: Option<f64>) -> Outcome {
    let (url, receipts) = match start_receiver().await {
        Ok(receiver) => receiver,
        Err(e) => return Outcome::skipped(name, &load.server, &format!("no receiver: {e}")),
    };
    let cpu_before = crate::procstat::cpu_time(&load.pids);
    let request = Unary::SendWithPush {
        text: format!("tick {TICKS} 0 0"),
        url,
    };
    let driver = unary(name, load, request, tasks_per_second).await;
    // Wait for the dispatcher to drain: done when nothing arrived for two seconds.
    let mut seen = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let count = receipts.lock().map(|r| r.count).unwrap_or(0);
        if count == seen {
            break;
        }
        seen = count;
    }
    let cpu = cpu_before
        .and_then(|before| Ok(crate::procstat::cpu_time(&load.pids)?.saturating_sub(before)));
    let Ok(mut r) = receipts.lock() else {
        return Outcome::skipped(name, &load.server, "receiver tally poisoned");
    };
    let span = match (r.first, r.last) {
        (Some(first), Some(last)) => (last - first).as_secs_f64().max(1e-3),
        _ => 0.0,
    };
    // Tasks the driver created during the whole run (warmup included) each owe 12.
    let created_per_second = driver.rps;
    let outcome = Outcome {
        name: name.to_owned(),
        server: load.server.clone(),
        rps: if span > 0.0 {
            r.count as f64 / span
        } else {
            0.0
        },
        p50_ms: r.latencies.percentile_ms(50.0),
        p99_ms: r.latencies.percentile_ms(99.0),
        errors: driver.errors,
        ..Outcome::default()
    }
    .with("deliveries", r.count as f64)
    .with("tasks_per_s", created_per_second);
    match cpu {
        Ok(cpu) => with_cpu(outcome, cpu, r.count),
        Err(_) => outcome,
    }
}
