//! Turning the inherited `PMI_FD` into a `UnixStream` (the probe's only unsafe).

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::stat::{fstat, SFlag};

static TAKEN: AtomicBool = AtomicBool::new(false);

/// The stream on `PMI_FD`. Fails if it is unset, not an open socket, or was
/// already taken.
pub fn stream_from_env() -> Result<UnixStream, String> {
    let text = std::env::var("PMI_FD").map_err(|_| "PMI_FD is not set".to_string())?;
    let fd: RawFd = text
        .parse()
        .map_err(|_| format!("PMI_FD={text:?} is not a descriptor"))?;
    if fd < 0 {
        return Err(format!("PMI_FD={fd} is negative"));
    }
    let st = fstat(fd).map_err(|e| format!("PMI_FD={fd} is not open: {}", e.desc()))?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
        return Err(format!("PMI_FD={fd} is not a socket"));
    }
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err("PMI_FD was already taken".to_string());
    }
    // SAFETY: fd is open (fstat succeeded), it was inherited for exactly this
    // use, nothing else in this program refers to it, and TAKEN ensures it is
    // wrapped at most once, so the OwnedFd is its sole owner.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(UnixStream::from(owned))
}
