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
use crate::abi::consts::{MPI_Count, MPI_Datatype};
use crate::abi::ints::Ints;
use crate::abi::userbuf::{count_packed, Layout, UserBuf};
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

    /// The view as a layout the engine reads and writes in place; boxed
    /// so that its address survives moves of the pending state.
    fn into_layout(self) -> MpiResult<Box<Layout>> {
        let size = self.packed_len()?;
        // SAFETY: `View::new`'s contract: the span is valid user memory
        // for as long as the operation runs, which the layout is held for.
        Ok(Box::new(unsafe {
            Layout::new(self.dt, self.count, self.ptr, self.len, self.origin, size)
        }))
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

    /// Bytes of every instance, packed.
    fn packed_len(&self) -> MpiResult<usize> {
        let n = lanai_datatype::pack_size(&self.dt, self.count).map_err(dt_err)?;
        usize::try_from(n).map_err(|_| MpiError::new(c::MPI_ERR_COUNT, "message too large"))
    }

    /// Packs every instance into `out` (`packed_len` bytes).
    fn pack_into(&self, out: &mut [u8]) -> MpiResult<()> {
        count_packed(out.len());
        lanai_datatype::pack_partial(&self.dt, self.count, self.slice(), self.origin, 0, out)
            .map(|_| ())
            .map_err(dt_err)
    }

    /// The packed bytes of every instance.
    fn pack_all(&self) -> MpiResult<Vec<u8>> {
        let mut out = vec![0u8; self.packed_len()?];
        self.pack_into(&mut out)?;
        Ok(out)
    }

    /// Unpacks a packed prefix into the user layout.
    fn unpack_prefix(&self, packed: &[u8]) -> MpiResult<()> {
        count_packed(packed.len());
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
    count: MPI_Count,
    h: MPI_Datatype,
) -> MpiResult<Option<View>> {
    // The common case first: a basic type, one match, no lock.
    if crate::abi::types::predefined(h).is_some()
        || predef::lookup(h).is_some()
        || !super::is_derived(h)
    {
        return Ok(None);
    }
    if count < 0 {
        return Err(MpiError::count(count));
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
    /// The staged arguments of a nonblocking collective.
    Coll(Vec<Staged>),
    /// A non-contiguous buffer the engine reads or writes in place.
    Layout(Box<Layout>),
    /// A persistent request's temporary: it lives as long as the request,
    /// a send repacks it at every start, a receive unpacks it once per
    /// start (`settled` says whether that happened).
    Persistent {
        temp: Vec<u8>,
        view: View,
        send: bool,
        settled: bool,
    },
}

/// The bytes to send for (buf, count, datatype), with the packed
/// temporary to keep alive, if one was needed.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
#[inline(always)]
pub unsafe fn send_buf(
    buf: *const c_void,
    count: impl Into<MPI_Count>,
    h: MPI_Datatype,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    let count: MPI_Count = count.into();
    // SAFETY: forwarded.
    if let Some(b) = unsafe { plain_buf(buf, count, h)? } {
        return Ok((b, None));
    }
    // SAFETY: forwarded.
    unsafe { send_buf_slow(buf, count, h) }
}

/// The buffer of `count` elements of a predefined type, settled here,
/// inlined into the caller; `None` for a derived type or a negative count
/// (which [`send_buf`] and [`recv_buf`] then handle or report). The hot
/// point-to-point calls try this first, so that a basic type never moves
/// the staging tuple through memory.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
#[inline(always)]
pub unsafe fn plain_buf(
    buf: *const c_void,
    count: MPI_Count,
    h: MPI_Datatype,
) -> MpiResult<Option<UserBuf>> {
    match (crate::abi::types::predefined(h), count >= 0) {
        // SAFETY: forwarded.
        (Some((size, _)), true) => Ok(Some(unsafe { crate::abi::sized_buf(buf, count, size)? })),
        _ => Ok(None),
    }
}

/// [`send_buf`] for derived types and bad arguments.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
#[inline(never)]
unsafe fn send_buf_slow(
    buf: *const c_void,
    count: MPI_Count,
    h: MPI_Datatype,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    // SAFETY: forwarded.
    match unsafe { packed_view(buf, count, h)? } {
        None => {
            // SAFETY: forwarded.
            Ok((unsafe { crate::abi::user_buf(buf, count, h)? }, None))
        }
        Some(v) if v.packed_len()? <= PACK_UP_TO => {
            let mut t = v.pack_all()?;
            let b = temp_buf(&mut t);
            Ok((b, Some(Pending::Send(t))))
        }
        Some(v) => in_place(v),
    }
}

/// Messages up to this many packed bytes go through a temporary (one
/// pack is cheaper than segment bookkeeping, and the eager path copies
/// anyway); larger ones are read and written in place by rendezvous.
const PACK_UP_TO: usize = 16384;

/// A non-contiguous buffer used in place, with its layout to hold.
fn in_place(v: View) -> MpiResult<(UserBuf, Option<Pending>)> {
    let l = v.into_layout()?;
    // SAFETY: the boxed layout goes into the returned pending state, which
    // the caller keeps until the operation completes.
    let b = unsafe { UserBuf::segmented(&l) };
    Ok((b, Some(Pending::Layout(l))))
}

/// Where to receive (buf, count, datatype), with the temporary to unpack
/// from on completion, if one was needed.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
#[inline(always)]
pub unsafe fn recv_buf(
    buf: *mut c_void,
    count: impl Into<MPI_Count>,
    h: MPI_Datatype,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    let count: MPI_Count = count.into();
    // SAFETY: forwarded.
    if let Some(b) = unsafe { plain_buf(buf, count, h)? } {
        return Ok((b, None));
    }
    // SAFETY: forwarded.
    unsafe { recv_buf_slow(buf, count, h) }
}

/// [`recv_buf`] for derived types and bad arguments.
///
/// # Safety
/// As for [`crate::abi::user_buf`].
#[inline(never)]
unsafe fn recv_buf_slow(
    buf: *mut c_void,
    count: MPI_Count,
    h: MPI_Datatype,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    // SAFETY: forwarded.
    match unsafe { packed_view(buf, count, h)? } {
        None => {
            // SAFETY: forwarded.
            Ok((unsafe { crate::abi::user_buf(buf, count, h)? }, None))
        }
        Some(view) if view.packed_len()? > PACK_UP_TO => in_place(view),
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

/// Unpacks the received prefix of a receive temporary.
fn unpack_received(temp: &[u8], view: &View, st: &Status) -> MpiResult<()> {
    if st.cancelled {
        return Ok(());
    }
    let n = (st.count.min(temp.len() as u64)) as usize;
    view.unpack_prefix(&temp[..n])
}

impl Pending {
    /// Finishes the operation: a receive unpacks what arrived, a
    /// collective its outputs.
    fn complete(self, st: &Status) -> MpiResult<()> {
        match self {
            Pending::Send(_) | Pending::Persistent { .. } | Pending::Layout(_) => Ok(()),
            Pending::Recv { temp, view } => unpack_received(&temp, &view, st),
            Pending::Coll(args) => args.into_iter().try_for_each(Staged::finish),
        }
    }
}

/// The temporary of a persistent send or receive: (buf, count, datatype)
/// as the engine sees it, and what to hold for the request.
///
/// # Safety
/// As for [`crate::abi::user_buf`], for as long as the request exists.
pub unsafe fn persistent_buf(
    buf: *const c_void,
    count: impl Into<MPI_Count>,
    h: MPI_Datatype,
    send: bool,
) -> MpiResult<(UserBuf, Option<Pending>)> {
    let count: MPI_Count = count.into();
    // SAFETY: forwarded.
    match unsafe { packed_view(buf, count, h)? } {
        None => {
            // SAFETY: forwarded.
            Ok((unsafe { crate::abi::user_buf(buf, count, h)? }, None))
        }
        Some(view) => {
            let mut temp = vec![0u8; view.packed_len()?];
            let b = temp_buf(&mut temp);
            Ok((
                b,
                Some(Pending::Persistent {
                    temp,
                    view,
                    send,
                    settled: true,
                }),
            ))
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

/// Called by the wait/test family once request `req` is complete with
/// status `st` (before reporting it): unpacks a derived-type receive or
/// collective output exactly once.
#[inline(always)]
pub fn settle(e: &Engine, req: usize, st: &Status) -> MpiResult<()> {
    if HELD.load(Ordering::Relaxed) == 0 || e.st.reqs.get(req).is_none() {
        return Ok(());
    }
    let cookie = e.st.reqs.cookie(req);
    let found = {
        let mut t = pending();
        let Some(i) = t.iter().position(|(k, _)| *k == cookie) else {
            return Ok(());
        };
        if let Pending::Persistent {
            temp,
            view,
            send,
            settled,
        } = &mut t[i].1
        {
            // Kept for the next start.
            if std::mem::replace(settled, true) || *send {
                return Ok(());
            }
            return unpack_received(temp, view, st);
        }
        let f = t.swap_remove(i).1;
        HELD.store(t.len(), Ordering::Relaxed);
        f
    };
    found.complete(st)
}

/// Called by `MPI_Start` before persistent request `req` starts: a send
/// repacks the user's data, a receive will unpack again.
pub fn restart(e: &Engine, req: usize) -> MpiResult<()> {
    if HELD.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    match e.st.reqs.get(req) {
        // Starting an active request fails in the engine; leave it be.
        Some(r) if !r.active || r.done => {}
        _ => return Ok(()),
    }
    let cookie = e.st.reqs.cookie(req);
    let mut t = pending();
    if let Some((
        _,
        Pending::Persistent {
            temp,
            view,
            send,
            settled,
        },
    )) = t.iter_mut().find(|(k, _)| *k == cookie)
    {
        *settled = false;
        if *send {
            view.pack_into(temp)?;
        }
    }
    Ok(())
}

/// Drops whatever is held for request `req` (freed), without unpacking.
pub fn forget(e: &Engine, req: usize) {
    if HELD.load(Ordering::Relaxed) == 0 || e.st.reqs.get(req).is_none() {
        return;
    }
    let cookie = e.st.reqs.cookie(req);
    let mut t = pending();
    t.retain(|(k, _)| *k != cookie);
    HELD.store(t.len(), Ordering::Relaxed);
}

/// Moves what request `from` holds to request `to`, which the program
/// completes instead (the receive of an `MPI_Isendrecv` is unpacked when
/// the pair completes).
pub fn rekey(e: &Engine, from: usize, to: usize) {
    if HELD.load(Ordering::Relaxed) == 0 {
        return;
    }
    let (old, new) = (e.st.reqs.cookie(from), e.st.reqs.cookie(to));
    for (k, _) in pending().iter_mut().filter(|(k, _)| *k == old) {
        *k = new;
    }
}

/// A buffer argument of a collective, staged through a packed temporary
/// when its datatype is a non-contiguous derived type (or, for
/// reductions, any derived type). The collective then runs on
/// (`ptr()`, `count()`, `dt()`), which name predefined data; v/w forms
/// also take their counts, displacements and types from the `Staged`.
pub struct Staged {
    ptr: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    /// The datatype a reduction operation combines: `dt`, or the caller's
    /// derived type when a user operation's data was packed into bytes.
    op_dt: MPI_Datatype,
    /// Staged count per caller count (elements or bytes per instance).
    per: u64,
    /// What a staged argument owns; `None` when the caller's buffer is
    /// used as it is, the common case, which then allocates nothing.
    own: Option<Box<Owned>>,
}

/// The temporaries of a staged argument.
#[derive(Default)]
struct Owned {
    temp: Vec<u8>,
    /// Outputs: each view is unpacked from its range of `temp`.
    unpack: Vec<Unpack>,
    /// Rewritten per-rank arrays of a v/w argument.
    arrays: Option<Arrays>,
}

impl Owned {
    fn boxed(temp: Vec<u8>, unpack: Vec<Unpack>, arrays: Option<Arrays>) -> Option<Box<Owned>> {
        Some(Box::new(Owned {
            temp,
            unpack,
            arrays,
        }))
    }
}

/// A view of user memory and its range of a packed temporary.
type Unpack = (View, std::ops::Range<usize>);

/// A staged buffer and each block's (offset, length) in it.
pub type StagedBlocks = (Staged, Vec<(usize, usize)>);

// SAFETY: a Staged is address data plus owned temporaries, like `View`;
// MPI calls are serialized, so moving it between threads (into the
// pending table) creates no concurrent access.
unsafe impl Send for Staged {}

/// Per-rank counts and displacements (and alltoallw types) of a staged
/// v/w argument: bytes of the temporary, with `MPI_BYTE` as the type.
struct Arrays {
    counts: Vec<i64>,
    displs: Vec<i64>,
    types: Vec<MPI_Datatype>,
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

/// Whether the byte paths can use `h` as it is: predefined, or a derived
/// type that is one gap-free run from 0. Unknown handles count as direct
/// so that the call reports them itself.
pub fn is_direct(h: MPI_Datatype) -> MpiResult<bool> {
    if predef::lookup(h).is_some() || !super::is_derived(h) {
        return Ok(true);
    }
    let dt = resolve_committed(h)?;
    Ok(dt.is_contiguous() && dt.lb() == 0)
}

/// `count` instances of `dt`, `at` bytes from a buffer's base.
pub struct Block {
    pub at: i64,
    pub count: u64,
    pub dt: Datatype,
}

/// Packs `blocks` of the buffer at `base` back to back into one
/// temporary. Returns it with each block's range in it and its view.
///
/// # Safety
/// Every block lies in valid user memory (MPI contract).
unsafe fn pack_blocks(base: *const c_void, blocks: &[Block]) -> MpiResult<(Vec<u8>, Vec<Unpack>)> {
    let mut views = Vec::with_capacity(blocks.len());
    let mut end = 0usize;
    for b in blocks {
        let at = isize::try_from(b.at).map_err(|_| {
            MpiError::new(
                c::MPI_ERR_ARG,
                format!("displacement {} is too large", b.at),
            )
        })?;
        let p = base.cast::<u8>().wrapping_offset(at).cast::<c_void>();
        // SAFETY: forwarded from this function's contract.
        let v = unsafe { View::new(p, b.count, &b.dt)? };
        let len = v.packed_len()?;
        let next = end
            .checked_add(len)
            .ok_or_else(|| MpiError::new(c::MPI_ERR_COUNT, "the blocks are too large"))?;
        views.push((v, end..next));
        end = next;
    }
    let mut temp = vec![0u8; end];
    for (v, r) in &views {
        v.pack_into(&mut temp[r.clone()])?;
    }
    Ok((temp, views))
}

fn i64_of(n: usize) -> MpiResult<i64> {
    i64::try_from(n).map_err(|_| {
        MpiError::new(
            c::MPI_ERR_COUNT,
            "the packed blocks of this datatype exceed the int range of the call",
        )
    })
}

/// The caller's array of `n` entries.
///
/// # Safety
/// `p` is null or points to `n` readable entries.
unsafe fn entries<'a, T>(p: *const T, n: u32, what: &str) -> MpiResult<&'a [T]> {
    // SAFETY: forwarded.
    unsafe { super::array(p, n as usize, what) }
}

impl Staged {
    /// The argument untouched (predefined type, `MPI_IN_PLACE`, or not
    /// significant on this rank).
    pub fn pass(ptr: *const c_void, count: impl Into<MPI_Count>, dt: MPI_Datatype) -> Staged {
        Staged {
            ptr: ptr as *mut c_void,
            count: count.into(),
            dt,
            op_dt: dt,
            per: 1,
            own: None,
        }
    }

    /// # Safety
    /// `buf` holds `count * how.blocks` instances of `h` (MPI contract).
    pub unsafe fn new(
        buf: *const c_void,
        count: impl Into<MPI_Count>,
        h: MPI_Datatype,
        how: Use,
    ) -> MpiResult<Staged> {
        let count: MPI_Count = count.into();
        // The common case first: a basic type, one table lookup.
        if crate::abi::types::predefined(h).is_some()
            || buf as usize == c::MPI_IN_PLACE
            || predef::lookup(h).is_some()
            || !super::is_derived(h)
        {
            return Ok(Staged::pass(buf, count, h));
        }
        if count < 0 {
            return Err(MpiError::count(count));
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
        let new_count =
            MPI_Count::try_from(per as u128 * count as u128).map_err(|_| too_large())?;
        let n = (count as u64)
            .checked_mul(how.blocks as u64)
            .ok_or_else(too_large)?;
        // SAFETY: forwarded.
        let view = unsafe { View::new(buf, n, &dt)? };
        let mut temp = view.pack_all()?;
        let ptr = temp.as_mut_ptr().cast::<c_void>();
        let len = temp.len();
        Ok(Staged {
            ptr,
            count: new_count,
            dt: inner,
            // Packed bytes of a derived type keep it for a user operation,
            // which sees the caller's layout again (abi/ops.rs).
            op_dt: if how.reduce { inner } else { h },
            per,
            own: Owned::boxed(
                temp,
                if how.output {
                    vec![(view, 0..len)]
                } else {
                    Vec::new()
                },
                None,
            ),
        })
    }

    /// Typed blocks of one buffer, packed back to back; `None` when every
    /// datatype is direct (see [`is_direct`]) and the bytes can be used
    /// where they are. Returns the staged buffer (as `MPI_BYTE`) and each
    /// block's (offset, length) in it.
    ///
    /// # Safety
    /// Every block lies in valid user memory (MPI contract).
    pub unsafe fn typed_blocks<C: Copy + Into<i64>>(
        buf: *const c_void,
        blocks: &[(i64, C, MPI_Datatype)],
        output: bool,
    ) -> MpiResult<Option<StagedBlocks>> {
        let mut direct = true;
        for &(_, n, h) in blocks {
            if n.into() > 0 && !is_direct(h)? {
                direct = false;
            }
        }
        if direct || buf as usize == c::MPI_IN_PLACE {
            return Ok(None);
        }
        let byte = super::resolve(c::MPI_BYTE)?;
        let list = blocks
            .iter()
            .map(|&(at, n, h)| {
                let n: i64 = n.into();
                if n < 0 {
                    return Err(MpiError::count(n));
                }
                Ok(Block {
                    at,
                    count: n as u64,
                    // The type of an empty block is not significant.
                    dt: if n == 0 {
                        byte.clone()
                    } else {
                        resolve_committed(h)?
                    },
                })
            })
            .collect::<MpiResult<Vec<_>>>()?;
        // SAFETY: forwarded.
        let (mut temp, views) = unsafe { pack_blocks(buf, &list)? };
        let spans = views.iter().map(|(_, r)| (r.start, r.len())).collect();
        Ok(Some((
            Staged {
                ptr: temp.as_mut_ptr().cast::<c_void>(),
                count: 0,
                dt: c::MPI_BYTE,
                op_dt: c::MPI_BYTE,
                per: 1,
                own: Owned::boxed(temp, if output { views } else { Vec::new() }, None),
            },
            spans,
        )))
    }

    /// A v-form argument: `counts[i]` instances of `h` at `displs[i]`
    /// extents from `buf`, for `n` ranks. Staged, the blocks lie back to
    /// back in the temporary and `counts()`/`displs()` give them in bytes.
    ///
    /// # Safety
    /// The arrays hold `n` ints; the blocks lie in valid user memory.
    pub unsafe fn new_v(
        buf: *const c_void,
        counts: Ints,
        displs: Ints,
        n: u32,
        h: MPI_Datatype,
        how: Use,
    ) -> MpiResult<Staged> {
        let passed = Staged::pass(buf, 0, h);
        if buf as usize == c::MPI_IN_PLACE || is_direct(h)? {
            return Ok(passed);
        }
        // SAFETY: forwarded.
        let (cs, ds) = unsafe { (counts.read(n, "counts")?, displs.read(n, "displs")?) };
        let ext = resolve_committed(h)?.extent();
        let blocks = cs
            .iter()
            .zip(&ds)
            .map(|(&k, &d)| {
                let at = d.checked_mul(ext).ok_or_else(|| {
                    MpiError::new(c::MPI_ERR_ARG, format!("displacement {d} is too large"))
                })?;
                Ok((at, k, h))
            })
            .collect::<MpiResult<Vec<_>>>()?;
        // SAFETY: forwarded.
        let s = unsafe { Staged::with_arrays(buf, &blocks, how, false)? };
        // None: every block is empty, so the type is not significant; name
        // bytes rather than a type the byte paths cannot size.
        Ok(s.unwrap_or_else(|| Staged {
            dt: c::MPI_BYTE,
            op_dt: c::MPI_BYTE,
            own: Owned::boxed(
                Vec::new(),
                Vec::new(),
                Some(Arrays {
                    counts: vec![0; cs.len()],
                    displs: vec![0; cs.len()],
                    types: Vec::new(),
                }),
            ),
            ..passed
        }))
    }

    /// An alltoallw argument: `counts[i]` instances of `types[i]` at
    /// `displs[i]` bytes from `buf`. Staged, `counts()`, `displs()` and
    /// `types()` describe bytes of the temporary.
    ///
    /// # Safety
    /// The arrays hold `n` entries; the blocks lie in valid user memory.
    pub unsafe fn new_w(
        buf: *const c_void,
        counts: Ints,
        displs: Ints,
        types: *const MPI_Datatype,
        n: u32,
        how: Use,
    ) -> MpiResult<Staged> {
        let passed = Staged::pass(buf, 0, c::MPI_BYTE);
        if buf as usize == c::MPI_IN_PLACE {
            return Ok(passed);
        }
        // SAFETY: forwarded.
        let (cs, ds, ts) = unsafe {
            (
                counts.read(n, "counts")?,
                displs.read(n, "displs")?,
                entries(types, n, "types")?,
            )
        };
        let blocks: Vec<_> = cs
            .iter()
            .zip(&ds)
            .zip(ts)
            .map(|((&k, &d), &t)| (d, k, t))
            .collect();
        // SAFETY: forwarded.
        unsafe { Staged::with_arrays(buf, &blocks, how, true) }.map(|s| s.unwrap_or(passed))
    }

    /// # Safety
    /// As for [`Staged::typed_blocks`].
    unsafe fn with_arrays(
        buf: *const c_void,
        blocks: &[(i64, i64, MPI_Datatype)],
        how: Use,
        types: bool,
    ) -> MpiResult<Option<Staged>> {
        // SAFETY: forwarded.
        let Some((mut s, spans)) = (unsafe { Staged::typed_blocks(buf, blocks, how.output)? })
        else {
            return Ok(None);
        };
        s.own.get_or_insert_with(Default::default).arrays = Some(Arrays {
            counts: spans
                .iter()
                .map(|&(_, l)| i64_of(l))
                .collect::<MpiResult<_>>()?,
            displs: spans
                .iter()
                .map(|&(o, _)| i64_of(o))
                .collect::<MpiResult<_>>()?,
            types: if types {
                vec![c::MPI_BYTE; spans.len()]
            } else {
                Vec::new()
            },
        });
        Ok(Some(s))
    }

    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    pub fn count(&self) -> MPI_Count {
        self.count
    }

    pub fn dt(&self) -> MPI_Datatype {
        self.dt
    }

    /// The datatype a reduction's operation combines (see the field).
    pub fn op_dt(&self) -> MPI_Datatype {
        self.op_dt
    }

    /// Staged count per caller count.
    pub fn per(&self) -> u64 {
        self.per
    }

    /// The per-rank counts to use: the staged ones, else `orig`.
    pub fn counts(&self, orig: Ints) -> Ints {
        self.arrays()
            .map_or(orig, |a| Ints::Wide(a.counts.as_ptr()))
    }

    /// The per-rank displacements to use: the staged ones, else `orig`.
    pub fn displs(&self, orig: Ints) -> Ints {
        self.arrays()
            .map_or(orig, |a| Ints::Wide(a.displs.as_ptr()))
    }

    /// The per-rank types to use (alltoallw): the staged ones, else `orig`.
    pub fn types(&self, orig: *const MPI_Datatype) -> *const MPI_Datatype {
        match self.arrays() {
            Some(a) if !a.types.is_empty() => a.types.as_ptr(),
            _ => orig,
        }
    }

    fn arrays(&self) -> Option<&Arrays> {
        self.own.as_ref().and_then(|o| o.arrays.as_ref())
    }

    /// Whether this argument owns a temporary the operation uses.
    fn is_staged(&self) -> bool {
        self.own
            .as_ref()
            .is_some_and(|o| !o.temp.is_empty() || !o.unpack.is_empty() || o.arrays.is_some())
    }

    /// After the collective completed: unpacks outputs into the user layout.
    pub fn finish(self) -> MpiResult<()> {
        if let Some(o) = self.own {
            for (v, r) in &o.unpack {
                v.unpack_prefix(&o.temp[r.clone()])?;
            }
        }
        Ok(())
    }
}

/// How a collective entry point completes.
#[derive(Clone, Copy)]
pub enum Mode {
    /// Blocking: wait, then unpack outputs.
    Wait,
    /// Nonblocking: hand back the request; outputs are unpacked when the
    /// wait/test family completes it (see [`settle`]).
    Request(*mut crate::abi::consts::MPI_Request),
}

/// Runs a collective whose buffer arguments may have derived datatypes:
/// `stage` (given this rank and the communicator size) wraps the
/// arguments, `start` posts the collective on the staged ones; outputs are
/// unpacked once it completes.
pub fn collective<A: StagedArgs>(
    name: &str,
    comm: crate::abi::consts::MPI_Comm,
    mode: Mode,
    stage: impl FnOnce(u32, u32) -> MpiResult<A>,
    start: impl FnOnce(&mut Engine, &[Staged]) -> MpiResult<usize>,
) -> c_int {
    collective_on(
        name,
        comm,
        mode,
        |e, ci| {
            let cm = e.comms.get(ci)?;
            stage(cm.rank, cm.size)
        },
        |e, _, a| start(e, a),
    )
}

/// As [`collective`], with `stage` and `start` given the engine and the
/// communicator's engine index (intercommunicators stage by their root
/// argument and the remote group's size).
pub fn collective_on<A: StagedArgs>(
    name: &str,
    comm: crate::abi::consts::MPI_Comm,
    mode: Mode,
    stage: impl FnOnce(&Engine, usize) -> MpiResult<A>,
    start: impl FnOnce(&mut Engine, usize, &[Staged]) -> MpiResult<usize>,
) -> c_int {
    blocking_ends(name, comm, mode, |e| {
        check_request(mode)?;
        let ci = crate::abi::comm_idx(comm)?;
        let args = stage(e, ci)?;
        let req = start(e, ci, args.as_ref())?;
        if let Mode::Request(_) = mode {
            // Temporaries live (and outputs wait to be unpacked) until
            // the request completes.
            if args.as_ref().iter().any(Staged::is_staged) {
                hold(e, req, Pending::Coll(args.into_iter().collect()));
            }
            return hand_back(e, mode, req);
        }
        hand_back(e, mode, req)?;
        args.into_iter().try_for_each(Staged::finish)
    })
}

/// Runs a collective's entry point; a blocking one's call is over for the
/// node's checks (`Engine::leave_call`) however it ends, and a nonblocking
/// one that failed to start leaves no call to check (`Engine::drop_call`).
fn blocking_ends(
    name: &str,
    comm: crate::abi::consts::MPI_Comm,
    mode: Mode,
    body: impl FnOnce(&mut Engine) -> MpiResult<()>,
) -> c_int {
    crate::abi::call(name, Some(comm), |e| {
        let r = body(e);
        match mode {
            Mode::Wait => e.leave_call(r.as_ref().err().map(|e| e.class)),
            Mode::Request(_) => e.drop_call(),
        }
        r
    })
}

/// Runs a collective whose buffers need no staging (every datatype
/// predefined): the blocking form waits, the `I` form returns the handle.
/// The hot small reductions come this way, with nothing to wrap or unpack.
pub fn unstaged(
    name: &str,
    comm: crate::abi::consts::MPI_Comm,
    mode: Mode,
    start: impl FnOnce(&mut Engine) -> MpiResult<usize>,
) -> c_int {
    blocking_ends(name, comm, mode, |e| {
        check_request(mode)?;
        let req = start(e)?;
        hand_back(e, mode, req)
    })
}

/// Whether buffers of these datatypes need no staging: every one is
/// predefined, hence contiguous, and is reduced as itself.
pub fn all_predefined(types: &[crate::abi::consts::MPI_Datatype]) -> bool {
    types
        .iter()
        .all(|&t| crate::abi::types::predefined(t).is_some())
}

fn check_request(mode: Mode) -> MpiResult<()> {
    if matches!(mode, Mode::Request(r) if r.is_null()) {
        return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
    }
    Ok(())
}

/// Completes a started collective's call: a blocking one waits for
/// request `req`, a nonblocking one writes its handle.
fn hand_back(e: &mut Engine, mode: Mode, req: usize) -> MpiResult<()> {
    match mode {
        Mode::Wait => e.finish_coll(req),
        Mode::Request(r) => {
            e.adopt_call(req);
            // SAFETY: checked non-null before the start; writable per the
            // MPI contract.
            unsafe { *r = crate::abi::requests::handle_of(req) };
            Ok(())
        }
    }
}

/// The staged buffer arguments of one collective: a `Vec`, or an array
/// when their number is fixed, which spares the hot small collectives an
/// allocation per call.
pub trait StagedArgs: AsRef<[Staged]> + IntoIterator<Item = Staged> {}

impl<A: AsRef<[Staged]> + IntoIterator<Item = Staged>> StagedArgs for A {}

/// Runs a blocking collective (see [`collective`]).
pub fn blocking<A: StagedArgs>(
    name: &str,
    comm: crate::abi::consts::MPI_Comm,
    stage: impl FnOnce(u32, u32) -> MpiResult<A>,
    start: impl FnOnce(&mut Engine, &[Staged]) -> MpiResult<usize>,
) -> c_int {
    collective(name, comm, Mode::Wait, stage, start)
}
