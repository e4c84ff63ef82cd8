//! The flattened form of a datatype: contiguous byte runs in type-map order,
//! with strided runs and nested repeats so that regular types stay small
//! (a vector of a million elements is one `Run::Block`, not a million).
//!
//! Offsets are byte displacements from the user buffer's origin (the address
//! the MPI caller passed), exactly like type-map displacements.

use std::ops::ControlFlow;
use std::sync::Arc;

/// Expand a repeat inline instead of nesting when it yields at most this
/// many runs: short loops cost more to walk than to list.
const INLINE_EXPAND_LIMIT: u64 = 32;

/// One entry of a flattened type map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// `count` blocks of `len` contiguous bytes at `offset + k * stride`.
    Block {
        offset: i64,
        len: u64,
        stride: i64,
        count: u64,
    },
    /// `count` copies of `body` placed at `offset + k * stride`.
    Repeat {
        offset: i64,
        stride: i64,
        count: u64,
        body: Arc<Flat>,
    },
}

impl Run {
    /// Bytes this run contributes to the packed stream.
    pub fn packed_len(&self) -> u64 {
        match self {
            Run::Block { len, count, .. } => len * count,
            Run::Repeat { count, body, .. } => body.size() * count,
        }
    }

    fn shifted(&self, by: i64) -> Run {
        let mut r = self.clone();
        match &mut r {
            Run::Block { offset, .. } | Run::Repeat { offset, .. } => {
                *offset = offset.wrapping_add(by)
            }
        }
        r
    }
}

/// A flattened type map: runs in type-map order, plus their cumulative
/// packed sizes for seeking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flat {
    runs: Vec<Run>,
    /// `ends[i]` = packed bytes up to and including run `i`.
    ends: Vec<u64>,
}

impl Flat {
    /// The runs, in type-map order.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Packed size of one instance.
    pub fn size(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Contiguous pieces of one instance, as listed (adjacent pieces that
    /// the runs keep apart count twice): what a transfer that moves piece
    /// by piece would handle.
    pub fn pieces(&self) -> u64 {
        self.runs
            .iter()
            .map(|r| match r {
                Run::Block { count, .. } => *count,
                Run::Repeat { count, body, .. } => count.saturating_mul(body.pieces()),
            })
            .fold(0, u64::saturating_add)
    }

    /// Appends a run, merging it into the previous one where the bytes
    /// continue contiguously or the stride continues regularly.
    pub(crate) fn push(&mut self, run: Run) {
        let run = match run {
            Run::Block { len: 0, .. } | Run::Block { count: 0, .. } => return,
            Run::Repeat { count: 0, .. } => return,
            Run::Repeat { ref body, .. } if body.size() == 0 => return,
            Run::Block {
                offset,
                len,
                stride,
                count,
            } => normalize_block(offset, len, stride, count),
            r => r,
        };
        let added = run.packed_len();
        if let (
            Some(Run::Block {
                offset: po,
                len: pl,
                stride: ps,
                count: pc,
            }),
            Run::Block {
                offset,
                len,
                count: 1,
                ..
            },
        ) = (self.runs.last_mut(), &run)
        {
            if *pc == 1 && po.wrapping_add(*pl as i64) == *offset {
                *pl += len;
                *self
                    .ends
                    .last_mut()
                    .expect("runs and ends have equal length") += added;
                return;
            }
            if *pl == *len {
                let next = po.wrapping_add(ps.wrapping_mul(*pc as i64));
                if *pc == 1 || next == *offset {
                    if *pc == 1 {
                        *ps = offset.wrapping_sub(*po);
                    }
                    *pc += 1;
                    *self
                        .ends
                        .last_mut()
                        .expect("runs and ends have equal length") += added;
                    return;
                }
            }
        }
        let end = self.size() + added;
        self.runs.push(run);
        self.ends.push(end);
    }

    /// Appends every run of `other`, shifted by `by` bytes.
    pub(crate) fn append_shifted(&mut self, other: &Flat, by: i64) {
        for r in &other.runs {
            self.push(r.shifted(by));
        }
    }

    /// `count` copies of `body`, copy `k` shifted by `k * stride`.
    pub(crate) fn repeat(body: &Arc<Flat>, count: u64, stride: i64) -> Flat {
        if count == 0 || body.size() == 0 {
            return Flat::default();
        }
        if count == 1 {
            return (**body).clone();
        }
        if let [Run::Block {
            offset,
            len,
            stride: s,
            count: c,
        }] = body.runs.as_slice()
        {
            if *c == 1 {
                let mut f = Flat::default();
                f.push(Run::Block {
                    offset: *offset,
                    len: *len,
                    stride,
                    count,
                });
                return f;
            }
            if s.checked_mul(*c as i64) == Some(stride) {
                let mut f = Flat::default();
                f.push(Run::Block {
                    offset: *offset,
                    len: *len,
                    stride: *s,
                    count: c * count,
                });
                return f;
            }
        }
        let mut f = Flat::default();
        if (body.runs.len() as u64).saturating_mul(count) <= INLINE_EXPAND_LIMIT {
            for k in 0..count {
                f.append_shifted(body, stride.wrapping_mul(k as i64));
            }
        } else {
            f.push(Run::Repeat {
                offset: 0,
                stride,
                count,
                body: Arc::clone(body),
            });
        }
        f
    }

    /// Calls `f(offset, len)` for the contiguous pieces covering packed
    /// bytes `[skip, skip + *budget)` of one instance placed at `base`,
    /// decrementing `*budget` as it goes. `f` may stop the walk early.
    pub(crate) fn walk<B>(
        &self,
        base: i64,
        skip: u64,
        budget: &mut u64,
        f: &mut impl FnMut(i64, u64) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        let first = self.ends.partition_point(|&e| e <= skip);
        let mut skip = match first {
            0 => skip,
            i => skip - self.ends[i - 1],
        };
        for run in &self.runs[first.min(self.runs.len())..] {
            if *budget == 0 {
                break;
            }
            match run {
                Run::Block {
                    offset,
                    len,
                    stride,
                    count,
                } => {
                    let mut within = skip % len;
                    for k in skip / len..*count {
                        let at = base
                            .wrapping_add(*offset)
                            .wrapping_add(stride.wrapping_mul(k as i64))
                            .wrapping_add(within as i64);
                        let n = (len - within).min(*budget);
                        *budget -= n;
                        f(at, n)?;
                        within = 0;
                        if *budget == 0 {
                            break;
                        }
                    }
                }
                Run::Repeat {
                    offset,
                    stride,
                    count,
                    body,
                } => {
                    let bsize = body.size();
                    let mut within = skip % bsize;
                    for k in skip / bsize..*count {
                        let at = base
                            .wrapping_add(*offset)
                            .wrapping_add(stride.wrapping_mul(k as i64));
                        body.walk(at, within, budget, f)?;
                        within = 0;
                        if *budget == 0 {
                            break;
                        }
                    }
                }
            }
            skip = 0;
        }
        ControlFlow::Continue(())
    }
}

fn normalize_block(offset: i64, len: u64, stride: i64, count: u64) -> Run {
    if count == 1 {
        Run::Block {
            offset,
            len,
            stride: 0,
            count: 1,
        }
    } else if i64::try_from(len).ok() == Some(stride) {
        Run::Block {
            offset,
            len: len * count,
            stride: 0,
            count: 1,
        }
    } else {
        Run::Block {
            offset,
            len,
            stride,
            count,
        }
    }
}
