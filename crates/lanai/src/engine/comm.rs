//! Communicators: context ids, rank translation, error handlers, and the
//! collective creation calls (dup, split, create).
//!
//! # Context ids
//! Each communicator takes two consecutive ids (p2p `ctx`, collectives
//! `ctx + 1`), i.e. one *slot* `ctx / 2`. Every process keeps a bitmask of its
//! free slots; the members of a new communicator agree on one with a bitwise
//! AND allreduce of their masks over the parent and take the lowest common
//! free slot. Creation calls block until agreement, and a process makes its
//! contribution only after its previous creation finished, so two
//! communicators sharing a member can never get the same slot.

use super::central::Central;
use super::error::{MpiError, MpiResult};
use super::group::{Group, Groups};
use super::Engine;
use crate::abi::consts as c;
use lanai_coll::{CollError, Collective, Outgoing};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How a communicator's ranks map to world ranks.
#[derive(Debug, Clone)]
pub enum RankMap {
    /// Comm rank i is world rank i.
    Identity,
    /// An explicit list, comm rank -> world rank.
    List(Vec<u32>),
}

#[derive(Debug, Clone)]
pub struct Comm {
    /// Point-to-point context id; collectives use `ctx + 1`.
    pub ctx: u32,
    pub rank: u32,
    pub size: u32,
    pub map: RankMap,
    /// Error handler handle (predefined ones only for now).
    pub errhandler: i32,
    /// Sequence number of the next collective on this communicator.
    pub coll_seq: u32,
    /// Blocking collectives the user called on it so far (`call_check`).
    pub user_calls: u32,
    /// An `MPI_ANY_SOURCE` receive has already connected every remote member.
    pub all_connected: bool,
    /// Set by `MPI_Comm_set_name`; `None` means the default name.
    pub name: Option<String>,
    /// Its channel of the central barrier device, if any.
    pub central: Central,
    /// Process topology (Cartesian, graph...), shared with its duplicates.
    pub topo: Option<Arc<super::topo::Topology>>,
    /// The remote group, for an intercommunicator.
    pub inter: Option<Arc<super::intercomm::Remote>>,
}

impl Comm {
    pub fn world_rank(&self, r: u32) -> u32 {
        match &self.map {
            RankMap::Identity => r,
            RankMap::List(l) => l[r as usize],
        }
    }

    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }

    /// Checks a destination or source rank (not a wildcard or PROC_NULL);
    /// on an intercommunicator it names a rank of the remote group.
    pub fn check_rank(&self, r: i32) -> MpiResult<u32> {
        if r < 0 || r as u32 >= self.peer_count() {
            return Err(MpiError::rank(r, self.peer_count() as usize));
        }
        Ok(r as u32)
    }

    pub fn is_inter(&self) -> bool {
        self.inter.is_some()
    }

    /// Size of the group point-to-point ranks name (the remote group of an
    /// intercommunicator).
    pub fn peer_count(&self) -> u32 {
        match &self.inter {
            Some(r) => r.members.len() as u32,
            None => self.size,
        }
    }

    /// World rank of point-to-point rank `r` (checked by `check_rank`).
    pub fn peer_world(&self, r: u32) -> u32 {
        match &self.inter {
            Some(rem) => rem.members[r as usize],
            None => self.world_rank(r),
        }
    }

    /// World ranks a point-to-point operation may reach.
    pub fn peers(&self) -> Vec<u32> {
        match &self.inter {
            Some(rem) => rem.members.clone(),
            None => self.members(),
        }
    }

    /// World ranks of the members, in comm-rank order.
    pub fn members(&self) -> Vec<u32> {
        (0..self.size).map(|r| self.world_rank(r)).collect()
    }

    /// A communicator derived from this one: same handler, fresh sequence.
    pub(super) fn derive(&self, ctx: u32, rank: u32, members: Vec<u32>) -> Comm {
        Comm {
            ctx,
            rank,
            size: members.len() as u32,
            map: RankMap::List(members),
            errhandler: self.errhandler,
            coll_seq: 0,
            user_calls: 0,
            all_connected: false,
            name: None,
            central: Central::Untried,
            topo: None,
            inter: None,
        }
    }
}

/// Index of `MPI_COMM_WORLD` and `MPI_COMM_SELF` in the table.
pub const WORLD: usize = 0;
pub const SELF: usize = 1;

/// Context-id slots (communicators alive at once in one process).
pub(super) const CTX_SLOTS: usize = 4096;
pub(super) const MASK_BYTES: usize = CTX_SLOTS / 8;
/// Agreement rounds before a creation gives up for want of a context id.
pub(super) const AGREEMENT_ROUNDS: u32 = 1000;
/// Context ids at or above this are temporary (see `create_group`).
pub(super) const TEMP_CTX_BASE: u32 = 0x8000_0000;

#[derive(Debug)]
pub struct Comms {
    table: Vec<Option<Comm>>,
    /// Bit `s` of byte `s / 8` set: slot `s` (ids `2s`, `2s + 1`) is free.
    pub(super) free_slots: Vec<u8>,
    /// Free slots this process offered to a nonblocking agreement still in
    /// flight (`Comm_idup`). Concurrent agreements get disjoint offers, so
    /// two of them can never pick the same slot for this process.
    offered: Vec<u8>,
    /// `MPI_Comm_create_group` calls so far, by (parent, tag, group) hash.
    create_group_calls: HashMap<u64, u32>,
    /// User groups (`MPI_Group` handles).
    pub groups: Groups,
    /// Freed communicators that requests still name, by index: their index
    /// and context id stay taken (MPI completes such operations normally, and
    /// a new communicator must not match their messages or hear their
    /// errors) until [`reap`](Self::reap) finds them unused.
    retired: HashMap<usize, Comm>,
}

impl Default for Comms {
    fn default() -> Self {
        Self::new(0, 1, c::MPI_ERRORS_ARE_FATAL)
    }
}

impl Comms {
    pub fn new(world_rank: u32, world_size: u32, errhandler: i32) -> Self {
        let world = Comm {
            ctx: 0,
            rank: world_rank,
            size: world_size,
            map: RankMap::Identity,
            errhandler,
            coll_seq: 0,
            user_calls: 0,
            all_connected: false,
            name: None,
            central: Central::Untried,
            topo: None,
            inter: None,
        };
        let me = Comm {
            ctx: 2,
            rank: 0,
            size: 1,
            map: RankMap::List(vec![world_rank]),
            ..world.clone()
        };
        let mut free_slots = vec![0xff; MASK_BYTES];
        // Slots 0 and 1 (ids 0..=3) belong to WORLD and SELF.
        free_slots[0] = 0xfc;
        Self {
            table: vec![Some(world), Some(me)],
            free_slots,
            offered: vec![0; MASK_BYTES],
            create_group_calls: HashMap::new(),
            groups: Groups::default(),
            retired: HashMap::new(),
        }
    }

    pub fn get(&self, idx: usize) -> MpiResult<&Comm> {
        self.table
            .get(idx)
            .and_then(Option::as_ref)
            .ok_or_else(MpiError::comm)
    }

    pub fn get_mut(&mut self, idx: usize) -> MpiResult<&mut Comm> {
        self.table
            .get_mut(idx)
            .and_then(Option::as_mut)
            .ok_or_else(MpiError::comm)
    }

    /// Adds a communicator; returns its index (never WORLD or SELF).
    pub fn insert(&mut self, comm: Comm) -> usize {
        let retired = &self.retired;
        let free = self
            .table
            .iter()
            .enumerate()
            .skip(2)
            .position(|(i, c)| c.is_none() && !retired.contains_key(&i));
        match free {
            Some(i) => {
                self.table[i + 2] = Some(comm);
                i + 2
            }
            None => {
                self.table.push(Some(comm));
                self.table.len() - 1
            }
        }
    }

    /// `MPI_Comm_free`: takes the communicator out of use. Its index and
    /// context slot stay taken until it is [`retire`](Self::retire)d and
    /// [`reap`](Self::reap)ed.
    pub fn free(&mut self, idx: usize) -> MpiResult<Comm> {
        if idx == WORLD || idx == SELF {
            return Err(MpiError::new(
                c::MPI_ERR_COMM,
                "cannot free a predefined communicator",
            ));
        }
        self.table
            .get_mut(idx)
            .and_then(Option::take)
            .ok_or_else(MpiError::comm)
    }

    /// Keeps freed communicator `idx` for the requests that may still name it.
    pub fn retire(&mut self, idx: usize, comm: Comm) {
        self.retired.insert(idx, comm);
    }

    /// Frees the retired communicators for which `in_use` is false.
    pub fn reap(&mut self, in_use: impl Fn(usize) -> bool) {
        let done: Vec<usize> = self
            .retired
            .keys()
            .copied()
            .filter(|&i| !in_use(i))
            .collect();
        for i in done {
            if let Some(comm) = self.retired.remove(&i) {
                self.release_ctx(comm.ctx);
            }
        }
    }

    /// The error handler of communicator `idx`, live or freed under requests
    /// that still name it.
    pub fn errhandler(&self, idx: usize) -> Option<i32> {
        self.get(idx)
            .ok()
            .or_else(|| self.retired.get(&idx))
            .map(|c| c.errhandler)
    }

    /// Communicators currently allocated, WORLD and SELF included.
    pub fn live(&self) -> usize {
        self.table.iter().filter(|c| c.is_some()).count()
    }

    fn release_ctx(&mut self, ctx: u32) {
        let slot = (ctx / 2) as usize;
        if ctx < TEMP_CTX_BASE && (2..CTX_SLOTS).contains(&slot) {
            self.free_slots[slot / 8] |= 1 << (slot % 8);
        }
    }

    pub(super) fn take_slot(&mut self, slot: usize) {
        self.free_slots[slot / 8] &= !(1 << (slot % 8));
    }

    /// Reserves slots for a new agreement: the free ones not offered to
    /// another agreement in flight, all of them or only those in the window
    /// `start .. start + len` (wrapping). Every member of a nonblocking
    /// agreement computes the same window, so what they offer depends on
    /// their free slots only, never on timing.
    pub(super) fn offer(&mut self, window: Option<(usize, usize)>) -> Vec<u8> {
        let mut mask: Vec<u8> = self
            .free_slots
            .iter()
            .zip(&self.offered)
            .map(|(f, o)| f & !o)
            .collect();
        if let Some((start, len)) = window {
            let mut keep = vec![0u8; mask.len()];
            for k in 0..len.min(CTX_SLOTS) {
                let s = (start + k) % CTX_SLOTS;
                keep[s / 8] |= 1 << (s % 8);
            }
            for (m, k) in mask.iter_mut().zip(&keep) {
                *m &= k;
            }
        }
        for (o, m) in self.offered.iter_mut().zip(&mask) {
            *o |= m;
        }
        mask
    }

    /// Ends an offer made with [`Comms::offer`].
    pub(super) fn withdraw(&mut self, mask: &[u8]) {
        for (o, m) in self.offered.iter_mut().zip(mask) {
            *o &= !m;
        }
    }

    /// The default name of a communicator.
    pub fn name_of(&self, idx: usize) -> MpiResult<String> {
        let comm = self.get(idx)?;
        Ok(match (&comm.name, idx) {
            (Some(n), _) => n.clone(),
            (None, WORLD) => "MPI_COMM_WORLD".into(),
            (None, SELF) => "MPI_COMM_SELF".into(),
            (None, _) => String::new(),
        })
    }

    /// `MPI_Comm_compare`'s result for two live communicators.
    pub fn compare(&self, a: usize, b: usize) -> MpiResult<i32> {
        let (ca, cb) = (self.get(a)?, self.get(b)?);
        if a == b {
            return Ok(c::MPI_IDENT);
        }
        if ca.is_inter() || cb.is_inter() {
            return Ok(super::intercomm::compare(ca, cb));
        }
        Ok(
            match super::group::compare_members(&ca.members(), &cb.members()) {
                c::MPI_IDENT => c::MPI_CONGRUENT,
                other => other,
            },
        )
    }
}

/// Lowest slot set in `mask`.
pub(super) fn lowest_free(mask: &[u8]) -> Option<usize> {
    mask.iter()
        .enumerate()
        .find(|(_, &b)| b != 0)
        .map(|(i, &b)| i * 8 + b.trailing_zeros() as usize)
}

/// FNV-1a of the words' little-endian bytes: unseeded, so every process
/// names a temporary instance identically.
pub(super) fn fnv1a(words: impl IntoIterator<Item = u32>) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    for w in words {
        h.write(&w.to_le_bytes());
    }
    h.finish()
}

pub(super) type Slot = Arc<Mutex<Option<Vec<u8>>>>;

/// Wraps a machine to keep its result for the engine's own use: the driver
/// writes results only to user buffers, which internal calls don't have.
pub(super) struct Capture {
    inner: Box<dyn Collective + Send>,
    slot: Slot,
}

impl Capture {
    pub(super) fn new(inner: Box<dyn Collective + Send>, slot: Slot) -> Self {
        Self { inner, slot }
    }
}

impl Collective for Capture {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        self.inner.handle_message(from, data)
    }
    fn poll_send(&mut self) -> Option<Outgoing> {
        let out = self.inner.poll_send();
        // The driver polls to exhaustion before asking `is_done`, so the
        // result is taken before the instance is retired.
        if out.is_none() && self.inner.is_done() {
            if let Ok(mut s) = self.slot.lock() {
                if s.is_none() {
                    *s = self.inner.take_result();
                }
            }
        }
        out
    }
    fn is_done(&self) -> bool {
        self.inner.is_done()
    }
    fn synchronizes(&self) -> bool {
        self.inner.synchronizes()
    }
}

fn coll_err(e: CollError) -> MpiError {
    MpiError::internal(format!("communicator creation: {e}"))
}

impl Engine {
    /// Runs `machine` on `comm` to completion and returns its result.
    pub(super) fn run_internal(
        &mut self,
        comm: usize,
        machine: Box<dyn Collective + Send>,
    ) -> MpiResult<Vec<u8>> {
        let slot: Slot = Arc::default();
        let m = Capture {
            inner: machine,
            slot: slot.clone(),
        };
        let req = self.start_coll(comm, Box::new(m), None)?;
        let waited = self.wait(req);
        self.st.reqs.remove(req);
        waited?;
        let res = slot.lock().ok().and_then(|mut s| s.take());
        res.ok_or_else(|| MpiError::internal("communicator creation: collective gave no result"))
    }

    /// Allgather of `data` (equal length everywhere) over `comm`.
    pub fn allgather_internal(&mut self, comm: usize, data: Vec<u8>) -> MpiResult<Vec<u8>> {
        let cm = self.comms.get(comm)?;
        let m = lanai_coll::Allgather::new(cm.rank, cm.size, data, lanai_coll::AllgatherAlgo::Auto)
            .map_err(coll_err)?;
        self.run_internal(comm, Box::new(m))
    }

    /// Agrees with the other members of `comm` on a context id free at all
    /// of them. Members that will not join the new communicator (`join`
    /// false) take part but keep the id free.
    fn agree_ctx(&mut self, comm: usize, join: bool) -> MpiResult<u32> {
        // Slots offered to a pending Comm_idup are held back; when that leaves
        // no common slot, every member sees the same empty result and tries
        // again (the pending agreements progress meanwhile).
        for _ in 0..AGREEMENT_ROUNDS {
            let mask = self.with_offer(|e, offer| {
                let m = e.ctx_agreement(comm, offer)?;
                e.run_internal(comm, m)
            })?;
            if let Some(slot) = lowest_free(&mask) {
                if join {
                    self.comms.take_slot(slot);
                }
                return Ok(slot as u32 * 2);
            }
        }
        Err(MpiError::other(format!(
            "out of context ids: {CTX_SLOTS} communicators exist at once"
        )))
    }

    /// Runs `f` with this process's offer of free slots for an agreement,
    /// reserved while `f` runs, so agreements progressing meanwhile (a
    /// `Comm_idup`) never offer the same slots.
    pub(super) fn with_offer<T>(
        &mut self,
        f: impl FnOnce(&mut Self, Vec<u8>) -> MpiResult<T>,
    ) -> MpiResult<T> {
        let offer = self.comms.offer(None);
        let r = f(self, offer.clone());
        self.comms.withdraw(&offer);
        r
    }

    /// The AND allreduce of `mask` over `comm` that agrees on a context id.
    pub(super) fn ctx_agreement(
        &self,
        comm: usize,
        mask: Vec<u8>,
    ) -> MpiResult<Box<dyn Collective + Send>> {
        self.forget_calls();
        let cm = self.comms.get(comm)?;
        let band = lanai_coll::Predefined::new(lanai_coll::Op::Band, lanai_coll::Elem::U8)
            .map_err(|e| MpiError::internal(e.to_string()))?;
        lanai_coll::allreduce(cm.rank, cm.size, mask, band, self.settings.algos.allreduce)
            .map_err(coll_err)
    }

    /// `MPI_Comm_free`: drops the communicator and gives back its barrier channel.
    pub fn comm_free(&mut self, idx: usize) -> MpiResult<()> {
        // MPI lets a communicator be freed under a pending nonblocking
        // barrier; a device barrier needs its channel until it is out (every
        // member started it already, so this wait ends).
        self.wait_until(|e| e.st.colls.central_on(idx) == 0)?;
        // So does a broadcast that starts when its reduce is done (every
        // member contributed already, so this wait ends too).
        self.wait_until(|e| !e.deferred_bcast_on(idx))?;
        let mut comm = self.comms.free(idx)?;
        // Its attached buffer (MPI 4.1) is detached implicitly.
        self.st.bsend.comm_freed(idx);
        let forgot = self.offload_forget(&comm);
        self.central_forget(std::mem::take(&mut comm.central));
        self.comms.retire(idx, comm);
        let reqs = &self.st.reqs;
        self.comms.reap(|i| reqs.any_on(i));
        forgot
    }

    /// `MPI_Comm_dup`: same group, new context, handler inherited.
    pub fn comm_dup(&mut self, parent: usize) -> MpiResult<usize> {
        if self.comms.get(parent)?.is_inter() {
            return self.inter_dup(parent);
        }
        let ctx = self.agree_ctx(parent, true)?;
        let p = self.comms.get(parent)?;
        let mut new = p.derive(ctx, p.rank, p.members());
        // MPI_Comm_dup keeps the topology.
        new.topo = p.topo.clone();
        Ok(self.comms.insert(new))
    }

    /// `MPI_Comm_split`: `None` for `MPI_UNDEFINED` colour.
    pub fn comm_split(&mut self, parent: usize, color: i32, key: i32) -> MpiResult<Option<usize>> {
        if self.comms.get(parent)?.is_inter() {
            return self.inter_split(parent, color, key);
        }
        if color < 0 && color != c::MPI_UNDEFINED {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("invalid color {color} (must be >= 0 or MPI_UNDEFINED)"),
            ));
        }
        let mut mine = color.to_le_bytes().to_vec();
        mine.extend_from_slice(&key.to_le_bytes());
        let all = self.allgather_internal(parent, mine)?;
        let join = color != c::MPI_UNDEFINED;
        let ctx = self.agree_ctx(parent, join)?;
        if !join {
            return Ok(None);
        }
        let p = self.comms.get(parent)?;
        // (key, parent rank) of every member of my colour, in new rank order.
        let mut picked: Vec<(i32, u32)> = all
            .chunks_exact(8)
            .enumerate()
            .filter_map(|(r, ch)| {
                let col = i32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]);
                let k = i32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
                (col == color).then_some((k, r as u32))
            })
            .collect();
        picked.sort_unstable();
        let rank = picked
            .iter()
            .position(|&(_, r)| r == p.rank)
            .ok_or_else(|| MpiError::internal("MPI_Comm_split: own entry missing"))?;
        let members = picked.iter().map(|&(_, r)| p.world_rank(r)).collect();
        let new = p.derive(ctx, rank as u32, members);
        Ok(Some(self.comms.insert(new)))
    }

    /// `MPI_Comm_split_type`. `MPI_COMM_TYPE_SHARED` groups the ranks of one
    /// (possibly emulated) node; the hardware types find no finer level
    /// than that here and give `MPI_COMM_NULL`, as the standard allows.
    pub fn comm_split_type(
        &mut self,
        parent: usize,
        split_type: i32,
        key: i32,
    ) -> MpiResult<Option<usize>> {
        let color = match split_type {
            c::MPI_COMM_TYPE_SHARED => self.job.my_node() as i32,
            c::MPI_UNDEFINED | c::MPI_COMM_TYPE_HW_GUIDED | c::MPI_COMM_TYPE_HW_UNGUIDED => {
                c::MPI_UNDEFINED
            }
            other => {
                return Err(MpiError::new(
                    c::MPI_ERR_ARG,
                    format!("unsupported split type {other}"),
                ))
            }
        };
        self.comm_split(parent, color, key)
    }

    /// Checks that every member of `g` belongs to `comm`.
    fn check_subgroup(&self, comm: usize, g: &Group) -> MpiResult<()> {
        let members = self.comms.get(comm)?.members();
        match g.members.iter().find(|w| !members.contains(w)) {
            Some(w) => Err(MpiError::new(
                c::MPI_ERR_GROUP,
                format!("group member (world rank {w}) is not in the communicator"),
            )),
            None => Ok(()),
        }
    }

    /// `MPI_Comm_create`: collective over `parent`; `None` for non-members.
    /// Disjoint groups at different processes are allowed (MPI-2.2).
    pub fn comm_create(&mut self, parent: usize, g: &Group) -> MpiResult<Option<usize>> {
        if self.comms.get(parent)?.is_inter() {
            return self.inter_create(parent, g);
        }
        self.check_subgroup(parent, g)?;
        let me = self.job.rank;
        let my_rank = g.rank_of(me);
        let ctx = self.agree_ctx(parent, my_rank.is_some())?;
        let Some(rank) = my_rank else {
            return Ok(None);
        };
        let new = self.comms.get(parent)?.derive(ctx, rank, g.members.clone());
        Ok(Some(self.comms.insert(new)))
    }

    /// `MPI_Comm_create_group`: collective over the group's members only.
    /// They agree over a temporary communicator whose collective instance is
    /// named by a hash of (parent, tag, group, how many such calls came
    /// before), so concurrent calls by other groups cannot mix with it.
    pub fn comm_create_group(&mut self, parent: usize, g: &Group, tag: i32) -> MpiResult<usize> {
        super::intercomm::reject(self.comms.get(parent)?)?;
        self.check_subgroup(parent, g)?;
        let rank = g.rank_of(self.job.rank).ok_or_else(|| {
            MpiError::new(c::MPI_ERR_GROUP, "the calling process is not in the group")
        })?;
        let pctx = self.comms.get(parent)?.ctx;
        let base = fnv1a(
            [pctx, tag as u32, g.size()]
                .into_iter()
                .chain(g.members.iter().copied()),
        );
        let n = self.comms.create_group_calls.entry(base).or_insert(0);
        let call = *n;
        *n += 1;
        let h = fnv1a([base as u32, (base >> 32) as u32, call]);
        let tmp_ctx = TEMP_CTX_BASE | ((h >> 32) as u32 & 0x7fff_fffe);
        let mut tmp = self
            .comms
            .get(parent)?
            .derive(tmp_ctx, rank, g.members.clone());
        tmp.coll_seq = h as u32;
        let tmp_idx = self.comms.insert(tmp);
        let agreed = self.agree_ctx(tmp_idx, true);
        // The temporary id is not in the mask, so freeing releases nothing.
        self.comm_free(tmp_idx)?;
        let ctx = agreed?;
        let new = self.comms.get(parent)?.derive(ctx, rank, g.members.clone());
        Ok(self.comms.insert(new))
    }

    /// `MPI_Comm_group`.
    pub fn comm_group(&self, comm: usize) -> MpiResult<Group> {
        Ok(Group::new(self.comms.get(comm)?.members()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_taken_and_released() {
        let mut t = Comms::new(0, 4, c::MPI_ERRORS_RETURN);
        assert_eq!(lowest_free(&t.free_slots), Some(2));
        t.take_slot(2);
        assert_eq!(lowest_free(&t.free_slots), Some(3));
        let w = t.get(WORLD).unwrap().clone();
        let i = t.insert(w.derive(4, 0, vec![0, 1]));
        assert!(i >= 2);
        let freed = t.free(i).unwrap();
        t.retire(i, freed);
        t.reap(|_| false);
        assert_eq!(lowest_free(&t.free_slots), Some(2));
        assert!(t.free(WORLD).is_err());
        assert!(t.free(i).is_err());
    }

    #[test]
    fn a_freed_communicator_that_requests_name_keeps_its_index_and_context() {
        let mut t = Comms::new(0, 4, c::MPI_ERRORS_RETURN);
        let w = t.get(WORLD).unwrap().clone();
        t.take_slot(2);
        let mut c = w.derive(4, 0, vec![0, 1]);
        c.errhandler = 77;
        let i = t.insert(c);
        let freed = t.free(i).unwrap();
        t.retire(i, freed);
        // A request still names it: neither its index, its context slot nor
        // its handler goes to anyone else.
        t.reap(|j| j == i);
        assert!(t.get(i).is_err(), "freed for the user");
        assert_eq!(t.errhandler(i), Some(77));
        t.take_slot(3);
        assert_eq!(lowest_free(&t.free_slots), Some(4), "slot 2 is still taken");
        let j = t.insert(w.derive(8, 0, vec![0, 1]));
        assert_ne!(j, i);
        // Its requests are done.
        t.reap(|_| false);
        assert_eq!(lowest_free(&t.free_slots), Some(2));
        assert_eq!(t.errhandler(i), None);
        assert_eq!(t.insert(w.derive(4, 0, vec![0, 1])), i);
    }

    #[test]
    fn and_of_masks_picks_lowest_common_slot() {
        let mut a = Comms::new(0, 2, 0);
        let mut b = Comms::new(1, 2, 0);
        a.take_slot(2);
        b.take_slot(3);
        let and: Vec<u8> = a
            .free_slots
            .iter()
            .zip(&b.free_slots)
            .map(|(x, y)| x & y)
            .collect();
        assert_eq!(lowest_free(&and), Some(4));
    }

    #[test]
    fn compare_and_names() {
        let mut t = Comms::new(1, 3, 0);
        let w = t.get(WORLD).unwrap().clone();
        let dup = t.insert(w.derive(4, 1, vec![0, 1, 2]));
        let rev = t.insert(w.derive(6, 1, vec![2, 1, 0]));
        let sub = t.insert(w.derive(8, 0, vec![1]));
        assert_eq!(t.compare(WORLD, WORLD).unwrap(), c::MPI_IDENT);
        assert_eq!(t.compare(WORLD, dup).unwrap(), c::MPI_CONGRUENT);
        assert_eq!(t.compare(WORLD, rev).unwrap(), c::MPI_SIMILAR);
        assert_eq!(t.compare(WORLD, sub).unwrap(), c::MPI_UNEQUAL);
        assert_eq!(t.name_of(WORLD).unwrap(), "MPI_COMM_WORLD");
        assert_eq!(t.name_of(SELF).unwrap(), "MPI_COMM_SELF");
        assert_eq!(t.name_of(dup).unwrap(), "");
    }
}
