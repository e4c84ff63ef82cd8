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

/// Lanai's own buffers (collective messages, reassembly, early arrivals)
/// come and go at every call; glibc's heap hands 64 KiB ones back to the
/// kernel and faults them in again each time. The application's own
/// `malloc` is untouched: this allocator serves only Rust code here.
#[global_allocator]
static ALLOC: abi::heap::Heap = abi::heap::Heap;
