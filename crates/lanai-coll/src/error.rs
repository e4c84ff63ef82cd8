//! Error enums of the collectives layer.

use std::fmt;

use crate::ops::{Elem, Op};

/// Why a reduction operation could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// The two operand buffers differ in length.
    LengthMismatch { lower: usize, higher: usize },
    /// The buffer length is not a whole number of elements.
    PartialElement { len: usize, elem_size: usize },
    /// The operation is not defined on this element kind (MPI_ERR_OP).
    UndefinedForElement { op: Op, elem: Elem },
    /// A user-defined operation reported a failure.
    UserOpFailed { reason: String },
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::LengthMismatch { lower, higher } => write!(
                f,
                "operand buffers differ in length ({lower} bytes vs {higher} bytes)"
            ),
            OpError::PartialElement { len, elem_size } => write!(
                f,
                "buffer of {len} bytes is not a whole number of {elem_size}-byte elements"
            ),
            OpError::UndefinedForElement { op, elem } => {
                write!(
                    f,
                    "operation {op:?} is not defined on element kind {elem:?}"
                )
            }
            OpError::UserOpFailed { reason } => {
                write!(f, "user-defined operation failed: {reason}")
            }
        }
    }
}

impl std::error::Error for OpError {}

/// Why a collective state machine could not be built or advanced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollError {
    /// A communicator must have at least one rank.
    EmptyCommunicator,
    /// This rank (or a peer) is not below the communicator size.
    RankOutOfRange { rank: u32, size: u32 },
    /// The root is not below the communicator size.
    RootOutOfRange { root: u32, size: u32 },
    /// The algorithm only works on power-of-two communicator sizes.
    SizeNotPowerOfTwo { size: u32 },
    /// A message is too short to hold the header, or its payload is invalid.
    MalformedMessage { from: u32, reason: &'static str },
    /// A message this rank never expects from that peer in this collective.
    UnexpectedMessage { from: u32, kind: u8, step: u8 },
    /// A second message for the same peer and step.
    DuplicateMessage { from: u32, kind: u8, step: u8 },
    /// A peer's data length differs from this rank's.
    DataLengthMismatch {
        from: u32,
        expected: usize,
        got: usize,
    },
    /// Combining the data failed.
    Op(OpError),
    /// A per-rank count or displacement list does not have one entry per rank.
    CountsLengthMismatch { expected: u32, got: usize },
    /// This rank's own buffer length differs from what the counts say.
    LocalLengthMismatch { expected: usize, got: usize },
    /// A block (displacement plus count) ends beyond its buffer.
    BlockBeyondBuffer { end: usize, len: usize },
    /// A byte count or displacement sum does not fit in `usize`.
    SizeOverflow,
    /// A tree needs a fan-out of at least one.
    ZeroFanOut,
    /// A buffer that must be split between elements is not whole elements.
    NotWholeElements { len: usize, elem_size: usize },
    /// An internal schedule is inconsistent (a bug in this crate, not the caller).
    InvalidPlan { reason: &'static str },
}

impl fmt::Display for CollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollError::EmptyCommunicator => write!(f, "communicator size is zero"),
            CollError::RankOutOfRange { rank, size } => {
                write!(
                    f,
                    "rank {rank} is out of range for communicator size {size}"
                )
            }
            CollError::RootOutOfRange { root, size } => {
                write!(
                    f,
                    "root {root} is out of range for communicator size {size}"
                )
            }
            CollError::SizeNotPowerOfTwo { size } => write!(
                f,
                "communicator size {size} is not a power of two, which this algorithm needs"
            ),
            CollError::MalformedMessage { from, reason } => {
                write!(f, "malformed collective message from rank {from}: {reason}")
            }
            CollError::UnexpectedMessage { from, kind, step } => write!(
                f,
                "unexpected collective message from rank {from} (kind {kind}, step {step})"
            ),
            CollError::DuplicateMessage { from, kind, step } => write!(
                f,
                "duplicate collective message from rank {from} (kind {kind}, step {step})"
            ),
            CollError::DataLengthMismatch {
                from,
                expected,
                got,
            } => write!(
                f,
                "rank {from} sent {got} bytes of data where {expected} were expected"
            ),
            CollError::Op(e) => write!(f, "reduction failed: {e}"),
            CollError::CountsLengthMismatch { expected, got } => write!(
                f,
                "a count or displacement list has {got} entries for {expected} ranks"
            ),
            CollError::LocalLengthMismatch { expected, got } => write!(
                f,
                "this rank's buffer holds {got} bytes where the counts say {expected}"
            ),
            CollError::BlockBeyondBuffer { end, len } => write!(
                f,
                "a block ends at byte {end}, beyond its {len}-byte buffer"
            ),
            CollError::SizeOverflow => write!(f, "byte counts overflow the address space"),
            CollError::ZeroFanOut => write!(f, "a tree's fan-out must be at least 1"),
            CollError::InvalidPlan { reason } => {
                write!(f, "internal collective schedule is invalid: {reason}")
            }
            CollError::NotWholeElements { len, elem_size } => write!(
                f,
                "buffer of {len} bytes is not a whole number of {elem_size}-byte elements"
            ),
        }
    }
}

impl std::error::Error for CollError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CollError::Op(e) => Some(e),
            _ => None,
        }
    }
}

impl From<OpError> for CollError {
    fn from(e: OpError) -> Self {
        CollError::Op(e)
    }
}
