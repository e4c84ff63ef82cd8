//! Gather and scatter, with equal blocks and with per-rank counts.

use super::{
    block_bytes, bytes_buf, check_root, comm_info, in_place, layout_v, not_in_place, same_len,
};
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request};
use crate::abi::datatype::staging::{self as staged, Mode, Staged, Use};
use crate::abi::ints::Ints;
use crate::abi::user_buf;
use crate::abi::userbuf::UserBuf;
use crate::engine::call_check::{CallKind, ANY_SIZE};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use lanai_coll::Layout;
use std::ffi::c_void;
use std::os::raw::c_int;

fn only_at_root() -> MpiError {
    MpiError::new(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root")
}

/// # Safety
/// The buffers are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    let root = check_root(e, ci, root)?;
    if rank != root {
        if in_place(sendbuf) {
            return Err(only_at_root());
        }
        // SAFETY: the send buffer, per the contract.
        let data = unsafe { user_buf(sendbuf, sendcount, sendtype)? };
        e.enter_call(blocking, ci, CallKind::Gather, Some(root), data.len())?;
        return e.igather(ci, data, None, root, blocking);
    }
    not_in_place(recvbuf, "the receive buffer")?;
    let (blk, all) = block_bytes(recvcount, recvtype, size)?;
    e.enter_call(blocking, ci, CallKind::Gather, Some(root), blk)?;
    // SAFETY: the root's receive buffer holds `size * recvcount` elements.
    let out = unsafe { bytes_buf(recvbuf, all)? };
    let data = if in_place(sendbuf) {
        let at = rank as usize * blk;
        out.range(at..at + blk)
            .ok_or_else(|| MpiError::internal("in-place block outside the receive buffer"))?
    } else {
        // SAFETY: the send buffer, per the contract.
        unsafe { user_buf(sendbuf, sendcount, sendtype)? }
    };
    same_len(data.len(), blk)?;
    e.igather(ci, data, Some(out), root, blocking)
}

/// Gather, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn gather_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[sendtype, recvtype]) {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            gather(
                e, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |rank, size| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT)?,
                    if rank as c_int == root {
                        Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT.blocks(size))?
                    } else {
                        Staged::pass(recvbuf, recvcount, recvtype)
                    },
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                gather(
                    e,
                    a[0].ptr(),
                    a[0].count(),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].count(),
                    a[1].dt(),
                    root,
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! gather_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::gather(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { gather_staged(stringify!($name), Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm) }
        }}
    };
}

gather_entry!(MPI_Gather, PMPI_Gather, c_int);
gather_entry!(MPI_Gather_c, PMPI_Gather_c, MPI_Count);

macro_rules! igather_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::gather(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { gather_staged(stringify!($name), Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm) }
        }}
    };
}

igather_entry!(MPI_Igather, PMPI_Igather, c_int);
igather_entry!(MPI_Igather_c, PMPI_Igather_c, MPI_Count);

/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    let root = check_root(e, ci, root)?;
    if rank != root {
        if in_place(sendbuf) {
            return Err(only_at_root());
        }
        // SAFETY: the send buffer, per the contract.
        let data = unsafe { user_buf(sendbuf, sendcount, sendtype)? };
        e.enter_call(blocking, ci, CallKind::Gatherv, Some(root), data.len())?;
        return e.igatherv(ci, data, &Layout::default(), None, root, blocking);
    }
    let id = e.enter_call(blocking, ci, CallKind::Gatherv, Some(root), ANY_SIZE)?;
    not_in_place(recvbuf, "the receive buffer")?;
    // SAFETY: the root's arrays have one entry per rank.
    let recv = unsafe { layout_v(recvcounts, displs, size, ["recvcounts", "displs"], recvtype)? };
    e.expect_blocks(id, recv.counts());
    // SAFETY: the root's receive buffer covers every block.
    let out = unsafe { bytes_buf(recvbuf, recv.extent())? };
    let data = if in_place(sendbuf) {
        out.range(recv.block(rank))
            .ok_or_else(|| MpiError::internal("in-place block outside the receive buffer"))?
    } else {
        // SAFETY: the send buffer, per the contract.
        unsafe { user_buf(sendbuf, sendcount, sendtype)? }
    };
    same_len(data.len(), recv.block(rank).len())?;
    e.igatherv(ci, data, &recv, Some(out), root, blocking)
}

/// Gatherv, blocking or not, with the buffers staged for derived types
/// (the root's blocks back to back in a temporary).
///
/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[sendtype, recvtype]) {
        // SAFETY: the caller's buffers and arrays, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            gatherv(
                e, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |rank, size| {
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok([
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT)?,
                    if rank as c_int == root {
                        Staged::new_v(recvbuf, recvcounts, displs, size, recvtype, Use::OUTPUT)?
                    } else {
                        Staged::pass(recvbuf, 0, recvtype)
                    },
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers and arrays live until the collective completes.
            unsafe {
                gatherv(
                    e,
                    a[0].ptr(),
                    a[0].count(),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].counts(recvcounts),
                    a[1].displs(displs),
                    a[1].dt(),
                    root,
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! gatherv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::gatherv(sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, root, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { gatherv_staged(stringify!($name), Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, root, comm) }
        }}
    };
}

gatherv_entry!(MPI_Gatherv, PMPI_Gatherv, c_int, *const c_int, *const c_int);
gatherv_entry!(
    MPI_Gatherv_c,
    PMPI_Gatherv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! igatherv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::gatherv(sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, root, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { gatherv_staged(stringify!($name), Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, root, comm) }
        }}
    };
}

igatherv_entry!(
    MPI_Igatherv,
    PMPI_Igatherv,
    c_int,
    *const c_int,
    *const c_int
);
igatherv_entry!(
    MPI_Igatherv_c,
    PMPI_Igatherv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

/// The root's own receive buffer in a scatter: `None` for MPI_IN_PLACE;
/// it must hold at least `need` bytes.
///
/// # Safety
/// `recvbuf` holds `recvcount` elements of `recvtype` until completion.
unsafe fn root_recv(
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    need: usize,
) -> MpiResult<Option<crate::abi::userbuf::UserBuf>> {
    if in_place(recvbuf) {
        return Ok(None);
    }
    // SAFETY: forwarded from this function's contract.
    let out = unsafe { user_buf(recvbuf, recvcount, recvtype)? };
    if out.len() < need {
        return Err(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!(
                "the root's receive buffer holds {} bytes but its block is {need}",
                out.len()
            ),
        ));
    }
    Ok(Some(out))
}

/// # Safety
/// The buffers are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    let root = check_root(e, ci, root)?;
    if rank != root {
        not_in_place(recvbuf, "the receive buffer except at the root")?;
        // SAFETY: the receive buffer, per the contract.
        let out = unsafe { user_buf(recvbuf, recvcount, recvtype)? };
        e.enter_call(blocking, ci, CallKind::Scatter, Some(root), out.len())?;
        return e.iscatter(ci, UserBuf::EMPTY, out.len(), Some(out), root, blocking);
    }
    not_in_place(
        sendbuf,
        "the send buffer (use it as the root's receive buffer)",
    )?;
    let (blk, all) = block_bytes(sendcount, sendtype, size)?;
    e.enter_call(blocking, ci, CallKind::Scatter, Some(root), blk)?;
    // SAFETY: the root's send buffer holds `size * sendcount` elements.
    let data = unsafe { bytes_buf(sendbuf, all)? };
    // SAFETY: the root's receive buffer, per the contract.
    let out = unsafe { root_recv(recvbuf, recvcount, recvtype, blk)? };
    e.iscatter(ci, data, blk, out, root, blocking)
}

/// Scatter, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[sendtype, recvtype]) {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            scatter(
                e, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |rank, size| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
                    if rank as c_int == root {
                        Staged::new(sendbuf, sendcount, sendtype, Use::INPUT.blocks(size))?
                    } else {
                        Staged::pass(sendbuf, sendcount, sendtype)
                    },
                    Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT)?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                scatter(
                    e,
                    a[0].ptr(),
                    a[0].count(),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].count(),
                    a[1].dt(),
                    root,
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! scatter_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::scatter(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { scatter_staged(stringify!($name), Mode::Wait, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm) }
        }}
    };
}

scatter_entry!(MPI_Scatter, PMPI_Scatter, c_int);
scatter_entry!(MPI_Scatter_c, PMPI_Scatter_c, MPI_Count);

macro_rules! iscatter_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::scatter(sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { scatter_staged(stringify!($name), Mode::Request(request), sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm) }
        }}
    };
}

iscatter_entry!(MPI_Iscatter, PMPI_Iscatter, c_int);
iscatter_entry!(MPI_Iscatter_c, PMPI_Iscatter_c, MPI_Count);

/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    e: &mut Engine,
    sendbuf: *const c_void,
    sendcounts: Ints,
    displs: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    let root = check_root(e, ci, root)?;
    if rank != root {
        not_in_place(recvbuf, "the receive buffer except at the root")?;
        // SAFETY: the receive buffer, per the contract.
        let out = unsafe { user_buf(recvbuf, recvcount, recvtype)? };
        e.enter_call(blocking, ci, CallKind::Scatterv, Some(root), out.len())?;
        return e.iscatterv(
            ci,
            UserBuf::EMPTY,
            &Layout::default(),
            Some(out),
            root,
            blocking,
        );
    }
    not_in_place(
        sendbuf,
        "the send buffer (use it as the root's receive buffer)",
    )?;
    let id = e.enter_call(blocking, ci, CallKind::Scatterv, Some(root), ANY_SIZE)?;
    // SAFETY: the root's arrays have one entry per rank.
    let send = unsafe { layout_v(sendcounts, displs, size, ["sendcounts", "displs"], sendtype)? };
    e.expect_blocks(id, send.counts());
    // SAFETY: the root's send buffer covers every block.
    let data = unsafe { bytes_buf(sendbuf, send.extent())? };
    let mine = send.block(rank).len();
    // SAFETY: the root's receive buffer, per the contract.
    let out = unsafe { root_recv(recvbuf, recvcount, recvtype, mine)? };
    e.iscatterv(ci, data, &send, out, root, blocking)
}

/// Scatterv, blocking or not, with the buffers staged for derived types
/// (the root's blocks back to back in a temporary).
///
/// # Safety
/// The buffers and arrays are valid, where significant, until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    sendcounts: Ints,
    displs: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[sendtype, recvtype]) {
        // SAFETY: the caller's buffers and arrays, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            scatterv(
                e, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |rank, size| {
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok([
                    if rank as c_int == root {
                        Staged::new_v(sendbuf, sendcounts, displs, size, sendtype, Use::INPUT)?
                    } else {
                        Staged::pass(sendbuf, 0, sendtype)
                    },
                    Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT)?,
                ])
            }
        },
        |e, a| {
            // SAFETY: the staged buffers and arrays live until the collective completes.
            unsafe {
                scatterv(
                    e,
                    a[0].ptr(),
                    a[0].counts(sendcounts),
                    a[0].displs(displs),
                    a[0].dt(),
                    a[1].ptr(),
                    a[1].count(),
                    a[1].dt(),
                    root,
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! scatterv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, displs: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::scatterv(sendbuf, sendcounts.into(), displs.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { scatterv_staged(stringify!($name), Mode::Wait, sendbuf, sendcounts.into(), displs.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm) }
        }}
    };
}

scatterv_entry!(
    MPI_Scatterv,
    PMPI_Scatterv,
    c_int,
    *const c_int,
    *const c_int
);
scatterv_entry!(
    MPI_Scatterv_c,
    PMPI_Scatterv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! iscatterv_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, displs: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::scatterv(sendbuf, sendcounts.into(), displs.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { scatterv_staged(stringify!($name), Mode::Request(request), sendbuf, sendcounts.into(), displs.into(), sendtype, recvbuf, recvcount.into(), recvtype, root, comm) }
        }}
    };
}

iscatterv_entry!(
    MPI_Iscatterv,
    PMPI_Iscatterv,
    c_int,
    *const c_int,
    *const c_int
);
iscatterv_entry!(
    MPI_Iscatterv_c,
    PMPI_Iscatterv_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);
