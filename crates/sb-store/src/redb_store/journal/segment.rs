//! One of the journal's two files ([`Segment`]): what counts in it when it is opened,
//! and starting it over under a new epoch.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::frame::{
    HEADER_LEN, MAGIC, MAGIC_V1, frame_head, is_torn_frame, whole_frames, whole_frames_v1,
};
use crate::traits::{StoreError, StoreResult};

/// One of the journal's two files.
#[derive(Debug)]
pub(super) struct Segment {
    pub(super) file: File,
    pub(super) path: PathBuf,
    /// The epoch in its header: that of its last reset (frames of an older one do not
    /// count).
    header_epoch: u64,
    /// The epoch of the frames that count in it, its first frame's; `None` when it has
    /// none.
    pub(super) epoch: Option<u64>,
    /// Where the next frame goes (in the file being appended to).
    pub(super) len: u64,
    /// In the first format: the epoch is the header's, and the next header write
    /// truncates the file, since its frames carry no epoch to tell them from new ones.
    pub(super) old_format: bool,
}

/// What a file holds that counts: the payloads of its frames, and whether one more
/// frame of theirs was cut short by a crash.
pub(super) struct Found {
    pub(super) payloads: Vec<Vec<u8>>,
    pub(super) torn: bool,
}

impl Segment {
    /// Opens the file, creating it if missing; returns it with the frames that count in
    /// it (the next frame goes after them).
    pub(super) fn open(path: &Path) -> StoreResult<(Segment, Found)> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_error("open", path, e))?;
        if !existed && let Some(dir) = path.parent() {
            // The new file's directory entry must be durable before anything relies on it.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_error("sync the directory of", path, e))?;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut bytes)
            .map_err(|e| io_error("read", path, e))?;
        let mut segment = Segment {
            file,
            path: path.to_owned(),
            header_epoch: 0,
            epoch: None,
            len: HEADER_LEN,
            old_format: false,
        };
        let nothing = Found {
            payloads: Vec::new(),
            torn: false,
        };
        let Some(header) = bytes.get(..HEADER_LEN as usize) else {
            // New, or cut short by a crash while its header was written: nothing in it.
            segment.start_epoch(0)?;
            return Ok((segment, nothing));
        };
        segment.old_format = &header[..8] == MAGIC_V1;
        if &header[..8] != MAGIC && !segment.old_format {
            return Err(StoreError::Backend(format!(
                "{} is not a Switchboard store journal; move it away if the store file next to it is known good",
                path.display()
            )));
        }
        let mut header_epoch = [0u8; 8];
        header_epoch.copy_from_slice(&header[8..]);
        segment.header_epoch = u64::from_le_bytes(header_epoch);
        let frames = &bytes[HEADER_LEN as usize..];
        let (epoch, (payloads, end)) = if segment.old_format {
            (segment.header_epoch, whole_frames_v1(frames))
        } else {
            match frame_head(frames) {
                Some((_, _, epoch)) if epoch >= segment.header_epoch => {
                    (epoch, whole_frames(frames, epoch))
                }
                _ => return Ok((segment, nothing)),
            }
        };
        if payloads.is_empty() && !segment.old_format {
            return Ok((segment, nothing));
        }
        segment.epoch = Some(epoch);
        segment.len = HEADER_LEN + end as u64;
        let torn = is_torn_frame(&frames[end..], epoch, segment.old_format);
        Ok((segment, Found { payloads, torn }))
    }

    /// Empties it under `epoch`: the header says so, and the frames after it, of an
    /// earlier epoch, no longer count.
    pub(super) fn start_epoch(&mut self, epoch: u64) -> StoreResult<()> {
        let mut header = [0u8; HEADER_LEN as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..].copy_from_slice(&epoch.to_le_bytes());
        let truncated = if self.old_format {
            self.file.set_len(0)
        } else {
            Ok(())
        };
        truncated
            .and_then(|()| self.file.write_all_at(&header, 0))
            .and_then(|()| self.file.sync_data())
            .map_err(|e| io_error("start a new epoch in", &self.path, e))?;
        self.len = HEADER_LEN;
        self.header_epoch = epoch;
        self.epoch = None;
        self.old_format = false;
        Ok(())
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Backend(format!("cannot {what} {}: {e}", path.display()))
}

/// The path of the journal's second file.
pub(super) fn second_path(path: &Path) -> PathBuf {
    let mut second = path.as_os_str().to_owned();
    second.push(".1");
    PathBuf::from(second)
}
