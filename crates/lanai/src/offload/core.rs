//! The offload engine's protocol, sans IO (seed 003's NIC firmware).
//!
//! One `Core` serves one node. For each posted descriptor it runs the very
//! machine the rank would have run itself (`lanai_coll`), on the rank's
//! behalf: messages between two local ranks' machines never leave the
//! process, the rest go to the engine of the receiver's node. So there is no
//! second implementation of any algorithm, and results are bitwise those of
//! the host-based path whatever the arrival order.
//!
//! Remote messages for a machine not posted yet wait in a bounded pool; when
//! it is full they go back to their sender (a bounce), which retries later,
//! so nothing is lost and memory stays bounded. Time is a parameter (µs).

use super::desc::{Desc, Work};
use lanai_coll::{Collective, Reduce};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

type Machine = Box<dyn Collective + Send>;
/// (context, lead, sequence number, communicator rank): one rank's part of
/// one collective instance (`lead` as in [`Desc`]).
pub type Key = (u32, u32, u32, u32);

/// What travels between engines with every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub ctx: u32,
    pub lead: u32,
    pub seq: u32,
    /// Communicator ranks of the sending and the receiving machine.
    pub src: u32,
    pub dst: u32,
    /// Messages `src` sent `dst` in this instance before this one. Bounces
    /// and retries reorder messages, while machines expect each pair's in
    /// order; the receiver restores it with this.
    pub idx: u32,
}

/// Something to send to another node's engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub node: u32,
    pub hdr: Header,
    /// A message of theirs we had no room for, going back (seed 003's NACK).
    pub bounce: bool,
    pub data: Vec<u8>,
}

/// A descriptor finished: `Ok(result)` (if the operation has one for this
/// rank) or the reason it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub local: usize,
    pub slot: usize,
    pub outcome: Result<Option<Vec<u8>>, String>,
}

/// Counters for `LANAI_STATS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub descriptors: u64,
    /// Remote messages that arrived before their machine and were pooled.
    pub unexpected: u64,
    /// Our messages that came back for want of room, and were sent again.
    pub retries: u64,
    /// Their messages we sent back.
    pub bounced: u64,
    pub max_in_flight: usize,
}

/// First retry delay after a bounce, doubled per bounce of the same message
/// up to `RETRY_MAX_US`.
pub const RETRY_US: u64 = 20;
const RETRY_MAX_US: u64 = 2000;

struct Part {
    /// The (local rank, slot) pairs this part completes: one, or every local
    /// member's for a node's part of a device barrier.
    waiters: Vec<(usize, usize)>,
    /// World rank per machine rank, for routing: the members, or one member
    /// per node for a node part.
    members: Arc<Vec<u32>>,
    /// `NODE_PART` for a node's part (its machine ranks are node indexes),
    /// else 0.
    tag: u32,
    machine: Machine,
    error: Option<String>,
    /// Per peer: messages sent to it, and the next index expected from it.
    sent: HashMap<u32, u32>,
    expect: HashMap<u32, u32>,
    /// Messages that arrived ahead of an earlier one from the same peer.
    held: BTreeMap<(u32, u32), Vec<u8>>,
}

impl Part {
    fn new(
        waiters: Vec<(usize, usize)>,
        members: Arc<Vec<u32>>,
        tag: u32,
        machine: Machine,
    ) -> Self {
        Part {
            waiters,
            members,
            tag,
            machine,
            error: None,
            sent: HashMap::new(),
            expect: HashMap::new(),
            held: BTreeMap::new(),
        }
    }

    /// Hands the machine `src`'s message `idx` once all before it are in.
    fn feed(&mut self, src: u32, idx: u32, data: Vec<u8>) {
        let next = self.expect.entry(src).or_insert(0);
        if idx < *next || self.held.contains_key(&(src, idx)) {
            self.error
                .get_or_insert(format!("message {idx} from rank {src} arrived twice"));
            return;
        }
        self.held.insert((src, idx), data);
        while let Some(d) = self.held.remove(&(src, *next)) {
            *next += 1;
            if let Err(e) = self.machine.handle_message(src & !self.tag, &d) {
                self.error.get_or_insert(e.to_string());
            }
        }
    }
}

struct CommEntry {
    members: Arc<Vec<u32>>,
    /// Local ranks that registered it.
    refs: u32,
    /// One member per node the communicator spans, in order of first
    /// appearance: the ranks of the tree of engines in a device barrier.
    nodes: Arc<Vec<u32>>,
    /// This node's index in `nodes`, and how many members it holds.
    node_idx: u32,
    here: usize,
}

/// Machine ranks of node parts carry this bit, which no communicator rank
/// has (sizes fit in a C int).
pub const NODE_PART: u32 = 1 << 31;

struct Retry {
    due: u64,
    t: Transmit,
}

/// (sender, index, message) waiting for their machine.
type Early = Vec<(u32, u32, Vec<u8>)>;

pub struct Core {
    node: u32,
    node_of: Vec<u32>,
    local_world: Vec<u32>,
    comms: HashMap<(u32, u32), CommEntry>,
    parts: HashMap<Key, Part>,
    /// Device barriers waiting for the rest of this node's members:
    /// (context, lead, sequence) -> their (local rank, slot) pairs.
    gathering: HashMap<(u32, u32, u32), Vec<(usize, usize)>>,
    /// Messages between local machines whose receiver is not posted yet;
    /// bounded by what the local ranks posted, so not counted in the pool.
    early_local: HashMap<Key, Early>,
    pool: HashMap<Key, Early>,
    pool_bytes: usize,
    pool_limit: usize,
    /// Bounces from each node since it last sent us anything else: the
    /// retry delay doubles with each.
    backoff: Vec<u32>,
    retries: Vec<Retry>,
    dirty: Vec<Key>,
    out: VecDeque<Transmit>,
    done: VecDeque<Completion>,
    stats: Stats,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("node", &self.node)
            .field("in_flight", &self.parts.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl Core {
    /// `node_of[w]`: node of world rank `w`; `local_world[i]`: world rank of
    /// local rank `i`; `pool_limit`: bytes of unexpected remote messages kept.
    pub fn new(node: u32, node_of: Vec<u32>, local_world: Vec<u32>, pool_limit: usize) -> Self {
        Core {
            node,
            node_of,
            local_world,
            comms: HashMap::new(),
            parts: HashMap::new(),
            gathering: HashMap::new(),
            early_local: HashMap::new(),
            pool: HashMap::new(),
            pool_bytes: 0,
            pool_limit,
            backoff: Vec::new(),
            retries: Vec::new(),
            dirty: Vec::new(),
            out: VecDeque::new(),
            done: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// World rank of local rank `i`.
    pub fn local_world(&self, i: usize) -> u32 {
        self.local_world[i]
    }

    /// Operations posted and not finished.
    pub fn in_flight(&self) -> usize {
        self.parts.len() + self.gathering.len()
    }

    /// Local rank `local` posted `desc` in `slot`, with input `data`.
    pub fn post(&mut self, local: usize, slot: usize, desc: &Desc, data: Vec<u8>) {
        self.stats.descriptors += 1;
        let outcome = match desc.work {
            Work::Register => self.register(local, desc, &data).map(|()| None),
            Work::Unregister => {
                let id = (desc.ctx, desc.lead);
                if let Some(c) = self.comms.get_mut(&id) {
                    c.refs = c.refs.saturating_sub(1);
                    if c.refs == 0 {
                        self.comms.remove(&id);
                    }
                }
                Ok(None)
            }
            _ => match self.start(local, slot, desc, data) {
                Ok(()) => return self.drive(),
                Err(e) => Err(e),
            },
        };
        self.done.push_back(Completion {
            local,
            slot,
            outcome,
        });
    }

    fn register(&mut self, local: usize, desc: &Desc, data: &[u8]) -> Result<(), String> {
        if data.len() != desc.size as usize * 4 {
            return Err(format!(
                "member list of {} bytes for {} members",
                data.len(),
                desc.size
            ));
        }
        let members: Vec<u32> = data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(&w) = members.iter().find(|&&w| w as usize >= self.node_of.len()) {
            return Err(format!("member {w} is not a rank of the job"));
        }
        if members.get(desc.rank as usize) != self.local_world.get(local)
            || members.first() != Some(&desc.lead)
        {
            return Err(format!(
                "local rank {local} is not member {} of context {:#x} led by {}",
                desc.rank, desc.ctx, desc.lead
            ));
        }
        match self.comms.get_mut(&(desc.ctx, desc.lead)) {
            Some(c) if *c.members == members => c.refs += 1,
            // A context reused for another group: the newest registration wins.
            _ => {
                let mut nodes: Vec<u32> = Vec::new();
                for &w in &members {
                    let n = self.node_of[w as usize];
                    if !nodes.iter().any(|&r| self.node_of[r as usize] == n) {
                        nodes.push(w);
                    }
                }
                let node_idx = nodes
                    .iter()
                    .position(|&r| self.node_of[r as usize] == self.node)
                    .unwrap_or(0) as u32;
                let here = members
                    .iter()
                    .filter(|&&w| self.node_of[w as usize] == self.node)
                    .count();
                self.comms.insert(
                    (desc.ctx, desc.lead),
                    CommEntry {
                        members: Arc::new(members),
                        refs: 1,
                        nodes: Arc::new(nodes),
                        node_idx,
                        here,
                    },
                );
            }
        }
        Ok(())
    }

    fn start(&mut self, local: usize, slot: usize, d: &Desc, data: Vec<u8>) -> Result<(), String> {
        let members = self
            .comms
            .get(&(d.ctx, d.lead))
            .map(|c| c.members.clone())
            .ok_or_else(|| format!("context {:#x} is not registered", d.ctx))?;
        if members.len() != d.size as usize
            || members.get(d.rank as usize) != self.local_world.get(local)
        {
            return Err(format!(
                "local rank {local} is not rank {} of the {} members of context {:#x}",
                d.rank,
                members.len(),
                d.ctx
            ));
        }
        let (rank, size, len) = (d.rank, d.size, d.len as usize);
        if data.len() != d.input_len() {
            return Err(format!(
                "{} bytes of input for {}",
                data.len(),
                d.input_len()
            ));
        }
        let made = match d.work {
            Work::DeviceBarrier { k } => return self.gather(local, slot, d, k),
            Work::Barrier(a) => lanai_coll::barrier(rank, size, a),
            Work::Bcast { root, algo } => {
                let buf = if rank == root { data } else { vec![0; len] };
                lanai_coll::bcast(rank, size, root, buf, algo)
            }
            Work::Reduce { root, op, tree } => {
                Reduce::with_tree(rank, size, root, data, op, tree).map(|m| Box::new(m) as Machine)
            }
            Work::Allreduce { op, algo } => lanai_coll::allreduce(rank, size, data, op, algo),
            Work::Register | Work::Unregister => unreachable!("handled by post"),
        };
        let machine = made.map_err(|e| e.to_string())?;
        let key = (d.ctx, d.lead, d.seq, rank);
        if self.parts.contains_key(&key) {
            return Err(format!(
                "instance {} of context {:#x} posted twice by rank {rank}",
                d.seq, d.ctx
            ));
        }
        self.install(key, Part::new(vec![(local, slot)], members, 0, machine));
        Ok(())
    }

    /// A device barrier (seed 002): the engine is the node's device. Once
    /// every local member has arrived, this node's part joins the tree of
    /// engines (`leaders_barrier`, the host's cross-node algorithm), and its
    /// end releases them all.
    fn gather(&mut self, local: usize, slot: usize, d: &Desc, k: u32) -> Result<(), String> {
        let c = self
            .comms
            .get(&(d.ctx, d.lead))
            .ok_or_else(|| format!("context {:#x} is not registered", d.ctx))?;
        let (nodes, node_idx, here) = (c.nodes.clone(), c.node_idx, c.here);
        let id = (d.ctx, d.lead, d.seq);
        let waiting = self.gathering.entry(id).or_default();
        if waiting.iter().any(|&(l, _)| l == local) {
            return Err(format!(
                "instance {} of context {:#x} posted twice by rank {}",
                d.seq, d.ctx, d.rank
            ));
        }
        waiting.push((local, slot));
        if waiting.len() < here {
            return Ok(());
        }
        let waiters = self.gathering.remove(&id).unwrap_or_default();
        let machine = match lanai_coll::leaders_barrier(node_idx, nodes.len() as u32, k) {
            Ok(m) => m,
            Err(e) => {
                // Fail every member here, not only the last to arrive.
                for &(l, s) in &waiters {
                    self.done.push_back(Completion {
                        local: l,
                        slot: s,
                        outcome: Err(e.to_string()),
                    });
                }
                return Ok(());
            }
        };
        self.install(
            (d.ctx, d.lead, d.seq, NODE_PART | node_idx),
            Part::new(waiters, nodes, NODE_PART, machine),
        );
        Ok(())
    }

    /// Starts `part`, handing it what arrived for it ahead of time.
    fn install(&mut self, key: Key, mut part: Part) {
        let early = self.early_local.remove(&key).into_iter().flatten();
        let pooled = self.pool.remove(&key).unwrap_or_default();
        self.pool_bytes -= pooled.iter().map(|(_, _, m)| m.len()).sum::<usize>();
        for (from, idx, msg) in early.chain(pooled) {
            part.feed(from, idx, msg);
        }
        self.parts.insert(key, part);
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.in_flight());
        self.dirty.push(key);
    }

    /// A message from engine `node` arrived.
    pub fn handle_remote(
        &mut self,
        node: u32,
        t_bounce: bool,
        hdr: Header,
        data: Vec<u8>,
        now: u64,
    ) {
        if t_bounce {
            // Ours, back for want of room: send it again later, backing off.
            self.stats.retries += 1;
            let i = node as usize;
            if self.backoff.len() <= i {
                self.backoff.resize(i + 1, 0);
            }
            let n = self.backoff[i].min(16);
            self.backoff[i] += 1;
            let delay = (RETRY_US << n).min(RETRY_MAX_US);
            self.retries.push(Retry {
                due: now + delay,
                t: Transmit {
                    node,
                    hdr,
                    bounce: false,
                    data,
                },
            });
            return;
        }
        if let Some(n) = self.backoff.get_mut(node as usize) {
            *n = 0;
        }
        let key = (hdr.ctx, hdr.lead, hdr.seq, hdr.dst);
        if let Some(p) = self.parts.get_mut(&key) {
            p.feed(hdr.src, hdr.idx, data);
            self.dirty.push(key);
            self.drive();
        } else if self.pool_bytes + data.len() <= self.pool_limit {
            self.stats.unexpected += 1;
            self.pool_bytes += data.len();
            self.pool
                .entry(key)
                .or_default()
                .push((hdr.src, hdr.idx, data));
        } else {
            self.stats.bounced += 1;
            self.out.push_back(Transmit {
                node,
                hdr,
                bounce: true,
                data,
            });
        }
    }

    /// Earliest time `handle_timeout` has work.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.retries.iter().map(|r| r.due).min()
    }

    /// Sends again the bounced messages whose time has come.
    pub fn handle_timeout(&mut self, now: u64) {
        let mut i = 0;
        while i < self.retries.len() {
            if self.retries[i].due <= now {
                let r = self.retries.swap_remove(i);
                self.out.push_back(r.t);
            } else {
                i += 1;
            }
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.done.pop_front()
    }

    /// Runs machines with new input: routes what they send, completes the
    /// finished ones.
    fn drive(&mut self) {
        while let Some(key) = self.dirty.pop() {
            let Some(p) = self.parts.get_mut(&key) else {
                continue;
            };
            let mut sends = Vec::new();
            while let Some(o) = p.machine.poll_send() {
                sends.push(o);
            }
            let members = p.members.clone();
            let p_tag = p.tag;
            let mut bad = None;
            let mut routed = Vec::with_capacity(sends.len());
            for o in sends {
                let n = p.sent.entry(o.to).or_insert(0);
                routed.push((o, *n));
                *n += 1;
            }
            for (o, idx) in routed {
                let Some(&w) = members.get(o.to as usize) else {
                    bad = Some(format!("send to rank {} of {}", o.to, members.len()));
                    continue;
                };
                let node = self.node_of[w as usize];
                let dst = o.to | p_tag;
                let hdr = Header {
                    ctx: key.0,
                    lead: key.1,
                    seq: key.2,
                    src: key.3,
                    dst,
                    idx,
                };
                if node != self.node {
                    self.out.push_back(Transmit {
                        node,
                        hdr,
                        bounce: false,
                        data: o.to_bytes(),
                    });
                    continue;
                }
                let to = (key.0, key.1, key.2, dst);
                match self.parts.get_mut(&to) {
                    Some(q) => {
                        q.feed(key.3, idx, o.to_bytes());
                        self.dirty.push(to);
                    }
                    None => {
                        self.early_local
                            .entry(to)
                            .or_default()
                            .push((key.3, idx, o.to_bytes()))
                    }
                }
            }
            let Some(p) = self.parts.get_mut(&key) else {
                continue;
            };
            if let Some(b) = bad {
                p.error.get_or_insert(b);
            }
            let outcome = if let Some(e) = p.error.take() {
                Err(format!("collective protocol error: {e}"))
            } else if p.machine.is_done() {
                Ok(p.machine.take_result())
            } else {
                continue;
            };
            if let Some(p) = self.parts.remove(&key) {
                for (local, slot) in p.waiters {
                    self.done.push_back(Completion {
                        local,
                        slot,
                        outcome: outcome.clone(),
                    });
                }
            }
        }
    }
}
