//! `MPI_Comm_idup`: the context-id agreement runs as a nonblocking
//! collective, and the call returns at once.
//!
//! The new communicator's table slot and handle exist from the start (MPI
//! forbids using it before the request completes); its context id is filled
//! in when the AND allreduce of free-slot masks finishes. Each round offers
//! the free slots in a window every member computes alike (from the
//! parent's context, the sequence number and the round), so what members
//! offer depends on their free slots, never on timing. The slots offered
//! are held back from every other agreement until the round ends, so
//! concurrent creations sharing a process can never pick the same id. When
//! no slot is common, every member sees the same empty result and the
//! agreement runs another round, under a sequence number derived from the
//! first round's so it never collides with a collective started meanwhile.

use super::comm::{lowest_free, Capture, Slot, AGREEMENT_ROUNDS};
use super::error::{MpiError, MpiResult};
use super::request::Op;
use super::Engine;

/// Context id of a communicator whose agreement is still running.
const PENDING_CTX: u32 = u32::MAX - 1;
/// Marks the sequence numbers of retry rounds (normal ones count from 0).
const RETRY_SEQ: u32 = 0x8000_0000;
/// Retry rounds are numbered in the low bits of their sequence numbers.
const ROUND_BITS: u32 = 10;
/// Slots each round offers: a window every member computes alike.
const WINDOW: usize = 64;

/// One `Comm_idup` in flight.
#[derive(Debug)]
pub struct Idup {
    /// The request the program waits on.
    req: usize,
    parent: usize,
    /// Table index of the new communicator.
    new: usize,
    /// Sequence number of the first round on the parent.
    base_seq: u32,
    round: u32,
    /// This round's offer, withdrawn when the round ends.
    offer: Vec<u8>,
    /// This round's allreduce: its request and where its result lands.
    round_req: usize,
    slot: Slot,
}

/// The window of slots round `round` of the agreement started as `seq` on
/// the communicator with context `ctx` offers: the same at every member,
/// and different for concurrent agreements and for successive rounds.
fn window(ctx: u32, seq: u32, round: u32) -> (usize, usize) {
    let h = super::comm::fnv1a([ctx, seq, round]);
    ((h % super::comm::CTX_SLOTS as u64) as usize, WINDOW)
}

impl Engine {
    /// Starts `MPI_Comm_idup` of `parent`: returns the new communicator's
    /// index (usable once the request completes) and the request.
    pub fn comm_idup(&mut self, parent: usize) -> MpiResult<(usize, usize)> {
        if self.comms.get(parent)?.is_inter() {
            // Intercommunicators agree across both groups; that runs inside
            // the call for now, and the request is complete at once.
            let new = self.inter_dup(parent)?;
            let req = self.st.reqs.insert_on(Op::Coll, parent);
            self.st.reqs.complete(req, super::coll::coll_status());
            return Ok((new, req));
        }
        let p = self.comms.get(parent)?;
        let (base_seq, p_ctx) = (p.coll_seq, p.ctx);
        let pending = p.derive(PENDING_CTX, p.rank, p.members());
        let new = self.comms.insert(pending);
        let offer = self.comms.offer(Some(window(p_ctx, base_seq, 0)));
        let slot = Slot::default();
        let m = self.ctx_agreement(parent, offer.clone())?;
        let round_req = self.start_coll(parent, Box::new(Capture::new(m, slot.clone())), None)?;
        let req = self.st.reqs.insert_on(Op::Coll, parent);
        self.st.idups.push(Idup {
            req,
            parent,
            new,
            base_seq,
            round: 0,
            offer,
            round_req,
            slot,
        });
        self.drive_idups()?;
        Ok((new, req))
    }

    /// Finishes the agreements whose round is over. True if any moved on.
    pub(super) fn drive_idups(&mut self) -> MpiResult<bool> {
        let mut did = false;
        let mut i = 0;
        while i < self.st.idups.len() {
            let result = self.st.idups[i].slot.lock().ok().and_then(|mut g| g.take());
            let Some(mask) = result else {
                i += 1;
                continue;
            };
            did = true;
            let mut op = self.st.idups.swap_remove(i);
            self.st.reqs.remove(op.round_req);
            self.comms.withdraw(&op.offer);
            match lowest_free(&mask) {
                Some(s) => {
                    self.comms.take_slot(s);
                    self.comms.get_mut(op.new)?.ctx = s as u32 * 2;
                    self.st.reqs.complete(op.req, super::coll::coll_status());
                }
                None if op.round + 1 < AGREEMENT_ROUNDS => {
                    op.round += 1;
                    self.next_round(&mut op)?;
                    self.st.idups.push(op);
                }
                None => {
                    return Err(MpiError::other(
                        "MPI_Comm_idup: out of context ids (no id is free at every member)",
                    ))
                }
            }
        }
        Ok(did)
    }

    /// Another agreement round under its own sequence number.
    fn next_round(&mut self, op: &mut Idup) -> MpiResult<()> {
        let p_ctx = self.comms.get(op.parent)?.ctx;
        op.offer = self.comms.offer(Some(window(p_ctx, op.base_seq, op.round)));
        op.slot = Slot::default();
        let m = self.ctx_agreement(op.parent, op.offer.clone())?;
        let cm = self.comms.get(op.parent)?;
        let base = op.base_seq & ((1 << (31 - ROUND_BITS)) - 1);
        let seq = RETRY_SEQ | (base << ROUND_BITS) | (op.round & ((1 << ROUND_BITS) - 1));
        let (ctx, rank, map) = (cm.coll_ctx(), cm.rank, cm.map.clone());
        let capture = Capture::new(m, op.slot.clone());
        op.round_req = self.start_instance(ctx, seq, rank, map, Box::new(capture), None)?;
        Ok(())
    }

    /// Whether communicator `idx` is still waiting for its context id.
    pub fn comm_pending(&self, idx: usize) -> bool {
        self.comms.get(idx).is_ok_and(|c| c.ctx == PENDING_CTX)
    }
}
