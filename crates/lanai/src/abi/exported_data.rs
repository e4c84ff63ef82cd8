//! Data objects and callbacks that MPICH's header makes programs reference
//! by symbol: the topology weight sentinels, the Fortran status-ignore
//! pointers, MPI_T_PVAR_ALL_HANDLES and MPI_DUP_FN (`MPIR_Dup_fn`).
//! Programs only compare these pointers; each points at its own sentinel.
//! Executables copy the pointer variables into themselves (copy
//! relocations), so each must stay exactly one pointer in size.
//!
//! MPICH's Fortran library writes `MPI_F_STATUS_IGNORE` and
//! `MPI_F_STATUSES_IGNORE` at start-up (its own common blocks become the
//! sentinels), so those two are writable and read through [`FortranPtr::get`].

use std::cell::UnsafeCell;
use std::os::raw::{c_int, c_void};

use super::consts::*;

/// A pointer that may live in a `static`.
#[repr(transparent)]
pub struct ExportedPtr<T>(pub *const T);

// SAFETY: the pointers are never written and point at immutable statics.
unsafe impl<T> Sync for ExportedPtr<T> {}

static UNWEIGHTED_SENTINEL: c_int = 0;
static WEIGHTS_EMPTY_SENTINEL: c_int = 0;
static F_STATUS_IGNORE_SENTINEL: [MPI_Fint; 5] = [0; 5];
static F_STATUSES_IGNORE_SENTINEL: [MPI_Fint; 5] = [0; 5];
static F08_STATUS_IGNORE_SENTINEL: MPI_F08_status = MPI_Status {
    count_lo: 0,
    count_hi_and_cancelled: 0,
    MPI_SOURCE: 0,
    MPI_TAG: 0,
    MPI_ERROR: 0,
};
static F08_STATUSES_IGNORE_SENTINEL: [MPI_F08_status; 1] = [F08_STATUS_IGNORE_SENTINEL];
static PVAR_ALL_HANDLES_SENTINEL: u8 = 0;

#[no_mangle]
pub static MPI_UNWEIGHTED: ExportedPtr<c_int> = ExportedPtr(&UNWEIGHTED_SENTINEL);
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: ExportedPtr<c_int> = ExportedPtr(&WEIGHTS_EMPTY_SENTINEL);
/// A pointer variable the Fortran library may overwrite: interior
/// mutability keeps it out of read-only memory.
#[repr(transparent)]
pub struct FortranPtr(UnsafeCell<*const MPI_Fint>);

// SAFETY: written once, by MPICH's Fortran start-up before any MPI call
// reads it; every read is a volatile load of one aligned pointer.
unsafe impl Sync for FortranPtr {}

impl FortranPtr {
    /// The current sentinel.
    pub fn get(&self) -> *const MPI_Fint {
        // SAFETY: the cell holds an aligned pointer for the life of the
        // process (see the `Sync` impl for why the read does not race).
        unsafe { std::ptr::read_volatile(self.0.get()) }
    }
}

#[no_mangle]
pub static MPI_F_STATUS_IGNORE: FortranPtr = FortranPtr(UnsafeCell::new(
    &F_STATUS_IGNORE_SENTINEL as *const [MPI_Fint; 5] as *const MPI_Fint,
));
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: FortranPtr = FortranPtr(UnsafeCell::new(
    &F_STATUSES_IGNORE_SENTINEL as *const [MPI_Fint; 5] as *const MPI_Fint,
));
#[no_mangle]
pub static MPI_F08_STATUS_IGNORE: ExportedPtr<MPI_F08_status> =
    ExportedPtr(&F08_STATUS_IGNORE_SENTINEL);
#[no_mangle]
pub static MPI_F08_STATUSES_IGNORE: ExportedPtr<MPI_F08_status> = ExportedPtr(
    &F08_STATUSES_IGNORE_SENTINEL as *const [MPI_F08_status; 1] as *const MPI_F08_status,
);
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: ExportedPtr<c_void> =
    ExportedPtr(&PVAR_ALL_HANDLES_SENTINEL as *const u8 as *const c_void);

/// `MPI_DUP_FN` / `MPI_COMM_DUP_FN` / ...: copies the attribute value.
///
/// # Safety
/// Called by MPI (or the user) with `attribute_val_out` pointing at a
/// pointer-sized slot and `flag` at an int, as the standard specifies.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: MPI_Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if attribute_val_out.is_null() || flag.is_null() {
        return MPI_ERR_ARG;
    }
    // SAFETY: both pointers are non-null and, per the contract above, point
    // at writable storage of the right type.
    unsafe {
        *(attribute_val_out as *mut *mut c_void) = attribute_val_in;
        *flag = 1;
    }
    MPI_SUCCESS
}
