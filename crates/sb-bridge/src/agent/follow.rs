//! Following the upstream task: the turn's message sent upstream unless it went
//! already, then the upstream task mirrored event by event, read by its stream, by the
//! push notifications this process takes, or by polling.

use std::sync::Arc;

use sb_client::follow::{FollowError, FollowSettings, Follower};
use sb_protocol::card::RESUME_EXTENSION;
use sb_protocol::{Message, StreamResponse, TaskPushNotificationConfig, TaskState};

use super::{BridgeAgent, Ended};
use crate::forward::{self, Answer};
use crate::mirror::{Mirror, Mirrored};
use crate::push::{PushReceiver, PushWatch};
use crate::upstream::Connection;

impl BridgeAgent {
    /// Sends the turn's message upstream unless it went already, then mirrors the
    /// upstream task until it settles.
    pub(super) async fn forward_and_follow(
        &self,
        message: &Message,
        connection: &Connection,
        mirror: &mut Mirror,
    ) -> Ended {
        let mut opened = None;
        if !mirror.link.forwarded(&message.message_id) {
            let continuing = mirror.link.upstream_task_id.is_some();
            let timeout = self.upstream.call_timeout();
            let answer = match forward::send(connection, message, &mirror.link, timeout).await {
                Ok(answer) => answer,
                // A follow-up it refused leaves an upstream task behind: that is a failure.
                Err(error) if continuing => return Ended::Failed(forward::refusal(&error)),
                Err(error) => return Ended::Refused(forward::refusal(&error)),
            };
            mirror.link.forwarded.push(message.message_id.clone());
            match answer.upstream_ids() {
                // A message-only reply to a task's first message sent here (the task was
                // made before the bridge opened it): the task ends with it.
                None => {
                    return self
                        .step(mirror, answer.event)
                        .await
                        .unwrap_or(Ended::Settled);
                }
                Some((task_id, context_id)) => mirror.link_to(&task_id, &context_id),
            }
            opened = Some(answer);
        } else if let Some(task_id) = &mirror.link.upstream_task_id {
            // Sent when the conversation was opened, in this process: its first answer.
            opened = self.opened.take(task_id);
        }
        let Some(upstream_task) = mirror.link.upstream_task_id.clone() else {
            return Ended::Failed("the upstream never made a task for this one".into());
        };
        let mut stream = None;
        if let Some(Answer {
            event,
            stream: rest,
        }) = opened
        {
            if let Some(ended) = self.step(mirror, event).await {
                return ended;
            }
            stream = rest;
        }
        let card = &connection.card.found.card;
        let streaming = card.capabilities.streaming == Some(true);
        let pushes = card.capabilities.push_notifications == Some(true);
        let watch = match (&self.push, streaming, pushes) {
            (Some(receiver), false, true) => {
                self.watch_pushes(connection, &upstream_task, receiver)
                    .await
            }
            _ => None,
        };
        let followed_by = match (streaming, &watch) {
            (true, _) => "stream",
            (false, Some(_)) => "push",
            (false, None) => "poll",
        };
        mirror.link.followed_by = Some(followed_by.to_owned());
        let settings = FollowSettings {
            idle_timeout: self.upstream.settings.stall_timeout(),
            streaming,
            resumable: card
                .capabilities
                .extensions
                .iter()
                .any(|e| e.uri == RESUME_EXTENSION),
            call_timeout: self.upstream.call_timeout(),
        };
        let mut follower = Follower::new(&*connection.transport, &upstream_task, settings);
        if let Some(stream) = stream {
            follower = follower.with_stream(stream);
        }
        if let Some((watch, _)) = &watch {
            follower = follower.with_wake(watch.wake.clone());
        }
        let ended = self.follow(follower, mirror, &upstream_task).await;
        if let Some((_, Some(config_id))) = watch {
            let timeout = self.upstream.call_timeout();
            let deleted = connection
                .transport
                .delete_push_config(&upstream_task, &config_id);
            if let Ok(Err(e)) = tokio::time::timeout(timeout, deleted).await {
                tracing::debug!(task_id = %upstream_task, error = %e, "could not delete the upstream push config");
            }
        }
        ended
    }

    async fn follow(
        &self,
        mut follower: Follower<'_>,
        mirror: &mut Mirror,
        upstream_task: &str,
    ) -> Ended {
        loop {
            let event = match follower.next().await {
                Ok(event) => event,
                Err(FollowError::Stalled(after)) => {
                    return Ended::Failed(format!(
                        "the upstream agent sent no news of its task {upstream_task} for {}s",
                        after.as_secs()
                    ));
                }
                Err(FollowError::Lost(error)) => {
                    return Ended::Failed(format!(
                        "the upstream task {upstream_task} cannot be followed: {error}"
                    ));
                }
            };
            if let Some(ended) = self.step(mirror, event).await {
                follower.finish();
                return ended;
            }
        }
    }

    /// Registers a push config on the upstream task pointing at this process's
    /// receiver: the registration and the config's id (to delete it after), or `None`
    /// when the upstream refuses (the task is then polled).
    async fn watch_pushes(
        &self,
        connection: &Connection,
        task_id: &str,
        receiver: &Arc<PushReceiver>,
    ) -> Option<(PushWatch, Option<String>)> {
        let watch = receiver.watch();
        let config = TaskPushNotificationConfig {
            tenant: None,
            id: None,
            task_id: task_id.to_owned(),
            url: watch.url.clone(),
            token: Some(watch.token.clone()),
            authentication: None,
        };
        let timeout = self.upstream.call_timeout();
        let created = connection.transport.create_push_config(&config);
        match tokio::time::timeout(timeout, created).await {
            Ok(Ok(created)) => Some((watch, created.id)),
            Ok(Err(e)) => {
                tracing::info!(task_id, error = %e, "the upstream took no push config; its task is polled");
                None
            }
            Err(_) => {
                tracing::info!(
                    task_id,
                    "the upstream did not answer a push config in time; its task is polled"
                );
                None
            }
        }
    }

    /// Mirrors one event: `Some` once the task settled (or could not be mirrored).
    async fn step(&self, mirror: &mut Mirror, event: StreamResponse) -> Option<Ended> {
        let mirrored = match event {
            // Alone, not in a task's stream: a message-only reply, which ends the task.
            StreamResponse::Message(reply) if mirror.link.upstream_task_id.is_none() => mirror
                .complete_with(reply)
                .await
                .map(|()| Mirrored::Settled(TaskState::Completed)),
            event => mirror.apply(event).await,
        };
        match mirrored {
            Ok(Mirrored::Running) => None,
            Ok(Mirrored::Settled(_)) => Some(Ended::Settled),
            Err(e) => Some(Ended::Failed(format!(
                "could not mirror the upstream task: {}",
                e.message
            ))),
        }
    }
}
