//! Intercommunicator entry points (`MPI_Intercomm_create`, `_merge`); the
//! collectives on intercommunicators, which the collective entry points
//! hand over to when their communicator is one, are in [`coll`].

use super::consts as c;
use super::consts::MPI_Comm;
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
