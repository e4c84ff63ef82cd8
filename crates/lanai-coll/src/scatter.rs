//! Scatter: binomial tree for equal blocks, linear for per-rank counts.

use crate::error::CollError;
use crate::gather::subtree_len;
use crate::layout::{check_local, Layout};
use crate::machine::{check_rank, check_root, kind};
use crate::schedule::{mul, scheduled_collective, Apply, NoCombine, Plan, Schedule, Step};
use crate::tree::{self, Relative};

/// Scatter of equal `block`-byte blocks from `root`, down the binomial tree.
///
/// On the root `data` holds `size * block` bytes, block `r` for rank `r`; it
/// is ignored elsewhere. Every rank's result is its block.
pub struct Scatter {
    inner: Schedule<NoCombine>,
}

impl Scatter {
    pub fn new(
        rank: u32,
        size: u32,
        root: u32,
        data: Vec<u8>,
        block: usize,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let rel = Relative { root, size };
        let v = rel.to_rel(rank);
        let b = block;
        let mut steps = Vec::new();
        // The buffer holds this subtree's blocks in relative-rank order.
        let buf = if v == 0 {
            check_local(mul(size as usize, b)?, data.len())?;
            let mut buf = Vec::with_capacity(data.len());
            for u in 0..size {
                let a = rel.to_abs(u) as usize;
                buf.extend_from_slice(&data[a * b..(a + 1) * b]);
            }
            buf
        } else {
            let len = mul(subtree_len(v, size) as usize, b)?;
            if let Some((_, p)) = tree::parent(v) {
                steps.push(Step::Recv {
                    from: rel.to_abs(p),
                    kind: kind::SCATTER,
                    range: 0..len,
                    apply: Apply::Store,
                });
            }
            vec![0; len]
        };
        // Largest subtree first: it has the longest way to go.
        for (_, c) in tree::children(v, size).rev() {
            let start = mul((c - v) as usize, b)?;
            steps.push(Step::Send {
                to: rel.to_abs(c),
                kind: kind::SCATTER,
                range: start..start + mul(subtree_len(c, size) as usize, b)?,
            });
        }
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![0..b]),
        };
        Ok(Scatter {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Scatter);

/// Scatter of per-rank byte counts: the root sends each block straight out.
///
/// On the root `data` is the send buffer and `send` its blocks (both ignored
/// elsewhere); every rank's result is its `recv_len`-byte block.
pub struct Scatterv {
    inner: Schedule<NoCombine>,
}

impl Scatterv {
    pub fn new(
        rank: u32,
        size: u32,
        root: u32,
        data: Vec<u8>,
        send: &Layout,
        recv_len: usize,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let plan = if rank == root {
            send.check_size(size)?;
            if send.extent() > data.len() {
                return Err(CollError::BlockBeyondBuffer {
                    end: send.extent(),
                    len: data.len(),
                });
            }
            check_local(send.block(rank).len(), recv_len)?;
            let steps = (1..size)
                .map(|i| {
                    let r = Relative { root, size }.to_abs(i);
                    Step::Send {
                        to: r,
                        kind: kind::SCATTERV,
                        range: send.block(r),
                    }
                })
                .collect();
            Plan {
                steps,
                buf: data,
                result: Some(vec![send.block(rank)]),
            }
        } else {
            Plan {
                steps: vec![Step::Recv {
                    from: root,
                    kind: kind::SCATTERV,
                    range: 0..recv_len,
                    apply: Apply::Store,
                }],
                buf: vec![0; recv_len],
                result: Some(vec![0..recv_len]),
            }
        };
        Ok(Scatterv {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Scatterv);
