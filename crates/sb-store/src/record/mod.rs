//! The stored shapes.
//!
//! - `task`: a task as stored ([`TaskRecord`]), what the compare-and-set needs of it
//!   ([`TaskHead`]), and a conditional write of it with its events ([`TaskCommit`]);
//! - `event`: one event of a task's log ([`StoredEvent`]), its JSON made once
//!   ([`EventJson`]), and the notice the all-tasks feed carries of it ([`EventNotice`]);
//! - `push`: push-notification configs as stored ([`PushConfigRecord`]) and the
//!   deliveries that failed for good ([`DeadLetter`]);
//! - `query`: a ListTasks query ([`TaskQuery`]) and its pages ([`TaskPage`]).

mod event;
mod push;
mod query;
mod task;

pub use event::{EventJson, EventNotice, StoredEvent};
pub use push::{DeadLetter, PushConfigRecord, StoredVersion};
pub use query::{ListPosition, TaskPage, TaskQuery};
pub use task::{TaskCommit, TaskHead, TaskJson, TaskRecord};
