//! The collectives on intercommunicators, each a chain of steps (see
//! [`super::steps`]) that returns a request at once: blocking forms wait
//! for it. Layouts given here describe the *remote* group's blocks (or the
//! local group's, for reduce-scatter), in bytes.

use super::steps::{other_half, Step};
use super::{no_result, Inter, InterRoot, Machine};
use crate::abi::userbuf::UserBuf;
use crate::engine::coll::{coll_err, Combiner};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use lanai_coll::{AllgatherAlgo, BcastAlgo, Layout};

fn bcast_m(rank: u32, size: u32, root: u32, data: Vec<u8>, algo: BcastAlgo) -> MpiResult<Machine> {
    lanai_coll::bcast(rank, size, root, data, algo).map_err(coll_err)
}

/// `first` followed by `group`: the world ranks of a rooted step.
fn rooted(first: u32, group: &[u32]) -> Vec<u32> {
    std::iter::once(first)
        .chain(group.iter().copied())
        .collect()
}

/// Copies each non-empty block of `layout` from `res` into `out` at the
/// same offset; pieces past either end are clipped (the ABI sized `out`
/// from the same layout, so that is a bug guard).
fn place(out: &UserBuf, res: &[u8], layout: &Layout) {
    let dst = out.as_mut_slice();
    for (&len, &d) in layout.counts().iter().zip(layout.displs()) {
        let len = len
            .min(res.len().saturating_sub(d))
            .min(dst.len().saturating_sub(d));
        if len > 0 {
            dst[d..d + len].copy_from_slice(&res[d..d + len]);
        }
    }
}

fn no_buffer() -> MpiError {
    MpiError::internal("intercommunicator collective: no buffer where one is needed")
}

impl Inter {
    /// A layout over the union: `local` blocks for this group, `remote`
    /// for the other, in the union order.
    fn join(&self, local: &Layout, remote: &Layout) -> MpiResult<Layout> {
        let (a, b) = if self.remote.local_first {
            (local, remote)
        } else {
            (remote, local)
        };
        let counts = a.counts().iter().chain(b.counts()).copied().collect();
        let displs = a.displs().iter().chain(b.displs()).copied().collect();
        Layout::new(counts, displs).map_err(coll_err)
    }

    /// Empty blocks for every member of this group.
    fn nothing_local(&self) -> MpiResult<Layout> {
        let n = self.local.len();
        Layout::new(vec![0; n], vec![0; n]).map_err(coll_err)
    }

    /// This group's rank 0 and the other's, in union order, and this
    /// side's index in that pair.
    fn leaders(&self) -> (Vec<u32>, u32) {
        if self.remote.local_first {
            (vec![self.local[0], self.remote.members[0]], 0)
        } else {
            (vec![self.remote.members[0], self.local[0]], 1)
        }
    }
}

impl Engine {
    fn bcast_algo(&self) -> BcastAlgo {
        self.settings.algos.bcast
    }

    /// Barrier over both groups at once.
    pub fn inter_ibarrier(&mut self, comm: usize) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let (map, me) = it.union();
        let algo = self.settings.algos.software_barrier(map.len() as u32);
        let m = lanai_coll::barrier(me, map.len() as u32, algo).map_err(coll_err)?;
        self.inter_start(&it, Step::last(0, map, me, m))
    }

    /// Broadcast from the root to every member of the other group.
    pub fn inter_ibcast(&mut self, comm: usize, buf: UserBuf, root: InterRoot) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let algo = self.bcast_algo();
        let first = match root {
            InterRoot::Idle => Step::Done,
            InterRoot::Root => {
                let map = rooted(self.job.rank, &it.remote.members);
                let m = bcast_m(0, map.len() as u32, 0, buf.as_slice().to_vec(), algo)?;
                Step::last(0, map, 0, m)
            }
            InterRoot::Remote(r) => {
                let map = rooted(it.remote.members[r as usize], &it.local);
                let me = 1 + it.rank;
                let m = bcast_m(me, map.len() as u32, 0, vec![0; buf.len()], algo)?;
                Step::run(0, map, me, m, move |res| {
                    if let Some(r) = res {
                        buf.write(&r);
                    }
                    Ok(Step::Done)
                })
            }
        };
        self.inter_start(&it, first)
    }

    /// Reduce of the other group's data to the root: the group reduces to
    /// its rank 0, which passes the result to the root.
    pub fn inter_ireduce(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: Option<UserBuf>,
        root: InterRoot,
        op: Combiner,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let algo = self.bcast_algo();
        let first = match root {
            InterRoot::Idle => Step::Done,
            InterRoot::Root => {
                let out = out.ok_or_else(no_buffer)?;
                let map = vec![it.remote.members[0], self.job.rank];
                let m = bcast_m(1, 2, 0, vec![0; out.len()], algo)?;
                Step::run(1, map, 1, m, move |res| {
                    if let Some(r) = res {
                        out.write(&r);
                    }
                    Ok(Step::Done)
                })
            }
            InterRoot::Remote(r) => {
                let root_w = it.remote.members[r as usize];
                let (rank, lead) = (it.rank, it.local[0]);
                let m = lanai_coll::Reduce::new(rank, it.nl(), 0, data, op).map_err(coll_err)?;
                Step::run(0, it.local.clone(), rank, Box::new(m), move |res| {
                    if rank != 0 {
                        return Ok(Step::Done);
                    }
                    let m = bcast_m(0, 2, 0, res.ok_or_else(no_result)?, algo)?;
                    Ok(Step::last(1, vec![lead, root_w], 0, m))
                })
            }
        };
        self.inter_start(&it, first)
    }

    /// Phases 0 and 1 of the reductions: this group's data reduces to its
    /// rank 0, and the two leaders swap their results; `spread` gets the
    /// other group's reduction at this group's rank 0 (None elsewhere) and
    /// yields the phase-2 step that passes it on in this group.
    fn reduce_and_swap(
        &self,
        it: &Inter,
        data: Vec<u8>,
        op: Combiner,
        spread: impl FnOnce(Option<Vec<u8>>) -> MpiResult<Step> + Send + 'static,
    ) -> MpiResult<Step> {
        let rank = it.rank;
        let (pair, pme) = it.leaders();
        let m = lanai_coll::Reduce::new(rank, it.nl(), 0, data, op).map_err(coll_err)?;
        Ok(Step::run(
            0,
            it.local.clone(),
            rank,
            Box::new(m),
            move |mine| {
                if rank != 0 {
                    return spread(None);
                }
                let mine = mine.ok_or_else(no_result)?;
                let m = lanai_coll::Allgather::new(pme, 2, mine, AllgatherAlgo::Auto)
                    .map_err(coll_err)?;
                Ok(Step::run(1, pair, pme, Box::new(m), move |both| {
                    spread(Some(other_half(&both.ok_or_else(no_result)?, pme)?))
                }))
            },
        ))
    }

    /// Each group gets the reduction of the other group's data.
    pub fn inter_iallreduce(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: UserBuf,
        op: Combiner,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let (rank, nl, local, algo) = (it.rank, it.nl(), it.local.clone(), self.bcast_algo());
        let first = self.reduce_and_swap(&it, data, op, move |theirs| {
            let keep = theirs.clone();
            let data = theirs.unwrap_or_else(|| vec![0; out.len()]);
            let m = bcast_m(rank, nl, 0, data, algo)?;
            Ok(Step::run(2, local, rank, m, move |res| {
                if let Some(r) = keep.or(res) {
                    out.write(&r);
                }
                Ok(Step::Done)
            }))
        })?;
        self.inter_start(&it, first)
    }

    /// Reduce-scatter: the other group's reduction of vectors of
    /// `counts` bytes summed is scattered over this group, `counts[i]`
    /// bytes to member `i`, this member's part into `out`.
    pub fn inter_ireduce_scatter(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        counts: Vec<usize>,
        out: UserBuf,
        op: Combiner,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let (rank, nl, local) = (it.rank, it.nl(), it.local.clone());
        let mine = counts.get(rank as usize).copied().unwrap_or(0);
        let layout = Layout::packed(counts).map_err(coll_err)?;
        let first = self.reduce_and_swap(&it, data, op, move |theirs| {
            let data = theirs.unwrap_or_default();
            let m =
                lanai_coll::Scatterv::new(rank, nl, 0, data, &layout, mine).map_err(coll_err)?;
            Ok(Step::run(2, local, rank, Box::new(m), move |res| {
                if let Some(r) = res {
                    out.write(&r);
                }
                Ok(Step::Done)
            }))
        })?;
        self.inter_start(&it, first)
    }

    /// Gather of one `blk`-byte block from each member of the other group
    /// into the root's `out`; `data` is this member's block elsewhere.
    pub fn inter_igather(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: Option<(UserBuf, usize)>,
        root: InterRoot,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let first = match root {
            InterRoot::Idle => Step::Done,
            InterRoot::Root => {
                let (out, blk) = out.ok_or_else(no_buffer)?;
                let map = rooted(self.job.rank, &it.remote.members);
                let m = lanai_coll::Gather::new(0, map.len() as u32, 0, vec![0; blk])
                    .map_err(coll_err)?;
                Step::run(0, map, 0, Box::new(m), move |res| {
                    let res = res.ok_or_else(no_result)?;
                    out.write(res.get(blk..).unwrap_or_default());
                    Ok(Step::Done)
                })
            }
            InterRoot::Remote(r) => {
                let map = rooted(it.remote.members[r as usize], &it.local);
                let m = lanai_coll::Gather::new(1 + it.rank, map.len() as u32, 0, data)
                    .map_err(coll_err)?;
                Step::last(0, map, 1 + it.rank, Box::new(m))
            }
        };
        self.inter_start(&it, first)
    }

    /// Gather into the blocks `recv` (one per member of the other group) of
    /// the root's `out`.
    pub fn inter_igatherv(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: Option<(UserBuf, Layout)>,
        root: InterRoot,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let first = match root {
            InterRoot::Idle => Step::Done,
            InterRoot::Root => {
                let (out, recv) = out.ok_or_else(no_buffer)?;
                let map = rooted(self.job.rank, &it.remote.members);
                let counts = std::iter::once(0).chain(recv.counts().iter().copied());
                let displs = std::iter::once(0).chain(recv.displs().iter().copied());
                let all = Layout::new(counts.collect(), displs.collect()).map_err(coll_err)?;
                let m = lanai_coll::Gatherv::new(0, map.len() as u32, 0, Vec::new(), &all)
                    .map_err(coll_err)?;
                Step::run(0, map, 0, Box::new(m), move |res| {
                    place(&out, &res.ok_or_else(no_result)?, &recv);
                    Ok(Step::Done)
                })
            }
            InterRoot::Remote(r) => {
                let map = rooted(it.remote.members[r as usize], &it.local);
                let n = map.len() as u32;
                let m = lanai_coll::Gatherv::new(1 + it.rank, n, 0, data, &Layout::default())
                    .map_err(coll_err)?;
                Step::last(0, map, 1 + it.rank, Box::new(m))
            }
        };
        self.inter_start(&it, first)
    }

    /// Scatter of the root's `data`, one `blk`-byte block per member of the
    /// other group, which receives it in `out`.
    pub fn inter_iscatter(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        blk: usize,
        out: Option<UserBuf>,
        root: InterRoot,
    ) -> MpiResult<usize> {
        let counts = match root {
            InterRoot::Root => {
                let nr = self.comms.get(comm)?.peer_count() as usize;
                Some(Layout::packed(vec![blk; nr]).map_err(coll_err)?)
            }
            _ => None,
        };
        self.inter_iscatterv(comm, data, counts, out, root)
    }

    /// Scatter of the blocks `send` (one per member of the other group) of
    /// the root's `data`; each member receives `out.len()` bytes into `out`.
    pub fn inter_iscatterv(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        send: Option<Layout>,
        out: Option<UserBuf>,
        root: InterRoot,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let first = match root {
            InterRoot::Idle => Step::Done,
            InterRoot::Root => {
                let send = send.ok_or_else(no_buffer)?;
                let map = rooted(self.job.rank, &it.remote.members);
                let counts = std::iter::once(0).chain(send.counts().iter().copied());
                let displs = std::iter::once(0).chain(send.displs().iter().copied());
                let all = Layout::new(counts.collect(), displs.collect()).map_err(coll_err)?;
                let m = lanai_coll::Scatterv::new(0, map.len() as u32, 0, data, &all, 0)
                    .map_err(coll_err)?;
                Step::last(0, map, 0, Box::new(m))
            }
            InterRoot::Remote(r) => {
                let out = out.ok_or_else(no_buffer)?;
                let map = rooted(it.remote.members[r as usize], &it.local);
                let me = 1 + it.rank;
                let m = lanai_coll::Scatterv::new(
                    me,
                    map.len() as u32,
                    0,
                    Vec::new(),
                    &Layout::default(),
                    out.len(),
                )
                .map_err(coll_err)?;
                Step::run(0, map, me, Box::new(m), move |res| {
                    if let Some(r) = res {
                        out.write(&r);
                    }
                    Ok(Step::Done)
                })
            }
        };
        self.inter_start(&it, first)
    }

    /// Every member sends `data` to each member of the other group and
    /// receives that member's bytes in its block of `recv`, in `out`.
    /// Serves allgather and allgatherv.
    pub fn inter_iallgatherv(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        recv: Layout,
        out: UserBuf,
    ) -> MpiResult<usize> {
        let nr = self.comms.get(comm)?.peer_count() as usize;
        let send = Layout::new(vec![data.len(); nr], vec![0; nr]).map_err(coll_err)?;
        self.inter_ialltoallv(comm, data, send, recv, out)
    }

    /// All-to-all between the groups: block `send.block(j)` of `data` goes
    /// to member `j` of the other group, whose bytes land in block
    /// `recv.block(j)` of `out`. Serves alltoall, -v and -w.
    pub fn inter_ialltoallv(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        send: Layout,
        recv: Layout,
        out: UserBuf,
    ) -> MpiResult<usize> {
        let it = self.inter_begin(comm)?;
        let (map, me) = it.union();
        let none = it.nothing_local()?;
        let (su, ru) = (it.join(&none, &send)?, it.join(&none, &recv)?);
        let m =
            lanai_coll::Alltoallv::new(me, map.len() as u32, data, &su, &ru).map_err(coll_err)?;
        let first = Step::run(0, map, me, Box::new(m), move |res| {
            if let Some(r) = res {
                place(&out, &r, &recv);
            }
            Ok(Step::Done)
        });
        self.inter_start(&it, first)
    }
}
