//! Inclusive and exclusive scan along a chain: rank `r` waits for the prefix
//! of ranks `0..r` from `r - 1`, folds its own data in and passes the result
//! on, so every prefix is the left fold `((x0 op x1) op x2) ...` in rank order.

use crate::error::CollError;
use crate::machine::{check_rank, kind};
use crate::ops::Combine;
use crate::schedule::{scheduled_collective, Apply, Plan, Schedule, Step};

/// Inclusive scan: rank `r`'s result is `x0 op x1 op ... op xr`, folded left.
pub struct Scan<C> {
    inner: Schedule<C>,
}

impl<C: Combine> Scan<C> {
    /// `data` is this rank's contribution; every rank passes the same length.
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let n = data.len();
        let mut steps = Vec::new();
        if rank > 0 {
            steps.push(Step::Recv {
                from: rank - 1,
                kind: kind::SCAN,
                ranges: vec![0..n],
                apply: Apply::CombineLower,
            });
        }
        if rank + 1 < size {
            steps.push(Step::Send {
                to: rank + 1,
                kind: kind::SCAN,
                ranges: vec![0..n],
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
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        check_rank(rank, size)?;
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
                ranges: vec![prefix.clone()],
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
                ranges: vec![0..n],
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
