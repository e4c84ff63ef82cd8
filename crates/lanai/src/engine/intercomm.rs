//! Intercommunicators: creation, merge, dup, comparison, and (in
//! [`coll`], run as chains of [`steps`]) the collectives with the
//! standard's intercommunicator semantics.
//!
//! # How collectives run
//! An intercommunicator's collective context (`ctx + 1`) is used by no
//! ordinary machine. Each intercommunicator collective takes one number
//! `s` from the communicator's sequence at every member of both groups and
//! runs up to [`PHASES`] sub-instances `s * PHASES + phase`, each a
//! `lanai_coll` machine over an explicit list of world ranks: one group,
//! both groups (the *union*, in a fixed group order), or a root and the
//! other group. A member that takes no part in a phase skips it.
//!
//! # Context ids
//! A new intercommunicator needs an id free at every member of both groups:
//! each group ANDs its masks, the leaders swap their groups' masks and
//! member lists, and each leader broadcasts the AND of both in its group.

use super::coll::coll_err;
use super::comm::{lowest_free, Capture, Comm, RankMap, Slot, MASK_BYTES, TEMP_CTX_BASE};
use super::error::{MpiError, MpiResult};
use super::Engine;
use crate::abi::consts as c;
use lanai_coll::{AllgatherAlgo, Collective, Layout};
use std::sync::Arc;

mod coll;
mod split;
mod steps;

pub use steps::InterOp;

type Machine = Box<dyn Collective + Send>;

/// Sub-instances one intercommunicator collective may use.
const PHASES: u32 = 4;

/// The remote side of an intercommunicator.
#[derive(Debug)]
pub struct Remote {
    /// World ranks of the remote group, in its rank order.
    pub members: Vec<u32>,
    /// The local group comes first in the union order: its rank 0 has the
    /// lower world rank. Both groups compute the same order.
    pub local_first: bool,
}

/// `MPI_ERR_COMM` for an operation Lanai does not run on intercommunicators.
pub fn reject(cm: &Comm) -> MpiResult<()> {
    if cm.is_inter() {
        return Err(MpiError::new(
            c::MPI_ERR_COMM,
            "not supported on intercommunicators yet",
        ));
    }
    Ok(())
}

/// `MPI_Comm_compare` when either communicator is an intercommunicator.
pub fn compare(a: &Comm, b: &Comm) -> i32 {
    use super::group::compare_members;
    let (Some(ra), Some(rb)) = (&a.inter, &b.inter) else {
        return c::MPI_UNEQUAL;
    };
    let local = compare_members(&a.members(), &b.members());
    let remote = compare_members(&ra.members, &rb.members);
    match (local, remote) {
        (c::MPI_IDENT, c::MPI_IDENT) => c::MPI_CONGRUENT,
        (c::MPI_IDENT | c::MPI_SIMILAR, c::MPI_IDENT | c::MPI_SIMILAR) => c::MPI_SIMILAR,
        _ => c::MPI_UNEQUAL,
    }
}

/// The `root` argument of a rooted intercommunicator collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterRoot {
    /// `MPI_ROOT`: this process is the root.
    Root,
    /// `MPI_PROC_NULL`: in the root's group, but not the root.
    Idle,
    /// The root is this rank of the remote group.
    Remote(u32),
}

/// One collective in progress: the fixed facts every phase needs.
struct Inter {
    ctx: u32,
    base: u32,
    rank: u32,
    local: Vec<u32>,
    remote: Arc<Remote>,
}

impl Inter {
    /// The union of both groups in the agreed order, and this process's index.
    fn union(&self) -> (Vec<u32>, u32) {
        let (l, r) = (&self.local, &self.remote.members);
        if self.remote.local_first {
            (l.iter().chain(r).copied().collect(), self.rank)
        } else {
            (
                r.iter().chain(l).copied().collect(),
                r.len() as u32 + self.rank,
            )
        }
    }

    fn nl(&self) -> u32 {
        self.local.len() as u32
    }

    fn nr(&self) -> u32 {
        self.remote.members.len() as u32
    }
}

fn no_result() -> MpiError {
    MpiError::internal("intercommunicator collective: a phase gave no result")
}

fn band() -> MpiResult<lanai_coll::Predefined> {
    lanai_coll::Predefined::new(lanai_coll::Op::Band, lanai_coll::Elem::U8)
        .map_err(|e| MpiError::internal(e.to_string()))
}

fn out_of_ids() -> MpiError {
    MpiError::other("out of context ids: no id is free at every member of both groups")
}

fn u32_at(b: &[u8], i: usize) -> MpiResult<u32> {
    b.get(4 * i..4 * i + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| MpiError::internal("intercommunicator creation: short message"))
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .collect()
}

fn to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Engine {
    /// Starts an intercommunicator collective: takes its sequence number.
    fn inter_begin(&mut self, comm: usize) -> MpiResult<Inter> {
        let cm = self.comms.get_mut(comm)?;
        let remote = cm
            .inter
            .clone()
            .ok_or_else(|| MpiError::new(c::MPI_ERR_COMM, "not an intercommunicator"))?;
        let seq = cm.coll_seq;
        cm.coll_seq = seq.wrapping_add(1);
        Ok(Inter {
            ctx: cm.coll_ctx(),
            base: seq.wrapping_mul(PHASES),
            rank: cm.rank,
            local: cm.members(),
            remote,
        })
    }

    /// Runs `m` as instance `seq` of context `ctx` over the world ranks
    /// `map`, where this process is `me`, to completion; returns its result.
    fn run_on(
        &mut self,
        ctx: u32,
        seq: u32,
        map: Vec<u32>,
        me: u32,
        m: Machine,
    ) -> MpiResult<Option<Vec<u8>>> {
        let slot: Slot = Arc::default();
        let cap = Capture::new(m, slot.clone());
        let req = self.start_instance(ctx, seq, me, RankMap::List(map), Box::new(cap), None)?;
        let waited = self.wait(req);
        self.st.reqs.remove(req);
        waited?;
        Ok(slot.lock().ok().and_then(|mut s| s.take()))
    }

    fn phase(
        &mut self,
        it: &Inter,
        phase: u32,
        map: Vec<u32>,
        me: u32,
        m: Machine,
    ) -> MpiResult<Option<Vec<u8>>> {
        self.run_on(it.ctx, it.base.wrapping_add(phase), map, me, m)
    }

    /// Translates a rooted collective's `root` argument.
    pub fn inter_root(&self, comm: usize, root: i32) -> MpiResult<InterRoot> {
        let nr = self.comms.get(comm)?.peer_count();
        match root {
            c::MPI_ROOT => Ok(InterRoot::Root),
            c::MPI_PROC_NULL => Ok(InterRoot::Idle),
            r if r >= 0 && (r as u32) < nr => Ok(InterRoot::Remote(r as u32)),
            r => Err(MpiError::new(
                c::MPI_ERR_ROOT,
                format!(
                    "invalid root {r} on an intercommunicator (MPI_ROOT, MPI_PROC_NULL or a remote rank below {nr})"
                ),
            )),
        }
    }

    // ---- creation -------------------------------------------------------

    /// `MPI_Intercomm_create`. `peer` matters only at the local leader.
    pub fn intercomm_create(
        &mut self,
        local: usize,
        local_leader: i32,
        peer: Option<usize>,
        remote_leader: i32,
        tag: i32,
    ) -> MpiResult<usize> {
        let lc = self.comms.get(local)?;
        if lc.is_inter() {
            return Err(MpiError::new(
                c::MPI_ERR_COMM,
                "local_comm must be an intracommunicator",
            ));
        }
        if local_leader < 0 || local_leader as u32 >= lc.size {
            return Err(MpiError::new(
                c::MPI_ERR_RANK,
                format!(
                    "invalid local_leader {local_leader} (local_comm size {})",
                    lc.size
                ),
            ));
        }
        let leader = local_leader as u32;
        let (my_rank, size, members) = (lc.rank, lc.size, lc.members());
        // 1. The local group's free slots.
        // The slots offered stay reserved until the agreement ends, so a
        // `Comm_idup` round progressing meanwhile cannot offer them too.
        self.with_offer(|e, mine| {
            let m = e.ctx_agreement(local, mine)?;
            let mask = e.run_internal(local, m)?;
            // 2. The leaders swap masks and member lists; a leader that fails
            //    tells its group (remote size u32::MAX) so no one hangs.
            let mut found = Ok(Vec::new());
            if my_rank == leader {
                found = e
                    .leader_exchange(peer, remote_leader, tag, &mask, &members)
                    .map(|(rmask, rmembers)| {
                        let both: Vec<u8> = mask.iter().zip(&rmask).map(|(a, b)| a & b).collect();
                        let mut msg = both;
                        msg.extend(to_bytes(&rmembers));
                        msg
                    });
            }
            // 3. Each leader broadcasts the outcome in its group.
            let head = match &found {
                Ok(msg) => ((msg.len().saturating_sub(MASK_BYTES) / 4) as u32).to_le_bytes(),
                Err(_) => u32::MAX.to_le_bytes(),
            };
            let m = lanai_coll::bcast(my_rank, size, leader, head.to_vec(), e.settings.algos.bcast)
                .map_err(coll_err)?;
            let head = e.run_internal(local, m)?;
            let nr = u32_at(&head, 0)?;
            if nr == u32::MAX {
                return Err(found.err().unwrap_or_else(|| {
                    MpiError::new(
                        c::MPI_ERR_OTHER,
                        "the local leader failed to reach the remote leader",
                    )
                }));
            }
            let body = match found {
                Ok(msg) if my_rank == leader => msg,
                _ => vec![0; MASK_BYTES + 4 * nr as usize],
            };
            let m = lanai_coll::bcast(my_rank, size, leader, body, e.settings.algos.bcast)
                .map_err(coll_err)?;
            let body = e.run_internal(local, m)?;
            let (both, rest) = body.split_at(MASK_BYTES.min(body.len()));
            let remote = words(rest);
            let slot = lowest_free(both).ok_or_else(out_of_ids)?;
            e.comms.take_slot(slot);
            let local_first = members.first() < remote.first();
            let mut new = e
                .comms
                .get(local)?
                .derive(slot as u32 * 2, my_rank, members);
            new.inter = Some(Arc::new(Remote {
                members: remote,
                local_first,
            }));
            Ok(e.comms.insert(new))
        })
    }

    /// The two leaders swap (mask, members) over an instance named by a
    /// hash of (peer communicator, tag, the two leaders), so it can match
    /// nothing else.
    fn leader_exchange(
        &mut self,
        peer: Option<usize>,
        remote_leader: i32,
        tag: i32,
        mask: &[u8],
        members: &[u32],
    ) -> MpiResult<(Vec<u8>, Vec<u32>)> {
        let pc = self
            .comms
            .get(peer.ok_or_else(|| MpiError::new(c::MPI_ERR_COMM, "invalid peer_comm"))?)?;
        let r = pc.check_rank(remote_leader).map_err(|_| {
            MpiError::new(
                c::MPI_ERR_RANK,
                format!(
                    "invalid remote_leader {remote_leader} (peer_comm size {})",
                    pc.peer_count()
                ),
            )
        })?;
        let other = pc.peer_world(r);
        let me = self.job.rank;
        if other == me {
            return Err(MpiError::new(
                c::MPI_ERR_RANK,
                "remote_leader is the calling process itself",
            ));
        }
        let pair = vec![me.min(other), me.max(other)];
        let idx = u32::from(me > other);
        let h = super::comm::fnv1a([pc.ctx, tag as u32, pair[0], pair[1], 0x1e7e]);
        let ctx = TEMP_CTX_BASE | ((h >> 32) as u32 & 0x7fff_fffe);
        let mut head = (members.len() as u32).to_le_bytes().to_vec();
        head.extend_from_slice(mask);
        let m = lanai_coll::Allgather::new(idx, 2, head, AllgatherAlgo::Auto).map_err(coll_err)?;
        let heads = self.run_on(ctx, 0, pair.clone(), idx, Box::new(m))?;
        let heads = heads.ok_or_else(no_result)?;
        let half = heads.len() / 2;
        let theirs = &heads[(1 - idx as usize) * half..(2 - idx as usize) * half];
        let nr = u32_at(theirs, 0)? as usize;
        let rmask = theirs[4..].to_vec();
        let mut counts = vec![4 * members.len(), 4 * nr];
        if idx == 1 {
            counts.swap(0, 1);
        }
        let layout = Layout::packed(counts).map_err(coll_err)?;
        let m =
            lanai_coll::Allgatherv::new(idx, 2, to_bytes(members), &layout).map_err(coll_err)?;
        let all = self.run_on(ctx, 1, pair, idx, Box::new(m))?;
        let all = all.ok_or_else(no_result)?;
        let rmembers = words(all.get(layout.block(1 - idx)).ok_or_else(no_result)?);
        if rmembers.iter().any(|w| members.contains(w)) {
            return Err(MpiError::new(
                c::MPI_ERR_COMM,
                "the local and remote groups overlap",
            ));
        }
        Ok((rmask, rmembers))
    }

    /// Agrees on a context id free at every member of both groups; members
    /// that will not use it (`join` false) take part but keep it free.
    fn inter_agree(&mut self, it: &Inter, phase: u32, join: bool) -> MpiResult<u32> {
        let (map, me) = it.union();
        let mask = self.with_offer(|e, offer| {
            let m = lanai_coll::allreduce(
                me,
                map.len() as u32,
                offer,
                band()?,
                e.settings.algos.allreduce,
            )
            .map_err(coll_err)?;
            e.phase(it, phase, map, me, m)?.ok_or_else(no_result)
        })?;
        let slot = lowest_free(&mask).ok_or_else(out_of_ids)?;
        if join {
            self.comms.take_slot(slot);
        }
        Ok(slot as u32 * 2)
    }

    /// `MPI_Comm_dup` of an intercommunicator.
    pub fn inter_dup(&mut self, parent: usize) -> MpiResult<usize> {
        let it = self.inter_begin(parent)?;
        let ctx = self.inter_agree(&it, 0, true)?;
        let p = self.comms.get(parent)?;
        let mut new = p.derive(ctx, p.rank, p.members());
        new.inter = p.inter.clone();
        Ok(self.comms.insert(new))
    }

    /// `MPI_Intercomm_merge`: the group whose members pass `high` false
    /// comes first; when both pass the same, the union order decides.
    pub fn intercomm_merge(&mut self, comm: usize, high: bool) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let (map, me) = it.union();
        let m = lanai_coll::Allgather::new(
            me,
            map.len() as u32,
            vec![u8::from(high)],
            AllgatherAlgo::Auto,
        )
        .map_err(coll_err)?;
        let flags = self
            .phase(&it, 0, map, me, Box::new(m))?
            .ok_or_else(no_result)?;
        let remote0 = if it.remote.local_first { it.nl() } else { 0 };
        let remote_high = flags.get(remote0 as usize).copied().ok_or_else(no_result)? != 0;
        let ctx = self.inter_agree(&it, 1, true)?;
        let local_first = if high == remote_high {
            it.remote.local_first
        } else {
            !high
        };
        let (l, r) = (&it.local, &it.remote.members);
        let (members, rank): (Vec<u32>, u32) = if local_first {
            (l.iter().chain(r).copied().collect(), it.rank)
        } else {
            (r.iter().chain(l).copied().collect(), it.nr() + it.rank)
        };
        let new = self.comms.get(comm)?.derive(ctx, rank, members);
        Ok(self.comms.insert(new))
    }
}
