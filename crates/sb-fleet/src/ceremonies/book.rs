//! The ceremonies in force: those of the files (the operator's, changed by changing the
//! files) and those made through the API (kept in the [`FleetStore`], each stamped with
//! the agent whose key made it). Who may change what: the admin key anything made
//! through the API; an agent's key only what it made; nobody, through the API, what a
//! file defines.

use std::collections::BTreeMap;

use sb_store::{FleetStore, StoreError};

use super::definition::{Ceremony, CeremonyUpdate, Invalid, check_id};
use super::files::Loaded;
use super::stored;

/// Where the API's ceremonies are kept.
const MADE: &str = "ceremonies";

/// Who is asking, by the `X-API-Key` they sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    Admin,
    /// The agent whose key it is.
    Agent(String),
}

/// Why a request about ceremonies was refused.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error("{0}")]
    Invalid(#[from] Invalid),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    #[error("the ceremonies' store is unavailable; try again ({0})")]
    Unavailable(#[from] StoreError),
}

/// A ceremony and where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub ceremony: Ceremony,
    /// Defined by a file (not changed through the API).
    pub from_file: bool,
}

/// Every ceremony in force, by id: the files' and the API's (a file wins an id both
/// claim; the API refuses to make one a file has).
pub async fn all(
    files: &Loaded,
    store: &dyn FleetStore,
) -> Result<BTreeMap<String, Entry>, BookError> {
    let mut all = BTreeMap::new();
    for (id, bytes) in store.doc_list(MADE).await? {
        match serde_json::from_slice::<Ceremony>(&bytes) {
            Ok(ceremony) => {
                all.insert(
                    id,
                    Entry {
                        ceremony,
                        from_file: false,
                    },
                );
            }
            Err(e) => tracing::warn!(id, error = %e, "a stored ceremony cannot be read; skipped"),
        }
    }
    for (id, ceremony) in &files.ceremonies {
        let entry = Entry {
            ceremony: ceremony.clone(),
            from_file: true,
        };
        all.insert(id.clone(), entry);
    }
    Ok(all)
}

/// Makes `ceremony`, stamped with the agent whose key made it.
pub async fn create(
    files: &Loaded,
    store: &dyn FleetStore,
    caller: &Caller,
    mut ceremony: Ceremony,
) -> Result<Ceremony, BookError> {
    ceremony.created_by = match caller {
        Caller::Admin => None,
        Caller::Agent(agent) => Some(agent.clone()),
    };
    ceremony.check()?;
    if files.ceremonies.contains_key(&ceremony.id) {
        return Err(BookError::Conflict(format!(
            "ceremony {} is defined by a file; choose another id",
            ceremony.id
        )));
    }
    let bytes = stored::encode(&ceremony)?;
    if !store
        .doc_swap(MADE, &ceremony.id, None, Some(bytes))
        .await?
    {
        return Err(BookError::Conflict(format!(
            "ceremony {} exists already; update it instead",
            ceremony.id
        )));
    }
    Ok(ceremony)
}

/// The stored form and the ceremony of `id`, if `caller` may change it.
async fn changeable(
    files: &Loaded,
    store: &dyn FleetStore,
    caller: &Caller,
    id: &str,
) -> Result<(Vec<u8>, Ceremony), BookError> {
    check_id(id)?;
    if files.ceremonies.contains_key(id) {
        return Err(BookError::Forbidden(format!(
            "ceremony {id} is defined by a file of the ceremonies directory; change the file"
        )));
    }
    let Some(bytes) = store.doc_get(MADE, id).await? else {
        return Err(BookError::NotFound(format!("no ceremony {id}")));
    };
    let ceremony: Ceremony =
        serde_json::from_slice(&bytes).map_err(|e| StoreError::backend(e.to_string()))?;
    if let Caller::Agent(agent) = caller
        && ceremony.created_by.as_deref() != Some(agent.as_str())
    {
        let owner = ceremony.created_by.as_deref().unwrap_or("the admin");
        return Err(BookError::Forbidden(format!(
            "ceremony {id} belongs to {owner}: only its creator's key or the admin key may change it"
        )));
    }
    Ok((bytes, ceremony))
}

/// Applies `update` (only the fields it carries) to the ceremony `id`.
pub async fn update(
    files: &Loaded,
    store: &dyn FleetStore,
    caller: &Caller,
    id: &str,
    update: CeremonyUpdate,
) -> Result<Ceremony, BookError> {
    let (stored, ceremony) = changeable(files, store, caller, id).await?;
    let updated = ceremony.updated(update)?;
    let bytes = stored::encode(&updated)?;
    if !store.doc_swap(MADE, id, Some(&stored), Some(bytes)).await? {
        return Err(BookError::Conflict(format!(
            "ceremony {id} changed meanwhile; read it again and retry"
        )));
    }
    Ok(updated)
}

/// Removes the ceremony `id`.
pub async fn delete(
    files: &Loaded,
    store: &dyn FleetStore,
    caller: &Caller,
    id: &str,
) -> Result<(), BookError> {
    let (stored, _) = changeable(files, store, caller, id).await?;
    if !store.doc_swap(MADE, id, Some(&stored), None).await? {
        return Err(BookError::Conflict(format!(
            "ceremony {id} changed meanwhile; read it again and retry"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sb_store::MemoryStore;
    use serde_json::json;

    use super::*;

    fn sweep(id: &str) -> Ceremony {
        serde_json::from_value(json!({
            "id": id, "name": "Hourly Sweep", "schedule": "0 * * * *",
            "skill": "my_skill", "targets": ["my-agent"], "enabled": true
        }))
        .unwrap()
    }

    fn agent(name: &str) -> Caller {
        Caller::Agent(name.into())
    }

    #[tokio::test]
    async fn an_agents_key_stamps_its_ceremony_and_changes_only_its_own() {
        let store = MemoryStore::new();
        let files = Loaded::default();
        let mut claimed = sweep("my-agent.hourly-sweep");
        claimed.created_by = Some("someone-else".into());
        let made = create(&files, &store, &agent("my-agent"), claimed)
            .await
            .unwrap();
        assert_eq!(
            made.created_by.as_deref(),
            Some("my-agent"),
            "stamped, not taken from the body"
        );

        let pause = CeremonyUpdate {
            enabled: Some(false),
            ..Default::default()
        };
        let refused = update(&files, &store, &agent("intruder"), &made.id, pause.clone()).await;
        assert!(
            matches!(refused, Err(BookError::Forbidden(m)) if m.contains("belongs to my-agent"))
        );
        let refused = delete(&files, &store, &agent("intruder"), &made.id).await;
        assert!(matches!(refused, Err(BookError::Forbidden(_))));

        let paused = update(&files, &store, &agent("my-agent"), &made.id, pause)
            .await
            .unwrap();
        assert!(!paused.enabled);
        let renamed = update(
            &files,
            &store,
            &Caller::Admin,
            &made.id,
            CeremonyUpdate {
                name: Some("Renamed".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(
            !renamed.enabled,
            "an update without `enabled` leaves it paused"
        );
        assert_eq!(
            renamed.created_by.as_deref(),
            Some("my-agent"),
            "the admin keeps the owner"
        );
        delete(&files, &store, &Caller::Admin, &made.id)
            .await
            .unwrap();
        assert!(all(&files, &store).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn ids_are_checked_and_taken_once() {
        let store = MemoryStore::new();
        let files = Loaded::default();
        let bad = create(&files, &store, &Caller::Admin, sweep("has space")).await;
        assert!(
            matches!(bad, Err(BookError::Invalid(e)) if e.message.contains(super::super::definition::ID_RULE))
        );
        create(&files, &store, &Caller::Admin, sweep("x"))
            .await
            .unwrap();
        let twice = create(&files, &store, &Caller::Admin, sweep("x")).await;
        assert!(matches!(twice, Err(BookError::Conflict(_))));
        let missing = delete(&files, &store, &Caller::Admin, "nope").await;
        assert!(matches!(missing, Err(BookError::NotFound(_))));
    }

    #[tokio::test]
    async fn a_files_ceremony_is_listed_but_not_changed_through_the_api() {
        let store = MemoryStore::new();
        let mut files = Loaded::default();
        files
            .ceremonies
            .insert("ops.digest".into(), sweep("ops.digest"));
        let taken = create(&files, &store, &Caller::Admin, sweep("ops.digest")).await;
        assert!(matches!(taken, Err(BookError::Conflict(m)) if m.contains("file")));
        let changed = delete(&files, &store, &Caller::Admin, "ops.digest").await;
        assert!(matches!(changed, Err(BookError::Forbidden(m)) if m.contains("change the file")));
        let listed = all(&files, &store).await.unwrap();
        assert!(listed["ops.digest"].from_file);
    }
}
