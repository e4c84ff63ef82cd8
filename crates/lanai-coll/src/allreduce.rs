//! Allreduce: reduce-then-broadcast for any size, recursive doubling and
//! Rabenseifner for powers of two, and a reduce-scatter/allgather "ring" for
//! any size. Every one groups operands as the canonical binomial tree does
//! (see `reduce`), so results are bitwise equal whatever the algorithm.

use std::fmt;
use std::str::FromStr;

use crate::bcast::Bcast;
use crate::error::CollError;
use crate::machine::{
    check_len, check_rank, decode, decode_head, kind, unexpected, Collective, Inbox, Outbox,
    Outgoing,
};
use crate::ops::Combine;
use crate::reduce::Reduce;
use crate::reduce_scatter::plan_reduce_scatter;
use crate::schedule::{mul, ring_allgather, scheduled_collective, Apply, Plan, Schedule, Step};

/// Messages up to this size use recursive doubling under `AllreduceAlgo::Auto`.
pub const AUTO_RECURSIVE_DOUBLING_MAX: usize = 64 * 1024;
/// Under `AllreduceAlgo::Auto`, 8 or more ranks (a power of two) use
/// Rabenseifner above this size already: recursive doubling moves the
/// whole vector at each of its log2(P) steps, Rabenseifner about twice
/// the vector in all. Measured at 64 KiB, 8 and 16 ranks: 1.2-1.6 times
/// faster on one node and 1.5-1.9 over TCP; at 32 KiB a wash.
pub const AUTO_RABENSEIFNER_MANY_MIN: usize = 32 * 1024;
/// Ranks from which [`AUTO_RABENSEIFNER_MANY_MIN`] applies.
const MANY: u32 = 8;

/// Allreduce algorithm choice. All are bitwise reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllreduceAlgo {
    /// Up to 64 KiB: recursive doubling on power-of-two sizes, else
    /// reduce+bcast. Larger: Rabenseifner on power-of-two sizes, else ring.
    Auto,
    ReduceBcast,
    /// Power-of-two sizes only.
    RecursiveDoubling,
    /// Recursive-halving reduce-scatter then recursive-doubling allgather.
    /// Power-of-two sizes; `allreduce()` uses `Ring` on others.
    Rabenseifner,
    /// Direct reduce-scatter with a canonical-order local fold, then ring allgather.
    Ring,
}

impl AllreduceAlgo {
    /// Knob spelling of the algorithm.
    pub const fn name(self) -> &'static str {
        match self {
            AllreduceAlgo::Auto => "auto",
            AllreduceAlgo::ReduceBcast => "reduce_bcast",
            AllreduceAlgo::RecursiveDoubling => "recursive_doubling",
            AllreduceAlgo::Rabenseifner => "rabenseifner",
            AllreduceAlgo::Ring => "ring",
        }
    }

    /// The concrete algorithm `Auto` picks for this size and message length.
    pub fn resolve(self, size: u32, len: usize) -> AllreduceAlgo {
        match self {
            AllreduceAlgo::Auto
                if size.is_power_of_two() && size >= MANY && len > AUTO_RABENSEIFNER_MANY_MIN =>
            {
                AllreduceAlgo::Rabenseifner
            }
            AllreduceAlgo::Auto if size.is_power_of_two() && len <= AUTO_RECURSIVE_DOUBLING_MAX => {
                AllreduceAlgo::RecursiveDoubling
            }
            AllreduceAlgo::Auto if len > AUTO_RECURSIVE_DOUBLING_MAX && size.is_power_of_two() => {
                AllreduceAlgo::Rabenseifner
            }
            AllreduceAlgo::Auto if len > AUTO_RECURSIVE_DOUBLING_MAX => AllreduceAlgo::Ring,
            AllreduceAlgo::Auto => AllreduceAlgo::ReduceBcast,
            other => other,
        }
    }
}

/// An algorithm name that no algorithm has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAlgorithm(pub String);

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown collective algorithm name {:?}", self.0)
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl FromStr for AllreduceAlgo {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            AllreduceAlgo::Auto,
            AllreduceAlgo::ReduceBcast,
            AllreduceAlgo::RecursiveDoubling,
            AllreduceAlgo::Rabenseifner,
            AllreduceAlgo::Ring,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// Builds an allreduce machine with the chosen algorithm.
///
/// Rabenseifner and Ring split the vector between elements, so they need
/// `combiner.elem_size()`; without it (or if the data is not whole elements)
/// they fall back to ReduceBcast. Rabenseifner on a size that is not a power
/// of two runs as Ring. Every choice gives bitwise the same result.
pub fn allreduce<C: Combine + Send + 'static>(
    rank: u32,
    size: u32,
    data: Vec<u8>,
    combiner: C,
    algo: AllreduceAlgo,
) -> Result<Box<dyn Collective + Send>, CollError> {
    check_rank(rank, size)?;
    let whole = combiner
        .elem_size()
        .filter(|&e| e > 0 && data.len() % e == 0);
    Ok(match (algo.resolve(size, data.len()), whole) {
        // An algorithm that cannot serve this size falls back, as a forced
        // knob must never make a valid call fail.
        (AllreduceAlgo::RecursiveDoubling, _) if size.is_power_of_two() => {
            Box::new(RecursiveDoubling::new(rank, size, data, combiner)?)
        }
        (AllreduceAlgo::Rabenseifner, Some(e)) if size.is_power_of_two() => {
            Box::new(Rabenseifner::new(rank, size, data, combiner, e)?)
        }
        (AllreduceAlgo::Rabenseifner | AllreduceAlgo::Ring, Some(e)) => {
            Box::new(RingAllreduce::new(rank, size, data, combiner, e)?)
        }
        _ => Box::new(ReduceBcast::new(rank, size, data, combiner)?),
    })
}

fn check_elements(len: usize, elem_size: usize) -> Result<usize, CollError> {
    if elem_size == 0 || len % elem_size != 0 {
        return Err(CollError::NotWholeElements { len, elem_size });
    }
    Ok(len / elem_size)
}

/// Rabenseifner's allreduce on power-of-two sizes.
///
/// Reduce-scatter by recursive halving with the distance *growing* (1, 2, 4,
/// ...): in round `k` partners `r` and `r ^ 2^k` hold the same window, split
/// it in half, and each keeps one half combined as `lower op higher`. After
/// round `k` a window holds the reduction of an aligned group of `2^(k+1)`
/// ranks, grouped exactly like recursive doubling and the binomial tree. The
/// allgather retraces the rounds in reverse, swapping windows.
pub struct Rabenseifner<C> {
    inner: Schedule<C>,
}

impl<C: Combine> Rabenseifner<C> {
    /// `elem_size` is the bytes per element; the vector is only split between
    /// elements. Fails with `SizeNotPowerOfTwo` or `NotWholeElements`.
    pub fn new(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        combiner: C,
        elem_size: usize,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if !size.is_power_of_two() {
            return Err(CollError::SizeNotPowerOfTwo { size });
        }
        let n = check_elements(data.len(), elem_size)?;
        let bytes = |lo: usize, hi: usize| lo * elem_size..hi * elem_size;
        let kind_h = kind::RABENSEIFNER_HALVE;
        let kind_d = kind::RABENSEIFNER_DOUBLE;
        let mut steps = Vec::new();
        let (mut lo, mut hi) = (0usize, n);
        let mut windows = Vec::new();
        for k in 0..size.trailing_zeros() {
            let partner = rank ^ (1 << k);
            let mid = lo + (hi - lo) / 2;
            let (keep, give) = if rank & (1 << k) == 0 {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            steps.push(Step::Send {
                to: partner,
                kind: kind_h,
                range: bytes(give.0, give.1),
            });
            steps.push(Step::Recv {
                from: partner,
                kind: kind_h,
                range: bytes(keep.0, keep.1),
                apply: if partner < rank {
                    Apply::CombineLower
                } else {
                    Apply::CombineHigher
                },
            });
            windows.push((lo, hi));
            (lo, hi) = keep;
        }
        for k in (0..size.trailing_zeros()).rev() {
            let partner = rank ^ (1 << k);
            let (plo, phi) = windows.pop().unwrap_or((lo, hi));
            // The partner holds the other half of the parent window.
            let theirs = if lo == plo { (hi, phi) } else { (plo, lo) };
            steps.push(Step::Send {
                to: partner,
                kind: kind_d,
                range: bytes(lo, hi),
            });
            steps.push(Step::Recv {
                from: partner,
                kind: kind_d,
                range: bytes(theirs.0, theirs.1),
                apply: Apply::Store,
            });
            (lo, hi) = (plo, phi);
        }
        let len = data.len();
        let plan = Plan {
            steps,
            buf: data,
            result: Some(vec![0..len]),
        };
        Ok(Rabenseifner {
            inner: Schedule::new(plan, combiner)?,
        })
    }
}

// Done means every rank's contribution is in, so every rank entered.
scheduled_collective!(Rabenseifner<C>, synchronizes);

/// Allreduce for any size in two bandwidth-optimal phases: rank `p` receives
/// segment `p` of every vector and folds them locally in the canonical
/// binomial grouping (unlike a classic ring, whose grouping follows the ring
/// and is not reproducible), then the reduced segments go round a ring.
pub struct RingAllreduce<C> {
    inner: Schedule<C>,
}

impl<C: Combine> RingAllreduce<C> {
    /// `elem_size` is the bytes per element; segments are split between
    /// elements. Fails with `NotWholeElements`.
    pub fn new(
        rank: u32,
        size: u32,
        data: Vec<u8>,
        combiner: C,
        elem_size: usize,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let n = check_elements(data.len(), elem_size)?;
        let len = data.len();
        let start = |p: u32| -> Result<usize, CollError> {
            let e = (n as u128 * u128::from(p) / u128::from(size)) as usize;
            mul(e, elem_size)
        };
        let segments: Vec<_> = (0..size)
            .map(|p| Ok(start(p)?..start(p + 1)?))
            .collect::<Result<_, CollError>>()?;
        let mut buf = data;
        let mut steps = Vec::new();
        plan_reduce_scatter(
            rank,
            size,
            &mut buf,
            &segments,
            kind::RING_REDUCE_SCATTER,
            &mut steps,
        )?;
        ring_allgather(
            &mut steps,
            rank,
            size,
            &segments,
            |x| x,
            kind::RING_ALLGATHER,
        );
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![0..len]),
        };
        Ok(RingAllreduce {
            inner: Schedule::new(plan, combiner)?,
        })
    }
}

// Done means every rank's contribution is in, so every rank entered.
scheduled_collective!(RingAllreduce<C>, synchronizes);

/// Reduce to rank 0 up the fixed binomial tree, then binomial broadcast from 0.
pub struct ReduceBcast<C> {
    rank: u32,
    size: u32,
    len: usize,
    reduce: Reduce<C>,
    bcast: Option<Bcast>,
    /// Broadcast messages that overtook this rank's reduce phase.
    early: Vec<(u32, Vec<u8>)>,
    outbox: Outbox,
}

impl<C: Combine> ReduceBcast<C> {
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        let len = data.len();
        let reduce = Reduce::new(rank, size, 0, data, combiner)?;
        let mut m = ReduceBcast {
            rank,
            size,
            len,
            reduce,
            bcast: None,
            early: Vec::new(),
            outbox: Outbox::new(),
        };
        m.advance()?;
        Ok(m)
    }

    /// The reduced value once done.
    pub fn into_result(self) -> Option<Vec<u8>> {
        self.bcast.and_then(Bcast::into_result)
    }

    fn advance(&mut self) -> Result<(), CollError> {
        while let Some(o) = self.reduce.poll_send() {
            self.outbox.push_back(o);
        }
        if self.bcast.is_none() && self.reduce.is_done() {
            let data = match self.reduce.take_result() {
                Some(r) => r,
                None => vec![0; self.len],
            };
            let mut b = Bcast::new(self.rank, self.size, 0, data)?;
            for (from, msg) in std::mem::take(&mut self.early) {
                b.handle_message(from, &msg)?;
            }
            self.bcast = Some(b);
        }
        if let Some(b) = &mut self.bcast {
            while let Some(o) = b.poll_send() {
                self.outbox.push_back(o);
            }
        }
        Ok(())
    }
}

impl<C: Combine> Collective for ReduceBcast<C> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, _) = decode(from, data)?;
        if h.kind == kind::BCAST {
            match &mut self.bcast {
                Some(b) => b.handle_message(from, data)?,
                None => {
                    if !self.early.is_empty() {
                        // A rank has one bcast parent, so one early message at most.
                        return Err(CollError::DuplicateMessage {
                            from,
                            kind: h.kind,
                            step: h.step,
                        });
                    }
                    self.early.push((from, data.to_vec()));
                }
            }
        } else {
            self.reduce.handle_message(from, data)?;
        }
        self.advance()
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.outbox.is_empty() && self.bcast.as_ref().is_some_and(Bcast::is_done)
    }

    // Done means every rank's contribution is in, so every rank entered.
    fn synchronizes(&self) -> bool {
        true
    }

    fn result(&self) -> Option<&[u8]> {
        self.bcast.as_ref().and_then(Bcast::result)
    }

    fn take_result(&mut self) -> Option<Vec<u8>> {
        self.bcast.as_mut().and_then(Bcast::take_result)
    }
}

/// Recursive doubling: in round `k` exchange with `rank ^ 2^k` and combine
/// `lower block op higher block`, the same grouping as the binomial reduce.
pub struct RecursiveDoubling<C> {
    rank: u32,
    rounds: u8,
    round: u8,
    sent_this_round: bool,
    len: usize,
    acc: Vec<u8>,
    taken: bool,
    combiner: C,
    inbox: Inbox,
    outbox: Outbox,
}

impl<C: Combine> RecursiveDoubling<C> {
    /// Fails with `SizeNotPowerOfTwo` unless `size` is a power of two.
    pub fn new(rank: u32, size: u32, data: Vec<u8>, combiner: C) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if !size.is_power_of_two() {
            return Err(CollError::SizeNotPowerOfTwo { size });
        }
        let mut m = RecursiveDoubling {
            rank,
            rounds: size.trailing_zeros() as u8,
            round: 0,
            sent_this_round: false,
            len: data.len(),
            acc: data,
            taken: false,
            combiner,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance()?;
        Ok(m)
    }

    /// The reduced value once done.
    pub fn into_result(self) -> Option<Vec<u8>> {
        (self.round == self.rounds).then_some(self.acc)
    }

    fn partner(&self, round: u8) -> u32 {
        self.rank ^ (1u32 << round)
    }

    fn advance(&mut self) -> Result<(), CollError> {
        while self.round < self.rounds {
            let partner = self.partner(self.round);
            if !self.sent_this_round {
                self.sent_this_round = true;
                self.outbox.push_back(Outgoing::with_header(
                    partner,
                    kind::RD_EXCHANGE,
                    self.round,
                    self.acc.clone(),
                ));
            }
            let Some(mut theirs) = self.inbox.take(partner, kind::RD_EXCHANGE, self.round) else {
                return Ok(());
            };
            if partner > self.rank {
                self.combiner.combine(&self.acc, &mut theirs)?;
                self.acc = theirs;
            } else {
                self.combiner.combine(&theirs, &mut self.acc)?;
            }
            self.round += 1;
            self.sent_this_round = false;
        }
        Ok(())
    }
}

impl<C: Combine> Collective for RecursiveDoubling<C> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        self.handle_parts(from, &[h.kind, h.step], payload.to_vec())
    }

    fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let h = decode_head(from, head)?;
        if h.kind != kind::RD_EXCHANGE || h.step >= self.rounds || from != self.partner(h.step) {
            return Err(unexpected(from, &h));
        }
        check_len(from, self.len, body.len())?;
        self.inbox.insert_owned(from, &h, body)?;
        self.advance()
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.round == self.rounds && self.outbox.is_empty()
    }

    // Done means every rank's contribution is in, so every rank entered.
    fn synchronizes(&self) -> bool {
        true
    }

    fn result(&self) -> Option<&[u8]> {
        (self.is_done() && !self.taken).then_some(self.acc.as_slice())
    }

    fn take_result(&mut self) -> Option<Vec<u8>> {
        if self.is_done() && !self.taken {
            self.taken = true;
            Some(std::mem::take(&mut self.acc))
        } else {
            None
        }
    }
}
