//! Lanai's TCP transport: non-blocking sockets on epoll, connections made on
//! demand (seed 004) and authenticated with the job secret before any frame
//! is accepted. Carries (envelope, payload) pairs opaquely.
#![forbid(unsafe_code)]

mod congestion;
mod conn;
mod error;
pub mod link;
#[cfg(test)]
mod shutdown_tests;
mod transport;

pub use error::TcpError;
pub use lanai_wire::envelope::Envelope;
pub use transport::{Config, Deliver, Progress, Role, Sink, Stats, TcpTransport};
