//! Broadcast from any root: a binomial tree carrying the whole buffer, or
//! scatter then ring allgather for large messages.

use std::fmt;
use std::str::FromStr;

use crate::allreduce::UnknownAlgorithm;
use crate::error::CollError;
use crate::gather::subtree_len;
use crate::machine::{
    check_len, check_rank, check_root, decode, decode_head, kind, unexpected, Collective, Inbox,
    Outbox, Outgoing,
};
use crate::schedule::{
    ring_allgather, scheduled_collective, Apply, NoCombine, Plan, Schedule, Step,
};
use crate::tree::{self, Relative};

/// Broadcast of the root's buffer to every rank.
pub struct Bcast {
    rel: Relative,
    /// This rank relative to the root.
    vrank: u32,
    /// On the root, the data; elsewhere, filled on arrival.
    buf: Vec<u8>,
    len: usize,
    have: bool,
    taken: bool,
    forwarded: bool,
    inbox: Inbox,
    outbox: Outbox,
}

impl Bcast {
    /// On the root `data` is the message; on other ranks only its length is
    /// used (the expected message length; the buffer is reused for the result).
    pub fn new(rank: u32, size: u32, root: u32, data: Vec<u8>) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let rel = Relative { root, size };
        let vrank = rel.to_rel(rank);
        let mut m = Bcast {
            rel,
            vrank,
            len: data.len(),
            buf: data,
            have: vrank == 0,
            taken: false,
            forwarded: false,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance();
        Ok(m)
    }

    /// The broadcast data once done.
    pub fn into_result(self) -> Option<Vec<u8>> {
        self.have.then_some(self.buf)
    }

    fn advance(&mut self) {
        if !self.have {
            let Some((k, p)) = tree::parent(self.vrank) else {
                return;
            };
            match self.inbox.take(self.rel.to_abs(p), kind::BCAST, k) {
                Some(d) => {
                    self.buf = d;
                    self.have = true;
                }
                None => return,
            }
        }
        if !self.forwarded {
            self.forwarded = true;
            // Largest subtree first: it has the longest way to go.
            for (k, c) in tree::children(self.vrank, self.rel.size).rev() {
                self.outbox.push_back(Outgoing::with_header(
                    self.rel.to_abs(c),
                    kind::BCAST,
                    k,
                    self.buf.clone(),
                ));
            }
        }
    }
}

impl Collective for Bcast {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        self.handle_parts(from, &[h.kind, h.step], payload.to_vec())
    }

    fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let h = decode_head(from, head)?;
        let parent = tree::parent(self.vrank).map(|(k, p)| (k, self.rel.to_abs(p)));
        if h.kind != kind::BCAST || parent != Some((h.step, from)) {
            return Err(unexpected(from, &h));
        }
        check_len(from, self.len, body.len())?;
        self.inbox.insert_owned(from, &h, body)?;
        self.advance();
        Ok(())
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.have && self.forwarded && self.outbox.is_empty()
    }

    fn result(&self) -> Option<&[u8]> {
        (self.is_done() && !self.taken).then_some(self.buf.as_slice())
    }

    fn take_result(&mut self) -> Option<Vec<u8>> {
        if self.is_done() && !self.taken {
            self.taken = true;
            Some(std::mem::take(&mut self.buf))
        } else {
            None
        }
    }
}

/// Messages of at least this many bytes use scatter-allgather under
/// `BcastAlgo::Auto` (on three or more ranks).
pub const BCAST_AUTO_SCATTER_ALLGATHER_MIN: usize = 128 * 1024;

/// Broadcast algorithm choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BcastAlgo {
    /// Scatter-allgather for large messages on three or more ranks, else binomial.
    Auto,
    Binomial,
    ScatterAllgather,
}

impl BcastAlgo {
    /// Knob spelling of the algorithm.
    pub const fn name(self) -> &'static str {
        match self {
            BcastAlgo::Auto => "auto",
            BcastAlgo::Binomial => "binomial",
            BcastAlgo::ScatterAllgather => "scatter_allgather",
        }
    }

    /// The concrete algorithm `Auto` picks for this size and message length.
    pub fn resolve(self, size: u32, len: usize) -> BcastAlgo {
        match self {
            BcastAlgo::Auto if size >= 3 && len >= BCAST_AUTO_SCATTER_ALLGATHER_MIN => {
                BcastAlgo::ScatterAllgather
            }
            BcastAlgo::Auto => BcastAlgo::Binomial,
            other => other,
        }
    }
}

impl FromStr for BcastAlgo {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            BcastAlgo::Auto,
            BcastAlgo::Binomial,
            BcastAlgo::ScatterAllgather,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

impl fmt::Display for BcastAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Builds a broadcast machine with the chosen algorithm (arguments as `Bcast::new`).
pub fn bcast(
    rank: u32,
    size: u32,
    root: u32,
    data: Vec<u8>,
    algo: BcastAlgo,
) -> Result<Box<dyn Collective + Send>, CollError> {
    Ok(match algo.resolve(size, data.len()) {
        BcastAlgo::ScatterAllgather => Box::new(ScatterAllgather::new(rank, size, root, data)?),
        _ => Box::new(Bcast::new(rank, size, root, data)?),
    })
}

/// Broadcast for large messages: the root's buffer is cut into `P` nearly
/// equal chunks (chunk `u` for the rank `u` places after the root), scattered
/// down the binomial tree, then gathered by everyone around a ring.
pub struct ScatterAllgather {
    inner: Schedule<NoCombine>,
}

impl ScatterAllgather {
    /// Arguments as `Bcast::new`: `data` is the message on the root and only
    /// its length matters elsewhere.
    pub fn new(rank: u32, size: u32, root: u32, data: Vec<u8>) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let rel = Relative { root, size };
        let v = rel.to_rel(rank);
        let len = data.len();
        // Start of chunk u; u128 so the product cannot overflow.
        let start = |u: u32| (len as u128 * u128::from(u) / u128::from(size)) as usize;
        let chunks: Vec<_> = (0..size).map(|u| start(u)..start(u + 1)).collect();
        let subtree = |u: u32| start(u)..start(u + subtree_len(u, size));
        let mut steps = Vec::new();
        let buf = if v == 0 {
            data
        } else {
            if let Some((_, p)) = tree::parent(v) {
                steps.push(Step::Recv {
                    from: rel.to_abs(p),
                    kind: kind::BCAST_SCATTER,
                    range: subtree(v),
                    apply: Apply::Store,
                });
            }
            vec![0; len]
        };
        for (_, c) in tree::children(v, size).rev() {
            steps.push(Step::Send {
                to: rel.to_abs(c),
                kind: kind::BCAST_SCATTER,
                range: subtree(c),
            });
        }
        ring_allgather(
            &mut steps,
            v,
            size,
            &chunks,
            |u| rel.to_abs(u),
            kind::BCAST_ALLGATHER,
        );
        let plan = Plan {
            steps,
            buf,
            result: Some(vec![0..len]),
        };
        Ok(ScatterAllgather {
            inner: Schedule::new(plan, NoCombine)?,
        })
    }
}

scheduled_collective!(ScatterAllgather);
