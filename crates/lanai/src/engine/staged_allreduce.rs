//! `MPI_Allreduce` from 16 KiB, and `MPI_Reduce` above one staging slot,
//! through the staging slots in chunks (`lanai_coll::staged_allreduce`),
//! on a communicator whose members all share this node: each member
//! copies its vector into shared memory once, folds its share of every
//! chunk where the chunks lie, and copies the others' shares out (a
//! reduce's root alone). The message-passing algorithms move each byte
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
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::stage::{Stage, STAGE_MAX};
use lanai_coll::staged_allreduce::{Mark, Progress, StagedAllreduce, StagedError, StagedWires};
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

/// One staged allreduce in flight on this rank.
pub struct StagedOp {
    machine: StagedAllreduce,
    /// The caller's send buffer (its receive buffer, in place), unchanged
    /// until completion, and its receive buffer (`None` on a reduce's
    /// non-roots).
    data: UserBuf,
    out: Option<UserBuf>,
    op: Combiner,
    scratch: Vec<u8>,
    spare: Vec<u8>,
}

impl StagedOp {
    /// Polls the op once over channel stage `st`, whose members' device
    /// inputs are `members` in communicator-rank order.
    pub(super) fn poll(&mut self, st: Stage<'_>, members: &[usize], me: usize) -> Poll {
        let mut w = Wires {
            st,
            members,
            me,
            data: &self.data,
            out: self.out.as_ref(),
            op: &self.op,
            scratch: &mut self.scratch,
            spare: &mut self.spare,
        };
        match self.machine.poll(&mut w) {
            Progress::Waiting => Poll::Waiting,
            Progress::Moved => Poll::Moved,
            Progress::Done => Poll::Done,
            Progress::Failed(StagedError::Fold(e)) => Poll::Failed(e),
            Progress::Failed(e @ StagedError::LengthMismatch { .. }) => {
                Poll::Failed(MpiError::new(c::MPI_ERR_TRUNCATE, e.to_string()))
            }
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
        if out.len() != len
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
        self.start_chunked(comm, chan, data, Some(out), None, op, elem)
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
        if !self.settings.algos.reduce_auto || self.offload.is_some() {
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
        self.start_chunked(comm, chan, data, out, Some(root as usize), op, elem)
            .map(Some)
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
        if len < STAGED_MIN || !self.device_ready(comm, len, usize::MAX, blocking)? {
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

    /// Starts the chunked reduction on channel `chan` of `comm`: into every
    /// member's `out`, or with `root`, only into the root's.
    #[allow(clippy::too_many_arguments)]
    fn start_chunked(
        &mut self,
        comm: usize,
        chan: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: Option<usize>,
        op: Combiner,
        elem: usize,
    ) -> MpiResult<usize> {
        let len = data.len();
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
        let chunks = StagedAllreduce::chunks_for(len, elem, STAGE_MAX);
        let first = setup.mail.wrapping_add(1);
        setup.mail = setup.mail.wrapping_add(chunks as u32);
        let mut machine =
            StagedAllreduce::new(me, members, len, elem, STAGE_MAX, first, setup.staged_last);
        if let Some(r) = root {
            machine = machine.to_root(r);
        }
        setup.staged_last = machine.last_uses();
        let op = StagedOp {
            machine,
            data,
            out: out.filter(|_| root.is_none_or(|r| r == me)),
            op,
            scratch: Vec::new(),
            spare: Vec::new(),
        };
        self.start_mail_allreduce(comm, chan, op)
    }
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
    data: &'a UserBuf,
    /// `None` on a reduce's non-root, which keeps no result.
    out: Option<&'a UserBuf>,
    op: &'a Combiner,
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

    fn stage(&mut self, slot: usize, chunk: Range<usize>) {
        let me = self.members[self.me];
        self.st.set_len(me, slot, self.data.len() as u32);
        if self.data.is_contiguous() {
            self.st.write_at(me, slot, 0, &self.data.as_slice()[chunk]);
        } else {
            self.spare.resize(chunk.len(), 0);
            self.data.read_at(chunk.start, self.spare);
            self.st.write_at(me, slot, 0, self.spare);
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
            lanai_coll::fold_into(&parts, out, self.op, self.scratch)
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

    fn gather(&self, i: usize, slot: usize, chunk: Range<usize>, part: Range<usize>) {
        let Some(out) = self.out else { return };
        let at = chunk.start + part.start;
        let bytes = self.st.bytes_at(self.members[i], slot, part);
        if out.is_contiguous() {
            out.as_mut_slice()[at..at + bytes.len()].copy_from_slice(bytes);
        } else {
            out.write_at(at, bytes);
        }
    }
}
