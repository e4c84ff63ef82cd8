//! Lanai: an MPI library with MPICH's ABI.
//!
//! Layers, bottom up: `shm` (shared-memory transport), `lanai_tcp` (TCP
//! transport), `engine` (requests, matching, protocols, progress), `coll`
//! glue over `lanai_coll`'s state machines, and `abi` (the C surface).
//! Only `abi` and `shm` contain `unsafe` code.

pub mod abi;
pub mod engine;
pub mod offload;
pub mod shm;
