//! Point-to-point protocols: eager, synchronous and rendezvous sends,
//! receives, probes and cancellation.

use super::copy_pick::Way;
use super::delivery::{Followup, SharedCopy, FAILED, FIN, HELP, HELPED, SEGMENTS};
use super::error::{MpiError, MpiResult};
use super::matching::{Held, Posted, Unexpected, ANY_SOURCE};
use super::net::Route;
use super::request::{Op, SendMode, Status};
use super::Engine;
use super::{debug_log, proc_null_status};
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::cma;
use lanai_wire::envelope::{Envelope, Kind};

/// Data bytes per strided run a rendezvous sender may list in its RTS
/// (32 bytes a run, so the list stays under an eighth of the data); a
/// more irregular layout is packed instead.
const MIN_DATA_PER_RUN: usize = 256;
/// Smallest mean piece worth a kernel iovec: finer layouts are packed,
/// since the kernel pins pages per remote piece (measured: 1 KiB pieces
/// read in place are slower than packing, 4 KiB ones faster).
const MIN_MEAN_PIECE: usize = 2048;
/// Smallest mean piece of a receive layout worth a local iovec each
/// (local pieces cost no page pinning, so far smaller than remote ones;
/// below this, as with single bytes, the iovec bookkeeping dominates).
const MIN_LOCAL_PIECE: usize = 64;
/// Bytes per chunk when a fine receive layout is filled through a bounce
/// buffer: large enough to amortise the system call, small enough to stay
/// in cache.
const BOUNCE: usize = 1 << 20;
/// Bytes per chunk of a rendezvous message streamed over TCP: one whole
/// frame, so framing and system calls cost little, and the bytes a reader
/// takes in with each chunk's header, before it knows where they land,
/// are few beside it (1 MiB against 256 KiB: 16 MiB bandwidth 3.6 against
/// 3.1 GB/s over loopback).
const TCP_CHUNK: usize = (1 << 20) - lanai_wire::frame::START_PREFIX_LEN;

/// Smallest rendezvous message whose copy the sender shares (see
/// `delivery::HELP`): one copy is bound by one core's memory bandwidth,
/// and two cores copying halves measured about 1.7 times that here.
/// Below it, when the sender would help, it streams through the ring
/// instead: a `process_vm_readv` costs about 2.2 us before its first byte
/// here, so a 64 KiB ping-pong took 6.4 us read and 3.0 us streamed, and
/// 128 KiB 11 and 5.3; at 256 KiB the shared copy wins (bandwidth 13-15
/// against 8 GB/s).
const SHARED_COPY_MIN: usize = 256 << 10;

/// Which of a communicator's contexts a point-to-point transfer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ctx {
    /// The program's.
    P2p,
    /// The collectives': transfers a collective makes between the
    /// callers' buffers (`transfers.rs`), which no receive of the program
    /// can match.
    Coll,
}

/// From this size a [`SendMode::FanIn`] message waits for its receive.
/// Sent eagerly, the members of 64 KiB gathers at 8 ranks on 8 emulated
/// nodes ran calls ahead of their root, which copied their blocks out of
/// its unexpected queue while they grew: 932 us a gather against 256.
const FAN_IN_RNDV_MIN: usize = 16 << 10;

impl Ctx {
    fn of(self, cm: &super::comm::Comm) -> u32 {
        match self {
            Ctx::P2p => cm.ctx,
            Ctx::Coll => cm.coll_ctx(),
        }
    }
}

impl Engine {
    /// Starts a send. Returns the request, or None when it already completed
    /// (the caller allocates a completed request if it needs a handle).
    pub fn start_send(
        &mut self,
        comm: usize,
        dest: i32,
        tag: i32,
        buf: UserBuf,
        mode: SendMode,
    ) -> MpiResult<Option<usize>> {
        self.start_send_on(comm, Ctx::P2p, dest, tag, buf, mode)
    }

    /// [`Engine::start_send`] in context `on` of `comm`.
    pub(super) fn start_send_on(
        &mut self,
        comm: usize,
        on: Ctx,
        dest: i32,
        tag: i32,
        buf: UserBuf,
        mode: SendMode,
    ) -> MpiResult<Option<usize>> {
        let cm = self.comms.get(comm)?;
        if dest == c::MPI_PROC_NULL {
            return Ok(None);
        }
        let dest = cm.check_rank(dest)?;
        let to = cm.peer_world(dest);
        let (ctx, src) = (on.of(cm), cm.rank);
        let len = buf.len();
        let route = self.net.routes[to as usize];
        let sync = mode == SendMode::Sync;
        let fan_in = mode == SendMode::FanIn && len >= FAN_IN_RNDV_MIN;
        let rndv = match route {
            Route::Shm(_) => {
                fan_in || len > self.settings.eager_limit.min(self.net.shm_max_payload())
            }
            // A large message waits for its receive, as in shared memory,
            // so the receiver never buffers it unasked nor we queue it all.
            Route::Tcp => fan_in || len > self.settings.tcp_eager_limit,
            Route::Loopback => false,
        };
        if rndv {
            // Only a rank of our node reads our memory; across nodes the
            // data is streamed, a chunk packed at a time.
            let local = matches!(route, Route::Shm(_));
            let bsend = if mode == SendMode::Buffered {
                Some(self.st.bsend.reserve(comm, len)?)
            } else {
                None
            };
            // The receiver reads a non-contiguous layout in place, piece by
            // piece, when the pieces are few and large enough; otherwise
            // (and for buffered sends) it reads a packed copy.
            let runs = (local && mode != SendMode::Buffered && !buf.is_contiguous())
                .then(|| cma::runs_of(&buf, len / MIN_DATA_PER_RUN, len / MIN_MEAN_PIECE))
                .flatten();
            let pack = mode == SendMode::Buffered
                || (local && !buf.is_contiguous() && runs.is_none() && self.settings.single_copy);
            let owned = pack.then(|| {
                let mut v = vec![0u8; len];
                buf.read_at(0, &mut v);
                v
            });
            let (flags, payload) = match (&owned, runs) {
                (Some(v), _) => (0, (v.as_ptr() as u64).to_le_bytes().to_vec()),
                (None, Some(r)) => (SEGMENTS, cma::encode(&r)),
                (None, None) => (0, (buf.addr() as u64).to_le_bytes().to_vec()),
            };
            let req = self.st.reqs.insert_on(
                Op::Send {
                    // A packed copy replaces the user's buffer.
                    buf: if owned.is_some() { UserBuf::EMPTY } else { buf },
                    to_world: to,
                    bsend,
                    owned,
                },
                comm,
            );
            let env = Envelope {
                kind: Kind::RndvRts,
                flags,
                ctx,
                src,
                tag,
                len: len as u64,
                cookie: self.st.reqs.cookie(req),
                sig: 0,
            };
            self.net_send(to, &env, &payload)?;
            // A buffered send is complete for the user once its data is copied.
            return Ok(if mode == SendMode::Buffered {
                self.complete_bsend_early(req)
            } else {
                Some(req)
            });
        }
        if sync {
            let req = self.st.reqs.insert_on(
                Op::Send {
                    buf,
                    to_world: to,
                    bsend: None,
                    owned: None,
                },
                comm,
            );
            let env = Envelope {
                kind: Kind::EagerSync,
                flags: 0,
                ctx,
                src,
                tag,
                len: len as u64,
                cookie: self.st.reqs.cookie(req),
                sig: 0,
            };
            self.net_send(to, &env, buf.as_slice())?;
            self.run_followups()?;
            return Ok(Some(req));
        }
        if mode == SendMode::Buffered {
            // Eager sends copy at once: the attached buffer only has to fit it.
            let share = self.st.bsend.reserve(comm, len)?;
            self.st.bsend.release(share);
        }
        let env = Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx,
            src,
            tag,
            len: len as u64,
            cookie: 0,
            sig: 0,
        };
        self.net_send(to, &env, buf.as_slice())?;
        Ok(None)
    }

    /// A buffered rendezvous send is complete for the user (its data is
    /// copied); the transfer continues in the background, freed when done.
    fn complete_bsend_early(&mut self, req: usize) -> Option<usize> {
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.freed = true;
        }
        None
    }

    /// Posts a receive; it may complete at once from the unexpected queue.
    pub fn start_recv(
        &mut self,
        comm: usize,
        src: i32,
        tag: i32,
        buf: UserBuf,
    ) -> MpiResult<usize> {
        self.start_recv_on(comm, Ctx::P2p, src, tag, buf)
    }

    /// [`Engine::start_recv`] in context `on` of `comm`.
    pub(super) fn start_recv_on(
        &mut self,
        comm: usize,
        on: Ctx,
        src: i32,
        tag: i32,
        buf: UserBuf,
    ) -> MpiResult<usize> {
        let cm = self.comms.get(comm)?;
        let ctx = on.of(cm);
        if src != ANY_SOURCE && src != c::MPI_PROC_NULL {
            cm.check_rank(src)?;
        }
        let req = self.st.reqs.insert_on(
            Op::Recv {
                buf,
                ctx,
                src,
                tag,
                filled: 0,
            },
            comm,
        );
        if src == c::MPI_PROC_NULL {
            self.st.reqs.complete(req, proc_null_status());
            return Ok(req);
        }
        if src == ANY_SOURCE
            && !cm.all_connected
            && self.net.tcp.is_some()
            && (cm.size > 1 || cm.is_inter())
        {
            // Seed 004: a wildcard receive may match anyone, so connect to everyone.
            self.connect_all_remote(comm)?;
        }
        match self.st.matcher.take_unexpected(ctx, src, tag) {
            Some(u) => self.match_unexpected(req, u)?,
            None => self.st.matcher.post(Posted { req, ctx, src, tag }),
        }
        Ok(req)
    }

    /// Completes receive `req` from an unexpected message.
    fn match_unexpected(&mut self, req: usize, u: Unexpected) -> MpiResult<()> {
        match u.held {
            Held::Data(d) => {
                self.st.fill_eager(req, &u.env, &d);
                self.st.spare.give_back(d);
                if u.env.kind == Kind::EagerSync {
                    self.st.followups.push(Followup::SyncAck {
                        to: u.from_world,
                        cookie: u.env.cookie,
                    });
                }
            }
            Held::Rndv { addr } => {
                self.st.followups.push(Followup::Fetch {
                    req,
                    from: u.from_world,
                    addr,
                    len: u.env.len,
                    cookie: u.env.cookie,
                });
                // Record the envelope so the status is right however the fetch goes.
                if let Some(r) = self.st.reqs.get_mut(req) {
                    r.status = Status {
                        source: u.env.src as i32,
                        tag: u.env.tag,
                        error: 0,
                        count: u.env.len,
                        cancelled: false,
                    };
                }
            }
        }
        self.run_followups()
    }

    pub(super) fn run_followups(&mut self) -> MpiResult<()> {
        while let Some(f) = self.st.followups.pop() {
            match f {
                Followup::SyncAck { to, cookie } => {
                    let env = control(Kind::SyncAck, 0, cookie);
                    self.net_send(to, &env, &[])?;
                }
                Followup::Fetch {
                    req,
                    from,
                    addr,
                    len,
                    cookie,
                } => self.fetch(req, from, addr, len, cookie)?,
                Followup::Stream {
                    cookie,
                    to,
                    recv_cookie,
                } => self.stream(cookie, to, recv_cookie)?,
                Followup::Help {
                    cookie,
                    to,
                    recv_cookie,
                    dst,
                    lo,
                    hi,
                } => self.help(cookie, to, recv_cookie, dst, lo..hi)?,
                Followup::Helped { recv_cookie, ok } => self.helped(recv_cookie, ok)?,
                Followup::Fin { to, cookie } => self.send_fin(to, cookie)?,
                Followup::RefAnswer { to, flags, cookie } => self.ref_answer(to, flags, cookie)?,
                Followup::SendInline { cookie } => self.send_inline(cookie)?,
                Followup::SendUsed { to } => self.send_used(to)?,
            }
        }
        Ok(())
    }

    /// Receiver side of rendezvous: one copy straight from the sender's
    /// memory (its pieces into ours), or, when the kernel refuses, ask the
    /// sender to stream.
    fn fetch(&mut self, req: usize, from: u32, addr: u64, len: u64, cookie: u64) -> MpiResult<()> {
        // A contiguous sender is the one-run case.
        let runs = self.st.take_rndv_runs(from, cookie).unwrap_or_else(|| {
            vec![cma::RemoteRun {
                addr,
                len,
                stride: 0,
                count: 1,
            }]
        });
        let Some(r) = self.st.reqs.get_mut(req) else {
            return Ok(());
        };
        let Op::Recv { buf, .. } = r.op else {
            return Ok(());
        };
        let (src, tag) = (r.status.source, r.status.tag);
        let n = (len as usize).min(buf.len());
        let error = if len as usize > buf.len() {
            c::MPI_ERR_TRUNCATE
        } else {
            c::MPI_SUCCESS
        };
        if let (true, Route::Shm(local), false) = (
            self.settings.single_copy,
            self.net.routes[from as usize],
            runs.is_empty() && len > 0,
        ) {
            let pid = self.net.shm.as_ref().map_or(0, |s| s.peer_pid(local));
            let one_run = matches!(runs[..], [cma::RemoteRun { count: 1, .. }]);
            let sender_waits = self.net.shm.as_ref().is_some_and(|s| s.peer_waiting(local));
            // Both sides on cores of their own, the sender inside MPI: it
            // answers a clear-to-send at once, so two copies through the
            // ring pipeline, or the two share one copy. Above
            // SHARED_COPY_MIN sharing wins everywhere; below, whichever
            // has cost less between these two ranks (`copy_pick`).
            let both_busy =
                one_run && buf.is_contiguous() && !self.settings.oversubscribed && sender_waits;
            if both_busy && n < SHARED_COPY_MIN {
                let copy = self.st.copy_pick.pick(local, n);
                self.st.time_copy(req, local, n, copy);
                if copy == Way::Stream {
                    self.net.counters.streamed_local += 1;
                    return self.ask_to_stream(req, from, src, tag, len, cookie);
                }
            }
            if both_busy {
                let status = Status {
                    source: src,
                    tag,
                    error,
                    count: n as u64,
                    cancelled: false,
                };
                return self.fetch_shared(req, from, pid, &runs, buf, status, len, cookie);
            }
            // Pieces too small for an iovec each come through a bounce
            // buffer and are unpacked from there.
            let read = if buf.mean_piece() < MIN_LOCAL_PIECE {
                cma::read_through(pid, &runs, &buf, n, &mut vec![0; BOUNCE.min(n)])
            } else {
                cma::read_into(pid, &runs, &buf, n)
            };
            match read {
                Ok(()) => {
                    self.st.reqs.complete(
                        req,
                        Status {
                            source: src,
                            tag,
                            error,
                            count: n as u64,
                            cancelled: false,
                        },
                    );
                    return self.send_fin(from, cookie);
                }
                Err(e) => self.single_copy_failed(e),
            }
        }
        self.ask_to_stream(req, from, src, tag, len, cookie)
    }

    /// Asks the sender of rendezvous message `cookie` to stream it into
    /// receive `req`.
    fn ask_to_stream(
        &mut self,
        req: usize,
        from: u32,
        src: i32,
        tag: i32,
        len: u64,
        cookie: u64,
    ) -> MpiResult<()> {
        // Streamed: remember the total length; chunks fill `filled`.
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.status = Status {
                source: src,
                tag,
                error: 0,
                count: len,
                cancelled: false,
            };
        }
        let recv_cookie = self.st.reqs.cookie(req);
        let env = control(Kind::RndvCts, 0, cookie);
        self.net_send(from, &env, &recv_cookie.to_le_bytes())
    }

    pub(super) fn single_copy_failed(&mut self, e: nix::Error) {
        debug_log(true, self.job.rank, || {
            format!("single-copy read failed ({e}); copying through shared memory instead")
        });
        // Only a refusal by the kernel is permanent.
        if matches!(e, nix::Error::EPERM | nix::Error::ENOSYS) {
            self.settings.single_copy = false;
        }
    }

    /// Receiver side of a shared copy: ask the sender to write the second
    /// half of the first `status.count` bytes into `buf` while we read the
    /// first half; the receive completes when both are in (`helped`).
    #[allow(clippy::too_many_arguments)]
    fn fetch_shared(
        &mut self,
        req: usize,
        from: u32,
        pid: i32,
        runs: &[cma::RemoteRun],
        buf: UserBuf,
        status: Status,
        len: u64,
        cookie: u64,
    ) -> MpiResult<()> {
        let n = status.count;
        // Page-aligned, so neither side pins a page the other one copies.
        let split = (n / 2) & !4095;
        let recv_cookie = self.st.reqs.cookie(req);
        let mut payload = [0u8; 32];
        for (i, w) in [recv_cookie, buf.addr() as u64 + split, split, n]
            .into_iter()
            .enumerate()
        {
            payload[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        let env = control(Kind::RndvCts, HELP, cookie);
        self.net_send(from, &env, &payload)?;
        let read = cma::read_into(pid, runs, &buf, split as usize);
        if let Err(e) = read {
            self.single_copy_failed(e);
        }
        self.st.shared_copies.push(SharedCopy {
            recv_cookie,
            req,
            from,
            send_cookie: cookie,
            status,
            len,
            read_ok: read.is_ok(),
        });
        Ok(())
    }

    /// Sender side of a shared copy: write `range` of send request
    /// `cookie`'s data to `dst` in the receiver, then say so. The send
    /// completes on the receiver's FIN, which follows our word.
    fn help(
        &mut self,
        cookie: u64,
        to: u32,
        recv_cookie: u64,
        dst: u64,
        range: std::ops::Range<u64>,
    ) -> MpiResult<()> {
        let pid = match self.net.routes[to as usize] {
            Route::Shm(local) => self.net.shm.as_ref().map_or(0, |s| s.peer_pid(local)),
            _ => 0,
        };
        let ok = match self
            .st
            .reqs
            .by_cookie(cookie)
            .and_then(|i| self.st.reqs.get(i))
        {
            Some(r) => match &r.op {
                Op::Send { buf, owned, .. } => {
                    let data = owned.as_deref().unwrap_or_else(|| buf.as_slice());
                    let part = usize::try_from(range.start)
                        .ok()
                        .zip(usize::try_from(range.end).ok())
                        .and_then(|(lo, hi)| data.get(lo..hi));
                    pid > 0 && part.is_some_and(|p| cma::write_to(pid, p, dst).is_ok())
                }
                _ => false,
            },
            None => false,
        };
        let env = control(
            Kind::RndvData,
            if ok { HELPED } else { HELPED | FAILED },
            recv_cookie,
        );
        self.net_send(to, &env, &[])
    }

    /// The sender's part of shared copy `recv_cookie` is done (`ok`) or
    /// failed: complete the receive, or have the whole message streamed.
    fn helped(&mut self, recv_cookie: u64, ok: bool) -> MpiResult<()> {
        let Some(i) = self
            .st
            .shared_copies
            .iter()
            .position(|s| s.recv_cookie == recv_cookie)
        else {
            return Ok(());
        };
        let s = self.st.shared_copies.swap_remove(i);
        if ok && s.read_ok {
            self.net.counters.shared_copies += 1;
            self.st.reqs.complete(s.req, s.status);
            self.st.copy_done(s.req);
            return self.send_fin(s.from, s.send_cookie);
        }
        // The stream that follows is no measure of either copy.
        self.st.copy_forget(s.req);
        // Either copy failed: the sender streams everything instead (its
        // send is still open, since no FIN went out).
        if let Some(r) = self.st.reqs.get_mut(s.req) {
            r.status = Status {
                count: s.len,
                error: 0,
                ..s.status
            };
            if let Op::Recv { filled, .. } = &mut r.op {
                *filled = 0;
            }
        }
        let env = control(Kind::RndvCts, 0, s.send_cookie);
        self.net_send(s.from, &env, &recv_cookie.to_le_bytes())
    }

    /// Tells a rendezvous sender its message is received.
    fn send_fin(&mut self, to: u32, cookie: u64) -> MpiResult<()> {
        let env = control(Kind::RndvData, FIN, cookie);
        self.net_send(to, &env, &[])
    }

    /// Sender side of a streamed rendezvous: queue every chunk, then complete.
    fn stream(&mut self, cookie: u64, to: u32, recv_cookie: u64) -> MpiResult<()> {
        let Some(idx) = self.st.reqs.by_cookie(cookie) else {
            return Ok(());
        };
        let (buf, owned) = match self.st.reqs.get_mut(idx).map(|r| &mut r.op) {
            Some(Op::Send { buf, owned, .. }) => (*buf, owned.take()),
            _ => return Ok(()),
        };
        let len = owned.as_ref().map_or(buf.len(), Vec::len);
        let chunk = match self.net.routes[to as usize] {
            Route::Shm(_) => self.net.shm_max_payload().max(1),
            _ => TCP_CHUNK,
        };
        let env = |n: usize| Envelope {
            kind: Kind::RndvData,
            flags: 0,
            ctx: 0,
            src: 0,
            tag: 0,
            len: n as u64,
            cookie: recv_cookie,
            sig: 0,
        };
        // A contiguous buffer goes as it lies, with no copy of ours.
        if owned.is_none() && buf.is_contiguous() {
            for piece in buf.as_slice().chunks(chunk) {
                self.net_send(to, &env(piece.len()), piece)?;
            }
            self.st.finish_send(idx);
            return Ok(());
        }
        // Chunk by chunk: a non-contiguous buffer is packed a chunk at a time.
        let mut part = vec![0u8; chunk.min(len)];
        let mut at = 0;
        while at < len {
            let n = match &owned {
                Some(v) => {
                    let n = chunk.min(len - at);
                    part[..n].copy_from_slice(&v[at..at + n]);
                    n
                }
                None => buf.read_at(at, &mut part),
            };
            if n == 0 {
                break;
            }
            self.net_send(to, &env(n), &part[..n])?;
            at += n;
        }
        self.st.finish_send(idx);
        Ok(())
    }

    /// Probe: the envelope of the first matching unexpected message.
    pub fn iprobe(&mut self, comm: usize, src: i32, tag: i32) -> MpiResult<Option<Status>> {
        let cm = self.comms.get(comm)?;
        let ctx = cm.ctx;
        if src == c::MPI_PROC_NULL {
            return Ok(Some(proc_null_status()));
        }
        if src != ANY_SOURCE {
            cm.check_rank(src)?;
        }
        self.progress(false)?;
        Ok(self
            .st
            .matcher
            .peek_unexpected(ctx, src, tag)
            .map(|u| Status {
                source: u.env.src as i32,
                tag: u.env.tag,
                error: 0,
                count: u.env.len,
                cancelled: false,
            }))
    }

    /// Matched probe: takes the message out of matching.
    pub fn improbe(
        &mut self,
        comm: usize,
        src: i32,
        tag: i32,
    ) -> MpiResult<Option<(Status, Unexpected)>> {
        if self.iprobe(comm, src, tag)?.is_none() {
            return Ok(None);
        }
        let ctx = self.comms.get(comm)?.ctx;
        Ok(self.st.matcher.take_unexpected(ctx, src, tag).map(|u| {
            (
                Status {
                    source: u.env.src as i32,
                    tag: u.env.tag,
                    error: 0,
                    count: u.env.len,
                    cancelled: false,
                },
                u,
            )
        }))
    }

    /// Receives a message taken by a matched probe.
    pub fn mrecv(&mut self, msg: Unexpected, buf: UserBuf, comm: usize) -> MpiResult<usize> {
        let req = self.st.reqs.insert_on(
            Op::Recv {
                buf,
                ctx: msg.env.ctx,
                src: msg.env.src as i32,
                tag: msg.env.tag,
                filled: 0,
            },
            comm,
        );
        self.match_unexpected(req, msg)?;
        Ok(req)
    }

    /// Cancels a receive that has not matched yet.
    pub fn cancel(&mut self, req: usize) -> MpiResult<()> {
        let Some(r) = self.st.reqs.get(req) else {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "invalid request"));
        };
        if matches!(r.op, Op::Recv { .. }) && !r.done && self.st.matcher.cancel(req) {
            self.st.reqs.complete(
                req,
                Status {
                    cancelled: true,
                    source: c::MPI_ANY_SOURCE,
                    tag: c::MPI_ANY_TAG,
                    ..Status::default()
                },
            );
        }
        // Sends that already left cannot be cancelled; MPI allows that outcome.
        Ok(())
    }
}

/// A control message of the rendezvous and synchronous protocols: no
/// matching fields, no length, only the cookie naming the request.
pub(super) fn control(kind: Kind, flags: u8, cookie: u64) -> Envelope {
    Envelope {
        kind,
        flags,
        ctx: 0,
        src: 0,
        tag: 0,
        len: 0,
        cookie,
        sig: 0,
    }
}
