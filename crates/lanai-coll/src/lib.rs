//! Lanai collectives as sans-IO state machines, plus the predefined reduction
//! operations.
//!
//! A machine is built with its rank, the communicator size and its local
//! contribution; the driver feeds it peers' messages (`handle_message`) and
//! sends what it asks for (`poll_send`) until `is_done`. No IO, clocks or
//! threads, so the same code runs in ranks, in the offload engine and in the
//! simulator (`sim`).
//!
//! Reductions are deterministic: the combine grouping depends only on the
//! communicator size, never on arrival order or root.

#![forbid(unsafe_code)]

pub mod allreduce;
pub mod barrier;
pub mod bcast;
pub mod error;
pub mod machine;
pub mod ops;
pub mod reduce;
pub mod sim;
mod tree;

pub use allreduce::{
    allreduce, AllreduceAlgo, RecursiveDoubling, ReduceBcast, UnknownAlgorithm,
    AUTO_RECURSIVE_DOUBLING_MAX,
};
pub use barrier::{barrier, BarrierAlgo, Binomial, Dissemination, PairwiseExchange};
pub use bcast::Bcast;
pub use error::{CollError, OpError};
pub use machine::{Collective, Outgoing};
pub use ops::{combine, Combine, Elem, Op, Predefined};
pub use reduce::Reduce;
