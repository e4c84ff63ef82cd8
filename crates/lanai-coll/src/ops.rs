//! Predefined reduction operations on raw little-endian byte buffers.
//!
//! The convention is MPI's user-function one: `higher[i] = lower[i] op higher[i]`,
//! where `lower` holds the contribution of the lower ranks.

use std::sync::Arc;

use crate::error::OpError;

/// The predefined MPI reduction operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Maxloc,
    Minloc,
    /// `higher = lower` (MPI_REPLACE, for accumulate).
    Replace,
    /// `higher` unchanged (MPI_NO_OP, for accumulate).
    NoOp,
}

/// Element kinds the predefined operations understand.
///
/// Pair kinds use the C struct layout on x86-64 (value first, index at its
/// aligned offset); `size()` is the struct's stride, and padding bytes of
/// `higher` are left untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// C `_Bool`, one byte; any non-zero byte is true.
    Bool,
    /// Complex float: two `f32` (real, imaginary).
    C32,
    /// Complex double: two `f64` (real, imaginary).
    C64,
    /// `struct { float; int; }` (MPI_FLOAT_INT), 8 bytes.
    FloatInt,
    /// `struct { double; int; }` (MPI_DOUBLE_INT), 16 bytes.
    DoubleInt,
    /// `struct { long; int; }` (MPI_LONG_INT), 16 bytes.
    LongInt,
    /// `struct { int; int; }` (MPI_2INT), 8 bytes.
    TwoInt,
    /// `struct { short; int; }` (MPI_SHORT_INT), 8 bytes.
    ShortInt,
    /// Two `f32`, the index also a float (MPI_2REAL), 8 bytes.
    TwoF32,
    /// Two `f64`, the index also a double (MPI_2DOUBLE_PRECISION), 16 bytes.
    TwoF64,
}

impl Elem {
    /// Every element kind, for tables and tests.
    pub const ALL: [Elem; 20] = [
        Elem::I8,
        Elem::U8,
        Elem::I16,
        Elem::U16,
        Elem::I32,
        Elem::U32,
        Elem::I64,
        Elem::U64,
        Elem::F32,
        Elem::F64,
        Elem::Bool,
        Elem::C32,
        Elem::C64,
        Elem::FloatInt,
        Elem::DoubleInt,
        Elem::LongInt,
        Elem::TwoInt,
        Elem::ShortInt,
        Elem::TwoF32,
        Elem::TwoF64,
    ];

    /// Bytes one element occupies in a contiguous buffer (its C stride).
    pub const fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 | Elem::Bool => 1,
            Elem::I16 | Elem::U16 => 2,
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 | Elem::C32 => 8,
            Elem::FloatInt | Elem::TwoInt | Elem::ShortInt | Elem::TwoF32 => 8,
            Elem::C64 | Elem::DoubleInt | Elem::LongInt | Elem::TwoF64 => 16,
        }
    }
}

impl Op {
    /// Every operation, for tables and tests.
    pub const ALL: [Op; 14] = [
        Op::Max,
        Op::Min,
        Op::Sum,
        Op::Prod,
        Op::Land,
        Op::Band,
        Op::Lor,
        Op::Bor,
        Op::Lxor,
        Op::Bxor,
        Op::Maxloc,
        Op::Minloc,
        Op::Replace,
        Op::NoOp,
    ];

    /// Whether `a op b == b op a` for all operands (floating-point rounding aside).
    pub const fn commutative(self) -> bool {
        !matches!(self, Op::Replace | Op::NoOp)
    }

    /// Whether this operation is defined on `elem` (following the MPI standard's table).
    pub const fn defined_on(self, elem: Elem) -> bool {
        use Elem::*;
        let int = matches!(elem, I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64);
        let float = matches!(elem, F32 | F64);
        let complex = matches!(elem, C32 | C64);
        let pair = matches!(
            elem,
            FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | TwoF32 | TwoF64
        );
        match self {
            Op::Max | Op::Min => int || float,
            Op::Sum | Op::Prod => int || float || complex,
            Op::Land | Op::Lor | Op::Lxor => int || matches!(elem, Bool),
            Op::Band | Op::Bor | Op::Bxor => int,
            Op::Maxloc | Op::Minloc => pair,
            Op::Replace | Op::NoOp => true,
        }
    }
}

/// A reduction the collective machines can apply.
pub trait Combine {
    /// `higher = lower op higher`, element-wise; `lower` covers the lower ranks.
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError>;
    /// Whether operand order may be swapped (the machines never do, but callers may ask).
    fn commutative(&self) -> bool {
        true
    }
    /// Bytes per element when known, so algorithms may split a buffer between
    /// elements; `None` keeps buffers whole (algorithms that split are skipped).
    fn elem_size(&self) -> Option<usize> {
        None
    }
    /// The predefined operation this is, if any: what a process that cannot
    /// call the user's code (the offload engine) needs to apply it itself.
    fn predefined(&self) -> Option<Predefined> {
        None
    }
    /// The operation as a [`Kernel`] chosen once, for a loop of many
    /// combines; `None` for operations that are not predefined.
    fn kernel(&self) -> Option<Kernel> {
        None
    }
}

/// A predefined operation on a predefined element kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Predefined {
    pub op: Op,
    pub elem: Elem,
}

impl Predefined {
    /// Checks up front that `op` is defined on `elem`.
    #[inline]
    pub fn new(op: Op, elem: Elem) -> Result<Self, OpError> {
        if op.defined_on(elem) {
            Ok(Predefined { op, elem })
        } else {
            Err(OpError::UndefinedForElement { op, elem })
        }
    }
}

impl Combine for Predefined {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        combine(self.op, self.elem, lower, higher)
    }
    fn commutative(&self) -> bool {
        self.op.commutative()
    }
    fn elem_size(&self) -> Option<usize> {
        Some(self.elem.size())
    }
    fn predefined(&self) -> Option<Predefined> {
        Some(*self)
    }
    fn kernel(&self) -> Option<Kernel> {
        kernel(self.op, self.elem)
    }
}

impl<T: Combine + ?Sized> Combine for &T {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        (**self).combine(lower, higher)
    }
    fn commutative(&self) -> bool {
        (**self).commutative()
    }
    fn elem_size(&self) -> Option<usize> {
        (**self).elem_size()
    }
    fn predefined(&self) -> Option<Predefined> {
        (**self).predefined()
    }
    fn kernel(&self) -> Option<Kernel> {
        (**self).kernel()
    }
}

impl<T: Combine + ?Sized> Combine for Box<T> {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        (**self).combine(lower, higher)
    }
    fn commutative(&self) -> bool {
        (**self).commutative()
    }
    fn elem_size(&self) -> Option<usize> {
        (**self).elem_size()
    }
    fn predefined(&self) -> Option<Predefined> {
        (**self).predefined()
    }
    fn kernel(&self) -> Option<Kernel> {
        (**self).kernel()
    }
}

impl<T: Combine + ?Sized> Combine for Arc<T> {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        (**self).combine(lower, higher)
    }
    fn commutative(&self) -> bool {
        (**self).commutative()
    }
    fn elem_size(&self) -> Option<usize> {
        (**self).elem_size()
    }
    fn predefined(&self) -> Option<Predefined> {
        (**self).predefined()
    }
    fn kernel(&self) -> Option<Kernel> {
        (**self).kernel()
    }
}

/// `higher[i] = lower[i] op higher[i]` for every element of kind `elem`.
pub fn combine(op: Op, elem: Elem, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
    if lower.len() != higher.len() {
        return Err(OpError::LengthMismatch {
            lower: lower.len(),
            higher: higher.len(),
        });
    }
    let elem_size = elem.size();
    if lower.len() % elem_size != 0 {
        return Err(OpError::PartialElement {
            len: lower.len(),
            elem_size,
        });
    }
    let k = kernel(op, elem).ok_or(OpError::UndefinedForElement { op, elem })?;
    k(lower, higher);
    Ok(())
}

/// One predefined operation on one element kind, chosen once:
/// `higher[i] = lower[i] op higher[i]` over two operands of equal length,
/// a whole number of elements (the caller checks; [`combine`] does).
pub type Kernel = fn(&[u8], &mut [u8]);

/// Every operation as a kernel for one element kind: each arm fixes the
/// operation, so the inlined loop has no dispatch left in it.
macro_rules! by_op {
    ($op:expr, $f:ident $(:: <$($t:ty),*>)? $(, $a:expr)*) => {
        match $op {
            Op::Max => (|l, h| $f$(::<$($t),*>)?(Op::Max $(, $a)*, l, h)) as Kernel,
            Op::Min => |l, h| $f$(::<$($t),*>)?(Op::Min $(, $a)*, l, h),
            Op::Sum => |l, h| $f$(::<$($t),*>)?(Op::Sum $(, $a)*, l, h),
            Op::Prod => |l, h| $f$(::<$($t),*>)?(Op::Prod $(, $a)*, l, h),
            Op::Land => |l, h| $f$(::<$($t),*>)?(Op::Land $(, $a)*, l, h),
            Op::Band => |l, h| $f$(::<$($t),*>)?(Op::Band $(, $a)*, l, h),
            Op::Lor => |l, h| $f$(::<$($t),*>)?(Op::Lor $(, $a)*, l, h),
            Op::Bor => |l, h| $f$(::<$($t),*>)?(Op::Bor $(, $a)*, l, h),
            Op::Lxor => |l, h| $f$(::<$($t),*>)?(Op::Lxor $(, $a)*, l, h),
            Op::Bxor => |l, h| $f$(::<$($t),*>)?(Op::Bxor $(, $a)*, l, h),
            Op::Maxloc => |l, h| $f$(::<$($t),*>)?(Op::Maxloc $(, $a)*, l, h),
            Op::Minloc => |l, h| $f$(::<$($t),*>)?(Op::Minloc $(, $a)*, l, h),
            Op::Replace => |l, h| h.copy_from_slice(l),
            Op::NoOp => |_, _| {},
        }
    };
}

/// The kernel for `op` on `elem`, or `None` where MPI does not define it.
pub fn kernel(op: Op, elem: Elem) -> Option<Kernel> {
    if !op.defined_on(elem) {
        return None;
    }
    Some(match elem {
        Elem::I8 => by_op!(op, int_op::<i8>),
        Elem::U8 => by_op!(op, int_op::<u8>),
        Elem::I16 => by_op!(op, int_op::<i16>),
        Elem::U16 => by_op!(op, int_op::<u16>),
        Elem::I32 => by_op!(op, int_op::<i32>),
        Elem::U32 => by_op!(op, int_op::<u32>),
        Elem::I64 => by_op!(op, int_op::<i64>),
        Elem::U64 => by_op!(op, int_op::<u64>),
        Elem::F32 => by_op!(op, float_op::<f32>),
        Elem::F64 => by_op!(op, float_op::<f64>),
        Elem::Bool => by_op!(op, bool_op),
        Elem::C32 => by_op!(op, complex_op::<f32>),
        Elem::C64 => by_op!(op, complex_op::<f64>),
        Elem::FloatInt => by_op!(op, loc_op::<f32, i32>, 4, 8),
        Elem::DoubleInt => by_op!(op, loc_op::<f64, i32>, 8, 16),
        Elem::LongInt => by_op!(op, loc_op::<i64, i32>, 8, 16),
        Elem::TwoInt => by_op!(op, loc_op::<i32, i32>, 4, 8),
        Elem::ShortInt => by_op!(op, loc_op::<i16, i32>, 4, 8),
        Elem::TwoF32 => by_op!(op, loc_op::<f32, f32>, 4, 8),
        Elem::TwoF64 => by_op!(op, loc_op::<f64, f64>, 8, 16),
    })
}

/// A fixed-size little-endian scalar.
trait Scalar: Copy + PartialOrd {
    const SIZE: usize;
    /// `b` has exactly `SIZE` bytes.
    fn load(b: &[u8]) -> Self;
    /// `b` has exactly `SIZE` bytes.
    fn store(self, b: &mut [u8]);
}

/// Integer arithmetic with C's wrap-around semantics.
trait Int: Scalar + Ord {
    const ZERO: Self;
    const ONE: Self;
    fn wadd(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

trait Float: Scalar {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
scalar!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)]
            fn and(self, o: Self) -> Self { self & o }
            #[inline(always)]
            fn or(self, o: Self) -> Self { self | o }
            #[inline(always)]
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)]
            fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            #[inline(always)]
            fn min(self, o: Self) -> Self { <$t>::min(self, o) }
        }
    )*};
}
float!(f32, f64);

/// The tight loop: one monomorphised closure per (op, type), no dispatch inside.
#[inline(always)]
fn zip<T: Scalar>(lower: &[u8], higher: &mut [u8], f: impl Fn(T, T) -> T) {
    for (l, h) in lower
        .chunks_exact(T::SIZE)
        .zip(higher.chunks_exact_mut(T::SIZE))
    {
        f(T::load(l), T::load(h)).store(h);
    }
}

fn truth<T: Int>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

#[inline(always)]
fn int_op<T: Int>(op: Op, lower: &[u8], higher: &mut [u8]) {
    match op {
        Op::Max => zip::<T>(lower, higher, |a, b| a.max(b)),
        Op::Min => zip::<T>(lower, higher, |a, b| a.min(b)),
        Op::Sum => zip::<T>(lower, higher, |a, b| a.wadd(b)),
        Op::Prod => zip::<T>(lower, higher, |a, b| a.wmul(b)),
        Op::Land => zip::<T>(lower, higher, |a, b| truth(a != T::ZERO && b != T::ZERO)),
        Op::Lor => zip::<T>(lower, higher, |a, b| truth(a != T::ZERO || b != T::ZERO)),
        Op::Lxor => zip::<T>(lower, higher, |a, b| {
            truth((a != T::ZERO) != (b != T::ZERO))
        }),
        Op::Band => zip::<T>(lower, higher, |a, b| a.and(b)),
        Op::Bor => zip::<T>(lower, higher, |a, b| a.or(b)),
        Op::Bxor => zip::<T>(lower, higher, |a, b| a.xor(b)),
        // Rejected by `defined_on` before we get here.
        Op::Maxloc | Op::Minloc | Op::Replace | Op::NoOp => {}
    }
}

#[inline(always)]
fn float_op<T: Float>(op: Op, lower: &[u8], higher: &mut [u8]) {
    match op {
        // IEEE maxNum/minNum: a NaN operand loses to a number.
        Op::Max => zip::<T>(lower, higher, |a, b| a.max(b)),
        Op::Min => zip::<T>(lower, higher, |a, b| a.min(b)),
        Op::Sum => zip::<T>(lower, higher, |a, b| a.add(b)),
        Op::Prod => zip::<T>(lower, higher, |a, b| a.mul(b)),
        _ => {}
    }
}

#[inline(always)]
fn bool_op(op: Op, lower: &[u8], higher: &mut [u8]) {
    let f: fn(bool, bool) -> bool = match op {
        Op::Land => |a, b| a && b,
        Op::Lor => |a, b| a || b,
        Op::Lxor => |a, b| a != b,
        _ => return,
    };
    for (l, h) in lower.iter().zip(higher.iter_mut()) {
        *h = u8::from(f(*l != 0, *h != 0));
    }
}

#[inline(always)]
fn complex_op<T: Float>(op: Op, lower: &[u8], higher: &mut [u8]) {
    let n = T::SIZE;
    for (l, h) in lower
        .chunks_exact(2 * n)
        .zip(higher.chunks_exact_mut(2 * n))
    {
        let (lr, li) = (T::load(&l[..n]), T::load(&l[n..]));
        let (hr, hi) = (T::load(&h[..n]), T::load(&h[n..]));
        let (re, im) = match op {
            Op::Sum => (lr.add(hr), li.add(hi)),
            Op::Prod => (lr.mul(hr).sub(li.mul(hi)), lr.mul(hi).add(li.mul(hr))),
            _ => return,
        };
        let (hre, him) = h.split_at_mut(n);
        re.store(hre);
        im.store(him);
    }
}

/// MAXLOC/MINLOC on `(value, index)` pairs laid out with the index at `idx_at`.
#[inline(always)]
fn loc_op<V: Scalar, I: Scalar>(
    op: Op,
    idx_at: usize,
    stride: usize,
    lower: &[u8],
    higher: &mut [u8],
) {
    let want_max = match op {
        Op::Maxloc => true,
        Op::Minloc => false,
        _ => return,
    };
    for (l, h) in lower
        .chunks_exact(stride)
        .zip(higher.chunks_exact_mut(stride))
    {
        let (u, i) = (
            V::load(&l[..V::SIZE]),
            I::load(&l[idx_at..idx_at + I::SIZE]),
        );
        let (v, j) = (
            V::load(&h[..V::SIZE]),
            I::load(&h[idx_at..idx_at + I::SIZE]),
        );
        let lower_wins = if want_max { u > v } else { u < v };
        // Standard rule: strict winner keeps its index; a tie takes the smaller index.
        // Incomparable values (NaN) keep `higher` unchanged.
        let (w, k) = if lower_wins {
            (u, i)
        } else if u == v {
            (v, if i < j { i } else { j })
        } else {
            (v, j)
        };
        w.store(&mut h[..V::SIZE]);
        k.store(&mut h[idx_at..idx_at + I::SIZE]);
    }
}
