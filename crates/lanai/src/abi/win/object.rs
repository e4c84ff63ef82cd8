//! Queries and settings of a window: its group, name, info hints and error
//! handler.

use super::{report, with_win};
use crate::abi::consts as c;
use crate::abi::consts::{
    MPI_Errhandler, MPI_Group, MPI_Info, MPI_Win, MPI_Win_errhandler_function,
};
use crate::abi::errhandler::{self, ErrhKind};
use crate::abi::group::{new_group_handle, put};
use crate::abi::{info, state};
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use std::ffi::{c_char, CStr};
use std::os::raw::c_int;

mpi_fn! { MPI_Win_get_group / PMPI_Win_get_group (win: MPI_Win, group: *mut MPI_Group) -> c_int {
    let r = with_win(win, |w| Ok(w.comm)).and_then(|ci| {
        if group.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "group is NULL"));
        }
        state::with_engine(|e| {
            let g = e.comm_group(ci)?;
            let h = new_group_handle(e, g);
            // SAFETY: checked non-null; the caller's output argument.
            unsafe { put(group, h, "group") }
        })
    });
    report("MPI_Win_get_group", win, r)
}}

mpi_fn! { MPI_Win_set_name / PMPI_Win_set_name (win: MPI_Win, win_name: *const c_char) -> c_int {
    let r = (|| {
        if win_name.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "win_name is NULL"));
        }
        // SAFETY: a NUL-terminated C string, as the standard requires.
        let bytes = unsafe { CStr::from_ptr(win_name) }.to_bytes();
        // Longer names are truncated, as for communicators.
        let max = c::MPI_MAX_OBJECT_NAME as usize - 1;
        let name = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned();
        with_win(win, |w| {
            w.name = name;
            Ok(())
        })
    })();
    report("MPI_Win_set_name", win, r)
}}

mpi_fn! { MPI_Win_get_name / PMPI_Win_get_name (win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let r = with_win(win, |w| Ok(w.name.clone())).and_then(|name| {
        if win_name.is_null() || resultlen.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "win_name or resultlen is NULL"));
        }
        let b = name.as_bytes();
        let n = b.len().min(c::MPI_MAX_OBJECT_NAME as usize - 1);
        // SAFETY: the caller's buffer holds MPI_MAX_OBJECT_NAME chars; at
        // most that many are written, the NUL included.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), win_name as *mut u8, n);
            *win_name.add(n) = 0;
            *resultlen = n as c_int;
        }
        Ok(())
    });
    report("MPI_Win_get_name", win, r)
}}

mpi_fn! { MPI_Win_set_info / PMPI_Win_set_info (win: MPI_Win, info: MPI_Info) -> c_int {
    // Lanai acts on no window hint, and the standard lets it drop those it
    // ignores; the arguments are still checked.
    let r = super::check(win).and_then(|()| info::check_arg(info));
    report("MPI_Win_set_info", win, r)
}}

mpi_fn! { MPI_Win_get_info / PMPI_Win_get_info (win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    // A new, empty info: no hint is in effect (see MPI_Win_set_info).
    let r = super::check(win).and_then(|()| info::new_info(Vec::new(), info_used));
    report("MPI_Win_get_info", win, r)
}}

mpi_fn! { MPI_Win_create_errhandler / PMPI_Win_create_errhandler (win_errhandler_fn: Option<MPI_Win_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    errhandler::report("MPI_Win_create_errhandler", None, errhandler::create(win_errhandler_fn, errhandler, ErrhKind::Win))
}}

mpi_fn! { MPI_Win_set_errhandler / PMPI_Win_set_errhandler (win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    let r = super::check(win)
        .and_then(|()| errhandler::check_settable(errhandler, ErrhKind::Win))
        .and_then(|()| with_win(win, |w| {
            w.errhandler = errhandler;
            Ok(())
        }));
    report("MPI_Win_set_errhandler", win, r)
}}

fn get_errhandler(win: MPI_Win, out: *mut MPI_Errhandler) -> MpiResult<()> {
    let h = with_win(win, |w| Ok(w.errhandler))?;
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "errhandler is NULL"));
    }
    // The program now holds one more reference, which it must free.
    errhandler::hold(h);
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *out = h };
    Ok(())
}

mpi_fn! { MPI_Win_get_errhandler / PMPI_Win_get_errhandler (win: MPI_Win, errhandler: *mut MPI_Errhandler) -> c_int {
    report("MPI_Win_get_errhandler", win, get_errhandler(win, errhandler))
}}

mpi_fn! { MPI_Win_call_errhandler / PMPI_Win_call_errhandler (win: MPI_Win, errorcode: c_int) -> c_int {
    match with_win(win, |w| Ok(w.errhandler)) {
        Ok(h) => errhandler::call_handler("MPI_Win_call_errhandler", win, h, errorcode),
        Err(err) => report("MPI_Win_call_errhandler", win, Err(err)),
    }
}}
