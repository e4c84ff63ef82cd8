//! The buffers of buffered-mode sends: the process buffer
//! (`MPI_Buffer_attach`, `_detach`, `_flush`, `_iflush`) and, from MPI 4.1,
//! one per communicator (`MPI_Comm_attach_buffer`, ...). Both kinds are
//! pools of one type (`engine::bsend_pool`); a buffered send draws on its
//! communicator's buffer if it has one, else on the process buffer.
//!
//! The per-session buffers (`MPI_Session_attach_buffer`, ...) are not
//! provided: Lanai has no sessions.

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Count, MPI_Request};
use super::requests::handle_of;
use super::{call, comm_idx};
use crate::engine::bsend_pool::Owner;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// The pool of `comm`, checking the handle.
fn comm_owner(e: &Engine, comm: MPI_Comm) -> MpiResult<Owner> {
    let ci = comm_idx(comm)?;
    e.comms.get(ci)?;
    Ok(Owner::Comm(ci))
}

fn attach(e: &mut Engine, owner: Owner, buffer: *mut c_void, size: i64) -> MpiResult<()> {
    if size < 0 {
        return Err(MpiError::count(size));
    }
    e.st.bsend.attach(owner, buffer as usize, size as usize)
}

/// Waits until no buffered send holds bytes of `owner`'s buffer, then
/// detaches it: (address, size), or (0, 0) when none was attached. A buffer
/// larger than `max`, what the caller's size argument holds (one attached
/// with a `_c` call, detached with an `int` one), stays attached.
fn detach(e: &mut Engine, owner: Owner, max: usize) -> MpiResult<(usize, usize)> {
    if let Some(size) = e.st.bsend.size_of(owner).filter(|&s| s > max) {
        return Err(MpiError::new(
            c::MPI_ERR_VALUE_TOO_LARGE,
            format!(
                "the attached buffer holds {size} bytes, more than the int size argument can \
                 report; it stays attached (detach it with the _c form)"
            ),
        ));
    }
    e.wait_until(|e| e.st.bsend.owner_drained(owner))?;
    Ok(e.st.bsend.detach(owner))
}

fn flush(e: &mut Engine, owner: Owner) -> MpiResult<()> {
    e.wait_until(|e| e.st.bsend.owner_drained(owner))
}

fn iflush(e: &mut Engine, owner: Owner, request: *mut MPI_Request) -> MpiResult<()> {
    if request.is_null() {
        return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
    }
    let r = e.start_bsend_drain(owner);
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *request = handle_of(r) };
    Ok(())
}

/// Writes a detached buffer's address and size (`size` already converted).
///
/// # Safety
/// `buffer_addr` must be null or point to a `void *`; `size` null or valid.
unsafe fn put_detached<T>(
    buffer_addr: *mut c_void,
    size: *mut T,
    addr: usize,
    len: T,
) -> MpiResult<()> {
    if buffer_addr.is_null() || size.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "NULL argument"));
    }
    // SAFETY: both checked non-null; `buffer_addr` is a `void **` in C.
    unsafe {
        *(buffer_addr as *mut *mut c_void) = addr as *mut c_void;
        *size = len;
    }
    Ok(())
}

macro_rules! buffer_attach {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buffer: *mut c_void, size: $count) -> c_int {
            call(stringify!($name), None, |e| attach(e, Owner::Process, buffer, size.into()))
        }}
    };
    ($name:ident, $pname:ident, $count:ty, comm) => {
        mpi_fn! { $name / $pname (comm: MPI_Comm, buffer: *mut c_void, size: $count) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                let owner = comm_owner(e, comm)?;
                attach(e, owner, buffer, size.into())
            })
        }}
    };
}

buffer_attach!(MPI_Buffer_attach, PMPI_Buffer_attach, c_int);
buffer_attach!(MPI_Buffer_attach_c, PMPI_Buffer_attach_c, MPI_Count);
buffer_attach!(MPI_Comm_attach_buffer, PMPI_Comm_attach_buffer, c_int, comm);
buffer_attach!(
    MPI_Comm_attach_buffer_c,
    PMPI_Comm_attach_buffer_c,
    MPI_Count,
    comm
);

macro_rules! buffer_detach {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buffer_addr: *mut c_void, size: *mut $count) -> c_int {
            call(stringify!($name), None, |e| {
                let (addr, len) = detach(e, Owner::Process, <$count>::MAX as usize)?;
                // SAFETY: the caller's output arguments; `detach` checked that the size fits.
                unsafe { put_detached(buffer_addr, size, addr, len as $count) }
            })
        }}
    };
    ($name:ident, $pname:ident, $count:ty, comm) => {
        mpi_fn! { $name / $pname (comm: MPI_Comm, buffer_addr: *mut c_void, size: *mut $count) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                let owner = comm_owner(e, comm)?;
                let (addr, len) = detach(e, owner, <$count>::MAX as usize)?;
                // SAFETY: the caller's output arguments; `detach` checked that the size fits.
                unsafe { put_detached(buffer_addr, size, addr, len as $count) }
            })
        }}
    };
}

buffer_detach!(MPI_Buffer_detach, PMPI_Buffer_detach, c_int);
buffer_detach!(MPI_Buffer_detach_c, PMPI_Buffer_detach_c, MPI_Count);
buffer_detach!(MPI_Comm_detach_buffer, PMPI_Comm_detach_buffer, c_int, comm);
buffer_detach!(
    MPI_Comm_detach_buffer_c,
    PMPI_Comm_detach_buffer_c,
    MPI_Count,
    comm
);

mpi_fn! { MPI_Buffer_flush / PMPI_Buffer_flush () -> c_int {
    call("MPI_Buffer_flush", None, |e| flush(e, Owner::Process))
}}

mpi_fn! { MPI_Buffer_iflush / PMPI_Buffer_iflush (request: *mut MPI_Request) -> c_int {
    call("MPI_Buffer_iflush", None, |e| iflush(e, Owner::Process, request))
}}

mpi_fn! { MPI_Comm_flush_buffer / PMPI_Comm_flush_buffer (comm: MPI_Comm) -> c_int {
    call("MPI_Comm_flush_buffer", Some(comm), |e| {
        let owner = comm_owner(e, comm)?;
        flush(e, owner)
    })
}}

mpi_fn! { MPI_Comm_iflush_buffer / PMPI_Comm_iflush_buffer (comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    call("MPI_Comm_iflush_buffer", Some(comm), |e| {
        let owner = comm_owner(e, comm)?;
        iflush(e, owner, request)
    })
}}
