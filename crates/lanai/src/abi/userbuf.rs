//! A user buffer handed to MPI by pointer, kept by requests until completion.
//!
//! The `unsafe` contract sits at construction, in the ABI layer, where the
//! MPI standard's rules about buffer lifetimes apply; the engine then reads
//! and writes it through safe, bounds-checked methods.
//!
//! A buffer is either one contiguous run of bytes or a non-contiguous
//! datatype layout ([`Layout`]). The engine addresses both as a packed byte
//! stream (`read_at`/`write_at`) or as the list of contiguous user-memory
//! segments holding it (`segments`), so rendezvous can move non-contiguous
//! data without a temporary.

use lanai_datatype::Datatype;
use std::cell::OnceCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes copied between a non-contiguous layout and packed bytes, for
/// `LANAI_STATS` (zero-copy transfers leave it untouched).
static PACKED: AtomicU64 = AtomicU64::new(0);

/// Total bytes packed or unpacked so far in this process.
pub fn packed_bytes() -> u64 {
    PACKED.load(Ordering::Relaxed)
}

/// Records `n` bytes packed or unpacked.
pub fn count_packed(n: usize) {
    PACKED.fetch_add(n as u64, Ordering::Relaxed);
}

/// `count` instances of a non-contiguous datatype in user memory: the
/// span `[ptr, ptr + span)` that the type map touches, with the buffer's
/// origin (the address the caller passed) at index `origin`.
pub struct Layout {
    dt: Datatype,
    count: u64,
    ptr: *mut u8,
    span: usize,
    origin: usize,
    size: usize,
    /// Packed bytes, made on first request by `UserBuf::as_slice`.
    packed: OnceCell<Vec<u8>>,
}

// SAFETY: a Layout is address data like `UserBuf`; MPI calls are
// serialized (at most MPI_THREAD_SERIALIZED), so moving it between threads
// (into the pending table) creates no concurrent access.
unsafe impl Send for Layout {}

impl Layout {
    /// # Safety
    /// Every byte the type map of `count` instances of `dt` touches lies in
    /// `[ptr, ptr + span)`, `origin` bytes into it, and that span is user
    /// memory valid as [`UserBuf::new`] requires for as long as the layout
    /// is used. `size` is the packed size of the `count` instances.
    pub unsafe fn new(
        dt: Datatype,
        count: u64,
        ptr: *mut u8,
        span: usize,
        origin: usize,
        size: usize,
    ) -> Layout {
        Layout {
            dt,
            count,
            ptr,
            span,
            origin,
            size,
            packed: OnceCell::new(),
        }
    }

    fn span(&self) -> &[u8] {
        // SAFETY: `new`'s contract makes the span valid user memory.
        unsafe { std::slice::from_raw_parts(self.ptr, self.span) }
    }

    #[allow(clippy::mut_from_ref)]
    fn span_mut(&self) -> &mut [u8] {
        // SAFETY: as for `span`; MPI forbids other access to a receive
        // buffer while the operation runs.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.span) }
    }

    fn read_at(&self, pos: usize, out: &mut [u8]) -> usize {
        let n = lanai_datatype::pack_partial(
            &self.dt,
            self.count,
            self.span(),
            self.origin,
            pos as u64,
            out,
        )
        .unwrap_or(0);
        count_packed(n);
        n
    }

    fn write_at(&self, pos: usize, src: &[u8]) -> usize {
        let n = lanai_datatype::unpack_partial(
            &self.dt,
            self.count,
            src,
            pos as u64,
            self.span_mut(),
            self.origin,
        )
        .unwrap_or(0);
        count_packed(n);
        n
    }
}

/// A region of user memory: valid for reads (and writes, for receive
/// buffers) until the request that holds it completes.
#[derive(Debug, Clone, Copy)]
pub struct UserBuf {
    ptr: *mut u8,
    /// Bytes of data (packed bytes, for a layout).
    len: usize,
    /// A non-contiguous layout, owned by the operation (see `segmented`).
    layout: Option<NonNull<Layout>>,
}

impl std::fmt::Debug for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Layout({} bytes in {} count)", self.size, self.count)
    }
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
        layout: None,
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
            Self {
                ptr,
                len,
                layout: None,
            }
        }
    }

    /// A buffer over memory that lives as long as the process, for the
    /// engine's tests (the engine itself has no `unsafe`).
    #[cfg(test)]
    pub fn leaked(len: usize) -> Self {
        let mem: &'static mut [u8] = Vec::leak(vec![0; len]);
        // SAFETY: leaked memory is valid forever and nothing else holds it.
        unsafe { Self::new(mem.as_mut_ptr(), len) }
    }

    /// A non-contiguous buffer.
    ///
    /// # Safety
    /// `layout` must stay alive (and not move) until the operation using
    /// the returned buffer completes: the caller keeps it in the request's
    /// pending state.
    pub unsafe fn segmented(layout: &Layout) -> Self {
        if layout.size == 0 {
            return Self::EMPTY;
        }
        Self {
            ptr: layout.ptr,
            len: layout.size,
            layout: Some(NonNull::from(layout)),
        }
    }

    fn layout(&self) -> Option<&Layout> {
        // SAFETY: `segmented`'s contract keeps the layout alive while the
        // buffer is in use.
        self.layout.map(|l| unsafe { l.as_ref() })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes `r` of a contiguous buffer, valid as long as the whole is;
    /// `None` for a layout or a range past the end.
    pub fn range(&self, r: std::ops::Range<usize>) -> Option<UserBuf> {
        if self.layout.is_some() || r.start > r.end || r.end > self.len {
            return None;
        }
        // SAFETY: the range lies inside this buffer, whose contract covers
        // every byte of it for as long as it lives.
        Some(unsafe { UserBuf::new(self.ptr.add(r.start), r.end - r.start) })
    }

    /// Whether the data is one contiguous run at `addr()`.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_none()
    }

    /// Mean bytes per contiguous piece (the whole length when contiguous).
    pub fn mean_piece(&self) -> usize {
        match self.layout() {
            None => self.len,
            Some(l) => {
                let pieces = l.dt.flat().pieces().saturating_mul(l.count).max(1);
                (l.size as u64 / pieces) as usize
            }
        }
    }

    /// The address, for single-copy transfers done by the kernel
    /// (contiguous buffers; see `segments` for the general case).
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// The whole data for reading. A layout is packed once, on first use
    /// (transports that need contiguous bytes; rendezvous avoids this).
    pub fn as_slice(&self) -> &[u8] {
        match self.layout() {
            None => {
                // SAFETY: guaranteed valid for `len` bytes by `new`'s contract.
                unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
            }
            Some(l) => l.packed.get_or_init(|| {
                let mut v = vec![0u8; l.size];
                l.read_at(0, &mut v);
                v
            }),
        }
    }

    /// The whole buffer for writing: contiguous buffers only (a layout
    /// gives an empty slice; receives write it through `write_at`).
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        if self.layout.is_some() {
            return &mut [];
        }
        // SAFETY: guaranteed valid and not otherwise accessed by `new`'s contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Copies `src` to offset 0, truncating to the buffer; returns bytes written.
    pub fn write(&self, src: &[u8]) -> usize {
        self.write_at(0, src)
    }

    /// Copies `src` to data bytes `[pos, ..)`, truncating at the end of
    /// the buffer; returns bytes written.
    pub fn write_at(&self, pos: usize, src: &[u8]) -> usize {
        if pos >= self.len {
            return 0;
        }
        let n = src.len().min(self.len - pos);
        match self.layout() {
            None => {
                self.as_mut_slice()[pos..pos + n].copy_from_slice(&src[..n]);
                n
            }
            Some(l) => l.write_at(pos, &src[..n]),
        }
    }

    /// Copies data bytes `[pos, pos + out.len())` into `out` (clipped at
    /// the end); returns bytes copied.
    pub fn read_at(&self, pos: usize, out: &mut [u8]) -> usize {
        if pos >= self.len {
            return 0;
        }
        let n = out.len().min(self.len - pos);
        match self.layout() {
            None => {
                out[..n].copy_from_slice(&self.as_slice()[pos..pos + n]);
                n
            }
            Some(l) => l.read_at(pos, &mut out[..n]),
        }
    }

    /// The (address, length) pieces of user memory holding data bytes
    /// `[0, len)`, in order: one for a contiguous buffer.
    pub fn segments(&self) -> Segments<'_> {
        match self.layout() {
            None => Segments::One((self.len > 0).then_some((self.ptr as usize, self.len))),
            Some(l) => match l.dt.segments(l.count, 0, l.size as u64) {
                Ok(it) => Segments::Many {
                    base: l.ptr as usize as i64 + l.origin as i64,
                    it,
                },
                Err(_) => Segments::One(None),
            },
        }
    }
}

/// Iterator over a buffer's (address, length) pieces.
pub enum Segments<'a> {
    One(Option<(usize, usize)>),
    Many {
        base: i64,
        it: lanai_datatype::Segments<'a>,
    },
}

impl Iterator for Segments<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        match self {
            Segments::One(s) => s.take(),
            Segments::Many { base, it } => it
                .next()
                .map(|s| (base.wrapping_add(s.offset) as usize, s.len as usize)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vector of 3 blocks of 2 bytes, stride 4, over a 12-byte buffer.
    fn vector_layout(mem: &mut [u8; 12]) -> Layout {
        let byte = Datatype::primitive(lanai_datatype::Primitive::Byte);
        let v = Datatype::vector(3, 2, 4, &byte).expect("valid vector");
        // SAFETY: the vector touches bytes 0..10 of `mem`, which outlives it.
        unsafe { Layout::new(v, 1, mem.as_mut_ptr(), 12, 0, 6) }
    }

    #[test]
    fn layout_reads_writes_and_lists_segments() {
        let mut mem = [0u8; 12];
        let l = vector_layout(&mut mem);
        // SAFETY: `l` outlives `b`.
        let b = unsafe { UserBuf::segmented(&l) };
        assert_eq!(b.len(), 6);
        assert_eq!(b.write_at(1, &[1, 2, 3, 4, 5, 6, 7]), 5);
        let mut out = [0u8; 6];
        assert_eq!(b.read_at(0, &mut out), 6);
        assert_eq!(out, [0, 1, 2, 3, 4, 5]);
        let base = l.ptr as usize;
        let segs: Vec<_> = b.segments().collect();
        assert_eq!(segs, vec![(base, 2), (base + 4, 2), (base + 8, 2)]);
        assert_eq!(b.as_slice(), &[0, 1, 2, 3, 4, 5]);
        drop(l);
        assert_eq!(mem, [0, 1, 0, 0, 2, 3, 0, 0, 4, 5, 0, 0]);
    }
}
