//! Deterministic reduce: a fixed binomial tree rooted at absolute rank 0.
//!
//! Each node folds its children in ascending order as `acc = acc op child`, so
//! the grouping depends only on the communicator size and every operand pair
//! is in rank order (safe for non-commutative ops). A root other than 0 gets
//! the final value from rank 0 in one extra message.

use crate::error::CollError;
use crate::machine::{
    check_len, check_rank, check_root, decode, encode, kind, unexpected, Collective, Inbox, Outbox,
    Outgoing,
};
use crate::ops::Combine;
use crate::tree;

/// Reduce of equal-length byte buffers to `root`.
pub struct Reduce<C> {
    rank: u32,
    root: u32,
    len: usize,
    combiner: C,
    /// Children still to fold, in fold order.
    children: Vec<(u8, u32)>,
    next_child: usize,
    /// Reduction of this rank's subtree so far; moved out once sent.
    acc: Option<Vec<u8>>,
    subtree_sent: bool,
    result: Option<Vec<u8>>,
    finished: bool,
    inbox: Inbox,
    outbox: Outbox,
}

impl<C: Combine> Reduce<C> {
    /// `data` is this rank's contribution; every rank passes the same length.
    pub fn new(
        rank: u32,
        size: u32,
        root: u32,
        data: Vec<u8>,
        combiner: C,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        let mut m = Reduce {
            rank,
            root,
            len: data.len(),
            combiner,
            children: tree::children(rank, size).collect(),
            next_child: 0,
            acc: Some(data),
            subtree_sent: false,
            result: None,
            finished: false,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance()?;
        Ok(m)
    }

    /// The reduced value, on the root once done.
    pub fn into_result(self) -> Option<Vec<u8>> {
        self.result
    }

    fn advance(&mut self) -> Result<(), CollError> {
        while let Some(&(k, child)) = self.children.get(self.next_child) {
            let Some(mut data) = self.inbox.take(child, kind::REDUCE_CONTRIB, k) else {
                return Ok(());
            };
            if let Some(acc) = self.acc.take() {
                // `acc` covers ranks below `child`'s subtree.
                self.combiner.combine(&acc, &mut data)?;
            }
            self.acc = Some(data);
            self.next_child += 1;
        }
        if !self.subtree_sent {
            self.subtree_sent = true;
            let acc = self.acc.take().unwrap_or_default();
            match tree::parent(self.rank) {
                Some((k, p)) => self.outbox.push_back(Outgoing {
                    to: p,
                    data: encode(kind::REDUCE_CONTRIB, k, &acc),
                }),
                None if self.root == 0 => self.result = Some(acc),
                None => self.outbox.push_back(Outgoing {
                    to: self.root,
                    data: encode(kind::REDUCE_RESULT, 0, &acc),
                }),
            }
        }
        if self.rank == self.root && self.root != 0 && self.result.is_none() {
            match self.inbox.take(0, kind::REDUCE_RESULT, 0) {
                Some(d) => self.result = Some(d),
                None => return Ok(()),
            }
        }
        self.finished = true;
        Ok(())
    }

    fn expects(&self, from: u32, kind_: u8, step: u8) -> bool {
        match kind_ {
            kind::REDUCE_CONTRIB => self.children.contains(&(step, from)),
            kind::REDUCE_RESULT => {
                step == 0 && from == 0 && self.rank == self.root && self.root != 0
            }
            _ => false,
        }
    }
}

impl<C: Combine> Collective for Reduce<C> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        if !self.expects(from, h.kind, h.step) {
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
        self.finished && self.outbox.is_empty()
    }

    fn result(&self) -> Option<&[u8]> {
        if self.is_done() {
            self.result.as_deref()
        } else {
            None
        }
    }

    fn take_result(&mut self) -> Option<Vec<u8>> {
        if self.is_done() {
            self.result.take()
        } else {
            None
        }
    }
}

/// The result every deterministic reduction of `parts` (one per rank, in
/// rank order) produces: the same binomial-tree grouping `Reduce` uses, so a
/// rank that sees every contribution (the shared-memory fast path) gets the
/// same bits as the message-passing algorithms.
pub fn fold_canonical(parts: &[&[u8]], op: &dyn Combine) -> Result<Vec<u8>, crate::OpError> {
    fn subtree(v: u32, parts: &[&[u8]], op: &dyn Combine) -> Result<Vec<u8>, crate::OpError> {
        let mut acc = parts[v as usize].to_vec();
        for (_, c) in tree::children(v, parts.len() as u32) {
            let mut child = subtree(c, parts, op)?;
            op.combine(&acc, &mut child)?;
            acc = child;
        }
        Ok(acc)
    }
    if parts.is_empty() {
        return Ok(Vec::new());
    }
    subtree(0, parts, op)
}
