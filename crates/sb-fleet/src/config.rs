//! The `[fleet]` section of Switchboard's configuration: the fleet layer's settings,
//! deserialised here directly.

use serde::Deserialize;

use crate::health::report::HealthPolicy;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FleetConfig {
    /// `[fleet.health]`: when an agent is healthy, when a wait is too long.
    pub health: HealthPolicy,
}

impl FleetConfig {
    /// What the types cannot say.
    pub fn validate(&self) -> Result<(), String> {
        let rate = self.health.min_success_rate;
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!(
                "fleet.health.min_success_rate must be between 0 and 1, not {rate}"
            ));
        }
        if self.health.waiting_alert_secs == 0 {
            return Err("fleet.health.waiting_alert_secs must be positive".into());
        }
        Ok(())
    }
}
