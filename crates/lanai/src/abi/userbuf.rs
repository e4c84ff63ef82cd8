//! A user buffer handed to MPI by pointer, kept by requests until completion.
//!
//! The `unsafe` contract sits at construction, in the ABI layer, where the
//! MPI standard's rules about buffer lifetimes apply; the engine then reads
//! and writes it through safe, bounds-checked methods.

/// A region of user memory: valid for reads (and writes, for receive
/// buffers) until the request that holds it completes.
#[derive(Debug, Clone, Copy)]
pub struct UserBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a UserBuf is plain address data; the MPI library is used from one
// thread at a time (at most MPI_THREAD_SERIALIZED), so moving it between
// threads introduces no concurrent access.
unsafe impl Send for UserBuf {}

impl UserBuf {
    /// An empty buffer (count 0, or MPI_PROC_NULL).
    pub const EMPTY: UserBuf = UserBuf {
        ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
        len: 0,
    };

    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes until the
    /// operation using it completes, as MPI requires of send and receive
    /// buffers, and nothing else may access it meanwhile except by reading
    /// (for send buffers). `ptr` may be null only when `len` is 0.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        if len == 0 {
            Self::EMPTY
        } else {
            Self { ptr, len }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address, for single-copy transfers done by the kernel.
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// The whole buffer for reading.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: guaranteed valid for `len` bytes by `new`'s contract.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The whole buffer for writing.
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: guaranteed valid and not otherwise accessed by `new`'s contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Copies `src` to offset 0, truncating to the buffer; returns bytes written.
    pub fn write(&self, src: &[u8]) -> usize {
        let n = src.len().min(self.len);
        self.as_mut_slice()[..n].copy_from_slice(&src[..n]);
        n
    }
}
