//! Collective entry points: argument checks, MPI_IN_PLACE, and the mapping
//! from (buffer, count, datatype) arguments to the byte blocks the engine's
//! collective machines work on. Every collective starts a request in the
//! engine; the blocking form waits for it, the `I` form returns its handle.
//!
//! Barrier, broadcast and reduce live here; the rest in the submodules.

pub(super) mod exchange;
pub(super) mod rooted;
pub(super) mod scans;

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Op, MPI_Request};
use super::datatype::staging::{self as staged, Mode, Staged, Use};
use super::requests::handle_of;
use super::userbuf::UserBuf;
use super::{call, comm_idx, types, user_buf};
use crate::engine::call_check::CallKind;
use crate::engine::coll::{Combiner, MakeCombiner};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use lanai_coll::Layout;
use std::ffi::c_void;
use std::os::raw::c_int;

#[inline(always)]
fn check_root(e: &Engine, comm: usize, root: c_int) -> MpiResult<u32> {
    crate::engine::intercomm::reject(e.comms.get(comm)?)?;
    let size = e.comms.get(comm)?.size;
    if root < 0 || root as u32 >= size {
        return Err(MpiError::new(
            c::MPI_ERR_ROOT,
            format!("invalid root {root} (communicator size {size})"),
        ));
    }
    Ok(root as u32)
}

/// The communicator's engine index, this rank and the size.
fn comm_info(e: &Engine, comm: MPI_Comm) -> MpiResult<(usize, u32, u32)> {
    let ci = comm_idx(comm)?;
    let cm = e.comms.get(ci)?;
    Ok((ci, cm.rank, cm.size))
}

#[inline(always)]
fn combiner(dt: MPI_Datatype, op: MPI_Op) -> MpiResult<Combiner> {
    super::ops::combiner(dt, op)
}

/// A reduction's operation and the datatype it applies to, as the entry
/// point got them: the engine builds the combiner only where it combines.
#[derive(Clone, Copy)]
struct OpArg {
    dt: MPI_Datatype,
    op: MPI_Op,
}

impl MakeCombiner for OpArg {
    #[inline(always)]
    fn make(self) -> MpiResult<Combiner> {
        combiner(self.dt, self.op)
    }
}

fn in_place(p: *const c_void) -> bool {
    p as usize == c::MPI_IN_PLACE
}

/// Fails with `MPI_ERR_ARG` when `p` is `MPI_IN_PLACE` where it may not be.
pub(in crate::abi) fn not_in_place(p: *const c_void, what: &str) -> MpiResult<()> {
    if in_place(p) {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("MPI_IN_PLACE is not allowed as {what}"),
        ));
    }
    Ok(())
}

/// `count` elements of `size` bytes, each factor checked.
pub(in crate::abi) fn elem_bytes(count: impl Into<MPI_Count>, size: usize) -> MpiResult<usize> {
    let count: MPI_Count = count.into();
    if count < 0 {
        return Err(MpiError::count(count));
    }
    usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| MpiError::new(c::MPI_ERR_COUNT, format!("count {count} is too large")))
}

/// `count` elements of `dt` for each of `n` ranks, in bytes.
pub(in crate::abi) fn block_bytes(
    count: impl Into<MPI_Count>,
    dt: MPI_Datatype,
    n: u32,
) -> MpiResult<(usize, usize)> {
    let count: MPI_Count = count.into();
    let blk = elem_bytes(count, types::type_size(dt)?)?;
    let all = blk
        .checked_mul(n as usize)
        .ok_or_else(|| MpiError::new(c::MPI_ERR_COUNT, format!("count {count} is too large")))?;
    Ok((blk, all))
}

/// A user buffer of `len` bytes.
///
/// # Safety
/// `ptr` must be valid for `len` bytes for the operation's lifetime.
pub(in crate::abi) unsafe fn bytes_buf(ptr: *const c_void, len: usize) -> MpiResult<UserBuf> {
    if ptr.is_null() && len > 0 {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("NULL buffer for {len} bytes"),
        ));
    }
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { UserBuf::new(ptr as *mut u8, len) })
}

/// The caller's array of `n` values (counts, displacements, types).
///
/// # Safety
/// `p` is null or points to at least `n` values valid for the call.
pub(in crate::abi) unsafe fn array<'a, T>(p: *const T, n: u32, what: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: per the contract, `n` readable values.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

pub(in crate::abi) fn displ_bytes(d: impl Into<i64>, size: usize) -> MpiResult<usize> {
    let d: i64 = d.into();
    if d < 0 {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("negative displacement {d} is not supported"),
        ));
    }
    usize::try_from(d)
        .ok()
        .and_then(|d| d.checked_mul(size))
        .ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, format!("displacement {d} is too large")))
}

fn layout(counts: Vec<usize>, displs: Vec<usize>) -> MpiResult<Layout> {
    Layout::new(counts, displs).map_err(layout_err)
}

fn layout_err(e: lanai_coll::CollError) -> MpiError {
    MpiError::new(c::MPI_ERR_ARG, format!("counts and displacements: {e}"))
}

/// Blocks from the caller's per-rank `counts` and `displs` (`n` of each,
/// named `names` in errors), both in elements of `dt`: read straight into
/// the layout, with no copy of the arrays on the way.
///
/// # Safety
/// `counts` and `displs` are null or point to at least `n` values each.
pub(in crate::abi) unsafe fn layout_v(
    counts: super::ints::Ints,
    displs: super::ints::Ints,
    n: u32,
    names: [&str; 2],
    dt: MPI_Datatype,
) -> MpiResult<Layout> {
    let size = types::type_size(dt)?;
    // SAFETY: forwarded from this function's contract.
    let (cs, ds) = unsafe { (counts.slice(n, names[0])?, displs.slice(n, names[1])?) };
    // One plain loop into one allocation: a small gatherv's root builds
    // this on every call.
    Layout::from_blocks(n as usize, |i| {
        Ok((elem_bytes(cs.get(i), size)?, displ_bytes(ds.get(i), size)?))
    })?
    .map_err(layout_err)
}

/// Blocks from per-rank counts in elements of per-rank types and
/// displacements already in bytes (alltoallw).
pub(in crate::abi) fn layout_w<C: Copy + Into<i64>, D: Copy + Into<i64>>(
    counts: &[C],
    displs: &[D],
    dts: &[MPI_Datatype],
) -> MpiResult<Layout> {
    let c = counts
        .iter()
        .zip(dts)
        .map(|(&n, &t)| {
            let n: i64 = n.into();
            // A type of an empty block is not significant.
            if n == 0 {
                return Ok(0);
            }
            elem_bytes(n, types::type_size(t)?)
        })
        .collect::<MpiResult<_>>()?;
    let d = displs
        .iter()
        .map(|&d| displ_bytes(d, 1))
        .collect::<MpiResult<_>>()?;
    layout(c, d)
}

/// Copies this rank's send data (`count` elements of `dt` at `p`).
///
/// # Safety
/// `p` must point to `count` elements of `dt`.
pub(in crate::abi) unsafe fn send_data(
    p: *const c_void,
    count: impl Into<MPI_Count>,
    dt: MPI_Datatype,
) -> MpiResult<Vec<u8>> {
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { user_buf(p, count, dt)? }.as_slice().to_vec())
}

/// Copies `range` of `buf`, or fails if the buffer is shorter (a bug guard).
fn slice_of(buf: &UserBuf, range: std::ops::Range<usize>) -> MpiResult<Vec<u8>> {
    buf.as_slice()
        .get(range)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| MpiError::internal("in-place block outside the receive buffer"))
}

/// Fails with `MPI_ERR_TRUNCATE` unless this rank's send and receive sizes agree.
fn same_len(send: usize, recv: usize) -> MpiResult<()> {
    if send != recv {
        return Err(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!("this rank sends {send} bytes to itself but expects {recv}"),
        ));
    }
    Ok(())
}

/// Runs a blocking collective: `start` posts it, then this waits.
fn blocking(
    name: &str,
    comm: MPI_Comm,
    start: impl FnOnce(&mut Engine) -> MpiResult<usize>,
) -> c_int {
    call(name, Some(comm), |e| {
        let r = start(e).and_then(|req| e.finish_coll(req));
        e.leave_call(r.as_ref().err().map(|e| e.class));
        r
    })
}

/// Runs a nonblocking collective: `start` posts it and its handle goes to
/// `*request`.
///
/// # Safety
/// `request` is null or points to a writable `MPI_Request`.
unsafe fn nonblocking(
    name: &str,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    start: impl FnOnce(&mut Engine) -> MpiResult<usize>,
) -> c_int {
    call(name, Some(comm), |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        let req = start(e);
        let req = req.inspect_err(|_| e.drop_call())?;
        e.adopt_call(req);
        // SAFETY: checked non-null; writable per the contract.
        unsafe { *request = handle_of(req) };
        Ok(())
    })
}

// ---- barrier and broadcast ------------------------------------------------

mpi_fn! { MPI_Barrier / PMPI_Barrier (comm: MPI_Comm) -> c_int {
    // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::barrier(comm, crate::abi::intercomm::How::Wait) }; }
    blocking("MPI_Barrier", comm, |e| {
        let ci = comm_idx(comm)?;
        e.enter_call(true, ci, CallKind::Barrier, None, 0)?;
        e.start_barrier(ci, true)
    })
}}

mpi_fn! { MPI_Ibarrier / PMPI_Ibarrier (comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
    if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::barrier(comm, crate::abi::intercomm::How::Request(request)) }; }
    // SAFETY: `request` is the caller's request argument.
    unsafe {
        nonblocking("MPI_Ibarrier", comm, request, |e| {
            let ci = comm_idx(comm)?;
            e.enter_call(false, ci, CallKind::Barrier, None, 0)?;
            e.ibarrier(ci)
        })
    }
}}

/// # Safety
/// `buffer` holds `count` elements of `datatype` until completion.
unsafe fn bcast(
    e: &mut Engine,
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let ci = comm_idx(comm)?;
    let root = check_root(e, ci, root)?;
    // SAFETY: forwarded from this function's contract.
    let b = unsafe { user_buf(buffer, count, datatype)? };
    e.enter_call(blocking, ci, CallKind::Bcast, Some(root), b.len())?;
    e.start_user_bcast(ci, b, root, blocking)
}

/// Broadcast, blocking or not, with the buffer staged for derived types.
///
/// # Safety
/// `buffer` holds `count` elements of `datatype` until completion.
unsafe fn bcast_staged(
    name: &str,
    mode: Mode,
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[datatype]) {
        // SAFETY: the caller's buffer, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            bcast(e, buffer, count, datatype, root, comm, blocking)
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |rank, _| {
            let how = if rank as c_int == root {
                Use::INPUT
            } else {
                Use::OUTPUT
            };
            // SAFETY: the caller's buffer, valid until completion.
            Ok([unsafe { Staged::new(buffer, count, datatype, how)? }])
        },
        |e, a| {
            // SAFETY: the staged buffer lives until the collective completes.
            unsafe { bcast(e, a[0].ptr(), a[0].count(), a[0].dt(), root, comm, blocking) }
        },
    )
}

macro_rules! bcast_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buffer: *mut c_void, count: $count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::bcast(buffer, count.into(), datatype, root, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffer, valid for the call.
            unsafe { bcast_staged(stringify!($name), Mode::Wait, buffer, count.into(), datatype, root, comm) }
        }}
    };
}

bcast_entry!(MPI_Bcast, PMPI_Bcast, c_int);
bcast_entry!(MPI_Bcast_c, PMPI_Bcast_c, MPI_Count);

macro_rules! ibcast_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buffer: *mut c_void, count: $count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::bcast(buffer, count.into(), datatype, root, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffer valid until the request completes.
            unsafe { bcast_staged(stringify!($name), Mode::Request(request), buffer, count.into(), datatype, root, comm) }
        }}
    };
}

ibcast_entry!(MPI_Ibcast, PMPI_Ibcast, c_int);
ibcast_entry!(MPI_Ibcast_c, PMPI_Ibcast_c, MPI_Count);

// ---- reduce and allreduce -------------------------------------------------

/// # Safety
/// The buffers hold `count` elements of `datatype` (where significant)
/// until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    e: &mut Engine,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    (op, op_dt): (MPI_Op, MPI_Datatype),
    root: c_int,
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let ci = comm_idx(comm)?;
    let root = check_root(e, ci, root)?;
    let is_root = e.comms.get(ci)?.rank == root;
    // The root builds the combiner, which checks the operation on every
    // path; the others only check it (see `Engine::start_reduce`).
    if !is_root {
        super::ops::check_combiner(op_dt, op)?;
    }
    let out = if is_root {
        not_in_place(recvbuf, "the receive buffer")?;
        // SAFETY: the root's receive buffer, per the contract.
        Some(unsafe { user_buf(recvbuf, count, datatype)? })
    } else {
        None
    };
    // MPI_IN_PLACE is only meaningful at the root, where the data is in recvbuf.
    let data = match (in_place(sendbuf), out) {
        (true, Some(o)) => o,
        (true, None) => {
            return Err(MpiError::new(
                c::MPI_ERR_BUFFER,
                "MPI_IN_PLACE is only valid at the root",
            ))
        }
        // SAFETY: the send buffer, valid and unchanged until completion.
        (false, _) => unsafe { user_buf(sendbuf, count, datatype)? },
    };
    e.enter_call(blocking, ci, CallKind::Reduce, Some(root), data.len())?;
    e.start_reduce(ci, data, out, root, OpArg { dt: op_dt, op }, blocking)
}

/// A reduction's buffer argument: with a predefined operation a derived
/// type made of one basic kind is reduced as that kind; for a user
/// operation a non-contiguous type travels packed, and the operation sees
/// the caller's datatype and layout again (`Staged::op_dt`, abi/ops.rs).
///
/// # Safety
/// As for [`Staged::new`].
pub(super) unsafe fn reduce_arg(
    p: *const c_void,
    count: impl Into<MPI_Count>,
    dt: MPI_Datatype,
    op: MPI_Op,
    how: Use,
) -> MpiResult<Staged> {
    let how = if types::op_kind(op).is_some() {
        how.reduce()
    } else {
        how
    };
    // SAFETY: forwarded.
    unsafe { Staged::new(p, count, dt, how) }
}

/// Reduce, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers hold `count` elements of `datatype` (where significant)
/// until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if types::predefined(datatype).is_some() {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            reduce(
                e,
                sendbuf,
                recvbuf,
                count,
                datatype,
                (op, datatype),
                root,
                comm,
                blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |rank, _| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
                    reduce_arg(sendbuf, count, datatype, op, Use::INPUT)?,
                    if rank as c_int == root {
                        reduce_arg(recvbuf, count, datatype, op, Use::OUTPUT)?
                    } else {
                        Staged::pass(recvbuf, count, datatype)
                    },
                ])
            }
        },
        |e, a| {
            let lead = if in_place(sendbuf) { &a[1] } else { &a[0] };
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                reduce(
                    e,
                    a[0].ptr(),
                    a[1].ptr(),
                    lead.count(),
                    lead.dt(),
                    (op, lead.op_dt()),
                    root,
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! reduce_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::reduce(sendbuf, recvbuf, count.into(), datatype, op, root, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { reduce_staged(stringify!($name), Mode::Wait, sendbuf, recvbuf, count.into(), datatype, op, root, comm) }
        }}
    };
}

reduce_entry!(MPI_Reduce, PMPI_Reduce, c_int);
reduce_entry!(MPI_Reduce_c, PMPI_Reduce_c, MPI_Count);

macro_rules! ireduce_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::reduce(sendbuf, recvbuf, count.into(), datatype, op, root, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { reduce_staged(stringify!($name), Mode::Request(request), sendbuf, recvbuf, count.into(), datatype, op, root, comm) }
        }}
    };
}

ireduce_entry!(MPI_Ireduce, PMPI_Ireduce, c_int);
ireduce_entry!(MPI_Ireduce_c, PMPI_Ireduce_c, MPI_Count);

/// # Safety
/// The buffers hold `count` elements of `datatype` until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn allreduce(
    e: &mut Engine,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    (op, op_dt): (MPI_Op, MPI_Datatype),
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let ci = comm_idx(comm)?;
    let comb = combiner(op_dt, op)?;
    not_in_place(recvbuf, "the receive buffer")?;
    // SAFETY: the receive buffer, per the contract.
    let out = unsafe { user_buf(recvbuf, count, datatype)? };
    let data = if in_place(sendbuf) {
        out
    } else {
        // SAFETY: the send buffer, valid and unchanged until completion.
        unsafe { user_buf(sendbuf, count, datatype)? }
    };
    e.enter_call(blocking, ci, CallKind::Allreduce, None, data.len())?;
    if e.allreduce_through_root(ci, data.len(), blocking)? {
        return e.start_allreduce_through_root(ci, data, out, OpArg { dt: op_dt, op }, blocking);
    }
    e.start_allreduce(ci, data, out, comb, blocking)
}

/// Allreduce, blocking or not, with the buffers staged for derived types.
///
/// # Safety
/// The buffers hold `count` elements of `datatype` until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn allreduce_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    // A blocking call may set up the shared-memory path on the way.
    let blocking = matches!(mode, Mode::Wait);
    if types::predefined(datatype).is_some() {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            allreduce(
                e,
                sendbuf,
                recvbuf,
                count,
                datatype,
                (op, datatype),
                comm,
                blocking,
            )
        });
    }
    staged::collective(
        name,
        comm,
        mode,
        |_, _| {
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
                    reduce_arg(sendbuf, count, datatype, op, Use::INPUT)?,
                    reduce_arg(recvbuf, count, datatype, op, Use::OUTPUT)?,
                ])
            }
        },
        |e, a| {
            let lead = if in_place(sendbuf) { &a[1] } else { &a[0] };
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                allreduce(
                    e,
                    a[0].ptr(),
                    a[1].ptr(),
                    lead.count(),
                    lead.dt(),
                    (op, lead.op_dt()),
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! allreduce_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allreduce(sendbuf, recvbuf, count.into(), datatype, op, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { allreduce_staged(stringify!($name), Mode::Wait, sendbuf, recvbuf, count.into(), datatype, op, comm) }
        }}
    };
}

allreduce_entry!(MPI_Allreduce, PMPI_Allreduce, c_int);
allreduce_entry!(MPI_Allreduce_c, PMPI_Allreduce_c, MPI_Count);

macro_rules! iallreduce_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::allreduce(sendbuf, recvbuf, count.into(), datatype, op, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { allreduce_staged(stringify!($name), Mode::Request(request), sendbuf, recvbuf, count.into(), datatype, op, comm) }
        }}
    };
}

iallreduce_entry!(MPI_Iallreduce, PMPI_Iallreduce, c_int);
iallreduce_entry!(MPI_Iallreduce_c, PMPI_Iallreduce_c, MPI_Count);
