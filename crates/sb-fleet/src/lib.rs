//! The fleet layer: what Switchboard knows about the fleet as a whole, for every agent
//! whatever its kind — each finished task as an outcome of its agent and skill (fleet
//! health), the tasks waiting for a person (the inbox), and the invocations it makes on
//! a schedule (ceremonies).
//!
//! # Layout
//! - [`config`]: the `[fleet]` section of the configuration.
//! - [`outcome`]: a finished task read as an [`Outcome`] (skill, ending, reason,
//!   duration, `cost-v1` cost).
//! - [`health`]: outcomes counted into shared time buckets, as metrics, and reported.
//! - [`waiting`]: the index of tasks waiting for a person.
//! - [`announce`]: each new wait announced to the inbox's notification webhook.
//! - [`notice_post`]: how those notices and the ceremonies' are posted (signed,
//!   retried, to allowed addresses only).
//! - [`ceremonies`]: scheduled invocations: definitions (files and the API's, with who
//!   may change which), firings claimed once across replicas, runs and their notices
//!   (the gateway's `ceremonies` module serves the API and sends the firings).
//! - [`service`]: [`FleetService`] (what a gateway reads), [`LocalFleet`], and
//!   [`FleetTransitions`], which the task service tells of each committed change.
//!
//! Where the state lives: in the [`sb_store::FleetStore`] of the deployment's backend,
//! so every replica counts into, and reads from, the same buckets and index.

pub mod announce;
pub mod ceremonies;
pub mod config;
pub mod health;
pub mod notice_post;
pub mod outcome;
pub mod service;
pub mod waiting;

pub use announce::Announcer;
pub use config::{CeremoniesConfig, FleetConfig, InboxConfig, RouterConfig};
pub use health::metrics::FleetMetrics;
pub use health::recorder::OutcomeRecorder;
pub use health::report::{AgentSkills, HealthPolicy, HealthReport};
pub use health::window::Window;
pub use notice_post::{NoticePoster, PosterSettings};
pub use outcome::Outcome;
pub use service::{FleetService, FleetTransitions, LocalFleet};
pub use waiting::WaitingIndex;
