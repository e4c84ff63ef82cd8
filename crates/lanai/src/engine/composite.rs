//! Requests that complete when something else has: `MPI_Isendrecv` (a
//! receive and a send under one request), `MPI_Buffer_iflush` /
//! `MPI_Comm_iflush_buffer` (an attached buffer draining), and collectives
//! made of two (an allreduce as a reduce and a broadcast). Progress
//! settles them after every pass.

use super::bsend_pool::Owner;
use super::coll::coll_status;
use super::error::MpiResult;
use super::request::{Op, Status, DONE};
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;

/// What a composite request waits for.
#[derive(Debug, Clone, Copy)]
pub enum Waits {
    /// A receive (kept until the pair completes; its status is the pair's)
    /// and a send (dropped by the engine when it completes), by cookie.
    Pair { recv: u64, send: Option<u64> },
    /// No buffered send holding any of the attached buffer with this pool
    /// id (`None`: nothing was attached, so it is drained already).
    BsendDrain(Option<u64>),
    /// Two collective requests, by cookie, each dropped once complete
    /// (`None` then, or from the start when it completed at once).
    Both(Option<u64>, Option<u64>),
    /// Collective request `first`, then the broadcast of `buf` from this
    /// rank as instance `seq` of communicator `comm` (numbered when the
    /// pair was called, so that members agree whatever starts meanwhile),
    /// started once `first` is complete.
    ThenBcast {
        first: u64,
        comm: usize,
        buf: UserBuf,
        seq: u32,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct Composite {
    /// The request the program holds.
    pub req: usize,
    pub waits: Waits,
}

impl Engine {
    /// One request for a started receive `recv` and send `send` (`None`:
    /// it completed at once). The send is the engine's from now on.
    pub fn start_pair(&mut self, recv: usize, send: Option<usize>) -> usize {
        let comm = self.st.reqs.get(recv).and_then(|r| r.comm);
        let req = self.st.reqs.insert(Op::Composite);
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.comm = comm;
        }
        let send = send.and_then(|s| {
            let r = self.st.reqs.get_mut(s)?;
            if r.done {
                self.st.reqs.remove(s);
                return None;
            }
            r.freed = true;
            Some(self.st.reqs.cookie(s))
        });
        let recv = self.st.reqs.cookie(recv);
        self.st.composites.push(Composite {
            req,
            waits: Waits::Pair { recv, send },
        });
        self.settle_composites();
        req
    }

    /// A request that completes once no buffered send holds any of
    /// `owner`'s attached buffer (the one attached now).
    pub fn start_bsend_drain(&mut self, owner: Owner) -> usize {
        let req = self.st.reqs.insert(Op::Composite);
        let pool = self.st.bsend.id_of(owner);
        self.st.composites.push(Composite {
            req,
            waits: Waits::BsendDrain(pool),
        });
        self.settle_composites();
        req
    }

    /// One request for collective requests `a` then `b` (either may be
    /// [`DONE`]), complete when both are.
    pub fn start_both(&mut self, a: usize, b: usize) -> usize {
        let cookie = |e: &Self, r: usize| (r != DONE).then(|| e.st.reqs.cookie(r));
        let waits = Waits::Both(cookie(self, a), cookie(self, b));
        self.push_composite(waits)
    }

    /// One request for collective request `first` (maybe [`DONE`]) and
    /// then the broadcast of `buf` from this rank as instance `seq` of
    /// `comm`.
    pub fn start_then_bcast(
        &mut self,
        first: usize,
        comm: usize,
        buf: UserBuf,
        seq: u32,
    ) -> MpiResult<usize> {
        if first == DONE {
            let b = self.start_bcast_as(comm, seq, buf, self.comms.get(comm)?.rank)?;
            return Ok(self.start_both(b, DONE));
        }
        let first = self.st.reqs.cookie(first);
        Ok(self.push_composite(Waits::ThenBcast {
            first,
            comm,
            buf,
            seq,
        }))
    }

    fn push_composite(&mut self, waits: Waits) -> usize {
        let req = self.st.reqs.insert(Op::Composite);
        self.st.composites.push(Composite { req, waits });
        self.settle_composites();
        req
    }

    /// Whether a broadcast on communicator `comm` waits to start.
    pub fn deferred_bcast_on(&self, comm: usize) -> bool {
        self.st
            .composites
            .iter()
            .any(|c| matches!(c.waits, Waits::ThenBcast { comm: x, .. } if x == comm))
    }

    /// Starts the broadcasts whose first step is complete; true if any.
    pub fn start_deferred_bcasts(&mut self) -> MpiResult<bool> {
        let mut did = false;
        for i in 0..self.st.composites.len() {
            let Waits::ThenBcast {
                first,
                comm,
                buf,
                seq,
            } = self.st.composites[i].waits
            else {
                continue;
            };
            let reqs = &mut self.st.reqs;
            match reqs.by_cookie(first) {
                Some(r) if !reqs.get(r).is_some_and(|x| x.done) => continue,
                Some(r) => {
                    reqs.remove(r);
                }
                None => {}
            }
            let root = self.comms.get(comm)?.rank;
            let b = self.start_bcast_as(comm, seq, buf, root)?;
            let b = (b != DONE).then(|| self.st.reqs.cookie(b));
            self.st.composites[i].waits = Waits::Both(b, None);
            did = true;
        }
        if did {
            self.settle_composites();
        }
        Ok(did)
    }

    /// Completes every composite request whose parts have completed.
    pub fn settle_composites(&mut self) {
        let pools = &self.st.bsend;
        let reqs = &mut self.st.reqs;
        self.st.composites.retain_mut(|comp| {
            let st = match &mut comp.waits {
                &mut Waits::Pair { recv, send } => {
                    // A send is removed as soon as it completes.
                    if send.is_some_and(|s| reqs.by_cookie(s).is_some()) {
                        return true;
                    }
                    let r = reqs.by_cookie(recv);
                    match r.and_then(|i| reqs.get(i)) {
                        Some(x) if !x.done => return true,
                        Some(x) => {
                            let st = x.status;
                            if let Some(i) = r {
                                reqs.remove(i);
                            }
                            st
                        }
                        None => Status::default(),
                    }
                }
                &mut Waits::BsendDrain(pool) if pool.is_none_or(|id| pools.drained(id)) => Status {
                    source: c::MPI_ANY_SOURCE,
                    tag: c::MPI_ANY_TAG,
                    ..Status::default()
                },
                Waits::BsendDrain(_) => return true,
                Waits::Both(a, b) => {
                    for part in [&mut *a, &mut *b] {
                        let Some(r) = part.and_then(|c| reqs.by_cookie(c)) else {
                            *part = None;
                            continue;
                        };
                        if reqs.get(r).is_some_and(|x| x.done) {
                            reqs.remove(r);
                            *part = None;
                        }
                    }
                    if a.is_some() || b.is_some() {
                        return true;
                    }
                    coll_status()
                }
                Waits::ThenBcast { .. } => return true,
            };
            reqs.complete(comp.req, st);
            false
        });
    }

    /// `MPI_Cancel` of a composite request: cancels its receive (a send
    /// that has left cannot be cancelled; MPI allows that outcome). False
    /// if `req` is not a composite request.
    pub fn cancel_composite(&mut self, req: usize) -> MpiResult<bool> {
        let Some(comp) = self.st.composites.iter().find(|x| x.req == req).copied() else {
            return Ok(false);
        };
        if let Waits::Pair { recv, .. } = comp.waits {
            if let Some(r) = self.st.reqs.by_cookie(recv) {
                self.cancel(r)?;
            }
        }
        self.settle_composites();
        Ok(true)
    }
}
