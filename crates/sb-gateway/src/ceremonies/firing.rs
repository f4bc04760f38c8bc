//! The firing loop every gateway runs: about once a second, the ceremonies in force
//! (files' and API's), each one's due firings claimed in the store (one replica wins
//! each), and each firing won sent as a new task to every target — through the same
//! send operation as any inbound call, as principal `ceremony:{id}`, with
//! `metadata.skillHint` — and kept as a run; a firing missed past the grace is kept as
//! a missed run.
//!
//! Outcomes: every few seconds, each gateway reads the runs not yet over and looks up
//! their tasks (through the task service, as their owner), noting each one's state
//! until it ends. Any gateway can do it, so a run fired by a replica that died is still
//! settled by the others; the notice of a run over is posted by whichever replica
//! marks it notified first.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use sb_fleet::ceremonies::book::{self, Entry};
use sb_fleet::ceremonies::definition::Ceremony;
use sb_fleet::ceremonies::runs::{self, Run, RunTask, Trigger};
use sb_fleet::ceremonies::schedule::Due;
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{ErrorKind, Message, Metadata, Part, Role, Version, new_id};
use sb_tasks::Scope;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Ceremonies;
use super::outage::Outage;
use crate::metrics::FiringLabels;
use crate::ops;
use crate::ops::Sent;

/// How often the schedule is looked at: a firing goes out within about this much of
/// its time.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// Looks between two reads of the runs not yet over.
const SETTLE_EVERY_LOOKS: u64 = 3;

/// The principal a ceremony's tasks belong to.
pub fn owner_of(ceremony_id: &str) -> String {
    format!("ceremony:{ceremony_id}")
}

pub(super) async fn run(ceremonies: Ceremonies, stop: CancellationToken) {
    let mut looks: u64 = 0;
    let mut outage = Outage::default();
    loop {
        tokio::select! {
            () = tokio::time::sleep(LOOK_EVERY) => {}
            () = stop.cancelled() => return,
        }
        let files = ceremonies.files();
        let all = match book::all(&files, &*ceremonies.store).await {
            Ok(all) => {
                Outage::log(outage.succeeded(Instant::now()), None);
                all
            }
            Err(e) => {
                Outage::log(outage.failed(Instant::now()), Some(&e));
                continue;
            }
        };
        for entry in all.values() {
            look(&ceremonies, &entry.ceremony).await;
        }
        if looks.is_multiple_of(SETTLE_EVERY_LOOKS) {
            settle_all(&ceremonies, &all).await;
        }
        looks += 1;
    }
}

/// Fires (or records as missed) whatever of `ceremony` this replica claimed.
async fn look(ceremonies: &Ceremonies, ceremony: &Ceremony) {
    let store = &*ceremonies.store;
    let due = match ceremonies
        .scheduler
        .claim_due(store, ceremony, Utc::now())
        .await
    {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!(error = %e, ceremony = %ceremony.id, "could not look at a ceremony's schedule");
            return;
        }
    };
    for due in due {
        match due {
            Due::Fire(at) => {
                fire(ceremonies, ceremony, at, Trigger::Schedule).await;
            }
            Due::Missed(at) => {
                tracing::warn!(ceremony = %ceremony.id, %at, "a firing came while no gateway was up, past the catch-up grace: recorded as missed");
                let run = Run {
                    ceremony: ceremony.id.clone(),
                    scheduled_for: at,
                    trigger: Trigger::Missed,
                    fired_at: None,
                    tasks: Vec::new(),
                    notified: false,
                };
                count(ceremonies, &run);
                keep(ceremonies, &run).await;
                notify(ceremonies, ceremony, &run).await;
            }
        }
    }
}

/// Sends `ceremony`'s message as a new task to each target, and keeps the run.
pub(super) async fn fire(
    ceremonies: &Ceremonies,
    ceremony: &Ceremony,
    at: DateTime<Utc>,
    trigger: Trigger,
) -> Run {
    let mut tasks = Vec::new();
    for target in &ceremony.targets {
        tasks.push(send_one(ceremonies, ceremony, target, at).await);
    }
    let run = Run {
        ceremony: ceremony.id.clone(),
        scheduled_for: at,
        trigger,
        fired_at: Some(Utc::now()),
        tasks,
        notified: false,
    };
    tracing::info!(ceremony = %ceremony.id, scheduled_for = %at, ?trigger, "ceremony fired");
    count(ceremonies, &run);
    keep(ceremonies, &run).await;
    if run.is_over() {
        notify(ceremonies, ceremony, &run).await;
    }
    run
}

/// Counts `run` in `switchboard_ceremony_firings`.
fn count(ceremonies: &Ceremonies, run: &Run) {
    let trigger = match run.trigger {
        Trigger::Schedule => "schedule",
        Trigger::Manual => "manual",
        Trigger::Missed => "missed",
    };
    let sent = run.tasks.iter().filter(|task| task.error.is_none()).count();
    let outcome = match (run.trigger, sent) {
        (Trigger::Missed, _) => "missed",
        (_, 0) => "not_sent",
        (_, sent) if sent == run.tasks.len() => "sent",
        _ => "partly_sent",
    };
    let labels = FiringLabels { trigger, outcome };
    let firings = &ceremonies.state.metrics.ceremony_firings;
    firings.get_or_create(&labels).inc();
}

async fn keep(ceremonies: &Ceremonies, run: &Run) {
    if let Err(e) = runs::record(&*ceremonies.store, run).await {
        tracing::error!(error = %e, ceremony = %run.ceremony, "could not keep a ceremony's run");
    }
}

async fn notify(ceremonies: &Ceremonies, ceremony: &Ceremony, run: &Run) {
    let Some(url) = &ceremony.notify_channel else {
        return;
    };
    let store = &*ceremonies.store;
    let notifier = &ceremonies.notifier;
    notifier
        .notify(store, url, &ceremony.name, &ceremony.skill, run)
        .await;
}

/// The message a firing sends: the text (or the name), the data as a DataPart, and
/// the skill as the guide's `metadata.skillHint` (with the ceremony and the firing time
/// it is for, so an agent can tell firings apart).
fn request(ceremony: &Ceremony, at: DateTime<Utc>) -> SendMessageRequest {
    let mut parts = vec![Part::text(ceremony.text())];
    if let Some(data) = &ceremony.data {
        parts.push(Part::data(data.clone()));
    }
    let message = Message {
        message_id: new_id(),
        context_id: None,
        task_id: None,
        role: Role::User,
        parts,
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let mut metadata = Metadata::new();
    metadata.insert("skillHint".into(), Value::String(ceremony.skill.clone()));
    metadata.insert("ceremony".into(), Value::String(ceremony.id.clone()));
    let scheduled_for = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    metadata.insert("scheduledFor".into(), Value::String(scheduled_for));
    SendMessageRequest {
        tenant: None,
        message,
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        metadata: Some(metadata),
    }
}

/// One target's task, or why there is none (the others are sent all the same).
async fn send_one(
    ceremonies: &Ceremonies,
    ceremony: &Ceremony,
    target: &str,
    at: DateTime<Utc>,
) -> RunTask {
    let state = &ceremonies.state;
    let mut task = RunTask {
        target: target.to_owned(),
        task_id: None,
        state: None,
        error: None,
    };
    let served = state.registry.fleet().agents.contains_key(target);
    if !served || !state.runner.serves(target) {
        task.error = Some(format!("no agent {target:?} is served here"));
        return task;
    }
    let scope = Scope {
        agent: target.to_owned(),
        owner: owner_of(&ceremony.id),
    };
    match ops::send(state, &scope, request(ceremony, at), Version::V1_0).await {
        Ok(Sent::Task { record, .. }) => {
            task.task_id = Some(record.task.id.clone());
            task.state = Some(record.state());
        }
        Ok(Sent::Message(_)) => {
            // The agent answered at once, with no task: nothing to follow.
            task.state = Some(sb_protocol::TaskState::Completed);
        }
        Err(e) => task.error = Some(e.message),
    }
    task
}

/// Notes the state of every task of the runs not yet over, and notifies the runs that
/// are over now.
async fn settle_all(ceremonies: &Ceremonies, all: &BTreeMap<String, Entry>) {
    for entry in all.values() {
        let ceremony = &entry.ceremony;
        let kept = match runs::list(&*ceremonies.store, &ceremony.id).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(error = %e, ceremony = %ceremony.id, "could not read a ceremony's runs");
                continue;
            }
        };
        for mut run in kept {
            let unnotified = ceremony.notify_channel.is_some() && !run.notified;
            if run.is_over() && !unnotified {
                continue;
            }
            settle(ceremonies, &mut run).await;
            if run.is_over() {
                notify(ceremonies, ceremony, &run).await;
            }
        }
    }
}

/// Looks up each unfinished task of `run` and notes what changed (in `run` too).
async fn settle(ceremonies: &Ceremonies, run: &mut Run) {
    let owner = owner_of(&run.ceremony);
    let snapshot = run.clone();
    for task in &mut run.tasks {
        let Some(task_id) = task.task_id.clone() else {
            continue;
        };
        if task.error.is_some() || task.state.is_some_and(|s| s.is_terminal()) {
            continue;
        }
        let scope = Scope {
            agent: task.target.clone(),
            owner: owner.clone(),
        };
        let (state, error) = match ceremonies.state.tasks.get(&scope, &task_id).await {
            Ok(record) => {
                let state = record.state();
                let failed = state.is_terminal() && state != sb_protocol::TaskState::Completed;
                let reason = record.task.status.message.as_ref().map(Message::text);
                (state, reason.filter(|_| failed))
            }
            Err(e) if e.kind == ErrorKind::TaskNotFound => {
                let last = task.state.unwrap_or(sb_protocol::TaskState::Submitted);
                (
                    last,
                    Some("the task is no longer kept (past task_ttl_secs)".to_owned()),
                )
            }
            Err(e) => {
                tracing::debug!(error = %e.message, task_id, "could not read a ceremony's task");
                continue;
            }
        };
        if task.state == Some(state) && task.error == error {
            continue;
        }
        task.state = Some(state);
        task.error = error.clone();
        let store = &*ceremonies.store;
        if let Err(e) = runs::settle(store, &snapshot, &task_id, state, error).await {
            tracing::warn!(error = %e, task_id, "could not note a ceremony task's state");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_firing_sends_the_text_the_data_and_the_skill_hint_without_waiting() {
        let mut ceremony: Ceremony = serde_json::from_value(json!({
            "id": "quinn.digest", "name": "Daily Digest", "schedule": "0 14 * * *",
            "skill": "qa_report", "targets": ["quinn"], "data": {"window": "24h"}
        }))
        .unwrap();
        let at = Utc.with_ymd_and_hms(2026, 11, 27, 14, 0, 0).unwrap();
        let sent = request(&ceremony, at);
        assert!(
            sent.returns_immediately(),
            "a firing never waits for the turn"
        );
        assert_eq!(sent.message.role, Role::User);
        assert_eq!(sent.message.task_id, None, "always a new task");
        assert_eq!(
            sent.message.text(),
            "Daily Digest",
            "the name without a message"
        );
        let parts = serde_json::to_value(&sent.message.parts).unwrap();
        assert_eq!(parts[1]["data"], json!({"window": "24h"}), "{parts}");
        let metadata = Value::Object(sent.metadata.unwrap());
        assert_eq!(
            metadata,
            json!({"skillHint": "qa_report", "ceremony": "quinn.digest", "scheduledFor": "2026-11-27T14:00:00.000Z"})
        );
        ceremony.message = Some("Write the digest".into());
        ceremony.data = None;
        let sent = request(&ceremony, at);
        assert_eq!(sent.message.parts.len(), 1);
        assert_eq!(sent.message.text(), "Write the digest");
        assert_eq!(owner_of("quinn.digest"), "ceremony:quinn.digest");
    }
}
