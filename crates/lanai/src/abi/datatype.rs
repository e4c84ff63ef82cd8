//! Derived datatypes at the C surface: the handle table, and the lookup
//! every other entry point uses to turn a datatype handle into a
//! `lanai_datatype::Datatype`.
//!
//! Handles follow MPICH's encoding: predefined types are `0x4c......` and
//! the pair types `0x8c00000x`; user types are `0x8c000000 | index` with
//! indices from [`FIRST_USER`] on, so they never collide with the pairs.
//!
//! The table sits behind a mutex rather than in the engine so that type
//! constructors and queries work without touching communication state.

mod ctor;
mod f90;
mod packing;
pub mod predef;
mod query;
pub mod staging;

use super::consts as c;
use super::consts::MPI_Datatype;
use crate::engine::error::{MpiError, MpiResult};
use lanai_datatype::{Datatype, DatatypeError};
use std::os::raw::c_int;
use std::sync::{Arc, Mutex, MutexGuard};

/// Kind and object bits of a derived datatype handle.
const DERIVED_BASE: u32 = 0x8c00_0000;
/// Index bits of a handle.
const INDEX_MASK: u32 = 0x03ff_ffff;
/// First index of a user type; lower ones are MPICH's predefined pairs.
const FIRST_USER: u32 = 64;

/// One derived datatype handle.
struct Entry {
    dt: Datatype,
    name: String,
    committed: bool,
    /// A predefined type made on demand (`MPI_Type_create_f90_*`): it
    /// cannot be freed.
    permanent: bool,
    meta: Arc<Meta>,
}

/// What a derived type was built from, kept apart from handles so that
/// `MPI_Type_get_contents` works after the inputs were freed.
#[derive(Debug, Default)]
struct Meta {
    inputs: Vec<Input>,
}

#[derive(Debug)]
enum Input {
    Predefined(MPI_Datatype),
    Derived(Arc<Meta>),
}

#[derive(Default)]
struct Table {
    slots: Vec<Option<Entry>>,
    free: Vec<usize>,
    /// Names set on predefined handles.
    renamed: Vec<(MPI_Datatype, String)>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
    renamed: Vec::new(),
});

fn table() -> MutexGuard<'static, Table> {
    // A panic while holding the lock cannot leave the table inconsistent
    // (every update is a single assignment), so poisoning is ignored.
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

fn slot_of(h: MPI_Datatype) -> Option<usize> {
    let u = h as u32;
    (u & !INDEX_MASK == DERIVED_BASE && (u & INDEX_MASK) >= FIRST_USER)
        .then(|| ((u & INDEX_MASK) - FIRST_USER) as usize)
}

fn handle_of_slot(i: usize) -> MPI_Datatype {
    (DERIVED_BASE | (i as u32 + FIRST_USER)) as MPI_Datatype
}

/// `MPI_ERR_TYPE` for a handle that names no datatype.
pub fn bad_handle(h: MPI_Datatype) -> MpiError {
    if h == c::MPI_DATATYPE_NULL {
        MpiError::new(c::MPI_ERR_TYPE, "invalid datatype MPI_DATATYPE_NULL")
    } else {
        MpiError::new(
            c::MPI_ERR_TYPE,
            format!("invalid datatype 0x{:08x}", h as u32),
        )
    }
}

/// A datatype-engine error as an MPI error.
pub fn dt_err(e: DatatypeError) -> MpiError {
    let class = match e {
        DatatypeError::PackedBufferTooSmall { .. }
        | DatatypeError::UserBufferOutOfBounds { .. } => c::MPI_ERR_TRUNCATE,
        DatatypeError::PositionOutOfRange { .. } => c::MPI_ERR_ARG,
        DatatypeError::ConversionOverflow { .. } => c::MPI_ERR_CONVERSION,
        _ => c::MPI_ERR_TYPE,
    };
    MpiError::new(class, e.to_string())
}

/// Whether `h` is a user (derived) datatype handle that is live.
pub fn is_derived(h: MPI_Datatype) -> bool {
    slot_of(h).is_some_and(|i| matches!(table().slots.get(i), Some(Some(_))))
}

/// The datatype a handle names (predefined or derived).
pub fn resolve(h: MPI_Datatype) -> MpiResult<Datatype> {
    if let Some(p) = predef::lookup(h) {
        return Ok(p.dt.clone());
    }
    let i = slot_of(h).ok_or_else(|| bad_handle(h))?;
    match table().slots.get(i) {
        Some(Some(e)) => Ok(e.dt.clone()),
        _ => Err(bad_handle(h)),
    }
}

/// The datatype a handle names, for communication: derived types must be
/// committed.
pub fn resolve_committed(h: MPI_Datatype) -> MpiResult<Datatype> {
    if let Some(p) = predef::lookup(h) {
        return Ok(p.dt.clone());
    }
    let i = slot_of(h).ok_or_else(|| bad_handle(h))?;
    match table().slots.get(i) {
        Some(Some(e)) if e.committed => Ok(e.dt.clone()),
        Some(Some(_)) => Err(MpiError::new(
            c::MPI_ERR_TYPE,
            format!("datatype 0x{:08x} has not been committed", h as u32),
        )),
        _ => Err(bad_handle(h)),
    }
}

/// A derived datatype that occupies one gap-free run starting at its
/// lower bound 0: byte-for-byte the same as `size` bytes, so it can take
/// the predefined-type paths unchanged. Returns its size.
pub fn direct_size(h: MPI_Datatype) -> MpiResult<usize> {
    let dt = resolve_committed(h)?;
    if dt.is_contiguous() && dt.lb() == 0 {
        usize::try_from(dt.size()).map_err(|_| MpiError::new(c::MPI_ERR_TYPE, "datatype too large"))
    } else {
        Err(not_here(h))
    }
}

/// `MPI_ERR_TYPE` for a non-contiguous derived type where the call does
/// not handle one.
pub fn not_here(h: MPI_Datatype) -> MpiError {
    MpiError::new(
        c::MPI_ERR_TYPE,
        format!(
            "derived datatype 0x{:08x} is not contiguous; such datatypes are not supported by this call yet",
            h as u32
        ),
    )
}

/// The constructor record for a type built from the handles `inputs`.
fn meta_of(inputs: &[MPI_Datatype]) -> MpiResult<Arc<Meta>> {
    let t = table();
    let inputs = inputs
        .iter()
        .map(|&h| {
            if predef::lookup(h).is_some() {
                return Ok(Input::Predefined(h));
            }
            match slot_of(h).and_then(|i| t.slots.get(i)) {
                // Never freed, so get_contents can name the handle itself.
                Some(Some(e)) if e.permanent => Ok(Input::Predefined(h)),
                Some(Some(e)) => Ok(Input::Derived(Arc::clone(&e.meta))),
                _ => Err(bad_handle(h)),
            }
        })
        .collect::<MpiResult<_>>()?;
    Ok(Arc::new(Meta { inputs }))
}

/// Registers a new derived type; returns its handle.
fn insert(dt: Datatype, meta: Arc<Meta>, committed: bool) -> MpiResult<MPI_Datatype> {
    add(Entry {
        dt,
        name: String::new(),
        committed,
        permanent: false,
        meta,
    })
}

/// Registers a predefined type made on demand: committed, never freed.
fn insert_predefined(dt: Datatype, meta: Arc<Meta>) -> MpiResult<MPI_Datatype> {
    add(Entry {
        dt,
        name: String::new(),
        committed: true,
        permanent: true,
        meta,
    })
}

fn add(entry: Entry) -> MpiResult<MPI_Datatype> {
    let mut t = table();
    let i = match t.free.pop() {
        Some(i) => {
            t.slots[i] = Some(entry);
            i
        }
        None => {
            if t.slots.len() as u32 >= INDEX_MASK - FIRST_USER {
                return Err(MpiError::new(c::MPI_ERR_INTERN, "out of datatype handles"));
            }
            t.slots.push(Some(entry));
            t.slots.len() - 1
        }
    };
    Ok(handle_of_slot(i))
}

/// Runs `f` on the live entry of a derived handle.
fn with_entry<R>(h: MPI_Datatype, f: impl FnOnce(&mut Entry) -> R) -> MpiResult<R> {
    let i = slot_of(h).ok_or_else(|| bad_handle(h))?;
    match table().slots.get_mut(i) {
        Some(Some(e)) => Ok(f(e)),
        _ => Err(bad_handle(h)),
    }
}

fn cannot_free() -> MpiError {
    MpiError::new(c::MPI_ERR_TYPE, "a predefined datatype cannot be freed")
}

/// Whether `h` may be freed: a live derived type, not a predefined one
/// (checked before its attributes' delete callbacks run).
fn check_freeable(h: MPI_Datatype) -> MpiResult<()> {
    if predef::lookup(h).is_some() {
        return Err(cannot_free());
    }
    let i = slot_of(h).ok_or_else(|| bad_handle(h))?;
    match table().slots.get(i) {
        Some(Some(e)) if e.permanent => Err(cannot_free()),
        Some(Some(_)) => Ok(()),
        _ => Err(bad_handle(h)),
    }
}

/// Frees a derived handle; predefined ones cannot be freed.
fn remove(h: MPI_Datatype) -> MpiResult<()> {
    check_freeable(h)?;
    let i = slot_of(h).ok_or_else(|| bad_handle(h))?;
    let mut t = table();
    match t.slots.get_mut(i) {
        Some(s @ Some(_)) => {
            // Types built from this one keep their own reference to its
            // layout, so dropping the entry is safe for them.
            *s = None;
            t.free.push(i);
            Ok(())
        }
        _ => Err(bad_handle(h)),
    }
}

/// Checks a count argument (non-negative) and widens it.
fn count_arg(n: impl Into<i64>) -> MpiResult<usize> {
    let n: i64 = n.into();
    usize::try_from(n).map_err(|_| MpiError::count(n))
}

/// Writes `v` through an output pointer, or fails on NULL.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: checked non-null; valid per the contract.
    unsafe { p.write(v) };
    Ok(())
}

/// The caller's array of `n` elements.
///
/// # Safety
/// `p` is null or points to at least `n` readable elements.
unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: `n` readable elements per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Non-negative ints of a C array as `usize`.
fn counts_of<T: Copy + Into<i64>>(v: &[T]) -> MpiResult<Vec<usize>> {
    v.iter().map(|&x| count_arg(x)).collect()
}

fn c_int_of(v: u64, what: &str) -> MpiResult<c_int> {
    c_int::try_from(v).map_err(|_| {
        MpiError::new(
            c::MPI_ERR_TYPE,
            format!("{what} {v} does not fit in an int (use the _c or _x form)"),
        )
    })
}
