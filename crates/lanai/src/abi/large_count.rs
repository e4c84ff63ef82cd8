//! The MPI 4 large-count (`_c`) entry points. Lanai's engine counts in
//! bytes with `usize`, but the C surface below it takes `int` counts; until
//! that widens, a `_c` call narrows its counts and forwards to the `int`
//! entry point, and a count beyond `INT_MAX` fails with `MPI_ERR_COUNT`.
//! mpi4py calls these whenever the library has them.

use super::call;
use super::consts as c;
use super::consts::*;
use crate::engine::error::MpiError;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// A count as `int`, or the error return of `name`.
fn narrow(name: &str, v: MPI_Count) -> Result<c_int, c_int> {
    c_int::try_from(v).map_err(|_| {
        call(name, None, |_| {
            Err(MpiError::new(
                c::MPI_ERR_COUNT,
                format!("count {v} is beyond what Lanai supports yet (INT_MAX)"),
            ))
        })
    })
}

/// `len` 64-bit counts or displacements as `int`s (`None` for a null or
/// empty array, which is passed on as null).
///
/// # Safety
/// `p` is null or points to `len` readable 8-byte integers.
unsafe fn narrow_array<T: Copy + TryInto<c_int> + std::fmt::Display>(
    name: &str,
    p: *const T,
    len: usize,
) -> Result<Option<Vec<c_int>>, c_int> {
    if p.is_null() || len == 0 {
        return Ok(None);
    }
    // SAFETY: per the contract.
    let src = unsafe { std::slice::from_raw_parts(p, len) };
    src.iter()
        .map(|&v| {
            v.try_into().map_err(|_| {
                call(name, None, |_| {
                    Err(MpiError::new(
                        c::MPI_ERR_COUNT,
                        format!("count or displacement {v} is beyond INT_MAX"),
                    ))
                })
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn ptr_of(v: &Option<Vec<c_int>>) -> *const c_int {
    v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
}

/// (size, rank) of `comm`, or the error return.
fn size_rank(comm: MPI_Comm) -> Result<(usize, c_int), c_int> {
    let (mut size, mut rank) = (0, 0);
    // SAFETY: both outputs are local ints.
    let rc = unsafe { super::env::PMPI_Comm_size(comm, &mut size) };
    if rc != c::MPI_SUCCESS {
        return Err(rc);
    }
    // SAFETY: as above.
    let rc = unsafe { super::env::PMPI_Comm_rank(comm, &mut rank) };
    if rc != c::MPI_SUCCESS {
        return Err(rc);
    }
    Ok((size.max(0) as usize, rank))
}

mpi_fn! { MPI_Gatherv_c / PMPI_Gatherv_c (sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    // Only the root's arrays are significant; elsewhere they may be garbage.
    let len = if rank == root { size } else { 0 };
    let sendcount = match narrow("MPI_Gatherv_c", sendcount) { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Gatherv_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let displs = match unsafe { narrow_array("MPI_Gatherv_c", displs, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::rooted::PMPI_Gatherv(sendbuf as _, sendcount, sendtype, recvbuf as _, ptr_of(&recvcounts) as _, ptr_of(&displs) as _, recvtype, root, comm) }
}}

mpi_fn! { MPI_Igatherv_c / PMPI_Igatherv_c (sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    // Only the root's arrays are significant; elsewhere they may be garbage.
    let len = if rank == root { size } else { 0 };
    let sendcount = match narrow("MPI_Igatherv_c", sendcount) { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Igatherv_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let displs = match unsafe { narrow_array("MPI_Igatherv_c", displs, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::rooted::PMPI_Igatherv(sendbuf as _, sendcount, sendtype, recvbuf as _, ptr_of(&recvcounts) as _, ptr_of(&displs) as _, recvtype, root, comm, request as _) }
}}

mpi_fn! { MPI_Scatterv_c / PMPI_Scatterv_c (sendbuf: *const c_void, sendcounts: *const MPI_Count, displs: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    // Only the root's arrays are significant; elsewhere they may be garbage.
    let len = if rank == root { size } else { 0 };
    // SAFETY: MPI gives the array one entry per rank.
    let sendcounts = match unsafe { narrow_array("MPI_Scatterv_c", sendcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let displs = match unsafe { narrow_array("MPI_Scatterv_c", displs, len) } { Ok(v) => v, Err(rc) => return rc };
    let recvcount = match narrow("MPI_Scatterv_c", recvcount) { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::rooted::PMPI_Scatterv(sendbuf as _, ptr_of(&sendcounts) as _, ptr_of(&displs) as _, sendtype, recvbuf as _, recvcount, recvtype, root, comm) }
}}

mpi_fn! { MPI_Iscatterv_c / PMPI_Iscatterv_c (sendbuf: *const c_void, sendcounts: *const MPI_Count, displs: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    // Only the root's arrays are significant; elsewhere they may be garbage.
    let len = if rank == root { size } else { 0 };
    // SAFETY: MPI gives the array one entry per rank.
    let sendcounts = match unsafe { narrow_array("MPI_Iscatterv_c", sendcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let displs = match unsafe { narrow_array("MPI_Iscatterv_c", displs, len) } { Ok(v) => v, Err(rc) => return rc };
    let recvcount = match narrow("MPI_Iscatterv_c", recvcount) { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::rooted::PMPI_Iscatterv(sendbuf as _, ptr_of(&sendcounts) as _, ptr_of(&displs) as _, sendtype, recvbuf as _, recvcount, recvtype, root, comm, request as _) }
}}

mpi_fn! { MPI_Allgatherv_c / PMPI_Allgatherv_c (sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    let _ = rank;
    let len = size;
    let sendcount = match narrow("MPI_Allgatherv_c", sendcount) { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Allgatherv_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let displs = match unsafe { narrow_array("MPI_Allgatherv_c", displs, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::exchange::PMPI_Allgatherv(sendbuf as _, sendcount, sendtype, recvbuf as _, ptr_of(&recvcounts) as _, ptr_of(&displs) as _, recvtype, comm) }
}}

mpi_fn! { MPI_Iallgatherv_c / PMPI_Iallgatherv_c (sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    let _ = rank;
    let len = size;
    let sendcount = match narrow("MPI_Iallgatherv_c", sendcount) { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Iallgatherv_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let displs = match unsafe { narrow_array("MPI_Iallgatherv_c", displs, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::exchange::PMPI_Iallgatherv(sendbuf as _, sendcount, sendtype, recvbuf as _, ptr_of(&recvcounts) as _, ptr_of(&displs) as _, recvtype, comm, request as _) }
}}

mpi_fn! { MPI_Alltoallv_c / PMPI_Alltoallv_c (sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    let _ = rank;
    let len = size;
    // SAFETY: MPI gives the array one entry per rank.
    let sendcounts = match unsafe { narrow_array("MPI_Alltoallv_c", sendcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let sdispls = match unsafe { narrow_array("MPI_Alltoallv_c", sdispls, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Alltoallv_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let rdispls = match unsafe { narrow_array("MPI_Alltoallv_c", rdispls, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::exchange::PMPI_Alltoallv(sendbuf as _, ptr_of(&sendcounts) as _, ptr_of(&sdispls) as _, sendtype, recvbuf as _, ptr_of(&recvcounts) as _, ptr_of(&rdispls) as _, recvtype, comm) }
}}

mpi_fn! { MPI_Ialltoallv_c / PMPI_Ialltoallv_c (sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    let _ = rank;
    let len = size;
    // SAFETY: MPI gives the array one entry per rank.
    let sendcounts = match unsafe { narrow_array("MPI_Ialltoallv_c", sendcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let sdispls = match unsafe { narrow_array("MPI_Ialltoallv_c", sdispls, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Ialltoallv_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: MPI gives the array one entry per rank.
    let rdispls = match unsafe { narrow_array("MPI_Ialltoallv_c", rdispls, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::exchange::PMPI_Ialltoallv(sendbuf as _, ptr_of(&sendcounts) as _, ptr_of(&sdispls) as _, sendtype, recvbuf as _, ptr_of(&recvcounts) as _, ptr_of(&rdispls) as _, recvtype, comm, request as _) }
}}

mpi_fn! { MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const MPI_Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    let _ = rank;
    let len = size;
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Reduce_scatter_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::scans::PMPI_Reduce_scatter(sendbuf as _, recvbuf as _, ptr_of(&recvcounts) as _, datatype, op, comm) }
}}

mpi_fn! { MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const MPI_Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let (size, rank) = match size_rank(comm) { Ok(v) => v, Err(rc) => return rc };
    let _ = rank;
    let len = size;
    // SAFETY: MPI gives the array one entry per rank.
    let recvcounts = match unsafe { narrow_array("MPI_Ireduce_scatter_c", recvcounts, len) } { Ok(v) => v, Err(rc) => return rc };
    // SAFETY: forwarded from this entry point's own contract.
    unsafe { super::coll::scans::PMPI_Ireduce_scatter(sendbuf as _, recvbuf as _, ptr_of(&recvcounts) as _, datatype, op, comm, request as _) }
}}
