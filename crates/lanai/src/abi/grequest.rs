//! Generalized requests: `MPI_Grequest_start` and `MPI_Grequest_complete`.
//!
//! A generalized request is an engine request (`Op::Generalized`) that the
//! engine never completes itself. The program's callbacks may call MPI, so
//! they never run while the engine is borrowed: the wait/test family runs
//! its body inside [`around`], which calls `query_fn` (outside the engine)
//! for every request among its arguments that `MPI_Grequest_complete` has
//! completed, completes the engine request with that status, and calls
//! `free_fn` for the requests the body released. A blocking wait whose
//! request is completed meanwhile leaves the engine ([`due`]) so the query
//! can run, then waits again. A completed request's `query_fn` runs in
//! the first wait/test call that names it, even one that then reports
//! another request (`MPI_Waitany`) or none (`MPI_Testall` with others still
//! pending); the status is kept for the call that completes it.
//!
//! Lanai provides `MPI_THREAD_SERIALIZED`, but `MPI_Grequest_complete` is
//! safe from any thread at any time (that is what generalized requests are
//! for): it touches only this module's table, under its own lock, never the
//! engine, and rings this rank's doorbell so a sleeping waiter wakes at once.
//!
//! MPICH's Fortran library marks the requests it starts
//! (`MPII_Grequest_set_lang_f77`): their callbacks are Fortran subroutines,
//! which take every argument by reference and return the error in a last
//! `ierror` argument.

use super::consts as c;
use super::consts::{
    MPI_Grequest_cancel_function, MPI_Grequest_free_function, MPI_Grequest_query_function,
    MPI_Request, MPI_Status,
};
use super::requests::{handle_index, handle_of};
use super::{call, errors, state, status_count, write_status};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::{Op, Status};
use crate::mpi_fn;
use std::cell::Cell;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The program's callbacks and their state.
#[derive(Clone, Copy)]
struct Callbacks {
    query: Option<MPI_Grequest_query_function>,
    free: Option<MPI_Grequest_free_function>,
    cancel: Option<MPI_Grequest_cancel_function>,
    extra: usize,
    /// Fortran subroutines (see the module docs).
    fortran: bool,
}

/// The Fortran forms of the three callbacks.
type FortranQuery = unsafe extern "C" fn(*mut c_void, *mut MPI_Status, *mut c_int);
type FortranFree = unsafe extern "C" fn(*mut c_void, *mut c_int);
type FortranCancel = unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_int);

struct Greq {
    /// The engine request and its cookie (index and generation).
    idx: usize,
    cookie: u64,
    cbs: Callbacks,
    /// `MPI_Grequest_complete` was called.
    completed: bool,
    /// `query_fn` ran and the engine request completed with its status.
    queried: bool,
    /// `MPI_Request_free` came first: `MPI_Grequest_complete` calls
    /// `free_fn`, and the engine request is dropped later.
    user_freed: bool,
}

static TABLE: Mutex<Vec<Greq>> = Mutex::new(Vec::new());
/// Entries in `TABLE`: the wait/test family skips all this when zero.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Entries completed but not yet queried (what [`due`] looks for).
static DUE: AtomicUsize = AtomicUsize::new(0);
/// This rank's doorbell name.
static BELL: OnceLock<Vec<u8>> = OnceLock::new();

fn table() -> MutexGuard<'static, Vec<Greq>> {
    // Entries are plain data; a panic cannot leave one half-written.
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

fn by_handle(t: &[Greq], h: MPI_Request) -> Option<usize> {
    let idx = handle_index(h)?;
    t.iter().position(|g| g.idx == idx && !g.user_freed)
}

/// Whether a blocking wait on `hs` must leave the engine: one of them was
/// completed by `MPI_Grequest_complete` and needs its `query_fn` run.
pub fn due(hs: &[MPI_Request]) -> bool {
    if DUE.load(Ordering::Acquire) == 0 {
        return false;
    }
    table()
        .iter()
        .any(|g| g.completed && !g.queried && !g.user_freed && hs.contains(&handle_of(g.idx)))
}

/// Calls `query_fn` on a valid status (the program's own may be
/// `MPI_STATUS_IGNORE`); the status carries its error code.
fn run_query(cbs: &Callbacks) -> (Status, c_int) {
    let mut cs = MPI_Status {
        count_lo: 0,
        count_hi_and_cancelled: 0,
        MPI_SOURCE: c::MPI_UNDEFINED,
        MPI_TAG: c::MPI_UNDEFINED,
        MPI_ERROR: c::MPI_SUCCESS,
    };
    let extra = cbs.extra as *mut c_void;
    let rc = match cbs.query {
        // SAFETY: a Fortran subroutine registered through MPICH's Fortran
        // library, whose status array has `MPI_Status`'s layout; `cs` and
        // `ierr` are live locals.
        Some(f) if cbs.fortran => unsafe {
            let f: FortranQuery = std::mem::transmute(f);
            let mut ierr = c::MPI_SUCCESS;
            f(extra, &mut cs, &mut ierr);
            ierr
        },
        // SAFETY: the function and state the program registered with
        // MPI_Grequest_start; no engine borrow or lock is held.
        Some(f) => unsafe { f(extra, &mut cs) },
        None => c::MPI_SUCCESS,
    };
    let (count, cancelled) = status_count(&cs);
    let st = Status {
        source: cs.MPI_SOURCE,
        tag: cs.MPI_TAG,
        error: rc,
        count,
        cancelled,
    };
    (st, rc)
}

fn run_free(cbs: &Callbacks) -> MpiResult<()> {
    let extra = cbs.extra as *mut c_void;
    let rc = match cbs.free {
        // SAFETY: as in `run_query`.
        Some(f) if cbs.fortran => unsafe {
            let f: FortranFree = std::mem::transmute(f);
            let mut ierr = c::MPI_SUCCESS;
            f(extra, &mut ierr);
            ierr
        },
        // SAFETY: as in `run_query`.
        Some(f) => unsafe { f(extra) },
        None => c::MPI_SUCCESS,
    };
    if rc == c::MPI_SUCCESS {
        Ok(())
    } else {
        Err(MpiError::new(
            rc,
            "the generalized request's free_fn failed",
        ))
    }
}

fn run_cancel(cbs: &Callbacks, completed: bool) -> c_int {
    let extra = cbs.extra as *mut c_void;
    match cbs.cancel {
        // SAFETY: as in `run_query`.
        Some(f) if cbs.fortran => unsafe {
            let f: FortranCancel = std::mem::transmute(f);
            let mut done = c_int::from(completed);
            let mut ierr = c::MPI_SUCCESS;
            f(extra, &mut done, &mut ierr);
            ierr
        },
        // SAFETY: as in `run_query`.
        Some(f) => unsafe { f(extra, c_int::from(completed)) },
        None => c::MPI_SUCCESS,
    }
}

/// Runs `query_fn` for the completed, unqueried generalized requests among
/// `hs` and completes their engine requests with its status.
fn query_completed(hs: &[MPI_Request]) -> MpiResult<()> {
    if DUE.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    let todo: Vec<_> = table()
        .iter_mut()
        .filter(|g| g.completed && !g.queried && !g.user_freed && hs.contains(&handle_of(g.idx)))
        .map(|g| {
            g.queried = true;
            DUE.fetch_sub(1, Ordering::AcqRel);
            (g.idx, g.cookie, g.cbs)
        })
        .collect();
    for (idx, cookie, cbs) in todo {
        let (st, _) = run_query(&cbs);
        state::with_engine(|e| {
            if e.st.reqs.by_cookie(cookie) == Some(idx) {
                e.st.reqs.complete(idx, st);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Calls `free_fn` of every generalized request whose engine request was
/// completed and released, and drops the engine requests of those freed
/// before completion. Returns `free_fn`'s first error.
fn release_finished() -> MpiResult<()> {
    let mut frees = Vec::new();
    state::with_engine(|e| {
        let mut t = table();
        t.retain(|g| {
            let alive = e.st.reqs.by_cookie(g.cookie) == Some(g.idx);
            if g.user_freed && g.completed {
                // free_fn ran in MPI_Grequest_complete.
                if alive {
                    e.st.reqs.remove(g.idx);
                }
                return false;
            }
            if g.queried && !alive {
                frees.push(g.cbs);
                return false;
            }
            true
        });
        LIVE.store(t.len(), Ordering::Release);
        Ok(())
    })?;
    // Every free_fn runs, even after one fails.
    let mut first = Ok(());
    for cbs in frees {
        let r = run_free(&cbs);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Runs a wait/test entry point's `body` with generalized requests among
/// its `count` handles at `reqs` settled around it (module docs). The body
/// sets its flag when it stopped waiting because one of them is [`due`].
pub fn around(
    name: &str,
    reqs: *const MPI_Request,
    count: c_int,
    mut body: impl FnMut(&Cell<bool>) -> c_int,
) -> c_int {
    let retry = Cell::new(false);
    if LIVE.load(Ordering::Acquire) == 0 {
        return body(&retry);
    }
    let hs: Vec<MPI_Request> = if reqs.is_null() || count <= 0 {
        Vec::new()
    } else {
        // SAFETY: the caller's array of `count` handles (the body checks
        // the same arguments and reports what is wrong with them).
        unsafe { std::slice::from_raw_parts(reqs, count as usize) }.to_vec()
    };
    loop {
        if let Err(err) = query_completed(&hs) {
            return errors::raise(name, None, err);
        }
        retry.set(false);
        let rc = body(&retry);
        if retry.get() {
            continue;
        }
        return match release_finished() {
            Err(err) if rc == c::MPI_SUCCESS => errors::raise(name, None, err),
            _ => rc,
        };
    }
}

/// `MPI_Request_free` of a generalized request (`None`: not one). Once
/// completed, `free_fn` runs now; before, `MPI_Grequest_complete` runs it.
pub fn request_free(request: *mut MPI_Request) -> Option<c_int> {
    if LIVE.load(Ordering::Acquire) == 0 || request.is_null() {
        return None;
    }
    // SAFETY: checked non-null; the caller's handle.
    let h = unsafe { &mut *request };
    let mut t = table();
    let i = by_handle(&t, *h)?;
    *h = c::MPI_REQUEST_NULL;
    if !t[i].completed {
        t[i].user_freed = true;
        return Some(c::MPI_SUCCESS);
    }
    let g = t.remove(i);
    if !g.queried {
        DUE.fetch_sub(1, Ordering::AcqRel);
    }
    LIVE.store(t.len(), Ordering::Release);
    drop(t);
    let dropped = state::with_engine(|e| {
        if e.st.reqs.by_cookie(g.cookie) == Some(g.idx) {
            e.st.reqs.remove(g.idx);
        }
        Ok(())
    });
    Some(match dropped.and(run_free(&g.cbs)) {
        Ok(()) => c::MPI_SUCCESS,
        Err(err) => errors::raise("MPI_Request_free", None, err),
    })
}

/// `MPI_Cancel` of a generalized request (`None`: not one): calls
/// `cancel_fn` with whether it was completed already.
pub fn cancel(request: *mut MPI_Request) -> Option<c_int> {
    if LIVE.load(Ordering::Acquire) == 0 || request.is_null() {
        return None;
    }
    let (cbs, completed) = {
        let t = table();
        // SAFETY: checked non-null; the caller's handle.
        let g = &t[by_handle(&t, unsafe { *request })?];
        (g.cbs, g.completed)
    };
    let rc = run_cancel(&cbs, completed);
    Some(if rc == c::MPI_SUCCESS {
        rc
    } else {
        errors::raise(
            "MPI_Cancel",
            None,
            MpiError::new(rc, "the generalized request's cancel_fn failed"),
        )
    })
}

/// `MPI_Request_get_status` of a generalized request (`None`: not one):
/// once completed, `query_fn` fills the status (the request stays).
pub fn get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> Option<c_int> {
    if LIVE.load(Ordering::Acquire) == 0 || flag.is_null() {
        return None;
    }
    let (cbs, completed) = {
        let t = table();
        let g = &t[by_handle(&t, request)?];
        (g.cbs, g.completed)
    };
    if !completed {
        // SAFETY: checked non-null.
        unsafe { *flag = 0 };
        return Some(call("MPI_Request_get_status", None, |e| {
            e.progress(false).map(|_| ())
        }));
    }
    let (st, rc) = run_query(&cbs);
    // SAFETY: checked non-null; `status` is the caller's (or IGNORE).
    unsafe {
        *flag = 1;
        write_status(status, &st);
    }
    Some(if rc == c::MPI_SUCCESS {
        rc
    } else {
        errors::raise(
            "MPI_Request_get_status",
            None,
            MpiError::new(rc, "the generalized request's query_fn failed"),
        )
    })
}

/// Wakes this rank if it sleeps in a wait (a datagram to its doorbell).
fn ring() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let Some(name) = BELL.get() else { return };
    if let (Ok(s), Ok(a)) = (
        UnixDatagram::unbound(),
        SocketAddr::from_abstract_name(name),
    ) {
        // A full socket buffer means a wake-up is pending already.
        if s.set_nonblocking(true).is_ok() {
            let _ = s.send_to_addr(&[1], &a);
        }
    }
}

mpi_fn! { MPI_Grequest_start / PMPI_Grequest_start (query_fn: Option<MPI_Grequest_query_function>, free_fn: Option<MPI_Grequest_free_function>,
        cancel_fn: Option<MPI_Grequest_cancel_function>, extra_state: *mut c_void, request: *mut MPI_Request) -> c_int {
    call("MPI_Grequest_start", None, |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        BELL.get_or_init(|| format!("{}{}", e.job.name_prefix(), e.job.rank).into_bytes());
        let idx = e.st.reqs.insert(Op::Generalized);
        let mut t = table();
        t.push(Greq {
            idx,
            cookie: e.st.reqs.cookie(idx),
            cbs: Callbacks {
                query: query_fn,
                free: free_fn,
                cancel: cancel_fn,
                extra: extra_state as usize,
                fortran: false,
            },
            completed: false,
            queried: false,
            user_freed: false,
        });
        LIVE.store(t.len(), Ordering::Release);
        // SAFETY: checked non-null.
        unsafe { *request = handle_of(idx) };
        Ok(())
    })
}}

mpi_fn! { MPI_Grequest_complete / PMPI_Grequest_complete (request: MPI_Request) -> c_int {
    let fail = |err: MpiError| {
        // Another thread must not reach the engine (error handlers do):
        // it gets the error class back.
        if state::is_main_thread() {
            errors::raise("MPI_Grequest_complete", None, err)
        } else {
            err.class
        }
    };
    if state::phase() != state::RUNNING {
        return fail(MpiError::other("called outside MPI_Init .. MPI_Finalize"));
    }
    let freed = {
        let mut t = table();
        let Some(i) = by_handle(&t, request)
            .or_else(|| t.iter().position(|g| handle_of(g.idx) == request && !g.completed))
        else {
            return fail(MpiError::new(
                c::MPI_ERR_REQUEST,
                format!("0x{:08x} is not a generalized request", request as u32),
            ));
        };
        let g = &mut t[i];
        if g.completed {
            return fail(MpiError::new(c::MPI_ERR_REQUEST, "the generalized request is complete already"));
        }
        g.completed = true;
        if g.user_freed {
            Some(g.cbs)
        } else {
            DUE.fetch_add(1, Ordering::AcqRel);
            None
        }
    };
    match freed {
        // Freed first: this is the last of the two, so free_fn runs here.
        Some(cbs) => match run_free(&cbs) {
            Ok(()) => c::MPI_SUCCESS,
            Err(err) => fail(err),
        },
        None => {
            ring();
            c::MPI_SUCCESS
        }
    }
}}

/// Marks a generalized request started by MPICH's Fortran library: its
/// callbacks are Fortran subroutines. An unknown handle is ignored, as in
/// MPICH (the library calls this only after a successful start).
///
/// # Safety
/// Any handle value is accepted.
#[no_mangle]
pub unsafe extern "C" fn MPII_Grequest_set_lang_f77(request: MPI_Request) {
    super::guard("MPII_Grequest_set_lang_f77", || {
        let mut t = table();
        if let Some(i) = by_handle(&t, request) {
            t[i].cbs.fortran = true;
        }
    })
}
