//! The central barrier (seed 002) in the ranks: each communicator takes a
//! channel of its node's barrier device at its first barrier, and across
//! nodes one leader per node joins a k-ary tree of leaders.
//!
//! The first barrier on a communicator is also the agreement: every member
//! claims a channel on its node and an AND allreduce (which is itself a
//! barrier) says whether all got one. If any did not, the communicator uses
//! the software barrier for good and the channels are given back, as the
//! Open MPI module of seed 002 §2.1 does. Later barriers run on the device.

use super::coll::MakeCombiner;
use super::comm::{Capture, RankMap, Slot};
use super::error::{MpiError, MpiResult};
use super::request::{Op, DONE};
use super::riding::{Kind, Riding, Source};
use super::Engine;
use crate::abi::userbuf::UserBuf;
use crate::shm::barrier_device::DATA_MAX;
use lanai_coll::central::{reached, DeviceRank, Role, Step, Wires};
use lanai_coll::leaders_barrier;
use lanai_coll::mailbox::FreeSlots;
use std::cell::Cell;
use std::time::Duration;

/// A communicator's relation to the device.
#[derive(Debug, Clone, Default)]
pub enum Central {
    /// No barrier yet.
    #[default]
    Untried,
    /// The agreement is running; `setup` is this rank's claim, if it got one.
    Negotiating {
        slot: Slot,
        setup: Option<Setup>,
    },
    Active(Setup),
    /// Some member got no channel: software barriers only.
    Declined,
}

/// Wires for a rank that is alone on its node in the communicator: the
/// device degenerates to its own input, so it needs no shared memory.
#[derive(Debug, Clone, Default)]
pub struct SoloWires {
    input: Cell<u32>,
    output: Cell<u32>,
}

impl Wires for SoloWires {
    fn input(&self, _: usize) -> u32 {
        self.input.get()
    }
    fn set_input(&self, _: usize, gen: u32) {
        self.input.set(gen);
    }
    fn output(&self) -> u32 {
        self.output.get()
    }
    fn has_sleepers(&self) -> bool {
        false
    }
    fn raise_output(&self, gen: u32) -> bool {
        let up = !reached(self.output.get(), gen);
        if up {
            self.output.set(gen);
        }
        up
    }
}

/// The tree of node leaders, for a leader.
#[derive(Debug, Clone)]
pub struct Tree {
    /// This leader's index among the leaders.
    me: u32,
    /// World ranks of the leaders, in communicator-rank order.
    leaders: Vec<u32>,
    k: u32,
}

/// A communicator's use of the device, on this rank.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Channel on the node's device; `None` for solo wires.
    chan: Option<usize>,
    solo: SoloWires,
    /// Generation of the last barrier started.
    gen: u32,
    /// Device inputs (node-local rank indices) of the members on this node,
    /// in communicator-rank order: the first is the node's leader.
    members: Vec<usize>,
    me: usize,
    role: Role,
    tree: Option<Tree>,
    /// Stamp of the last mailbox reduce started (`central_reduce.rs`).
    pub(super) mail: u32,
    /// Which of this rank's mailbox slots it knows free.
    pub(super) free: FreeSlots,
    /// The stamp of this rank's last staged reduce in each staging slot
    /// (`shm::stage`), which the next one there waits for.
    pub(super) staged_last: [u32; crate::shm::stage::SLOTS],
    /// Every member's host has more ranks (and engines) than cores, as
    /// agreed with the channel, so every member may choose by it alike.
    pub(super) crowded: bool,
}

impl Setup {
    /// The channel, when every member shares this rank's node and device.
    pub(super) fn node_channel(&self) -> Option<usize> {
        self.chan.filter(|_| self.role == Role::Peer)
    }

    /// Device inputs of the members, in communicator-rank order.
    pub(super) fn members(&self) -> &[usize] {
        &self.members
    }

    /// This rank's device input.
    pub(super) fn me(&self) -> usize {
        self.me
    }
}

/// One central barrier in flight.
#[derive(Debug)]
pub struct CentralOp {
    req: usize,
    comm: usize,
    dev: DeviceRank,
    /// The communicator's collective sequence number for this barrier.
    seq: u32,
    /// The leader's tree instance, once the node's inputs are all in.
    tree_req: Option<usize>,
    /// A small collective riding on the barrier (`riding.rs`): every
    /// rank's part sits in its data slot, and each reads what it needs
    /// from them all when the barrier is out.
    riding: Option<Riding>,
    /// This rank's part, written to its slot when it arrives: not before,
    /// since the slot of generation g + 2 is the slot of g, which other
    /// ranks may still be reading. A user buffer is the caller's send
    /// buffer (or its receive buffer, in place), which MPI keeps unchanged
    /// until completion.
    data: Option<Source>,
}

impl CentralOp {
    /// An operation not yet queued (its request comes with the queue).
    fn new(
        comm: usize,
        dev: DeviceRank,
        seq: u32,
        riding: Option<Riding>,
        data: Option<Source>,
    ) -> Self {
        Self {
            req: DONE,
            comm,
            dev,
            seq,
            tree_req: None,
            riding,
            data,
        }
    }

    pub fn comm(&self) -> usize {
        self.comm
    }
}

/// Polls device operation `op` once: what the engine must do next.
fn step_op(
    net: &super::net::Net,
    comms: &super::comm::Comms,
    reqs: &super::request::Requests,
    op: &mut CentralOp,
) -> MpiResult<Action> {
    let Central::Active(setup) = &comms.get(op.comm)?.central else {
        return Err(MpiError::internal("central barrier lost its channel"));
    };
    let tree_done = op.tree_req.map(|r| reqs.get(r).is_none_or(|q| q.done));
    let step = match setup.chan {
        Some(ch) => {
            let dev = net
                .shm
                .as_ref()
                .and_then(|s| s.device())
                .ok_or_else(|| MpiError::internal("barrier device vanished"))?;
            let w = dev.channel(ch);
            if let Some(d) = op.data.take() {
                w.put_data(setup.me, op.dev.generation(), d.as_slice());
            }
            match tree_done {
                Some(true) => op.dev.release(&w),
                _ => op.dev.poll(&w, &setup.members),
            }
        }
        None => match tree_done {
            Some(true) => op.dev.release(&setup.solo),
            _ => op.dev.poll(&setup.solo, &setup.members),
        },
    };
    Ok(match step {
        Step::Continue | Step::Pending => Action::Nothing,
        Step::LocalComplete => Action::WakeLeader,
        Step::Gathered if op.tree_req.is_none() => Action::StartTree,
        Step::Gathered => Action::Nothing,
        Step::Done { raised } => Action::Finish { raised },
    })
}

/// What the device told a barrier in flight, applied after the borrow ends.
enum Action {
    Nothing,
    WakeLeader,
    StartTree,
    Finish { raised: bool },
}

/// Polls of its wires a blocking device operation makes before it becomes
/// a request in the general wait (which goes on spinning, then yields and
/// sleeps): about 10-20 us, time enough for ranks that arrive together.
const SPIN_IN_PLACE: u32 = 1000;
/// The same where ranks outnumber cores, each poll after handing the core
/// to another rank: by then the ranks sharing it have arrived too, so a
/// few turns see most barriers out, where the request and the general
/// wait around each turn cost more than the barrier's own work.
const YIELD_IN_PLACE: u32 = 16;

/// Bytes of every member's contribution together above which an
/// allreduce does not ride the device, unless its own is at most
/// [`RIDE_ALWAYS`]: each rank folds them all. Up to here riding beat the
/// message-passing algorithms at every rank count measured (2 to 8 ranks
/// on 2 cores, 512 B to 4 KiB: 1.5 to 2.2 times faster).
const RIDE_FOLD_MAX: usize = 32 << 10;
/// Contributions this small always ride: the device's data slots were
/// this size before they grew to [`DATA_MAX`].
const RIDE_ALWAYS: usize = 256;

/// Whether an allreduce of `len` bytes on `size` ranks rides the device's
/// barrier (when the device is ready), every member answering alike.
fn rides(len: usize, size: u32) -> bool {
    len <= RIDE_ALWAYS || (len <= DATA_MAX && len.saturating_mul(size as usize) <= RIDE_FOLD_MAX)
}

/// `Engine::allreduce_through_root`: from this many ranks, for lengths
/// above the device's data slots and below the staged allreduce's
/// (`staged_allreduce::STAGED_MIN`), which beat it from there: 16 KiB on
/// 2 cores, 8 / 16 ranks, 22 / 67-72 against 24-26 / 81-89 us; 64 KiB
/// 34-36 / 103-109 against 89-91 / 218-239. At 4 ranks on 2 cores the
/// two paths were even up to 16 KiB (reduce-then-bcast loops).
const THROUGH_ROOT_RANKS: u32 = 8;

impl Engine {
    /// Whether `comm`'s members agreed, when they set up its channel, that
    /// they share cores; false without a channel.
    pub(super) fn crowded(&self, comm: usize) -> MpiResult<bool> {
        Ok(matches!(&self.comms.get(comm)?.central, Central::Active(s) if s.crowded))
    }

    /// Whether barriers on a communicator of `size` ranks should try the device.
    pub(super) fn central_wanted(&self, size: u32) -> bool {
        size > 1 && self.settings.algos.barrier_wants_central()
    }

    /// Starts a barrier on `comm` through the device; `None` when the
    /// communicator uses software barriers.
    /// `blocking` as for [`Engine::central_start_with`].
    pub(super) fn central_barrier(
        &mut self,
        comm: usize,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let size = self.comms.get(comm)?.size;
        if !self.central_wanted(size) {
            return Ok(None);
        }
        loop {
            match &self.comms.get(comm)?.central {
                Central::Untried => return self.central_negotiate(comm).map(Some),
                Central::Negotiating { .. } => self.central_resolve(comm)?,
                Central::Active(_) => {
                    return self.central_start_with(comm, None, blocking).map(Some)
                }
                Central::Declined => return Ok(None),
            }
        }
    }

    /// Claims a channel and starts the AND allreduce that doubles as this
    /// barrier; returns its request.
    fn central_negotiate(&mut self, comm: usize) -> MpiResult<usize> {
        let setup = self.central_claim(comm)?;
        let vote = setup.as_ref().is_some_and(|s| !self.rounds_beat_device(s));
        let cm = self.comms.get(comm)?;
        let band = lanai_coll::Predefined::new(lanai_coll::Op::Band, lanai_coll::Elem::U8)
            .map_err(|e| MpiError::internal(e.to_string()))?;
        let m = lanai_coll::allreduce(
            cm.rank,
            cm.size,
            vec![u8::from(vote), u8::from(self.settings.oversubscribed)],
            band,
            self.settings.algos.allreduce,
        )
        .map_err(|e| MpiError::internal(format!("barrier channel agreement: {e}")))?;
        let slot = Slot::default();
        let capture = Capture::new(m, slot.clone());
        let req = self.start_coll(comm, Box::new(capture), None)?;
        self.comms.get_mut(comm)?.central = Central::Negotiating { slot, setup };
        Ok(req)
    }

    /// Whether `LANAI_BARRIER=auto` should leave a communicator that spans
    /// nodes to the software barrier: where every rank has a core, a
    /// message costs little and the tree's hops up and down outnumber the
    /// rounds of pairwise exchange (8 nodes on 16 cores: 50 against 32 us).
    /// Where ranks share cores, each message costs a wake-up and the tree,
    /// which sends the fewest, wins (62 against 83 us on 2 cores). Hosts
    /// may see this differently; the agreement's AND settles it for all.
    fn rounds_beat_device(&self, setup: &Setup) -> bool {
        self.settings.algos.barrier == super::coll::BarrierChoice::Auto
            && setup.role != Role::Peer
            && !self.settings.oversubscribed
    }

    /// Waits for the agreement (every member started it, so it completes)
    /// and records its outcome.
    fn central_resolve(&mut self, comm: usize) -> MpiResult<()> {
        let Central::Negotiating { slot, .. } = &self.comms.get(comm)?.central else {
            return Ok(());
        };
        let slot = slot.clone();
        let filled = |s: &Slot| s.lock().map(|g| g.is_some()).unwrap_or(true);
        self.wait_until(|_| filled(&slot))?;
        let votes = slot.lock().ok().and_then(|mut g| g.take());
        let all = votes.as_ref().is_some_and(|v| v.first() == Some(&1));
        let crowded = votes.as_ref().is_some_and(|v| v.get(1) == Some(&1));
        let cm = self.comms.get_mut(comm)?;
        let Central::Negotiating { setup, .. } = std::mem::take(&mut cm.central) else {
            return Ok(());
        };
        let (state, give_back) = match setup {
            Some(s) if all => (Central::Active(Setup { crowded, ..s }), None),
            other => (Central::Declined, other.and_then(|s| s.chan)),
        };
        let declined = matches!(state, Central::Declined);
        let ctx = cm.ctx;
        cm.central = state;
        if let Some(ch) = give_back {
            self.release_channel(ch);
        }
        super::debug_log(self.settings.debug && declined, self.job.rank, || {
            format!("communicator context {ctx}: software barrier (a node has no free barrier channel, or its ranks each have a core and the communicator spans nodes)")
        });
        Ok(())
    }

    /// This rank's part of the device for `comm`: its node's members, its
    /// role, and a channel when other members share the node.
    fn central_claim(&mut self, comm: usize) -> MpiResult<Option<Setup>> {
        let cm = self.comms.get(comm)?;
        let world = cm.members();
        let node_of = |w: u32| self.job.node_of[w as usize];
        let my_node = self.job.my_node();
        let mut members = Vec::new();
        for &w in world.iter().filter(|&&w| node_of(w) == my_node) {
            let i = self.net.local_world.iter().position(|&x| x == w);
            members.push(i.ok_or_else(|| MpiError::internal("member missing on its node"))?);
        }
        let me = self
            .net
            .local_world
            .iter()
            .position(|&x| x == self.job.rank)
            .unwrap_or(0);
        // Leaders: the first member on each node, in communicator-rank order.
        let mut leaders: Vec<u32> = Vec::new();
        let mut seen_nodes: Vec<u32> = Vec::new();
        for &w in &world {
            if !seen_nodes.contains(&node_of(w)) {
                seen_nodes.push(node_of(w));
                leaders.push(w);
            }
        }
        let (role, tree) = if leaders.len() == 1 {
            (Role::Peer, None)
        } else if let Some(i) = leaders.iter().position(|&w| w == self.job.rank) {
            let tree = Tree {
                me: i as u32,
                leaders,
                k: self.settings.algos.barrier_tree_k,
            };
            (Role::Leader, Some(tree))
        } else {
            (Role::Follower, None)
        };
        let (chan, gen) = if members.len() == 1 {
            (None, 0)
        } else {
            let key =
                super::comm::fnv1a([cm.ctx, cm.size].into_iter().chain(world.iter().copied()));
            let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) else {
                return Ok(None);
            };
            let Some(ch) = dev.claim(key) else {
                return Ok(None);
            };
            // The output only moves in barriers on this channel, and none
            // can run before every member has claimed it.
            (Some(ch), dev.channel(ch).output())
        };
        Ok(Some(Setup {
            chan,
            solo: SoloWires::default(),
            gen,
            members: if chan.is_some() { members } else { vec![0] },
            me: if chan.is_some() { me } else { 0 },
            role,
            tree,
            mail: 0,
            free: FreeSlots::default(),
            staged_last: [0; crate::shm::stage::SLOTS],
            crowded: false,
        }))
    }

    fn release_channel(&self, ch: usize) {
        if let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) {
            dev.release(ch);
        }
    }

    /// Gives back `comm`'s channel (`MPI_Comm_free`).
    pub(super) fn central_forget(&mut self, central: Central) {
        let chan = match central {
            Central::Active(s) | Central::Negotiating { setup: Some(s), .. } => s.chan,
            _ => None,
        };
        if let Some(ch) = chan {
            self.release_channel(ch);
        }
    }

    /// `MPI_Allreduce` that rides the device (see [`rides`]) on a
    /// communicator whose members share one node and its device. When it
    /// does not qualify the operator comes back, and the caller runs the
    /// message-passing algorithms, which give the same bits. `may_agree`
    /// as for [`Engine::device_ready`].
    pub(super) fn central_allreduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: super::coll::Combiner,
        may_agree: bool,
    ) -> MpiResult<Result<usize, super::coll::Combiner>> {
        // The small ones, the latency-bound case, skip the size's lookup.
        let len = data.len();
        if len > RIDE_ALWAYS && !rides(len, self.comms.get(comm)?.size)
            || !self.device_ready(comm, len, DATA_MAX, may_agree)?
        {
            return Ok(Err(op));
        }
        let riding = Riding {
            kind: Kind::Allreduce(op),
            len: data.len(),
            out,
        };
        self.central_start_with(comm, Some((Source::User(data), riding)), may_agree)
            .map(Ok)
    }

    /// Whether a blocking `MPI_Allreduce` of `len` bytes on `comm` should be
    /// a reduce to rank 0 through the device's mailboxes or staging slots,
    /// then a broadcast: on a node whose ranks share cores the root folding
    /// every contribution where it lies beats the exchanges of recursive
    /// doubling or Rabenseifner, each of which waits for a peer to be
    /// scheduled (64 KiB on 2 cores: 45-48 against 53-57 us at 4 ranks,
    /// 86-91 against 117-124 at 8, 216-226 against 349-390 at 16). From
    /// 16 KiB the staged allreduce beats both (`THROUGH_ROOT_RANKS`). With
    /// a core per rank those
    /// exchanges run in parallel, so only communicators whose members all
    /// agreed they are crowded take it. The reduce's grouping is the
    /// binomial tree's, which every allreduce path shares, so the bits stay.
    /// `blocking`: the caller waits at once, so the channel may be agreed
    /// on the way.
    #[inline]
    pub fn allreduce_through_root(
        &mut self,
        comm: usize,
        len: usize,
        blocking: bool,
    ) -> MpiResult<bool> {
        // Those that ride the device, the latency-bound case, leave first.
        if len <= RIDE_ALWAYS || len > crate::shm::stage::STAGE_MAX {
            return Ok(false);
        }
        let size = self.comms.get(comm)?.size;
        if rides(len, size) {
            return Ok(false);
        }
        let algos = &self.settings.algos;
        if algos.allreduce != lanai_coll::AllreduceAlgo::Auto
            || !algos.reduce_auto
            || self.offload.is_some()
        {
            return Ok(false);
        }
        if size < THROUGH_ROOT_RANKS || len >= super::staged_allreduce::STAGED_MIN {
            return Ok(false);
        }
        if !self.device_ready(comm, len, crate::shm::stage::STAGE_MAX, blocking)? {
            return Ok(false);
        }
        self.crowded(comm)
    }

    /// The allreduce of [`Engine::allreduce_through_root`]: a reduce to
    /// rank 0, which takes every contribution (`data`, which may be `out`)
    /// before the broadcast writes `out`, then the broadcast. Nonblocking,
    /// non-roots start both at once (the broadcast waits for rank 0), and
    /// rank 0 starts its broadcast when its reduce completes, under the
    /// collective number taken now.
    pub fn start_allreduce_through_root(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: impl MakeCombiner,
        blocking: bool,
    ) -> MpiResult<usize> {
        let root = self.comms.get(comm)?.rank == 0;
        let reduce = self.start_reduce(comm, data, root.then_some(out), 0, op, blocking)?;
        if blocking {
            self.finish_coll(reduce)?;
            return self.start_bcast(comm, out, 0, true);
        }
        if root {
            let seq = self.reserve_coll_seq(comm)?;
            return self.start_then_bcast(reduce, comm, out, seq);
        }
        let bcast = self.start_bcast(comm, out, 0, false)?;
        Ok(self.start_both(reduce, bcast))
    }

    /// Whether a reduction of `len` bytes, at most `max`, on `comm` may use
    /// the device: every member on this node, and the channel agreed. Every
    /// member answers alike, since the agreement's state only moves in
    /// collective calls. `may_agree`: a blocking call may run the agreement
    /// first; a nonblocking one must not wait for other ranks.
    #[inline(always)]
    pub(super) fn device_ready(
        &mut self,
        comm: usize,
        len: usize,
        max: usize,
        may_agree: bool,
    ) -> MpiResult<bool> {
        if len == 0 || len > max {
            return Ok(false);
        }
        // Agreed: the common case, one look. Only a communicator that wants
        // the device gets there, and settings do not change in a job.
        if let Some(Central::Active(s)) = self.comms.get(comm).ok().map(|cm| &cm.central) {
            return Ok(s.node_channel().is_some());
        }
        self.device_settle(comm, may_agree)
    }

    /// [`Engine::device_ready`] before the channel is agreed.
    #[inline(never)]
    fn device_settle(&mut self, comm: usize, may_agree: bool) -> MpiResult<bool> {
        if !self.central_wanted(self.comms.get(comm)?.size) {
            return Ok(false);
        }
        if may_agree && matches!(self.comms.get(comm)?.central, Central::Untried) {
            let req = self.central_negotiate(comm)?;
            self.finish_coll(req)?;
        }
        if matches!(self.comms.get(comm)?.central, Central::Negotiating { .. }) {
            if !may_agree {
                return Ok(false);
            }
            self.central_resolve(comm)?;
        }
        Ok(matches!(
            &self.comms.get(comm)?.central,
            Central::Active(s) if s.node_channel().is_some()
        ))
    }

    /// Starts a device barrier, with a small collective riding on it if
    /// `riding` says so (its part is written on arrival). `blocking`: the
    /// caller waits at once, and gets [`DONE`] instead of a request if the
    /// barrier is over as it starts.
    pub(super) fn central_start_with(
        &mut self,
        comm: usize,
        riding: Option<(Source, Riding)>,
        blocking: bool,
    ) -> MpiResult<usize> {
        let cm = self.comms.get_mut(comm)?;
        let seq = cm.coll_seq;
        cm.coll_seq = cm.coll_seq.wrapping_add(1);
        let Central::Active(setup) = &mut cm.central else {
            return Err(MpiError::internal("central barrier without a channel"));
        };
        setup.gen = setup.gen.wrapping_add(1);
        let mut dev = DeviceRank::new(setup.me, setup.gen, setup.role);
        let chan = setup.chan;
        let riding = riding.filter(|_| chan.is_some());
        // A blocking call that is last to arrive is done here, with no
        // request; the others queue. Only with no other device operation in
        // flight: those of one communicator run in order, and the others
        // are polled whenever one starts.
        let idle = blocking && self.st.colls.central.is_empty();
        if let (true, Some(ch), Role::Peer) = (idle, chan, dev.role()) {
            if self.central_now(comm, ch, &mut dev, riding.as_ref())? {
                return Ok(DONE);
            }
            // Arrived, its part written: it waits as a request.
            let op = CentralOp::new(comm, dev, seq, riding.map(|(_, r)| r), None);
            return self.central_queue(op, false);
        }
        let (riding, data) = match riding {
            Some((data, r)) => (Some(r), Some(data)),
            None => (None, None),
        };
        let mut op = CentralOp::new(comm, dev, seq, riding, data);
        let mut start_tree = false;
        if idle {
            match step_op(&self.net, &self.comms, &self.st.reqs, &mut op)? {
                Action::Finish { raised } => {
                    self.central_end(op, raised)?;
                    return Ok(DONE);
                }
                Action::WakeLeader => self.central_wake(comm, true)?,
                Action::StartTree => start_tree = true,
                Action::Nothing => {}
            }
        }
        self.central_queue(op, start_tree)
    }

    /// Queues a device operation as a request, starting the leader's tree
    /// instance if its node has arrived already.
    fn central_queue(&mut self, mut op: CentralOp, start_tree: bool) -> MpiResult<usize> {
        let req = self.st.reqs.insert_on(Op::Coll, op.comm);
        op.req = req;
        self.st.colls.central.push(op);
        if start_tree {
            let i = self.st.colls.central.len() - 1;
            let tree = self.central_start_tree(i)?;
            self.st.colls.central[i].tree_req = Some(tree);
        }
        self.drive_central()?;
        Ok(req)
    }

    /// The first poll of a blocking device operation on one node, with
    /// nothing else of the device in flight: arrives (writing `riding`'s
    /// part), then polls its wires alone for a while if it may spin in
    /// place. True when the barrier is over, the riding collective's
    /// result read and the sleepers woken. Everything stays borrowed, so
    /// the latency-bound case moves no part and looks nothing up twice.
    fn central_now(
        &mut self,
        comm: usize,
        ch: usize,
        dev: &mut DeviceRank,
        riding: Option<&(Source, Riding)>,
    ) -> MpiResult<bool> {
        let cm = self.comms.get(comm)?;
        let Central::Active(setup) = &cm.central else {
            return Err(MpiError::internal("central barrier lost its channel"));
        };
        let w = self
            .net
            .shm
            .as_ref()
            .and_then(|s| s.device())
            .ok_or_else(|| MpiError::internal("barrier device vanished"))?
            .channel(ch);
        let gen = dev.generation();
        if let Some((data, _)) = riding {
            w.put_data(setup.me, gen, data.as_slice());
        }
        let mut step = dev.poll(&w, &setup.members);
        if !matches!(step, Step::Done { .. }) {
            let Some(polls) = self.spin_polls() else {
                return Ok(false);
            };
            let yielding = self.settings.oversubscribed;
            for _ in 0..polls {
                if yielding {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                step = dev.poll(&w, &setup.members);
                if matches!(step, Step::Done { .. }) {
                    break;
                }
            }
        }
        let Step::Done { raised } = step else {
            return Ok(false);
        };
        if raised {
            self.central_wake(comm, false)?;
        }
        let Some((_, r)) = riding else {
            return Ok(true);
        };
        let members = &setup.members;
        if !r.needs_scratch(members.len()) {
            r.finish(&w, gen, members, cm.rank as usize, &mut Vec::new())?;
            return Ok(true);
        }
        let mut buf = self.st.colls.take_buf();
        let res = r.finish(&w, gen, members, cm.rank as usize, &mut buf);
        self.st.colls.give_buf(buf);
        res.map(|()| true)
    }

    /// How many polls a blocking device operation on one node, arrived,
    /// may make of its wires alone before it becomes a request in the
    /// general wait (which goes on spinning, then yields and sleeps);
    /// `None` when it may not: only when nothing else of ours is in flight
    /// that a peer could be waiting for. A rank with a core spins between
    /// polls, one sharing it yields ([`YIELD_IN_PLACE`]). The request, the
    /// queue and the general wait then stay off the path between seeing
    /// the last input and the next call's arrival.
    fn spin_polls(&self) -> Option<u32> {
        let idle = self.st.reqs.live() == 0
            && !self.net.has_backlog()
            && self.st.followups.is_empty()
            && !self.st.colls.has_work()
            && self.st.colls.mail.is_empty()
            && !self
                .net
                .tcp
                .as_ref()
                .is_some_and(|t| t.has_pending_output());
        let most = match self.settings.oversubscribed {
            true => YIELD_IN_PLACE,
            false => SPIN_IN_PLACE,
        };
        // No more polls than `LANAI_SPIN=<n>` allows a wait.
        idle.then_some(match self.settings.spin {
            super::Spin::Polls(n) => n.min(most),
            super::Spin::Time(_) => most,
        })
    }

    /// Polls every central barrier in flight. True if any moved on.
    pub(super) fn drive_central(&mut self) -> MpiResult<bool> {
        let mut did = false;
        let mut i = 0;
        while i < self.st.colls.central.len() {
            // One communicator's device operations run in order: a rank
            // arrives at generation g + 1 only after it has finished g (and
            // read g's data), which is what makes two data slots enough.
            let (comm_i, gen_i) = {
                let op = &self.st.colls.central[i];
                (op.comm, op.dev.generation())
            };
            let earlier =
                self.st.colls.central.iter().any(|o| {
                    o.comm == comm_i && (o.dev.generation().wrapping_sub(gen_i) as i32) < 0
                });
            if earlier {
                i += 1;
                continue;
            }
            let action = step_op(
                &self.net,
                &self.comms,
                &self.st.reqs,
                &mut self.st.colls.central[i],
            )?;
            match action {
                Action::Nothing => i += 1,
                Action::WakeLeader => {
                    self.central_wake(self.st.colls.central[i].comm, true)?;
                    i += 1;
                }
                Action::StartTree => {
                    let req = self.central_start_tree(i)?;
                    self.st.colls.central[i].tree_req = Some(req);
                    did = true;
                    i += 1;
                }
                Action::Finish { raised } => {
                    let op = self.st.colls.central.swap_remove(i);
                    let req = op.req;
                    // A failure (a riding part of the wrong length) is the
                    // request's own, raised where it is waited for, not by
                    // whichever call happened to drive it.
                    let mut status = super::coll::coll_status();
                    if let Err(e) = self.central_end(op, raised) {
                        status.error = e.class;
                        let cookie = self.st.reqs.cookie(req);
                        self.st.colls.keep_failure(cookie, e);
                    }
                    self.st.reqs.complete(req, status);
                    did = true;
                }
            }
        }
        Ok(did)
    }

    /// Finishes a device operation that is over: drops its tree instance,
    /// wakes the sleepers if this rank raised the output, and folds a
    /// riding allreduce into the caller's buffer.
    fn central_end(&mut self, op: CentralOp, raised: bool) -> MpiResult<()> {
        if let Some(t) = op.tree_req {
            self.st.reqs.remove(t);
        }
        if raised {
            self.central_wake(op.comm, false)?;
        }
        if let Some(r) = &op.riding {
            let size = self.comms.get(op.comm)?.size as usize;
            if !r.needs_scratch(size) {
                return self.central_read(op.comm, op.dev.generation(), r, &mut Vec::new());
            }
            let mut buf = self.st.colls.take_buf();
            let res = self.central_read(op.comm, op.dev.generation(), r, &mut buf);
            self.st.colls.give_buf(buf);
            res?;
        }
        Ok(())
    }

    /// Every member's part of a riding collective, read where it lies
    /// into the caller's buffer; `buf` is scratch.
    fn central_read(&self, comm: usize, gen: u32, r: &Riding, buf: &mut Vec<u8>) -> MpiResult<()> {
        let cm = self.comms.get(comm)?;
        let Central::Active(Setup {
            chan: Some(ch),
            members,
            ..
        }) = &cm.central
        else {
            return Err(MpiError::internal("device collective without a channel"));
        };
        let device = self.net.shm.as_ref().and_then(|s| s.device());
        let w = device
            .ok_or_else(|| MpiError::internal("barrier device vanished"))?
            .channel(*ch);
        // Every member is on this node, listed in rank order.
        r.finish(&w, gen, members, cm.rank as usize, buf)
    }

    /// Wakes local members asleep on `comm`'s barrier: the futex sleepers
    /// with one call, and any asleep in the general wait (they had other
    /// requests too) by their doorbells. With `leader_only`, only the leader.
    fn central_wake(&self, comm: usize, leader_only: bool) -> MpiResult<()> {
        let Central::Active(setup) = &self.comms.get(comm)?.central else {
            return Ok(());
        };
        let (Some(ch), Some(shm)) = (setup.chan, self.net.shm.as_ref()) else {
            return Ok(());
        };
        if !leader_only {
            if let Some(dev) = shm.device() {
                dev.channel(ch).wake();
            }
        }
        let Some(bell) = self.net.doorbell.as_ref() else {
            return Ok(());
        };
        let targets = if leader_only {
            &setup.members[..1]
        } else {
            &setup.members[..]
        };
        for &i in targets {
            if i != setup.me && shm.peer_sleeping(i) {
                bell.ring(self.net.local_world[i]);
            }
        }
        Ok(())
    }

    /// A leader whose node has arrived joins the tree of leaders, as an
    /// ordinary collective instance under this barrier's sequence number.
    fn central_start_tree(&mut self, i: usize) -> MpiResult<usize> {
        let (comm, seq) = {
            let op = &self.st.colls.central[i];
            (op.comm, op.seq)
        };
        let cm = self.comms.get(comm)?;
        let Central::Active(Setup {
            tree: Some(tree), ..
        }) = &cm.central
        else {
            return Err(MpiError::internal("node leader without a tree"));
        };
        let m = leaders_barrier(tree.me, tree.leaders.len() as u32, tree.k)
            .map_err(|e| MpiError::internal(format!("barrier tree: {e}")))?;
        let (ctx, me, map) = (cm.coll_ctx(), tree.me, RankMap::List(tree.leaders.clone()));
        self.start_instance(ctx, seq, me, map, m, None)
    }

    /// Whether this rank has one request pending and owes no peer anything
    /// meanwhile: no messages of ours waiting for ring or socket space, no
    /// reply to a sender (a synchronous send's acknowledgement, a
    /// rendezvous fetch). A peer may wait for those before it arrives at a
    /// collective, so only then may a wait watch that one operation alone.
    pub(super) fn owes_nothing_but_one(&self) -> bool {
        self.st.reqs.pending() == 1
            && !self.net.has_backlog()
            && self.st.followups.is_empty()
            && !self
                .net
                .tcp
                .as_ref()
                .is_some_and(|t| t.has_pending_output())
    }

    /// When this rank waits on nothing but a central barrier it does not
    /// lead: the channel and generation to sleep on in the futex.
    pub(super) fn central_sleeper(&self) -> Option<(usize, u32)> {
        let [op] = &self.st.colls.central[..] else {
            return None;
        };
        if op.dev.role() == Role::Leader || !self.owes_nothing_but_one() {
            return None;
        }
        let Ok(cm) = self.comms.get(op.comm) else {
            return None;
        };
        match &cm.central {
            Central::Active(Setup { chan: Some(ch), .. }) => Some((*ch, op.dev.generation())),
            _ => None,
        }
    }

    /// Sleeps in the futex of channel `ch` until generation `gen` is out
    /// (or `timeout`), after announcing itself and one last poll.
    pub(super) fn central_sleep(
        &mut self,
        ch: usize,
        gen: u32,
        timeout: Duration,
    ) -> MpiResult<()> {
        let seen = match self.net.shm.as_ref().and_then(|s| s.device()) {
            Some(dev) => {
                let c = dev.channel(ch);
                c.announce();
                crate::shm::fence::heavy();
                c.output()
            }
            None => return Ok(()),
        };
        let polled = self.drive_central();
        if let (Ok(false), Some(dev)) = (&polled, self.net.shm.as_ref().and_then(|s| s.device())) {
            if !reached(seen, gen) {
                dev.channel(ch).wait(seen, timeout);
            }
        }
        self.net.counters.sleeps += 1;
        if let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) {
            dev.channel(ch).retire();
        }
        polled.map(|_| ())
    }

    /// Announces this rank as a sleeper on the channels of its device
    /// barriers in flight (it is about to sleep in the general wait);
    /// returns them for [`Engine::central_retire`].
    pub(super) fn central_announce(&self) -> Vec<usize> {
        let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) else {
            return Vec::new();
        };
        let mut chans = Vec::new();
        for op in &self.st.colls.central {
            if let Ok(Central::Active(Setup { chan: Some(ch), .. })) =
                self.comms.get(op.comm).map(|c| &c.central)
            {
                dev.channel(*ch).announce();
                chans.push(*ch);
            }
        }
        chans
    }

    pub(super) fn central_retire(&self, chans: &[usize]) {
        if let Some(dev) = self.net.shm.as_ref().and_then(|s| s.device()) {
            for &ch in chans {
                dev.channel(ch).retire();
            }
        }
    }
}
