//! Error handlers (predefined and user-written) and the error classes,
//! codes and strings a program adds at run time.
//!
//! User handlers and added codes live here, in the ABI layer, because they
//! hold C function pointers and C strings; the engine stores only the
//! handler's handle on each communicator.

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Comm_errhandler_function, MPI_Errhandler};
use super::{comm_handle, comm_idx, errors, state};
use crate::engine::comm;
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// Kind and object bits of a user error handler (MPICH's "direct" kind).
const USER_ERRH_BASE: c_int = 0x9400_0000_u32 as c_int;
const INDEX_MASK: c_int = 0x03ff_ffff;

/// The first value handed out to an added class or code: above every
/// predefined code, as MPICH does.
const FIRST_ADDED: c_int = c::MPI_ERR_LASTCODE + 1;

/// The kind of object a user handler was created for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrhKind {
    Comm,
    Win,
}

impl ErrhKind {
    fn noun(self) -> &'static str {
        match self {
            ErrhKind::Comm => "communicators",
            ErrhKind::Win => "windows",
        }
    }
}

/// MPICH's C++ layer calls a C++ handler through this: (object kind: 0
/// communicator, 2 window; the handle, the code, the handler).
pub type CxxErrCall =
    unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, MPI_Comm_errhandler_function);

struct Handler {
    func: MPI_Comm_errhandler_function,
    /// Set for a handler made by MPICH's C++ classes.
    cxx: Option<CxxErrCall>,
    kind: ErrhKind,
    /// Handles the program holds (create and get add one, free drops one).
    /// The entry itself stays: communicators may still use the handler.
    user_refs: u32,
}

struct Table {
    handlers: Vec<Handler>,
    /// Class of every added class (itself) and code.
    added_class: BTreeMap<c_int, c_int>,
    /// Strings set with MPI_Add_error_string.
    strings: BTreeMap<c_int, String>,
    /// The last value handed out to an added class or code.
    last_added: c_int,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    handlers: Vec::new(),
    added_class: BTreeMap::new(),
    strings: BTreeMap::new(),
    last_added: c::MPI_ERR_LASTCODE,
});

/// The table; a panic elsewhere cannot leave it half-written, so a poisoned
/// lock is still usable.
fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reports the outcome of an entry point that does not run on the engine.
pub fn report(name: &str, comm: Option<MPI_Comm>, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => c::MPI_SUCCESS,
        Err(e) => errors::raise(name, comm.and_then(|h| comm_idx(h).ok()), e),
    }
}

fn user_index(h: MPI_Errhandler) -> Option<usize> {
    (h & !INDEX_MASK == USER_ERRH_BASE).then_some((h & INDEX_MASK) as usize)
}

/// A user handler, as [`invoke`] calls it.
#[derive(Clone, Copy)]
pub struct UserHandler {
    func: MPI_Comm_errhandler_function,
    cxx: Option<CxxErrCall>,
    kind: ErrhKind,
}

/// The user handler behind handle `h`, if `h` is one.
pub fn user_function(h: MPI_Errhandler) -> Option<UserHandler> {
    let i = user_index(h)?;
    table().handlers.get(i).map(|x| UserHandler {
        func: x.func,
        cxx: x.cxx,
        kind: x.kind,
    })
}

/// Calls a user handler the way the standard specifies: with pointers to
/// the object's handle and to the error code. Returns what the failed call
/// returns: the code, or success after a C++ handler, since MPICH's C++
/// layer would call the handler again on an error return.
pub fn invoke(u: UserHandler, obj: c_int, code: c_int) -> c_int {
    let (mut obj, mut code_arg) = (obj, code);
    match u.cxx {
        // SAFETY: MPICH's C++ call-through function with the handler it
        // registered; both pointers are to live locals.
        Some(call) => unsafe {
            let kind = match u.kind {
                ErrhKind::Comm => 0,
                ErrhKind::Win => 2,
            };
            call(kind, &mut obj, &mut code_arg, u.func);
            c::MPI_SUCCESS
        },
        // SAFETY: `func` is the function the program registered with
        // MPI_*_create_errhandler; both pointers are to live locals. No
        // engine borrow or table lock is held, so it may call MPI itself.
        None => unsafe {
            (u.func)(&mut obj, &mut code_arg);
            code
        },
    }
}

/// Marks a handler made by MPICH's C++ classes: it is called through
/// `call`. An unknown handle is ignored, as in MPICH.
///
/// # Safety
/// `call` is null or a function of [`CxxErrCall`]'s signature.
#[no_mangle]
pub unsafe extern "C" fn MPII_Errhandler_set_cxx(h: MPI_Errhandler, call: Option<CxxErrCall>) {
    super::guard("MPII_Errhandler_set_cxx", || {
        let Some(i) = user_index(h) else { return };
        if let Some(x) = table().handlers.get_mut(i) {
            x.cxx = call;
        }
    })
}

/// Checks a handle a program passes to set an error handler on an object
/// of `kind`.
pub(super) fn check_settable(h: MPI_Errhandler, kind: ErrhKind) -> MpiResult<()> {
    match h {
        c::MPI_ERRORS_ARE_FATAL | c::MPI_ERRORS_RETURN | c::MPI_ERRORS_ABORT => return Ok(()),
        c::MPI_ERRHANDLER_NULL => {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                "invalid error handler MPI_ERRHANDLER_NULL",
            ))
        }
        _ => {}
    }
    let found = user_index(h)
        .and_then(|i| table().handlers.get(i).map(|x| (x.user_refs > 0, x.kind)))
        .unwrap_or((false, kind));
    match found {
        (false, _) => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("invalid error handler 0x{:08x}", h as u32),
        )),
        (true, k) if k != kind => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!(
                "error handler 0x{:08x} was created for {}, not {}",
                h as u32,
                k.noun(),
                kind.noun()
            ),
        )),
        _ => Ok(()),
    }
}

/// Counts one more program-held reference to `h` (the `*_get_errhandler`
/// calls hand out a handle the program must free).
pub(super) fn hold(h: MPI_Errhandler) {
    if let Some(i) = user_index(h) {
        if let Some(x) = table().handlers.get_mut(i) {
            x.user_refs += 1;
        }
    }
}

pub(super) fn create(
    func: Option<MPI_Comm_errhandler_function>,
    out: *mut MPI_Errhandler,
    kind: ErrhKind,
) -> MpiResult<()> {
    let func = func.ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "function is NULL"))?;
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "errhandler is NULL"));
    }
    let mut t = table();
    let i = t.handlers.len();
    if i > INDEX_MASK as usize {
        return Err(MpiError::new(c::MPI_ERR_NO_MEM, "too many error handlers"));
    }
    t.handlers.push(Handler {
        func,
        cxx: None,
        kind,
        user_refs: 1,
    });
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *out = USER_ERRH_BASE | i as c_int };
    Ok(())
}

fn set(comm: MPI_Comm, h: MPI_Errhandler) -> MpiResult<()> {
    check_settable(h, ErrhKind::Comm)?;
    state::with_engine(|e| {
        e.comms.get_mut(comm_idx(comm)?)?.errhandler = h;
        Ok(())
    })
}

fn get(comm: MPI_Comm, out: *mut MPI_Errhandler) -> MpiResult<()> {
    let h = state::with_engine(|e| Ok(e.comms.get(comm_idx(comm)?)?.errhandler))?;
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "errhandler is NULL"));
    }
    // The program now holds one more reference, which it must free.
    hold(h);
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *out = h };
    Ok(())
}

mpi_fn! { MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler (function: Option<MPI_Comm_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    report("MPI_Comm_create_errhandler", None, create(function, errhandler, ErrhKind::Comm))
}}

mpi_fn! { MPI_Errhandler_create / PMPI_Errhandler_create (function: Option<MPI_Comm_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    report("MPI_Errhandler_create", None, create(function, errhandler, ErrhKind::Comm))
}}

mpi_fn! { MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler (comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    report("MPI_Comm_set_errhandler", Some(comm), set(comm, errhandler))
}}

mpi_fn! { MPI_Errhandler_set / PMPI_Errhandler_set (comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    report("MPI_Errhandler_set", Some(comm), set(comm, errhandler))
}}

mpi_fn! { MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler (comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    report("MPI_Comm_get_errhandler", Some(comm), get(comm, errhandler))
}}

mpi_fn! { MPI_Errhandler_get / PMPI_Errhandler_get (comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    report("MPI_Errhandler_get", Some(comm), get(comm, errhandler))
}}

mpi_fn! { MPI_Errhandler_free / PMPI_Errhandler_free (errhandler: *mut MPI_Errhandler) -> c_int {
    let r = (|| {
        if errhandler.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "errhandler is NULL"));
        }
        // SAFETY: checked non-null; the caller's handle.
        let h = unsafe { *errhandler };
        if let Some(i) = user_index(h) {
            let mut t = table();
            match t.handlers.get_mut(i) {
                Some(x) if x.user_refs > 0 => x.user_refs -= 1,
                _ => {
                    return Err(MpiError::new(
                        c::MPI_ERR_ARG,
                        format!("invalid or already freed error handler 0x{:08x}", h as u32),
                    ))
                }
            }
        } else if h == c::MPI_ERRHANDLER_NULL {
            return Err(MpiError::new(c::MPI_ERR_ARG, "invalid error handler MPI_ERRHANDLER_NULL"));
        }
        // Predefined handlers are never really freed; the handle becomes null.
        // SAFETY: checked non-null.
        unsafe { *errhandler = c::MPI_ERRHANDLER_NULL };
        Ok(())
    })();
    report("MPI_Errhandler_free", None, r)
}}

mpi_fn! { MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler (comm: MPI_Comm, errorcode: c_int) -> c_int {
    let idx = match state::with_engine(|e| {
        let i = comm_idx(comm)?;
        Ok((i, e.comms.get(i)?.errhandler))
    }) {
        Ok(v) => v,
        Err(err) => return report("MPI_Comm_call_errhandler", Some(comm), Err(err)),
    };
    let (i, h) = idx;
    call_handler("MPI_Comm_call_errhandler", comm_handle(i), h, errorcode)
}}

/// What `MPI_*_call_errhandler` does once it found handler `h` of object
/// `obj`: nothing under `MPI_ERRORS_RETURN`, the user function, or the end
/// of the job.
pub(super) fn call_handler(func: &str, obj: c_int, h: MPI_Errhandler, errorcode: c_int) -> c_int {
    match h {
        c::MPI_ERRORS_RETURN => c::MPI_SUCCESS,
        _ => match user_function(h) {
            Some(f) => {
                invoke(f, obj, errorcode);
                c::MPI_SUCCESS
            }
            None => errors::fatal(&format!(
                "{func}: error code {errorcode}: {}",
                error_string(errorcode)
            )),
        },
    }
}

// ---- Added error classes, codes and strings ----

/// The value of the `MPI_LASTUSEDCODE` attribute.
pub fn last_used_code() -> c_int {
    table().last_added
}

/// The class of `code`, or `None` if it is not a valid error code.
pub fn class_of(code: c_int) -> Option<c_int> {
    errors::predefined_class_of(code).or_else(|| table().added_class.get(&code).copied())
}

/// The text `MPI_Error_string` gives for `code`.
pub fn error_string(code: c_int) -> String {
    let t = table();
    if let Some(s) = t.strings.get(&code) {
        return s.clone();
    }
    if t.added_class.contains_key(&code) {
        // The standard: no string set gives an empty one.
        return String::new();
    }
    errors::code_string(code)
}

fn add(class: Option<c_int>, out: *mut c_int, what: &str) -> MpiResult<()> {
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    let mut t = table();
    if t.last_added == c_int::MAX {
        return Err(MpiError::new(c::MPI_ERR_NO_MEM, "no error codes left"));
    }
    let v = t.last_added.max(FIRST_ADDED - 1) + 1;
    t.last_added = v;
    t.added_class.insert(v, class.unwrap_or(v));
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *out = v };
    Ok(())
}

mpi_fn! { MPI_Add_error_class / PMPI_Add_error_class (errorclass: *mut c_int) -> c_int {
    report("MPI_Add_error_class", None, add(None, errorclass, "errorclass"))
}}

mpi_fn! { MPI_Add_error_code / PMPI_Add_error_code (errorclass: c_int, errorcode: *mut c_int) -> c_int {
    let r = (|| {
        let ok = errors::is_class(errorclass)
            || table().added_class.get(&errorclass) == Some(&errorclass);
        if !ok {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!("invalid error class {errorclass}")));
        }
        add(Some(errorclass), errorcode, "errorcode")
    })();
    report("MPI_Add_error_code", None, r)
}}

mpi_fn! { MPI_Add_error_string / PMPI_Add_error_string (errorcode: c_int, string: *const c_char) -> c_int {
    let r = (|| {
        if string.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "string is NULL"));
        }
        // SAFETY: a NUL-terminated C string, as the standard requires.
        let s = unsafe { CStr::from_ptr(string) }.to_string_lossy().into_owned();
        if s.len() >= c::MPI_MAX_ERROR_STRING as usize {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("string is {} characters (at most {})", s.len(), c::MPI_MAX_ERROR_STRING - 1),
            ));
        }
        let mut t = table();
        if !t.added_class.contains_key(&errorcode) {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("{errorcode} is not an added error class or code"),
            ));
        }
        t.strings.insert(errorcode, s);
        Ok(())
    })();
    report("MPI_Add_error_string", None, r)
}}

// MPI 4.1 removal. Predefined classes and codes cannot be removed, and a
// class cannot be removed while codes still belong to it. Values are not
// reused (MPI_LASTUSEDCODE only grows).

/// Checks that `v` is an added class (`class`) or an added code that is
/// not a class.
fn check_added(t: &Table, v: c_int, class: bool) -> MpiResult<()> {
    let what = if class { "class" } else { "code" };
    match t.added_class.get(&v) {
        _ if errors::is_valid(v) => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("{v} is a predefined error {what}; it cannot be removed"),
        )),
        Some(&k) if (k == v) == class => Ok(()),
        _ => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("{v} is not an added error {what}"),
        )),
    }
}

mpi_fn! { MPI_Remove_error_class / PMPI_Remove_error_class (errorclass: c_int) -> c_int {
    let r = (|| {
        let mut t = table();
        check_added(&t, errorclass, true)?;
        let codes = t.added_class.iter().filter(|&(&k, &v)| v == errorclass && k != errorclass).count();
        if codes > 0 {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("error class {errorclass} still has {codes} error code(s); remove them first"),
            ));
        }
        t.added_class.remove(&errorclass);
        t.strings.remove(&errorclass);
        Ok(())
    })();
    report("MPI_Remove_error_class", None, r)
}}

mpi_fn! { MPI_Remove_error_code / PMPI_Remove_error_code (errorcode: c_int) -> c_int {
    let r = (|| {
        let mut t = table();
        check_added(&t, errorcode, false)?;
        t.added_class.remove(&errorcode);
        t.strings.remove(&errorcode);
        Ok(())
    })();
    report("MPI_Remove_error_code", None, r)
}}

mpi_fn! { MPI_Remove_error_string / PMPI_Remove_error_string (errorcode: c_int) -> c_int {
    let r = (|| {
        let mut t = table();
        if errors::is_valid(errorcode) {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("{errorcode} is a predefined error code; its string cannot be removed"),
            ));
        }
        if !t.added_class.contains_key(&errorcode) {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!("{errorcode} is not an added error class or code")));
        }
        if t.strings.remove(&errorcode).is_none() {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!("error code {errorcode} has no string to remove")));
        }
        Ok(())
    })();
    report("MPI_Remove_error_string", None, r)
}}

/// Copies `s` into a C string buffer of `cap` bytes, NUL-terminated.
///
/// # Safety
/// `out` points to at least `cap` (> 0) writable bytes.
unsafe fn write_cstr(out: *mut c_char, cap: usize, s: &str) -> c_int {
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: `n + 1 <= cap` bytes, within the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), out as *mut u8, n);
        *out.add(n) = 0;
    }
    n as c_int
}

mpi_fn! { MPI_Error_string / PMPI_Error_string (errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    if string.is_null() || resultlen.is_null() {
        return errors::raise("MPI_Error_string", None, MpiError::new(c::MPI_ERR_ARG, "NULL argument"));
    }
    if class_of(errorcode).is_none() {
        return errors::raise("MPI_Error_string", None, MpiError::new(c::MPI_ERR_ARG, format!("invalid error code {errorcode}")));
    }
    let s = error_string(errorcode);
    // SAFETY: the standard sizes `string` at MPI_MAX_ERROR_STRING.
    unsafe { *resultlen = write_cstr(string, c::MPI_MAX_ERROR_STRING as usize, &s) };
    c::MPI_SUCCESS
}}

mpi_fn! { MPI_Error_class / PMPI_Error_class (errorcode: c_int, errorclass: *mut c_int) -> c_int {
    if errorclass.is_null() {
        return errors::raise("MPI_Error_class", None, MpiError::new(c::MPI_ERR_ARG, "errorclass is NULL"));
    }
    let Some(cls) = class_of(errorcode) else {
        return errors::raise("MPI_Error_class", None, MpiError::new(c::MPI_ERR_ARG, format!("invalid error code {errorcode}")));
    };
    // SAFETY: checked non-null.
    unsafe { *errorclass = cls };
    c::MPI_SUCCESS
}}

/// The handler in force for errors reported on `comm_idx` (or, without
/// one or for a dead one, on `MPI_COMM_WORLD`), and the handle it is for.
pub fn handler_for(comm_idx: Option<usize>) -> (MPI_Comm, MPI_Errhandler) {
    state::with_engine(|e| {
        let idx = comm_idx.unwrap_or(comm::WORLD);
        Ok(match e.comms.errhandler(idx) {
            Some(h) => (comm_handle(idx), h),
            None => (
                c::MPI_COMM_WORLD,
                e.comms
                    .get(comm::WORLD)
                    .map(|c| c.errhandler)
                    .unwrap_or(c::MPI_ERRORS_ARE_FATAL),
            ),
        })
    })
    .unwrap_or((c::MPI_COMM_WORLD, c::MPI_ERRORS_ARE_FATAL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_codes_follow_their_class() {
        let mut cls = 0;
        let mut code = 0;
        add(None, &mut cls, "c").unwrap();
        add(Some(cls), &mut code, "c").unwrap();
        assert!(cls > c::MPI_ERR_LASTCODE);
        assert!(code > cls);
        assert_eq!(class_of(code), Some(cls));
        assert_eq!(class_of(cls), Some(cls));
        assert!(last_used_code() >= code);
        assert_eq!(error_string(code), "");
        assert_eq!(class_of(c::MPI_ERR_RANK), Some(c::MPI_ERR_RANK));
    }

    #[test]
    fn user_handles_do_not_look_predefined() {
        assert!(user_index(c::MPI_ERRORS_RETURN).is_none());
        assert!(user_index(c::MPI_ERRHANDLER_NULL).is_none());
        assert_eq!(user_index(USER_ERRH_BASE | 3), Some(3));
    }
}
