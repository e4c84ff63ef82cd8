//! The engine's error: an MPI error class plus a one-line cause.

use crate::abi::consts as c;

/// An error to report through the communicator's error handler, read
/// through its [`Detail`]. Boxed so that an `MpiResult` of a word or two
/// comes back in registers: every call on the hot paths returns one, and
/// a result returned through memory costs a stall when the caller reads it
/// back right after stores to shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError(Box<Detail>);

/// What an [`MpiError`] says. `msg` is the cause alone; the ABI layer
/// prefixes the MPI function's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detail {
    pub class: i32,
    pub msg: String,
    /// Caused by another process failing (a lost connection, a dead peer):
    /// the launcher is probably ending the job and naming the real culprit.
    pub peer_failure: bool,
    /// The communicator whose error handler hears of it, when not the
    /// call's own: a completed request's.
    pub comm: Option<usize>,
}

impl std::ops::Deref for MpiError {
    type Target = Detail;
    fn deref(&self) -> &Detail {
        &self.0
    }
}

impl std::ops::DerefMut for MpiError {
    fn deref_mut(&mut self) -> &mut Detail {
        &mut self.0
    }
}

impl MpiError {
    #[cold]
    pub fn new(class: i32, msg: impl Into<String>) -> Self {
        Self(Box::new(Detail {
            class,
            msg: msg.into(),
            peer_failure: false,
            comm: None,
        }))
    }
    /// Raised on communicator `comm` (when known) rather than the call's.
    pub fn on_comm(mut self, comm: Option<usize>) -> Self {
        self.comm = comm.or(self.comm);
        self
    }
    pub fn peer_lost(msg: impl Into<String>) -> Self {
        let mut e = Self::other(msg);
        e.peer_failure = true;
        e
    }
    pub fn rank(rank: i32, size: usize) -> Self {
        Self::new(
            c::MPI_ERR_RANK,
            format!("invalid rank {rank} (communicator size {size})"),
        )
    }
    pub fn tag(tag: i32, ub: i32) -> Self {
        Self::new(
            c::MPI_ERR_TAG,
            format!("invalid tag {tag} (valid tags are 0..={ub})"),
        )
    }
    pub fn count(count: i64) -> Self {
        Self::new(c::MPI_ERR_COUNT, format!("invalid count {count}"))
    }
    pub fn comm() -> Self {
        Self::new(c::MPI_ERR_COMM, "invalid communicator")
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        Self::new(c::MPI_ERR_INTERN, msg)
    }
    pub fn other(msg: impl Into<String>) -> Self {
        Self::new(c::MPI_ERR_OTHER, msg)
    }
}

impl std::fmt::Display for MpiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for MpiError {}

pub type MpiResult<T> = Result<T, MpiError>;
