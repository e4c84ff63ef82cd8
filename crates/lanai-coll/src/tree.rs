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

/// The range tree of fan-out `k` over `0..size` rooted at 0: node `v` roots
/// a contiguous range `v..end`, and splits `v + 1..end` into `min(k, len)`
/// consecutive chunks of near-equal length (longer ones first), each rooted
/// at its first rank. Contiguous subtrees let a reduction fold in rank order
/// at any fan-out; `k = 1` is a chain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RangeTree {
    pub size: u32,
    pub k: u32,
}

/// How `v + 1..end` splits: `count` chunks, the first `long` of them one
/// longer than `base`.
struct Split {
    count: u64,
    base: u64,
    long: u64,
}

impl RangeTree {
    fn split(&self, v: u32, end: u32) -> Split {
        let len = u64::from(end) - u64::from(v) - 1;
        let count = len.min(u64::from(self.k.max(1)));
        if count == 0 {
            return Split {
                count,
                base: 0,
                long: 0,
            };
        }
        Split {
            count,
            base: len / count,
            long: len % count,
        }
    }

    /// Start of chunk `i` of `v`'s split.
    fn chunk_start(v: u32, s: &Split, i: u64) -> u64 {
        u64::from(v) + 1 + i * s.base + i.min(s.long)
    }

    /// `v`'s parent and the end of `v`'s range. `v < size`.
    pub fn locate(&self, v: u32) -> (Option<u32>, u32) {
        let (mut node, mut end, mut parent) = (0u32, self.size, None);
        while node != v {
            let s = self.split(node, end);
            // The chunk holding `v`: the long ones first, then the base ones.
            let off = u64::from(v) - u64::from(node) - 1;
            let i = if off < s.long * (s.base + 1) {
                off / (s.base + 1)
            } else {
                s.long + (off - s.long * (s.base + 1)) / s.base
            };
            let start = Self::chunk_start(node, &s, i);
            let len = s.base + u64::from(i < s.long);
            parent = Some(node);
            // Both stay within `0..=size`, so they fit in u32.
            (node, end) = (start as u32, (start + len) as u32);
        }
        (parent, end)
    }

    /// Children of `v`, ascending.
    pub fn children(&self, v: u32) -> Vec<u32> {
        let (_, end) = self.locate(v);
        let s = self.split(v, end);
        (0..s.count)
            .map(|i| Self::chunk_start(v, &s, i) as u32)
            .collect()
    }
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
    fn range_tree_is_consistent_and_contiguous() {
        for k in 1..=9u32 {
            for size in 1..=40u32 {
                let t = RangeTree { size, k };
                let mut seen = vec![0u32; size as usize];
                for v in 0..size {
                    let kids = t.children(v);
                    assert!(kids.len() <= k as usize);
                    let (_, end) = t.locate(v);
                    // The children's ranges tile v + 1..end in order.
                    let mut at = v + 1;
                    for &c in &kids {
                        assert_eq!(c, at, "k {k} size {size} v {v}");
                        assert_eq!(t.locate(c).0, Some(v));
                        at = t.locate(c).1;
                        seen[c as usize] += 1;
                    }
                    assert_eq!(at.max(v + 1), end.max(v + 1), "k {k} size {size} v {v}");
                }
                assert_eq!(t.locate(0), (None, size));
                assert_eq!(seen[0], 0);
                assert!(seen[1..].iter().all(|&n| n == 1), "k {k} size {size}");
            }
        }
        // k = 1 is a chain; a large k is flat.
        assert_eq!(RangeTree { size: 5, k: 1 }.children(2), vec![3]);
        assert_eq!(RangeTree { size: 5, k: 9 }.children(0), vec![1, 2, 3, 4]);
        assert_eq!(RangeTree { size: 8, k: 2 }.children(0), vec![1, 5]);
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
