//! Reduction operations: predefined ones map onto `lanai_coll`'s, user ones
//! (`MPI_Op_create`) wrap the C function as a [`Combine`].
//!
//! Handles follow MPICH: predefined ops are `0x5800_00nn`, user ops are
//! "direct" objects `0x9800_0000 | index`.

use super::consts as c;
use super::consts::{MPI_Datatype, MPI_Op, MPI_User_function};
use super::{call, errors, state, types};
use crate::engine::coll::Combiner;
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use lanai_coll::{Combine, OpError, Predefined};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// Kind and object bits of a user op handle.
const USER_OP_BASE: MPI_Op = 0x9800_0000_u32 as MPI_Op;
const INDEX_MASK: MPI_Op = 0x03ff_ffff;

/// A user-defined operation as `MPI_Op_create` registered it.
#[derive(Clone, Copy)]
struct UserOp {
    f: MPI_User_function,
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
    types::op(o)
        .map(Resolved::Predefined)
        .map_err(|_| bad_op(o))
}

/// The size of `dt` when a user op may be applied to it: predefined types
/// only, since derived ones would reach the function packed.
fn user_op_type_size(dt: MPI_Datatype) -> MpiResult<usize> {
    match types::predefined(dt) {
        Some((size, _)) if size > 0 => Ok(size),
        _ => Err(MpiError::new(
            c::MPI_ERR_TYPE,
            format!(
                "user-defined operations support predefined datatypes only (got 0x{:08x})",
                dt as u32
            ),
        )),
    }
}

/// The reduction the engine applies for `op` on `dt`.
pub fn combiner(dt: MPI_Datatype, op: MPI_Op) -> MpiResult<Combiner> {
    match resolve(op)? {
        Resolved::Predefined(o) => {
            if let Some(ld) = super::long_double::LongDouble::new(o, dt) {
                return ld
                    .map(|l| Box::new(l) as Combiner)
                    .map_err(|e| MpiError::new(c::MPI_ERR_OP, e));
            }
            let elem = types::reduce_elem(dt)?;
            Predefined::new(o, elem)
                .map(|p| Box::new(p) as Combiner)
                .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))
        }
        Resolved::User(u) => Ok(Box::new(UserCombine {
            f: u.f,
            commute: u.commute,
            dt,
            size: user_op_type_size(dt)?,
        })),
    }
}

/// A user function bound to the datatype of one reduction.
///
/// `MPI_User_function` is a plain function pointer, so this is `Send`.
struct UserCombine {
    f: MPI_User_function,
    commute: bool,
    dt: MPI_Datatype,
    size: usize,
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
    /// The alignment C code may assume for an element of `size` bytes.
    fn align(&self) -> usize {
        1 << self.size.trailing_zeros().min(4)
    }

    /// Calls the user function on `n` elements: `inout = in op inout`.
    fn call_user(&self, invec: *mut c_void, inout: *mut c_void, n: usize) {
        // Counts are C ints; split longer vectors (the op is element-wise).
        let step = c_int::MAX as usize;
        let mut done = 0;
        while done < n {
            let k = (n - done).min(step);
            let mut len = k as c_int;
            let mut dt = self.dt;
            let off = done * self.size;
            // SAFETY: `invec` and `inout` each hold `n` elements of
            // `self.size` bytes, aligned for the type (checked by the
            // callers), and do not overlap; the function is the user's
            // MPI_User_function, which MPI lets us call with any element
            // count. Nothing is unwound across it (it is C).
            unsafe {
                (self.f)(
                    invec.cast::<u8>().add(off).cast(),
                    inout.cast::<u8>().add(off).cast(),
                    &mut len,
                    &mut dt,
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

mpi_fn! { MPI_Op_create / PMPI_Op_create (user_fn: Option<MPI_User_function>, commute: c_int, op: *mut MPI_Op) -> c_int {
    call("MPI_Op_create", None, |_| {
        let f = user_fn.ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "user function is NULL"))?;
        if op.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "op is NULL"));
        }
        let u = UserOp { f, commute: commute != 0 };
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
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<(Resolved, usize)> {
    if state::phase() != state::RUNNING {
        return Err(MpiError::other("called outside MPI_Init..MPI_Finalize"));
    }
    if count < 0 {
        return Err(MpiError::count(i64::from(count)));
    }
    let r = resolve(op)?;
    let size = match &r {
        Resolved::Predefined(_) => types::type_size(dt)?,
        Resolved::User(_) => user_op_type_size(dt)?,
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
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<()> {
    let (r, len) = local_args(inbuf, inoutbuf, count, dt, op)?;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: `len` readable bytes at `inbuf` per the contract; copied out so
    // overlap with `inoutbuf` cannot alias.
    let input = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), len) }.to_vec();
    // SAFETY: `len` writable bytes at `inoutbuf` per the contract.
    let inout = unsafe { std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), len) };
    match r {
        Resolved::Predefined(o) => {
            if let Some(ld) = super::long_double::LongDouble::new(o, dt) {
                let ld = ld.map_err(|e| MpiError::new(c::MPI_ERR_OP, e))?;
                return ld
                    .combine(&input, inout)
                    .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()));
            }
            let elem = types::reduce_elem(dt)?;
            lanai_coll::combine(o, elem, &input, inout)
        }
        Resolved::User(u) => UserCombine {
            f: u.f,
            commute: u.commute,
            dt,
            size: user_op_type_size(dt)?,
        }
        .combine(&input, inout),
    }
    .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))
}

mpi_fn! { MPI_Reduce_local / PMPI_Reduce_local (inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
    // SAFETY: the caller's buffers, valid for the call.
    match unsafe { reduce_local(inbuf, inoutbuf, count, datatype, op) } {
        Ok(()) => c::MPI_SUCCESS,
        Err(e) => errors::raise("MPI_Reduce_local", None, e),
    }
}}

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

    #[test]
    fn user_combine_is_lower_op_higher_even_unaligned() {
        let u = UserCombine {
            f: shift_add,
            commute: false,
            dt: c::MPI_INT,
            size: 4,
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
