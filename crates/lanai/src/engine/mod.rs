//! The progress engine: requests, matching, eager and rendezvous protocols,
//! and the wait policy. Safe code only; user memory is reached through
//! [`UserBuf`], whose contract the ABI layer upholds.
#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod coll;
pub mod comm;
pub mod doorbell;
pub mod error;
pub mod matching;
pub mod net;
pub mod request;

use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::{cma, Segment, ShmNode};
use bootstrap::{JobInfo, Pmi};
use comm::Comms;
use error::{MpiError, MpiResult};
use lanai_common::knobs;
use lanai_wire::envelope::{Envelope, Kind};
use matching::{Held, Matcher, Posted, Unexpected, ANY_SOURCE};
use net::{Net, Route};
use request::{Op, Persistent, Requests, SendMode, Status};
use std::time::{Duration, Instant};

/// Envelope flag on `RndvData`: the transfer is complete (single copy done).
const FIN: u8 = 1;

/// Work that delivery found but could not do while a transport was borrowed.
#[derive(Debug)]
enum Followup {
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
}

/// Receive-side state that transports deliver into.
#[derive(Debug, Default)]
pub struct State {
    pub reqs: Requests,
    pub matcher: Matcher,
    followups: Vec<Followup>,
    pub colls: coll::Colls,
    /// Persistent requests and the child operation running each start.
    pub persistent_children: Vec<(usize, usize)>,
    /// Bytes of the `MPI_Buffer_attach` buffer held by pending buffered sends.
    pub bsend_used: usize,
}

impl State {
    /// Handles one arriving message. `payload` may borrow transport memory.
    fn deliver(&mut self, env: Envelope, from: u32, payload: &[u8]) {
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
                None => self.matcher.push_unexpected(Unexpected {
                    env,
                    from_world: from,
                    held: Held::Data(payload.to_vec()),
                }),
            },
            Kind::RndvRts => {
                let addr = payload
                    .get(..8)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
                match self.matcher.take_posted(&env) {
                    Some(p) => self.followups.push(Followup::Fetch {
                        req: p.req,
                        from,
                        addr,
                        len: env.len,
                        cookie: env.cookie,
                    }),
                    None => self.matcher.push_unexpected(Unexpected {
                        env,
                        from_world: from,
                        held: Held::Rndv { addr },
                    }),
                }
            }
            Kind::SyncAck => self.complete_send(env.cookie),
            Kind::RndvCts => {
                let recv_cookie = payload
                    .get(..8)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
                self.followups.push(Followup::Stream {
                    cookie: env.cookie,
                    to: from,
                    recv_cookie,
                });
            }
            Kind::RndvData if env.flags & FIN != 0 => self.complete_send(env.cookie),
            Kind::RndvData => self.stream_chunk(&env, payload),
            Kind::Coll => self
                .colls
                .deliver(env.ctx, env.tag as u32, env.src, payload),
        }
    }

    fn complete_send(&mut self, cookie: u64) {
        if let Some(idx) = self.reqs.by_cookie(cookie) {
            self.finish_send(idx);
        }
    }

    /// Completes a send request, returning its share of the bsend buffer.
    fn finish_send(&mut self, idx: usize) {
        if let Some(Op::Send { bsend_bytes, .. }) = self.reqs.get(idx).map(|r| &r.op) {
            self.bsend_used = self.bsend_used.saturating_sub(*bsend_bytes);
        }
        let st = self.reqs.get(idx).map(|r| r.status).unwrap_or_default();
        self.reqs.complete(idx, st);
    }

    /// Copies an eager payload into a matched receive and completes it.
    fn fill_eager(&mut self, req: usize, env: &Envelope, payload: &[u8]) {
        let Some(r) = self.reqs.get(req) else { return };
        let Op::Recv { buf, .. } = r.op else { return };
        let n = buf.write(payload);
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
        let Some(idx) = self.reqs.by_cookie(env.cookie) else {
            return;
        };
        let Some(r) = self.reqs.get_mut(idx) else {
            return;
        };
        let Op::Recv { buf, filled, .. } = &mut r.op else {
            return;
        };
        let off = *filled as usize;
        if off < buf.len() {
            let n = payload.len().min(buf.len() - off);
            buf.as_mut_slice()[off..off + n].copy_from_slice(&payload[..n]);
        }
        *filled += payload.len() as u64;
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
        }
    }
}

/// Knob-derived settings, read once at start-up.
#[derive(Debug, Clone)]
pub struct Settings {
    pub eager_limit: usize,
    pub single_copy: bool,
    pub spin: u32,
    pub oversubscribed: bool,
    pub stats: bool,
    pub debug: bool,
    pub static_connect: bool,
    pub algos: coll::Algorithms,
}

/// Tag upper bound advertised through `MPI_TAG_UB`.
pub const TAG_UB: i32 = (1 << 30) - 1;

pub struct Engine {
    pub job: JobInfo,
    pub pmi: Option<Pmi>,
    pub net: Net,
    pub st: State,
    pub comms: Comms,
    pub settings: Settings,
    /// `MPI_Buffer_attach`: (address, size).
    pub bsend_buffer: Option<(usize, usize)>,
    /// Messages taken by `MPI_Mprobe`/`MPI_Improbe`, by message handle slot.
    pub probed: Vec<Option<Unexpected>>,
    tick: u32,
    last_liveness: Instant,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("rank", &self.job.rank)
            .field("size", &self.job.size)
            .finish()
    }
}

fn debug_log(on: bool, rank: u32, msg: impl FnOnce() -> String) {
    if on {
        lanai_common::say!("lanai: rank {rank}: {}", msg());
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Engine {
    /// `MPI_Init`: bootstrap through PMI (or as a singleton), map the node's
    /// segment, open the TCP listener when the job spans nodes.
    pub fn init(pmi_stream: Option<std::fs::File>) -> MpiResult<Self> {
        let (mut pmi, job) = match pmi_stream {
            Some(s) => {
                let (p, j) = bootstrap::from_pmi(s)?;
                (Some(p), j)
            }
            None => (None, bootstrap::singleton()?),
        };
        let local = job.local_ranks();
        let my_local = local.iter().position(|&r| r == job.rank).unwrap_or(0);
        let spin_knob = knobs::get(&knobs::SPIN);
        let oversubscribed = local.len() > cores();
        let settings = Settings {
            eager_limit: knobs::get_usize(&knobs::EAGER_LIMIT).map_err(MpiError::other)?,
            single_copy: match knobs::get(&knobs::SINGLE_COPY).as_str() {
                "auto" => true,
                "off" => false,
                other => {
                    return Err(MpiError::other(format!(
                        "LANAI_SINGLE_COPY={other:?}: the choices are auto, off"
                    )))
                }
            },
            spin: match spin_knob.as_str() {
                "auto" if oversubscribed => 50,
                "auto" => 20_000,
                n => n.parse().map_err(|_| {
                    MpiError::other(format!("LANAI_SPIN={n:?}: expected 'auto' or a count"))
                })?,
            },
            oversubscribed,
            stats: knobs::get_bool(&knobs::STATS),
            debug: knobs::get_bool(&knobs::DEBUG),
            static_connect: match knobs::get(&knobs::CONNECT).as_str() {
                "static" => true,
                "ondemand" => false,
                other => {
                    return Err(MpiError::other(format!(
                        "LANAI_CONNECT={other:?}: the choices are ondemand, static"
                    )))
                }
            },
            algos: coll::Algorithms::from_knobs()?,
        };
        let routes = (0..job.size)
            .map(|r| {
                if r == job.rank {
                    Route::Loopback
                } else if job.node_of[r as usize] == job.my_node() {
                    Route::Shm(local.iter().position(|&x| x == r).unwrap_or(0))
                } else {
                    Route::Tcp
                }
            })
            .collect();
        let mut net = Net::new(routes, local.clone());
        let ring_bytes = knobs::get_usize(&knobs::SHM_RING_BYTES).map_err(MpiError::other)?;
        let seg_name =
            lanai_common::shm_names::segment_name(job.uid, job.job_pid, &job.nonce, job.my_node());
        let seg_len = crate::shm::ring::segment_len(local.len(), ring_bytes);
        let multi_node = job.node_count() > 1;

        // The node's first rank creates the segment before the PMI barrier;
        // the others map it after.
        if local.len() > 1 && my_local == 0 {
            lanai_common::shm_names::sweep(job.uid, None);
            let seg = Segment::create(&seg_name, seg_len).map_err(|e| {
                MpiError::other(format!("cannot create shared memory {seg_name}: {e}"))
            })?;
            let node = ShmNode::new(seg, local.len(), 0, ring_bytes).map_err(MpiError::other)?;
            node.init();
            net.shm = Some(node);
        }
        if local.len() > 1 {
            let d = doorbell::Doorbell::bind(&job.name_prefix(), job.rank)
                .map_err(|e| MpiError::other(format!("cannot create wake-up socket: {e}")))?;
            net.doorbell = Some(d);
        }
        let mut secret = Vec::new();
        if let Some(p) = pmi.as_mut() {
            if multi_node {
                bootstrap::secret_before_barrier(p, job.rank)?;
                // The real secret arrives after the barrier; see set_secret.
                let tcp = Self::open_tcp(&job, &settings, random_hex_bytes()?)?;
                bootstrap::pmi_put(
                    p,
                    &bootstrap::card_key(job.rank),
                    &tcp.local_addr().to_string(),
                )?;
                net.tcp = Some(tcp);
            }
            bootstrap::pmi_barrier(p)?;
            if multi_node {
                secret = bootstrap::secret_after_barrier(p)?;
            }
        }
        if let Some(tcp) = net.tcp.as_mut() {
            tcp.set_secret(secret)
                .map_err(|e| MpiError::other(format!("TCP transport: {e}")))?;
        }
        if local.len() > 1 {
            if my_local != 0 {
                let seg = Segment::open(&seg_name, seg_len).map_err(|e| {
                    MpiError::other(format!("cannot map shared memory {seg_name}: {e}"))
                })?;
                let node = ShmNode::new(seg, local.len(), my_local, ring_bytes)
                    .map_err(MpiError::other)?;
                node.validate().map_err(MpiError::other)?;
                net.shm = Some(node);
            }
            if let Some(node) = net.shm.as_ref() {
                node.set_pid(std::process::id() as i32);
                if node.attach() {
                    // Every local rank has mapped it: the name is no longer needed.
                    let _ = Segment::unlink(&seg_name);
                }
            }
        }
        if let (Some(tcp), Some(d)) = (net.tcp.as_mut(), net.doorbell.as_ref()) {
            tcp.add_wake_fd(d.fd())
                .map_err(|e| MpiError::other(format!("cannot watch wake-up socket: {e}")))?;
        }
        let errh = c::MPI_ERRORS_ARE_FATAL;
        let mut eng = Engine {
            comms: Comms::new(job.rank, job.size, errh),
            job,
            pmi,
            net,
            st: State::default(),
            settings,
            bsend_buffer: None,
            probed: Vec::new(),
            tick: 0,
            last_liveness: Instant::now(),
        };
        if eng.settings.static_connect {
            eng.connect_all_remote(comm::WORLD)?;
            let deadline = Instant::now() + Duration::from_secs(60);
            while !eng.all_remote_connected() {
                eng.progress(true)?;
                if Instant::now() > deadline {
                    return Err(MpiError::other(
                        "LANAI_CONNECT=static: timed out connecting to every rank",
                    ));
                }
            }
        }
        debug_log(eng.settings.debug, eng.job.rank, || {
            format!(
                "up: size {} node {} local {}/{} oversubscribed {}",
                eng.job.size,
                eng.job.my_node(),
                my_local,
                local.len(),
                eng.settings.oversubscribed
            )
        });
        Ok(eng)
    }

    fn open_tcp(job: &JobInfo, settings: &Settings, secret: Vec<u8>) -> MpiResult<TcpTransport> {
        let knob = knobs::get(&knobs::TCP_ADDR);
        let ip: std::net::IpAddr = if knob != "auto" {
            knob.parse().map_err(|_| {
                MpiError::other(format!("LANAI_TCP_ADDR={knob:?} is not an IP address"))
            })?
        } else if job.single_host {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            host_ip().unwrap_or(std::net::Ipv4Addr::LOCALHOST.into())
        };
        let mut cfg = lanai_tcp::Config::new(job.rank, job.size, secret);
        cfg.bind_ip = ip;
        cfg.log = settings.debug;
        TcpTransport::bind(cfg)
            .map_err(|e| MpiError::other(format!("cannot open TCP listener on {ip}: {e}")))
    }

    /// Looks up a remote rank's address through PMI the first time it is needed.
    fn ensure_addr(&mut self, to: u32) -> MpiResult<()> {
        let Some(tcp) = self.net.tcp.as_mut() else {
            return Err(MpiError::internal("no TCP transport"));
        };
        if tcp.has_peer_addr(to) {
            return Ok(());
        }
        let pmi = self
            .pmi
            .as_mut()
            .ok_or_else(|| MpiError::internal("no PMI for address lookup"))?;
        let card = bootstrap::pmi_get(pmi, &bootstrap::card_key(to))?
            .ok_or_else(|| MpiError::other(format!("rank {to} published no TCP address")))?;
        let addr = card
            .parse()
            .map_err(|_| MpiError::other(format!("rank {to} published a bad address {card:?}")))?;
        tcp.set_peer_addr(to, addr);
        Ok(())
    }

    /// Sends one message to a world rank over whatever reaches it.
    pub fn net_send(&mut self, to: u32, env: &Envelope, payload: &[u8]) -> MpiResult<()> {
        match self.net.routes[to as usize] {
            Route::Loopback => {
                self.net.counters.self_msgs += 1;
                self.net.counters.self_bytes += payload.len() as u64;
                self.st.deliver(*env, to, payload);
                Ok(())
            }
            Route::Tcp => {
                self.ensure_addr(to)?;
                self.net.send(to, env, payload)
            }
            Route::Shm(_) => self.net.send(to, env, payload),
        }
    }

    fn connect_all_remote(&mut self, comm: usize) -> MpiResult<()> {
        let c = self.comms.get(comm)?.clone();
        for r in 0..c.size {
            let w = c.world_rank(r);
            if self.net.routes[w as usize] == Route::Tcp {
                self.ensure_addr(w)?;
                if let Some(tcp) = self.net.tcp.as_mut() {
                    tcp.connect(w)
                        .map_err(|e| MpiError::other(format!("cannot connect to rank {w}: {e}")))?;
                }
            }
        }
        self.comms.get_mut(comm)?.all_connected = true;
        Ok(())
    }

    fn all_remote_connected(&self) -> bool {
        let Some(tcp) = self.net.tcp.as_ref() else {
            return true;
        };
        (0..self.job.size).all(|r| self.net.routes[r as usize] != Route::Tcp || tcp.is_connected(r))
    }

    // ---- point-to-point ----

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
        let cm = self.comms.get(comm)?;
        if dest == c::MPI_PROC_NULL {
            return Ok(None);
        }
        let dest = cm.check_rank(dest)?;
        let to = cm.world_rank(dest);
        let (ctx, src) = (cm.ctx, cm.rank);
        let len = buf.len();
        let route = self.net.routes[to as usize];
        let sync = mode == SendMode::Sync;
        let rndv = matches!(route, Route::Shm(_))
            && len > self.settings.eager_limit.min(self.net.shm_max_payload());
        if rndv {
            let (owned, bsend_bytes) = if mode == SendMode::Buffered {
                (Some(buf.as_slice().to_vec()), self.reserve_bsend(len)?)
            } else {
                (None, 0)
            };
            let req = self.st.reqs.insert(Op::Send {
                buf,
                to_world: to,
                bsend_bytes,
                owned,
            });
            let addr = match &self.st.reqs.get(req).map(|r| &r.op) {
                Some(Op::Send { owned: Some(v), .. }) => v.as_ptr() as u64,
                _ => buf.addr() as u64,
            };
            let env = Envelope {
                kind: Kind::RndvRts,
                flags: 0,
                ctx,
                src,
                tag,
                len: len as u64,
                cookie: self.st.reqs.cookie(req),
            };
            self.net_send(to, &env, &addr.to_le_bytes())?;
            // A buffered send is complete for the user once its data is copied.
            return Ok(if mode == SendMode::Buffered {
                self.complete_bsend_early(req)
            } else {
                Some(req)
            });
        }
        if sync {
            let req = self.st.reqs.insert(Op::Send {
                buf,
                to_world: to,
                bsend_bytes: 0,
                owned: None,
            });
            let env = Envelope {
                kind: Kind::EagerSync,
                flags: 0,
                ctx,
                src,
                tag,
                len: len as u64,
                cookie: self.st.reqs.cookie(req),
            };
            self.net_send(to, &env, buf.as_slice())?;
            self.run_followups()?;
            return Ok(Some(req));
        }
        if mode == SendMode::Buffered {
            // Eager sends copy at once, so the attached buffer is only accounted.
            self.reserve_bsend(len)?;
            self.st.bsend_used -= len + c::MPI_BSEND_OVERHEAD as usize;
        }
        let env = Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx,
            src,
            tag,
            len: len as u64,
            cookie: 0,
        };
        self.net_send(to, &env, buf.as_slice())?;
        Ok(None)
    }

    fn reserve_bsend(&mut self, len: usize) -> MpiResult<usize> {
        let need = len + c::MPI_BSEND_OVERHEAD as usize;
        let Some((_, size)) = self.bsend_buffer else {
            return Err(MpiError::new(
                c::MPI_ERR_BUFFER,
                "no buffer attached with MPI_Buffer_attach",
            ));
        };
        if self.st.bsend_used + need > size {
            return Err(MpiError::new(
                c::MPI_ERR_BUFFER,
                format!(
                    "attached buffer too small: {need} bytes needed, {} of {size} free",
                    size - self.st.bsend_used
                ),
            ));
        }
        self.st.bsend_used += need;
        Ok(need)
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
        let cm = self.comms.get(comm)?;
        let ctx = cm.ctx;
        if src != ANY_SOURCE && src != c::MPI_PROC_NULL {
            cm.check_rank(src)?;
        }
        let req = self.st.reqs.insert(Op::Recv {
            buf,
            ctx,
            src,
            tag,
            filled: 0,
        });
        if src == c::MPI_PROC_NULL {
            self.st.reqs.complete(req, proc_null_status());
            return Ok(req);
        }
        if src == ANY_SOURCE && !cm.all_connected && self.net.tcp.is_some() && cm.size > 1 {
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

    fn run_followups(&mut self) -> MpiResult<()> {
        while let Some(f) = self.st.followups.pop() {
            match f {
                Followup::SyncAck { to, cookie } => {
                    let env = Envelope {
                        kind: Kind::SyncAck,
                        flags: 0,
                        ctx: 0,
                        src: 0,
                        tag: 0,
                        len: 0,
                        cookie,
                    };
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
            }
        }
        Ok(())
    }

    /// Receiver side of rendezvous: one copy straight from the sender's
    /// memory, or, when the kernel refuses, ask the sender to stream.
    fn fetch(&mut self, req: usize, from: u32, addr: u64, len: u64, cookie: u64) -> MpiResult<()> {
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
        if let (true, Route::Shm(local)) =
            (self.settings.single_copy, self.net.routes[from as usize])
        {
            let pid = self.net.shm.as_ref().map_or(0, |s| s.peer_pid(local));
            match cma::read_from(pid, addr as usize, &mut buf.as_mut_slice()[..n]) {
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
                    let env = Envelope {
                        kind: Kind::RndvData,
                        flags: FIN,
                        ctx: 0,
                        src: 0,
                        tag: 0,
                        len: 0,
                        cookie,
                    };
                    return self.net_send(from, &env, &[]);
                }
                Err(e) => {
                    debug_log(true, self.job.rank, || {
                        format!(
                            "single-copy read failed ({e}); copying through shared memory instead"
                        )
                    });
                    self.settings.single_copy = false;
                }
            }
        }
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
        let env = Envelope {
            kind: Kind::RndvCts,
            flags: 0,
            ctx: 0,
            src: 0,
            tag: 0,
            len: 0,
            cookie,
        };
        self.net_send(from, &env, &recv_cookie.to_le_bytes())
    }

    /// Sender side of a streamed rendezvous: queue every chunk, then complete.
    fn stream(&mut self, cookie: u64, to: u32, recv_cookie: u64) -> MpiResult<()> {
        let Some(idx) = self.st.reqs.by_cookie(cookie) else {
            return Ok(());
        };
        let data = match self.st.reqs.get(idx).map(|r| &r.op) {
            Some(Op::Send { owned: Some(v), .. }) => v.clone(),
            Some(Op::Send { buf, .. }) => buf.as_slice().to_vec(),
            _ => return Ok(()),
        };
        let chunk = self.net.shm_max_payload().max(1);
        for part in data.chunks(chunk) {
            let env = Envelope {
                kind: Kind::RndvData,
                flags: 0,
                ctx: 0,
                src: 0,
                tag: 0,
                len: part.len() as u64,
                cookie: recv_cookie,
            };
            self.net_send(to, &env, part)?;
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
    pub fn mrecv(&mut self, msg: Unexpected, buf: UserBuf) -> MpiResult<usize> {
        let req = self.st.reqs.insert(Op::Recv {
            buf,
            ctx: msg.env.ctx,
            src: msg.env.src as i32,
            tag: msg.env.tag,
            filled: 0,
        });
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

    // ---- progress and waiting ----

    /// One pass over every transport. True if anything happened.
    pub fn progress(&mut self, may_block: bool) -> MpiResult<bool> {
        let mut did = false;
        self.tick = self.tick.wrapping_add(1);
        let Net {
            shm,
            partial,
            local_world,
            ..
        } = &mut self.net;
        if let Some(shm) = shm.as_mut() {
            let n = shm.local_size();
            let me = shm.me();
            for i in 0..n {
                if i == me {
                    continue;
                }
                let from = local_world[i];
                let st = &mut self.st;
                let part = &mut partial[i];
                while let Some(r) = shm.poll(i, |env, p| {
                    if env.flags & net::FRAG_MORE != 0 {
                        part.extend_from_slice(p);
                    } else if !part.is_empty() {
                        part.extend_from_slice(p);
                        let whole = std::mem::take(part);
                        st.deliver(env, from, &whole);
                    } else {
                        st.deliver(env, from, p);
                    }
                }) {
                    r.map_err(MpiError::internal)?;
                    did = true;
                }
            }
            did |= self.net.flush_backlog();
        }
        if let Some(tcp) = self.net.tcp.as_mut() {
            // A system call per pass would slow shared memory down; TCP is
            // polled every few passes unless we are about to block anyway.
            if may_block || self.tick.is_multiple_of(8) || tcp.has_pending_output() {
                let st = &mut self.st;
                let p = tcp
                    .progress(Some(Duration::ZERO), &mut |from, env, payload| {
                        st.deliver(env, from, payload)
                    })
                    .map_err(|e| self.lost_peer(e))?;
                did |= p.delivered > 0;
            }
        }
        if !self.st.followups.is_empty() {
            self.run_followups()?;
            did = true;
        }
        if !self.st.persistent_children.is_empty() {
            self.settle_persistent();
        }
        if self.st.colls.has_work() {
            did |= self.drive_colls()?;
        }
        Ok(did)
    }

    fn lost_peer(&self, e: lanai_tcp::TcpError) -> MpiError {
        MpiError::peer_lost(format!("rank {}: {e}", self.job.rank))
    }

    /// Sleeps until a peer wakes us or `timeout` passes.
    fn block(&mut self, timeout: Duration) -> MpiResult<()> {
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_sleeping(true);
        }
        // A message may have arrived between the last poll and the flag.
        let ready = self.progress(false)?;
        if !ready {
            if let Some(tcp) = self.net.tcp.as_mut() {
                let st = &mut self.st;
                let r = tcp.progress(Some(timeout), &mut |from, env, payload| {
                    st.deliver(env, from, payload)
                });
                if let Err(e) = r {
                    if let Some(shm) = self.net.shm.as_ref() {
                        shm.set_sleeping(false);
                    }
                    return Err(self.lost_peer(e));
                }
            } else if let Some(d) = self.net.doorbell.as_ref() {
                let mut fds = [nix::poll::PollFd::new(d.fd(), nix::poll::PollFlags::POLLIN)];
                let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
                let _ = nix::poll::poll(
                    &mut fds,
                    nix::poll::PollTimeout::try_from(ms).unwrap_or(nix::poll::PollTimeout::MAX),
                );
            } else {
                std::thread::yield_now();
            }
        }
        if let Some(d) = self.net.doorbell.as_ref() {
            d.drain();
        }
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_sleeping(false);
        }
        self.check_liveness()
    }

    /// Under a launcher that does not kill the job, notice dead local peers.
    fn check_liveness(&mut self) -> MpiResult<()> {
        if self.last_liveness.elapsed() < Duration::from_secs(1) {
            return Ok(());
        }
        self.last_liveness = Instant::now();
        if let Some(shm) = self.net.shm.as_ref() {
            for i in 0..shm.local_size() {
                let pid = shm.peer_pid(i);
                if pid > 0
                    && !shm.peer_finished(i)
                    && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                        == Err(nix::Error::ESRCH)
                {
                    return Err(MpiError::peer_lost(format!(
                        "rank {} (pid {pid}) died",
                        self.net.local_world[i]
                    )));
                }
            }
        }
        Ok(())
    }

    /// Progresses until `done()` holds: spin, then (yielding when the node
    /// is oversubscribed) block.
    pub fn wait_until_mut(
        &mut self,
        mut done: impl FnMut(&mut Self) -> MpiResult<bool>,
    ) -> MpiResult<()> {
        let mut idle = 0u32;
        while !done(self)? {
            if self.progress(false)? {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle < self.settings.spin {
                if self.settings.oversubscribed {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            if !done(self)? {
                self.block(Duration::from_millis(100))?;
            }
            idle = 0;
        }
        Ok(())
    }

    pub fn wait_until(&mut self, mut done: impl FnMut(&Self) -> bool) -> MpiResult<()> {
        self.wait_until_mut(|e| Ok(done(e)))
    }

    pub fn is_done(&self, req: usize) -> bool {
        self.st.reqs.get(req).is_none_or(|r| r.done)
    }

    pub fn wait(&mut self, req: usize) -> MpiResult<()> {
        self.wait_until(|e| e.is_done(req))
    }

    // ---- persistent requests ----

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

    /// `MPI_Finalize`: a barrier so every rank's messages are through, then
    /// flush TCP and say goodbye to PMI.
    pub fn finalize(&mut self) -> MpiResult<()> {
        self.barrier(comm::WORLD)?;
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_finished();
        }
        while self.net.has_backlog() {
            self.progress(false)?;
        }
        if let Some(tcp) = self.net.tcp.as_mut() {
            // Says goodbye to every peer so their end-of-file is not a failure.
            let st = &mut self.st;
            tcp.shutdown(Duration::from_secs(10), &mut |from, env, p| {
                st.deliver(env, from, p)
            })
            .map_err(|e| MpiError::other(format!("TCP shutdown: {e}")))?;
        }
        if self.settings.stats {
            self.print_stats();
        }
        if let Some(p) = self.pmi.as_mut() {
            let _ = p.finalize();
        }
        Ok(())
    }

    fn print_stats(&self) {
        let k = &self.net.counters;
        let (conns, tmsgs, tbytes) = self.net.tcp.as_ref().map_or((0, 0, 0), |t| {
            let s = t.stats();
            (s.connections, s.messages_sent, s.bytes_sent)
        });
        let shm_peers = self.net.shm.as_ref().map_or(0, |s| s.local_size() - 1);
        lanai_common::say!(
            "lanai: stats rank {}: tcp connections {conns} msgs {tmsgs} bytes {tbytes}; shm peers {shm_peers} msgs {} bytes {}; self msgs {} bytes {}",
            self.job.rank, k.shm_msgs, k.shm_bytes, k.self_msgs, k.self_bytes
        );
    }

    /// Ends the whole job with `code` (MPI_Abort, fatal errors).
    pub fn abort(&mut self, code: i32, msg: &str) -> ! {
        if let Some(p) = self.pmi.as_mut() {
            let _ = p.abort(code, msg);
            // The launcher kills us; don't race it with our own exit.
            std::thread::sleep(Duration::from_secs(2));
        }
        std::process::exit(code)
    }
}

fn random_hex_bytes() -> MpiResult<Vec<u8>> {
    let mut b = vec![0u8; 32];
    getrandom::getrandom(&mut b).map_err(|e| MpiError::other(format!("no randomness: {e}")))?;
    Ok(b)
}

pub fn proc_null_status() -> Status {
    Status {
        source: c::MPI_PROC_NULL,
        tag: c::MPI_ANY_TAG,
        error: 0,
        count: 0,
        cancelled: false,
    }
}

/// This host's address for a job that spans hosts.
fn host_ip() -> Option<std::net::IpAddr> {
    use std::net::ToSocketAddrs;
    let host = nix::unistd::gethostname().ok()?.into_string().ok()?;
    (host.as_str(), 0)
        .to_socket_addrs()
        .ok()?
        .map(|a| a.ip())
        .find(|ip| !ip.is_loopback())
}

pub use lanai_tcp;
use lanai_tcp::TcpTransport;
