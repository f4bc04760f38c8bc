//! The `conformance` checks of what an agent's card declares (or does not): streaming,
//! and push-notification configs. Declared, the operation must work; not declared, it
//! must be refused (the TCK's CORE-CAP requirements).

use futures::StreamExt;
use sb_client::CallError;
use sb_protocol::{ErrorKind, StreamResponse, Task, TaskPushNotificationConfig};

use super::conformance_checks::{
    Check, Probe, Verdict, attempt, describe, refused_with, unknown_id,
};

/// CORE-STREAM-001/002/003 when the card says the agent streams: the stream opens, its
/// events are readable, the first is a Task (then it closes at a terminal or
/// interrupted state) or the one Message; CORE-CAP-002 when it does not: refused.
pub(crate) async fn streaming(probe: &Probe<'_>) -> Check {
    let request = probe.message("tck-complete-task");
    if probe.card.capabilities.streaming != Some(true) {
        let (outcome, error) = attempt(probe, probe.transport.send_streaming(&request)).await;
        let (verdict, reason) = match (outcome, error) {
            (_, Err(CallError::A2A(e))) => (
                Verdict::Pass,
                format!("refused: {}", super::error::a2a_name(e.kind)),
            ),
            (_, Err(other)) => (
                Verdict::Fail,
                format!("not refused with an A2A error: {}", describe(&other)),
            ),
            (Err(reason), Ok(())) => (Verdict::Fail, reason),
            (Ok(_), Ok(())) => (
                Verdict::Fail,
                "the card says it does not stream, but a stream opened".into(),
            ),
        };
        return probe.check("streaming refused", "CORE-CAP-002", verdict, reason);
    }
    let check = |verdict, reason| {
        probe.check(
            "SendStreamingMessage",
            "CORE-STREAM-001, CORE-STREAM-002, CORE-STREAM-003",
            verdict,
            reason,
        )
    };
    let follow = async {
        let mut stream = probe
            .transport
            .send_streaming(&request)
            .await
            .map_err(|e| describe(&e))?;
        let first = match stream.next().await {
            None => return Err("the stream closed without an event".to_owned()),
            Some(item) => item.map_err(|e| describe(&e))?.event,
        };
        let mut state = match &first {
            StreamResponse::Message(_) => None,
            StreamResponse::Task(task) => Some(task.status.state),
            _ => return Err("the first event is not a Task or a Message".to_owned()),
        };
        let mut events = 1;
        while let Some(item) = stream.next().await {
            let event = item.map_err(|e| describe(&e))?.event;
            events += 1;
            match (&state, event) {
                (None, _) => return Err("a Message was followed by more events".to_owned()),
                (Some(_), StreamResponse::StatusUpdate(update)) => {
                    state = Some(update.status.state)
                }
                (Some(_), StreamResponse::Task(task)) => state = Some(task.status.state),
                _ => {}
            }
        }
        match state {
            None => Ok("one Message, then closed".to_owned()),
            Some(s) if s.is_terminal() || s.is_interrupted() => Ok(format!(
                "{events} events, closed at {}",
                super::render::state_name(s)
            )),
            Some(s) => Err(format!(
                "closed while the task was {}",
                super::render::state_name(s)
            )),
        }
    };
    match tokio::time::timeout(probe.timeout, follow).await {
        Err(_) => check(
            Verdict::Fail,
            format!("the stream did not end within {:?}", probe.timeout),
        ),
        Ok(Err(reason)) => check(Verdict::Fail, reason),
        Ok(Ok(reason)) => check(Verdict::Pass, reason),
    }
}

/// PUSH-CREATE-001, PUSH-GET-001, PUSH-LIST-001, PUSH-DEL-001 when the card declares
/// push notifications (on the task just made); CORE-CAP-001 when it does not.
pub(crate) async fn push_configs(probe: &Probe<'_>, task: Option<&Task>) -> Check {
    let task_id = task.map_or_else(unknown_id, |t| t.id.clone());
    let config = TaskPushNotificationConfig {
        tenant: probe.chosen.tenant.clone(),
        id: None,
        task_id: task_id.clone(),
        url: probe.webhook_url.clone(),
        token: None,
        authentication: None,
    };
    if probe.card.capabilities.push_notifications != Some(true) {
        let (outcome, error) = attempt(probe, probe.transport.create_push_config(&config)).await;
        let (verdict, reason) =
            refused_with(outcome, error, ErrorKind::PushNotificationNotSupported);
        return probe.check("push config refused", "CORE-CAP-001", verdict, reason);
    }
    let check = |verdict, reason| {
        probe.check(
            "push config lifecycle",
            "PUSH-CREATE-001, PUSH-GET-001, PUSH-LIST-001, PUSH-DEL-001",
            verdict,
            reason,
        )
    };
    if task.is_none() {
        return check(
            Verdict::Skip,
            "SendMessage made no task to configure".into(),
        );
    }
    let (created, refusal) = attempt(probe, probe.transport.create_push_config(&config)).await;
    // An agent may refuse a URL it cannot resolve or will not deliver to (a private
    // address): that is its policy, not a departure from the spec.
    if let Err(CallError::A2A(e)) = &refusal
        && e.kind == ErrorKind::InvalidParams
    {
        return check(
            Verdict::Skip,
            format!(
                "the agent refused the webhook URL {}: {}; give one it accepts with --webhook-url",
                config.url, e.message
            ),
        );
    }
    let lifecycle = async {
        let created = created.map_err(|r| format!("create: {r}"))?;
        let id = created
            .id
            .clone()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| "create: the config has no id".to_owned())?;
        let read = probe
            .within(probe.transport.get_push_config(&task_id, &id))
            .await
            .map_err(|r| format!("get: {r}"))?;
        if read.url != config.url {
            return Err(format!(
                "get: url {:?}, expected {:?}",
                read.url, config.url
            ));
        }
        let listed = probe
            .within(probe.transport.list_push_configs(&task_id))
            .await
            .map_err(|r| format!("list: {r}"))?;
        if !listed.iter().any(|c| c.id.as_deref() == Some(id.as_str())) {
            return Err(format!("list: config {id} is not listed"));
        }
        probe
            .within(probe.transport.delete_push_config(&task_id, &id))
            .await
            .map_err(|r| format!("delete: {r}"))?;
        Ok::<_, String>(format!("config {id} created, read, listed, deleted"))
    };
    match lifecycle.await {
        Ok(reason) => check(Verdict::Pass, reason),
        Err(reason) => check(Verdict::Fail, reason),
    }
}
