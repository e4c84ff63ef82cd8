//! Allgather: recursive doubling for power-of-two sizes, a ring otherwise;
//! allgatherv on a ring.

use std::fmt;
use std::str::FromStr;

use crate::allreduce::UnknownAlgorithm;
use crate::error::CollError;
use crate::layout::{check_local, Layout};
use crate::machine::{check_rank, kind};
use crate::schedule::{
    mul, ring_allgather, scheduled_collective, Apply, NoCombine, Plan, Schedule, Step,
};

/// Allgather algorithm choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllgatherAlgo {
    /// Recursive doubling on power-of-two sizes, else ring.
    Auto,
    /// Power-of-two sizes only.
    RecursiveDoubling,
    Ring,
}

impl AllgatherAlgo {
    /// Knob spelling of the algorithm.
    pub const fn name(self) -> &'static str {
        match self {
            AllgatherAlgo::Auto => "auto",
            AllgatherAlgo::RecursiveDoubling => "recursive_doubling",
            AllgatherAlgo::Ring => "ring",
        }
    }

    /// The concrete algorithm `Auto` picks for this size.
    pub fn resolve(self, size: u32) -> AllgatherAlgo {
        match self {
            AllgatherAlgo::Auto if size.is_power_of_two() => AllgatherAlgo::RecursiveDoubling,
            AllgatherAlgo::Auto => AllgatherAlgo::Ring,
            other => other,
        }
    }
}

impl FromStr for AllgatherAlgo {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            AllgatherAlgo::Auto,
            AllgatherAlgo::RecursiveDoubling,
            AllgatherAlgo::Ring,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

impl fmt::Display for AllgatherAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Allgather of equal-length blocks; every rank's result is all blocks in rank order.
pub struct Allgather {
    inner: Schedule<NoCombine>,
}

impl Allgather {
    /// `RecursiveDoubling` fails with `SizeNotPowerOfTwo` on other sizes.
    pub fn new(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        algo: AllgatherAlgo,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let b = data.len();
        let mut buf = vec![0; mul(size as usize, b)?];
        let r = rank as usize;
        buf[r * b..(r + 1) * b].copy_from_slice(&data);
        let mut steps = Vec::new();
        match algo.resolve(size) {
            AllgatherAlgo::RecursiveDoubling => {
                if !size.is_power_of_two() {
                    return Err(CollError::SizeNotPowerOfTwo { size });
                }
                // In round k this rank holds the 2^k blocks of its aligned group.
                for k in 0..size.trailing_zeros() {
                    let partner = rank ^ (1 << k);
                    let group = |x: u32| {
                        let base = (x >> k << k) as usize;
                        base * b..(base + (1usize << k)) * b
                    };
                    steps.push(Step::Send {
                        to: partner,
                        kind: kind::ALLGATHER_RD,
                        range: group(rank),
                    });
                    steps.push(Step::Recv {
                        from: partner,
                        kind: kind::ALLGATHER_RD,
                        range: group(partner),
                        apply: Apply::Store,
                    });
                }
            }
            _ => {
                let blocks: Vec<_> = (0..size as usize).map(|i| i * b..(i + 1) * b).collect();
                ring_allgather(&mut steps, rank, size, &blocks, |x| x, kind::ALLGATHER_RING);
            }
        }
        let len = buf.len();
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![0..len]),
        };
        Ok(Allgather {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Allgather);

/// Allgather of per-rank byte counts on a ring.
///
/// The result is the receive buffer of `recv.extent()` bytes with rank `r`'s
/// block at `recv.block(r)`; bytes outside every block are zero.
pub struct Allgatherv {
    inner: Schedule<NoCombine>,
}

impl Allgatherv {
    pub fn new(rank: u32, size: u32, data: Vec<u8>, recv: &Layout) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        recv.check_size(size)?;
        check_local(recv.block(rank).len(), data.len())?;
        let mut buf = vec![0; recv.extent()];
        buf[recv.block(rank)].copy_from_slice(&data);
        let blocks: Vec<_> = (0..size).map(|r| recv.block(r)).collect();
        let mut steps = Vec::new();
        ring_allgather(&mut steps, rank, size, &blocks, |x| x, kind::ALLGATHERV);
        let len = buf.len();
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![0..len]),
        };
        Ok(Allgatherv {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Allgatherv);
