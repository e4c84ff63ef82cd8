//! Pieces shared by the library, the launcher and the tools: the one registry
//! of `LANAI_*` knobs, and the naming of per-job shared-memory segments.
#![forbid(unsafe_code)]

pub mod knobs;
pub mod log;
pub mod shm_names;

/// The Lanai version, as reported by `MPI_Get_library_version` and `lanai-info`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
