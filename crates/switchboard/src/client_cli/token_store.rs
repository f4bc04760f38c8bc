//! Tokens `auth login` obtained, one file per agent under the configuration directory
//! (`$XDG_CONFIG_HOME/a2a-cli/tokens/`, `~/.config/a2a-cli/tokens/`): the directory
//! mode 0700, each file 0600, written to a temporary file and renamed (a reader never
//! sees half a token, and the file is never, even briefly, readable by others). A file
//! is plain JSON: the user can read, edit or delete it. A token is never printed: this
//! type's `Debug` hides it.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config_files;
use super::error::CliError;

/// One agent's token and what renewing it needs (never the client secret: that stays
/// in the environment or a `.env` file, `A2ACLI_CLIENT_SECRET`).
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct StoredToken {
    /// The agent's card URL (the key of the file).
    pub agent: String,
    /// `client_credentials` or `device_code`.
    pub flow: String,
    pub token_url: String,
    pub client_id: String,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds; none when the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `resource` and `audience` asked for at login, asked for again when renewing.
    #[serde(default)]
    pub extra_params: Vec<(String, String)>,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("agent", &self.agent)
            .field("flow", &self.flow)
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl StoredToken {
    /// Expired, or about to (within a minute: the call would fail on its way).
    pub(crate) fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now + 60)
    }
}

pub(crate) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The token directory, when a configuration directory can be found.
pub(crate) fn dir() -> Option<PathBuf> {
    config_files::config_dir().map(|d| d.join("tokens"))
}

fn require_dir() -> Result<PathBuf, CliError> {
    dir().ok_or_else(|| {
        CliError::internal("no configuration directory: set HOME or XDG_CONFIG_HOME")
    })
}

/// The file of the agent whose card is at `card_url`: the URL without its scheme's
/// punctuation and well-known suffix, readable in a listing.
pub(crate) fn file_name(card_url: &str) -> String {
    let base = sb_client::discovery::CARD_PATHS
        .iter()
        .find_map(|p| card_url.strip_suffix(p))
        .unwrap_or(card_url);
    let name: String = base
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    let name = name.replace("___", "_");
    format!("{}.json", name.trim_matches('_'))
}

/// The stored token of an agent, if there is one (a file naming another agent, after a
/// clash of names, counts as none).
pub(crate) fn load(card_url: &str) -> Result<Option<StoredToken>, CliError> {
    let Some(dir) = dir() else {
        return Ok(None);
    };
    let path = dir.join(file_name(card_url));
    if !path.exists() {
        return Ok(None);
    }
    let token = read(&path)?;
    Ok((token.agent == card_url).then_some(token))
}

fn read(path: &Path) -> Result<StoredToken, CliError> {
    let text = fs::read_to_string(path).map_err(|e| {
        CliError::internal(format!(
            "cannot read the token file {}: {e}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::internal(format!(
            "the token file {} is unreadable: {e}",
            path.display()
        ))
        .with_hint("delete it (`switchboard auth logout AGENT`) and run `auth login` again")
    })
}

/// Every stored token, with its file.
pub(crate) fn list() -> Result<Vec<(PathBuf, StoredToken)>, CliError> {
    let Some(dir) = dir() else {
        return Ok(Vec::new());
    };
    let Ok(entries) = fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut tokens = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            tokens.push((path.clone(), read(&path)?));
        }
    }
    tokens.sort_by(|a, b| a.1.agent.cmp(&b.1.agent));
    Ok(tokens)
}

/// Stores `token` (replacing the agent's previous one); returns its file.
pub(crate) fn save(token: &StoredToken) -> Result<PathBuf, CliError> {
    let dir = require_dir()?;
    let failed = |what: &str, e: std::io::Error| {
        CliError::internal(format!("cannot {what} in {}: {e}", dir.display()))
    };
    private_dir(&dir).map_err(|e| failed("create the token directory", e))?;
    let path = dir.join(file_name(&token.agent));
    let temporary = dir.join(format!(".{}.tmp", std::process::id()));
    let json = serde_json::to_vec_pretty(token)
        .map_err(|e| CliError::internal(format!("cannot encode the token: {e}")))?;
    let written = private_file(&temporary).and_then(|mut file| {
        file.write_all(&json)?;
        file.sync_all()
    });
    if let Err(e) = written.and_then(|()| fs::rename(&temporary, &path)) {
        let _ = fs::remove_file(&temporary);
        return Err(failed("write the token file", e));
    }
    Ok(path)
}

/// Removes the agent's token; whether there was one.
pub(crate) fn remove(card_url: &str) -> Result<Option<PathBuf>, CliError> {
    let Some(dir) = dir() else {
        return Ok(None);
    };
    let path = dir.join(file_name(card_url));
    match fs::remove_file(&path) {
        Ok(()) => Ok(Some(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::internal(format!(
            "cannot remove {}: {e}",
            path.display()
        ))),
    }
}

/// Creates `dir` (and the configuration directory above it) readable by the owner only,
/// and narrows one that already exists.
#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// A new file only the owner can read, created so from the start.
#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_readable_and_drop_the_well_known_path() {
        assert_eq!(
            file_name("http://127.0.0.1:8080/agents/echo/.well-known/agent-card.json"),
            "http_127.0.0.1_8080_agents_echo.json"
        );
        assert_eq!(
            file_name("https://a.example/card.json"),
            "https_a.example_card.json.json"
        );
    }

    #[test]
    fn debug_never_shows_the_token() {
        let token = StoredToken {
            agent: "a".into(),
            flow: "device_code".into(),
            token_url: "t".into(),
            client_id: "c".into(),
            access_token: "SECRET-ACCESS".into(),
            refresh_token: Some("SECRET-REFRESH".into()),
            expires_at: Some(1),
            scopes: vec![],
            extra_params: vec![],
        };
        let shown = format!("{token:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }
}
