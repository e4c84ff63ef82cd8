//! The process-wide engine, reached by every entry point.
//!
//! Lanai provides at most `MPI_THREAD_SERIALIZED`: the application promises
//! that no two threads are inside MPI at once. That promise is what makes a
//! lock-free global sound here, and it keeps a mutex off the hot path.

use super::consts as c;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};

struct Global(UnsafeCell<Option<Engine>>);

// SAFETY: access is serialized by the MPI threading contract (see the
// module docs); the cell is never touched by two threads at once.
unsafe impl Sync for Global {}

static ENGINE: Global = Global(UnsafeCell::new(None));
static PHASE: AtomicU8 = AtomicU8::new(NOT_STARTED);
/// Thread that called MPI_Init (for MPI_Is_thread_main).
static MAIN_THREAD: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

pub const NOT_STARTED: u8 = 0;
pub const RUNNING: u8 = 1;
pub const FINALIZED: u8 = 2;

pub fn phase() -> u8 {
    PHASE.load(Ordering::Acquire)
}

/// Installs the engine at `MPI_Init`.
pub fn install(e: Engine) {
    // SAFETY: called once, before any other thread may use MPI.
    unsafe { *ENGINE.0.get() = Some(e) };
    let _ = MAIN_THREAD.set(std::thread::current().id());
    PHASE.store(RUNNING, Ordering::Release);
}

pub fn is_main_thread() -> bool {
    MAIN_THREAD.get() == Some(&std::thread::current().id())
}

pub fn set_finalized() {
    PHASE.store(FINALIZED, Ordering::Release);
}

/// Runs `f` on the engine. Errors if MPI is not initialized (or finalized).
///
/// `f` must not re-enter MPI (call back into user code) while it holds the
/// engine; error handlers run after it returns.
pub fn with_engine<R>(f: impl FnOnce(&mut Engine) -> MpiResult<R>) -> MpiResult<R> {
    match phase() {
        RUNNING => {}
        NOT_STARTED => return Err(MpiError::other("called before MPI_Init")),
        _ => return Err(MpiError::other("called after MPI_Finalize")),
    }
    // SAFETY: MPI calls are serialized (module docs) and `f` does not
    // re-enter MPI, so this is the only live reference to the engine.
    let eng = unsafe { (*ENGINE.0.get()).as_mut() };
    match eng {
        Some(e) => f(e),
        None => Err(MpiError::new(c::MPI_ERR_INTERN, "engine missing")),
    }
}
