//! Persistent requests: `MPI_Send_init`/`MPI_Recv_init` and `MPI_Start`.

use super::error::{MpiError, MpiResult};
use super::request::{Op, Persistent, Status};
use super::Engine;
use crate::abi::consts as c;

impl Engine {
    pub fn persistent(&mut self, p: Persistent) -> usize {
        let req = self.st.reqs.insert(Op::Idle);
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.persistent = Some(p);
            r.done = true;
        }
        req
    }

    /// `MPI_Start`: runs the persistent request's operation as a child and
    /// makes the persistent request reflect it.
    pub fn start(&mut self, req: usize) -> MpiResult<()> {
        let Some(r) = self.st.reqs.get(req) else {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "invalid request"));
        };
        let Some(p) = r.persistent else {
            return Err(MpiError::new(
                c::MPI_ERR_REQUEST,
                "not a persistent request",
            ));
        };
        if r.active && !r.done {
            return Err(MpiError::new(
                c::MPI_ERR_REQUEST,
                "persistent request is already active",
            ));
        }
        let child = match p {
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
        };
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
        Ok(())
    }

    /// Copies completed children's status into their persistent parents.
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
            reqs.remove(child);
            if let Some(p) = reqs.get_mut(parent) {
                p.status = st;
                p.done = true;
                if p.freed {
                    reqs.remove(parent);
                }
            }
            false
        });
    }
}
