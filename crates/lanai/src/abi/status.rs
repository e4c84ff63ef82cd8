//! Reading and writing `MPI_Status` fields (MPI 4.1 accessors and the
//! `Status_set_*` calls layered libraries use), and the MPI 4.1
//! `Request_get_status_{all,any,some}` built on `MPI_Request_get_status`.

use super::consts as c;
use super::consts::{MPI_Count, MPI_Datatype, MPI_Request, MPI_Status};
use super::{call, status_count, types};
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use std::os::raw::c_int;

/// The status a caller passed, or an error naming the argument.
///
/// # Safety
/// `p` is null, `MPI_STATUS_IGNORE`, or points to a valid `MPI_Status`.
unsafe fn status_mut<'a>(p: *mut MPI_Status) -> MpiResult<&'a mut MPI_Status> {
    if p.is_null() || p as usize == c::MPI_STATUS_IGNORE {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            "status is NULL or MPI_STATUS_IGNORE",
        ));
    }
    // SAFETY: checked above; valid per the contract.
    Ok(unsafe { &mut *p })
}

fn out_int(p: *mut c_int, v: c_int) -> MpiResult<()> {
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "output argument is NULL"));
    }
    // SAFETY: checked non-null; the caller passes a writable int.
    unsafe { *p = v };
    Ok(())
}

mpi_fn! { MPI_Status_get_source / PMPI_Status_get_source (status: *mut MPI_Status, source: *mut c_int) -> c_int {
    call("MPI_Status_get_source", None, |_| {
        // SAFETY: the caller's status argument.
        let s = unsafe { status_mut(status)? };
        out_int(source, s.MPI_SOURCE)
    })
}}

mpi_fn! { MPI_Status_get_tag / PMPI_Status_get_tag (status: *mut MPI_Status, tag: *mut c_int) -> c_int {
    call("MPI_Status_get_tag", None, |_| {
        // SAFETY: the caller's status argument.
        let s = unsafe { status_mut(status)? };
        out_int(tag, s.MPI_TAG)
    })
}}

mpi_fn! { MPI_Status_get_error / PMPI_Status_get_error (status: *mut MPI_Status, error: *mut c_int) -> c_int {
    call("MPI_Status_get_error", None, |_| {
        // SAFETY: the caller's status argument.
        let s = unsafe { status_mut(status)? };
        out_int(error, s.MPI_ERROR)
    })
}}

mpi_fn! { MPI_Status_set_source / PMPI_Status_set_source (status: *mut MPI_Status, source: c_int) -> c_int {
    call("MPI_Status_set_source", None, |_| {
        // SAFETY: the caller's status argument.
        unsafe { status_mut(status)? }.MPI_SOURCE = source;
        Ok(())
    })
}}

mpi_fn! { MPI_Status_set_tag / PMPI_Status_set_tag (status: *mut MPI_Status, tag: c_int) -> c_int {
    call("MPI_Status_set_tag", None, |_| {
        // SAFETY: the caller's status argument.
        unsafe { status_mut(status)? }.MPI_TAG = tag;
        Ok(())
    })
}}

mpi_fn! { MPI_Status_set_error / PMPI_Status_set_error (status: *mut MPI_Status, error: c_int) -> c_int {
    call("MPI_Status_set_error", None, |_| {
        // SAFETY: the caller's status argument.
        unsafe { status_mut(status)? }.MPI_ERROR = error;
        Ok(())
    })
}}

mpi_fn! { MPI_Status_set_cancelled / PMPI_Status_set_cancelled (status: *mut MPI_Status, flag: c_int) -> c_int {
    call("MPI_Status_set_cancelled", None, |_| {
        // SAFETY: the caller's status argument.
        let s = unsafe { status_mut(status)? };
        s.count_hi_and_cancelled = (s.count_hi_and_cancelled & !1) | c_int::from(flag != 0);
        Ok(())
    })
}}

/// Stores `count` elements of `dt` as the status's byte count (the status
/// keeps bytes, as MPICH's does), keeping the cancelled bit.
fn set_elements(name: &str, status: *mut MPI_Status, dt: MPI_Datatype, count: i64) -> c_int {
    call(name, None, |_| {
        if count < 0 {
            return Err(MpiError::count(count));
        }
        let size = types::type_size(dt)? as u64;
        let bytes = (count as u64)
            .checked_mul(size)
            .filter(|b| b >> 63 == 0)
            .ok_or_else(|| {
                MpiError::new(
                    c::MPI_ERR_COUNT,
                    format!("{count} elements overflow the status"),
                )
            })?;
        // SAFETY: the caller's status argument.
        let s = unsafe { status_mut(status)? };
        let (_, cancelled) = status_count(s);
        s.count_lo = bytes as u32 as c_int;
        s.count_hi_and_cancelled = (((bytes >> 32) as c_int) << 1) | c_int::from(cancelled);
        Ok(())
    })
}

mpi_fn! { MPI_Status_set_elements / PMPI_Status_set_elements (status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> c_int {
    set_elements("MPI_Status_set_elements", status, datatype, i64::from(count))
}}

mpi_fn! { MPI_Status_set_elements_x / PMPI_Status_set_elements_x (status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    set_elements("MPI_Status_set_elements_x", status, datatype, count)
}}

mpi_fn! { MPI_Status_set_elements_c / PMPI_Status_set_elements_c (status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    set_elements("MPI_Status_set_elements_c", status, datatype, count)
}}

// ---- MPI 4.1: status of several requests without freeing them ----

/// `MPI_Request_get_status` on request `i` of the array: (flag, status).
///
/// # Safety
/// `reqs` points to at least `i + 1` requests.
unsafe fn peek(reqs: *mut MPI_Request, i: usize) -> Result<(bool, MPI_Status), c_int> {
    let mut flag: c_int = 0;
    let mut st = MPI_Status::default();
    // SAFETY: `reqs.add(i)` is inside the caller's array; the entry point
    // takes the engine itself, and we hold nothing.
    let rc = unsafe { super::requests::PMPI_Request_get_status(*reqs.add(i), &mut flag, &mut st) };
    if rc == c::MPI_SUCCESS {
        Ok((flag != 0, st))
    } else {
        Err(rc)
    }
}

fn check_array(name: &str, count: c_int, reqs: *mut MPI_Request) -> Result<usize, c_int> {
    if count < 0 || (count > 0 && reqs.is_null()) {
        return Err(call(name, None, |_| {
            Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("bad request array (count {count})"),
            ))
        }));
    }
    Ok(count as usize)
}

mpi_fn! { MPI_Request_get_status_all / PMPI_Request_get_status_all (count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    const NAME: &str = "MPI_Request_get_status_all";
    let n = match check_array(NAME, count, array_of_requests) { Ok(n) => n, Err(rc) => return rc };
    let mut got = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `i < count`, the caller's array length.
        match unsafe { peek(array_of_requests, i) } {
            Ok(x) => got.push(x),
            Err(rc) => return rc,
        }
    }
    call(NAME, None, |_| {
        let all = got.iter().all(|(f, _)| *f);
        out_int(flag, c_int::from(all))?;
        if all && !array_of_statuses.is_null()
            && array_of_statuses as usize != c::MPI_STATUSES_IGNORE
        {
            for (i, (_, st)) in got.iter().enumerate() {
                // SAFETY: the statuses array has `count` entries.
                unsafe { *array_of_statuses.add(i) = *st };
            }
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Request_get_status_any / PMPI_Request_get_status_any (count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let n = match check_array("MPI_Request_get_status_any", count, array_of_requests) { Ok(n) => n, Err(rc) => return rc };
    let mut found = None;
    let mut active = false;
    for i in 0..n {
        // SAFETY: `i < count`, the caller's array length.
        if unsafe { *array_of_requests.add(i) } == c::MPI_REQUEST_NULL {
            continue;
        }
        active = true;
        // SAFETY: as above.
        match unsafe { peek(array_of_requests, i) } {
            Ok((true, st)) => {
                found = Some((i, st));
                break;
            }
            Ok(_) => {}
            Err(rc) => return rc,
        }
    }
    call("MPI_Request_get_status_any", None, |_| {
        match found {
            Some((i, st)) => {
                out_int(index, i as c_int)?;
                out_int(flag, 1)?;
                if !status.is_null() && status as usize != c::MPI_STATUS_IGNORE {
                    // SAFETY: checked; the caller's status argument.
                    unsafe { *status = st };
                }
            }
            None => {
                out_int(index, c::MPI_UNDEFINED)?;
                // No active request at all counts as done, per the standard.
                out_int(flag, c_int::from(!active))?;
            }
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Request_get_status_some / PMPI_Request_get_status_some (incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let n = match check_array("MPI_Request_get_status_some", incount, array_of_requests) { Ok(n) => n, Err(rc) => return rc };
    let mut done = Vec::new();
    let mut active = false;
    for i in 0..n {
        // SAFETY: `i < incount`, the caller's array length.
        if unsafe { *array_of_requests.add(i) } == c::MPI_REQUEST_NULL {
            continue;
        }
        active = true;
        // SAFETY: as above.
        match unsafe { peek(array_of_requests, i) } {
            Ok((true, st)) => done.push((i, st)),
            Ok(_) => {}
            Err(rc) => return rc,
        }
    }
    call("MPI_Request_get_status_some", None, |_| {
        if !active {
            return out_int(outcount, c::MPI_UNDEFINED);
        }
        out_int(outcount, done.len() as c_int)?;
        if !done.is_empty() && array_of_indices.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "array_of_indices is NULL"));
        }
        for (k, (i, st)) in done.iter().enumerate() {
            // SAFETY: both arrays hold `incount` entries and k < incount.
            unsafe {
                *array_of_indices.add(k) = *i as c_int;
                if !array_of_statuses.is_null()
                    && array_of_statuses as usize != c::MPI_STATUSES_IGNORE
                {
                    *array_of_statuses.add(k) = *st;
                }
            }
        }
        Ok(())
    })
}}
