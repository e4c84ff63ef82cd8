//! Process topologies: the geometry of Cartesian grids, graphs and
//! distributed graphs, creating communicators that carry them, and the
//! neighbour exchange machine behind the neighbour collectives.
//!
//! A topology hangs off its communicator (`Comm::topo`), so it goes away
//! with `MPI_Comm_free` and `MPI_Comm_dup` shares it. `reorder` is ignored:
//! ranks are kept.

use super::coll::CollOut;
use super::comm::{Capture, Slot};
use super::error::{MpiError, MpiResult};
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use lanai_coll::{CollError, Collective, Layout, Outgoing};
use std::collections::VecDeque;
use std::sync::Arc;

/// A communicator's process topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    Cart(Cart),
    Graph(Graph),
    DistGraph(DistGraph),
}

/// A Cartesian grid, ranks in row-major order (the last dimension varies
/// fastest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cart {
    pub dims: Vec<u32>,
    pub periods: Vec<bool>,
}

impl Cart {
    /// Checks every extent is positive and the grid size fits an `int`.
    pub fn new(dims: &[i32], periods: &[bool]) -> MpiResult<Self> {
        let mut size: u64 = 1;
        for &d in dims {
            if d <= 0 {
                return Err(MpiError::new(
                    c::MPI_ERR_DIMS,
                    format!("invalid dimension extent {d} (must be positive)"),
                ));
            }
            size = size.saturating_mul(d as u64);
        }
        if size > i32::MAX as u64 {
            return Err(MpiError::new(
                c::MPI_ERR_DIMS,
                "grid has too many processes",
            ));
        }
        Ok(Self {
            dims: dims.iter().map(|&d| d as u32).collect(),
            periods: periods.to_vec(),
        })
    }

    pub fn size(&self) -> u32 {
        self.dims.iter().product()
    }

    /// Coordinates of `rank` (below `size()`).
    pub fn coords(&self, rank: u32) -> Vec<u32> {
        let mut out = vec![0; self.dims.len()];
        let mut r = rank;
        for (o, &d) in out.iter_mut().zip(&self.dims).rev() {
            *o = r % d;
            r /= d;
        }
        out
    }

    /// The rank at `coords`; periodic dimensions wrap, others must be in range.
    pub fn rank_of(&self, coords: &[i32]) -> MpiResult<u32> {
        let mut r: u32 = 0;
        for (i, (&x, &d)) in coords.iter().zip(&self.dims).enumerate() {
            let d = d as i64;
            let x = x as i64;
            let x = if self.periods[i] {
                x.rem_euclid(d)
            } else if (0..d).contains(&x) {
                x
            } else {
                return Err(MpiError::new(
                    c::MPI_ERR_ARG,
                    format!("coordinate {x} of dimension {i} is outside 0..{d}"),
                ));
            };
            r = r * d as u32 + x as u32;
        }
        Ok(r)
    }

    /// The rank `disp` steps from `rank` along `dim`, or `MPI_PROC_NULL`
    /// off the edge of a non-periodic dimension.
    fn step(&self, rank: u32, dim: usize, disp: i64) -> i32 {
        let mut co: Vec<i64> = self.coords(rank).iter().map(|&x| x as i64).collect();
        let d = self.dims[dim] as i64;
        let x = co[dim] + disp;
        co[dim] = if self.periods[dim] {
            x.rem_euclid(d)
        } else if (0..d).contains(&x) {
            x
        } else {
            return c::MPI_PROC_NULL;
        };
        co.iter()
            .zip(&self.dims)
            .fold(0i64, |r, (&x, &d)| r * d as i64 + x) as i32
    }

    /// `MPI_Cart_shift`: (source, destination).
    pub fn shift(&self, rank: u32, dim: usize, disp: i32) -> (i32, i32) {
        let disp = disp as i64;
        (self.step(rank, dim, -disp), self.step(rank, dim, disp))
    }

    /// Neighbours in the standard's order: per dimension, -1 then +1.
    pub fn neighbors(&self, rank: u32) -> Vec<i32> {
        (0..self.dims.len())
            .flat_map(|d| [self.step(rank, d, -1), self.step(rank, d, 1)])
            .collect()
    }
}

/// A graph as `MPI_Graph_create` describes it: every process knows it all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// Cumulative degrees.
    pub index: Vec<i32>,
    pub edges: Vec<i32>,
}

impl Graph {
    /// Checks the description against a communicator of `comm_size`.
    pub fn new(index: &[i32], edges: &[i32], comm_size: u32) -> MpiResult<Self> {
        let nnodes = index.len();
        if nnodes as u64 > comm_size as u64 {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("{nnodes} nodes but the communicator has {comm_size} processes"),
            ));
        }
        let mut prev = 0;
        for &i in index {
            if i < prev {
                return Err(MpiError::new(
                    c::MPI_ERR_ARG,
                    "index must be non-decreasing and non-negative",
                ));
            }
            prev = i;
        }
        if prev as usize != edges.len() {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("index ends at {prev} but {} edges were given", edges.len()),
            ));
        }
        if let Some(e) = edges.iter().find(|&&e| e < 0 || e as usize >= nnodes) {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("edge to {e} is outside the {nnodes} nodes"),
            ));
        }
        Ok(Self {
            index: index.to_vec(),
            edges: edges.to_vec(),
        })
    }

    pub fn nnodes(&self) -> u32 {
        self.index.len() as u32
    }

    /// Neighbours of `rank` (below `nnodes()`), in the order given.
    pub fn neighbors(&self, rank: u32) -> &[i32] {
        let r = rank as usize;
        let lo = if r == 0 {
            0
        } else {
            self.index[r - 1] as usize
        };
        let hi = self.index[r] as usize;
        &self.edges[lo..hi]
    }
}

/// This process's edges of a distributed graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistGraph {
    pub sources: Vec<i32>,
    pub source_weights: Vec<i32>,
    pub dests: Vec<i32>,
    pub dest_weights: Vec<i32>,
    /// False when created with `MPI_UNWEIGHTED`.
    pub weighted: bool,
}

impl Topology {
    /// (sources, destinations) of `rank` for the neighbour collectives.
    pub fn neighbors(&self, rank: u32) -> (Vec<i32>, Vec<i32>) {
        match self {
            Topology::Cart(t) => {
                let n = t.neighbors(rank);
                (n.clone(), n)
            }
            Topology::Graph(g) => {
                let n = g.neighbors(rank).to_vec();
                (n.clone(), n)
            }
            Topology::DistGraph(d) => (d.sources.clone(), d.dests.clone()),
        }
    }
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so the product is
/// `nnodes`, as balanced as possible and non-increasing. Among the
/// factorisations with the smallest spread (largest minus smallest) it takes
/// the one with the largest smallest factor, then the lexicographically
/// smallest, which is what MPICH picks.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> MpiResult<()> {
    if nnodes <= 0 {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("invalid number of nodes {nnodes}"),
        ));
    }
    let mut fixed: i64 = 1;
    for &d in dims.iter() {
        if d < 0 {
            return Err(MpiError::new(
                c::MPI_ERR_DIMS,
                format!("invalid dimension {d} (must be non-negative)"),
            ));
        }
        if d > 0 {
            fixed *= d as i64;
            if fixed > nnodes as i64 {
                break;
            }
        }
    }
    let free = dims.iter().filter(|&&d| d == 0).count();
    let n = nnodes as i64;
    if n % fixed != 0 || (free == 0 && fixed != n) {
        return Err(MpiError::new(
            c::MPI_ERR_DIMS,
            format!("the given dimensions do not divide {nnodes} processes"),
        ));
    }
    if free == 0 {
        return Ok(());
    }
    let best = balanced(n / fixed, free);
    for (d, v) in dims.iter_mut().filter(|d| **d == 0).zip(best) {
        *d = v as i32;
    }
    Ok(())
}

/// The best non-increasing `k`-factorisation of `n` (see `dims_create`).
fn balanced(n: i64, k: usize) -> Vec<i64> {
    let mut divisors = Vec::new();
    let mut d = 1;
    while d * d <= n {
        if n % d == 0 {
            divisors.push(d);
            divisors.push(n / d);
        }
        d += 1;
    }
    divisors.sort_unstable_by(|a, b| b.cmp(a));
    divisors.dedup();
    let mut best = None;
    search(n, k, n, &divisors, &mut Vec::with_capacity(k), &mut best);
    best.unwrap_or_else(|| vec![1; k])
}

/// Spread, then the smallest factor (larger is better).
fn balance_key(t: &[i64]) -> (i64, i64) {
    let (hi, lo) = (t[0], t[t.len() - 1]);
    (hi - lo, -lo)
}

/// Depth-first over factorisations of `n` into `k` factors at most `maxf`,
/// each level's factor no larger than the previous.
fn search(
    n: i64,
    k: usize,
    maxf: i64,
    divisors: &[i64],
    cur: &mut Vec<i64>,
    best: &mut Option<Vec<i64>>,
) {
    if k == 1 {
        if n <= maxf {
            cur.push(n);
            // Candidates come lexicographically descending: on a tie the
            // later, smaller one wins.
            if best
                .as_ref()
                .is_none_or(|b| balance_key(cur) <= balance_key(b))
            {
                *best = Some(cur.clone());
            }
            cur.pop();
        }
        return;
    }
    for &f in divisors {
        if f > maxf || n % f != 0 {
            continue;
        }
        // The largest of k factors is at least the k-th root of n.
        if f.checked_pow(k as u32).is_some_and(|p| p < n) {
            break;
        }
        cur.push(f);
        search(n / f, k - 1, f, divisors, cur, best);
        cur.pop();
    }
}

// ---- communicators with a topology ----------------------------------------

/// Wire format of edge lists exchanged by `MPI_Dist_graph_create`.
fn ints_to_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_to_ints(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn coll_err(e: CollError) -> MpiError {
    MpiError::internal(format!("topology exchange: {e}"))
}

impl Engine {
    fn set_topo(&mut self, comm: usize, t: Topology) -> MpiResult<()> {
        self.comms.get_mut(comm)?.topo = Some(Arc::new(t));
        Ok(())
    }

    /// The topology attached to `comm`, if any.
    pub fn topo(&self, comm: usize) -> MpiResult<Option<Arc<Topology>>> {
        Ok(self.comms.get(comm)?.topo.clone())
    }

    /// `MPI_Cart_create`: processes beyond the grid get `None`.
    pub fn cart_create(&mut self, parent: usize, cart: Cart) -> MpiResult<Option<usize>> {
        let cm = self.comms.get(parent)?;
        if cart.size() > cm.size {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!(
                    "the grid needs {} processes but the communicator has {}",
                    cart.size(),
                    cm.size
                ),
            ));
        }
        let rank = cm.rank;
        let color = if rank < cart.size() {
            0
        } else {
            c::MPI_UNDEFINED
        };
        let new = self.comm_split(parent, color, rank as i32)?;
        if let Some(i) = new {
            self.set_topo(i, Topology::Cart(cart))?;
        }
        Ok(new)
    }

    /// `MPI_Cart_sub`: one sub-grid per combination of the dropped coordinates.
    pub fn cart_sub(&mut self, comm: usize, remain: &[bool]) -> MpiResult<usize> {
        let cm = self.comms.get(comm)?;
        let cart = match cm.topo.as_deref() {
            Some(Topology::Cart(t)) => t.clone(),
            _ => return Err(not_cart()),
        };
        if remain.len() != cart.dims.len() {
            return Err(MpiError::internal("remain_dims length differs from ndims"));
        }
        let co = cart.coords(cm.rank);
        // Colour: the dropped coordinates; key: the kept ones (row-major).
        let (mut color, mut key) = (0u32, 0u32);
        let mut sub = Cart {
            dims: Vec::new(),
            periods: Vec::new(),
        };
        for (i, &keep) in remain.iter().enumerate() {
            if keep {
                key = key * cart.dims[i] + co[i];
                sub.dims.push(cart.dims[i]);
                sub.periods.push(cart.periods[i]);
            } else {
                color = color * cart.dims[i] + co[i];
            }
        }
        let new = self
            .comm_split(comm, color as i32, key as i32)?
            .ok_or_else(|| MpiError::internal("MPI_Cart_sub: no sub-communicator"))?;
        self.set_topo(new, Topology::Cart(sub))?;
        Ok(new)
    }

    /// `MPI_Graph_create`: processes beyond `nnodes` get `None`.
    pub fn graph_create(&mut self, parent: usize, g: Graph) -> MpiResult<Option<usize>> {
        let rank = self.comms.get(parent)?.rank;
        let color = if rank < g.nnodes() {
            0
        } else {
            c::MPI_UNDEFINED
        };
        let new = self.comm_split(parent, color, rank as i32)?;
        if let Some(i) = new {
            self.set_topo(i, Topology::Graph(g))?;
        }
        Ok(new)
    }

    /// `MPI_Dist_graph_create_adjacent`: every process gives its own edges.
    pub fn dist_graph_adjacent(&mut self, parent: usize, g: DistGraph) -> MpiResult<usize> {
        self.check_peers(parent, &g.sources)?;
        self.check_peers(parent, &g.dests)?;
        let new = self.comm_dup(parent)?;
        self.set_topo(new, Topology::DistGraph(g))?;
        Ok(new)
    }

    /// `MPI_Dist_graph_create`: any process may give any edge; `edges` are
    /// (source, destination, weight). Every process learns its own in- and
    /// out-edges from an allgather of all of them, ordered by the giving
    /// rank and then as given.
    pub fn dist_graph_create(
        &mut self,
        parent: usize,
        edges: &[(i32, i32, i32)],
        weighted: bool,
    ) -> MpiResult<usize> {
        let ends: Vec<i32> = edges.iter().flat_map(|e| [e.0, e.1]).collect();
        self.check_peers(parent, &ends)?;
        let (rank, size) = {
            let cm = self.comms.get(parent)?;
            (cm.rank, cm.size)
        };
        let mine: Vec<i32> = edges.iter().flat_map(|e| [e.0, e.1, e.2]).collect();
        let my_len = (mine.len() * 4) as u64;
        let lens = self.run_capture(
            parent,
            Box::new(
                lanai_coll::Allgather::new(
                    rank,
                    size,
                    my_len.to_le_bytes().to_vec(),
                    lanai_coll::AllgatherAlgo::Auto,
                )
                .map_err(coll_err)?,
            ),
        )?;
        let counts: Vec<usize> = lens
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize)
            .collect();
        let layout = lanai_coll::Layout::packed(counts).map_err(coll_err)?;
        let all = self.run_capture(
            parent,
            Box::new(
                lanai_coll::Allgatherv::new(rank, size, ints_to_bytes(&mine), &layout)
                    .map_err(coll_err)?,
            ),
        )?;
        let me = rank as i32;
        let mut g = DistGraph {
            sources: Vec::new(),
            source_weights: Vec::new(),
            dests: Vec::new(),
            dest_weights: Vec::new(),
            weighted,
        };
        for e in bytes_to_ints(&all).chunks_exact(3) {
            if e[1] == me {
                g.sources.push(e[0]);
                g.source_weights.push(e[2]);
            }
            if e[0] == me {
                g.dests.push(e[1]);
                g.dest_weights.push(e[2]);
            }
        }
        let new = self.comm_dup(parent)?;
        self.set_topo(new, Topology::DistGraph(g))?;
        Ok(new)
    }

    /// Every entry names a rank of `comm`.
    fn check_peers(&self, comm: usize, ranks: &[i32]) -> MpiResult<()> {
        let size = self.comms.get(comm)?.size;
        match ranks.iter().find(|&&r| r < 0 || r as u32 >= size) {
            Some(&r) => Err(MpiError::rank(r, size as usize)),
            None => Ok(()),
        }
    }

    /// Runs `machine` on `comm` to completion and returns its result.
    fn run_capture(
        &mut self,
        comm: usize,
        machine: Box<dyn Collective + Send>,
    ) -> MpiResult<Vec<u8>> {
        let slot: Slot = Slot::default();
        let req = self.start_coll(comm, Box::new(Capture::new(machine, slot.clone())), None)?;
        let waited = self.wait(req);
        self.st.reqs.remove(req);
        waited?;
        let res = slot.lock().ok().and_then(|mut s| s.take());
        res.ok_or_else(|| MpiError::internal("topology exchange gave no result"))
    }
}

impl Engine {
    /// Sources, destinations and slot rule of `comm`'s topology for the
    /// neighbour collectives.
    pub fn neighbor_lists(&self, comm: usize) -> MpiResult<(Vec<i32>, Vec<i32>, SlotRule)> {
        let cm = self.comms.get(comm)?;
        match cm.topo.as_deref() {
            Some(t) => {
                let (s, d) = t.neighbors(cm.rank);
                let rule = match t {
                    Topology::Cart(_) => SlotRule::Cart,
                    _ => SlotRule::Ordinal,
                };
                Ok((s, d, rule))
            }
            None => Err(MpiError::new(
                c::MPI_ERR_TOPOLOGY,
                "the communicator has no topology",
            )),
        }
    }

    /// Starts a neighbour exchange on `comm`: `sends` per destination,
    /// `recv` per source, received blocks written into `out` at their
    /// displacements (blocks from `MPI_PROC_NULL` stay untouched).
    pub fn ineighbor(
        &mut self,
        comm: usize,
        sends: Vec<SendBlock>,
        recv: Vec<RecvBlock>,
        out: UserBuf,
    ) -> MpiResult<usize> {
        let (_, _, rule) = self.neighbor_lists(comm)?;
        let rank = self.comms.get(comm)?.rank;
        let extent = recv.iter().map(|&(_, d, l)| d + l).max().unwrap_or(0);
        if extent > out.len() {
            return Err(MpiError::internal(
                "neighbour blocks beyond the receive buffer",
            ));
        }
        let counts = recv
            .iter()
            .map(|&(src, _, l)| if src == c::MPI_PROC_NULL { 0 } else { l })
            .collect();
        let displs = recv.iter().map(|b| b.1).collect();
        let layout = Layout::new(counts, displs).map_err(coll_err)?;
        let m = NeighborExchange::new(rank, rule, sends, recv);
        if let Some(e) = m.local_error() {
            return Err(MpiError::new(
                c::MPI_ERR_TRUNCATE,
                format!("block sent to this process itself: {e}"),
            ));
        }
        self.start_coll_to(comm, Box::new(m), Some(CollOut::blocks(out, &layout)))
    }
}

fn not_cart() -> MpiError {
    MpiError::new(
        c::MPI_ERR_TOPOLOGY,
        "the communicator has no Cartesian topology",
    )
}

// ---- the neighbour exchange -------------------------------------------------

/// How a receiver finds the slot of an incoming block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRule {
    /// Cartesian: the block sent towards direction `j` lands in the
    /// receiver's opposite direction `j ^ 1`; the header names that slot.
    Cart,
    /// Graphs: the `k`-th edge from one process to another fills the
    /// receiver's `k`-th slot for that process; the header carries `k`.
    Ordinal,
}

/// One block to send: destination rank (or `MPI_PROC_NULL`) and bytes.
pub type SendBlock = (i32, Vec<u8>);
/// One block to receive: source rank (or `MPI_PROC_NULL`), byte
/// displacement in the result and length.
pub type RecvBlock = (i32, usize, usize);

/// Every process sends one block to each destination and receives one from
/// each source; the result has every received block at its displacement.
pub struct NeighborExchange {
    rule: SlotRule,
    recv: Vec<RecvBlock>,
    filled: Vec<bool>,
    missing: usize,
    outbox: VecDeque<Outgoing>,
    result: Vec<u8>,
    error: Option<CollError>,
}

impl NeighborExchange {
    pub fn new(rank: u32, rule: SlotRule, sends: Vec<SendBlock>, recv: Vec<RecvBlock>) -> Self {
        let extent = recv.iter().map(|&(_, d, l)| d + l).max().unwrap_or(0);
        let filled: Vec<bool> = recv.iter().map(|b| b.0 == c::MPI_PROC_NULL).collect();
        let missing = filled.iter().filter(|f| !**f).count();
        let mut me = Self {
            rule,
            recv,
            filled,
            missing,
            outbox: VecDeque::new(),
            result: vec![0; extent],
            error: None,
        };
        let mut ordinal: std::collections::HashMap<i32, u32> = Default::default();
        for (j, (to, data)) in sends.into_iter().enumerate() {
            if to == c::MPI_PROC_NULL {
                continue;
            }
            let k = ordinal.entry(to).or_insert(0);
            let key = match rule {
                SlotRule::Cart => (j ^ 1) as u32,
                SlotRule::Ordinal => *k,
            };
            *k += 1;
            if to as u32 == rank {
                if let Err(e) = me.accept(rank, key, &data) {
                    me.error.get_or_insert(e);
                }
            } else {
                me.outbox
                    .push_back(Outgoing::new(to as u32, &key.to_le_bytes(), data.to_vec()));
            }
        }
        me
    }

    /// A block this process sent itself that did not fit (checked before
    /// the exchange starts, as no message will report it).
    pub fn local_error(&self) -> Option<&CollError> {
        self.error.as_ref()
    }

    fn accept(&mut self, from: u32, key: u32, data: &[u8]) -> Result<(), CollError> {
        let from_i = from as i32;
        let slot = match self.rule {
            SlotRule::Cart => Some(key as usize)
                .filter(|&s| self.recv.get(s).is_some_and(|b| b.0 == from_i) && !self.filled[s]),
            SlotRule::Ordinal => self
                .recv
                .iter()
                .enumerate()
                .filter(|(_, b)| b.0 == from_i)
                .nth(key as usize)
                .map(|(s, _)| s)
                .filter(|&s| !self.filled[s]),
        };
        let Some(s) = slot else {
            return Err(CollError::MalformedMessage {
                from,
                reason: "a neighbour block this process does not expect",
            });
        };
        let (_, at, len) = self.recv[s];
        if data.len() != len {
            return Err(CollError::DataLengthMismatch {
                from,
                expected: len,
                got: data.len(),
            });
        }
        self.result[at..at + len].copy_from_slice(data);
        self.filled[s] = true;
        self.missing -= 1;
        Ok(())
    }
}

impl Collective for NeighborExchange {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if data.len() < 4 {
            return Err(CollError::MalformedMessage {
                from,
                reason: "neighbour block without its header",
            });
        }
        let key = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        self.accept(from, key, &data[4..])
    }
    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }
    fn is_done(&self) -> bool {
        self.outbox.is_empty() && self.missing == 0
    }
    fn take_result(&mut self) -> Option<Vec<u8>> {
        Some(std::mem::take(&mut self.result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_match_mpich_examples() {
        let cases: &[(i32, &[i32], &[i32])] = &[
            (6, &[0, 0], &[3, 2]),
            (7, &[0, 0], &[7, 1]),
            (8, &[0, 0, 0], &[2, 2, 2]),
            (36, &[0, 0, 0], &[4, 3, 3]),
            (360, &[0, 0, 0], &[10, 6, 6]),
            (360, &[0, 0, 0, 0], &[6, 5, 4, 3]),
            (20, &[0, 0, 0, 0], &[5, 2, 2, 1]),
            (2160, &[0, 0, 0, 0], &[10, 6, 6, 6]),
            (12, &[0, 2, 0], &[3, 2, 2]),
            (1, &[0, 0, 0], &[1, 1, 1]),
        ];
        for (n, start, want) in cases {
            let mut d = start.to_vec();
            dims_create(*n, &mut d).unwrap();
            assert_eq!(&d, want, "n={n} start={start:?}");
        }
        assert!(dims_create(7, &mut [2, 0]).is_err());
        assert!(dims_create(6, &mut [2, 2]).is_err());
        assert!(dims_create(6, &mut [-1, 0]).is_err());
    }

    #[test]
    fn cart_geometry() {
        let t = Cart::new(&[2, 3], &[false, true]).unwrap();
        assert_eq!(t.coords(4), vec![1, 1]);
        assert_eq!(t.rank_of(&[1, 1]).unwrap(), 4);
        assert_eq!(t.rank_of(&[1, -1]).unwrap(), 5);
        assert!(t.rank_of(&[2, 0]).is_err());
        assert_eq!(t.shift(4, 0, 1), (1, c::MPI_PROC_NULL));
        assert_eq!(t.shift(4, 1, 1), (3, 5));
        assert_eq!(t.shift(3, 1, -1), (4, 5));
        assert_eq!(t.neighbors(0), vec![c::MPI_PROC_NULL, 3, 2, 1]);
    }

    #[test]
    fn exchange_to_self_fills_opposite_slots() {
        // A 1x1 periodic grid: both neighbours are this process.
        let sends = vec![(0, vec![1u8]), (0, vec![2u8])];
        let recv = vec![(0, 0, 1), (0, 1, 1)];
        let mut m = NeighborExchange::new(0, SlotRule::Cart, sends, recv);
        assert!(m.poll_send().is_none());
        assert!(m.is_done());
        assert_eq!(m.take_result().unwrap(), vec![2, 1]);
    }
}
