//! The frames of a stream: the task's snapshot then its live events (log replay, then
//! live, from the fan-out), where a stream ends (a closing state, or a turn that is over
//! and fully sent), SubscribeToTask with the resume cursor, and the resume tag.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::StreamExt;
use sb_agent::TurnOver;
use sb_protocol::requests::require_id;
use sb_protocol::{A2AError, StreamResponse};
use sb_store::TaskRecord;
use sb_tasks::Scope;

use super::{Frame, FrameStream};
use crate::AppState;

pub use sb_protocol::card::RESUME_EXTENSION;

pub(super) fn single_frame(seq: u64, event: StreamResponse) -> FrameStream {
    let frame = Frame {
        seq,
        event: event.into(),
        json: Default::default(),
    };
    futures::stream::once(async move { Ok(frame) }).boxed()
}

/// The task's events after `after` as stream frames (log replay, then live).
pub(super) fn frames_after(state: &AppState, task_id: &str, after: u64) -> FrameStream {
    state
        .fanout
        .subscribe(task_id, after)
        .map(|r| {
            r.map(|e| Frame {
                seq: e.seq,
                event: e.event,
                json: e.json,
            })
        })
        .boxed()
}

/// The current task, then live events until the task ends (or waits for input again).
/// A task that is waiting already does not end the stream with its snapshot: whoever
/// subscribes to it wants to see what happens after the answer (TCK STREAM-SUB-002).
pub(super) fn snapshot_then_live(
    state: &AppState,
    record: TaskRecord,
    limit: Option<usize>,
) -> FrameStream {
    let live = frames_after(state, &record.task.id, record.seq);
    let first = Frame {
        seq: record.seq,
        event: StreamResponse::Task(record.task.with_history_limit(limit)).into(),
        json: Default::default(),
    };
    let head = futures::stream::once(async move { Ok(first) });
    head.chain(until_end(live)).boxed()
}

/// Ends a SendStreamingMessage stream once the agent's turn is over and every event it
/// committed has been sent, even if the agent left the task working (a kept-open task
/// continues on the next message; SubscribeToTask follows it further). A turn whose end
/// could not be stored ends the stream with that error, after what was stored.
pub(super) fn until_turn_over(
    state: AppState,
    scope: Scope,
    task_id: String,
    frames: FrameStream,
    turn: TurnOver,
) -> FrameStream {
    struct Progress {
        frames: FrameStream,
        turn: Option<TurnOver>,
        last_seq: u64,
        stop_at: Option<u64>,
        unsaved: Option<A2AError>,
    }
    let start = Progress {
        frames,
        turn: Some(turn),
        last_seq: 0,
        stop_at: None,
        unsaved: None,
    };
    futures::stream::unfold(start, move |mut p| {
        let (state, scope, task_id) = (state.clone(), scope.clone(), task_id.clone());
        async move {
            loop {
                if p.stop_at.is_some_and(|stop| p.last_seq >= stop) {
                    return p.unsaved.take().map(|err| (Err(err), p));
                }
                let item = match p.turn.as_mut() {
                    // The turn first: a turn end that is ready (and may carry the error
                    // of an end that could not be stored) is taken before frames that
                    // are ready too, which could otherwise run to the closing frame.
                    Some(turn) => tokio::select! {
                        biased;
                        settled = turn => {
                            p.turn = None;
                            // Everything the turn committed is at or below the task's seq now.
                            let at_hand = match settled {
                                Ok(record) => record.map(|r| r.seq),
                                Err(unsaved) => {
                                    p.unsaved = Some(unsaved);
                                    None
                                }
                            };
                            let seq = match at_hand {
                                Some(seq) => seq,
                                None => state.tasks.get(&scope, &task_id).await.map(|r| r.seq).unwrap_or(0),
                            };
                            p.stop_at = Some(seq);
                            continue;
                        }
                        item = p.frames.next() => item,
                    },
                    None => p.frames.next().await,
                };
                let Some(item) = item else {
                    return p.unsaved.take().map(|err| (Err(err), p));
                };
                if let Ok(frame) = &item {
                    p.last_seq = p.last_seq.max(frame.seq);
                }
                return Some((item, p));
            }
        }
    })
    .boxed()
}

/// Ends the stream after the frame that closes it (terminal or interrupted state), or
/// after an error item. The frames behind it are dropped with that item, so the task's
/// bus subscription ends with the stream's last frame, not with the response.
pub fn until_end(frames: FrameStream) -> FrameStream {
    UntilEnd {
        frames: Some(frames),
    }
    .boxed()
}

struct UntilEnd {
    frames: Option<FrameStream>,
}

impl futures::Stream for UntilEnd {
    type Item = Result<Frame, A2AError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(frames) = self.frames.as_mut() else {
            return Poll::Ready(None);
        };
        let item = std::task::ready!(frames.poll_next_unpin(cx));
        let ends = match &item {
            Some(Ok(frame)) => frame.event.ends_stream(),
            Some(Err(_)) | None => true,
        };
        if ends {
            self.frames = None;
        }
        Poll::Ready(item)
    }
}

/// A subscription, and whether it honoured the client's resume cursor.
pub struct Subscription {
    pub frames: FrameStream,
    pub resumed: bool,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("resumed", &self.resumed)
            .finish_non_exhaustive()
    }
}

/// SubscribeToTask: without a cursor, the current task then live events (a finished
/// task is an error, spec §3.1.6). With a `Last-Event-ID` cursor N (the resume
/// extension): exactly the events after N, then live ones; a cursor the log cannot
/// serve gets one reset frame, the current task marked `reset`, then live events.
pub async fn subscribe(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    cursor: Option<u64>,
) -> Result<Subscription, A2AError> {
    require_id(task_id, "id")?;
    let record = state.tasks.get(scope, task_id).await?;
    let terminal = record.state().is_terminal();
    let Some(after) = cursor else {
        if terminal {
            return Err(A2AError::unsupported(format!(
                "task {task_id} is already {}; use GetTask to read its result",
                record.state().as_v03_str()
            ))
            .with_task(task_id));
        }
        let frames = snapshot_then_live(state, record, None);
        return Ok(Subscription {
            frames,
            resumed: false,
        });
    };
    let live = |from: u64| frames_after(state, task_id, from);
    if after > record.seq {
        // A cursor from the future (e.g. a restored backup): the client adopts ours.
        let mut task = record.task.clone();
        let marker = serde_json::json!({"seq": record.seq, "reset": true});
        task.metadata
            .get_or_insert_with(Default::default)
            .insert(RESUME_EXTENSION.into(), marker);
        let reset = Frame {
            seq: record.seq,
            event: StreamResponse::Task(task).into(),
            json: Default::default(),
        };
        let head = futures::stream::once(async move { Ok(reset) });
        let frames = if terminal {
            head.boxed()
        } else {
            head.chain(until_end(live(record.seq))).boxed()
        };
        return Ok(Subscription {
            frames,
            resumed: true,
        });
    }
    if after == record.seq && terminal {
        // The client has everything already.
        return Ok(Subscription {
            frames: futures::stream::empty().boxed(),
            resumed: true,
        });
    }
    Ok(Subscription {
        frames: until_end(live(after)),
        resumed: true,
    })
}

/// Adds `metadata[RESUME_EXTENSION] = {"seq": n}` to a task event, for clients that
/// activated the extension (and gRPC later, which has no SSE id).
pub fn tag_with_seq(mut frame: Frame) -> Frame {
    let seq = frame.seq;
    // Copied for this stream alone: the shared event stays untagged.
    let metadata = match std::sync::Arc::make_mut(&mut frame.event) {
        StreamResponse::Task(task) => &mut task.metadata,
        StreamResponse::StatusUpdate(ev) => &mut ev.metadata,
        StreamResponse::ArtifactUpdate(ev) => &mut ev.metadata,
        StreamResponse::Message(_) => return frame,
    };
    let entry = metadata
        .get_or_insert_with(Default::default)
        .entry(RESUME_EXTENSION.to_owned());
    match entry {
        serde_json::map::Entry::Occupied(_) => {}
        serde_json::map::Entry::Vacant(slot) => {
            slot.insert(serde_json::json!({"seq": seq}));
            // The shared JSON is of the untagged event.
            frame.json = sb_store::EventJson::default();
        }
    }
    frame
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn status_frame(seq: u64, state: &str) -> Frame {
        let update = serde_json::json!({"statusUpdate": {
            "taskId": "t", "contextId": "c", "status": {"state": state}
        }});
        Frame {
            seq,
            event: Arc::new(serde_json::from_value(update).unwrap()),
            json: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_stream_ends_with_its_closing_frame_and_lets_go_of_what_feeds_it() {
        // Stands for the task's bus subscription: alive as long as the frames behind it.
        let subscription = Arc::new(());
        let held = subscription.clone();
        let frames = futures::stream::iter([
            status_frame(1, "TASK_STATE_WORKING"),
            status_frame(2, "TASK_STATE_COMPLETED"),
            status_frame(3, "TASK_STATE_WORKING"),
        ])
        .map(move |frame| {
            let _held = &held;
            Ok(frame)
        })
        .boxed();
        let mut stream = until_end(frames);
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(first.seq, 1);
        assert_eq!(Arc::strong_count(&subscription), 2);
        let last = stream.next().await.unwrap().unwrap();
        assert_eq!(last.seq, 2);
        assert_eq!(
            Arc::strong_count(&subscription),
            1,
            "released with the last frame"
        );
        assert!(stream.next().await.is_none());
    }

    #[test]
    fn tagging_a_stream_leaves_the_shared_event_alone() {
        let frame = status_frame(3, "TASK_STATE_WORKING");
        let shared = frame.event.clone();
        let untagged_json = frame.json.clone();
        let tagged = tag_with_seq(frame);
        let StreamResponse::StatusUpdate(ev) = &*tagged.event else {
            panic!("still a status update");
        };
        let marker = ev.metadata.as_ref().and_then(|m| m.get(RESUME_EXTENSION));
        assert_eq!(marker, Some(&serde_json::json!({"seq": 3})));
        // Every other stream of the task shares `shared`: it must not carry the tag.
        let StreamResponse::StatusUpdate(original) = &*shared else {
            panic!("still a status update");
        };
        assert!(original.metadata.is_none());
        // Nor the JSON made once for all the streams.
        assert!(!untagged_json.render(&shared).contains(RESUME_EXTENSION));
    }
}
