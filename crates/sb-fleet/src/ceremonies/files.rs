//! Ceremonies defined in files: a directory of `*.yaml`/`*.yml` files, one ceremony
//! each (the fleet guide's `workspace/ceremonies/<id>.yaml`), read again within a few
//! seconds of any change, without a restart.
//!
//! The directory is polled (names, sizes and modification times, every
//! [`POLL_EVERY`]) rather than watched with inotify: a Kubernetes ConfigMap changes by
//! swapping a symlink, which file watches miss, and a poll of a handful of files costs
//! nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::definition::Ceremony;

/// How often the directory is looked at.
pub const POLL_EVERY: Duration = Duration::from_secs(2);

/// What the directory holds now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loaded {
    /// The valid ceremonies, by id.
    pub ceremonies: BTreeMap<String, Ceremony>,
    /// Files refused, with why (each also logged once when read).
    pub refused: Vec<(PathBuf, String)>,
}

/// Reads every ceremony file of `dir`, in name order; a file that cannot be read or
/// checked, or repeats an id, is refused, the others kept. A missing directory holds
/// nothing.
pub fn load_dir(dir: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    for path in ceremony_files(dir) {
        match read_one(&path) {
            Ok(ceremony) if loaded.ceremonies.contains_key(&ceremony.id) => {
                let reason = format!("id {:?} is already defined by another file", ceremony.id);
                loaded.refused.push((path, reason));
            }
            Ok(ceremony) => {
                loaded.ceremonies.insert(ceremony.id.clone(), ceremony);
            }
            Err(reason) => loaded.refused.push((path, reason)),
        }
    }
    loaded
}

fn read_one(path: &Path) -> Result<Ceremony, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot be read: {e}"))?;
    let mut ceremony: Ceremony =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("is not a ceremony: {e}"))?;
    // A file is the operator's: nobody's API key owns it.
    ceremony.created_by = None;
    ceremony.check().map_err(|e| e.to_string())?;
    Ok(ceremony)
}

fn ceremony_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            // Editors' and ConfigMaps' hidden files (`..data`, `.x.yaml.swp`) are not ours.
            let hidden = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            yaml && !hidden && path.is_file()
        })
        .collect();
    files.sort();
    files
}

/// What changes when a file is added, removed or written.
fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    ceremony_files(dir)
        .into_iter()
        .map(|path| {
            let meta = std::fs::metadata(&path).ok();
            let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
            let modified = meta.and_then(|m| m.modified().ok());
            (path, size, modified)
        })
        .collect()
}

/// Loads `dir` now, then again whenever it changes, until `stop`: the receiver always
/// holds what the directory holds.
pub fn follow(dir: PathBuf, stop: CancellationToken) -> watch::Receiver<Arc<Loaded>> {
    // Taken with the first load, not when the task first runs: a change in between
    // would otherwise look like no change.
    let mut seen = fingerprint(&dir);
    let first = load_dir(&dir);
    log_refusals(&first);
    let (sender, receiver) = watch::channel(Arc::new(first));
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(POLL_EVERY) => {}
                () = stop.cancelled() => return,
            }
            let now = fingerprint(&dir);
            if now == seen {
                continue;
            }
            seen = now;
            let loaded = load_dir(&dir);
            log_refusals(&loaded);
            tracing::info!(dir = %dir.display(), ceremonies = loaded.ceremonies.len(), "ceremony files read again");
            if sender.send(Arc::new(loaded)).is_err() {
                return;
            }
        }
    });
    receiver
}

fn log_refusals(loaded: &Loaded) {
    for (path, reason) in &loaded.refused {
        tracing::warn!(file = %path.display(), reason, "ceremony file refused");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = r#"
id: quinn.daily-digest
name: "Quinn Daily QA Digest"
schedule: "0 14 * * *" # 5-field cron, UTC
skill: qa_report
targets: [quinn]
notifyChannel: "https://hooks.example/digest"
enabled: true
"#;

    #[test]
    fn a_directory_of_files_is_read_and_bad_ones_are_refused_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("quinn.daily-digest.yaml"), DIGEST).unwrap();
        std::fs::write(dir.path().join("twin.yml"), DIGEST).unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "id: has space\nname: x\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a ceremony").unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), DIGEST).unwrap();
        let loaded = load_dir(dir.path());
        assert_eq!(loaded.ceremonies.len(), 1);
        let digest = &loaded.ceremonies["quinn.daily-digest"];
        assert_eq!(digest.targets, ["quinn"]);
        assert_eq!(digest.created_by, None);
        let refused: Vec<String> = loaded
            .refused
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.file_name().unwrap().to_string_lossy()))
            .collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].starts_with("bad.yaml"), "{refused:?}");
        assert!(refused[1].contains("already defined"), "{refused:?}");
        assert_eq!(load_dir(&dir.path().join("absent")), Loaded::default());
    }

    #[tokio::test]
    async fn a_file_dropped_in_is_picked_up_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let stop = CancellationToken::new();
        let mut loaded = follow(dir.path().to_owned(), stop.clone());
        assert!(loaded.borrow().ceremonies.is_empty());
        std::fs::write(dir.path().join("digest.yaml"), DIGEST).unwrap();
        let changed = tokio::time::timeout(Duration::from_secs(5), loaded.changed()).await;
        assert!(matches!(changed, Ok(Ok(()))), "not read again within 5 s");
        assert!(
            loaded
                .borrow()
                .ceremonies
                .contains_key("quinn.daily-digest")
        );
        std::fs::remove_file(dir.path().join("digest.yaml")).unwrap();
        let changed = tokio::time::timeout(Duration::from_secs(5), loaded.changed()).await;
        assert!(matches!(changed, Ok(Ok(()))));
        assert!(
            loaded.borrow().ceremonies.is_empty(),
            "a removed file removes its ceremony"
        );
        stop.cancel();
    }
}
