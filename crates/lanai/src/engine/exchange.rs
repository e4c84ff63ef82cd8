//! All-to-all as point-to-point transfers between the callers' buffers:
//! every receive is posted into its block of the receive buffer, then
//! every send leaves from its block of the send buffer, in the pairwise
//! order (`r + s` for `s = 1..P`). Small all-to-alls on one node ride on
//! the barrier device and mid-sized ones go through the staging slots
//! (`riding.rs`, `staged_allreduce.rs`); every other one, on one node or
//! across nodes, comes here, except `MPI_IN_PLACE`, whose send data the
//! receives would overwrite.
//!
//! An all-to-all is one round of independent transfers, so a machine has
//! nothing to decide; what it cost was copies. The message machine's
//! version copied the send buffer twice on the way in, every incoming
//! block once more into the machine's buffer and the whole result once
//! more into the caller's, and acknowledged its messages one by one: at 4
//! ranks on 4 emulated nodes, 256 KiB blocks took 3.6-5.5 ms a call
//! against 1.0-1.3 ms for the same transfers as `MPI_Isend`/`MPI_Irecv`
//! (Open MPI over TCP: 1.4-1.9 ms), and on one node 8 ranks of 512 bytes
//! 60 us against 25. Point-to-point transfers send from the caller's
//! memory and take large blocks straight into place (rendezvous; a single
//! copy within a node).
//!
//! The transfers use the communicator's collective context, which no
//! receive of the program can match, and a tag from the collective
//! sequence number, so instances in flight at once stay apart while each
//! pair's messages of one instance match in order. Every member takes
//! this path or none: the device's and the slots' choices are the same
//! everywhere, and `MPI_IN_PLACE` is all or nothing by the standard.

use super::coll::coll_status;
use super::error::{MpiError, MpiResult};
use super::p2p::Ctx;
use super::request::Op;
use super::Engine;
use crate::abi::userbuf::UserBuf;
use lanai_coll::Layout;

/// One all-to-all in flight as transfers.
#[derive(Debug)]
pub struct Exchange {
    /// The request the program holds.
    req: usize,
    /// The transfers' requests (eager sends complete at once and have
    /// none); `parts[..done]` are known complete.
    parts: Vec<usize>,
    done: usize,
}

impl Engine {
    /// Starts an all-to-all of `send` (laid out as `send_blocks`, block
    /// `p` for rank `p`) into `out` (laid out as `recv_blocks`).
    pub(super) fn start_exchange(
        &mut self,
        comm: usize,
        send: UserBuf,
        send_blocks: &Layout,
        out: UserBuf,
        recv_blocks: &Layout,
    ) -> MpiResult<usize> {
        let (rank, size) = {
            let cm = self.comms.get(comm)?;
            (cm.rank, cm.size)
        };
        send_blocks
            .check_size(size)
            .and_then(|()| recv_blocks.check_size(size))
            .map_err(super::coll::coll_err)?;
        let block = |buf: &UserBuf, l: &Layout, p: u32, what: &str| {
            buf.range(l.block(p)).ok_or_else(|| {
                MpiError::internal(format!("all-to-all: {what} block {p} outside its buffer"))
            })
        };
        let (mine_out, mine_in) = (
            block(&send, send_blocks, rank, "send")?,
            block(&out, recv_blocks, rank, "receive")?,
        );
        if mine_out.len() != mine_in.len() {
            return Err(MpiError::new(
                crate::abi::consts::MPI_ERR_TRUNCATE,
                format!(
                    "all-to-all: this rank sends itself {} bytes and receives {}",
                    mine_out.len(),
                    mine_in.len()
                ),
            ));
        }
        let seq = self.reserve_coll_seq(comm)?;
        self.net.counters.exchanges += 1;
        let tag = (seq & 0x7fff_ffff) as i32;
        let mut parts = Vec::with_capacity(2 * size as usize);
        let started = (|| {
            for s in 1..size {
                let from = (rank + size - s) % size;
                let into = block(&out, recv_blocks, from, "receive")?;
                parts.push(self.start_recv_on(comm, Ctx::Coll, from as i32, tag, into)?);
            }
            mine_in.write(mine_out.as_slice());
            for s in 1..size {
                let to = (rank + s) % size;
                let from = block(&send, send_blocks, to, "send")?;
                let mode = super::request::SendMode::Standard;
                if let Some(r) = self.start_send_on(comm, Ctx::Coll, to as i32, tag, from, mode)? {
                    parts.push(r);
                }
            }
            Ok(())
        })();
        if let Err(e) = started {
            // What started goes on without us and is dropped when done.
            for &p in &parts {
                if let Some(r) = self.st.reqs.get_mut(p) {
                    r.freed = true;
                }
            }
            return Err(e);
        }
        let req = self.st.reqs.insert(Op::Coll);
        self.st.exchanges.push(Exchange {
            req,
            parts,
            done: 0,
        });
        self.drive_exchanges()?;
        Ok(req)
    }

    /// Completes the all-to-alls whose transfers are all done. True if
    /// any did.
    pub(super) fn drive_exchanges(&mut self) -> MpiResult<bool> {
        let mut did = false;
        let mut i = 0;
        while i < self.st.exchanges.len() {
            let x = &mut self.st.exchanges[i];
            while x.done < x.parts.len()
                && self.st.reqs.get(x.parts[x.done]).is_some_and(|r| r.done)
            {
                x.done += 1;
            }
            if x.done < x.parts.len() {
                i += 1;
                continue;
            }
            let x = self.st.exchanges.swap_remove(i);
            let mut status = coll_status();
            for p in x.parts {
                if let Some(r) = self.st.reqs.get(p) {
                    if status.error == 0 {
                        status.error = r.status.error;
                    }
                }
                self.st.reqs.remove(p);
            }
            self.st.reqs.complete(x.req, status);
            did = true;
        }
        Ok(did)
    }
}
