//! The collective machines under the simulator: random, adversarial and
//! exhaustive delivery orders; results checked against independent values.

use lanai_coll::sim::{
    explore_all, run, FurthestBehindLast, LateJoin, Outcome, RandomOrder, Scheduler, SimError,
    XorShift,
};
use lanai_coll::{
    allreduce, barrier, AllreduceAlgo, BarrierAlgo, Bcast, CollError, Collective, Combine, Elem,
    FlatReduce, KaryTree, Op, OpError, Predefined, RecursiveDoubling, Reduce, ReduceBcast,
    ReduceTree,
};

type Boxed = Box<dyn Collective>;

/// Sizes every machine is run at under the randomised schedules.
const SIZES: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 32, 33, 64];

/// Seeds per size; fewer for large sizes to keep the suite quick.
fn seeds(size: u32) -> u64 {
    if size >= 31 {
        4
    } else {
        24
    }
}

/// Every kind of schedule for one seed: random, furthest-behind-last, and
/// late joiners (rank 0, the last rank, a random rank, or a random half).
fn schedules(size: u32, seed: u64) -> Vec<Box<dyn Scheduler>> {
    let mut rng = XorShift::new(seed ^ 0xABCD);
    let random_rank = rng.below(size as usize) as u32;
    let half: Vec<u32> = (0..size).filter(|_| rng.below(2) == 0).collect();
    vec![
        Box::new(RandomOrder::new(seed)),
        Box::new(FurthestBehindLast::new(seed)),
        Box::new(LateJoin {
            late: vec![0],
            inner: RandomOrder::new(seed),
        }),
        Box::new(LateJoin {
            late: vec![size - 1],
            inner: FurthestBehindLast::new(seed),
        }),
        Box::new(LateJoin {
            late: vec![random_rank],
            inner: RandomOrder::new(seed + 1),
        }),
        Box::new(LateJoin {
            late: half,
            inner: RandomOrder::new(seed + 2),
        }),
    ]
}

/// Runs `make` under every schedule for every seed and hands each outcome to `check`.
fn for_all_schedules(
    size: u32,
    make: &mut dyn FnMut(u32) -> Result<Boxed, CollError>,
    check: &mut dyn FnMut(&Outcome),
) {
    for seed in 0..seeds(size) {
        for mut s in schedules(size, seed) {
            let out = run(size, make, s.as_mut())
                .unwrap_or_else(|e| panic!("size {size} seed {seed}: {e}"));
            check(&out);
        }
    }
}

// ---------------------------------------------------------------- data

/// Rank `r`'s i64 vector of `n` elements.
fn ints(r: u32, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| {
            (r as i64 + 1) * 1_000_003 + i as i64 * 7919 - if r % 3 == 0 { i64::MAX / 2 } else { 0 }
        })
        .collect()
}
fn enc_i64(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Expected wrapping sum over ranks, computed directly.
fn ints_sum(size: u32, n: usize) -> Vec<u8> {
    let mut acc = vec![0i64; n];
    for r in 0..size {
        for (a, x) in acc.iter_mut().zip(ints(r, n)) {
            *a = a.wrapping_add(x);
        }
    }
    enc_i64(&acc)
}

/// Values that make float addition order-sensitive.
fn floats(r: u32) -> Vec<f64> {
    let big = [1e16, 1.0, -1e16, 1.0, 3.0, -2.5e15, 0.1, 7e15];
    vec![
        big[r as usize % big.len()] * if r / 8 % 2 == 1 { -0.5 } else { 1.0 },
        (r as f64 + 1.0).recip(),
        if r % 2 == 0 { 1e300 } else { -1e300 } * (r as f64 + 0.3),
    ]
}
fn enc_f64(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The grouping the binomial tree must produce: split `lo..lo+len` at the
/// largest power of two below `len`, combine left then right.
fn tree_sum(lo: u32, len: u32) -> Vec<f64> {
    if len == 1 {
        return floats(lo);
    }
    let half = 1u32 << (31 - (len - 1).leading_zeros());
    let a = tree_sum(lo, half);
    let b = tree_sum(lo + half, len - half);
    a.iter().zip(&b).map(|(x, y)| x + y).collect()
}

fn left_fold_sum(size: u32) -> Vec<f64> {
    let mut acc = floats(0);
    for r in 1..size {
        acc = acc.iter().zip(floats(r)).map(|(a, b)| a + b).collect();
    }
    acc
}

/// A non-commutative, associative op: each element is an affine map
/// `x -> a*x + b (mod 2^32)`, and `lower op higher` applies lower first.
struct Affine;

impl Combine for Affine {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        if lower.len() != higher.len() || lower.len() % 8 != 0 {
            return Err(OpError::UserOpFailed {
                reason: "bad length".into(),
            });
        }
        for (l, h) in lower.chunks_exact(8).zip(higher.chunks_exact_mut(8)) {
            let w = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            let (la, lb, ha, hb) = (w(l, 0), w(l, 4), w(h, 0), w(h, 4));
            let a = ha.wrapping_mul(la);
            let b = ha.wrapping_mul(lb).wrapping_add(hb);
            h[..4].copy_from_slice(&a.to_le_bytes());
            h[4..].copy_from_slice(&b.to_le_bytes());
        }
        Ok(())
    }
    fn commutative(&self) -> bool {
        false
    }
}

/// Rank `r`'s two affine maps.
fn affine(r: u32) -> [(u32, u32); 2] {
    [(2 * r + 3, r * r + 1), (r + 7, 0xdead_0000 ^ r)]
}
fn enc_affine(r: u32) -> Vec<u8> {
    affine(r)
        .iter()
        .flat_map(|(a, b)| a.to_le_bytes().into_iter().chain(b.to_le_bytes()))
        .collect()
}

/// Expected: apply every rank's map in rank order to x, read off (a, b) from
/// x = 0 and x = 1 — independent of how `Affine` composes.
fn affine_expected(size: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for slot in 0..2 {
        let apply = |x: u32| {
            (0..size).fold(x, |x, r| {
                let (a, b) = affine(r)[slot];
                a.wrapping_mul(x).wrapping_add(b)
            })
        };
        let b = apply(0);
        let a = apply(1).wrapping_sub(b);
        out.extend(a.to_le_bytes());
        out.extend(b.to_le_bytes());
    }
    out
}

fn i64_sum() -> Predefined {
    Predefined::new(Op::Sum, Elem::I64).unwrap()
}
fn f64_sum() -> Predefined {
    Predefined::new(Op::Sum, Elem::F64).unwrap()
}

// ---------------------------------------------------------------- barrier

const BARRIERS: [BarrierAlgo; 3] = [
    BarrierAlgo::Dissemination,
    BarrierAlgo::PairwiseExchange,
    BarrierAlgo::Binomial,
];

fn barrier_messages(algo: BarrierAlgo, p: u32) -> u64 {
    let p = u64::from(p);
    let m = 1u64 << (63 - p.leading_zeros());
    match algo {
        BarrierAlgo::Dissemination => {
            p * u64::from(if p <= 1 {
                0
            } else {
                64 - (p - 1).leading_zeros()
            })
        }
        BarrierAlgo::PairwiseExchange => m * u64::from(m.trailing_zeros()) + 2 * (p - m),
        BarrierAlgo::Binomial => 2 * (p - 1),
    }
}

fn check_barrier(algo: BarrierAlgo, size: u32, out: &Outcome) {
    let last = out.last_entry();
    for r in 0..size as usize {
        assert!(
            out.done_at[r] >= last,
            "{algo:?} P={size}: rank {r} done at {} before last entry at {last}",
            out.done_at[r]
        );
        assert!(out.results[r].is_none());
    }
    assert_eq!(
        out.messages,
        barrier_messages(algo, size),
        "{algo:?} P={size}"
    );
}

#[test]
fn barriers_release_nobody_before_everyone_entered() {
    for algo in BARRIERS {
        for &size in SIZES {
            let mut make = |r| barrier(r, size, algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| check_barrier(algo, size, out));
        }
    }
}

#[test]
fn barriers_when_each_rank_enters_last() {
    for algo in BARRIERS {
        for size in [2u32, 3, 5, 6, 8, 11] {
            for late in 0..size {
                let mut make = |r| barrier(r, size, algo).map(|m| m as Boxed);
                let mut s = LateJoin {
                    late: vec![late],
                    inner: FurthestBehindLast::new(u64::from(late)),
                };
                let out = run(size, &mut make, &mut s).unwrap();
                check_barrier(algo, size, &out);
                assert_eq!(out.constructed_at[late as usize], out.last_entry());
            }
        }
    }
}

#[test]
fn barriers_every_order_small() {
    for algo in BARRIERS {
        for size in 1..=4u32 {
            let mut make = |r| barrier(r, size, algo).map(|m| m as Boxed);
            // Construction order is part of the space for P <= 3.
            let (runs, complete) = explore_all(size, &mut make, size <= 3, 300_000, &mut |out| {
                check_barrier(algo, size, out)
            })
            .unwrap();
            assert!(complete, "{algo:?} P={size}: only {runs} runs");
        }
    }
}

/// The k-ary tree barrier: nobody leaves before the last entry, exactly
/// 2(P-1) messages, for fan-outs from a chain to one central node.
fn check_kary(size: u32, k: u32, out: &Outcome) {
    let last = out.last_entry();
    for r in 0..size as usize {
        assert!(
            out.done_at[r] >= last,
            "k={k} P={size}: rank {r} left early"
        );
    }
    assert_eq!(out.messages, 2 * u64::from(size - 1), "k={k} P={size}");
}

#[test]
fn kary_barrier_any_fan_out() {
    for &size in SIZES {
        for k in [1u32, 2, 3, 4, 8, 16, 64] {
            for seed in 0..seeds(size).min(8) {
                for mut s in schedules(size, seed) {
                    let mut make = |r| KaryTree::new(r, size, k).map(|m| Box::new(m) as Boxed);
                    let out = run(size, &mut make, s.as_mut()).unwrap();
                    check_kary(size, k, &out);
                }
            }
        }
    }
}

#[test]
fn kary_barrier_every_order_small() {
    for size in 1..=5u32 {
        for k in 1..=4u32 {
            let mut make = |r| KaryTree::new(r, size, k).map(|m| Box::new(m) as Boxed);
            let (runs, complete) = explore_all(size, &mut make, size <= 3, 300_000, &mut |out| {
                check_kary(size, k, out)
            })
            .unwrap();
            assert!(complete, "k={k} P={size}: only {runs} runs");
        }
    }
    assert_eq!(KaryTree::new(0, 4, 0).err(), Some(CollError::ZeroFanOut));
}

#[test]
fn leaders_pick_by_message_latencies_in_sequence() {
    // (leaders, fan-out, tree?): two leaders exchange once rather than
    // arrive and release; a flat tree takes 2 hops against 3+ rounds.
    for (l, k, tree) in [
        (1, 16, true),
        (2, 16, false),
        (3, 16, true),
        (4, 16, true),
        (8, 16, true),
        (8, 2, false),
        (16, 4, true),
        // k = 0: the fewest rounds whatever the shape.
        (1, 0, false),
        (4, 0, false),
        (8, 0, false),
    ] {
        assert_eq!(lanai_coll::leaders_use_tree(l, k), tree, "L={l} k={k}");
        for r in 0..l {
            assert!(lanai_coll::leaders_barrier(r, l, k).is_ok());
        }
    }
}

// ---------------------------------------------------------------- bcast

#[test]
fn bcast_from_every_root() {
    for &size in SIZES {
        let roots: Vec<u32> = if size <= 9 {
            (0..size).collect()
        } else {
            vec![0, 1, size / 2, size - 1]
        };
        for root in roots {
            for len in [0usize, 1, 37] {
                let payload: Vec<u8> = (0..len).map(|i| (i as u8) ^ (root as u8) ^ 0x5A).collect();
                let mut make = |r: u32| {
                    let data = if r == root {
                        payload.clone()
                    } else {
                        vec![0xEE; len]
                    };
                    Bcast::new(r, size, root, data).map(|m| Box::new(m) as Boxed)
                };
                for_all_schedules(size, &mut make, &mut |out| {
                    assert_eq!(out.messages, u64::from(size - 1));
                    for r in 0..size as usize {
                        assert_eq!(
                            out.results[r].as_deref(),
                            Some(&payload[..]),
                            "P={size} root={root} rank {r}"
                        );
                    }
                });
            }
        }
    }
}

#[test]
fn bcast_every_order_small() {
    for size in 1..=4u32 {
        for root in 0..size {
            let mut make = |r: u32| {
                let data = if r == root { vec![1, 2, 3] } else { vec![0; 3] };
                Bcast::new(r, size, root, data).map(|m| Box::new(m) as Boxed)
            };
            let (_, complete) = explore_all(size, &mut make, true, 300_000, &mut |out| {
                assert!(out
                    .results
                    .iter()
                    .all(|x| x.as_deref() == Some(&[1u8, 2, 3][..])));
            })
            .unwrap();
            assert!(complete);
        }
    }
}

// ---------------------------------------------------------------- reduce

/// A reduce's outcome: `want` at the root, nothing elsewhere, and
/// `messages` messages in all.
fn check_root_result(size: u32, root: u32, out: &Outcome, want: &[u8], messages: u64) {
    for r in 0..size {
        if r == root {
            assert_eq!(
                out.results[r as usize].as_deref(),
                Some(want),
                "P={size} root={root}"
            );
        } else {
            assert_eq!(out.results[r as usize], None);
        }
    }
    assert_eq!(out.messages, messages);
}

/// The tree sends one message per non-root, and one more to a root other than 0.
fn check_reduce(size: u32, root: u32, out: &Outcome, want: &[u8]) {
    let extra = u64::from(root != 0);
    check_root_result(size, root, out, want, u64::from(size - 1) + extra);
}

/// Every root for small communicators, a few for large ones.
fn roots_of(size: u32) -> Vec<u32> {
    if size <= 9 {
        (0..size).collect()
    } else {
        vec![0, 1, size - 1]
    }
}

#[test]
fn reduce_sum_and_noncommutative_from_every_root() {
    for &size in SIZES {
        for root in roots_of(size) {
            let want = ints_sum(size, 5);
            let mut make = |r: u32| {
                Reduce::new(r, size, root, enc_i64(&ints(r, 5)), i64_sum())
                    .map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                check_reduce(size, root, out, &want)
            });

            let want = affine_expected(size);
            let mut make = |r: u32| {
                Reduce::new(r, size, root, enc_affine(r), Affine).map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                check_reduce(size, root, out, &want)
            });
        }
    }
}

#[test]
fn reduce_float_grouping_is_fixed() {
    for &size in SIZES {
        let want = enc_f64(&tree_sum(0, size));
        for root in [0, size / 2, size - 1] {
            let mut make = |r: u32| {
                Reduce::new(r, size, root, enc_f64(&floats(r)), f64_sum())
                    .map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                check_reduce(size, root, out, &want)
            });
        }
    }
}

#[test]
fn reduce_of_any_fan_out_keeps_rank_order() {
    // Affine maps compose non-commutatively, so any misordered fold shows.
    for &size in &[1u32, 2, 3, 5, 8, 13, 17, 33] {
        for k in [1u32, 2, 3, 4, 9, 40] {
            for root in [0, size - 1] {
                let want = affine_expected(size);
                let mut make = |r: u32| {
                    Reduce::with_tree(r, size, root, enc_affine(r), Affine, ReduceTree::Kary(k))
                        .map(|m| Box::new(m) as Boxed)
                };
                for_all_schedules(size, &mut make, &mut |out| {
                    check_reduce(size, root, out, &want)
                });
            }
        }
    }
}

#[test]
fn reduce_of_any_fan_out_has_fixed_float_bits() {
    let sum = Predefined::new(Op::Sum, Elem::F64).unwrap();
    for &size in &[2u32, 5, 9, 16, 17] {
        let parts: Vec<Vec<u8>> = (0..size).map(|r| enc_f64(&floats(r))).collect();
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        for k in [1u32, 2, 3, 8] {
            let shape = ReduceTree::Kary(k);
            let want = lanai_coll::fold_tree(&refs, &sum, shape).unwrap();
            let mut make = |r: u32| {
                Reduce::with_tree(r, size, 0, parts[r as usize].clone(), sum, shape)
                    .map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                check_reduce(size, 0, out, &want)
            });
        }
        // A chain folds from the far end: x0 + (x1 + (... + x_{n-1})).
        let mut right = floats(size - 1);
        for r in (0..size - 1).rev() {
            right = floats(r).iter().zip(&right).map(|(a, b)| a + b).collect();
        }
        let chain = lanai_coll::fold_tree(&refs, &sum, ReduceTree::Kary(1)).unwrap();
        assert_eq!(chain, enc_f64(&right), "P={size}");
    }
    assert!(Reduce::with_tree(0, 4, 0, vec![], sum, ReduceTree::Kary(0)).is_err());
    assert_eq!("kary:3".parse::<ReduceTree>(), Ok(ReduceTree::Kary(3)));
    assert_eq!("binomial".parse::<ReduceTree>(), Ok(ReduceTree::Binomial));
    assert!("kary:0".parse::<ReduceTree>().is_err());
    assert!("kary".parse::<ReduceTree>().is_err());
}

#[test]
fn float_data_is_order_sensitive() {
    // Guards the tests above: with this data a left fold and the tree differ.
    assert_ne!(enc_f64(&left_fold_sum(4)), enc_f64(&tree_sum(0, 4)));
    assert_ne!(enc_f64(&left_fold_sum(13)), enc_f64(&tree_sum(0, 13)));
}

#[test]
fn reduce_every_order_small() {
    for size in 1..=4u32 {
        for root in 0..size {
            let want = affine_expected(size);
            let mut make = |r: u32| {
                Reduce::new(r, size, root, enc_affine(r), Affine).map(|m| Box::new(m) as Boxed)
            };
            let (_, complete) = explore_all(size, &mut make, true, 300_000, &mut |out| {
                check_reduce(size, root, out, &want)
            })
            .unwrap();
            assert!(complete);
        }
    }
}

#[test]
fn reduce_zero_length() {
    for size in [1u32, 2, 5, 8] {
        let mut make = |r: u32| {
            Reduce::new(r, size, size - 1, Vec::new(), i64_sum()).map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            check_reduce(size, size - 1, out, &[])
        });
    }
}

// ---------------------------------------------------------------- flat reduce

/// A flat reduce sends one message from each non-root.
fn check_flat(size: u32, root: u32, out: &Outcome, want: &[u8]) {
    check_root_result(size, root, out, want, u64::from(size - 1));
}

#[test]
fn flat_reduce_has_the_binomial_trees_bits_from_every_root() {
    for &size in SIZES {
        for root in roots_of(size) {
            // Floats: the same bits as the binomial tree, which the
            // `Reduce` machine computes by messages here.
            let parts: Vec<Vec<u8>> = (0..size).map(|r| enc_f64(&floats(r))).collect();
            let mut tree = |r: u32| {
                Reduce::new(r, size, root, parts[r as usize].clone(), f64_sum())
                    .map(|m| Box::new(m) as Boxed)
            };
            let want = run(size, &mut tree, &mut RandomOrder::new(1))
                .unwrap()
                .results[root as usize]
                .clone()
                .unwrap();
            assert_eq!(want, enc_f64(&tree_sum(0, size)));
            let mut make = |r: u32| {
                FlatReduce::new(r, size, root, parts[r as usize].clone(), f64_sum())
                    .map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                check_flat(size, root, out, &want)
            });
            // A non-commutative operation stays in rank order.
            let want = affine_expected(size);
            let mut make = |r: u32| {
                FlatReduce::new(r, size, root, enc_affine(r), Affine).map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                check_flat(size, root, out, &want)
            });
        }
    }
}

#[test]
fn flat_reduce_every_order_small_and_zero_length() {
    for size in 1..=5u32 {
        for root in 0..size {
            let want = affine_expected(size);
            let mut make = |r: u32| {
                FlatReduce::new(r, size, root, enc_affine(r), Affine).map(|m| Box::new(m) as Boxed)
            };
            let (_, complete) = explore_all(size, &mut make, true, 300_000, &mut |out| {
                check_flat(size, root, out, &want)
            })
            .unwrap();
            assert!(complete);
            let mut empty = |r: u32| {
                FlatReduce::new(r, size, root, Vec::new(), i64_sum()).map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut empty, &mut |out| {
                check_flat(size, root, out, &[])
            });
        }
    }
}

#[test]
fn flat_reduce_refuses_what_it_does_not_expect() {
    let sum = i64_sum();
    let contrib = |m: &mut FlatReduce<_>, from: u32, body: Vec<u8>| {
        let mut msg = vec![1u8, 0];
        msg.extend_from_slice(&body);
        m.handle_message(from, &msg)
    };
    let mut root = FlatReduce::new(0, 3, 0, enc_i64(&[5]), sum).unwrap();
    // Wrong length, then a duplicate, then the root's own rank.
    assert!(matches!(
        contrib(&mut root, 1, vec![0; 3]),
        Err(CollError::DataLengthMismatch { .. })
    ));
    contrib(&mut root, 1, enc_i64(&[7])).unwrap();
    assert!(contrib(&mut root, 1, enc_i64(&[7])).is_err());
    assert!(contrib(&mut root, 0, enc_i64(&[7])).is_err());
    assert!(!root.is_done());
    contrib(&mut root, 2, enc_i64(&[9])).unwrap();
    assert!(root.is_done());
    assert_eq!(root.take_result(), Some(enc_i64(&[21])));
    // A non-root receives nothing.
    let mut leaf = FlatReduce::new(1, 3, 0, enc_i64(&[5]), sum).unwrap();
    assert!(contrib(&mut leaf, 0, enc_i64(&[1])).is_err());
    assert!(FlatReduce::new(0, 3, 3, vec![], sum).is_err());
}

// ---------------------------------------------------------------- allreduce

const ALGOS: [AllreduceAlgo; 3] = [
    AllreduceAlgo::Auto,
    AllreduceAlgo::ReduceBcast,
    AllreduceAlgo::RecursiveDoubling,
];

fn algo_applies(algo: AllreduceAlgo, size: u32) -> bool {
    algo != AllreduceAlgo::RecursiveDoubling || size.is_power_of_two()
}

fn check_all(size: u32, out: &Outcome, want: &[u8]) {
    for r in 0..size as usize {
        assert_eq!(out.results[r].as_deref(), Some(want), "P={size} rank {r}");
    }
}

#[test]
fn allreduce_sum_noncommutative_and_floats() {
    for &size in SIZES {
        for algo in ALGOS.into_iter().filter(|a| algo_applies(*a, size)) {
            let want = ints_sum(size, 9);
            let mut make =
                |r| allreduce(r, size, enc_i64(&ints(r, 9)), i64_sum(), algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| check_all(size, out, &want));

            let want = affine_expected(size);
            let mut make = |r| allreduce(r, size, enc_affine(r), Affine, algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| check_all(size, out, &want));

            // Bitwise the same float result whatever the algorithm and order.
            let want = enc_f64(&tree_sum(0, size));
            let mut make =
                |r| allreduce(r, size, enc_f64(&floats(r)), f64_sum(), algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| check_all(size, out, &want));
        }
    }
}

#[test]
fn recursive_doubling_matches_reduce_bcast_bitwise() {
    for size in [2u32, 4, 8, 16, 32, 64] {
        let mut results = Vec::new();
        for algo in [AllreduceAlgo::ReduceBcast, AllreduceAlgo::RecursiveDoubling] {
            let mut make =
                |r| allreduce(r, size, enc_f64(&floats(r)), f64_sum(), algo).map(|m| m as Boxed);
            let out = run(size, &mut make, &mut RandomOrder::new(u64::from(size))).unwrap();
            results.push(out.results);
        }
        assert_eq!(results[0], results[1], "P={size}");
        if size >= 4 {
            let left = enc_f64(&left_fold_sum(size));
            assert_ne!(
                results[0][0].as_deref(),
                Some(&left[..]),
                "data must expose reassociation"
            );
        }
    }
}

#[test]
fn allreduce_message_counts() {
    for size in [1u32, 2, 3, 4, 8, 9] {
        for algo in [AllreduceAlgo::ReduceBcast, AllreduceAlgo::RecursiveDoubling] {
            if !algo_applies(algo, size) {
                continue;
            }
            let mut make = |r| allreduce(r, size, vec![1; 8], i64_sum(), algo).map(|m| m as Boxed);
            let out = run(size, &mut make, &mut RandomOrder::new(7)).unwrap();
            let want = match algo {
                AllreduceAlgo::RecursiveDoubling => u64::from(size * size.trailing_zeros()),
                _ => 2 * u64::from(size - 1),
            };
            assert_eq!(out.messages, want, "{algo:?} P={size}");
        }
    }
}

#[test]
fn allreduce_every_order_small() {
    for size in 1..=4u32 {
        for algo in [AllreduceAlgo::ReduceBcast, AllreduceAlgo::RecursiveDoubling] {
            if !algo_applies(algo, size) {
                continue;
            }
            let want = affine_expected(size);
            let mut make = |r| allreduce(r, size, enc_affine(r), Affine, algo).map(|m| m as Boxed);
            let (runs, complete) = explore_all(size, &mut make, size <= 3, 300_000, &mut |out| {
                check_all(size, out, &want)
            })
            .unwrap();
            assert!(complete, "{algo:?} P={size}: {runs} runs");
        }
    }
}

#[test]
fn allreduce_zero_length_and_auto_choice() {
    for size in [1u32, 3, 4] {
        for algo in ALGOS.into_iter().filter(|a| algo_applies(*a, size)) {
            let mut make = |r| allreduce(r, size, Vec::new(), f64_sum(), algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| check_all(size, out, &[]));
        }
    }
    // Recursive doubling for small vectors, Rabenseifner for large ones on
    // powers of two (from 32 KiB at 8 ranks or more).
    let a = AllreduceAlgo::Auto;
    let (rd, rab) = (
        AllreduceAlgo::RecursiveDoubling,
        AllreduceAlgo::Rabenseifner,
    );
    let many = lanai_coll::AUTO_RABENSEIFNER_MANY_MIN;
    let max = lanai_coll::AUTO_RECURSIVE_DOUBLING_MAX;
    assert_eq!(a.resolve(8, many), rd);
    assert_eq!(a.resolve(8, many + 1), rab);
    assert_eq!(a.resolve(16, max), rab);
    assert_eq!(a.resolve(4, max), rd);
    assert_eq!(a.resolve(4, max + 1), rab);
    assert_eq!(a.resolve(2, max), rd);
    assert_eq!(a.resolve(6, max), AllreduceAlgo::ReduceBcast);
    assert_eq!(a.resolve(6, max + 1), AllreduceAlgo::Ring);
    assert_eq!(a.resolve(6, 8), AllreduceAlgo::ReduceBcast);
    assert_eq!(a.resolve(1, 8), AllreduceAlgo::RecursiveDoubling);
    for x in ALGOS {
        assert_eq!(x.name().parse::<AllreduceAlgo>(), Ok(x));
    }
    for x in BARRIERS {
        assert_eq!(x.name().parse::<BarrierAlgo>(), Ok(x));
    }
    assert!("nope".parse::<AllreduceAlgo>().is_err());
}

// ---------------------------------------------------------------- errors

#[test]
fn constructor_errors() {
    assert_eq!(
        RecursiveDoubling::new(0, 6, vec![], i64_sum()).err(),
        Some(CollError::SizeNotPowerOfTwo { size: 6 })
    );
    // The selector falls back instead: a forced knob never fails a valid call.
    assert!(allreduce(0, 6, vec![], i64_sum(), AllreduceAlgo::RecursiveDoubling).is_ok());
    assert_eq!(
        Reduce::new(4, 4, 0, vec![], i64_sum()).err(),
        Some(CollError::RankOutOfRange { rank: 4, size: 4 })
    );
    assert_eq!(
        Bcast::new(0, 4, 9, vec![]).err(),
        Some(CollError::RootOutOfRange { root: 9, size: 4 })
    );
    for algo in BARRIERS {
        assert_eq!(
            barrier(0, 0, algo).err(),
            Some(CollError::EmptyCommunicator)
        );
    }
}

/// Takes the first message `from` sends to `to` once built.
fn first_msg(m: &mut dyn Collective, to: u32) -> Vec<u8> {
    std::iter::from_fn(|| m.poll_send())
        .find(|o| o.to == to)
        .expect("a message to that rank")
        .to_bytes()
}

#[test]
fn peer_misbehaviour_is_an_error_not_a_panic() {
    // Rank 1 of a reduce over 2 ranks sends its data to rank 0.
    let mut r1 = Reduce::new(1, 2, 0, enc_i64(&[5]), i64_sum()).unwrap();
    let msg = first_msg(&mut r1, 0);
    let mut r0 = Reduce::new(0, 2, 0, enc_i64(&[1]), i64_sum()).unwrap();
    assert!(matches!(
        r0.handle_message(1, &[]),
        Err(CollError::MalformedMessage { from: 1, .. })
    ));
    assert!(matches!(
        r0.handle_message(1, &msg[..msg.len() - 1]),
        Err(CollError::DataLengthMismatch {
            from: 1,
            expected: 8,
            got: 7
        })
    ));
    assert!(matches!(
        r0.handle_message(0, &msg),
        Err(CollError::UnexpectedMessage { from: 0, .. })
    ));
    r0.handle_message(1, &msg).unwrap();
    assert!(r0.is_done());
    assert_eq!(r0.result(), Some(&enc_i64(&[6])[..]));
    assert!(matches!(
        r0.handle_message(1, &msg),
        Err(CollError::DuplicateMessage { from: 1, .. })
    ));

    // Duplicates that arrive early (before the step is reached) are caught too.
    let mut d = barrier(0, 4, BarrierAlgo::Dissemination).unwrap();
    let mut d3 = barrier(3, 4, BarrierAlgo::Dissemination).unwrap();
    let m = first_msg(d3.as_mut(), 0);
    d.handle_message(3, &m).unwrap();
    assert!(matches!(
        d.handle_message(3, &m),
        Err(CollError::DuplicateMessage { .. })
    ));
    assert!(matches!(
        d.handle_message(3, &[5, 0, 1]),
        Err(CollError::MalformedMessage { .. })
    ));

    // An op undefined on the data surfaces as an Op error when combining.
    let band = Predefined {
        op: Op::Band,
        elem: Elem::F64,
    };
    let mut r1 = Reduce::new(1, 2, 0, vec![0; 8], band).unwrap();
    let msg = first_msg(&mut r1, 0);
    let mut r0 = Reduce::new(0, 2, 0, vec![0; 8], band).unwrap();
    assert_eq!(
        r0.handle_message(1, &msg),
        Err(CollError::Op(OpError::UndefinedForElement {
            op: Op::Band,
            elem: Elem::F64
        }))
    );

    // A bcast message that overtakes the reduce phase is kept, a second one is not.
    let mut rb = ReduceBcast::new(1, 2, vec![0; 8], i64_sum()).unwrap();
    let mut root = Bcast::new(0, 2, 0, enc_i64(&[42])).unwrap();
    let b = first_msg(&mut root, 1);
    rb.handle_message(0, &b).unwrap();
    assert_eq!(first_msg(&mut rb, 0).len(), 10);
    assert!(rb.is_done());
    assert_eq!(rb.take_result(), Some(enc_i64(&[42])));
}

#[test]
fn random_garbage_never_panics() {
    let mut rng = XorShift::new(99);
    for _ in 0..3000 {
        let size = 1 + rng.below(9) as u32;
        let rank = rng.below(size as usize) as u32;
        let mut ms: Vec<Boxed> = vec![
            Box::new(
                Reduce::new(
                    rank,
                    size,
                    rng.below(size as usize) as u32,
                    vec![0; 8],
                    i64_sum(),
                )
                .unwrap(),
            ),
            Box::new(Bcast::new(rank, size, 0, vec![0; 8]).unwrap()),
            allreduce(rank, size, vec![0; 8], i64_sum(), AllreduceAlgo::Auto).unwrap(),
            barrier(rank, size, BarrierAlgo::Dissemination).unwrap(),
            barrier(rank, size, BarrierAlgo::PairwiseExchange).unwrap(),
            barrier(rank, size, BarrierAlgo::Binomial).unwrap(),
        ];
        for m in &mut ms {
            while m.poll_send().is_some() {}
            for _ in 0..4 {
                let len = rng.below(14);
                let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                if len >= 2 {
                    data[0] %= 12;
                    data[1] %= 5;
                }
                let from = rng.below(size as usize + 1) as u32;
                let _ = m.handle_message(from, &data);
                while m.poll_send().is_some() {}
            }
        }
    }
}

#[test]
fn sim_reports_misbehaving_collectives() {
    // Rank 1 believes it is alone, so rank 0 waits for it forever.
    let mut make = |r: u32| -> Result<Boxed, CollError> {
        if r == 0 {
            Ok(Box::new(Reduce::new(0, 2, 0, vec![1], Affine)?))
        } else {
            Ok(Box::new(Bcast::new(0, 1, 0, vec![1])?))
        }
    };
    let out = run(2, &mut make, &mut RandomOrder::new(1));
    assert_eq!(out, Err(SimError::Stuck { not_done: vec![0] }));

    // Every rank believes it is the root: they finish at once and then get messages.
    let mut make = |r: u32| Bcast::new(r, 3, r, vec![1]).map(|m| Box::new(m) as Boxed);
    let out = run(3, &mut make, &mut RandomOrder::new(1));
    assert!(
        matches!(out, Err(SimError::MessageAfterDone { .. })),
        "{out:?}"
    );

    // A broadcast's root that claimed to synchronize, with a receiver that
    // enters late: it is done before that receiver entered.
    let mut make = |r: u32| -> Result<Boxed, CollError> {
        Ok(Box::new(Claims(Bcast::new(r, 4, 0, vec![1])?)))
    };
    let mut late = LateJoin {
        late: vec![3],
        inner: RandomOrder::new(1),
    };
    let out = run(4, &mut make, &mut late);
    assert!(
        matches!(
            out,
            Err(SimError::DoneBeforeReceiverEntered { rank: 0, .. })
        ),
        "{out:?}"
    );
}

/// A machine that claims to synchronize whatever it wraps.
struct Claims<M>(M);

impl<M: Collective> Collective for Claims<M> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        self.0.handle_message(from, data)
    }
    fn poll_send(&mut self) -> Option<lanai_coll::Outgoing> {
        self.0.poll_send()
    }
    fn is_done(&self) -> bool {
        self.0.is_done()
    }
    fn synchronizes(&self) -> bool {
        true
    }
}

/// Barriers and allreduces are done only once every rank they sent to has
/// entered, as they claim (the simulator checks it on every run above,
/// with late joiners); a reduce's non-root and a broadcast's root are not,
/// and do not claim it.
#[test]
fn only_barriers_and_allreduces_claim_to_synchronize() {
    for size in [1u32, 2, 3, 4, 5, 8] {
        for algo in BARRIERS {
            assert!(barrier(0, size, algo).unwrap().synchronizes());
        }
        assert!(KaryTree::new(0, size, 2).unwrap().synchronizes());
        for algo in ALGOS.into_iter().filter(|a| algo_applies(*a, size)) {
            let m = allreduce(0, size, enc_i64(&[1]), i64_sum(), algo).unwrap();
            assert!(m.synchronizes());
        }
        assert!(!Bcast::new(0, size, 0, vec![1]).unwrap().synchronizes());
        assert!(!Reduce::new(1 % size, size, 0, vec![1], Affine)
            .unwrap()
            .synchronizes());
        let flat = FlatReduce::new(1 % size, size, 0, enc_i64(&[1]), i64_sum()).unwrap();
        assert!(!flat.synchronizes());
    }
}

/// The shared-memory fast path folds every contribution itself; it must
/// give the bits the Reduce machine gives, for sums that reordering changes.
#[test]
fn canonical_fold_matches_the_reduce_machine() {
    for size in 1..=17u32 {
        let value = |r: u32| -> Vec<u8> {
            // Magnitudes far apart so any regrouping changes the rounding.
            let x = [1e16f64, 1.0, -1e16, 3.25, 1e-3][r as usize % 5] * (1.0 + f64::from(r) * 1e-9);
            x.to_le_bytes().to_vec()
        };
        let sum = Predefined::new(Op::Sum, Elem::F64).unwrap();
        let mut make = |r| Reduce::new(r, size, 0, value(r), sum).map(|m| Box::new(m) as Boxed);
        let out = run(size, &mut make, &mut RandomOrder::new(u64::from(size))).unwrap();
        let parts: Vec<Vec<u8>> = (0..size).map(value).collect();
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let folded = lanai_coll::fold_canonical(&refs, &sum).unwrap();
        assert_eq!(
            out.results[0].as_deref(),
            Some(folded.as_slice()),
            "P={size}"
        );
    }
}
