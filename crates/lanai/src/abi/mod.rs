//! The C surface: every `MPI_`/`PMPI_` symbol, handle tables and error handling.
//!
//! # Entry points
//! Every entry point is defined with [`mpi_fn!`], which emits the `PMPI_`
//! symbol holding the body and an `MPI_` symbol that calls it (so profiling
//! libraries can interpose `MPI_`), and wraps the body in `catch_unwind` so
//! no panic crosses into C.

use std::os::raw::c_int;

pub mod consts;
pub mod convert;
pub mod datatype;
pub mod errors;
pub mod exported_data;
pub mod heap;
pub mod ops;
pub mod state;
pub mod types;
pub mod userbuf;

mod attr;
mod bsend_buffer;
mod coll;
mod coll_persistent;
mod comm;
mod env;
mod errhandler;
mod grequest;
mod group;
mod info;
mod intercomm;
mod ints;
mod long_double;
mod mem;
mod mpix;
mod p2p;
mod pair_types;
mod parent;
mod pcontrol;
mod requests;
mod sendrecv;
mod status;
mod tool;
mod topo;
mod win;

pub use errors::unsupported;

use crate::engine::comm::{SELF, WORLD};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::Status;
use crate::engine::{Engine, TAG_UB};
use consts as c;
use consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Status};
use userbuf::UserBuf;

/// The engine's index for a communicator handle. User communicators are
/// `USER_COMM_BASE | index` (MPICH's "direct" kind); whether the index is
/// live is checked by `Comms::get`.
pub fn comm_idx(h: MPI_Comm) -> MpiResult<usize> {
    match h {
        c::MPI_COMM_WORLD => Ok(WORLD),
        c::MPI_COMM_SELF => Ok(SELF),
        _ if h & !HANDLE_INDEX_MASK == USER_COMM_BASE
            && (h & HANDLE_INDEX_MASK) as usize > SELF =>
        {
            Ok((h & HANDLE_INDEX_MASK) as usize)
        }
        c::MPI_COMM_NULL => Err(MpiError::new(
            c::MPI_ERR_COMM,
            "invalid communicator MPI_COMM_NULL",
        )),
        _ => Err(MpiError::new(
            c::MPI_ERR_COMM,
            format!("invalid communicator 0x{:08x}", h as u32),
        )),
    }
}

/// Kind and object bits of a user communicator handle.
pub const USER_COMM_BASE: MPI_Comm = 0x8400_0000_u32 as MPI_Comm;
/// Index bits of a handle.
pub const HANDLE_INDEX_MASK: c_int = 0x03ff_ffff;

/// The handle for an engine communicator index.
pub fn comm_handle(idx: usize) -> MPI_Comm {
    match idx {
        WORLD => c::MPI_COMM_WORLD,
        SELF => c::MPI_COMM_SELF,
        i => USER_COMM_BASE | (i as c_int & HANDLE_INDEX_MASK),
    }
}

/// Runs an entry point's work on the engine and routes failure through the
/// error handler of `comm` (or `MPI_COMM_WORLD`'s).
pub fn call(
    name: &str,
    comm: Option<MPI_Comm>,
    f: impl FnOnce(&mut Engine) -> MpiResult<()>,
) -> c_int {
    match state::with_engine(f) {
        Ok(()) => c::MPI_SUCCESS,
        Err(e) => {
            let on = e.comm.or_else(|| comm.and_then(|h| comm_idx(h).ok()));
            errors::raise(name, on, e)
        }
    }
}

/// Validates a (buffer, count, datatype) triple and wraps it.
///
/// # Safety
/// `ptr` must point to `count` elements of `dt` that stay valid for the
/// operation's lifetime, as the MPI standard requires of callers.
#[inline(always)]
pub unsafe fn user_buf(
    ptr: *const std::ffi::c_void,
    count: impl Into<MPI_Count>,
    dt: MPI_Datatype,
) -> MpiResult<UserBuf> {
    let count: MPI_Count = count.into();
    if count < 0 {
        return Err(MpiError::count(count));
    }
    let size = types::type_size(dt)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { sized_buf(ptr, count, size) }
}

/// [`user_buf`] once the element size is known.
///
/// # Safety
/// As for [`user_buf`]; `count` is not negative.
#[inline(always)]
pub unsafe fn sized_buf(
    ptr: *const std::ffi::c_void,
    count: MPI_Count,
    size: usize,
) -> MpiResult<UserBuf> {
    let len = usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| MpiError::new(c::MPI_ERR_COUNT, format!("count {count} is too large")))?;
    if ptr.is_null() && len > 0 {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            format!("NULL buffer with count {count}"),
        ));
    }
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { UserBuf::new(ptr as *mut u8, len) })
}

/// Checks a tag for a send (no wildcard) or a receive (`MPI_ANY_TAG` allowed).
pub fn check_tag(tag: c_int, recv: bool) -> MpiResult<()> {
    if (recv && tag == c::MPI_ANY_TAG) || (0..=TAG_UB).contains(&tag) {
        Ok(())
    } else {
        Err(MpiError::tag(tag, TAG_UB))
    }
}

/// Fills a C status unless it is `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `p` is `MPI_STATUS_IGNORE`, null, or points to a writable `MPI_Status`.
pub unsafe fn write_status(p: *mut MPI_Status, st: &Status) {
    if p.is_null() || p as usize == c::MPI_STATUS_IGNORE {
        return;
    }
    let hi = ((st.count >> 32) as c_int) << 1;
    // SAFETY: a valid status pointer per the contract.
    unsafe {
        (*p).count_lo = st.count as u32 as c_int;
        (*p).count_hi_and_cancelled = hi | c_int::from(st.cancelled);
        (*p).MPI_SOURCE = st.source;
        (*p).MPI_TAG = st.tag;
        (*p).MPI_ERROR = st.error;
    }
}

/// Reads the byte count and cancelled flag of a C status.
pub fn status_count(s: &MPI_Status) -> (u64, bool) {
    let hi = (s.count_hi_and_cancelled as u32 >> 1) as u64;
    (
        ((hi) << 32) | u64::from(s.count_lo as u32),
        s.count_hi_and_cancelled & 1 != 0,
    )
}

/// The status of an operation that involved no message.
pub fn empty_status() -> Status {
    Status {
        source: c::MPI_ANY_SOURCE,
        tag: c::MPI_ANY_TAG,
        error: c::MPI_SUCCESS,
        count: 0,
        cancelled: false,
    }
}

include!(concat!(env!("OUT_DIR"), "/stubs.rs"));

/// Runs an entry point's body. A panic is a bug in Lanai: it never crosses
/// into C; it is reported in one line and ends the job, like a fatal error.
pub fn guard<T>(name: &str, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(e) => {
            let msg = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            errors::fatal(&format!("{name}: internal error: {msg}"))
        }
    }
}

/// Defines one MPI function under its `PMPI_` and `MPI_` names.
///
/// ```ignore
/// mpi_fn! { MPI_Foo / PMPI_Foo (a: c_int, b: *mut c_int) -> c_int { body } }
/// ```
/// The body runs inside [`guard`]; it may use `unsafe` blocks, each with a
/// `// SAFETY:` line.
#[macro_export]
macro_rules! mpi_fn {
    ($name:ident / $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty $body:block) => {
        /// # Safety
        /// Called from C with arguments as the MPI standard specifies for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret {
            $crate::abi::guard(stringify!($name), move || $body)
        }

        /// # Safety
        /// As for the `PMPI_` form, which this calls.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: same contract as the PMPI_ entry point.
            unsafe { $pname($($arg),*) }
        }
    };
}
