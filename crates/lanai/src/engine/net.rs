//! The transports as the engine sees them: a route per world rank, decided
//! once at start-up, and one send call that picks shared memory or TCP.

use super::doorbell::Doorbell;
use super::error::{MpiError, MpiResult};
use crate::shm::ShmNode;
use lanai_tcp::TcpTransport;
use lanai_wire::envelope::Envelope;
use std::collections::VecDeque;

/// Envelope flag: a shared-memory fragment; more of the message follows.
pub const FRAG_MORE: u8 = 0x80;

/// How to reach a world rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// This process.
    Loopback,
    /// Same node: the local index in the shared segment.
    Shm(usize),
    /// Another node.
    Tcp,
}

/// Per-transport counters for `LANAI_STATS`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    pub shm_msgs: u64,
    pub shm_bytes: u64,
    pub self_msgs: u64,
    pub self_bytes: u64,
    /// Times a waiting rank went to sleep, and sleeps that ended by timeout
    /// rather than a wake-up (a high share means lost or late wake-ups).
    pub sleeps: u64,
    pub sleep_timeouts: u64,
    /// Rendezvous receives whose sender copied half (`delivery::HELP`).
    pub shared_copies: u64,
    /// Rendezvous receives of a peer on this node streamed through the
    /// ring, though they could have been read (`p2p::SHARED_COPY_MIN`).
    pub streamed_local: u64,
    /// Reduces whose contributions were staged (`central_reduce.rs`).
    pub staged_reduces: u64,
    /// Reduces whose contributions went through the mailboxes in pieces
    /// (`central_reduce.rs`).
    pub pieced_reduces: u64,
    /// Collectives through the staging slots in chunks
    /// (`staged_allreduce.rs`): allreduces, reduces, broadcasts, and the
    /// rest (gathers, allgathers, scatters, all-to-alls) together.
    pub chunked_allreduces: u64,
    pub chunked_reduces: u64,
    pub chunked_bcasts: u64,
    pub chunked_gathers: u64,
    /// Small allgathers, all-to-alls and reduce-scatters that rode on a
    /// device barrier (`riding.rs`).
    pub device_colls: u64,
    /// Small broadcasts, scatters, gathers and scans through the device's
    /// mailboxes (`mail_share.rs`).
    pub mail_shares: u64,
    /// Reduces sent straight to the root (`Engine::flat_reduce_suits`).
    pub flat_reduces: u64,
    /// All-to-alls, gathers and scatters run as point-to-point transfers
    /// between the callers' buffers (`transfers.rs`).
    pub transfer_colls: u64,
}

#[derive(Debug)]
pub struct Net {
    pub routes: Vec<Route>,
    /// World rank of each local index.
    pub local_world: Vec<u32>,
    pub shm: Option<ShmNode>,
    /// Messages waiting for ring space, per local index, in FIFO order.
    backlog: Vec<VecDeque<(Envelope, Vec<u8>)>>,
    backlog_len: usize,
    /// Fragments of a message being reassembled, per local index.
    pub partial: Vec<Vec<u8>>,
    pub tcp: Option<TcpTransport>,
    pub doorbell: Option<Doorbell>,
    pub counters: Counters,
}

impl Net {
    pub fn new(routes: Vec<Route>, local_world: Vec<u32>) -> Self {
        let n = local_world.len();
        Self {
            routes,
            local_world,
            shm: None,
            backlog: (0..n).map(|_| VecDeque::new()).collect(),
            backlog_len: 0,
            partial: vec![Vec::new(); n],
            tcp: None,
            doorbell: None,
            counters: Counters::default(),
        }
    }

    /// Sends to a world rank reached by shared memory or TCP (not loopback).
    /// The payload is copied or queued; the caller may reuse it at once.
    pub fn send(&mut self, to: u32, env: &Envelope, payload: &[u8]) -> MpiResult<()> {
        match self.routes[to as usize] {
            Route::Shm(local) => self.send_shm(local, to, env, payload),
            Route::Tcp => self.send_tcp(to, env, [payload, &[]]),
            Route::Loopback => Err(MpiError::internal(
                "loopback message reached the network layer",
            )),
        }
    }

    /// Sends to world rank `to` over TCP, the payload in two parts that are
    /// written as they are.
    pub fn send_tcp(&mut self, to: u32, env: &Envelope, parts: [&[u8]; 2]) -> MpiResult<()> {
        let tcp = self
            .tcp
            .as_mut()
            .ok_or_else(|| MpiError::internal("no TCP transport"))?;
        tcp.send_parts(to, env, parts)
            .map_err(|e| MpiError::other(format!("TCP send to rank {to} failed: {e}")))
    }

    /// Sends to world rank `to`, local index `local` of our node.
    #[inline(always)]
    pub fn send_shm(
        &mut self,
        local: usize,
        to: u32,
        env: &Envelope,
        payload: &[u8],
    ) -> MpiResult<()> {
        let Some(shm) = self.shm.as_mut() else {
            return Err(MpiError::internal("no shared-memory segment"));
        };
        let max = shm.max_payload();
        self.counters.shm_msgs += 1;
        self.counters.shm_bytes += payload.len() as u64;
        if payload.len() <= max {
            // The common case, kept short: nothing queued ahead, room in the ring.
            if self.backlog_len == 0 && shm.try_send(local, env, payload) {
                if shm.peer_sleeping(local) {
                    if let Some(d) = &self.doorbell {
                        d.ring(to);
                    }
                }
                return Ok(());
            }
            self.shm_push(local, to, env, payload);
        } else {
            // Larger than a ring can hold: fragments, reassembled by
            // the receiver (one sender's cells arrive in order).
            let n = payload.len().div_ceil(max);
            for (i, part) in payload.chunks(max).enumerate() {
                let mut e = *env;
                if i + 1 < n {
                    e.flags |= FRAG_MORE;
                }
                self.shm_push(local, to, &e, part);
            }
        }
        Ok(())
    }

    fn shm_push(&mut self, local: usize, to: u32, env: &Envelope, payload: &[u8]) {
        let Some(shm) = self.shm.as_mut() else { return };
        if self.backlog[local].is_empty() && shm.try_send(local, env, payload) {
            if shm.peer_sleeping(local) {
                if let Some(d) = &self.doorbell {
                    d.ring(to);
                }
            }
        } else {
            self.backlog[local].push_back((*env, payload.to_vec()));
            self.backlog_len += 1;
        }
    }

    /// Largest payload one shared-memory message carries.
    pub fn shm_max_payload(&self) -> usize {
        self.shm.as_ref().map_or(0, ShmNode::max_payload)
    }

    /// Moves queued messages into rings that have room; true if any moved.
    #[inline(always)]
    pub fn flush_backlog(&mut self) -> bool {
        // Every progress pass asks; almost always nothing is queued.
        self.backlog_len != 0 && self.flush_queued()
    }

    #[inline(never)]
    fn flush_queued(&mut self) -> bool {
        let Some(shm) = self.shm.as_mut() else {
            return false;
        };
        let mut moved = false;
        for (local, q) in self.backlog.iter_mut().enumerate() {
            while let Some((env, data)) = q.front() {
                if !shm.try_send(local, env, data) {
                    break;
                }
                q.pop_front();
                self.backlog_len -= 1;
                moved = true;
            }
            if moved && shm.peer_sleeping(local) {
                if let Some(d) = &self.doorbell {
                    d.ring(self.local_world[local]);
                }
            }
        }
        moved
    }

    pub fn has_backlog(&self) -> bool {
        self.backlog_len > 0
    }

    /// Past `MPI_Finalize`'s barrier: drops what waits for the ring of a
    /// peer that has finished too. That peer needs nothing more from us
    /// (its last receive completed before the barrier could), typically
    /// these are answers about collective messages it lent, and it stops
    /// reading its rings once its own backlog is out: waiting for space
    /// there could last forever.
    pub fn drop_backlog_to_finished(&mut self) {
        let Some(shm) = self.shm.as_ref() else {
            return;
        };
        for (local, q) in self.backlog.iter_mut().enumerate() {
            if !q.is_empty() && shm.peer_finished(local) {
                self.backlog_len -= q.len();
                q.clear();
            }
        }
    }

    /// Whether messages to local rank `local` queue behind a full ring.
    pub fn backlogged(&self, local: usize) -> bool {
        self.backlog.get(local).is_some_and(|q| !q.is_empty())
    }
}
