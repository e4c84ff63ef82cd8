//! Gather: binomial tree for equal blocks, linear for per-rank counts.

use crate::error::CollError;
use crate::layout::{check_local, Layout};
use crate::machine::{check_rank, check_root, kind};
use crate::schedule::{mul, scheduled_collective, Apply, NoCombine, Plan, Schedule, Step};
use crate::tree::{self, Relative};

/// Ranks `v..v + subtree_len(v)` (relative to the root) form `v`'s binomial subtree.
pub(crate) fn subtree_len(v: u32, size: u32) -> u32 {
    if v == 0 {
        size
    } else {
        (1u32 << v.trailing_zeros()).min(size - v)
    }
}

/// Gather of equal-length blocks to `root`, up the binomial tree rooted there.
///
/// Each rank passes its block; the root's result is every block in rank order.
pub struct Gather {
    inner: Schedule<NoCombine>,
}

impl Gather {
    pub fn new(rank: u32, size: u32, root: u32, data: Vec<u8>) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let rel = Relative { root, size };
        let v = rel.to_rel(rank);
        let b = data.len();
        // The buffer holds this subtree's blocks in relative-rank order.
        let mut buf = data;
        buf.resize(mul(subtree_len(v, size) as usize, b)?, 0);
        let mut steps = Vec::new();
        for (_, c) in tree::children(v, size) {
            let start = mul((c - v) as usize, b)?;
            steps.push(Step::Recv {
                from: rel.to_abs(c),
                kind: kind::GATHER,
                range: start..start + mul(subtree_len(c, size) as usize, b)?,
                apply: Apply::Store,
            });
        }
        let result = match tree::parent(v) {
            Some((_, p)) => {
                steps.push(Step::Send {
                    to: rel.to_abs(p),
                    kind: kind::GATHER,
                    range: 0..buf.len(),
                });
                None
            }
            None => Some(
                (0..size)
                    .map(|a| {
                        let u = rel.to_rel(a) as usize;
                        u * b..(u + 1) * b
                    })
                    .collect(),
            ),
        };
        let plan = Plan { steps, buf, result };
        Ok(Gather {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Gather);

/// Gather of per-rank byte counts: every rank sends straight to the root.
///
/// The root's result is its receive buffer of `recv.extent()` bytes with rank
/// `r`'s block at `recv.block(r)`; bytes outside every block are zero. `recv`
/// is read only on the root.
pub struct Gatherv {
    inner: Schedule<NoCombine>,
}

impl Gatherv {
    pub fn new(
        rank: u32,
        size: u32,
        root: u32,
        data: Vec<u8>,
        recv: &Layout,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let plan = if rank == root {
            recv.check_size(size)?;
            check_local(recv.block(rank).len(), data.len())?;
            let mut buf = vec![0; recv.extent()];
            buf[recv.block(rank)].copy_from_slice(&data);
            let steps = (1..size)
                .map(|i| {
                    let r = Relative { root, size }.to_abs(i);
                    Step::Recv {
                        from: r,
                        kind: kind::GATHERV,
                        range: recv.block(r),
                        apply: Apply::Store,
                    }
                })
                .collect();
            let len = buf.len();
            Plan {
                steps,
                buf,
                result: Some(vec![0..len]),
            }
        } else {
            Plan {
                steps: vec![Step::Send {
                    to: root,
                    kind: kind::GATHERV,
                    range: 0..data.len(),
                }],
                buf: data,
                result: None,
            }
        };
        Ok(Gatherv {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Gatherv);
