//! Lanai's MPI datatype engine.
//!
//! A [`Datatype`] is an immutable, shared value built from predefined
//! kinds ([`Primitive`], [`Named`]) by the MPI constructors (contiguous,
//! vector, indexed, struct, subarray, darray, resized, ...). It answers
//! MPI's queries (size, bounds, envelope, contents) and carries a
//! flattened form ([`Flat`]) that pack/unpack walk.
//!
//! Buffers: MPI addresses user data as `buf + displacement`, and
//! displacements may be negative. Here a user buffer is a slice plus an
//! `origin`: the index in the slice of the address the MPI caller passed.
//! Every byte the type map touches must lie inside the slice, or the call
//! fails with [`DatatypeError::UserBufferOutOfBounds`] before copying.
//!
//! This crate knows no MPI handle or constant values; the C glue maps
//! handles to `Datatype`s and back.

#![forbid(unsafe_code)]

mod darray;
pub mod datatype;
pub mod error;
pub mod external32;
pub mod flat;
pub mod pack;
pub mod primitive;
pub mod segments;
mod subarray;

pub use datatype::{
    AbiCodes, Combiner, Contents, Datatype, Distribution, Envelope, F90Kind, Order,
};
pub use error::DatatypeError;
pub use external32::{pack_external, pack_external_size, unpack_external};
pub use flat::{Flat, Run};
pub use pack::{pack, pack_partial, pack_size, unpack, unpack_partial};
pub use primitive::{Named, Primitive};
pub use segments::{Segment, Segments};
