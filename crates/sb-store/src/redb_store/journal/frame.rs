//! The format of the journal's files, and reading their frames back.
//!
//! Layout of each of its two files: a 16-byte header (`SBJRNL02`, then the epoch of its
//! last reset as a little-endian u64), then frames: payload length (u32 LE), CRC-32 of the
//! epoch and the payload (u32 LE), the epoch (u64 LE), payload. A payload is a run of
//! postcard-encoded [`Entry`](super::Entry) values. Frames are only ever appended, so a
//! crash can tear only the last one; opening stops at the first frame that does not check
//! out. A file's epoch is its first frame's (frames older than its header's epoch do not
//! count); a restart replays the files whose epoch the last checkpoint has not passed.

use super::entry::entries;

pub(super) const MAGIC: &[u8; 8] = b"SBJRNL02";
/// The first format, read for its replay only.
pub(super) const MAGIC_V1: &[u8; 8] = b"SBJRNL01";
pub(super) const HEADER_LEN: u64 = 16;
pub(super) const FRAME_HEAD: usize = 16;
const FRAME_HEAD_V1: usize = 8;

/// The head of the frame at the start of `bytes`: payload length, CRC, epoch.
pub(super) fn frame_head(bytes: &[u8]) -> Option<(usize, u32, u64)> {
    let head: &[u8; FRAME_HEAD] = bytes.get(..FRAME_HEAD)?.try_into().ok()?;
    let [l0, l1, l2, l3, c0, c1, c2, c3, rest @ ..] = *head;
    Some((
        u32::from_le_bytes([l0, l1, l2, l3]) as usize,
        u32::from_le_bytes([c0, c1, c2, c3]),
        u64::from_le_bytes(rest),
    ))
}

/// The payloads of the whole, intact frames of `epoch` at the start of `bytes`, and
/// where they end.
pub(super) fn whole_frames(bytes: &[u8], epoch: u64) -> (Vec<Vec<u8>>, usize) {
    let mut payloads = Vec::new();
    let mut at = 0;
    while let Some((len, crc, frame_epoch)) = bytes.get(at..).and_then(frame_head) {
        let start = at + FRAME_HEAD;
        let Some(payload) = bytes.get(start..start + len) else {
            break;
        };
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&frame_epoch.to_le_bytes());
        hasher.update(payload);
        // A frame is never empty; zeroes here are no frame.
        if len == 0 || frame_epoch != epoch || hasher.finalize() != crc || entries(payload).is_err()
        {
            break;
        }
        payloads.push(payload.to_vec());
        at = start + len;
    }
    (payloads, at)
}

/// [`whole_frames`] for a journal of the first format.
pub(super) fn whole_frames_v1(bytes: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut payloads = Vec::new();
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + FRAME_HEAD_V1) {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let start = at + FRAME_HEAD_V1;
        let Some(payload) = bytes.get(start..start + len) else {
            break;
        };
        if len == 0 || crc32fast::hash(payload) != crc || entries(payload).is_err() {
            break;
        }
        payloads.push(payload.to_vec());
        at = start + len;
    }
    (payloads, at)
}

/// Whether what follows the last whole frame is the start of one more frame of this
/// epoch that a crash cut short (rather than nothing, or an earlier epoch's frames).
pub(super) fn is_torn_frame(rest: &[u8], epoch: u64, old_format: bool) -> bool {
    if old_format {
        return !rest.is_empty();
    }
    // A head cut short may as well be the end of an earlier epoch's frame.
    frame_head(rest).is_some_and(|(_, _, frame_epoch)| frame_epoch == epoch)
}
