//! The rank's side of the offload engine: starting it, posting descriptors
//! into this rank's slots of the engine segment, and completing requests
//! when the engine marks a slot done (seed 003: a non-root `MPI_Reduce`
//! returns as soon as its data is in the slot).

use super::bootstrap::{self, JobInfo, Pmi};
use super::coll::{coll_status, CollOut, Combiner};
use super::comm::Comm;
use super::doorbell::Doorbell;
use super::error::{MpiError, MpiResult};
use super::request::Op;
use super::Engine;
use crate::abi::userbuf::UserBuf;
use crate::offload::desc::{Desc, Work};
use crate::offload::server::engine_prefix;
use crate::offload::trace::{Event, Trace};
use crate::shm::engine_seg::{self as es, EngineSeg};
use lanai_coll::Combine;
use lanai_common::knobs;
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Slots per rank; each holds one operation (or one chunk of a large one)
/// in flight.
const SLOTS: usize = 16;
/// Largest input or result one slot holds; larger operations go in chunks
/// of this size, each its own instance, pipelined over the slots.
pub const SLOT_BYTES: usize = 64 * 1024;
/// How long the node's first rank waits for a new engine to say ready.
const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Which collectives `LANAI_OFFLOAD` hands to the engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OffloadSet {
    pub barrier: bool,
    pub bcast: bool,
    pub reduce: bool,
    pub allreduce: bool,
    /// `auto`: only nonblocking collectives and blocking reduces that the
    /// host would run as a tree, only on communicators that span nodes,
    /// and only when every node has a core for its engine (`auto_fits`).
    pub auto: bool,
}

/// Whether `auto` runs an engine on a node: the job spans nodes, and the
/// node's ranks and engines each have a core. Measured on 2 cores, an
/// engine that shares a core with ranks makes every offloaded collective
/// slower (docs/decisions.md), as a NIC without its own processor would.
pub fn auto_fits(nodes: usize, ranks_here: usize, engines_here: usize, cores: usize) -> bool {
    nodes > 1 && ranks_here + engines_here <= cores
}

impl OffloadSet {
    pub fn parse(v: &str) -> Result<Self, String> {
        let mut s = OffloadSet::default();
        for w in v.split(',').map(str::trim) {
            match w {
                "none" | "" => {}
                "auto" => {
                    s = OffloadSet {
                        barrier: true,
                        bcast: true,
                        reduce: true,
                        allreduce: true,
                        auto: true,
                    }
                }
                "all" => {
                    s = OffloadSet {
                        barrier: true,
                        bcast: true,
                        reduce: true,
                        allreduce: true,
                        auto: false,
                    }
                }
                "barrier" => s.barrier = true,
                "bcast" => s.bcast = true,
                "reduce" => s.reduce = true,
                "allreduce" => s.allreduce = true,
                other => {
                    return Err(format!(
                        "LANAI_OFFLOAD: unknown {other:?}; the choices are auto, none, all, or a comma list of barrier, reduce, allreduce, bcast"
                    ))
                }
            }
        }
        Ok(s)
    }

    pub fn any(&self) -> bool {
        self.barrier || self.bcast || self.reduce || self.allreduce
    }
}

/// What a busy slot will do when the engine finishes it.
#[derive(Debug)]
struct Pending {
    /// The request to complete once all its chunks are done; `None` when it
    /// completed at posting.
    req: Option<usize>,
    out: Option<CollOut>,
    /// Where this chunk's result goes in `out`.
    at: usize,
}

impl Pending {
    const NOTHING: Pending = Pending {
        req: None,
        out: None,
        at: 0,
    };
}

/// This rank's connection to its node's engine.
#[derive(Debug)]
pub struct Offload {
    pub set: OffloadSet,
    seg: EngineSeg,
    me: usize,
    node: u32,
    engine_pid: i32,
    eprefix: String,
    posted: u32,
    slots: Vec<Option<Pending>>,
    /// Descriptors waiting for a free slot, in program order: a nonblocking
    /// call never waits for the engine, and the engine takes each rank's
    /// descriptors in order, so everything queues behind these.
    queue: VecDeque<(Desc, Vec<u8>, Pending)>,
    /// Chunks still to finish, per request.
    chunks_left: HashMap<usize, u32>,
    registered: HashSet<u32>,
    /// The node's first rank owns the engine process.
    child: Option<std::process::Child>,
    /// `LANAI_ENGINE_TRACE`: this rank's side of the hand-offs.
    trace: Option<Trace>,
}

/// The engine the node's first rank started, before the job knows whether
/// every node got one.
#[derive(Debug)]
pub struct Started {
    seg: EngineSeg,
    seg_name: String,
    child: std::process::Child,
}

/// The node's engine segment: the node segment's name, suffixed, so the
/// sweep of a dead job's segments finds it too.
fn engine_seg_name(job: &JobInfo) -> String {
    lanai_common::shm_names::segment_name(job.uid, job.job_pid, &job.nonce, job.my_node())
        + "-engine"
}

fn engine_key(node: u32) -> String {
    format!("lanai-engine-{node}")
}

/// The `lanai-engine` program: `LANAI_ENGINE_PATH`, else `bin/` beside the
/// directory this library was loaded from (or that directory itself, as in
/// a cargo target directory), else `PATH`.
fn engine_path() -> Result<std::path::PathBuf, String> {
    let knob = knobs::get(&knobs::ENGINE_PATH);
    if knob != "auto" {
        return Ok(knob.into());
    }
    let me = engine_path as *const () as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let lib = maps.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (lo, hi) = f.next()?.split_once('-')?;
        let (lo, hi) = (
            usize::from_str_radix(lo, 16).ok()?,
            usize::from_str_radix(hi, 16).ok()?,
        );
        let path = f.nth(4)?;
        (lo <= me && me < hi && path.starts_with('/')).then(|| std::path::PathBuf::from(path))
    });
    if let Some(dir) = lib.as_deref().and_then(std::path::Path::parent) {
        for cand in [dir.join("../bin/lanai-engine"), dir.join("lanai-engine")] {
            if cand.is_file() {
                return Ok(cand);
            }
        }
    }
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("lanai-engine"))
                .find(|c| c.is_file())
        })
        .ok_or_else(|| "lanai-engine was not found beside the library or on PATH".into())
}

/// Starts the node's engine (the node's first rank, before the PMI barrier).
pub fn start(job: &JobInfo, bind: std::net::IpAddr, spin_us: u32) -> Result<Started, String> {
    let local = job.local_ranks().len();
    let seg_name = engine_seg_name(job);
    let seg = EngineSeg::create(&seg_name, local, SLOTS, SLOT_BYTES)
        .map_err(|e| format!("cannot create {seg_name}: {e}"))?;
    let fail = |why: String| {
        let _ = crate::shm::Segment::unlink(&seg_name);
        why
    };
    let path = engine_path().map_err(fail)?;
    let mut child = std::process::Command::new(&path)
        .args(["--segment", &seg_name, "--node"])
        .arg(job.my_node().to_string())
        .arg("--nodes")
        .arg(job.node_count().to_string())
        .args(["--prefix", &job.name_prefix(), "--bind"])
        .arg(bind.to_string())
        .arg("--spin-us")
        .arg(spin_us.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| fail(format!("cannot run {}: {e}", path.display())))?;
    let deadline = Instant::now() + START_TIMEOUT;
    while seg.state().load(Ordering::Acquire) != es::ENGINE_READY {
        if let Ok(Some(st)) = child.try_wait() {
            return Err(fail(format!("{} exited at start ({st})", path.display())));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail(format!(
                "{} did not start within {START_TIMEOUT:?}",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(Started {
        seg,
        seg_name,
        child,
    })
}

/// Before the PMI barrier: say whether this node's engine runs.
pub fn publish(pmi: &mut Pmi, node: u32, started: &Result<Started, String>) -> MpiResult<()> {
    let v = match started {
        Ok(s) => format!("ok:{}", s.seg.addr()),
        Err(_) => "no".to_string(),
    };
    bootstrap::pmi_put(pmi, &engine_key(node), &v)
}

/// After the PMI barrier: if every node's engine runs, connect to ours.
/// `started` is this node's engine if this rank started it.
pub fn connect(
    pmi: &mut Pmi,
    job: &JobInfo,
    set: OffloadSet,
    secret: &[u8],
    started: Option<Result<Started, String>>,
) -> MpiResult<Option<Offload>> {
    let mut addrs = Vec::new();
    let mut all = true;
    for n in 0..job.node_count() as u32 {
        match bootstrap::pmi_get(pmi, &engine_key(n))? {
            Some(v) if v.starts_with("ok:") => {
                addrs.push(v[3..].to_string());
            }
            _ => all = false,
        }
    }
    let seg_name = engine_seg_name(job);
    let (seg, child) = match started {
        Some(Err(why)) => {
            lanai_common::say!(
                "lanai: node {}: offload engine unavailable ({why}); collectives run on the host",
                job.my_node()
            );
            return Ok(None);
        }
        Some(Ok(mut s)) => {
            let stdin = s.child.stdin.as_mut();
            if !all {
                // Another node has none: ours stands down.
                if let Some(i) = stdin {
                    let _ = i.write_all(b"stop\n");
                }
                let _ = s.child.wait();
                let _ = crate::shm::Segment::unlink(&s.seg_name);
                return Ok(None);
            }
            let node_of: Vec<String> = job.node_of.iter().map(u32::to_string).collect();
            let secret = if secret.is_empty() {
                "-".to_string()
            } else {
                String::from_utf8_lossy(secret).into_owned()
            };
            let mut line = format!("go {secret} {}", node_of.join(","));
            if job.node_count() > 1 {
                line += " ";
                line += &addrs.join(",");
            }
            line += "\n";
            let sent = stdin.map(|i| i.write_all(line.as_bytes()).and_then(|()| i.flush()));
            if !matches!(sent, Some(Ok(()))) {
                return Err(MpiError::other(format!(
                    "node {}: the offload engine stopped listening at start",
                    job.my_node()
                )));
            }
            (s.seg, Some(s.child))
        }
        None => {
            if !all {
                return Ok(None);
            }
            let seg = EngineSeg::open(&seg_name).map_err(|e| {
                MpiError::other(format!("cannot map the offload engine's segment: {e}"))
            })?;
            (seg, None)
        }
    };
    let me = job
        .local_ranks()
        .iter()
        .position(|&r| r == job.rank)
        .unwrap_or(0);
    seg.pid(me).store(std::process::id(), Ordering::Release);
    if seg.attach() {
        let _ = crate::shm::Segment::unlink(&seg_name);
    }
    Ok(Some(Offload {
        set,
        engine_pid: seg.engine_pid().load(Ordering::Acquire) as i32,
        seg,
        me,
        node: job.my_node(),
        eprefix: engine_prefix(&job.name_prefix()),
        posted: 0,
        slots: (0..SLOTS).map(|_| None).collect(),
        queue: VecDeque::new(),
        chunks_left: HashMap::new(),
        registered: HashSet::new(),
        child,
        trace: Trace::for_rank(&knobs::get(&knobs::ENGINE_TRACE), job.my_node(), me),
    }))
}

impl Offload {
    fn free_slot(&self) -> Option<usize> {
        self.slots.iter().position(Option::is_none)
    }

    /// Posts queued descriptors, in order, while slots are free.
    fn flush(&mut self, bell: Option<&Doorbell>) {
        while let Some(s) = self.free_slot() {
            let Some((d, input, p)) = self.queue.pop_front() else {
                break;
            };
            self.post(bell, s, d, &input, p);
        }
    }

    fn post(&mut self, bell: Option<&Doorbell>, s: usize, mut d: Desc, data: &[u8], p: Pending) {
        d.post_no = self.posted;
        self.posted = self.posted.wrapping_add(1);
        self.seg.write_desc(self.me, s, &d.encode());
        self.seg.write_data(self.me, s, data);
        self.seg
            .slot_state(self.me, s)
            .store(es::SLOT_POSTED, Ordering::Release);
        self.seg.posted(self.me).fetch_add(1, Ordering::SeqCst);
        if let Some(t) = self.trace.as_mut() {
            t.at(Event::Post, d.seq, self.me as u32);
        }
        self.slots[s] = Some(p);
        if self.seg.engine_sleeping().load(Ordering::SeqCst) != 0 {
            if let Some(b) = bell {
                b.ring_at(&self.eprefix, self.node);
            }
        }
    }

    pub fn busy(&self) -> bool {
        !self.queue.is_empty() || self.slots.iter().any(Option::is_some)
    }

    /// A rank about to sleep with slots in use wants to be rung when one
    /// finishes: a request may wait on it, or the rank on a free slot.
    pub fn set_sleeping(&self, on: bool) {
        if on && !self.busy() {
            return;
        }
        self.seg
            .sleeping(self.me)
            .store(u32::from(on), Ordering::SeqCst);
    }

    /// The engine process is gone (checked when a waiting rank wakes). A
    /// dead engine not yet reaped by the rank that started it is a zombie,
    /// which `kill(pid, 0)` still finds, so look at its state.
    pub fn engine_died(&mut self) -> Option<String> {
        let dead = match self.child.as_mut() {
            Some(c) => !matches!(c.try_wait(), Ok(None)),
            None => std::fs::read_to_string(format!("/proc/{}/stat", self.engine_pid))
                .ok()
                .and_then(|st| {
                    st.rsplit_once(')')
                        .map(|(_, rest)| rest.trim_start().to_string())
                })
                .is_none_or(|rest| rest.starts_with('Z') || rest.starts_with('X')),
        };
        dead.then(|| {
            format!(
                "the offload engine of node {} (pid {}) died",
                self.node, self.engine_pid
            )
        })
    }

    /// `MPI_Finalize`: tell the engine this rank is done; the node's first
    /// rank waits for its engine to leave.
    pub fn detach(&mut self, bell: Option<&Doorbell>) {
        self.seg.detached(self.me).store(1, Ordering::SeqCst);
        if let Some(b) = bell {
            b.ring_at(&self.eprefix, self.node);
        }
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(c.try_wait(), Ok(None)) {
                if Instant::now() > deadline {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// The operation and its inputs, as a collective entry point hands it over.
pub enum Offered<'a> {
    Barrier,
    Bcast {
        buf: UserBuf,
        root: u32,
    },
    Reduce {
        data: &'a [u8],
        out: Option<UserBuf>,
        root: u32,
        op: &'a Combiner,
    },
    Allreduce {
        data: &'a [u8],
        out: UserBuf,
        op: &'a Combiner,
    },
}

impl Engine {
    /// Runs the collective in the engine if `LANAI_OFFLOAD` asks for it and
    /// the engine can: `Some(request)`, else `None` (the host runs it).
    /// `blocking`: the caller waits at once (`MPI_Barrier`, not `MPI_Ibarrier`).
    /// Every rank decides alike: the inputs are the same on all of them.
    #[inline]
    pub fn try_offload(
        &mut self,
        comm: usize,
        what: Offered<'_>,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        // Inline, so a job without an engine pays one test per collective.
        if self.offload.is_none() {
            return Ok(None);
        }
        self.offer_to_engine(comm, what, blocking)
    }

    #[inline(never)]
    fn offer_to_engine(
        &mut self,
        comm: usize,
        what: Offered<'_>,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let Some(o) = self.offload.as_ref() else {
            return Ok(None);
        };
        let cm = self.comms.get(comm)?;
        if cm.is_inter() || cm.size < 2 {
            return Ok(None);
        }
        if o.set.auto {
            // Blocking, only a reduce whose host path makes non-roots wait
            // for their subtrees: a flat one returns at once anyway, and
            // the engine's hops only add latency (docs/decisions.md).
            let skew_bound = match what {
                Offered::Reduce { data, .. } => !self.flat_reduce_suits(cm.size, data.len()),
                _ => false,
            };
            if blocking && !skew_bound {
                return Ok(None);
            }
            // Within one node the shared-memory paths need no help.
            let node_of = &self.job.node_of;
            let first = node_of[cm.world_rank(0) as usize];
            if (1..cm.size).all(|r| node_of[cm.world_rank(r) as usize] == first) {
                return Ok(None);
            }
        }
        let (rank, size) = (cm.rank, cm.size);
        let algos = self.settings.algos;
        let (work, input, len, out, completes_at_post): (
            Work,
            Vec<u8>,
            usize,
            Option<CollOut>,
            bool,
        ) = match what {
            Offered::Barrier if o.set.barrier => (
                // The engine is the node's device unless software is asked for.
                if algos.barrier_wants_central() {
                    Work::DeviceBarrier {
                        // Under `auto` engines run only where every node
                        // gives each rank and engine a core, and there
                        // rounds beat the tree, as for the host's leaders.
                        k: if o.set.auto { 0 } else { algos.barrier_tree_k },
                    }
                } else {
                    Work::Barrier(algos.software_barrier(size))
                },
                Vec::new(),
                0,
                None,
                false,
            ),
            Offered::Bcast { buf, root } if o.set.bcast => {
                let me_root = rank == root;
                (
                    Work::Bcast {
                        root,
                        algo: algos.bcast,
                    },
                    if me_root {
                        buf.as_slice().to_vec()
                    } else {
                        Vec::new()
                    },
                    buf.len(),
                    (!me_root).then(|| CollOut::whole(buf)),
                    me_root,
                )
            }
            Offered::Reduce {
                data,
                out,
                root,
                op,
            } if o.set.reduce => {
                let Some(p) = op.predefined() else {
                    return Ok(None);
                };
                (
                    Work::Reduce {
                        root,
                        op: p,
                        tree: algos.reduce,
                    },
                    data.to_vec(),
                    data.len(),
                    out.filter(|_| rank == root).map(CollOut::whole),
                    rank != root,
                )
            }
            Offered::Allreduce { data, out, op } if o.set.allreduce => {
                let Some(p) = op.predefined() else {
                    return Ok(None);
                };
                (
                    Work::Allreduce {
                        op: p,
                        algo: algos.allreduce.resolve(size, data.len()),
                    },
                    data.to_vec(),
                    data.len(),
                    Some(CollOut::whole(out)),
                    false,
                )
            }
            _ => return Ok(None),
        };
        if 4 * size as usize > SLOT_BYTES {
            return Ok(None);
        }
        // Reductions split on element boundaries.
        let chunk = match work {
            Work::Reduce { op, .. } | Work::Allreduce { op, .. } => {
                SLOT_BYTES / op.elem.size() * op.elem.size()
            }
            _ => SLOT_BYTES,
        };
        let chunks = len.div_ceil(chunk).max(1);
        let Ok(nchunks) = u32::try_from(chunks) else {
            return Ok(None);
        };
        let cm = self.comms.get_mut(comm)?;
        let seq = cm.coll_seq;
        cm.coll_seq = cm.coll_seq.wrapping_add(nchunks);
        let ctx = cm.coll_ctx();
        let lead = cm.world_rank(0);
        if !self
            .offload
            .as_ref()
            .is_some_and(|o| o.registered.contains(&ctx))
        {
            let members: Vec<u8> = cm.members().iter().flat_map(|w| w.to_le_bytes()).collect();
            let d = Desc {
                work: Work::Register,
                post_no: 0,
                ctx,
                lead,
                seq: 0,
                rank,
                size,
                len: members.len() as u32,
            };
            self.offload_post(d, members, Pending::NOTHING);
            if let Some(o) = self.offload.as_mut() {
                o.registered.insert(ctx);
            }
        }
        let req = self.st.reqs.insert_on(Op::Coll, comm);
        if completes_at_post {
            self.st.reqs.complete(req, coll_status());
        } else if let Some(o) = self.offload.as_mut() {
            o.chunks_left.insert(req, nchunks);
        }
        for (i, at) in (0..len.max(1)).step_by(chunk).enumerate() {
            let clen = chunk.min(len - at.min(len));
            let work = match work {
                Work::Allreduce { op, .. } => Work::Allreduce {
                    op,
                    algo: algos.allreduce.resolve(size, clen),
                },
                w => w,
            };
            let d = Desc {
                work,
                post_no: 0,
                ctx,
                lead,
                seq: seq.wrapping_add(i as u32),
                rank,
                size,
                len: clen as u32,
            };
            let data = if d.input_len() == 0 {
                Vec::new()
            } else {
                input[at..at + clen].to_vec()
            };
            let p = Pending {
                req: (!completes_at_post).then_some(req),
                out: out.clone(),
                at,
            };
            self.offload_post(d, data, p);
        }
        Ok(Some(req))
    }

    /// Queues a descriptor and posts what fits in free slots.
    fn offload_post(&mut self, d: Desc, input: Vec<u8>, p: Pending) {
        let bell = self.net.doorbell.as_ref();
        if let Some(o) = self.offload.as_mut() {
            o.queue.push_back((d, input, p));
            o.flush(bell);
        }
    }

    /// Completes the requests whose slots the engine finished.
    pub(super) fn drive_offload(&mut self) -> MpiResult<bool> {
        let Some(o) = self.offload.as_mut() else {
            return Ok(false);
        };
        let mut did = false;
        for s in 0..o.slots.len() {
            if o.slots[s].is_none() {
                continue;
            }
            let st = o.seg.slot_state(o.me, s).load(Ordering::Acquire);
            if st != es::SLOT_DONE && st != es::SLOT_FAILED {
                continue;
            }
            did = true;
            if let Some(t) = o.trace.as_mut() {
                t.at(Event::Seen, 0, o.me as u32);
            }
            let p = o.slots[s].take().unwrap_or(Pending::NOTHING);
            let n = o.seg.result_len(o.me, s).load(Ordering::Relaxed) as usize;
            let res = o.seg.read_data(o.me, s, n);
            o.seg
                .slot_state(o.me, s)
                .store(es::SLOT_FREE, Ordering::Release);
            if st == es::SLOT_FAILED {
                return Err(MpiError::internal(format!(
                    "offload engine: {}",
                    String::from_utf8_lossy(&res)
                )));
            }
            if let Some(out) = &p.out {
                out.deliver_at(p.at, &res);
            }
            if let Some(req) = p.req {
                let left = o.chunks_left.get_mut(&req).map_or(0, |n| {
                    *n -= 1;
                    *n
                });
                if left == 0 {
                    o.chunks_left.remove(&req);
                    self.st.reqs.complete(req, coll_status());
                }
            }
        }
        if did {
            o.flush(self.net.doorbell.as_ref());
        }
        Ok(did)
    }

    /// `MPI_Comm_free`: the engine may forget the communicator.
    pub(super) fn offload_forget(&mut self, comm: &Comm) -> MpiResult<()> {
        let ctx = comm.coll_ctx();
        if !self
            .offload
            .as_mut()
            .is_some_and(|o| o.registered.remove(&ctx))
        {
            return Ok(());
        }
        let d = Desc {
            work: Work::Unregister,
            post_no: 0,
            ctx,
            lead: comm.world_rank(0),
            seq: 0,
            rank: comm.rank,
            size: comm.size,
            len: 0,
        };
        self.offload_post(d, Vec::new(), Pending::NOTHING);
        Ok(())
    }

    /// `MPI_Finalize`: waits for this rank's slots, then detaches.
    pub(super) fn offload_finish(&mut self) -> MpiResult<()> {
        if self.offload.is_none() {
            return Ok(());
        }
        self.wait_until(|e| !e.offload.as_ref().is_some_and(Offload::busy))?;
        let bell = self.net.doorbell.as_ref();
        if let Some(o) = self.offload.as_mut() {
            o.detach(bell);
            if let Some(t) = o.trace.take() {
                t.write().map_err(MpiError::other)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offload_sets_parse() {
        let auto = OffloadSet::parse("auto").unwrap();
        assert!(auto.auto && auto.any());
        let all = OffloadSet::parse("all").unwrap();
        assert!(!all.auto && all.barrier && all.reduce);
        let some = OffloadSet::parse("reduce, bcast").unwrap();
        assert!(some.reduce && some.bcast && !some.barrier && !some.allreduce && !some.auto);
        assert!(!OffloadSet::parse("none").unwrap().any());
        assert!(OffloadSet::parse("barier").unwrap_err().contains("barier"));
    }

    #[test]
    fn auto_wants_nodes_and_a_core_per_engine() {
        // One node: nothing to offload.
        assert!(!auto_fits(1, 2, 1, 16));
        // Two ranks and their engine on 4 cores: room.
        assert!(auto_fits(2, 2, 1, 4));
        // This 2-core VM with emulated nodes: 2 ranks + 2 engines do not fit.
        assert!(!auto_fits(2, 2, 2, 2));
        assert!(auto_fits(4, 8, 4, 16));
        assert!(!auto_fits(4, 16, 4, 16));
    }
}
