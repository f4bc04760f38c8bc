//! The journal's files: frames, torn tails, epochs, rotation, the first format.

use std::fs::OpenOptions;
use std::path::PathBuf;

use super::frame::{HEADER_LEN, MAGIC_V1};
use super::segment::second_path;
use super::{Entry, Journal, entries, frames_to_replay};

/// A new journal at `epoch` in its own directory.
fn fresh(epoch: u64) -> (tempfile::TempDir, PathBuf, Journal) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let (journal, replay) = Journal::open(&path, epoch).unwrap();
    assert!(replay.is_empty());
    (dir, path, journal)
}

/// The entries of replayed payloads, in order, as `Debug` text.
fn names(replay: &[Vec<u8>]) -> Vec<String> {
    replay
        .iter()
        .flat_map(|p| entries(p).unwrap())
        .map(|e| format!("{e:?}"))
        .collect()
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
fn frames_come_back_in_order_and_a_torn_tail_is_overwritten() {
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
    let whole = journal.frames_len();
    drop(journal);
    // A crash mid-append: a frame's head, and part of its payload.
    let file = OpenOptions::new().append(true).open(&path).unwrap();
    let mut torn = vec![9, 0, 0, 0, 1, 2, 3, 4];
    torn.extend_from_slice(&3u64.to_le_bytes());
    torn.extend_from_slice(&[1, 2]);
    std::io::Write::write_all(&mut &file, &torn).unwrap();

    let (mut journal, replay) = Journal::open(&path, 3).unwrap();
    assert_eq!(replay.len(), 2);
    assert_eq!(
        entries(&replay[0]).unwrap(),
        [Entry::PutTask {
            id: "a",
            value: b"1"
        }]
    );
    assert_eq!(entries(&replay[1]).unwrap().len(), 2);
    assert_eq!(journal.frames_len(), whole);
    // The next frame goes where the torn one started.
    frame_of(&mut journal, &[Entry::RemoveTask { id: "b" }]);
    drop(journal);
    let (_, replay) = Journal::open(&path, 3).unwrap();
    assert_eq!(replay.len(), 3);
    assert_eq!(
        entries(&replay[2]).unwrap(),
        [Entry::RemoveTask { id: "b" }]
    );
}

/// A reset keeps the file and its size; the old epoch's frames left in it are never
/// replayed, however many of the new epoch's frames come after the reset.
#[test]
fn a_recycled_journal_replays_only_its_own_epoch() {
    let (_dir, path, mut journal) = fresh(1);
    for id in ["a", "b", "c"] {
        frame_of(&mut journal, &[Entry::RemoveTask { id }]);
    }
    let size = std::fs::metadata(&path).unwrap().len();
    journal.reset(2).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        size,
        "not truncated"
    );
    assert_eq!(frames_to_replay(&path, 2), 0);
    frame_of(&mut journal, &[Entry::RemoveTask { id: "x" }]);
    drop(journal);
    let (mut journal, replay) = Journal::open(&path, 2).unwrap();
    assert_eq!(replay.len(), 1, "only the frame of epoch 2");
    assert_eq!(
        entries(&replay[0]).unwrap(),
        [Entry::RemoveTask { id: "x" }]
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        size,
        "overwritten in place"
    );
    frame_of(&mut journal, &[Entry::RemoveTask { id: "y" }]);
    drop(journal);
    let (_, replay) = Journal::open(&path, 2).unwrap();
    assert_eq!(replay.len(), 2);
}

/// A rotation moves frames to the other file under the next epoch: until a
/// checkpoint records that epoch, a reopen replays both files, the older first;
/// after it, only the newer. A file is reused only once its epoch is durable.
#[test]
fn a_rotation_replays_both_files_in_order_until_checkpointed() {
    let (_dir, path, mut journal) = fresh(7);
    frame_of(&mut journal, &[Entry::RemoveTask { id: "before" }]);
    assert!(journal.can_rotate(7), "the second file is new");
    let second = std::fs::read(second_path(&path)).unwrap();
    assert_eq!(journal.rotate().unwrap(), 8);
    assert_eq!(
        std::fs::read(second_path(&path)).unwrap(),
        second,
        "a rotation writes nothing"
    );
    assert_eq!(journal.frames_len(), 0);
    frame_of(&mut journal, &[Entry::RemoveTask { id: "during" }]);
    assert!(!journal.can_rotate(7), "epoch 7 is not durable yet");
    assert!(journal.can_rotate(8));
    drop(journal);
    // The checkpoint of epoch 8 did not happen: both files replay, in order.
    let (_, replay) = Journal::open(&path, 7).unwrap();
    assert_eq!(
        names(&replay),
        [
            r#"RemoveTask { id: "before" }"#,
            r#"RemoveTask { id: "during" }"#
        ]
    );
    // It did: only the newer file replays; the next rotation reuses the first.
    let (mut journal, replay) = Journal::open(&path, 8).unwrap();
    assert_eq!(names(&replay), [r#"RemoveTask { id: "during" }"#]);
    assert_eq!(journal.rotate().unwrap(), 9);
    frame_of(&mut journal, &[Entry::RemoveTask { id: "after" }]);
    drop(journal);
    let (_, replay) = Journal::open(&path, 9).unwrap();
    assert_eq!(names(&replay), [r#"RemoveTask { id: "after" }"#]);
    // Two files at one epoch are not one journal.
    std::fs::copy(&path, second_path(&path)).unwrap();
    let err = Journal::open(&path, 9).unwrap_err().to_string();
    assert!(err.contains("both at epoch 9"), "{err}");
}

/// A journal of the first format (left by an earlier version) is replayed, then
/// truncated by its reset, and written in the current format from then on.
#[test]
fn a_journal_of_the_first_format_is_replayed_then_converted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let payload = postcard::to_allocvec(&Entry::RemoveTask { id: "old" }).unwrap();
    let mut bytes = MAGIC_V1.to_vec();
    bytes.extend_from_slice(&4u64.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    std::fs::write(&path, &bytes).unwrap();

    let (mut journal, replay) = Journal::open(&path, 4).unwrap();
    assert_eq!(replay, [payload]);
    journal.reset(5).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER_LEN);
    frame_of(&mut journal, &[Entry::RemoveTask { id: "new" }]);
    drop(journal);
    let (_, replay) = Journal::open(&path, 5).unwrap();
    assert_eq!(replay.len(), 1);
    assert_eq!(
        entries(&replay[0]).unwrap(),
        [Entry::RemoveTask { id: "new" }]
    );

    // With nothing to replay, the first-format header is replaced at once.
    std::fs::write(&path, &bytes[..HEADER_LEN as usize]).unwrap();
    let (mut journal, replay) = Journal::open(&path, 4).unwrap();
    assert!(replay.is_empty());
    frame_of(&mut journal, &[Entry::RemoveTask { id: "next" }]);
    drop(journal);
    let (_, replay) = Journal::open(&path, 4).unwrap();
    assert_eq!(replay.len(), 1);
}

#[test]
fn a_corrupt_frame_ends_the_replay() {
    let (_dir, path, mut journal) = fresh(0);
    frame_of(&mut journal, &[Entry::RemoveTask { id: "a" }]);
    let first_end = journal.frames_len();
    frame_of(&mut journal, &[Entry::RemoveTask { id: "b" }]);
    drop(journal);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let (journal, replay) = Journal::open(&path, 0).unwrap();
    assert_eq!(replay.len(), 1);
    assert_eq!(journal.frames_len(), first_end);
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
    // A store file older than its journal (by more than a checkpoint under way) is
    // refused, not silently replayed.
    let err = Journal::open(&path, 3).unwrap_err().to_string();
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
    assert_eq!(
        names(&replay),
        [
            r#"RemoveTask { id: "kept" }"#,
            r#"RemoveTask { id: "after" }"#
        ]
    );
}
