//! The MPI tool information interface (`MPI_T_*`): Lanai's `LANAI_*`
//! knobs as control variables and its transport counters (what
//! `LANAI_STATS=1` prints) as performance variables, in one category.
//! There are no events or event sources, which the interface allows: their
//! counts are 0 and their indices are all invalid.
//!
//! The performance variables are continuous, read-only counters of this
//! process: a handle reads what happened since it was allocated, and
//! reads need MPI to be running (they look at the engine).
//!
//! Each cvar is a string (`MPI_CHAR`) holding the knob's value as this
//! process read it from the environment, with constant scope: Lanai reads
//! its knobs at start-up, so writes are refused. Like every `MPI_T`
//! function, these return error codes and never call an error handler,
//! and they work before `MPI_Init` and after `MPI_Finalize`.

use super::consts as c;
use super::consts::{
    MPI_Datatype, MPI_T_cvar_handle, MPI_T_enum, MPI_T_event_instance, MPI_T_event_registration,
    MPI_T_pvar_handle, MPI_T_pvar_session,
};
use super::state;
use crate::engine::Engine;
use crate::mpi_fn;
use lanai_common::knobs::{self, Knob};
use std::ffi::{c_char, c_void, CStr};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

const ERR_NOT_INITIALIZED: c_int = 60;
const ERR_INVALID_INDEX: c_int = 62;
const ERR_INVALID_HANDLE: c_int = 64;
const ERR_INVALID_SESSION: c_int = 67;
const ERR_CVAR_SET_NEVER: c_int = 69;
const ERR_PVAR_NO_STARTSTOP: c_int = 70;
const ERR_PVAR_NO_WRITE: c_int = 71;
const ERR_INVALID_NAME: c_int = 73;
const ERR_INVALID: c_int = 74;

const VERBOSITY_USER_BASIC: c_int = 221;
const BIND_NO_OBJECT: c_int = 9700;
const SCOPE_CONSTANT: c_int = 60438;
const PVAR_CLASS_COUNTER: c_int = 246;

const CATEGORY: &str = "LANAI";
const CATEGORY_DESC: &str = "Lanai's LANAI_* settings, read from the environment at start-up";

/// `MPI_T_init_thread` calls not yet matched by `MPI_T_finalize`.
static INITS: AtomicU32 = AtomicU32::new(0);
/// Sessions handed out; a session handle is its number, never 0.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

fn initialized() -> Result<(), c_int> {
    match INITS.load(Ordering::Acquire) {
        0 => Err(ERR_NOT_INITIALIZED),
        _ => Ok(()),
    }
}

fn done(r: Result<(), c_int>) -> c_int {
    r.err().unwrap_or(c::MPI_SUCCESS)
}

fn cvar(index: c_int) -> Result<&'static Knob, c_int> {
    usize::try_from(index)
        .ok()
        .and_then(|i| knobs::ALL.get(i))
        .ok_or(ERR_INVALID_INDEX)
}

/// A cvar handle is its index plus one, so that none is null.
fn cvar_of_handle(h: MPI_T_cvar_handle) -> Result<&'static Knob, c_int> {
    let i = (h as usize).checked_sub(1).ok_or(ERR_INVALID_HANDLE)?;
    knobs::ALL.get(i).ok_or(ERR_INVALID_HANDLE)
}

/// The knob's value with a terminating NUL, read once per process: the
/// scope is constant, and a buffer sized by `MPI_T_cvar_handle_alloc`
/// must fit whatever a later read returns.
fn value_bytes(k: &Knob) -> &'static [u8] {
    static VALUES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let values = VALUES.get_or_init(|| {
        knobs::ALL
            .iter()
            .map(|k| {
                let mut v = knobs::get(k).into_bytes();
                v.retain(|&b| b != 0);
                v.push(0);
                v
            })
            .collect()
    });
    knobs::ALL
        .iter()
        .position(|x| x.name == k.name)
        .map_or(&[0][..], |i| &values[i])
}

/// The standard's convention for returned strings: with no buffer (or a
/// zero length) only the length needed, NUL included, is returned;
/// otherwise as much as fits, NUL-terminated, and the length written.
///
/// # Safety
/// `len` is null or valid; `dst` is null or writable for `*len` bytes.
unsafe fn put_str(dst: *mut c_char, len: *mut c_int, s: &str) {
    if len.is_null() {
        return;
    }
    // SAFETY: checked non-null; the caller's argument.
    let room = unsafe { *len };
    let bytes = s.as_bytes();
    if dst.is_null() || room <= 0 {
        // SAFETY: as above.
        unsafe { *len = bytes.len() as c_int + 1 };
        return;
    }
    let n = bytes.len().min(room as usize - 1);
    // SAFETY: `dst` holds `room` bytes and `n` < `room`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), n);
        *dst.add(n) = 0;
        *len = n as c_int + 1;
    }
}

/// Writes `v` if `p` is not null (the interface lets callers skip outputs).
///
/// # Safety
/// `p` is null or valid for a write.
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { p.write(v) };
    }
}

/// The index whose name is `name`.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn index_of(
    name: *const c_char,
    names: impl Iterator<Item = &'static str>,
) -> Result<c_int, c_int> {
    if name.is_null() {
        return Err(ERR_INVALID);
    }
    // SAFETY: the caller's NUL-terminated string.
    let want = unsafe { CStr::from_ptr(name) };
    names
        .enumerate()
        .find(|(_, n)| n.as_bytes() == want.to_bytes())
        .map(|(i, _)| i as c_int)
        .ok_or(ERR_INVALID_NAME)
}

mpi_fn! { MPI_T_init_thread / PMPI_T_init_thread (required: c_int, provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return ERR_INVALID;
    }
    INITS.fetch_add(1, Ordering::AcqRel);
    // SAFETY: checked non-null.
    unsafe { *provided = required.clamp(c::MPI_THREAD_SINGLE, c::MPI_THREAD_SERIALIZED) };
    c::MPI_SUCCESS
}}

mpi_fn! { MPI_T_finalize / PMPI_T_finalize () -> c_int {
    match INITS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)) {
        Ok(_) => c::MPI_SUCCESS,
        Err(_) => ERR_NOT_INITIALIZED,
    }
}}

// ---- Control variables ----

mpi_fn! { MPI_T_cvar_get_num / PMPI_T_cvar_get_num (num_cvar: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        if num_cvar.is_null() {
            return Err(ERR_INVALID);
        }
        // SAFETY: checked non-null.
        unsafe { *num_cvar = knobs::ALL.len() as c_int };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_cvar_get_info / PMPI_T_cvar_get_info (cvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        datatype: *mut MPI_Datatype, enumtype: *mut MPI_T_enum, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int, scope: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        let k = cvar(cvar_index)?;
        // SAFETY: the caller's outputs, each null or valid as the standard
        // specifies (string buffers of the lengths passed).
        unsafe {
            put_str(name, name_len, k.name);
            put_str(desc, desc_len, k.help);
            put(verbosity, VERBOSITY_USER_BASIC);
            put(datatype, c::MPI_CHAR);
            put(enumtype, std::ptr::null_mut());
            put(bind, BIND_NO_OBJECT);
            put(scope, SCOPE_CONSTANT);
        }
        Ok(())
    }))
}}

mpi_fn! { MPI_T_cvar_get_index / PMPI_T_cvar_get_index (name: *const c_char, cvar_index: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        // SAFETY: the caller's NUL-terminated name.
        let i = unsafe { index_of(name, knobs::ALL.iter().map(|k| k.name)) }?;
        // SAFETY: the caller's output argument.
        unsafe { put(cvar_index, i) };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_cvar_handle_alloc / PMPI_T_cvar_handle_alloc (cvar_index: c_int, obj_handle: *mut c_void, handle: *mut MPI_T_cvar_handle, count: *mut c_int) -> c_int {
    let _ = obj_handle; // bound to no object
    done(initialized().and_then(|()| {
        let k = cvar(cvar_index)?;
        if handle.is_null() || count.is_null() {
            return Err(ERR_INVALID);
        }
        // SAFETY: both checked non-null.
        unsafe {
            *handle = (cvar_index as usize + 1) as MPI_T_cvar_handle;
            *count = value_bytes(k).len() as c_int;
        }
        Ok(())
    }))
}}

mpi_fn! { MPI_T_cvar_handle_free / PMPI_T_cvar_handle_free (handle: *mut MPI_T_cvar_handle) -> c_int {
    done(initialized().and_then(|()| {
        if handle.is_null() {
            return Err(ERR_INVALID_HANDLE);
        }
        // SAFETY: checked non-null; the caller's handle.
        cvar_of_handle(unsafe { *handle })?;
        // SAFETY: as above.
        unsafe { *handle = std::ptr::null_mut() };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_cvar_read / PMPI_T_cvar_read (handle: MPI_T_cvar_handle, buf: *mut c_void) -> c_int {
    done(initialized().and_then(|()| {
        let k = cvar_of_handle(handle)?;
        if buf.is_null() {
            return Err(ERR_INVALID);
        }
        let v = value_bytes(k);
        // SAFETY: the buffer holds the count `MPI_T_cvar_handle_alloc`
        // gave; knobs do not change while the process runs.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf.cast::<u8>(), v.len()) };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_cvar_write / PMPI_T_cvar_write (handle: MPI_T_cvar_handle, buf: *const c_void) -> c_int {
    let _ = buf;
    done(initialized().and_then(|()| {
        cvar_of_handle(handle)?;
        Err(ERR_CVAR_SET_NEVER)
    }))
}}

// ---- Categories: one, holding every cvar ----

fn category(index: c_int) -> Result<(), c_int> {
    (index == 0).then_some(()).ok_or(ERR_INVALID_INDEX)
}

mpi_fn! { MPI_T_category_get_num / PMPI_T_category_get_num (num_cat: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        if num_cat.is_null() {
            return Err(ERR_INVALID);
        }
        // SAFETY: checked non-null.
        unsafe { *num_cat = 1 };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_category_get_info / PMPI_T_category_get_info (cat_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char,
        desc_len: *mut c_int, num_cvars: *mut c_int, num_pvars: *mut c_int, num_categories: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        category(cat_index)?;
        // SAFETY: the caller's outputs, each null or valid.
        unsafe {
            put_str(name, name_len, CATEGORY);
            put_str(desc, desc_len, CATEGORY_DESC);
            put(num_cvars, knobs::ALL.len() as c_int);
            put(num_pvars, PVARS.len() as c_int);
            put(num_categories, 0);
        }
        Ok(())
    }))
}}

mpi_fn! { MPI_T_category_get_index / PMPI_T_category_get_index (name: *const c_char, cat_index: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        // SAFETY: the caller's NUL-terminated name.
        let i = unsafe { index_of(name, std::iter::once(CATEGORY)) }?;
        // SAFETY: the caller's output argument.
        unsafe { put(cat_index, i) };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_category_get_cvars / PMPI_T_category_get_cvars (cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        category(cat_index)?;
        let n = len.clamp(0, knobs::ALL.len() as c_int);
        if n > 0 && indices.is_null() {
            return Err(ERR_INVALID);
        }
        for i in 0..n {
            // SAFETY: the caller's array of at least `len` ints.
            unsafe { *indices.add(i as usize) = i };
        }
        Ok(())
    }))
}}

/// `MPI_T_category_get_categories` and `_events`: the category has none,
/// so nothing is written.
macro_rules! empty_member_list {
    ($name:ident, $pname:ident) => {
        mpi_fn! { $name / $pname (cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
            let _ = (len, indices);
            done(initialized().and_then(|()| category(cat_index)))
        }}
    };
}

empty_member_list!(
    MPI_T_category_get_categories,
    PMPI_T_category_get_categories
);
empty_member_list!(MPI_T_category_get_events, PMPI_T_category_get_events);

mpi_fn! { MPI_T_category_get_num_events / PMPI_T_category_get_num_events (cat_index: c_int, num_events: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        category(cat_index)?;
        // SAFETY: the caller's output argument.
        unsafe { put(num_events, 0) };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_category_changed / PMPI_T_category_changed (update_number: *mut c_int) -> c_int {
    // The categories never change.
    done(initialized().map(|()| {
        // SAFETY: the caller's output argument.
        unsafe { put(update_number, 0) }
    }))
}}

// ---- Counts that are zero: performance variables, events, sources ----

/// Defines an `MPI_T_*_get_num` that answers 0.
macro_rules! none_of {
    ($name:ident, $pname:ident) => {
        mpi_fn! { $name / $pname (num: *mut c_int) -> c_int {
            done(initialized().and_then(|()| {
                if num.is_null() {
                    return Err(ERR_INVALID);
                }
                // SAFETY: checked non-null.
                unsafe { *num = 0 };
                Ok(())
            }))
        }}
    };
}

none_of!(MPI_T_event_get_num, PMPI_T_event_get_num);
none_of!(MPI_T_source_get_num, PMPI_T_source_get_num);

mpi_fn! { MPI_T_pvar_session_create / PMPI_T_pvar_session_create (session: *mut MPI_T_pvar_session) -> c_int {
    done(initialized().and_then(|()| {
        if session.is_null() {
            return Err(ERR_INVALID);
        }
        let n = SESSIONS.fetch_add(1, Ordering::AcqRel) + 1;
        // SAFETY: checked non-null.
        unsafe { *session = n as MPI_T_pvar_session };
        Ok(())
    }))
}}

fn session(s: MPI_T_pvar_session) -> Result<(), c_int> {
    let n = s as usize;
    (n != 0 && n <= SESSIONS.load(Ordering::Acquire))
        .then_some(())
        .ok_or(ERR_INVALID_SESSION)
}

mpi_fn! { MPI_T_pvar_session_free / PMPI_T_pvar_session_free (s: *mut MPI_T_pvar_session) -> c_int {
    done(initialized().and_then(|()| {
        if s.is_null() {
            return Err(ERR_INVALID_SESSION);
        }
        // SAFETY: checked non-null; the caller's session.
        session(unsafe { *s })?;
        // SAFETY: as above.
        unsafe { *s = std::ptr::null_mut() };
        Ok(())
    }))
}}

/// One performance variable: its name, what it counts, and the count.
struct Pvar {
    name: &'static str,
    desc: &'static str,
    read: fn(&Engine) -> u64,
}

fn tcp(e: &Engine, f: fn(&lanai_tcp::Stats) -> u64) -> u64 {
    e.net.tcp.as_ref().map_or(0, |t| f(&t.stats()))
}

const PVARS: &[Pvar] = &[
    Pvar {
        name: "lanai_shm_messages_sent",
        desc: "Messages this process sent to ranks of its node through shared memory",
        read: |e| e.net.counters.shm_msgs,
    },
    Pvar {
        name: "lanai_shm_bytes_sent",
        desc: "Bytes this process sent to ranks of its node through shared memory",
        read: |e| e.net.counters.shm_bytes,
    },
    Pvar {
        name: "lanai_tcp_messages_sent",
        desc: "Messages this process sent over TCP",
        read: |e| tcp(e, |s| s.messages_sent),
    },
    Pvar {
        name: "lanai_tcp_bytes_sent",
        desc: "Bytes this process sent over TCP",
        read: |e| tcp(e, |s| s.bytes_sent),
    },
    Pvar {
        name: "lanai_tcp_messages_received",
        desc: "Messages this process received over TCP",
        read: |e| tcp(e, |s| s.messages_received),
    },
    Pvar {
        name: "lanai_tcp_bytes_received",
        desc: "Bytes this process received over TCP",
        read: |e| tcp(e, |s| s.bytes_received),
    },
    Pvar {
        name: "lanai_tcp_connections",
        desc: "TCP connections this process completed (made on demand, or all at MPI_Init with LANAI_CONNECT=static)",
        read: |e| tcp(e, |s| s.connections),
    },
    Pvar {
        name: "lanai_self_messages",
        desc: "Messages this process sent to itself",
        read: |e| e.net.counters.self_msgs,
    },
    Pvar {
        name: "lanai_sleeps",
        desc: "Times this process slept while waiting inside MPI",
        read: |e| e.net.counters.sleeps,
    },
    Pvar {
        name: "lanai_sleep_timeouts",
        desc: "Sleeps that ended by timeout rather than a wake-up",
        read: |e| e.net.counters.sleep_timeouts,
    },
    Pvar {
        name: "lanai_staged_reduces",
        desc: "Reduces on a node whose contributions were staged for the root to fold in place",
        read: |e| e.net.counters.staged_reduces,
    },
    Pvar {
        name: "lanai_pieced_reduces",
        desc: "Reduces on a node whose contributions went through the mailboxes in pieces (ranks sharing cores)",
        read: |e| e.net.counters.pieced_reduces,
    },
    Pvar {
        name: "lanai_chunked_allreduces",
        desc: "Allreduces on a node that went through the staging slots in chunks",
        read: |e| e.net.counters.chunked_allreduces,
    },
    Pvar {
        name: "lanai_chunked_reduces",
        desc: "Reduces on a node that went through the staging slots in chunks, every rank folding a share",
        read: |e| e.net.counters.chunked_reduces,
    },
    Pvar {
        name: "lanai_chunked_bcasts",
        desc: "Broadcasts on a node that went through the root's staging slots in chunks",
        read: |e| e.net.counters.chunked_bcasts,
    },
    Pvar {
        name: "lanai_chunked_gathers",
        desc: "Gathers, allgathers, scatters and all-to-alls on a node that went through the staging slots in chunks",
        read: |e| e.net.counters.chunked_gathers,
    },
    Pvar {
        name: "lanai_device_colls",
        desc: "Small allgathers, all-to-alls and reduce-scatters on a node that rode on a barrier of the device",
        read: |e| e.net.counters.device_colls,
    },
    Pvar {
        name: "lanai_mail_shares",
        desc: "Small broadcasts, scatters, gathers and scans on a node that went through the device's mailboxes",
        read: |e| e.net.counters.mail_shares,
    },
    Pvar {
        name: "lanai_flat_reduces",
        desc: "Reduces across nodes sent straight to the root",
        read: |e| e.net.counters.flat_reduces,
    },
    Pvar {
        name: "lanai_transfer_colls",
        desc: "All-to-alls, gathers and scatters run as point-to-point transfers between the callers' buffers",
        read: |e| e.net.counters.transfer_colls,
    },
];

fn pvar(index: c_int) -> Result<&'static Pvar, c_int> {
    usize::try_from(index)
        .ok()
        .and_then(|i| PVARS.get(i))
        .ok_or(ERR_INVALID_INDEX)
}

/// The counter now, or why it cannot be read.
fn count(p: &Pvar) -> Result<u64, c_int> {
    // Outside MPI_Init .. MPI_Finalize there is no engine to read.
    state::with_engine(|e| Ok((p.read)(e))).map_err(|_| ERR_INVALID)
}

/// A live handle: its session, variable and the count when allocated.
#[derive(Clone, Copy)]
struct PvarHandle {
    session: usize,
    index: usize,
    base: u64,
}

/// Handles by number minus one; `None` once freed.
static HANDLES: Mutex<Vec<Option<PvarHandle>>> = Mutex::new(Vec::new());

fn handles() -> std::sync::MutexGuard<'static, Vec<Option<PvarHandle>>> {
    // Entries are plain data; a panic cannot leave one half-written.
    HANDLES.lock().unwrap_or_else(|p| p.into_inner())
}

fn handle_of(s: MPI_T_pvar_session, h: MPI_T_pvar_handle) -> Result<PvarHandle, c_int> {
    session(s)?;
    let i = (h as usize).checked_sub(1).ok_or(ERR_INVALID_HANDLE)?;
    match handles().get(i) {
        Some(Some(p)) if p.session == s as usize => Ok(*p),
        _ => Err(ERR_INVALID_HANDLE),
    }
}

fn is_all(h: MPI_T_pvar_handle) -> bool {
    std::ptr::eq(h, super::exported_data::MPI_T_PVAR_ALL_HANDLES.0)
}

mpi_fn! { MPI_T_pvar_get_num / PMPI_T_pvar_get_num (num: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        if num.is_null() {
            return Err(ERR_INVALID);
        }
        // SAFETY: checked non-null.
        unsafe { *num = PVARS.len() as c_int };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_pvar_get_info / PMPI_T_pvar_get_info (pvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        var_class: *mut c_int, datatype: *mut MPI_Datatype, enumtype: *mut MPI_T_enum, desc: *mut c_char, desc_len: *mut c_int,
        bind: *mut c_int, readonly: *mut c_int, continuous: *mut c_int, atomic: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        let p = pvar(pvar_index)?;
        // SAFETY: the caller's outputs, each null or valid.
        unsafe {
            put_str(name, name_len, p.name);
            put_str(desc, desc_len, p.desc);
            put(verbosity, VERBOSITY_USER_BASIC);
            put(var_class, PVAR_CLASS_COUNTER);
            put(datatype, c::MPI_UNSIGNED_LONG_LONG);
            put(enumtype, std::ptr::null_mut());
            put(bind, BIND_NO_OBJECT);
            put(readonly, 1);
            put(continuous, 1);
            put(atomic, 0);
        }
        Ok(())
    }))
}}

mpi_fn! { MPI_T_pvar_get_index / PMPI_T_pvar_get_index (name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        if var_class != PVAR_CLASS_COUNTER {
            return Err(ERR_INVALID_NAME);
        }
        // SAFETY: the caller's NUL-terminated name.
        let i = unsafe { index_of(name, PVARS.iter().map(|p| p.name)) }?;
        // SAFETY: the caller's output argument.
        unsafe { put(pvar_index, i) };
        Ok(())
    }))
}}

mpi_fn! { MPI_T_pvar_handle_alloc / PMPI_T_pvar_handle_alloc (s: MPI_T_pvar_session, pvar_index: c_int, obj_handle: *mut c_void,
        handle: *mut MPI_T_pvar_handle, count_out: *mut c_int) -> c_int {
    let _ = obj_handle; // bound to no object
    done(initialized().and_then(|()| {
        session(s)?;
        let p = pvar(pvar_index)?;
        if handle.is_null() || count_out.is_null() {
            return Err(ERR_INVALID);
        }
        // Before MPI_Init nothing has been counted yet.
        let base = count(p).unwrap_or(0);
        let mut t = handles();
        t.push(Some(PvarHandle { session: s as usize, index: pvar_index as usize, base }));
        // SAFETY: both checked non-null.
        unsafe {
            *handle = t.len() as MPI_T_pvar_handle;
            *count_out = 1;
        }
        Ok(())
    }))
}}

mpi_fn! { MPI_T_pvar_handle_free / PMPI_T_pvar_handle_free (s: MPI_T_pvar_session, handle: *mut MPI_T_pvar_handle) -> c_int {
    done(initialized().and_then(|()| {
        if handle.is_null() {
            return Err(ERR_INVALID_HANDLE);
        }
        // SAFETY: checked non-null; the caller's handle.
        let h = unsafe { *handle };
        handle_of(s, h)?;
        handles()[h as usize - 1] = None;
        // SAFETY: as above.
        unsafe { *handle = std::ptr::null_mut() };
        Ok(())
    }))
}}

/// Start and stop: the counters are continuous, so only
/// `MPI_T_PVAR_ALL_HANDLES` (which then affects nothing) is accepted.
macro_rules! pvar_continuous {
    ($name:ident, $pname:ident) => {
        mpi_fn! { $name / $pname (s: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
            done(initialized().and_then(|()| session(s)).and_then(|()| {
                if is_all(handle) {
                    return Ok(());
                }
                handle_of(s, handle)?;
                Err(ERR_PVAR_NO_STARTSTOP)
            }))
        }}
    };
}

pvar_continuous!(MPI_T_pvar_start, PMPI_T_pvar_start);
pvar_continuous!(MPI_T_pvar_stop, PMPI_T_pvar_stop);

mpi_fn! { MPI_T_pvar_read / PMPI_T_pvar_read (s: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    done(initialized().and_then(|()| {
        let h = handle_of(s, handle)?;
        if buf.is_null() {
            return Err(ERR_INVALID);
        }
        let now = count(&PVARS[h.index])?;
        // SAFETY: the caller's buffer for one unsigned long long (the
        // count `MPI_T_pvar_handle_alloc` gave).
        unsafe { buf.cast::<u64>().write_unaligned(now.saturating_sub(h.base)) };
        Ok(())
    }))
}}

/// Write, reset and read-reset: the counters are read-only.
macro_rules! pvar_read_only {
    ($name:ident, $pname:ident $(, $buf:ident : $ty:ty)?) => {
        mpi_fn! { $name / $pname (s: MPI_T_pvar_session, handle: MPI_T_pvar_handle $(, $buf: $ty)?) -> c_int {
            $(let _ = $buf;)?
            done(initialized().and_then(|()| session(s)).and_then(|()| {
                if !is_all(handle) {
                    handle_of(s, handle)?;
                }
                Err(ERR_PVAR_NO_WRITE)
            }))
        }}
    };
}

pvar_read_only!(MPI_T_pvar_reset, PMPI_T_pvar_reset);
pvar_read_only!(MPI_T_pvar_readreset, PMPI_T_pvar_readreset, buf: *mut c_void);
pvar_read_only!(MPI_T_pvar_write, PMPI_T_pvar_write, buf: *const c_void);

mpi_fn! { MPI_T_category_get_pvars / PMPI_T_category_get_pvars (cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    done(initialized().and_then(|()| {
        category(cat_index)?;
        let n = len.clamp(0, PVARS.len() as c_int);
        if n > 0 && indices.is_null() {
            return Err(ERR_INVALID);
        }
        for i in 0..n {
            // SAFETY: the caller's array of at least `len` ints.
            unsafe { *indices.add(i as usize) = i };
        }
        Ok(())
    }))
}}

// ---- Enumerations: no cvar has one, so no enum handle exists ----

mpi_fn! { MPI_T_enum_get_info / PMPI_T_enum_get_info (enumtype: MPI_T_enum, num: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    let _ = (enumtype, num, name, name_len);
    done(initialized().and(Err(ERR_INVALID_HANDLE)))
}}

mpi_fn! { MPI_T_enum_get_item / PMPI_T_enum_get_item (enumtype: MPI_T_enum, index: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    let _ = (enumtype, index, value, name, name_len);
    done(initialized().and(Err(ERR_INVALID_HANDLE)))
}}

// ---- Events and event sources: none exist ----

/// An `MPI_T` function whose every valid call is refused with `err`:
/// there is no index, name or handle it could accept.
macro_rules! nothing_to_name {
    ($name:ident, $pname:ident, ($($arg:ident : $ty:ty),*) => $err:expr) => {
        mpi_fn! { $name / $pname ($($arg: $ty),*) -> c_int {
            let _ = ($($arg,)*);
            done(initialized().and(Err($err)))
        }}
    };
}

nothing_to_name!(MPI_T_event_get_info, PMPI_T_event_get_info, (event_index: c_int, name: *mut c_char, name_len: *mut c_int,
    verbosity: *mut c_int, array_of_datatypes: *mut MPI_Datatype, array_of_displacements: *mut c::MPI_Aint,
    num_elements: *mut c_int, enumtype: *mut MPI_T_enum, info: *mut c::MPI_Info, desc: *mut c_char, desc_len: *mut c_int,
    bind: *mut c_int) => ERR_INVALID_INDEX);
nothing_to_name!(MPI_T_event_get_index, PMPI_T_event_get_index, (name: *const c_char, event_index: *mut c_int) => ERR_INVALID_NAME);
nothing_to_name!(MPI_T_event_handle_alloc, PMPI_T_event_handle_alloc, (event_index: c_int, obj_handle: *mut c_void,
    info: c::MPI_Info, event_registration: *mut MPI_T_event_registration) => ERR_INVALID_INDEX);
nothing_to_name!(MPI_T_event_handle_set_info, PMPI_T_event_handle_set_info, (event_registration: MPI_T_event_registration,
    info: c::MPI_Info) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_handle_get_info, PMPI_T_event_handle_get_info, (event_registration: MPI_T_event_registration,
    info_used: *mut c::MPI_Info) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_register_callback, PMPI_T_event_register_callback, (event_registration: MPI_T_event_registration,
    cb_safety: c::MPI_T_cb_safety, info: c::MPI_Info, user_data: *mut c_void,
    event_cb_function: Option<c::MPI_T_event_cb_function>) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_callback_set_info, PMPI_T_event_callback_set_info, (event_registration: MPI_T_event_registration,
    cb_safety: c::MPI_T_cb_safety, info: c::MPI_Info) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_callback_get_info, PMPI_T_event_callback_get_info, (event_registration: MPI_T_event_registration,
    cb_safety: c::MPI_T_cb_safety, info_used: *mut c::MPI_Info) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_handle_free, PMPI_T_event_handle_free, (event_registration: MPI_T_event_registration,
    user_data: *mut c_void, free_cb_function: *mut c_void) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_set_dropped_handler, PMPI_T_event_set_dropped_handler, (event_registration: MPI_T_event_registration,
    dropped_cb_function: *mut c_void) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_read, PMPI_T_event_read, (event_instance: MPI_T_event_instance, element_index: c_int,
    buffer: *mut c_void) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_copy, PMPI_T_event_copy, (event_instance: MPI_T_event_instance, buffer: *mut c_void) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_get_timestamp, PMPI_T_event_get_timestamp, (event_instance: MPI_T_event_instance,
    event_timestamp: *mut c::MPI_Count) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_event_get_source, PMPI_T_event_get_source, (event_instance: MPI_T_event_instance,
    source_index: *mut c_int) => ERR_INVALID_HANDLE);
nothing_to_name!(MPI_T_source_get_info, PMPI_T_source_get_info, (source_index: c_int, name: *mut c_char, name_len: *mut c_int,
    desc: *mut c_char, desc_len: *mut c_int, ordering: *mut c::MPI_T_source_order, ticks_per_second: *mut c::MPI_Count,
    max_ticks: *mut c::MPI_Count, info: *mut c::MPI_Info) => ERR_INVALID_INDEX);
nothing_to_name!(MPI_T_source_get_timestamp, PMPI_T_source_get_timestamp, (source_index: c_int,
    timestamp: *mut c::MPI_Count) => ERR_INVALID_INDEX);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_follow_the_standard_convention() {
        let mut len: c_int = 0;
        // SAFETY: a null buffer with a length.
        unsafe { put_str(std::ptr::null_mut(), &mut len, "LANAI_X") };
        assert_eq!(len, 8);
        let mut buf = [0x7f as c_char; 5];
        let mut len: c_int = 5;
        // SAFETY: a buffer of `len` bytes.
        unsafe { put_str(buf.as_mut_ptr(), &mut len, "LANAI_X") };
        assert_eq!(len, 5);
        // SAFETY: NUL-terminated by put_str.
        assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(), b"LANA");
    }

    #[test]
    fn handles_name_their_knob() {
        let h = 3usize as MPI_T_cvar_handle;
        assert_eq!(cvar_of_handle(h).unwrap().name, knobs::ALL[2].name);
        assert_eq!(
            cvar_of_handle(std::ptr::null_mut()).unwrap_err(),
            ERR_INVALID_HANDLE
        );
        assert!(cvar(knobs::ALL.len() as c_int).is_err() && cvar(-1).is_err());
    }
}
