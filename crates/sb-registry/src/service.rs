//! The registry as a service: register, replace and remove agents, and read the fleet.
//! [`crate::LocalRegistry`] keeps the definitions in a store; in the split deployment a
//! gateway reaches the registry service through a gRPC client implementing the same trait.

use std::sync::Arc;

use async_trait::async_trait;

use crate::card::CardDefaults;
use crate::definition::AgentDefinition;
use crate::fleet::{Fleet, ServedAgent};
use crate::registration::Source;
use crate::validate::FieldError;

/// Whether this deployment can run an agent, and what its kind brings to its card (a
/// built-in's description and skills, an embedded agent's own description).
pub trait Admission: Send + Sync + std::fmt::Debug + 'static {
    fn admit(&self, definition: &AgentDefinition) -> Result<CardDefaults, FieldError>;
}

/// Why a registry operation failed (sent as JSON between services).
#[derive(Clone, Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum RegistryError {
    /// The definition is invalid, or cannot run in this deployment.
    #[error("{0}")]
    Invalid(FieldError),
    #[error("{0}")]
    NotFound(String),
    /// The store or the registry service could not be reached; trying again may work.
    #[error("{0}")]
    Unavailable(String),
}

impl From<FieldError> for RegistryError {
    fn from(error: FieldError) -> RegistryError {
        RegistryError::Invalid(error)
    }
}

/// What a put did.
#[derive(Clone, Debug)]
pub struct Put {
    /// The agent was not registered before (or had been removed).
    pub created: bool,
    /// Whether anything changed; a worker's announcement never replaces an operator's
    /// definition, and an identical definition changes nothing.
    pub changed: bool,
    /// The agent as registered now.
    pub agent: Arc<ServedAgent>,
}

#[async_trait]
pub trait RegistryService: Send + Sync + std::fmt::Debug + 'static {
    /// Registers `definition`, or replaces the agent's definition.
    async fn put(&self, definition: AgentDefinition, source: Source) -> Result<Put, RegistryError>;

    /// Removes an agent: no new messages; its tasks stay readable by their owners.
    async fn remove(&self, name: &str) -> Result<(), RegistryError>;

    /// The fleet as this process sees it now (in memory).
    fn fleet(&self) -> Arc<Fleet>;
}
