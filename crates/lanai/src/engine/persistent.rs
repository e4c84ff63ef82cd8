//! Persistent requests: `MPI_Send_init`/`MPI_Recv_init`, the persistent
//! collectives (`MPI_Bcast_init`, ...) and `MPI_Start`.
//!
//! Each start runs the operation as a child request; the persistent request
//! reflects the child and completes with it.

use super::error::{MpiError, MpiResult};
use super::request::{Op, Persistent, Status};
use super::Engine;
use crate::abi::consts as c;

impl Engine {
    pub fn persistent(&mut self, p: Persistent) -> usize {
        let comm = match &p {
            Persistent::Send { comm, .. } | Persistent::Recv { comm, .. } => *comm,
            Persistent::Coll(s) => s.comm,
        };
        let req = self.st.reqs.insert_on(Op::Idle, comm);
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.persistent = Some(p);
            r.done = true;
        }
        req
    }

    /// What persistent request `req` starts, if it may start now.
    pub fn startable(&self, req: usize) -> MpiResult<Persistent> {
        let Some(r) = self.st.reqs.get(req) else {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "invalid request"));
        };
        let Some(p) = &r.persistent else {
            return Err(MpiError::new(
                c::MPI_ERR_REQUEST,
                "not a persistent request",
            ));
        };
        // A collective stays active until Wait/Test completes it, even
        // when its child has finished already.
        let busy = match p {
            Persistent::Coll(_) => r.active,
            _ => r.active && !r.done,
        };
        if busy {
            return Err(MpiError::new(
                c::MPI_ERR_REQUEST,
                "persistent request is already active",
            ));
        }
        Ok(p.clone())
    }

    /// `MPI_Start` of a point-to-point persistent request: runs its
    /// operation as a child and makes the persistent request reflect it.
    /// (A collective's child is started by the ABI, then [`Engine::adopt`]ed.)
    pub fn start(&mut self, req: usize) -> MpiResult<()> {
        let child = match self.startable(req)? {
            Persistent::Send {
                comm,
                dest,
                tag,
                buf,
                mode,
            } => self.start_send(comm, dest, tag, buf, mode)?,
            Persistent::Recv {
                comm,
                src,
                tag,
                buf,
            } => Some(self.start_recv(comm, src, tag, buf)?),
            Persistent::Coll(_) => {
                return Err(MpiError::internal(
                    "a persistent collective is started by its starter",
                ))
            }
        };
        self.activate(req, child);
        Ok(())
    }

    /// Makes persistent request `req` active with `child` (its running
    /// operation; `None` when that completed at once).
    pub fn adopt(&mut self, req: usize, child: usize) {
        self.activate(req, Some(child));
    }

    fn activate(&mut self, req: usize, child: Option<usize>) {
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.active = true;
            r.done = child.is_none();
            r.status = Status::default();
            r.op = Op::Idle;
        }
        if let Some(ch) = child {
            self.st.persistent_children.push((req, ch));
        }
        self.settle_persistent();
    }

    /// Copies completed children's status into their persistent parents.
    /// A collective's child is kept (completed) until [`Engine::take_child`]:
    /// its derived-datatype outputs are unpacked by the ABI when the
    /// parent is completed.
    pub fn settle_persistent(&mut self) {
        let reqs = &mut self.st.reqs;
        self.st.persistent_children.retain(|&(parent, child)| {
            let Some(ch) = reqs.get(child) else {
                return false;
            };
            if !ch.done {
                return true;
            }
            let st = ch.status;
            let keep = reqs
                .get(parent)
                .is_some_and(|p| !p.freed && matches!(p.persistent, Some(Persistent::Coll(_))));
            if !keep {
                reqs.remove(child);
            }
            if let Some(p) = reqs.get_mut(parent) {
                p.status = st;
                p.done = true;
                if p.freed {
                    reqs.remove(parent);
                }
            }
            keep
        });
    }

    /// The running or completed child of persistent request `req`, if any.
    pub fn child_of(&self, req: usize) -> Option<usize> {
        self.st
            .persistent_children
            .iter()
            .find(|&&(p, _)| p == req)
            .map(|&(_, ch)| ch)
    }

    /// Unlinks the completed child of persistent collective `req` and
    /// returns it; the caller settles and removes it.
    pub fn take_child(&mut self, req: usize) -> Option<usize> {
        let ch = self.child_of(req)?;
        if !self.st.reqs.get(ch).is_some_and(|r| r.done) {
            return None;
        }
        self.st.persistent_children.retain(|&(p, _)| p != req);
        Some(ch)
    }
}
