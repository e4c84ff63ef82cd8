//! MPICH's `MPIX_` extensions that MPICH's Fortran library imports, so that
//! Fortran programs built with MPICH find every symbol they bind.
//!
//! Lanai has no GPU buffers, so the GPU queries answer "no". The ULFM
//! fault-tolerance calls are not implemented: they report
//! `MPI_ERR_UNSUPPORTED_OPERATION`. `MPIX_Delete_error_*` are MPICH's
//! earlier names for MPI 4.1's `MPI_Remove_error_*`.

use super::consts as c;
use super::consts::MPI_Comm;
use super::errors::unsupported;
use crate::mpi_fn;
use std::os::raw::c_int;

mpi_fn! { MPIX_Query_cuda_support / PMPIX_Query_cuda_support () -> c_int { 0 } }
mpi_fn! { MPIX_Query_hip_support / PMPIX_Query_hip_support () -> c_int { 0 } }
mpi_fn! { MPIX_Query_ze_support / PMPIX_Query_ze_support () -> c_int { 0 } }

mpi_fn! { MPIX_GPU_query_support / PMPIX_GPU_query_support (gpu_type: c_int, is_supported: *mut c_int) -> c_int {
    let _ = gpu_type;
    if is_supported.is_null() {
        return super::errors::raise(
            "MPIX_GPU_query_support",
            None,
            crate::engine::error::MpiError::new(c::MPI_ERR_ARG, "is_supported is NULL"),
        );
    }
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *is_supported = 0 };
    c::MPI_SUCCESS
}}

mpi_fn! { MPIX_Comm_agree / PMPIX_Comm_agree (comm: MPI_Comm, flag: *mut c_int) -> c_int {
    let _ = (comm, flag);
    unsupported("MPIX_Comm_agree")
}}

mpi_fn! { MPIX_Comm_failure_ack / PMPIX_Comm_failure_ack (comm: MPI_Comm) -> c_int {
    let _ = comm;
    unsupported("MPIX_Comm_failure_ack")
}}

mpi_fn! { MPIX_Comm_failure_get_acked / PMPIX_Comm_failure_get_acked (comm: MPI_Comm, group: *mut c_int) -> c_int {
    let _ = (comm, group);
    unsupported("MPIX_Comm_failure_get_acked")
}}

mpi_fn! { MPIX_Comm_revoke / PMPIX_Comm_revoke (comm: MPI_Comm) -> c_int {
    let _ = comm;
    unsupported("MPIX_Comm_revoke")
}}

mpi_fn! { MPIX_Comm_shrink / PMPIX_Comm_shrink (comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    let _ = (comm, newcomm);
    unsupported("MPIX_Comm_shrink")
}}

mpi_fn! { MPIX_Delete_error_class / PMPIX_Delete_error_class (errorclass: c_int) -> c_int {
    // SAFETY: forwards the caller's argument unchanged.
    unsafe { super::errhandler::PMPI_Remove_error_class(errorclass) }
}}

mpi_fn! { MPIX_Delete_error_code / PMPIX_Delete_error_code (errorcode: c_int) -> c_int {
    // SAFETY: forwards the caller's argument unchanged.
    unsafe { super::errhandler::PMPI_Remove_error_code(errorcode) }
}}

mpi_fn! { MPIX_Delete_error_string / PMPIX_Delete_error_string (errorcode: c_int) -> c_int {
    // SAFETY: forwards the caller's argument unchanged.
    unsafe { super::errhandler::PMPI_Remove_error_string(errorcode) }
}}
