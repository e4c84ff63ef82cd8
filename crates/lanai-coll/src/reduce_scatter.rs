//! Reduce-scatter: every rank sends block `p` of its vector straight to rank
//! `p`, which folds the `P` contributions locally with the canonical binomial
//! grouping. The result is bitwise what `Reduce` followed by a scatter gives,
//! whatever the arrival order; operands stay in rank order.

use std::ops::Range;

use crate::error::CollError;
use crate::layout::{check_local, Layout};
use crate::machine::{check_rank, kind};
use crate::ops::Combine;
use crate::schedule::{mul, scheduled_collective, Apply, Plan, Schedule, Step};
use crate::tree::Relative;

/// Appends the exchange and fold for a reduce-scatter over `blocks` (rank
/// `p`'s block of every vector, all inside `0..data_len` of `buf`). Slots go
/// after the data; the result lands in `blocks[rank]` of the data area.
pub(crate) fn plan_reduce_scatter(
    rank: u32,
    size: u32,
    buf: &mut Vec<u8>,
    blocks: &[Range<usize>],
    kind: u8,
    steps: &mut Vec<Step>,
) -> Result<(), CollError> {
    let mine = blocks.get(rank as usize).cloned().unwrap_or_default();
    let c = mine.len();
    let base = buf.len();
    let slots: Vec<Range<usize>> = (0..size as usize)
        .map(|p| Ok(base + mul(p, c)?..base + mul(p + 1, c)?))
        .collect::<Result<_, CollError>>()?;
    buf.resize(base + mul(size as usize, c)?, 0);
    let own = slots[rank as usize].clone();
    buf.copy_within(mine.clone(), own.start);
    let ring = Relative { root: rank, size };
    for s in 1..size {
        let to = ring.to_abs(s);
        steps.push(Step::Send {
            to,
            kind,
            range: blocks.get(to as usize).cloned().unwrap_or_default(),
        });
    }
    for s in 1..size {
        let from = ring.to_abs(size - s);
        steps.push(Step::Recv {
            from,
            kind,
            range: slots[from as usize].clone(),
            apply: Apply::Store,
        });
    }
    steps.push(Step::Fold { slots, dest: mine });
    Ok(())
}

/// Reduce-scatter with `counts[p]` bytes of the result going to rank `p`.
///
/// `data` is this rank's whole vector (`sum(counts)` bytes, blocks back to
/// back in rank order); the result is this rank's reduced block.
pub struct ReduceScatter<C> {
    inner: Schedule<C>,
}

impl<C: Combine> ReduceScatter<C> {
    pub fn new(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        counts: &[usize],
        combiner: C,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let layout = Layout::packed(counts.to_vec())?;
        layout.check_size(size)?;
        check_local(layout.extent(), data.len())?;
        let blocks: Vec<_> = (0..size).map(|p| layout.block(p)).collect();
        let mine = layout.block(rank);
        let mut buf = data;
        let mut steps = Vec::new();
        plan_reduce_scatter(
            rank,
            size,
            &mut buf,
            &blocks,
            kind::REDUCE_SCATTER,
            &mut steps,
        )?;
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![mine]),
        };
        Ok(ReduceScatter {
            inner: Schedule::new(plan, combiner)?,
        })
    }
}

scheduled_collective!(ReduceScatter<C>);

/// Reduce-scatter of equal blocks: `data` holds `size` blocks; rank `p` gets
/// the reduction of every rank's block `p`.
pub struct ReduceScatterBlock<C> {
    inner: Schedule<C>,
}

impl<C: Combine> ReduceScatterBlock<C> {
    /// Fails with `NotWholeElements` unless `data.len()` is a multiple of `size`.
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if data.len() % size as usize != 0 {
            return Err(CollError::NotWholeElements {
                len: data.len(),
                elem_size: size as usize,
            });
        }
        let counts = vec![data.len() / size as usize; size as usize];
        let ReduceScatter { inner } = ReduceScatter::new(rank, size, data, &counts, combiner)?;
        Ok(ReduceScatterBlock { inner })
    }
}

scheduled_collective!(ReduceScatterBlock<C>);
