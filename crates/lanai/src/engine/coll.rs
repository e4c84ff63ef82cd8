//! Host-based collectives: drives `lanai_coll`'s sans-IO machines over the
//! engine's transports. Messages carry the collective context and the
//! instance's sequence number, so early arrivals wait for their instance.

use super::call_check::{self, Call};
use super::coll_ref;
use super::comm::RankMap;
use super::error::{MpiError, MpiResult};
use super::offload::Offered;
use super::request::{Op, Status, DONE};
use super::riding::{self, Blocks, Riding, Source};
use super::transfers::{
    allgather_as_transfers, BCAST_TRANSFER_MIN, LINEAR_GATHER_MAX, TRANSFER_MIN,
};
use super::Engine;
use crate::abi::userbuf::UserBuf;
use lanai_coll::{
    AllgatherAlgo, AllreduceAlgo, BarrierAlgo, BcastAlgo, CollError, Collective, Combine, Head,
    Layout, Outgoing, ReduceTree, ScanAlgo,
};
use lanai_common::knobs;
use lanai_wire::envelope::{Envelope, Kind};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

type Machine = Box<dyn Collective + Send>;
/// An instance's name: its collective context and sequence number.
type Key = (u32, u32);
/// Keys are small and made by us, so FNV beats the default's SipHash here.
type KeyMap<V> = HashMap<Key, V, fnv::FnvBuildHasher>;
/// A reduction operator as the engine carries it. Predefined operators
/// are held inline, so a small reduction allocates nothing for its operator.
/// How a reduction's operation becomes a [`Combiner`]: only on the ranks
/// that combine, so that a reduce's non-root builds nothing. Inlined where
/// it is made, so the result stays out of memory (`docs/decisions.md`).
pub trait MakeCombiner: Copy {
    /// The combiner; fails as the entry point's check of it would.
    fn make(self) -> MpiResult<Combiner>;
}

pub enum Combiner {
    Predefined(lanai_coll::Predefined),
    Other(Box<dyn Combine + Send>),
}

impl Combine for Combiner {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), lanai_coll::OpError> {
        match self {
            Combiner::Predefined(p) => p.combine(lower, higher),
            Combiner::Other(o) => o.combine(lower, higher),
        }
    }

    fn commutative(&self) -> bool {
        match self {
            Combiner::Predefined(p) => p.commutative(),
            Combiner::Other(o) => o.commutative(),
        }
    }

    fn elem_size(&self) -> Option<usize> {
        match self {
            Combiner::Predefined(p) => p.elem_size(),
            Combiner::Other(o) => o.elem_size(),
        }
    }

    fn predefined(&self) -> Option<lanai_coll::Predefined> {
        match self {
            Combiner::Predefined(p) => Some(*p),
            Combiner::Other(o) => o.predefined(),
        }
    }

    fn kernel(&self) -> Option<lanai_coll::Kernel> {
        match self {
            Combiner::Predefined(p) => p.kernel(),
            Combiner::Other(o) => o.kernel(),
        }
    }
}
/// A collective message as delivered: whole, or a head and a body that
/// came apart (a message passed by reference, `coll_ref.rs`), which a
/// machine may keep without copying.
#[derive(Debug, Clone)]
pub enum Msg<'a> {
    Whole(Cow<'a, [u8]>),
    Parts(Head, Vec<u8>),
}

impl Msg<'_> {
    pub fn into_owned(self) -> Msg<'static> {
        match self {
            Msg::Whole(b) => Msg::Whole(Cow::Owned(b.into_owned())),
            Msg::Parts(h, b) => Msg::Parts(h, b),
        }
    }

    fn feed(self, m: &mut dyn Collective, from: u32) -> Result<(), CollError> {
        match self {
            Msg::Whole(b) => m.handle_message(from, &b),
            Msg::Parts(h, b) => m.handle_parts(from, &h, b),
        }
    }

    /// The whole message's bytes (a copy).
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Msg::Whole(b) => b.to_vec(),
            Msg::Parts(h, b) => [&h[..], b].concat(),
        }
    }
}

/// A message for an instance not started yet, in arrival order.
#[derive(Debug)]
pub(super) enum Early {
    /// Its envelope (instance and sender), the world rank it came from,
    /// and the message.
    Msg {
        env: Envelope,
        from: u32,
        msg: Msg<'static>,
    },
    /// Passed by reference and not read yet (`coll_ref.rs`).
    Ref(super::coll_ref::Unread),
}

/// One copy from a finished collective's result into the user's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Byte offset in the result.
    pub src: usize,
    /// Byte offset in the user's buffer.
    pub dst: usize,
    pub len: usize,
}

/// Where a collective's result lands: the whole result at offset 0, or only
/// the listed pieces, so bytes MPI says are not ours stay untouched.
#[derive(Debug, Clone)]
pub struct CollOut {
    buf: UserBuf,
    pieces: Option<Vec<Piece>>,
}

impl CollOut {
    /// The result goes to the start of `buf` (truncated to its length).
    pub fn whole(buf: UserBuf) -> Self {
        Self { buf, pieces: None }
    }

    /// Only the blocks of `layout` are copied, each to the same offset.
    pub fn blocks(buf: UserBuf, layout: &Layout) -> Self {
        Self {
            buf,
            pieces: Some(layout_pieces(layout)),
        }
    }

    /// Copies `res` to byte `at` of a whole-buffer result: one chunk of a
    /// pipelined offloaded operation.
    pub(super) fn deliver_at(&self, at: usize, res: &[u8]) {
        if at == 0 || self.pieces.is_some() {
            debug_assert!(at == 0, "chunked results go to whole buffers");
            return self.deliver(res);
        }
        let dst = self.buf.as_mut_slice();
        let end = at.saturating_add(res.len()).min(dst.len());
        if at < end {
            dst[at..end].copy_from_slice(&res[..end - at]);
        }
    }

    /// Copies `res` out (see `place`).
    pub(super) fn deliver(&self, res: &[u8]) {
        match &self.pieces {
            None => {
                self.buf.write(res);
            }
            Some(pieces) => place(pieces, res, self.buf.as_mut_slice()),
        }
    }
}

/// One piece per non-empty block of `layout`, at the same offset both sides.
fn layout_pieces(layout: &Layout) -> Vec<Piece> {
    layout
        .counts()
        .iter()
        .zip(layout.displs())
        .filter(|(c, _)| **c > 0)
        .map(|(&len, &d)| Piece {
            src: d,
            dst: d,
            len,
        })
        .collect()
}

/// Copies each piece of `res` into `dst`; a piece reaching past either end
/// is clipped (the ABI layer sized the buffer from the same layout, so that
/// is a bug guard, not a user error).
fn place(pieces: &[Piece], res: &[u8], dst: &mut [u8]) {
    for p in pieces {
        let len = p
            .len
            .min(res.len().saturating_sub(p.src))
            .min(dst.len().saturating_sub(p.dst));
        if len > 0 {
            dst[p.dst..p.dst + len].copy_from_slice(&res[p.src..p.src + len]);
        }
    }
}

struct Instance {
    ctx: u32,
    seq: u32,
    rank: u32,
    map: RankMap,
    machine: Machine,
    req: usize,
    /// Where the result goes, written when the instance completes.
    out: Option<CollOut>,
    error: Option<CollError>,
    /// The user's call that started it, which its messages carry
    /// (`call_check.rs`); `None` for an instance no call signed.
    call: Option<Call>,
    /// A member's call differs, or a member said the instance failed.
    fault: Option<Fault>,
    /// Its call was shown to the other members ([`Engine::show_calls`]).
    shown: bool,
    /// Cookies of the messages it lent (`coll_ref.rs`), so that past the
    /// lending bound it waits for its own and asks only their receivers.
    lent: Vec<u64>,
    /// Listed in `Colls::ready`.
    queued: bool,
}

impl Instance {
    /// A member's message showed another function, form or root than
    /// this rank's call: no use waiting for the liveness check.
    fn conclusive_fault(&self) -> bool {
        match (self.fault, self.call) {
            (Some(Fault::Sig { sig, .. }), Some(mine)) => mine.differs_beyond_size(sig),
            (Some(Fault::Shown { .. }), _) => true,
            _ => false,
        }
    }
}

/// Every member of `cm`: its rank there, and its world rank.
fn comm_members(cm: &super::comm::Comm) -> Vec<(u32, u32)> {
    match &cm.map {
        RankMap::Identity => (0..cm.size).map(|r| (r, r)).collect(),
        RankMap::List(l) => (0..).zip(l.iter().copied()).collect(),
    }
}

/// A notice about an instance (`Kind::CollNotice`): its call `call`, from
/// its member `from`; `flags` 0 (the calls differ), or
/// [`coll_ref::SHOWN`].
struct Notice {
    ctx: u32,
    seq: u32,
    from: u32,
    call: Call,
    flags: u8,
}

impl Instance {
    /// Every member: its rank in the instance, and its world rank.
    fn members(&self, world_size: u32) -> Vec<(u32, u32)> {
        match &self.map {
            RankMap::Identity => (0..world_size).map(|r| (r, r)).collect(),
            RankMap::List(l) => (0..).zip(l.iter().copied()).collect(),
        }
    }

    fn about(&self, call: Call, flags: u8) -> Notice {
        Notice {
            ctx: self.ctx,
            seq: self.seq,
            from: self.rank,
            call,
            flags,
        }
    }
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("ctx", &self.ctx)
            .field("seq", &self.seq)
            .finish()
    }
}

/// Collective instances in flight and messages that arrived before theirs.
#[derive(Debug, Default)]
pub struct Colls {
    active: Vec<Instance>,
    /// Where each active instance is in `active`.
    index: KeyMap<usize>,
    /// Active instances started or fed since they were last driven. A
    /// machine changes only then, so a pass drives these alone, however
    /// many others wait.
    ready: Vec<Key>,
    /// Instances done but for their lent messages, past the lending bound
    /// (`coll_ref.rs`): apart, so that thousands of them waiting cost a
    /// pass nothing until an answer comes.
    held: Vec<Instance>,
    /// `CollRefs::generation` when `held` was last looked at.
    held_seen: u64,
    /// Barriers running on the central device.
    pub central: Vec<super::central::CentralOp>,
    /// Reduces running through the device's mailboxes.
    pub mail: Vec<super::central_reduce::MailOp>,
    early: KeyMap<Vec<Early>>,
    dirty: bool,
    /// Buffers the shared-memory reductions fold in, kept between calls so
    /// a small reduction allocates nothing.
    spare: Vec<Vec<u8>>,
    /// Large messages passed by reference (`coll_ref.rs`).
    pub refs: super::coll_ref::CollRefs,
    /// Where a staged reduce's root keeps the partial results it may not
    /// leave in the parts (`lanai_coll::fold_into`), kept between calls.
    pub fold_scratch: Vec<u8>,
    /// Why collectives failed (an instance for a `Fault`, a mailbox op),
    /// by request cookie (index and generation, so a reused slot never
    /// reads an old one's), until their blocking call reads it; the
    /// latest [`FAILURES_KEPT`].
    failures: VecDeque<(u64, MpiError)>,
}

/// Why a member's call and this rank's, for the same instance, cannot meet.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// A message from member `from` whose call folds to `sig`.
    Sig { from: u32, sig: u16 },
    /// Member `from` found that the members' calls differ; its own call,
    /// when it said.
    Notice { from: u32, theirs: Option<Call> },
    /// Member `from`, waiting long in the instance, showed its call, and
    /// it is not this rank's.
    Shown { from: u32, theirs: Call },
    /// Member `from` sent `len` bytes point to point under the instance's
    /// number (`transfers.rs`): its size took another path.
    Crossed { from: u32, len: u64 },
}

/// Failure messages kept for requests not waited on yet.
const FAILURES_KEPT: usize = 16;

/// Largest contribution a flat reduce carries (`Engine::flat_reduce_suits`):
/// the root holds every rank's at once.
const FLAT_REDUCE_MAX: usize = 1024;
/// Ranks up to which reduces are flat.
const FLAT_REDUCE_RANKS: u32 = 16;

/// Spare fold buffers kept, and the largest kept: the device paths fold at
/// most a few KiB per call.
const SPARE_BUFS: usize = 4;
const SPARE_MAX: usize = 1 << 16;

impl Colls {
    /// A message for the instance `env` names (its `ctx`, and its `tag`
    /// as the sequence number), from communicator rank `env.src`, world
    /// rank `from`; an owned one is kept as it is when the instance has
    /// not started yet. True when the instance has it now.
    pub fn deliver(&mut self, env: &Envelope, from: u32, msg: Msg<'_>) -> bool {
        self.dirty = true;
        let (ctx, seq) = (env.ctx, env.tag as u32);
        match self.index.get(&(ctx, seq)) {
            Some(&i) => {
                let inst = &mut self.active[i];
                let sig = inst.call.map_or(0, |c| c.sig());
                if sig != 0 && env.sig != 0 && sig != env.sig {
                    let fault = Fault::Sig {
                        from: env.src,
                        sig: env.sig,
                    };
                    if inst.conclusive_fault() {
                        // Failing already: nothing more to feed.
                    } else if inst.call.is_some_and(|c| c.differs_beyond_size(env.sig)) {
                        // Another function, form or root: the machine must
                        // not take the message for its own. The instance
                        // fails when next driven.
                        inst.fault = Some(fault);
                    } else {
                        // Only the size differs. The instance may still
                        // end, with the machine's own error or none; if it
                        // is still waiting at the next liveness check, it
                        // fails then.
                        inst.fault.get_or_insert(fault);
                    }
                }
                if inst.conclusive_fault() {
                    if !inst.queued {
                        inst.queued = true;
                        self.ready.push((ctx, seq));
                    }
                    return true;
                }
                if let Err(e) = msg.feed(&mut inst.machine, env.src) {
                    inst.error.get_or_insert(e);
                }
                if !inst.queued {
                    inst.queued = true;
                    self.ready.push((ctx, seq));
                }
                true
            }
            None => {
                self.early.entry((ctx, seq)).or_default().push(Early::Msg {
                    env: *env,
                    from,
                    msg: msg.into_owned(),
                });
                false
            }
        }
    }

    /// Keeps reference `u` unread until its instance starts; gives it back
    /// when the instance is running, for the caller to read now.
    pub(super) fn defer_ref(
        &mut self,
        u: super::coll_ref::Unread,
    ) -> Result<(), super::coll_ref::Unread> {
        let key = u.instance();
        if self.index.contains_key(&key) {
            return Err(u);
        }
        self.early.entry(key).or_default().push(Early::Ref(u));
        Ok(())
    }

    /// Messages waiting for instance (`ctx`, `seq`) to start, in arrival
    /// order, as (sender, bytes); a reference not read yet shows as its
    /// body's length in place of its bytes.
    #[cfg(test)]
    pub fn early(&self, ctx: u32, seq: u32) -> Vec<(u32, Vec<u8>)> {
        self.early
            .get(&(ctx, seq))
            .map(|v| {
                v.iter()
                    .map(|e| match e {
                        Early::Msg { env, msg, .. } => (env.src, msg.to_vec()),
                        Early::Ref(u) => (u.src(), u.body_len().to_le_bytes().to_vec()),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Takes the messages waiting for instance (`ctx`, `seq`), as starting
    /// it does.
    #[cfg(test)]
    pub(super) fn take_early(&mut self, ctx: u32, seq: u32) -> Vec<Early> {
        self.early.remove(&(ctx, seq)).unwrap_or_default()
    }

    /// Runs `machine` as instance (`ctx`, `seq`) with nothing around it,
    /// as far as delivery is concerned.
    #[cfg(test)]
    pub(super) fn activate(&mut self, ctx: u32, seq: u32, machine: Machine) {
        self.push_active(Instance {
            ctx,
            seq,
            rank: 0,
            map: RankMap::Identity,
            machine,
            req: 0,
            out: None,
            error: None,
            call: None,
            fault: None,
            shown: false,
            lent: Vec::new(),
            queued: false,
        });
    }

    /// Instance (`ctx`, `seq`) as if call `call` had started it.
    #[cfg(test)]
    fn sign(&mut self, ctx: u32, seq: u32, call: Call) {
        let i = self.index[&(ctx, seq)];
        self.active[i].call = Some(call);
    }

    /// Adds a started instance, to be driven on the next pass.
    fn push_active(&mut self, mut inst: Instance) {
        let key = (inst.ctx, inst.seq);
        inst.queued = true;
        self.ready.push(key);
        self.index.insert(key, self.active.len());
        self.active.push(inst);
        self.dirty = true;
    }

    /// Lists instances `keys` (those still active) to be driven again: a
    /// pass that failed did not get to them.
    fn requeue(&mut self, keys: &[Key]) {
        for key in keys {
            if let Some(&i) = self.index.get(key) {
                if !self.active[i].queued {
                    self.active[i].queued = true;
                    self.ready.push(*key);
                }
            }
        }
        self.dirty = true;
    }

    /// Takes the instance at `at` out of the active ones.
    fn remove_active(&mut self, at: usize) -> Instance {
        let inst = self.active.swap_remove(at);
        self.index.remove(&(inst.ctx, inst.seq));
        if let Some(moved) = self.active.get(at) {
            self.index.insert((moved.ctx, moved.seq), at);
        }
        inst
    }

    /// A notice (`Kind::CollNotice`, the sender's call in `body`) about
    /// instance (`env.ctx`, `env.tag`). Member `env.src` found that the
    /// members' calls differ: the instance fails if it is still running
    /// here at the next liveness check. Or (`SHOWN`) it shows its call: if
    /// it is not this rank's, the instance fails when next driven. False
    /// if no instance of that number runs here (one that is over or not
    /// started has nothing to fail).
    pub fn fault_notice(&mut self, env: &Envelope, body: &[u8]) -> bool {
        let key = (env.ctx, env.tag as u32);
        let Some(&i) = self.index.get(&key) else {
            return false;
        };
        let theirs = Call::from_body(body);
        let inst = &mut self.active[i];
        if env.flags & coll_ref::SHOWN != 0 {
            // Not a failure yet: a member waiting long shows its call.
            let (Some(mine), Some(theirs)) = (inst.call, theirs) else {
                return true;
            };
            if mine != theirs && !inst.conclusive_fault() {
                inst.fault = Some(Fault::Shown {
                    from: env.src,
                    theirs,
                });
                if !inst.queued {
                    inst.queued = true;
                    self.ready.push(key);
                }
                self.dirty = true;
            }
            return true;
        }
        // Acted on at the liveness check (`Engine::fail_faulted`), not by
        // driving the instance.
        inst.fault.get_or_insert(Fault::Notice {
            from: env.src,
            theirs,
        });
        true
    }

    /// The sender and `sig` of a message that waits for instance (`ctx`,
    /// `seq`), which has not started here.
    pub fn early_from(&self, ctx: u32, seq: u32) -> Option<(u32, u16)> {
        self.early.get(&(ctx, seq))?.first().map(|e| match e {
            Early::Msg { env, .. } => (env.src, env.sig),
            Early::Ref(u) => (u.src(), u.sig()),
        })
    }

    /// Keeps why the request of `cookie` ([`super::request::Requests::cookie`]) failed,
    /// for its blocking call to read: the status that completes it
    /// carries only the error's class.
    pub fn keep_failure(&mut self, cookie: u64, err: MpiError) {
        if self.failures.len() == FAILURES_KEPT {
            self.failures.pop_front();
        }
        self.failures.push_back((cookie, err));
    }

    /// The message the collective of request `cookie` failed with, if one
    /// was kept ([`Colls::keep_failure`]).
    pub fn take_failure(&mut self, cookie: u64) -> Option<MpiError> {
        let at = self.failures.iter().position(|(c, _)| *c == cookie)?;
        self.failures.remove(at).map(|(_, e)| e)
    }

    /// Makes the next `drive_colls` run although no instance was fed: an
    /// answer came or a lent message was sent inline, so instances held
    /// past the lending bound are looked at again.
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    pub fn has_work(&self) -> bool {
        self.dirty
    }

    /// A fold buffer from the spares when there is one. Its contents are
    /// the last user's: every user writes each part before reading it, and
    /// a buffer of the same length is then reused without a clearing pass.
    pub fn take_buf(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Gives a fold buffer back for the next call.
    pub fn give_buf(&mut self, v: Vec<u8>) {
        if self.spare.len() < SPARE_BUFS && v.capacity() <= SPARE_MAX {
            self.spare.push(v);
        }
    }

    /// Device barriers in flight on communicator `comm`.
    pub fn central_on(&self, comm: usize) -> usize {
        self.central.iter().filter(|o| o.comm() == comm).count()
            + self.mail.iter().filter(|o| o.comm() == comm).count()
    }
}

/// A machine refused its arguments: mostly counts that do not add up, which
/// the caller can cause, so they get the MPI class that names the cause.
pub(super) fn coll_err(e: CollError) -> MpiError {
    use crate::abi::consts as c;
    let class = match e {
        CollError::LocalLengthMismatch { .. } | CollError::DataLengthMismatch { .. } => {
            c::MPI_ERR_TRUNCATE
        }
        CollError::BlockBeyondBuffer { .. } | CollError::CountsLengthMismatch { .. } => {
            c::MPI_ERR_ARG
        }
        CollError::SizeOverflow | CollError::NotWholeElements { .. } => c::MPI_ERR_COUNT,
        CollError::RootOutOfRange { .. } => c::MPI_ERR_ROOT,
        CollError::Op(_) => c::MPI_ERR_OP,
        _ => c::MPI_ERR_OTHER,
    };
    MpiError::new(class, e.to_string())
}

/// A peer's message that this rank's instance cannot take. In a correct
/// program that is a bug here; where the ranks' calls disagree (counts,
/// datatypes or root) it is the program's, and the class says so as
/// MPICH's and Open MPI's do: a length that differs is a truncation.
pub(super) fn protocol_err(e: CollError) -> MpiError {
    use crate::abi::consts as c;
    match e {
        CollError::DataLengthMismatch { .. } => MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!("the ranks' counts or datatypes disagree: {e}"),
        ),
        CollError::UnexpectedMessage { .. }
        | CollError::DuplicateMessage { .. }
        | CollError::MalformedMessage { .. } => MpiError::new(
            c::MPI_ERR_OTHER,
            format!(
                "collective protocol error: {e} (do all ranks pass the same counts, \
                 datatypes and root?)"
            ),
        ),
        // A failed fold, say: the class `coll_err` gives it anyway.
        _ => coll_err(e),
    }
}

/// How barriers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarrierChoice {
    /// The device when the communicator gets a channel, unless it spans
    /// nodes whose ranks each have a core; else the software barrier with
    /// the fewest rounds (`Algorithms::software_barrier`).
    Auto,
    /// The device; the software barrier with the fewest rounds when no
    /// channel is free.
    Central,
    Software(BarrierAlgo),
}

/// `LANAI_SCAN=auto`'s algorithm off the mailboxes: the chain. Recursive
/// doubling has fewer steps in sequence, but a member cannot leave a scan
/// before its last exchange, where a chain's members pass the prefix on
/// and go, so successive scans overlap along it. 8-byte scans in loops of
/// 2000 (medians of 3 launches, chain / doubling / Open MPI, us): 8 ranks
/// on 8 emulated nodes 49 / 238 / 20, 4 on 4 19 / 82 / 12, 2 on 2 8.5 /
/// 17.6 / 7.0; 1 KiB at 8 ranks on 2 nodes 28 / 160 / 34 and on one node
/// 18 / 60 / 20; 64 KiB at 8 on 8 530 / 1221 / 742.
const SCAN_AUTO: ScanAlgo = ScanAlgo::Chain;

/// Collective algorithms chosen by knobs, read once at `MPI_Init`.
#[derive(Debug, Clone, Copy)]
pub struct Algorithms {
    pub barrier: BarrierChoice,
    /// Central barrier channels per node (0: no device).
    pub barrier_channels: usize,
    /// Fan-out of the tree of node leaders.
    pub barrier_tree_k: u32,
    pub bcast: BcastAlgo,
    pub allreduce: AllreduceAlgo,
    /// `None`: `auto` ([`SCAN_AUTO`], or the mailboxes).
    pub scan: Option<ScanAlgo>,
    pub reduce: ReduceTree,
    /// `LANAI_REDUCE=auto`: small reduces on one node use the device's
    /// mailboxes, and others may be flat.
    pub reduce_auto: bool,
    /// `LANAI_NODE_COLL=auto`: the other collectives on one node may use
    /// the device (`riding.rs`) and the staging slots.
    pub node_colls: bool,
}

impl Algorithms {
    pub fn from_knobs() -> MpiResult<Self> {
        let barrier = match knobs::get(&knobs::BARRIER).as_str() {
            "auto" => BarrierChoice::Auto,
            "central" => BarrierChoice::Central,
            "pairwise" => BarrierChoice::Software(BarrierAlgo::PairwiseExchange),
            other => BarrierChoice::Software(other.parse().map_err(|e| {
                MpiError::other(format!(
                    "LANAI_BARRIER: {e}; the choices are auto, central, dissemination, pairwise, binomial"
                ))
            })?),
        };
        let barrier_channels =
            knobs::get_usize(&knobs::BARRIER_CHANNELS).map_err(MpiError::other)?;
        let barrier_tree_k = knobs::get_usize(&knobs::BARRIER_TREE_K)
            .map_err(MpiError::other)
            .and_then(|k| {
                u32::try_from(k)
                    .map_err(|_| MpiError::other(format!("LANAI_BARRIER_TREE_K={k}: too large")))
            })?;
        let allreduce = knobs::get(&knobs::ALLREDUCE)
            .parse()
            .map_err(|e| MpiError::other(format!("LANAI_ALLREDUCE: {e}")))?;
        let bcast = knobs::get(&knobs::BCAST)
            .parse()
            .map_err(|e| MpiError::other(format!("LANAI_BCAST: {e}")))?;
        let scan = match knobs::get(&knobs::SCAN).as_str() {
            "auto" => None,
            v => Some(v.parse().map_err(|e| {
                MpiError::other(format!(
                    "LANAI_SCAN: {e}; the choices are auto, chain, recursive_doubling"
                ))
            })?),
        };
        let reduce_knob = knobs::get(&knobs::REDUCE);
        let reduce = match reduce_knob.as_str() {
            "auto" | "binomial" => ReduceTree::Binomial,
            "kary" => {
                let k = knobs::get_usize(&knobs::REDUCE_FANOUT).map_err(MpiError::other)?;
                match u32::try_from(k) {
                    Ok(k) if k >= 1 => ReduceTree::Kary(k),
                    _ => {
                        return Err(MpiError::other(format!(
                            "LANAI_REDUCE_FANOUT={k}: must be 1 or more"
                        )))
                    }
                }
            }
            v => {
                return Err(MpiError::other(format!(
                    "LANAI_REDUCE={v:?}: the choices are auto, binomial, kary"
                )))
            }
        };
        let node_colls = match knobs::get(&knobs::NODE_COLL).as_str() {
            "auto" => true,
            "messages" => false,
            v => {
                return Err(MpiError::other(format!(
                    "LANAI_NODE_COLL={v:?}: the choices are auto, messages"
                )))
            }
        };
        Ok(Self {
            node_colls,
            barrier,
            barrier_channels,
            barrier_tree_k,
            bcast,
            allreduce,
            scan,
            reduce,
            reduce_auto: reduce_knob == "auto",
        })
    }

    pub fn barrier_wants_central(&self) -> bool {
        self.barrier_channels > 0
            && matches!(self.barrier, BarrierChoice::Auto | BarrierChoice::Central)
    }

    /// The software barrier on `size` ranks: the one asked for, else the
    /// fewest rounds: pairwise exchange on a power of two (log2 P rounds,
    /// and with ranks placed in blocks its first rounds stay on a node),
    /// dissemination otherwise (pairwise needs two more rounds to fold).
    pub fn software_barrier(&self, size: u32) -> BarrierAlgo {
        match self.barrier {
            BarrierChoice::Software(a) => a,
            _ if size.is_power_of_two() => BarrierAlgo::PairwiseExchange,
            _ => BarrierAlgo::Dissemination,
        }
    }
}

/// The error of a collective whose status carries one: a transfer that
/// failed (`transfers.rs`) or a mailbox op (`central_reduce.rs`), naming
/// the member it came from when one is known.
pub fn coll_failure(st: &Status) -> MpiError {
    use crate::abi::consts as c;
    let from = st.source;
    match st.error {
        c::MPI_ERR_TRUNCATE if from < 0 => MpiError::new(
            c::MPI_ERR_TRUNCATE,
            "the ranks' counts or datatypes disagree: a member's block and the size this rank \
             expects of it differ",
        ),
        c::MPI_ERR_TRUNCATE => MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!(
                "the ranks' counts or datatypes disagree: rank {from} sent a block of another \
                 size than this rank's counts give it"
            ),
        ),
        class if from < 0 => MpiError::new(class, "this rank's part of the collective failed"),
        class => MpiError::new(class, format!("a transfer with rank {from} failed")),
    }
}

/// Status of a completed collective request: it involved no one message.
/// Its `MPI_ANY_TAG`, which no message of the program carries, tells a
/// failed collective apart when it is waited on ([`coll_failure`]).
pub(super) fn coll_status() -> Status {
    use crate::abi::consts as c;
    Status {
        source: c::MPI_ANY_SOURCE,
        tag: c::MPI_ANY_TAG,
        ..Status::default()
    }
}

impl Engine {
    /// Starts a collective instance on `comm` with `machine`; its whole
    /// result goes to `out`. Returns the request index.
    pub fn start_coll(
        &mut self,
        comm: usize,
        machine: Machine,
        out: Option<UserBuf>,
    ) -> MpiResult<usize> {
        self.start_coll_to(comm, machine, out.map(CollOut::whole))
    }

    /// Starts a collective instance whose result is placed as `out` says.
    pub fn start_coll_to(
        &mut self,
        comm: usize,
        machine: Machine,
        out: Option<CollOut>,
    ) -> MpiResult<usize> {
        let seq = self.reserve_coll_seq(comm)?;
        self.start_coll_as(comm, seq, machine, out)
    }

    /// Takes `comm`'s next collective number, for an instance that starts
    /// later (every member numbers its instances in the order of the calls).
    pub(super) fn reserve_coll_seq(&mut self, comm: usize) -> MpiResult<u32> {
        let cm = self.comms.get_mut(comm)?;
        super::intercomm::reject(cm)?;
        let seq = cm.coll_seq;
        cm.coll_seq = cm.coll_seq.wrapping_add(1);
        Ok(seq)
    }

    /// Starts instance `seq` (from [`Engine::reserve_coll_seq`]) on `comm`.
    pub(super) fn start_coll_as(
        &mut self,
        comm: usize,
        seq: u32,
        machine: Machine,
        out: Option<CollOut>,
    ) -> MpiResult<usize> {
        let cm = self.comms.get(comm)?;
        let (ctx, rank, map) = (cm.coll_ctx(), cm.rank, cm.map.clone());
        let req = self.start_instance(ctx, seq, rank, map, machine, out)?;
        if let Some(r) = self.st.reqs.get_mut(req) {
            r.comm = Some(comm);
        }
        Ok(req)
    }

    /// Starts `machine` as instance `seq` of collective context `ctx`, where
    /// this rank is `rank` and `map` turns the machine's ranks into world ranks.
    pub(super) fn start_instance(
        &mut self,
        ctx: u32,
        seq: u32,
        rank: u32,
        map: RankMap,
        machine: Machine,
        out: Option<CollOut>,
    ) -> MpiResult<usize> {
        let req = self.st.reqs.insert(Op::Coll);
        self.st.colls.push_active(Instance {
            ctx,
            seq,
            rank,
            map,
            machine,
            req,
            out,
            error: None,
            call: self.signing_call(),
            fault: None,
            shown: false,
            lent: Vec::new(),
            queued: false,
        });
        // The machine's first messages go out before the early ones are
        // handed over: reading those passed by reference takes a while, and
        // peers may be waiting for ours.
        self.drive_colls()?;
        if let Some(early) = self.st.colls.early.remove(&(ctx, seq)) {
            self.st.redeliver(early);
            if !self.st.followups.is_empty() {
                self.run_followups()?;
            }
            self.drive_colls()?;
        }
        Ok(req)
    }

    /// Sends what machines ask for and completes finished instances.
    pub fn drive_colls(&mut self) -> MpiResult<bool> {
        if !self.st.colls.dirty {
            return Ok(false);
        }
        self.st.colls.dirty = false;
        let mut did = false;
        // Sending may deliver, which lists instances for the next pass.
        let mut ready = std::mem::take(&mut self.st.colls.ready);
        for (n, &key) in ready.iter().enumerate() {
            match self.drive_instance(key) {
                Ok(d) => did |= d,
                Err(e) => {
                    self.st.colls.requeue(&ready[n..]);
                    return Err(e);
                }
            }
        }
        let colls = &mut self.st.colls;
        if colls.ready.is_empty() {
            // Keeps the allocation for the next pass.
            ready.clear();
            colls.ready = ready;
        }
        if !colls.held.is_empty() && colls.held_seen != colls.refs.generation {
            colls.held_seen = colls.refs.generation;
            let mut waiting = std::mem::take(&mut colls.held).into_iter();
            while let Some(inst) = waiting.next() {
                match self.finish_or_hold(inst) {
                    Ok(d) => did |= d,
                    Err(e) => {
                        self.st.colls.held.extend(waiting);
                        return Err(e);
                    }
                }
            }
        }
        Ok(did)
    }

    /// Sends what instance `key` asks for, and completes it if done. True
    /// if it sent or completed.
    fn drive_instance(&mut self, key: Key) -> MpiResult<bool> {
        let Some(&i) = self.st.colls.index.get(&key) else {
            return Ok(false);
        };
        let mut did = false;
        self.st.colls.active[i].queued = false;
        if self.st.colls.active[i].conclusive_fault() {
            if let Some(f) = self.st.colls.active[i].fault.take() {
                self.fail_instance(i, f)?;
            }
            return Ok(true);
        }
        while let Some(out) = self.st.colls.active[i].machine.poll_send() {
            let inst = &self.st.colls.active[i];
            let env = Envelope {
                kind: Kind::Coll,
                flags: 0,
                ctx: inst.ctx,
                src: inst.rank,
                tag: inst.seq as i32,
                len: out.len() as u64,
                cookie: 0,
                sig: inst.call.map_or(0, |c| c.sig()),
            };
            let to = match &inst.map {
                RankMap::Identity => out.to,
                RankMap::List(l) => l[out.to as usize],
            };
            let lend = !inst.machine.synchronizes();
            if let Some(cookie) = self.send_coll(to, env, out, lend)? {
                self.st.colls.active[i].lent.push(cookie);
            }
            did = true;
        }
        let inst = &mut self.st.colls.active[i];
        if let Some(e) = inst.error.take() {
            return Err(protocol_err(e));
        }
        if !inst.machine.is_done() {
            return Ok(did);
        }
        let inst = self.st.colls.remove_active(i);
        Ok(did | self.finish_or_hold(inst)?)
    }

    /// At a liveness check (this rank has waited a second): fails every
    /// instance still running whose members' calls were found to differ.
    pub(super) fn fail_faulted(&mut self) -> MpiResult<()> {
        while let Some(i) = self.st.colls.active.iter().position(|x| x.fault.is_some()) {
            let f = self.st.colls.active[i].fault.take();
            if let Some(f) = f {
                self.fail_instance(i, f)?;
            }
        }
        Ok(())
    }

    /// Ends active instance `i` for fault `f`: its request completes with
    /// the error, which its blocking call reads ([`Colls::take_failure`]).
    /// When this rank found the difference itself, it tells every other
    /// member (a notice with its call, `Kind::CollNotice`), so that those
    /// waiting for this instance, or for the member that sent what did not
    /// fit, fail too instead of waiting forever. The instance's late
    /// messages are kept as early ones, for an instance that never starts.
    fn fail_instance(&mut self, i: usize, f: Fault) -> MpiResult<()> {
        let inst = self.st.colls.remove_active(i);
        let err = match (f, inst.call) {
            (Fault::Sig { from, sig }, Some(mine)) => {
                call_check::sig_disagreement(&mine, sig, from)
            }
            (Fault::Notice { from, theirs }, mine) => {
                call_check::noticed_disagreement(mine, theirs, from)
            }
            (Fault::Shown { from, theirs }, Some(mine)) => {
                call_check::disagreement(&mine, &theirs, from).unwrap_or_else(|| {
                    MpiError::internal(format!("rank {from} showed this rank's own call"))
                })
            }
            (Fault::Crossed { from, len }, mine) => call_check::crossed_paths(mine, from, len),
            (Fault::Sig { from, .. } | Fault::Shown { from, .. }, None) => {
                MpiError::internal(format!("unsigned instance faulted by rank {from}"))
            }
        };
        let status = Status {
            error: err.class,
            ..coll_status()
        };
        let cookie = self.st.reqs.cookie(inst.req);
        self.st.reqs.complete(inst.req, status);
        self.st.colls.keep_failure(cookie, err);
        let (Fault::Sig { .. } | Fault::Shown { .. } | Fault::Crossed { .. }, Some(mine)) =
            (f, inst.call)
        else {
            return Ok(());
        };
        let to = inst.members(self.job.size);
        self.notify(&inst.about(mine, 0), &to)
    }

    /// Tells every member of `comm` that this rank found the calls of its
    /// collective numbered `seq` (in context `ctx`) to differ, its own
    /// being `call`.
    pub(super) fn notify_failed(
        &mut self,
        comm: usize,
        ctx: u32,
        seq: u32,
        call: Call,
    ) -> MpiResult<()> {
        let cm = self.comms.get(comm)?;
        let to = comm_members(cm);
        let about = Notice {
            ctx,
            seq,
            from: cm.rank,
            call,
            flags: 0,
        };
        self.notify(&about, &to)
    }

    /// Sends notice `about` to each member in `to` (instance rank, world
    /// rank) but the sender.
    fn notify(&mut self, about: &Notice, to: &[(u32, u32)]) -> MpiResult<()> {
        let body: Vec<u8> = about
            .call
            .words()
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        for &(r, world) in to.iter().filter(|&&(r, _)| r != about.from) {
            let env = Envelope {
                kind: Kind::CollNotice,
                flags: about.flags,
                ctx: about.ctx,
                src: about.from,
                tag: about.seq as i32,
                len: body.len() as u64,
                cookie: 0,
                sig: 0,
            };
            self.send_coll(world, env, Outgoing::new(r, &[], body.clone()), false)?;
        }
        Ok(())
    }

    /// At a liveness check: fails each instance still running for which
    /// a member's part waits point to point in the collective context
    /// (`transfers.rs`), under the instance's number. Every member takes
    /// the transfers or none in a correct program; where sizes disagree,
    /// one side's messages wait for an instance the other never starts.
    pub(super) fn fail_crossed_instances(&mut self) -> MpiResult<()> {
        let matcher = &self.st.matcher;
        let crossed = self
            .st
            .colls
            .active
            .iter()
            .enumerate()
            .find_map(|(i, inst)| {
                // The tag transfers take from the number (`transfers.rs`).
                let u = matcher.coll_unexpected_any(inst.ctx, (inst.seq & 0x7fff_ffff) as i32)?;
                Some((i, u.env.src, u.env.len))
            });
        match crossed {
            Some((i, from, len)) => self.fail_instance(i, Fault::Crossed { from, len }),
            None => Ok(()),
        }
    }

    /// At a liveness check (this rank has waited a second): shows the call
    /// of each signed instance or transfer collective still running to the
    /// other members, once, so that members whose calls differ find out
    /// even where no message of one reaches the other (a broadcast's
    /// leaves waiting for a root that waits in an allreduce for them).
    /// Member 0 shows its call to every member and the others to member 0:
    /// each member compares with member 0, which compares with each, in 2n
    /// messages in all.
    pub(super) fn show_calls(&mut self) -> MpiResult<()> {
        let mut shows = Vec::new();
        for inst in &mut self.st.colls.active {
            let (false, Some(mine)) = (inst.shown, inst.call) else {
                continue;
            };
            inst.shown = true;
            let mut to = inst.members(self.job.size);
            if inst.rank != 0 {
                to.truncate(1);
            }
            shows.push((inst.about(mine, coll_ref::SHOWN), to));
        }
        for x in &mut self.st.transfers {
            if let Some(about) = x.show() {
                let cm = self.comms.get(about.comm)?;
                let mut to = comm_members(cm);
                if cm.rank != 0 {
                    to.truncate(1);
                }
                shows.push((
                    Notice {
                        ctx: about.ctx,
                        seq: about.seq,
                        from: cm.rank,
                        call: about.call,
                        flags: coll_ref::SHOWN,
                    },
                    to,
                ));
            }
        }
        for (about, to) in shows {
            self.notify(&about, &to)?;
        }
        Ok(())
    }

    /// Completes a done instance, unless it waits past the lending bound
    /// for its lent messages to be used: then it asks for their answers
    /// and is held until an answer comes. True if it completed.
    fn finish_or_hold(&mut self, mut inst: Instance) -> MpiResult<bool> {
        if self.st.colls.refs.holds(&mut inst.lent) {
            let r = self.ask_used(&inst.lent);
            self.st.colls.held.push(inst);
            return r.map(|()| false);
        }
        if let (Some(out), Some(res)) = (&inst.out, inst.machine.take_result()) {
            out.deliver(&res);
        }
        self.st.reqs.complete(inst.req, coll_status());
        Ok(true)
    }

    /// Waits for the collective request `req` and releases it.
    pub fn finish_coll(&mut self, req: usize) -> MpiResult<()> {
        if req == DONE {
            return Ok(());
        }
        // What starts while this waits is not the call's own; what the
        // call starts after an inner step (a communicator's first use of
        // its node device agrees it first) is.
        let signing = std::mem::replace(&mut self.signing, false);
        let waited = self.wait(req);
        self.signing = signing;
        waited?;
        let status = self.st.reqs.get(req).map(|r| r.status);
        let cookie = self.st.reqs.cookie(req);
        self.st.reqs.remove(req);
        match status {
            Some(st) if st.error != 0 => Err(self
                .st
                .colls
                .take_failure(cookie)
                .unwrap_or_else(|| coll_failure(&st))),
            _ => Ok(()),
        }
    }

    /// (rank, size) in `comm`.
    pub(super) fn rank_size(&self, comm: usize) -> MpiResult<(u32, u32)> {
        let cm = self.comms.get(comm)?;
        Ok((cm.rank, cm.size))
    }

    pub fn barrier(&mut self, comm: usize) -> MpiResult<()> {
        let req = self.start_barrier(comm, true)?;
        self.finish_coll(req)
    }

    pub fn ibarrier(&mut self, comm: usize) -> MpiResult<usize> {
        self.start_barrier(comm, false)
    }

    /// `blocking`: `MPI_Barrier`, whose caller waits at once.
    pub fn start_barrier(&mut self, comm: usize, blocking: bool) -> MpiResult<usize> {
        super::intercomm::reject(self.comms.get(comm)?)?;
        if self.comms.get(comm)?.size == 1 {
            // Alone: nothing to wait for, and no sequence number to keep in step.
            if blocking {
                return Ok(DONE);
            }
            let req = self.st.reqs.insert_on(Op::Coll, comm);
            self.st.reqs.complete(req, coll_status());
            return Ok(req);
        }
        if let Some(req) = self.try_offload(comm, Offered::Barrier, blocking)? {
            return Ok(req);
        }
        if let Some(req) = self.central_barrier(comm, blocking)? {
            return Ok(req);
        }
        let (rank, size) = self.rank_size(comm)?;
        let algo = self.settings.algos.software_barrier(size);
        let m = lanai_coll::barrier(rank, size, algo).map_err(coll_err)?;
        self.start_coll(comm, m, None)
    }

    pub fn bcast(&mut self, comm: usize, buf: UserBuf, root: u32) -> MpiResult<()> {
        let req = self.start_user_bcast(comm, buf, root, true)?;
        self.finish_coll(req)
    }

    pub fn ibcast(&mut self, comm: usize, buf: UserBuf, root: u32) -> MpiResult<usize> {
        self.start_user_bcast(comm, buf, root, false)
    }

    /// `MPI_Bcast` and `MPI_Ibcast`: through the staging slots in chunks on
    /// a node, else [`Engine::start_bcast`]. Not for the broadcasts other
    /// collectives are built of, some of which start the message machine
    /// under a number reserved earlier (`start_bcast_as`) on one rank only.
    pub fn start_user_bcast(
        &mut self,
        comm: usize,
        buf: UserBuf,
        root: u32,
        blocking: bool,
    ) -> MpiResult<usize> {
        if let Some(req) = self.mail_bcast(comm, buf, root, blocking)? {
            return Ok(req);
        }
        if let Some(req) = self.chunked_bcast(comm, buf, root, blocking)? {
            return Ok(req);
        }
        if buf.len() >= BCAST_TRANSFER_MIN
            && self.settings.algos.bcast == lanai_coll::BcastAlgo::Auto
            && self.offload.is_none()
        {
            return self.start_bcast_transfers(comm, buf, root);
        }
        self.start_bcast(comm, buf, root, blocking)
    }

    /// Broadcast of `buf` from `root`; non-roots' `buf` is written at
    /// completion. `blocking`: `MPI_Bcast`.
    pub fn start_bcast(
        &mut self,
        comm: usize,
        buf: UserBuf,
        root: u32,
        blocking: bool,
    ) -> MpiResult<usize> {
        if let Some(req) = self.try_offload(comm, Offered::Bcast { buf, root }, blocking)? {
            return Ok(req);
        }
        let seq = self.reserve_coll_seq(comm)?;
        self.start_bcast_as(comm, seq, buf, root)
    }

    /// The broadcast's machine as instance `seq` of `comm`.
    pub(super) fn start_bcast_as(
        &mut self,
        comm: usize,
        seq: u32,
        buf: UserBuf,
        root: u32,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        let data = if rank == root {
            buf.as_slice().to_vec()
        } else {
            vec![0; buf.len()]
        };
        let m = lanai_coll::bcast(rank, size, root, data, self.settings.algos.bcast)
            .map_err(coll_err)?;
        let out = (rank != root).then_some(buf);
        self.start_coll_as(comm, seq, m, out.map(CollOut::whole))
    }

    /// Small reduces on one node go through the device's mailboxes
    /// (`LANAI_REDUCE=auto`); the rest through the machines. `blocking`:
    /// `MPI_Reduce`, which may set up the device's channel on the way.
    ///
    /// `data` is this rank's contribution, read where a path needs it and
    /// never after completion, as MPI allows for a send buffer. `op` is
    /// made into a combiner only where one combines: the mailbox root, or
    /// every rank of the offloaded or message-passing reduce.
    pub fn start_reduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: u32,
        op: impl MakeCombiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        if self.offload.is_some() {
            let op = op.make()?;
            let offered = Offered::Reduce {
                data: data.as_slice(),
                out,
                root,
                op: &op,
            };
            if let Some(req) = self.try_offload(comm, offered, blocking)? {
                return Ok(req);
            }
        }
        // By reference: the entry point stored `data` field by field, and
        // a copy's wide load of it would wait for every store before it,
        // the last call's slot fill among them (`docs/decisions.md`).
        if let Some(req) = self.central_reduce(comm, &data, out, root, op, blocking)? {
            return Ok(req);
        }
        if let Some(req) = self.chunked_reduce(comm, data, out, root, op, blocking)? {
            return Ok(req);
        }
        let op = op.make()?;
        let (rank, size) = self.rank_size(comm)?;
        let shape = self.settings.algos.reduce;
        let data = data.as_slice().to_vec();
        if self.flat_reduce_suits(size, data.len()) {
            let m = lanai_coll::FlatReduce::new(rank, size, root, data, op).map_err(coll_err)?;
            self.net.counters.flat_reduces += 1;
            return self.start_coll(comm, Box::new(m), out);
        }
        let m =
            lanai_coll::Reduce::with_tree(rank, size, root, data, op, shape).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), out)
    }

    /// `LANAI_REDUCE=auto` sends small contributions straight to the root
    /// ([`lanai_coll::FlatReduce`], the binomial tree's bits) on up to
    /// [`FLAT_REDUCE_RANKS`] ranks: where ranks share cores every hop of a
    /// tree waits for a process to be scheduled, and on few ranks the
    /// root's extra messages cost less than the tree's hops. Only what every
    /// member knows alike decides (not whether its own host is
    /// oversubscribed), or members would run different machines.
    pub(super) fn flat_reduce_suits(&self, size: u32, len: usize) -> bool {
        self.settings.algos.reduce_auto
            && size > 2
            && len <= FLAT_REDUCE_MAX
            && size <= FLAT_REDUCE_RANKS
    }

    /// Small allreduces on one node go through the barrier device's data
    /// slots (`LANAI_ALLREDUCE=auto`); the rest through the machines.
    /// `blocking`: the caller waits for the result at once (`MPI_Allreduce`),
    /// so the device's channel may be set up on the way.
    ///
    /// `data` is read as for [`Engine::start_reduce`]: `out` may be the
    /// same memory (`MPI_IN_PLACE`), so every path takes its copy before
    /// it writes the result.
    pub fn start_allreduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: Combiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        let offered = Offered::Allreduce {
            data: data.as_slice(),
            out,
            op: &op,
        };
        if let Some(req) = self.try_offload(comm, offered, blocking)? {
            return Ok(req);
        }
        let op = if self.settings.algos.allreduce == AllreduceAlgo::Auto {
            let op = match self.staged_allreduce(comm, data, out, op, blocking)? {
                Ok(req) => return Ok(req),
                Err(back) => back,
            };
            match self.central_allreduce(comm, data, out, op, blocking)? {
                Ok(req) => return Ok(req),
                Err(back) => back,
            }
        } else {
            op
        };
        let (rank, size) = self.rank_size(comm)?;
        let data = data.as_slice().to_vec();
        let algo = self.settings.algos.allreduce.resolve(size, data.len());
        let m = lanai_coll::allreduce(rank, size, data, op, algo).map_err(coll_err)?;
        self.start_coll(comm, m, Some(out))
    }

    /// Gather of equal blocks (`data` on every rank) into the root's `out`.
    pub fn igather(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<usize> {
        if let Some(req) = self.mail_gather(comm, data, out, root, blocking)? {
            return Ok(req);
        }
        let data = match self.chunked_gather(comm, Source::User(data), out, Some(root))? {
            Ok(req) => return Ok(req),
            Err(data) => data,
        };
        let (rank, size) = self.rank_size(comm)?;
        let linear = data.len() >= TRANSFER_MIN || size <= LINEAR_GATHER_MAX;
        if let (Source::User(buf), true) = (&data, linear) {
            let blocks = Layout::uniform(size, buf.len()).map_err(coll_err)?;
            return self.start_gather_transfers(comm, *buf, out, &blocks, root, true);
        }
        let m = lanai_coll::Gather::new(rank, size, root, data.into_vec()).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), out)
    }

    /// Gather into the blocks `recv` of the root's `out` (`recv` read only
    /// on the root, where `out` is `Some`). On one node the small blocks
    /// go through the mailboxes and the others as transfers
    /// ([`Engine::mail_gatherv`]); elsewhere every block goes as a
    /// transfer: only the root knows every block's size, so no member
    /// could choose a path by the sizes that the others would follow, and
    /// a linear gather is one message per member either way.
    pub fn igatherv(
        &mut self,
        comm: usize,
        data: UserBuf,
        recv: &Layout,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<usize> {
        if let Some(req) = self.mail_gatherv(comm, data, recv, out, root, blocking)? {
            return Ok(req);
        }
        self.start_gather_transfers(comm, data, out, recv, root, false)
    }

    /// Scatter of `block`-byte blocks from the root's `data` (empty elsewhere).
    pub fn iscatter(
        &mut self,
        comm: usize,
        data: UserBuf,
        block: usize,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<usize> {
        if let Some(req) = self.mail_scatter(comm, data, block, out, root, blocking)? {
            return Ok(req);
        }
        let data = match self.chunked_blocks(comm, Source::User(data), block, out, Some(root))? {
            Ok(req) => return Ok(req),
            Err(data) => data,
        };
        if let (Source::User(buf), true) = (&data, block >= TRANSFER_MIN) {
            let (_, size) = self.rank_size(comm)?;
            let blocks = Layout::uniform(size, block).map_err(coll_err)?;
            return self.start_scatter_transfers(comm, *buf, &blocks, out, root);
        }
        let data = data.into_vec();
        let (rank, size) = self.rank_size(comm)?;
        let m = lanai_coll::Scatter::new(rank, size, root, data, block).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), out)
    }

    /// Scatter of the blocks `send` of the root's `data` (read at the root
    /// only) into each member's `out` (`None` at an in-place root): as
    /// [`Engine::igatherv`] gathers, through the mailboxes on one node
    /// ([`Engine::mail_scatterv`]), else as transfers.
    pub fn iscatterv(
        &mut self,
        comm: usize,
        data: UserBuf,
        send: &Layout,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<usize> {
        if let Some(req) = self.mail_scatterv(comm, data, send, out, root, blocking)? {
            return Ok(req);
        }
        self.start_scatter_transfers(comm, data, send, out, root)
    }

    /// Allgather of equal blocks into `out` (all blocks in rank order).
    pub fn iallgather(
        &mut self,
        comm: usize,
        data: Source,
        out: UserBuf,
        blocking: bool,
    ) -> MpiResult<usize> {
        let len = data.len();
        if self.may_ride(comm, len, blocking)? {
            let blocks = Blocks::Equal(len);
            let riding = Riding {
                kind: riding::Kind::Allgather { blocks },
                len,
                out,
            };
            return self.ride(comm, data, riding, blocking);
        }
        let data = match self.chunked_gather(comm, data, Some(out), None)? {
            Ok(req) => return Ok(req),
            Err(data) => data,
        };
        let (rank, size) = self.rank_size(comm)?;
        if let (Source::User(buf), true) = (&data, allgather_as_transfers(size, len)) {
            // Every member's block goes to every other, from where it lies.
            let send = Layout::new(vec![len; size as usize], vec![0; size as usize]);
            let recv = Layout::uniform(size, len);
            let (send, recv) = send.and_then(|s| Ok((s, recv?))).map_err(coll_err)?;
            return self.start_exchange(comm, *buf, &send, out, &recv);
        }
        let data = data.into_vec();
        let m =
            lanai_coll::Allgather::new(rank, size, data, AllgatherAlgo::Auto).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), Some(out))
    }

    /// Allgather into the blocks `recv` of `out`: through the barrier
    /// device when every block is small, else as transfers when the mean
    /// block would make an allgather go so (every member knows every
    /// count), else round the message machine's ring.
    pub fn iallgatherv(
        &mut self,
        comm: usize,
        data: Source,
        recv: &Layout,
        out: UserBuf,
        blocking: bool,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        recv.check_size(size).map_err(coll_err)?;
        let len = data.len();
        let largest = recv.counts().iter().copied().max().unwrap_or(0);
        if self.may_ride(comm, largest, blocking)? {
            let blocks = Blocks::Listed(Box::new(recv.clone()));
            let riding = Riding {
                kind: riding::Kind::Allgather { blocks },
                len,
                out,
            };
            return self.ride(comm, data, riding, blocking);
        }
        let mean = recv.counts().iter().sum::<usize>() / size as usize;
        if let (Source::User(buf), true) = (&data, allgather_as_transfers(size, mean)) {
            // Every member's block goes to every other, from where it lies.
            let send = Layout::new(vec![len; size as usize], vec![0; size as usize]);
            return self.start_exchange(comm, *buf, &send.map_err(coll_err)?, out, recv);
        }
        let m = lanai_coll::Allgatherv::new(rank, size, data.into_vec(), recv).map_err(coll_err)?;
        self.start_coll_to(comm, Box::new(m), Some(CollOut::blocks(out, recv)))
    }

    /// `MPI_Alltoall`: blocks of `send_block` bytes out and `recv_block`
    /// in, equal on every rank (so every rank may take the device or the
    /// staging slots alike, which `-v` and `-w` may not): on a node through
    /// those, else as [`Engine::ialltoallv`].
    pub fn ialltoall(
        &mut self,
        comm: usize,
        data: Source,
        send_block: usize,
        recv_block: usize,
        out: UserBuf,
        blocking: bool,
    ) -> MpiResult<usize> {
        let size = self.rank_size(comm)?.1;
        let data = if send_block != recv_block {
            data
        } else if self.may_ride(comm, data.len(), blocking)? {
            let riding = Riding {
                kind: riding::Kind::Alltoall { block: send_block },
                len: data.len(),
                out,
            };
            return self.ride(comm, data, riding, blocking);
        } else {
            match self.chunked_blocks(comm, data, send_block, Some(out), None)? {
                Ok(req) => return Ok(req),
                Err(data) => data,
            }
        };
        let uniform = |b| Layout::uniform(size, b).map_err(coll_err);
        let (send, recv) = (uniform(send_block)?, uniform(recv_block)?);
        self.ialltoallv(comm, data, &send, &recv, out)
    }

    /// All-to-all: block `send.block(p)` of `data` goes to rank `p`; rank
    /// `p`'s bytes land in `recv.block(p)` of `out`. Serves alltoall, -v and -w.
    /// The caller's send buffer goes as transfers (`transfers.rs`); a copy
    /// (`MPI_IN_PLACE`) through the message machine.
    pub fn ialltoallv(
        &mut self,
        comm: usize,
        data: Source,
        send: &Layout,
        recv: &Layout,
        out: UserBuf,
    ) -> MpiResult<usize> {
        if let Source::User(buf) = data {
            return self.start_exchange(comm, buf, send, out, recv);
        }
        let (rank, size) = self.rank_size(comm)?;
        let m = lanai_coll::Alltoallv::new(rank, size, data.into_vec(), send, recv)
            .map_err(coll_err)?;
        self.start_coll_to(comm, Box::new(m), Some(CollOut::blocks(out, recv)))
    }

    /// Reduce-scatter: `data` holds `counts[p]` bytes per rank `p` back to
    /// back; this rank's reduced block goes to `out`.
    pub fn ireduce_scatter(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        counts: &[usize],
        out: UserBuf,
        op: Combiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        let whole = counts.iter().try_fold(0usize, |a, &b| a.checked_add(b));
        if counts.len() == size as usize
            && whole == Some(data.len())
            && self.may_ride(comm, data.len(), blocking)?
        {
            let blocks = Layout::packed(counts.to_vec()).map_err(coll_err)?;
            let riding = Riding {
                kind: riding::Kind::ReduceScatter {
                    op,
                    blocks: Blocks::Listed(Box::new(blocks)),
                },
                len: data.len(),
                out,
            };
            return self.ride(comm, Source::Owned(data), riding, blocking);
        }
        let m = lanai_coll::ReduceScatter::new(rank, size, data, counts, op).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), Some(out))
    }

    /// Reduce-scatter of `size` equal blocks of `data`.
    pub fn ireduce_scatter_block(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: UserBuf,
        op: Combiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        let (len, block) = (data.len(), data.len() / size as usize);
        if block * size as usize == len && self.may_ride(comm, len, blocking)? {
            let riding = Riding {
                kind: riding::Kind::ReduceScatter {
                    op,
                    blocks: Blocks::Equal(block),
                },
                len,
                out,
            };
            return self.ride(comm, Source::Owned(data), riding, blocking);
        }
        let m = lanai_coll::ReduceScatterBlock::new(rank, size, data, op).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), Some(out))
    }

    /// Inclusive prefix reduction into `out`.
    pub fn iscan(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: Combiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        // A named algorithm runs as messages, as `LANAI_BCAST` does.
        let op = match self.settings.algos.scan {
            Some(_) => op,
            None => match self.mail_scan(comm, data, out, op, true, blocking)? {
                Ok(req) => return Ok(req),
                Err(op) => op,
            },
        };
        let data = data.as_slice().to_vec();
        let (rank, size) = self.rank_size(comm)?;
        let algo = self.settings.algos.scan.unwrap_or(SCAN_AUTO);
        let m = lanai_coll::Scan::with(rank, size, data, op, algo).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), Some(out))
    }

    /// Exclusive prefix reduction into `out`; rank 0's `out` is left alone.
    pub fn iexscan(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: Combiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        // A named algorithm runs as messages, as `LANAI_BCAST` does.
        let op = match self.settings.algos.scan {
            Some(_) => op,
            None => match self.mail_scan(comm, data, out, op, false, blocking)? {
                Ok(req) => return Ok(req),
                Err(op) => op,
            },
        };
        let data = data.as_slice().to_vec();
        let (rank, size) = self.rank_size(comm)?;
        let algo = self.settings.algos.scan.unwrap_or(SCAN_AUTO);
        let m = lanai_coll::Exscan::with(rank, size, data, op, algo).map_err(coll_err)?;
        self.start_coll(comm, Box::new(m), Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index and the ready list stay true to `active` whatever order
    /// instances start, are fed, are driven and finish in: each instance is
    /// found where it is, and one started or fed since it was last driven
    /// is listed once.
    mod ready_list {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Step {
            Start(u32),
            Feed(u32),
            /// Drives the ready instances; those whose sequence number is
            /// even and below the argument finish.
            Drive(u32),
        }

        fn step() -> impl Strategy<Value = Step> {
            prop_oneof![
                (0u32..24).prop_map(Step::Start),
                (0u32..24).prop_map(Step::Feed),
                (0u32..24).prop_map(Step::Drive),
            ]
        }

        /// A drive pass as `Engine::drive_colls` makes it, without sends.
        fn drive(c: &mut Colls, below: u32) -> Vec<u32> {
            let mut finished = Vec::new();
            for key in std::mem::take(&mut c.ready) {
                let Some(&i) = c.index.get(&key) else {
                    continue;
                };
                c.active[i].queued = false;
                if key.1 % 2 == 0 && key.1 < below {
                    finished.push(c.remove_active(i).seq);
                }
            }
            finished
        }

        fn check(c: &Colls) {
            assert_eq!(c.index.len(), c.active.len());
            for (i, inst) in c.active.iter().enumerate() {
                assert_eq!(c.index.get(&(inst.ctx, inst.seq)), Some(&i));
                let listed = c
                    .ready
                    .iter()
                    .filter(|k| **k == (inst.ctx, inst.seq))
                    .count();
                assert_eq!(listed, usize::from(inst.queued), "instance {}", inst.seq);
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn index_and_ready_list_follow_active(steps in proptest::collection::vec(step(), 0..200)) {
                let mut c = Colls::default();
                let mut live = std::collections::BTreeSet::new();
                for s in steps {
                    match s {
                        Step::Start(seq) if !live.contains(&seq) => {
                            let m = Box::new(lanai_coll::Bcast::new(0, 2, 1, vec![0]).unwrap());
                            c.activate(9, seq, m);
                            live.insert(seq);
                        }
                        Step::Start(_) => {}
                        Step::Feed(seq) => {
                            let env = Envelope {
                                kind: Kind::Coll,
                                flags: 0,
                                ctx: 9,
                                src: 1,
                                tag: seq as i32,
                                len: 3,
                                cookie: 0,
                                sig: 0,
                            };
                            let kept = !c.deliver(&env, 1, Msg::Whole(Cow::Borrowed(&[3, 0, 42])));
                            prop_assert_eq!(kept, !live.contains(&seq));
                        }
                        Step::Drive(below) => {
                            for seq in drive(&mut c, below) {
                                live.remove(&seq);
                            }
                        }
                    }
                    check(&c);
                }
            }
        }
    }

    /// A member's message or notice showing another call: another
    /// function, form or root makes the instance's failure conclusive,
    /// and the machine never takes the message for its own; a size alone
    /// is fed and noted for the liveness check, since the path may end
    /// well; a shown call of any difference is conclusive.
    #[test]
    fn calls_that_differ_fault_the_instance() {
        use super::call_check::CallKind;
        let bcast = Call::new(CallKind::Bcast, Some(0), 8, false);
        let msg = |seq: u32, sig: u16| Envelope {
            kind: Kind::Coll,
            flags: 0,
            ctx: 9,
            src: 0,
            tag: seq as i32,
            len: 3,
            cookie: 0,
            sig,
        };
        let start = |c: &mut Colls, seq: u32| {
            let m = Box::new(lanai_coll::Bcast::new(1, 2, 0, vec![0]).unwrap());
            c.activate(9, seq, m);
            c.sign(9, seq, bcast);
            c.ready.clear();
            c.active[c.index[&(9, seq)]].queued = false;
        };
        let inst = |c: &Colls, seq: u32| c.index[&(9, seq)];
        // A whole message from the root: what the machine takes.
        let data = || Msg::Whole(Cow::Borrowed(&[3, 0, 42]));
        let mut c = Colls::default();
        let others = [
            Call::new(CallKind::Allreduce, None, 8, false),
            Call::new(CallKind::Bcast, Some(0), 8, true),
            Call::new(CallKind::Bcast, Some(1), 8, false),
        ];
        for (seq, other) in (0..).zip(others) {
            start(&mut c, seq);
            assert!(c.deliver(&msg(seq, other.sig()), 0, data()));
            let i = inst(&c, seq);
            assert!(c.active[i].conclusive_fault(), "{other:?}");
            let fed = c.active[i].machine.is_done() || c.active[i].error.is_some();
            assert!(!fed, "fed a message of {other:?}");
            assert_eq!(c.ready, vec![(9, seq)], "queued to fail");
            c.ready.clear();
            c.active[i].queued = false;
        }
        // Another size: fed, noted, not conclusive.
        let seq = 3;
        start(&mut c, seq);
        let bigger = Call::new(CallKind::Bcast, Some(0), 4000, false);
        c.deliver(&msg(seq, bigger.sig()), 0, data());
        let i = inst(&c, seq);
        assert!(matches!(
            c.active[i].fault,
            Some(Fault::Sig { from: 0, .. })
        ));
        assert!(!c.active[i].conclusive_fault());
        assert!(
            c.active[i].machine.is_done() || c.active[i].error.is_some(),
            "not fed"
        );
        // The same call: nothing.
        let seq = 4;
        start(&mut c, seq);
        c.deliver(&msg(seq, bcast.sig()), 0, data());
        assert!(c.active[inst(&c, seq)].fault.is_none());
        // Shown calls: the same one changes nothing, a bigger one fails it.
        let notice = |call: Call| {
            let env = Envelope {
                kind: Kind::CollNotice,
                flags: coll_ref::SHOWN,
                src: 1,
                ..msg(seq, 0)
            };
            let body: Vec<u8> = call.words().iter().flat_map(|w| w.to_le_bytes()).collect();
            (env, body)
        };
        let (env, body) = notice(bcast);
        assert!(c.fault_notice(&env, &body));
        assert!(c.active[inst(&c, seq)].fault.is_none());
        let (env, body) = notice(bigger);
        assert!(c.fault_notice(&env, &body));
        assert!(c.active[inst(&c, seq)].conclusive_fault());
        // No instance of that number here: not taken.
        let (mut env, body) = notice(bigger);
        env.tag = 99;
        assert!(!c.fault_notice(&env, &body));
    }

    #[test]
    fn pieces_touch_only_their_blocks() {
        // Blocks of 2 and 3 bytes with a gap, and an empty one.
        let layout = Layout::new(vec![2, 0, 3], vec![5, 1, 0]).unwrap();
        let res: Vec<u8> = (10..17).collect();
        let mut dst = [0xEEu8; 9];
        place(&layout_pieces(&layout), &res, &mut dst);
        assert_eq!(dst, [10, 11, 12, 0xEE, 0xEE, 15, 16, 0xEE, 0xEE]);
    }

    #[test]
    fn pieces_past_either_end_are_clipped() {
        let mut dst = [0u8; 4];
        let pieces = [
            Piece {
                src: 0,
                dst: 3,
                len: 3,
            },
            Piece {
                src: 9,
                dst: 0,
                len: 2,
            },
        ];
        place(&pieces, &[1, 2, 3, 4], &mut dst);
        assert_eq!(dst, [0, 0, 0, 1]);
    }
}
