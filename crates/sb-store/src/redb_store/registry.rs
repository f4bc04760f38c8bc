//! The agent registry's records ([`RegistryStore`]): agents by name in
//! [`AGENTS`], the signing key in [`REGISTRY_META`].
//! Writes go through the writer thread and the journal like every other write
//! ([`WriteOp::PutAgent`] and its neighbours); reads open the file.

use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};
use tokio::sync::{broadcast, oneshot};

use super::writer::WriteOp;
use super::{AGENTS, REGISTRY_META, RedbStore};
use crate::traits::{RegistryStore, StoreError, StoreResult};

/// The key of the card-signing key in [`REGISTRY_META`].
pub(super) const SIGNING_KEY: &str = "signing_key";

/// The registry's tables, open in one write transaction.
pub(super) struct RegistryTables<'txn> {
    pub(super) agents: redb::Table<'txn, &'static str, &'static [u8]>,
    pub(super) meta: redb::Table<'txn, &'static str, &'static [u8]>,
}

impl<'txn> RegistryTables<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction) -> StoreResult<RegistryTables<'txn>> {
        Ok(RegistryTables {
            agents: txn.open_table(AGENTS).map_err(StoreError::backend)?,
            meta: txn.open_table(REGISTRY_META).map_err(StoreError::backend)?,
        })
    }
}

/// Whether the agent is stored.
pub(super) fn has_agent(tables: &RegistryTables<'_>, name: &str) -> StoreResult<bool> {
    let found = tables.agents.get(name).map_err(StoreError::backend)?;
    Ok(found.is_some())
}

/// The stored signing key, if any.
pub(super) fn signing_key(tables: &RegistryTables<'_>) -> StoreResult<Option<Vec<u8>>> {
    let found = tables.meta.get(SIGNING_KEY).map_err(StoreError::backend)?;
    Ok(found.map(|bytes| bytes.value().to_vec()))
}

#[async_trait]
impl RegistryStore for RedbStore {
    async fn list_agents(&self) -> StoreResult<Vec<(String, Vec<u8>)>> {
        self.read(|txn| {
            let table = txn.open_table(AGENTS).map_err(StoreError::backend)?;
            let mut agents = Vec::new();
            // redb keeps keys in order: sorted by name already.
            for row in table.iter().map_err(StoreError::backend)? {
                let (name, value) = row.map_err(StoreError::backend)?;
                agents.push((name.value().to_owned(), value.value().to_vec()));
            }
            Ok(agents)
        })
        .await
    }

    async fn put_agent(&self, name: &str, value: Vec<u8>) -> StoreResult<()> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::PutAgent(name.to_owned(), value, tx), rx)
            .await?;
        // Once acknowledged (durable): a watcher that reloads the agent finds it.
        // No receiver is fine: nobody watches.
        let _ = self.agents_changed.send(name.to_owned());
        Ok(())
    }

    async fn remove_agent(&self, name: &str) -> StoreResult<bool> {
        let (tx, rx) = oneshot::channel();
        let existed = self
            .write(WriteOp::RemoveAgent(name.to_owned(), tx), rx)
            .await?;
        let _ = self.agents_changed.send(name.to_owned());
        Ok(existed)
    }

    async fn signing_key(&self, generated: Vec<u8>) -> StoreResult<Vec<u8>> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::SigningKey(generated, tx), rx).await
    }

    async fn watch_agents(&self) -> StoreResult<broadcast::Receiver<String>> {
        Ok(self.agents_changed.subscribe())
    }
}

/// Makes the file look like one written before the registry was stored in it.
#[cfg(test)]
pub(super) fn forget_registry_tables(db: &redb::Database) {
    let txn = db.begin_write().unwrap();
    assert!(txn.delete_table(AGENTS).unwrap());
    assert!(txn.delete_table(REGISTRY_META).unwrap());
    txn.commit().unwrap();
}
