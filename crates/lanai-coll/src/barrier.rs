//! Barrier algorithms: dissemination, pairwise exchange (seed 000 §2.2) and
//! binomial gather/release. Barrier messages carry only the header.

use std::fmt;
use std::str::FromStr;

use crate::allreduce::UnknownAlgorithm;
use crate::error::CollError;
use crate::machine::{
    check_rank, decode, kind, unexpected, Collective, Header, Inbox, Outbox, Outgoing,
};
use crate::tree;

/// Barrier algorithm choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BarrierAlgo {
    Dissemination,
    PairwiseExchange,
    Binomial,
}

impl BarrierAlgo {
    /// Knob spelling of the algorithm.
    pub const fn name(self) -> &'static str {
        match self {
            BarrierAlgo::Dissemination => "dissemination",
            BarrierAlgo::PairwiseExchange => "pairwise_exchange",
            BarrierAlgo::Binomial => "binomial",
        }
    }
}

impl FromStr for BarrierAlgo {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            BarrierAlgo::Dissemination,
            BarrierAlgo::PairwiseExchange,
            BarrierAlgo::Binomial,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

impl fmt::Display for BarrierAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Builds a barrier machine with the chosen algorithm.
pub fn barrier(
    rank: u32,
    size: u32,
    algo: BarrierAlgo,
) -> Result<Box<dyn Collective + Send>, CollError> {
    Ok(match algo {
        BarrierAlgo::Dissemination => Box::new(Dissemination::new(rank, size)?),
        BarrierAlgo::PairwiseExchange => Box::new(PairwiseExchange::new(rank, size)?),
        BarrierAlgo::Binomial => Box::new(Binomial::new(rank, size)?),
    })
}

/// The barrier among node leaders for the central device: the k-ary tree
/// (seed 002's tree of devices), unless dissemination has fewer message
/// latencies in sequence: `ceil(log2 L)` rounds against the tree's `2 *
/// depth` hops. Two leaders are the case that matters: one exchange
/// against an arrival and a release. `k = 0` asks for the fewest rounds
/// outright, for leaders with a core each, where the tree's root
/// handling every leader's message costs more than the rounds.
pub fn leaders_barrier(
    rank: u32,
    size: u32,
    k: u32,
) -> Result<Box<dyn Collective + Send>, CollError> {
    if leaders_use_tree(size, k) {
        Ok(Box::new(KaryTree::new(rank, size, k)?))
    } else {
        Ok(Box::new(Dissemination::new(rank, size)?))
    }
}

/// Whether [`leaders_barrier`] picks the tree for `size` leaders.
pub fn leaders_use_tree(size: u32, k: u32) -> bool {
    k >= 1 && u32::from(tree::ceil_log2(size)) >= 2 * tree::kary_depth(size, k)
}

/// Decodes a barrier message: header only, no payload.
fn decode_empty(from: u32, data: &[u8]) -> Result<Header, CollError> {
    let (h, payload) = decode(from, data)?;
    if !payload.is_empty() {
        return Err(CollError::MalformedMessage {
            from,
            reason: "barrier message carries a payload",
        });
    }
    Ok(h)
}

fn signal(to: u32, kind: u8, step: u8) -> Outgoing {
    Outgoing::with_header(to, kind, step, Vec::new())
}

/// Dissemination: in round `k` signal `(r + 2^k) mod P` and wait for
/// `(r - 2^k) mod P`; `ceil(log2 P)` rounds.
pub struct Dissemination {
    rank: u32,
    size: u32,
    rounds: u8,
    round: u8,
    sent_this_round: bool,
    inbox: Inbox,
    outbox: Outbox,
}

impl Dissemination {
    pub fn new(rank: u32, size: u32) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let mut m = Dissemination {
            rank,
            size,
            rounds: tree::ceil_log2(size),
            round: 0,
            sent_this_round: false,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance();
        Ok(m)
    }

    fn offset(&self, round: u8, forward: bool) -> u32 {
        let (r, p, d) = (u64::from(self.rank), u64::from(self.size), 1u64 << round);
        // 2^round < size for every round, so neither side underflows.
        let v = if forward {
            (r + d) % p
        } else {
            (r + p - d) % p
        };
        v as u32
    }

    fn advance(&mut self) {
        while self.round < self.rounds {
            if !self.sent_this_round {
                self.sent_this_round = true;
                let to = self.offset(self.round, true);
                self.outbox
                    .push_back(signal(to, kind::DISSEMINATION, self.round));
            }
            let from = self.offset(self.round, false);
            if self
                .inbox
                .take(from, kind::DISSEMINATION, self.round)
                .is_none()
            {
                return;
            }
            self.round += 1;
            self.sent_this_round = false;
        }
    }
}

impl Collective for Dissemination {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let h = decode_empty(from, data)?;
        if h.kind != kind::DISSEMINATION
            || h.step >= self.rounds
            || from != self.offset(h.step, false)
        {
            return Err(unexpected(from, &h));
        }
        self.inbox.insert(from, &h, &[])?;
        self.advance();
        Ok(())
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.round == self.rounds && self.outbox.is_empty()
    }

    // A barrier completes only once every rank has entered it.
    fn synchronizes(&self) -> bool {
        true
    }
}

/// Where a rank is in the pairwise-exchange barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PairPhase {
    /// In the power-of-two set, waiting for the extra partner's notify.
    AwaitNotify,
    /// Exchanging with `rank ^ 2^round`; `sent` says whether this round's signal is out.
    Exchange {
        round: u8,
        sent: bool,
    },
    /// An extra rank, notify sent, waiting for the release.
    AwaitRelease,
    Finished,
}

/// Pairwise exchange (seed 000 §2.2): recursive-doubling exchanges among the
/// largest power of two `M <= P`; each extra rank `r >= M` first notifies
/// `r - M`, which joins the exchange only after that notify and releases
/// `r` when the exchange is over.
pub struct PairwiseExchange {
    rank: u32,
    size: u32,
    /// Largest power of two not above `size`.
    pof2: u32,
    rounds: u8,
    phase: PairPhase,
    inbox: Inbox,
    outbox: Outbox,
}

impl PairwiseExchange {
    pub fn new(rank: u32, size: u32) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let pof2 = 1u32 << (31 - size.leading_zeros());
        let mut m = PairwiseExchange {
            rank,
            size,
            pof2,
            rounds: pof2.trailing_zeros() as u8,
            phase: PairPhase::Finished,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.phase = if rank >= pof2 {
            m.outbox
                .push_back(signal(rank - pof2, kind::PAIR_NOTIFY, 0));
            PairPhase::AwaitRelease
        } else if m.extra_partner().is_some() {
            PairPhase::AwaitNotify
        } else {
            PairPhase::Exchange {
                round: 0,
                sent: false,
            }
        };
        m.advance();
        Ok(m)
    }

    /// The extra rank folded onto this one, if any.
    fn extra_partner(&self) -> Option<u32> {
        let e = u64::from(self.rank) + u64::from(self.pof2);
        (self.rank < self.pof2 && e < u64::from(self.size)).then_some(e as u32)
    }

    fn advance(&mut self) {
        loop {
            match self.phase {
                PairPhase::AwaitNotify => {
                    let Some(e) = self.extra_partner() else {
                        return;
                    };
                    if self.inbox.take(e, kind::PAIR_NOTIFY, 0).is_none() {
                        return;
                    }
                    self.phase = PairPhase::Exchange {
                        round: 0,
                        sent: false,
                    };
                }
                PairPhase::Exchange { round, sent } => {
                    if round == self.rounds {
                        if let Some(e) = self.extra_partner() {
                            self.outbox.push_back(signal(e, kind::PAIR_RELEASE, 0));
                        }
                        self.phase = PairPhase::Finished;
                        continue;
                    }
                    let partner = self.rank ^ (1u32 << round);
                    if !sent {
                        self.outbox
                            .push_back(signal(partner, kind::PAIR_EXCHANGE, round));
                        self.phase = PairPhase::Exchange { round, sent: true };
                    }
                    if self
                        .inbox
                        .take(partner, kind::PAIR_EXCHANGE, round)
                        .is_none()
                    {
                        return;
                    }
                    self.phase = PairPhase::Exchange {
                        round: round + 1,
                        sent: false,
                    };
                }
                PairPhase::AwaitRelease => {
                    if self
                        .inbox
                        .take(self.rank - self.pof2, kind::PAIR_RELEASE, 0)
                        .is_none()
                    {
                        return;
                    }
                    self.phase = PairPhase::Finished;
                }
                PairPhase::Finished => return,
            }
        }
    }

    fn expects(&self, from: u32, h: &Header) -> bool {
        let extra = self.rank >= self.pof2;
        match h.kind {
            kind::PAIR_NOTIFY => h.step == 0 && self.extra_partner() == Some(from),
            kind::PAIR_RELEASE => h.step == 0 && extra && from == self.rank - self.pof2,
            kind::PAIR_EXCHANGE => {
                !extra && h.step < self.rounds && from == self.rank ^ (1u32 << h.step)
            }
            _ => false,
        }
    }
}

impl Collective for PairwiseExchange {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let h = decode_empty(from, data)?;
        if !self.expects(from, &h) {
            return Err(unexpected(from, &h));
        }
        self.inbox.insert(from, &h, &[])?;
        self.advance();
        Ok(())
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.phase == PairPhase::Finished && self.outbox.is_empty()
    }

    // A barrier completes only once every rank has entered it.
    fn synchronizes(&self) -> bool {
        true
    }
}

/// Binomial barrier: arrivals gather up the rank-0 binomial tree, then the
/// release travels back down it.
pub struct Binomial {
    rank: u32,
    children: Vec<(u8, u32)>,
    arrived_sent: bool,
    released: bool,
    inbox: Inbox,
    outbox: Outbox,
}

impl Binomial {
    pub fn new(rank: u32, size: u32) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        let mut m = Binomial {
            rank,
            children: tree::children(rank, size).collect(),
            arrived_sent: false,
            released: false,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance();
        Ok(m)
    }

    fn advance(&mut self) {
        if !self.arrived_sent {
            let all_in = self
                .children
                .iter()
                .all(|&(k, c)| self.inbox.has(c, kind::BINOMIAL_ARRIVE, k));
            if !all_in {
                return;
            }
            for &(k, c) in &self.children {
                self.inbox.take(c, kind::BINOMIAL_ARRIVE, k);
            }
            self.arrived_sent = true;
            if let Some((k, p)) = tree::parent(self.rank) {
                self.outbox.push_back(signal(p, kind::BINOMIAL_ARRIVE, k));
            }
        }
        if !self.released {
            if let Some((k, p)) = tree::parent(self.rank) {
                if self.inbox.take(p, kind::BINOMIAL_RELEASE, k).is_none() {
                    return;
                }
            }
            self.released = true;
            for &(k, c) in self.children.iter().rev() {
                self.outbox.push_back(signal(c, kind::BINOMIAL_RELEASE, k));
            }
        }
    }

    fn expects(&self, from: u32, h: &Header) -> bool {
        match h.kind {
            kind::BINOMIAL_ARRIVE => self.children.contains(&(h.step, from)),
            kind::BINOMIAL_RELEASE => tree::parent(self.rank) == Some((h.step, from)),
            _ => false,
        }
    }
}

impl Collective for Binomial {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let h = decode_empty(from, data)?;
        if !self.expects(from, &h) {
            return Err(unexpected(from, &h));
        }
        self.inbox.insert(from, &h, &[])?;
        self.advance();
        Ok(())
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.released && self.outbox.is_empty()
    }

    // A barrier completes only once every rank has entered it.
    fn synchronizes(&self) -> bool {
        true
    }
}

/// K-ary tree barrier (the "tree of FPGAs" of seed 002): arrivals gather up
/// the heap-ordered k-ary tree rooted at 0, then the release travels down,
/// so each way takes `log_k(P)` hops. `k >= P - 1` is one central device.
pub struct KaryTree {
    rank: u32,
    k: u32,
    children: Vec<u32>,
    arrived_sent: bool,
    released: bool,
    inbox: Inbox,
    outbox: Outbox,
}

impl KaryTree {
    pub fn new(rank: u32, size: u32, k: u32) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        if k == 0 {
            return Err(CollError::ZeroFanOut);
        }
        let mut m = KaryTree {
            rank,
            k,
            children: tree::kary_children(rank, size, k).collect(),
            arrived_sent: false,
            released: false,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance();
        Ok(m)
    }

    fn advance(&mut self) {
        let parent = tree::kary_parent(self.rank, self.k);
        if !self.arrived_sent {
            if !self
                .children
                .iter()
                .all(|&c| self.inbox.has(c, kind::KARY_ARRIVE, 0))
            {
                return;
            }
            for &c in &self.children {
                self.inbox.take(c, kind::KARY_ARRIVE, 0);
            }
            self.arrived_sent = true;
            if let Some(p) = parent {
                self.outbox.push_back(signal(p, kind::KARY_ARRIVE, 0));
            }
        }
        if !self.released {
            if let Some(p) = parent {
                if self.inbox.take(p, kind::KARY_RELEASE, 0).is_none() {
                    return;
                }
            }
            self.released = true;
            for &c in &self.children {
                self.outbox.push_back(signal(c, kind::KARY_RELEASE, 0));
            }
        }
    }

    fn expects(&self, from: u32, h: &Header) -> bool {
        h.step == 0
            && match h.kind {
                kind::KARY_ARRIVE => self.children.contains(&from),
                kind::KARY_RELEASE => tree::kary_parent(self.rank, self.k) == Some(from),
                _ => false,
            }
    }
}

impl Collective for KaryTree {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let h = decode_empty(from, data)?;
        if !self.expects(from, &h) {
            return Err(unexpected(from, &h));
        }
        self.inbox.insert(from, &h, &[])?;
        self.advance();
        Ok(())
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.released && self.outbox.is_empty()
    }

    // A barrier completes only once every rank has entered it.
    fn synchronizes(&self) -> bool {
        true
    }
}
