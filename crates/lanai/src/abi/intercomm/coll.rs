//! Collectives on intercommunicators, blocking and nonblocking: the
//! ordinary entry points hand over here when their communicator is an
//! intercommunicator. Buffers may have any datatype: a non-contiguous one
//! goes through the same staging as on intracommunicators
//! (`datatype/staging.rs`: packed at the call, outputs unpacked when the
//! collective completes, the temporaries held by a nonblocking request).
//! Only the buffers significant for this process's role (`MPI_ROOT`,
//! `MPI_PROC_NULL` or a remote root) are staged. Send data is copied at
//! the call; results are written when the collective completes.

use super::super::coll as C;
use super::super::coll::{array, block_bytes, layout_v, layout_w, reduce_arg};
use super::super::consts as c;
use super::super::consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Op};
use super::super::datatype::staging::{self as staged, Staged, Use};
use super::super::userbuf::UserBuf;
use super::super::{call, types, user_buf};
use crate::abi::ints::Ints;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::intercomm::InterRoot;
use crate::engine::Engine;
use lanai_coll::Layout;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Whether the collective waits or hands back a request (the caller's
/// `MPI_Request` argument).
pub(in crate::abi) use super::super::datatype::staging::Mode as How;

fn name_of<'a>(how: How, blocking: &'a str, nonblocking: &'a str) -> &'a str {
    match how {
        How::Wait => blocking,
        How::Request(_) => nonblocking,
    }
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

fn remote_size(e: &Engine, ci: usize) -> MpiResult<u32> {
    Ok(e.comms.get(ci)?.peer_count())
}

/// (rank, size) of this process in its own group.
fn local(e: &Engine, ci: usize) -> MpiResult<(u32, u32)> {
    let cm = e.comms.get(ci)?;
    Ok((cm.rank, cm.size))
}

/// The staged buffer as the bytes the engine sends (copied).
///
/// # Safety
/// `s` names valid memory (a staged temporary or the caller's buffer).
unsafe fn data_of(s: &Staged) -> MpiResult<Vec<u8>> {
    // SAFETY: forwarded.
    unsafe { C::send_data(s.ptr(), s.count(), s.dt()) }
}

/// The staged buffer as the engine's receive buffer.
///
/// # Safety
/// As for [`data_of`], writable until completion.
unsafe fn out_of(s: &Staged) -> MpiResult<UserBuf> {
    // SAFETY: forwarded.
    unsafe { user_buf(s.ptr(), s.count(), s.dt()) }
}

/// `blocks` instances of a staged buffer's count, in bytes (one block and
/// all of them).
fn staged_blocks(s: &Staged, blocks: u32) -> MpiResult<(usize, usize)> {
    block_bytes(s.count(), s.dt(), blocks)
}

// ---- barrier, broadcast, reductions --------------------------------------

/// # Safety
/// A `How::Request` pointer is null or writable.
pub(in crate::abi) unsafe fn barrier(comm: MPI_Comm, how: How) -> c_int {
    let name = name_of(how, "MPI_Barrier", "MPI_Ibarrier");
    staged::collective_on(
        name,
        comm,
        how,
        |_, _| Ok(Vec::new()),
        |e, ci, _| e.inter_ibarrier(ci),
    )
}

/// # Safety
/// At the root, `buffer` holds `count` elements of `datatype`; in the other
/// group it has room for them until completion. A `How::Request` pointer
/// is null or writable.
pub(in crate::abi) unsafe fn bcast(
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Bcast", "MPI_Ibcast");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            let how = match e.inter_root(ci, root)? {
                InterRoot::Idle => return Ok(vec![Staged::pass(buffer, count, datatype)]),
                InterRoot::Root => Use::INPUT,
                InterRoot::Remote(_) => Use::OUTPUT,
            };
            // SAFETY: the caller's buffer, valid until completion.
            Ok(vec![unsafe { Staged::new(buffer, count, datatype, how)? }])
        },
        |e, ci, a| {
            let root = e.inter_root(ci, root)?;
            let buf = match root {
                InterRoot::Idle => UserBuf::EMPTY,
                // SAFETY: the staged buffer lives until completion.
                _ => unsafe { out_of(&a[0])? },
            };
            e.inter_ibcast(ci, buf, root)
        },
    )
}

/// # Safety
/// The buffers hold `count` elements of `datatype` where significant,
/// until completion. A `How::Request` pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Reduce", "MPI_Ireduce");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            // SAFETY: the caller's buffers, valid until completion where
            // significant; no data is touched for an empty one.
            let s = unsafe {
                match e.inter_root(ci, root)? {
                    // Only for the datatype the operation combines.
                    InterRoot::Idle => reduce_arg(std::ptr::null(), 0, datatype, op, Use::INPUT)?,
                    InterRoot::Root => reduce_arg(recvbuf, count, datatype, op, Use::OUTPUT)?,
                    InterRoot::Remote(_) => reduce_arg(sendbuf, count, datatype, op, Use::INPUT)?,
                }
            };
            Ok(vec![s])
        },
        |e, ci, a| {
            let root = e.inter_root(ci, root)?;
            let s = &a[0];
            let comb = super::super::ops::combiner(s.op_dt(), op)?;
            match root {
                InterRoot::Idle => e.inter_ireduce(ci, Vec::new(), None, root, comb),
                InterRoot::Root => {
                    no_in_place(s.ptr(), "the receive buffer")?;
                    // SAFETY: the staged buffer lives until completion.
                    let out = unsafe { out_of(s)? };
                    e.inter_ireduce(ci, Vec::new(), Some(out), root, comb)
                }
                InterRoot::Remote(_) => {
                    no_in_place(s.ptr(), "the send buffer")?;
                    // SAFETY: the staged buffer, valid for the call.
                    let data = unsafe { data_of(s)? };
                    e.inter_ireduce(ci, data, None, root, comb)
                }
            }
        },
    )
}

/// # Safety
/// The buffers hold `count` elements of `datatype` until completion. A
/// `How::Request` pointer is null or writable.
pub(in crate::abi) unsafe fn allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Allreduce", "MPI_Iallreduce");
    staged::collective_on(
        name,
        comm,
        how,
        |_, _| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    reduce_arg(sendbuf, count, datatype, op, Use::INPUT)?,
                    reduce_arg(recvbuf, count, datatype, op, Use::OUTPUT)?,
                ])
            }
        },
        |e, ci, a| {
            let comb = super::super::ops::combiner(a[0].op_dt(), op)?;
            // SAFETY: the staged buffers live until completion.
            let (data, out) = unsafe { (data_of(&a[0])?, out_of(&a[1])?) };
            e.inter_iallreduce(ci, data, out, comb)
        },
    )
}

/// # Safety
/// `sendbuf` holds the sum of `recvcounts` (one per member of this group)
/// elements of `datatype`; `recvbuf` has room for this member's count,
/// until completion. A `How::Request` pointer is null or writable.
pub(in crate::abi) unsafe fn reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Reduce_scatter", "MPI_Ireduce_scatter");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let (rank, size) = local(e, ci)?;
            // SAFETY: one count per member of this group.
            let counts = unsafe { &recvcounts.read(size, "recvcounts")? };
            let elems = counts.iter().try_fold(0i64, |a, &n| {
                if n < 0 {
                    return Err(MpiError::count(n));
                }
                a.checked_add(n)
                    .ok_or_else(|| too_large("the sum of recvcounts"))
            })?;
            let mine = counts[rank as usize];
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    reduce_arg(sendbuf, elems, datatype, op, Use::INPUT)?,
                    reduce_arg(recvbuf, mine, datatype, op, Use::OUTPUT)?,
                ])
            }
        },
        |e, ci, a| {
            let (_, size) = local(e, ci)?;
            // Each member's block in the staged type: `per` of its
            // elements (or bytes) per element of the caller's type.
            let (per, esize) = (a[0].per(), types::type_size(a[0].dt())?);
            // SAFETY: one count per member of this group (checked when staging).
            let bytes = unsafe { &recvcounts.read(size, "recvcounts")? }
                .iter()
                .map(|&n| {
                    let n = (n as u64)
                        .checked_mul(per)
                        .and_then(|n| c_int::try_from(n).ok())
                        .ok_or_else(|| too_large("recvcounts"))?;
                    C::elem_bytes(n, esize)
                })
                .collect::<MpiResult<Vec<_>>>()?;
            // SAFETY: the staged buffers live until completion.
            unsafe { reduce_scatter_start(e, ci, a, bytes, op) }
        },
    )
}

/// # Safety
/// `sendbuf` holds `recvcount` elements of `datatype` per member of this
/// group; `recvbuf` has room for `recvcount`, until completion. A
/// `How::Request` pointer is null or writable.
pub(in crate::abi) unsafe fn reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let (_, size) = local(e, ci)?;
            let all = Use::INPUT.blocks(size);
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    reduce_arg(sendbuf, recvcount, datatype, op, all)?,
                    reduce_arg(recvbuf, recvcount, datatype, op, Use::OUTPUT)?,
                ])
            }
        },
        |e, ci, a| {
            let (_, size) = local(e, ci)?;
            let (blk, _) = staged_blocks(&a[1], size)?;
            // SAFETY: the staged buffers live until completion.
            unsafe { reduce_scatter_start(e, ci, a, vec![blk; size as usize], op) }
        },
    )
}

/// Starts a reduce-scatter on the staged (send, receive) buffers `a`,
/// with each member's block `counts` bytes long.
///
/// # Safety
/// The staged buffers live until completion.
unsafe fn reduce_scatter_start(
    e: &mut Engine,
    ci: usize,
    a: &[Staged],
    counts: Vec<usize>,
    op: MPI_Op,
) -> MpiResult<usize> {
    let comb = super::super::ops::combiner(a[0].op_dt(), op)?;
    let total = counts
        .iter()
        .try_fold(0usize, |s, &n| s.checked_add(n))
        .ok_or_else(|| too_large("the sum of recvcounts"))?;
    // SAFETY: forwarded; the send buffer holds every member's block.
    let (data, out) = unsafe { (C::bytes_buf(a[0].ptr(), total)?, out_of(&a[1])?) };
    e.inter_ireduce_scatter(ci, data.as_slice().to_vec(), counts, out, comb)
}

// ---- rooted: gather and scatter -------------------------------------------

/// The one buffer a rooted collective stages: `root_side` at the root,
/// `remote_side` in the other group, nothing for the rest of the root's
/// group.
fn rooted(
    e: &Engine,
    ci: usize,
    root: c_int,
    root_side: impl FnOnce(u32) -> MpiResult<Staged>,
    remote_side: impl FnOnce() -> MpiResult<Staged>,
) -> MpiResult<Vec<Staged>> {
    Ok(match e.inter_root(ci, root)? {
        InterRoot::Idle => Vec::new(),
        InterRoot::Root => vec![root_side(remote_size(e, ci)?)?],
        InterRoot::Remote(_) => vec![remote_side()?],
    })
}

/// # Safety
/// The buffers are valid where significant until completion: the root's
/// receive buffer holds one block per member of the other group. A
/// `How::Request` pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn gather(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Gather", "MPI_Igather");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            rooted(
                e,
                ci,
                root,
                // SAFETY: the caller's buffers, valid until completion.
                |nr| unsafe { Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT.blocks(nr)) },
                // SAFETY: as above.
                || unsafe { Staged::new(sendbuf, sendcount, sendtype, Use::INPUT) },
            )
        },
        |e, ci, a| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_igather(ci, Vec::new(), None, root),
                InterRoot::Root => {
                    no_in_place(a[0].ptr(), "the receive buffer")?;
                    let (blk, all) = staged_blocks(&a[0], remote_size(e, ci)?)?;
                    // SAFETY: the staged buffer holds every block until completion.
                    let out = unsafe { C::bytes_buf(a[0].ptr(), all)? };
                    e.inter_igather(ci, Vec::new(), Some((out, blk)), root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(a[0].ptr(), "the send buffer")?;
                    // SAFETY: the staged buffer, valid for the call.
                    let data = unsafe { data_of(&a[0])? };
                    e.inter_igather(ci, data, None, root)
                }
            }
        },
    )
}

/// # Safety
/// As for [`gather`], with the root's blocks at `displs` of `recvcounts`.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn gatherv(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Gatherv", "MPI_Igatherv");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            rooted(
                e,
                ci,
                root,
                // SAFETY: the caller's buffer and arrays, valid until completion.
                |nr| unsafe {
                    Staged::new_v(recvbuf, recvcounts, displs, nr, recvtype, Use::OUTPUT)
                },
                // SAFETY: as above.
                || unsafe { Staged::new(sendbuf, sendcount, sendtype, Use::INPUT) },
            )
        },
        |e, ci, a| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_igatherv(ci, Vec::new(), None, root),
                InterRoot::Root => {
                    let r = &a[0];
                    no_in_place(r.ptr(), "the receive buffer")?;
                    let nr = remote_size(e, ci)?;
                    // SAFETY: the root's arrays (or their staged forms) hold
                    // one entry per member of the other group.
                    let recv = unsafe {
                        layout_v(
                            r.counts(recvcounts),
                            r.displs(displs),
                            nr,
                            ["recvcounts", "displs"],
                            r.dt(),
                        )?
                    };
                    // SAFETY: the staged buffer covers every block until completion.
                    let out = unsafe { C::bytes_buf(r.ptr(), recv.extent())? };
                    e.inter_igatherv(ci, Vec::new(), Some((out, recv)), root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(a[0].ptr(), "the send buffer")?;
                    // SAFETY: the staged buffer, valid for the call.
                    let data = unsafe { data_of(&a[0])? };
                    e.inter_igatherv(ci, data, None, root)
                }
            }
        },
    )
}

/// # Safety
/// The buffers are valid where significant until completion: the root's
/// send buffer holds one block per member of the other group. A
/// `How::Request` pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn scatter(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Scatter", "MPI_Iscatter");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            rooted(
                e,
                ci,
                root,
                // SAFETY: the caller's buffers, valid until completion.
                |nr| unsafe { Staged::new(sendbuf, sendcount, sendtype, Use::INPUT.blocks(nr)) },
                // SAFETY: as above.
                || unsafe { Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT) },
            )
        },
        |e, ci, a| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_iscatter(ci, Vec::new(), 0, None, root),
                InterRoot::Root => {
                    no_in_place(a[0].ptr(), "the send buffer")?;
                    let (blk, all) = staged_blocks(&a[0], remote_size(e, ci)?)?;
                    // SAFETY: the staged buffer holds every block.
                    let data = unsafe { C::bytes_buf(a[0].ptr(), all)? }
                        .as_slice()
                        .to_vec();
                    e.inter_iscatter(ci, data, blk, None, root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(a[0].ptr(), "the receive buffer")?;
                    // SAFETY: the staged buffer lives until completion.
                    let out = unsafe { out_of(&a[0])? };
                    e.inter_iscatter(ci, Vec::new(), 0, Some(out), root)
                }
            }
        },
    )
}

/// # Safety
/// As for [`scatter`], with the root's blocks at `displs` of `sendcounts`.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn scatterv(
    sendbuf: *const c_void,
    sendcounts: Ints,
    displs: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Scatterv", "MPI_Iscatterv");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            rooted(
                e,
                ci,
                root,
                // SAFETY: the caller's buffer and arrays, valid until completion.
                |nr| unsafe {
                    Staged::new_v(sendbuf, sendcounts, displs, nr, sendtype, Use::INPUT)
                },
                // SAFETY: as above.
                || unsafe { Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT) },
            )
        },
        |e, ci, a| {
            let root = e.inter_root(ci, root)?;
            match root {
                InterRoot::Idle => e.inter_iscatterv(ci, Vec::new(), None, None, root),
                InterRoot::Root => {
                    let s = &a[0];
                    no_in_place(s.ptr(), "the send buffer")?;
                    let nr = remote_size(e, ci)?;
                    // SAFETY: the root's arrays (or their staged forms) hold
                    // one entry per member of the other group.
                    let send = unsafe {
                        layout_v(
                            s.counts(sendcounts),
                            s.displs(displs),
                            nr,
                            ["sendcounts", "displs"],
                            s.dt(),
                        )?
                    };
                    // SAFETY: the staged buffer covers every block.
                    let data = unsafe { C::bytes_buf(s.ptr(), send.extent())? }
                        .as_slice()
                        .to_vec();
                    e.inter_iscatterv(ci, data, Some(send), None, root)
                }
                InterRoot::Remote(_) => {
                    no_in_place(a[0].ptr(), "the receive buffer")?;
                    // SAFETY: the staged buffer lives until completion.
                    let out = unsafe { out_of(&a[0])? };
                    e.inter_iscatterv(ci, Vec::new(), None, Some(out), root)
                }
            }
        },
    )
}

// ---- between the groups: allgather and alltoall ---------------------------

/// # Safety
/// The receive buffer holds one block per member of the other group, until
/// completion. A `How::Request` pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn allgather(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Allgather", "MPI_Iallgather");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT)?,
                    Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT.blocks(nr))?,
                ])
            }
        },
        |e, ci, a| {
            let nr = remote_size(e, ci)?;
            let (blk, all) = staged_blocks(&a[1], nr)?;
            let recv = Layout::uniform(nr, blk).map_err(|_| too_large("recvcount"))?;
            // SAFETY: the staged buffers live until completion.
            let (data, out) = unsafe { (data_of(&a[0])?, C::bytes_buf(a[1].ptr(), all)?) };
            e.inter_iallgatherv(ci, data, recv, out)
        },
    )
}

/// # Safety
/// As for [`allgather`], with blocks at `displs` of `recvcounts`.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn allgatherv(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Allgatherv", "MPI_Iallgatherv");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT)?,
                    Staged::new_v(recvbuf, recvcounts, displs, nr, recvtype, Use::OUTPUT)?,
                ])
            }
        },
        |e, ci, a| {
            let nr = remote_size(e, ci)?;
            let r = &a[1];
            // SAFETY: the arrays (or their staged forms) hold one entry per
            // member of the other group.
            let recv = unsafe {
                layout_v(
                    r.counts(recvcounts),
                    r.displs(displs),
                    nr,
                    ["recvcounts", "displs"],
                    r.dt(),
                )?
            };
            // SAFETY: the staged buffers live until completion.
            let (data, out) = unsafe { (data_of(&a[0])?, C::bytes_buf(r.ptr(), recv.extent())?) };
            e.inter_iallgatherv(ci, data, recv, out)
        },
    )
}

/// # Safety
/// Both buffers hold one block per member of the other group, until
/// completion. A `How::Request` pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn alltoall(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Alltoall", "MPI_Ialltoall");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new(sendbuf, sendcount, sendtype, Use::INPUT.blocks(nr))?,
                    Staged::new(recvbuf, recvcount, recvtype, Use::OUTPUT.blocks(nr))?,
                ])
            }
        },
        |e, ci, a| {
            let nr = remote_size(e, ci)?;
            let (sblk, sall) = staged_blocks(&a[0], nr)?;
            let (rblk, rall) = staged_blocks(&a[1], nr)?;
            let send = Layout::uniform(nr, sblk).map_err(|_| too_large("sendcount"))?;
            let recv = Layout::uniform(nr, rblk).map_err(|_| too_large("recvcount"))?;
            // SAFETY: the staged buffers live until completion.
            let (data, out) = unsafe {
                (
                    C::bytes_buf(a[0].ptr(), sall)?.as_slice().to_vec(),
                    C::bytes_buf(a[1].ptr(), rall)?,
                )
            };
            e.inter_ialltoallv(ci, data, send, recv, out)
        },
    )
}

/// # Safety
/// The buffers hold the blocks their counts and displacements describe
/// (one per member of the other group), until completion. A
/// `How::Request` pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn alltoallv(
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Alltoallv", "MPI_Ialltoallv");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new_v(sendbuf, sendcounts, sdispls, nr, sendtype, Use::INPUT)?,
                    Staged::new_v(recvbuf, recvcounts, rdispls, nr, recvtype, Use::OUTPUT)?,
                ])
            }
        },
        |e, ci, a| {
            let nr = remote_size(e, ci)?;
            let (s, r) = (&a[0], &a[1]);
            // SAFETY: the arrays (or their staged forms) hold one entry per
            // member of the other group.
            let (send, recv) = unsafe {
                (
                    layout_v(
                        s.counts(sendcounts),
                        s.displs(sdispls),
                        nr,
                        ["sendcounts", "sdispls"],
                        s.dt(),
                    )?,
                    layout_v(
                        r.counts(recvcounts),
                        r.displs(rdispls),
                        nr,
                        ["recvcounts", "rdispls"],
                        r.dt(),
                    )?,
                )
            };
            // SAFETY: the staged buffers cover their blocks until completion.
            let (data, out) = unsafe {
                (
                    C::bytes_buf(s.ptr(), send.extent())?.as_slice().to_vec(),
                    C::bytes_buf(r.ptr(), recv.extent())?,
                )
            };
            e.inter_ialltoallv(ci, data, send, recv, out)
        },
    )
}

/// # Safety
/// As for [`alltoallv`], with per-block types and byte displacements.
#[allow(clippy::too_many_arguments)]
pub(in crate::abi) unsafe fn alltoallw(
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    how: How,
) -> c_int {
    let name = name_of(how, "MPI_Alltoallw", "MPI_Ialltoallw");
    staged::collective_on(
        name,
        comm,
        how,
        |e, ci| {
            no_in_place(sendbuf, "the send buffer")?;
            no_in_place(recvbuf, "the receive buffer")?;
            let nr = remote_size(e, ci)?;
            // SAFETY: the caller's buffers and arrays, valid until completion.
            unsafe {
                Ok(vec![
                    Staged::new_w(sendbuf, sendcounts, sdispls, sendtypes, nr, Use::INPUT)?,
                    Staged::new_w(recvbuf, recvcounts, rdispls, recvtypes, nr, Use::OUTPUT)?,
                ])
            }
        },
        |e, ci, a| {
            let nr = remote_size(e, ci)?;
            let (s, r) = (&a[0], &a[1]);
            // SAFETY: the arrays (or their staged forms) hold one entry per
            // member of the other group.
            let (send, recv) = unsafe {
                (
                    layout_w(
                        &s.counts(sendcounts).read(nr, "sendcounts")?,
                        &s.displs(sdispls).read(nr, "sdispls")?,
                        array(s.types(sendtypes), nr, "sendtypes")?,
                    )?,
                    layout_w(
                        &r.counts(recvcounts).read(nr, "recvcounts")?,
                        &r.displs(rdispls).read(nr, "rdispls")?,
                        array(r.types(recvtypes), nr, "recvtypes")?,
                    )?,
                )
            };
            // SAFETY: the staged buffers cover their blocks until completion.
            let (data, out) = unsafe {
                (
                    C::bytes_buf(s.ptr(), send.extent())?.as_slice().to_vec(),
                    C::bytes_buf(r.ptr(), recv.extent())?,
                )
            };
            e.inter_ialltoallv(ci, data, send, recv, out)
        },
    )
}
