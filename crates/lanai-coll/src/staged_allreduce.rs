//! A large allreduce among ranks that share a node, through staging slots
//! in shared memory: no message, no system call, and every member folds
//! its own share of the vector at the same time.
//!
//! The vector goes through in chunks of at most one staging slot. For
//! chunk `k`, whose stamp is `first + k`:
//! 1. every member copies its chunk into its slot `stamp % SLOTS` and
//!    publishes its `Staged` mark;
//! 2. once every member's chunk is in, member `p` folds part `p` of the
//!    chunk (its share of the elements) from every slot, in binomial order,
//!    into its receive buffer, copies that result over part `p` of its own
//!    slot, and publishes `Reduced`;
//! 3. once every member has reduced, each copies the others' parts into
//!    its receive buffer and publishes `Finished`;
//! 4. a member's slot is free again once every other member has finished
//!    that chunk: it then stores the chunk's stamp in the slot's `done`
//!    word, the same word through which staged reduces free their slots.
//!
//! A reduce to one root is the same with step 3 left to the root: the
//! other members mark each chunk finished as soon as they have folded
//! their share, since they read nothing after that.
//!
//! A member stages ahead of the others, [`SLOTS`] chunks at most, so that
//! copies and folds of neighbouring chunks overlap. Only a slot's owner
//! writes it. A member reads another's slot between that member's
//! `Staged` and its own `Finished` (part `p` in step 2, the owner's part
//! in step 3), and the owner reuses the slot only after every `Finished`,
//! so no read ever sees a slot being rewritten.
//!
//! Marks are kept per member and slot, and hold the stamp of the chunk
//! they speak of, so they are compared for equality: a slot holds one
//! chunk until every member is done with it, while the member's other
//! slots may already carry a later allreduce, started before this one is
//! over and polled in any order with it. The call completes once every
//! chunk is retired: later staged reduces then find the slots free as
//! they expect.
//!
//! Broadcasts, gathers and allgathers ([`StagedShare`]) go through the
//! same slots under the same stamps, with a count of readers per slot in
//! place of the `Finished` marks (see there why).
//!
//! As in [`crate::mailbox`], a poll makes single accesses to the wires,
//! so a model can interleave members freely.

use std::ops::Range;

/// Staging slots per member, used in turn: how far a member stages ahead.
pub const SLOTS: usize = 4;

/// The marks each member publishes, in the order it passes them for one
/// chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The member's chunk is in its slot.
    Staged,
    /// The member's part of the chunk is folded, in its receive buffer and
    /// over that part of its slot.
    Reduced,
    /// The member is done reading the other members' slots for the chunk.
    Finished,
}

/// The shared words and bytes of one staged allreduce, seen from one
/// member. Members are positions in the communicator. Mark loads acquire
/// and mark stores release, so the bytes written before a mark are seen
/// by whoever sees the mark.
pub trait StagedWires {
    /// The error a fold may give.
    type Error;
    /// Member `i`'s latest stamp for `mark` in `slot`.
    fn mark(&self, i: usize, slot: usize, mark: Mark) -> u32;
    /// Publishes this member's `mark` in `slot` for chunk `stamp`.
    fn set_mark(&self, slot: usize, mark: Mark, stamp: u32);
    /// The total length member `i` published with its chunk in `slot`.
    fn len_of(&self, i: usize, slot: usize) -> u32;
    /// The stamp of the last use of this member's `slot` that is over.
    fn done(&self, slot: usize) -> u32;
    /// This member's `slot` is free after use `stamp`.
    fn release(&self, slot: usize, stamp: u32);
    /// Copies bytes `chunk` of this member's contribution into its `slot`,
    /// and notes the total length (low 32 bits) beside the slot. Per slot,
    /// since a member may stage a later allreduce in its other slots
    /// before the others have folded its last chunk of this one.
    fn stage(&mut self, slot: usize, chunk: Range<usize>);
    /// Folds bytes `part` (relative to the chunk) of every member's `slot`
    /// into bytes `chunk.start + part` of the receive buffer, in binomial
    /// order over the members, then, with `publish`, copies the result
    /// over `part` of this member's slot for the others to gather.
    fn fold(
        &mut self,
        slot: usize,
        chunk: Range<usize>,
        part: Range<usize>,
        publish: bool,
    ) -> Result<(), Self::Error>;
    /// How many members have read this member's `slot` since it last
    /// cleared the count (a broadcast's readers).
    fn readers(&self, slot: usize) -> u32;
    /// Clears this member's count for `slot`, before the mark that
    /// publishes the slot's next chunk.
    fn clear_readers(&self, slot: usize);
    /// Counts this member as done reading member `i`'s `slot`.
    fn add_reader(&self, i: usize, slot: usize);
    /// Copies bytes `part` of member `i`'s `slot` into the receive buffer
    /// from byte `at` on.
    fn gather(&self, i: usize, slot: usize, part: Range<usize>, at: usize);
}

/// The end of one pass of a poll loop that took `step`s or not: `None`
/// to go round again, else what the poll found.
fn after_pass<E>(step: bool, moved: &mut bool) -> Option<Progress<E>> {
    match (step, *moved) {
        (true, _) => {
            *moved = true;
            None
        }
        (false, true) => Some(Progress::Moved),
        (false, false) => Some(Progress::Waiting),
    }
}

/// What a poll found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress<E> {
    /// Nothing moved: the member waits for the others.
    Waiting,
    /// Something moved: members waiting for this one may go on.
    Moved,
    /// Every chunk is folded, gathered and retired.
    Done,
    /// A fold failed, or members disagree about the length.
    Failed(StagedError<E>),
}

/// Why a staged allreduce failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StagedError<E> {
    /// Member `member` contributes `got` bytes (low 32 bits), this one `want`.
    LengthMismatch {
        member: usize,
        got: u32,
        want: u32,
    },
    Fold(E),
}

impl<E: std::fmt::Display> std::fmt::Display for StagedError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StagedError::LengthMismatch { member, got, want } => write!(
                f,
                "rank {member} passes {got} bytes to this collective, this rank {want}"
            ),
            StagedError::Fold(e) => e.fmt(f),
        }
    }
}

/// How a vector goes through the slots: its chunks, their stamps and
/// slots, and what each slot held before.
#[derive(Debug, Clone)]
struct Chunks {
    len: usize,
    chunk: usize,
    first: u32,
    /// Per slot, the stamp of its last use before this operation.
    after: [u32; SLOTS],
}

impl Chunks {
    fn new(len: usize, elem: usize, slot_len: usize, first: u32, after: [u32; SLOTS]) -> Self {
        let chunk = (slot_len / elem.max(1)).max(1) * elem.max(1);
        Self {
            len,
            chunk,
            first,
            after,
        }
    }

    fn count(&self) -> usize {
        self.len.div_ceil(self.chunk)
    }

    fn stamp(&self, k: usize) -> u32 {
        self.first.wrapping_add(k as u32)
    }

    fn slot(&self, k: usize) -> usize {
        self.stamp(k) as usize % SLOTS
    }

    /// The stamp of chunk `k`'s slot's previous use, which must be over.
    fn before(&self, k: usize) -> u32 {
        if k >= SLOTS {
            self.stamp(k - SLOTS)
        } else {
            self.after[self.slot(k)]
        }
    }

    fn bytes(&self, k: usize) -> Range<usize> {
        let start = k * self.chunk;
        start..(start + self.chunk).min(self.len)
    }

    /// The stamp of the last chunk that used each slot; slots not used
    /// keep `after`'s.
    fn last_uses(&self) -> [u32; SLOTS] {
        let mut last = self.after;
        for k in self.count().saturating_sub(SLOTS)..self.count() {
            last[self.slot(k)] = self.stamp(k);
        }
        last
    }
}

/// One member's staged allreduce.
#[derive(Debug, Clone)]
pub struct StagedAllreduce {
    me: usize,
    members: usize,
    elem: usize,
    at: Chunks,
    /// The member that gathers the result; `None`: every member.
    root: Option<usize>,
    staged: usize,
    reduced: usize,
    gathered: usize,
    retired: usize,
}

impl StagedAllreduce {
    /// Member `me` of `members` reduces `len` bytes of `elem`-byte elements
    /// in chunks of at most `slot_len` bytes, stamped from `first`. `after`
    /// holds, per slot, the stamp of its last use so far (0 for none).
    pub fn new(
        me: usize,
        members: usize,
        len: usize,
        elem: usize,
        slot_len: usize,
        first: u32,
        after: [u32; SLOTS],
    ) -> Self {
        let elem = elem.max(1);
        Self {
            me,
            members,
            elem,
            at: Chunks::new(len, elem, slot_len, first, after),
            root: None,
            staged: 0,
            reduced: 0,
            gathered: 0,
            retired: 0,
        }
    }

    /// This member's position.
    pub fn me(&self) -> usize {
        self.me
    }

    /// Makes this a reduce whose result only member `root` gathers.
    pub fn to_root(mut self, root: usize) -> Self {
        self.root = Some(root);
        self
    }

    fn gathers(&self) -> bool {
        self.root.map_or(true, |r| r == self.me)
    }

    /// Chunks the vector takes, hence stamps this allreduce uses.
    pub fn chunks(&self) -> usize {
        self.at.count()
    }

    /// Chunks the vector of `len` bytes takes.
    pub fn chunks_for(len: usize, elem: usize, slot_len: usize) -> usize {
        Chunks::new(len, elem, slot_len, 0, [0; SLOTS]).count()
    }

    fn stamp(&self, k: usize) -> u32 {
        self.at.stamp(k)
    }

    fn slot(&self, k: usize) -> usize {
        self.at.slot(k)
    }

    fn before(&self, k: usize) -> u32 {
        self.at.before(k)
    }

    fn bytes(&self, k: usize) -> Range<usize> {
        self.at.bytes(k)
    }

    /// Member `p`'s share of a chunk of `len` bytes, relative to the
    /// chunk: whole elements, spread as evenly as they go.
    pub fn part(&self, p: usize, len: usize) -> Range<usize> {
        let elems = len / self.elem;
        let at = |q: usize| q * elems / self.members * self.elem;
        at(p)..if p + 1 == self.members {
            len
        } else {
            at(p + 1)
        }
    }

    /// The stamp of the last chunk that used each slot, for the uses after
    /// this allreduce; slots it did not use keep `after`'s.
    pub fn last_uses(&self) -> [u32; SLOTS] {
        self.at.last_uses()
    }

    /// Whether every other member has passed `mark` for chunk `k`.
    fn all_others(&self, w: &impl StagedWires, mark: Mark, k: usize) -> bool {
        let (slot, stamp) = (self.slot(k), self.stamp(k));
        (0..self.members).all(|i| i == self.me || w.mark(i, slot, mark) == stamp)
    }

    /// Moves on as far as the wires allow.
    pub fn poll<W: StagedWires>(&mut self, w: &mut W) -> Progress<W::Error> {
        let n = self.chunks();
        let mut moved = false;
        loop {
            let mut step = false;
            if self.retired < self.gathered && self.all_others(w, Mark::Finished, self.retired) {
                w.release(self.slot(self.retired), self.stamp(self.retired));
                self.retired += 1;
                step = true;
            }
            if self.staged < n && w.done(self.slot(self.staged)) == self.before(self.staged) {
                let k = self.staged;
                w.stage(self.slot(k), self.bytes(k));
                w.set_mark(self.slot(k), Mark::Staged, self.stamp(k));
                self.staged += 1;
                step = true;
            }
            if self.reduced < self.staged && self.all_others(w, Mark::Staged, self.reduced) {
                let k = self.reduced;
                let (want, slot) = (self.at.len as u32, self.slot(k));
                let bad = (0..self.members).find(|&i| i != self.me && w.len_of(i, slot) != want);
                if let Some(member) = bad {
                    return Progress::Failed(StagedError::LengthMismatch {
                        member,
                        got: w.len_of(member, slot),
                        want,
                    });
                }
                let bytes = self.bytes(k);
                let part = self.part(self.me, bytes.len());
                // A reduce's root gathers from the others; nobody from it.
                let publish = self.root != Some(self.me);
                if let Err(e) = w.fold(slot, bytes, part, publish) {
                    return Progress::Failed(StagedError::Fold(e));
                }
                w.set_mark(slot, Mark::Reduced, self.stamp(k));
                self.reduced += 1;
                step = true;
            }
            if self.gathered < self.reduced
                && (!self.gathers() || self.all_others(w, Mark::Reduced, self.gathered))
            {
                let k = self.gathered;
                let bytes = self.bytes(k);
                if self.gathers() {
                    for i in (0..self.members).filter(|&i| i != self.me) {
                        let part = self.part(i, bytes.len());
                        let at = bytes.start + part.start;
                        w.gather(i, self.slot(k), part, at);
                    }
                }
                w.set_mark(self.slot(k), Mark::Finished, self.stamp(k));
                self.gathered += 1;
                step = true;
            }
            if self.retired == n {
                return Progress::Done;
            }
            if let Some(p) = after_pass(step, &mut moved) {
                return p;
            }
        }
    }
}

/// Which members stage their buffer and which copy the others' out, in a
/// [`StagedShare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// The root stages, every other member reads it.
    Bcast,
    /// Every member but the root stages its block; the root reads them all.
    Gather,
    /// Every member stages its block and reads everyone else's.
    Allgather,
    /// The root stages one block per member; each other member reads its
    /// own.
    Scatter,
    /// Every member stages one block per member and reads its own block of
    /// everyone else's.
    Alltoall,
}

/// One member's broadcast, gather or allgather through the slots: each
/// source stages its buffer chunk by chunk in its own slots, each reader
/// copies the chunks of every source straight into its receive buffer
/// (a gather's and an allgather's at the source's block) and counts
/// itself on the source's slot, and a source frees a slot once all its
/// readers have. A count, not the readers' `Finished` marks: a reader
/// that does not use the slot index itself could overwrite a mark of its
/// own that owners of that slot index in an earlier allreduce have yet
/// to see.
#[derive(Debug, Clone)]
pub struct StagedShare {
    me: usize,
    members: usize,
    root: usize,
    share: Share,
    at: Chunks,
    staged: usize,
    gathered: usize,
    retired: usize,
}

impl StagedShare {
    /// Member `me` of `members` takes part in `share` of `len` bytes per
    /// source (the root's buffer for a broadcast, every member's block for
    /// a gather or allgather, all `members` blocks of a scatter's root or
    /// of each member in an all-to-all), in chunks of at most `slot_len`
    /// bytes stamped from `first`; `after` as for [`StagedAllreduce::new`].
    /// `root` is ignored for an allgather and an all-to-all.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        me: usize,
        members: usize,
        root: usize,
        share: Share,
        len: usize,
        slot_len: usize,
        first: u32,
        after: [u32; SLOTS],
    ) -> Self {
        Self {
            me,
            members,
            root,
            share,
            at: Chunks::new(len, 1, slot_len, first, after),
            staged: 0,
            gathered: 0,
            retired: 0,
        }
    }

    /// Chunks each source's buffer takes, hence stamps the operation uses.
    pub fn chunks(&self) -> usize {
        self.at.count()
    }

    /// This member's position.
    pub fn me(&self) -> usize {
        self.me
    }

    /// Whether this member reads, hence keeps a receive buffer.
    pub fn reader(&self) -> bool {
        self.reads(self.me)
    }

    fn is_source(&self, m: usize) -> bool {
        match self.share {
            Share::Bcast | Share::Scatter => m == self.root,
            Share::Gather => m != self.root,
            Share::Allgather | Share::Alltoall => true,
        }
    }

    fn reads(&self, m: usize) -> bool {
        match self.share {
            Share::Bcast | Share::Scatter => m != self.root,
            Share::Gather => m == self.root,
            Share::Allgather | Share::Alltoall => true,
        }
    }

    /// How many members read chunk `k` of source `s`: of a scatter's or an
    /// all-to-all's, only those whose block the chunk holds part of.
    fn readers_of(&self, s: usize, k: usize) -> usize {
        match self.share {
            Share::Gather => 1,
            Share::Scatter | Share::Alltoall => (0..self.members)
                .filter(|&r| r != s && self.wants(r, &self.at.bytes(k)))
                .count(),
            _ => self.members - 1,
        }
    }

    /// Whether member `r` reads any of bytes `chunk` of a source's buffer.
    fn wants(&self, r: usize, chunk: &Range<usize>) -> bool {
        match self.share {
            Share::Scatter | Share::Alltoall => {
                let block = self.at.len / self.members;
                r * block < chunk.end && chunk.start < (r + 1) * block
            }
            _ => true,
        }
    }

    /// What this member reads of bytes `chunk` of source `s`'s buffer:
    /// the bytes relative to the chunk, and where the first goes in its
    /// receive buffer; `None` if nothing.
    fn wanted(&self, s: usize, chunk: &Range<usize>) -> Option<(Range<usize>, usize)> {
        let len = chunk.len();
        match self.share {
            Share::Bcast => Some((0..len, chunk.start)),
            Share::Gather | Share::Allgather => Some((0..len, s * self.at.len + chunk.start)),
            Share::Scatter | Share::Alltoall => {
                // This member's block of the source's `members` blocks.
                let block = self.at.len / self.members;
                let mine = self.me * block..(self.me + 1) * block;
                let (from, to) = (mine.start.max(chunk.start), mine.end.min(chunk.end));
                let into = if self.share == Share::Alltoall {
                    s * block
                } else {
                    0
                };
                (from < to).then(|| {
                    (
                        from - chunk.start..to - chunk.start,
                        into + from - mine.start,
                    )
                })
            }
        }
    }

    /// The stamp of the last use of each of this member's slots: only a
    /// source's change.
    pub fn last_uses(&self) -> [u32; SLOTS] {
        if self.is_source(self.me) {
            self.at.last_uses()
        } else {
            self.at.after
        }
    }

    /// Moves on as far as the wires allow.
    pub fn poll<W: StagedWires>(&mut self, w: &mut W) -> Progress<W::Error> {
        let n = self.at.count();
        let (source, reader) = (self.is_source(self.me), self.reads(self.me));
        let mut moved = false;
        loop {
            let mut step = false;
            if source && self.retired < self.staged {
                let k = self.retired;
                let (slot, stamp) = (self.at.slot(k), self.at.stamp(k));
                if w.readers(slot) as usize == self.readers_of(self.me, k) {
                    w.release(slot, stamp);
                    self.retired += 1;
                    step = true;
                }
            }
            let k = self.staged;
            if source && k < n && w.done(self.at.slot(k)) == self.at.before(k) {
                w.clear_readers(self.at.slot(k));
                w.stage(self.at.slot(k), self.at.bytes(k));
                w.set_mark(self.at.slot(k), Mark::Staged, self.at.stamp(k));
                self.staged += 1;
                step = true;
            }
            let k = self.gathered;
            // A chunk that holds none of this member's block, it skips. A
            // skip moves nothing others wait for, but a stage or release
            // earlier in this pass did: a pass that ended here once lost
            // it, the poll said `Waiting`, nobody was woken, and sleepers
            // slept out their timeout (4-rank all-to-all, 100 ms stalls).
            if reader && k < n && !self.wants(self.me, &self.at.bytes(k)) {
                self.gathered += 1;
                moved |= step;
                continue;
            }
            let (slot, stamp) = (self.at.slot(k), self.at.stamp(k));
            let from = |i: usize| i != self.me && self.is_source(i);
            if reader
                && k < n
                && (0..self.members).all(|i| !from(i) || w.mark(i, slot, Mark::Staged) == stamp)
            {
                let want = self.at.len as u32;
                if let Some(member) =
                    (0..self.members).find(|&i| from(i) && w.len_of(i, slot) != want)
                {
                    return Progress::Failed(StagedError::LengthMismatch {
                        member,
                        got: w.len_of(member, slot),
                        want,
                    });
                }
                let bytes = self.at.bytes(k);
                for i in (0..self.members).filter(|&i| from(i)) {
                    if let Some((part, at)) = self.wanted(i, &bytes) {
                        w.gather(i, slot, part, at);
                    }
                    w.add_reader(i, slot);
                }
                self.gathered += 1;
                step = true;
            }
            if (!source || self.retired == n) && (!reader || self.gathered == n) {
                return Progress::Done;
            }
            if let Some(p) = after_pass(step, &mut moved) {
                return p;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Every member's wires in one place: marks, slots, lengths, `done`
    /// words, as plain memory; each member's contributions and receive
    /// buffers per allreduce. Each access is one step a scheduler may
    /// interleave with other members'.
    struct Node {
        marks: RefCell<Vec<[[u32; 3]; SLOTS]>>,
        lens: RefCell<Vec<[u32; SLOTS]>>,
        done: RefCell<Vec<[u32; SLOTS]>>,
        readers: RefCell<Vec<[u32; SLOTS]>>,
        slots: RefCell<Vec<Vec<Vec<u8>>>>,
        slot_len: usize,
    }

    impl Node {
        fn new(n: usize, slot_len: usize) -> Self {
            Self {
                marks: RefCell::new(vec![[[0; 3]; SLOTS]; n]),
                lens: RefCell::new(vec![[0; SLOTS]; n]),
                done: RefCell::new(vec![[0; SLOTS]; n]),
                readers: RefCell::new(vec![[0; SLOTS]; n]),
                slots: RefCell::new(vec![vec![vec![0xEE; slot_len]; SLOTS]; n]),
                slot_len,
            }
        }
    }

    /// One member's view, for one of its allreduces.
    struct View<'a> {
        node: &'a Node,
        me: usize,
        input: &'a [u8],
        out: &'a RefCell<Vec<u8>>,
        /// False on a reduce's non-root: its folds go to the slot alone,
        /// so any byte in its receive buffer came from a gather.
        keeps: bool,
    }

    impl StagedWires for View<'_> {
        type Error = String;
        fn mark(&self, i: usize, slot: usize, mark: Mark) -> u32 {
            self.node.marks.borrow()[i][slot][mark as usize]
        }
        fn set_mark(&self, slot: usize, mark: Mark, stamp: u32) {
            self.node.marks.borrow_mut()[self.me][slot][mark as usize] = stamp;
        }
        fn len_of(&self, i: usize, slot: usize) -> u32 {
            self.node.lens.borrow()[i][slot]
        }
        fn done(&self, slot: usize) -> u32 {
            self.node.done.borrow()[self.me][slot]
        }
        fn release(&self, slot: usize, stamp: u32) {
            self.node.done.borrow_mut()[self.me][slot] = stamp;
        }
        fn readers(&self, slot: usize) -> u32 {
            self.node.readers.borrow()[self.me][slot]
        }
        fn clear_readers(&self, slot: usize) {
            self.node.readers.borrow_mut()[self.me][slot] = 0;
        }
        fn add_reader(&self, i: usize, slot: usize) {
            self.node.readers.borrow_mut()[i][slot] += 1;
        }
        fn stage(&mut self, slot: usize, chunk: Range<usize>) {
            self.node.lens.borrow_mut()[self.me][slot] = self.input.len() as u32;
            let src = &self.input[chunk.clone()];
            let mut slots = self.node.slots.borrow_mut();
            let dst = &mut slots[self.me][slot];
            assert!(chunk.len() <= self.node.slot_len);
            dst[..src.len()].copy_from_slice(src);
            // What the slot held past the chunk is stale: poison it.
            dst[src.len()..].fill(0xEE);
        }
        fn fold(
            &mut self,
            slot: usize,
            chunk: Range<usize>,
            part: Range<usize>,
            publish: bool,
        ) -> Result<(), String> {
            let slots = self.node.slots.borrow();
            // Wrapping byte sums, folded in member order: any grouping of a
            // commutative, associative sum gives the same bytes.
            let mut acc = vec![0u8; part.len()];
            for s in slots.iter() {
                for (a, b) in acc.iter_mut().zip(&s[slot][part.clone()]) {
                    *a = a.wrapping_add(*b);
                }
            }
            drop(slots);
            let at = chunk.start + part.start;
            if self.keeps {
                self.out.borrow_mut()[at..at + part.len()].copy_from_slice(&acc);
            }
            let mut slots = self.node.slots.borrow_mut();
            if publish {
                slots[self.me][slot][part].copy_from_slice(&acc);
            } else {
                // Unpublished: poison it, so that a gather from it shows.
                slots[self.me][slot][part].fill(0xEE);
            }
            Ok(())
        }
        fn gather(&self, i: usize, slot: usize, part: Range<usize>, at: usize) {
            let src = self.node.slots.borrow()[i][slot][part.clone()].to_vec();
            self.out.borrow_mut()[at..at + part.len()].copy_from_slice(&src);
        }
    }

    fn expected(inputs: &[Vec<u8>]) -> Vec<u8> {
        let mut sum = vec![0u8; inputs[0].len()];
        for v in inputs {
            for (a, b) in sum.iter_mut().zip(v) {
                *a = a.wrapping_add(*b);
            }
        }
        sum
    }

    /// A small deterministic generator (xorshift), so runs are replayable
    /// from their seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    enum Machine {
        Reduce(StagedAllreduce),
        Bcast(StagedShare),
    }

    /// One member's operation in flight in the model.
    struct Live {
        round: usize,
        m: Machine,
        out: RefCell<Vec<u8>>,
    }

    /// Runs one allreduce per entry of `lens` over `n` members, in
    /// elements of `elem` bytes. The scheduler, by `seed`, picks which
    /// member polls, and which of its allreduces: each member starts up to
    /// `ahead` of them before the first is over, as nonblocking calls do,
    /// and polls them in any order, so members run into later allreduces
    /// on their other slots. Every member must get every sum, and leave
    /// every slot free.
    fn run(n: usize, lens: &[usize], elem: usize, slot_len: usize, ahead: usize, seed: u64) {
        run_to(n, lens, elem, slot_len, ahead, seed, false)
    }

    /// What one round of the model runs.
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        All,
        /// A reduce to this member: only its result is checked, and the
        /// others' receive buffers must stay untouched.
        Reduce(usize),
        /// A broadcast of this member's input: the others must receive it,
        /// and its own receive buffer stay untouched.
        Bcast(usize),
        /// A gather to this member, and an allgather: every block but the
        /// reader's own (which the engine copies itself) must arrive.
        Gather(usize),
        Allgather,
        /// A scatter from this member, and an all-to-all: inputs are
        /// `n` blocks of the round's length; a reader gets its block of
        /// each source but itself.
        Scatter(usize),
        Alltoall,
    }

    /// [`run`], with `mix`: rounds that are allreduces, reduces and
    /// broadcasts in turn, rooted at member `round % n`.
    fn run_to(
        n: usize,
        lens: &[usize],
        elem: usize,
        slot_len: usize,
        ahead: usize,
        seed: u64,
        mix: bool,
    ) {
        let kind = |r: usize| match (mix, r % 7) {
            (true, 1) => Kind::Reduce(r % n),
            (true, 2) => Kind::Bcast(r % n),
            (true, 3) => Kind::Gather(r % n),
            (true, 4) => Kind::Allgather,
            (true, 5) => Kind::Scatter(r % n),
            (true, 6) => Kind::Alltoall,
            _ => Kind::All,
        };
        let out_len = |r: usize| match kind(r) {
            Kind::Gather(_) | Kind::Allgather | Kind::Alltoall => n * lens[r],
            _ => lens[r],
        };
        // A scatter's and an all-to-all's sources hold a block per member.
        let in_len = |r: usize| match kind(r) {
            Kind::Scatter(_) | Kind::Alltoall => n * lens[r],
            _ => lens[r],
        };
        let root_of = |r: usize| match kind(r) {
            Kind::Reduce(to) => Some(to),
            _ => None,
        };
        let mut rng = Rng(seed.max(1));
        let inputs: Vec<Vec<Vec<u8>>> = lens
            .iter()
            .enumerate()
            .map(|(r, _)| {
                (0..n)
                    .map(|i| {
                        (0..in_len(r))
                            .map(|b| (b * 31 + i * 7 + r * 13) as u8)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let node = Node::new(n, slot_len);
        // Per member: the next round to start, the stamp and slot uses it
        // starts from, and the allreduces in flight.
        let mut next = vec![0usize; n];
        let mut first = vec![1u32; n];
        let mut after = vec![[0u32; SLOTS]; n];
        let mut live: Vec<Vec<Live>> = (0..n).map(|_| Vec::new()).collect();
        let mut over = vec![0usize; n];
        let mut steps = 0u64;
        while over.iter().any(|&o| o < lens.len()) {
            steps += 1;
            assert!(steps < 10_000_000, "seed {seed}: no progress, a deadlock");
            let i = (rng.next() % n as u64) as usize;
            if next[i] < lens.len() && live[i].len() < ahead && rng.next() % 2 == 0 {
                let r = next[i];
                let share = match kind(r) {
                    Kind::Bcast(from) => Some((from, Share::Bcast)),
                    Kind::Gather(to) => Some((to, Share::Gather)),
                    Kind::Allgather => Some((0, Share::Allgather)),
                    Kind::Scatter(from) => Some((from, Share::Scatter)),
                    Kind::Alltoall => Some((0, Share::Alltoall)),
                    _ => None,
                };
                let m = match (kind(r), share) {
                    (_, Some((root, share))) => {
                        let b = StagedShare::new(
                            i,
                            n,
                            root,
                            share,
                            in_len(r),
                            slot_len,
                            first[i],
                            after[i],
                        );
                        first[i] = first[i].wrapping_add(b.chunks() as u32);
                        after[i] = b.last_uses();
                        Machine::Bcast(b)
                    }
                    (k, None) => {
                        let mut m =
                            StagedAllreduce::new(i, n, lens[r], elem, slot_len, first[i], after[i]);
                        if let Kind::Reduce(to) = k {
                            m = m.to_root(to);
                        }
                        first[i] = first[i].wrapping_add(m.chunks() as u32);
                        after[i] = m.last_uses();
                        Machine::Reduce(m)
                    }
                };
                live[i].push(Live {
                    round: r,
                    m,
                    out: RefCell::new(vec![0; out_len(r)]),
                });
                next[i] += 1;
                continue;
            }
            if live[i].is_empty() {
                continue;
            }
            let j = (rng.next() % live[i].len() as u64) as usize;
            let l = &mut live[i][j];
            let mut view = View {
                node: &node,
                me: i,
                input: &inputs[l.round][i],
                out: &l.out,
                keeps: root_of(l.round).map_or(true, |to| to == i),
            };
            let progress = match &mut l.m {
                Machine::Reduce(m) => m.poll(&mut view),
                Machine::Bcast(b) => b.poll(&mut view),
            };
            match progress {
                Progress::Done => {
                    let l = live[i].remove(j);
                    let zeros = vec![0; out_len(l.round)];
                    let len = lens[l.round];
                    let blocks = |to: usize| {
                        let mut v = zeros.clone();
                        if to == i {
                            for (s, input) in
                                inputs[l.round].iter().enumerate().filter(|&(s, _)| s != i)
                            {
                                v[s * len..(s + 1) * len].copy_from_slice(input);
                            }
                        }
                        v
                    };
                    let want = match kind(l.round) {
                        Kind::All => expected(&inputs[l.round]),
                        Kind::Reduce(to) if to == i => expected(&inputs[l.round]),
                        Kind::Reduce(_) => zeros,
                        Kind::Bcast(from) if from == i => zeros,
                        Kind::Bcast(from) => inputs[l.round][from].clone(),
                        Kind::Gather(to) => blocks(to),
                        Kind::Allgather => blocks(i),
                        Kind::Scatter(from) if from == i => zeros,
                        Kind::Scatter(from) => {
                            inputs[l.round][from][i * len..(i + 1) * len].to_vec()
                        }
                        Kind::Alltoall => {
                            let mut v = zeros.clone();
                            for (s, input) in
                                inputs[l.round].iter().enumerate().filter(|&(s, _)| s != i)
                            {
                                v[s * len..(s + 1) * len]
                                    .copy_from_slice(&input[i * len..(i + 1) * len]);
                            }
                            v
                        }
                    };
                    assert_eq!(
                        *l.out.borrow(),
                        want,
                        "seed {seed}: member {i}, round {}",
                        l.round
                    );
                    over[i] += 1;
                }
                Progress::Failed(e) => panic!("seed {seed}: {e:?}"),
                Progress::Waiting | Progress::Moved => {}
            }
        }
        // Every slot that was used is free, as a staged reduce expects.
        for (i, a) in after.iter().enumerate() {
            assert_eq!(&node.done.borrow()[i], a, "seed {seed}: member {i}");
        }
    }

    #[test]
    fn every_interleaving_sampled_gives_the_sum_on_every_member() {
        for seed in 1..200 {
            let n = 2 + (seed as usize % 4);
            let len = 1000 + seed as usize * 37;
            run(n, &[len, len, len], 4, 64, 1, seed);
        }
    }

    #[test]
    fn allreduces_in_flight_together_of_different_lengths() {
        for seed in 1..300 {
            let n = 2 + (seed as usize % 4);
            let lens = [64, 900 + seed as usize, 128, 8, 577, 64 * 9];
            run(n, &lens, 1, 64, 1 + seed as usize % 3, seed);
        }
    }

    #[test]
    fn every_kind_between_allreduces() {
        for seed in 1..300 {
            let n = 2 + (seed as usize % 4);
            let lens = [640, 900 + seed as usize, 64 * 5, 8, 577, 64 * 9, 33, 100];
            run_to(n, &lens, 1, 64, 1 + seed as usize % 3, seed, true);
        }
    }

    #[test]
    fn chunks_fewer_than_slots_and_parts_empty_for_some_members() {
        for seed in 1..50 {
            // 3 elements over 5 members: two members fold nothing.
            run(5, &[12; 4], 4, 64, 2, seed);
            // One chunk, one slot used per round.
            run(3, &[40; 5], 8, 64, 1, seed + 1000);
        }
    }

    #[test]
    fn chunks_hold_whole_elements() {
        let m = StagedAllreduce::new(0, 3, 1000, 12, 64, 1, [0; SLOTS]);
        assert_eq!(m.chunks(), 1000usize.div_ceil(60));
        assert_eq!(StagedAllreduce::chunks_for(1000, 12, 64), m.chunks());
        for len in [60, 24, 12, 0] {
            let parts: Vec<_> = (0..3).map(|p| m.part(p, len)).collect();
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts[2].end, len);
            for w in parts.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert_eq!(w[0].end % 12, 0);
            }
        }
    }

    #[test]
    fn stamps_wrap() {
        let n = 3;
        let first = u32::MAX - 5;
        let inputs: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8 + 1; 700]).collect();
        let node = Node::new(n, 64);
        let before = [first.wrapping_sub(4); SLOTS];
        for i in 0..n {
            node.done.borrow_mut()[i] = before;
        }
        let mut ms: Vec<_> = (0..n)
            .map(|i| StagedAllreduce::new(i, n, 700, 1, 64, first, before))
            .collect();
        let outs: Vec<RefCell<Vec<u8>>> = (0..n).map(|_| RefCell::new(vec![0; 700])).collect();
        let mut rng = Rng(7);
        let mut done = vec![false; n];
        for _ in 0..1_000_000 {
            let i = (rng.next() % n as u64) as usize;
            if !done[i] {
                let mut v = View {
                    node: &node,
                    me: i,
                    input: &inputs[i],
                    out: &outs[i],
                    keeps: true,
                };
                done[i] = ms[i].poll(&mut v) == Progress::Done;
            }
            if done.iter().all(|&d| d) {
                break;
            }
        }
        assert!(done.iter().all(|&d| d));
        for out in &outs {
            assert_eq!(*out.borrow(), expected(&inputs));
        }
    }

    #[test]
    fn members_that_disagree_on_the_length_fail_at_the_first_fold() {
        let node = Node::new(2, 64);
        let (ia, ib) = (vec![1u8; 100], vec![2u8; 90]);
        let (oa, ob) = (RefCell::new(vec![0; 100]), RefCell::new(vec![0; 90]));
        let mut a = StagedAllreduce::new(0, 2, 100, 1, 64, 1, [0; SLOTS]);
        let mut b = StagedAllreduce::new(1, 2, 90, 1, 64, 1, [0; SLOTS]);
        let va = || View {
            node: &node,
            me: 0,
            input: &ia,
            out: &oa,
            keeps: true,
        };
        let vb = || View {
            node: &node,
            me: 1,
            input: &ib,
            out: &ob,
            keeps: true,
        };
        let _ = a.poll(&mut va());
        assert_eq!(
            b.poll(&mut vb()),
            Progress::Failed(StagedError::LengthMismatch {
                member: 0,
                got: 100,
                want: 90
            })
        );
        let ra = a.poll(&mut va());
        assert!(matches!(
            ra,
            Progress::Failed(StagedError::LengthMismatch { member: 1, .. })
        ));
    }

    #[test]
    fn a_member_that_stages_then_skips_a_chunk_has_moved() {
        // All-to-all of 2 x 256 bytes in 64-byte chunks: member 1 stages
        // its chunks 0-3 (member 0's block) and skips reading them, in the
        // same passes. Member 0, asleep, must hear of the stages.
        let node = Node::new(2, 64);
        let (input, out) = (vec![7u8; 512], RefCell::new(vec![0; 512]));
        let mut b = StagedShare::new(1, 2, 0, Share::Alltoall, 512, 64, 1, [0; SLOTS]);
        let mut v = View {
            node: &node,
            me: 1,
            input: &input,
            out: &out,
            keeps: true,
        };
        assert_eq!(b.poll(&mut v), Progress::Moved);
        let staged: Vec<u32> = node.marks.borrow()[1].iter().map(|m| m[0]).collect();
        assert_eq!(staged, [4, 1, 2, 3]);
        // Nothing more until member 0 reads those and stages its own.
        assert_eq!(b.poll(&mut v), Progress::Waiting);
    }

    #[test]
    fn a_member_waits_without_moving_until_the_others_stage() {
        let node = Node::new(2, 64);
        let (input, out) = (vec![1u8; 300], RefCell::new(vec![0; 300]));
        let mut a = StagedAllreduce::new(0, 2, 300, 1, 64, 1, [0; SLOTS]);
        let mut v = View {
            node: &node,
            me: 0,
            input: &input,
            out: &out,
            keeps: true,
        };
        assert_eq!(a.poll(&mut v), Progress::Moved);
        // Four slots staged, nothing more until member 1 moves.
        let staged: Vec<u32> = node.marks.borrow()[0].iter().map(|m| m[0]).collect();
        assert_eq!(staged, [4, 1, 2, 3]);
        assert_eq!(a.poll(&mut v), Progress::Waiting);
    }
}
