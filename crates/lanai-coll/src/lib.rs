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
// Schedules take lists of byte ranges, and a one-range list is the common case.
#![allow(clippy::single_range_in_vec_init)]

pub mod allgather;
pub mod allreduce;
pub mod alltoall;
pub mod barrier;
pub mod bcast;
pub mod central;
pub mod error;
pub mod gather;
pub mod layout;
pub mod machine;
pub mod mailbox;
pub mod ops;
pub mod reduce;
pub mod reduce_flat;
pub mod reduce_scatter;
pub mod scan;
pub mod scatter;
mod schedule;
pub mod sim;
pub mod staged_allreduce;
mod tree;

pub use allgather::{Allgather, AllgatherAlgo, Allgatherv};
pub use allreduce::{
    allreduce, AllreduceAlgo, Rabenseifner, RecursiveDoubling, ReduceBcast, RingAllreduce,
    UnknownAlgorithm, AUTO_RABENSEIFNER_MANY_MIN, AUTO_RECURSIVE_DOUBLING_MAX,
};
pub use alltoall::{Alltoall, Alltoallv};
pub use barrier::{
    barrier, leaders_barrier, leaders_use_tree, BarrierAlgo, Binomial, Dissemination, KaryTree,
    PairwiseExchange,
};
pub use bcast::{bcast, Bcast, BcastAlgo, ScatterAllgather, BCAST_AUTO_SCATTER_ALLGATHER_MIN};
pub use error::{CollError, OpError};
pub use gather::{Gather, Gatherv};
pub use layout::Layout;
pub use machine::{Collective, Head, Outgoing};
pub use ops::{combine, kernel, Combine, Elem, Kernel, Op, Predefined};
pub use reduce::{
    fold_canonical, fold_flat, fold_in_place, fold_into, fold_tree, Reduce, ReduceTree,
};
pub use reduce_flat::FlatReduce;
pub use reduce_scatter::{ReduceScatter, ReduceScatterBlock};
pub use scan::{Exscan, Scan, ScanAlgo};
pub use scatter::{Scatter, Scatterv};
