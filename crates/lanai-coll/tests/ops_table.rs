//! Table tests for every predefined op on every element kind.

use lanai_coll::{combine, Combine, Elem, Op, OpError, Predefined};
use proptest::prelude::*;

fn run(op: Op, elem: Elem, lower: &[u8], higher: &[u8]) -> Vec<u8> {
    let mut h = higher.to_vec();
    combine(op, elem, lower, &mut h).expect("op should be defined");
    h
}

/// Which (op, elem) pairs the MPI standard allows, written out independently.
fn allowed(op: Op, elem: Elem) -> bool {
    use Elem::*;
    let ints = [I8, U8, I16, U16, I32, U32, I64, U64];
    let floats = [F32, F64];
    let complex = [C32, C64];
    let pairs = [
        FloatInt, DoubleInt, LongInt, TwoInt, ShortInt, TwoF32, TwoF64,
    ];
    let any = |set: &[Elem]| set.contains(&elem);
    match op {
        Op::Max | Op::Min => any(&ints) || any(&floats),
        Op::Sum | Op::Prod => any(&ints) || any(&floats) || any(&complex),
        Op::Land | Op::Lor | Op::Lxor => any(&ints) || elem == Bool,
        Op::Band | Op::Bor | Op::Bxor => any(&ints),
        Op::Maxloc | Op::Minloc => any(&pairs),
        Op::Replace | Op::NoOp => true,
    }
}

#[test]
fn definedness_matrix_matches_the_standard() {
    for op in Op::ALL {
        for elem in Elem::ALL {
            let n = elem.size();
            let lower = vec![1u8; 2 * n];
            let mut higher = vec![2u8; 2 * n];
            let r = combine(op, elem, &lower, &mut higher);
            if allowed(op, elem) {
                assert!(r.is_ok(), "{op:?} on {elem:?}: {r:?}");
            } else {
                assert_eq!(r, Err(OpError::UndefinedForElement { op, elem }));
                assert_eq!(higher, vec![2u8; 2 * n], "failed op must not write");
                assert!(Predefined::new(op, elem).is_err());
            }
        }
    }
}

#[test]
fn sizes_are_c_strides() {
    let want = [
        (Elem::I8, 1),
        (Elem::U8, 1),
        (Elem::Bool, 1),
        (Elem::I16, 2),
        (Elem::U16, 2),
        (Elem::I32, 4),
        (Elem::U32, 4),
        (Elem::F32, 4),
        (Elem::I64, 8),
        (Elem::U64, 8),
        (Elem::F64, 8),
        (Elem::C32, 8),
        (Elem::C64, 16),
        (Elem::FloatInt, 8),
        (Elem::DoubleInt, 16),
        (Elem::LongInt, 16),
        (Elem::TwoInt, 8),
        (Elem::ShortInt, 8),
        (Elem::TwoF32, 8),
        (Elem::TwoF64, 16),
    ];
    assert_eq!(want.len(), Elem::ALL.len());
    for (e, s) in want {
        assert_eq!(e.size(), s, "{e:?}");
    }
}

#[test]
fn length_errors() {
    let mut h = vec![0u8; 8];
    assert_eq!(
        combine(Op::Sum, Elem::I32, &[0u8; 4], &mut h),
        Err(OpError::LengthMismatch {
            lower: 4,
            higher: 8
        })
    );
    let mut h = vec![0u8; 6];
    assert_eq!(
        combine(Op::Sum, Elem::I32, &[0u8; 6], &mut h),
        Err(OpError::PartialElement {
            len: 6,
            elem_size: 4
        })
    );
    // Empty buffers are fine for every defined pair.
    combine(Op::Maxloc, Elem::DoubleInt, &[], &mut []).unwrap();
}

#[test]
fn replace_and_no_op_on_every_kind() {
    for elem in Elem::ALL {
        let n = elem.size();
        let lower: Vec<u8> = (0..n as u8).collect();
        let higher = vec![0xEEu8; n];
        assert_eq!(run(Op::Replace, elem, &lower, &higher), lower);
        assert_eq!(run(Op::NoOp, elem, &lower, &higher), higher);
    }
    assert!(!Predefined {
        op: Op::Replace,
        elem: Elem::I32
    }
    .commutative());
    assert!(Predefined {
        op: Op::Sum,
        elem: Elem::I32
    }
    .commutative());
}

/// Checks every integer op on every pair of `vals` against native arithmetic.
macro_rules! int_table {
    ($name:ident, $t:ty, $elem:expr) => {
        #[test]
        fn $name() {
            let vals: [$t; 8] = [
                0,
                1,
                2,
                <$t>::MAX,
                <$t>::MIN,
                <$t>::MAX / 3,
                (<$t>::MAX / 5).wrapping_mul(3),
                0x55 as $t,
            ];
            let t = |b: bool| -> $t { b as $t };
            for &a in &vals {
                for &b in &vals {
                    let want: [(Op, $t); 10] = [
                        (Op::Max, if a > b { a } else { b }),
                        (Op::Min, if a < b { a } else { b }),
                        (Op::Sum, a.wrapping_add(b)),
                        (Op::Prod, a.wrapping_mul(b)),
                        (Op::Land, t(a != 0 && b != 0)),
                        (Op::Lor, t(a != 0 || b != 0)),
                        (Op::Lxor, t((a != 0) ^ (b != 0))),
                        (Op::Band, a & b),
                        (Op::Bor, a | b),
                        (Op::Bxor, a ^ b),
                    ];
                    for (op, w) in want {
                        let got = run(op, $elem, &a.to_le_bytes(), &b.to_le_bytes());
                        assert_eq!(got, w.to_le_bytes(), "{op:?} {a} {b}");
                    }
                }
            }
        }
    };
}

int_table!(table_i8, i8, Elem::I8);
int_table!(table_u8, u8, Elem::U8);
int_table!(table_i16, i16, Elem::I16);
int_table!(table_u16, u16, Elem::U16);
int_table!(table_i32, i32, Elem::I32);
int_table!(table_u32, u32, Elem::U32);
int_table!(table_i64, i64, Elem::I64);
int_table!(table_u64, u64, Elem::U64);

#[test]
fn integer_wraparound_spot_checks() {
    assert_eq!(run(Op::Sum, Elem::I8, &[127], &[1]), [0x80]); // 127 + 1 = -128
    assert_eq!(run(Op::Prod, Elem::U8, &[200], &[2]), [144]);
    let min = i32::MIN.to_le_bytes();
    assert_eq!(run(Op::Prod, Elem::I32, &min, &(-1i32).to_le_bytes()), min);
    // Signed vs unsigned compare of the same bytes.
    assert_eq!(run(Op::Max, Elem::I8, &[0xC8], &[100]), [100]);
    assert_eq!(run(Op::Max, Elem::U8, &[0xC8], &[100]), [0xC8]);
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn to_f64s(b: &[u8]) -> Vec<f64> {
    b.chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn float_ops_follow_ieee() {
    let inf = f64::INFINITY;
    let lower = f64s(&[0.1, inf, inf, 1e308, -0.0, f64::NAN]);
    let higher = f64s(&[0.2, -inf, 1.0, 1e308, 0.0, 1.0]);
    let sum = to_f64s(&run(Op::Sum, Elem::F64, &lower, &higher));
    assert_eq!(sum[0].to_bits(), (0.1f64 + 0.2).to_bits());
    assert!(sum[1].is_nan());
    assert_eq!(sum[2], inf);
    assert_eq!(sum[3], inf); // overflow rounds to infinity
    assert_eq!(sum[4].to_bits(), 0.0f64.to_bits()); // -0 + +0 = +0
    assert!(sum[5].is_nan());
    let prod = to_f64s(&run(Op::Prod, Elem::F64, &lower, &higher));
    assert_eq!(prod[1], -inf);
    assert_eq!(prod[4].to_bits(), (-0.0f64).to_bits());
    // maxNum/minNum: a NaN loses to a number.
    let max = to_f64s(&run(Op::Max, Elem::F64, &lower, &higher));
    assert_eq!(max[..4], [0.2, inf, inf, 1e308]);
    assert_eq!(max[5], 1.0);
    let min = to_f64s(&run(Op::Min, Elem::F64, &lower, &higher));
    assert_eq!(min[..4], [0.1, -inf, 1.0, 1e308]);
    assert_eq!(min[5], 1.0);
    let both_nan = run(Op::Max, Elem::F64, &f64s(&[f64::NAN]), &f64s(&[f64::NAN]));
    assert!(to_f64s(&both_nan)[0].is_nan());

    let l: Vec<u8> = [1.5f32, f32::MAX]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let h: Vec<u8> = [2.25f32, f32::MAX]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let s = run(Op::Sum, Elem::F32, &l, &h);
    assert_eq!(s[..4], 3.75f32.to_le_bytes());
    assert_eq!(s[4..], f32::INFINITY.to_le_bytes());
}

#[test]
fn bool_logical_ops_produce_zero_or_one() {
    let lower = [0u8, 0, 1, 1, 2, 0xFF];
    let higher = [0u8, 1, 0, 1, 3, 0];
    assert_eq!(
        run(Op::Land, Elem::Bool, &lower, &higher),
        [0, 0, 0, 1, 1, 0]
    );
    assert_eq!(
        run(Op::Lor, Elem::Bool, &lower, &higher),
        [0, 1, 1, 1, 1, 1]
    );
    assert_eq!(
        run(Op::Lxor, Elem::Bool, &lower, &higher),
        [0, 1, 1, 0, 0, 1]
    );
}

#[test]
fn complex_sum_and_prod() {
    // (1 + 2i)(3 + 4i) = -5 + 10i; sum 4 + 6i.
    let l = f64s(&[1.0, 2.0]);
    let h = f64s(&[3.0, 4.0]);
    assert_eq!(to_f64s(&run(Op::Sum, Elem::C64, &l, &h)), [4.0, 6.0]);
    assert_eq!(to_f64s(&run(Op::Prod, Elem::C64, &l, &h)), [-5.0, 10.0]);
    let l: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let h: Vec<u8> = [3.0f32, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let p = run(Op::Prod, Elem::C32, &l, &h);
    assert_eq!(p[..4], (-5.0f32).to_le_bytes());
    assert_eq!(p[4..], 10.0f32.to_le_bytes());
}

/// Encodes one (value, index) pair in `elem`'s C layout, padding set to 0xAB.
fn pair(elem: Elem, v: f64, i: i64) -> Vec<u8> {
    let mut b = vec![0xABu8; elem.size()];
    match elem {
        Elem::FloatInt => {
            b[..4].copy_from_slice(&(v as f32).to_le_bytes());
            b[4..8].copy_from_slice(&(i as i32).to_le_bytes());
        }
        Elem::DoubleInt => {
            b[..8].copy_from_slice(&v.to_le_bytes());
            b[8..12].copy_from_slice(&(i as i32).to_le_bytes());
        }
        Elem::LongInt => {
            b[..8].copy_from_slice(&(v as i64).to_le_bytes());
            b[8..12].copy_from_slice(&(i as i32).to_le_bytes());
        }
        Elem::TwoInt => {
            b[..4].copy_from_slice(&(v as i32).to_le_bytes());
            b[4..8].copy_from_slice(&(i as i32).to_le_bytes());
        }
        Elem::ShortInt => {
            b[..2].copy_from_slice(&(v as i16).to_le_bytes());
            b[4..8].copy_from_slice(&(i as i32).to_le_bytes());
        }
        Elem::TwoF32 => {
            b[..4].copy_from_slice(&(v as f32).to_le_bytes());
            b[4..8].copy_from_slice(&(i as f32).to_le_bytes());
        }
        Elem::TwoF64 => {
            b[..8].copy_from_slice(&v.to_le_bytes());
            b[8..16].copy_from_slice(&(i as f64).to_le_bytes());
        }
        _ => unreachable!(),
    }
    b
}

#[test]
fn maxloc_minloc_on_every_pair_kind() {
    let kinds = [
        Elem::FloatInt,
        Elem::DoubleInt,
        Elem::LongInt,
        Elem::TwoInt,
        Elem::ShortInt,
        Elem::TwoF32,
        Elem::TwoF64,
    ];
    // (lower, higher, maxloc, minloc)
    type P = (f64, i64);
    let cases: [(P, P, P, P); 6] = [
        ((9.0, 1), (5.0, 0), (9.0, 1), (5.0, 0)),
        ((5.0, 0), (9.0, 1), (9.0, 1), (5.0, 0)),
        ((5.0, 7), (5.0, 3), (5.0, 3), (5.0, 3)), // tie: lower index wins
        ((5.0, 2), (5.0, 9), (5.0, 2), (5.0, 2)),
        ((-3.0, 4), (-7.0, 4), (-3.0, 4), (-7.0, 4)),
        ((0.0, -1), (0.0, -2), (0.0, -2), (0.0, -2)),
    ];
    for elem in kinds {
        for (l, h, mx, mn) in cases {
            let lb = pair(elem, l.0, l.1);
            let hb = pair(elem, h.0, h.1);
            assert_eq!(
                run(Op::Maxloc, elem, &lb, &hb),
                pair(elem, mx.0, mx.1),
                "{elem:?} max {l:?} {h:?}"
            );
            assert_eq!(
                run(Op::Minloc, elem, &lb, &hb),
                pair(elem, mn.0, mn.1),
                "{elem:?} min {l:?} {h:?}"
            );
        }
    }
}

#[test]
fn unaligned_buffers() {
    let vals: Vec<u64> = (0..100).map(|i| i * 0x0101_0101_0101).collect();
    let mut lower = vec![0u8; 801];
    let mut higher = vec![0u8; 803];
    for (i, v) in vals.iter().enumerate() {
        lower[1 + 8 * i..9 + 8 * i].copy_from_slice(&v.to_le_bytes());
        higher[3 + 8 * i..11 + 8 * i].copy_from_slice(&(v ^ 7).to_le_bytes());
    }
    combine(Op::Sum, Elem::U64, &lower[1..801], &mut higher[3..803]).unwrap();
    for (i, v) in vals.iter().enumerate() {
        let got = u64::from_le_bytes(higher[3 + 8 * i..11 + 8 * i].try_into().unwrap());
        assert_eq!(got, v.wrapping_add(v ^ 7));
    }
}

#[test]
fn large_buffer_sum() {
    let n: i32 = 1 << 20;
    let lower: Vec<u8> = (0..n).flat_map(|i| i.to_le_bytes()).collect();
    let mut higher: Vec<u8> = (0..n).flat_map(|i| (i * 3).to_le_bytes()).collect();
    combine(Op::Sum, Elem::I32, &lower, &mut higher).unwrap();
    for (i, c) in higher.chunks_exact(4).enumerate() {
        assert_eq!(i32::from_le_bytes(c.try_into().unwrap()), 4 * i as i32);
    }
}

fn any_op() -> impl Strategy<Value = Op> {
    (0..Op::ALL.len()).prop_map(|i| Op::ALL[i])
}
fn any_elem() -> impl Strategy<Value = Elem> {
    (0..Elem::ALL.len()).prop_map(|i| Elem::ALL[i])
}

proptest! {
    #[test]
    fn combine_never_panics(op in any_op(), elem in any_elem(),
                            lower in proptest::collection::vec(any::<u8>(), 0..80),
                            higher in proptest::collection::vec(any::<u8>(), 0..80)) {
        let mut h = higher.clone();
        let r = combine(op, elem, &lower, &mut h);
        prop_assert_eq!(h.len(), higher.len());
        if r.is_err() {
            prop_assert_eq!(h, higher);
        }
    }

    #[test]
    fn same_length_buffers_of_whole_elements_succeed_when_defined(
            op in any_op(), elem in any_elem(), n in 0usize..10, seed in any::<u64>()) {
        let len = n * elem.size();
        let lower: Vec<u8> = (0..len).map(|i| (seed >> (i % 57)) as u8).collect();
        let mut h: Vec<u8> = lower.iter().map(|b| b.rotate_left(3)).collect();
        prop_assert_eq!(combine(op, elem, &lower, &mut h).is_ok(), allowed(op, elem));
    }

    #[test]
    fn integer_sum_is_commutative(a in proptest::collection::vec(any::<u8>(), 64),
                                  b in proptest::collection::vec(any::<u8>(), 64)) {
        for elem in [Elem::I8, Elem::U16, Elem::I32, Elem::U64] {
            let mut ab = b.clone();
            combine(Op::Sum, elem, &a, &mut ab).unwrap();
            let mut ba = a.clone();
            combine(Op::Sum, elem, &b, &mut ba).unwrap();
            prop_assert_eq!(ab, ba);
        }
    }
}
