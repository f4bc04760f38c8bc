//! `bench`: the benchmark agent, the same contract as the peer servers in `bench/peers`,
//! decided by the message text:
//! - `hold`: working, then nothing until the task is canceled (an idle stream);
//! - `tick COUNT INTERVAL_MS DELAY_MS`: working, a pause of DELAY_MS, then COUNT working
//!   updates INTERVAL_MS apart whose message is `t=<unix µs when sent>`, then completed
//!   (transition → subscriber latency);
//! - `finish STATE DURATION_MS [COST_USD] [REASON…]`: working, a pause of DURATION_MS,
//!   then ends in STATE (`completed`, `failed`, `rejected`; or waits in `input-required`
//!   or `auth-required`), its final message carrying a
//!   `cost-v1` DataPart when COST_USD is not `-`, and REASON as its text (fleet-health
//!   drills; the peers need not implement it);
//! - anything else: what `echo` does (working, one artifact, completed).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use sb_protocol::{Message, Part, TaskState};
use serde_json::json;

use super::EchoAgent;
use crate::api::{Agent, AgentDescriptor, AgentError, Reporter, TaskContext};

#[derive(Debug, Default)]
pub struct BenchAgent;

/// What a message asks the agent to do.
#[derive(Debug, PartialEq)]
enum Command {
    Hold,
    Tick {
        count: u32,
        interval: Duration,
        delay: Duration,
    },
    Finish {
        state: TaskState,
        after: Duration,
        cost_usd: Option<f64>,
        reason: String,
    },
    Echo,
}

fn parse(text: &str) -> Command {
    let mut words = text.split_whitespace();
    match words.next() {
        Some("hold") => Command::Hold,
        Some("tick") => {
            let numbers: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
            match numbers[..] {
                [count, interval, delay] => Command::Tick {
                    count: u32::try_from(count).unwrap_or(u32::MAX),
                    interval: Duration::from_millis(interval),
                    delay: Duration::from_millis(delay),
                },
                _ => Command::Echo,
            }
        }
        Some("finish") => finish(words).unwrap_or(Command::Echo),
        _ => Command::Echo,
    }
}

fn finish<'a>(mut words: impl Iterator<Item = &'a str>) -> Option<Command> {
    let state =
        TaskState::parse(words.next()?).filter(|s| s.is_terminal() || s.is_interrupted())?;
    let after = Duration::from_millis(words.next()?.parse().ok()?);
    let cost_usd = match words.next() {
        None | Some("-") => None,
        Some(usd) => Some(usd.parse().ok()?),
    };
    let reason = words.collect::<Vec<_>>().join(" ");
    Some(Command::Finish {
        state,
        after,
        cost_usd,
        reason,
    })
}

fn unix_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default()
}

#[async_trait]
impl Agent for BenchAgent {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description: "The benchmark agent: echoes, holds a task open (`hold`), sends timed \
                          updates (`tick COUNT INTERVAL_MS DELAY_MS`) or ends as told \
                          (`finish STATE DURATION_MS [COST_USD] [REASON]`)."
                .into(),
            skills: vec![super::skill(
                "bench",
                "Benchmark",
                "Echo, hold or tick, for load tests",
                &["benchmark", "test"],
                &["hello", "hold", "tick 100 10 1000"],
            )],
            input_modes: super::text_modes(),
            output_modes: super::text_modes(),
        }
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        match parse(&ctx.message.text()) {
            Command::Echo => EchoAgent.execute(ctx, reporter).await,
            Command::Hold => {
                // Keeps only what it waits on, as an agent waiting on something outside
                // would: B4 measures what a held task costs the server, not the agent.
                let cancel = ctx.cancel.clone();
                drop(ctx);
                reporter.working(None).await?;
                cancel.cancelled().await;
                Ok(())
            }
            // Boxed, like every command but `hold`: the run's state is the largest of its
            // arms', and a held run (thousands at once in B4) must keep only `hold`'s.
            Command::Tick {
                count,
                interval,
                delay,
            } => Box::pin(tick(ctx, reporter, count, interval, delay)).await,
            Command::Finish {
                state,
                after,
                cost_usd,
                reason,
            } => {
                Box::pin(finish_as_told(
                    ctx, reporter, state, after, cost_usd, reason,
                ))
                .await
            }
        }
    }
}

async fn finish_as_told(
    ctx: TaskContext,
    reporter: Reporter,
    state: TaskState,
    after: Duration,
    cost_usd: Option<f64>,
    reason: String,
) -> Result<(), AgentError> {
    reporter.working(None).await?;
    tokio::select! {
        () = tokio::time::sleep(after) => {}
        () = ctx.cancel.cancelled() => return Ok(()),
    }
    let mut message = Message::agent_text(reason);
    if let Some(usd) = cost_usd {
        let elapsed = after.as_millis() as u64;
        let usage = json!({"usage": {"input_tokens": 100, "output_tokens": 20}, "durationMs": elapsed, "costUsd": usd});
        message.parts.push(Part::data(usage));
    }
    reporter.status(state, Some(message)).await?;
    Ok(())
}

async fn tick(
    ctx: TaskContext,
    reporter: Reporter,
    count: u32,
    interval: Duration,
    delay: Duration,
) -> Result<(), AgentError> {
    reporter.working(None).await?;
    let pause = |d: Duration| {
        let cancel = ctx.cancel.clone();
        async move {
            tokio::select! {
                () = tokio::time::sleep(d) => true,
                () = cancel.cancelled() => false,
            }
        }
    };
    if !pause(delay).await {
        return Ok(());
    }
    for _ in 0..count {
        reporter
            .working(Some(format!("t={}", unix_micros())))
            .await?;
        if !pause(interval).await {
            return Ok(());
        }
    }
    reporter.complete(None).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sb_protocol::Role;
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService};
    use tokio_util::sync::CancellationToken;

    use super::*;

    #[test]
    fn commands_are_read_from_the_text() {
        assert_eq!(parse("hold"), Command::Hold);
        assert_eq!(
            parse("tick 3 10 500"),
            Command::Tick {
                count: 3,
                interval: Duration::from_millis(10),
                delay: Duration::from_millis(500)
            }
        );
        assert_eq!(parse("tick 3 10"), Command::Echo);
        assert_eq!(parse("hello"), Command::Echo);
        assert_eq!(
            parse("finish failed 250 0.02 the upstream timed out"),
            Command::Finish {
                state: TaskState::Failed,
                after: Duration::from_millis(250),
                cost_usd: Some(0.02),
                reason: "the upstream timed out".into(),
            }
        );
        assert_eq!(
            parse("finish completed 5 -"),
            Command::Finish {
                state: TaskState::Completed,
                after: Duration::from_millis(5),
                cost_usd: None,
                reason: String::new(),
            }
        );
        assert_eq!(parse("finish working 5"), Command::Echo, "not an end");
        assert_eq!(parse("finish failed soon"), Command::Echo);
    }

    /// B4 measures what a held task costs the server: thousands of `hold` runs at once
    /// must each keep a small state, which they do only while no other command's state
    /// is inlined into the run.
    #[tokio::test]
    async fn a_held_run_keeps_a_small_state() {
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            Arc::new(LocalBus::new()),
        ));
        let message = Message {
            role: Role::User,
            ..Message::agent_text("hold")
        };
        let created = tasks
            .create(NewTask {
                scope: Scope {
                    agent: "bench".into(),
                    owner: String::new(),
                },
                message: message.clone(),
                metadata: None,
            })
            .await
            .unwrap();
        let reporter = Reporter::new(tasks.clone(), created.task.id.clone());
        let ctx = TaskContext {
            task: Box::new(created.task),
            message: Box::new(message),
            cancel: CancellationToken::new(),
        };
        let run = BenchAgent.execute(ctx, reporter);
        let size = std::mem::size_of_val(&*run);
        assert!(size <= 512, "a held run keeps {size} bytes");
    }
}
