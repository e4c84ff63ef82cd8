//! All-to-all exchange. Rank `r` sends to `r + s` and receives from `r - s`
//! for `s = 1..P` (the pairwise order), without waiting between steps: every
//! send goes out at once, so there is one round of latency.

use crate::error::CollError;
use crate::layout::Layout;
use crate::machine::{check_rank, kind};
use crate::schedule::{scheduled_collective, Apply, NoCombine, Plan, Schedule, Step};
use crate::tree::Relative;

/// Alltoall with byte counts and byte displacements per peer (alltoallv; with
/// per-peer datatypes packed by the driver, alltoallw too).
///
/// `data` is the send buffer, `send.block(p)` the bytes for rank `p`; the
/// result is the receive buffer of `recv.extent()` bytes with rank `p`'s
/// bytes at `recv.block(p)` (bytes outside every block are zero). Every pair
/// exchanges one message, empty ones included, so count mismatches are caught.
pub struct Alltoallv {
    inner: Schedule<NoCombine>,
}

impl Alltoallv {
    pub fn new(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        send: &Layout,
        recv: &Layout,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        send.check_size(size)?;
        recv.check_size(size)?;
        if send.extent() > data.len() {
            return Err(CollError::BlockBeyondBuffer {
                end: send.extent(),
                len: data.len(),
            });
        }
        let (mine_out, mine_in) = (send.block(rank), recv.block(rank));
        if mine_out.len() != mine_in.len() {
            return Err(CollError::LocalLengthMismatch {
                expected: mine_in.len(),
                got: mine_out.len(),
            });
        }
        // Receive area first, then the send buffer.
        let area = recv.extent();
        let mut buf = vec![0; area];
        buf[mine_in.clone()].copy_from_slice(&data[mine_out]);
        buf.extend_from_slice(&data);
        let shift = |r: std::ops::Range<usize>| r.start + area..r.end + area;
        let ring = Relative { root: rank, size };
        let mut steps = Vec::with_capacity(2 * size as usize);
        for s in 1..size {
            let to = ring.to_abs(s);
            steps.push(Step::Send {
                to,
                kind: kind::ALLTOALL,
                range: shift(send.block(to)),
            });
        }
        for s in 1..size {
            let from = ring.to_abs(size - s);
            steps.push(Step::Recv {
                from,
                kind: kind::ALLTOALL,
                range: recv.block(from),
                apply: Apply::Store,
            });
        }
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![0..area]),
        };
        Ok(Alltoallv {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(Alltoallv);

/// Alltoall of equal blocks: `data` holds `size` blocks, block `p` for rank
/// `p`; the result holds block `p` from rank `p`.
pub struct Alltoall {
    inner: Alltoallv,
}

impl Alltoall {
    /// Fails with `NotWholeElements` unless `data.len()` is a multiple of `size`.
    pub fn new(rank: u32, size: u32, data: Vec<u8>) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if data.len() % size as usize != 0 {
            return Err(CollError::NotWholeElements {
                len: data.len(),
                elem_size: size as usize,
            });
        }
        let layout = Layout::uniform(size, data.len() / size as usize)?;
        Ok(Alltoall {
            inner: Alltoallv::new(rank, size, data, &layout, &layout)?,
        })
    }
}

scheduled_collective!(Alltoall);
