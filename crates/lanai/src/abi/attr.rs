//! Attribute caching: keyvals with their copy and delete callbacks, the
//! values programs attach to communicators, datatypes and windows, and the
//! predefined communicator attributes (`MPI_TAG_UB`, ...).
//!
//! Callbacks are user code that may call MPI, so they always run with no
//! engine borrow and no lock held: the store is read, the lock dropped, the
//! callback run, and the store re-read.

use super::consts as c;
use super::consts::{
    MPI_Comm, MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function, MPI_Copy_function,
    MPI_Datatype, MPI_Delete_function, MPI_Type_copy_attr_function, MPI_Type_delete_attr_function,
    MPI_Win, MPI_Win_copy_attr_function, MPI_Win_delete_attr_function,
};
use super::errhandler::{last_used_code, report};
use super::{comm_idx, state};
use crate::engine::comm::{SELF, WORLD};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::TAG_UB;
use crate::mpi_fn;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The kind of object a keyval is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Comm,
    Type,
    Win,
}

impl Kind {
    /// MPICH's object-kind bits (22-25) in a keyval handle.
    fn bits(self) -> c_int {
        match self {
            Kind::Comm => 0x1,
            Kind::Type => 0x3,
            Kind::Win => 0x8,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Comm => "communicator",
            Kind::Type => "datatype",
            Kind::Win => "window",
        }
    }
}

/// User keyvals: MPICH's "direct" keyval kind, object kind, index. The
/// predefined keyvals (`0x644...`, `0x660...`) have the builtin bits
/// instead, so the two never collide.
const USER_KEYVAL_BASE: c_int = 0xa400_0000_u32 as c_int;
const KIND_SHIFT: u32 = 22;
const KEYVAL_INDEX_MASK: c_int = (1 << KIND_SHIFT) - 1;

/// The copy and delete callbacks of every kind have the same C shape (the
/// handle is an `int` for communicators, datatypes and windows alike).
#[derive(Clone, Copy, Debug)]
struct Keyval {
    kind: Kind,
    copy: Option<MPI_Copy_function>,
    delete: Option<MPI_Delete_function>,
    /// The program's `extra_state` pointer, passed back to the callbacks.
    extra: usize,
    /// Freed by the program: the handle may no longer be used to set
    /// attributes, but attributes already set keep it alive.
    freed: bool,
}

struct Store {
    /// Keyvals by index; entries are never removed (see `Keyval::freed`).
    keyvals: Vec<Keyval>,
    /// (keyval handle, value) per object, in the order first set.
    attrs: BTreeMap<(Kind, c_int), Vec<(c_int, usize)>>,
}

static STORE: Mutex<Store> = Mutex::new(Store {
    keyvals: Vec::new(),
    attrs: BTreeMap::new(),
});

/// The store; every update is a single step, so a poisoned lock (a panic
/// elsewhere) still holds consistent data.
fn store() -> MutexGuard<'static, Store> {
    STORE.lock().unwrap_or_else(|p| p.into_inner())
}

fn keyval_handle(kind: Kind, idx: usize) -> c_int {
    USER_KEYVAL_BASE | (kind.bits() << KIND_SHIFT) | idx as c_int
}

/// The keyval behind handle `kv`, checked to be for `kind`.
fn lookup(kind: Kind, kv: c_int) -> MpiResult<Keyval> {
    let bad = |why: String| Err(MpiError::new(c::MPI_ERR_KEYVAL, why));
    if kv == c::MPI_KEYVAL_INVALID {
        return bad("invalid keyval MPI_KEYVAL_INVALID".into());
    }
    let idx = (kv & KEYVAL_INDEX_MASK) as usize;
    let found = (kv & !KEYVAL_INDEX_MASK & !(0xf << KIND_SHIFT) == USER_KEYVAL_BASE)
        .then(|| store().keyvals.get(idx).copied())
        .flatten();
    match found {
        None => bad(format!("invalid keyval 0x{:08x}", kv as u32)),
        Some(k) if k.kind != kind || keyval_handle(k.kind, idx) != kv => bad(format!(
            "keyval 0x{:08x} is for a {}, not a {}",
            kv as u32,
            k.kind.noun(),
            kind.noun()
        )),
        Some(k) => Ok(k),
    }
}

fn is_predefined(kind: Kind, kv: c_int) -> bool {
    match kind {
        Kind::Comm => [
            c::MPI_TAG_UB,
            c::MPI_HOST,
            c::MPI_IO,
            c::MPI_WTIME_IS_GLOBAL,
            c::MPI_UNIVERSE_SIZE,
            c::MPI_LASTUSEDCODE,
            c::MPI_APPNUM,
        ]
        .contains(&kv),
        Kind::Win => [
            c::MPI_WIN_BASE,
            c::MPI_WIN_SIZE,
            c::MPI_WIN_DISP_UNIT,
            c::MPI_WIN_CREATE_FLAVOR,
            c::MPI_WIN_MODEL,
        ]
        .contains(&kv),
        Kind::Type => false,
    }
}

fn create_keyval(
    kind: Kind,
    copy: Option<MPI_Copy_function>,
    delete: Option<MPI_Delete_function>,
    out: *mut c_int,
    extra: *mut c_void,
) -> MpiResult<()> {
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "keyval is NULL"));
    }
    let mut st = store();
    let idx = st.keyvals.len();
    if idx > KEYVAL_INDEX_MASK as usize {
        return Err(MpiError::new(c::MPI_ERR_NO_MEM, "too many keyvals"));
    }
    st.keyvals.push(Keyval {
        kind,
        copy,
        delete,
        extra: extra as usize,
        freed: false,
    });
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *out = keyval_handle(kind, idx) };
    Ok(())
}

fn free_keyval(kind: Kind, kv: *mut c_int) -> MpiResult<()> {
    if kv.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "keyval is NULL"));
    }
    // SAFETY: checked non-null; the caller's handle.
    let h = unsafe { *kv };
    if is_predefined(kind, h) {
        return Err(MpiError::new(
            c::MPI_ERR_KEYVAL,
            format!("cannot free predefined keyval 0x{:08x}", h as u32),
        ));
    }
    let k = lookup(kind, h)?;
    if k.freed {
        return Err(MpiError::new(
            c::MPI_ERR_KEYVAL,
            format!("keyval 0x{:08x} was already freed", h as u32),
        ));
    }
    let idx = (h & KEYVAL_INDEX_MASK) as usize;
    if let Some(k) = store().keyvals.get_mut(idx) {
        k.freed = true;
    }
    // SAFETY: checked non-null above.
    unsafe { *kv = c::MPI_KEYVAL_INVALID };
    Ok(())
}

/// Runs the copy callback: `Some(value)` if the new object gets the attribute.
fn run_copy(k: &Keyval, kv: c_int, obj: c_int, val: usize) -> MpiResult<Option<usize>> {
    let Some(f) = k.copy else {
        return Ok(None); // MPI_*_NULL_COPY_FN
    };
    let mut out: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: the program's copy function, called with the arguments the
    // standard specifies; `out` and `flag` are live locals.
    let rc = unsafe {
        f(
            obj,
            kv,
            k.extra as *mut c_void,
            val as *mut c_void,
            &mut out as *mut *mut c_void as *mut c_void,
            &mut flag,
        )
    };
    if rc != c::MPI_SUCCESS {
        return Err(MpiError::new(
            rc,
            format!(
                "the copy callback of keyval 0x{:08x} returned error {rc}",
                kv as u32
            ),
        ));
    }
    Ok((flag != 0).then_some(out as usize))
}

fn run_delete(k: &Keyval, kv: c_int, obj: c_int, val: usize) -> MpiResult<()> {
    let Some(f) = k.delete else {
        return Ok(()); // MPI_*_NULL_DELETE_FN
    };
    // SAFETY: the program's delete function, called with the arguments the
    // standard specifies.
    let rc = unsafe { f(obj, kv, val as *mut c_void, k.extra as *mut c_void) };
    if rc != c::MPI_SUCCESS {
        return Err(MpiError::new(
            rc,
            format!(
                "the delete callback of keyval 0x{:08x} returned error {rc}",
                kv as u32
            ),
        ));
    }
    Ok(())
}

fn value_of(kind: Kind, obj: c_int, kv: c_int) -> Option<usize> {
    store()
        .attrs
        .get(&(kind, obj))
        .and_then(|l| l.iter().find(|(k, _)| *k == kv).map(|(_, v)| *v))
}

fn store_value(kind: Kind, obj: c_int, kv: c_int, val: usize) {
    let mut st = store();
    let list = st.attrs.entry((kind, obj)).or_default();
    match list.iter_mut().find(|(k, _)| *k == kv) {
        Some(slot) => slot.1 = val,
        None => list.push((kv, val)),
    }
}

fn remove_value(kind: Kind, obj: c_int, kv: c_int) {
    let mut st = store();
    if let Some(list) = st.attrs.get_mut(&(kind, obj)) {
        list.retain(|(k, _)| *k != kv);
        if list.is_empty() {
            st.attrs.remove(&(kind, obj));
        }
    }
}

fn set_attr(kind: Kind, obj: c_int, kv: c_int, val: *mut c_void) -> MpiResult<()> {
    if is_predefined(kind, kv) {
        return Err(MpiError::new(
            c::MPI_ERR_KEYVAL,
            format!("cannot set predefined attribute 0x{:08x}", kv as u32),
        ));
    }
    let k = lookup(kind, kv)?;
    if k.freed {
        return Err(MpiError::new(
            c::MPI_ERR_KEYVAL,
            format!("keyval 0x{:08x} was freed", kv as u32),
        ));
    }
    // Replacing a value deletes the old one first; if that fails, the old
    // value stays.
    if let Some(old) = value_of(kind, obj, kv) {
        run_delete(&k, kv, obj, old)?;
    }
    store_value(kind, obj, kv, val as usize);
    Ok(())
}

fn get_attr(kind: Kind, obj: c_int, kv: c_int) -> MpiResult<Option<usize>> {
    lookup(kind, kv)?;
    Ok(value_of(kind, obj, kv))
}

fn delete_attr(kind: Kind, obj: c_int, kv: c_int) -> MpiResult<()> {
    if is_predefined(kind, kv) {
        return Err(MpiError::new(
            c::MPI_ERR_KEYVAL,
            format!("cannot delete predefined attribute 0x{:08x}", kv as u32),
        ));
    }
    let k = lookup(kind, kv)?;
    // Deleting an attribute that is not set is a no-op (as in MPICH).
    if let Some(v) = value_of(kind, obj, kv) {
        run_delete(&k, kv, obj, v)?;
        remove_value(kind, obj, kv);
    }
    Ok(())
}

/// Deletes every attribute of `obj`, newest first, running the delete
/// callbacks. Stops at the first failing callback, leaving the rest set.
fn delete_all(kind: Kind, obj: c_int) -> MpiResult<()> {
    loop {
        let last = store()
            .attrs
            .get(&(kind, obj))
            .and_then(|l| l.last().copied());
        let Some((kv, v)) = last else {
            return Ok(());
        };
        let k = store()
            .keyvals
            .get((kv & KEYVAL_INDEX_MASK) as usize)
            .copied();
        if let Some(k) = k {
            run_delete(&k, kv, obj, v)?;
        }
        remove_value(kind, obj, kv);
    }
}

/// Gives `new` the attributes of `old` that their copy callbacks keep. On
/// a failing callback, the copies made so far are deleted again.
fn copy_all(kind: Kind, old: c_int, new: c_int) -> MpiResult<()> {
    let snapshot: Vec<(c_int, usize)> =
        store().attrs.get(&(kind, old)).cloned().unwrap_or_default();
    for (kv, v) in snapshot {
        let k = store()
            .keyvals
            .get((kv & KEYVAL_INDEX_MASK) as usize)
            .copied();
        let Some(k) = k else { continue };
        match run_copy(&k, kv, old, v) {
            Ok(Some(nv)) => store_value(kind, new, kv, nv),
            Ok(None) => {}
            Err(e) => {
                let _ = delete_all(kind, new);
                return Err(e);
            }
        }
    }
    Ok(())
}

// ---- Hooks for the communicator and datatype entry points ----

/// After `MPI_Comm_dup` and its variants made `*newcomm` (`rc` is what the
/// dup returned): copies the attributes. If a copy callback fails, the new
/// communicator is freed again and the dup fails with the callback's error.
pub fn after_comm_dup(name: &str, rc: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    if rc != c::MPI_SUCCESS || newcomm.is_null() {
        return rc;
    }
    // SAFETY: non-null, and the dup just wrote the new handle there.
    let new = unsafe { *newcomm };
    match copy_all(Kind::Comm, comm, new) {
        Ok(()) => c::MPI_SUCCESS,
        Err(err) => {
            let _ = state::with_engine(|e| e.comm_free(comm_idx(new)?));
            // SAFETY: as above.
            unsafe { *newcomm = c::MPI_COMM_NULL };
            report(name, Some(comm), Err(err))
        }
    }
}

/// Before `MPI_Comm_free` of `comm`: runs the delete callbacks. Anything
/// but `MPI_SUCCESS` means the free must not go on. An invalid or
/// predefined communicator is left for the free itself to report.
pub fn before_comm_free(name: &str, comm: MPI_Comm) -> c_int {
    let idx = state::with_engine(|e| {
        let i = comm_idx(comm)?;
        e.comms.get(i)?;
        Ok(i)
    });
    match idx {
        Ok(i) if i != WORLD && i != SELF => report(name, Some(comm), delete_all(Kind::Comm, comm)),
        _ => c::MPI_SUCCESS,
    }
}

/// First step of `MPI_Finalize`: the attributes of `MPI_COMM_SELF` are
/// deleted (their callbacks run) before anything is torn down, then those
/// of `MPI_COMM_WORLD`, as MPICH does.
pub fn at_finalize() -> c_int {
    if state::phase() != state::RUNNING {
        return c::MPI_SUCCESS;
    }
    let r = delete_all(Kind::Comm, c::MPI_COMM_SELF)
        .and_then(|()| delete_all(Kind::Comm, c::MPI_COMM_WORLD));
    report("MPI_Finalize", None, r)
}

/// For `MPI_Type_dup`: copies the attributes of datatype `old` to `new`.
pub fn after_type_dup(old: MPI_Datatype, new: MPI_Datatype) -> MpiResult<()> {
    copy_all(Kind::Type, old, new)
}

/// For `MPI_Type_free`: deletes the attributes of datatype `dt`.
pub fn before_type_free(dt: MPI_Datatype) -> MpiResult<()> {
    delete_all(Kind::Type, dt)
}

// ---- Predefined attributes ----

/// Values behind the predefined attributes; C receives pointers to them.
static ATTR_TAG_UB: AtomicI32 = AtomicI32::new(TAG_UB);
static ATTR_HOST: AtomicI32 = AtomicI32::new(c::MPI_PROC_NULL);
static ATTR_IO: AtomicI32 = AtomicI32::new(c::MPI_ANY_SOURCE);
static ATTR_WTIME_GLOBAL: AtomicI32 = AtomicI32::new(0);
static ATTR_UNIVERSE: AtomicI32 = AtomicI32::new(1);
static ATTR_APPNUM: AtomicI32 = AtomicI32::new(0);
static ATTR_LASTUSED: AtomicI32 = AtomicI32::new(c::MPI_ERR_LASTCODE);

fn predefined_cell(kv: c_int) -> Option<&'static AtomicI32> {
    match kv {
        c::MPI_TAG_UB => Some(&ATTR_TAG_UB),
        c::MPI_HOST => Some(&ATTR_HOST),
        c::MPI_IO => Some(&ATTR_IO),
        c::MPI_WTIME_IS_GLOBAL => Some(&ATTR_WTIME_GLOBAL),
        c::MPI_UNIVERSE_SIZE => Some(&ATTR_UNIVERSE),
        c::MPI_APPNUM => Some(&ATTR_APPNUM),
        c::MPI_LASTUSEDCODE => Some(&ATTR_LASTUSED),
        _ => None,
    }
}

// ---- Communicator entry points ----

fn check_comm(comm: MPI_Comm) -> MpiResult<()> {
    state::with_engine(|e| {
        e.comms.get(comm_idx(comm)?)?;
        Ok(())
    })
}

/// Writes an attribute value (a `void *`) and the flag.
///
/// # Safety
/// `out` and `flag` are null (rejected) or valid for writes.
unsafe fn put_value(out: *mut c_void, flag: *mut c_int, v: Option<*mut c_void>) -> MpiResult<()> {
    if out.is_null() || flag.is_null() {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            "attribute_val or flag is NULL",
        ));
    }
    // SAFETY: both checked non-null; the C binding passes `attribute_val`
    // as a `void **` typed `void *`.
    unsafe {
        match v {
            Some(p) => {
                *(out as *mut *mut c_void) = p;
                *flag = 1;
            }
            None => *flag = 0,
        }
    }
    Ok(())
}

fn comm_get_attr(comm: MPI_Comm, kv: c_int, out: *mut c_void, flag: *mut c_int) -> MpiResult<()> {
    let (size, appnum) = state::with_engine(|e| {
        e.comms.get(comm_idx(comm)?)?;
        Ok((e.job.size, e.job.appnum))
    })?;
    let v = match predefined_cell(kv) {
        Some(cell) => {
            ATTR_UNIVERSE.store(size as i32, Ordering::Relaxed);
            ATTR_APPNUM.store(appnum, Ordering::Relaxed);
            ATTR_LASTUSED.store(last_used_code(), Ordering::Relaxed);
            Some(cell.as_ptr() as *mut c_void)
        }
        None => get_attr(Kind::Comm, comm, kv)?.map(|v| v as *mut c_void),
    };
    // SAFETY: the caller's output arguments, checked inside.
    unsafe { put_value(out, flag, v) }
}

mpi_fn! { MPI_Comm_create_keyval / PMPI_Comm_create_keyval (copy_fn: Option<MPI_Comm_copy_attr_function>, delete_fn: Option<MPI_Comm_delete_attr_function>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    report("MPI_Comm_create_keyval", None, create_keyval(Kind::Comm, copy_fn, delete_fn, keyval, extra_state))
}}

mpi_fn! { MPI_Keyval_create / PMPI_Keyval_create (copy_fn: Option<MPI_Copy_function>, delete_fn: Option<MPI_Delete_function>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    report("MPI_Keyval_create", None, create_keyval(Kind::Comm, copy_fn, delete_fn, keyval, extra_state))
}}

mpi_fn! { MPI_Comm_free_keyval / PMPI_Comm_free_keyval (keyval: *mut c_int) -> c_int {
    report("MPI_Comm_free_keyval", None, free_keyval(Kind::Comm, keyval))
}}

mpi_fn! { MPI_Keyval_free / PMPI_Keyval_free (keyval: *mut c_int) -> c_int {
    report("MPI_Keyval_free", None, free_keyval(Kind::Comm, keyval))
}}

mpi_fn! { MPI_Comm_set_attr / PMPI_Comm_set_attr (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let r = check_comm(comm).and_then(|()| set_attr(Kind::Comm, comm, keyval, attribute_val));
    report("MPI_Comm_set_attr", Some(comm), r)
}}

mpi_fn! { MPI_Attr_put / PMPI_Attr_put (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let r = check_comm(comm).and_then(|()| set_attr(Kind::Comm, comm, keyval, attribute_val));
    report("MPI_Attr_put", Some(comm), r)
}}

mpi_fn! { MPI_Comm_get_attr / PMPI_Comm_get_attr (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    report("MPI_Comm_get_attr", Some(comm), comm_get_attr(comm, keyval, attribute_val, flag))
}}

mpi_fn! { MPI_Attr_get / PMPI_Attr_get (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    report("MPI_Attr_get", Some(comm), comm_get_attr(comm, keyval, attribute_val, flag))
}}

mpi_fn! { MPI_Comm_delete_attr / PMPI_Comm_delete_attr (comm: MPI_Comm, keyval: c_int) -> c_int {
    let r = check_comm(comm).and_then(|()| delete_attr(Kind::Comm, comm, keyval));
    report("MPI_Comm_delete_attr", Some(comm), r)
}}

mpi_fn! { MPI_Attr_delete / PMPI_Attr_delete (comm: MPI_Comm, keyval: c_int) -> c_int {
    let r = check_comm(comm).and_then(|()| delete_attr(Kind::Comm, comm, keyval));
    report("MPI_Attr_delete", Some(comm), r)
}}

// ---- Datatype entry points (attributes keyed by the handle value) ----

fn check_type(dt: MPI_Datatype) -> MpiResult<()> {
    if dt == c::MPI_DATATYPE_NULL {
        return Err(MpiError::new(
            c::MPI_ERR_TYPE,
            "invalid datatype MPI_DATATYPE_NULL",
        ));
    }
    Ok(())
}

mpi_fn! { MPI_Type_create_keyval / PMPI_Type_create_keyval (copy_fn: Option<MPI_Type_copy_attr_function>, delete_fn: Option<MPI_Type_delete_attr_function>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    report("MPI_Type_create_keyval", None, create_keyval(Kind::Type, copy_fn, delete_fn, keyval, extra_state))
}}

mpi_fn! { MPI_Type_free_keyval / PMPI_Type_free_keyval (keyval: *mut c_int) -> c_int {
    report("MPI_Type_free_keyval", None, free_keyval(Kind::Type, keyval))
}}

mpi_fn! { MPI_Type_set_attr / PMPI_Type_set_attr (datatype: MPI_Datatype, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let r = check_type(datatype).and_then(|()| set_attr(Kind::Type, datatype, keyval, attribute_val));
    report("MPI_Type_set_attr", None, r)
}}

mpi_fn! { MPI_Type_get_attr / PMPI_Type_get_attr (datatype: MPI_Datatype, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    let r = check_type(datatype).and_then(|()| {
        let v = get_attr(Kind::Type, datatype, keyval)?.map(|v| v as *mut c_void);
        // SAFETY: the caller's output arguments, checked inside.
        unsafe { put_value(attribute_val, flag, v) }
    });
    report("MPI_Type_get_attr", None, r)
}}

mpi_fn! { MPI_Type_delete_attr / PMPI_Type_delete_attr (datatype: MPI_Datatype, keyval: c_int) -> c_int {
    let r = check_type(datatype).and_then(|()| delete_attr(Kind::Type, datatype, keyval));
    report("MPI_Type_delete_attr", None, r)
}}

// ---- Window entry points (attributes keyed by the handle value) ----

/// For `MPI_Win_free`: deletes the attributes of window `win`, running
/// their delete callbacks (windows are never copied, so copy callbacks
/// never run).
pub fn before_win_free(win: MPI_Win) -> MpiResult<()> {
    delete_all(Kind::Win, win)
}

fn win_get_attr(win: MPI_Win, kv: c_int, out: *mut c_void, flag: *mut c_int) -> MpiResult<()> {
    super::win::check(win)?;
    let v = match super::win::predefined_attr(win, kv)? {
        Some(p) => Some(p),
        None => get_attr(Kind::Win, win, kv)?.map(|v| v as *mut c_void),
    };
    // SAFETY: the caller's output arguments, checked inside.
    unsafe { put_value(out, flag, v) }
}

mpi_fn! { MPI_Win_set_attr / PMPI_Win_set_attr (win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let r = super::win::check(win).and_then(|()| set_attr(Kind::Win, win, win_keyval, attribute_val));
    super::win::report("MPI_Win_set_attr", win, r)
}}

mpi_fn! { MPI_Win_get_attr / PMPI_Win_get_attr (win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    super::win::report("MPI_Win_get_attr", win, win_get_attr(win, win_keyval, attribute_val, flag))
}}

mpi_fn! { MPI_Win_delete_attr / PMPI_Win_delete_attr (win: MPI_Win, win_keyval: c_int) -> c_int {
    let r = super::win::check(win).and_then(|()| delete_attr(Kind::Win, win, win_keyval));
    super::win::report("MPI_Win_delete_attr", win, r)
}}

// ---- Window keyvals ----

mpi_fn! { MPI_Win_create_keyval / PMPI_Win_create_keyval (copy_fn: Option<MPI_Win_copy_attr_function>, delete_fn: Option<MPI_Win_delete_attr_function>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    report("MPI_Win_create_keyval", None, create_keyval(Kind::Win, copy_fn, delete_fn, keyval, extra_state))
}}

mpi_fn! { MPI_Win_free_keyval / PMPI_Win_free_keyval (keyval: *mut c_int) -> c_int {
    report("MPI_Win_free_keyval", None, free_keyval(Kind::Win, keyval))
}}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyval_handles_are_typed_and_distinct_from_predefined() {
        let mut a = 0;
        let mut b = 0;
        create_keyval(Kind::Comm, None, None, &mut a, std::ptr::null_mut()).unwrap();
        create_keyval(Kind::Type, None, None, &mut b, std::ptr::null_mut()).unwrap();
        assert_ne!(a, b);
        assert!(!is_predefined(Kind::Comm, a));
        assert!(lookup(Kind::Comm, a).is_ok());
        assert_eq!(lookup(Kind::Type, a).unwrap_err().class, c::MPI_ERR_KEYVAL);
        assert_eq!(
            lookup(Kind::Comm, c::MPI_TAG_UB).unwrap_err().class,
            c::MPI_ERR_KEYVAL
        );
        assert_eq!(
            lookup(Kind::Comm, c::MPI_KEYVAL_INVALID).unwrap_err().class,
            c::MPI_ERR_KEYVAL
        );
    }

    #[test]
    fn set_overwrite_and_delete_keep_order() {
        let (mut k1, mut k2) = (0, 0);
        create_keyval(Kind::Type, None, None, &mut k1, std::ptr::null_mut()).unwrap();
        create_keyval(Kind::Type, None, None, &mut k2, std::ptr::null_mut()).unwrap();
        let obj = 0x4c00_0405;
        set_attr(Kind::Type, obj, k1, 8 as *mut c_void).unwrap();
        set_attr(Kind::Type, obj, k2, 16 as *mut c_void).unwrap();
        set_attr(Kind::Type, obj, k1, 24 as *mut c_void).unwrap();
        assert_eq!(get_attr(Kind::Type, obj, k1).unwrap(), Some(24));
        assert_eq!(
            store().attrs.get(&(Kind::Type, obj)).cloned().unwrap(),
            vec![(k1, 24), (k2, 16)]
        );
        delete_attr(Kind::Type, obj, k2).unwrap();
        assert_eq!(get_attr(Kind::Type, obj, k2).unwrap(), None);
        delete_all(Kind::Type, obj).unwrap();
        assert!(!store().attrs.contains_key(&(Kind::Type, obj)));
        free_keyval(Kind::Type, &mut k1).unwrap();
        assert_eq!(k1, c::MPI_KEYVAL_INVALID);
    }
}
