//! Allreduce: reduce-then-broadcast for any size, recursive doubling for
//! powers of two. Both group operands identically, so results are bitwise equal.

use std::fmt;
use std::str::FromStr;

use crate::bcast::Bcast;
use crate::error::CollError;
use crate::machine::{
    check_len, check_rank, decode, encode, kind, unexpected, Collective, Inbox, Outbox, Outgoing,
};
use crate::ops::Combine;
use crate::reduce::Reduce;

/// Messages up to this size use recursive doubling under `AllreduceAlgo::Auto`.
pub const AUTO_RECURSIVE_DOUBLING_MAX: usize = 64 * 1024;

/// Allreduce algorithm choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllreduceAlgo {
    /// Recursive doubling for power-of-two sizes and messages up to 64 KiB, else reduce+bcast.
    Auto,
    ReduceBcast,
    /// Power-of-two sizes only.
    RecursiveDoubling,
}

impl AllreduceAlgo {
    /// Knob spelling of the algorithm.
    pub const fn name(self) -> &'static str {
        match self {
            AllreduceAlgo::Auto => "auto",
            AllreduceAlgo::ReduceBcast => "reduce_bcast",
            AllreduceAlgo::RecursiveDoubling => "recursive_doubling",
        }
    }

    /// The concrete algorithm `Auto` picks for this size and message length.
    pub fn resolve(self, size: u32, len: usize) -> AllreduceAlgo {
        match self {
            AllreduceAlgo::Auto if size.is_power_of_two() && len <= AUTO_RECURSIVE_DOUBLING_MAX => {
                AllreduceAlgo::RecursiveDoubling
            }
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
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// Builds an allreduce machine with the chosen algorithm.
pub fn allreduce<C: Combine + Send + 'static>(
    rank: u32,
    size: u32,
    data: Vec<u8>,
    combiner: C,
    algo: AllreduceAlgo,
) -> Result<Box<dyn Collective + Send>, CollError> {
    check_rank(rank, size)?;
    Ok(match algo.resolve(size, data.len()) {
        AllreduceAlgo::RecursiveDoubling => {
            Box::new(RecursiveDoubling::new(rank, size, data, combiner)?)
        }
        _ => Box::new(ReduceBcast::new(rank, size, data, combiner)?),
    })
}

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
                self.outbox.push_back(Outgoing {
                    to: partner,
                    data: encode(kind::RD_EXCHANGE, self.round, &self.acc),
                });
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
        if h.kind != kind::RD_EXCHANGE || h.step >= self.rounds || from != self.partner(h.step) {
            return Err(unexpected(from, &h));
        }
        check_len(from, self.len, payload.len())?;
        self.inbox.insert(from, &h, payload)?;
        self.advance()
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.round == self.rounds && self.outbox.is_empty()
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
