//! `MPI_Buffer_flush` and `MPI_Buffer_iflush` (MPI 4.1): wait until every
//! buffered send has left the buffer attached with `MPI_Buffer_attach`,
//! which stays attached.
//!
//! The per-communicator and per-session buffers of MPI 4.1
//! (`MPI_Comm_attach_buffer`, ...) are not provided: buffered sends draw on
//! the one process buffer only.

use super::call;
use super::consts as c;
use super::consts::MPI_Request;
use super::requests::handle_of;
use crate::engine::error::MpiError;
use crate::mpi_fn;
use std::os::raw::c_int;

mpi_fn! { MPI_Buffer_flush / PMPI_Buffer_flush () -> c_int {
    call("MPI_Buffer_flush", None, |e| e.wait_until(|e| e.st.bsend_used == 0))
}}

mpi_fn! { MPI_Buffer_iflush / PMPI_Buffer_iflush (request: *mut MPI_Request) -> c_int {
    call("MPI_Buffer_iflush", None, |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        let r = e.start_bsend_drain();
        // SAFETY: checked non-null.
        unsafe { *request = handle_of(r) };
        Ok(())
    })
}}
