//! The binomial tree over ranks `0..size` rooted at 0.
//!
//! Node `v` has children `v + 2^k` for every `2^k` below `v`'s lowest set bit
//! (all `k` for the root) while `v + 2^k < size`; child `v + 2^k` roots the
//! consecutive range `v + 2^k .. min(v + 2^(k+1), size)`. So taking children in
//! ascending `k` visits higher rank ranges in order, which is what keeps
//! reductions in rank order.

/// Children of `v` as `(k, v + 2^k)`, ascending `k`.
pub(crate) fn children(v: u32, size: u32) -> impl DoubleEndedIterator<Item = (u8, u32)> {
    let limit: u64 = if v == 0 {
        u64::MAX
    } else {
        1u64 << v.trailing_zeros()
    };
    let (v, size) = (u64::from(v), u64::from(size));
    let count = (0u8..32)
        .take_while(|&k| {
            let d = 1u64 << k;
            d < limit && v + d < size
        })
        .count();
    // `v + 2^k < size <= u32::MAX + 1`, so the child fits in u32.
    (0..count as u8).map(move |k| (k, (v + (1u64 << k)) as u32))
}

/// Parent of `v` as `(k, v - 2^k)` where `2^k` is `v`'s lowest set bit; `None` for the root.
pub(crate) fn parent(v: u32) -> Option<(u8, u32)> {
    if v == 0 {
        None
    } else {
        let k = v.trailing_zeros();
        Some((k as u8, v - (1u32 << k)))
    }
}

/// Children of `v` in the k-ary tree over `0..size` rooted at 0 (heap
/// order: `k*v + 1 ..= k*v + k`), ascending.
pub(crate) fn kary_children(v: u32, size: u32, k: u32) -> impl Iterator<Item = u32> {
    let first = u64::from(v) * u64::from(k) + 1;
    let end = (first + u64::from(k)).min(u64::from(size));
    // Every value is below `size`, so it fits in u32.
    (first..end.max(first)).map(|c| c as u32)
}

/// Parent of `v` in the k-ary tree; `None` for the root.
pub(crate) fn kary_parent(v: u32, k: u32) -> Option<u32> {
    (v > 0).then(|| (v - 1) / k)
}

/// Depth of the k-ary tree over `0..size` (0 for a single node).
pub(crate) fn kary_depth(size: u32, k: u32) -> u32 {
    let (mut depth, mut covered, mut level) = (0u32, 1u64, 1u64);
    while covered < u64::from(size) {
        level = level.saturating_mul(u64::from(k.max(1)));
        covered = covered.saturating_add(level);
        depth += 1;
    }
    depth
}

/// Converts between absolute ranks and ranks relative to `root`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Relative {
    pub root: u32,
    pub size: u32,
}

impl Relative {
    pub fn to_rel(self, abs: u32) -> u32 {
        ((u64::from(abs) + u64::from(self.size) - u64::from(self.root)) % u64::from(self.size))
            as u32
    }
    pub fn to_abs(self, rel: u32) -> u32 {
        ((u64::from(rel) + u64::from(self.root)) % u64::from(self.size)) as u32
    }
}

/// `ceil(log2(n))` for `n >= 1`.
pub(crate) fn ceil_log2(n: u32) -> u8 {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_but_root_is_a_child_of_its_parent_once() {
        for size in 1..=70u32 {
            let mut seen = vec![0u32; size as usize];
            for v in 0..size {
                for (k, c) in children(v, size) {
                    assert_eq!(parent(c), Some((k, v)));
                    seen[c as usize] += 1;
                }
            }
            assert_eq!(seen[0], 0);
            assert!(seen[1..].iter().all(|&n| n == 1), "size {size}");
        }
    }

    #[test]
    fn kary_tree_is_consistent() {
        for k in 1..=9u32 {
            for size in 1..=60u32 {
                let mut seen = vec![0u32; size as usize];
                for v in 0..size {
                    for c in kary_children(v, size, k) {
                        assert_eq!(kary_parent(c, k), Some(v));
                        seen[c as usize] += 1;
                    }
                    assert!(kary_children(v, size, k).count() <= k as usize);
                }
                assert_eq!(seen[0], 0);
                assert!(seen[1..].iter().all(|&n| n == 1), "k {k} size {size}");
            }
        }
    }

    #[test]
    fn kary_depths() {
        assert_eq!(kary_depth(1, 4), 0);
        assert_eq!(kary_depth(2, 4), 1);
        assert_eq!(kary_depth(5, 4), 1);
        assert_eq!(kary_depth(6, 4), 2);
        assert_eq!(kary_depth(8, 2), 3);
        assert_eq!(kary_depth(7, 2), 2);
        assert_eq!(kary_depth(4, 1), 3);
        for k in 1..=5u32 {
            for size in 1..=60u32 {
                let deepest = (0..size)
                    .map(|mut v| {
                        let mut d = 0;
                        while let Some(p) = kary_parent(v, k) {
                            v = p;
                            d += 1;
                        }
                        d
                    })
                    .max()
                    .unwrap();
                assert_eq!(kary_depth(size, k), deepest, "k {k} size {size}");
            }
        }
    }

    #[test]
    fn children_of_root_for_six() {
        let c: Vec<_> = children(0, 6).collect();
        assert_eq!(c, vec![(0, 1), (1, 2), (2, 4)]);
        let c: Vec<_> = children(4, 6).collect();
        assert_eq!(c, vec![(0, 5)]);
        assert_eq!(children(5, 6).count(), 0);
    }

    #[test]
    fn ceil_log2_values() {
        let want = [
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (8, 3),
            (9, 4),
            (64, 6),
        ];
        for (n, l) in want {
            assert_eq!(ceil_log2(n), l, "n={n}");
        }
        assert_eq!(ceil_log2(u32::MAX), 32);
    }

    #[test]
    fn relative_round_trips() {
        let r = Relative { root: 3, size: 5 };
        for a in 0..5 {
            assert_eq!(r.to_abs(r.to_rel(a)), a);
        }
        assert_eq!(r.to_rel(3), 0);
        assert_eq!(r.to_rel(2), 4);
    }
}
