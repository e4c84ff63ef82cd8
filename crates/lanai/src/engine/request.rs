//! Requests: the state of every operation in flight, in a slab.

use crate::abi::userbuf::UserBuf;
use std::rc::Rc;

/// What a blocking operation that finished as it started returns instead
/// of a request: none was made. [`Requests::get`] finds nothing under it,
/// so a wait sees it done at once, and `remove` ignores it.
pub const DONE: usize = usize::MAX;

/// Where a completed operation's outcome lands, as MPI_Status reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub error: i32,
    /// Bytes received.
    pub count: u64,
    pub cancelled: bool,
}

/// What a persistent request starts each time.
#[derive(Debug, Clone)]
pub enum Persistent {
    Send {
        comm: usize,
        dest: i32,
        tag: i32,
        buf: UserBuf,
        mode: SendMode,
    },
    Recv {
        comm: usize,
        src: i32,
        tag: i32,
        buf: UserBuf,
    },
    /// A persistent collective: each start runs the nonblocking collective.
    Coll(CollStart),
}

/// Starts the nonblocking collective behind a persistent collective
/// request. It runs outside the engine (it is the C entry point's own
/// path, which takes the engine itself) and returns the new request's
/// handle, or the MPI error code it reported.
pub type StartFn = dyn Fn() -> Result<i32, i32>;

/// A persistent collective's starter and communicator (engine index,
/// whose error handler reports failures of `MPI_Start`).
#[derive(Clone)]
pub struct CollStart {
    pub comm: usize,
    pub start: Rc<StartFn>,
}

impl std::fmt::Debug for CollStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CollStart {{ comm: {} }}", self.comm)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    Sync,
    Ready,
    Buffered,
    /// A collective's send to a member that receives from many at once (a
    /// gather's root): from `FAN_IN_RNDV_MIN` bytes it waits for its
    /// receive, as above the eager limit, so the senders cannot run ahead
    /// and bury the one receiver in unexpected messages.
    FanIn,
}

/// The operation-specific part of a request.
#[derive(Debug)]
pub enum Op {
    /// A send waiting for an acknowledgement (synchronous or rendezvous);
    /// `buf` stays borrowed until then; a buffered send owns a copy instead.
    Send {
        buf: UserBuf,
        to_world: u32,
        /// A buffered send's reservation in an attached buffer.
        bsend: Option<super::bsend_pool::Share>,
        owned: Option<Vec<u8>>,
    },
    /// A receive: posted (in the matching queue) or being filled.
    Recv {
        buf: UserBuf,
        ctx: u32,
        src: i32,
        tag: i32,
        filled: u64,
    },
    /// A collective instance; its state machine lives in the collective table.
    Coll,
    /// A request made of others (`MPI_Isendrecv`, `MPI_Buffer_iflush`); see
    /// `composite.rs`.
    Composite,
    /// A generalized request (`MPI_Grequest_start`): the ABI completes it.
    Generalized,
    /// Nothing left to do (completed, or inactive persistent request).
    Idle,
}

#[derive(Debug)]
pub struct Request {
    pub gen: u32,
    pub op: Op,
    pub done: bool,
    pub status: Status,
    /// `MPI_Request_free` was called while active: drop on completion.
    pub freed: bool,
    pub persistent: Option<Persistent>,
    /// A persistent request between Start and completion.
    pub active: bool,
    /// The communicator whose error handler hears of its failure.
    pub comm: Option<usize>,
}

/// The request slab. Indices are reused; generations tell stale cookies apart.
#[derive(Debug, Default)]
pub struct Requests {
    slots: Vec<Option<Request>>,
    free: Vec<usize>,
    gens: Vec<u32>,
    live: usize,
}

impl Requests {
    /// As [`insert`](Self::insert), for an operation on communicator `comm`.
    #[inline]
    pub fn insert_on(&mut self, op: Op, comm: usize) -> usize {
        let idx = self.insert(op);
        if let Some(r) = self.get_mut(idx) {
            r.comm = Some(comm);
        }
        idx
    }

    #[inline(always)]
    pub fn insert(&mut self, op: Op) -> usize {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.gens.push(0);
            self.slots.len() - 1
        });
        self.gens[idx] = self.gens[idx].wrapping_add(1);
        self.slots[idx] = Some(Request {
            gen: self.gens[idx],
            op,
            done: false,
            status: Status::default(),
            freed: false,
            persistent: None,
            active: false,
            comm: None,
        });
        self.live += 1;
        idx
    }

    #[inline]
    pub fn get(&self, idx: usize) -> Option<&Request> {
        self.slots.get(idx)?.as_ref()
    }

    #[inline]
    pub fn get_mut(&mut self, idx: usize) -> Option<&mut Request> {
        self.slots.get_mut(idx)?.as_mut()
    }

    /// Drops request `idx` in its slot (no caller needs it back, and moving a
    /// request out costs a copy on every completion); false if none was there.
    #[inline]
    pub fn remove(&mut self, idx: usize) -> bool {
        match self.slots.get_mut(idx) {
            Some(slot @ Some(_)) => {
                *slot = None;
                self.free.push(idx);
                self.live -= 1;
                true
            }
            _ => false,
        }
    }

    /// Whether a request on communicator `comm` is still allocated.
    pub fn any_on(&self, comm: usize) -> bool {
        self.slots.iter().flatten().any(|r| r.comm == Some(comm))
    }

    /// A transport cookie naming this request: index and generation.
    pub fn cookie(&self, idx: usize) -> u64 {
        let gen = self.gens.get(idx).copied().unwrap_or(0);
        (u64::from(gen) << 32) | idx as u64
    }

    /// The request a cookie names, if it is still the same one.
    pub fn by_cookie(&self, cookie: u64) -> Option<usize> {
        let idx = (cookie & 0xffff_ffff) as usize;
        let r = self.get(idx)?;
        (u64::from(r.gen) == cookie >> 32).then_some(idx)
    }

    /// Marks a request complete; a freed one is dropped right away.
    #[inline]
    pub fn complete(&mut self, idx: usize, status: Status) {
        if let Some(r) = self.get_mut(idx) {
            r.status = status;
            r.done = true;
            r.op = Op::Idle;
            if r.freed {
                self.remove(idx);
            }
        }
    }

    pub fn live(&self) -> usize {
        self.live
    }

    /// Requests still in progress (the slow path of the wait policy asks).
    pub fn pending(&self) -> usize {
        self.slots
            .iter()
            .flatten()
            .filter(|r| !r.done && !matches!(r.op, Op::Idle))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_cookies_do_not_resolve() {
        let mut r = Requests::default();
        let a = r.insert(Op::Coll);
        let ca = r.cookie(a);
        assert_eq!(r.by_cookie(ca), Some(a));
        r.remove(a);
        let b = r.insert(Op::Coll);
        assert_eq!(a, b, "slot reused");
        assert_eq!(r.by_cookie(ca), None);
        assert_eq!(r.by_cookie(r.cookie(b)), Some(b));
    }

    #[test]
    fn freed_requests_vanish_on_completion() {
        let mut r = Requests::default();
        let a = r.insert(Op::Coll);
        r.get_mut(a).unwrap().freed = true;
        r.complete(a, Status::default());
        assert!(r.get(a).is_none());
        assert_eq!(r.live(), 0);
    }
}
