//! `MPI_Pcontrol`: the standard's hook for profiling tools.
//!
//! The standard defines it to do nothing unless a profiling library that
//! interposes `MPI_Pcontrol` gives it a meaning; Lanai has no profiling
//! layer of its own, so success without effect is the defined behaviour,
//! not a stand-in. A tool loaded ahead of Lanai still sees the call (and
//! may forward it to `PMPI_Pcontrol`, which is this).

use super::consts as c;
use crate::mpi_fn;
use std::os::raw::c_int;

// The C prototype is `int MPI_Pcontrol(const int level, ...)`. The
// arguments after `level` are never read, and on the C calling conventions
// Lanai supports a callee that ignores trailing variadic arguments may be
// defined without them.
mpi_fn! { MPI_Pcontrol / PMPI_Pcontrol (_level: c_int) -> c_int {
    c::MPI_SUCCESS
}}
