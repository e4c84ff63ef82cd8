//! Lanai's wire formats. Decoding never panics and never trusts a length.
#![forbid(unsafe_code)]

pub mod envelope;
pub mod frame;
pub mod handshake;
pub mod pmi;
