//! Request handles and the wait/test family.

use super::consts as c;
use super::consts::{MPI_Request, MPI_Status};
use super::datatype::staging;
use super::{call, empty_status, errors, grequest, state, write_status};
use crate::engine::coll::coll_failure;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::{Op, Persistent, Status};
use crate::engine::Engine;
use crate::mpi_fn;
use std::cell::Cell;
use std::os::raw::c_int;

const REQ_BASE: c_int = 0x2c40_0000;
const REQ_MASK: c_int = 0x003f_ffff;

pub fn handle_of(idx: usize) -> MPI_Request {
    REQ_BASE | (idx as c_int & REQ_MASK)
}

/// The request index a handle names, if it has a request handle's form.
pub fn handle_index(h: MPI_Request) -> Option<usize> {
    (h & !REQ_MASK == REQ_BASE).then_some((h & REQ_MASK) as usize)
}

fn index_of(e: &Engine, h: MPI_Request) -> MpiResult<usize> {
    let idx = (h & REQ_MASK) as usize;
    if h & !REQ_MASK != REQ_BASE || e.st.reqs.get(idx).is_none() {
        return Err(MpiError::new(
            c::MPI_ERR_REQUEST,
            format!("invalid request handle 0x{:08x}", h as u32),
        ));
    }
    Ok(idx)
}

/// A request that is already complete (e.g. an eager send, PROC_NULL).
pub fn new_done_request(e: &mut Engine, st: Status) -> usize {
    let r = e.st.reqs.insert(Op::Idle);
    e.st.reqs.complete(r, st);
    r
}

/// Waits for `r`, frees it, writes the status, and fails on an error status.
pub fn finish_blocking(e: &mut Engine, r: usize, status: *mut MPI_Status) -> MpiResult<()> {
    e.wait(r)?;
    let (st, on) =
        e.st.reqs
            .get(r)
            .map(|x| (x.status, x.comm))
            .unwrap_or_default();
    let unpacked = staging::settle(e, r, &st);
    let kept = kept_failure(e, r, &st);
    e.st.reqs.remove(r);
    // SAFETY: `status` is the caller's status argument (or IGNORE/NULL).
    unsafe { write_status(status, &st) };
    completion_result(&st, kept).map_err(|x| x.on_comm(on))?;
    unpacked
}

/// Settles and drops the completed child of a persistent collective:
/// derived-datatype outputs are unpacked here, as for the `I` form.
fn settle_child(e: &mut Engine, idx: usize, st: &Status) -> MpiResult<()> {
    let Some(ch) = e.take_child(idx) else {
        return Ok(());
    };
    let unpacked = staging::settle(e, ch, st);
    e.st.reqs.remove(ch);
    unpacked
}

/// The communicator whose error handler hears of request `h`'s failure:
/// the one it communicates on (MPI raises completion errors there).
fn req_comm(e: &Engine, h: MPI_Request) -> Option<usize> {
    if h == c::MPI_REQUEST_NULL {
        return None;
    }
    e.st.reqs.get(index_of(e, h).ok()?)?.comm
}

/// The message a failed collective kept for request slot `idx`
/// ([`crate::engine::coll::Colls::take_failure`]), which says what went
/// wrong where its status has only the class; read before the slot goes.
fn kept_failure(e: &mut Engine, idx: usize, st: &Status) -> Option<MpiError> {
    if st.error == c::MPI_SUCCESS {
        return None;
    }
    let cookie = e.st.reqs.cookie(idx);
    e.st.colls.take_failure(cookie)
}

/// What a completed request reports: its kept message, else its status.
fn completion_result(st: &Status, kept: Option<MpiError>) -> MpiResult<()> {
    kept.map_or_else(|| status_result(st), Err)
}

fn status_result(st: &Status) -> MpiResult<()> {
    match st.error {
        c::MPI_SUCCESS => Ok(()),
        // A collective's (`coll_status`): it names the member whose
        // transfer did not fit, not a message of the program's.
        c::MPI_ERR_TRUNCATE if st.tag == c::MPI_ANY_TAG => Err(coll_failure(st)),
        c::MPI_ERR_TRUNCATE => Err(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!(
                "message from rank {} with tag {} is longer than the receive buffer ({} bytes)",
                st.source, st.tag, st.count
            ),
        )),
        class => Err(MpiError::new(class, "the request completed with an error")),
    }
}

/// A request that completed: its status, and the message a failed
/// collective kept for it.
type Completed = (Status, Option<MpiError>);

/// Completes request slot `*h` if done: writes its status, releases it
/// (persistent requests go inactive instead) and nulls the handle.
/// Returns its status, and a failed collective's message, when it
/// completed.
fn try_complete(e: &mut Engine, h: &mut MPI_Request) -> MpiResult<Option<Completed>> {
    if *h == c::MPI_REQUEST_NULL {
        return Ok(Some((empty_status(), None)));
    }
    let idx = index_of(e, *h)?;
    let r =
        e.st.reqs
            .get(idx)
            .ok_or_else(|| MpiError::internal("request vanished"))?;
    if r.persistent.is_some() {
        if !r.active {
            return Ok(Some((empty_status(), None)));
        }
        if !r.done {
            return Ok(None);
        }
        let st = r.status;
        // A derived-type receive is unpacked once per start.
        let unpacked = staging::settle(e, idx, &st);
        let child = settle_child(e, idx, &st);
        if let Some(r) = e.st.reqs.get_mut(idx) {
            r.active = false;
        }
        unpacked?;
        child?;
        return Ok(Some((st, None)));
    }
    if !r.done {
        return Ok(None);
    }
    let st = r.status;
    // A derived-type receive is unpacked before it is reported complete.
    let unpacked = staging::settle(e, idx, &st);
    let kept = kept_failure(e, idx, &st);
    e.st.reqs.remove(idx);
    *h = c::MPI_REQUEST_NULL;
    unpacked?;
    Ok(Some((st, kept)))
}

fn is_ready(e: &Engine, h: MPI_Request) -> bool {
    if h == c::MPI_REQUEST_NULL {
        return true;
    }
    let idx = (h & REQ_MASK) as usize;
    e.st.reqs
        .get(idx)
        .is_none_or(|r| r.done || (r.persistent.is_some() && !r.active))
}

/// Whether the handle counts as active for Waitany/Testany/Waitsome.
fn is_active(e: &Engine, h: MPI_Request) -> bool {
    if h == c::MPI_REQUEST_NULL {
        return false;
    }
    let idx = (h & REQ_MASK) as usize;
    e.st.reqs
        .get(idx)
        .is_some_and(|r| r.persistent.is_none() || r.active)
}

/// # Safety
/// `p` is null or points to `n` request handles.
unsafe fn handles<'a>(p: *mut MPI_Request, n: c_int) -> MpiResult<&'a mut [MPI_Request]> {
    if n < 0 {
        return Err(MpiError::count(i64::from(n)));
    }
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(MpiError::new(
            c::MPI_ERR_REQUEST,
            "array of requests is NULL",
        ));
    }
    // SAFETY: the caller passes an array of `n` handles.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n as usize) })
}

/// # Safety
/// `p` is `MPI_STATUSES_IGNORE`, null, or points to `n` statuses.
unsafe fn status_at(p: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if p.is_null() || p as usize == c::MPI_STATUSES_IGNORE {
        std::ptr::null_mut()
    } else {
        // SAFETY: within the caller's array of statuses.
        unsafe { p.add(i) }
    }
}

fn one(
    name: &str,
    request: *mut MPI_Request,
    flag: Option<*mut c_int>,
    status: *mut MPI_Status,
    retry: &Cell<bool>,
) -> c_int {
    call(name, None, |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        // SAFETY: checked non-null; the caller's handle.
        let h = unsafe { &mut *request };
        if h != &c::MPI_REQUEST_NULL {
            index_of(e, *h)?;
        }
        match flag {
            None => {
                let hv = *h;
                e.wait_until(|e| is_ready(e, hv) || grequest::due(&[hv]))?;
                if !is_ready(e, hv) {
                    retry.set(true);
                    return Ok(());
                }
            }
            Some(_) => {
                if !is_ready(e, *h) {
                    e.progress(false)?;
                }
            }
        }
        let on = req_comm(e, *h);
        let done = try_complete(e, h)?;
        if let Some(f) = flag {
            // SAFETY: the caller's flag, checked by the entry point.
            unsafe { *f = c_int::from(done.is_some()) };
        }
        if let Some((st, kept)) = done {
            // SAFETY: the caller's status argument.
            unsafe { write_status(status, &st) };
            return completion_result(&st, kept).map_err(|x| x.on_comm(on));
        }
        Ok(())
    })
}

mpi_fn! { MPI_Wait / PMPI_Wait (request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    grequest::around("MPI_Wait", request, 1, |retry| one("MPI_Wait", request, None, status, retry))
}}

mpi_fn! { MPI_Test / PMPI_Test (request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if flag.is_null() {
        return super::errors::raise("MPI_Test", None, MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
    }
    grequest::around("MPI_Test", request, 1, |retry| one("MPI_Test", request, Some(flag), status, retry))
}}

/// Completes every ready handle in `hs`, writing statuses; returns, when
/// a status carried an error, the `MPI_ERR_IN_STATUS` to raise (on the
/// first failed request's communicator).
///
/// # Safety
/// `statuses` as for [`status_at`].
unsafe fn complete_ready(
    e: &mut Engine,
    hs: &mut [MPI_Request],
    statuses: *mut MPI_Status,
    indices: Option<&mut Vec<c_int>>,
) -> MpiResult<Option<MpiError>> {
    let mut err = None;
    let mut idx_out = indices;
    for (i, h) in hs.iter_mut().enumerate() {
        let active = is_active(e, *h);
        if idx_out.is_some() && !active {
            continue;
        }
        if !is_ready(e, *h) {
            continue;
        }
        let on = req_comm(e, *h);
        if let Some((st, kept)) = try_complete(e, h)? {
            if st.error != c::MPI_SUCCESS && err.is_none() {
                let why = kept.map_or_else(String::new, |k| format!(": {}", k.msg));
                err = Some(
                    MpiError::new(
                        c::MPI_ERR_IN_STATUS,
                        format!("a request completed with an error (see the statuses){why}"),
                    )
                    .on_comm(on),
                );
            }
            let slot = if let Some(v) = idx_out.as_deref_mut() {
                v.push(i as c_int);
                v.len() - 1
            } else {
                i
            };
            // SAFETY: forwarded contract.
            unsafe { write_status(status_at(statuses, slot), &st) };
        }
    }
    Ok(err)
}

mpi_fn! { MPI_Waitall / PMPI_Waitall (count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    grequest::around("MPI_Waitall", array_of_requests, count, |retry| call("MPI_Waitall", None, |e| {
        // SAFETY: the caller's array of `count` handles.
        let hs = unsafe { handles(array_of_requests, count)? };
        for h in hs.iter() {
            if *h != c::MPI_REQUEST_NULL {
                index_of(e, *h)?;
            }
        }
        let snapshot: Vec<MPI_Request> = hs.to_vec();
        e.wait_until(|e| snapshot.iter().all(|&h| is_ready(e, h)) || grequest::due(&snapshot))?;
        if !snapshot.iter().all(|&h| is_ready(e, h)) {
            retry.set(true);
            return Ok(());
        }
        // SAFETY: the caller's statuses array (or IGNORE).
        match unsafe { complete_ready(e, hs, array_of_statuses, None)? } {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }))
}}

mpi_fn! { MPI_Testall / PMPI_Testall (count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    grequest::around("MPI_Testall", array_of_requests, count, |_| call("MPI_Testall", None, |e| {
        // SAFETY: the caller's array of `count` handles.
        let hs = unsafe { handles(array_of_requests, count)? };
        if flag.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
        }
        e.progress(false)?;
        let all = hs.iter().all(|&h| is_ready(e, h));
        // SAFETY: checked non-null.
        unsafe { *flag = c_int::from(all) };
        if all {
            // SAFETY: the caller's statuses array (or IGNORE).
            if let Some(err) = unsafe { complete_ready(e, hs, array_of_statuses, None)? } {
                return Err(err);
            }
        }
        Ok(())
    }))
}}

fn any(
    name: &str,
    count: c_int,
    reqs: *mut MPI_Request,
    index: *mut c_int,
    flag: Option<*mut c_int>,
    status: *mut MPI_Status,
    retry: &Cell<bool>,
) -> c_int {
    call(name, None, |e| {
        // SAFETY: the caller's array of `count` handles.
        let hs = unsafe { handles(reqs, count)? };
        if index.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "index is NULL"));
        }
        let snapshot: Vec<MPI_Request> = hs.to_vec();
        let none_active = !snapshot.iter().any(|&h| is_active(e, h));
        let ready = |e: &Engine| {
            snapshot
                .iter()
                .position(|&h| is_active(e, h) && is_ready(e, h))
        };
        if !none_active {
            match flag {
                None => {
                    e.wait_until(|e| ready(e).is_some() || grequest::due(&snapshot))?;
                    if ready(e).is_none() {
                        retry.set(true);
                        return Ok(());
                    }
                }
                Some(_) => {
                    e.progress(false)?;
                }
            }
        }
        let found = if none_active { None } else { ready(e) };
        let on = found.and_then(|i| req_comm(e, hs[i]));
        let (idx, fl, st) = match found {
            Some(i) => {
                let done = try_complete(e, &mut hs[i])?;
                (
                    i as c_int,
                    true,
                    Some(done.unwrap_or((empty_status(), None))),
                )
            }
            None if none_active => (c::MPI_UNDEFINED, true, Some((empty_status(), None))),
            None => (c::MPI_UNDEFINED, false, None),
        };
        // SAFETY: checked non-null.
        unsafe { *index = idx };
        if let Some(f) = flag {
            // SAFETY: checked by the entry point.
            unsafe { *f = c_int::from(fl) };
        }
        if let Some((st, kept)) = st {
            // SAFETY: the caller's status argument.
            unsafe { write_status(status, &st) };
            return completion_result(&st, kept).map_err(|x| x.on_comm(on));
        }
        Ok(())
    })
}

mpi_fn! { MPI_Waitany / PMPI_Waitany (count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status) -> c_int {
    grequest::around("MPI_Waitany", array_of_requests, count, |retry| any("MPI_Waitany", count, array_of_requests, index, None, status, retry))
}}

mpi_fn! { MPI_Testany / PMPI_Testany (count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if flag.is_null() {
        return super::errors::raise("MPI_Testany", None, MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
    }
    grequest::around("MPI_Testany", array_of_requests, count, |retry| any("MPI_Testany", count, array_of_requests, index, Some(flag), status, retry))
}}

#[allow(clippy::too_many_arguments)] // the C arguments, the mode and the retry flag
fn some(
    name: &str,
    count: c_int,
    reqs: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
    block: bool,
    retry: &Cell<bool>,
) -> c_int {
    call(name, None, |e| {
        // SAFETY: the caller's array of `count` handles.
        let hs = unsafe { handles(reqs, count)? };
        if outcount.is_null() || (count > 0 && indices.is_null()) {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                "outcount or array_of_indices is NULL",
            ));
        }
        let snapshot: Vec<MPI_Request> = hs.to_vec();
        if !snapshot.iter().any(|&h| is_active(e, h)) {
            // SAFETY: checked non-null.
            unsafe { *outcount = c::MPI_UNDEFINED };
            return Ok(());
        }
        if block {
            let any = |e: &Engine| snapshot.iter().any(|&h| is_active(e, h) && is_ready(e, h));
            e.wait_until(|e| any(e) || grequest::due(&snapshot))?;
            if !any(e) {
                retry.set(true);
                return Ok(());
            }
        } else {
            e.progress(false)?;
        }
        let mut done = Vec::new();
        // SAFETY: the caller's statuses array (or IGNORE).
        let err = unsafe { complete_ready(e, hs, statuses, Some(&mut done))? };
        // SAFETY: checked non-null; `indices` holds `count` ints.
        unsafe {
            *outcount = done.len() as c_int;
            std::ptr::copy_nonoverlapping(done.as_ptr(), indices, done.len());
        }
        err.map_or(Ok(()), Err)
    })
}

mpi_fn! { MPI_Waitsome / PMPI_Waitsome (incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    grequest::around("MPI_Waitsome", array_of_requests, incount, |retry| some("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true, retry))
}}

mpi_fn! { MPI_Testsome / PMPI_Testsome (incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    grequest::around("MPI_Testsome", array_of_requests, incount, |retry| some("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false, retry))
}}

mpi_fn! { MPI_Request_free / PMPI_Request_free (request: *mut MPI_Request) -> c_int {
    if let Some(rc) = grequest::request_free(request) {
        return rc;
    }
    call("MPI_Request_free", None, |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        // SAFETY: checked non-null.
        let h = unsafe { &mut *request };
        let idx = index_of(e, *h)?;
        let r = e.st.reqs.get_mut(idx).ok_or_else(|| MpiError::internal("request vanished"))?;
        if r.done || (r.persistent.is_some() && !r.active) {
            let st = r.status;
            let unpacked = staging::settle(e, idx, &st);
            let child = settle_child(e, idx, &st);
            staging::forget(e, idx);
            e.st.reqs.remove(idx);
            unpacked?;
            child?;
        } else {
            // Still in flight: it is dropped when it completes.
            r.freed = true;
        }
        *h = c::MPI_REQUEST_NULL;
        Ok(())
    })
}}

mpi_fn! { MPI_Request_get_status / PMPI_Request_get_status (request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if let Some(rc) = grequest::get_status(request, flag, status) {
        return rc;
    }
    call("MPI_Request_get_status", None, |e| {
        if flag.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
        }
        let st = if request == c::MPI_REQUEST_NULL {
            Some(empty_status())
        } else {
            let idx = index_of(e, request)?;
            if !is_ready(e, request) {
                e.progress(false)?;
            }
            let r = e.st.reqs.get(idx).ok_or_else(|| MpiError::internal("request vanished"))?;
            if r.persistent.is_some() && !r.active {
                Some(empty_status())
            } else if r.done {
                // Complete means unpacked: do it now (once; Wait/Test
                // will not repeat it).
                let st = r.status;
                staging::settle(e, idx, &st)?;
                settle_child(e, idx, &st)?;
                Some(st)
            } else {
                None
            }
        };
        // SAFETY: checked non-null.
        unsafe { *flag = c_int::from(st.is_some()) };
        if let Some(st) = st {
            // SAFETY: the caller's status argument.
            unsafe { write_status(status, &st) };
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Cancel / PMPI_Cancel (request: *mut MPI_Request) -> c_int {
    if let Some(rc) = grequest::cancel(request) {
        return rc;
    }
    call("MPI_Cancel", None, |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        // SAFETY: checked non-null.
        let idx = index_of(e, unsafe { *request })?;
        let child = e.st.persistent_children.iter().find(|&&(p, _)| p == idx).map(|&(_, ch)| ch);
        let target = child.unwrap_or(idx);
        if !e.cancel_composite(target)? {
            e.cancel(target)?;
        }
        e.settle_persistent();
        Ok(())
    })
}}

mpi_fn! { MPI_Test_cancelled / PMPI_Test_cancelled (status: *const MPI_Status, flag: *mut c_int) -> c_int {
    call("MPI_Test_cancelled", None, |_| {
        if status.is_null() || flag.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "NULL argument"));
        }
        // SAFETY: checked non-null.
        let (_, cancelled) = super::status_count(unsafe { &*status });
        // SAFETY: checked non-null.
        unsafe { *flag = c_int::from(cancelled) };
        Ok(())
    })
}}

/// Starts persistent request `h`. Errors go to the handler of its
/// communicator. A collective runs its nonblocking entry point (outside the
/// engine, which that entry point takes itself) and adopts the request it
/// returns as the running child.
fn start_one(name: &str, h: MPI_Request) -> c_int {
    let mut comm = None;
    let begun = state::with_engine(|e| {
        let idx = index_of(e, h)?;
        let p = e.startable(idx)?;
        comm = Some(match &p {
            Persistent::Send { comm, .. } | Persistent::Recv { comm, .. } => *comm,
            Persistent::Coll(s) => s.comm,
        });
        if let Persistent::Coll(s) = p {
            return Ok(Some((idx, s.start)));
        }
        staging::restart(e, idx)?;
        e.start(idx)?;
        Ok(None)
    });
    let (idx, start) = match begun {
        Ok(None) => return c::MPI_SUCCESS,
        Ok(Some(x)) => x,
        Err(err) => return errors::raise(name, comm, err),
    };
    // The nonblocking collective reports its own errors.
    let child = match start() {
        Ok(ch) => ch,
        Err(rc) => return rc,
    };
    let adopted = state::with_engine(|e| {
        let ch = index_of(e, child)?;
        e.adopt(idx, ch);
        Ok(())
    });
    match adopted {
        Ok(()) => c::MPI_SUCCESS,
        Err(err) => errors::raise(name, comm, err),
    }
}

mpi_fn! { MPI_Start / PMPI_Start (request: *mut MPI_Request) -> c_int {
    if request.is_null() {
        return errors::raise("MPI_Start", None, MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
    }
    // SAFETY: checked non-null; the caller's handle.
    start_one("MPI_Start", unsafe { *request })
}}

mpi_fn! { MPI_Startall / PMPI_Startall (count: c_int, array_of_requests: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's array of `count` handles.
    let hs = match unsafe { handles(array_of_requests, count) } {
        Ok(hs) => hs,
        Err(err) => return errors::raise("MPI_Startall", None, err),
    };
    for &h in hs.iter() {
        let rc = start_one("MPI_Startall", h);
        if rc != c::MPI_SUCCESS {
            return rc;
        }
    }
    c::MPI_SUCCESS
}}
