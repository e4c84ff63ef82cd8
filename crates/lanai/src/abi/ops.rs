//! Reduction operations: predefined ones map onto `lanai_coll`'s, user ones
//! (`MPI_Op_create`) wrap the C function as a [`Combine`].
//!
//! Handles follow MPICH: predefined ops are `0x5800_00nn`, user ops are
//! "direct" objects `0x9800_0000 | index`.

use super::consts as c;
use super::consts::{MPI_Count, MPI_Datatype, MPI_Op, MPI_User_function, MPI_User_function_c};
use super::{call, errors, state, types};
use crate::engine::coll::Combiner;
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use lanai_coll::{Combine, OpError, Predefined};
use lanai_datatype::Datatype;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// Kind and object bits of a user op handle.
const USER_OP_BASE: MPI_Op = 0x9800_0000_u32 as MPI_Op;
const INDEX_MASK: MPI_Op = 0x03ff_ffff;

/// MPICH's C++ layer (`libmpichcxx.so.12`) calls a C++ user function
/// through this: (invec, inoutvec, count, datatype, user function).
pub type CxxOpCall =
    unsafe extern "C" fn(*const c_void, *mut c_void, c_int, MPI_Datatype, MPI_User_function);

/// A user function: `MPI_Op_create`'s takes an `int` count,
/// `MPI_Op_create_c`'s an `MPI_Count`; one made by the C++ classes is
/// called through their call-through function.
#[derive(Clone, Copy)]
enum UserFn {
    Int(MPI_User_function),
    Count(MPI_User_function_c),
    Cxx(MPI_User_function, CxxOpCall),
}

impl UserFn {
    /// The most elements one call may be given.
    fn max_len(self) -> usize {
        match self {
            UserFn::Int(_) | UserFn::Cxx(..) => c_int::MAX as usize,
            UserFn::Count(_) => MPI_Count::MAX as usize,
        }
    }

    /// Calls the function on `len` elements (at most `max_len`).
    ///
    /// # Safety
    /// `invec` and `inout` each hold `len` elements of `dt` as the
    /// function expects them, and do not overlap.
    unsafe fn call(self, invec: *mut c_void, inout: *mut c_void, len: usize, mut dt: MPI_Datatype) {
        // SAFETY: per this function's contract; the function is the
        // user's, which MPI lets us call with any element count.
        unsafe {
            match self {
                UserFn::Int(f) => f(invec, inout, &mut (len as c_int), &mut dt),
                UserFn::Count(f) => f(invec, inout, &mut (len as MPI_Count), &mut dt),
                UserFn::Cxx(f, call) => call(invec, inout, len as c_int, dt, f),
            }
        }
    }
}

/// A user-defined operation as `MPI_Op_create(_c)` registered it.
#[derive(Clone, Copy)]
struct UserOp {
    f: UserFn,
    commute: bool,
}

/// User ops by handle index; `None` once freed. A mutex (uncontended under
/// the serialized threading contract) keeps this safe code.
static USER_OPS: Mutex<Vec<Option<UserOp>>> = Mutex::new(Vec::new());

fn user_ops() -> MutexGuard<'static, Vec<Option<UserOp>>> {
    // Nothing panics while holding the lock, so poison carries no meaning.
    USER_OPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// What an op handle names.
enum Resolved {
    Predefined(lanai_coll::Op),
    User(UserOp),
}

fn bad_op(o: MPI_Op) -> MpiError {
    if o == c::MPI_OP_NULL {
        MpiError::new(c::MPI_ERR_OP, "invalid reduction operation MPI_OP_NULL")
    } else {
        MpiError::new(
            c::MPI_ERR_OP,
            format!("invalid reduction operation 0x{:08x}", o as u32),
        )
    }
}

fn resolve(o: MPI_Op) -> MpiResult<Resolved> {
    if o & !INDEX_MASK == USER_OP_BASE {
        let idx = (o & INDEX_MASK) as usize;
        return match user_ops().get(idx) {
            Some(Some(u)) => Ok(Resolved::User(*u)),
            _ => Err(bad_op(o)),
        };
    }
    types::op_kind(o)
        .map(Resolved::Predefined)
        .ok_or_else(|| bad_op(o))
}

/// The element size of `dt` for a user op, and its layout when `dt` is
/// derived: the data then travels packed, and each combine unpacks it into
/// the caller's layout for the function (see `UserCombine::combine`).
fn user_op_type(dt: MPI_Datatype) -> MpiResult<(usize, Option<Datatype>)> {
    if let Some((size, _)) = types::predefined(dt) {
        if size > 0 {
            return Ok((size, None));
        }
    }
    if super::datatype::is_derived(dt) {
        let d = super::datatype::resolve_committed(dt)?;
        if let Ok(size) = usize::try_from(d.size()) {
            if size > 0 {
                return Ok((size, Some(d)));
            }
        }
    }
    Err(MpiError::new(
        c::MPI_ERR_TYPE,
        format!(
            "datatype 0x{:08x} cannot be reduced with a user-defined operation",
            dt as u32
        ),
    ))
}

/// The reduction the engine applies for `op` on `dt`.
///
/// The common case is decided here, by two table lookups: a predefined
/// operation on a type with a native element kind (long double has none).
/// Inlined, like the other steps of a small reduction's entry, so that no
/// result travels back through the stack: reading one there can wait for
/// the previous call's store to shared memory (`docs/decisions.md`).
#[inline(always)]
pub fn combiner(dt: MPI_Datatype, op: MPI_Op) -> MpiResult<Combiner> {
    if let Some(p) = common(dt, op) {
        return Ok(Combiner::Predefined(p));
    }
    any_combiner(dt, op)
}

/// Checks that `op` can reduce `dt`, as [`combiner`] would, without
/// building anything: a rank that only contributes (a reduce's non-root)
/// needs no combiner, and its result here is one register.
#[inline(always)]
pub fn check_combiner(dt: MPI_Datatype, op: MPI_Op) -> MpiResult<()> {
    if common(dt, op).is_some() {
        return Ok(());
    }
    any_combiner(dt, op).map(drop)
}

#[inline(always)]
fn common(dt: MPI_Datatype, op: MPI_Op) -> Option<Predefined> {
    let (Some(o), Some((_, Some(elem)))) = (types::op_kind(op), types::predefined(dt)) else {
        return None;
    };
    Predefined::new(o, elem).ok()
}

#[inline(never)]
fn any_combiner(dt: MPI_Datatype, op: MPI_Op) -> MpiResult<Combiner> {
    match resolve(op)? {
        Resolved::Predefined(o) => {
            if let Some(ld) = super::long_double::LongDouble::new(o, dt) {
                return ld
                    .map(|l| Combiner::Other(Box::new(l)))
                    .map_err(|e| MpiError::new(c::MPI_ERR_OP, e));
            }
            let elem = types::reduce_elem(dt)?;
            Predefined::new(o, elem)
                .map(Combiner::Predefined)
                .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))
        }
        Resolved::User(u) => {
            let (size, layout) = user_op_type(dt)?;
            Ok(Combiner::Other(Box::new(UserCombine {
                f: u.f,
                commute: u.commute,
                dt,
                size,
                layout,
            })))
        }
    }
}

/// A user function bound to the datatype of one reduction.
///
/// `MPI_User_function` is a plain function pointer, so this is `Send`.
struct UserCombine {
    f: UserFn,
    commute: bool,
    dt: MPI_Datatype,
    /// Bytes per element as the data travels (packed for a derived type).
    size: usize,
    /// A derived type's layout, which the function expects its vectors in.
    layout: Option<Datatype>,
}

/// Scratch memory aligned for any C scalar (16 bytes covers long double).
fn aligned_copy(src: &[u8]) -> Vec<u128> {
    let mut v = vec![0u128; src.len().div_ceil(16)];
    as_bytes_mut(&mut v)[..src.len()].copy_from_slice(src);
    v
}

fn as_bytes_mut(v: &mut [u128]) -> &mut [u8] {
    let len = std::mem::size_of_val(v);
    // SAFETY: u128 has no invalid bit patterns and no padding; the byte view
    // covers exactly the vector's memory and borrows it mutably.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), len) }
}

impl UserCombine {
    /// `higher = lower op higher` on packed elements of a derived type:
    /// both are unpacked into aligned scratch memory laid out as the caller's
    /// buffers were (holes and all), the function runs there, and the result
    /// is packed back.
    fn combine_in_layout(
        &self,
        layout: &Datatype,
        n: usize,
        lower: &[u8],
        higher: &mut [u8],
    ) -> Result<(), OpError> {
        let bad = |reason: String| OpError::UserOpFailed { reason };
        // The span of n instances around the base address, as `View` does.
        let spread = (n as i128 - 1) * i128::from(layout.extent());
        let lowest = (i128::from(layout.true_lb()) + spread.min(0)).min(0);
        let highest = i128::from(layout.true_ub()) + spread.max(0);
        let span = usize::try_from(highest - lowest)
            .map_err(|_| bad("the datatype's span is too large".into()))?;
        let origin = usize::try_from(-lowest).map_err(|_| bad("datatype span".into()))?;
        let mut input = vec![0u128; span.div_ceil(16).max(1)];
        let mut io = vec![0u128; span.div_ceil(16).max(1)];
        let count = n as u64;
        let dt_err = |e: lanai_datatype::DatatypeError| bad(e.to_string());
        lanai_datatype::unpack_partial(layout, count, lower, 0, as_bytes_mut(&mut input), origin)
            .map_err(dt_err)?;
        lanai_datatype::unpack_partial(layout, count, higher, 0, as_bytes_mut(&mut io), origin)
            .map_err(dt_err)?;
        let in_base = as_bytes_mut(&mut input)[origin..]
            .as_mut_ptr()
            .cast::<c_void>();
        let io_base = as_bytes_mut(&mut io)[origin..]
            .as_mut_ptr()
            .cast::<c_void>();
        // One call for all n instances: `call_user` splits by element size,
        // which here would be the packed size, not the extent.
        if n > self.f.max_len() {
            return Err(bad(
                "too many elements for an int-count user function".into()
            ));
        }
        // SAFETY: both bases point `origin` bytes into scratch buffers that
        // cover the type map of `n` instances of `dt` (the span computed
        // above), aligned to 16 bytes at the start of the span; they do not
        // overlap.
        unsafe { self.f.call(in_base, io_base, n, self.dt) };
        lanai_datatype::pack_partial(layout, count, as_bytes_mut(&mut io), origin, 0, higher)
            .map_err(dt_err)?;
        Ok(())
    }

    /// The alignment C code may assume for an element of `size` bytes.
    fn align(&self) -> usize {
        1 << self.size.trailing_zeros().min(4)
    }

    /// Calls the user function on `n` elements: `inout = in op inout`.
    fn call_user(&self, invec: *mut c_void, inout: *mut c_void, n: usize) {
        // An int-count function takes longer vectors in pieces (the op is
        // element-wise).
        let step = self.f.max_len();
        let mut done = 0;
        while done < n {
            let k = (n - done).min(step);
            let off = done * self.size;
            // SAFETY: `invec` and `inout` each hold `n` elements of
            // `self.size` bytes, aligned for the type (checked by the
            // callers), and do not overlap. Nothing is unwound across the
            // call (it is C).
            unsafe {
                self.f.call(
                    invec.cast::<u8>().add(off).cast(),
                    inout.cast::<u8>().add(off).cast(),
                    k,
                    self.dt,
                )
            };
            done += k;
        }
    }
}

impl Combine for UserCombine {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        if lower.len() != higher.len() {
            return Err(OpError::LengthMismatch {
                lower: lower.len(),
                higher: higher.len(),
            });
        }
        if !lower.len().is_multiple_of(self.size) {
            return Err(OpError::PartialElement {
                len: lower.len(),
                elem_size: self.size,
            });
        }
        let n = lower.len() / self.size;
        if n == 0 {
            return Ok(());
        }
        if let Some(layout) = &self.layout {
            return self.combine_in_layout(layout, n, lower, higher);
        }
        // The function may write `invec` (it is not const in C), so it
        // gets a copy, which is also aligned.
        let mut input = aligned_copy(lower);
        let in_ptr = input.as_mut_ptr().cast::<c_void>();
        if (higher.as_ptr() as usize).is_multiple_of(self.align()) {
            self.call_user(in_ptr, higher.as_mut_ptr().cast(), n);
        } else {
            let mut io = aligned_copy(higher);
            self.call_user(in_ptr, io.as_mut_ptr().cast(), n);
            let len = higher.len();
            higher.copy_from_slice(&as_bytes_mut(&mut io)[..len]);
        }
        Ok(())
    }
    fn commutative(&self) -> bool {
        self.commute
    }
    fn elem_size(&self) -> Option<usize> {
        Some(self.size)
    }
}

macro_rules! op_create {
    ($name:ident, $pname:ident, $fty:ty, $wrap:path) => {
        mpi_fn! { $name / $pname (user_fn: Option<$fty>, commute: c_int, op: *mut MPI_Op) -> c_int {
            call(stringify!($name), None, |_| {
                let f = user_fn.ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "user function is NULL"))?;
                if op.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_ARG, "op is NULL"));
                }
                let u = UserOp { f: $wrap(f), commute: commute != 0 };
                let mut ops = user_ops();
                let idx = match ops.iter().position(Option::is_none) {
                    Some(i) => {
                        ops[i] = Some(u);
                        i
                    }
                    None => {
                        ops.push(Some(u));
                        ops.len() - 1
                    }
                };
                if idx > INDEX_MASK as usize {
                    ops[idx] = None;
                    return Err(MpiError::new(c::MPI_ERR_OTHER, "too many user-defined operations"));
                }
                // SAFETY: checked non-null; the caller's writable MPI_Op.
                unsafe { *op = USER_OP_BASE | idx as MPI_Op };
                Ok(())
            })
        }}
    };
}

op_create!(
    MPI_Op_create,
    PMPI_Op_create,
    MPI_User_function,
    UserFn::Int
);
op_create!(
    MPI_Op_create_c,
    PMPI_Op_create_c,
    MPI_User_function_c,
    UserFn::Count
);

mpi_fn! { MPI_Op_free / PMPI_Op_free (op: *mut MPI_Op) -> c_int {
    call("MPI_Op_free", None, |_| {
        if op.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "op is NULL"));
        }
        // SAFETY: checked non-null; the caller's MPI_Op.
        let h = unsafe { *op };
        if let Resolved::Predefined(_) = resolve(h)? {
            return Err(MpiError::new(c::MPI_ERR_OP, "cannot free a predefined operation"));
        }
        let idx = (h & INDEX_MASK) as usize;
        if let Some(slot) = user_ops().get_mut(idx) {
            *slot = None;
        }
        // SAFETY: as above, writable.
        unsafe { *op = c::MPI_OP_NULL };
        Ok(())
    })
}}

mpi_fn! { MPI_Op_commutative / PMPI_Op_commutative (op: MPI_Op, commute: *mut c_int) -> c_int {
    call("MPI_Op_commutative", None, |_| {
        if commute.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "commute is NULL"));
        }
        // As MPICH: every predefined operation reports commutative.
        let v = match resolve(op)? {
            Resolved::Predefined(_) => true,
            Resolved::User(u) => u.commute,
        };
        // SAFETY: checked non-null; the caller's writable int.
        unsafe { *commute = c_int::from(v) };
        Ok(())
    })
}}

/// Checks `MPI_Reduce_local`'s arguments; returns the op and the byte length.
fn local_args(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<(Resolved, usize)> {
    if state::phase() != state::RUNNING {
        return Err(MpiError::other("called outside MPI_Init..MPI_Finalize"));
    }
    if count < 0 {
        return Err(MpiError::count(count));
    }
    let r = resolve(op)?;
    let size = match &r {
        Resolved::Predefined(_) => types::type_size(dt)?,
        Resolved::User(_) => {
            let (size, layout) = user_op_type(dt)?;
            if layout.is_some() {
                // The buffers are used in place here, so only a gap-free type.
                super::datatype::direct_size(dt)?;
            }
            size
        }
    };
    let len = size
        .checked_mul(count as usize)
        .ok_or_else(|| MpiError::new(c::MPI_ERR_COUNT, format!("count {count} is too large")))?;
    if len > 0 && (inbuf.is_null() || inoutbuf.is_null()) {
        return Err(MpiError::new(c::MPI_ERR_BUFFER, "NULL buffer"));
    }
    if inbuf as usize == c::MPI_IN_PLACE || inoutbuf as usize == c::MPI_IN_PLACE {
        return Err(MpiError::new(
            c::MPI_ERR_BUFFER,
            "MPI_IN_PLACE is not allowed here",
        ));
    }
    Ok((r, len))
}

/// `inoutbuf = inbuf op inoutbuf`, with no engine borrow held, so a user
/// function may itself call MPI.
///
/// # Safety
/// The buffers hold `count` elements of `dt`, as MPI requires of callers.
unsafe fn reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<()> {
    let (r, len) = local_args(inbuf, inoutbuf, count, dt, op)?;
    if len == 0 {
        return Ok(());
    }
    // The standard forbids the two buffers to overlap, but a slice and a
    // mutable slice over shared bytes would be undefined behaviour here, so
    // an overlapping input is copied out first (only then: the copy of a
    // large buffer, and its allocation's page faults, doubled the time).
    let (a, b) = (inbuf as usize, inoutbuf as usize);
    let overlap = a < b.saturating_add(len) && b < a.saturating_add(len);
    let copied;
    let input: &[u8] = if overlap {
        // SAFETY: `len` readable bytes at `inbuf` per the contract.
        copied = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), len) }.to_vec();
        &copied
    } else {
        // SAFETY: `len` readable bytes at `inbuf` per the contract, disjoint
        // from the mutable slice below (checked above).
        unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), len) }
    };
    // SAFETY: `len` writable bytes at `inoutbuf` per the contract.
    let inout = unsafe { std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), len) };
    match r {
        Resolved::Predefined(o) => {
            if let Some(ld) = super::long_double::LongDouble::new(o, dt) {
                let ld = ld.map_err(|e| MpiError::new(c::MPI_ERR_OP, e))?;
                return ld
                    .combine(input, inout)
                    .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()));
            }
            let elem = types::reduce_elem(dt)?;
            lanai_coll::combine(o, elem, input, inout)
        }
        Resolved::User(u) => {
            let (size, layout) = user_op_type(dt)?;
            UserCombine {
                f: u.f,
                commute: u.commute,
                dt,
                size,
                layout,
            }
            .combine(input, inout)
        }
    }
    .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))
}

macro_rules! reduce_local_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (inbuf: *const c_void, inoutbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
            // SAFETY: the caller's buffers, valid for the call.
            match unsafe { reduce_local(inbuf, inoutbuf, count.into(), datatype, op) } {
                Ok(()) => c::MPI_SUCCESS,
                Err(e) => errors::raise(stringify!($name), None, e),
            }
        }}
    };
}

reduce_local_entry!(MPI_Reduce_local, PMPI_Reduce_local, c_int);
reduce_local_entry!(MPI_Reduce_local_c, PMPI_Reduce_local_c, MPI_Count);

/// Marks a user op created by MPICH's C++ classes: its function is called
/// through `call`. An unknown op is ignored, as in MPICH (the layer calls
/// this only after a successful create).
///
/// # Safety
/// `call` is null or a function of [`CxxOpCall`]'s signature.
#[no_mangle]
pub unsafe extern "C" fn MPII_Op_set_cxx(op: MPI_Op, call: Option<CxxOpCall>) {
    super::guard("MPII_Op_set_cxx", || {
        let (Some(call), true) = (call, op & !INDEX_MASK == USER_OP_BASE) else {
            return;
        };
        if let Some(Some(u)) = user_ops().get_mut((op & INDEX_MASK) as usize) {
            if let UserFn::Int(f) = u.f {
                u.f = UserFn::Cxx(f, call);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `inout[i] = 10 * in[i] + inout[i]` on ints: not commutative.
    unsafe extern "C" fn shift_add(
        invec: *mut c_void,
        inout: *mut c_void,
        len: *mut c_int,
        _dt: *mut MPI_Datatype,
    ) {
        // SAFETY: called by UserCombine with `*len` ints at each pointer.
        unsafe {
            let n = *len as usize;
            let a = std::slice::from_raw_parts(invec.cast::<i32>(), n);
            let b = std::slice::from_raw_parts_mut(inout.cast::<i32>(), n);
            for (x, y) in a.iter().zip(b) {
                *y += 10 * *x;
            }
        }
    }

    /// For a vector of 2 ints with stride 3 (extent 4 ints): touches only
    /// ints 0 and 3 of each element, and fails if a hole is not zero (the
    /// scratch layout must put the data where the type map says).
    unsafe extern "C" fn strided_add(
        a: *mut c_void,
        b: *mut c_void,
        len: *mut c_int,
        _: *mut MPI_Datatype,
    ) {
        // SAFETY: the test passes len elements of extent 16 bytes.
        unsafe {
            let n = *len as usize;
            let (a, b) = (a.cast::<i32>(), b.cast::<i32>());
            for i in 0..n {
                for k in [0usize, 3] {
                    *b.add(4 * i + k) += 10 * *a.add(4 * i + k);
                }
                for k in [1usize, 2] {
                    assert_eq!(*a.add(4 * i + k), 0);
                    assert_eq!(*b.add(4 * i + k), 0);
                }
            }
        }
    }

    #[test]
    fn user_combine_on_a_derived_layout_sees_the_type_map() {
        let int = Datatype::primitive(lanai_datatype::Primitive::Int32);
        let v = Datatype::vector(2, 1, 3, &int).unwrap();
        let u = UserCombine {
            f: UserFn::Int(strided_add),
            commute: false,
            dt: c::MPI_INT,
            size: 8,
            layout: Some(v),
        };
        // Two elements, packed: (1, 2), (3, 4) and (5, 6), (7, 8).
        let enc = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let lower = enc(&[1, 2, 3, 4]);
        let mut higher = enc(&[5, 6, 7, 8]);
        u.combine(&lower, &mut higher).unwrap();
        assert_eq!(higher, enc(&[15, 26, 37, 48]));
    }

    #[test]
    fn user_combine_is_lower_op_higher_even_unaligned() {
        let u = UserCombine {
            f: UserFn::Int(shift_add),
            commute: false,
            dt: c::MPI_INT,
            size: 4,
            layout: None,
        };
        let lower: Vec<u8> = [1i32, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut buf = [0u8; 9];
        for (i, v) in [3i32, 4].iter().enumerate() {
            buf[1 + 4 * i..5 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        u.combine(&lower, &mut buf[1..]).unwrap();
        let got: Vec<i32> = buf[1..]
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(got, vec![13, 24]);
        assert!(u.combine(&lower, &mut buf[1..5]).is_err());
        assert!(!u.commutative());
    }
}
