//! Intercommunicator entry points (`MPI_Intercomm_create`, `_merge`) and
//! the blocking collectives on intercommunicators, which the collective
//! entry points hand over to when their communicator is one. Buffers here
//! are contiguous: predefined types and gap-free derived ones.

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Datatype, MPI_Op};
use super::group::put;
use super::userbuf::UserBuf;
use super::{call, check_tag, comm_handle, comm_idx, state, types, user_buf};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::intercomm::InterRoot;
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Whether `comm` is a live intercommunicator. Anything else (including an
/// invalid handle) goes down the ordinary path, which reports it.
pub(super) fn is_inter(comm: MPI_Comm) -> bool {
    state::with_engine(|e| Ok(e.comms.get(comm_idx(comm)?)?.is_inter())).unwrap_or(false)
}

fn no_in_place(p: *const c_void, what: &str) -> MpiResult<()> {
    if p as usize == c::MPI_IN_PLACE {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("MPI_IN_PLACE is not allowed as {what} on an intercommunicator"),
        ));
    }
    Ok(())
}

/// `n` blocks of `count` elements of `dt`, in bytes: (block, total).
fn block_bytes(count: c_int, dt: MPI_Datatype, n: u32) -> MpiResult<(usize, usize)> {
    if count < 0 {
        return Err(MpiError::count(i64::from(count)));
    }
    let too_large = || MpiError::new(c::MPI_ERR_COUNT, format!("count {count} is too large"));
    let blk = (count as usize)
        .checked_mul(types::type_size(dt)?)
        .ok_or_else(too_large)?;
    Ok((blk, blk.checked_mul(n as usize).ok_or_else(too_large)?))
}

/// A buffer of `len` bytes.
///
/// # Safety
/// `p` is valid for `len` bytes for the call.
unsafe fn bytes(p: *const c_void, len: usize) -> MpiResult<UserBuf> {
    if p.is_null() && len > 0 {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("NULL buffer for {len} bytes"),
        ));
    }
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { UserBuf::new(p as *mut u8, len) })
}

fn remote_size(e: &Engine, ci: usize) -> MpiResult<u32> {
    Ok(e.comms.get(ci)?.peer_count())
}

// ---- creation -------------------------------------------------------------

mpi_fn! { MPI_Intercomm_create / PMPI_Intercomm_create (local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int, newintercomm: *mut MPI_Comm) -> c_int {
    call("MPI_Intercomm_create", Some(local_comm), |e| {
        if newintercomm.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "newintercomm is NULL"));
        }
        check_tag(tag, false)?;
        let lc = comm_idx(local_comm)?;
        // peer_comm matters only at the local leader, which checks it.
        let peer = comm_idx(peer_comm).ok();
        let idx = e.intercomm_create(lc, local_leader, peer, remote_leader, tag)?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put(newintercomm, comm_handle(idx), "newintercomm") }
    })
}}

mpi_fn! { MPI_Intercomm_merge / PMPI_Intercomm_merge (intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) -> c_int {
    call("MPI_Intercomm_merge", Some(intercomm), |e| {
        if newintracomm.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "newintracomm is NULL"));
        }
        let ci = comm_idx(intercomm)?;
        if !e.comms.get(ci)?.is_inter() {
            return Err(MpiError::new(c::MPI_ERR_COMM, "not an intercommunicator"));
        }
        let idx = e.intercomm_merge(ci, high != 0)?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put(newintracomm, comm_handle(idx), "newintracomm") }
    })
}}

// ---- collectives (called by the ordinary entry points) --------------------

pub(super) fn barrier(comm: MPI_Comm) -> c_int {
    call("MPI_Barrier", Some(comm), |e| {
        e.inter_barrier(comm_idx(comm)?)
    })
}

/// # Safety
/// At the root, `buffer` holds `count` elements of `datatype`; in the other
/// group it has room for them.
pub(super) unsafe fn bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Bcast", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        let root = e.inter_root(ci, root)?;
        let buf = match root {
            InterRoot::Idle => UserBuf::EMPTY,
            // SAFETY: the caller's buffer, per the contract.
            _ => unsafe { user_buf(buffer, count, datatype)? },
        };
        e.inter_bcast(ci, buf, root)
    })
}

/// # Safety
/// The buffers hold `count` elements of `datatype` where significant.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Reduce", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        let root = e.inter_root(ci, root)?;
        let comb = super::ops::combiner(datatype, op)?;
        match root {
            InterRoot::Idle => e.inter_reduce(ci, Vec::new(), None, root, comb),
            InterRoot::Root => {
                no_in_place(recvbuf, "the receive buffer")?;
                // SAFETY: the root's receive buffer, per the contract.
                let out = unsafe { user_buf(recvbuf, count, datatype)? };
                e.inter_reduce(ci, Vec::new(), Some(out), root, comb)
            }
            InterRoot::Remote(_) => {
                no_in_place(sendbuf, "the send buffer")?;
                // SAFETY: the send buffer, per the contract.
                let data = unsafe { user_buf(sendbuf, count, datatype)? }
                    .as_slice()
                    .to_vec();
                e.inter_reduce(ci, data, None, root, comb)
            }
        }
    })
}

/// # Safety
/// The buffers hold `count` elements of `datatype`.
pub(super) unsafe fn allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Allreduce", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        no_in_place(sendbuf, "the send buffer")?;
        no_in_place(recvbuf, "the receive buffer")?;
        let comb = super::ops::combiner(datatype, op)?;
        // SAFETY: the caller's buffers, per the contract.
        let (data, out) = unsafe {
            (
                user_buf(sendbuf, count, datatype)?.as_slice().to_vec(),
                user_buf(recvbuf, count, datatype)?,
            )
        };
        e.inter_allreduce(ci, data, out, comb)
    })
}

/// # Safety
/// The buffers are valid where significant: the root's receive buffer holds
/// one block per member of the other group.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Gather", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        let root = e.inter_root(ci, root)?;
        match root {
            InterRoot::Idle => e.inter_gather(ci, Vec::new(), None, root),
            InterRoot::Root => {
                no_in_place(recvbuf, "the receive buffer")?;
                let (blk, all) = block_bytes(recvcount, recvtype, remote_size(e, ci)?)?;
                // SAFETY: the root's receive buffer, per the contract.
                let out = unsafe { bytes(recvbuf, all)? };
                e.inter_gather(ci, Vec::new(), Some((out, blk)), root)
            }
            InterRoot::Remote(_) => {
                no_in_place(sendbuf, "the send buffer")?;
                // SAFETY: the send buffer, per the contract.
                let data = unsafe { user_buf(sendbuf, sendcount, sendtype)? }
                    .as_slice()
                    .to_vec();
                e.inter_gather(ci, data, None, root)
            }
        }
    })
}

/// # Safety
/// The buffers are valid where significant: the root's send buffer holds
/// one block per member of the other group.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Scatter", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        let root = e.inter_root(ci, root)?;
        match root {
            InterRoot::Idle => e.inter_scatter(ci, Vec::new(), 0, None, root),
            InterRoot::Root => {
                no_in_place(sendbuf, "the send buffer")?;
                let (blk, all) = block_bytes(sendcount, sendtype, remote_size(e, ci)?)?;
                // SAFETY: the root's send buffer, per the contract.
                let data = unsafe { bytes(sendbuf, all)? }.as_slice().to_vec();
                e.inter_scatter(ci, data, blk, None, root)
            }
            InterRoot::Remote(_) => {
                no_in_place(recvbuf, "the receive buffer")?;
                // SAFETY: the receive buffer, per the contract.
                let out = unsafe { user_buf(recvbuf, recvcount, recvtype)? };
                e.inter_scatter(ci, Vec::new(), 0, Some(out), root)
            }
        }
    })
}

/// # Safety
/// The receive buffer holds one block per member of the other group.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Allgather", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        no_in_place(sendbuf, "the send buffer")?;
        no_in_place(recvbuf, "the receive buffer")?;
        let (blk, all) = block_bytes(recvcount, recvtype, remote_size(e, ci)?)?;
        // SAFETY: the caller's buffers, per the contract.
        let (data, out) = unsafe {
            (
                user_buf(sendbuf, sendcount, sendtype)?.as_slice().to_vec(),
                bytes(recvbuf, all)?,
            )
        };
        e.inter_allgather(ci, data, blk, out)
    })
}

/// # Safety
/// Both buffers hold one block per member of the other group.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Alltoall", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        no_in_place(sendbuf, "the send buffer")?;
        no_in_place(recvbuf, "the receive buffer")?;
        let nr = remote_size(e, ci)?;
        let (sblk, sall) = block_bytes(sendcount, sendtype, nr)?;
        let (rblk, rall) = block_bytes(recvcount, recvtype, nr)?;
        // SAFETY: the caller's buffers, per the contract.
        let (data, out) = unsafe {
            (
                bytes(sendbuf, sall)?.as_slice().to_vec(),
                bytes(recvbuf, rall)?,
            )
        };
        e.inter_alltoall(ci, data, sblk, rblk, out)
    })
}
