//! Attribute caching: keyvals with their copy and delete callbacks, the
//! values programs attach to communicators, datatypes and windows, and the
//! predefined communicator attributes (`MPI_TAG_UB`, ...).
//!
//! Callbacks are user code that may call MPI, so they always run with no
//! engine borrow and no lock held: the store is read, the lock dropped, the
//! callback run, and the store re-read.
//!
//! MPICH's Fortran library (`libmpichfort.so.12`) calls the `MPII_*_attr`
//! entry points below with the attribute's language type, and registers
//! proxies that call Fortran copy and delete subroutines. Values set from
//! Fortran are integers; C reads them as a pointer to the stored integer,
//! as MPICH does (MPI-4.1 §20.3.7).

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
    /// Set by a Fortran binding: the callbacks are Fortran subroutines,
    /// called through these.
    proxy: Option<Proxies>,
}

/// MPICH's `MPII_Attr_copy_proxy`: (user function, handle, keyval,
/// extra_state, attribute type, value, out value, out flag).
pub type CopyProxy = unsafe extern "C" fn(
    MPI_Copy_function,
    c_int,
    c_int,
    *mut c_void,
    c_int,
    *mut c_void,
    *mut *mut c_void,
    *mut c_int,
) -> c_int;

/// MPICH's `MPII_Attr_delete_proxy`: (user function, handle, keyval,
/// attribute type, value, extra_state).
pub type DeleteProxy = unsafe extern "C" fn(
    MPI_Delete_function,
    c_int,
    c_int,
    c_int,
    *mut c_void,
    *mut c_void,
) -> c_int;

#[derive(Clone, Copy, Debug)]
struct Proxies {
    copy: Option<CopyProxy>,
    delete: Option<DeleteProxy>,
}

/// MPICH's `MPIR_Attr_type`: how an attribute value was given, or how
/// the caller wants it back. Bit 0 set means an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrType {
    /// From C: a `void *`.
    Ptr,
    /// From Fortran, `INTEGER(KIND=MPI_ADDRESS_KIND)`.
    Aint,
    /// From Fortran's old `MPI_ATTR_PUT`/`GET`, `INTEGER`.
    Int,
}

impl AttrType {
    fn from_raw(t: c_int) -> MpiResult<Self> {
        match t {
            0 => Ok(AttrType::Ptr),
            1 => Ok(AttrType::Aint),
            3 => Ok(AttrType::Int),
            _ => Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("unknown attribute type {t}"),
            )),
        }
    }

    fn raw(self) -> c_int {
        match self {
            AttrType::Ptr => 0,
            AttrType::Aint => 1,
            AttrType::Int => 3,
        }
    }

    fn is_int(self) -> bool {
        self != AttrType::Ptr
    }
}

/// One attribute of an object. The value is boxed so that C, reading an
/// integer attribute, can be given its address.
#[derive(Debug)]
struct Attr {
    kv: c_int,
    val: Box<usize>,
    ty: AttrType,
}

struct Store {
    /// Keyvals by index; entries are never removed (see `Keyval::freed`).
    keyvals: Vec<Keyval>,
    /// The attributes of each object, in the order first set.
    attrs: BTreeMap<(Kind, c_int), Vec<Attr>>,
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
        proxy: None,
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
fn run_copy(
    k: &Keyval,
    kv: c_int,
    obj: c_int,
    val: usize,
    ty: AttrType,
) -> MpiResult<Option<usize>> {
    let Some(f) = k.copy else {
        return Ok(None); // MPI_*_NULL_COPY_FN
    };
    let mut out: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    let extra = k.extra as *mut c_void;
    // A C callback given an integer attribute sees its address, as when
    // reading it.
    let mut held = val;
    let rc = match k.proxy.and_then(|p| p.copy) {
        // SAFETY: the Fortran binding's proxy, called as MPICH calls it;
        // `out` and `flag` are live locals.
        Some(proxy) => unsafe {
            proxy(
                f,
                obj,
                kv,
                extra,
                ty.raw(),
                val as *mut c_void,
                &mut out,
                &mut flag,
            )
        },
        // SAFETY: the program's copy function, called with the arguments the
        // standard specifies; `out`, `flag` and `held` are live locals.
        None => unsafe {
            let arg = if ty.is_int() {
                &mut held as *mut usize as *mut c_void
            } else {
                val as *mut c_void
            };
            f(
                obj,
                kv,
                extra,
                arg,
                &mut out as *mut *mut c_void as *mut c_void,
                &mut flag,
            )
        },
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

fn run_delete(k: &Keyval, kv: c_int, obj: c_int, val: usize, ty: AttrType) -> MpiResult<()> {
    let Some(f) = k.delete else {
        return Ok(()); // MPI_*_NULL_DELETE_FN
    };
    let extra = k.extra as *mut c_void;
    let mut held = val;
    let rc = match k.proxy.and_then(|p| p.delete) {
        // SAFETY: the Fortran binding's proxy, called as MPICH calls it.
        Some(proxy) => unsafe { proxy(f, obj, kv, ty.raw(), val as *mut c_void, extra) },
        // SAFETY: the program's delete function, called with the arguments
        // the standard specifies; `held` is a live local.
        None => unsafe {
            let arg = if ty.is_int() {
                &mut held as *mut usize as *mut c_void
            } else {
                val as *mut c_void
            };
            f(obj, kv, arg, extra)
        },
    };
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

/// The value and type of `kv` on `obj`, if set.
fn value_of(kind: Kind, obj: c_int, kv: c_int) -> Option<(usize, AttrType)> {
    store()
        .attrs
        .get(&(kind, obj))
        .and_then(|l| l.iter().find(|a| a.kv == kv).map(|a| (*a.val, a.ty)))
}

fn store_value(kind: Kind, obj: c_int, kv: c_int, val: usize, ty: AttrType) {
    let mut st = store();
    let list = st.attrs.entry((kind, obj)).or_default();
    match list.iter_mut().find(|a| a.kv == kv) {
        Some(a) => {
            *a.val = val;
            a.ty = ty;
        }
        None => list.push(Attr {
            kv,
            val: Box::new(val),
            ty,
        }),
    }
}

fn remove_value(kind: Kind, obj: c_int, kv: c_int) {
    let mut st = store();
    if let Some(list) = st.attrs.get_mut(&(kind, obj)) {
        list.retain(|a| a.kv != kv);
        if list.is_empty() {
            st.attrs.remove(&(kind, obj));
        }
    }
}

fn set_attr(kind: Kind, obj: c_int, kv: c_int, val: *mut c_void, ty: AttrType) -> MpiResult<()> {
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
    if let Some((old, old_ty)) = value_of(kind, obj, kv) {
        run_delete(&k, kv, obj, old, old_ty)?;
    }
    store_value(kind, obj, kv, val as usize, ty);
    Ok(())
}

/// A user attribute as a caller of type `want` reads it: C gets the
/// address of an integer attribute, Fortran the value itself.
fn get_attr(kind: Kind, obj: c_int, kv: c_int, want: AttrType) -> MpiResult<Option<usize>> {
    lookup(kind, kv)?;
    let st = store();
    let found = st
        .attrs
        .get(&(kind, obj))
        .and_then(|l| l.iter().find(|a| a.kv == kv));
    Ok(found.map(|a| {
        if want == AttrType::Ptr && a.ty.is_int() {
            // The box stays put while the attribute is set (a new value is
            // written into it), so C may keep this address.
            &*a.val as *const usize as usize
        } else {
            *a.val
        }
    }))
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
    if let Some((v, ty)) = value_of(kind, obj, kv) {
        run_delete(&k, kv, obj, v, ty)?;
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
            .and_then(|l| l.last().map(|a| (a.kv, *a.val, a.ty)));
        let Some((kv, v, ty)) = last else {
            return Ok(());
        };
        let k = store()
            .keyvals
            .get((kv & KEYVAL_INDEX_MASK) as usize)
            .copied();
        if let Some(k) = k {
            run_delete(&k, kv, obj, v, ty)?;
        }
        remove_value(kind, obj, kv);
    }
}

/// Gives `new` the attributes of `old` that their copy callbacks keep. On
/// a failing callback, the copies made so far are deleted again.
fn copy_all(kind: Kind, old: c_int, new: c_int) -> MpiResult<()> {
    let snapshot: Vec<(c_int, usize, AttrType)> = store()
        .attrs
        .get(&(kind, old))
        .map(|l| l.iter().map(|a| (a.kv, *a.val, a.ty)).collect())
        .unwrap_or_default();
    for (kv, v, ty) in snapshot {
        let k = store()
            .keyvals
            .get((kv & KEYVAL_INDEX_MASK) as usize)
            .copied();
        let Some(k) = k else { continue };
        match run_copy(&k, kv, old, v, ty) {
            Ok(Some(nv)) => store_value(kind, new, kv, nv, ty),
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

/// What a read found: a value as stored, or a predefined attribute, which
/// C reads through a pointer and Fortran as the integer itself.
enum Found {
    Value(usize),
    Predefined { addr: *mut c_void, int: isize },
}

/// Writes what a caller of type `want` reads, and the flag.
///
/// # Safety
/// `out` and `flag` are null (rejected) or valid for writes: a `void *`
/// (a C caller, or Fortran's address-sized integer), or an `int` where a
/// predefined attribute is read as `MPIR_ATTR_INT`, as MPICH writes it.
unsafe fn put_value(
    out: *mut c_void,
    flag: *mut c_int,
    v: Option<Found>,
    want: AttrType,
) -> MpiResult<()> {
    if out.is_null() || flag.is_null() {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            "attribute_val or flag is NULL",
        ));
    }
    // SAFETY: both checked non-null; the binding passes `attribute_val` as
    // a `void **` (or an integer of the size its type says) typed `void *`.
    unsafe {
        match v {
            Some(found) => {
                match (found, want) {
                    (Found::Value(v), _) => *(out as *mut usize) = v,
                    (Found::Predefined { addr, .. }, AttrType::Ptr) => {
                        *(out as *mut *mut c_void) = addr
                    }
                    (Found::Predefined { int, .. }, AttrType::Aint) => *(out as *mut isize) = int,
                    (Found::Predefined { int, .. }, AttrType::Int) => {
                        *(out as *mut c_int) = int as c_int
                    }
                }
                *flag = 1;
            }
            None => *flag = 0,
        }
    }
    Ok(())
}

fn comm_get_attr(
    comm: MPI_Comm,
    kv: c_int,
    out: *mut c_void,
    flag: *mut c_int,
    want: AttrType,
) -> MpiResult<()> {
    let (size, appnum) = state::with_engine(|e| {
        e.comms.get(comm_idx(comm)?)?;
        Ok((e.job.size, e.job.appnum))
    })?;
    let v = match predefined_cell(kv) {
        Some(cell) => {
            ATTR_UNIVERSE.store(size as i32, Ordering::Relaxed);
            ATTR_APPNUM.store(appnum, Ordering::Relaxed);
            ATTR_LASTUSED.store(last_used_code(), Ordering::Relaxed);
            Some(Found::Predefined {
                addr: cell.as_ptr() as *mut c_void,
                int: cell.load(Ordering::Relaxed) as isize,
            })
        }
        None => get_attr(Kind::Comm, comm, kv, want)?.map(Found::Value),
    };
    // SAFETY: the caller's output arguments, checked inside.
    unsafe { put_value(out, flag, v, want) }
}

fn type_get_attr(
    dt: MPI_Datatype,
    kv: c_int,
    out: *mut c_void,
    flag: *mut c_int,
    want: AttrType,
) -> MpiResult<()> {
    check_type(dt)?;
    let v = get_attr(Kind::Type, dt, kv, want)?.map(Found::Value);
    // SAFETY: the caller's output arguments, checked inside.
    unsafe { put_value(out, flag, v, want) }
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
    let r = check_comm(comm).and_then(|()| set_attr(Kind::Comm, comm, keyval, attribute_val, AttrType::Ptr));
    report("MPI_Comm_set_attr", Some(comm), r)
}}

mpi_fn! { MPI_Attr_put / PMPI_Attr_put (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let r = check_comm(comm).and_then(|()| set_attr(Kind::Comm, comm, keyval, attribute_val, AttrType::Ptr));
    report("MPI_Attr_put", Some(comm), r)
}}

mpi_fn! { MPI_Comm_get_attr / PMPI_Comm_get_attr (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    report("MPI_Comm_get_attr", Some(comm), comm_get_attr(comm, keyval, attribute_val, flag, AttrType::Ptr))
}}

mpi_fn! { MPI_Attr_get / PMPI_Attr_get (comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    report("MPI_Attr_get", Some(comm), comm_get_attr(comm, keyval, attribute_val, flag, AttrType::Ptr))
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
    let r = check_type(datatype).and_then(|()| set_attr(Kind::Type, datatype, keyval, attribute_val, AttrType::Ptr));
    report("MPI_Type_set_attr", None, r)
}}

mpi_fn! { MPI_Type_get_attr / PMPI_Type_get_attr (datatype: MPI_Datatype, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    report("MPI_Type_get_attr", None, type_get_attr(datatype, keyval, attribute_val, flag, AttrType::Ptr))
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

fn win_get_attr(
    win: MPI_Win,
    kv: c_int,
    out: *mut c_void,
    flag: *mut c_int,
    want: AttrType,
) -> MpiResult<()> {
    super::win::check(win)?;
    let v = match super::win::predefined_attr(win, kv)? {
        Some(addr) => {
            // SAFETY: `predefined_attr` points at the window's live values:
            // an `MPI_Aint` for the size, an `int` for the others but the
            // base, which is the value itself.
            let int = unsafe {
                match kv {
                    c::MPI_WIN_BASE => addr as isize,
                    c::MPI_WIN_SIZE => *(addr as *const isize),
                    _ => *(addr as *const c_int) as isize,
                }
            };
            Some(Found::Predefined { addr, int })
        }
        None => get_attr(Kind::Win, win, kv, want)?.map(Found::Value),
    };
    // SAFETY: the caller's output arguments, checked inside.
    unsafe { put_value(out, flag, v, want) }
}

mpi_fn! { MPI_Win_set_attr / PMPI_Win_set_attr (win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let r = super::win::check(win).and_then(|()| set_attr(Kind::Win, win, win_keyval, attribute_val, AttrType::Ptr));
    super::win::report("MPI_Win_set_attr", win, r)
}}

mpi_fn! { MPI_Win_get_attr / PMPI_Win_get_attr (win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    super::win::report("MPI_Win_get_attr", win, win_get_attr(win, win_keyval, attribute_val, flag, AttrType::Ptr))
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

// ---- MPICH's Fortran binding (libmpichfort.so.12) ----
// It calls these with the language type of the value; they have no PMPI_
// names. Errors are reported under the MPI function the program called.

/// Marks a keyval created from Fortran: its callbacks run through the
/// binding's proxies. An unknown keyval is ignored, as in MPICH (the
/// binding calls this only after a successful create).
///
/// # Safety
/// The proxies are null or functions of MPICH's proxy signatures.
#[no_mangle]
pub unsafe extern "C" fn MPII_Keyval_set_proxy(
    keyval: c_int,
    copy_proxy: Option<CopyProxy>,
    delete_proxy: Option<DeleteProxy>,
) {
    super::guard("MPII_Keyval_set_proxy", || {
        let idx = (keyval & KEYVAL_INDEX_MASK) as usize;
        let mut st = store();
        if let Some(k) = st.keyvals.get_mut(idx) {
            if keyval_handle(k.kind, idx) == keyval {
                k.proxy = Some(Proxies {
                    copy: copy_proxy,
                    delete: delete_proxy,
                });
            }
        }
    })
}

/// The C keyval behind a Fortran one: MPICH's Fortran header numbers
/// each predefined attribute one above its C value.
fn from_fortran(kind: Kind, kv: c_int) -> c_int {
    if !is_predefined(kind, kv) && is_predefined(kind, kv.wrapping_sub(1)) {
        kv - 1
    } else {
        kv
    }
}

/// Defines `MPII_<Kind>_set_attr` and `MPII_<Kind>_get_attr`.
macro_rules! fortran_attr_fns {
    ($set:ident, $get:ident, $handle:ty, $kind:expr, $set_name:literal, $get_name:literal,
     |$obj:ident, $kv:ident, $val:ident, $ty:ident| $do_set:expr,
     |$gobj:ident, $gkv:ident, $out:ident, $flag:ident, $want:ident| $do_get:expr,
     $report:expr) => {
        /// The Fortran binding's set: `attribute_val` is the value itself.
        ///
        /// # Safety
        /// Called by MPICH's Fortran library with a valid attribute type.
        #[no_mangle]
        pub unsafe extern "C" fn $set(
            $obj: $handle,
            $kv: c_int,
            $val: *mut c_void,
            attr_type: c_int,
        ) -> c_int {
            super::guard($set_name, || {
                let $kv = from_fortran($kind, $kv);
                let r = AttrType::from_raw(attr_type).and_then(|$ty| $do_set);
                $report($set_name, $obj, r)
            })
        }

        /// The Fortran binding's get: writes the value as `want` asks.
        ///
        /// # Safety
        /// `attribute_val` and `flag` are null or valid for writes of the
        /// size the attribute type asks for.
        #[no_mangle]
        pub unsafe extern "C" fn $get(
            $gobj: $handle,
            $gkv: c_int,
            $out: *mut c_void,
            $flag: *mut c_int,
            attr_type: c_int,
        ) -> c_int {
            super::guard($get_name, || {
                let $gkv = from_fortran($kind, $gkv);
                let r = AttrType::from_raw(attr_type).and_then(|$want| $do_get);
                $report($get_name, $gobj, r)
            })
        }
    };
}

fortran_attr_fns!(
    MPII_Comm_set_attr,
    MPII_Comm_get_attr,
    MPI_Comm,
    Kind::Comm,
    "MPI_Comm_set_attr",
    "MPI_Comm_get_attr",
    |comm, kv, val, ty| check_comm(comm).and_then(|()| set_attr(Kind::Comm, comm, kv, val, ty)),
    |comm, kv, out, flag, want| comm_get_attr(comm, kv, out, flag, want),
    |name, comm, r| report(name, Some(comm), r)
);

fortran_attr_fns!(
    MPII_Type_set_attr,
    MPII_Type_get_attr,
    MPI_Datatype,
    Kind::Type,
    "MPI_Type_set_attr",
    "MPI_Type_get_attr",
    |dt, kv, val, ty| check_type(dt).and_then(|()| set_attr(Kind::Type, dt, kv, val, ty)),
    |dt, kv, out, flag, want| type_get_attr(dt, kv, out, flag, want),
    |name, _dt, r| report(name, None, r)
);

fortran_attr_fns!(
    MPII_Win_set_attr,
    MPII_Win_get_attr,
    MPI_Win,
    Kind::Win,
    "MPI_Win_set_attr",
    "MPI_Win_get_attr",
    |win, kv, val, ty| super::win::check(win).and_then(|()| set_attr(Kind::Win, win, kv, val, ty)),
    |win, kv, out, flag, want| win_get_attr(win, kv, out, flag, want),
    super::win::report
);

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
        set_attr(Kind::Type, obj, k1, 8 as *mut c_void, AttrType::Ptr).unwrap();
        set_attr(Kind::Type, obj, k2, 16 as *mut c_void, AttrType::Ptr).unwrap();
        set_attr(Kind::Type, obj, k1, 24 as *mut c_void, AttrType::Ptr).unwrap();
        assert_eq!(
            get_attr(Kind::Type, obj, k1, AttrType::Ptr).unwrap(),
            Some(24)
        );
        let listed: Vec<(c_int, usize)> = store().attrs[&(Kind::Type, obj)]
            .iter()
            .map(|a| (a.kv, *a.val))
            .collect();
        assert_eq!(listed, vec![(k1, 24), (k2, 16)]);
        delete_attr(Kind::Type, obj, k2).unwrap();
        assert_eq!(get_attr(Kind::Type, obj, k2, AttrType::Ptr).unwrap(), None);
        delete_all(Kind::Type, obj).unwrap();
        assert!(!store().attrs.contains_key(&(Kind::Type, obj)));
        free_keyval(Kind::Type, &mut k1).unwrap();
        assert_eq!(k1, c::MPI_KEYVAL_INVALID);
    }

    #[test]
    fn fortran_integers_read_from_c_through_a_stable_address() {
        let mut k = 0;
        create_keyval(Kind::Type, None, None, &mut k, std::ptr::null_mut()).unwrap();
        let obj = 0x4c00_0406;
        set_attr(Kind::Type, obj, k, 42 as *mut c_void, AttrType::Aint).unwrap();
        assert_eq!(
            get_attr(Kind::Type, obj, k, AttrType::Aint).unwrap(),
            Some(42)
        );
        let addr = get_attr(Kind::Type, obj, k, AttrType::Ptr)
            .unwrap()
            .unwrap();
        // SAFETY: the address of the attribute's boxed value, still set.
        assert_eq!(unsafe { *(addr as *const usize) }, 42);
        set_attr(Kind::Type, obj, k, 43 as *mut c_void, AttrType::Int).unwrap();
        assert_eq!(
            get_attr(Kind::Type, obj, k, AttrType::Ptr).unwrap(),
            Some(addr)
        );
        // SAFETY: as above; a new value is written in place.
        assert_eq!(unsafe { *(addr as *const usize) }, 43);
        // A C value reads back as itself in either language.
        set_attr(Kind::Type, obj, k, 0x1000 as *mut c_void, AttrType::Ptr).unwrap();
        assert_eq!(
            get_attr(Kind::Type, obj, k, AttrType::Ptr).unwrap(),
            Some(0x1000)
        );
        assert_eq!(
            get_attr(Kind::Type, obj, k, AttrType::Aint).unwrap(),
            Some(0x1000)
        );
        delete_all(Kind::Type, obj).unwrap();
    }

    #[test]
    fn fortran_predefined_keyvals_are_one_above_c() {
        assert_eq!(from_fortran(Kind::Comm, c::MPI_TAG_UB + 1), c::MPI_TAG_UB);
        assert_eq!(from_fortran(Kind::Comm, c::MPI_APPNUM + 1), c::MPI_APPNUM);
        assert_eq!(
            from_fortran(Kind::Win, c::MPI_WIN_SIZE + 1),
            c::MPI_WIN_SIZE
        );
        assert_eq!(from_fortran(Kind::Comm, c::MPI_TAG_UB), c::MPI_TAG_UB);
        assert_eq!(
            from_fortran(Kind::Type, c::MPI_TAG_UB + 1),
            c::MPI_TAG_UB + 1
        );
        let mut k = 0;
        create_keyval(Kind::Comm, None, None, &mut k, std::ptr::null_mut()).unwrap();
        assert_eq!(from_fortran(Kind::Comm, k), k);
    }

    /// What the proxies below were called with: (attribute type, value).
    static PROXIED: Mutex<Vec<(char, c_int, usize)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn copy_proxy(
        _f: MPI_Copy_function,
        _obj: c_int,
        _kv: c_int,
        _extra: *mut c_void,
        ty: c_int,
        val: *mut c_void,
        out: *mut *mut c_void,
        flag: *mut c_int,
    ) -> c_int {
        PROXIED.lock().unwrap().push(('c', ty, val as usize));
        // SAFETY: `run_copy` passes live locals.
        unsafe {
            *out = (val as usize + 1) as *mut c_void;
            *flag = 1;
        }
        c::MPI_SUCCESS
    }

    unsafe extern "C" fn delete_proxy(
        _f: MPI_Delete_function,
        _obj: c_int,
        _kv: c_int,
        ty: c_int,
        val: *mut c_void,
        _extra: *mut c_void,
    ) -> c_int {
        PROXIED.lock().unwrap().push(('d', ty, val as usize));
        c::MPI_SUCCESS
    }

    /// A C callback given an integer attribute gets its address.
    unsafe extern "C" fn c_copy(
        _obj: c_int,
        _kv: c_int,
        _extra: *mut c_void,
        val: *mut c_void,
        out: *mut c_void,
        flag: *mut c_int,
    ) -> c_int {
        // SAFETY: `run_copy` passes the address of the value and live locals.
        unsafe {
            *(out as *mut usize) = *(val as *const usize) * 2;
            *flag = 1;
        }
        c::MPI_SUCCESS
    }

    unsafe extern "C" fn never(_: c_int, _: c_int, _: *mut c_void, _: *mut c_void) -> c_int {
        unreachable!("a proxy stands in for the user function")
    }

    #[test]
    fn fortran_keyvals_call_their_proxies_with_the_type() {
        let (mut k, mut kc) = (0, 0);
        create_keyval(
            Kind::Type,
            Some(c_copy),
            Some(never),
            &mut k,
            std::ptr::null_mut(),
        )
        .unwrap();
        // SAFETY: proxies of MPICH's signatures.
        unsafe { MPII_Keyval_set_proxy(k, Some(copy_proxy), Some(delete_proxy)) };
        create_keyval(
            Kind::Type,
            Some(c_copy),
            None,
            &mut kc,
            std::ptr::null_mut(),
        )
        .unwrap();
        let (old, new) = (0x4c00_0407, 0x4c00_0408);
        set_attr(Kind::Type, old, k, 7 as *mut c_void, AttrType::Aint).unwrap();
        set_attr(Kind::Type, old, kc, 5 as *mut c_void, AttrType::Int).unwrap();
        copy_all(Kind::Type, old, new).unwrap();
        assert_eq!(
            get_attr(Kind::Type, new, k, AttrType::Aint).unwrap(),
            Some(8)
        );
        assert_eq!(value_of(Kind::Type, new, k), Some((8, AttrType::Aint)));
        assert_eq!(
            get_attr(Kind::Type, new, kc, AttrType::Int).unwrap(),
            Some(10)
        );
        delete_all(Kind::Type, new).unwrap();
        delete_all(Kind::Type, old).unwrap();
        let calls = PROXIED.lock().unwrap().clone();
        assert_eq!(calls, vec![('c', 1, 7), ('d', 1, 8), ('d', 1, 7)]);
    }
}
