//! The one error type of the datatype layer.

use std::fmt;

/// Everything a datatype constructor, pack or unpack can refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatatypeError {
    /// Two argument arrays that must have the same length do not.
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// A subarray argument is out of range (dimension and reason).
    InvalidSubarray { dim: usize, reason: &'static str },
    /// A darray argument is out of range (dimension, if any, and reason).
    InvalidDarray {
        dim: Option<usize>,
        reason: &'static str,
    },
    /// A size, extent or displacement does not fit in 64 bits.
    Overflow,
    /// The user buffer does not hold every byte the type map touches.
    UserBufferOutOfBounds {
        lowest: i128,
        highest: i128,
        len: usize,
    },
    /// The packed buffer is too small for what must be packed or unpacked.
    PackedBufferTooSmall { needed: u64, available: u64 },
    /// A packed-stream position lies past the end of the message.
    PositionOutOfRange { position: u64, total: u64 },
    /// An external32 value does not fit the smaller external size
    /// (e.g. a 64-bit `long` into external32's 4 bytes).
    ConversionOverflow { what: &'static str },
}

impl fmt::Display for DatatypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LengthMismatch {
                what,
                expected,
                got,
            } => write!(f, "{what}: expected {expected} entries, got {got}"),
            Self::InvalidSubarray { dim, reason } => {
                write!(f, "invalid subarray in dimension {dim}: {reason}")
            }
            Self::InvalidDarray {
                dim: Some(d),
                reason,
            } => {
                write!(f, "invalid darray in dimension {d}: {reason}")
            }
            Self::InvalidDarray { dim: None, reason } => write!(f, "invalid darray: {reason}"),
            Self::Overflow => write!(f, "datatype size, extent or displacement overflows 64 bits"),
            Self::UserBufferOutOfBounds {
                lowest,
                highest,
                len,
            } => write!(
                f,
                "type map touches bytes {lowest}..{highest} of the user buffer but it has {len}"
            ),
            Self::PackedBufferTooSmall { needed, available } => write!(
                f,
                "packed buffer too small: {needed} bytes needed, {available} available"
            ),
            Self::PositionOutOfRange { position, total } => write!(
                f,
                "packed position {position} is past the end of the {total}-byte message"
            ),
            Self::ConversionOverflow { what } => {
                write!(f, "value of {what} does not fit its external32 size")
            }
        }
    }
}

impl std::error::Error for DatatypeError {}

/// Narrows an exact (i128) result to i64, or reports overflow.
pub(crate) fn to_i64(v: i128) -> Result<i64, DatatypeError> {
    i64::try_from(v).map_err(|_| DatatypeError::Overflow)
}

/// Narrows an exact (u128) result to u64, or reports overflow.
pub(crate) fn to_u64(v: u128) -> Result<u64, DatatypeError> {
    u64::try_from(v).map_err(|_| DatatypeError::Overflow)
}
