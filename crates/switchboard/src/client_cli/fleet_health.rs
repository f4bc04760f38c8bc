//! `health URL`: a Switchboard fleet's health as a table (`GET /fleet/health`,
//! docs/fleet.md): per agent and window, its outcomes, success rate, latency and cost;
//! the tasks waiting too long; the skills no healthy agent serves. (`health ADDR`, an
//! address without a scheme, stays the container health check of `cli.rs`.)

use serde_json::Value;

use super::error::CliError;
use super::output::Out;
use super::switchboard_api::{ApiOpts, clean};

pub(crate) async fn run(api: ApiOpts, window: Option<String>) -> Result<u8, CliError> {
    let out = Out::plain(&api.output, false);
    let path = match &window {
        Some(window) => format!("/fleet/health?window={window}"),
        None => "/fleet/health".to_owned(),
    };
    let report = api.call(reqwest::Method::GET, &path, None).await?;
    if out.is_json() {
        out.json(&report)?;
        return Ok(0);
    }
    out.write(&table(&report))?;
    Ok(0)
}

fn number(value: &Value, decimals: usize) -> String {
    match value.as_f64() {
        Some(n) => format!("{n:.decimals$}"),
        None => "-".to_owned(),
    }
}

/// The report as aligned columns, one table per window.
fn table(report: &Value) -> String {
    let mut text = String::new();
    let windows = report["windows"].as_object().cloned().unwrap_or_default();
    for (window, content) in &windows {
        let mut rows = vec![
            [
                "AGENT",
                "HEALTHY",
                "TASKS",
                "DONE",
                "FAILED",
                "CANCELED",
                "REJECTED",
                "SUCCESS",
                "P50_MS",
                "P95_MS",
                "USD/SUCCESS",
            ]
            .map(str::to_owned),
        ];
        for agent in content["agents"].as_array().into_iter().flatten() {
            rows.push([
                clean(&agent["agent"]),
                match agent["healthy"].as_bool() {
                    Some(true) => "yes".to_owned(),
                    _ => "NO".to_owned(),
                },
                clean(&agent["count"]),
                clean(&agent["completed"]),
                clean(&agent["failed"]),
                clean(&agent["canceled"]),
                clean(&agent["rejected"]),
                number(&agent["successRate"], 3),
                number(&agent["p50Ms"], 1),
                number(&agent["p95Ms"], 1),
                number(&agent["costPerSuccessUsd"], 4),
            ]);
        }
        text.push_str(&format!("Window: {window}\n"));
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            text.push_str(cells.join("  ").trim_end());
            text.push('\n');
        }
        text.push('\n');
    }
    for waiting in report["waitingTooLong"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "Waiting Too Long: {} on {} for {}s\n",
            clean(&waiting["taskId"]),
            clean(&waiting["agent"]),
            clean(&waiting["waitingSecs"])
        ));
    }
    for skill in report["unservedSkills"].as_array().into_iter().flatten() {
        text.push_str(&format!("Unserved Skill: {}\n", clean(&skill["skill"])));
    }
    text
}
