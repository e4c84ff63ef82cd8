//! Requests that complete when something else has: `MPI_Isendrecv` (a
//! receive and a send under one request) and `MPI_Buffer_iflush` /
//! `MPI_Comm_iflush_buffer` (an attached buffer draining). Progress
//! settles them after every pass.

use super::bsend_pool::Owner;
use super::error::MpiResult;
use super::request::{Op, Status};
use super::Engine;
use crate::abi::consts as c;

/// What a composite request waits for.
#[derive(Debug, Clone, Copy)]
pub enum Waits {
    /// A receive (kept until the pair completes; its status is the pair's)
    /// and a send (dropped by the engine when it completes), by cookie.
    Pair { recv: u64, send: Option<u64> },
    /// No buffered send holding any of the attached buffer with this pool
    /// id (`None`: nothing was attached, so it is drained already).
    BsendDrain(Option<u64>),
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
        let req = self.st.reqs.insert(Op::Composite);
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

    /// Completes every composite request whose parts have completed.
    pub fn settle_composites(&mut self) {
        let pools = &self.st.bsend;
        let reqs = &mut self.st.reqs;
        self.st.composites.retain(|comp| {
            let st = match comp.waits {
                Waits::Pair { recv, send } => {
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
                Waits::BsendDrain(pool) if pool.is_none_or(|id| pools.drained(id)) => Status {
                    source: c::MPI_ANY_SOURCE,
                    tag: c::MPI_ANY_TAG,
                    ..Status::default()
                },
                Waits::BsendDrain(_) => return true,
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
