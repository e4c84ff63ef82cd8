//! The PMI-1 wire protocol ("simple PMI"), as spoken over `PMI_FD` by MPICH's
//! Hydra and by `lanairun`.
//!
//! Every message is one line of space-separated `key=value` fields, the first
//! of which is `cmd=<name>`, ended by `\n`. [`line`] parses and formats lines,
//! [`message`] gives them types (requests from ranks, responses from the
//! server), and [`client`] is a blocking client for one rank.

pub mod client;
pub mod line;
pub mod message;

pub use client::{Maxes, PmiClient};
pub use line::{parse_line, Line, MAX_LINE};
pub use message::{Request, Response};

use std::fmt;

/// Everything that can go wrong speaking PMI-1, on either side.
#[derive(Debug)]
pub enum PmiError {
    /// A line (or unterminated input) is longer than [`MAX_LINE`] bytes.
    LineTooLong { len: usize, max: usize },
    /// The line is not valid UTF-8.
    NotUtf8,
    /// The line holds nothing but whitespace.
    EmptyLine,
    /// The first field is not `cmd=<name>`.
    MissingCmd,
    /// A field has no key (`=value`), or text precedes the first `key=`.
    BadField(String),
    /// A command lacks a field it needs.
    MissingField { cmd: String, field: &'static str },
    /// A numeric field does not hold a number.
    BadNumber { field: &'static str, value: String },
    /// A key the client was asked to send cannot travel on the wire.
    InvalidKey { key: String, reason: &'static str },
    /// A value the client was asked to send cannot travel on the wire.
    InvalidValue { len: usize, reason: &'static str },
    /// The server answered with a different command than the one expected.
    UnexpectedReply { expected: &'static str, got: String },
    /// The server answered with a non-zero `rc`.
    Failed {
        cmd: &'static str,
        rc: i32,
        msg: String,
    },
    /// The connection closed before a full reply arrived.
    Closed,
    /// Reading or writing the connection failed.
    Io(std::io::Error),
}

impl fmt::Display for PmiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LineTooLong { len, max } => {
                write!(f, "PMI line of {len} bytes exceeds the limit of {max}")
            }
            Self::NotUtf8 => write!(f, "PMI line is not valid UTF-8"),
            Self::EmptyLine => write!(f, "empty PMI line"),
            Self::MissingCmd => write!(f, "PMI line does not start with cmd=<name>"),
            Self::BadField(t) => write!(f, "malformed PMI field {t:?}"),
            Self::MissingField { cmd, field } => {
                write!(f, "PMI command {cmd:?} lacks the field {field:?}")
            }
            Self::BadNumber { field, value } => {
                write!(f, "PMI field {field}={value:?} is not a number")
            }
            Self::InvalidKey { key, reason } => write!(f, "PMI key {key:?} is invalid: {reason}"),
            Self::InvalidValue { len, reason } => {
                write!(f, "PMI value of {len} bytes is invalid: {reason}")
            }
            Self::UnexpectedReply { expected, got } => {
                write!(f, "PMI server sent {got:?} where {expected:?} was expected")
            }
            Self::Failed { cmd, rc, msg } => write!(f, "PMI {cmd} failed (rc={rc}): {msg}"),
            Self::Closed => write!(f, "PMI connection closed by the server"),
            Self::Io(e) => write!(f, "PMI connection error: {e}"),
        }
    }
}

impl std::error::Error for PmiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for PmiError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}
