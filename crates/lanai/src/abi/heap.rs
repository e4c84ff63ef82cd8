//! The library's global allocator: mimalloc, entered where the alignment
//! allows through its plain `mi_malloc`, as Rust's system allocator does
//! with `malloc`. The `mimalloc` crate always takes the aligned entry
//! (`mi_malloc_aligned`), which re-checks the alignment on every call:
//! about 40 instructions more per allocation, on paths that allocate per
//! call (a small `MPI_Gatherv` root: 3-4 allocations).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment of every `mi_malloc` block of at least this many bytes:
/// mimalloc's `MI_MAX_ALIGN_SIZE`, `malloc`'s guarantee (`max_align_t`)
/// that it must keep as a drop-in `malloc`.
const MALLOC_ALIGN: usize = 16;

/// mimalloc behind the plain entry points where they suffice.
pub struct Heap;

/// Whether a plain `mi_malloc` of `size` bytes is aligned enough.
#[inline(always)]
fn plain(align: usize, size: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size
}

// SAFETY: every block comes from mimalloc with at least the layout's size
// and alignment (plain entries only where `plain` holds, the aligned ones
// otherwise), and goes back to `mi_free`, which takes blocks of either.
unsafe impl GlobalAlloc for Heap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // SAFETY: plain FFI allocation calls; a null return is passed on
        // as the out-of-memory answer `GlobalAlloc` expects.
        unsafe {
            if plain(align, size) {
                mi::mi_malloc(size).cast()
            } else {
                mi::mi_malloc_aligned(size, align).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(align, size) {
                mi::mi_zalloc(size).cast()
            } else {
                mi::mi_zalloc_aligned(size, align).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the caller's contract).
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        // SAFETY: `ptr` came from this allocator with `layout`; the new
        // block keeps the alignment by the same rule as `alloc`.
        unsafe {
            if plain(align, new_size) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, align).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_alignment_asked_for() {
        let heap = Heap;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [align, 2 * align, 3 * align, 48, 80, 1000, 70_000] {
                if !size.is_multiple_of(align) {
                    continue;
                }
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is freed once below.
                unsafe {
                    let p = heap.alloc(layout);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "alloc {size} / {align}"
                    );
                    p.write_bytes(0xa5, size);
                    let q = heap.realloc(p, layout, size * 3);
                    assert!(
                        !q.is_null() && (q as usize).is_multiple_of(align),
                        "realloc {size} / {align}"
                    );
                    assert_eq!(*q.add(size - 1), 0xa5, "realloc kept the contents");
                    heap.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = heap.alloc_zeroed(layout);
                    assert!(
                        (z as usize).is_multiple_of(align) && *z.add(size - 1) == 0,
                        "zeroed {size}"
                    );
                    heap.dealloc(z, layout);
                }
            }
        }
    }
}
