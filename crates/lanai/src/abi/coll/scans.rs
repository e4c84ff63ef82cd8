//! Reductions whose result is split or prefixed: reduce-scatter (with
//! per-rank counts and with equal blocks), inclusive and exclusive scan.

use super::{bytes_buf, combiner, comm_info, elem_bytes, in_place, not_in_place, reduce_arg};
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Op, MPI_Request};
use crate::abi::datatype::staging::{self as staged, Mode, Use};
use crate::abi::ints::Ints;
use crate::abi::{types, user_buf};
use crate::engine::call_check::CallKind;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

fn too_large() -> MpiError {
    MpiError::new(c::MPI_ERR_COUNT, "the counts add up to more than memory")
}

/// This rank's whole input vector of `total` bytes: the send buffer, or with
/// MPI_IN_PLACE the receive buffer.
///
/// # Safety
/// The buffer used holds `total` bytes.
unsafe fn vector(sendbuf: *const c_void, recvbuf: *mut c_void, total: usize) -> MpiResult<Vec<u8>> {
    let src = if in_place(sendbuf) {
        recvbuf as *const c_void
    } else {
        sendbuf
    };
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { bytes_buf(src, total)? }.as_slice().to_vec())
}

/// # Safety
/// The buffers are valid until completion: the input holds the whole vector,
/// `recvbuf` this rank's block.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_block(
    e: &mut Engine,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    (op, op_dt): (MPI_Op, MPI_Datatype),
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, _, size) = comm_info(e, comm)?;
    let comb = combiner(op_dt, op)?;
    not_in_place(recvbuf, "the receive buffer")?;
    let blk = elem_bytes(recvcount, types::type_size(datatype)?)?;
    let total = blk.checked_mul(size as usize).ok_or_else(too_large)?;
    e.enter_call(blocking, ci, CallKind::ReduceScatterBlock, None, blk)?;
    // SAFETY: the input vector holds `size` blocks.
    let data = unsafe { vector(sendbuf, recvbuf, total)? };
    // SAFETY: the receive buffer holds this rank's block.
    let out = unsafe { bytes_buf(recvbuf, blk)? };
    e.ireduce_scatter_block(ci, data, out, comb, blocking)
}

/// Reduce_scatter_block, blocking or not, with the buffers staged for
/// derived types.
///
/// # Safety
/// As for [`reduce_scatter_block`].
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_block_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[datatype]) {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            reduce_scatter_block(
                e,
                sendbuf,
                recvbuf,
                recvcount,
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
        |_, size| {
            // With MPI_IN_PLACE the whole input vector is in the receive buffer.
            let out = if in_place(sendbuf) {
                Use::OUTPUT.blocks(size)
            } else {
                Use::OUTPUT
            };
            // SAFETY: the caller's buffers, valid until completion.
            unsafe {
                Ok([
                    reduce_arg(sendbuf, recvcount, datatype, op, Use::INPUT.blocks(size))?,
                    reduce_arg(recvbuf, recvcount, datatype, op, out)?,
                ])
            }
        },
        |e, a| {
            let lead = if in_place(sendbuf) { &a[1] } else { &a[0] };
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                reduce_scatter_block(
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

macro_rules! reduce_scatter_block_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::reduce_scatter_block(sendbuf, recvbuf, recvcount.into(), datatype, op, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { reduce_scatter_block_staged(stringify!($name), Mode::Wait, sendbuf, recvbuf, recvcount.into(), datatype, op, comm) }
        }}
    };
}

reduce_scatter_block_entry!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, c_int);
reduce_scatter_block_entry!(
    MPI_Reduce_scatter_block_c,
    PMPI_Reduce_scatter_block_c,
    MPI_Count
);

macro_rules! ireduce_scatter_block_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::reduce_scatter_block(sendbuf, recvbuf, recvcount.into(), datatype, op, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { reduce_scatter_block_staged(stringify!($name), Mode::Request(request), sendbuf, recvbuf, recvcount.into(), datatype, op, comm) }
        }}
    };
}

ireduce_scatter_block_entry!(MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block, c_int);
ireduce_scatter_block_entry!(
    MPI_Ireduce_scatter_block_c,
    PMPI_Ireduce_scatter_block_c,
    MPI_Count
);

/// # Safety
/// The buffers and `recvcounts` are valid until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter(
    e: &mut Engine,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    datatype: MPI_Datatype,
    (op, op_dt): (MPI_Op, MPI_Datatype),
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, rank, size) = comm_info(e, comm)?;
    let comb = combiner(op_dt, op)?;
    not_in_place(recvbuf, "the receive buffer")?;
    let esize = types::type_size(datatype)?;
    // SAFETY: one count per rank.
    let counts = unsafe { &recvcounts.read(size, "recvcounts")? }
        .iter()
        .map(|&n| elem_bytes(n, esize))
        .collect::<MpiResult<Vec<usize>>>()?;
    let total = counts
        .iter()
        .try_fold(0usize, |a, &n| a.checked_add(n))
        .ok_or_else(too_large)?;
    // Every member passes the same counts, hence the same total.
    e.enter_call(blocking, ci, CallKind::ReduceScatter, None, total)?;
    // SAFETY: the input vector holds every rank's block.
    let data = unsafe { vector(sendbuf, recvbuf, total)? };
    // SAFETY: the receive buffer holds this rank's block.
    let out = unsafe { bytes_buf(recvbuf, counts[rank as usize])? };
    e.ireduce_scatter(ci, data, &counts, out, comb, blocking)
}

/// Reduce_scatter, blocking or not, with the buffers staged for derived
/// types (reduced as their basic kind, so the counts scale by the
/// elements per instance).
///
/// # Safety
/// As for [`reduce_scatter`].
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_staged(
    name: &str,
    mode: Mode,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    staged::collective(
        name,
        comm,
        mode,
        |rank, size| {
            // SAFETY: one count per rank.
            let counts = unsafe { &recvcounts.read(size, "recvcounts")? };
            let total = counts
                .iter()
                .try_fold(0i64, |a, &n| if n < 0 { None } else { a.checked_add(n) })
                .ok_or_else(|| {
                    MpiError::new(c::MPI_ERR_COUNT, "invalid or too large recvcounts")
                })?;
            let mine = counts[rank as usize];
            // With MPI_IN_PLACE the whole input vector is in the receive buffer.
            let out = if in_place(sendbuf) { total } else { mine };
            // SAFETY: the caller's buffers, valid until completion.
            let a = unsafe {
                vec![
                    reduce_arg(sendbuf, total, datatype, op, Use::INPUT)?,
                    reduce_arg(recvbuf, out, datatype, op, Use::OUTPUT)?,
                ]
            };
            Ok(a)
        },
        |e, a| {
            let lead = if in_place(sendbuf) { &a[1] } else { &a[0] };
            let mut scaled: Vec<i64> = Vec::new();
            if lead.dt() != datatype {
                let size = e.comms.get(crate::abi::comm_idx(comm)?)?.size;
                let per = lead.per();
                // SAFETY: one count per rank (checked when staging).
                scaled = unsafe { &recvcounts.read(size, "recvcounts")? }
                    .iter()
                    .map(|&n| i64::try_from(n as u128 * per as u128).map_err(|_| too_large()))
                    .collect::<MpiResult<_>>()?;
            }
            let counts = if scaled.is_empty() {
                recvcounts
            } else {
                Ints::Wide(scaled.as_ptr())
            };
            // SAFETY: the staged buffers live until the collective completes.
            unsafe {
                reduce_scatter(
                    e,
                    a[0].ptr(),
                    a[1].ptr(),
                    counts,
                    lead.dt(),
                    (op, lead.op_dt()),
                    comm,
                    blocking,
                )
            }
        },
    )
}

macro_rules! reduce_scatter_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: $carr, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
            // SAFETY: the caller's arguments, valid for the call (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::reduce_scatter(sendbuf, recvbuf, recvcounts.into(), datatype, op, comm, crate::abi::intercomm::How::Wait) }; }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { reduce_scatter_staged(stringify!($name), Mode::Wait, sendbuf, recvbuf, recvcounts.into(), datatype, op, comm) }
        }}
    };
}

reduce_scatter_entry!(
    MPI_Reduce_scatter,
    PMPI_Reduce_scatter,
    c_int,
    *const c_int,
    *const c_int
);
reduce_scatter_entry!(
    MPI_Reduce_scatter_c,
    PMPI_Reduce_scatter_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

macro_rules! ireduce_scatter_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: $carr, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's arguments, valid until completion (intercommunicator path).
            if crate::abi::intercomm::is_inter(comm) { return unsafe { crate::abi::intercomm::reduce_scatter(sendbuf, recvbuf, recvcounts.into(), datatype, op, comm, crate::abi::intercomm::How::Request(request)) }; }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { reduce_scatter_staged(stringify!($name), Mode::Request(request), sendbuf, recvbuf, recvcounts.into(), datatype, op, comm) }
        }}
    };
}

ireduce_scatter_entry!(
    MPI_Ireduce_scatter,
    PMPI_Ireduce_scatter,
    c_int,
    *const c_int,
    *const c_int
);
ireduce_scatter_entry!(
    MPI_Ireduce_scatter_c,
    PMPI_Ireduce_scatter_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint
);

/// Which prefix reduction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prefix {
    Inclusive,
    Exclusive,
}

/// # Safety
/// The buffers hold `count` elements of `datatype` until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn scan(
    e: &mut Engine,
    kind: Prefix,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    (op, op_dt): (MPI_Op, MPI_Datatype),
    comm: MPI_Comm,
    blocking: bool,
) -> MpiResult<usize> {
    let (ci, _, _) = comm_info(e, comm)?;
    let comb = combiner(op_dt, op)?;
    not_in_place(recvbuf, "the receive buffer")?;
    // SAFETY: the receive buffer, per the contract.
    let out = unsafe { user_buf(recvbuf, count, datatype)? };
    let called = match kind {
        Prefix::Inclusive => CallKind::Scan,
        Prefix::Exclusive => CallKind::Exscan,
    };
    e.enter_call(blocking, ci, called, None, out.len())?;
    // In place the data is `out` itself, which every path reads before
    // it writes the result.
    let data = if in_place(sendbuf) {
        out
    } else {
        // SAFETY: the send buffer, per the contract.
        unsafe { user_buf(sendbuf, count, datatype)? }
    };
    match kind {
        Prefix::Inclusive => e.iscan(ci, data, out, comb, blocking),
        Prefix::Exclusive => e.iexscan(ci, data, out, comb, blocking),
    }
}

/// A prefix reduction, blocking or not, with the buffers staged for
/// derived types.
///
/// # Safety
/// As for [`scan`].
#[allow(clippy::too_many_arguments)]
unsafe fn scan_staged(
    name: &str,
    mode: Mode,
    kind: Prefix,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let blocking = matches!(mode, Mode::Wait);
    if staged::all_predefined(&[datatype]) {
        // SAFETY: the caller's buffers, valid until completion.
        return staged::unstaged(name, comm, mode, |e| unsafe {
            scan(
                e,
                kind,
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
                scan(
                    e,
                    kind,
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

// One macro makes the blocking and nonblocking forms of a scan for one
// count type and prefix kind.
macro_rules! scan_entries {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $count:ty, $prefix:expr) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
            if crate::abi::intercomm::is_inter(comm) { return crate::abi::intercomm::undefined(stringify!($name), comm); }
            // SAFETY: the caller's buffers, valid for the call.
            unsafe { scan_staged(stringify!($name), Mode::Wait, $prefix, sendbuf, recvbuf, count.into(), datatype, op, comm) }
        }}
        mpi_fn! { $iname / $piname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            if crate::abi::intercomm::is_inter(comm) { return crate::abi::intercomm::undefined(stringify!($iname), comm); }
            // SAFETY: MPI keeps the buffers valid until the request completes.
            unsafe { scan_staged(stringify!($iname), Mode::Request(request), $prefix, sendbuf, recvbuf, count.into(), datatype, op, comm) }
        }}
    };
}

scan_entries!(
    MPI_Scan,
    PMPI_Scan,
    MPI_Iscan,
    PMPI_Iscan,
    c_int,
    Prefix::Inclusive
);
scan_entries!(
    MPI_Scan_c,
    PMPI_Scan_c,
    MPI_Iscan_c,
    PMPI_Iscan_c,
    MPI_Count,
    Prefix::Inclusive
);
scan_entries!(
    MPI_Exscan,
    PMPI_Exscan,
    MPI_Iexscan,
    PMPI_Iexscan,
    c_int,
    Prefix::Exclusive
);
scan_entries!(
    MPI_Exscan_c,
    PMPI_Exscan_c,
    MPI_Iexscan_c,
    PMPI_Iexscan_c,
    MPI_Count,
    Prefix::Exclusive
);
