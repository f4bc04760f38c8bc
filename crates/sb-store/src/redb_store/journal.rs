//! The redo journal in front of the redb file.
//!
//! Each batch's writes are appended to this file as one frame and fdatasync'ed before
//! the batch is committed to redb, and that redb commit is non-durable: it skips redb's
//! page writes and fsync, which were half of the writer thread's work. A checkpoint
//! (a durable redb commit) makes everything journaled durable in the redb file itself;
//! the journal then starts over under the next epoch, recorded in the same commit.
//!
//! Layout: a 16-byte header (`SBJRNL01`, then the epoch as a little-endian u64), then
//! frames: payload length (u32 LE), CRC-32 of the payload (u32 LE), payload. A payload
//! is a run of postcard-encoded [`Entry`] values. Frames are only ever appended, so a
//! crash can tear only the last one; opening stops at the first frame that does not
//! check out and cuts the file there.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::traits::{StoreError, StoreResult};

const MAGIC: &[u8; 8] = b"SBJRNL01";
const HEADER_LEN: u64 = 16;
const FRAME_HEAD: usize = 8;

/// One key-value write, exactly as the writer applied it to redb; replaying a frame
/// applies its entries again, through the same code. Values go through `serde_bytes`:
/// serde writes a plain `&[u8]` one element at a time (postcard's encoding of a byte
/// sequence is the same either way, so journals written before read the same).
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(super) enum Entry<'a> {
    PutTask {
        id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    PutEvent {
        task_id: &'a str,
        seq: u64,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    /// The task's record and every event of it.
    RemoveTask {
        id: &'a str,
    },
    PutPush {
        task_id: &'a str,
        config_id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemovePush {
        task_id: &'a str,
        config_id: &'a str,
    },
    /// Every push config of the task.
    RemoveTaskPush {
        task_id: &'a str,
    },
    PutDead {
        id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemoveDead {
        id: &'a str,
    },
}

/// The decoded entries of one frame's payload.
pub(super) fn entries(payload: &[u8]) -> StoreResult<Vec<Entry<'_>>> {
    let mut rest = payload;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (entry, tail) = postcard::take_from_bytes::<Entry<'_>>(rest)
            .map_err(|e| StoreError::Backend(format!("corrupt journal entry: {e}")))?;
        out.push(entry);
        rest = tail;
    }
    Ok(out)
}

#[derive(Debug)]
pub(super) struct Journal {
    file: File,
    path: PathBuf,
    /// Where the next frame goes: the end of the last whole frame.
    len: u64,
    epoch: u64,
    /// The frame being built: its head's room, then the encoded entries.
    frame: Vec<u8>,
    /// Set when a failed write could not be undone: the file may end in a frame the
    /// redb file does not have, so nothing more may be appended after it.
    broken: Option<String>,
}

impl Journal {
    /// Opens the journal for a store whose last checkpoint recorded `epoch`, creating it
    /// if missing. Returns the payloads written since that checkpoint, to be replayed.
    pub(super) fn open(path: &Path, epoch: u64) -> StoreResult<(Journal, Vec<Vec<u8>>)> {
        let io = |what: &str, e: std::io::Error| {
            StoreError::Backend(format!("cannot {what} {}: {e}", path.display()))
        };
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io("open", e))?;
        if !existed && let Some(dir) = path.parent() {
            // The new file's directory entry must be durable before anything relies on it.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io("sync the directory of", e))?;
        }
        let mut journal = Journal {
            file,
            path: path.to_owned(),
            len: 0,
            epoch,
            frame: Vec::new(),
            broken: None,
        };
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &journal.file, &mut bytes).map_err(|e| io("read", e))?;
        // Shorter than a header: created or reset, and cut short by a crash before any
        // frame could follow. Its checkpoint already holds everything.
        if (bytes.len() as u64) < HEADER_LEN {
            journal.reset(epoch)?;
            return Ok((journal, Vec::new()));
        }
        if &bytes[..8] != MAGIC {
            return Err(StoreError::Backend(format!(
                "{} is not a Switchboard store journal; move it away if the store file next to it is known good",
                path.display()
            )));
        }
        let mut epoch_bytes = [0u8; 8];
        epoch_bytes.copy_from_slice(&bytes[8..16]);
        let journal_epoch = u64::from_le_bytes(epoch_bytes);
        if journal_epoch < epoch {
            // A checkpoint made all of it durable; the crash came before the reset.
            journal.reset(epoch)?;
            return Ok((journal, Vec::new()));
        }
        if journal_epoch > epoch {
            return Err(StoreError::Backend(format!(
                "{} is at epoch {journal_epoch} but its store file at {epoch}: the store file is older than its journal; restore them as a pair",
                path.display()
            )));
        }
        let (payloads, end) = whole_frames(&bytes[HEADER_LEN as usize..]);
        let end = HEADER_LEN + end as u64;
        if end < bytes.len() as u64 {
            tracing::warn!(
                journal = %path.display(),
                dropped_bytes = bytes.len() as u64 - end,
                "the store journal ends in a torn frame (a crash mid-write); that batch was never acknowledged and is dropped"
            );
            journal.file.set_len(end).map_err(|e| io("truncate", e))?;
            journal.file.sync_data().map_err(|e| io("sync", e))?;
        }
        journal.len = end;
        Ok((journal, payloads))
    }

    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Bytes of frames since the last checkpoint.
    pub(super) fn frames_len(&self) -> u64 {
        self.len.saturating_sub(HEADER_LEN)
    }

    /// Starts a new frame.
    pub(super) fn begin(&mut self) {
        self.frame.clear();
        self.frame.extend_from_slice(&[0; FRAME_HEAD]);
    }

    pub(super) fn add(&mut self, entry: &Entry<'_>) -> StoreResult<()> {
        postcard::to_extend(entry, std::mem::take(&mut self.frame))
            .map(|frame| self.frame = frame)
            .map_err(|e| StoreError::Backend(format!("cannot encode a journal entry: {e}")))
    }

    /// Whether the frame being built holds any entry.
    pub(super) fn has_entries(&self) -> bool {
        self.frame.len() > FRAME_HEAD
    }

    /// Why nothing more may be appended, if so (until a checkpoint resets the journal).
    pub(super) fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Appends the frame being built and waits until it is on disk. On failure the
    /// file is cut back to where it was, so the frame can never be replayed.
    pub(super) fn write_frame(&mut self) -> StoreResult<()> {
        if let Some(reason) = &self.broken {
            return Err(StoreError::Backend(reason.clone()));
        }
        let payload_len = self.frame.len() - FRAME_HEAD;
        let payload_len = u32::try_from(payload_len).map_err(|_| {
            StoreError::Backend(format!(
                "a batch of {payload_len} bytes is too large to journal"
            ))
        })?;
        let crc = crc32fast::hash(&self.frame[FRAME_HEAD..]);
        self.frame[..4].copy_from_slice(&payload_len.to_le_bytes());
        self.frame[4..8].copy_from_slice(&crc.to_le_bytes());
        let written = self
            .file
            .write_all_at(&self.frame, self.len)
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.len += self.frame.len() as u64;
                Ok(())
            }
            Err(e) => {
                let error = format!(
                    "cannot write the store journal {}: {e}",
                    self.path.display()
                );
                self.cut_back(self.len, &error);
                Err(StoreError::Backend(error))
            }
        }
    }

    /// Takes back the last frame written (its redb commit failed), so a replay cannot
    /// apply what the callers were told failed.
    pub(super) fn undo_last_frame(&mut self) {
        let start = self.len.saturating_sub(self.frame.len() as u64);
        self.len = start;
        self.cut_back(
            start,
            "a redb commit failed after its journal frame was written",
        );
    }

    fn cut_back(&mut self, to: u64, cause: &str) {
        let cut = self.file.set_len(to).and_then(|()| self.file.sync_data());
        if let Err(e) = cut {
            let reason = format!(
                "the store journal {} could not be repaired after a failed write ({cause}; then: {e}); restart the server",
                self.path.display()
            );
            tracing::error!("{reason}");
            self.broken = Some(reason);
        }
    }

    /// Empties the journal under a new epoch, once a checkpoint recording that epoch
    /// is durable.
    pub(super) fn reset(&mut self, epoch: u64) -> StoreResult<()> {
        let mut header = [0u8; HEADER_LEN as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..].copy_from_slice(&epoch.to_le_bytes());
        let reset = self
            .file
            .set_len(0)
            .and_then(|()| self.file.write_all_at(&header, 0))
            .and_then(|()| self.file.sync_data());
        if let Err(e) = reset {
            // Frames appended now would sit under an epoch the store has moved past,
            // and be skipped by the next open: refuse them.
            let reason = format!(
                "cannot reset the store journal {}: {e}; restart the server",
                self.path.display()
            );
            self.broken = Some(reason.clone());
            return Err(StoreError::Backend(reason));
        }
        self.len = HEADER_LEN;
        self.epoch = epoch;
        self.broken = None;
        Ok(())
    }
}

/// The payloads of the whole, intact frames at the start of `bytes`, and where they end.
fn whole_frames(bytes: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut payloads = Vec::new();
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + FRAME_HEAD) {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let start = at + FRAME_HEAD;
        let Some(payload) = bytes.get(start..start + len) else {
            break;
        };
        // A frame is never empty; zeroes here are no frame.
        if len == 0 || crc32fast::hash(payload) != crc || entries(payload).is_err() {
            break;
        }
        payloads.push(payload.to_vec());
        at = start + len;
    }
    (payloads, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new journal at `epoch` in its own directory.
    fn fresh(epoch: u64) -> (tempfile::TempDir, PathBuf, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let (journal, replay) = Journal::open(&path, epoch).unwrap();
        assert!(replay.is_empty());
        (dir, path, journal)
    }

    fn frame_of(journal: &mut Journal, entries: &[Entry<'_>]) {
        journal.begin();
        for entry in entries {
            journal.add(entry).unwrap();
        }
        journal.write_frame().unwrap();
    }

    /// The encoding journals already on disk were written in (values as a byte sequence
    /// of their length, then the bytes): changing it would strand them.
    #[test]
    fn entries_keep_their_encoding() {
        let entry = Entry::PutEvent {
            task_id: "t",
            seq: 300,
            value: b"{}",
        };
        let bytes = postcard::to_allocvec(&entry).unwrap();
        assert_eq!(bytes, [1, 1, b't', 0xac, 0x02, 2, b'{', b'}']);
        assert_eq!(entries(&bytes).unwrap(), vec![entry]);
    }

    #[test]
    fn frames_come_back_in_order_and_a_torn_tail_is_cut() {
        let (_dir, path, mut journal) = fresh(3);
        frame_of(
            &mut journal,
            &[Entry::PutTask {
                id: "a",
                value: b"1",
            }],
        );
        frame_of(
            &mut journal,
            &[
                Entry::PutEvent {
                    task_id: "a",
                    seq: 2,
                    value: b"e",
                },
                Entry::RemoveDead { id: "d" },
            ],
        );
        let whole = journal.len;
        drop(journal);
        // A crash mid-append: half a frame after the whole ones.
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut &file, &[9, 0, 0, 0, 1, 2]).unwrap();

        let (journal, replay) = Journal::open(&path, 3).unwrap();
        assert_eq!(replay.len(), 2);
        assert_eq!(
            entries(&replay[0]).unwrap(),
            [Entry::PutTask {
                id: "a",
                value: b"1"
            }]
        );
        assert_eq!(entries(&replay[1]).unwrap().len(), 2);
        assert_eq!(journal.len, whole);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            whole,
            "the torn tail is cut"
        );
    }

    #[test]
    fn a_corrupt_frame_ends_the_replay() {
        let (_dir, path, mut journal) = fresh(0);
        frame_of(&mut journal, &[Entry::RemoveTask { id: "a" }]);
        let first_end = journal.len;
        frame_of(&mut journal, &[Entry::RemoveTask { id: "b" }]);
        drop(journal);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let (journal, replay) = Journal::open(&path, 0).unwrap();
        assert_eq!(replay.len(), 1);
        assert_eq!(journal.len, first_end);
    }

    #[test]
    fn epochs_decide_what_is_replayed() {
        let (_dir, path, mut journal) = fresh(5);
        frame_of(&mut journal, &[Entry::RemoveTask { id: "a" }]);
        drop(journal);
        // The store's checkpoint moved on (crash before the reset): all of it is stale.
        let (journal, replay) = Journal::open(&path, 6).unwrap();
        assert!(replay.is_empty());
        assert_eq!((journal.epoch(), journal.frames_len()), (6, 0));
        drop(journal);
        // A store file older than its journal is refused, not silently replayed.
        let err = Journal::open(&path, 4).unwrap_err().to_string();
        assert!(err.contains("older than its journal"), "{err}");
        // Not a journal at all.
        std::fs::write(&path, b"something else entirely").unwrap();
        let err = Journal::open(&path, 6).unwrap_err().to_string();
        assert!(err.contains("not a Switchboard store journal"), "{err}");
    }

    #[test]
    fn a_frame_taken_back_is_never_replayed() {
        let (_dir, path, mut journal) = fresh(0);
        frame_of(&mut journal, &[Entry::RemoveTask { id: "kept" }]);
        frame_of(&mut journal, &[Entry::RemoveTask { id: "undone" }]);
        journal.undo_last_frame();
        frame_of(&mut journal, &[Entry::RemoveTask { id: "after" }]);
        drop(journal);
        let (_, replay) = Journal::open(&path, 0).unwrap();
        let ids: Vec<_> = replay
            .iter()
            .flat_map(|p| {
                entries(p)
                    .unwrap()
                    .into_iter()
                    .map(|e| format!("{e:?}"))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            ids,
            [
                r#"RemoveTask { id: "kept" }"#,
                r#"RemoveTask { id: "after" }"#
            ]
        );
    }
}
