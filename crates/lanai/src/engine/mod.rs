//! The progress engine: requests, matching, eager and rendezvous protocols,
//! and the wait policy. Safe code only; user memory is reached through
//! [`UserBuf`], whose contract the ABI layer upholds.
#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod bsend_pool;
pub mod call_check;
pub mod central;
pub mod central_reduce;
pub mod coll;
mod coll_ref;
pub mod comm;
mod comm_idup;
pub mod composite;
mod copy_pick;
pub mod delivery;
pub mod doorbell;
pub mod error;
pub mod group;
pub mod intercomm;
mod landing;
mod mail_share;
pub mod matching;
pub mod net;
pub mod offload;
mod p2p;
mod persistent;
pub(crate) mod progress;
pub mod request;
mod riding;
mod transfers;
pub use riding::Source;
mod staged_allreduce;
pub mod topo;
mod used_batch;

use crate::abi::consts as c;
use crate::shm::{Segment, ShmNode};
use bootstrap::{JobInfo, Pmi};
use comm::Comms;
use delivery::State;
use error::{MpiError, MpiResult};
use lanai_common::knobs;
use lanai_wire::envelope::Envelope;
use matching::Unexpected;
use net::{Net, Route};
use request::Status;
use std::time::{Duration, Instant};
/// Knob-derived settings, read once at start-up.
#[derive(Debug, Clone)]
pub struct Settings {
    pub eager_limit: usize,
    /// Largest point-to-point message sent eagerly over TCP.
    pub tcp_eager_limit: usize,
    pub single_copy: bool,
    pub spin: Spin,
    pub oversubscribed: bool,
    pub stats: bool,
    pub debug: bool,
    pub static_connect: bool,
    pub algos: coll::Algorithms,
    /// Collectives `LANAI_OFFLOAD` hands to the node's engine.
    pub offload: offload::OffloadSet,
}

/// How long a rank, or an engine, with a core of its own polls while idle
/// before it sleeps.
const OWN_CORE_SPIN: Duration = Duration::from_millis(20);

/// How long a waiting rank polls before it sleeps.
#[derive(Debug, Clone, Copy)]
pub enum Spin {
    /// A number of idle polls (oversubscribed nodes, or `LANAI_SPIN=<n>`).
    Polls(u32),
    /// Idle time (a rank with a core of its own).
    Time(Duration),
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
    /// Messages taken by `MPI_Mprobe`/`MPI_Improbe`, by message handle
    /// slot, with the communicator they were probed on.
    pub probed: Vec<Option<(Unexpected, usize)>>,
    /// The node's offload engine, when collectives go there.
    pub offload: Option<offload::Offload>,
    tick: u32,
    last_liveness: Instant,
    /// Collective calls published for the node's checks.
    calls_published: u64,
    /// The communicator of the user's blocking collective in progress,
    /// and the call, which is the one published last.
    in_call: Option<(usize, call_check::Signed)>,
    /// That call, or the nonblocking one below, while it starts the
    /// instances that carry it in their messages (`Envelope::sig`): not
    /// while it waits, nor in progress made on the way, which may start
    /// other operations' instances.
    signing: bool,
    /// The user's nonblocking collective call being started, until its
    /// request exists ([`Engine::adopt_call`]).
    nb_call: Option<(usize, call_check::Signed)>,
    /// Nonblocking collective calls with their requests, the latest
    /// [`call_check::NB_KEPT`], checked like a blocking call's while a
    /// wait goes on.
    nb_calls: std::collections::VecDeque<call_check::Pending>,
    /// The block each member owes or is owed at the root of the latest
    /// `MPI_Gatherv` or `MPI_Scatterv` (or their nonblocking forms).
    root_blocks: call_check::RootBlocks,
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

/// Cores this host gives the job: `LANAI_CORES`, else the affinity mask's.
fn cores() -> MpiResult<usize> {
    match knobs::get(&knobs::CORES).as_str() {
        "auto" => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        n => n.parse().ok().filter(|&c| c >= 1).ok_or_else(|| {
            MpiError::other(format!(
                "LANAI_CORES={n:?}: expected 'auto' or a count of 1 or more"
            ))
        }),
    }
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
        // Emulated nodes share this host's cores, so count every rank here.
        let ranks_here = if job.single_host {
            job.size as usize
        } else {
            local.len()
        };
        let offload_set =
            offload::OffloadSet::parse(&knobs::get(&knobs::OFFLOAD)).map_err(MpiError::other)?;
        let cores = cores()?;
        // Engines on this host: emulated nodes share its cores.
        let engines_if_on = if job.single_host { job.node_count() } else { 1 };
        // `auto` starts an engine only where it gets a core of its own.
        let engine_here = offload_set.any()
            && job.size > 1
            && (!offload_set.auto
                || offload::auto_fits(job.node_count(), ranks_here, engines_if_on, cores));
        // An engine needs a core too, or a spinning rank starves it.
        let engines_here = if engine_here { engines_if_on } else { 0 };
        let oversubscribed = ranks_here + engines_here > cores;
        let settings = Settings {
            eager_limit: knobs::get_usize(&knobs::EAGER_LIMIT).map_err(MpiError::other)?,
            tcp_eager_limit: knobs::get_usize(&knobs::TCP_EAGER_LIMIT).map_err(MpiError::other)?,
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
                "auto" if oversubscribed => Spin::Polls(50),
                "auto" => Spin::Time(OWN_CORE_SPIN),
                n => Spin::Polls(n.parse().map_err(|_| {
                    MpiError::other(format!("LANAI_SPIN={n:?}: expected 'auto' or a count"))
                })?),
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
            offload: offload_set,
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
        if settings.single_copy && local.len() > 1 {
            crate::shm::cma::allow_peer_access();
        }
        let mut net = Net::new(routes, local.clone());
        let ring_bytes = knobs::get_usize(&knobs::SHM_RING_BYTES).map_err(MpiError::other)?;
        let seg_name =
            lanai_common::shm_names::segment_name(job.uid, job.job_pid, &job.nonce, job.my_node());
        let channels = settings.algos.barrier_channels;
        let seg_len = crate::shm::ring::node_segment_len(local.len(), ring_bytes, channels);
        let multi_node = job.node_count() > 1;

        // The node's first rank creates the segment before the PMI barrier;
        // the others map it after.
        if local.len() > 1 && my_local == 0 {
            lanai_common::shm_names::sweep(job.uid, None);
            let seg = Segment::create(&seg_name, seg_len).map_err(|e| {
                MpiError::other(format!("cannot create shared memory {seg_name}: {e}"))
            })?;
            let node =
                ShmNode::new(seg, local.len(), 0, ring_bytes, channels).map_err(MpiError::other)?;
            node.init();
            net.shm = Some(node);
        }
        // The engine rings ranks through the doorbell, even a node's only rank.
        // Every node's first rank says whether its engine runs (`auto` may
        // decline on one node and not another); one without spoils it for all.
        let want_offload = settings.offload.any()
            && pmi.is_some()
            && job.size > 1
            && (!settings.offload.auto || job.node_count() > 1);
        if local.len() > 1 || want_offload {
            let d = doorbell::Doorbell::bind(&job.name_prefix(), job.rank)
                .map_err(|e| MpiError::other(format!("cannot create wake-up socket: {e}")))?;
            net.doorbell = Some(d);
        }
        let mut secret = Vec::new();
        let mut engine = None;
        if let Some(p) = pmi.as_mut() {
            if want_offload && my_local == 0 {
                if engine_here {
                    // An engine with a core of its own polls as long as
                    // such a rank does: asleep, every post that finds it
                    // so pays a wake-up (at 4 ranks on 4 nodes of 16 cores,
                    // with 50 us, an Ibarrier overlapped 74% of the time,
                    // against 95% when the engine also ran the barriers in
                    // between and so was awake).
                    let spin_us = if settings.oversubscribed {
                        0
                    } else {
                        OWN_CORE_SPIN.as_micros() as u32
                    };
                    let started = offload::start(&job, tcp_bind_ip(&job)?, spin_us);
                    offload::publish(p, job.my_node(), &started)?;
                    engine = Some(started);
                } else {
                    offload::publish(p, job.my_node(), &Err("declined".into()))?;
                }
            }
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
            tcp.set_secret(secret.clone())
                .map_err(|e| MpiError::other(format!("TCP transport: {e}")))?;
        }
        if local.len() > 1 {
            if my_local != 0 {
                let seg = Segment::open(&seg_name, seg_len).map_err(|e| {
                    MpiError::other(format!("cannot map shared memory {seg_name}: {e}"))
                })?;
                let node = ShmNode::new(seg, local.len(), my_local, ring_bytes, channels)
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
        let offload = match pmi.as_mut() {
            Some(p) if want_offload => {
                offload::connect(p, &job, settings.offload, &secret, engine)?
            }
            _ => None,
        };
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
            probed: Vec::new(),
            offload,
            tick: 0,
            last_liveness: Instant::now(),
            calls_published: 0,
            in_call: None,
            signing: false,
            nb_call: None,
            nb_calls: std::collections::VecDeque::new(),
            root_blocks: call_check::RootBlocks::default(),
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
        let ip = tcp_bind_ip(job)?;
        let mut cfg = lanai_tcp::Config::new(job.rank, job.size, secret);
        cfg.bind_ip = ip;
        cfg.log = settings.debug;
        let mut tcp = TcpTransport::bind(cfg)
            .map_err(|e| MpiError::other(format!("cannot open TCP listener on {ip}: {e}")))?;
        // A failed read per empty poll is cheap only on a core of our own.
        tcp.set_direct_reads(!settings.oversubscribed);
        Ok(tcp)
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
    #[inline(always)]
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
            Route::Shm(local) => self.net.send_shm(local, to, env, payload),
        }
    }

    /// As [`net_send`](Self::net_send) for a payload in two parts: over TCP
    /// they are written as they are, elsewhere joined first.
    pub fn net_send_parts(&mut self, to: u32, env: &Envelope, parts: [&[u8]; 2]) -> MpiResult<()> {
        if self.net.routes[to as usize] != Route::Tcp {
            return self.net_send(to, env, &parts.concat());
        }
        self.ensure_addr(to)?;
        self.net.send_tcp(to, env, parts)
    }

    fn connect_all_remote(&mut self, comm: usize) -> MpiResult<()> {
        let c = self.comms.get(comm)?.clone();
        for w in c.peers() {
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
}

impl Engine {
    /// `MPI_Finalize`: a barrier so every rank's messages are through, then
    /// flush TCP and say goodbye to PMI.
    pub fn finalize(&mut self) -> MpiResult<()> {
        self.barrier(comm::WORLD)?;
        self.offload_finish()?;
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_finished();
        }
        while self.net.has_backlog() {
            self.progress(false)?;
            self.net.drop_backlog_to_finished();
        }
        if let Some(tcp) = self.net.tcp.as_mut() {
            // Says goodbye to every peer so their end-of-file is not a failure.
            tcp.shutdown_into(Duration::from_secs(10), &mut self.st)
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
        let refs = &self.st.colls.refs;
        let (conns, tmsgs, tbytes, paced, landed) =
            self.net.tcp.as_ref().map_or((0, 0, 0, 0, 0), |t| {
                let s = t.stats();
                (
                    s.connections,
                    s.messages_sent,
                    s.bytes_sent,
                    s.paced_streams,
                    s.landed_bytes,
                )
            });
        let shm_peers = self.net.shm.as_ref().map_or(0, |s| s.local_size() - 1);
        lanai_common::say!(
            "lanai: stats rank {}: tcp connections {conns} msgs {tmsgs} bytes {tbytes} paced streams {paced} landed bytes {landed}; shm peers {shm_peers} msgs {} bytes {}; self msgs {} bytes {}; sleeps {} (timed out {}); packed bytes {}; shared copies {}; streamed local {}; collective references passed {} read {} refused {}; used answers {} for {}, asked {}, asked to lend {}; staged reduces {}; chunked allreduces {}; chunked reduces {}; chunked bcasts {}; chunked gathers {}; device collectives {}; mailbox shares {}; flat reduces {}; collectives as transfers {}; pieced reduces {}",
            self.job.rank, k.shm_msgs, k.shm_bytes, k.self_msgs, k.self_bytes, k.sleeps, k.sleep_timeouts,
            crate::abi::userbuf::packed_bytes(), k.shared_copies, k.streamed_local, refs.passed, refs.reads, refs.refused_count,
            refs.owed.sent, refs.owed.answered, refs.asks, refs.lend_asks,
            k.staged_reduces, k.chunked_allreduces, k.chunked_reduces, k.chunked_bcasts, k.chunked_gathers, k.device_colls, k.mail_shares, k.flat_reduces, k.transfer_colls, k.pieced_reduces
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

/// The interface TCP listeners (ranks' and engines') bind to.
fn tcp_bind_ip(job: &JobInfo) -> MpiResult<std::net::IpAddr> {
    let knob = knobs::get(&knobs::TCP_ADDR);
    Ok(if knob != "auto" {
        knob.parse()
            .map_err(|_| MpiError::other(format!("LANAI_TCP_ADDR={knob:?} is not an IP address")))?
    } else if job.single_host {
        std::net::Ipv4Addr::LOCALHOST.into()
    } else {
        host_ip().unwrap_or(std::net::Ipv4Addr::LOCALHOST.into())
    })
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
