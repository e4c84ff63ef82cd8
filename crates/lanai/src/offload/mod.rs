//! The offload engine (`lanai-engine`): one process per node that runs
//! barrier, broadcast and reductions for its ranks, as the programmable NIC
//! does in seeds 000, 001 and 003. `desc` is the descriptor format, `core`
//! the protocol without IO, `server` the process around it; the ranks' side
//! is `engine::offload`.
#![forbid(unsafe_code)]

pub mod core;
pub mod desc;
pub mod server;

#[cfg(test)]
mod core_tests;
