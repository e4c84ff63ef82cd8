//! What arriving messages do: matching them against posted receives,
//! completing sends on acknowledgement, and queuing the follow-up work
//! (acknowledgements, rendezvous reads) that needs a transport.

use super::copy_pick::{CopyPick, Way};
use super::matching::{Held, Matcher, Unexpected};
use super::request::{Op, Requests, Status};
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::cma::{self, RemoteRun};
use lanai_wire::envelope::{Envelope, Kind};
use std::time::Instant;

/// Envelope flag on `RndvData`: the transfer is complete (single copy done).
pub const FIN: u8 = 1;
/// Envelope flag on `RndvRts`: the payload lists the sender's pieces
/// (`cma::encode`) instead of one address.
pub const SEGMENTS: u8 = 2;
/// Envelope flag on `RndvCts`: a shared copy. Instead of streaming, the
/// sender writes one range of the message straight into the receiver's
/// memory while the receiver reads the rest, so two cores copy at once.
/// Payload: the receive's cookie, the destination address of the range,
/// and the range's first and end byte, 8 little-endian bytes each.
pub const HELP: u8 = 4;
/// Envelope flag on `RndvData` to the receive's cookie: the sender's range
/// of a shared copy is in place (with [`FAILED`]: it could not write it).
pub const HELPED: u8 = 4;
pub const FAILED: u8 = 8;

/// Work that delivery found but could not do while a transport was borrowed.
#[derive(Debug)]
pub enum Followup {
    SyncAck {
        to: u32,
        cookie: u64,
    },
    /// Pull a matched rendezvous message into receive request `req`.
    Fetch {
        req: usize,
        from: u32,
        addr: u64,
        len: u64,
        cookie: u64,
    },
    /// The receiver asked us (no single copy) to stream send request `cookie`'s data.
    Stream {
        cookie: u64,
        to: u32,
        recv_cookie: u64,
    },
    /// The receiver asked us to write bytes `lo..hi` of send request
    /// `cookie` to `dst` in its memory (see [`HELP`]).
    Help {
        cookie: u64,
        to: u32,
        recv_cookie: u64,
        dst: u64,
        lo: u64,
        hi: u64,
    },
    /// The sender's range of shared copy `recv_cookie` is in place (`ok`).
    Helped {
        recv_cookie: u64,
        ok: bool,
    },
    /// Tell the sender its rendezvous message is fully received.
    Fin {
        to: u32,
        cookie: u64,
    },
    /// Answer a collective message passed by reference (`coll_ref.rs`).
    RefAnswer {
        to: u32,
        flags: u8,
        cookie: u64,
    },
    /// Send world rank `to` the `USED` answers we owe it (`used_batch.rs`).
    SendUsed {
        to: u32,
    },
    /// A receiver could not read our reference `cookie`: send it inline.
    SendInline {
        cookie: u64,
    },
}

/// A receive whose sender writes part of the data (see [`HELP`]): it
/// completes when our read of the rest and the sender's write are both done.
#[derive(Debug)]
pub struct SharedCopy {
    pub recv_cookie: u64,
    pub req: usize,
    pub from: u32,
    pub send_cookie: u64,
    /// The status to complete with.
    pub status: Status,
    /// The message's length as sent (a fallback to streaming needs it).
    pub len: u64,
    pub read_ok: bool,
}

/// Receive-side state that transports deliver into.
#[derive(Debug, Default)]
pub struct State {
    pub reqs: Requests,
    pub matcher: Matcher,
    pub followups: Vec<Followup>,
    pub colls: super::coll::Colls,
    /// `MPI_Comm_idup` agreements in flight.
    pub idups: Vec<super::comm_idup::Idup>,
    /// Collectives in flight as point-to-point transfers (`transfers.rs`).
    pub transfers: Vec<super::transfers::Transfers>,
    /// Intercommunicator collectives in flight (chains of steps).
    pub inter_ops: Vec<super::intercomm::InterOp>,
    /// Persistent requests and the child operation running each start.
    pub persistent_children: Vec<(usize, usize)>,
    /// Requests that complete when others have (`composite.rs`).
    pub composites: Vec<super::composite::Composite>,
    /// The attached buffers of buffered sends and what pending sends hold.
    pub bsend: super::bsend_pool::Pools,
    /// Piece lists of arrived non-contiguous RTSs, by (sender, cookie),
    /// until fetched (empty: the list was malformed; stream instead).
    pub rndv_runs: Vec<(u32, u64, Vec<RemoteRun>)>,
    /// Receives waiting for their sender's part of a shared copy.
    pub shared_copies: Vec<SharedCopy>,
    /// Which copy rendezvous receives within the node ask for.
    pub copy_pick: CopyPick,
    /// Receives whose copy is being timed for `copy_pick`.
    pub timed_copies: Vec<TimedCopy>,
    /// Eager TCP messages being read into place, by sender (`landing.rs`).
    pub landing: Vec<(u32, super::landing::Landing)>,
    /// Buffers of matched unexpected messages, to hold the next ones.
    pub spare: super::landing::Spare,
}

/// A rendezvous receive whose transfer `copy_pick` learns from.
#[derive(Debug)]
pub struct TimedCopy {
    req: usize,
    peer: usize,
    len: usize,
    copy: Way,
    start: Instant,
}

impl State {
    /// Starts timing receive `req`'s transfer of `len` bytes from local
    /// peer `peer` by `copy`.
    pub fn time_copy(&mut self, req: usize, peer: usize, len: usize, copy: Way) {
        self.timed_copies.push(TimedCopy {
            req,
            peer,
            len,
            copy,
            start: Instant::now(),
        });
    }

    /// Receive `req` is complete: if its transfer was timed, learn from it.
    pub fn copy_done(&mut self, req: usize) {
        if let Some(i) = self.timed_copies.iter().position(|t| t.req == req) {
            let t = self.timed_copies.swap_remove(i);
            let nanos = u64::try_from(t.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.copy_pick.record(t.peer, t.len, t.copy, nanos);
        }
    }

    /// Receive `req`'s transfer changed course: it measures nothing.
    pub fn copy_forget(&mut self, req: usize) {
        self.timed_copies.retain(|t| t.req != req);
    }

    /// Handles one arriving message. `payload` may borrow transport memory.
    pub fn deliver(&mut self, env: Envelope, from: u32, payload: &[u8]) {
        match env.kind {
            // A synchronous send is acknowledged when it matches, now or later.
            Kind::Eager | Kind::EagerSync => match self.matcher.take_posted(&env) {
                Some(p) => {
                    self.fill_eager(p.req, &env, payload);
                    if env.kind == Kind::EagerSync {
                        self.followups.push(Followup::SyncAck {
                            to: from,
                            cookie: env.cookie,
                        });
                    }
                }
                None => {
                    let data = self.spare.copy_of(payload);
                    self.matcher.push_unexpected(Unexpected {
                        env,
                        from_world: from,
                        held: Held::Data(data),
                    })
                }
            },
            Kind::RndvRts => {
                let addr = if env.flags & SEGMENTS != 0 {
                    let runs = cma::decode(payload, env.len).unwrap_or_default();
                    let first = runs.first().map_or(0, |r| r.addr);
                    self.rndv_runs.push((from, env.cookie, runs));
                    first
                } else {
                    payload
                        .get(..8)
                        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                };
                match self.matcher.take_posted(&env) {
                    Some(p) => {
                        // The status names the matched envelope even before
                        // the data is fetched (wildcard receives need it).
                        if let Some(r) = self.reqs.get_mut(p.req) {
                            r.status = Status {
                                source: env.src as i32,
                                tag: env.tag,
                                error: 0,
                                count: env.len,
                                cancelled: false,
                            };
                        }
                        self.followups.push(Followup::Fetch {
                            req: p.req,
                            from,
                            addr,
                            len: env.len,
                            cookie: env.cookie,
                        })
                    }
                    None => self.matcher.push_unexpected(Unexpected {
                        env,
                        from_world: from,
                        held: Held::Rndv { addr },
                    }),
                }
            }
            Kind::SyncAck => self.complete_send(env.cookie),
            Kind::RndvCts => {
                let word = |i: usize| {
                    payload
                        .get(i * 8..i * 8 + 8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                };
                let recv_cookie = word(0).unwrap_or(0);
                self.followups
                    .push(match (env.flags & HELP != 0, word(1), word(2), word(3)) {
                        (true, Some(dst), Some(lo), Some(hi)) => Followup::Help {
                            cookie: env.cookie,
                            to: from,
                            recv_cookie,
                            dst,
                            lo,
                            hi,
                        },
                        _ => Followup::Stream {
                            cookie: env.cookie,
                            to: from,
                            recv_cookie,
                        },
                    });
            }
            Kind::RndvData if env.flags & HELPED != 0 => self.followups.push(Followup::Helped {
                recv_cookie: env.cookie,
                ok: env.flags & FAILED == 0,
            }),
            Kind::RndvData if env.flags & FIN != 0 => self.complete_send(env.cookie),
            Kind::RndvData => self.stream_chunk(&env, payload),
            Kind::Coll => self.deliver_coll(
                env,
                from,
                super::coll::Msg::Whole(std::borrow::Cow::Borrowed(payload)),
            ),
            Kind::CollNotice => self.coll_notice(&env, payload),
        }
    }

    /// The piece list of a non-contiguous RTS from `from`, if it had one.
    pub fn take_rndv_runs(&mut self, from: u32, cookie: u64) -> Option<Vec<RemoteRun>> {
        let i = self
            .rndv_runs
            .iter()
            .position(|(f, k, _)| *f == from && *k == cookie)?;
        Some(self.rndv_runs.swap_remove(i).2)
    }

    fn complete_send(&mut self, cookie: u64) {
        if let Some(idx) = self.reqs.by_cookie(cookie) {
            self.finish_send(idx);
        }
    }

    /// Completes a send request, returning its share of the bsend buffer.
    pub fn finish_send(&mut self, idx: usize) {
        if let Some(Op::Send { bsend, .. }) = self.reqs.get_mut(idx).map(|r| &mut r.op) {
            if let Some(share) = bsend.take() {
                self.bsend.release(share);
            }
        }
        let st = self.reqs.get(idx).map(|r| r.status).unwrap_or_default();
        self.reqs.complete(idx, st);
    }

    /// Copies an eager payload into a matched receive and completes it.
    pub fn fill_eager(&mut self, req: usize, env: &Envelope, payload: &[u8]) {
        let Some(r) = self.reqs.get(req) else { return };
        let Op::Recv { buf, .. } = r.op else { return };
        let n = buf.write(payload);
        self.eager_done(req, env, n);
    }

    /// Completes receive `req` of eager message `env`, `n` bytes of which
    /// are in its buffer.
    #[inline(always)]
    pub(super) fn eager_done(&mut self, req: usize, env: &Envelope, n: usize) {
        let Some(r) = self.reqs.get(req) else { return };
        let Op::Recv { buf, .. } = r.op else { return };
        let error = if env.len as usize > buf.len() {
            c::MPI_ERR_TRUNCATE
        } else {
            c::MPI_SUCCESS
        };
        self.reqs.complete(
            req,
            Status {
                source: env.src as i32,
                tag: env.tag,
                error,
                count: n as u64,
                cancelled: false,
            },
        );
    }

    /// One chunk of a streamed rendezvous message (no single copy).
    fn stream_chunk(&mut self, env: &Envelope, payload: &[u8]) {
        if let Some((idx, buf, filled)) = self.streamed_recv(env) {
            buf.write_at(filled, payload);
            self.stream_advance(idx, payload.len());
        }
    }

    /// The receive request the rendezvous stream `env` belongs to, its
    /// buffer, and how much of it came already.
    pub(super) fn streamed_recv(&self, env: &Envelope) -> Option<(usize, UserBuf, usize)> {
        if env.kind != Kind::RndvData || env.flags != 0 {
            return None;
        }
        let idx = self.reqs.by_cookie(env.cookie)?;
        match self.reqs.get(idx)?.op {
            Op::Recv { buf, filled, .. } => Some((idx, buf, filled as usize)),
            _ => None,
        }
    }

    /// `n` more bytes of receive request `idx`'s stream are in place.
    pub(super) fn stream_advance(&mut self, idx: usize, n: usize) {
        let Some(r) = self.reqs.get_mut(idx) else {
            return;
        };
        let Op::Recv { buf, filled, .. } = &mut r.op else {
            return;
        };
        *filled += n as u64;
        if *filled >= r.status.count {
            let total = r.status.count;
            let got = total.min(buf.len() as u64);
            let error = if total > buf.len() as u64 {
                c::MPI_ERR_TRUNCATE
            } else {
                c::MPI_SUCCESS
            };
            let st = Status {
                count: got,
                error,
                ..r.status
            };
            self.reqs.complete(idx, st);
            if !self.timed_copies.is_empty() {
                self.copy_done(idx);
            }
        }
    }
}
