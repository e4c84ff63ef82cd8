//! Inclusive and exclusive scan, two ways.
//!
//! - Along a chain: rank `r` waits for the prefix of ranks `0..r` from
//!   `r - 1`, folds its own data in and passes the result on, so every
//!   prefix is the left fold `((x0 op x1) op x2) ...` in rank order. Each
//!   vector crosses each link once, but the last rank waits for `size - 1`
//!   messages in sequence.
//! - Recursive doubling: in round `k` each rank exchanges the fold of its
//!   aligned block of `2^k` ranks with rank `r ^ 2^k` and folds the other
//!   block in on its side (lower ranks on the left, so non-commutative
//!   operations keep rank order), taking it into its result when it lies
//!   below. `ceil(log2 size)` rounds, each moving the whole vector.
//!
//! The two group the operands differently, so floating-point prefixes may
//! differ in their last bits between them; every member must use the same.

use std::fmt;
use std::str::FromStr;

use crate::allreduce::UnknownAlgorithm;
use crate::error::CollError;
use crate::machine::{check_rank, kind};
use crate::ops::Combine;
use crate::schedule::{scheduled_collective, Apply, Plan, Schedule, Step};

/// How a scan's prefixes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanAlgo {
    Chain,
    RecursiveDoubling,
}

impl ScanAlgo {
    /// Knob spelling of the algorithm.
    pub const fn name(self) -> &'static str {
        match self {
            ScanAlgo::Chain => "chain",
            ScanAlgo::RecursiveDoubling => "recursive_doubling",
        }
    }
}

impl FromStr for ScanAlgo {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [ScanAlgo::Chain, ScanAlgo::RecursiveDoubling]
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

impl fmt::Display for ScanAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Recursive doubling's program for `rank`, over `[partial | result |
/// incoming]`: `partial` folds the rank's aligned block so far, `result`
/// its prefix (its own data in it for an inclusive scan).
fn doubling_plan(rank: u32, size: u32, data: Vec<u8>, kind: u8, inclusive: bool) -> Plan {
    let n = data.len();
    let (partial, result, incoming) = (0..n, n..2 * n, 2 * n..3 * n);
    let mut buf = data;
    buf.resize(3 * n, 0);
    if inclusive {
        buf.copy_within(partial.clone(), n);
    }
    let mut have_result = inclusive;
    let mut steps = Vec::new();
    let mut mask = 1u64;
    while mask < u64::from(size) {
        let peer = u64::from(rank) ^ mask;
        mask <<= 1;
        // A missing peer's block is all ranks past the last: nothing to fold.
        let Ok(peer) = u32::try_from(peer) else {
            continue;
        };
        if peer >= size {
            continue;
        }
        steps.push(Step::Send {
            to: peer,
            kind,
            range: partial.clone(),
        });
        if peer > rank {
            steps.push(Step::Recv {
                from: peer,
                kind,
                range: partial.clone(),
                apply: Apply::CombineHigher,
            });
            continue;
        }
        // The first block from below is an exclusive scan's prefix as it is.
        let first = !have_result;
        let into = if first {
            result.clone()
        } else {
            incoming.clone()
        };
        steps.push(Step::Recv {
            from: peer,
            kind,
            range: into.clone(),
            apply: Apply::Store,
        });
        steps.push(Step::Combine {
            lower: into,
            higher: partial.clone(),
        });
        if !first {
            steps.push(Step::Combine {
                lower: incoming.clone(),
                higher: result.clone(),
            });
        }
        have_result = true;
    }
    Plan {
        steps,
        buf,
        result: have_result.then(|| vec![result]),
    }
}

/// Inclusive scan: rank `r`'s result is `x0 op x1 op ... op xr`, folded left.
pub struct Scan<C> {
    inner: Schedule<C>,
}

impl<C: Combine> Scan<C> {
    /// `data` is this rank's contribution; every rank passes the same length.
    /// Along the chain.
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        Self::with(rank, size, data, combiner, ScanAlgo::Chain)
    }

    /// As [`Scan::new`], by `algo`.
    pub fn with(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        combiner: C,
        algo: ScanAlgo,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if algo == ScanAlgo::RecursiveDoubling {
            let plan = doubling_plan(rank, size, data, kind::SCAN, true);
            return Ok(Scan {
                inner: Schedule::new(plan, combiner)?,
            });
        }
        let n = data.len();
        let mut steps = Vec::new();
        if rank > 0 {
            steps.push(Step::Recv {
                from: rank - 1,
                kind: kind::SCAN,
                range: 0..n,
                apply: Apply::CombineLower,
            });
        }
        if rank + 1 < size {
            steps.push(Step::Send {
                to: rank + 1,
                kind: kind::SCAN,
                range: 0..n,
            });
        }
        let plan = Plan {
            steps,
            buf: data,
            result: Some(vec![0..n]),
        };
        Ok(Scan {
            inner: Schedule::new(plan, combiner)?,
        })
    }
}

scheduled_collective!(Scan<C>);

/// Exclusive scan: rank `r > 0` gets `x0 op ... op x(r-1)`, folded left;
/// rank 0's result is undefined in MPI, so it is `None`.
pub struct Exscan<C> {
    inner: Schedule<C>,
}

impl<C: Combine> Exscan<C> {
    /// `data` is this rank's contribution; every rank passes the same length.
    /// Along the chain.
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        Self::with(rank, size, data, combiner, ScanAlgo::Chain)
    }

    /// As [`Exscan::new`], by `algo`.
    pub fn with(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        combiner: C,
        algo: ScanAlgo,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if algo == ScanAlgo::RecursiveDoubling {
            let plan = doubling_plan(rank, size, data, kind::EXSCAN, false);
            return Ok(Exscan {
                inner: Schedule::new(plan, combiner)?,
            });
        }
        let n = data.len();
        // Own data, then the prefix from below.
        let mut buf = data;
        buf.resize(2 * n, 0);
        let prefix = n..2 * n;
        let mut steps = Vec::new();
        if rank > 0 {
            steps.push(Step::Recv {
                from: rank - 1,
                kind: kind::EXSCAN,
                range: prefix.clone(),
                apply: Apply::Store,
            });
        }
        if rank + 1 < size {
            if rank > 0 {
                steps.push(Step::Combine {
                    lower: prefix.clone(),
                    higher: 0..n,
                });
            }
            steps.push(Step::Send {
                to: rank + 1,
                kind: kind::EXSCAN,
                range: 0..n,
            });
        }
        let plan = Plan {
            steps,
            buf,
            result: (rank > 0).then(|| vec![prefix]),
        };
        Ok(Exscan {
            inner: Schedule::new(plan, combiner)?,
        })
    }
}

scheduled_collective!(Exscan<C>);
