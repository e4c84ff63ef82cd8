//! Shared memory between the ranks of one node: the segment, the per-pair
//! rings, and single-copy reads of another process's memory.
//!
//! This is one of the two places where `unsafe` code lives (with `abi`).
//! Memory shared between processes holds plain data and atomics only.

pub mod barrier_device;
pub mod cma;
pub mod engine_seg;
pub mod fence;
pub mod ring;
pub mod segment;
pub mod stage;

pub use ring::{CellHeader, ShmNode};
pub use segment::Segment;
