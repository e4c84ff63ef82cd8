//! Every rank to every rank: allgather and alltoall, with equal blocks, with
//! per-rank counts and (alltoallw) with per-rank datatypes.

use super::{
    array, block_bytes, bytes_buf, comm_info, in_place, layout_v, layout_w, not_in_place, same_len,
    slice_of,
};
use crate::abi::consts::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request};
use crate::abi::datatype::staging::{self as staged, Mode, Staged, Use};
use crate::abi::ints::Ints;
use crate::abi::user_buf;
use crate::engine::call_check::{CallKind, ANY_SIZE};
use crate::engine::error::MpiResult;
use crate::engine::{Engine, Source};
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
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    not_in_place(recvbuf, "the receive buffer")?;
    let (blk, all) = block_bytes(recvcount, recvtype, size)?;
    e.enter_call(blocking, ci, CallKind::Allgather, None, blk)?;
    // SAFETY: the receive buffer holds `size * recvcount` elements.
    let out = unsafe { bytes_buf(recvbuf, all)? };
    let data = if in_place(sendbuf) {
        let at = rank as usize * blk;
        Source::Owned(slice_of(&out, at..at + blk)?)
    } else {
        // SAFETY: the send buffer, valid and unchanged until completion.
        let buf = unsafe { user_buf(sendbuf, sendcount, sendtype)? };
        same_len(buf.len(), blk)?;
        Source::User(buf)
    };
    e.iallgather(ci, data, out, blocking)
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
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[sendtype, recvtype]) {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            allgather(
                e, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
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
                    blocking,
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
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    not_in_place(recvbuf, "the receive buffer")?;
    // SAFETY: the arrays have one entry per rank.
    let recv = unsafe { layout_v(recvcounts, displs, size, ["recvcounts", "displs"], recvtype)? };
    // Every member passes the same counts, hence the same total.
    let total = recv.counts().iter().sum();
    e.enter_call(blocking, ci, CallKind::Allgatherv, None, total)?;
    // SAFETY: the receive buffer covers every block.
    let out = unsafe { bytes_buf(recvbuf, recv.extent())? };
    let data = if in_place(sendbuf) {
        Source::Owned(slice_of(&out, recv.block(rank))?)
    } else {
        // SAFETY: the send buffer, valid and unchanged until completion.
        let buf = unsafe { user_buf(sendbuf, sendcount, sendtype)? };
        same_len(buf.len(), recv.block(rank).len())?;
        Source::User(buf)
    };
    e.iallgatherv(ci, data, &recv, out, blocking)
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
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok([
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
                    blocking,
                )
            }
        },
    )
}

macro_rules! allgatherv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allgatherv(sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { allgatherv_staged(stringify!($name), Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm) }
        }}
    };
}

allgatherv_entry!(
    MPI_Allgatherv,
    PMPI_Allgatherv,
    c_int,
    *const c_int,
    *const c_int
);
allgatherv_entry!(
    MPI_Allgatherv_c,
    PMPI_Allgatherv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! iallgatherv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allgatherv(sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { allgatherv_staged(stringify!($name), Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm) }
        }}
    };
}

iallgatherv_entry!(
    MPI_Iallgatherv,
    PMPI_Iallgatherv,
    c_int,
    *const c_int,
    *const c_int
);
iallgatherv_entry!(
    MPI_Iallgatherv_c,
    PMPI_Iallgatherv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

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
        (Source::Owned(out.as_slice().to_vec()), recv.clone())
    } else {
        let send = send()?;
        // SAFETY: per the contract.
        let data = unsafe { bytes_buf(sendbuf, send.extent())? };
        (Source::User(data), send)
    };
    e.ialltoallv(ci, data, &send, &recv, out)
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
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    not_in_place(recvbuf, "the receive buffer")?;
    let (rblk, rall) = block_bytes(recvcount, recvtype, size)?;
    // SAFETY: the receive buffer holds `size` blocks.
    let out = unsafe { bytes_buf(recvbuf, rall)? };
    let (data, sblk) = if in_place(sendbuf) {
        (Source::Owned(out.as_slice().to_vec()), rblk)
    } else {
        let (sblk, sall) = block_bytes(sendcount, sendtype, size)?;
        // SAFETY: the send buffer holds `size` blocks, valid until completion.
        (Source::User(unsafe { bytes_buf(sendbuf, sall)? }), sblk)
    };
    e.enter_call(blocking, ci, CallKind::Alltoall, None, sblk)?;
    e.ialltoall(ci, data, sblk, rblk, out, blocking)
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
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[sendtype, recvtype]) {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            alltoall(
                e, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |_, size| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
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
                    blocking,
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
    sendcounts: Ints,
    sdispls: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    e.enter_call(blocking, ci, CallKind::Alltoallv, None, ANY_SIZE)?;
    // SAFETY: the arrays have one entry per rank.
    let recv = unsafe {
        layout_v(
            recvcounts,
            rdispls,
            size,
            ["recvcounts", "rdispls"],
            recvtype,
        )?
    };
    let send = || {
        // SAFETY: the arrays have one entry per rank (read only without MPI_IN_PLACE).
        unsafe {
            layout_v(
                sendcounts,
                sdispls,
                size,
                ["sendcounts", "sdispls"],
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
    sendcounts: Ints,
    sdispls: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
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
                Ok([
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
                    matches!(mode, Mode::Wait),
                )
            }
        },
    )
}

macro_rules! alltoallv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallv(sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { alltoallv_staged(stringify!($name), Mode::Wait, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm) }
        }}
    };
}

alltoallv_entry!(
    MPI_Alltoallv,
    PMPI_Alltoallv,
    c_int,
    *const c_int,
    *const c_int
);
alltoallv_entry!(
    MPI_Alltoallv_c,
    PMPI_Alltoallv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! ialltoallv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallv(sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { alltoallv_staged(stringify!($name), Mode::Request(request), sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm) }
        }}
    };
}

ialltoallv_entry!(
    MPI_Ialltoallv,
    PMPI_Ialltoallv,
    c_int,
    *const c_int,
    *const c_int
);
ialltoallv_entry!(
    MPI_Ialltoallv_c,
    PMPI_Ialltoallv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    e.enter_call(blocking, ci, CallKind::Alltoallw, None, ANY_SIZE)?;
    // SAFETY: the arrays have one entry per rank.
    let recv = unsafe {
        layout_w(
            &recvcounts.read(size, "recvcounts")?,
            &rdispls.read(size, "rdispls")?,
            array(recvtypes, size, "recvtypes")?,
        )?
    };
    let send = || {
        // SAFETY: the arrays have one entry per rank (read only without MPI_IN_PLACE).
        unsafe {
            layout_w(
                &sendcounts.read(size, "sendcounts")?,
                &sdispls.read(size, "sdispls")?,
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
    sendcounts: Ints,
    sdispls: Ints,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
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
                Ok([
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
                    matches!(mode, Mode::Wait),
                )
            }
        },
    )
}

macro_rules! alltoallw_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtypes: *const MPI_Datatype, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallw(sendbuf, sendcounts.into(), sdispls.into(), sendtypes, recvbuf, recvcounts.into(), rdispls.into(), recvtypes, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { alltoallw_staged(stringify!($name), Mode::Wait, sendbuf, sendcounts.into(), sdispls.into(), sendtypes, recvbuf, recvcounts.into(), rdispls.into(), recvtypes, comm) }
        }}
    };
}

alltoallw_entry!(
    MPI_Alltoallw,
    PMPI_Alltoallw,
    c_int,
    *const c_int,
    *const c_int
);
alltoallw_entry!(
    MPI_Alltoallw_c,
    PMPI_Alltoallw_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! ialltoallw_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtypes: *const MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::alltoallw(sendbuf, sendcounts.into(), sdispls.into(), sendtypes, recvbuf, recvcounts.into(), rdispls.into(), recvtypes, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { alltoallw_staged(stringify!($name), Mode::Request(request), sendbuf, sendcounts.into(), sdispls.into(), sendtypes, recvbuf, recvcounts.into(), rdispls.into(), recvtypes, comm) }
        }}
    };
}

ialltoallw_entry!(
    MPI_Ialltoallw,
    PMPI_Ialltoallw,
    c_int,
    *const c_int,
    *const c_int
);
ialltoallw_entry!(
    MPI_Ialltoallw_c,
    PMPI_Ialltoallw_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);
