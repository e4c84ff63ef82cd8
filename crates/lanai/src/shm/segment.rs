//! A POSIX shared-memory segment mapped into this process.

use nix::fcntl::OFlag;
use nix::sys::mman::{mmap, munmap, shm_open, shm_unlink, MapFlags, ProtFlags};
use nix::sys::stat::Mode;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// A mapped segment; unmapped on drop (the name is unlinked separately).
#[derive(Debug)]
pub struct Segment {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is process-wide memory; all shared access through it
// goes via atomics or the ring protocol.
unsafe impl Send for Segment {}

impl Segment {
    /// Creates (exclusively) and maps a zero-filled segment of `len` bytes.
    pub fn create(name: &str, len: usize) -> nix::Result<Self> {
        let fd = shm_open(
            name,
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR,
            Mode::S_IRUSR | Mode::S_IWUSR,
        )?;
        if let Err(e) = nix::unistd::ftruncate(&fd, len as i64) {
            let _ = shm_unlink(name);
            return Err(e);
        }
        Self::map(fd, len).inspect_err(|_| {
            let _ = shm_unlink(name);
        })
    }

    /// Maps an existing segment created by another rank.
    pub fn open(name: &str, len: usize) -> nix::Result<Self> {
        let fd = shm_open(name, OFlag::O_RDWR, Mode::empty())?;
        let st = nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd))?;
        if (st.st_size as usize) < len {
            return Err(nix::Error::EINVAL);
        }
        Self::map(fd, len)
    }

    fn map(fd: std::os::fd::OwnedFd, len: usize) -> nix::Result<Self> {
        let nz = NonZeroUsize::new(len).ok_or(nix::Error::EINVAL)?;
        // SAFETY: a fresh shared mapping of a file we just opened; no Rust
        // object aliases it yet.
        let p = unsafe {
            mmap(
                None,
                nz,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &fd,
                0,
            )?
        };
        Ok(Self {
            base: p.cast(),
            len,
        })
    }

    /// Removes the name; existing mappings stay valid.
    pub fn unlink(name: &str) -> nix::Result<()> {
        shm_unlink(name)
    }

    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shared word at byte offset `off` (4-aligned, inside the mapping).
    pub fn atomic_u32(&self, off: usize) -> &AtomicU32 {
        assert!(
            off.is_multiple_of(4) && off + 4 <= self.len,
            "bad word offset {off}"
        );
        // SAFETY: `off` is 4-aligned and inside the mapping, which lives as
        // long as `self`; words shared between processes are only accessed
        // atomically.
        unsafe { &*(self.base().add(off) as *const AtomicU32) }
    }

    /// The shared 8-byte word at `off` (8-aligned, inside the mapping).
    pub fn atomic_u64(&self, off: usize) -> &AtomicU64 {
        &self.atomic_u64s::<1>(off)[0]
    }

    /// `N` consecutive shared 8-byte words from `off` (8-aligned, inside the
    /// mapping), checked once.
    #[inline]
    pub fn atomic_u64s<const N: usize>(&self, off: usize) -> &[AtomicU64; N] {
        assert!(
            off.is_multiple_of(8) && off + 8 * N <= self.len,
            "bad word offset {off}"
        );
        // SAFETY: as for `atomic_u32`, with 8-byte alignment, for all `N`
        // words; `[AtomicU64; N]` has the layout of `N` such words in a row.
        unsafe { &*(self.base().add(off) as *const [AtomicU64; N]) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: we own this mapping; ring users hold borrows of `self`, so
        // none outlive it.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}
