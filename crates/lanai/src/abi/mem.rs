//! `MPI_Alloc_mem` / `MPI_Free_mem`, and the aligned blocks behind
//! `MPI_Win_allocate`.
//!
//! Blocks come from the Rust allocator with cache-line alignment. The
//! sizes of blocks handed to the program are kept in a registry, because
//! `MPI_Free_mem` gets only the address.

use super::consts as c;
use super::consts::{MPI_Aint, MPI_Info};
use super::errhandler::report;
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// Alignment of every block: a cache line, enough for any MPI datatype.
pub const ALIGN: usize = 64;

/// An aligned, zero-filled block of memory, freed on drop.
#[derive(Debug)]
pub struct Block {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the block is plain memory owned by this value; nothing else in
// Lanai aliases it (the program may, as MPI allows).
unsafe impl Send for Block {}

impl Block {
    /// Allocates `size` bytes (`0` gives a valid, unique address).
    pub fn new(size: usize) -> MpiResult<Block> {
        let no_mem = || MpiError::new(c::MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes"));
        let layout = Layout::from_size_align(size.max(1), ALIGN).map_err(|_| no_mem())?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(no_mem());
        }
        Ok(Block { ptr, layout })
    }

    pub fn addr(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `Block::new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Blocks handed out by `MPI_Alloc_mem`, by address.
static BLOCKS: Mutex<Option<HashMap<usize, Block>>> = Mutex::new(None);

/// The registry; each update is one insert or remove, so a poisoned lock
/// (a panic elsewhere) still holds consistent data.
fn blocks() -> MutexGuard<'static, Option<HashMap<usize, Block>>> {
    BLOCKS.lock().unwrap_or_else(|p| p.into_inner())
}

fn alloc_mem(size: MPI_Aint, info: MPI_Info, baseptr: *mut c_void) -> MpiResult<()> {
    if size < 0 {
        // MPI_ERR_ARG, as MPICH reports it here.
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("negative size {size}"),
        ));
    }
    // Lanai acts on no allocation hint; the info must still be valid.
    super::info::check_arg(info)?;
    if baseptr.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "baseptr is NULL"));
    }
    let b = Block::new(size as usize)?;
    let addr = b.addr();
    blocks().get_or_insert_with(HashMap::new).insert(addr, b);
    // SAFETY: checked non-null; the C binding passes a `void **` as `void *`.
    unsafe { *(baseptr as *mut *mut c_void) = addr as *mut c_void };
    Ok(())
}

fn free_mem(base: *mut c_void) -> MpiResult<()> {
    if base.is_null() {
        return Ok(()); // like free(NULL)
    }
    let removed = blocks().as_mut().and_then(|m| m.remove(&(base as usize)));
    match removed {
        Some(b) => {
            drop(b);
            Ok(())
        }
        None => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("{base:p} was not allocated by MPI_Alloc_mem (or was freed already)"),
        )),
    }
}

mpi_fn! { MPI_Alloc_mem / PMPI_Alloc_mem (size: MPI_Aint, info: MPI_Info, baseptr: *mut c_void) -> c_int {
    report("MPI_Alloc_mem", None, alloc_mem(size, info, baseptr))
}}

mpi_fn! { MPI_Free_mem / PMPI_Free_mem (base: *mut c_void) -> c_int {
    report("MPI_Free_mem", None, free_mem(base))
}}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_registered() {
        let mut p: *mut c_void = std::ptr::null_mut();
        let out = &mut p as *mut *mut c_void as *mut c_void;
        alloc_mem(100, c::MPI_INFO_NULL, out).unwrap();
        assert_eq!(p as usize % ALIGN, 0);
        let mut q: *mut c_void = std::ptr::null_mut();
        alloc_mem(
            0,
            c::MPI_INFO_NULL,
            &mut q as *mut *mut c_void as *mut c_void,
        )
        .unwrap();
        assert!(!q.is_null());
        assert_ne!(p, q);
        free_mem(q).unwrap();
        free_mem(p).unwrap();
        assert_eq!(free_mem(p).unwrap_err().class, c::MPI_ERR_ARG);
        assert_eq!(
            alloc_mem(-1, c::MPI_INFO_NULL, out).unwrap_err().class,
            c::MPI_ERR_ARG
        );
    }
}
