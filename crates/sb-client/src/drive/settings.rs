//! How a [`Driver`](super::Driver) submits and follows a task, and the check of an
//! agent's card against what the caller needs, made before anything is sent.

use std::time::Duration;

use sb_protocol::card::AgentCard;

use crate::interface::Preferences;
use crate::validate::{Required, meets};

/// How a [`Driver`](super::Driver) submits and follows a task.
#[derive(Clone, Debug)]
pub struct DriveSettings {
    /// What the agent's card must offer; checked before the first submission.
    pub required: Required,
    /// The output media types the caller can take: when any are named, the card must
    /// produce one of them, and they are sent as the message's `acceptedOutputModes`.
    pub output_modes: Vec<String>,
    /// Which of the card's interfaces to call.
    pub preferences: Preferences,
    /// Retries of a failed submission (so `retries + 1` attempts in all).
    pub retries: u32,
    /// The wait before the first retry; it doubles before each next one (up to 30 s),
    /// each stretched by a random share of itself (the workspace's one backoff).
    pub retry_delay: Duration,
    /// How long a fetched card is trusted.
    pub card_ttl: Duration,
    /// No news of the task for this long: it is canceled.
    pub idle_timeout: Duration,
    /// A task still running this long after its first submission is canceled.
    pub budget: Duration,
    /// How long one call may take.
    pub call_timeout: Duration,
    /// Follow by stream when the card streams; `false` always polls.
    pub streaming: bool,
}

impl Default for DriveSettings {
    fn default() -> Self {
        DriveSettings {
            required: Required::default(),
            output_modes: Vec::new(),
            preferences: Preferences::default(),
            retries: 3,
            retry_delay: Duration::from_millis(500),
            card_ttl: Duration::from_secs(5 * 60),
            idle_timeout: Duration::from_secs(120),
            budget: Duration::from_secs(30 * 60),
            call_timeout: Duration::from_secs(30),
            streaming: true,
        }
    }
}

/// What the card lacks of what the caller needs, if anything.
pub(super) fn offers(card: &AgentCard, settings: &DriveSettings) -> Result<(), String> {
    let mut missing: Vec<String> = meets(card, &settings.required).err().into_iter().collect();
    let wanted = &settings.output_modes;
    let mut produced = card
        .default_output_modes
        .iter()
        .chain(card.skills.iter().flat_map(|s| &s.output_modes));
    if !wanted.is_empty() && !produced.any(|m| wanted.iter().any(|w| w.eq_ignore_ascii_case(m))) {
        missing.push(format!(
            "the agent produces none of the output modes {wanted:?}"
        ));
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(missing.join("; ")),
    }
}
