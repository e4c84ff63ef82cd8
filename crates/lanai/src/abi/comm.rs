//! Communicator entry points: creation (dup, split, create), free, compare,
//! names and the intercommunicator queries (creation and merge: `intercomm.rs`).

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Group, MPI_Info, MPI_Request};
use super::group::{group_of, new_group_handle, put};
use super::requests::handle_of;
use super::{call, comm_handle, comm_idx};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::{c_char, CStr};
use std::os::raw::c_int;

/// Writes a new communicator (or `MPI_COMM_NULL`) to `out`.
///
/// # Safety
/// `out` is null or valid for a write.
unsafe fn put_comm(out: *mut MPI_Comm, idx: Option<usize>) -> MpiResult<()> {
    let h = idx.map_or(c::MPI_COMM_NULL, comm_handle);
    // SAFETY: forwarded.
    unsafe { put(out, h, "newcomm") }
}

fn check_out<T>(p: *mut T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// `MPI_Comm_dup` and its variants (attributes are copied by the caller,
/// outside the engine). Info hints are checked and ignored.
fn dup(e: &mut Engine, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    check_out(newcomm, "newcomm")?;
    let idx = e.comm_dup(comm_idx(comm)?)?;
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { put_comm(newcomm, Some(idx)) }
}

mpi_fn! { MPI_Comm_dup / PMPI_Comm_dup (comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    let rc = call("MPI_Comm_dup", Some(comm), |e| dup(e, comm, newcomm));
    super::attr::after_comm_dup("MPI_Comm_dup", rc, comm, newcomm)
}}

mpi_fn! { MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info (comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    let rc = call("MPI_Comm_dup_with_info", Some(comm), |e| {
        super::info::check_arg(info)?;
        dup(e, comm, newcomm)
    });
    super::attr::after_comm_dup("MPI_Comm_dup_with_info", rc, comm, newcomm)
}}

/// `MPI_Comm_idup`: the new handle is written at once; the communicator
/// may be used once the request completes (the context agreement runs in
/// the background, see `engine::comm_idup`).
fn idup(
    e: &mut Engine,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult<()> {
    check_out(request, "request")?;
    check_out(newcomm, "newcomm")?;
    let (new, r) = e.comm_idup(comm_idx(comm)?)?;
    // SAFETY: checked non-null; the caller's output arguments.
    unsafe {
        put_comm(newcomm, Some(new))?;
        put(request, handle_of(r), "request")
    }
}

mpi_fn! { MPI_Comm_idup / PMPI_Comm_idup (comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    let rc = call("MPI_Comm_idup", Some(comm), |e| idup(e, comm, newcomm, request));
    super::attr::after_comm_dup("MPI_Comm_idup", rc, comm, newcomm)
}}

mpi_fn! { MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info (comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    let rc = call("MPI_Comm_idup_with_info", Some(comm), |e| {
        super::info::check_arg(info)?;
        idup(e, comm, newcomm, request)
    });
    super::attr::after_comm_dup("MPI_Comm_idup_with_info", rc, comm, newcomm)
}}

mpi_fn! { MPI_Comm_split / PMPI_Comm_split (comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_split", Some(comm), |e| {
        check_out(newcomm, "newcomm")?;
        let idx = e.comm_split(comm_idx(comm)?, color, key)?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put_comm(newcomm, idx) }
    })
}}

mpi_fn! { MPI_Comm_split_type / PMPI_Comm_split_type (comm: MPI_Comm, split_type: c_int, key: c_int, _info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_split_type", Some(comm), |e| {
        check_out(newcomm, "newcomm")?;
        let idx = e.comm_split_type(comm_idx(comm)?, split_type, key)?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put_comm(newcomm, idx) }
    })
}}

mpi_fn! { MPI_Comm_create / PMPI_Comm_create (comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_create", Some(comm), |e| {
        check_out(newcomm, "newcomm")?;
        let g = group_of(e, group)?;
        let idx = e.comm_create(comm_idx(comm)?, &g)?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put_comm(newcomm, idx) }
    })
}}

mpi_fn! { MPI_Comm_create_group / PMPI_Comm_create_group (comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_create_group", Some(comm), |e| {
        check_out(newcomm, "newcomm")?;
        super::check_tag(tag, false)?;
        let ci = comm_idx(comm)?;
        let g = group_of(e, group)?;
        if g.members.is_empty() {
            // SAFETY: checked non-null; the caller's output argument.
            return unsafe { put_comm(newcomm, None) };
        }
        let idx = e.comm_create_group(ci, &g, tag)?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put_comm(newcomm, Some(idx)) }
    })
}}

mpi_fn! { MPI_Comm_free / PMPI_Comm_free (comm: *mut MPI_Comm) -> c_int {
    if comm.is_null() {
        return call("MPI_Comm_free", None, |_| Err(MpiError::new(c::MPI_ERR_ARG, "comm is NULL")));
    }
    // SAFETY: checked non-null; the caller's handle.
    let h = unsafe { *comm };
    // Attribute delete callbacks run first; if one fails, nothing is freed.
    let rc = super::attr::before_comm_free("MPI_Comm_free", h);
    if rc != c::MPI_SUCCESS {
        return rc;
    }
    call("MPI_Comm_free", Some(h), |e| {
        e.comm_free(comm_idx(h)?)?;
        // SAFETY: checked non-null above.
        unsafe { put(comm, c::MPI_COMM_NULL, "comm") }
    })
}}

mpi_fn! { MPI_Comm_compare / PMPI_Comm_compare (comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> c_int {
    call("MPI_Comm_compare", Some(comm1), |e| {
        let v = e.comms.compare(comm_idx(comm1)?, comm_idx(comm2)?)?;
        // SAFETY: the caller's output argument.
        unsafe { put(result, v, "result") }
    })
}}

mpi_fn! { MPI_Comm_group / PMPI_Comm_group (comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    call("MPI_Comm_group", Some(comm), |e| {
        check_out(group, "group")?;
        let g = e.comm_group(comm_idx(comm)?)?;
        let h = new_group_handle(e, g);
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put(group, h, "group") }
    })
}}

mpi_fn! { MPI_Comm_set_name / PMPI_Comm_set_name (comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    call("MPI_Comm_set_name", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        if comm_name.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "comm_name is NULL"));
        }
        // SAFETY: a NUL-terminated C string, as the standard requires.
        let bytes = unsafe { CStr::from_ptr(comm_name) }.to_bytes();
        let max = c::MPI_MAX_OBJECT_NAME as usize - 1;
        let name = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned();
        e.comms.get_mut(ci)?.name = Some(name);
        Ok(())
    })
}}

mpi_fn! { MPI_Comm_get_name / PMPI_Comm_get_name (comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Comm_get_name", Some(comm), |e| {
        let name = e.comms.name_of(comm_idx(comm)?)?;
        check_out(comm_name, "comm_name")?;
        check_out(resultlen, "resultlen")?;
        let b = name.as_bytes();
        let n = b.len().min(c::MPI_MAX_OBJECT_NAME as usize - 1);
        // SAFETY: the caller's buffer holds MPI_MAX_OBJECT_NAME chars; we
        // write at most that many, the terminating NUL included.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), comm_name as *mut u8, n);
            *comm_name.add(n) = 0;
            *resultlen = n as c_int;
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Comm_test_inter / PMPI_Comm_test_inter (comm: MPI_Comm, flag: *mut c_int) -> c_int {
    call("MPI_Comm_test_inter", Some(comm), |e| {
        let inter = e.comms.get(comm_idx(comm)?)?.is_inter();
        // SAFETY: the caller's output argument.
        unsafe { put(flag, c_int::from(inter), "flag") }
    })
}}

fn not_inter() -> MpiError {
    MpiError::new(c::MPI_ERR_COMM, "not an intercommunicator")
}

mpi_fn! { MPI_Comm_remote_size / PMPI_Comm_remote_size (comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_remote_size", Some(comm), |e| {
        let cm = e.comms.get(comm_idx(comm)?)?;
        let n = cm.inter.as_ref().ok_or_else(not_inter)?.members.len();
        // SAFETY: the caller's output argument.
        unsafe { put(size, n as c_int, "size") }
    })
}}

mpi_fn! { MPI_Comm_remote_group / PMPI_Comm_remote_group (comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    call("MPI_Comm_remote_group", Some(comm), |e| {
        check_out(group, "group")?;
        let cm = e.comms.get(comm_idx(comm)?)?;
        let members = cm.inter.as_ref().ok_or_else(not_inter)?.members.clone();
        let h = new_group_handle(e, crate::engine::group::Group::new(members));
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put(group, h, "group") }
    })
}}
