//! Asymmetric fences for the sleep/wake handshake between local ranks.
//!
//! A rank about to sleep sets its flag and looks for work once more; a
//! rank that just published work looks at the flag. Each side needs a full
//! fence between its store and its load, or both can miss the other's
//! store and the sleeper sleeps through the wake-up. The publishing side
//! runs on every send and every small reduce, and a full fence there waits
//! for the stores before it, including the transfer of the cache line it
//! just wrote from the core that reads it: that wait was most of a small
//! reduce's cost. The sleeping side runs only after a rank has spun idle.
//!
//! So the cost moves to the sleeper, with `membarrier(2)`: a process
//! registered for `MEMBARRIER_CMD_GLOBAL_EXPEDITED` needs only a compiler
//! fence ([`light`]), and the sleeper's [`heavy`] makes every running
//! thread of every registered process pass a full barrier, which stands in
//! for theirs. Where the kernel lacks the command both sides use a full
//! fence, as before. A lost wake-up could in any case cost no more than the
//! sleep's timeout.

use std::sync::atomic::{compiler_fence, fence, AtomicBool, Ordering};

const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

/// This process takes part in the expedited barriers, so its side of the
/// handshake may be a compiler fence.
static REGISTERED: AtomicBool = AtomicBool::new(false);

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: membarrier takes plain integers and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
}

/// Registers this process for expedited barriers; call once, before it
/// first shares memory with its peers. False where the kernel refuses.
pub fn register() -> bool {
    let ok = membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
    REGISTERED.store(ok, Ordering::Relaxed);
    ok
}

/// The publishing side: orders this rank's stores before its next load,
/// given that sleepers call [`heavy`].
#[inline]
pub fn light() {
    if REGISTERED.load(Ordering::Relaxed) {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The sleeping side: a full barrier here (the system call orders the
/// caller too) and, by interrupt, on every core running a registered
/// process.
pub fn heavy() {
    if !membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) {
        // Unregistered peers fence for themselves (see `light`); only a
        // kernel that registered them and then refused this could lose a
        // wake-up, and then only for one sleep's timeout.
        fence(Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_run_wherever_the_kernel_stands() {
        let registered = register();
        light();
        heavy();
        assert_eq!(REGISTERED.load(Ordering::Relaxed), registered);
    }
}
