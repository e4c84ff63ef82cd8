//! Property tests: random nested datatypes, checked against the naive
//! reference in `common`.

mod common;

use common::{buffer_for, naive_external32, naive_pack, naive_unpack, typemap};
use lanai_datatype::{
    pack, pack_external, pack_partial, pack_size, unpack, unpack_external, unpack_partial,
    Datatype, Named, Order, Primitive,
};
use proptest::prelude::*;

fn leaf(plain_only: bool) -> BoxedStrategy<Datatype> {
    let mut kinds: Vec<Named> = vec![
        Primitive::Int8.into(),
        Primitive::Int16.into(),
        Primitive::Int32.into(),
        Primitive::Float64.into(),
        Primitive::ComplexFloat32.into(),
        Named::ShortInt,
        Named::DoubleInt,
        Named::TwoInt,
    ];
    if !plain_only {
        kinds.push(Primitive::LongDouble.into());
        kinds.push(Named::LongDoubleInt);
    }
    proptest::sample::select(kinds)
        .prop_map(Datatype::named)
        .boxed()
}

fn nested(plain_only: bool) -> impl Strategy<Value = Datatype> {
    leaf(plain_only).prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            (0usize..4, inner.clone()).prop_map(|(c, t)| Datatype::contiguous(c, &t).unwrap()),
            (0usize..4, 0usize..3, -3i64..4, inner.clone())
                .prop_map(|(c, b, s, t)| Datatype::vector(c, b, s, &t).unwrap()),
            (0usize..4, 0usize..3, -40i64..40, inner.clone())
                .prop_map(|(c, b, s, t)| Datatype::hvector(c, b, s, &t).unwrap()),
            (
                prop::collection::vec((0usize..3, -4i64..5), 0..4),
                inner.clone()
            )
                .prop_map(|(bd, t)| {
                    let (b, d): (Vec<_>, Vec<_>) = bd.into_iter().unzip();
                    Datatype::indexed(&b, &d, &t).unwrap()
                }),
            (
                prop::collection::vec((0usize..3, -30i64..30), 0..4),
                inner.clone()
            )
                .prop_map(|(bd, t)| {
                    let (b, d): (Vec<_>, Vec<_>) = bd.into_iter().unzip();
                    Datatype::hindexed(&b, &d, &t).unwrap()
                }),
            (
                0usize..3,
                prop::collection::vec(-4i64..5, 0..4),
                inner.clone()
            )
                .prop_map(|(b, d, t)| Datatype::indexed_block(b, &d, &t).unwrap()),
            (
                0usize..3,
                prop::collection::vec(-30i64..30, 0..4),
                inner.clone()
            )
                .prop_map(|(b, d, t)| Datatype::hindexed_block(b, &d, &t).unwrap()),
            prop::collection::vec((0usize..3, -30i64..30, inner.clone()), 1..4).prop_map(|v| {
                let b: Vec<_> = v.iter().map(|x| x.0).collect();
                let d: Vec<_> = v.iter().map(|x| x.1).collect();
                let t: Vec<_> = v.iter().map(|x| x.2.clone()).collect();
                Datatype::create_struct(&b, &d, &t).unwrap()
            }),
            (-16i64..16, -8i64..48, inner.clone())
                .prop_map(|(lb, ext, t)| Datatype::resized(&t, lb, ext).unwrap()),
            (1usize..4, 1usize..4, any::<bool>(), inner.clone()).prop_map(|(a, b, c, t)| {
                let order = if c { Order::C } else { Order::Fortran };
                Datatype::subarray(&[a + 1, b + 2], &[a, b], &[1, 1], order, &t).unwrap()
            }),
            inner.prop_map(|t| Datatype::dup(&t)),
        ]
    })
}

fn filled(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn pack_matches_reference_and_unpack_inverts(dt in nested(false), count in 0usize..4, seed: u8) {
        let tm = typemap(&dt);
        let expected_size: u64 = tm.iter().map(|(_, p)| p.size()).sum();
        prop_assert_eq!(dt.size(), expected_size);
        prop_assert_eq!(dt.elements(), tm.len() as u64);
        prop_assert_eq!(pack_size(&dt, count as u64).unwrap(), expected_size * count as u64);
        if let (Some(lo), Some(hi)) = (
            tm.iter().map(|(o, _)| *o).min(),
            tm.iter().map(|(o, p)| o + p.size() as i64).max(),
        ) {
            prop_assert_eq!(dt.true_lb(), lo);
            prop_assert_eq!(dt.true_ub(), hi);
        }

        let (len, origin) = buffer_for(&dt, count);
        let src = filled(len, seed);
        let want = naive_pack(&dt, count, &src, origin).unwrap();
        let mut packed = vec![0u8; want.len() + 3];
        let mut pos = 3;
        pack(&dt, count as u64, &src, origin, &mut packed, &mut pos).unwrap();
        prop_assert_eq!(pos, want.len() + 3);
        prop_assert_eq!(&packed[3..], &want[..]);

        // Segments, concatenated, are the packed stream.
        let mut via_segments = Vec::new();
        for s in dt.segments(count as u64, 0, u64::MAX).unwrap() {
            let at = (origin as i64 + s.offset) as usize;
            via_segments.extend_from_slice(&src[at..at + s.len as usize]);
        }
        prop_assert_eq!(&via_segments, &want);

        let mut got = vec![0u8; len];
        let mut expect = vec![0u8; len];
        let mut pos = 3;
        unpack(&dt, count as u64, &packed, &mut pos, &mut got, origin).unwrap();
        naive_unpack(&dt, count, &want, &mut expect, origin);
        prop_assert_eq!(got, expect);
    }

    #[test]
    fn partial_pack_and_unpack_equal_one_shot(dt in nested(false), count in 1usize..4, chunk in 1usize..23, seed: u8) {
        let (len, origin) = buffer_for(&dt, count);
        let src = filled(len, seed);
        let want = naive_pack(&dt, count, &src, origin).unwrap();
        let mut pieces = Vec::new();
        let mut at = 0u64;
        loop {
            let mut buf = vec![0u8; chunk];
            let n = pack_partial(&dt, count as u64, &src, origin, at, &mut buf).unwrap();
            if n == 0 { break; }
            pieces.extend_from_slice(&buf[..n]);
            at += n as u64;
        }
        prop_assert_eq!(&pieces, &want);

        let mut one = vec![0u8; len];
        let mut pos = 0;
        unpack(&dt, count as u64, &want, &mut pos, &mut one, origin).unwrap();
        let mut chunked = vec![0u8; len];
        let mut at = 0usize;
        while at < want.len() {
            let end = (at + chunk).min(want.len());
            let n = unpack_partial(&dt, count as u64, &want[at..end], at as u64, &mut chunked, origin).unwrap();
            prop_assert_eq!(n, end - at);
            at = end;
        }
        prop_assert_eq!(one, chunked);
    }

    #[test]
    fn elements_in_bytes_counts_whole_elements(dt in nested(false), count in 1usize..3, cut in 0u64..200) {
        let tm = typemap(&dt);
        let total = dt.size() * count as u64;
        let bytes = if total == 0 { 0 } else { cut % (total + 1) };
        let mut acc = 0u64;
        let mut n = 0u64;
        let mut exact = bytes == 0;
        'outer: for _ in 0..count {
            for (_, p) in &tm {
                if acc >= bytes { break 'outer; }
                acc += p.size();
                n += 1;
                if acc == bytes { exact = true; }
            }
        }
        let want = if exact { Some(n) } else { None };
        prop_assert_eq!(dt.elements_in_bytes(bytes), want);
    }

    #[test]
    fn external32_matches_byte_swapped_reference_and_round_trips(dt in nested(true), count in 0usize..3, seed: u8) {
        let (len, origin) = buffer_for(&dt, count);
        let src = filled(len, seed);
        let want = naive_external32(&dt, count, &src, origin);
        prop_assert_eq!(lanai_datatype::pack_external_size(&dt, count as u64).unwrap(), want.len() as u64);
        let mut out = vec![0u8; want.len()];
        let mut pos = 0;
        pack_external(&dt, count as u64, &src, origin, &mut out, &mut pos).unwrap();
        prop_assert_eq!(&out, &want);

        let mut back = vec![0u8; len];
        let mut pos = 0;
        unpack_external(&dt, count as u64, &out, &mut pos, &mut back, origin).unwrap();
        let mut expect = vec![0u8; len];
        let native = naive_pack(&dt, count, &src, origin).unwrap();
        naive_unpack(&dt, count, &native, &mut expect, origin);
        prop_assert_eq!(back, expect);
    }

    #[test]
    fn bad_buffers_are_errors_not_panics(dt in nested(false), count in 1usize..3, shrink in 1usize..8, pos in 0usize..64) {
        let (len, origin) = buffer_for(&dt, count);
        if dt.size() > 0 {
            let src = vec![0u8; len.saturating_sub(shrink)];
            let mut dst = vec![0u8; 4096];
            let mut p = 0;
            prop_assert!(pack(&dt, count as u64, &src, origin, &mut dst, &mut p).is_err());
            let total = pack_size(&dt, count as u64).unwrap() as usize;
            let full = vec![0u8; len];
            let mut small = vec![0u8; total.saturating_sub(1)];
            let mut p = 0;
            prop_assert!(pack(&dt, count as u64, &full, origin, &mut small, &mut p).is_err());
            let mut buf = vec![0u8; len];
            let mut p = pos;
            let r = unpack(&dt, count as u64, &small, &mut p, &mut buf, origin);
            prop_assert!(r.is_err());
        }
    }
}
