//! The TCP transport: a listener, on-demand authenticated connections and an
//! edge-triggered epoll loop driven by [`TcpTransport::progress`].

use crate::congestion;
use crate::conn::{connect_nonblocking, connect_result, send_slices, Conn, Phase};
use crate::error::TcpError;
use crate::link::{
    AfterDecision, AfterFailure, ConnId, Link, LinkState, SendPlan, Verdict, MAX_CONNECT_ATTEMPTS,
};
use lanai_wire::envelope::Envelope;
use lanai_wire::frame::{self, Decoder, Event, FramePiece};
use lanai_wire::handshake::{
    ClientHandshake, Decision, Nonce, RejectReason, ServerHandshake, NONCE_LEN,
};
use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use std::io::{self, IoSlice, Read};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// What the processes at both ends are, so that a log line names them as
/// the reader knows them: an offload engine's peers are numbered by node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Rank,
    Engine,
}

impl Role {
    /// `n` named in this role: "rank 3", "the engine of node 3".
    pub fn name(self, n: u32) -> String {
        match self {
            Role::Rank => format!("rank {n}"),
            Role::Engine => format!("the engine of node {n}"),
        }
    }
}

/// Transport settings.
#[derive(Clone)]
pub struct Config {
    pub my_rank: u32,
    pub world_size: u32,
    /// The per-job secret every connection must prove knowledge of.
    pub secret: Vec<u8>,
    /// Interface to listen on; use an unspecified address only on purpose.
    pub bind_ip: IpAddr,
    /// Largest frame body sent or accepted.
    pub max_frame: usize,
    /// Largest message payload sent or accepted.
    pub max_message: u64,
    /// How long a connection may take to authenticate.
    pub handshake_timeout: Duration,
    /// Debug logging to stderr.
    pub log: bool,
    pub role: Role,
}

impl Config {
    /// Defaults: loopback, 1 MiB frames, 1 TiB messages, 10 s handshakes.
    pub fn new(my_rank: u32, world_size: u32, secret: Vec<u8>) -> Self {
        Self {
            my_rank,
            world_size,
            secret,
            bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            max_frame: frame::DEFAULT_MAX_FRAME,
            max_message: frame::DEFAULT_MAX_MESSAGE,
            handshake_timeout: Duration::from_secs(10),
            log: false,
            role: Role::Rank,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("my_rank", &self.my_rank)
            .field("world_size", &self.world_size)
            .field("secret", &"<redacted>")
            .field("bind_ip", &self.bind_ip)
            .field("max_frame", &self.max_frame)
            .field("max_message", &self.max_message)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("log", &self.log)
            .field("role", &self.role)
            .finish()
    }
}

/// What one call to [`TcpTransport::progress`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Messages passed to `deliver`.
    pub delivered: usize,
    /// A wake fd added with [`TcpTransport::add_wake_fd`] is readable.
    pub wake_fd_ready: bool,
}

/// Counters (seed 004's resource accounting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections that completed the handshake and were accepted.
    pub connections: u64,
    /// Outgoing connection attempts started.
    pub connect_attempts: u64,
    /// Connections turned away as the losing side of a simultaneous connect.
    pub duplicates: u64,
    /// Connections closed for failing authentication, bad frames or silence.
    pub rejected: u64,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    /// Times a connection began to pace a stream (see `congestion`).
    pub paced_streams: u64,
    /// Payload bytes of messages that landed in place (see [`Sink`]).
    pub landed_bytes: u64,
}

/// Where received messages go. A closure `(source, envelope, payload)` is
/// a sink that takes every message whole; a sink that knows where a long
/// message's payload belongs (a posted receive buffer) may take it in
/// pieces, mostly read straight from the socket into place.
pub trait Sink {
    /// A whole message from world rank `from`.
    fn deliver(&mut self, from: u32, env: Envelope, payload: &[u8]);

    /// Whether the `total` payload bytes of the message `env` from `from`,
    /// just begun, land: they then come through [`Sink::place`] and
    /// [`Sink::piece`], then [`Sink::landed`], never as a whole.
    fn land(&mut self, _from: u32, _env: &Envelope, _total: usize) -> bool {
        false
    }

    /// The memory of payload bytes `at..at + len` of a landing message,
    /// to read the socket into; `None` has them come through `piece`.
    fn place(&mut self, _from: u32, _env: &Envelope, _at: usize, _len: usize) -> Option<&mut [u8]> {
        None
    }

    /// Payload bytes `at..` of a landing message, read elsewhere first.
    fn piece(&mut self, _from: u32, _env: &Envelope, _at: usize, _bytes: &[u8]) {}

    /// Every byte of the landing message `env` is in place.
    fn landed(&mut self, _from: u32, _env: Envelope, _total: usize) {}
}

/// Callback receiving (source world rank, envelope, payload): a sink that
/// takes every message whole.
pub type Deliver<'a> = dyn FnMut(u32, Envelope, &[u8]) + 'a;

struct Whole<'a, 'b>(&'a mut Deliver<'b>);

impl Sink for Whole<'_, '_> {
    fn deliver(&mut self, from: u32, env: Envelope, payload: &[u8]) {
        (self.0)(from, env, payload)
    }
}

/// Messages from this size on are offered to the sink to land.
const LAND_MIN: usize = 16 << 10;

const LISTENER: u64 = 0;
const WAKE: u64 = 1;
const FIRST_CONN: u64 = 2;
/// Unauthenticated connections allowed at once; more are closed on accept.
const MAX_HANDSHAKING: usize = 1024;
/// Most iovecs handed to one `sendmsg`.
const MAX_IOV: usize = 64;

struct Slot {
    gen: u32,
    conn: Option<Conn>,
}

fn token(idx: usize, gen: u32) -> ConnId {
    (u64::from(gen) << 32) | (idx as u64 + FIRST_CONN)
}

/// Reads asking for at most this much may end reading when they come back
/// short (see `read_frames`).
const SHORT_READ_ENDS_MAX: usize = 256 * 1024;

/// The TCP transport of one rank. Not thread-safe; one progress loop owns it.
pub struct TcpTransport {
    me: u32,
    role: Role,
    world: u32,
    secret: Vec<u8>,
    max_frame: usize,
    max_message: u64,
    handshake_timeout: Duration,
    log: bool,
    epoll: Epoll,
    listener: TcpListener,
    local: SocketAddr,
    addrs: Vec<Option<SocketAddr>>,
    links: Vec<Link<Vec<u8>>>,
    /// Links that lost a tie-break, and when to stop waiting for the peer.
    awaiting: Vec<(u32, Instant)>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Connections with a handshake deadline.
    handshaking: usize,
    events: Vec<EpollEvent>,
    pieces: Vec<FramePiece>,
    stats: Stats,
    /// Shutting down: incoming connections are turned away.
    closing: bool,
    /// Flushing: a broken peer we owe nothing is not an error.
    lenient: bool,
    /// The first error met while handling a batch of events.
    error: Option<TcpError>,
    /// Polls read this connection (the last one a message came on) before
    /// asking epoll; see [`TcpTransport::set_direct_reads`].
    hot: Option<ConnId>,
    direct_reads: bool,
    /// Polls in a row that the hot connection answered without epoll.
    direct_streak: u32,
    /// Streams may be paced; false once the kernel refused (see
    /// `congestion`), so that nobody asks again.
    may_pace: bool,
}

impl std::fmt::Debug for TcpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpTransport")
            .field("rank", &self.me)
            .field("local", &self.local)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn random_nonce() -> Result<Nonce, TcpError> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut n).map_err(|e| TcpError::Io {
        op: "getrandom",
        source: io::Error::other(e.to_string()),
    })?;
    Ok(n)
}

fn conn_flags() -> EpollFlags {
    EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET
}

/// Milliseconds for epoll, rounded up so short waits do not spin.
fn epoll_ms(d: Duration) -> EpollTimeout {
    let ms = d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128);
    EpollTimeout::try_from(ms as u64).unwrap_or(EpollTimeout::MAX)
}

impl TcpTransport {
    /// Listens on `cfg.bind_ip` at an ephemeral port.
    pub fn bind(cfg: Config) -> Result<Self, TcpError> {
        if cfg.secret.is_empty() {
            return Err(TcpError::EmptySecret);
        }
        if cfg.my_rank >= cfg.world_size {
            return Err(TcpError::BadConfigRank {
                my_rank: cfg.my_rank,
                world_size: cfg.world_size,
            });
        }
        let listener = TcpListener::bind((cfg.bind_ip, 0)).map_err(TcpError::io("bind"))?;
        congestion::set_default_before(&listener, cfg.bind_ip);
        listener
            .set_nonblocking(true)
            .map_err(TcpError::io("set_nonblocking"))?;
        let local = listener.local_addr().map_err(TcpError::io("local_addr"))?;
        let epoll =
            Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(TcpError::errno("epoll_create"))?;
        epoll
            .add(&listener, EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))
            .map_err(TcpError::errno("epoll_ctl"))?;
        let world = cfg.world_size;
        Ok(Self {
            me: cfg.my_rank,
            role: cfg.role,
            world,
            secret: cfg.secret,
            max_frame: frame::clamp_max_frame(cfg.max_frame),
            max_message: cfg.max_message,
            handshake_timeout: cfg.handshake_timeout,
            log: cfg.log,
            epoll,
            listener,
            local,
            addrs: vec![None; world as usize],
            links: (0..world).map(|r| Link::new(cfg.my_rank, r)).collect(),
            awaiting: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            handshaking: 0,
            events: vec![EpollEvent::empty(); 64],
            pieces: Vec::new(),
            stats: Stats::default(),
            closing: false,
            lenient: false,
            error: None,
            hot: None,
            may_pace: true,
            direct_reads: false,
            direct_streak: 0,
        })
    }

    /// Replaces the job secret. The engine binds before the secret is known
    /// (its address is published in the same PMI round), and sets it before
    /// the first `progress`, so no handshake ever runs with the placeholder.
    pub fn set_secret(&mut self, secret: Vec<u8>) -> Result<(), TcpError> {
        if secret.is_empty() {
            return Err(TcpError::EmptySecret);
        }
        self.secret = secret;
        Ok(())
    }

    /// The address peers connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Records where `rank` listens (from PMI); unknown ranks are ignored.
    pub fn set_peer_addr(&mut self, rank: u32, addr: SocketAddr) {
        if let Some(a) = self.addrs.get_mut(rank as usize) {
            *a = Some(addr);
        }
    }

    pub fn has_peer_addr(&self, rank: u32) -> bool {
        matches!(self.addrs.get(rank as usize), Some(Some(_)))
    }

    /// True once a connection to `to` is authenticated and accepted.
    pub fn is_connected(&self, to: u32) -> bool {
        self.links
            .get(to as usize)
            .is_some_and(|l| l.up_conn().is_some())
    }

    /// True once `to` has said goodbye (or we shut down): nothing more can
    /// go to it.
    pub fn is_closed(&self, to: u32) -> bool {
        self.links
            .get(to as usize)
            .is_some_and(|l| l.state() == LinkState::Closed)
    }

    /// Adds a readable fd (e.g. a shared-memory doorbell) to the wait set.
    /// The caller keeps it open and drains it; while it stays readable,
    /// `progress` returns at once with `wake_fd_ready`.
    pub fn add_wake_fd(&mut self, fd: BorrowedFd<'_>) -> Result<(), TcpError> {
        self.epoll
            .add(fd, EpollEvent::new(EpollFlags::EPOLLIN, WAKE))
            .map_err(TcpError::errno("epoll_ctl"))
    }

    /// Non-blocking polls first read the connection the last message came
    /// on, and skip `epoll_wait` when that delivers: one system call per
    /// message instead of two in a ping-pong. Each empty poll then costs a
    /// failed read as well, so this pays only where the caller polls on a
    /// core of its own.
    pub fn set_direct_reads(&mut self, on: bool) {
        self.direct_reads = on;
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    fn check_rank(&self, to: u32) -> Result<(), TcpError> {
        if to >= self.world {
            return Err(TcpError::NoSuchRank {
                rank: to,
                world_size: self.world,
            });
        }
        if to == self.me {
            return Err(TcpError::SendToSelf);
        }
        Ok(())
    }

    fn link_error(&self, to: u32) -> TcpError {
        match self.links[to as usize].state() {
            LinkState::Closed => TcpError::PeerClosed { rank: to },
            _ => TcpError::PeerLost {
                rank: to,
                cause: "connection lost earlier".into(),
            },
        }
    }

    /// Queues a message for `to` and writes what the socket takes now.
    /// Never blocks. The first send to a peer starts connecting; messages
    /// wait in FIFO order until the connection is accepted.
    pub fn send(&mut self, to: u32, env: &Envelope, payload: &[u8]) -> Result<(), TcpError> {
        self.send_parts(to, env, [payload, &[]])
    }

    /// As [`send`](Self::send), for a payload in two parts sent one after
    /// the other (a short head and a large body need not be joined first).
    pub fn send_parts(
        &mut self,
        to: u32,
        env: &Envelope,
        parts: [&[u8]; 2],
    ) -> Result<(), TcpError> {
        self.check_rank(to)?;
        let len = parts[0].len() + parts[1].len();
        if len as u64 > self.max_message {
            return Err(TcpError::MessageTooLarge {
                len: len as u64,
                max: self.max_message,
            });
        }
        let link = &self.links[to as usize];
        match link.state() {
            LinkState::Up { conn } => {
                self.count_sent(len);
                return self.write_message(conn, to, env, parts);
            }
            LinkState::Closed | LinkState::Lost => return Err(self.link_error(to)),
            LinkState::Idle if !self.has_peer_addr(to) => {
                return Err(TcpError::NoPeerAddress { rank: to })
            }
            _ => {}
        }
        let mut m = Vec::with_capacity(frame::encoded_len(len, self.max_frame));
        let pieces: Vec<_> = frame::frames(env, len, self.max_frame).collect();
        append_rest(&pieces, parts, 0, &mut m);
        match self.links[to as usize].send(m) {
            Ok(SendPlan::QueuedStartConnect) => self.start_attempt(to)?,
            Ok(SendPlan::Queued) => {}
            Ok(SendPlan::WriteNow(conn, m)) => self.write_bytes(conn, to, &m)?,
            Err(_) => return Err(self.link_error(to)),
        }
        self.count_sent(len);
        Ok(())
    }

    fn count_sent(&mut self, len: usize) {
        self.stats.messages_sent += 1;
        self.stats.bytes_sent += len as u64;
    }

    /// Starts connecting to `to` without sending (static mode, `ANY_SOURCE`).
    pub fn connect(&mut self, to: u32) -> Result<(), TcpError> {
        self.check_rank(to)?;
        match self.links[to as usize].want_connect() {
            Ok(true) => self.start_attempt(to),
            Ok(false) => Ok(()),
            Err(_) => Err(self.link_error(to)),
        }
    }

    /// True while any message is queued or partly written.
    pub fn has_pending_output(&self) -> bool {
        self.pending_bytes() > 0
            || self.links.iter().any(|l| {
                l.queued() > 0 && !matches!(l.state(), LinkState::Closed | LinkState::Lost)
            })
    }

    fn pending_bytes(&self) -> usize {
        self.slots
            .iter()
            .filter_map(|s| s.conn.as_ref())
            .map(Conn::pending_out)
            .sum()
    }

    fn conn_ids(&self) -> Vec<ConnId> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.conn.as_ref().map(|_| token(i, s.gen)))
            .collect()
    }

    fn slot_of(&self, id: ConnId) -> Option<usize> {
        let idx = (id & 0xffff_ffff).checked_sub(FIRST_CONN)? as usize;
        let slot = self.slots.get(idx)?;
        (u64::from(slot.gen) == id >> 32 && slot.conn.is_some()).then_some(idx)
    }

    fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        let idx = self.slot_of(id)?;
        self.slots[idx].conn.as_mut()
    }

    fn insert(&mut self, conn: Conn) -> Result<ConnId, TcpError> {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot { gen: 0, conn: None });
            self.slots.len() - 1
        });
        let id = token(idx, self.slots[idx].gen);
        if let Err(e) = self
            .epoll
            .add(&conn.sock, EpollEvent::new(conn_flags(), id))
        {
            self.free.push(idx);
            return Err(TcpError::errno("epoll_ctl")(e));
        }
        if conn.deadline.is_some() {
            self.handshaking += 1;
        }
        self.slots[idx].conn = Some(conn);
        Ok(id)
    }

    fn close_conn(&mut self, id: ConnId) -> Option<Conn> {
        let idx = self.slot_of(id)?;
        let slot = &mut self.slots[idx];
        let conn = slot.conn.take()?;
        slot.gen = slot.gen.wrapping_add(1);
        if self.hot == Some(id) {
            self.hot = None;
        }
        self.free.push(idx);
        if conn.deadline.is_some() {
            self.handshaking -= 1;
        }
        let _ = self.epoll.delete(&conn.sock);
        Some(conn)
    }

    fn debug(&self, msg: std::fmt::Arguments<'_>) {
        if self.log {
            lanai_common::say!("lanai: {}: tcp: {msg}", self.role.name(self.me));
        }
    }

    fn record(&mut self, e: TcpError) {
        self.debug(format_args!("error: {e}"));
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Closes a connection that misbehaved before or after authentication,
    /// with the one log line the security policy asks for.
    fn reject(&mut self, id: ConnId, reason: &str) {
        if let Some(c) = self.close_conn(id) {
            self.stats.rejected += 1;
            let who = match (c.outgoing, c.rank) {
                (true, Some(r)) => format!("to {} at {}", self.role.name(r), c.addr),
                _ => format!("from {}", c.addr),
            };
            lanai_common::say!(
                "lanai: {}: rejected TCP connection {who}: {reason}",
                self.role.name(self.me)
            );
        }
    }

    fn start_attempt(&mut self, to: u32) -> Result<(), TcpError> {
        let addr = self.addrs[to as usize].ok_or(TcpError::NoPeerAddress { rank: to })?;
        loop {
            self.stats.connect_attempts += 1;
            let (hs, hello) = ClientHandshake::new(&self.secret, self.me, to, random_nonce()?)
                .map_err(|_| TcpError::EmptySecret)?;
            let cause = match connect_nonblocking(addr) {
                Ok((sock, done)) => {
                    let phase = if done {
                        Phase::AwaitChallenge(hs)
                    } else {
                        Phase::Connecting(hs)
                    };
                    let mut conn = Conn::new(sock, addr, true, phase);
                    conn.rank = Some(to);
                    conn.out.extend_from_slice(&hello);
                    conn.deadline = Some(Instant::now() + self.handshake_timeout);
                    if done {
                        let _ = conn.sock.set_nodelay(true);
                        congestion::set_default(&conn.sock);
                    }
                    let id = self.insert(conn)?;
                    self.links[to as usize].attempt_started(id);
                    self.debug(format_args!("connecting to rank {to} at {addr}"));
                    if done {
                        self.write_pending(id);
                    }
                    return Ok(());
                }
                Err(e) => e.to_string(),
            };
            // Failed at once: account for it like any failed attempt.
            let fake = u64::MAX;
            self.links[to as usize].attempt_started(fake);
            match self.links[to as usize].attempt_failed(fake) {
                AfterFailure::Retry => continue,
                _ => {
                    return Err(TcpError::ConnectFailed {
                        rank: to,
                        attempts: MAX_CONNECT_ATTEMPTS,
                        cause,
                    })
                }
            }
        }
    }

    /// Writes a message on an established connection, gathering the
    /// caller's payload straight into the socket; only what the socket does
    /// not take is copied into the connection's queue.
    fn write_message(
        &mut self,
        id: ConnId,
        to: u32,
        env: &Envelope,
        payload: [&[u8]; 2],
    ) -> Result<(), TcpError> {
        let max_frame = self.max_frame;
        let Some(idx) = self.slot_of(id) else {
            return Err(self.link_error(to));
        };
        let Self {
            slots,
            pieces,
            may_pace,
            stats,
            ..
        } = self;
        let Some(conn) = slots[idx].conn.as_mut() else {
            return Err(TcpError::PeerLost {
                rank: to,
                cause: "connection vanished".into(),
            });
        };
        let len = payload[0].len() + payload[1].len();
        if let Some(sw) = conn.pacer.sent(len) {
            if !*may_pace || !conn.addr.ip().is_loopback() {
                conn.pacer.refused();
            } else if !congestion::apply(&conn.sock, sw) {
                conn.pacer.refused();
                *may_pace = false;
            } else {
                stats.paced_streams += 1;
            }
        }
        pieces.clear();
        pieces.extend(frame::frames(env, len, max_frame));
        if conn.pending_out() > 0 || conn.write_blocked {
            append_rest(pieces, payload, 0, &mut conn.out);
            if conn.write_blocked {
                return Ok(());
            }
            return match conn.flush_out() {
                Ok(()) => Ok(()),
                Err(e) => Err(self.write_failed(id, to, e)),
            };
        }
        let total = frame::encoded_len(len, max_frame);
        let mut written = 0usize;
        let failure = loop {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let n = gather(pieces, payload, written, &mut iov);
            match send_slices(&conn.sock, &iov[..n]) {
                Ok(k) => {
                    written += k;
                    if written >= total {
                        break None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    conn.write_blocked = true;
                    break None;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        if let Some(e) = failure {
            return Err(self.write_failed(id, to, e));
        }
        if written < total {
            append_rest(pieces, payload, written, &mut conn.out);
        }
        Ok(())
    }

    /// Appends already-encoded bytes to an established connection.
    fn write_bytes(&mut self, id: ConnId, to: u32, bytes: &[u8]) -> Result<(), TcpError> {
        let Some(conn) = self.conn_mut(id) else {
            return Err(self.link_error(to));
        };
        conn.out.extend_from_slice(bytes);
        if conn.write_blocked {
            return Ok(());
        }
        match conn.flush_out() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.write_failed(id, to, e)),
        }
    }

    /// A write on an established connection failed: the peer is gone.
    fn write_failed(&mut self, id: ConnId, to: u32, e: io::Error) -> TcpError {
        let graceful = self
            .close_conn(id)
            .is_some_and(|c| c.dec.as_ref().is_some_and(Decoder::saw_bye));
        self.links[to as usize].conn_closed(id, graceful);
        if graceful {
            TcpError::PeerClosed { rank: to }
        } else {
            TcpError::PeerLost {
                rank: to,
                cause: e.to_string(),
            }
        }
    }

    /// Flushes a connection's queue, treating failure per its phase.
    fn write_pending(&mut self, id: ConnId) {
        let Some(conn) = self.conn_mut(id) else {
            return;
        };
        if let Err(e) = conn.flush_out() {
            self.conn_broken(id, e.to_string());
        }
    }

    /// Drives the transport: accepts and authenticates connections, reads and
    /// delivers every complete message, writes queued output. `Some(ZERO)`
    /// polls without blocking; `None` blocks until something happens.
    /// `deliver` must not call back into the transport; the payload borrows
    /// the transport's buffers for the duration of the call.
    pub fn progress(
        &mut self,
        timeout: Option<Duration>,
        deliver: &mut Deliver<'_>,
    ) -> Result<Progress, TcpError> {
        self.progress_into(timeout, &mut Whole(deliver))
    }

    /// As [`progress`](Self::progress), handing what arrives to `deliver`,
    /// which may take long messages where they belong (see [`Sink`]).
    pub fn progress_into(
        &mut self,
        timeout: Option<Duration>,
        deliver: &mut dyn Sink,
    ) -> Result<Progress, TcpError> {
        let mut p = Progress::default();
        // A busy hot connection must not starve the others (or accepts and
        // handshake deadlines): epoll still runs every few polls.
        if timeout == Some(Duration::ZERO) && self.direct_reads && self.direct_streak < 16 {
            if let Some(id) = self.hot {
                self.read_frames(id, true, deliver, &mut p);
                if let Some(e) = self.error.take() {
                    return Err(e);
                }
                if p.delivered > 0 {
                    self.direct_streak += 1;
                    return Ok(p);
                }
            }
        }
        self.direct_streak = 0;
        let wait = self.wait_timeout(timeout);
        let n = match self.epoll.wait(&mut self.events, wait) {
            Ok(n) => n,
            Err(Errno::EINTR) => 0,
            Err(e) => return Err(TcpError::errno("epoll_wait")(e)),
        };
        for i in 0..n {
            let ev = self.events[i];
            match ev.data() {
                LISTENER => self.accept_all(),
                WAKE => p.wake_fd_ready = true,
                id => self.service(id, ev.events(), deliver, &mut p),
            }
        }
        self.check_deadlines();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(p),
        }
    }

    fn wait_timeout(&self, timeout: Option<Duration>) -> EpollTimeout {
        let next = self.next_deadline();
        let until_deadline = next.map(|d| d.saturating_duration_since(Instant::now()));
        match (timeout, until_deadline) {
            (Some(t), Some(d)) => epoll_ms(t.min(d)),
            (Some(t), None) | (None, Some(t)) => epoll_ms(t),
            (None, None) => EpollTimeout::NONE,
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut next = self.awaiting.iter().map(|&(_, t)| t).min();
        if self.handshaking > 0 {
            let conns = self.slots.iter().filter_map(|s| s.conn.as_ref()?.deadline);
            next = next.into_iter().chain(conns).min();
        }
        next
    }

    fn check_deadlines(&mut self) {
        if self.handshaking == 0 && self.awaiting.is_empty() {
            return;
        }
        let now = Instant::now();
        if self.handshaking > 0 {
            let expired: Vec<(ConnId, bool)> = self
                .slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let c = s.conn.as_ref()?;
                    (c.deadline? <= now).then_some((token(i, s.gen), c.outgoing))
                })
                .collect();
            for (id, outgoing) in expired {
                if outgoing {
                    self.attempt_failed(id, "handshake timed out".into());
                } else {
                    self.reject(id, "handshake timed out");
                }
            }
        }
        let mut i = 0;
        while i < self.awaiting.len() {
            let (rank, when) = self.awaiting[i];
            let link = &mut self.links[rank as usize];
            if link.state() != LinkState::AwaitingPeer {
                self.awaiting.swap_remove(i);
            } else if when <= now {
                self.awaiting.swap_remove(i);
                if link.awaiting_expired() {
                    if let Err(e) = self.start_attempt(rank) {
                        self.record(e);
                    }
                }
            } else {
                i += 1;
            }
        }
    }

    fn accept_all(&mut self) {
        loop {
            let (sock, addr) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.debug(format_args!("accept failed: {e}"));
                    return;
                }
            };
            if self.handshaking >= MAX_HANDSHAKING {
                lanai_common::say!(
                    "lanai: {}: rejected TCP connection from {addr}: too many unauthenticated connections",
                    self.role.name(self.me)
                );
                self.stats.rejected += 1;
                continue;
            }
            let setup = sock
                .set_nonblocking(true)
                .and_then(|()| sock.set_nodelay(true));
            if let Err(e) = setup {
                self.debug(format_args!("socket setup for {addr} failed: {e}"));
                continue;
            }
            congestion::set_default(&sock);
            let hs = match random_nonce().and_then(|n| {
                ServerHandshake::new(&self.secret, self.me, n).map_err(|_| TcpError::EmptySecret)
            }) {
                Ok(hs) => hs,
                Err(e) => {
                    self.record(e);
                    return;
                }
            };
            let mut conn = Conn::new(sock, addr, false, Phase::AwaitHello(hs));
            conn.deadline = Some(Instant::now() + self.handshake_timeout);
            match self.insert(conn) {
                Ok(_) => self.debug(format_args!("accepted connection from {addr}")),
                Err(e) => self.record(e),
            }
        }
    }

    fn service(&mut self, id: ConnId, flags: EpollFlags, deliver: &mut dyn Sink, p: &mut Progress) {
        let Some(conn) = self.conn_mut(id) else {
            return;
        };
        let failed = flags.intersects(EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
        if let Phase::Connecting(_) = conn.phase {
            if !(flags.contains(EpollFlags::EPOLLOUT) || failed) {
                return;
            }
            if let Err(e) = connect_result(&conn.sock) {
                self.attempt_failed(id, e.to_string());
                return;
            }
            let _ = conn.sock.set_nodelay(true);
            congestion::set_default(&conn.sock);
            if let Phase::Connecting(hs) = std::mem::replace(&mut conn.phase, Phase::Moving) {
                conn.phase = Phase::AwaitChallenge(hs);
            }
        }
        if flags.contains(EpollFlags::EPOLLOUT) {
            conn.write_blocked = false;
            self.write_pending(id);
        }
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP) || failed {
            // After a hang-up no further edge comes, so the end of the
            // stream must be read now: no stopping at a short read.
            let short_read_ends = !(failed || flags.contains(EpollFlags::EPOLLRDHUP));
            self.read_conn(id, short_read_ends, deliver, p);
        }
    }

    /// Reads what the socket holds. `short_read_ends`: a short read means
    /// the socket is empty (see [`TcpTransport::read_frames`]).
    fn read_conn(
        &mut self,
        id: ConnId,
        short_read_ends: bool,
        deliver: &mut dyn Sink,
        p: &mut Progress,
    ) {
        loop {
            let Some(conn) = self.conn_mut(id) else {
                return;
            };
            let need = conn.phase.handshake_need();
            if matches!(conn.phase, Phase::Up) {
                return self.read_frames(id, short_read_ends, deliver, p);
            }
            if need == 0 {
                return;
            }
            let have = conn.hs_have;
            match conn.sock.read(&mut conn.hs_buf[have..need]) {
                Ok(0) => return self.conn_broken(id, "closed during handshake".into()),
                Ok(n) => {
                    conn.hs_have += n;
                    if conn.hs_have == need {
                        conn.hs_have = 0;
                        self.on_handshake_message(id, need);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.conn_broken(id, e.to_string()),
            }
        }
    }

    /// A connection failed at the socket level (reset, EOF, write error).
    fn conn_broken(&mut self, id: ConnId, cause: String) {
        let Some(conn) = self.conn_mut(id) else {
            return;
        };
        match (&conn.phase, conn.outgoing) {
            (Phase::Up, _) => self.up_closed(id, cause),
            (_, true) => self.attempt_failed(id, cause),
            (_, false) => {
                // Legitimate when a peer abandons its attempt after a tie-break.
                let addr = conn.addr;
                self.close_conn(id);
                self.debug(format_args!(
                    "incoming connection from {addr} ended: {cause}"
                ));
            }
        }
    }

    fn attempt_failed(&mut self, id: ConnId, cause: String) {
        let Some(conn) = self.close_conn(id) else {
            return;
        };
        let Some(rank) = conn.rank else {
            return;
        };
        self.debug(format_args!("attempt to reach rank {rank} failed: {cause}"));
        match self.links[rank as usize].attempt_failed(id) {
            AfterFailure::Retry => {
                if let Err(e) = self.start_attempt(rank) {
                    self.record(e);
                }
            }
            AfterFailure::GiveUp { .. } => self.record(TcpError::ConnectFailed {
                rank,
                attempts: MAX_CONNECT_ATTEMPTS,
                cause,
            }),
            AfterFailure::Stale => {}
        }
    }

    /// An established connection ended.
    fn up_closed(&mut self, id: ConnId, cause: String) {
        let Some(conn) = self.close_conn(id) else {
            return;
        };
        let Some(rank) = conn.rank else {
            return;
        };
        let graceful = conn.dec.as_ref().is_some_and(Decoder::saw_bye);
        let was_live = self.links[rank as usize].conn_closed(id, graceful);
        if graceful || !was_live {
            self.debug(format_args!("connection to rank {rank} closed"));
        } else if self.lenient && conn.pending_out() == 0 {
            self.debug(format_args!(
                "rank {rank} went away while flushing: {cause}"
            ));
        } else {
            self.record(TcpError::PeerLost { rank, cause });
        }
    }

    fn on_handshake_message(&mut self, id: ConnId, len: usize) {
        let Some(conn) = self.conn_mut(id) else {
            return;
        };
        let msg = conn.hs_buf;
        let msg = &msg[..len];
        match std::mem::replace(&mut conn.phase, Phase::Moving) {
            Phase::AwaitHello(mut hs) => match hs.handle_hello(msg) {
                Ok((claimed, challenge)) => {
                    conn.rank = Some(claimed);
                    conn.phase = Phase::AwaitProof(hs);
                    conn.out.extend_from_slice(&challenge);
                    self.write_pending(id);
                }
                Err(e) => self.reject(id, &e.to_string()),
            },
            Phase::AwaitProof(mut hs) => match hs.handle_proof(msg) {
                Ok(rank) => self.incoming_authenticated(id, hs, rank),
                Err(e) => self.reject(id, &e.to_string()),
            },
            Phase::AwaitChallenge(mut hs) => match hs.handle_challenge(msg) {
                Ok(proof) => {
                    conn.phase = Phase::AwaitDecision(hs);
                    conn.out.extend_from_slice(&proof);
                    self.write_pending(id);
                }
                Err(e) => self.outgoing_rejected_peer(id, e.to_string()),
            },
            Phase::AwaitDecision(mut hs) => match hs.handle_decision(msg) {
                Ok(d) => self.outgoing_decided(id, d),
                Err(e) => self.outgoing_rejected_peer(id, e.to_string()),
            },
            other => conn.phase = other,
        }
    }

    /// The server we dialled failed authentication: log it, count it as a
    /// failed attempt.
    fn outgoing_rejected_peer(&mut self, id: ConnId, reason: String) {
        if let Some(c) = self.conn_mut(id) {
            let (addr, rank) = (c.addr, c.rank);
            self.stats.rejected += 1;
            lanai_common::say!(
                "lanai: {}: rejected TCP connection to {} at {addr}: {reason}",
                self.role.name(self.me),
                rank.map_or_else(|| "a peer".to_string(), |r| self.role.name(r))
            );
        }
        self.attempt_failed(id, reason);
    }

    fn become_up(&mut self, id: ConnId, flush: impl IntoIterator<Item = Vec<u8>>) {
        let (max_frame, max_message) = (self.max_frame, self.max_message);
        let Some(idx) = self.slot_of(id) else {
            return;
        };
        let Some(conn) = self.slots[idx].conn.as_mut() else {
            return;
        };
        conn.phase = Phase::Up;
        if conn.deadline.take().is_some() {
            self.handshaking -= 1;
        }
        conn.dec = Some(Decoder::new(max_frame, max_message).with_landing(LAND_MIN));
        for m in flush {
            conn.out.extend_from_slice(&m);
        }
        self.stats.connections += 1;
        self.write_pending(id);
    }

    fn outgoing_decided(&mut self, id: ConnId, d: Decision) {
        let Some(rank) = self.conn_mut(id).and_then(|c| c.rank) else {
            return;
        };
        match self.links[rank as usize].outgoing_decided(id, d) {
            AfterDecision::Up { flush } => {
                self.debug(format_args!("connected to rank {rank}"));
                self.become_up(id, flush);
            }
            AfterDecision::WaitForPeer => {
                self.close_conn(id);
                self.stats.duplicates += 1;
                self.debug(format_args!(
                    "rank {rank} keeps its own connection; waiting"
                ));
                self.awaiting
                    .push((rank, Instant::now() + self.handshake_timeout));
            }
            AfterDecision::PeerClosing { dropped } => {
                self.close_conn(id);
                if dropped > 0 {
                    self.record(TcpError::PeerClosed { rank });
                }
            }
            AfterDecision::Stale if d == Decision::Accept => {
                // The peer now counts this connection as up (we are shutting
                // down, or chose another): a goodbye makes its EOF orderly.
                if let Some(mut c) = self.close_conn(id) {
                    self.stats.connections += 1;
                    c.out.extend_from_slice(&frame::bye_frame());
                    let _ = c.flush_out();
                    let _ = c.sock.shutdown(Shutdown::Write);
                }
                self.debug(format_args!("said goodbye to rank {rank} after its accept"));
            }
            AfterDecision::Stale => {
                self.close_conn(id);
            }
        }
    }

    fn incoming_authenticated(&mut self, id: ConnId, mut hs: ServerHandshake, rank: u32) {
        let verdict = if rank >= self.world || rank == self.me {
            Verdict::Reject(RejectReason::UnknownRank)
        } else if self.closing {
            Verdict::Reject(RejectReason::ShuttingDown)
        } else {
            self.links[rank as usize].incoming_authenticated(id)
        };
        match verdict {
            Verdict::Accept { abandon, flush } => {
                let Ok(d) = hs.decide(Decision::Accept) else {
                    return;
                };
                if let Some(c) = self.conn_mut(id) {
                    c.rank = Some(rank);
                    c.out.extend_from_slice(&d);
                }
                if let Some(own) = abandon {
                    self.close_conn(own);
                    self.stats.duplicates += 1;
                }
                self.debug(format_args!("accepted rank {rank}"));
                self.become_up(id, flush);
            }
            Verdict::Reject(reason) => {
                if let (Ok(d), Some(c)) = (hs.decide(Decision::Reject(reason)), self.conn_mut(id)) {
                    c.out.extend_from_slice(&d);
                    let _ = c.flush_out();
                }
                if reason == RejectReason::UnknownRank {
                    self.reject(id, &format!("authenticated as rank {rank}, not a peer"));
                } else {
                    self.close_conn(id);
                    self.stats.duplicates += 1;
                    self.debug(format_args!("turned away rank {rank}: {reason}"));
                }
            }
        }
    }

    fn read_frames(
        &mut self,
        id: ConnId,
        short_read_ends: bool,
        deliver: &mut dyn Sink,
        p: &mut Progress,
    ) {
        let Some(idx) = self.slot_of(id) else {
            return;
        };
        let Self {
            slots,
            links,
            stats,
            ..
        } = self;
        let Some(conn) = slots[idx].conn.as_mut() else {
            return;
        };
        let (Some(rank), Some(dec)) = (conn.rank, conn.dec.as_mut()) else {
            return;
        };
        let delivered_before = p.delivered;
        // Edge-triggered epoll: read until the socket is empty. A read that
        // returns less than it asked for already says so (epoll(7)), which
        // spares the read that would only fail with EAGAIN.
        let mut drained = false;
        let outcome = loop {
            let bad = loop {
                match dec.next_event() {
                    Ok(Some(Event::Message(env, payload))) => {
                        stats.messages_received += 1;
                        stats.bytes_received += payload.len() as u64;
                        p.delivered += 1;
                        deliver.deliver(rank, env, payload);
                    }
                    Ok(Some(Event::Offer { env, total })) => {
                        if deliver.land(rank, &env, total) {
                            dec.land();
                        }
                    }
                    Ok(Some(Event::Piece { env, at, bytes })) => {
                        deliver.piece(rank, &env, at, bytes);
                    }
                    Ok(Some(Event::Landed { env, total })) => {
                        stats.messages_received += 1;
                        stats.bytes_received += total as u64;
                        stats.landed_bytes += total as u64;
                        p.delivered += 1;
                        deliver.landed(rank, env, total);
                    }
                    Ok(Some(Event::Bye)) => {
                        links[rank as usize].conn_closed(id, true);
                    }
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            };
            if let Some(e) = bad {
                break Err(Err(e));
            }
            if drained {
                break Ok(());
            }
            // A landing message's bytes go straight where they belong.
            let place = dec
                .land_space()
                .and_then(|(env, at, len)| deliver.place(rank, &env, at, len));
            let (buf, placed) = match place {
                Some(dst) => (dst, true),
                None => (dec.read_buf(), false),
            };
            let want = buf.len();
            match conn.sock.read(buf) {
                Ok(0) => break Err(Ok("connection closed by peer".to_string())),
                Ok(n) => {
                    if let Some(sw) = conn.pacer.received() {
                        congestion::apply(&conn.sock, sw);
                    }
                    // Into a large message's remainder, keep reading: its
                    // sender is most likely still streaming the rest, and
                    // going back to epoll between pieces cost 5% of 16 MiB
                    // bandwidth.
                    drained = short_read_ends && n < want && want <= SHORT_READ_ENDS_MAX;
                    if placed {
                        dec.landed(n);
                    } else {
                        dec.filled(n);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(Ok(e.to_string())),
            }
        };
        if p.delivered > delivered_before {
            self.hot = Some(id);
        }
        match outcome {
            Ok(()) => {}
            Err(Ok(cause)) => self.up_closed(id, cause),
            Err(Err(error)) => {
                let who = self.role.name(rank);
                self.reject(id, &format!("{who} sent a bad frame: {error}"));
                self.links[rank as usize].conn_closed(id, false);
                self.record(TcpError::PeerProtocol { rank, error });
            }
        }
    }

    /// Pushes out everything queued, handling traffic meanwhile (messages
    /// that arrive go to `deliver`). A peer that goes away while we owe it
    /// nothing is not an error here.
    pub fn flush(&mut self, timeout: Duration, deliver: &mut Deliver<'_>) -> Result<(), TcpError> {
        self.flush_into(timeout, &mut Whole(deliver))
    }

    fn flush_into(&mut self, timeout: Duration, deliver: &mut dyn Sink) -> Result<(), TcpError> {
        let deadline = Instant::now() + timeout;
        self.lenient = true;
        let res = loop {
            if !self.has_pending_output() {
                break Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                break Err(TcpError::FlushTimedOut {
                    pending_bytes: self.pending_bytes()
                        + self.links.iter().map(|l| l.queued()).sum::<usize>(),
                });
            }
            if let Err(e) = self.progress_into(Some(deadline - now), deliver) {
                break Err(e);
            }
        };
        self.lenient = false;
        res
    }

    /// Flushes, says goodbye to every connected peer (so their later EOF is
    /// not a failure), lets handshakes in flight finish (a peer that accepted
    /// ours gets a goodbye too; one dialling us is told we are shutting
    /// down), and closes everything. Sends fail afterwards.
    pub fn shutdown(
        &mut self,
        timeout: Duration,
        deliver: &mut Deliver<'_>,
    ) -> Result<(), TcpError> {
        self.shutdown_into(timeout, &mut Whole(deliver))
    }

    /// As [`shutdown`](Self::shutdown), with a [`Sink`].
    pub fn shutdown_into(
        &mut self,
        timeout: Duration,
        deliver: &mut dyn Sink,
    ) -> Result<(), TcpError> {
        let deadline = Instant::now() + timeout;
        let flushed = self.flush_into(timeout, deliver);
        self.closing = true;
        for link in &mut self.links {
            link.close();
        }
        // Connections already made to us get an answer ("shutting down")
        // rather than a reset, so their owner does not retry into a closed port.
        self.accept_all();
        let bye = frame::bye_frame();
        for id in self.conn_ids() {
            if let Some(c) = self.conn_mut(id) {
                if matches!(c.phase, Phase::Up) {
                    c.out.extend_from_slice(&bye);
                    if !c.write_blocked {
                        let _ = c.flush_out();
                    }
                }
            }
        }
        self.lenient = true;
        // Handshakes in flight run to their end: a peer may already count
        // one as up (we then say goodbye on it), or be owed a rejection.
        while (self.pending_bytes() > 0 || self.handshaking > 0) && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.progress_into(Some(left), deliver).is_err() {
                break;
            }
        }
        self.lenient = false;
        let pending = self.pending_bytes();
        for id in self.conn_ids() {
            if let Some(c) = self.close_conn(id) {
                let _ = c.sock.shutdown(Shutdown::Write);
            }
        }
        flushed?;
        if pending > 0 {
            return Err(TcpError::FlushTimedOut {
                pending_bytes: pending,
            });
        }
        Ok(())
    }
}

/// Bytes `r` of the payload whose parts are `parts`, in up to two slices.
fn span<'a>(parts: [&'a [u8]; 2], r: &std::ops::Range<usize>) -> [&'a [u8]; 2] {
    let h = parts[0].len();
    [
        &parts[0][r.start.min(h)..r.end.min(h)],
        &parts[1][r.start.saturating_sub(h)..r.end.saturating_sub(h)],
    ]
}

/// Fills `iov` with the message bytes from offset `skip` on; returns how
/// many entries were used.
fn gather<'a>(
    pieces: &'a [FramePiece],
    payload: [&'a [u8]; 2],
    mut skip: usize,
    iov: &mut [IoSlice<'a>; MAX_IOV],
) -> usize {
    let mut n = 0;
    for p in pieces {
        let [a, b] = span(payload, &p.payload);
        for part in [p.header.as_slice(), a, b] {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            if n == MAX_IOV {
                return n;
            }
            iov[n] = IoSlice::new(&part[skip..]);
            skip = 0;
            n += 1;
        }
    }
    n
}

/// Appends the message bytes from offset `skip` on to `out`.
fn append_rest(pieces: &[FramePiece], payload: [&[u8]; 2], mut skip: usize, out: &mut Vec<u8>) {
    for p in pieces {
        let [a, b] = span(payload, &p.payload);
        for part in [p.header.as_slice(), a, b] {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            out.extend_from_slice(&part[skip..]);
            skip = 0;
        }
    }
}
