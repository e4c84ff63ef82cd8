//! The `lanai-engine` process: one per node. It maps the node's engine
//! segment, takes the ranks' descriptors, runs [`Core`], talks to the other
//! nodes' engines over authenticated TCP, and writes completions back.
//!
//! Start-up, driven by the node's first rank (see `client::spawn`):
//! 1. `lanai-engine --segment S --node N --nodes K --prefix P [--bind IP]`;
//! 2. the engine maps S, binds its doorbell (and a TCP listener when K > 1),
//!    publishes the listener's address in S and sets the state to ready;
//! 3. it reads one line on stdin, `go <secret> <node_of> <addrs>` (node of
//!    every world rank, comma-separated; every engine's address), or
//!    anything else to give up;
//! 4. it serves until every local rank has detached, and exits at once if a
//!    local rank dies without detaching.

use super::core::{Core, Header, Transmit};
use super::desc::{Desc, Work};
use super::trace::{Event, Trace};
use crate::engine::doorbell::Doorbell;
use crate::engine::progress::PURE_SPIN;
use crate::shm::engine_seg::{self as es, EngineSeg};
use lanai_common::knobs;
use lanai_tcp::TcpTransport;
use lanai_wire::envelope::{Envelope, Kind};
use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Envelope flag on an engine message: it is one of yours, coming back.
const BOUNCE: u8 = 1;
/// How often a sleeping engine checks that its ranks are alive.
const LIVENESS: Duration = Duration::from_millis(100);

/// How long an engine with operations in flight polls (yielding) before it
/// sleeps. Measured at 2 ranks on 2 emulated nodes (2 cores): an offloaded
/// barrier took 43 us with the engine asleep between messages and 11 us
/// polling up to 200-1000 us; idle engines still sleep at once when
/// oversubscribed, so computing ranks keep the cores.
const IN_FLIGHT_SPIN: Duration = Duration::from_millis(1);

/// With nothing in flight, TCP is polled on every this many passes: what
/// arrives early waits for its rank's descriptor anyway, and the system
/// call would delay seeing that descriptor.
const IDLE_TCP_EVERY: u32 = 8;

#[derive(Debug)]
struct Args {
    segment: String,
    node: u32,
    nodes: u32,
    prefix: String,
    bind: std::net::IpAddr,
    /// How long an idle engine keeps polling before it sleeps: none when
    /// processes outnumber cores, where a polling engine only delays the
    /// ranks (and itself: a woken sleeper preempts, a poller waits its turn).
    spin: Duration,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let get = |flag: &str| -> Option<String> {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1).cloned())
    };
    let need = |v: Option<String>, f: &str| v.ok_or_else(|| format!("missing {f}"));
    let segment = need(get("--segment"), "--segment")?;
    let node = need(get("--node"), "--node")?
        .parse()
        .map_err(|_| "bad --node".to_string())?;
    let nodes = need(get("--nodes"), "--nodes")?
        .parse()
        .map_err(|_| "bad --nodes".to_string())?;
    let prefix = need(get("--prefix"), "--prefix")?;
    let bind = get("--bind")
        .unwrap_or_else(|| "127.0.0.1".into())
        .parse()
        .map_err(|_| "bad --bind".to_string())?;
    let spin = get("--spin-us")
        .unwrap_or_else(|| "0".into())
        .parse()
        .map_err(|_| "bad --spin-us".to_string())?;
    Ok(Args {
        segment,
        node,
        nodes,
        prefix,
        bind,
        spin: Duration::from_micros(spin),
    })
}

/// A descriptor's post number, readable even when the rest is garbage.
fn post_no(raw: &[u8; crate::offload::desc::DESC_LEN]) -> u32 {
    u32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]])
}

/// The doorbell name prefix of node engines of the job with rank prefix `p`.
pub fn engine_prefix(p: &str) -> String {
    format!("{p}engine-")
}

/// Closes descriptors inherited from the rank (the PMI socket above all:
/// the launcher must see it close when the rank exits).
fn close_inherited() {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        let _ = nix::unistd::close(fd);
    }
}

/// Runs the engine; returns the process exit status.
pub fn run(argv: &[String]) -> i32 {
    close_inherited();
    let args = match parse_args(argv) {
        Ok(a) => a,
        Err(e) => {
            lanai_common::say!("lanai-engine: {e}");
            return 2;
        }
    };
    match serve(&args) {
        Ok(()) => 0,
        Err(e) => {
            lanai_common::say!("lanai-engine: node {}: {e}", args.node);
            1
        }
    }
}

struct Config {
    secret: Vec<u8>,
    node_of: Vec<u32>,
    addrs: Vec<String>,
}

fn read_config() -> Result<Option<Config>, String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("reading start-up line: {e}"))?;
    let mut it = line.split_whitespace();
    if it.next() != Some("go") {
        return Ok(None);
    }
    let (Some(secret), Some(nodes), addrs) = (it.next(), it.next(), it.next()) else {
        return Err("short start-up line".into());
    };
    let node_of = nodes
        .split(',')
        .map(|x| x.parse().map_err(|_| format!("bad node list {nodes:?}")))
        .collect::<Result<Vec<u32>, _>>()?;
    Ok(Some(Config {
        secret: format!("{secret}:engine").into_bytes(),
        node_of,
        addrs: addrs
            .map(|a| a.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
    }))
}

/// An engine with a core of its own must not stay on the one core that
/// lanairun pinned its rank to (`LANAI_BIND=core`): it may run wherever
/// lanairun itself may.
fn leave_rank_core() {
    use nix::sched::{sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;
    let Some(job) = std::env::var("LANAI_JOB_PID")
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
    else {
        return;
    };
    if let Ok(set) = sched_getaffinity(Pid::from_raw(job)) {
        let _ = sched_setaffinity(Pid::from_raw(0), &set);
    }
}

fn serve(a: &Args) -> Result<(), String> {
    if !a.spin.is_zero() {
        leave_rank_core();
    }
    let seg = EngineSeg::open(&a.segment)?;
    seg.engine_pid()
        .store(std::process::id(), Ordering::Release);
    let eprefix = engine_prefix(&a.prefix);
    let bell = Doorbell::bind(&eprefix, a.node).map_err(|e| format!("doorbell: {e}"))?;
    let mut tcp = if a.nodes > 1 {
        let mut junk = vec![0u8; 32];
        getrandom::getrandom(&mut junk).map_err(|e| e.to_string())?;
        let mut cfg = lanai_tcp::Config::new(a.node, a.nodes, junk);
        cfg.role = lanai_tcp::Role::Engine;
        cfg.bind_ip = a.bind;
        let t = TcpTransport::bind(cfg).map_err(|e| format!("TCP listener: {e}"))?;
        seg.set_addr(&t.local_addr().to_string());
        Some(t)
    } else {
        None
    };
    seg.state().store(es::ENGINE_READY, Ordering::Release);
    if seg.attach() {
        let _ = crate::shm::Segment::unlink(&a.segment);
    }
    let Some(cfg) = read_config()? else {
        // The job decided against offload (another node's engine failed).
        return Ok(());
    };
    if let Some(t) = tcp.as_mut() {
        t.set_secret(cfg.secret.clone())
            .map_err(|e| format!("TCP: {e}"))?;
        for (n, addr) in cfg.addrs.iter().enumerate() {
            let addr = addr
                .parse()
                .map_err(|_| format!("bad engine address {addr:?}"))?;
            t.set_peer_addr(n as u32, addr);
        }
        t.add_wake_fd(bell.fd()).map_err(|e| format!("TCP: {e}"))?;
    }
    let local_world: Vec<u32> = (0..cfg.node_of.len() as u32)
        .filter(|&w| cfg.node_of[w as usize] == a.node)
        .collect();
    if local_world.len() != seg.local_size() {
        return Err(format!(
            "{} local ranks in the job but {} in the segment",
            local_world.len(),
            seg.local_size()
        ));
    }
    let pool = knobs::get_usize(&knobs::OFFLOAD_POOL)?;
    let local_size = seg.local_size();
    let mut srv = Server {
        core: Core::new(a.node, cfg.node_of, local_world, pool),
        seg,
        bell,
        prefix: a.prefix.clone(),
        tcp,
        seen: vec![0; local_size],
        epoch: Instant::now(),
        spin: a.spin,
        barrier_taken: HashMap::new(),
        barrier_time: Duration::ZERO,
        barriers: 0,
        trace: Trace::new(&knobs::get(&knobs::ENGINE_TRACE), a.node),
    };
    let r = srv.serve_loop();
    if let Some(t) = &srv.trace {
        if let Err(e) = t.write() {
            lanai_common::say!("lanai-engine: node {}: {e}", a.node);
        }
    }
    if knobs::get_bool(&knobs::STATS) {
        let s = srv.core.stats();
        let barrier_us = if srv.barriers == 0 {
            0.0
        } else {
            srv.barrier_time.as_secs_f64() * 1e6 / srv.barriers as f64
        };
        lanai_common::say!(
            "lanai: stats engine node {}: descriptors {} unexpected {} retries {} bounced {} max in flight {} barrier_us {:.2}",
            a.node, s.descriptors, s.unexpected, s.retries, s.bounced, s.max_in_flight, barrier_us
        );
    }
    if let Some(t) = srv.tcp.as_mut() {
        // Goodbyes, so the other engines read our leaving as orderly.
        let _ = t.shutdown(Duration::from_secs(5), &mut |_, _, _| {});
    }
    r
}

struct Server {
    core: Core,
    seg: EngineSeg,
    bell: Doorbell,
    /// Doorbell prefix of the job's ranks.
    prefix: String,
    tcp: Option<TcpTransport>,
    /// Descriptors taken so far, per local rank.
    seen: Vec<u32>,
    epoch: Instant,
    spin: Duration,
    /// When each slot's barrier was taken, for the engine's own barrier
    /// latency in the stats (seed 000 section 4.1 subtracts it from the
    /// MPI-level latency).
    barrier_taken: HashMap<(usize, usize), Instant>,
    barrier_time: Duration,
    barriers: u64,
    trace: Option<Trace>,
}

enum Exit {
    Done,
    RankDied(usize, u32),
}

impl Server {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    fn serve_loop(&mut self) -> Result<(), String> {
        let mut idle_since: Option<Instant> = None;
        let mut last_check = Instant::now();
        let mut tick = 0u32;
        loop {
            tick = tick.wrapping_add(1);
            let tcp = self.core.in_flight() > 0 || tick.is_multiple_of(IDLE_TCP_EVERY);
            if self.pass(false, tcp)? {
                idle_since = None;
                continue;
            }
            let full = last_check.elapsed() >= LIVENESS;
            if full {
                last_check = Instant::now();
            }
            match self.check_ranks(full) {
                // A bounced message of ours still owes another node a retry.
                Some(Exit::Done) if self.core.poll_timeout().is_none() => return Ok(()),
                Some(Exit::RankDied(i, pid)) => {
                    return Err(format!("local rank {i} (pid {pid}) died; exiting"))
                }
                _ => {}
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            // With operations in flight the next message is due soon: poll,
            // yielding, rather than pay a wake-up for it.
            let spin = if self.core.in_flight() > 0 {
                self.spin.max(IN_FLIGHT_SPIN)
            } else {
                self.spin
            };
            let idle = since.elapsed();
            if idle < spin {
                if self.spin.is_zero() || idle >= PURE_SPIN {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            self.sleep()?;
            idle_since = None;
        }
    }

    /// One look at the descriptors and, if `tcp`, at the other engines;
    /// true if anything happened.
    fn pass(&mut self, block: bool, tcp: bool) -> Result<bool, String> {
        let mut did = self.take_descriptors();
        if tcp || block {
            did |= self.poll_tcp(if block {
                Some(self.sleep_for())
            } else {
                Some(Duration::ZERO)
            })?;
        }
        let now = self.now();
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        did |= self.flush()?;
        Ok(did)
    }

    fn sleep_for(&self) -> Duration {
        let cap = LIVENESS;
        match self.core.poll_timeout() {
            Some(t) => Duration::from_micros(t.saturating_sub(self.now())).min(cap),
            None => cap,
        }
    }

    fn sleep(&mut self) -> Result<(), String> {
        self.seg.engine_sleeping().store(1, Ordering::SeqCst);
        // A descriptor posted before the flag was seen by its rank is here.
        let busy = self.take_descriptors();
        if !busy {
            if self.tcp.is_some() {
                self.pass(true, true)?;
            } else {
                let mut fds = [nix::poll::PollFd::new(
                    self.bell.fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                let ms = self.sleep_for().as_millis().min(1000) as u16;
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
            }
        } else {
            self.flush()?;
        }
        self.seg.engine_sleeping().store(0, Ordering::SeqCst);
        self.bell.drain();
        Ok(())
    }

    /// Clean exit once every rank detached; a rank gone without detaching
    /// means the job is failing, and nothing we hold matters any more.
    /// `pids`: also look for dead ranks (a system call each, so not on
    /// every wake-up).
    fn check_ranks(&self, pids: bool) -> Option<Exit> {
        let n = self.seg.local_size();
        let mut detached = 0;
        for i in 0..n {
            if self.seg.detached(i).load(Ordering::Acquire) != 0 {
                detached += 1;
                continue;
            }
            let pid = self.seg.pid(i).load(Ordering::Acquire);
            if pids
                && pid != 0
                && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None)
                    == Err(nix::Error::ESRCH)
            {
                return Some(Exit::RankDied(i, pid));
            }
        }
        (detached == n).then_some(Exit::Done)
    }

    /// Takes newly posted descriptors, each rank's in the order it posted.
    fn take_descriptors(&mut self) -> bool {
        let mut did = false;
        for i in 0..self.seg.local_size() {
            let posted = self.seg.posted(i).load(Ordering::Acquire);
            if posted == self.seen[i] {
                continue;
            }
            did = true;
            let mut found = Vec::new();
            for s in 0..self.seg.slots() {
                if self.seg.slot_state(i, s).load(Ordering::Acquire) == es::SLOT_POSTED {
                    found.push((s, self.seg.read_desc(i, s)));
                }
            }
            // Strictly in post order: a descriptor whose state store we see
            // before an earlier one's waits for the next pass.
            found.sort_by_key(|(_, raw)| post_no(raw).wrapping_sub(self.seen[i]));
            for (s, raw) in found {
                if post_no(&raw) != self.seen[i] {
                    break;
                }
                self.seen[i] = self.seen[i].wrapping_add(1);
                self.seg
                    .slot_state(i, s)
                    .store(es::SLOT_TAKEN, Ordering::Release);
                match Desc::decode(&raw) {
                    Ok(d) if (d.len as usize) <= self.seg.slot_bytes() => {
                        if matches!(d.work, Work::Barrier(_) | Work::DeviceBarrier { .. }) {
                            self.barrier_taken.insert((i, s), Instant::now());
                        }
                        if let Some(t) = self.trace.as_mut() {
                            t.at(Event::Take, d.seq, i as u32);
                        }
                        let data = self.seg.read_data(i, s, d.input_len());
                        self.core.post(i, s, &d, data);
                    }
                    Ok(d) => self.fail(i, s, &format!("{} bytes exceed the slot", d.len)),
                    Err(e) => self.fail(i, s, &e.to_string()),
                }
            }
        }
        did
    }

    fn fail(&self, i: usize, s: usize, why: &str) {
        let b = &why.as_bytes()[..why.len().min(self.seg.slot_bytes())];
        self.seg.write_data(i, s, b);
        self.seg
            .result_len(i, s)
            .store(b.len() as u32, Ordering::Relaxed);
        self.seg
            .slot_state(i, s)
            .store(es::SLOT_FAILED, Ordering::SeqCst);
        self.wake(i);
    }

    fn wake(&self, i: usize) {
        if self.seg.sleeping(i).load(Ordering::SeqCst) != 0 {
            self.bell.ring_at(&self.prefix, self.world_of(i));
        }
    }

    fn world_of(&self, i: usize) -> u32 {
        self.core.local_world(i)
    }

    fn poll_tcp(&mut self, timeout: Option<Duration>) -> Result<bool, String> {
        let Some(t) = self.tcp.as_mut() else {
            return Ok(false);
        };
        let now = self.epoch.elapsed().as_micros() as u64;
        let core = &mut self.core;
        let trace = &mut self.trace;
        let p = t
            .progress(timeout, &mut |from, env, payload| {
                if env.kind != Kind::Coll || payload.len() < 4 {
                    return;
                }
                let (idx, payload) = payload.split_at(4);
                let hdr = Header {
                    ctx: env.ctx,
                    lead: (env.cookie >> 32) as u32,
                    seq: env.tag as u32,
                    src: env.src,
                    dst: env.cookie as u32,
                    idx: u32::from_le_bytes([idx[0], idx[1], idx[2], idx[3]]),
                };
                if let Some(t) = trace.as_mut() {
                    t.at(Event::Receive, hdr.seq, from);
                }
                core.handle_remote(from, env.flags & BOUNCE != 0, hdr, payload.to_vec(), now);
            })
            .map_err(|e| e.naming(lanai_tcp::Role::Engine).to_string())?;
        Ok(p.delivered > 0)
    }

    /// Sends what the core produced and writes its completions.
    fn flush(&mut self) -> Result<bool, String> {
        let mut did = false;
        while let Some(Transmit {
            node,
            hdr,
            bounce,
            data,
        }) = self.core.poll_transmit()
        {
            did = true;
            let t = self
                .tcp
                .as_mut()
                .ok_or("a message for another node, but no TCP")?;
            // The message index rides in front of the machine's bytes.
            let idx = hdr.idx.to_le_bytes();
            let env = Envelope {
                kind: Kind::Coll,
                flags: if bounce { BOUNCE } else { 0 },
                ctx: hdr.ctx,
                src: hdr.src,
                tag: hdr.seq as i32,
                len: (idx.len() + data.len()) as u64,
                cookie: (u64::from(hdr.lead) << 32) | u64::from(hdr.dst),
                sig: 0,
            };
            if let Some(tr) = self.trace.as_mut() {
                tr.at(Event::SendStart, hdr.seq, node);
            }
            t.send_parts(node, &env, [&idx, &data])
                .map_err(|e| format!("TCP send failed: {}", e.naming(lanai_tcp::Role::Engine)))?;
            if let Some(tr) = self.trace.as_mut() {
                tr.at(Event::SendEnd, hdr.seq, node);
            }
        }
        while let Some(c) = self.core.poll_completion() {
            did = true;
            if let Some(t) = self.trace.as_mut() {
                t.at(Event::Done, 0, c.local as u32);
            }
            if let Some(t) = self.barrier_taken.remove(&(c.local, c.slot)) {
                self.barrier_time += t.elapsed();
                self.barriers += 1;
            }
            match c.outcome {
                Ok(res) => {
                    let res = res.unwrap_or_default();
                    let n = res.len().min(self.seg.slot_bytes());
                    self.seg.write_data(c.local, c.slot, &res[..n]);
                    self.seg
                        .result_len(c.local, c.slot)
                        .store(n as u32, Ordering::Relaxed);
                    self.seg
                        .slot_state(c.local, c.slot)
                        .store(es::SLOT_DONE, Ordering::SeqCst);
                    self.wake(c.local);
                }
                Err(e) => self.fail(c.local, c.slot, &e),
            }
        }
        Ok(did)
    }
}
