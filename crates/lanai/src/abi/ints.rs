//! Per-rank count and displacement arrays as a C caller passed them:
//! `int` in the classic entry points, 64-bit (`MPI_Count`, `MPI_Aint`) in
//! the MPI-4 `_c` ones. Collectives read either through this one type, so
//! each algorithm's argument handling exists once.

use super::consts::{MPI_Aint, MPI_Count};
use crate::engine::error::MpiResult;
use std::os::raw::c_int;

/// A caller's array of counts or displacements.
#[derive(Debug, Clone, Copy)]
pub enum Ints {
    Int(*const c_int),
    Wide(*const i64),
}

// `MPI_Count` and `MPI_Aint` are both 64-bit on the LP64 targets Lanai
// builds for, so a `_c` array is read as `i64`s.
const _: () =
    assert!(std::mem::size_of::<MPI_Count>() == 8 && std::mem::size_of::<MPI_Aint>() == 8);

impl From<*const c_int> for Ints {
    fn from(p: *const c_int) -> Ints {
        Ints::Int(p)
    }
}

impl From<*const MPI_Count> for Ints {
    fn from(p: *const MPI_Count) -> Ints {
        Ints::Wide(p.cast())
    }
}

impl From<*const MPI_Aint> for Ints {
    fn from(p: *const MPI_Aint) -> Ints {
        Ints::Wide(p.cast())
    }
}

impl Ints {
    /// The caller's `n` values, widened.
    ///
    /// # Safety
    /// The pointer is null or points to at least `n` values valid for the
    /// call.
    pub unsafe fn read(self, n: u32, what: &str) -> MpiResult<Vec<i64>> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.map(n, what, Ok) }
    }

    /// The caller's `n` values, read in place and widened one at a time
    /// ([`IntSlice::get`]).
    ///
    /// # Safety
    /// As for [`Ints::read`], and the values stay valid while the slice
    /// is used.
    pub unsafe fn slice<'a>(self, n: u32, what: &str) -> MpiResult<IntSlice<'a>> {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            Ok(match self {
                Ints::Int(p) => IntSlice::Int(super::coll::array(p, n, what)?),
                Ints::Wide(p) => IntSlice::Wide(super::coll::array(p, n, what)?),
            })
        }
    }

    /// The caller's `n` values, widened and each passed through `f`.
    ///
    /// # Safety
    /// As for [`Ints::read`].
    pub unsafe fn map<T>(
        self,
        n: u32,
        what: &str,
        f: impl FnMut(i64) -> MpiResult<T>,
    ) -> MpiResult<Vec<T>> {
        let mut f = f;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            match self {
                Ints::Int(p) => super::coll::array(p, n, what)?
                    .iter()
                    .map(|&v| f(i64::from(v)))
                    .collect(),
                Ints::Wide(p) => super::coll::array(p, n, what)?
                    .iter()
                    .map(|&v| f(v))
                    .collect(),
            }
        }
    }
}

/// A caller's array, borrowed as it lies.
#[derive(Debug, Clone, Copy)]
pub enum IntSlice<'a> {
    Int(&'a [c_int]),
    Wide(&'a [i64]),
}

impl IntSlice<'_> {
    /// Value `i`, widened; the caller keeps `i` below the length read.
    #[inline]
    pub fn get(self, i: usize) -> i64 {
        match self {
            IntSlice::Int(v) => i64::from(v[i]),
            IntSlice::Wide(v) => v[i],
        }
    }
}
