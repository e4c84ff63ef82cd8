//! Small collectives that ride on a device barrier (`central.rs`): on a
//! communicator whose members share one node, every member writes its part
//! into its data slot for the barrier's generation as it arrives, and once
//! the output flips each member reads what it needs from the others' slots
//! where they lie. One barrier replaces the rounds of messages, and no
//! message machine is built.
//!
//! What a member reads, by collective:
//! - allreduce: every part, folded in the canonical binomial grouping;
//! - reduce-scatter: its own block of every part, folded the same way;
//! - allgather(v): every part, copied to its block;
//! - all-to-all: its own block of every part, copied.
//!
//! So the bits equal those of the message-passing machines.

use super::coll::Combiner;
use super::error::{MpiError, MpiResult};
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::barrier_device::{Channel, DATA_MAX};
use lanai_coll::Layout;

/// A rank's part of a collective: the caller's buffer, which MPI keeps
/// unchanged until completion, or a copy the ABI layer made.
pub enum Source {
    User(UserBuf),
    Owned(Vec<u8>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Source({} bytes)", self.len())
    }
}

impl Source {
    pub(super) fn len(&self) -> usize {
        match self {
            Source::User(b) => b.len(),
            Source::Owned(v) => v.len(),
        }
    }

    /// The bytes as a vector of their own.
    pub(super) fn into_vec(self) -> Vec<u8> {
        match self {
            Source::User(b) => b.as_slice().to_vec(),
            Source::Owned(v) => v,
        }
    }

    /// The bytes (a non-contiguous user buffer is packed once).
    pub(super) fn as_slice(&self) -> &[u8] {
        match self {
            Source::User(b) => b.as_slice(),
            Source::Owned(v) => v,
        }
    }
}

/// What the members' parts become on this rank.
pub enum Kind {
    /// `MPI_Allreduce`: every part folded.
    Allreduce(Combiner),
    /// `MPI_Reduce_scatter(_block)`: every part holds `blocks`, and this
    /// rank folds block `me` of each.
    ReduceScatter { op: Combiner, blocks: Blocks },
    /// `MPI_Allgather(v)`: member `j` wrote block `j` of `blocks`, which
    /// goes to the same place in the result.
    Allgather { blocks: Blocks },
    /// `MPI_Alltoall`: every part holds one `block` per member, and this
    /// rank copies block `me` of member `j`'s to block `j` of its result.
    Alltoall { block: usize },
}

/// Blocks of a buffer, one per member.
pub enum Blocks {
    /// Equal blocks of this many bytes, back to back.
    Equal(usize),
    /// Boxed: every riding collective moves its `Kind` a few times, and
    /// most are allreduces.
    Listed(Box<Layout>),
}

impl Blocks {
    fn block(&self, j: usize) -> std::ops::Range<usize> {
        match self {
            Blocks::Equal(b) => j * b..(j + 1) * b,
            Blocks::Listed(l) => l.block(j as u32),
        }
    }
}

/// A collective riding on a device barrier.
pub struct Riding {
    pub(super) kind: Kind,
    /// Bytes each member writes (for an allgather, this rank's).
    pub(super) len: usize,
    pub(super) out: UserBuf,
}

impl std::fmt::Debug for Riding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Riding").field("len", &self.len).finish()
    }
}

/// Members whose parts are listed on the stack, for the usual sizes: the
/// list is cleared on every call, which at 16 entries cost a 2-rank
/// allreduce 16 of its instructions.
const STACK_PARTS: usize = 8;

impl Riding {
    /// Bytes member `j` wrote.
    fn part_len(&self, j: usize) -> usize {
        match &self.kind {
            Kind::Allgather { blocks } => blocks.block(j).len(),
            _ => self.len,
        }
    }

    /// Whether [`Riding::finish`] over `members` parts uses its scratch:
    /// only a fold of three or more.
    pub(super) fn needs_scratch(&self, members: usize) -> bool {
        members > 2 && matches!(self.kind, Kind::Allreduce(_) | Kind::ReduceScatter { .. })
    }

    /// Reads the parts of generation `gen` from channel `w`, whose members
    /// (device inputs, in communicator-rank order) are `members` and among
    /// whom this rank is `me`, into the result; `scratch` is kept between
    /// calls by the caller.
    pub(super) fn finish(
        &self,
        w: &Channel<'_>,
        gen: u32,
        members: &[usize],
        me: usize,
        scratch: &mut Vec<u8>,
    ) -> MpiResult<()> {
        let mut stack: [&[u8]; STACK_PARTS] = [&[]; STACK_PARTS];
        let mut heap = Vec::new();
        let parts: &mut [&[u8]] = if members.len() <= STACK_PARTS {
            &mut stack[..members.len()]
        } else {
            heap.resize(members.len(), &[][..]);
            &mut heap
        };
        for (j, (p, &i)) in parts.iter_mut().zip(members).enumerate() {
            let (want, got) = (self.part_len(j), w.data_len(i, gen));
            if got != want {
                return Err(MpiError::new(
                    c::MPI_ERR_TRUNCATE,
                    format!(
                        "the ranks' counts or datatypes disagree: rank {j} passed {got} bytes \
                         where this rank expects {want}"
                    ),
                ));
            }
            *p = w.data(i, gen, want);
        }
        match &self.kind {
            Kind::Allreduce(op) => fold_to(parts, op, &self.out, scratch),
            Kind::ReduceScatter { op, blocks } => {
                let mine = blocks.block(me);
                for p in parts.iter_mut() {
                    *p = p
                        .get(mine.clone())
                        .ok_or_else(|| short(mine.end, p.len()))?;
                }
                fold_to(parts, op, &self.out, scratch)
            }
            Kind::Allgather { blocks } => {
                for (j, p) in parts.iter().enumerate() {
                    self.out.write_at(blocks.block(j).start, p);
                }
                Ok(())
            }
            Kind::Alltoall { block } => {
                let mine = me * block..(me + 1) * block;
                for (j, p) in parts.iter().enumerate() {
                    let b = p
                        .get(mine.clone())
                        .ok_or_else(|| short(mine.end, p.len()))?;
                    self.out.write_at(j * block, b);
                }
                Ok(())
            }
        }
    }
}

fn short(want: usize, got: usize) -> MpiError {
    MpiError::internal(format!(
        "device collective: a part of {got} bytes has no block ending at {want}"
    ))
}

fn op_err(e: lanai_coll::OpError) -> MpiError {
    MpiError::new(c::MPI_ERR_OP, e.to_string())
}

/// `parts` folded in the canonical grouping into `out`: in place when it
/// is one contiguous run of the right length.
fn fold_to(parts: &[&[u8]], op: &Combiner, out: &UserBuf, scratch: &mut Vec<u8>) -> MpiResult<()> {
    let len = parts.first().map_or(0, |p| p.len());
    if out.is_contiguous() && out.len() == len {
        return lanai_coll::fold_into(parts, out.as_mut_slice(), op, scratch).map_err(op_err);
    }
    let mut res = vec![0; len];
    lanai_coll::fold_into(parts, &mut res, op, scratch).map_err(op_err)?;
    out.write(&res);
    Ok(())
}

impl Engine {
    /// Whether a collective whose members each write `len` bytes (the
    /// largest part, for an allgatherv) may ride on `comm`'s device barrier:
    /// `LANAI_NODE_COLL=auto`, every member on this node, and the channel
    /// agreed (`blocking` calls may agree it on the way). Every member
    /// answers alike.
    #[inline]
    pub(super) fn may_ride(&mut self, comm: usize, len: usize, blocking: bool) -> MpiResult<bool> {
        if !self.settings.algos.node_colls || self.offload.is_some() {
            return Ok(false);
        }
        self.device_ready(comm, len, DATA_MAX, blocking)
    }

    /// Starts `riding` on `comm`'s device barrier, with `data` as this
    /// rank's part; after [`Engine::may_ride`] said yes.
    pub(super) fn ride(
        &mut self,
        comm: usize,
        data: Source,
        riding: Riding,
        blocking: bool,
    ) -> MpiResult<usize> {
        self.net.counters.device_colls += 1;
        self.central_start_with(comm, Some((data, riding)), blocking)
    }
}
