//! The offload engine (`lanai-engine`): one process per node that runs
//! barrier, broadcast and reductions for its ranks, as the programmable NIC
//! does in seeds 000, 001 and 003. `desc` is the descriptor format, `core`
//! the protocol without IO, `server` the process around it, `trace` its
//! optional event record; the ranks' side is `engine::offload`.
#![forbid(unsafe_code)]

pub mod core;
pub mod desc;
pub mod server;
pub mod trace;

#[cfg(test)]
mod core_tests;
