//! A ceremony (the fleet guide's scheduled invocation): what it sends, to whom, when,
//! and who may change it; how a definition is checked (the id rule the guide gives, a
//! 5-field cron schedule in UTC, targets, the notification channel) and how an update
//! applies (only the fields it carries: `enabled` above all, so an update never
//! re-enables a paused ceremony).

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The rule a ceremony id must follow, in the words of the fleet guide.
pub const ID_RULE: &str = r"^[\w.\-]+$ — alphanumeric, dots, dashes";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ceremony {
    pub id: String,
    pub name: String,
    /// 5-field cron (minute hour day-of-month month day-of-week), in UTC.
    pub schedule: String,
    /// The skill asked for: sent as `metadata.skillHint`.
    pub skill: String,
    /// Agents by name (or the routing agent) that each get the message as a new task.
    pub targets: Vec<String>,
    /// The message's text; without one, the ceremony's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A DataPart sent with the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// A webhook URL told of each run and its outcomes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify_channel: Option<String>,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// The agent whose API key created it; `None` for the admin or a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

fn enabled_by_default() -> bool {
    true
}

/// An update: only the fields present change.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CeremonyUpdate {
    /// Ignored when it names the ceremony being updated; refused otherwise (ids do not
    /// change).
    pub id: Option<String>,
    pub name: Option<String>,
    pub schedule: Option<String>,
    pub skill: Option<String>,
    pub targets: Option<Vec<String>>,
    pub message: Option<String>,
    pub data: Option<Value>,
    pub notify_channel: Option<String>,
    pub enabled: Option<bool>,
}

/// Why a definition was refused: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Invalid {
    Invalid {
        field,
        message: message.into(),
    }
}

/// Ids a new ceremony may not take: `/api/ceremonies/{id}` would be another route.
const RESERVED_IDS: [&str; 1] = ["create"];

/// Whether `id` follows [`ID_RULE`].
pub fn check_id(id: &str) -> Result<(), Invalid> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && id
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-');
    match ok {
        true => Ok(()),
        false => Err(invalid(
            "id",
            format!("invalid ceremony id {id:?}: must match {ID_RULE}"),
        )),
    }
}

/// The schedule parsed: exactly five fields, no seconds or years.
pub fn parse_schedule(schedule: &str) -> Result<Cron, Invalid> {
    let fields = schedule.split_whitespace().count();
    if fields != 5 {
        return Err(invalid(
            "schedule",
            format!(
                "{schedule:?} has {fields} fields; a schedule is 5-field cron in UTC (minute hour day-of-month month day-of-week), e.g. \"0 14 * * *\""
            ),
        ));
    }
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    parser.parse(schedule).map_err(|e| {
        invalid(
            "schedule",
            format!("{schedule:?} is not a cron schedule: {e}"),
        )
    })
}

impl Ceremony {
    /// Checks everything a definition must be; the first problem found.
    pub fn check(&self) -> Result<(), Invalid> {
        check_id(&self.id)?;
        if RESERVED_IDS.contains(&self.id.as_str()) {
            return Err(invalid(
                "id",
                format!(
                    "{:?} is a path of the API itself (/api/ceremonies/{}): choose another id",
                    self.id, self.id
                ),
            ));
        }
        if self.name.trim().is_empty() {
            return Err(invalid("name", "must not be empty"));
        }
        parse_schedule(&self.schedule)?;
        if self.skill.trim().is_empty() {
            return Err(invalid("skill", "must name the skill the message asks for"));
        }
        if self.targets.is_empty() {
            return Err(invalid("targets", "must name at least one agent"));
        }
        if let Some(target) = self.targets.iter().find(|t| t.trim().is_empty()) {
            return Err(invalid(
                "targets",
                format!("{target:?} is not an agent name"),
            ));
        }
        if let Some(url) = &self.notify_channel {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| invalid("notifyChannel", format!("{url:?} is not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(invalid(
                    "notifyChannel",
                    "must be an http or https webhook URL",
                ));
            }
        }
        if let Some(data) = &self.data
            && !data.is_object()
        {
            return Err(invalid("data", "must be a JSON object"));
        }
        Ok(())
    }

    /// The first firing strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        parse_schedule(&self.schedule)
            .ok()?
            .find_next_occurrence(&after, false)
            .ok()
    }

    /// The text the message carries.
    pub fn text(&self) -> &str {
        self.message.as_deref().unwrap_or(&self.name)
    }

    /// This ceremony with `update` applied (and checked). `enabled` changes only when the
    /// update carries it.
    pub fn updated(&self, update: CeremonyUpdate) -> Result<Ceremony, Invalid> {
        if let Some(id) = &update.id
            && *id != self.id
        {
            return Err(invalid(
                "id",
                format!("ids do not change ({} is not {id:?})", self.id),
            ));
        }
        let mut next = self.clone();
        if let Some(name) = update.name {
            next.name = name;
        }
        if let Some(schedule) = update.schedule {
            next.schedule = schedule;
        }
        if let Some(skill) = update.skill {
            next.skill = skill;
        }
        if let Some(targets) = update.targets {
            next.targets = targets;
        }
        if let Some(message) = update.message {
            next.message = Some(message);
        }
        if let Some(data) = update.data {
            next.data = Some(data);
        }
        if let Some(channel) = update.notify_channel {
            next.notify_channel = Some(channel);
        }
        if let Some(enabled) = update.enabled {
            next.enabled = enabled;
        }
        next.check()?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    fn digest() -> Ceremony {
        serde_json::from_value(json!({
            "id": "quinn.daily-digest", "name": "Quinn Daily QA Digest",
            "schedule": "0 14 * * *", "skill": "qa_report", "targets": ["quinn"],
            "notifyChannel": "https://hooks.example/digest", "enabled": true
        }))
        .unwrap()
    }

    #[test]
    fn the_guides_example_is_a_valid_ceremony() {
        let ceremony = digest();
        assert_eq!(ceremony.check(), Ok(()));
        assert_eq!(ceremony.text(), "Quinn Daily QA Digest");
        let at = Utc.with_ymd_and_hms(2026, 11, 26, 14, 0, 0).unwrap();
        assert_eq!(
            ceremony.next_after(at),
            Some(Utc.with_ymd_and_hms(2026, 11, 27, 14, 0, 0).unwrap()),
            "strictly after"
        );
        let before = Utc.with_ymd_and_hms(2026, 11, 26, 13, 59, 59).unwrap();
        assert_eq!(ceremony.next_after(before), Some(at));
    }

    #[test]
    fn a_bad_id_is_refused_with_the_guides_rule() {
        for id in ["has space", "", "slash/no", "semi;colon"] {
            let refused = check_id(id).unwrap_err();
            assert_eq!(refused.field, "id");
            assert!(refused.message.contains(ID_RULE), "{refused}");
        }
        for id in ["my-agent.hourly-sweep", "a_b", "Q1"] {
            assert_eq!(check_id(id), Ok(()), "{id}");
        }
    }

    #[test]
    fn an_id_that_is_a_path_of_the_api_is_refused() {
        let Ok(mut ceremony) = serde_json::from_value::<Ceremony>(serde_json::json!({
            "id": "create", "name": "Create", "schedule": "0 9 * * *",
            "skill": "qa_report", "targets": ["quinn"]
        })) else {
            panic!("a ceremony");
        };
        let refused = ceremony.check().unwrap_err();
        assert_eq!(refused.field, "id");
        assert!(refused.message.contains("choose another id"), "{refused}");
        ceremony.id = "created".into();
        assert_eq!(ceremony.check(), Ok(()));
    }

    #[test]
    fn a_schedule_is_five_fields_of_cron() {
        assert!(parse_schedule("*/5 * * * *").is_ok());
        assert!(parse_schedule("0 9 * * MON-FRI").is_ok());
        let six = parse_schedule("0 0 14 * * *").unwrap_err();
        assert!(six.message.contains("6 fields"), "{six}");
        assert!(parse_schedule("61 * * * *").is_err());
        assert!(parse_schedule("every day").is_err());
    }

    #[test]
    fn an_update_changes_only_what_it_carries_and_never_re_enables() {
        let mut paused = digest();
        paused.enabled = false;
        let renamed = paused
            .updated(CeremonyUpdate {
                name: Some("Renamed".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(renamed.name, "Renamed");
        assert!(
            !renamed.enabled,
            "an update without `enabled` keeps it paused"
        );
        assert_eq!(renamed.schedule, paused.schedule);
        let resumed = paused
            .updated(CeremonyUpdate {
                enabled: Some(true),
                ..Default::default()
            })
            .unwrap();
        assert!(resumed.enabled);
        let bad = paused.updated(CeremonyUpdate {
            schedule: Some("nonsense".into()),
            ..Default::default()
        });
        assert_eq!(bad.unwrap_err().field, "schedule");
        let moved = paused.updated(CeremonyUpdate {
            id: Some("other".into()),
            ..Default::default()
        });
        assert_eq!(moved.unwrap_err().field, "id");
        let update: Result<CeremonyUpdate, _> = serde_json::from_value(json!({"enabeld": true}));
        assert!(update.is_err(), "a misspelt field is refused, not ignored");
    }
}
