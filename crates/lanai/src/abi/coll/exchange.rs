//! Every rank to every rank: allgather and alltoall, with equal blocks, with
//! per-rank counts and (alltoallw) with per-rank datatypes.

use super::{
    array, block_bytes, bytes_buf, comm_info, in_place, layout_v, layout_w, not_in_place, same_len,
    send_data, slice_of,
};
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request};
use crate::abi::datatype::staging::{self as staged, Mode, Staged, Use};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use lanai_coll::Layout;
use std::ffi::c_void;
use std::os::raw::c_int;

/// # Safety
/// The buffers are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    not_in_place(recvbuf, "the receive buffer")?;
    let (blk, all) = block_bytes(recvcount, recvtype, size)?;
    // SAFETY: the receive buffer holds `size * recvcount` elements.
    let out = unsafe { bytes_buf(recvbuf, all)? };
    let data = if in_place(sendbuf) {
        let at = rank as usize * blk;
        slice_of(&out, at..at + blk)?
    } else {
        // SAFETY: the send buffer, per the contract.
        unsafe { send_data(sendbuf, sendcount, sendtype)? }
    };
    same_len(data.len(), blk)?;
    e.iallgather(ci, data, out)
}

/// Allgather, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT)?,
                    Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT.blocks(size))?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                allgather(
                    e,
                    a[0].ptr(),
                    a[0].count(),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].count(),
                    a[1].dt(),
                    comm,
                )
            }
        },
    )
}

macro_rules! allgather_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allgather(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { allgather_staged(stringify!($name), Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm) }
        }}
    };
}

allgather_entry!(MPI_Allgather, PMPI_Allgather, c_int);
allgather_entry!(MPI_Allgather_c, PMPI_Allgather_c, MPI_Count);

macro_rules! iallgather_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allgather(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { allgather_staged(stringify!($name), Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm) }
        }}
    };
}

iallgather_entry!(MPI_Iallgather, PMPI_Iallgather, c_int);
iallgather_entry!(MPI_Iallgather_c, PMPI_Iallgather_c, MPI_Count);

/// # Safety
/// The buffers and arrays are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    not_in_place(recvbuf, "the receive buffer")?;
    // SAFETY: the arrays have one entry per rank.
    let (counts, displs) = unsafe {
        (
            array(recvcounts, size, "recvcounts")?,
            array(displs, size, "displs")?,
        )
    };
    let recv = layout_v(counts, displs, recvtype)?;
    // SAFETY: the receive buffer covers every block.
    let out = unsafe { bytes_buf(recvbuf, recv.extent())? };
    let data = if in_place(sendbuf) {
        slice_of(&out, recv.block(rank))?
    } else {
        // SAFETY: the send buffer, per the contract.
        unsafe { send_data(sendbuf, sendcount, sendtype)? }
    };
    same_len(data.len(), recv.block(rank).len())?;
    e.iallgatherv(ci, data, &recv, out)
}

/// Allgatherv, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers and arrays are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT)?,
                    Staged::new_v(recvbuf, recvcounts, displs, size, recvtype, Use::OUTPUT)?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers and arrays live until the collective completes.
            unsafe {
                allgatherv(
                    e,
                    a[0].ptr(),
                    a[0].count(),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].counts(recvcounts),
                    a[1].displs(displs),
                    a[1].dt(),
                    comm,
                )
            }
        },
    )
}

mpi_fn! { MPI_Allgatherv / PMPI_Allgatherv (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allgatherv(sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts, displs, recvtype, comm, crate::abi::intercomm::How::Wait) }; }
    // SAFETY: the caller's buffers, valid for the call.
    unsafe { allgatherv_staged("MPI_Allgatherv", Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts, displs, recvtype, comm) }
}}

mpi_fn! { MPI_Iallgatherv / PMPI_Iallgatherv (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allgatherv(sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts, displs, recvtype, comm, crate::abi::intercomm::How::Request(request)) }; }
    // SAFETY: MPI keeps the buffers valid until the request completes.
    unsafe { allgatherv_staged("MPI_Iallgatherv", Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts, displs, recvtype, comm) }
}}

/// Starts an all-to-all once the receive side is known: with MPI_IN_PLACE
/// the send data is the receive buffer itself, laid out as `recv`.
///
/// # Safety
/// `recvbuf` covers `recv` and `sendbuf` (unless MPI_IN_PLACE) covers the
/// layout `send` builds, until completion.
unsafe fn alltoall_start(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    send: impl FnOnce() -> MpiResult<Layout>,
    recvbuf: *mut c_void,
    recv: Layout,
) -> MpiResult<usize> {
    not_in_place(recvbuf, "the receive buffer")?;
    // SAFETY: per the contract.
    let out = unsafe { bytes_buf(recvbuf, recv.extent())? };
    let (data, send) = if in_place(sendbuf) {
        (out.as_slice().to_vec(), recv.clone())
    } else {
        let send = send()?;
        // SAFETY: per the contract.
        let data = unsafe { bytes_buf(sendbuf, send.extent())? };
        (data.as_slice().to_vec(), send)
    };
    e.ialltoallv(ci, data, &send, &recv, out)
}

fn uniform(size: u32, blk: usize) -> MpiResult<Layout> {
    Layout::uniform(size, blk).map_err(|e| MpiError::new(c::MPI_ERR_COUNT, e.to_string()))
}

/// # Safety
/// The buffers are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    let recv = uniform(size, block_bytes(recvcount, recvtype, size)?.0)?;
    let send = || uniform(size, block_bytes(sendcount, sendtype, size)?.0);
    // SAFETY: the caller's buffers hold `size` blocks each.
    unsafe { alltoall_start(e, ci, sendbuf, send, recvbuf, recv) }
}

/// Alltoall, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT.blocks(size))?,
                    Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT.blocks(size))?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                alltoall(
                    e,
                    a[0].ptr(),
                    a[0].count(),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].count(),
                    a[1].dt(),
                    comm,
                )
            }
        },
    )
}

macro_rules! alltoall_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoall(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { alltoall_staged(stringify!($name), Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm) }
        }}
    };
}

alltoall_entry!(MPI_Alltoall, PMPI_Alltoall, c_int);
alltoall_entry!(MPI_Alltoall_c, PMPI_Alltoall_c, MPI_Count);

macro_rules! ialltoall_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoall(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { alltoall_staged(stringify!($name), Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm) }
        }}
    };
}

ialltoall_entry!(MPI_Ialltoall, PMPI_Ialltoall, c_int);
ialltoall_entry!(MPI_Ialltoall_c, PMPI_Ialltoall_c, MPI_Count);

/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    // SAFETY: the arrays have one entry per rank.
    let recv = unsafe {
        layout_v(
            array(recvcounts, size, "recvcounts")?,
            array(rdispls, size, "rdispls")?,
            recvtype,
        )?
    };
    let send = || {
        // SAFETY: the arrays have one entry per rank (read only without MPI_IN_PLACE).
        unsafe {
            layout_v(
                array(sendcounts, size, "sendcounts")?,
                array(sdispls, size, "sdispls")?,
                sendtype,
            )
        }
    };
    // SAFETY: the caller's buffers cover their layouts.
    unsafe { alltoall_start(e, ci, sendbuf, send, recvbuf, recv) }
}

/// Alltoallv, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers and arrays are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new_v(sendbuf, sendcounts, sdispls, size, sendtype, Use::INPUT)?,
                    Staged::new_v(recvbuf, recvcounts, rdispls, size, recvtype, Use::OUTPUT)?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers and arrays live until the collective completes.
            unsafe {
                alltoallv(
                    e,
                    a[0].ptr(),
                    a[0].counts(sendcounts),
                    a[0].displs(sdispls),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].counts(recvcounts),
                    a[1].displs(rdispls),
                    a[1].dt(),
                    comm,
                )
            }
        },
    )
}

mpi_fn! { MPI_Alltoallv / PMPI_Alltoallv (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, crate::abi::intercomm::How::Wait) }; }
    // SAFETY: the caller's buffers, valid for the call.
    unsafe { alltoallv_staged("MPI_Alltoallv", Mode::Wait, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm) }
}}

mpi_fn! { MPI_Ialltoallv / PMPI_Ialltoallv (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, crate::abi::intercomm::How::Request(request)) }; }
    // SAFETY: MPI keeps the buffers valid until the request completes.
    unsafe { alltoallv_staged("MPI_Ialltoallv", Mode::Request(request), sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm) }
}}

/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    // SAFETY: the arrays have one entry per rank.
    let recv = unsafe {
        layout_w(
            array(recvcounts, size, "recvcounts")?,
            array(rdispls, size, "rdispls")?,
            array(recvtypes, size, "recvtypes")?,
        )?
    };
    let send = || {
        // SAFETY: the arrays have one entry per rank (read only without MPI_IN_PLACE).
        unsafe {
            layout_w(
                array(sendcounts, size, "sendcounts")?,
                array(sdispls, size, "sdispls")?,
                array(sendtypes, size, "sendtypes")?,
            )
        }
    };
    // SAFETY: the caller's buffers cover their layouts.
    unsafe { alltoall_start(e, ci, sendbuf, send, recvbuf, recv) }
}

/// Alltoallw, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers and arrays are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new_w(sendbuf, sendcounts, sdispls, sendtypes, size, Use::INPUT)?,
                    Staged::new_w(recvbuf, recvcounts, rdispls, recvtypes, size, Use::OUTPUT)?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers and arrays live until the collective completes.
            unsafe {
                alltoallw(
                    e,
                    a[0].ptr(),
                    a[0].counts(sendcounts),
                    a[0].displs(sdispls),
                    a[0].types(sendtypes),
                    a[1].ptr(),
                    a[1].counts(recvcounts),
                    a[1].displs(rdispls),
                    a[1].types(recvtypes),
                    comm,
                )
            }
        },
    )
}

mpi_fn! { MPI_Alltoallw / PMPI_Alltoallw (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm) -> c_int {
    // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, crate::abi::intercomm::How::Wait) }; }
    // SAFETY: the caller's buffers, valid for the call.
    unsafe { alltoallw_staged("MPI_Alltoallw", Mode::Wait, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm) }
}}

mpi_fn! { MPI_Ialltoallw / PMPI_Ialltoallw (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, crate::abi::intercomm::How::Request(request)) }; }
    // SAFETY: MPI keeps the buffers valid until the request completes.
    unsafe { alltoallw_staged("MPI_Ialltoallw", Mode::Request(request), sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm) }
}}
