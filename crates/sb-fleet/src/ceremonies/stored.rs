//! A document of the [`FleetStore`] that replicas change at once (a ceremony's cursor,
//! a run's outcomes): read, changed, written back by compare-and-set, read again when
//! another replica wrote in between.

use sb_store::{FleetStore, StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How often a change is tried again after losing a race: each loss means another
/// replica changed the document, so this bounds only pathological contention.
const ATTEMPTS: usize = 8;

/// Changes the document `id` of `collection` by `change`, which is given what is stored
/// (`None`: absent or unreadable) and answers the new value (`None`: leave it as it is).
pub(super) async fn update<T: Serialize + DeserializeOwned>(
    store: &dyn FleetStore,
    collection: &str,
    id: &str,
    mut change: impl FnMut(Option<T>) -> Option<T>,
) -> StoreResult<()> {
    for _ in 0..ATTEMPTS {
        let stored = store.doc_get(collection, id).await?;
        let current = stored
            .as_deref()
            .and_then(|bytes| serde_json::from_slice(bytes).ok());
        let Some(next) = change(current) else {
            return Ok(());
        };
        let next = encode(&next)?;
        if store
            .doc_swap(collection, id, stored.as_deref(), Some(next))
            .await?
        {
            return Ok(());
        }
    }
    Ok(())
}

/// A document's stored form.
pub(super) fn encode<T: Serialize>(value: &T) -> StoreResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| StoreError::backend(e.to_string()))
}
