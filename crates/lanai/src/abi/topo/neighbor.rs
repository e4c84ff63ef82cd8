//! Neighbour collectives: every process exchanges blocks with the
//! neighbours its communicator's topology names, as one collective
//! instance (so they never match user messages), blocking or not.

use crate::abi::coll::{array, displ_bytes};
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request};
use crate::abi::datatype::{
    self,
    staging::{self, Pending, Staged},
};
use crate::abi::ints::Ints;
use crate::abi::requests::handle_of;
use crate::abi::userbuf::UserBuf;
use crate::abi::{call, comm_idx, types};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::topo::{RecvBlock, SendBlock};
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// One block of a user buffer: byte displacement and length.
type Block = (usize, usize);

/// One block as the caller gives it: byte offset, count and datatype.
type Typed = (i64, i64, MPI_Datatype);

/// Bytes from one instance of `dt` to the next: the size for types the
/// byte paths use directly, else the extent.
fn unit(dt: MPI_Datatype) -> MpiResult<i64> {
    if staging::is_direct(dt)? {
        Ok(types::type_size(dt)? as i64)
    } else {
        Ok(datatype::resolve(dt)?.extent())
    }
}

fn too_large() -> MpiError {
    MpiError::new(c::MPI_ERR_COUNT, "blocks too large")
}

/// `n` blocks of `count` instances of `dt`, one after the other.
fn uniform_typed(n: usize, count: i64, dt: MPI_Datatype) -> MpiResult<Vec<Typed>> {
    let step = unit(dt)?.checked_mul(count).ok_or_else(too_large)?;
    (0..n as i64)
        .map(|j| {
            j.checked_mul(step)
                .map(|at| (at, count, dt))
                .ok_or_else(too_large)
        })
        .collect()
}

/// The byte blocks of a buffer argument: in the user's buffer when every
/// datatype is used directly, else in a packed temporary (returned too,
/// to keep until completion and, for outputs, to unpack).
///
/// # Safety
/// The blocks lie in valid user memory until the operation completes.
unsafe fn stage(
    p: *const c_void,
    typed: &[Typed],
    output: bool,
) -> MpiResult<(*const c_void, Vec<Block>, Option<Staged>)> {
    // SAFETY: forwarded from this function's contract.
    if let Some((s, spans)) = unsafe { Staged::typed_blocks(p, typed, output)? } {
        return Ok((s.ptr(), spans, Some(s)));
    }
    let blocks = typed
        .iter()
        .map(|&(at, k, t)| {
            // The type of an empty block is not significant.
            let len = if k == 0 { 0 } else { bytes(k, t)? };
            Ok((displ_bytes(at, 1)?, len))
        })
        .collect::<MpiResult<_>>()?;
    Ok((p, blocks, None))
}

fn bytes(count: i64, dt: MPI_Datatype) -> MpiResult<usize> {
    if count < 0 {
        return Err(MpiError::count(count));
    }
    let size = types::type_size(dt)?;
    usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| MpiError::new(c::MPI_ERR_COUNT, format!("count {count} is too large")))
}

fn extent(blocks: &[Block]) -> MpiResult<usize> {
    blocks.iter().try_fold(0usize, |m, &(d, l)| {
        d.checked_add(l)
            .map(|end| m.max(end))
            .ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "block ends beyond the address space"))
    })
}

/// The user buffer at `p` covering every block.
///
/// # Safety
/// `p` is valid for every block until the operation completes.
unsafe fn span(p: *const c_void, blocks: &[Block], what: &str) -> MpiResult<UserBuf> {
    if p as usize == c::MPI_IN_PLACE {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("MPI_IN_PLACE is not allowed as the {what}"),
        ));
    }
    let len = extent(blocks)?;
    if p.is_null() && len > 0 {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("the {what} is NULL"),
        ));
    }
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { UserBuf::new(p as *mut u8, len) })
}

/// Starts the exchange: `sblocks[j]` of `sendbuf` goes to destination `j`,
/// the block from source `j` lands at `rblocks[j]` of `recvbuf`. Buffers
/// with derived datatypes go through packed temporaries, returned to keep
/// until the request completes.
///
/// # Safety
/// The buffers cover their blocks until the request completes.
unsafe fn start(
    e: &mut Engine,
    comm: usize,
    sendbuf: *const c_void,
    sblocks: &[Typed],
    recvbuf: *mut c_void,
    rblocks: &[Typed],
) -> MpiResult<(usize, Vec<Staged>)> {
    // SAFETY: forwarded from this function's contract.
    let (sendbuf, sblocks, sstaged) = unsafe { stage(sendbuf, sblocks, false)? };
    // SAFETY: as above.
    let (recvbuf, rblocks, rstaged) = unsafe { stage(recvbuf, rblocks, true)? };
    let keep = sstaged.into_iter().chain(rstaged).collect();
    // SAFETY: the staged temporaries are returned to live until completion.
    let req = unsafe { start_bytes(e, comm, sendbuf, &sblocks, recvbuf as *mut c_void, &rblocks)? };
    Ok((req, keep))
}

/// [`start`] on byte blocks.
///
/// # Safety
/// The buffers cover their blocks until the request completes.
unsafe fn start_bytes(
    e: &mut Engine,
    comm: usize,
    sendbuf: *const c_void,
    sblocks: &[Block],
    recvbuf: *mut c_void,
    rblocks: &[Block],
) -> MpiResult<usize> {
    let (sources, dests, _) = e.neighbor_lists(comm)?;
    if sblocks.len() != dests.len() || rblocks.len() != sources.len() {
        return Err(MpiError::internal(
            "neighbour block lists differ from the degrees",
        ));
    }
    // SAFETY: forwarded from this function's contract.
    let sb = unsafe { span(sendbuf, sblocks, "send buffer")? };
    // SAFETY: as above.
    let rb = unsafe { span(recvbuf, rblocks, "receive buffer")? };
    let src = sb.as_slice();
    let sends: Vec<SendBlock> = dests
        .iter()
        .zip(sblocks)
        .map(|(&to, &(d, l))| (to, src[d..d + l].to_vec()))
        .collect();
    let recv: Vec<RecvBlock> = sources
        .iter()
        .zip(rblocks)
        .map(|(&from, &(d, l))| (from, d, l))
        .collect();
    e.ineighbor(comm, sends, recv, rb)
}

/// In- and out-degree of `comm`'s topology.
fn degrees(e: &Engine, comm: usize) -> MpiResult<(usize, usize)> {
    let (s, d, _) = e.neighbor_lists(comm)?;
    Ok((s.len(), d.len()))
}

/// Blocks from counts and displacements in elements of `dt`.
///
/// # Safety
/// `counts` and `displs` point to `n` values.
unsafe fn v_blocks(
    counts: Ints,
    displs: Ints,
    n: usize,
    dt: MPI_Datatype,
) -> MpiResult<Vec<Typed>> {
    let n = u32::try_from(n).map_err(|_| too_large())?;
    // SAFETY: forwarded from this function's contract.
    let (cs, ds) = unsafe { (counts.read(n, "counts")?, displs.read(n, "displacements")?) };
    let unit = unit(dt)?;
    cs.into_iter()
        .zip(ds)
        .map(|(k, d)| {
            let at = d.checked_mul(unit).ok_or_else(|| {
                MpiError::new(c::MPI_ERR_ARG, format!("displacement {d} is too large"))
            })?;
            Ok((at, k, dt))
        })
        .collect()
}

/// Blocks from counts in elements of per-block types and byte displacements.
///
/// # Safety
/// The arrays hold `n` entries.
unsafe fn w_blocks(
    counts: Ints,
    displs: Ints,
    dts: *const MPI_Datatype,
    n: usize,
) -> MpiResult<Vec<Typed>> {
    let n = u32::try_from(n).map_err(|_| too_large())?;
    // SAFETY: forwarded from this function's contract.
    let (cs, ds, ts) = unsafe {
        (
            counts.read(n, "counts")?,
            displs.read(n, "displacements")?,
            array(dts, n, "datatypes")?,
        )
    };
    Ok(cs
        .into_iter()
        .zip(ds)
        .zip(ts)
        .map(|((k, d), &t)| (d, k, t))
        .collect())
}

/// Runs `f` to start the exchange, then waits (`request` null) or hands
/// back the request.
///
/// # Safety
/// `request` is null for the blocking form, else a writable `MPI_Request`.
unsafe fn run(
    name: &str,
    comm: MPI_Comm,
    request: Option<*mut MPI_Request>,
    f: impl FnOnce(&mut Engine, usize) -> MpiResult<(usize, Vec<Staged>)>,
) -> c_int {
    call(name, Some(comm), |e| {
        let ci = comm_idx(comm)?;
        if request.is_some_and(|r| r.is_null()) {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        let (req, staged) = f(e, ci)?;
        match request {
            None => {
                e.finish_coll(req)?;
                staged.into_iter().try_for_each(Staged::finish)
            }
            Some(r) => {
                // Unpacked when the wait/test family completes the request.
                if !staged.is_empty() {
                    staging::hold(e, req, Pending::Coll(staged));
                }
                // SAFETY: checked non-null; writable per the contract.
                unsafe { *r = handle_of(req) };
                Ok(())
            }
        }
    })
}

// ---- the five exchanges, shared by the blocking and nonblocking forms -------

/// # Safety
/// MPI's buffer rules for `MPI_Neighbor_allgather`.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
) -> MpiResult<(usize, Vec<Staged>)> {
    let (indeg, outdeg) = degrees(e, ci)?;
    let sblocks = vec![(0, sendcount, sendtype); outdeg];
    let rblocks = uniform_typed(indeg, recvcount, recvtype)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { start(e, ci, sendbuf, &sblocks, recvbuf, &rblocks) }
}

/// # Safety
/// MPI's buffer rules for `MPI_Neighbor_allgatherv`.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
) -> MpiResult<(usize, Vec<Staged>)> {
    let (indeg, outdeg) = degrees(e, ci)?;
    let sblocks = vec![(0, sendcount, sendtype); outdeg];
    // SAFETY: the caller's arrays of indegree values.
    let rblocks = unsafe { v_blocks(recvcounts, displs, indeg, recvtype)? };
    // SAFETY: forwarded from this function's contract.
    unsafe { start(e, ci, sendbuf, &sblocks, recvbuf, &rblocks) }
}

/// # Safety
/// MPI's buffer rules for `MPI_Neighbor_alltoall`.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
) -> MpiResult<(usize, Vec<Staged>)> {
    let (indeg, outdeg) = degrees(e, ci)?;
    let sblocks = uniform_typed(outdeg, sendcount, sendtype)?;
    let rblocks = uniform_typed(indeg, recvcount, recvtype)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { start(e, ci, sendbuf, &sblocks, recvbuf, &rblocks) }
}

/// # Safety
/// MPI's buffer rules for `MPI_Neighbor_alltoallv`.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtype: MPI_Datatype,
) -> MpiResult<(usize, Vec<Staged>)> {
    let (indeg, outdeg) = degrees(e, ci)?;
    // SAFETY: the caller's arrays of outdegree / indegree values.
    let (sblocks, rblocks) = unsafe {
        (
            v_blocks(sendcounts, sdispls, outdeg, sendtype)?,
            v_blocks(recvcounts, rdispls, indeg, recvtype)?,
        )
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { start(e, ci, sendbuf, &sblocks, recvbuf, &rblocks) }
}

/// # Safety
/// MPI's buffer rules for `MPI_Neighbor_alltoallw`.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtypes: *const MPI_Datatype,
) -> MpiResult<(usize, Vec<Staged>)> {
    let (indeg, outdeg) = degrees(e, ci)?;
    // SAFETY: the caller's arrays of outdegree / indegree entries.
    let (sblocks, rblocks) = unsafe {
        (
            w_blocks(sendcounts, sdispls, sendtypes, outdeg)?,
            w_blocks(recvcounts, rdispls, recvtypes, indeg)?,
        )
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { start(e, ci, sendbuf, &sblocks, recvbuf, &rblocks) }
}

// ---- entry points -------------------------------------------------------------
//
// Each macro makes the blocking and the nonblocking form for one count
// type; the `int` and `_c` instances share every line below them.

macro_rules! allgather_entries {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { run(stringify!($name), comm, None, |e, ci| allgather(e, ci, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype)) }
        }}
        mpi_fn! { $iname / $piname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { run(stringify!($iname), comm, Some(request), |e, ci| allgather(e, ci, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype)) }
        }}
    };
}

allgather_entries!(
    MPI_Neighbor_allgather,
    PMPI_Neighbor_allgather,
    MPI_Ineighbor_allgather,
    PMPI_Ineighbor_allgather,
    c_int
);
allgather_entries!(
    MPI_Neighbor_allgather_c,
    PMPI_Neighbor_allgather_c,
    MPI_Ineighbor_allgather_c,
    PMPI_Ineighbor_allgather_c,
    MPI_Count
);

macro_rules! allgatherv_entries {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's buffers and arrays, valid for the call.
            unsafe { run(stringify!($name), comm, None, |e, ci| allgatherv(e, ci, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype)) }
        }}
        mpi_fn! { $iname / $piname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { run(stringify!($iname), comm, Some(request), |e, ci| allgatherv(e, ci, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype)) }
        }}
    };
}

allgatherv_entries!(
    MPI_Neighbor_allgatherv,
    PMPI_Neighbor_allgatherv,
    MPI_Ineighbor_allgatherv,
    PMPI_Ineighbor_allgatherv,
    c_int,
    *const c_int,
    *const c_int
);
allgatherv_entries!(
    MPI_Neighbor_allgatherv_c,
    PMPI_Neighbor_allgatherv_c,
    MPI_Ineighbor_allgatherv_c,
    PMPI_Ineighbor_allgatherv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! alltoall_entries {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { run(stringify!($name), comm, None, |e, ci| alltoall(e, ci, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype)) }
        }}
        mpi_fn! { $iname / $piname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { run(stringify!($iname), comm, Some(request), |e, ci| alltoall(e, ci, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype)) }
        }}
    };
}

alltoall_entries!(
    MPI_Neighbor_alltoall,
    PMPI_Neighbor_alltoall,
    MPI_Ineighbor_alltoall,
    PMPI_Ineighbor_alltoall,
    c_int
);
alltoall_entries!(
    MPI_Neighbor_alltoall_c,
    PMPI_Neighbor_alltoall_c,
    MPI_Ineighbor_alltoall_c,
    PMPI_Ineighbor_alltoall_c,
    MPI_Count
);

macro_rules! alltoallv_entries {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's buffers and arrays, valid for the call.
            unsafe { run(stringify!($name), comm, None, |e, ci| alltoallv(e, ci, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype)) }
        }}
        mpi_fn! { $iname / $piname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { run(stringify!($iname), comm, Some(request), |e, ci| alltoallv(e, ci, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype)) }
        }}
    };
}

alltoallv_entries!(
    MPI_Neighbor_alltoallv,
    PMPI_Neighbor_alltoallv,
    MPI_Ineighbor_alltoallv,
    PMPI_Ineighbor_alltoallv,
    *const c_int,
    *const c_int
);
alltoallv_entries!(
    MPI_Neighbor_alltoallv_c,
    PMPI_Neighbor_alltoallv_c,
    MPI_Ineighbor_alltoallv_c,
    PMPI_Ineighbor_alltoallv_c,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! alltoallw_entries {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $carr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's buffers and arrays, valid for the call.
            unsafe { run(stringify!($name), comm, None, |e, ci| alltoallw(e, ci, sendbuf, sendcounts.into(), sdispls.into(), sendtypes, recvbuf, recvcounts.into(), rdispls.into(), recvtypes)) }
        }}
        mpi_fn! { $iname / $piname (sendbuf: *const c_void, sendcounts: $carr, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { run(stringify!($iname), comm, Some(request), |e, ci| alltoallw(e, ci, sendbuf, sendcounts.into(), sdispls.into(), sendtypes, recvbuf, recvcounts.into(), rdispls.into(), recvtypes)) }
        }}
    };
}

alltoallw_entries!(
    MPI_Neighbor_alltoallw,
    PMPI_Neighbor_alltoallw,
    MPI_Ineighbor_alltoallw,
    PMPI_Ineighbor_alltoallw,
    *const c_int
);
alltoallw_entries!(
    MPI_Neighbor_alltoallw_c,
    PMPI_Neighbor_alltoallw_c,
    MPI_Ineighbor_alltoallw_c,
    PMPI_Ineighbor_alltoallw_c,
    *const MPI_Count
);
