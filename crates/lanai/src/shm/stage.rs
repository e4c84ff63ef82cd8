//! Staging slots for medium reductions on a node (`engine/central_reduce.rs`).
//!
//! On the first [`STAGED_CHANNELS`] channels of the barrier device each
//! local rank owns [`SLOTS`] slots of [`STAGE_MAX`] bytes. A reduce's
//! non-root copies its contribution into the slot of the reduce's stamp and
//! announces it in its mailbox with a descriptor; the root folds every
//! contribution where it lies, then marks each slot done, which frees it.
//! One copy on each non-root, none on the root, and no message.
//!
//! A large allreduce (`lanai_coll::staged_allreduce`) goes through the same
//! slots in chunks. The length of each slot's chunk sits after the `done`
//! words, and the allreduce's marks, one per slot, on a second line of the
//! member's: only that member writes them.
//!
//! Slots belong to a channel, hence to one communicator, whose reduces
//! every member calls in the same order: a full slot only ever waits for
//! a reduce of its own communicator, as a mailbox slot does, never for
//! another communicator's.
//!
//! Each slot has a `done` word, the stamp of the last contribution a root
//! folded from it, on a line per member that only roots write. A
//! channel's lines come first, together, so that freeing the channel for
//! a new owner touches one page, not one per member.
//! A member takes its slots for its reduces in stamp order, each after the
//! one before it in the same slot: the reduce with stamp `s` stages once
//! `done` says the slot's previous reduce is folded. In stamp order, since
//! otherwise a later reduce could take the slot an earlier one waits for,
//! whose root in turn waits for the later one's root through another
//! member.

use super::Segment;
use lanai_coll::staged_allreduce::Mark;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

/// Slots per member and channel: how many staged reduces a non-root may
/// run ahead of their roots.
pub const SLOTS: usize = 4;
/// The largest contribution staged; larger reduces pass their messages by
/// reference.
pub const STAGE_MAX: usize = 64 << 10;
/// Channels with staging slots. Each costs `local ranks * SLOTS *
/// STAGE_MAX` bytes of the node's segment, touched only when used;
/// communicators on other channels reduce through messages.
pub const STAGED_CHANNELS: usize = 8;

const LINE: usize = 64;
/// One member's slots on one channel.
const MEMBER: usize = SLOTS * STAGE_MAX;

/// One channel's area: every member's two lines (`done` words and
/// lengths, then allreduce marks), then every member's slots.
pub(super) fn channel_len(local_size: usize) -> usize {
    (local_size * MEMBER_LINES).next_multiple_of(PAGE) + local_size * MEMBER
}

/// Bytes of words per member: two lines.
const MEMBER_LINES: usize = 2 * LINE;

/// Channels' areas start on their own pages.
const PAGE: usize = 4096;

/// Where a member's per-slot allreduce lengths start, after its `done`
/// words; its marks fill the next line, a word per mark and slot.
const LENS: usize = SLOTS * 4;
const MARKS: usize = LINE;
const MARKS_END: usize = MARKS + 3 * SLOTS * 4;
/// A broadcast's reader count per slot, after the marks.
const READERS: usize = MARKS_END;
const READERS_END: usize = READERS + SLOTS * 4;

const _: () = assert!(LENS + SLOTS * 4 <= LINE && READERS_END <= MEMBER_LINES);
const _: () = assert!(STAGE_MAX.is_multiple_of(PAGE));
const _: () = assert!(SLOTS == lanai_coll::staged_allreduce::SLOTS);

/// Bytes the staging areas of `channels` channels need on a node of
/// `local_size` ranks.
pub fn stage_len(local_size: usize, channels: usize) -> usize {
    channels.min(STAGED_CHANNELS) * channel_len(local_size)
}

/// The slot a reduce with mailbox stamp `stamp` stages in.
pub fn slot_of(stamp: u32) -> usize {
    stamp as usize % SLOTS
}

/// One channel's staging slots.
#[derive(Debug, Clone, Copy)]
pub struct Stage<'a> {
    seg: &'a Segment,
    /// Byte offset of this channel's area, and of its data slots.
    off: usize,
    local_size: usize,
    slots: usize,
}

impl<'a> Stage<'a> {
    /// Channel `ch`'s staging area in the areas at byte `base` of `seg`,
    /// laid out for `channels` channels; `None` when it has none or it
    /// does not fit.
    pub fn new(
        seg: &'a Segment,
        base: usize,
        local_size: usize,
        channels: usize,
        ch: usize,
    ) -> Option<Self> {
        Self::sized(seg, base, local_size, channel_len(local_size), channels, ch)
    }

    /// As [`Stage::new`], with `chan_len` the [`channel_len`] of
    /// `local_size`, worked out once by the caller.
    #[inline]
    pub(super) fn sized(
        seg: &'a Segment,
        base: usize,
        local_size: usize,
        chan_len: usize,
        channels: usize,
        ch: usize,
    ) -> Option<Self> {
        let off = base + ch * chan_len;
        (local_size > 0
            && ch < channels.min(STAGED_CHANNELS)
            && base.is_multiple_of(LINE)
            && off + chan_len <= seg.len())
        .then_some(Self {
            seg,
            off,
            local_size,
            slots: off + chan_len - local_size * MEMBER,
        })
    }

    fn done_word(&self, i: usize, slot: usize) -> &AtomicU32 {
        let i = i.min(self.local_size - 1);
        self.seg
            .atomic_u32(self.off + i * MEMBER_LINES + slot.min(SLOTS - 1) * 4)
    }

    fn data(&self, i: usize, slot: usize) -> usize {
        let i = i.min(self.local_size - 1);
        self.slots + i * MEMBER + slot.min(SLOTS - 1) * STAGE_MAX
    }

    /// The stamp of the last contribution a root folded from member `i`'s
    /// `slot` (0 before any).
    pub fn done(&self, i: usize, slot: usize) -> u32 {
        self.done_word(i, slot).load(Ordering::Acquire)
    }

    /// Member `i` stages `data` in its `slot`, which the reduce before
    /// this one in the slot is done with (`done` said so). The mailbox's
    /// release store of the descriptor publishes it.
    pub fn fill(&self, i: usize, slot: usize, data: &[u8]) {
        let at = self.data(i, slot);
        assert!(data.len() <= STAGE_MAX && at + data.len() <= self.seg.len());
        // SAFETY: the bytes lie inside the mapping (checked). Only member
        // `i` writes its slots, and the root that read this one last has
        // said it is done (the caller checked `done`); no root reads it
        // again before the descriptor published after this.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.seg.base().add(at), data.len())
        };
    }

    /// The `len` bytes member `i` staged in `slot`, read where they lie.
    /// Call only between acquiring its descriptor and [`Stage::release`].
    pub fn bytes(&self, i: usize, slot: usize, len: usize) -> &[u8] {
        let at = self.data(i, slot);
        assert!(len <= STAGE_MAX && at + len <= self.seg.len());
        // SAFETY: inside the mapping (checked). Member `i` wrote these
        // bytes before the release store of the descriptor the caller
        // acquired, and writes the slot again only once `release` has made
        // it free; the caller drops the slice before it calls `release`.
        unsafe { std::slice::from_raw_parts(self.seg.base().add(at), len) }
    }

    fn mark_at(slot: usize, mark: Mark) -> usize {
        MARKS + (mark as usize * SLOTS + slot.min(SLOTS - 1)) * 4
    }

    /// Member `i`'s latest stamp for allreduce `mark` in `slot`.
    pub fn mark(&self, i: usize, slot: usize, mark: Mark) -> u32 {
        self.line_word(i, Self::mark_at(slot, mark))
            .load(Ordering::Acquire)
    }

    /// Member `i` publishes its allreduce `mark` in `slot` for chunk
    /// `stamp`: the bytes it wrote before are seen by whoever sees it.
    pub fn set_mark(&self, i: usize, slot: usize, mark: Mark, stamp: u32) {
        self.line_word(i, Self::mark_at(slot, mark))
            .store(stamp, Ordering::Release);
    }

    /// The allreduce length (low 32 bits) member `i` noted with the
    /// chunk in its `slot`.
    pub fn len_of(&self, i: usize, slot: usize) -> u32 {
        self.line_word(i, LENS + slot.min(SLOTS - 1) * 4)
            .load(Ordering::Acquire)
    }

    /// Member `i` notes its allreduce length beside `slot`, before the
    /// mark that publishes the chunk there.
    pub fn set_len(&self, i: usize, slot: usize, len: u32) {
        self.line_word(i, LENS + slot.min(SLOTS - 1) * 4)
            .store(len, Ordering::Relaxed);
    }

    /// Members that have read member `i`'s `slot` since it cleared the
    /// count.
    pub fn readers(&self, i: usize, slot: usize) -> u32 {
        self.line_word(i, READERS + slot.min(SLOTS - 1) * 4)
            .load(Ordering::Acquire)
    }

    /// Member `i` clears its count for `slot`, before the mark that
    /// publishes the slot's next chunk (which orders it).
    pub fn clear_readers(&self, i: usize, slot: usize) {
        self.line_word(i, READERS + slot.min(SLOTS - 1) * 4)
            .store(0, Ordering::Relaxed);
    }

    /// A member done reading member `i`'s `slot` counts itself.
    pub fn add_reader(&self, i: usize, slot: usize) {
        self.line_word(i, READERS + slot.min(SLOTS - 1) * 4)
            .fetch_add(1, Ordering::Release);
    }

    fn line_word(&self, i: usize, at: usize) -> &AtomicU32 {
        let i = i.min(self.local_size - 1);
        self.seg.atomic_u32(self.off + i * MEMBER_LINES + at)
    }

    /// Bytes `range` of member `i`'s `slot`, read where they lie. Call
    /// only while the allreduce marks say member `i` wrote them and will
    /// not write them again before this rank's next mark.
    pub fn bytes_at(&self, i: usize, slot: usize, range: Range<usize>) -> &[u8] {
        let at = self.data(i, slot) + range.start;
        assert!(
            range.end <= STAGE_MAX
                && range.start <= range.end
                && at + range.len() <= self.seg.len()
        );
        // SAFETY: inside the mapping (checked). The owner wrote these bytes
        // before the mark the caller acquired, and rewrites them only after
        // the caller's own later mark; the caller drops the slice first.
        unsafe { std::slice::from_raw_parts(self.seg.base().add(at), range.len()) }
    }

    /// Member `i` writes `data` at byte `pos` of its own `slot`.
    pub fn write_at(&self, i: usize, slot: usize, pos: usize, data: &[u8]) {
        let at = self.data(i, slot) + pos;
        assert!(pos + data.len() <= STAGE_MAX && at + data.len() <= self.seg.len());
        // SAFETY: inside the mapping (checked). Only member `i` writes its
        // slots; no other member reads these bytes until the mark that
        // follows this write (the allreduce's marks order it).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.seg.base().add(at), data.len())
        };
    }

    /// The root is done with member `i`'s contribution `stamp` in `slot`:
    /// the slot is free again.
    pub fn release(&self, i: usize, slot: usize, stamp: u32) {
        self.done_word(i, slot).store(stamp, Ordering::Release);
    }

    /// A channel about to get a new owner, whose reduces start from
    /// stamp 1: every slot free, whatever the last owner left behind.
    pub fn settle(&self) {
        for i in 0..self.local_size {
            for slot in 0..SLOTS {
                self.done_word(i, slot).store(0, Ordering::Relaxed);
            }
            for at in (LENS..LENS + SLOTS * 4)
                .chain(MARKS..READERS_END)
                .step_by(4)
            {
                self.line_word(i, at).store(0, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(len: usize) -> Segment {
        let name = format!("/lanai-test-stage-{}", std::process::id());
        let seg = Segment::create(&name, len).unwrap();
        let _ = Segment::unlink(&name);
        seg
    }

    #[test]
    fn a_staged_contribution_is_read_in_place_until_released() {
        let (local, channels) = (3, 2);
        let seg = segment(LINE + stage_len(local, channels));
        let st = Stage::new(&seg, LINE, local, channels, 1).unwrap();
        assert!(Stage::new(&seg, LINE, local, channels, 2).is_none());
        assert_eq!(st.done(2, 1), 0, "nothing folded yet");
        let data: Vec<u8> = (0..STAGE_MAX).map(|i| (i * 7 % 251) as u8).collect();
        st.fill(2, 1, &data);
        assert_eq!(st.bytes(2, 1, STAGE_MAX), &data[..]);
        st.fill(2, 0, &data[..10]);
        assert_eq!(st.bytes(2, 1, STAGE_MAX), &data[..], "slots do not overlap");
        let other = Stage::new(&seg, LINE, local, channels, 0).unwrap();
        other.fill(2, 1, &[9; 64]);
        assert_eq!(
            st.bytes(2, 1, 64),
            &data[..64],
            "channels have areas of their own"
        );
        st.release(2, 1, 9);
        assert_eq!((st.done(2, 1), st.done(2, 0), other.done(2, 1)), (9, 0, 0));
        st.set_mark(2, 3, Mark::Reduced, 7);
        st.set_len(2, 3, 12345);
        st.write_at(2, 3, 100, &[5; 8]);
        assert_eq!(
            st.bytes_at(2, 3, 98..110),
            &[0, 0, 5, 5, 5, 5, 5, 5, 5, 5, 0, 0]
        );
        assert_eq!(
            (
                st.mark(2, 3, Mark::Staged),
                st.mark(2, 3, Mark::Reduced),
                st.mark(2, 2, Mark::Reduced),
                st.len_of(2, 3),
                st.len_of(2, 2)
            ),
            (0, 7, 0, 12345, 0)
        );
        assert_eq!(st.done(2, 1), 9, "marks sit beside the done words");
        st.add_reader(2, 1);
        st.add_reader(2, 1);
        assert_eq!((st.readers(2, 1), st.readers(2, 0)), (2, 0));
        st.clear_readers(2, 1);
        assert_eq!(st.readers(2, 1), 0);
        st.add_reader(2, 3);
        st.settle();
        assert_eq!(st.done(2, 1), 0, "a new owner starts from scratch");
        assert_eq!(
            (
                st.mark(2, 3, Mark::Reduced),
                st.len_of(2, 3),
                st.readers(2, 3)
            ),
            (0, 0, 0)
        );
    }

    #[test]
    fn slots_go_round_by_stamp() {
        assert_eq!(
            (0..9).map(slot_of).collect::<Vec<_>>(),
            [0, 1, 2, 3, 0, 1, 2, 3, 0]
        );
    }
}
