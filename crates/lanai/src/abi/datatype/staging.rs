//! Communication with derived datatypes.
//!
//! The engine moves contiguous bytes. A derived datatype whose data is not
//! one gap-free run goes through a packed temporary: a send packs the user
//! layout into it first; a receive lands in it and is unpacked into the
//! user layout when the request completes. Temporaries of nonblocking
//! operations are kept in a table keyed by the request's cookie (index and
//! generation) until `requests.rs` completes the request and calls
//! [`settle`].

use super::{dt_err, predef, resolve_committed};
use crate::abi::consts as c;
use crate::abi::consts::MPI_Datatype;
use crate::abi::userbuf::UserBuf;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::Status;
use crate::engine::Engine;
use lanai_datatype::Datatype;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The user memory that `count` instances of a datatype at a base address
/// touch, as a slice plus the index of the base address in it.
pub struct View {
    dt: Datatype,
    count: u64,
    ptr: *mut u8,
    len: usize,
    origin: usize,
}

// SAFETY: a View is address data like `UserBuf`; MPI calls are serialized
// (at most MPI_THREAD_SERIALIZED), so moving it between threads creates no
// concurrent access.
unsafe impl Send for View {}

impl View {
    /// # Safety
    /// Every byte the type map of `count` instances of `dt` at `base`
    /// touches must be valid user memory for as long as the view is used
    /// (the MPI contract for communication buffers).
    pub unsafe fn new(base: *const c_void, count: u64, dt: &Datatype) -> MpiResult<View> {
        let empty = View {
            dt: dt.clone(),
            count,
            ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
            len: 0,
            origin: 0,
        };
        if count == 0 || dt.size() == 0 {
            return Ok(empty);
        }
        let spread = (count as i128 - 1) * dt.extent() as i128;
        let lowest = dt.true_lb() as i128 + spread.min(0);
        let highest = dt.true_ub() as i128 + spread.max(0);
        let b = base as usize as i128;
        let too_big =
            || MpiError::new(c::MPI_ERR_TYPE, "datatype span overflows the address space");
        let (dt, count, start, origin) = if b == 0 {
            // MPI_BOTTOM: displacements are absolute addresses. Shift the
            // type so the view starts at its first byte.
            let shift = i64::try_from(-lowest).map_err(|_| too_big())?;
            let n = usize::try_from(count).map_err(|_| too_big())?;
            let shifted = Datatype::hindexed(&[n], &[shift], dt).map_err(dt_err)?;
            (shifted, 1, lowest, 0)
        } else {
            let start = b + lowest.min(0);
            (dt.clone(), count, start, (b - start) as usize)
        };
        let end = b + highest;
        if start <= 0 || end > isize::MAX as i128 || end < start {
            return Err(MpiError::new(
                c::MPI_ERR_BUFFER,
                "the datatype reaches outside the address space from this buffer",
            ));
        }
        Ok(View {
            dt,
            count,
            ptr: start as usize as *mut u8,
            len: (end - start) as usize,
            origin,
        })
    }

    pub fn dt(&self) -> &Datatype {
        &self.dt
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn origin(&self) -> usize {
        self.origin
    }

    pub fn slice(&self) -> &[u8] {
        // SAFETY: `new`'s contract makes the span valid user memory.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    #[allow(clippy::mut_from_ref)]
    pub fn slice_mut(&self) -> &mut [u8] {
        // SAFETY: as for `slice`; MPI forbids other access to a receive
        // buffer while the operation runs.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The packed bytes of every instance.
    fn pack_all(&self) -> MpiResult<Vec<u8>> {
        let n = lanai_datatype::pack_size(&self.dt, self.count).map_err(dt_err)?;
        let n =
            usize::try_from(n).map_err(|_| MpiError::new(c::MPI_ERR_COUNT, "message too large"))?;
        let mut out = vec![0u8; n];
        lanai_datatype::pack_partial(&self.dt, self.count, self.slice(), self.origin, 0, &mut out)
            .map_err(dt_err)?;
        Ok(out)
    }

    /// Unpacks a packed prefix into the user layout.
    fn unpack_prefix(&self, packed: &[u8]) -> MpiResult<()> {
        lanai_datatype::unpack_partial(
            &self.dt,
            self.count,
            packed,
            0,
            self.slice_mut(),
            self.origin,
        )
        .map(|_| ())
        .map_err(dt_err)
    }
}

/// A (buffer, count, datatype) that needs a packed temporary, or `None`
/// when the engine can use the user's bytes as they are.
///
/// # Safety
/// `buf` holds `count` instances of `h` (MPI contract).
unsafe fn packed_view(
    buf: *const c_void,
    count: c_int,
    h: MPI_Datatype,
) -> MpiResult<Option<View>> {
    if predef::lookup(h).is_some() || !super::is_derived(h) {
        return Ok(None);
    }
    if count < 0 {
        return Err(MpiError::count(i64::from(count)));
    }
    let dt = resolve_committed(h)?;
    if dt.is_contiguous() && dt.lb() == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { View::new(buf, count as u64, &dt) }.map(Some)
}

/// A temporary's bytes as a `UserBuf`.
fn temp_buf(t: &mut [u8]) -> UserBuf {
    // SAFETY: the temporary is owned by the operation (a local of a
    // blocking call, or the pending table) until the request completes,
    // and its heap block does not move when the Vec does.
    unsafe { UserBuf::new(t.as_mut_ptr(), t.len()) }
}

/// What a point-to-point operation must keep until it completes.
pub enum Pending {
    /// A packed send buffer.
    Send(Vec<u8>),
    /// A receive temporary to unpack into the user layout.
    Recv { temp: Vec<u8>, view: View },
}

/// The bytes to send for (buf, count, datatype), with the packed
/// temporary to keep alive, if one was needed.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
pub unsafe fn send_buf(
    buf: *const c_void,
    count: c_int,
    h: MPI_Datatype,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    // SAFETY: forwarded.
    match unsafe { packed_view(buf, count, h)? } {
        None => {
            // SAFETY: forwarded.
            Ok((unsafe { crate::abi::user_buf(buf, count, h)? }, None))
        }
        Some(v) => {
            let mut t = v.pack_all()?;
            let b = temp_buf(&mut t);
            Ok((b, Some(Pending::Send(t))))
        }
    }
}

/// Where to receive (buf, count, datatype), with the temporary to unpack
/// from on completion, if one was needed.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
pub unsafe fn recv_buf(
    buf: *mut c_void,
    count: c_int,
    h: MPI_Datatype,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    // SAFETY: forwarded.
    match unsafe { packed_view(buf, count, h)? } {
        None => {
            // SAFETY: forwarded.
            Ok((unsafe { crate::abi::user_buf(buf, count, h)? }, None))
        }
        Some(view) => {
            let n = lanai_datatype::pack_size(view.dt(), view.count()).map_err(dt_err)?;
            let n = usize::try_from(n)
                .map_err(|_| MpiError::new(c::MPI_ERR_COUNT, "message too large"))?;
            let mut temp = vec![0u8; n];
            let b = temp_buf(&mut temp);
            Ok((b, Some(Pending::Recv { temp, view })))
        }
    }
}

impl Pending {
    /// Finishes the operation: a receive unpacks what arrived.
    pub fn complete(self, st: &Status) -> MpiResult<()> {
        match self {
            Pending::Send(_) => Ok(()),
            Pending::Recv { temp, view } => {
                if st.cancelled {
                    return Ok(());
                }
                let n = (st.count.min(temp.len() as u64)) as usize;
                view.unpack_prefix(&temp[..n])
            }
        }
    }
}

/// Pending temporaries of nonblocking operations, by request cookie.
static PENDING: Mutex<Vec<(u64, Pending)>> = Mutex::new(Vec::new());
/// How many entries `PENDING` holds, so completions skip the lock when
/// no derived-type operation is in flight.
static HELD: AtomicUsize = AtomicUsize::new(0);

fn pending() -> std::sync::MutexGuard<'static, Vec<(u64, Pending)>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps `p` until request `req` completes. Entries of requests that no
/// longer exist (freed with `MPI_Request_free` and since completed) are
/// dropped here.
pub fn hold(e: &Engine, req: usize, p: Pending) {
    let mut t = pending();
    t.retain(|(cookie, _)| e.st.reqs.by_cookie(*cookie).is_some());
    t.push((e.st.reqs.cookie(req), p));
    HELD.store(t.len(), Ordering::Relaxed);
}

/// Called by the wait/test family right before request `req` is released
/// with status `st`: unpacks a derived-type receive exactly once.
pub fn settle(e: &Engine, req: usize, st: &Status) -> MpiResult<()> {
    if HELD.load(Ordering::Relaxed) == 0 || e.st.reqs.get(req).is_none() {
        return Ok(());
    }
    let cookie = e.st.reqs.cookie(req);
    let found = {
        let mut t = pending();
        let f = t
            .iter()
            .position(|(k, _)| *k == cookie)
            .map(|i| t.swap_remove(i).1);
        HELD.store(t.len(), Ordering::Relaxed);
        f
    };
    match found {
        Some(p) => p.complete(st),
        None => Ok(()),
    }
}

/// A buffer argument of a blocking collective, staged through a packed
/// temporary when its datatype is a non-contiguous derived type (or, for
/// reductions, any derived type). The collective then runs on
/// (`ptr()`, `count()`, `dt()`), which name predefined data.
pub struct Staged {
    ptr: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    temp: Vec<u8>,
    unpack: Option<View>,
}

/// How a collective uses a buffer argument.
#[derive(Debug, Clone, Copy)]
pub struct Use {
    /// Instances of the datatype per `count` (e.g. the communicator size
    /// for a gather's receive buffer).
    pub blocks: usize,
    /// Written by the collective: unpack after it completes.
    pub output: bool,
    /// A reduction: the staged datatype must be the basic kind, not bytes.
    pub reduce: bool,
}

impl Use {
    pub const INPUT: Use = Use {
        blocks: 1,
        output: false,
        reduce: false,
    };
    pub const OUTPUT: Use = Use {
        blocks: 1,
        output: true,
        reduce: false,
    };
    pub fn blocks(self, n: u32) -> Use {
        Use {
            blocks: n as usize,
            ..self
        }
    }
    pub fn reduce(self) -> Use {
        Use {
            reduce: true,
            ..self
        }
    }
}

impl Staged {
    /// The argument untouched (predefined type, `MPI_IN_PLACE`, or not
    /// significant on this rank).
    pub fn pass(ptr: *const c_void, count: c_int, dt: MPI_Datatype) -> Staged {
        Staged {
            ptr: ptr as *mut c_void,
            count,
            dt,
            temp: Vec::new(),
            unpack: None,
        }
    }

    /// # Safety
    /// `buf` holds `count * how.blocks` instances of `h` (MPI contract).
    pub unsafe fn new(
        buf: *const c_void,
        count: c_int,
        h: MPI_Datatype,
        how: Use,
    ) -> MpiResult<Staged> {
        if buf as usize == c::MPI_IN_PLACE || predef::lookup(h).is_some() || !super::is_derived(h) {
            return Ok(Staged::pass(buf, count, h));
        }
        if count < 0 {
            return Err(MpiError::count(i64::from(count)));
        }
        let dt = resolve_committed(h)?;
        let direct = dt.is_contiguous() && dt.lb() == 0;
        if direct && !how.reduce {
            return Ok(Staged::pass(buf, count, h));
        }
        let too_large = || {
            MpiError::new(
                c::MPI_ERR_COUNT,
                format!("count {count} of this datatype is too large"),
            )
        };
        let (per, inner) = if how.reduce {
            let p = dt.uniform_primitive().ok_or_else(|| {
                MpiError::new(
                    c::MPI_ERR_TYPE,
                    "reductions on derived datatypes that mix basic types are not supported",
                )
            })?;
            (dt.elements(), predef::handle_of_primitive(p))
        } else {
            (dt.size(), c::MPI_BYTE)
        };
        let new_count = c_int::try_from(per as u128 * count as u128).map_err(|_| too_large())?;
        let n = (count as u64)
            .checked_mul(how.blocks as u64)
            .ok_or_else(too_large)?;
        // SAFETY: forwarded.
        let view = unsafe { View::new(buf, n, &dt)? };
        let mut temp = view.pack_all()?;
        let ptr = temp.as_mut_ptr().cast::<c_void>();
        Ok(Staged {
            ptr,
            count: new_count,
            dt: inner,
            temp,
            unpack: how.output.then_some(view),
        })
    }

    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    pub fn count(&self) -> c_int {
        self.count
    }

    pub fn dt(&self) -> MPI_Datatype {
        self.dt
    }

    /// After the collective completed: unpacks an output into the user layout.
    pub fn finish(self) -> MpiResult<()> {
        match &self.unpack {
            Some(v) => v.unpack_prefix(&self.temp),
            None => Ok(()),
        }
    }
}

/// Runs a blocking collective whose buffer arguments may have derived
/// datatypes: `stage` (given this rank and the communicator size) wraps
/// the arguments, `start` posts the collective on the staged ones, and
/// outputs are unpacked once it completes.
pub fn blocking(
    name: &str,
    comm: crate::abi::consts::MPI_Comm,
    stage: impl FnOnce(u32, u32) -> MpiResult<Vec<Staged>>,
    start: impl FnOnce(&mut Engine, &[Staged]) -> MpiResult<usize>,
) -> c_int {
    crate::abi::call(name, Some(comm), |e| {
        let cm = e.comms.get(crate::abi::comm_idx(comm)?)?;
        let args = stage(cm.rank, cm.size)?;
        let req = start(e, &args)?;
        e.finish_coll(req)?;
        args.into_iter().try_for_each(Staged::finish)
    })
}
