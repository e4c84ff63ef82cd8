//! Process topologies through the C ABI: Cartesian grids, graphs and
//! distributed graphs (creation and queries), `MPI_Dims_create` and
//! `MPI_Topo_test`. The neighbour collectives are in `topo/neighbor.rs`.

pub(super) mod neighbor;

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Info};
use super::exported_data::{MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY};
use super::{call, comm_handle, comm_idx};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::topo::{self, Cart, DistGraph, Graph, Topology};
use crate::engine::Engine;
use crate::mpi_fn;
use std::os::raw::c_int;
use std::sync::Arc;

/// The caller's array of `n` ints (`n` < 0 is the caller's error).
///
/// # Safety
/// `p` is null or points to at least `n` readable ints.
unsafe fn ints<'a>(p: *const c_int, n: c_int, what: &str) -> MpiResult<&'a [c_int]> {
    if n < 0 {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("negative {what} length {n}"),
        ));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: `n` readable ints per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// Writes `v` to the caller's array (which holds at least `v.len()` ints).
///
/// # Safety
/// `p` is null or points to at least `v.len()` writable ints.
unsafe fn put_ints(p: *mut c_int, v: &[c_int], what: &str) -> MpiResult<()> {
    if v.is_empty() {
        return Ok(());
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: `v.len()` writable ints per the contract; `v` is our own memory.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, v.len()) };
    Ok(())
}

/// Writes one int output argument.
///
/// # Safety
/// `p` is null or points to a writable int.
unsafe fn put(p: *mut c_int, v: c_int, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: checked non-null; writable per the contract.
    unsafe { *p = v };
    Ok(())
}

/// Writes a communicator output argument.
///
/// # Safety
/// `p` is null or points to a writable `MPI_Comm`.
unsafe fn put_comm(p: *mut MPI_Comm, idx: Option<usize>) -> MpiResult<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        put(
            p,
            idx.map_or(c::MPI_COMM_NULL, comm_handle),
            "the new communicator",
        )
    }
}

/// The topology of `comm` and this process's rank and size in it.
fn topology(e: &Engine, comm: MPI_Comm) -> MpiResult<(Option<Arc<Topology>>, u32, u32)> {
    let ci = comm_idx(comm)?;
    let cm = e.comms.get(ci)?;
    Ok((cm.topo.clone(), cm.rank, cm.size))
}

fn cart_of(e: &Engine, comm: MPI_Comm) -> MpiResult<(Cart, u32)> {
    match topology(e, comm)? {
        (Some(t), rank, _) => match &*t {
            Topology::Cart(ct) => Ok((ct.clone(), rank)),
            _ => Err(no_topo("a Cartesian")),
        },
        _ => Err(no_topo("a Cartesian")),
    }
}

fn graph_of(e: &Engine, comm: MPI_Comm) -> MpiResult<Graph> {
    match topology(e, comm)?.0.as_deref() {
        Some(Topology::Graph(g)) => Ok(g.clone()),
        _ => Err(no_topo("a graph")),
    }
}

fn dist_graph_of(e: &Engine, comm: MPI_Comm) -> MpiResult<DistGraph> {
    match topology(e, comm)?.0.as_deref() {
        Some(Topology::DistGraph(g)) => Ok(g.clone()),
        _ => Err(no_topo("a distributed graph")),
    }
}

fn no_topo(kind: &str) -> MpiError {
    MpiError::new(
        c::MPI_ERR_TOPOLOGY,
        format!("the communicator has no {kind} topology"),
    )
}

fn check_rank(rank: c_int, size: u32) -> MpiResult<u32> {
    if rank < 0 || rank as u32 >= size {
        return Err(MpiError::rank(rank, size as usize));
    }
    Ok(rank as u32)
}

/// Checks that a caller's array of `max` entries can take `need`.
fn check_room(max: c_int, need: usize, what: &str) -> MpiResult<()> {
    if max < 0 || (max as usize) < need {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("{what} is {max} but {need} entries are needed"),
        ));
    }
    Ok(())
}

/// A grid from the caller's `ndims`, `dims` and `periods`.
///
/// # Safety
/// `dims` and `periods` point to `ndims` ints (or are null when it is 0).
unsafe fn cart_arg(ndims: c_int, dims: *const c_int, periods: *const c_int) -> MpiResult<Cart> {
    if ndims < 0 {
        return Err(MpiError::new(
            c::MPI_ERR_DIMS,
            format!("invalid number of dimensions {ndims}"),
        ));
    }
    // SAFETY: forwarded from this function's contract.
    let d = unsafe { ints(dims, ndims, "dims")? };
    // SAFETY: as above.
    let p = unsafe { ints(periods, ndims, "periods")? };
    let p: Vec<bool> = p.iter().map(|&x| x != 0).collect();
    Cart::new(d, &p)
}

// ---- Cartesian --------------------------------------------------------------

mpi_fn! { MPI_Cart_create / PMPI_Cart_create (comm_old: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, comm_cart: *mut MPI_Comm) -> c_int {
    let _ = reorder;
    call("MPI_Cart_create", Some(comm_old), |e| {
        // SAFETY: the caller's arrays of `ndims` ints.
        let cart = unsafe { cart_arg(ndims, dims, periods)? };
        let new = e.cart_create(comm_idx(comm_old)?, cart)?;
        // SAFETY: the caller's output handle.
        unsafe { put_comm(comm_cart, new) }
    })
}}

mpi_fn! { MPI_Cart_map / PMPI_Cart_map (comm: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int) -> c_int {
    call("MPI_Cart_map", Some(comm), |e| {
        // SAFETY: the caller's arrays of `ndims` ints.
        let cart = unsafe { cart_arg(ndims, dims, periods)? };
        let (_, rank, size) = topology(e, comm)?;
        if cart.size() > size {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!(
                "the grid needs {} processes but the communicator has {size}", cart.size())));
        }
        let r = if rank < cart.size() { rank as c_int } else { c::MPI_UNDEFINED };
        // SAFETY: the caller's output int.
        unsafe { put(newrank, r, "newrank") }
    })
}}

mpi_fn! { MPI_Cartdim_get / PMPI_Cartdim_get (comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    call("MPI_Cartdim_get", Some(comm), |e| {
        let (cart, _) = cart_of(e, comm)?;
        // SAFETY: the caller's output int.
        unsafe { put(ndims, cart.dims.len() as c_int, "ndims") }
    })
}}

mpi_fn! { MPI_Cart_get / PMPI_Cart_get (comm: MPI_Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int {
    call("MPI_Cart_get", Some(comm), |e| {
        let (cart, rank) = cart_of(e, comm)?;
        check_room(maxdims, cart.dims.len(), "maxdims")?;
        let d: Vec<c_int> = cart.dims.iter().map(|&x| x as c_int).collect();
        let p: Vec<c_int> = cart.periods.iter().map(|&x| c_int::from(x)).collect();
        let co: Vec<c_int> = cart.coords(rank).iter().map(|&x| x as c_int).collect();
        // SAFETY: the caller's arrays hold `maxdims` >= ndims ints.
        unsafe {
            put_ints(dims, &d, "dims")?;
            put_ints(periods, &p, "periods")?;
            put_ints(coords, &co, "coords")
        }
    })
}}

mpi_fn! { MPI_Cart_rank / PMPI_Cart_rank (comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) -> c_int {
    call("MPI_Cart_rank", Some(comm), |e| {
        let (cart, _) = cart_of(e, comm)?;
        // SAFETY: the caller's array of ndims ints.
        let co = unsafe { ints(coords, cart.dims.len() as c_int, "coords")? };
        let r = cart.rank_of(co)?;
        // SAFETY: the caller's output int.
        unsafe { put(rank, r as c_int, "rank") }
    })
}}

mpi_fn! { MPI_Cart_coords / PMPI_Cart_coords (comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    call("MPI_Cart_coords", Some(comm), |e| {
        let (cart, _) = cart_of(e, comm)?;
        let r = check_rank(rank, cart.size())?;
        check_room(maxdims, cart.dims.len(), "maxdims")?;
        let co: Vec<c_int> = cart.coords(r).iter().map(|&x| x as c_int).collect();
        // SAFETY: the caller's array of `maxdims` >= ndims ints.
        unsafe { put_ints(coords, &co, "coords") }
    })
}}

mpi_fn! { MPI_Cart_shift / PMPI_Cart_shift (comm: MPI_Comm, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) -> c_int {
    call("MPI_Cart_shift", Some(comm), |e| {
        let (cart, rank) = cart_of(e, comm)?;
        if direction < 0 || direction as usize >= cart.dims.len() {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!(
                "invalid direction {direction} ({} dimensions)", cart.dims.len())));
        }
        let (src, dst) = cart.shift(rank, direction as usize, disp);
        // SAFETY: the caller's output ints.
        unsafe {
            put(rank_source, src, "rank_source")?;
            put(rank_dest, dst, "rank_dest")
        }
    })
}}

mpi_fn! { MPI_Cart_sub / PMPI_Cart_sub (comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Cart_sub", Some(comm), |e| {
        let (cart, _) = cart_of(e, comm)?;
        // SAFETY: the caller's array of ndims ints.
        let keep = unsafe { ints(remain_dims, cart.dims.len() as c_int, "remain_dims")? };
        let keep: Vec<bool> = keep.iter().map(|&x| x != 0).collect();
        let new = e.cart_sub(comm_idx(comm)?, &keep)?;
        // SAFETY: the caller's output handle.
        unsafe { put_comm(newcomm, Some(new)) }
    })
}}

mpi_fn! { MPI_Dims_create / PMPI_Dims_create (nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    call("MPI_Dims_create", None, |_| {
        if ndims < 0 {
            return Err(MpiError::new(c::MPI_ERR_DIMS, format!("invalid number of dimensions {ndims}")));
        }
        // SAFETY: the caller's array of `ndims` ints, read then written.
        let mut d = unsafe { ints(dims, ndims, "dims")? }.to_vec();
        topo::dims_create(nnodes, &mut d)?;
        // SAFETY: as above.
        unsafe { put_ints(dims, &d, "dims") }
    })
}}

// ---- graphs -----------------------------------------------------------------

/// A graph from the caller's arguments.
///
/// # Safety
/// `index` points to `nnodes` ints and `edges` to `index[nnodes-1]`.
unsafe fn graph_arg(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    size: u32,
) -> MpiResult<Graph> {
    // SAFETY: forwarded from this function's contract.
    let idx = unsafe { ints(index, nnodes, "index")? };
    let nedges = idx.last().copied().unwrap_or(0);
    // SAFETY: as above.
    let ed = unsafe { ints(edges, nedges, "edges")? };
    Graph::new(idx, ed, size)
}

mpi_fn! { MPI_Graph_create / PMPI_Graph_create (comm_old: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, comm_graph: *mut MPI_Comm) -> c_int {
    let _ = reorder;
    call("MPI_Graph_create", Some(comm_old), |e| {
        let (_, _, size) = topology(e, comm_old)?;
        // SAFETY: the caller's arrays.
        let g = unsafe { graph_arg(nnodes, index, edges, size)? };
        let new = e.graph_create(comm_idx(comm_old)?, g)?;
        // SAFETY: the caller's output handle.
        unsafe { put_comm(comm_graph, new) }
    })
}}

mpi_fn! { MPI_Graph_map / PMPI_Graph_map (comm: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int) -> c_int {
    call("MPI_Graph_map", Some(comm), |e| {
        let (_, rank, size) = topology(e, comm)?;
        // SAFETY: the caller's arrays.
        let g = unsafe { graph_arg(nnodes, index, edges, size)? };
        let r = if rank < g.nnodes() { rank as c_int } else { c::MPI_UNDEFINED };
        // SAFETY: the caller's output int.
        unsafe { put(newrank, r, "newrank") }
    })
}}

mpi_fn! { MPI_Graphdims_get / PMPI_Graphdims_get (comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    call("MPI_Graphdims_get", Some(comm), |e| {
        let g = graph_of(e, comm)?;
        // SAFETY: the caller's output ints.
        unsafe {
            put(nnodes, g.nnodes() as c_int, "nnodes")?;
            put(nedges, g.edges.len() as c_int, "nedges")
        }
    })
}}

mpi_fn! { MPI_Graph_get / PMPI_Graph_get (comm: MPI_Comm, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int {
    call("MPI_Graph_get", Some(comm), |e| {
        let g = graph_of(e, comm)?;
        check_room(maxindex, g.index.len(), "maxindex")?;
        check_room(maxedges, g.edges.len(), "maxedges")?;
        // SAFETY: the caller's arrays are large enough (checked above).
        unsafe {
            put_ints(index, &g.index, "index")?;
            put_ints(edges, &g.edges, "edges")
        }
    })
}}

mpi_fn! { MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count (comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) -> c_int {
    call("MPI_Graph_neighbors_count", Some(comm), |e| {
        let g = graph_of(e, comm)?;
        let r = check_rank(rank, g.nnodes())?;
        // SAFETY: the caller's output int.
        unsafe { put(nneighbors, g.neighbors(r).len() as c_int, "nneighbors") }
    })
}}

mpi_fn! { MPI_Graph_neighbors / PMPI_Graph_neighbors (comm: MPI_Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int {
    call("MPI_Graph_neighbors", Some(comm), |e| {
        let g = graph_of(e, comm)?;
        let r = check_rank(rank, g.nnodes())?;
        let n = g.neighbors(r);
        check_room(maxneighbors, n.len(), "maxneighbors")?;
        // SAFETY: the caller's array is large enough (checked above).
        unsafe { put_ints(neighbors, n, "neighbors") }
    })
}}

mpi_fn! { MPI_Topo_test / PMPI_Topo_test (comm: MPI_Comm, status: *mut c_int) -> c_int {
    call("MPI_Topo_test", Some(comm), |e| {
        let v = match topology(e, comm)?.0.as_deref() {
            Some(Topology::Cart(_)) => c::MPI_CART,
            Some(Topology::Graph(_)) => c::MPI_GRAPH,
            Some(Topology::DistGraph(_)) => c::MPI_DIST_GRAPH,
            None => c::MPI_UNDEFINED,
        };
        // SAFETY: the caller's output int.
        unsafe { put(status, v, "status") }
    })
}}

// ---- distributed graphs -----------------------------------------------------

fn is_unweighted(p: *const c_int) -> bool {
    p == MPI_UNWEIGHTED.0
}

/// The weights of `n` edges: `None` for `MPI_UNWEIGHTED`.
///
/// # Safety
/// `p` is a sentinel, null, or points to `n` ints.
unsafe fn weights(p: *const c_int, n: c_int, what: &str) -> MpiResult<Option<Vec<c_int>>> {
    if is_unweighted(p) {
        return Ok(None);
    }
    if p == MPI_WEIGHTS_EMPTY.0 || n == 0 {
        if n > 0 {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("MPI_WEIGHTS_EMPTY given for {n} {what}"),
            ));
        }
        return Ok(Some(Vec::new()));
    }
    // SAFETY: forwarded from this function's contract.
    Ok(Some(unsafe { ints(p, n, what)? }.to_vec()))
}

mpi_fn! { MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent (comm_old: MPI_Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, info: MPI_Info, reorder: c_int, comm_dist_graph: *mut MPI_Comm) -> c_int {
    let _ = (info, reorder);
    call("MPI_Dist_graph_create_adjacent", Some(comm_old), |e| {
        // SAFETY: the caller's arrays of `indegree` / `outdegree` ints.
        let (s, sw, d, dw) = unsafe {
            (
                ints(sources, indegree, "sources")?.to_vec(),
                weights(sourceweights, indegree, "source weights")?,
                ints(destinations, outdegree, "destinations")?.to_vec(),
                weights(destweights, outdegree, "destination weights")?,
            )
        };
        let weighted = sw.is_some() || dw.is_some();
        let g = DistGraph {
            source_weights: sw.unwrap_or_else(|| vec![1; s.len()]),
            dest_weights: dw.unwrap_or_else(|| vec![1; d.len()]),
            sources: s,
            dests: d,
            weighted,
        };
        let new = e.dist_graph_adjacent(comm_idx(comm_old)?, g)?;
        // SAFETY: the caller's output handle.
        unsafe { put_comm(comm_dist_graph, Some(new)) }
    })
}}

mpi_fn! { MPI_Dist_graph_create / PMPI_Dist_graph_create (comm_old: MPI_Comm, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights_: *const c_int, info: MPI_Info, reorder: c_int, comm_dist_graph: *mut MPI_Comm) -> c_int {
    let _ = (info, reorder);
    call("MPI_Dist_graph_create", Some(comm_old), |e| {
        // SAFETY: the caller's arrays of `n` ints.
        let (src, deg) = unsafe { (ints(sources, n, "sources")?, ints(degrees, n, "degrees")?) };
        let mut total: c_int = 0;
        for &d in deg {
            if d < 0 {
                return Err(MpiError::new(c::MPI_ERR_ARG, format!("negative degree {d}")));
            }
            total = total.checked_add(d).ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "too many edges"))?;
        }
        // SAFETY: the caller's arrays of sum(degrees) ints.
        let (dst, w) = unsafe { (ints(destinations, total, "destinations")?, weights(weights_, total, "weights")?) };
        let mut edges = Vec::with_capacity(total as usize);
        let mut k = 0;
        for (&s, &d) in src.iter().zip(deg) {
            for _ in 0..d {
                edges.push((s, dst[k], w.as_ref().map_or(1, |w| w[k])));
                k += 1;
            }
        }
        let new = e.dist_graph_create(comm_idx(comm_old)?, &edges, w.is_some())?;
        // SAFETY: the caller's output handle.
        unsafe { put_comm(comm_dist_graph, Some(new)) }
    })
}}

mpi_fn! { MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count (comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
    call("MPI_Dist_graph_neighbors_count", Some(comm), |e| {
        let g = dist_graph_of(e, comm)?;
        // SAFETY: the caller's output ints.
        unsafe {
            put(indegree, g.sources.len() as c_int, "indegree")?;
            put(outdegree, g.dests.len() as c_int, "outdegree")?;
            put(weighted, c_int::from(g.weighted), "weighted")
        }
    })
}}

mpi_fn! { MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors (comm: MPI_Comm, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int) -> c_int {
    call("MPI_Dist_graph_neighbors", Some(comm), |e| {
        let g = dist_graph_of(e, comm)?;
        check_room(maxindegree, g.sources.len(), "maxindegree")?;
        check_room(maxoutdegree, g.dests.len(), "maxoutdegree")?;
        // SAFETY: the caller's arrays are large enough (checked above);
        // weights are written only when asked for.
        unsafe {
            put_ints(sources, &g.sources, "sources")?;
            put_ints(destinations, &g.dests, "destinations")?;
            if g.weighted && !sourceweights.is_null() && !is_unweighted(sourceweights) {
                put_ints(sourceweights, &g.source_weights, "sourceweights")?;
            }
            if g.weighted && !destweights.is_null() && !is_unweighted(destweights) {
                put_ints(destweights, &g.dest_weights, "destweights")?;
            }
        }
        Ok(())
    })
}}
