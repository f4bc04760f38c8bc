//! When ceremonies fire, exactly once across replicas: every replica looks at every
//! enabled ceremony; each firing time is claimed in the store
//! (`ceremony:{id}:{unix ms}`), and only the replica whose claim wins fires it. A
//! ceremony's cursor (the last firing time dealt with, kept in the store) says where
//! to look from, so a firing that came while every process was down is found at the
//! next start: fired late if it is within the catch-up grace, recorded as missed if
//! not. A restart never fires twice: the claim of a firing outlives any restart.

use chrono::{DateTime, Duration, Timelike, Utc};
use sb_store::{FleetStore, StoreResult};
use serde::{Deserialize, Serialize};

use super::definition::{Ceremony, parse_schedule};
use super::stored;

/// Where each ceremony's cursor is kept.
const CURSORS: &str = "ceremony-cursors";
/// How long a firing's claim is kept: far longer than any cursor lags behind it.
const CLAIM_KEPT: Duration = Duration::days(7);
/// Most firings of one ceremony dealt with in one look (a ceremony every minute, down
/// for a month, is not 43,200 records at once; the rest come at the next looks).
const MOST_PER_LOOK: usize = 100;

/// What to do about one firing time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// Fire it now (on time, or late within the grace).
    Fire(DateTime<Utc>),
    /// Too late to fire: record it as missed.
    Missed(DateTime<Utc>),
}

#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    /// The last firing time dealt with.
    through: DateTime<Utc>,
}

/// The firing times of `ceremony` after `after` and up to `now`, each to fire or to
/// record as missed (older than `grace`), oldest first.
pub fn firings(
    ceremony: &Ceremony,
    after: DateTime<Utc>,
    now: DateTime<Utc>,
    grace: Duration,
) -> Vec<Due> {
    let Ok(cron) = parse_schedule(&ceremony.schedule) else {
        return Vec::new();
    };
    // The search keeps the fraction of a second it starts from (a cursor set to a
    // look's `now`): firings, and so their claims' keys, must be whole minutes whatever
    // cursor a replica read.
    let after = after.with_nanosecond(0).unwrap_or(after);
    cron.iter_after(after)
        .take_while(|at| *at <= now)
        .take(MOST_PER_LOOK)
        .map(|at| match now - at <= grace {
            true => Due::Fire(at),
            false => Due::Missed(at),
        })
        .collect()
}

/// One replica's view of the schedule: what it claims, and under what name.
#[derive(Clone, Debug)]
pub struct Scheduler {
    /// This process, in the claims it takes.
    pub holder: String,
    /// How late a firing may still be fired (else it is missed).
    pub grace: Duration,
}

impl Scheduler {
    /// A scheduler claiming as `holder`, firing up to `grace` late.
    pub fn new(holder: String, grace: std::time::Duration) -> Scheduler {
        Scheduler {
            holder,
            grace: Duration::from_std(grace).unwrap_or(Duration::MAX),
        }
    }

    /// The firings of `ceremony` this replica must deal with now: those after its cursor
    /// (a ceremony new to the store starts from `now`: it does not catch up on its past)
    /// whose claim this replica won. Moves the cursor past everything looked at.
    pub async fn claim_due(
        &self,
        store: &dyn FleetStore,
        ceremony: &Ceremony,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<Due>> {
        if !ceremony.enabled {
            // A paused ceremony skips its firings, and resumes from when it is resumed.
            self.move_cursor(store, &ceremony.id, now).await?;
            return Ok(Vec::new());
        }
        let Some(after) = self.cursor(store, &ceremony.id).await? else {
            self.move_cursor(store, &ceremony.id, now).await?;
            return Ok(Vec::new());
        };
        let mut won = Vec::new();
        let mut through = after;
        for due in firings(ceremony, after, now, self.grace) {
            let at = match &due {
                Due::Fire(at) | Due::Missed(at) => *at,
            };
            let key = format!("ceremony:{}:{}", ceremony.id, at.timestamp_millis());
            let expires = (now + CLAIM_KEPT).timestamp_millis().max(0) as u64;
            if store.claim(&key, &self.holder, expires).await? {
                won.push(due);
            }
            through = at;
        }
        if through > after {
            self.move_cursor(store, &ceremony.id, through).await?;
        }
        Ok(won)
    }

    async fn cursor(&self, store: &dyn FleetStore, id: &str) -> StoreResult<Option<DateTime<Utc>>> {
        let stored = store.doc_get(CURSORS, id).await?;
        Ok(stored
            .and_then(|bytes| serde_json::from_slice::<Cursor>(&bytes).ok())
            .map(|cursor| cursor.through))
    }

    /// Moves the cursor forward only (replicas race to move it; the later time wins).
    async fn move_cursor(
        &self,
        store: &dyn FleetStore,
        id: &str,
        to: DateTime<Utc>,
    ) -> StoreResult<()> {
        stored::update(store, CURSORS, id, |current: Option<Cursor>| match current
            .is_some_and(|c| c.through >= to)
        {
            true => None,
            false => Some(Cursor { through: to }),
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::TimeZone;
    use sb_store::MemoryStore;
    use serde_json::json;

    use super::*;

    fn every_minute() -> Ceremony {
        serde_json::from_value(json!({
            "id": "tick", "name": "Tick", "schedule": "* * * * *",
            "skill": "summarize", "targets": ["writer"]
        }))
        .unwrap()
    }

    fn at(minute: u32, second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 26, 12, minute, second)
            .unwrap()
    }

    fn scheduler(name: &str) -> Scheduler {
        Scheduler {
            holder: name.into(),
            grace: Duration::minutes(2),
        }
    }

    #[test]
    fn firings_past_the_grace_are_missed() {
        let due = firings(&every_minute(), at(0, 30), at(5, 10), Duration::minutes(2));
        assert_eq!(
            due,
            [
                Due::Missed(at(1, 0)),
                Due::Missed(at(2, 0)),
                Due::Missed(at(3, 0)),
                Due::Fire(at(4, 0)),
                Due::Fire(at(5, 0)),
            ],
            "12:03 is 2 min 10 s late: past the grace"
        );
    }

    #[test]
    fn firings_are_whole_minutes_whatever_the_cursors_fraction_of_a_second() {
        let cursor = at(0, 14) + Duration::milliseconds(65);
        let due = firings(
            &every_minute(),
            cursor,
            at(2, 0) + Duration::milliseconds(500),
            Duration::minutes(2),
        );
        assert_eq!(due, [Due::Fire(at(1, 0)), Due::Fire(at(2, 0))]);
        let fired = at(1, 0) + Duration::milliseconds(65);
        let due = firings(&every_minute(), fired, at(2, 1), Duration::minutes(2));
        assert_eq!(
            due,
            [Due::Fire(at(2, 0))],
            "a cursor past a firing does not bring it back"
        );
    }

    #[tokio::test]
    async fn two_replicas_fire_each_minute_once_between_them() {
        let store = Arc::new(MemoryStore::new());
        let ceremony = every_minute();
        let (one, two) = (scheduler("one"), scheduler("two"));
        assert_eq!(
            one.claim_due(&*store, &ceremony, at(0, 5)).await.unwrap(),
            []
        );
        let mut fired = Vec::new();
        // Both look every 20 s for five minutes, in either order.
        for step in 1..=15u32 {
            let now = at(step / 3, (step % 3) * 20 + 5);
            let (first, second) = if step % 2 == 0 {
                (&one, &two)
            } else {
                (&two, &one)
            };
            fired.extend(first.claim_due(&*store, &ceremony, now).await.unwrap());
            fired.extend(second.claim_due(&*store, &ceremony, now).await.unwrap());
        }
        let minutes: Vec<Due> = (1..=5).map(|m| Due::Fire(at(m, 0))).collect();
        assert_eq!(fired, minutes, "each minute once, none twice, none lost");
    }

    #[tokio::test]
    async fn a_restart_catches_up_within_the_grace_and_never_fires_twice() {
        let store = Arc::new(MemoryStore::new());
        let ceremony = every_minute();
        let before = scheduler("before");
        before
            .claim_due(&*store, &ceremony, at(0, 5))
            .await
            .unwrap();
        assert_eq!(
            before
                .claim_due(&*store, &ceremony, at(1, 5))
                .await
                .unwrap(),
            [Due::Fire(at(1, 0))]
        );
        // Down from 12:01:05 to 12:05:30; the next process has another name.
        let after = scheduler("after");
        assert_eq!(
            after
                .claim_due(&*store, &ceremony, at(5, 30))
                .await
                .unwrap(),
            [
                Due::Missed(at(2, 0)),
                Due::Missed(at(3, 0)),
                Due::Fire(at(4, 0)),
                Due::Fire(at(5, 0)),
            ]
        );
        // Restarted again at once: everything up to now was dealt with.
        let again = scheduler("again");
        assert_eq!(
            again
                .claim_due(&*store, &ceremony, at(5, 40))
                .await
                .unwrap(),
            []
        );
    }

    #[tokio::test]
    async fn a_replica_that_looks_from_an_older_cursor_loses_the_claim() {
        let store = Arc::new(MemoryStore::new());
        let ceremony = every_minute();
        let (one, two) = (scheduler("one"), scheduler("two"));
        one.claim_due(&*store, &ceremony, at(0, 5)).await.unwrap();
        let older = store.doc_get(CURSORS, "tick").await.unwrap().unwrap();
        assert_eq!(
            one.claim_due(&*store, &ceremony, at(1, 5)).await.unwrap(),
            [Due::Fire(at(1, 0))]
        );
        // Two read the cursor before one moved it: it looks at the same minute.
        store.doc_put(CURSORS, "tick", older).await.unwrap();
        assert_eq!(
            two.claim_due(&*store, &ceremony, at(1, 6)).await.unwrap(),
            [],
            "the claim, not the cursor, keeps a firing to one replica"
        );
    }

    #[tokio::test]
    async fn a_paused_ceremony_skips_its_firings_and_resumes_from_then() {
        let store = Arc::new(MemoryStore::new());
        let mut ceremony = every_minute();
        let one = scheduler("one");
        one.claim_due(&*store, &ceremony, at(0, 5)).await.unwrap();
        ceremony.enabled = false;
        assert_eq!(
            one.claim_due(&*store, &ceremony, at(3, 5)).await.unwrap(),
            []
        );
        ceremony.enabled = true;
        assert_eq!(
            one.claim_due(&*store, &ceremony, at(4, 5)).await.unwrap(),
            [Due::Fire(at(4, 0))],
            "none of the paused minutes fire when it is resumed"
        );
    }
}
