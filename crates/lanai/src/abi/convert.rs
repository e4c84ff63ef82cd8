//! Handle conversions between C and Fortran, and address arithmetic.
//!
//! In MPICH's ABI every handle except `MPI_File` is an `int`, and the Fortran
//! handle is the same integer, so `f2c`/`c2f` are the identity. MPICH's header
//! offers them as macros; the library still exports them as functions for
//! callers that take their address or use another header.
//!
//! `MPI_File` is a pointer. Lanai has no MPI-IO yet, so the only file handle
//! that can exist is `MPI_FILE_NULL`, whose Fortran value is 0: every C file
//! handle converts to 0 and every Fortran one to `MPI_FILE_NULL`. When files
//! are implemented these two need a handle table.

use super::consts::*;
use std::os::raw::c_int;
// ---- Integer handles: the Fortran handle is the C handle ----

crate::mpi_fn! { MPI_Comm_c2f / PMPI_Comm_c2f (comm: MPI_Comm) -> MPI_Fint { comm } }
crate::mpi_fn! { MPI_Comm_f2c / PMPI_Comm_f2c (comm: MPI_Fint) -> MPI_Comm { comm } }
crate::mpi_fn! { MPI_Type_c2f / PMPI_Type_c2f (datatype: MPI_Datatype) -> MPI_Fint { datatype } }
crate::mpi_fn! { MPI_Type_f2c / PMPI_Type_f2c (datatype: MPI_Fint) -> MPI_Datatype { datatype } }
crate::mpi_fn! { MPI_Group_c2f / PMPI_Group_c2f (group: MPI_Group) -> MPI_Fint { group } }
crate::mpi_fn! { MPI_Group_f2c / PMPI_Group_f2c (group: MPI_Fint) -> MPI_Group { group } }
crate::mpi_fn! { MPI_Request_c2f / PMPI_Request_c2f (request: MPI_Request) -> MPI_Fint { request } }
crate::mpi_fn! { MPI_Request_f2c / PMPI_Request_f2c (request: MPI_Fint) -> MPI_Request { request } }
crate::mpi_fn! { MPI_Op_c2f / PMPI_Op_c2f (op: MPI_Op) -> MPI_Fint { op } }
crate::mpi_fn! { MPI_Op_f2c / PMPI_Op_f2c (op: MPI_Fint) -> MPI_Op { op } }
crate::mpi_fn! { MPI_Info_c2f / PMPI_Info_c2f (info: MPI_Info) -> MPI_Fint { info } }
crate::mpi_fn! { MPI_Info_f2c / PMPI_Info_f2c (info: MPI_Fint) -> MPI_Info { info } }
crate::mpi_fn! {
    MPI_Errhandler_c2f / PMPI_Errhandler_c2f (errhandler: MPI_Errhandler) -> MPI_Fint { errhandler }
}
crate::mpi_fn! {
    MPI_Errhandler_f2c / PMPI_Errhandler_f2c (errhandler: MPI_Fint) -> MPI_Errhandler { errhandler }
}
crate::mpi_fn! { MPI_Win_c2f / PMPI_Win_c2f (win: MPI_Win) -> MPI_Fint { win } }
crate::mpi_fn! { MPI_Win_f2c / PMPI_Win_f2c (win: MPI_Fint) -> MPI_Win { win } }
crate::mpi_fn! { MPI_Message_c2f / PMPI_Message_c2f (message: MPI_Message) -> MPI_Fint { message } }
crate::mpi_fn! { MPI_Message_f2c / PMPI_Message_f2c (message: MPI_Fint) -> MPI_Message { message } }
crate::mpi_fn! { MPI_Session_c2f / PMPI_Session_c2f (session: MPI_Session) -> MPI_Fint { session } }
crate::mpi_fn! { MPI_Session_f2c / PMPI_Session_f2c (session: MPI_Fint) -> MPI_Session { session } }

// ---- Files: only MPI_FILE_NULL exists until MPI-IO is implemented ----

crate::mpi_fn! {
    MPI_File_c2f / PMPI_File_c2f (file: MPI_File) -> MPI_Fint {
        let _ = file;
        0
    }
}
crate::mpi_fn! {
    MPI_File_f2c / PMPI_File_f2c (file: MPI_Fint) -> MPI_File {
        let _ = file;
        MPI_FILE_NULL
    }
}

// ---- Address arithmetic ----
// Addresses wrap like unsigned machine arithmetic; MPI_BOTTOM-relative
// displacements may be "negative", so overflow is not an error.

crate::mpi_fn! {
    MPI_Aint_add / PMPI_Aint_add (base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
        base.wrapping_add(disp)
    }
}
crate::mpi_fn! {
    MPI_Aint_diff / PMPI_Aint_diff (addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
        addr1.wrapping_sub(addr2)
    }
}

// ---- MPI 5.0 integer conversions (`*_toint`/`*_fromint`) ----
// mpi4py binds these weakly; with integer handles they are the identity.

crate::mpi_fn! { MPI_Comm_toint / PMPI_Comm_toint (comm: MPI_Comm) -> c_int { comm } }
crate::mpi_fn! { MPI_Comm_fromint / PMPI_Comm_fromint (comm: c_int) -> MPI_Comm { comm } }
crate::mpi_fn! { MPI_Type_toint / PMPI_Type_toint (datatype: MPI_Datatype) -> c_int { datatype } }
crate::mpi_fn! { MPI_Type_fromint / PMPI_Type_fromint (datatype: c_int) -> MPI_Datatype { datatype } }
crate::mpi_fn! { MPI_Group_toint / PMPI_Group_toint (group: MPI_Group) -> c_int { group } }
crate::mpi_fn! { MPI_Group_fromint / PMPI_Group_fromint (group: c_int) -> MPI_Group { group } }
crate::mpi_fn! { MPI_Request_toint / PMPI_Request_toint (request: MPI_Request) -> c_int { request } }
crate::mpi_fn! { MPI_Request_fromint / PMPI_Request_fromint (request: c_int) -> MPI_Request { request } }
crate::mpi_fn! { MPI_Op_toint / PMPI_Op_toint (op: MPI_Op) -> c_int { op } }
crate::mpi_fn! { MPI_Op_fromint / PMPI_Op_fromint (op: c_int) -> MPI_Op { op } }
crate::mpi_fn! { MPI_Info_toint / PMPI_Info_toint (info: MPI_Info) -> c_int { info } }
crate::mpi_fn! { MPI_Info_fromint / PMPI_Info_fromint (info: c_int) -> MPI_Info { info } }
crate::mpi_fn! {
    MPI_Errhandler_toint / PMPI_Errhandler_toint (errhandler: MPI_Errhandler) -> c_int { errhandler }
}
crate::mpi_fn! {
    MPI_Errhandler_fromint / PMPI_Errhandler_fromint (errhandler: c_int) -> MPI_Errhandler { errhandler }
}
crate::mpi_fn! { MPI_Win_toint / PMPI_Win_toint (win: MPI_Win) -> c_int { win } }
crate::mpi_fn! { MPI_Win_fromint / PMPI_Win_fromint (win: c_int) -> MPI_Win { win } }
crate::mpi_fn! { MPI_Message_toint / PMPI_Message_toint (message: MPI_Message) -> c_int { message } }
crate::mpi_fn! { MPI_Message_fromint / PMPI_Message_fromint (message: c_int) -> MPI_Message { message } }
crate::mpi_fn! { MPI_Session_toint / PMPI_Session_toint (session: MPI_Session) -> c_int { session } }
crate::mpi_fn! { MPI_Session_fromint / PMPI_Session_fromint (session: c_int) -> MPI_Session { session } }
crate::mpi_fn! { MPI_File_toint / PMPI_File_toint (file: MPI_File) -> c_int { let _ = file; 0 } }
crate::mpi_fn! { MPI_File_fromint / PMPI_File_fromint (file: c_int) -> MPI_File { let _ = file; MPI_FILE_NULL } }

// ---- Statuses: MPICH's C status is five ints, as are the Fortran and
// Fortran 2008 ones, so a conversion is a copy. The sentinels are checked
// by their current value: MPICH's Fortran library moves the Fortran ones.

/// Copies one status after checking both ends.
///
/// # Safety
/// Each pointer is null or a sentinel (rejected), or valid for five ints.
unsafe fn copy_status(
    name: &'static str,
    from: *const c_int,
    from_ignore: bool,
    to: *mut c_int,
    to_ignore: bool,
) -> c_int {
    let why = if from.is_null() || to.is_null() {
        Some("a status argument is NULL")
    } else if from_ignore || to_ignore {
        Some("a status argument is a STATUS_IGNORE sentinel")
    } else {
        None
    };
    if let Some(why) = why {
        return super::errors::raise(
            name,
            None,
            crate::engine::error::MpiError::new(MPI_ERR_ARG, why),
        );
    }
    // SAFETY: both non-null and not sentinels, so the caller's statuses of
    // five ints each; they may be the same status, so copy as overlapping.
    unsafe { std::ptr::copy(from, to, STATUS_INTS) };
    MPI_SUCCESS
}

const STATUS_INTS: usize = std::mem::size_of::<MPI_Status>() / std::mem::size_of::<c_int>();

fn is_c_ignore(p: *const MPI_Status) -> bool {
    p as usize == MPI_STATUS_IGNORE
}

fn is_f_ignore(p: *const MPI_Fint) -> bool {
    p == super::exported_data::MPI_F_STATUS_IGNORE.get()
}

fn is_f08_ignore(p: *const MPI_F08_status) -> bool {
    p == super::exported_data::MPI_F08_STATUS_IGNORE.0
}

crate::mpi_fn! {
    MPI_Status_c2f / PMPI_Status_c2f (c_status: *const MPI_Status, f_status: *mut MPI_Fint) -> c_int {
        // SAFETY: checked inside; the caller's statuses.
        unsafe { copy_status("MPI_Status_c2f", c_status as *const c_int, is_c_ignore(c_status), f_status, is_f_ignore(f_status)) }
    }
}
crate::mpi_fn! {
    MPI_Status_f2c / PMPI_Status_f2c (f_status: *const MPI_Fint, c_status: *mut MPI_Status) -> c_int {
        // SAFETY: checked inside; the caller's statuses.
        unsafe { copy_status("MPI_Status_f2c", f_status, is_f_ignore(f_status), c_status as *mut c_int, is_c_ignore(c_status)) }
    }
}
crate::mpi_fn! {
    MPI_Status_c2f08 / PMPI_Status_c2f08 (c_status: *const MPI_Status, f08_status: *mut MPI_F08_status) -> c_int {
        // SAFETY: checked inside; the caller's statuses.
        unsafe { copy_status("MPI_Status_c2f08", c_status as *const c_int, is_c_ignore(c_status), f08_status as *mut c_int, is_f08_ignore(f08_status)) }
    }
}
crate::mpi_fn! {
    MPI_Status_f082c / PMPI_Status_f082c (f08_status: *const MPI_F08_status, c_status: *mut MPI_Status) -> c_int {
        // SAFETY: checked inside; the caller's statuses.
        unsafe { copy_status("MPI_Status_f082c", f08_status as *const c_int, is_f08_ignore(f08_status), c_status as *mut c_int, is_c_ignore(c_status)) }
    }
}

crate::mpi_fn! {
    MPI_Status_f2f08 / PMPI_Status_f2f08 (f_status: *const MPI_Fint, f08_status: *mut MPI_F08_status) -> c_int {
        // SAFETY: checked inside; the caller's statuses.
        unsafe { copy_status("MPI_Status_f2f08", f_status, is_f_ignore(f_status), f08_status as *mut c_int, is_f08_ignore(f08_status)) }
    }
}
crate::mpi_fn! {
    MPI_Status_f082f / PMPI_Status_f082f (f08_status: *const MPI_F08_status, f_status: *mut MPI_Fint) -> c_int {
        // SAFETY: checked inside; the caller's statuses.
        unsafe { copy_status("MPI_Status_f082f", f08_status as *const c_int, is_f08_ignore(f08_status), f_status, is_f_ignore(f_status)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_handles_round_trip_unchanged() {
        let handles = [
            MPI_COMM_WORLD,
            MPI_COMM_SELF,
            MPI_COMM_NULL,
            MPI_INT,
            MPI_DOUBLE_INT,
            MPI_GROUP_EMPTY,
            MPI_REQUEST_NULL,
            MPI_SUM,
            MPI_INFO_ENV,
            MPI_ERRORS_RETURN,
            MPI_WIN_NULL,
            MPI_MESSAGE_NO_PROC,
            MPI_SESSION_NULL,
            0x44000123,
        ];
        for h in handles {
            // SAFETY: the conversions take and return plain integers.
            unsafe {
                assert_eq!(MPI_Comm_f2c(MPI_Comm_c2f(h)), h);
                assert_eq!(MPI_Type_f2c(MPI_Type_c2f(h)), h);
                assert_eq!(MPI_Group_f2c(MPI_Group_c2f(h)), h);
                assert_eq!(MPI_Request_f2c(MPI_Request_c2f(h)), h);
                assert_eq!(MPI_Op_f2c(MPI_Op_c2f(h)), h);
                assert_eq!(MPI_Info_f2c(MPI_Info_c2f(h)), h);
                assert_eq!(MPI_Errhandler_f2c(MPI_Errhandler_c2f(h)), h);
                assert_eq!(MPI_Win_f2c(MPI_Win_c2f(h)), h);
                assert_eq!(MPI_Message_f2c(MPI_Message_c2f(h)), h);
                assert_eq!(MPI_Session_f2c(MPI_Session_c2f(h)), h);
                // Fortran code sees the same integer as C (MPICH's convention).
                assert_eq!(PMPI_Comm_c2f(h), h);
                assert_eq!(PMPI_Type_f2c(h), h);
            }
        }
    }

    #[test]
    fn file_handles_map_to_null() {
        // SAFETY: the conversions never dereference the handle.
        unsafe {
            assert_eq!(MPI_File_c2f(MPI_FILE_NULL), 0);
            assert!(MPI_File_f2c(0).is_null());
            assert!(PMPI_File_f2c(7).is_null());
        }
    }

    #[test]
    fn aint_arithmetic_matches_pointer_arithmetic() {
        let buf = [0u8; 64];
        let base = buf.as_ptr() as MPI_Aint;
        let at_40 = buf[40..].as_ptr() as MPI_Aint;
        // SAFETY: plain integer arithmetic.
        unsafe {
            assert_eq!(MPI_Aint_add(base, 40), at_40);
            assert_eq!(MPI_Aint_diff(at_40, base), 40);
            assert_eq!(MPI_Aint_diff(base, at_40), -40);
            assert_eq!(PMPI_Aint_add(at_40, -40), base);
            // Wraps instead of panicking, like address arithmetic in C.
            assert_eq!(MPI_Aint_add(MPI_Aint::MAX, 1), MPI_Aint::MIN);
            assert_eq!(MPI_Aint_diff(MPI_Aint::MIN, 1), MPI_Aint::MAX);
        }
    }

    #[test]
    fn statuses_convert_by_copy_and_know_the_fortran_sentinel() {
        let c_in = MPI_Status {
            count_lo: 12,
            count_hi_and_cancelled: 1,
            MPI_SOURCE: 3,
            MPI_TAG: 77,
            MPI_ERROR: 0,
        };
        let mut f = [0 as MPI_Fint; STATUS_INTS];
        let mut f08 = MPI_Status {
            count_lo: 0,
            count_hi_and_cancelled: 0,
            MPI_SOURCE: 0,
            MPI_TAG: 0,
            MPI_ERROR: 0,
        };
        let mut c_out = f08;
        // SAFETY: live statuses of five ints each.
        unsafe {
            assert_eq!(MPI_Status_c2f(&c_in, f.as_mut_ptr()), MPI_SUCCESS);
            assert_eq!(MPI_Status_f2f08(f.as_ptr(), &mut f08), MPI_SUCCESS);
            assert_eq!(MPI_Status_f082c(&f08, &mut c_out), MPI_SUCCESS);
        }
        assert_eq!(f, [12, 1, 3, 77, 0]);
        assert_eq!(
            (c_out.count_lo, c_out.MPI_SOURCE, c_out.MPI_TAG),
            (12, 3, 77)
        );
        assert!(is_f_ignore(
            super::super::exported_data::MPI_F_STATUS_IGNORE.get()
        ));
        assert!(!is_f_ignore(f.as_ptr()));
        assert!(is_c_ignore(MPI_STATUS_IGNORE as *const MPI_Status));
    }
}
