//! Collectives on intercommunicators, blocking and nonblocking: the
//! ordinary entry points hand over here when their communicator is an
//! intercommunicator. Send data is copied at the call; results are written
//! when the collective completes. Buffers are contiguous: predefined types
//! and gap-free derived ones.

use super::super::coll as C;
use super::super::coll::{array, block_bytes, layout_v, layout_w};
use super::super::consts as c;
use super::super::consts::{MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request};
use super::super::requests::handle_of;
use super::super::userbuf::UserBuf;
use super::super::{call, comm_idx, types, user_buf};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::intercomm::InterRoot;
use crate::engine::Engine;
use lanai_coll::Layout;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Whether the collective waits or hands back a request.
#[derive(Debug, Clone, Copy)]
pub(in crate::abi) enum How {
    Wait,
    /// The caller's `MPI_Request` argument.
    Request(*mut MPI_Request),
}

impl How {
    fn name<'a>(self, blocking: &'a str, nonblocking: &'a str) -> &'a str {
        match self {
            How::Wait => blocking,
            How::Request(_) => nonblocking,
        }
    }
}

/// Starts a collective on the intercommunicator `comm` with `start` (given
/// the communicator's engine index), then waits for it or stores its
/// request.
///
/// # Safety
/// A `How::Request` pointer is null or writable.
unsafe fn run(
    name: &str,
    comm: MPI_Comm,
    how: How,
    start: impl FnOnce(&mut Engine, usize) -> MpiResult<usize>,
) -> c_int {
    call(name, Some(comm), |e| {
        if matches!(how, How::Request(p) if p.is_null()) {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        let req = start(e, comm_idx(comm)?)?;
        match how {
            How::Wait => e.finish_coll(req),
            How::Request(p) => {
                // SAFETY: checked non-null; writable per the contract.
                unsafe { *p = handle_of(req) };
                Ok(())
            }
        }
    })
}

/// `MPI_ERR_COMM` for the scans, which the standard defines only on
/// intracommunicators.
pub(in crate::abi) fn undefined(name: &str, comm: MPI_Comm) -> c_int {
    call(name, Some(comm), |_| {
        Err(MpiError::new(
            c::MPI_ERR_COMM,
            "the MPI standard does not define this operation on intercommunicators",
        ))
    })
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

fn too_large(what: impl std::fmt::Display) -> MpiError {
    MpiError::new(c::MPI_ERR_COUNT, format!("{what} is too large"))
}

/// `count` elements of `dt` in bytes.
fn elem_bytes(count: c_int, dt: MPI_Datatype) -> MpiResult<usize> {
    C::elem_bytes(count, types::type_size(dt)?)
}

fn remote_size(e: &Engine, ci: usize) -> MpiResult<u32> {
    Ok(e.comms.get(ci)?.peer_count())
}

/// (rank, size) of this process in its own group.
fn local(e: &Engine, ci: usize) -> MpiResult<(u32, u32)> {
    let cm = e.comms.get(ci)?;
    Ok((cm.rank, cm.size))
}

// ---- barrier, broadcast, reductions --------------------------------------

/// # Safety
/// A `How::Request` pointer is null or writable.
pub(in crate::abi) unsafe fn barrier(comm: MPI_Comm, how: How) -> c_int {
    let name = how.name("MPI_Barrier", "MPI_Ibarrier");
    // SAFETY: forwarded from this function's contract.
    unsafe { run(name, comm, how, |e, ci| e.inter_ibarrier(ci)) }
}

/// # Safety
/// At the root, `buffer` holds `count` elements of `datatype`; in the other
/// group it has room for them until completion. `how` as for [`run`].
pub(in crate::abi) unsafe fn bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Bcast", "MPI_Ibcast");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let root = e.inter_root(ci, root)?;
            let buf = match root {
                InterRoot::Idle => UserBuf::EMPTY,
                // SAFETY: the caller's buffer, per the contract.
                _ => user_buf(buffer, count, datatype)?,
            };
            e.inter_ibcast(ci, buf, root)
        })
    }
}

/// # Safety
/// The buffers hold `count` elements of `datatype` where significant,
/// until completion. `how` as for [`run`].
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Reduce", "MPI_Ireduce");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let root = e.inter_root(ci, root)?;
            let comb = super::super::ops::combiner(datatype, op)?;
            match root {
                InterRoot::Idle => e.inter_ireduce(ci, Vec::new(), None, root, comb),
                InterRoot::Root => {
                    no_in_place(recvbuf, "the receive buffer")?;
                    let out = user_buf(recvbuf, count, datatype)?;
                    e.inter_ireduce(ci, Vec::new(), Some(out), root, comb)
                }
                InterRoot::Remote(_) => {
                    no_in_place(sendbuf, "the send buffer")?;
                    let data = C::send_data(sendbuf, count, datatype)?;
                    e.inter_ireduce(ci, data, None, root, comb)
                }
            }
        })
    }
}

/// # Safety
/// The buffers hold `count` elements of `datatype` until completion. `how`
/// as for [`run`].
pub(in crate::abi) unsafe fn allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Allreduce", "MPI_Iallreduce");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let comb = super::super::ops::combiner(datatype, op)?;
            let data = C::send_data(sendbuf, count, datatype)?;
            let out = user_buf(recvbuf, count, datatype)?;
            e.inter_iallreduce(ci, data, out, comb)
        })
    }
}

/// # Safety
/// `sendbuf` holds the sum of `recvcounts` (one per member of this group)
/// elements of `datatype`; `recvbuf` has room for this member's count,
/// until completion. `how` as for [`run`].
pub(in crate::abi) unsafe fn reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Reduce_scatter", "MPI_Ireduce_scatter");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let (rank, size) = local(e, ci)?;
            let counts = array(recvcounts, size, "recvcounts")?;
            let elems = counts.iter().try_fold(0 as c_int, |a, &n| {
                if n < 0 {
                    return Err(MpiError::count(i64::from(n)));
                }
                a.checked_add(n)
                    .ok_or_else(|| too_large("the sum of recvcounts"))
            })?;
            let bytes = counts
                .iter()
                .map(|&n| elem_bytes(n, datatype))
                .collect::<MpiResult<Vec<_>>>()?;
            reduce_scatter_start(
                e,
                ci,
                sendbuf,
                recvbuf,
                elems,
                counts[rank as usize],
                bytes,
                datatype,
                op,
            )
        })
    }
}

/// # Safety
/// `sendbuf` holds `recvcount` elements of `datatype` per member of this
/// group; `recvbuf` has room for `recvcount`, until completion. `how` as
/// for [`run`].
pub(in crate::abi) unsafe fn reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let (_, size) = local(e, ci)?;
            let blk = elem_bytes(recvcount, datatype)?;
            let elems = recvcount
                .checked_mul(size as c_int)
                .ok_or_else(|| too_large(format!("recvcount {recvcount}")))?;
            let bytes = vec![blk; size as usize];
            reduce_scatter_start(
                e, ci, sendbuf, recvbuf, elems, recvcount, bytes, datatype, op,
            )
        })
    }
}

/// # Safety
/// `sendbuf` holds `elems` elements of `dt`, `recvbuf` room for `mine`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_start(
    e: &mut Engine,
    ci: usize,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    elems: c_int,
    mine: c_int,
    counts: Vec<usize>,
    dt: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<usize> {
    no_in_place(sendbuf, "the send buffer")?;
    no_in_place(recvbuf, "the receive buffer")?;
    let comb = super::super::ops::combiner(dt, op)?;
    // SAFETY: the caller's buffers, per the contract.
    let (data, out) = unsafe {
        (
            C::send_data(sendbuf, elems, dt)?,
            user_buf(recvbuf, mine, dt)?,
        )
    };
    e.inter_ireduce_scatter(ci, data, counts, out, comb)
}

// ---- rooted: gather and scatter -------------------------------------------

/// # Safety
/// The buffers are valid where significant until completion: the root's
/// receive buffer holds one block per member of the other group. `how` as
/// for [`run`].
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Gather", "MPI_Igather");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_igather(ci, Vec::new(), None, root),
                InterRoot::Root => {
                    no_in_place(recvbuf, "the receive buffer")?;
                    let (blk, all) = block_bytes(recvcount, recvtype, remote_size(e, ci)?)?;
                    let out = C::bytes_buf(recvbuf, all)?;
                    e.inter_igather(ci, Vec::new(), Some((out, blk)), root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(sendbuf, "the send buffer")?;
                    let data = C::send_data(sendbuf, sendcount, sendtype)?;
                    e.inter_igather(ci, data, None, root)
                }
            }
        })
    }
}

/// # Safety
/// As for [`gather`], with the root's blocks at `displs` of `recvcounts`.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Gatherv", "MPI_Igatherv");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_igatherv(ci, Vec::new(), None, root),
                InterRoot::Root => {
                    no_in_place(recvbuf, "the receive buffer")?;
                    let nr = remote_size(e, ci)?;
                    let counts = array(recvcounts, nr, "recvcounts")?;
                    let displs = array(displs, nr, "displs")?;
                    let recv = layout_v(counts, displs, recvtype)?;
                    let out = C::bytes_buf(recvbuf, recv.extent())?;
                    e.inter_igatherv(ci, Vec::new(), Some((out, recv)), root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(sendbuf, "the send buffer")?;
                    let data = C::send_data(sendbuf, sendcount, sendtype)?;
                    e.inter_igatherv(ci, data, None, root)
                }
            }
        })
    }
}

/// # Safety
/// The buffers are valid where significant until completion: the root's
/// send buffer holds one block per member of the other group. `how` as for
/// [`run`].
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Scatter", "MPI_Iscatter");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_iscatter(ci, Vec::new(), 0, None, root),
                InterRoot::Root => {
                    no_in_place(sendbuf, "the send buffer")?;
                    let (blk, all) = block_bytes(sendcount, sendtype, remote_size(e, ci)?)?;
                    let data = C::bytes_buf(sendbuf, all)?.as_slice().to_vec();
                    e.inter_iscatter(ci, data, blk, None, root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(recvbuf, "the receive buffer")?;
                    let out = user_buf(recvbuf, recvcount, recvtype)?;
                    e.inter_iscatter(ci, Vec::new(), 0, Some(out), root)
                }
            }
        })
    }
}

/// # Safety
/// As for [`scatter`], with the root's blocks at `displs` of `sendcounts`.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Scatterv", "MPI_Iscatterv");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_iscatterv(ci, Vec::new(), None, None, root),
                InterRoot::Root => {
                    no_in_place(sendbuf, "the send buffer")?;
                    let nr = remote_size(e, ci)?;
                    let counts = array(sendcounts, nr, "sendcounts")?;
                    let displs = array(displs, nr, "displs")?;
                    let send = layout_v(counts, displs, sendtype)?;
                    let data = C::bytes_buf(sendbuf, send.extent())?.as_slice().to_vec();
                    e.inter_iscatterv(ci, data, Some(send), None, root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(recvbuf, "the receive buffer")?;
                    let out = user_buf(recvbuf, recvcount, recvtype)?;
                    e.inter_iscatterv(ci, Vec::new(), None, Some(out), root)
                }
            }
        })
    }
}

// ---- between the groups: allgather and alltoall ---------------------------

/// # Safety
/// The receive buffer holds one block per member of the other group, until
/// completion. `how` as for [`run`].
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Allgather", "MPI_Iallgather");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            let (blk, all) = block_bytes(recvcount, recvtype, nr)?;
            let recv = Layout::uniform(nr, blk).map_err(|_| too_large("recvcount"))?;
            let data = C::send_data(sendbuf, sendcount, sendtype)?;
            e.inter_iallgatherv(ci, data, recv, C::bytes_buf(recvbuf, all)?)
        })
    }
}

/// # Safety
/// As for [`allgather`], with blocks at `displs` of `recvcounts`.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Allgatherv", "MPI_Iallgatherv");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            let counts = array(recvcounts, nr, "recvcounts")?;
            let displs = array(displs, nr, "displs")?;
            let recv = layout_v(counts, displs, recvtype)?;
            let out = C::bytes_buf(recvbuf, recv.extent())?;
            let data = C::send_data(sendbuf, sendcount, sendtype)?;
            e.inter_iallgatherv(ci, data, recv, out)
        })
    }
}

/// # Safety
/// Both buffers hold one block per member of the other group, until
/// completion. `how` as for [`run`].
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Alltoall", "MPI_Ialltoall");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            let (sblk, sall) = block_bytes(sendcount, sendtype, nr)?;
            let (rblk, rall) = block_bytes(recvcount, recvtype, nr)?;
            let send = Layout::uniform(nr, sblk).map_err(|_| too_large("sendcount"))?;
            let recv = Layout::uniform(nr, rblk).map_err(|_| too_large("recvcount"))?;
            let data = C::bytes_buf(sendbuf, sall)?.as_slice().to_vec();
            e.inter_ialltoallv(ci, data, send, recv, C::bytes_buf(recvbuf, rall)?)
        })
    }
}

/// # Safety
/// The buffers hold the blocks their counts and displacements describe
/// (one per member of the other group), until completion. `how` as for
/// [`run`].
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Alltoallv", "MPI_Ialltoallv");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            let send = layout_v(
                array(sendcounts, nr, "sendcounts")?,
                array(sdispls, nr, "sdispls")?,
                sendtype,
            )?;
            let recv = layout_v(
                array(recvcounts, nr, "recvcounts")?,
                array(rdispls, nr, "rdispls")?,
                recvtype,
            )?;
            let data = C::bytes_buf(sendbuf, send.extent())?.as_slice().to_vec();
            let out = C::bytes_buf(recvbuf, recv.extent())?;
            e.inter_ialltoallv(ci, data, send, recv, out)
        })
    }
}

/// # Safety
/// As for [`alltoallv`], with per-block types and byte displacements.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = how.name("MPI_Alltoallw", "MPI_Ialltoallw");
    // SAFETY: forwarded from this function's contract.
    unsafe {
        run(name, comm, how, |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            let send = layout_w(
                array(sendcounts, nr, "sendcounts")?,
                array(sdispls, nr, "sdispls")?,
                array(sendtypes, nr, "sendtypes")?,
            )?;
            let recv = layout_w(
                array(recvcounts, nr, "recvcounts")?,
                array(rdispls, nr, "rdispls")?,
                array(recvtypes, nr, "recvtypes")?,
            )?;
            let data = C::bytes_buf(sendbuf, send.extent())?.as_slice().to_vec();
            let out = C::bytes_buf(recvbuf, recv.extent())?;
            e.inter_ialltoallv(ci, data, send, recv, out)
        })
    }
}
