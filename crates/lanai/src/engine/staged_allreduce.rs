//! `MPI_Allreduce` from 16 KiB, and `MPI_Reduce` above one staging slot,
//! through the staging slots in chunks (`lanai_coll::staged_allreduce`),
//! on a communicator whose members all share this node: each member
//! copies its vector into shared memory once, folds its share of every
//! chunk where the chunks lie, and copies the others' shares out (a
//! reduce's root alone). `MPI_Bcast`, `MPI_Gather`, `MPI_Allgather`,
//! `MPI_Scatter` and `MPI_Alltoall` go the same way with nothing to fold:
//! the sources stage, the readers copy out. The message-passing algorithms move each byte
//! through a rendezvous and copy it in and out of their own buffers; at
//! 1 MiB on 2 ranks that took four times as long for an allreduce and 2.4
//! times for a reduce (`docs/decisions.md`).
//!
//! The op runs among the mailbox ops (`central_reduce.rs`), which drive,
//! wake and complete it.

#![forbid(unsafe_code)]

use super::central::Central;
use super::coll::{Combiner, MakeCombiner};
use super::error::{MpiError, MpiResult};
use super::riding::Source;
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::stage::{Stage, STAGE_MAX};
use lanai_coll::staged_allreduce::{
    Mark, Progress, Share, StagedAllreduce, StagedError, StagedShare, StagedWires,
};
use lanai_coll::{AllreduceAlgo, Combine};
use std::ops::Range;

/// The smallest allreduce staged. On 2 ranks of the 2-core VM, against
/// recursive doubling: 8 KiB 2.39 against 2.19 us, 16 KiB 2.9-3.0 against
/// 3.2-3.3, 32 KiB 4.1-4.3 against 5.9-6.1, 64 KiB 5.9-6.2 against 14.8.
/// Where ranks share cores, it beats the reduce to rank 0 and broadcast
/// (`Engine::allreduce_through_root`) from the same size (see there), and
/// Rabenseifner above 64 KiB: 65 against 151 us at 256 KiB on 4 ranks of
/// 2 cores, 670 against 1714 at 1 MiB on 8. Below, at 4 to 16 ranks on
/// 2 cores, it lost to both (8 KiB, 8 ranks: 28 against 26 us).
pub(super) const STAGED_MIN: usize = 16 << 10;

/// The smallest broadcast staged. The root waits until every member has
/// copied each chunk, where the message machines let it run ahead of an
/// eager receiver; at 2 ranks of the 2-core VM staging still won at every
/// size (8 B: 0.28 against 0.47 us, 1 KiB 0.30 against 0.63, 64 KiB 1.9
/// against 18.8), so below 1 KiB the root keeps running ahead.
const BCAST_MIN: usize = 1 << 10;
/// The smallest block gathered or allgathered through the slots. Their
/// readers wait for every source anyway, so crowding does not move it: at
/// 4 / 8 ranks on 2 cores, 1 KiB gather 3.8 / 7.9 us staged against 5.2-5.8
/// / 12.3-12.9 through messages, allgather 5.3-6.2 / 12.7 against 5.6 /
/// 20.9-21.6, 8 KiB gather 4.2-4.4 / 9.1-10.0 against 10.4-10.6 / 40.
pub(super) const GATHER_MIN: usize = 1 << 10;
/// Where ranks share cores, the root's wait for every reader is a round
/// of context switches: 4 KiB at 4 / 8 ranks on 2 cores took 3.6 / 7.5 us
/// staged against 1.9 / 4.0 through messages, 16 KiB 4.0 / 8.0 against
/// 11.1 / 29.9.
const BCAST_CROWDED_MIN: usize = 16 << 10;

/// The largest scatter block staged. From here each member reads its block
/// straight from the root's buffer (a rendezvous transfer: one copy, every
/// member at once) where staging copies twice with the root copying alone:
/// at 8 / 2 ranks on 2 cores, 64 KiB 74 / 11.8 us against 126 / 14.0
/// staged, 256 KiB 163 / 32 against 213 / 42 (4 ranks: even).
const SCATTER_STAGED_MAX: usize = (64 << 10) - 1;

/// The machine of a chunked operation.
enum Machine {
    Reduce(StagedAllreduce),
    Share(StagedShare),
}

/// One chunked operation in flight on this rank.
pub struct StagedOp {
    machine: Machine,
    /// The caller's send buffer (its receive buffer, in place), unchanged
    /// until completion, and its receive buffer (`None` on a reduce's
    /// non-roots).
    data: Source,
    out: Option<UserBuf>,
    /// `None` for a broadcast.
    op: Option<Combiner>,
    scratch: Vec<u8>,
    spare: Vec<u8>,
}

impl StagedOp {
    /// Polls the op once over channel stage `st`, whose members' device
    /// inputs are `members` in communicator-rank order; this rank's input
    /// is `input`.
    pub(super) fn poll(&mut self, st: Stage<'_>, members: &[usize], input: usize) -> Poll {
        let me = self.machine_me();
        debug_assert_eq!(members.get(me), Some(&input));
        let mut w = Wires {
            st,
            members,
            me,
            data: &self.data,
            out: self.out.as_ref(),
            op: self.op.as_ref(),
            scratch: &mut self.scratch,
            spare: &mut self.spare,
        };
        let progress = match &mut self.machine {
            Machine::Reduce(m) => m.poll(&mut w),
            Machine::Share(m) => m.poll(&mut w),
        };
        match progress {
            Progress::Waiting => Poll::Waiting,
            Progress::Moved => Poll::Moved,
            Progress::Done => Poll::Done,
            Progress::Failed(StagedError::Fold(e)) => Poll::Failed(e),
            Progress::Failed(e @ StagedError::LengthMismatch { .. }) => {
                Poll::Failed(MpiError::new(
                    c::MPI_ERR_TRUNCATE,
                    format!("the ranks' counts or datatypes disagree: {e}"),
                ))
            }
        }
    }
}

impl StagedOp {
    /// This rank's position among the members, as its machine knows it.
    fn machine_me(&self) -> usize {
        match &self.machine {
            Machine::Reduce(m) => m.me(),
            Machine::Share(m) => m.me(),
        }
    }
}

/// What a poll of a [`StagedOp`] found.
pub(super) enum Poll {
    Waiting,
    Moved,
    Done,
    Failed(MpiError),
}

impl Engine {
    /// Starts `MPI_Allreduce` of `data` into `out` through the staging
    /// slots when `comm` qualifies; otherwise gives the combiner back and
    /// a message-passing algorithm runs. `blocking`: the caller waits at
    /// once, so the channel may be agreed on the way.
    pub(super) fn staged_allreduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: Combiner,
        blocking: bool,
    ) -> MpiResult<Result<usize, Combiner>> {
        let len = data.len();
        if len < STAGED_MIN
            || out.len() != len
            || self.settings.algos.allreduce != AllreduceAlgo::Auto
            || self.offload.is_some()
        {
            return Ok(Err(op));
        }
        let Some(elem) = whole_elems(&op, len) else {
            return Ok(Err(op));
        };
        let Some(chan) = self.chunked_channel(comm, len, blocking)? else {
            return Ok(Err(op));
        };
        self.net.counters.chunked_allreduces += 1;
        let what = What::Reduce {
            op,
            elem,
            root: None,
        };
        self.start_chunked(comm, chan, Source::User(data), Some(out), what)
            .map(Ok)
    }

    /// Starts `MPI_Reduce` of `data` to `root` through the staging slots
    /// in chunks when `comm` qualifies: above what one staging slot holds,
    /// or where the staged reduce would leave the root too much to fold
    /// alone (`central_reduce::folds_too_much`); `None` otherwise. Every
    /// member folds its share of each chunk, and only the root gathers.
    pub(super) fn chunked_reduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: u32,
        op: impl MakeCombiner,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let len = data.len();
        if len < STAGED_MIN || !self.settings.algos.reduce_auto || self.offload.is_some() {
            return Ok(None);
        }
        let Some(chan) = self.chunked_channel(comm, len, blocking)? else {
            return Ok(None);
        };
        // Every member combines here, so every member checks the operation.
        let op = op.make()?;
        let Some(elem) = whole_elems(&op, len) else {
            return Ok(None);
        };
        self.net.counters.chunked_reduces += 1;
        let root = Some(root as usize);
        let what = What::Reduce { op, elem, root };
        self.start_chunked(comm, chan, Source::User(data), out, what)
            .map(Some)
    }

    /// Starts `MPI_Bcast` of `buf` from `root` through the staging slots
    /// in chunks when `comm` qualifies (see [`BCAST_MIN`]); `None`
    /// otherwise.
    pub(super) fn chunked_bcast(
        &mut self,
        comm: usize,
        buf: UserBuf,
        root: u32,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let len = buf.len();
        if len < BCAST_MIN
            || self.settings.algos.bcast != lanai_coll::BcastAlgo::Auto
            || self.offload.is_some()
        {
            return Ok(None);
        }
        let Some(chan) = self.chunked_channel(comm, len, blocking)? else {
            return Ok(None);
        };
        let crowded = self.crowded(comm)?;
        if crowded && len < BCAST_CROWDED_MIN {
            return Ok(None);
        }
        self.net.counters.chunked_bcasts += 1;
        let what = What::Share {
            root: root as usize,
            share: Share::Bcast,
            len,
        };
        self.start_chunked(comm, chan, Source::User(buf), Some(buf), what)
            .map(Some)
    }

    /// Starts a gather (`root` given) or allgather of this rank's block
    /// `data` into `out` (the root's, or every rank's) through the
    /// staging slots in chunks when `comm` qualifies (see [`GATHER_MIN`]);
    /// gives `data` back otherwise. This rank's own block is copied into
    /// `out` here. Only where the channel is agreed already: a gather
    /// never waits to agree one.
    pub(super) fn chunked_gather(
        &mut self,
        comm: usize,
        data: Source,
        out: Option<UserBuf>,
        root: Option<u32>,
    ) -> MpiResult<Result<usize, Source>> {
        let len = data.len();
        if len < GATHER_MIN || self.offload.is_some() || !self.settings.algos.node_colls {
            return Ok(Err(data));
        }
        let Some(chan) = self.chunked_channel(comm, len, false)? else {
            return Ok(Err(data));
        };
        let cm = self.comms.get(comm)?;
        let (rank, size) = (cm.rank as usize, cm.size as usize);
        if let Some(o) = out {
            if o.len() != len * size {
                return Err(MpiError::internal(
                    "gather: receive buffer of the wrong size",
                ));
            }
            o.write_at(rank * len, data.as_slice());
        }
        let shares = (Share::Gather, Share::Allgather);
        self.start_blocks(comm, chan, data, out, root, shares, len)
            .map(Ok)
    }

    /// Starts a scatter (`root` given) or all-to-all of `block`-byte
    /// blocks through the staging slots in chunks when `comm` qualifies,
    /// as a broadcast (scatter) or gather (all-to-all) of that block
    /// would; gives `data` back otherwise. `data` is every block a source
    /// sends (empty on a scatter's other members); this rank's own block
    /// is copied into `out` here.
    pub(super) fn chunked_blocks(
        &mut self,
        comm: usize,
        data: Source,
        block: usize,
        out: Option<UserBuf>,
        root: Option<u32>,
    ) -> MpiResult<Result<usize, Source>> {
        if block < GATHER_MIN || self.offload.is_some() || !self.settings.algos.node_colls {
            return Ok(Err(data));
        }
        let cm = self.comms.get(comm)?;
        let (rank, size) = (cm.rank as usize, cm.size as usize);
        let Some(len) = block.checked_mul(size) else {
            return Ok(Err(data));
        };
        let Some(chan) = self.chunked_channel(comm, len, false)? else {
            return Ok(Err(data));
        };
        let crowded = self.crowded(comm)?;
        if root.is_some() && (crowded && block < BCAST_CROWDED_MIN || block > SCATTER_STAGED_MAX) {
            return Ok(Err(data));
        }
        let source = root.is_none_or(|r| r as usize == rank);
        if source && data.len() != len {
            return Err(MpiError::internal("scatter: send buffer of the wrong size"));
        }
        // A source's own block stays here: into `out`, at this rank's block
        // in an all-to-all.
        if let (true, Some(o)) = (source, out) {
            let at = if root.is_some() { 0 } else { rank * block };
            o.write_at(at, &data.as_slice()[rank * block..(rank + 1) * block]);
        }
        let shares = (Share::Scatter, Share::Alltoall);
        self.start_blocks(comm, chan, data, out, root, shares, len)
            .map(Ok)
    }

    /// Starts the first of `(rooted, all)` when `root` is given, else the
    /// second, with this rank's copy `data` of what it sends.
    #[allow(clippy::too_many_arguments)]
    fn start_blocks(
        &mut self,
        comm: usize,
        chan: usize,
        data: Source,
        out: Option<UserBuf>,
        root: Option<u32>,
        (rooted, all): (Share, Share),
        len: usize,
    ) -> MpiResult<usize> {
        self.net.counters.chunked_gathers += 1;
        let what = What::Share {
            root: root.unwrap_or(0) as usize,
            share: if root.is_some() { rooted } else { all },
            len,
        };
        self.start_chunked(comm, chan, data, out, what)
    }

    /// The channel of `comm`'s staging slots, when a reduction of `len`
    /// bytes may go through them in chunks: every member on this node, the
    /// channel agreed, and slots on it. Members answer alike.
    fn chunked_channel(
        &mut self,
        comm: usize,
        len: usize,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        // The callers hold their own thresholds.
        if !self.device_ready(comm, len, usize::MAX, blocking)? {
            return Ok(None);
        }
        let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) else {
            return Ok(None);
        };
        let Central::Active(setup) = &self.comms.get(comm)?.central else {
            return Ok(None);
        };
        // Every member has this channel, hence these slots or none.
        Ok(setup.node_channel().filter(|&ch| dev.stage(ch).is_some()))
    }

    /// Starts the chunked operation `what` on channel `chan` of `comm`.
    fn start_chunked(
        &mut self,
        comm: usize,
        chan: usize,
        data: Source,
        out: Option<UserBuf>,
        what: What,
    ) -> MpiResult<usize> {
        let cm = self.comms.get_mut(comm)?;
        let Central::Active(setup) = &mut cm.central else {
            return Err(MpiError::internal("chunked reduction without a channel"));
        };
        let members = setup.members().len();
        let me = setup
            .members()
            .iter()
            .position(|&m| m == setup.me())
            .ok_or_else(|| MpiError::internal("chunked reduction: this rank is not a member"))?;
        // The chunks take mailbox stamps, so that the staged reduces after
        // this find the slots in the order they expect.
        let first = setup.mail.wrapping_add(1);
        let after = setup.staged_last;
        let (machine, chunks, out, op) = match what {
            What::Reduce { op, elem, root } => {
                let len = data.len();
                let mut m = StagedAllreduce::new(me, members, len, elem, STAGE_MAX, first, after);
                if let Some(r) = root {
                    m = m.to_root(r);
                }
                setup.staged_last = m.last_uses();
                let out = out.filter(|_| root.is_none_or(|r| r == me));
                let chunks = m.chunks();
                (Machine::Reduce(m), chunks, out, Some(op))
            }
            What::Share { root, share, len } => {
                let m = StagedShare::new(me, members, root, share, len, STAGE_MAX, first, after);
                setup.staged_last = m.last_uses();
                let out = out.filter(|_| m.reader());
                let chunks = m.chunks();
                (Machine::Share(m), chunks, out, None)
            }
        };
        setup.mail = setup.mail.wrapping_add(chunks as u32);
        let op = StagedOp {
            machine,
            data,
            out,
            op,
            scratch: Vec::new(),
            spare: Vec::new(),
        };
        self.start_mail_chunked(comm, chan, op)
    }
}

/// What a chunked operation does.
enum What {
    /// An allreduce, or with `root` a reduce.
    Reduce {
        op: Combiner,
        elem: usize,
        root: Option<usize>,
    },
    /// A broadcast, gather, allgather, scatter or all-to-all (`root`
    /// unused by the all-to-all ones) of `len` bytes per source.
    Share {
        root: usize,
        share: Share,
        len: usize,
    },
}

/// The element size of `op` when `len` bytes are whole elements of it: a
/// chunk may then be split between members.
fn whole_elems(op: &Combiner, len: usize) -> Option<usize> {
    op.elem_size().filter(|&e| e > 0 && len.is_multiple_of(e))
}

/// The slots and buffers as the machine sees them.
struct Wires<'a> {
    st: Stage<'a>,
    members: &'a [usize],
    /// This rank's position among `members`.
    me: usize,
    data: &'a Source,
    /// `None` on a reduce's non-root, which keeps no result.
    out: Option<&'a UserBuf>,
    /// `None` for a broadcast, which never folds.
    op: Option<&'a Combiner>,
    scratch: &'a mut Vec<u8>,
    /// Bytes on their way between a buffer that is not contiguous, or
    /// not there, and a slot.
    spare: &'a mut Vec<u8>,
}

impl StagedWires for Wires<'_> {
    type Error = MpiError;

    fn mark(&self, i: usize, slot: usize, mark: Mark) -> u32 {
        self.st.mark(self.members[i], slot, mark)
    }

    fn set_mark(&self, slot: usize, mark: Mark, stamp: u32) {
        self.st.set_mark(self.members[self.me], slot, mark, stamp);
    }

    fn len_of(&self, i: usize, slot: usize) -> u32 {
        self.st.len_of(self.members[i], slot)
    }

    fn done(&self, slot: usize) -> u32 {
        self.st.done(self.members[self.me], slot)
    }

    fn release(&self, slot: usize, stamp: u32) {
        self.st.release(self.members[self.me], slot, stamp);
    }

    fn readers(&self, slot: usize) -> u32 {
        self.st.readers(self.members[self.me], slot)
    }

    fn clear_readers(&self, slot: usize) {
        self.st.clear_readers(self.members[self.me], slot);
    }

    fn add_reader(&self, i: usize, slot: usize) {
        self.st.add_reader(self.members[i], slot);
    }

    fn stage(&mut self, slot: usize, chunk: Range<usize>) {
        let me = self.members[self.me];
        self.st.set_len(me, slot, self.data.len() as u32);
        match self.data {
            Source::Owned(v) => self.st.write_at(me, slot, 0, &v[chunk]),
            Source::User(b) if b.is_contiguous() => {
                self.st.write_at(me, slot, 0, &b.as_slice()[chunk]);
            }
            Source::User(b) => {
                self.spare.resize(chunk.len(), 0);
                b.read_at(chunk.start, self.spare);
                self.st.write_at(me, slot, 0, self.spare);
            }
        }
    }

    fn fold(
        &mut self,
        slot: usize,
        chunk: Range<usize>,
        part: Range<usize>,
        publish: bool,
    ) -> MpiResult<()> {
        let at = chunk.start + part.start;
        // Straight into a contiguous receive buffer; otherwise through
        // `spare`, then into the buffer (if any) and the slot.
        let direct = self.out.filter(|o| o.is_contiguous());
        let out: &mut [u8] = match direct {
            Some(o) => &mut o.as_mut_slice()[at..at + part.len()],
            None => {
                self.spare.resize(part.len(), 0);
                self.spare
            }
        };
        {
            // This rank's own share is among the parts: they go before the
            // result is written over it.
            let parts: Vec<&[u8]> = self
                .members
                .iter()
                .map(|&m| self.st.bytes_at(m, slot, part.clone()))
                .collect();
            let op = self
                .op
                .ok_or_else(|| MpiError::internal("a broadcast folds"))?;
            lanai_coll::fold_into(&parts, out, op, self.scratch)
                .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))?;
        }
        if publish {
            self.st
                .write_at(self.members[self.me], slot, part.start, out);
        }
        if direct.is_none() {
            if let Some(o) = self.out {
                o.write_at(at, out);
            }
        }
        Ok(())
    }

    fn gather(&self, i: usize, slot: usize, part: Range<usize>, at: usize) {
        let Some(out) = self.out else { return };
        let bytes = self.st.bytes_at(self.members[i], slot, part);
        if out.is_contiguous() {
            out.as_mut_slice()[at..at + bytes.len()].copy_from_slice(bytes);
        } else {
            out.write_at(at, bytes);
        }
    }
}
