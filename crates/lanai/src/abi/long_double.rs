//! Reductions on C `long double` (x86-64: the x87 80-bit extended format,
//! stored in 16 bytes): `MPI_LONG_DOUBLE`, its complex types and
//! `MPI_LONG_DOUBLE_INT`. Rust has no such float type, so the arithmetic is
//! done by the x87 unit itself, in a few lines of inline assembly, which
//! gives exactly what C code doing the same operation would.

use super::consts as c;
use super::consts::MPI_Datatype;
use lanai_coll::{Combine, Op, OpError};
use std::arch::asm;
use std::cmp::Ordering;

/// Bytes a `long double` occupies in memory (10 of them significant).
const LD: usize = 16;

/// What a `long double` reduction works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Real,
    Complex,
    /// `struct { long double value; int index; }`: 32 bytes with padding.
    WithIndex,
}

/// A predefined operation on a `long double` type.
#[derive(Debug, Clone, Copy)]
pub struct LongDouble {
    op: Op,
    kind: Kind,
}

impl LongDouble {
    /// The combiner for `op` on `dt`, if `dt` is a `long double` type:
    /// `None` for other types, `Some(Err)` when the op is undefined on it.
    pub fn new(op: Op, dt: MPI_Datatype) -> Option<Result<Self, String>> {
        let kind = match dt {
            c::MPI_LONG_DOUBLE => Kind::Real,
            c::MPI_C_LONG_DOUBLE_COMPLEX | c::MPI_CXX_LONG_DOUBLE_COMPLEX => Kind::Complex,
            c::MPI_LONG_DOUBLE_INT => Kind::WithIndex,
            _ => return None,
        };
        let ok = match kind {
            Kind::Real => matches!(op, Op::Sum | Op::Prod | Op::Max | Op::Min),
            Kind::Complex => matches!(op, Op::Sum | Op::Prod),
            Kind::WithIndex => matches!(op, Op::Maxloc | Op::Minloc),
        };
        Some(if ok || matches!(op, Op::Replace | Op::NoOp) {
            Ok(Self { op, kind })
        } else {
            Err(format!(
                "operation {op:?} is not defined on this long double type"
            ))
        })
    }

    fn elem(&self) -> usize {
        match self.kind {
            Kind::Real => LD,
            Kind::Complex | Kind::WithIndex => 2 * LD,
        }
    }
}

/// `out = a + b` (or `a * b`, `a - b`) in extended precision.
fn arith(a: &[u8], b: &[u8], out: &mut [u8], which: Arith) {
    assert!(a.len() >= 10 && b.len() >= 10 && out.len() >= 10);
    let (pa, pb, po) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
    // One x87 instruction combines st(1) = a with st(0) = b and pops.
    macro_rules! x87 {
        ($op:literal) => {
            // SAFETY: each pointer covers at least the 10 bytes an 80-bit
            // load or store touches (checked above); the x87 stack is left
            // as found (two loads, one pop by the arithmetic, one by the
            // store).
            unsafe {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    $op,
                    "fstp tbyte ptr [{o}]",
                    a = in(reg) pa, b = in(reg) pb, o = in(reg) po,
                    out("st(0)") _, out("st(1)") _,
                    options(nostack),
                )
            }
        };
    }
    match which {
        Arith::Add => x87!("faddp st(1), st"),
        Arith::Mul => x87!("fmulp st(1), st"),
        // fsubp computes st(1) - st(0), that is a - b.
        Arith::Sub => x87!("fsubp st(1), st"),
    }
}

#[derive(Debug, Clone, Copy)]
enum Arith {
    Add,
    Mul,
    Sub,
}

/// Compares two extended-precision values; `None` when either is NaN.
fn compare(a: &[u8], b: &[u8]) -> Option<Ordering> {
    assert!(a.len() >= 10 && b.len() >= 10);
    let (mut above, mut below, mut unordered): (u8, u8, u8);
    // SAFETY: both pointers cover the 10 bytes loaded; the two values are
    // popped again (fucomip pops one, fstp the other).
    unsafe {
        asm!(
            "fld tbyte ptr [{b}]",
            "fld tbyte ptr [{a}]",
            "fucomip st, st(1)",
            "fstp st(0)",
            "seta {above}",
            "setb {below}",
            "setp {un}",
            a = in(reg) a.as_ptr(), b = in(reg) b.as_ptr(),
            above = out(reg_byte) above, below = out(reg_byte) below, un = out(reg_byte) unordered,
            out("st(0)") _, out("st(1)") _,
            options(nostack),
        );
    }
    if unordered != 0 {
        None
    } else if above != 0 {
        Some(Ordering::Greater)
    } else if below != 0 {
        Some(Ordering::Less)
    } else {
        Some(Ordering::Equal)
    }
}

impl Combine for LongDouble {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        if lower.len() != higher.len() {
            return Err(OpError::LengthMismatch {
                lower: lower.len(),
                higher: higher.len(),
            });
        }
        let n = self.elem();
        if !lower.len().is_multiple_of(n) {
            return Err(OpError::PartialElement {
                len: lower.len(),
                elem_size: n,
            });
        }
        for (l, h) in lower.chunks_exact(n).zip(higher.chunks_exact_mut(n)) {
            self.one(l, h);
        }
        Ok(())
    }

    fn commutative(&self) -> bool {
        !matches!(self.op, Op::Replace)
    }

    fn elem_size(&self) -> Option<usize> {
        Some(self.elem())
    }
}

impl LongDouble {
    /// `h = l op h` for one element.
    fn one(&self, l: &[u8], h: &mut [u8]) {
        let mut t = [0u8; LD];
        match (self.kind, self.op) {
            (_, Op::NoOp) => {}
            (_, Op::Replace) => h.copy_from_slice(l),
            (Kind::Real, Op::Sum) => {
                arith(l, h, &mut t, Arith::Add);
                h[..LD].copy_from_slice(&t);
            }
            (Kind::Real, Op::Prod) => {
                arith(l, h, &mut t, Arith::Mul);
                h[..LD].copy_from_slice(&t);
            }
            (Kind::Real, Op::Max) if compare(l, h) == Some(Ordering::Greater) => {
                h.copy_from_slice(l)
            }
            (Kind::Real, Op::Min) if compare(l, h) == Some(Ordering::Less) => h.copy_from_slice(l),
            (Kind::Complex, Op::Sum) => {
                let mut im = [0u8; LD];
                arith(&l[..LD], &h[..LD], &mut t, Arith::Add);
                arith(&l[LD..], &h[LD..], &mut im, Arith::Add);
                h[..LD].copy_from_slice(&t);
                h[LD..].copy_from_slice(&im);
            }
            (Kind::Complex, Op::Prod) => {
                // (a + bi)(c + di) = (ac - bd) + (ad + bc)i, as C computes it.
                let (a, b, cc, d) = (&l[..LD], &l[LD..], &h[..LD], &h[LD..]);
                let (mut ac, mut bd, mut ad, mut bc) = ([0u8; LD], [0u8; LD], [0u8; LD], [0u8; LD]);
                arith(a, cc, &mut ac, Arith::Mul);
                arith(b, d, &mut bd, Arith::Mul);
                arith(a, d, &mut ad, Arith::Mul);
                arith(b, cc, &mut bc, Arith::Mul);
                let mut im = [0u8; LD];
                arith(&ac, &bd, &mut t, Arith::Sub);
                arith(&ad, &bc, &mut im, Arith::Add);
                h[..LD].copy_from_slice(&t);
                h[LD..].copy_from_slice(&im);
            }
            (Kind::WithIndex, Op::Maxloc | Op::Minloc) => {
                let want = if self.op == Op::Maxloc {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
                let idx = |b: &[u8]| i32::from_ne_bytes([b[LD], b[LD + 1], b[LD + 2], b[LD + 3]]);
                match compare(&l[..LD], &h[..LD]) {
                    Some(o) if o == want => h.copy_from_slice(l),
                    Some(Ordering::Equal) => {
                        let m = idx(l).min(idx(h));
                        h[LD..LD + 4].copy_from_slice(&m.to_ne_bytes());
                    }
                    _ => {}
                }
            }
            // Refused by `new`.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 80-bit encoding of a small integer `v` (exact in both formats).
    fn ld(v: i64) -> [u8; LD] {
        let mut out = [0u8; LD];
        if v == 0 {
            return out;
        }
        let (sign, mag) = (v < 0, v.unsigned_abs());
        let shift = mag.leading_zeros();
        let mant = mag << shift; // explicit integer bit at the top
        let exp = 16383 + 63 - shift as u16;
        out[..8].copy_from_slice(&mant.to_le_bytes());
        out[8..10].copy_from_slice(&(exp | if sign { 0x8000 } else { 0 }).to_le_bytes());
        out
    }

    fn combine(op: Op, dt: MPI_Datatype, l: &[u8], h: &[u8]) -> Vec<u8> {
        let c = LongDouble::new(op, dt).unwrap().unwrap();
        let mut out = h.to_vec();
        c.combine(l, &mut out).unwrap();
        out
    }

    #[test]
    fn real_arithmetic_and_order() {
        assert_eq!(
            combine(Op::Sum, c::MPI_LONG_DOUBLE, &ld(3), &ld(4))[..10],
            ld(7)[..10]
        );
        assert_eq!(
            combine(Op::Prod, c::MPI_LONG_DOUBLE, &ld(-3), &ld(4))[..10],
            ld(-12)[..10]
        );
        assert_eq!(
            combine(Op::Max, c::MPI_LONG_DOUBLE, &ld(9), &ld(4))[..10],
            ld(9)[..10]
        );
        assert_eq!(
            combine(Op::Min, c::MPI_LONG_DOUBLE, &ld(9), &ld(4))[..10],
            ld(4)[..10]
        );
        assert_eq!(compare(&ld(-5), &ld(2)), Some(Ordering::Less));
        // 2^63 + 1 needs the 64-bit mantissa: a double would lose the 1.
        let mut big = [0u8; LD];
        big[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        big[8..10].copy_from_slice(&(16383u16 + 63).to_le_bytes());
        let sum = combine(Op::Sum, c::MPI_LONG_DOUBLE, &big, &ld(1));
        assert_eq!(sum[..8], ((1u64 << 63) | 1).to_le_bytes(), "1 was lost");
        assert_eq!(sum[8..10], big[8..10]);
    }

    #[test]
    fn complex_product() {
        // (1 + 2i)(3 + 4i) = -5 + 10i
        let l = [ld(1), ld(2)].concat();
        let h = [ld(3), ld(4)].concat();
        let p = combine(Op::Prod, c::MPI_C_LONG_DOUBLE_COMPLEX, &l, &h);
        assert_eq!(p[..10], ld(-5)[..10]);
        assert_eq!(p[16..26], ld(10)[..10]);
    }

    #[test]
    fn maxloc_ties_take_the_lower_index() {
        let pair = |v: i64, i: i32| {
            let mut b = vec![0u8; 32];
            b[..LD].copy_from_slice(&ld(v));
            b[LD..LD + 4].copy_from_slice(&i.to_ne_bytes());
            b
        };
        let r = combine(Op::Maxloc, c::MPI_LONG_DOUBLE_INT, &pair(5, 7), &pair(5, 2));
        assert_eq!(r, pair(5, 2));
        let r = combine(Op::Minloc, c::MPI_LONG_DOUBLE_INT, &pair(1, 7), &pair(5, 2));
        assert_eq!(r, pair(1, 7));
    }

    #[test]
    fn undefined_ops_are_refused() {
        assert!(LongDouble::new(Op::Band, c::MPI_LONG_DOUBLE)
            .unwrap()
            .is_err());
        assert!(LongDouble::new(Op::Max, c::MPI_C_LONG_DOUBLE_COMPLEX)
            .unwrap()
            .is_err());
        assert!(LongDouble::new(Op::Sum, c::MPI_DOUBLE).is_none());
    }
}
