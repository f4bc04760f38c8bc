//! A Switchboard's `/metrics`, read by a test.

#![allow(dead_code)] // each test binary uses its part

/// The Prometheus text of the Switchboard at `base`.
pub(crate) async fn text(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of the sample whose line starts with `series` (its name and labels as
/// written, e.g. `switchboard_bridge_pushes_total{outcome="received"}`), 0 if absent.
pub(crate) fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}
