//! Binomial-tree broadcast from any root, carrying the whole buffer.

use crate::error::CollError;
use crate::machine::{
    check_len, check_rank, check_root, decode, encode, kind, unexpected, Collective, Inbox, Outbox,
    Outgoing,
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
                self.outbox.push_back(Outgoing {
                    to: self.rel.to_abs(c),
                    data: encode(kind::BCAST, k, &self.buf),
                });
            }
        }
    }
}

impl Collective for Bcast {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        let parent = tree::parent(self.vrank).map(|(k, p)| (k, self.rel.to_abs(p)));
        if h.kind != kind::BCAST || parent != Some((h.step, from)) {
            return Err(unexpected(from, &h));
        }
        check_len(from, self.len, payload.len())?;
        self.inbox.insert(from, &h, payload)?;
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
