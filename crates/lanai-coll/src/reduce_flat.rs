//! Reduce with flat communication: every non-root sends its contribution
//! straight to the root, which folds them all with the binomial grouping
//! ([`fold_in_place`]), so the bits are those of [`crate::Reduce`] over the
//! binomial tree, whatever the arrival order.
//!
//! A non-root is done once its message is out: no rank waits for any rank
//! but the root. Where a hop of a tree costs more than one more message at
//! the root (ranks that share cores, where each hop waits for a process to
//! be scheduled; few ranks on a slow network) it is the faster shape. The
//! root holds every contribution at once, so it is for small ones.

use crate::error::CollError;
use crate::machine::{
    check_len, check_rank, check_root, decode, decode_head, kind, unexpected, Collective, Outbox,
    Outgoing,
};
use crate::ops::Combine;
use crate::reduce::fold_in_place;

/// Reduce of equal-length byte buffers to `root`, flat.
pub struct FlatReduce<C> {
    len: usize,
    combiner: C,
    /// Root only: every contribution, end to end in rank order.
    all: Vec<u8>,
    /// Root only: which ranks' contributions are in `all`.
    got: Vec<bool>,
    missing: u32,
    result: Option<Vec<u8>>,
    outbox: Outbox,
}

impl<C: Combine> FlatReduce<C> {
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
        let len = data.len();
        let mut m = FlatReduce {
            len,
            combiner,
            all: Vec::new(),
            got: Vec::new(),
            missing: 0,
            result: None,
            outbox: Outbox::new(),
        };
        if rank != root {
            m.outbox
                .push_back(Outgoing::with_header(root, kind::REDUCE_CONTRIB, 0, data));
            return Ok(m);
        }
        m.all = vec![0; len * size as usize];
        m.all[rank as usize * len..][..len].copy_from_slice(&data);
        m.got = vec![false; size as usize];
        m.got[rank as usize] = true;
        m.missing = size - 1;
        if m.missing == 0 {
            m.finish()?;
        }
        Ok(m)
    }

    fn finish(&mut self) -> Result<(), CollError> {
        let n = self.got.len();
        let len = self.len;
        let mut all = std::mem::take(&mut self.all);
        fold_in_place(&mut all, len, &self.combiner)?;
        // The fold leaves the result in the last part.
        if n > 1 {
            all.copy_within((n - 1) * len..n * len, 0);
        }
        all.truncate(len);
        self.result = Some(all);
        Ok(())
    }
}

impl<C: Combine> Collective for FlatReduce<C> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        self.handle_parts(from, &[h.kind, h.step], payload.to_vec())
    }

    fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let h = decode_head(from, head)?;
        let fresh = self.got.get(from as usize) == Some(&false);
        if h.kind != kind::REDUCE_CONTRIB || h.step != 0 || !fresh {
            return Err(unexpected(from, &h));
        }
        check_len(from, self.len, body.len())?;
        self.all[from as usize * self.len..][..self.len].copy_from_slice(&body);
        self.got[from as usize] = true;
        self.missing -= 1;
        if self.missing == 0 {
            self.finish()?;
        }
        Ok(())
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.missing == 0 && self.outbox.is_empty()
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
