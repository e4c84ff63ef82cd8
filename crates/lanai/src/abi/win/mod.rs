//! RMA windows: the window object and its handles. Creation and free are in
//! `create.rs`, shared-memory windows in `shared.rs`, the object's queries
//! (group, name, info, error handlers) in `object.rs`, and the RMA calls,
//! which Lanai does not implement yet, in `rma.rs`. Window attributes live
//! with the others in `abi/attr.rs`.
//!
//! Windows are kept here, in the ABI layer, because they hold addresses of
//! the program's memory; the engine only sees each window's private
//! communicator.

mod create;
mod object;
mod rma;
mod shared;

use super::consts as c;
use super::consts::{MPI_Aint, MPI_Errhandler, MPI_Win};
use super::errors;
use super::mem::Block;
use crate::engine::error::{MpiError, MpiResult};
use crate::shm::Segment;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// Kind and object bits of a window handle: MPICH's "direct" kind (`10`)
/// and its window object type (`0x8`), as in `MPI_WIN_NULL = 0x20000000`.
const USER_WIN_BASE: MPI_Win = 0xa000_0000_u32 as MPI_Win;
const INDEX_MASK: c_int = 0x03ff_ffff;

/// The values the integer-valued predefined attributes point to. Boxed in
/// the window so their addresses stay fixed while it lives.
#[derive(Debug)]
struct AttrVals {
    size: MPI_Aint,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

/// (offset in the segment, size, disp_unit) of one rank's part of a shared
/// window.
type Part = (usize, MPI_Aint, MPI_Aint);

/// The shared segment of a `MPI_Win_allocate_shared` window, and where each
/// rank's part lies in it.
#[derive(Debug)]
struct SharedMem {
    seg: Segment,
    /// The part of every rank of the window.
    parts: Vec<Part>,
}

#[derive(Debug)]
struct Win {
    /// The private duplicate of the creating communicator.
    comm: usize,
    base: usize,
    vals: Box<AttrVals>,
    name: String,
    errhandler: MPI_Errhandler,
    /// Memory of a `MPI_Win_allocate` window, held only to be freed with it.
    #[allow(dead_code)]
    owned: Option<Block>,
    shared: Option<SharedMem>,
    /// (base, size) of each region attached to a dynamic window.
    regions: Vec<(usize, usize)>,
}

/// Windows by handle index; freed slots are reused.
static WINS: Mutex<Vec<Option<Win>>> = Mutex::new(Vec::new());

/// The table; every update is a single step, so a poisoned lock (a panic
/// elsewhere) still holds consistent data.
fn wins() -> MutexGuard<'static, Vec<Option<Win>>> {
    WINS.lock().unwrap_or_else(|p| p.into_inner())
}

fn bad_win(h: MPI_Win) -> MpiError {
    if h == c::MPI_WIN_NULL {
        MpiError::new(c::MPI_ERR_WIN, "invalid window MPI_WIN_NULL")
    } else {
        MpiError::new(
            c::MPI_ERR_WIN,
            format!("invalid or freed window 0x{:08x}", h as u32),
        )
    }
}

fn index(h: MPI_Win) -> MpiResult<usize> {
    if h & !INDEX_MASK == USER_WIN_BASE {
        Ok((h & INDEX_MASK) as usize)
    } else {
        Err(bad_win(h))
    }
}

/// Runs `f` on window `h`, with the table locked: `f` must not call user
/// code or re-enter MPI.
fn with_win<R>(h: MPI_Win, f: impl FnOnce(&mut Win) -> MpiResult<R>) -> MpiResult<R> {
    let i = index(h)?;
    match wins().get_mut(i) {
        Some(Some(w)) => f(w),
        _ => Err(bad_win(h)),
    }
}

/// Adds a window and returns its handle.
fn insert(w: Win) -> MpiResult<MPI_Win> {
    let mut t = wins();
    let i = match t.iter().position(Option::is_none) {
        Some(i) => i,
        None => {
            t.push(None);
            t.len() - 1
        }
    };
    if i > INDEX_MASK as usize {
        t.pop();
        return Err(MpiError::new(c::MPI_ERR_NO_MEM, "too many windows"));
    }
    t[i] = Some(w);
    Ok(USER_WIN_BASE | i as c_int)
}

/// Removes window `h` from the table (its memory is freed when the
/// returned value drops).
fn remove(h: MPI_Win) -> MpiResult<Win> {
    let i = index(h)?;
    wins()
        .get_mut(i)
        .and_then(Option::take)
        .ok_or_else(|| bad_win(h))
}

/// Checks that `h` is a live window.
pub fn check(h: MPI_Win) -> MpiResult<()> {
    with_win(h, |_| Ok(()))
}

/// The error handler in force on window `h`, if it is live.
fn errhandler_of(h: MPI_Win) -> Option<MPI_Errhandler> {
    with_win(h, |w| Ok(w.errhandler)).ok()
}

/// Reports the outcome of a call on window `win` through the window's
/// error handler (or, for an invalid window, `MPI_COMM_WORLD`'s).
pub fn report(name: &str, win: MPI_Win, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => c::MPI_SUCCESS,
        Err(e) => match errhandler_of(win) {
            Some(h) => errors::raise_to(name, win, h, e),
            None => errors::raise(name, None, e),
        },
    }
}

/// What `MPI_Win_get_attr` gives for a predefined window attribute: the
/// base address itself for `MPI_WIN_BASE`, a pointer to the value for the
/// others. `None` if `kv` is not one of them.
pub fn predefined_attr(win: MPI_Win, kv: c_int) -> MpiResult<Option<*mut c_void>> {
    with_win(win, |w| {
        let v = &mut *w.vals;
        Ok(match kv {
            c::MPI_WIN_BASE => Some(w.base as *mut c_void),
            c::MPI_WIN_SIZE => Some(&mut v.size as *mut MPI_Aint as *mut c_void),
            c::MPI_WIN_DISP_UNIT => Some(&mut v.disp_unit as *mut c_int as *mut c_void),
            c::MPI_WIN_CREATE_FLAVOR => Some(&mut v.flavor as *mut c_int as *mut c_void),
            c::MPI_WIN_MODEL => Some(&mut v.model as *mut c_int as *mut c_void),
            _ => None,
        })
    })
}

/// Windows currently allocated (for leak checks in tests).
#[cfg(test)]
fn live() -> usize {
    wins().iter().filter(|w| w.is_some()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dummy() -> Win {
        Win {
            comm: 5,
            base: 0x1000,
            vals: Box::new(AttrVals {
                size: 64,
                disp_unit: 8,
                flavor: c::MPI_WIN_FLAVOR_CREATE,
                model: c::MPI_WIN_UNIFIED,
            }),
            name: String::new(),
            errhandler: c::MPI_ERRORS_ARE_FATAL,
            owned: None,
            shared: None,
            regions: Vec::new(),
        }
    }

    #[test]
    fn handles_have_mpich_window_bits_and_slots_are_reused() {
        let before = live();
        let a = insert(dummy()).unwrap();
        assert_eq!(a as u32 & 0xfc00_0000, 0xa000_0000);
        assert_eq!(a as u32 & 0x3c00_0000, c::MPI_WIN_NULL as u32 & 0x3c00_0000);
        assert!(check(a).is_ok());
        let p = predefined_attr(a, c::MPI_WIN_DISP_UNIT).unwrap().unwrap();
        // SAFETY: points to the window's live disp_unit value.
        assert_eq!(unsafe { *(p as *const c_int) }, 8);
        assert_eq!(
            predefined_attr(a, c::MPI_WIN_BASE).unwrap(),
            Some(0x1000 as *mut c_void)
        );
        remove(a).unwrap();
        assert_eq!(check(a).unwrap_err().class, c::MPI_ERR_WIN);
        assert_eq!(check(c::MPI_WIN_NULL).unwrap_err().class, c::MPI_ERR_WIN);
        let b = insert(dummy()).unwrap();
        remove(b).unwrap();
        assert_eq!(live(), before);
    }
}
