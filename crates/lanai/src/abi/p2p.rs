//! Point-to-point entry points.

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
use super::datatype::staging::{self, Pending};
use super::requests::{finish_blocking, handle_of, new_done_request};
use super::userbuf::UserBuf;
use super::{call, check_tag, comm_idx, datatype, types, write_status};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::{Persistent, SendMode, Status};
use crate::engine::{proc_null_status, Engine};
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Starts a send of any mode; returns the request index (completed or not).
///
/// # Safety
/// As for [`crate::abi::user_buf`].
#[allow(clippy::too_many_arguments)] // mirrors the C signature plus the mode
pub(super) unsafe fn isend(
    e: &mut Engine,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> MpiResult<Option<usize>> {
    let ci = comm_idx(comm)?;
    // SAFETY: forwarded.
    if let Some(b) = unsafe { staging::plain_buf(buf, count, dt)? } {
        check_tag(tag, false)?;
        return e.start_send(ci, dest, tag, b, mode);
    }
    // SAFETY: forwarded.
    let (b, keep) = unsafe { staging::send_buf(buf, count, dt)? };
    check_tag(tag, false)?;
    let r = e.start_send(ci, dest, tag, b, mode)?;
    // A packed temporary lives until the send completes.
    if let (Some(r), Some(p)) = (r, keep) {
        staging::hold(e, r, p);
    }
    Ok(r)
}

macro_rules! blocking_send {
    ($name:ident, $pname:ident, $count:ty, $mode:expr) => {
        mpi_fn! { $name / $pname (buf: *const c_void, count: $count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                // SAFETY: the caller's buffer, valid for the call's duration.
                if let Some(r) = unsafe { isend(e, buf, count.into(), datatype, dest, tag, comm, $mode)? } {
                    finish_blocking(e, r, std::ptr::null_mut())?;
                }
                Ok(())
            })
        }}
    };
}

blocking_send!(MPI_Send, PMPI_Send, c_int, SendMode::Standard);
blocking_send!(MPI_Send_c, PMPI_Send_c, MPI_Count, SendMode::Standard);
blocking_send!(MPI_Ssend, PMPI_Ssend, c_int, SendMode::Sync);
blocking_send!(MPI_Ssend_c, PMPI_Ssend_c, MPI_Count, SendMode::Sync);
blocking_send!(MPI_Rsend, PMPI_Rsend, c_int, SendMode::Ready);
blocking_send!(MPI_Rsend_c, PMPI_Rsend_c, MPI_Count, SendMode::Ready);
blocking_send!(MPI_Bsend, PMPI_Bsend, c_int, SendMode::Buffered);
blocking_send!(MPI_Bsend_c, PMPI_Bsend_c, MPI_Count, SendMode::Buffered);

macro_rules! nonblocking_send {
    ($name:ident, $pname:ident, $count:ty, $mode:expr) => {
        mpi_fn! { $name / $pname (buf: *const c_void, count: $count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                if request.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
                }
                // SAFETY: the standard keeps the buffer valid until completion.
                let r = match unsafe { isend(e, buf, count.into(), datatype, dest, tag, comm, $mode)? } {
                    Some(r) => r,
                    None => new_done_request(e, Status::default()),
                };
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

nonblocking_send!(MPI_Isend, PMPI_Isend, c_int, SendMode::Standard);
nonblocking_send!(MPI_Isend_c, PMPI_Isend_c, MPI_Count, SendMode::Standard);
nonblocking_send!(MPI_Issend, PMPI_Issend, c_int, SendMode::Sync);
nonblocking_send!(MPI_Issend_c, PMPI_Issend_c, MPI_Count, SendMode::Sync);
nonblocking_send!(MPI_Irsend, PMPI_Irsend, c_int, SendMode::Ready);
nonblocking_send!(MPI_Irsend_c, PMPI_Irsend_c, MPI_Count, SendMode::Ready);
nonblocking_send!(MPI_Ibsend, PMPI_Ibsend, c_int, SendMode::Buffered);
nonblocking_send!(MPI_Ibsend_c, PMPI_Ibsend_c, MPI_Count, SendMode::Buffered);

/// # Safety
/// As for [`crate::abi::user_buf`].
pub(super) unsafe fn irecv(
    e: &mut Engine,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<usize> {
    let ci = comm_idx(comm)?;
    // SAFETY: forwarded.
    if let Some(b) = unsafe { staging::plain_buf(buf, count, dt)? } {
        check_tag(tag, true)?;
        return e.start_recv(ci, src, tag, b);
    }
    // SAFETY: forwarded.
    let (b, keep) = unsafe { staging::recv_buf(buf, count, dt)? };
    check_tag(tag, true)?;
    let r = e.start_recv(ci, src, tag, b)?;
    // Unpacked into the user layout when the request completes.
    if let Some(p) = keep {
        staging::hold(e, r, p);
    }
    Ok(r)
}

macro_rules! recv {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                // SAFETY: the caller's buffer, valid for the call's duration.
                let r = unsafe { irecv(e, buf, count.into(), datatype, source, tag, comm)? };
                finish_blocking(e, r, status)
            })
        }}
    };
}

recv!(MPI_Recv, PMPI_Recv, c_int);
recv!(MPI_Recv_c, PMPI_Recv_c, MPI_Count);

macro_rules! nonblocking_recv {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                if request.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
                }
                // SAFETY: the standard keeps the buffer valid until completion.
                let r = unsafe { irecv(e, buf, count.into(), datatype, source, tag, comm)? };
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

nonblocking_recv!(MPI_Irecv, PMPI_Irecv, c_int);
nonblocking_recv!(MPI_Irecv_c, PMPI_Irecv_c, MPI_Count);

macro_rules! sendrecv {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
                recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                // SAFETY: both buffers valid for the call's duration.
                let rr = unsafe { irecv(e, recvbuf, recvcount.into(), recvtype, source, recvtag, comm)? };
                // SAFETY: as above.
                let sr = unsafe { isend(e, sendbuf, sendcount.into(), sendtype, dest, sendtag, comm, SendMode::Standard)? };
                if let Some(s) = sr {
                    finish_blocking(e, s, std::ptr::null_mut())?;
                }
                finish_blocking(e, rr, status)
            })
        }}
    };
}

sendrecv!(MPI_Sendrecv, PMPI_Sendrecv, c_int);
sendrecv!(MPI_Sendrecv_c, PMPI_Sendrecv_c, MPI_Count);

macro_rules! sendrecv_replace {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
                source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                // Send from a (packed) copy so the receive can land in place.
                let ci = comm_idx(comm)?;
                // SAFETY: the caller's buffer, valid for the call's duration.
                let (b, keep) = unsafe { staging::send_buf(buf, count, datatype)? };
                let mut copy = match keep {
                    Some(Pending::Send(t)) => t,
                    _ => b.as_slice().to_vec(),
                };
                check_tag(sendtag, false)?;
                // SAFETY: `copy` outlives the send, which completes below.
                let cb = unsafe { UserBuf::new(copy.as_mut_ptr(), copy.len()) };
                let sr = e.start_send(ci, dest, sendtag, cb, SendMode::Standard)?;
                // SAFETY: as above.
                let rr = unsafe { irecv(e, buf, count.into(), datatype, source, recvtag, comm)? };
                if let Some(s) = sr {
                    finish_blocking(e, s, std::ptr::null_mut())?;
                }
                finish_blocking(e, rr, status)
            })
        }}
    };
}

sendrecv_replace!(MPI_Sendrecv_replace, PMPI_Sendrecv_replace, c_int);
sendrecv_replace!(MPI_Sendrecv_replace_c, PMPI_Sendrecv_replace_c, MPI_Count);

// ---- probe ----

fn write_probe_status(status: *mut MPI_Status, st: &Status) {
    // SAFETY: `status` is the caller's status argument (or IGNORE).
    unsafe { write_status(status, st) };
}

mpi_fn! { MPI_Iprobe / PMPI_Iprobe (source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    call("MPI_Iprobe", Some(comm), |e| {
        check_tag(tag, true)?;
        if flag.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
        }
        let found = e.iprobe(comm_idx(comm)?, source, tag)?;
        // SAFETY: checked non-null.
        unsafe { *flag = c_int::from(found.is_some()) };
        if let Some(st) = found {
            write_probe_status(status, &st);
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Probe / PMPI_Probe (source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    call("MPI_Probe", Some(comm), |e| {
        check_tag(tag, true)?;
        let ci = comm_idx(comm)?;
        let mut found = None;
        e.wait_until_mut(|e| {
            found = e.iprobe(ci, source, tag)?;
            Ok(found.is_some())
        })?;
        if let Some(st) = found {
            write_probe_status(status, &st);
        }
        Ok(())
    })
}}

const MESSAGE_BASE: c_int = 0x2e00_0000;

/// A handle for `msg`, probed on communicator `comm` (engine index).
fn message_handle(
    e: &mut Engine,
    msg: crate::engine::matching::Unexpected,
    comm: usize,
) -> MPI_Message {
    let slot = e
        .probed
        .iter()
        .position(Option::is_none)
        .unwrap_or_else(|| {
            e.probed.push(None);
            e.probed.len() - 1
        });
    e.probed[slot] = Some((msg, comm));
    MESSAGE_BASE | slot as c_int
}

fn improbe(
    e: &mut Engine,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult<bool> {
    check_tag(tag, true)?;
    if message.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "message is NULL"));
    }
    if source == c::MPI_PROC_NULL {
        // SAFETY: checked non-null.
        unsafe { *message = c::MPI_MESSAGE_NO_PROC };
        write_probe_status(status, &proc_null_status());
        return Ok(true);
    }
    let ci = comm_idx(comm)?;
    match e.improbe(ci, source, tag)? {
        Some((st, msg)) => {
            let h = message_handle(e, msg, ci);
            // SAFETY: checked non-null.
            unsafe { *message = h };
            write_probe_status(status, &st);
            Ok(true)
        }
        None => Ok(false),
    }
}

mpi_fn! { MPI_Improbe / PMPI_Improbe (source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    call("MPI_Improbe", Some(comm), |e| {
        if flag.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
        }
        let got = improbe(e, source, tag, comm, message, status)?;
        // SAFETY: checked non-null.
        unsafe { *flag = c_int::from(got) };
        Ok(())
    })
}}

mpi_fn! { MPI_Mprobe / PMPI_Mprobe (source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    call("MPI_Mprobe", Some(comm), |e| e.wait_until_mut(|e| improbe(e, source, tag, comm, message, status)))
}}

/// Starts receiving a matched message; `None` for `MPI_MESSAGE_NO_PROC`.
///
/// # Safety
/// As for [`crate::abi::user_buf`]; `message` points to a message handle.
unsafe fn start_mrecv(
    e: &mut Engine,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    message: *mut MPI_Message,
) -> MpiResult<Option<usize>> {
    if message.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "message is NULL"));
    }
    // SAFETY: checked non-null.
    let h = unsafe { *message };
    // SAFETY: forwarded.
    let (b, keep) = unsafe { staging::recv_buf(buf, count, dt)? };
    // SAFETY: checked non-null.
    unsafe { *message = c::MPI_MESSAGE_NULL };
    if h == c::MPI_MESSAGE_NO_PROC {
        return Ok(None);
    }
    let slot = (h & !MESSAGE_BASE) as usize;
    let (msg, comm) = (h & MESSAGE_BASE == MESSAGE_BASE)
        .then(|| e.probed.get_mut(slot).and_then(Option::take))
        .flatten()
        .ok_or_else(|| {
            MpiError::new(
                c::MPI_ERR_REQUEST,
                format!("invalid message handle 0x{:08x}", h as u32),
            )
        })?;
    let r = e.mrecv(msg, b, comm)?;
    if let Some(p) = keep {
        staging::hold(e, r, p);
    }
    Ok(Some(r))
}

macro_rules! mrecv {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
            call(stringify!($name), None, |e| {
                // SAFETY: the caller's buffer and handle.
                match unsafe { start_mrecv(e, buf, count.into(), datatype, message)? } {
                    Some(r) => finish_blocking(e, r, status),
                    None => {
                        write_probe_status(status, &proc_null_status());
                        Ok(())
                    }
                }
            })
        }}
    };
}

mrecv!(MPI_Mrecv, PMPI_Mrecv, c_int);
mrecv!(MPI_Mrecv_c, PMPI_Mrecv_c, MPI_Count);

macro_rules! nonblocking_mrecv {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), None, |e| {
                if request.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
                }
                // SAFETY: the caller's buffer (valid until completion) and handle.
                let r = match unsafe { start_mrecv(e, buf, count.into(), datatype, message)? } {
                    Some(r) => r,
                    None => new_done_request(e, proc_null_status()),
                };
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

nonblocking_mrecv!(MPI_Imrecv, PMPI_Imrecv, c_int);
nonblocking_mrecv!(MPI_Imrecv_c, PMPI_Imrecv_c, MPI_Count);

// ---- counts ----

/// The byte count of a status argument.
fn status_bytes(status: *const MPI_Status) -> MpiResult<u64> {
    if status.is_null() || status as usize == c::MPI_STATUS_IGNORE {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            "status is NULL or MPI_STATUS_IGNORE",
        ));
    }
    // SAFETY: checked to be a real status pointer.
    Ok(super::status_count(unsafe { &*status }).0)
}

/// Whole instances of `dt` in a status (`None`: `MPI_UNDEFINED`).
/// Predefined types count in the bytes the engine moves per element.
fn count_of(status: *const MPI_Status, dt: MPI_Datatype) -> MpiResult<Option<u64>> {
    let bytes = status_bytes(status)?;
    let size = if datatype::is_derived(dt) {
        datatype::resolve(dt)?.size()
    } else {
        types::type_size(dt)? as u64
    };
    Ok(if size == 0 {
        Some(0)
    } else {
        (bytes % size == 0).then_some(bytes / size)
    })
}

/// Basic elements in a status (`None`: `MPI_UNDEFINED`).
fn elements_of(status: *const MPI_Status, dt: MPI_Datatype) -> MpiResult<Option<u64>> {
    if datatype::is_derived(dt) {
        let bytes = status_bytes(status)?;
        return Ok(datatype::resolve(dt)?.elements_in_bytes(bytes));
    }
    // A pair type (MPI_2INT, MPI_DOUBLE_INT, ...) holds two elements.
    let per = datatype::resolve(dt).map_or(1, |d| d.elements());
    Ok(count_of(status, dt)?.and_then(|n| n.checked_mul(per)))
}

/// Writes a count, `MPI_UNDEFINED` when absent or too large for `T`.
///
/// # Safety
/// `out` is null or writable.
unsafe fn put_count<T: TryFrom<u64> + From<c_int>>(out: *mut T, n: Option<u64>) -> MpiResult<()> {
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "count is NULL"));
    }
    let v = n
        .and_then(|n| T::try_from(n).ok())
        .unwrap_or_else(|| T::from(c::MPI_UNDEFINED));
    // SAFETY: checked non-null.
    unsafe { out.write(v) };
    Ok(())
}

macro_rules! count_fn {
    ($name:ident, $pname:ident, $t:ty, $f:ident) => {
        mpi_fn! { $name / $pname (status: *const MPI_Status, datatype: MPI_Datatype, count: *mut $t) -> c_int {
            call(stringify!($name), None, |_| {
                let n = $f(status, datatype)?;
                // SAFETY: the caller's output argument.
                unsafe { put_count(count, n) }
            })
        }}
    };
}

count_fn!(MPI_Get_count, PMPI_Get_count, c_int, count_of);
count_fn!(MPI_Get_count_c, PMPI_Get_count_c, c::MPI_Count, count_of);
count_fn!(MPI_Get_elements, PMPI_Get_elements, c_int, elements_of);
count_fn!(
    MPI_Get_elements_x,
    PMPI_Get_elements_x,
    c::MPI_Count,
    elements_of
);
count_fn!(
    MPI_Get_elements_c,
    PMPI_Get_elements_c,
    c::MPI_Count,
    elements_of
);

// ---- persistent requests ----

macro_rules! send_init {
    ($name:ident, $pname:ident, $count:ty, $mode:expr) => {
        mpi_fn! { $name / $pname (buf: *const c_void, count: $count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                let ci = comm_idx(comm)?;
                // SAFETY: the standard keeps the buffer valid while the request exists.
                let (b, keep) = unsafe { staging::persistent_buf(buf, count, datatype, true)? };
                check_tag(tag, false)?;
                if dest != c::MPI_PROC_NULL {
                    e.comms.get(ci)?.check_rank(dest)?;
                }
                if request.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
                }
                let r = e.persistent(Persistent::Send { comm: ci, dest, tag, buf: b, mode: $mode });
                // The packed temporary lives as long as the request.
                if let Some(p) = keep {
                    staging::hold(e, r, p);
                }
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

send_init!(MPI_Send_init, PMPI_Send_init, c_int, SendMode::Standard);
send_init!(
    MPI_Send_init_c,
    PMPI_Send_init_c,
    MPI_Count,
    SendMode::Standard
);
send_init!(MPI_Ssend_init, PMPI_Ssend_init, c_int, SendMode::Sync);
send_init!(
    MPI_Ssend_init_c,
    PMPI_Ssend_init_c,
    MPI_Count,
    SendMode::Sync
);
send_init!(MPI_Rsend_init, PMPI_Rsend_init, c_int, SendMode::Ready);
send_init!(
    MPI_Rsend_init_c,
    PMPI_Rsend_init_c,
    MPI_Count,
    SendMode::Ready
);
send_init!(MPI_Bsend_init, PMPI_Bsend_init, c_int, SendMode::Buffered);
send_init!(
    MPI_Bsend_init_c,
    PMPI_Bsend_init_c,
    MPI_Count,
    SendMode::Buffered
);

macro_rules! recv_init {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                let ci = comm_idx(comm)?;
                // SAFETY: the standard keeps the buffer valid while the request exists.
                let (b, keep) = unsafe { staging::persistent_buf(buf, count, datatype, false)? };
                check_tag(tag, true)?;
                if source != c::MPI_PROC_NULL && source != c::MPI_ANY_SOURCE {
                    e.comms.get(ci)?.check_rank(source)?;
                }
                if request.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
                }
                let r = e.persistent(Persistent::Recv { comm: ci, src: source, tag, buf: b });
                // Unpacked into the user layout at each completion.
                if let Some(p) = keep {
                    staging::hold(e, r, p);
                }
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

recv_init!(MPI_Recv_init, PMPI_Recv_init, c_int);
recv_init!(MPI_Recv_init_c, PMPI_Recv_init_c, MPI_Count);
