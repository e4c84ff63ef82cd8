//! The data-moving and scan collectives, the large-message bcast and the
//! split allreduces under the simulator: random, adversarial, late-joiner and
//! exhaustive orders; results checked against serial reference computations.

use lanai_coll::sim::{
    explore_all, run, FurthestBehindLast, LateJoin, Outcome, RandomOrder, Scheduler, XorShift,
};
use lanai_coll::{
    allreduce, bcast, Allgather, AllgatherAlgo, Allgatherv, AllreduceAlgo, Alltoall, Alltoallv,
    BcastAlgo, CollError, Collective, Combine, Elem, Exscan, Gather, Gatherv, Layout, Op, OpError,
    Predefined, Rabenseifner, ReduceScatter, ReduceScatterBlock, RingAllreduce, Scan, ScanAlgo,
    Scatter, ScatterAllgather, Scatterv,
};

type Boxed = Box<dyn Collective>;
type Make<'a> = dyn FnMut(u32) -> Result<Boxed, CollError> + 'a;
/// A named machine factory and the check for its outcomes.
type Case<'a> = (&'static str, Box<Make<'a>>, Box<dyn Fn(u32, &Outcome)>);

/// Sizes for the O(P) algorithms.
const SIZES: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17, 32, 33, 64];
/// Sizes for the O(P^2)-message algorithms.
const SQUARE_SIZES: &[u32] = &[1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 33];

fn seeds(size: u32) -> u64 {
    match size {
        0..=9 => 12,
        10..=17 => 2,
        _ => 1,
    }
}

fn schedules(size: u32, seed: u64) -> Vec<Box<dyn Scheduler>> {
    let mut rng = XorShift::new(seed ^ 0x5EED);
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
            late: vec![size - 1, random_rank],
            inner: FurthestBehindLast::new(seed),
        }),
        Box::new(LateJoin {
            late: half,
            inner: RandomOrder::new(seed + 2),
        }),
    ]
}

fn for_all_schedules(size: u32, make: &mut Make<'_>, check: &mut dyn FnMut(&Outcome)) {
    for seed in 0..seeds(size) {
        for mut s in schedules(size, seed) {
            let out = run(size, make, s.as_mut())
                .unwrap_or_else(|e| panic!("size {size} seed {seed}: {e}"));
            check(&out);
        }
    }
}

/// Every delivery order (and for P <= 3 every construction order).
fn every_order(size: u32, make: &mut Make<'_>, check: &mut dyn FnMut(&Outcome)) -> usize {
    every_order_with(size, size <= 3, make, check)
}

fn every_order_with(
    size: u32,
    branch_on_construct: bool,
    make: &mut Make<'_>,
    check: &mut dyn FnMut(&Outcome),
) -> usize {
    let (runs, complete) = explore_all(size, make, branch_on_construct, 200_000, check).unwrap();
    assert!(complete, "P={size}: only {runs} runs");
    runs
}

fn roots(size: u32) -> Vec<u32> {
    if size <= 5 {
        (0..size).collect()
    } else {
        vec![0, 1, size / 2, size - 1]
    }
}

/// Rank `r`'s `len` distinctive bytes, tagged by `salt`.
fn bytes(r: u32, len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (r as u8).wrapping_mul(37) ^ (i as u8).wrapping_mul(11) ^ salt)
        .collect()
}

fn i64_sum() -> Predefined {
    Predefined::new(Op::Sum, Elem::I64).unwrap()
}
fn f64_sum() -> Predefined {
    Predefined::new(Op::Sum, Elem::F64).unwrap()
}

fn enc_i64(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn enc_f64(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Rank `r`'s `n` integers (large, so sums wrap).
fn ints(r: u32, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| {
            (r as i64 + 1) * 1_000_003 - i as i64 * 7919 + if r % 3 == 0 { i64::MAX / 3 } else { 0 }
        })
        .collect()
}

/// Rank `r`'s `n` floats, chosen so that addition order changes the result.
fn floats(r: u32, n: usize) -> Vec<f64> {
    let big = [1e16, 1.0, -1e16, 1.0, 3.0, -2.5e15, 0.1, 7e15, -0.3, 1e-3];
    (0..n)
        .map(|i| {
            let j = r as usize * 3 + i * 7;
            big[j % big.len()] * (1.0 + (i % 5) as f64 * 0.25) + (r as f64 + 1.0).recip()
        })
        .collect()
}

/// Element `i` reduced over ranks `lo..lo+len` with the canonical grouping:
/// split at the largest power of two below `len`, lower part + upper part.
fn tree_sum(lo: u32, len: u32, n: usize) -> Vec<f64> {
    if len == 1 {
        return floats(lo, n);
    }
    let half = 1u32 << (31 - (len - 1).leading_zeros());
    let a = tree_sum(lo, half, n);
    let b = tree_sum(lo + half, len - half, n);
    a.iter().zip(&b).map(|(x, y)| x + y).collect()
}

/// Left fold over ranks `0..=last`.
fn left_sum(last: u32, n: usize) -> Vec<f64> {
    (1..=last).fold(floats(0, n), |acc, r| {
        acc.iter().zip(floats(r, n)).map(|(a, b)| a + b).collect()
    })
}

fn int_sum(ranks: std::ops::Range<u32>, n: usize) -> Vec<i64> {
    ranks.fold(vec![0i64; n], |acc, r| {
        acc.iter()
            .zip(ints(r, n))
            .map(|(a, b)| a.wrapping_add(b))
            .collect()
    })
}

/// Non-commutative, associative: each 8-byte element is the affine map
/// `x -> a*x + b (mod 2^32)`; `lower op higher` applies `lower` first.
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
            h[..4].copy_from_slice(&ha.wrapping_mul(la).to_le_bytes());
            h[4..].copy_from_slice(&ha.wrapping_mul(lb).wrapping_add(hb).to_le_bytes());
        }
        Ok(())
    }
    fn commutative(&self) -> bool {
        false
    }
    fn elem_size(&self) -> Option<usize> {
        Some(8)
    }
}

/// Affine without a known element size (the split allreduces must fall back).
struct OpaqueAffine;

impl Combine for OpaqueAffine {
    fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
        Affine.combine(lower, higher)
    }
}

fn affine_map(r: u32, i: usize) -> (u32, u32) {
    (
        2 * r + 3 + 2 * i as u32,
        r.wrapping_mul(r) + 1 + (i as u32) * 0x1_0001,
    )
}
fn enc_affine(r: u32, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let (a, b) = affine_map(r, i);
            a.to_le_bytes().into_iter().chain(b.to_le_bytes())
        })
        .collect()
}

/// Element `i` of ranks `ranks` composed in rank order, read off by applying
/// the maps to x = 0 and x = 1 (independent of how `Affine` composes).
fn affine_expected(ranks: std::ops::Range<u32>, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let apply = |x: u32| {
            ranks.clone().fold(x, |x, r| {
                let (a, b) = affine_map(r, i);
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

fn count_msgs(out: &Outcome, want: u64, what: &str) {
    assert_eq!(out.messages, want, "{what}: message count");
}

// ---------------------------------------------------------------- gather / scatter

#[test]
fn gather_from_every_root() {
    for &size in SIZES {
        for root in roots(size) {
            for len in [0usize, 3] {
                let want: Vec<u8> = (0..size).flat_map(|r| bytes(r, len, 1)).collect();
                let mut make =
                    |r| Gather::new(r, size, root, bytes(r, len, 1)).map(|m| Box::new(m) as Boxed);
                for_all_schedules(size, &mut make, &mut |out| {
                    count_msgs(out, u64::from(size - 1), "gather");
                    for r in 0..size {
                        let got = out.results[r as usize].as_deref();
                        if r == root {
                            assert_eq!(got, Some(&want[..]), "P={size} root={root}");
                        } else {
                            assert_eq!(got, None);
                        }
                    }
                });
            }
        }
    }
}

/// Per-rank counts with zeros, and displacements in reverse rank order with gaps.
fn odd_layout(size: u32, salt: u64) -> Layout {
    let mut rng = XorShift::new(salt);
    let counts: Vec<usize> = (0..size).map(|_| rng.below(4) * rng.below(3)).collect();
    let mut displs = vec![0; size as usize];
    let mut at = 1;
    for r in (0..size as usize).rev() {
        displs[r] = at;
        at += counts[r] + rng.below(3);
    }
    Layout::new(counts, displs).unwrap()
}

#[test]
fn gatherv_and_scatterv_with_gaps() {
    for &size in SIZES {
        for root in roots(size) {
            let lay = odd_layout(size, u64::from(size * 31 + root));
            let data = |r: u32| bytes(r, lay.counts()[r as usize], 2);
            let mut want = vec![0u8; lay.extent()];
            for r in 0..size {
                let d = lay.displs()[r as usize];
                want[d..d + lay.counts()[r as usize]].copy_from_slice(&data(r));
            }
            let mut make =
                |r| Gatherv::new(r, size, root, data(r), &lay).map(|m| Box::new(m) as Boxed);
            for_all_schedules(size, &mut make, &mut |out| {
                count_msgs(out, u64::from(size - 1), "gatherv");
                for r in 0..size {
                    let want = (r == root).then_some(&want[..]);
                    assert_eq!(out.results[r as usize].as_deref(), want, "P={size}");
                }
            });

            // Scatterv sends the same blocks back out of `want`.
            let mut make = |r: u32| {
                let buf = if r == root { want.clone() } else { Vec::new() };
                let n = lay.counts()[r as usize];
                Scatterv::new(r, size, root, buf, &lay, n).map(|m| Box::new(m) as Boxed)
            };
            for_all_schedules(size, &mut make, &mut |out| {
                count_msgs(out, u64::from(size - 1), "scatterv");
                for r in 0..size {
                    assert_eq!(
                        out.results[r as usize],
                        Some(data(r)),
                        "P={size} root={root}"
                    );
                }
            });
        }
    }
}

#[test]
fn scatter_from_every_root() {
    for &size in SIZES {
        for root in roots(size) {
            for block in [0usize, 5] {
                let all: Vec<u8> = (0..size).flat_map(|r| bytes(r, block, 3)).collect();
                let mut make = |r: u32| {
                    let data = if r == root { all.clone() } else { vec![9; 2] };
                    Scatter::new(r, size, root, data, block).map(|m| Box::new(m) as Boxed)
                };
                for_all_schedules(size, &mut make, &mut |out| {
                    count_msgs(out, u64::from(size - 1), "scatter");
                    for r in 0..size {
                        assert_eq!(out.results[r as usize], Some(bytes(r, block, 3)));
                    }
                });
            }
        }
    }
}

// ---------------------------------------------------------------- allgather / alltoall

#[test]
fn allgather_every_algorithm() {
    for &size in SQUARE_SIZES.iter().chain(&[32, 64]) {
        for algo in [
            AllgatherAlgo::Auto,
            AllgatherAlgo::RecursiveDoubling,
            AllgatherAlgo::Ring,
        ] {
            if algo == AllgatherAlgo::RecursiveDoubling && !size.is_power_of_two() {
                continue;
            }
            if size > 33 && algo == AllgatherAlgo::Ring {
                continue;
            }
            for len in [0usize, 3] {
                let want: Vec<u8> = (0..size).flat_map(|r| bytes(r, len, 4)).collect();
                let mut make = |r| {
                    Allgather::new(r, size, bytes(r, len, 4), algo).map(|m| Box::new(m) as Boxed)
                };
                let p = u64::from(size);
                let msgs = match algo.resolve(size) {
                    AllgatherAlgo::RecursiveDoubling => p * u64::from(size.trailing_zeros()),
                    _ => p * (p - 1),
                };
                for_all_schedules(size, &mut make, &mut |out| {
                    count_msgs(out, msgs, "allgather");
                    for r in 0..size as usize {
                        assert_eq!(
                            out.results[r].as_deref(),
                            Some(&want[..]),
                            "{algo:?} P={size}"
                        );
                    }
                });
            }
        }
    }
}

#[test]
fn allgatherv_with_gaps() {
    for &size in SQUARE_SIZES {
        let lay = odd_layout(size, u64::from(size) + 1000);
        let data = |r: u32| bytes(r, lay.counts()[r as usize], 5);
        let mut want = vec![0u8; lay.extent()];
        for r in 0..size {
            want[lay.block(r)].copy_from_slice(&data(r));
        }
        let mut make = |r| Allgatherv::new(r, size, data(r), &lay).map(|m| Box::new(m) as Boxed);
        for_all_schedules(size, &mut make, &mut |out| {
            for r in 0..size as usize {
                assert_eq!(out.results[r].as_deref(), Some(&want[..]), "P={size}");
            }
        });
    }
}

#[test]
fn ring_step_numbers_wrap_past_256_ranks() {
    let size = 260;
    let lay = Layout::uniform(size, 1).unwrap();
    let want: Vec<u8> = (0..size).map(|r| r as u8).collect();
    let mut make =
        |r: u32| Allgatherv::new(r, size, vec![r as u8], &lay).map(|m| Box::new(m) as Boxed);
    let out = run(size, &mut make, &mut RandomOrder::new(5)).unwrap();
    assert!(out.results.iter().all(|x| x.as_deref() == Some(&want[..])));
}

#[test]
fn alltoall_and_alltoallv() {
    for &size in SQUARE_SIZES {
        for block in [0usize, 2] {
            // Block j of rank i is bytes(i * 100 + j).
            let send = |i: u32| -> Vec<u8> {
                (0..size)
                    .flat_map(|j| bytes(i * 100 + j, block, 6))
                    .collect()
            };
            let mut make = |r| Alltoall::new(r, size, send(r)).map(|m| Box::new(m) as Boxed);
            for_all_schedules(size, &mut make, &mut |out| {
                count_msgs(out, u64::from(size * (size - 1)), "alltoall");
                for j in 0..size {
                    let want: Vec<u8> = (0..size)
                        .flat_map(|i| bytes(i * 100 + j, block, 6))
                        .collect();
                    assert_eq!(out.results[j as usize], Some(want), "P={size}");
                }
            });
        }

        // Alltoallv: c[i][j] bytes from i to j, odd displacements on both sides.
        let mut rng = XorShift::new(u64::from(size) * 7);
        let c: Vec<Vec<usize>> = (0..size)
            .map(|_| (0..size).map(|_| rng.below(4)).collect())
            .collect();
        let layouts = |counts: Vec<usize>, gap: usize| {
            let mut displs = Vec::new();
            let mut at = gap;
            for n in counts.iter().rev() {
                displs.push(at);
                at += n + gap;
            }
            displs.reverse();
            Layout::new(counts, displs).unwrap()
        };
        let sl: Vec<Layout> = (0..size as usize)
            .map(|i| layouts(c[i].clone(), 1))
            .collect();
        let rl: Vec<Layout> = (0..size as usize)
            .map(|j| layouts(c.iter().map(|row| row[j]).collect(), 2))
            .collect();
        let msg = |i: u32, j: u32| bytes(i * 1000 + j, c[i as usize][j as usize], 7);
        let sbuf = |i: u32| {
            let mut b = vec![0xAA; sl[i as usize].extent()];
            for j in 0..size {
                b[sl[i as usize].block(j)].copy_from_slice(&msg(i, j));
            }
            b
        };
        let mut make = |r| {
            Alltoallv::new(r, size, sbuf(r), &sl[r as usize], &rl[r as usize])
                .map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            for j in 0..size {
                let mut want = vec![0u8; rl[j as usize].extent()];
                for i in 0..size {
                    want[rl[j as usize].block(i)].copy_from_slice(&msg(i, j));
                }
                assert_eq!(out.results[j as usize], Some(want), "alltoallv P={size}");
            }
        });
    }
}

// ---------------------------------------------------------------- reductions

#[test]
fn reduce_scatter_block_and_counts() {
    for &size in SQUARE_SIZES {
        // Block: 2 elements per rank.
        let n = 2 * size as usize;
        let total = int_sum(0..size, n);
        let mut make = |r| {
            ReduceScatterBlock::new(r, size, enc_i64(&ints(r, n)), i64_sum())
                .map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            count_msgs(out, u64::from(size * (size - 1)), "reduce_scatter_block");
            for r in 0..size as usize {
                assert_eq!(
                    out.results[r],
                    Some(enc_i64(&total[2 * r..2 * r + 2])),
                    "P={size}"
                );
            }
        });

        // Counts (in f64 elements) 0..=3 per rank; floats bitwise in the tree grouping.
        let counts: Vec<usize> = (0..size as usize).map(|r| (r * 7 + 1) % 4).collect();
        let n: usize = counts.iter().sum();
        let want = enc_f64(&tree_sum(0, size, n));
        let bcounts: Vec<usize> = counts.iter().map(|c| c * 8).collect();
        let mut make = |r| {
            ReduceScatter::new(r, size, enc_f64(&floats(r, n)), &bcounts, f64_sum())
                .map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            let mut at = 0;
            for r in 0..size as usize {
                assert_eq!(
                    out.results[r].as_deref(),
                    Some(&want[at..at + bcounts[r]]),
                    "P={size}"
                );
                at += bcounts[r];
            }
        });

        // Non-commutative: operands in rank order.
        let want = affine_expected(0..size, n);
        let mut make = |r| {
            ReduceScatter::new(r, size, enc_affine(r, n), &bcounts, Affine)
                .map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            let mut at = 0;
            for r in 0..size as usize {
                assert_eq!(out.results[r].as_deref(), Some(&want[at..at + bcounts[r]]));
                at += bcounts[r];
            }
        });
    }
}

#[test]
fn scan_and_exscan_fold_left_in_rank_order() {
    for &size in SIZES {
        let n = 3;
        let mut make =
            |r| Scan::new(r, size, enc_f64(&floats(r, n)), f64_sum()).map(|m| Box::new(m) as Boxed);
        for_all_schedules(size, &mut make, &mut |out| {
            count_msgs(out, u64::from(size - 1), "scan");
            for r in 0..size {
                assert_eq!(
                    out.results[r as usize],
                    Some(enc_f64(&left_sum(r, n))),
                    "P={size}"
                );
            }
        });
        let mut make = |r| {
            Exscan::new(r, size, enc_f64(&floats(r, n)), f64_sum()).map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            count_msgs(out, u64::from(size - 1), "exscan");
            assert_eq!(out.results[0], None);
            for r in 1..size {
                assert_eq!(
                    out.results[r as usize],
                    Some(enc_f64(&left_sum(r - 1, n))),
                    "P={size}"
                );
            }
        });
        let mut make =
            |r| Scan::new(r, size, enc_affine(r, 2), Affine).map(|m| Box::new(m) as Boxed);
        for_all_schedules(size, &mut make, &mut |out| {
            for r in 0..size {
                assert_eq!(out.results[r as usize], Some(affine_expected(0..r + 1, 2)));
            }
        });
        let mut make =
            |r| Exscan::new(r, size, enc_i64(&ints(r, 4)), i64_sum()).map(|m| Box::new(m) as Boxed);
        for_all_schedules(size, &mut make, &mut |out| {
            for r in 1..size {
                assert_eq!(out.results[r as usize], Some(enc_i64(&int_sum(0..r, 4))));
            }
        });
    }
    // Guard: this data tells a left fold from the tree grouping.
    assert_ne!(enc_f64(&left_sum(7, 3)), enc_f64(&tree_sum(0, 8, 3)));
}

#[test]
fn scan_and_exscan_by_recursive_doubling_keep_rank_order() {
    let algo = ScanAlgo::RecursiveDoubling;
    for &size in SIZES {
        // One message per rank per round whose partner exists.
        let rounds = |r: u32| {
            (0..32)
                .map(|b| 1u64 << b)
                .take_while(|&m| m < u64::from(size))
                .filter(|&m| (u64::from(r) ^ m) < u64::from(size))
                .count() as u64
        };
        let msgs: u64 = (0..size).map(rounds).sum();
        // A non-commutative operation: any fold out of rank order shows.
        let mut make =
            |r| Scan::with(r, size, enc_affine(r, 2), Affine, algo).map(|m| Box::new(m) as Boxed);
        for_all_schedules(size, &mut make, &mut |out| {
            count_msgs(out, msgs, "scan");
            for r in 0..size {
                assert_eq!(
                    out.results[r as usize],
                    Some(affine_expected(0..r + 1, 2)),
                    "P={size}"
                );
            }
        });
        let mut make =
            |r| Exscan::with(r, size, enc_affine(r, 2), Affine, algo).map(|m| Box::new(m) as Boxed);
        for_all_schedules(size, &mut make, &mut |out| {
            count_msgs(out, msgs, "exscan");
            assert_eq!(out.results[0], None);
            for r in 1..size {
                assert_eq!(
                    out.results[r as usize],
                    Some(affine_expected(0..r, 2)),
                    "P={size}"
                );
            }
        });
        let mut make = |r| {
            Exscan::with(r, size, enc_i64(&ints(r, 4)), i64_sum(), algo)
                .map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            for r in 1..size {
                assert_eq!(out.results[r as usize], Some(enc_i64(&int_sum(0..r, 4))));
            }
        });
    }
    assert_eq!("recursive_doubling".parse::<ScanAlgo>().ok(), Some(algo));
    assert_eq!("chain".parse::<ScanAlgo>().ok(), Some(ScanAlgo::Chain));
    assert!("ring".parse::<ScanAlgo>().is_err());
}

// ---------------------------------------------------------------- bcast

#[test]
fn bcast_scatter_allgather_from_every_root() {
    for &size in SQUARE_SIZES {
        for root in roots(size) {
            for len in [0usize, 1, 5, 100] {
                let payload = bytes(root, len, 8);
                let mut make = |r: u32| {
                    let data = if r == root {
                        payload.clone()
                    } else {
                        vec![0xEE; len]
                    };
                    ScatterAllgather::new(r, size, root, data).map(|m| Box::new(m) as Boxed)
                };
                for_all_schedules(size, &mut make, &mut |out| {
                    let p = u64::from(size);
                    count_msgs(out, (p - 1) + p * (p - 1), "scatter_allgather");
                    for r in 0..size as usize {
                        assert_eq!(
                            out.results[r].as_deref(),
                            Some(&payload[..]),
                            "P={size} root={root} len={len}"
                        );
                    }
                });
            }
        }
    }
}

#[test]
fn bcast_algo_names_and_auto() {
    for a in [
        BcastAlgo::Auto,
        BcastAlgo::Binomial,
        BcastAlgo::ScatterAllgather,
    ] {
        assert_eq!(a.name().parse::<BcastAlgo>(), Ok(a));
    }
    for a in [
        AllgatherAlgo::Auto,
        AllgatherAlgo::RecursiveDoubling,
        AllgatherAlgo::Ring,
    ] {
        assert_eq!(a.name().parse::<AllgatherAlgo>(), Ok(a));
    }
    for a in [AllreduceAlgo::Rabenseifner, AllreduceAlgo::Ring] {
        assert_eq!(a.name().parse::<AllreduceAlgo>(), Ok(a));
    }
    assert_eq!("scatter_allgather".parse(), Ok(BcastAlgo::ScatterAllgather));
    assert_eq!("binomial".parse(), Ok(BcastAlgo::Binomial));
    assert!("ring".parse::<BcastAlgo>().is_err());
    let big = lanai_coll::BCAST_AUTO_SCATTER_ALLGATHER_MIN;
    assert_eq!(BcastAlgo::Auto.resolve(8, big), BcastAlgo::ScatterAllgather);
    assert_eq!(BcastAlgo::Auto.resolve(8, big - 1), BcastAlgo::Binomial);
    assert_eq!(BcastAlgo::Auto.resolve(2, big), BcastAlgo::Binomial);
    // The builder runs either algorithm to the same result.
    for algo in [
        BcastAlgo::Auto,
        BcastAlgo::Binomial,
        BcastAlgo::ScatterAllgather,
    ] {
        let size = 5;
        let mut make = |r: u32| {
            let data = if r == 2 { vec![7; 33] } else { vec![0; 33] };
            bcast(r, size, 2, data, algo).map(|m| m as Boxed)
        };
        let out = run(size, &mut make, &mut RandomOrder::new(3)).unwrap();
        assert!(out
            .results
            .iter()
            .all(|x| x.as_deref() == Some(&[7u8; 33][..])));
    }
}

// ---------------------------------------------------------------- allreduce

const SPLIT: [AllreduceAlgo; 2] = [AllreduceAlgo::Rabenseifner, AllreduceAlgo::Ring];

#[test]
fn split_allreduces_are_bitwise_the_tree() {
    for &size in SQUARE_SIZES.iter().chain(&[32, 64]) {
        for algo in SPLIT {
            if size > 33 && algo == AllreduceAlgo::Ring {
                continue;
            }
            // Fewer elements than ranks (empty windows) and more.
            for n in [0usize, 3, 2 * size as usize + 1] {
                let want = enc_f64(&tree_sum(0, size, n));
                let mut make = |r| {
                    allreduce(r, size, enc_f64(&floats(r, n)), f64_sum(), algo).map(|m| m as Boxed)
                };
                for_all_schedules(size, &mut make, &mut |out| {
                    for r in 0..size as usize {
                        assert_eq!(
                            out.results[r].as_deref(),
                            Some(&want[..]),
                            "{algo:?} P={size} n={n}"
                        );
                    }
                });
            }
            let n = 5;
            let want = enc_i64(&int_sum(0..size, n));
            let mut make =
                |r| allreduce(r, size, enc_i64(&ints(r, n)), i64_sum(), algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| {
                assert!(
                    out.results.iter().all(|x| x.as_deref() == Some(&want[..])),
                    "{algo:?} P={size}"
                );
            });
            // Non-commutative, both with and without a known element size.
            let want = affine_expected(0..size, n);
            let mut make =
                |r| allreduce(r, size, enc_affine(r, n), Affine, algo).map(|m| m as Boxed);
            for_all_schedules(size, &mut make, &mut |out| {
                assert!(
                    out.results.iter().all(|x| x.as_deref() == Some(&want[..])),
                    "{algo:?} P={size}"
                );
            });
            let mut make =
                |r| allreduce(r, size, enc_affine(r, n), OpaqueAffine, algo).map(|m| m as Boxed);
            let out = run(size, &mut make, &mut RandomOrder::new(1)).unwrap();
            assert!(out.results.iter().all(|x| x.as_deref() == Some(&want[..])));
        }
    }
    assert_ne!(enc_f64(&left_sum(15, 5)), enc_f64(&tree_sum(0, 16, 5)));
}

#[test]
fn every_allreduce_algorithm_agrees_bitwise() {
    for size in [2u32, 3, 4, 6, 8, 16] {
        let n = 7;
        let mut results = Vec::new();
        for algo in [
            AllreduceAlgo::Auto,
            AllreduceAlgo::ReduceBcast,
            AllreduceAlgo::RecursiveDoubling,
            AllreduceAlgo::Rabenseifner,
            AllreduceAlgo::Ring,
        ] {
            if algo == AllreduceAlgo::RecursiveDoubling && !size.is_power_of_two() {
                continue;
            }
            let mut make =
                |r| allreduce(r, size, enc_f64(&floats(r, n)), f64_sum(), algo).map(|m| m as Boxed);
            let out = run(
                size,
                &mut make,
                &mut FurthestBehindLast::new(u64::from(size)),
            )
            .unwrap();
            results.push((algo, out.results));
        }
        for (algo, r) in &results {
            assert_eq!(r, &results[0].1, "{algo:?} P={size}");
        }
    }
}

#[test]
fn split_allreduce_constructors() {
    assert_eq!(
        Rabenseifner::new(0, 6, vec![0; 8], f64_sum(), 8).err(),
        Some(CollError::SizeNotPowerOfTwo { size: 6 })
    );
    assert_eq!(
        RingAllreduce::new(0, 3, vec![0; 12], f64_sum(), 8).err(),
        Some(CollError::NotWholeElements {
            len: 12,
            elem_size: 8
        })
    );
    assert_eq!(
        RingAllreduce::new(0, 3, vec![0; 8], f64_sum(), 0).err(),
        Some(CollError::NotWholeElements {
            len: 8,
            elem_size: 0
        })
    );
    // Direct use with a non-commutative op whose element size is given.
    for size in [1u32, 2, 4, 8] {
        let want = affine_expected(0..size, 9);
        let mut make = |r| {
            Rabenseifner::new(r, size, enc_affine(r, 9), Affine, 8).map(|m| Box::new(m) as Boxed)
        };
        for_all_schedules(size, &mut make, &mut |out| {
            assert!(out.results.iter().all(|x| x.as_deref() == Some(&want[..])));
        });
    }
}

// ---------------------------------------------------------------- exhaustive

#[test]
fn every_order_small() {
    for size in 1..=4u32 {
        let n = size as usize + 1;
        let affine_all = affine_expected(0..size, n);
        let checks: Vec<Case<'_>> = vec![
            (
                "rabenseifner",
                Box::new(move |r| {
                    if size.is_power_of_two() {
                        Rabenseifner::new(r, size, enc_affine(r, n), Affine, 8)
                            .map(|m| Box::new(m) as Boxed)
                    } else {
                        RingAllreduce::new(r, size, enc_affine(r, n), Affine, 8)
                            .map(|m| Box::new(m) as Boxed)
                    }
                }),
                Box::new({
                    let w = affine_all.clone();
                    move |_, out| assert!(out.results.iter().all(|x| x.as_deref() == Some(&w[..])))
                }),
            ),
            (
                "ring",
                Box::new(move |r| {
                    RingAllreduce::new(r, size, enc_affine(r, n), Affine, 8)
                        .map(|m| Box::new(m) as Boxed)
                }),
                Box::new({
                    let w = affine_all.clone();
                    move |_, out| assert!(out.results.iter().all(|x| x.as_deref() == Some(&w[..])))
                }),
            ),
            (
                "scan",
                Box::new(move |r| {
                    Scan::new(r, size, enc_affine(r, 1), Affine).map(|m| Box::new(m) as Boxed)
                }),
                Box::new(move |_, out| {
                    for r in 0..size {
                        assert_eq!(out.results[r as usize], Some(affine_expected(0..r + 1, 1)));
                    }
                }),
            ),
            (
                "exscan",
                Box::new(move |r| {
                    Exscan::new(r, size, enc_affine(r, 1), Affine).map(|m| Box::new(m) as Boxed)
                }),
                Box::new(move |_, out| {
                    assert_eq!(out.results[0], None);
                    for r in 1..size {
                        assert_eq!(out.results[r as usize], Some(affine_expected(0..r, 1)));
                    }
                }),
            ),
            (
                "reduce_scatter_block",
                Box::new(move |r| {
                    ReduceScatterBlock::new(r, size, enc_affine(r, size as usize), Affine)
                        .map(|m| Box::new(m) as Boxed)
                }),
                Box::new(move |_, out| {
                    let w = affine_expected(0..size, size as usize);
                    for r in 0..size as usize {
                        assert_eq!(out.results[r].as_deref(), Some(&w[8 * r..8 * r + 8]));
                    }
                }),
            ),
            (
                "allgather",
                Box::new(move |r| {
                    Allgather::new(r, size, vec![r as u8; 2], AllgatherAlgo::Auto)
                        .map(|m| Box::new(m) as Boxed)
                }),
                Box::new(move |_, out| {
                    let w: Vec<u8> = (0..size).flat_map(|r| [r as u8; 2]).collect();
                    assert!(out.results.iter().all(|x| x.as_deref() == Some(&w[..])));
                }),
            ),
            (
                "alltoall",
                Box::new(move |r| {
                    Alltoall::new(r, size, (0..size).map(|j| (r * 10 + j) as u8).collect())
                        .map(|m| Box::new(m) as Boxed)
                }),
                Box::new(move |_, out| {
                    for j in 0..size {
                        let w: Vec<u8> = (0..size).map(|i| (i * 10 + j) as u8).collect();
                        assert_eq!(out.results[j as usize], Some(w));
                    }
                }),
            ),
        ];
        for (name, mut make, check) in checks {
            if name == "rabenseifner" && !size.is_power_of_two() {
                continue; // it runs as ring, enumerated next
            }
            if size == 4 && !matches!(name, "scan" | "exscan") {
                // Quadratic message counts make P = 4 too large to enumerate.
                continue;
            }
            let t = std::time::Instant::now();
            // Quadratic machines: construction order too only up to P = 2.
            let quadratic = !matches!(name, "scan" | "exscan");
            let branch = size <= if quadratic { 2 } else { 3 };
            let runs = every_order_with(size, branch, make.as_mut(), &mut |out| check(size, out));
            eprintln!("{name} P={size}: {runs} runs {:?}", t.elapsed());
        }
        for root in 0..size {
            let all: Vec<u8> = (0..size as u8).collect();
            let mut make =
                |r| Gather::new(r, size, root, vec![r as u8]).map(|m| Box::new(m) as Boxed);
            every_order(size, &mut make, &mut |out| {
                assert_eq!(out.results[root as usize].as_deref(), Some(&all[..]));
            });
            let mut make =
                |r: u32| Scatter::new(r, size, root, all.clone(), 1).map(|m| Box::new(m) as Boxed);
            every_order(size, &mut make, &mut |out| {
                for r in 0..size {
                    assert_eq!(out.results[r as usize], Some(vec![r as u8]));
                }
            });
            if size == 4 {
                continue;
            }
            let payload = vec![root as u8 + 1; 7];
            let mut make = |r: u32| {
                let d = if r == root {
                    payload.clone()
                } else {
                    vec![0; 7]
                };
                ScatterAllgather::new(r, size, root, d).map(|m| Box::new(m) as Boxed)
            };
            every_order(size, &mut make, &mut |out| {
                assert!(out
                    .results
                    .iter()
                    .all(|x| x.as_deref() == Some(&payload[..])));
            });
        }
    }
}

// ---------------------------------------------------------------- errors

fn first_msg(m: &mut dyn Collective, to: u32) -> Vec<u8> {
    std::iter::from_fn(|| m.poll_send())
        .find(|o| o.to == to)
        .expect("a message to that rank")
        .to_bytes()
}

#[test]
fn constructor_argument_errors() {
    let lay3 = Layout::packed(vec![1, 2, 3]).unwrap();
    assert_eq!(
        Gatherv::new(0, 4, 0, vec![0], &lay3).err(),
        Some(CollError::CountsLengthMismatch {
            expected: 4,
            got: 3
        })
    );
    assert_eq!(
        Gatherv::new(1, 3, 1, vec![0], &lay3).err(),
        Some(CollError::LocalLengthMismatch {
            expected: 2,
            got: 1
        })
    );
    // Non-roots do not read the layout.
    assert!(Gatherv::new(1, 3, 0, vec![0], &Layout::default()).is_ok());
    assert_eq!(
        Scatter::new(0, 3, 0, vec![0; 5], 2).err(),
        Some(CollError::LocalLengthMismatch {
            expected: 6,
            got: 5
        })
    );
    assert_eq!(
        Scatterv::new(0, 3, 0, vec![0; 5], &lay3, 1).err(),
        Some(CollError::BlockBeyondBuffer { end: 6, len: 5 })
    );
    assert_eq!(
        Alltoall::new(0, 3, vec![0; 5]).err(),
        Some(CollError::NotWholeElements {
            len: 5,
            elem_size: 3
        })
    );
    assert_eq!(
        Allgather::new(0, 6, vec![], AllgatherAlgo::RecursiveDoubling).err(),
        Some(CollError::SizeNotPowerOfTwo { size: 6 })
    );
    assert_eq!(
        ReduceScatter::new(0, 3, vec![0; 5], &[1, 2, 3], i64_sum()).err(),
        Some(CollError::LocalLengthMismatch {
            expected: 6,
            got: 5
        })
    );
    assert_eq!(
        Layout::new(vec![1], vec![usize::MAX]).err(),
        Some(CollError::SizeOverflow)
    );
    assert_eq!(
        Layout::packed(vec![usize::MAX - 1, 1]).map(|l| l.extent()),
        Ok(usize::MAX)
    );
    assert_eq!(
        Layout::packed(vec![usize::MAX, 1]).err(),
        Some(CollError::SizeOverflow)
    );
    assert_eq!(
        Scan::new(3, 3, vec![], i64_sum()).err(),
        Some(CollError::RankOutOfRange { rank: 3, size: 3 })
    );
    assert_eq!(
        ScatterAllgather::new(0, 3, 3, vec![]).err(),
        Some(CollError::RootOutOfRange { root: 3, size: 3 })
    );
    for e in [
        CollError::CountsLengthMismatch {
            expected: 4,
            got: 3,
        },
        CollError::LocalLengthMismatch {
            expected: 2,
            got: 1,
        },
        CollError::BlockBeyondBuffer { end: 6, len: 5 },
        CollError::SizeOverflow,
        CollError::NotWholeElements {
            len: 5,
            elem_size: 3,
        },
        CollError::InvalidPlan { reason: "x" },
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn peer_misbehaviour_is_an_error() {
    // Scan over 3: rank 1 waits for rank 0's prefix.
    let mut s0 = Scan::new(0, 3, enc_i64(&[5]), i64_sum()).unwrap();
    let m = first_msg(&mut s0, 1);
    let mut s1 = Scan::new(1, 3, enc_i64(&[1]), i64_sum()).unwrap();
    assert!(matches!(
        s1.handle_message(0, &[]),
        Err(CollError::MalformedMessage { from: 0, .. })
    ));
    assert!(matches!(
        s1.handle_message(0, &m[..m.len() - 1]),
        Err(CollError::DataLengthMismatch {
            from: 0,
            expected: 8,
            got: 7
        })
    ));
    assert!(matches!(
        s1.handle_message(2, &m),
        Err(CollError::UnexpectedMessage { from: 2, .. })
    ));
    assert!(matches!(
        s1.handle_message(0, &[m[0], 9, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(CollError::UnexpectedMessage { .. })
    ));
    assert!(matches!(
        s1.handle_message(0, &[99, 0]),
        Err(CollError::UnexpectedMessage { .. })
    ));
    s1.handle_message(0, &m).unwrap();
    assert!(matches!(
        s1.handle_message(0, &m),
        Err(CollError::DuplicateMessage { from: 0, .. })
    ));
    assert_eq!(first_msg(&mut s1, 2), {
        let mut v = vec![m[0], 0];
        v.extend(enc_i64(&[6]));
        v
    });
    assert!(s1.is_done());
    assert_eq!(s1.take_result(), Some(enc_i64(&[6])));
    assert_eq!(s1.take_result(), None);

    // Early duplicate in a ring allgather (both arrive before they are needed).
    let mut a0 = Allgather::new(0, 3, vec![1], AllgatherAlgo::Ring).unwrap();
    let mut a2 = Allgather::new(2, 3, vec![3], AllgatherAlgo::Ring).unwrap();
    let m = first_msg(&mut a2, 0);
    a0.handle_message(2, &m).unwrap();
    assert!(matches!(
        a0.handle_message(2, &m),
        Err(CollError::UnexpectedMessage { .. } | CollError::DuplicateMessage { .. })
    ));

    // An op undefined on the data surfaces when combining.
    let band = Predefined {
        op: Op::Band,
        elem: Elem::F64,
    };
    let mut r1 = ReduceScatterBlock::new(1, 2, vec![0; 16], band).unwrap();
    let m = first_msg(&mut r1, 0);
    let mut r0 = ReduceScatterBlock::new(0, 2, vec![0; 16], band).unwrap();
    assert_eq!(
        r0.handle_message(1, &m),
        Err(CollError::Op(OpError::UndefinedForElement {
            op: Op::Band,
            elem: Elem::F64
        }))
    );
}

#[test]
fn random_garbage_never_panics() {
    let mut rng = XorShift::new(4242);
    for _ in 0..1500 {
        let size = 1 + rng.below(9) as u32;
        let rank = rng.below(size as usize) as u32;
        let root = rng.below(size as usize) as u32;
        let lay = Layout::uniform(size, 2).unwrap();
        let mut ms: Vec<Boxed> = vec![
            Box::new(Gather::new(rank, size, root, vec![0; 2]).unwrap()),
            Box::new(Gatherv::new(rank, size, root, vec![0; 2], &lay).unwrap()),
            Box::new(Scatter::new(rank, size, root, vec![0; 2 * size as usize], 2).unwrap()),
            Box::new(Scatterv::new(rank, size, root, vec![0; 2 * size as usize], &lay, 2).unwrap()),
            Box::new(Allgather::new(rank, size, vec![0; 2], AllgatherAlgo::Auto).unwrap()),
            Box::new(Allgatherv::new(rank, size, vec![0; 2], &lay).unwrap()),
            Box::new(Alltoall::new(rank, size, vec![0; 2 * size as usize]).unwrap()),
            Box::new(
                ReduceScatterBlock::new(rank, size, vec![0; 8 * size as usize], i64_sum()).unwrap(),
            ),
            Box::new(Scan::new(rank, size, vec![0; 8], i64_sum()).unwrap()),
            Box::new(Exscan::new(rank, size, vec![0; 8], i64_sum()).unwrap()),
            Box::new(ScatterAllgather::new(rank, size, root, vec![0; 8]).unwrap()),
            allreduce(
                rank,
                size,
                vec![0; 16],
                i64_sum(),
                AllreduceAlgo::Rabenseifner,
            )
            .unwrap(),
            allreduce(rank, size, vec![0; 16], i64_sum(), AllreduceAlgo::Ring).unwrap(),
        ];
        for m in &mut ms {
            while m.poll_send().is_some() {}
            for _ in 0..4 {
                let len = rng.below(20);
                let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                if len >= 2 {
                    data[0] = 10 + data[0] % 20;
                    data[1] %= 3;
                }
                let from = rng.below(size as usize + 1) as u32;
                let _ = m.handle_message(from, &data);
                while m.poll_send().is_some() {}
                let _ = m.take_result();
            }
        }
    }
}
