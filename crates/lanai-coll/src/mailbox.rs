//! A reduce mailbox for ranks that share a node: every member except the
//! root drops its contribution into a slot of its own and goes on; the root
//! takes them out and folds. This is how a small `MPI_Reduce` lets its
//! non-roots leave at once, as an eager send does, without a message.
//!
//! Each member owns [`SLOTS`] slots, used in turn: mailbox operation number
//! `s` (the communicator's count of them, from 1) goes to slot
//! `s % SLOTS`. A slot carries a `filled` stamp, written by its owner, and
//! a `taken` count, to which every reader of a post adds one once it has
//! copied the post out: a reduce's root ([`Collect`]), or each of the
//! members a broadcast's, scatter's or scan's post is for ([`Read`]). The
//! owner knows how many reads it has asked for in each slot, and the slot
//! is free when `taken` reaches that count. So a member runs at most
//! `SLOTS` posts ahead of its slowest reader, whoever that is for each
//! post, and it never writes the word its readers write. Stamps and counts
//! are compared for equality only, so they may wrap.
//!
//! A member does not read its slot's `taken` count on every post: that
//! word shares a cache line with the counts the readers are writing, so
//! the read would cost a transfer between cores each time. It keeps
//! [`FreeSlots`], which slots it has seen free, and reads the counts of a
//! whole line ([`GROUP`] slots) when it reaches one it has not: a member
//! that keeps ahead of its readers then reads that line once per group.
//!
//! As in [`crate::central`], every poll makes single accesses to the
//! wires, so a model can interleave ranks freely.

use std::cell::Cell;

/// Slots per member: how far a non-root may run ahead of the roots. Deep
/// enough that a root that loses its core for a moment does not stall the
/// others at once, as a ring of eager messages would not.
pub const SLOTS: u32 = 64;

/// The mailbox's shared words and bytes. `filled` and `taken` loads
/// acquire; `fill` publishes with a release store, `give` with a release
/// add.
pub trait MailWires {
    /// Stamp of the last contribution member `i` put in `slot`.
    fn filled(&self, i: usize, slot: usize) -> u32;
    /// Reads of member `i`'s `slot` so far, wrapping.
    fn taken(&self, i: usize, slot: usize) -> u32;
    /// Writes `data` into member `i`'s `slot`, then publishes `stamp`.
    fn fill(&self, i: usize, slot: usize, stamp: u32, data: &[u8]) {
        self.fill_piece(i, slot, stamp, data, false)
    }
    /// [`MailWires::fill`] for a piece of a longer post: `more` says that
    /// pieces follow, and [`MailWires::read`] adds [`MORE`] to the length
    /// it returns. A reader that expects the post to end there, or to go
    /// on, then sees a length other than the one it expects.
    fn fill_piece(&self, i: usize, slot: usize, stamp: u32, data: &[u8], more: bool);
    /// Copies member `i`'s `slot` out: its length as written, plus
    /// [`MORE`] when pieces follow, and as many bytes as `out` holds.
    fn read(&self, i: usize, slot: usize, out: &mut [u8]) -> usize;
    /// Adds one to the `taken` count of member `i`'s `slot`: one reader
    /// is done with it.
    fn give(&self, i: usize, slot: usize);
    /// [`MailWires::give`] for the post's only reader, which nobody else
    /// writes the count against: a load and a release store, without the
    /// atomic add's full fence, which a reduce's root would otherwise pay
    /// for every contribution.
    fn give_alone(&self, i: usize, slot: usize);
    /// A hint that member `i`'s `slot` is read next: a root that a member
    /// runs ahead of asks for that line while it folds the one in hand, so
    /// the transfers between cores overlap instead of queueing. No effect
    /// on what any read returns.
    fn prefetch(&self, _i: usize, _slot: usize) {}
}

/// Added to a read's length when more pieces of the post follow: posters
/// and readers that disagree on a post's length then disagree on the
/// length of some piece, even where one ends on a slot's edge.
pub const MORE: usize = 1 << 31;

/// A length as a read returns it, for messages.
pub fn shown(len: usize) -> String {
    match len & MORE {
        0 => format!("{len}"),
        _ => format!("{} and more", len & !MORE),
    }
}

/// Slots whose `taken` stamps a member reads in one look: four-byte
/// stamps, one cache line of them.
pub const GROUP: u32 = 16;

const _: () = assert!(SLOTS == u64::BITS && SLOTS % GROUP == 0);

/// What a member knows of its own slots, kept across its posts: a set bit
/// is a slot seen free (`taken` equal to the reads owed) and not filled
/// since.
/// Only the owner fills a slot, so one seen free stays free until then.
/// Interior mutability, so that posts in flight can share it where only
/// a shared reference to the communicator's state is at hand.
///
/// A look at the stamps takes their line from the root that writes them,
/// and that root then waits for it back. A member that has run a whole
/// ring ahead, and looks on every poll while it waits, therefore slows
/// the very root it waits for. So a member paces its looks by what they
/// find:
/// - a look that finds its slot taken, or frees only part of the slots
///   its next posts take in the group (it looked while the root was
///   still at work there), makes the member wait twice as many polls as
///   before, up to [`MAX_IDLE_POLLS`], before its next look;
/// - a look that finds those slots free halves that wait.
///
/// The slots its next posts take are judged by its stride, the step from
/// its last post's slot: every slot for most posts, every third for a
/// gatherv's one-slot posts under three stamps a call.
///
/// A member that keeps catching up with its root thus looks about once
/// per group of the root's reduces; one that stays behind never waits.
#[derive(Debug, Clone)]
pub struct FreeSlots {
    known: Cell<u64>,
    /// Per slot, the `taken` count at which every read asked for is done.
    owed: [Cell<u32>; SLOTS as usize],
    /// Polls to let pass before a look, while blocked.
    backoff: Cell<u32>,
    /// Of those, the polls still to pass.
    idle: Cell<u32>,
    /// Whether the current wait has been served: then the member looks.
    waited: Cell<bool>,
    /// The slot claimed last: a look takes the step from it to the slot
    /// it wants for the member's stride through its slots.
    last: Cell<u8>,
}

impl Default for FreeSlots {
    fn default() -> Self {
        Self {
            known: Cell::default(),
            owed: std::array::from_fn(|_| Cell::new(0)),
            backoff: Cell::default(),
            idle: Cell::default(),
            waited: Cell::default(),
            last: Cell::default(),
        }
    }
}

/// The longest step between a member's consecutive slots for which a look
/// judges the root by the slots ahead of it in the group.
const GROUP_STEP: usize = GROUP as usize;

/// The most polls a waiting member lets pass between two looks: several
/// of a root's reduces, so that the root rarely gives up the line.
pub const MAX_IDLE_POLLS: u32 = 64;

impl FreeSlots {
    /// Takes `slot` of member `me` for a post that `readers` will read,
    /// if it is free.
    #[inline(always)]
    fn claim(&self, w: &impl MailWires, me: usize, slot: usize, readers: u32) -> bool {
        let bit = 1u64 << slot;
        let known = self.known.get();
        if known & bit == 0 && !self.look(w, me, slot) {
            return false;
        }
        self.known.set(self.known.get() & !bit);
        self.last.set(slot as u8);
        let owed = &self.owed[slot];
        owed.set(owed.get().wrapping_add(readers));
        true
    }

    /// Makes the next claim of a slot not known free look at the stamps,
    /// whatever the pacing says. A waiting member's last poll before it
    /// sleeps must look: its root rings only members it sees asleep, so a
    /// slot given back just before the member said so would go unnoticed
    /// until the sleep timed out.
    pub fn look_now(&self) {
        self.idle.set(0);
        self.waited.set(true);
    }

    /// `slot` is not known free: learns the state of its whole group,
    /// when the wait before a look is over. True if `slot` is free.
    #[inline(never)]
    fn look(&self, w: &impl MailWires, me: usize, slot: usize) -> bool {
        if self.idle.get() > 0 {
            self.idle.set(self.idle.get() - 1);
            return false;
        }
        if !self.waited.get() && self.backoff.get() > 0 {
            self.waited.set(true);
            self.idle.set(self.backoff.get() - 1);
            return false;
        }
        let first = slot - slot % GROUP as usize;
        let found = (first..first + GROUP as usize)
            .filter(|&k| w.taken(me, k) == self.owed[k].get())
            .fold(0u64, |m, k| m | 1 << k);
        let known = self.known.get() | found;
        self.known.set(known);
        let bit = 1u64 << slot;
        // `slot` and the slots after it in its group that the member's
        // next posts take, one lap after the root read them: every slot
        // for posts in slot order, every third for a gatherv's one-piece
        // posts under three stamps a call. A slot between them is another
        // lap's, which the root may well not have reached.
        let step = (slot + SLOTS as usize - self.last.get() as usize) % SLOTS as usize;
        let rest = match step {
            1..=GROUP_STEP => (slot..first + GROUP as usize)
                .step_by(step)
                .fold(0u64, |m, k| m | 1 << k),
            _ => bit,
        };
        let longer = (self.backoff.get() * 2).clamp(1, MAX_IDLE_POLLS);
        if known & bit == 0 {
            self.backoff.set(longer);
            self.idle.set(longer);
            self.waited.set(true);
            return false;
        }
        self.waited.set(false);
        self.backoff.set(if known & rest == rest {
            self.backoff.get() / 2
        } else {
            longer
        });
        true
    }
}

/// The slot reduce `stamp` uses.
pub fn slot_of(stamp: u32) -> usize {
    (stamp % SLOTS) as usize
}

/// A contribution the root cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeMismatch {
    /// Position of the member in the communicator.
    pub member: usize,
    pub got: usize,
    pub want: usize,
}

impl std::fmt::Display for SizeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} contributed {} bytes, the root expects {}",
            self.member,
            shown(self.got),
            self.want
        )
    }
}

/// A non-root's part of one reduce: post the contribution once its slot
/// is free. The contribution itself stays with the caller until then, so
/// a post that finds its slot free copies it once, straight into the slot.
#[derive(Debug, Clone)]
pub struct Post {
    me: usize,
    stamp: u32,
    root: usize,
    /// A piece of a longer post, and not its last ([`MORE`]).
    more: bool,
}

impl Post {
    /// Member `me` (its input on the wires) contributes to reduce `stamp`,
    /// whose root is at position `root` of the communicator.
    pub fn new(me: usize, stamp: u32, root: usize) -> Self {
        Self {
            me,
            stamp,
            root,
            more: false,
        }
    }

    /// This post is a piece that more pieces follow.
    pub fn more(self, more: bool) -> Self {
        Self { more, ..self }
    }

    /// The root's position in the communicator (whom to wake).
    pub fn root(&self) -> usize {
        self.root
    }

    /// The member's position on the wires.
    pub fn me(&self) -> usize {
        self.me
    }

    /// The reduce's stamp.
    pub fn stamp(&self) -> u32 {
        self.stamp
    }

    /// True once `data` is in its slot (the post is then over). `free` is
    /// this member's knowledge of its slots, the same for all its posts.
    #[inline(always)]
    pub fn poll(&mut self, w: &impl MailWires, free: &FreeSlots, data: &[u8]) -> bool {
        let slot = slot_of(self.stamp);
        if !free.claim(w, self.me, slot, 1) {
            return false;
        }
        w.fill_piece(self.me, slot, self.stamp, data, self.more);
        true
    }
}

impl Post {
    /// Posts `data` for `readers` members (at least one) to read with
    /// [`Read`], once the slot is free; true once posted.
    #[inline(always)]
    pub fn poll_for(
        &mut self,
        w: &impl MailWires,
        free: &FreeSlots,
        data: &[u8],
        readers: u32,
    ) -> bool {
        debug_assert!(readers > 0, "a post nobody reads");
        let slot = slot_of(self.stamp);
        if !free.claim(w, self.me, slot, readers) {
            return false;
        }
        w.fill_piece(self.me, slot, self.stamp, data, self.more);
        true
    }
}

/// A reader's part of a post made with [`Post::poll_for`].
#[derive(Debug, Clone, Copy)]
pub struct Read {
    src: usize,
    stamp: u32,
    alone: bool,
}

impl Read {
    /// Reads post `stamp` of the member whose input is `src`.
    pub fn new(src: usize, stamp: u32) -> Self {
        Self {
            src,
            stamp,
            alone: false,
        }
    }

    /// This reader is the post's only one: it counts itself with
    /// [`MailWires::give_alone`].
    pub fn alone(self, alone: bool) -> Self {
        Self { alone, ..self }
    }

    /// Copies the post into `out` once it is there and counts this reader
    /// done; `Some` of its length as written (it may exceed `out`).
    #[inline(always)]
    pub fn poll(&self, w: &impl MailWires, out: &mut [u8]) -> Option<usize> {
        let slot = slot_of(self.stamp);
        if w.filled(self.src, slot) != self.stamp {
            return None;
        }
        let n = w.read(self.src, slot, out);
        if self.alone {
            w.give_alone(self.src, slot);
        } else {
            w.give(self.src, slot);
        }
        Some(n)
    }

    /// The poster's input on the wires.
    pub fn src(&self) -> usize {
        self.src
    }
}

/// A post longer than a slot, over consecutive stamps `first..` (one
/// slot each, `piece` bytes each but the last). Piece `j` is read by
/// `readers(j)` members (a piece nobody reads is not posted), so a
/// scatter's readers each read only the pieces their block touches.
#[derive(Debug, Clone)]
pub struct PostPieces {
    me: usize,
    first: u32,
    len: usize,
    piece: usize,
    /// Pieces posted so far.
    next: usize,
}

/// The largest piece a reader copies out (a slot is smaller).
pub const MAX_PIECE: usize = 256;

/// Pieces a post of `len` bytes takes, `piece` bytes each (at least one).
#[inline]
pub fn pieces(len: usize, piece: usize) -> usize {
    // Most posts fit one piece: skip the division.
    if len <= piece {
        return 1;
    }
    len.div_ceil(piece.max(1))
}

impl PostPieces {
    /// Member `me` (its input on the wires) posts `len` bytes under stamps
    /// from `first`.
    pub fn new(me: usize, first: u32, len: usize, piece: usize) -> Self {
        Self {
            me,
            first,
            len,
            piece: piece.max(1),
            next: 0,
        }
    }

    /// Pieces posted so far.
    pub fn progress(&self) -> usize {
        self.next
    }

    /// Posts what it can of `data` (`len` bytes); true once every piece
    /// is posted.
    pub fn poll(
        &mut self,
        w: &impl MailWires,
        free: &FreeSlots,
        data: &[u8],
        readers: impl Fn(usize) -> u32,
    ) -> bool {
        if self.len <= self.piece {
            // One piece, the usual case: no division, no loop.
            let r = readers(0);
            if self.next == 0
                && r > 0
                && !Post::new(self.me, self.first, self.me).poll_for(w, free, data, r)
            {
                return false;
            }
            self.next = 1;
            return true;
        }
        let n = pieces(self.len, self.piece);
        while self.next < n {
            let j = self.next;
            let r = readers(j);
            let bytes = &data[j * self.piece..((j + 1) * self.piece).min(self.len)];
            let stamp = self.first.wrapping_add(j as u32);
            let mut post = Post::new(self.me, stamp, self.me).more(j + 1 < n);
            if r > 0 && !post.poll_for(w, free, bytes, r) {
                return false;
            }
            self.next += 1;
        }
        true
    }
}

/// A reader's part of a [`PostPieces`]: bytes `want` of a post of `len`
/// bytes, read from the pieces that hold them.
#[derive(Debug, Clone)]
pub struct ReadPieces {
    src: usize,
    first: u32,
    len: usize,
    want: std::ops::Range<usize>,
    piece: usize,
    /// The next piece to read.
    next: usize,
    /// Every piece this reads has no other reader.
    alone: bool,
}

/// A piece whose length is not what the post's length says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceMismatch {
    pub piece: usize,
    pub got: usize,
    pub want: usize,
}

impl ReadPieces {
    /// Reads bytes `want` (within `0..len`) of the post of member `src`
    /// (its input) under stamps from `first`.
    pub fn new(
        src: usize,
        first: u32,
        len: usize,
        want: std::ops::Range<usize>,
        piece: usize,
    ) -> Self {
        let piece = piece.clamp(1, MAX_PIECE);
        Self {
            src,
            first,
            len,
            next: want.start / piece,
            want,
            piece,
            alone: false,
        }
    }

    /// Every piece this reads has no other reader (see [`Read::alone`]).
    pub fn alone(self, alone: bool) -> Self {
        Self { alone, ..self }
    }

    /// The poster's input on the wires.
    pub fn src(&self) -> usize {
        self.src
    }

    /// Pieces read so far, counted from the first of the post.
    pub fn progress(&self) -> usize {
        self.next
    }

    /// Whether piece `j` holds any of `want`: the members that read it.
    pub fn touches(want: &std::ops::Range<usize>, j: usize, piece: usize) -> bool {
        want.start < (j + 1) * piece && j * piece < want.end
    }

    /// Copies what has been posted of `want` into `out` (`want.len()`
    /// bytes); true once all of it is in.
    pub fn poll(&mut self, w: &impl MailWires, out: &mut [u8]) -> Result<bool, PieceMismatch> {
        let piece = self.piece;
        while self.next * piece < self.want.end {
            let j = self.next;
            let at = j * piece;
            let expect = piece.min(self.len - at);
            let flag = if at + expect < self.len { MORE } else { 0 };
            let stamp = self.first.wrapping_add(j as u32);
            let read = Read::new(self.src, stamp).alone(self.alone);
            // The part of this piece that `want` covers.
            let from = self.want.start.max(at);
            let to = self.want.end.min(at + expect);
            let got = if from == at && to == at + expect {
                // All of it: straight into place. A piece of the wrong
                // length fails the read, so what it wrote does not count.
                let dst = &mut out[from - self.want.start..to - self.want.start];
                match read.poll(w, dst) {
                    Some(got) => got,
                    None => return Ok(false),
                }
            } else {
                let mut buf = [0u8; MAX_PIECE];
                let Some(got) = read.poll(w, &mut buf[..piece]) else {
                    return Ok(false);
                };
                if got == expect | flag {
                    out[from - self.want.start..to - self.want.start]
                        .copy_from_slice(&buf[from - at..to - at]);
                }
                got
            };
            if got != expect | flag {
                return Err(PieceMismatch {
                    piece: j,
                    got,
                    want: expect | flag,
                });
            }
            self.next += 1;
        }
        Ok(true)
    }
}

/// The root's part of one reduce: take every member's contribution, in
/// communicator-rank order.
#[derive(Debug, Clone)]
pub struct Collect {
    stamp: u32,
    root: usize,
    members: usize,
    /// Positions below this are in `all`.
    next: usize,
    /// Contributions by position, `len` bytes each; the root's own is there
    /// from the start.
    all: Vec<u8>,
    len: usize,
    /// Bytes per piece of a contribution longer than a slot, which its
    /// member posts in pieces under consecutive stamps from `stamp`; 0
    /// for one slot. Narrow, with `pieces_in`, so that both fit beside
    /// `stamp`: every reduce moves this struct a few times, and the
    /// 8-byte reduce's time follows its stores.
    piece: u16,
    /// Pieces of member `next` taken so far.
    pieces_in: u16,
}

impl Collect {
    /// The root, at position `root` of a communicator of `members`,
    /// collects reduce `stamp` with its own contribution `mine`. `buf` is
    /// scratch memory to collect in (its contents do not matter), so a
    /// caller can hand the same allocation back for every reduce.
    pub fn new(stamp: u32, members: usize, root: usize, mine: &[u8], mut buf: Vec<u8>) -> Self {
        let len = mine.len();
        // Every part is written before it is read: no need to clear.
        buf.resize(len * members, 0);
        if root < members {
            buf[root * len..(root + 1) * len].copy_from_slice(mine);
        }
        let mut c = Self {
            stamp,
            root,
            members,
            next: 0,
            all: buf,
            len,
            piece: 0,
            pieces_in: 0,
        };
        c.skip_root();
        c
    }

    /// Contributions come in pieces of `piece` bytes, each member's under
    /// the stamps from this reduce's, as [`PostPieces`] posts them.
    pub fn in_pieces(self, piece: usize) -> Self {
        Self {
            piece: piece.clamp(1, MAX_PIECE) as u16,
            ..self
        }
    }

    fn skip_root(&mut self) {
        if self.next == self.root {
            self.next += 1;
        }
    }

    /// Takes what has arrived in order; true when every contribution is
    /// in. `wires[pos]` is the wire input of the member at position `pos`.
    /// Later members wait for earlier ones: each has its own slots, so a
    /// late member holds up no one else's next post.
    pub fn poll(&mut self, w: &impl MailWires, wires: &[usize]) -> Result<bool, SizeMismatch> {
        if self.piece != 0 && self.len > usize::from(self.piece) {
            return self.poll_pieces(w, wires);
        }
        let slot = slot_of(self.stamp);
        let len = self.len;
        while self.next < self.members {
            let pos = self.next;
            let i = wires[pos];
            if w.filled(i, slot) != self.stamp {
                return Ok(false);
            }
            let got = w.read(i, slot, &mut self.all[pos * len..(pos + 1) * len]);
            w.give_alone(i, slot);
            // Two ahead: one alone gained half as much (2 ranks, 8 bytes).
            w.prefetch(i, slot_of(self.stamp.wrapping_add(1)));
            w.prefetch(i, slot_of(self.stamp.wrapping_add(2)));
            if got != len {
                return Err(SizeMismatch {
                    member: pos,
                    got,
                    want: len,
                });
            }
            self.next += 1;
            self.skip_root();
        }
        Ok(true)
    }

    /// [`Collect::poll`] for contributions in pieces.
    fn poll_pieces(&mut self, w: &impl MailWires, wires: &[usize]) -> Result<bool, SizeMismatch> {
        let (len, piece) = (self.len, usize::from(self.piece));
        let n = pieces(len, piece);
        while self.next < self.members {
            let pos = self.next;
            let i = wires[pos];
            while usize::from(self.pieces_in) < n {
                let j = usize::from(self.pieces_in);
                let stamp = self.stamp.wrapping_add(j as u32);
                let slot = slot_of(stamp);
                if w.filled(i, slot) != stamp {
                    return Ok(false);
                }
                let (at, want) = (j * piece, piece.min(len - j * piece));
                let flag = if j + 1 < n { MORE } else { 0 };
                let got = w.read(
                    i,
                    slot,
                    &mut self.all[pos * len + at..pos * len + at + want],
                );
                w.give_alone(i, slot);
                if got != want | flag {
                    return Err(SizeMismatch {
                        member: pos,
                        got: (at + (got & !MORE)) | (got & MORE),
                        want: len,
                    });
                }
                self.pieces_in += 1;
            }
            self.pieces_in = 0;
            self.next += 1;
            self.skip_root();
        }
        Ok(true)
    }

    /// The reduce's stamp.
    pub fn stamp(&self) -> u32 {
        self.stamp
    }

    /// The root's position in the communicator.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Contributions not taken yet.
    pub fn missing(&self) -> usize {
        let left = self.members.saturating_sub(self.next);
        left - usize::from(self.root >= self.next && self.root < self.members)
    }

    /// The contributions in communicator-rank order, once `poll` said so.
    pub fn parts(&self) -> Vec<&[u8]> {
        self.all.chunks_exact(self.len.max(1)).collect()
    }

    /// The contributions laid end to end, `len()` bytes each, in
    /// communicator-rank order: what `fold_flat` folds in place.
    pub fn into_flat(self) -> Vec<u8> {
        self.all
    }

    /// Bytes per contribution.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::RefCell;

    /// A slot: `filled` stamp, `taken` count, bytes, more pieces follow.
    type Slot = (u32, u32, Vec<u8>, bool);

    /// Slots in plain memory.
    struct Model {
        slots: RefCell<Vec<Slot>>,
    }

    impl Model {
        fn new(members: usize) -> Self {
            Self {
                slots: RefCell::new(vec![(0, 0, Vec::new(), false); members * SLOTS as usize]),
            }
        }
        fn at(i: usize, slot: usize) -> usize {
            i * SLOTS as usize + slot
        }
    }

    impl MailWires for Model {
        fn filled(&self, i: usize, slot: usize) -> u32 {
            self.slots.borrow()[Self::at(i, slot)].0
        }
        fn taken(&self, i: usize, slot: usize) -> u32 {
            self.slots.borrow()[Self::at(i, slot)].1
        }
        fn fill_piece(&self, i: usize, slot: usize, stamp: u32, data: &[u8], more: bool) {
            let s = &mut self.slots.borrow_mut()[Self::at(i, slot)];
            s.2 = data.to_vec();
            s.3 = more;
            s.0 = stamp;
        }
        fn read(&self, i: usize, slot: usize, out: &mut [u8]) -> usize {
            let s = &self.slots.borrow()[Self::at(i, slot)];
            let n = out.len().min(s.2.len());
            out[..n].copy_from_slice(&s.2[..n]);
            s.2.len() | if s.3 { MORE } else { 0 }
        }
        fn give(&self, i: usize, slot: usize) {
            let s = &mut self.slots.borrow_mut()[Self::at(i, slot)];
            s.1 = s.1.wrapping_add(1);
        }
        fn give_alone(&self, i: usize, slot: usize) {
            self.give(i, slot)
        }
    }

    fn word(member: usize, stamp: u32) -> Vec<u8> {
        (member as u64 * 1_000_000 + u64::from(stamp))
            .to_le_bytes()
            .to_vec()
    }

    #[test]
    fn a_non_root_runs_ahead_by_the_slots_and_no_further() {
        let w = Model::new(2);
        let free: Vec<FreeSlots> = (0..2).map(|_| FreeSlots::default()).collect();
        // Member 1 posts reduces 1..=SLOTS at once; the next must wait.
        for s in 1..=SLOTS {
            assert!(
                Post::new(1, s, 0).poll(&w, &free[1], &word(1, s)),
                "stamp {s}"
            );
        }
        let mut late = Post::new(1, SLOTS + 1, 0);
        assert!(
            !late.poll(&w, &free[1], &word(1, SLOTS + 1)),
            "slot 1 still holds reduce 1"
        );
        // The root takes reduce 1, which frees its slot and nothing else.
        let mut c = Collect::new(1, 2, 0, &word(0, 1), Vec::new());
        assert_eq!(c.poll(&w, &[0, 1]), Ok(true));
        assert_eq!(c.parts(), vec![&word(0, 1)[..], &word(1, 1)[..]]);
        // The member lets one poll pass after its fruitless look.
        assert!(!late.poll(&w, &free[1], &word(1, SLOTS + 1)));
        assert!(late.poll(&w, &free[1], &word(1, SLOTS + 1)));
        assert!(!Post::new(1, SLOTS + 2, 0).poll(&w, &free[1], &word(1, SLOTS + 2)));
    }

    #[test]
    fn a_waiting_member_looks_less_and_less_often_until_its_looks_find_slots_free() {
        let w = Counting {
            inner: Model::new(2),
            taken_reads: std::cell::Cell::new(0),
        };
        let free = FreeSlots::default();
        for s in 1..=SLOTS {
            assert!(Post::new(1, s, 0).poll(&w, &free, &word(1, s)));
        }
        let looks = |w: &Counting| w.taken_reads.get() / GROUP as usize;
        let post = |s: u32| {
            let mut p = Post::new(1, s, 0);
            (0..1000)
                .position(|_| p.poll(&w, &free, &word(1, s)))
                .expect("posts")
        };
        let take = |s: u32| {
            let mut c = Collect::new(s, 2, 0, &word(0, s), Vec::new());
            assert_eq!(c.poll(&w, &[0, 1]), Ok(true));
        };
        // Blocked with the root not moving: it looks at polls 0, 2, 5,
        // 10, 19, 36, 69, then every MAX_IDLE_POLLS + 1.
        let before = looks(&w);
        let mut late = Post::new(1, SLOTS + 1, 0);
        for _ in 0..=69 + 2 * (MAX_IDLE_POLLS + 1) {
            assert!(!late.poll(&w, &free, &word(1, SLOTS + 1)));
        }
        assert_eq!(looks(&w) - before, 7 + 2);
        // The root takes reduce 1 only: the member sees it at its next
        // look, which finds the rest of the group still taken.
        take(1);
        let at = looks(&w);
        let mut waited = 0;
        while !late.poll(&w, &free, &word(1, SLOTS + 1)) {
            waited += 1;
        }
        assert!(waited <= MAX_IDLE_POLLS);
        assert_eq!(looks(&w), at + 1);
        // So the member looked too early: blocked again, it lets the
        // longest wait pass before it looks at all.
        let at = looks(&w);
        let mut next = Post::new(1, SLOTS + 2, 0);
        for _ in 0..MAX_IDLE_POLLS {
            assert!(!next.poll(&w, &free, &word(1, SLOTS + 2)));
        }
        assert_eq!(looks(&w), at, "no look during the wait");
        // The root catches up with everything. Each look then finds the
        // rest of its group free, and the waits halve until none is left.
        for s in 2..=SLOTS + 1 {
            take(s);
        }
        assert_eq!(post(SLOTS + 2), 0, "its wait is over: it looks at once");
        take(SLOTS + 2);
        let mut polls = Vec::new();
        for s in SLOTS + 3..SLOTS + 2 + 8 * GROUP {
            let n = post(s);
            if n > 0 {
                polls.push(n);
            }
            take(s);
        }
        assert_eq!(polls, [32, 16, 8, 4, 2, 1]);
        assert_eq!(free.backoff.get(), 0);
    }

    /// A gatherv's member posts one slot under each call's three stamps,
    /// so its posts take every third slot. A look that finds its slot and
    /// the group's slots its next posts take free, while the slots between
    /// them, the other lap's, are still unread, finds a root that has
    /// passed this lap: the member waits less before its next look, as a
    /// member posting slot after slot does. Backing off instead left it
    /// waiting with free slots until it slept (4 ranks on 2 cores).
    #[test]
    fn a_member_that_posts_every_third_slot_paces_by_its_own_posts() {
        let w = Model::new(2);
        let free = FreeSlots::default();
        let stamp = |c: u32| 1 + 3 * c;
        // A whole lap: every slot once, in the order 1, 4, 7, ... 0, 3, ...
        for c in 0..SLOTS {
            assert!(Post::new(1, stamp(c), 0).poll(&w, &free, &word(1, stamp(c))));
        }
        // The root reads the lap's first six calls, slots 1 to 16 by
        // threes: all of the group of slot 1 that the next lap's first
        // posts take. Slots 2, 3, 5, ... hold later calls, still unread.
        for c in 0..6 {
            let r = Read::new(1, stamp(c)).alone(true);
            assert!(r.poll(&w, &mut [0u8; 8]).is_some(), "call {c}");
        }
        // A member that had been backing off, its wait over.
        free.backoff.set(8);
        free.waited.set(true);
        let next = stamp(SLOTS);
        assert!(Post::new(1, next, 0).poll(&w, &free, &word(1, next)));
        assert_eq!(free.backoff.get(), 4, "it waits less, not more");
        // Its next posts in the group need no look at all.
        for c in SLOTS + 1..SLOTS + 5 {
            assert!(Post::new(1, stamp(c), 0).poll(&w, &free, &word(1, stamp(c))));
        }
    }

    #[test]
    fn a_member_about_to_sleep_looks_whatever_its_pacing() {
        let w = Model::new(2);
        let free = FreeSlots::default();
        for s in 1..=SLOTS {
            assert!(Post::new(1, s, 0).poll(&w, &free, &word(1, s)));
        }
        // Blocked long enough that its next look is many polls away.
        let mut late = Post::new(1, SLOTS + 1, 0);
        for _ in 0..4 * MAX_IDLE_POLLS {
            assert!(!late.poll(&w, &free, &word(1, SLOTS + 1)));
        }
        // The root gives the slot back before the member says it sleeps,
        // so it will not ring: the member's last poll must see the slot.
        let mut c = Collect::new(1, 2, 0, &word(0, 1), Vec::new());
        assert_eq!(c.poll(&w, &[0, 1]), Ok(true));
        assert!(!late.poll(&w, &free, &word(1, SLOTS + 1)), "paced");
        free.look_now();
        assert!(late.poll(&w, &free, &word(1, SLOTS + 1)));
        // A slot still taken stays taken, however often it is asked.
        free.look_now();
        assert!(!Post::new(1, SLOTS + 2, 0).poll(&w, &free, &word(1, SLOTS + 2)));
    }

    /// Counts the reads of `taken` counts, the words roots write.
    struct Counting {
        inner: Model,
        taken_reads: std::cell::Cell<usize>,
    }

    impl MailWires for Counting {
        fn filled(&self, i: usize, slot: usize) -> u32 {
            self.inner.filled(i, slot)
        }
        fn taken(&self, i: usize, slot: usize) -> u32 {
            self.taken_reads.set(self.taken_reads.get() + 1);
            self.inner.taken(i, slot)
        }
        fn fill_piece(&self, i: usize, slot: usize, stamp: u32, data: &[u8], more: bool) {
            self.inner.fill_piece(i, slot, stamp, data, more)
        }
        fn read(&self, i: usize, slot: usize, out: &mut [u8]) -> usize {
            self.inner.read(i, slot, out)
        }
        fn give(&self, i: usize, slot: usize) {
            self.inner.give(i, slot)
        }
        fn give_alone(&self, i: usize, slot: usize) {
            self.inner.give_alone(i, slot)
        }
    }

    #[test]
    fn a_member_reads_the_roots_stamps_once_per_group_of_slots() {
        let w = Counting {
            inner: Model::new(2),
            taken_reads: std::cell::Cell::new(0),
        };
        let free = FreeSlots::default();
        // The root keeps up: each post is taken before the next.
        for s in 1..=3 * SLOTS {
            assert!(Post::new(1, s, 0).poll(&w, &free, &word(1, s)), "stamp {s}");
            let mut c = Collect::new(s, 2, 0, &word(0, s), Vec::new());
            assert_eq!(c.poll(&w, &[0, 1]), Ok(true));
        }
        // One look at a group per GROUP posts, not one per post.
        let looks = (3 * SLOTS / GROUP) as usize;
        assert_eq!(w.taken_reads.get(), looks * GROUP as usize);
        // A slot it has filled is not free until a root takes it, even
        // though the member saw it free before.
        let mut held = Post::new(1, 4 * SLOTS + 1, 0);
        assert!(held.poll(&w, &free, &word(1, 1)));
        assert!(!Post::new(1, 5 * SLOTS + 1, 0).poll(&w, &free, &word(1, 2)));
    }

    #[test]
    fn the_root_waits_for_its_own_stamp_not_an_older_one() {
        let w = Model::new(3);
        let free: Vec<FreeSlots> = (0..3).map(|_| FreeSlots::default()).collect();
        assert!(Post::new(2, 1, 0).poll(&w, &free[2], &word(2, 1)));
        // Reduce 65 shares slot 1 with reduce 1, whose data is still there.
        let wires = [0, 1, 2];
        let mut c = Collect::new(SLOTS + 1, 3, 1, &word(1, 9), Vec::new());
        assert_eq!(c.poll(&w, &wires), Ok(false));
        let mut c1 = Collect::new(1, 3, 1, &word(1, 1), vec![7; 100]);
        assert_eq!(c1.missing(), 2);
        assert!(Post::new(0, 1, 0).poll(&w, &free[0], &word(0, 1)));
        assert_eq!(c1.poll(&w, &wires), Ok(true));
        assert_eq!(c1.missing(), 0);
        assert_eq!(
            c1.parts(),
            vec![&word(0, 1)[..], &word(1, 1)[..], &word(2, 1)[..]],
            "a reused buffer's old bytes do not show"
        );
        assert_eq!(c.poll(&w, &wires), Ok(false), "reduce 65 is not in yet");
    }

    #[test]
    fn a_post_that_ends_or_goes_on_where_its_reader_does_not_expect_fails() {
        let w = Model::new(2);
        let free: Vec<FreeSlots> = (0..2).map(|_| FreeSlots::default()).collect();
        // 100 bytes in two pieces, to a root that expects one full slot:
        // the first piece's length is right, but more follow.
        assert!(PostPieces::new(1, 1, 100, 56).poll(&w, &free[1], &[7; 100], |_| 1));
        let mut c = Collect::new(1, 2, 0, &[0; 56], Vec::new());
        assert_eq!(
            c.poll(&w, &[0, 1]),
            Err(SizeMismatch {
                member: 1,
                got: 56 | MORE,
                want: 56
            })
        );
        // One full slot, to a reader of 100 bytes: the post ends early.
        assert!(PostPieces::new(1, 3, 56, 56).poll(&w, &free[1], &[7; 56], |_| 1));
        let mut r = ReadPieces::new(1, 3, 100, 0..100, 56).alone(true);
        assert_eq!(
            r.poll(&w, &mut [0; 100]),
            Err(PieceMismatch {
                piece: 0,
                got: 56,
                want: 56 | MORE
            })
        );
        // And a root collecting 100 bytes in pieces reads both back.
        assert!(PostPieces::new(1, 4, 100, 56).poll(&w, &free[1], &[9; 100], |_| 1));
        let mut c = Collect::new(4, 2, 0, &[1; 100], Vec::new()).in_pieces(56);
        assert_eq!(c.poll(&w, &[0, 1]), Ok(true));
        assert_eq!(c.parts(), vec![&[1; 100][..], &[9; 100][..]]);
        assert_eq!(shown(56 | MORE), "56 and more");
    }

    #[test]
    fn a_contribution_of_the_wrong_size_is_reported() {
        let w = Model::new(2);
        let free: Vec<FreeSlots> = (0..2).map(|_| FreeSlots::default()).collect();
        assert!(Post::new(1, 1, 0).poll(&w, &free[1], &[1, 2, 3]));
        let mut c = Collect::new(1, 2, 0, &[0; 8], Vec::new());
        assert_eq!(
            c.poll(&w, &[0, 1]),
            Err(SizeMismatch {
                member: 1,
                got: 3,
                want: 8
            })
        );
        // The slot was given back, so its owner is not stuck.
        assert!(Post::new(1, 1 + SLOTS, 0).poll(&w, &free[1], &[0; 8]));
    }

    proptest! {
        /// Members run a sequence of reduces with rotating roots; a seeded
        /// schedule picks which member moves at each step. Every root must
        /// collect exactly the contributions made for its reduce, in rank
        /// order, and every schedule must finish.
        #[test]
        fn any_interleaving_delivers_each_reduce_exactly(
            members in 1usize..6,
            reduces in 1u32..40,
            roots in proptest::collection::vec(0usize..6, 40),
            schedule in proptest::collection::vec(0usize..6, 0..4000),
        ) {
            let w = Model::new(members);
            let free: Vec<FreeSlots> = (0..members).map(|_| FreeSlots::default()).collect();
            let wires: Vec<usize> = (0..members).rev().collect();
            // Per member: the reduce it is on and its operation in flight.
            enum Doing { Post(Post, Vec<u8>), Collect(Collect) }
            let start = |m: usize, s: u32| {
                let root = roots[(s - 1) as usize] % members;
                if m == root {
                    Doing::Collect(Collect::new(s, members, root, &word(m, s), Vec::new()))
                } else {
                    Doing::Post(Post::new(wires[m], s, root), word(m, s))
                }
            };
            let mut at: Vec<u32> = vec![1; members];
            let mut doing: Vec<Option<Doing>> = (0..members).map(|m| Some(start(m, 1))).collect();
            let step = |m: usize, at: &mut Vec<u32>, doing: &mut Vec<Option<Doing>>| {
                let Some(d) = doing[m].as_mut() else { return };
                let done = match d {
                    Doing::Post(p, data) => p.poll(&w, &free[wires[m]], data),
                    Doing::Collect(c) => {
                        let done = c.poll(&w, &wires).expect("sizes match");
                        if done {
                            let s = at[m];
                            let want: Vec<Vec<u8>> = (0..members).map(|k| word(k, s)).collect();
                            let got: Vec<Vec<u8>> = c.parts().iter().map(|p| p.to_vec()).collect();
                            assert_eq!(got, want, "reduce {}", s);
                        }
                        done
                    }
                };
                if done {
                    at[m] += 1;
                    doing[m] = (at[m] <= reduces).then(|| start(m, at[m]));
                }
            };
            for &m in &schedule {
                step(m % members, &mut at, &mut doing);
            }
            // Then round-robin until everyone is through: no schedule deadlocks.
            for _ in 0..(reduces as usize + 2) * SLOTS as usize * members * 4 {
                for m in 0..members {
                    step(m, &mut at, &mut doing);
                }
            }
            prop_assert!(doing.iter().all(Option::is_none), "stuck at {:?}", at);
        }

        /// Broadcasts and scatters longer than a slot, from rotating roots,
        /// under a seeded schedule: every reader gets exactly its bytes,
        /// reading only the pieces its block touches, every schedule
        /// finishes, and every slot is free at the end.
        #[test]
        fn posts_in_pieces_reach_each_reader_exactly(
            members in 1usize..6,
            ops in proptest::collection::vec((0u8..2, 0usize..6, 1usize..40), 1..30),
            piece in 1usize..12,
            schedule in proptest::collection::vec(0usize..6, 0..4000),
        ) {
            let w = Model::new(members);
            let free: Vec<FreeSlots> = (0..members).map(|_| FreeSlots::default()).collect();
            let wires: Vec<usize> = (0..members).rev().collect();
            // Each op's first stamp, and what member m wants of op k's post.
            let mut firsts = Vec::new();
            let mut next = 1u32;
            for &(kind, _, b) in &ops {
                let len = if kind == 0 { b } else { b * members };
                firsts.push(next);
                next = next.wrapping_add(pieces(len, piece) as u32);
            }
            let len_of = |k: usize| if ops[k].0 == 0 { ops[k].2 } else { ops[k].2 * members };
            let want = |k: usize, m: usize| if ops[k].0 == 0 { 0..ops[k].2 } else { m * ops[k].2..(m + 1) * ops[k].2 };
            let root_of = |k: usize| ops[k].1 % members;
            let byte = |k: usize, i: usize| (k * 31 + i * 7 + 1) as u8;
            let data = |k: usize| (0..len_of(k)).map(|i| byte(k, i)).collect::<Vec<u8>>();
            enum Doing { Post(PostPieces), Read(ReadPieces, Vec<u8>) }
            let start = |m: usize, k: usize| {
                let root = root_of(k);
                if m == root {
                    Doing::Post(PostPieces::new(wires[m], firsts[k], len_of(k), piece))
                } else {
                    let wnt = want(k, m);
                    let n = wnt.len();
                    Doing::Read(ReadPieces::new(wires[root], firsts[k], len_of(k), wnt, piece), vec![0; n])
                }
            };
            let mut at = vec![0usize; members];
            let mut doing: Vec<Option<Doing>> = (0..members).map(|m| Some(start(m, 0))).collect();
            let step = |m: usize, at: &mut Vec<usize>, doing: &mut Vec<Option<Doing>>| {
                let Some(d) = doing[m].as_mut() else { return };
                let k = at[m];
                let done = match d {
                    Doing::Post(p) => {
                        let root = root_of(k);
                        let readers = |j: usize| (0..members)
                            .filter(|&r| r != root && ReadPieces::touches(&want(k, r), j, piece))
                            .count() as u32;
                        p.poll(&w, &free[wires[m]], &data(k), readers)
                    }
                    Doing::Read(r, out) => {
                        let done = r.poll(&w, out).expect("pieces match");
                        if done {
                            let all = data(k);
                            assert_eq!(&out[..], &all[want(k, m)], "op {} member {}", k, m);
                        }
                        done
                    }
                };
                if done {
                    at[m] += 1;
                    doing[m] = (at[m] < ops.len()).then(|| start(m, at[m]));
                }
            };
            for &m in &schedule {
                step(m % members, &mut at, &mut doing);
            }
            for _ in 0..(ops.len() + 2) * SLOTS as usize * members * 8 {
                for m in 0..members {
                    step(m, &mut at, &mut doing);
                }
            }
            prop_assert!(doing.iter().all(Option::is_none), "stuck at {:?}", at);
            for (i, f) in free.iter().enumerate() {
                for slot in 0..SLOTS as usize {
                    prop_assert_eq!(w.taken(i, slot), f.owed[slot].get(), "member {} slot {}", i, slot);
                }
            }
        }

        /// Reduces, broadcasts and scans mixed on the same slots, under a
        /// seeded schedule: every reader gets exactly the post made for
        /// its operation, every schedule finishes, and every slot is free
        /// at the end, so the reader counts add up.
        #[test]
        fn posts_with_several_readers_mix_with_reduces(
            members in 1usize..6,
            kinds in proptest::collection::vec((0u8..3, 0usize..6), 1..40),
            schedule in proptest::collection::vec(0usize..6, 0..4000),
        ) {
            let w = Model::new(members);
            let free: Vec<FreeSlots> = (0..members).map(|_| FreeSlots::default()).collect();
            let wires: Vec<usize> = (0..members).rev().collect();
            // What a member does for one operation, in order.
            enum Part { Post(Post, u32), Collect(Collect), Read(Read, usize) }
            let parts = |m: usize, s: u32| -> Vec<Part> {
                let (kind, root) = kinds[(s - 1) as usize];
                let root = root % members;
                let n = members as u32;
                match kind {
                    // A reduce.
                    0 if m == root => vec![Part::Collect(Collect::new(s, members, root, &word(m, s), Vec::new()))],
                    0 => vec![Part::Post(Post::new(wires[m], s, root), 0)],
                    // A broadcast.
                    1 if m == root && members > 1 => vec![Part::Post(Post::new(wires[m], s, root), n - 1)],
                    1 if m == root => vec![],
                    1 => vec![Part::Read(Read::new(wires[root], s), root)],
                    // A scan: its own part for those above, then those below.
                    _ => {
                        let above = n - 1 - m as u32;
                        let post = (above > 0).then(|| Part::Post(Post::new(wires[m], s, m), above));
                        post.into_iter()
                            .chain((0..m).map(|k| Part::Read(Read::new(wires[k], s), k)))
                            .collect()
                    }
                }
            };
            let ops = kinds.len() as u32;
            let mut at: Vec<u32> = vec![1; members];
            let mut doing: Vec<Vec<Part>> = (0..members).map(|m| parts(m, 1)).collect();
            let step = |m: usize, at: &mut Vec<u32>, doing: &mut Vec<Vec<Part>>| {
                if at[m] > ops {
                    return;
                }
                let s = at[m];
                let done = match doing[m].first_mut() {
                    None => true,
                    Some(Part::Post(p, 0)) => p.poll(&w, &free[wires[m]], &word(m, s)),
                    Some(Part::Post(p, readers)) => p.poll_for(&w, &free[wires[m]], &word(m, s), *readers),
                    Some(Part::Collect(c)) => {
                        let done = c.poll(&w, &wires).expect("sizes match");
                        if done {
                            let want: Vec<Vec<u8>> = (0..members).map(|k| word(k, s)).collect();
                            let got: Vec<Vec<u8>> = c.parts().iter().map(|p| p.to_vec()).collect();
                            assert_eq!(got, want, "reduce {}", s);
                        }
                        done
                    }
                    Some(Part::Read(r, from)) => {
                        let mut got = [0u8; 8];
                        let n = r.poll(&w, &mut got);
                        if n.is_some() {
                            assert_eq!(n, Some(8));
                            assert_eq!(got.to_vec(), word(*from, s), "op {} read by {}", s, m);
                        }
                        n.is_some()
                    }
                };
                if done && !doing[m].is_empty() {
                    doing[m].remove(0);
                }
                if doing[m].is_empty() {
                    at[m] += 1;
                    if at[m] <= ops {
                        doing[m] = parts(m, at[m]);
                    }
                }
            };
            for &m in &schedule {
                step(m % members, &mut at, &mut doing);
            }
            for _ in 0..(ops as usize + 2) * SLOTS as usize * members * 8 {
                for m in 0..members {
                    step(m, &mut at, &mut doing);
                }
            }
            prop_assert!(at.iter().all(|&a| a > ops), "stuck at {:?}", at);
            for (i, f) in free.iter().enumerate() {
                for slot in 0..SLOTS as usize {
                    prop_assert_eq!(w.taken(i, slot), f.owed[slot].get(), "member {} slot {}", i, slot);
                }
            }
        }
    }
}
