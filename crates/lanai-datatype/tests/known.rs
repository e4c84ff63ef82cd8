//! Known answers: the MPI standard's examples, and extents/typemaps that
//! MPICH 4 (Debian's libmpich) reports for the same constructors.

mod common;

use lanai_datatype::{
    pack, pack_external, pack_external_size, unpack_external, AbiCodes, Combiner, Datatype,
    DatatypeError, Distribution, Named, Order, Primitive, Run,
};

fn p(k: Primitive) -> Datatype {
    Datatype::primitive(k)
}

fn st(parts: &[(usize, i64, &Datatype)]) -> Datatype {
    let b: Vec<usize> = parts.iter().map(|x| x.0).collect();
    let d: Vec<i64> = parts.iter().map(|x| x.1).collect();
    let t: Vec<Datatype> = parts.iter().map(|x| x.2.clone()).collect();
    Datatype::create_struct(&b, &d, &t).unwrap()
}

/// (size, lb, extent, true_lb, true_extent)
type Shape = (u64, i64, i64, i64, i64);

fn shape(t: &Datatype) -> Shape {
    (t.size(), t.lb(), t.extent(), t.true_lb(), t.true_extent())
}

fn offsets(t: &Datatype) -> Vec<i64> {
    common::typemap(t).iter().map(|x| x.0).collect()
}

#[test]
fn pair_types_match_mpich() {
    let cases = [
        (Named::FloatInt, (8, 0, 8, 0, 8)),
        (Named::DoubleInt, (12, 0, 16, 0, 12)),
        (Named::LongInt, (12, 0, 16, 0, 12)),
        (Named::TwoInt, (8, 0, 8, 0, 8)),
        (Named::ShortInt, (6, 0, 8, 0, 8)),
        (Named::LongDoubleInt, (20, 0, 32, 0, 20)),
    ];
    for (n, want) in cases {
        let t = Datatype::named(n);
        assert_eq!(shape(&t), want, "{n:?}");
        assert_eq!(t.elements(), 2);
    }
    assert!(!Datatype::named(Named::DoubleInt).is_contiguous());
    assert!(Datatype::named(Named::TwoInt).is_contiguous());
}

#[test]
fn struct_padding_matches_mpich() {
    use Primitive::*;
    let (c, i, d, ld) = (p(Int8), p(Int32), p(Float64), p(LongDouble));
    let hvec = Datatype::hvector(2, 1, 5, &i).unwrap();
    let rs_int_0_4 = Datatype::resized(&i, 0, 4).unwrap();
    let rs_int_m4_12 = Datatype::resized(&i, -4, 12).unwrap();
    let rs_dbl_0_6 = Datatype::resized(&d, 0, 6).unwrap();
    let cases: Vec<(&str, Datatype, Shape)> = vec![
        (
            "char,double@8",
            st(&[(1, 0, &c), (1, 8, &d)]),
            (9, 0, 16, 0, 16),
        ),
        (
            "double,char@8",
            st(&[(1, 0, &d), (1, 8, &c)]),
            (9, 0, 16, 0, 9),
        ),
        (
            "char,ld@16",
            st(&[(1, 0, &c), (1, 16, &ld)]),
            (17, 0, 32, 0, 32),
        ),
        ("int,char@4", st(&[(1, 0, &i), (1, 4, &c)]), (5, 0, 8, 0, 5)),
        (
            "char,double x0",
            st(&[(1, 0, &c), (0, 8, &d)]),
            (1, 0, 1, 0, 1),
        ),
        ("hvec alone", st(&[(1, 0, &hvec)]), (8, 0, 9, 0, 9)),
        (
            "hvec,char@9",
            st(&[(1, 0, &hvec), (1, 9, &c)]),
            (9, 0, 12, 0, 10),
        ),
        (
            "int@0,int@5",
            st(&[(1, 0, &i), (1, 5, &i)]),
            (8, 0, 9, 0, 9),
        ),
        (
            "hvec, double x0",
            st(&[(1, 0, &hvec), (0, 100, &d)]),
            (8, 0, 12, 0, 9),
        ),
        (
            "rs(int,0,4),double@8",
            st(&[(1, 0, &rs_int_0_4), (1, 8, &d)]),
            (12, 0, 16, 0, 16),
        ),
        (
            "rs(int,-4,12),char@20",
            st(&[(1, 0, &rs_int_m4_12), (1, 20, &c)]),
            (5, -4, 28, 0, 21),
        ),
        (
            "char,rs(dbl,0,6)@8",
            st(&[(1, 0, &c), (1, 8, &rs_dbl_0_6)]),
            (9, 0, 16, 0, 16),
        ),
        (
            "rs(dbl,0,5),char@5",
            st(&[(1, 0, &Datatype::resized(&d, 0, 5).unwrap()), (1, 5, &c)]),
            (9, 0, 8, 0, 8),
        ),
        (
            "char,dint@1",
            st(&[(1, 0, &c), (1, 1, &Datatype::named(Named::DoubleInt))]),
            (13, 0, 24, 0, 13),
        ),
        (
            "char,cplx ld@1",
            st(&[(1, 0, &c), (1, 1, &p(ComplexLongDouble))]),
            (33, 0, 48, 0, 33),
        ),
        (
            "char@-3,dbl@3",
            st(&[(1, -3, &c), (1, 3, &d)]),
            (9, -3, 16, -3, 14),
        ),
    ];
    for (name, t, want) in cases {
        assert_eq!(shape(&t), want, "{name}");
    }
    assert_eq!(
        shape(&Datatype::contiguous(2, &hvec).unwrap()),
        (16, 0, 18, 0, 18)
    );
}

#[test]
fn negative_strides_and_extents_match_mpich() {
    let i = p(Primitive::Int32);
    let v = Datatype::vector(3, 2, -4, &i).unwrap();
    assert_eq!(shape(&v), (24, -32, 40, -32, 40));
    let r = Datatype::resized(&i, 2, -8).unwrap();
    assert_eq!(shape(&r), (4, 2, -8, 0, 4));
    assert_eq!(
        shape(&Datatype::contiguous(3, &r).unwrap()),
        (12, -14, 8, -16, 20)
    );
    let si = Datatype::named(Named::ShortInt);
    let ix = Datatype::indexed(&[2, 0, 1], &[1, 0, -3], &si).unwrap();
    assert_eq!(shape(&ix), (18, -24, 48, -24, 48));
}

/// MPI standard, derived datatype examples built on
/// oldtype = {(double, 0), (char, 8)} with extent 16.
#[test]
fn standard_examples_typemaps() {
    let d = p(Primitive::Float64);
    let c = p(Primitive::Int8);
    let old = st(&[(1, 0, &d), (1, 8, &c)]);
    assert_eq!(old.extent(), 16);

    let t = Datatype::contiguous(3, &old).unwrap();
    assert_eq!(offsets(&t), vec![0, 8, 16, 24, 32, 40]);

    let t = Datatype::vector(2, 3, 4, &old).unwrap();
    assert_eq!(
        offsets(&t),
        vec![0, 8, 16, 24, 32, 40, 64, 72, 80, 88, 96, 104]
    );
    assert_eq!(t.extent(), 112);

    let t = Datatype::vector(3, 1, -2, &old).unwrap();
    assert_eq!(offsets(&t), vec![0, 8, -32, -24, -64, -56]);

    let t = Datatype::hvector(2, 3, 4, &old).unwrap();
    assert_eq!(
        offsets(&t),
        vec![0, 8, 16, 24, 32, 40, 4, 12, 20, 28, 36, 44]
    );

    let t = Datatype::indexed(&[3, 1], &[4, 0], &old).unwrap();
    assert_eq!(offsets(&t), vec![64, 72, 80, 88, 96, 104, 0, 8]);
    assert_eq!((t.lb(), t.extent()), (0, 112));

    let t = Datatype::hindexed(&[3, 1], &[4, 0], &old).unwrap();
    assert_eq!(offsets(&t), vec![4, 12, 20, 28, 36, 44, 0, 8]);

    let f = p(Primitive::Float32);
    let t = st(&[(2, 0, &f), (1, 16, &old), (3, 26, &c)]);
    assert_eq!(offsets(&t), vec![0, 4, 16, 24, 26, 27, 28]);
    assert_eq!(t.size(), 4 + 4 + 9 + 3);
    assert_eq!(t.extent(), 32);
    // The engine's flat form agrees with the reference type map.
    let segs: Vec<(i64, u64)> = t
        .segments(1, 0, u64::MAX)
        .unwrap()
        .map(|s| (s.offset, s.len))
        .collect();
    assert_eq!(segs, vec![(0, 8), (16, 9), (26, 3)]);
}

#[test]
fn subarray_matches_mpich() {
    let d = p(Primitive::Float64);
    let t = Datatype::subarray(&[10, 10], &[3, 4], &[2, 5], Order::C, &d).unwrap();
    assert_eq!(shape(&t), (96, 0, 800, 200, 192));
    let segs: Vec<(i64, u64)> = t
        .segments(1, 0, u64::MAX)
        .unwrap()
        .map(|s| (s.offset, s.len))
        .collect();
    assert_eq!(segs, vec![(200, 32), (280, 32), (360, 32)]);
    let f = Datatype::subarray(&[10, 10], &[3, 4], &[2, 5], Order::Fortran, &d).unwrap();
    let segs: Vec<(i64, u64)> = f
        .segments(1, 0, u64::MAX)
        .unwrap()
        .map(|s| (s.offset, s.len))
        .collect();
    assert_eq!(segs, vec![(416, 24), (496, 24), (576, 24), (656, 24)]);
    assert!(matches!(
        Datatype::subarray(&[4], &[3], &[2], Order::C, &d),
        Err(DatatypeError::InvalidSubarray { dim: 0, .. })
    ));
}

fn darray_ints(t: &Datatype) -> Vec<i32> {
    let src: Vec<u8> = (0..64i32).flat_map(|v| v.to_ne_bytes()).collect();
    let mut out = vec![0u8; t.size() as usize];
    let mut pos = 0;
    pack(t, 1, &src, 0, &mut out, &mut pos).unwrap();
    out.chunks(4)
        .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn darray_matches_mpich() {
    let int = p(Primitive::Int32);
    let dist2 = [Distribution::Cyclic(Some(2)), Distribution::Block(None)];
    let want_c: [&[i32]; 4] = [
        &[0, 1, 2, 5, 6, 7, 20, 21, 22, 25, 26, 27],
        &[3, 4, 8, 9, 23, 24, 28, 29],
        &[10, 11, 12, 15, 16, 17, 30, 31, 32],
        &[13, 14, 18, 19, 33, 34],
    ];
    let want_f: [&[i32]; 4] = [
        &[0, 1, 4, 5, 7, 8, 11, 12, 14, 15, 18, 19],
        &[21, 22, 25, 26, 28, 29, 32, 33],
        &[2, 3, 6, 9, 10, 13, 16, 17, 20],
        &[23, 24, 27, 30, 31, 34],
    ];
    for r in 0..4 {
        let c = Datatype::darray(4, r, &[7, 5], &dist2, &[2, 2], Order::C, &int).unwrap();
        assert_eq!((c.lb(), c.extent()), (0, 140));
        assert_eq!(darray_ints(&c), want_c[r], "C rank {r}");
        let f = Datatype::darray(4, r, &[7, 5], &dist2, &[2, 2], Order::Fortran, &int).unwrap();
        assert_eq!(darray_ints(&f), want_f[r], "Fortran rank {r}");
    }
    let dist3 = [
        Distribution::None,
        Distribution::Cyclic(Some(1)),
        Distribution::Block(Some(3)),
    ];
    let want3_c: [&[i32]; 4] = [
        &[
            0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42, 50, 51, 52,
        ],
        &[3, 4, 13, 14, 23, 24, 33, 34, 43, 44, 53, 54],
        &[
            5, 6, 7, 15, 16, 17, 25, 26, 27, 35, 36, 37, 45, 46, 47, 55, 56, 57,
        ],
        &[8, 9, 18, 19, 28, 29, 38, 39, 48, 49, 58, 59],
    ];
    let want3_f: [&[i32]; 4] = [
        &[
            0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20, 24, 25, 26, 30, 31, 32,
        ],
        &[36, 37, 38, 42, 43, 44, 48, 49, 50, 54, 55, 56],
        &[
            3, 4, 5, 9, 10, 11, 15, 16, 17, 21, 22, 23, 27, 28, 29, 33, 34, 35,
        ],
        &[39, 40, 41, 45, 46, 47, 51, 52, 53, 57, 58, 59],
    ];
    for r in 0..4 {
        let c = Datatype::darray(4, r, &[3, 4, 5], &dist3, &[1, 2, 2], Order::C, &int).unwrap();
        assert_eq!(c.extent(), 240);
        assert_eq!(darray_ints(&c), want3_c[r], "3d C rank {r}");
        assert_eq!(darray_ints(&c).len(), common::typemap(&c).len());
        let f =
            Datatype::darray(4, r, &[3, 4, 5], &dist3, &[1, 2, 2], Order::Fortran, &int).unwrap();
        assert_eq!(darray_ints(&f), want3_f[r], "3d F rank {r}");
    }
    let want1: [&[i32]; 4] = [&[0, 1, 2], &[3, 4, 5], &[6, 7, 8], &[9]];
    for (r, want) in want1.iter().enumerate() {
        let t = Datatype::darray(
            4,
            r,
            &[10],
            &[Distribution::Cyclic(Some(3))],
            &[4],
            Order::C,
            &int,
        )
        .unwrap();
        assert_eq!((t.lb(), t.extent()), (0, 40));
        assert_eq!(darray_ints(&t), *want);
    }
    assert!(Datatype::darray(
        4,
        0,
        &[5],
        &[Distribution::Block(Some(1))],
        &[4],
        Order::C,
        &int
    )
    .is_err());
    assert!(Datatype::darray(
        3,
        0,
        &[5],
        &[Distribution::Block(None)],
        &[4],
        Order::C,
        &int
    )
    .is_err());
}

#[test]
fn regular_types_flatten_compactly() {
    let int = p(Primitive::Int32);
    let v = Datatype::vector(1_000_000, 1, 2, &int).unwrap();
    assert_eq!(
        v.flat().runs(),
        &[Run::Block {
            offset: 0,
            len: 4,
            stride: 8,
            count: 1_000_000
        }]
    );
    let c = Datatype::contiguous(1_000_000, &int).unwrap();
    assert_eq!(c.flat().runs().len(), 1);
    assert!(c.is_contiguous());
    let pair = Datatype::named(Named::DoubleInt);
    let vp = Datatype::vector(1_000_000, 1, 3, &pair).unwrap();
    assert_eq!(vp.flat().runs().len(), 1);
    let grid = Datatype::vector(1000, 1, 2, &Datatype::vector(1000, 1, 2, &int).unwrap()).unwrap();
    assert!(grid.flat().runs().len() <= 2);
    // Resuming deep inside is cheap and exact: byte 4 * 777_777 is the
    // start of element 777_777, at 8 * 777_777 in the user buffer.
    let seg = v.segments(1, 4 * 777_777 + 1, 10).unwrap().next().unwrap();
    assert_eq!((seg.offset, seg.len), (8 * 777_777 + 1, 3));
}

#[test]
fn envelope_and_contents() {
    let int = p(Primitive::Int32);
    let codes = AbiCodes {
        order_c: 56,
        order_fortran: 57,
        distribute_block: 121,
        distribute_cyclic: 122,
        distribute_none: 123,
        distribute_dflt_darg: -49767,
    };
    let ix = Datatype::indexed(&[2, 1], &[0, 5], &int).unwrap();
    let e = ix.envelope();
    assert_eq!(
        (e.combiner, e.num_integers, e.num_addresses, e.num_datatypes),
        (Combiner::Indexed, 5, 0, 1)
    );
    assert_eq!(ix.contents().integers(&codes), vec![2, 2, 1, 0, 5]);
    let s = st(&[(1, 0, &int), (2, 8, &ix)]);
    let e = s.envelope();
    assert_eq!(
        (e.combiner, e.num_integers, e.num_addresses, e.num_datatypes),
        (Combiner::Struct, 3, 2, 2)
    );
    assert_eq!(s.contents().addresses(), vec![0, 8]);
    assert!(s.contents().datatypes()[1].same_handle(&ix));
    let d = Datatype::darray(
        4,
        1,
        &[7, 5],
        &[Distribution::Cyclic(Some(2)), Distribution::Block(None)],
        &[2, 2],
        Order::C,
        &int,
    )
    .unwrap();
    let e = d.envelope();
    assert_eq!((e.combiner, e.num_integers), (Combiner::Darray, 12));
    assert_eq!(
        d.contents().integers(&codes),
        vec![4, 1, 2, 7, 5, 122, 121, 2, -49767, 2, 2, 56]
    );
    let r = Datatype::resized(&int, -4, 16).unwrap();
    assert_eq!(r.envelope().combiner, Combiner::Resized);
    assert_eq!(r.contents().addresses(), vec![-4, 16]);
    let dup = Datatype::dup(&ix);
    assert_eq!(dup.envelope().combiner, Combiner::Dup);
    assert_eq!((dup.size(), dup.extent()), (ix.size(), ix.extent()));
    assert_eq!(int.envelope().num_datatypes, 0);
}

#[test]
fn get_elements_counts_basic_elements() {
    let t = st(&[
        (1, 0, &p(Primitive::Float64)),
        (1, 8, &Datatype::named(Named::ShortInt)),
    ]);
    assert_eq!(t.elements(), 3);
    assert_eq!(t.elements_in_bytes(0), Some(0));
    assert_eq!(t.elements_in_bytes(8), Some(1));
    assert_eq!(t.elements_in_bytes(10), Some(2));
    assert_eq!(t.elements_in_bytes(12), None);
    assert_eq!(t.elements_in_bytes(14 + 10), Some(5));
}

fn ext32(t: &Datatype, native: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; pack_external_size(t, 1).unwrap() as usize];
    let mut pos = 0;
    pack_external(t, 1, native, 0, &mut out, &mut pos).unwrap();
    assert_eq!(pos, out.len());
    out
}

#[test]
fn external32_known_encodings() {
    use Primitive::*;
    assert_eq!(
        ext32(&p(Int32), &0x0102_0304i32.to_ne_bytes()),
        [1, 2, 3, 4]
    );
    assert_eq!(
        ext32(&p(Float64), &1.0f64.to_ne_bytes()),
        [0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        ext32(&p(Long), &(-2i64).to_ne_bytes()),
        [0xff, 0xff, 0xff, 0xfe]
    );
    assert_eq!(ext32(&p(Wchar), &0x20acu32.to_ne_bytes()), [0x20, 0xac]);
    assert_eq!(ext32(&p(Bool), &[1]), [1]);
    let sizes: Vec<(Primitive, u64)> = vec![
        (Long, 4),
        (UnsignedLong, 4),
        (Wchar, 2),
        (LongDouble, 16),
        (Bool, 1),
        (Int64, 8),
        (ComplexLongDouble, 32),
    ];
    for (k, s) in sizes {
        assert_eq!(pack_external_size(&p(k), 1).unwrap(), s, "{k:?}");
    }
    let mut big = vec![0u8; 4];
    let mut pos = 0;
    assert_eq!(
        pack_external(
            &p(Long),
            1,
            &(1i64 << 40).to_ne_bytes(),
            0,
            &mut big,
            &mut pos
        ),
        Err(DatatypeError::ConversionOverflow { what: "long" })
    );
    // Pairs are their members back to back: double 1.5 then int 7.
    let mut dint = 1.5f64.to_ne_bytes().to_vec();
    dint.extend_from_slice(&7i32.to_ne_bytes());
    dint.extend_from_slice(&[0; 4]);
    assert_eq!(
        ext32(&Datatype::named(Named::DoubleInt), &dint),
        [0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]
    );
}

/// x87 `long double` values as their 16 native bytes.
#[cfg(target_arch = "x86_64")]
fn x87(sign_exp: u16, mantissa: u64) -> Vec<u8> {
    let mut v = mantissa.to_le_bytes().to_vec();
    v.extend_from_slice(&sign_exp.to_le_bytes());
    v.extend_from_slice(&[0; 6]);
    v
}

#[cfg(target_arch = "x86_64")]
#[test]
fn external32_long_double_is_binary128_like_mpich() {
    let ld = p(Primitive::LongDouble);
    // 1.0 and -3.5, as MPICH's MPI_Pack_external writes them.
    let one = x87(0x3fff, 1 << 63);
    let mut want = vec![0u8; 16];
    want[0] = 0x3f;
    want[1] = 0xff;
    assert_eq!(ext32(&ld, &one), want);
    let m35 = x87(0xc000, 0xe000_0000_0000_0000);
    let got = ext32(&ld, &m35);
    assert_eq!(&got[..3], &[0xc0, 0x00, 0xc0]);
    assert!(got[3..].iter().all(|&b| b == 0));
    for v in [
        one,
        m35,
        x87(0x7fff, 1 << 63),
        x87(0, 0x1234),
        x87(0x4abc, 0x8123_4567_89ab_cdef),
    ] {
        let packed = ext32(&ld, &v);
        let mut back = vec![0u8; 16];
        let mut pos = 0;
        unpack_external(&ld, 1, &packed, &mut pos, &mut back, 0).unwrap();
        assert_eq!(back, v);
    }
}
