//! The dispatcher's Prometheus metrics: attempts by outcome, and dead letters.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
pub struct AttemptLabels {
    /// `delivered`, `refused` (4xx, not retried) or `failed` (retried if attempts remain).
    pub outcome: &'static str,
}

#[derive(Debug, Default)]
pub struct DeliveryMetrics {
    attempts: Family<AttemptLabels, Counter>,
    dead_letters: Counter,
}

impl DeliveryMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "switchboard_webhook_attempts",
            "Webhook delivery attempts by outcome",
            self.attempts.clone(),
        );
        registry.register(
            "switchboard_webhook_dead_letters",
            "Deliveries that failed for good",
            self.dead_letters.clone(),
        );
    }

    pub(crate) fn attempt(&self, outcome: &'static str) {
        self.attempts
            .get_or_create(&AttemptLabels { outcome })
            .inc();
    }

    pub(crate) fn dead_letter(&self) {
        self.dead_letters.inc();
    }

    /// Deliveries given up on so far.
    pub fn dead_letters(&self) -> u64 {
        self.dead_letters.get()
    }
}
