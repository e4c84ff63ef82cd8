//! Intercommunicator entry points (`MPI_Intercomm_create`, `_merge`); the
//! collectives on intercommunicators, which the collective entry points
//! hand over to when their communicator is one, are in [`coll`].

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Errhandler, MPI_Group, MPI_Info};
use super::group::put;
use super::{call, check_tag, comm_handle, comm_idx, state};
use crate::engine::error::MpiError;
use crate::mpi_fn;
use std::os::raw::c_int;

mod coll;

pub(super) use coll::*;

/// Whether `comm` is a live intercommunicator. Anything else (including an
/// invalid handle) goes down the ordinary path, which reports it.
pub(super) fn is_inter(comm: MPI_Comm) -> bool {
    // The predefined communicators never are: decided without the engine.
    if comm == c::MPI_COMM_WORLD || comm == c::MPI_COMM_SELF {
        return false;
    }
    state::with_engine(|e| Ok(e.comms.get(comm_idx(comm)?)?.is_inter())).unwrap_or(false)
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

/// A tag for the string tag of `MPI_Intercomm_create_from_groups`: the same
/// in every process (the hasher's keys are fixed), and a valid MPI tag.
fn tag_of(s: &[u8]) -> c_int {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    h.write(s);
    (h.finish() & 0x3fff_ffff) as c_int
}

mpi_fn! { MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups (local_group: MPI_Group, local_leader: c_int, remote_group: MPI_Group, remote_leader: c_int, stringtag: *const std::ffi::c_char, info: MPI_Info, errhandler: MPI_Errhandler, newintercomm: *mut MPI_Comm) -> c_int {
    let rc = call("MPI_Intercomm_create_from_groups", None, |e| {
        if newintercomm.is_null() || stringtag.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "newintercomm or stringtag is NULL"));
        }
        super::info::check_arg(info)?;
        // SAFETY: checked non-null; MPI passes a NUL-terminated string.
        let tag = tag_of(unsafe { std::ffi::CStr::from_ptr(stringtag) }.to_bytes());
        let lg = super::group::group_of(e, local_group)?;
        let rg = super::group::group_of(e, remote_group)?;
        let rl = u32::try_from(remote_leader)
            .ok()
            .and_then(|r| rg.member(r))
            .ok_or_else(|| MpiError::rank(remote_leader, rg.size() as usize))?;
        // The groups' communicators come from MPI_COMM_WORLD, which holds
        // every process; the string tag keeps concurrent calls apart.
        let world = crate::engine::comm::WORLD;
        let local = e.comm_create_group(world, &lg, tag)?;
        let made = e.intercomm_create(local, local_leader, Some(world), rl as c_int, tag);
        let freed = e.comm_free(local);
        let idx = made?;
        freed?;
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { put(newintercomm, comm_handle(idx), "newintercomm") }
    });
    if rc != c::MPI_SUCCESS {
        return rc;
    }
    // SAFETY: the handle was just written; the handler is the caller's.
    unsafe { super::errhandler::PMPI_Comm_set_errhandler(*newintercomm, errhandler) }
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
