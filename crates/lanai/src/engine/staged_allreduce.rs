//! `MPI_Allreduce` of more than a staging slot through the slots
//! (`lanai_coll::staged_allreduce`), on a communicator whose members all
//! share this node: each member copies its vector into shared memory once,
//! folds its share of every chunk where the chunks lie, and copies the
//! others' shares out. The message-passing algorithms move each byte
//! through a rendezvous and copy it in and out of their own buffers; at
//! 1 MiB on 2 ranks that took three times as long (`docs/decisions.md`).
//!
//! The op runs among the mailbox ops (`central_reduce.rs`), which drive,
//! wake and complete it.

#![forbid(unsafe_code)]

use super::central::Central;
use super::coll::Combiner;
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
/// Where ranks share cores, the reduce to rank 0 and broadcast
/// (`Engine::allreduce_through_root`) takes most of the sizes up to
/// 64 KiB first; above, at 4 and 8 ranks on 2 cores, this took 65 against
/// 151 us at 256 KiB on 4 ranks and 670 against 1714 at 1 MiB on 8.
const STAGED_MIN: usize = 16 << 10;

/// One staged allreduce in flight on this rank.
pub struct StagedOp {
    machine: StagedAllreduce,
    /// The caller's send buffer (its receive buffer, in place), unchanged
    /// until completion, and its receive buffer.
    data: UserBuf,
    out: UserBuf,
    op: Combiner,
    scratch: Vec<u8>,
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
            out: &self.out,
            op: &self.op,
            scratch: &mut self.scratch,
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
        let elem = op.elem_size().filter(|&e| e > 0 && len.is_multiple_of(e));
        if len < STAGED_MIN
            || out.len() != len
            || !data.is_contiguous()
            || !out.is_contiguous()
            || self.settings.algos.allreduce != AllreduceAlgo::Auto
            || self.offload.is_some()
        {
            return Ok(Err(op));
        }
        let Some(elem) = elem else {
            return Ok(Err(op));
        };
        if !self.device_ready(comm, len, usize::MAX, blocking)? {
            return Ok(Err(op));
        }
        let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) else {
            return Ok(Err(op));
        };
        let cm = self.comms.get_mut(comm)?;
        let Central::Active(setup) = &mut cm.central else {
            return Ok(Err(op));
        };
        let Some(chan) = setup.node_channel() else {
            return Ok(Err(op));
        };
        // Every member has this channel, hence these slots or none.
        if dev.stage(chan).is_none() {
            return Ok(Err(op));
        }
        let members = setup.members().len();
        let me = setup
            .members()
            .iter()
            .position(|&m| m == setup.me())
            .ok_or_else(|| MpiError::internal("staged allreduce: this rank is not a member"))?;
        // The chunks take mailbox stamps, so that the staged reduces after
        // this find the slots in the order they expect.
        let chunks = StagedAllreduce::chunks_for(len, elem, STAGE_MAX);
        let first = setup.mail.wrapping_add(1);
        setup.mail = setup.mail.wrapping_add(chunks as u32);
        let machine =
            StagedAllreduce::new(me, members, len, elem, STAGE_MAX, first, setup.staged_last);
        setup.staged_last = machine.last_uses();
        self.net.counters.staged_allreduces += 1;
        let op = StagedOp {
            machine,
            data,
            out,
            op,
            scratch: Vec::new(),
        };
        self.start_mail_allreduce(comm, chan, op).map(Ok)
    }
}

/// The slots and buffers as the machine sees them.
struct Wires<'a> {
    st: Stage<'a>,
    members: &'a [usize],
    /// This rank's position among `members`.
    me: usize,
    data: &'a UserBuf,
    out: &'a UserBuf,
    op: &'a Combiner,
    scratch: &'a mut Vec<u8>,
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

    fn stage(&self, slot: usize, chunk: Range<usize>) {
        let me = self.members[self.me];
        self.st.set_len(me, slot, self.data.len() as u32);
        self.st.write_at(me, slot, 0, &self.data.as_slice()[chunk]);
    }

    fn fold(&mut self, slot: usize, chunk: Range<usize>, part: Range<usize>) -> MpiResult<()> {
        let at = chunk.start + part.start;
        let out = &mut self.out.as_mut_slice()[at..at + part.len()];
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
        self.st
            .write_at(self.members[self.me], slot, part.start, out);
        Ok(())
    }

    fn gather(&self, i: usize, slot: usize, chunk: Range<usize>, part: Range<usize>) {
        let at = chunk.start + part.start;
        let len = part.len();
        self.out.as_mut_slice()[at..at + len].copy_from_slice(self.st.bytes_at(
            self.members[i],
            slot,
            part,
        ));
    }
}
