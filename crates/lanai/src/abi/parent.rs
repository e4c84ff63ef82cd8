//! `MPI_Comm_get_parent`.
//!
//! Lanai has no dynamic process management (`MPI_Comm_spawn` is not
//! supported), so no process was ever spawned by another MPI job: the
//! standard's answer for such a process is `MPI_COMM_NULL`.

use super::call;
use super::consts as c;
use super::consts::MPI_Comm;
use crate::engine::error::MpiError;
use crate::mpi_fn;
use std::os::raw::c_int;

mpi_fn! { MPI_Comm_get_parent / PMPI_Comm_get_parent (parent: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_get_parent", None, |_| {
        if parent.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "parent is NULL"));
        }
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { *parent = c::MPI_COMM_NULL };
        Ok(())
    })
}}
