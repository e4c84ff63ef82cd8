//! MPI matching: posted receives and unexpected messages, in arrival order.
//!
//! Non-overtaking holds because each transport delivers one sender's
//! messages in order and both queues are searched front to back.

use lanai_wire::envelope::Envelope;
use std::collections::VecDeque;

pub const ANY_SOURCE: i32 = -2;
pub const ANY_TAG: i32 = -1;

/// A receive waiting for a message.
#[derive(Debug, Clone, Copy)]
pub struct Posted {
    pub req: usize,
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
}

/// How the data of an unexpected message is held.
#[derive(Debug)]
pub enum Held {
    /// The whole payload, copied out of the transport.
    Data(Vec<u8>),
    /// A rendezvous offer: the payload stays with the sender until matched.
    Rndv { addr: u64 },
}

/// A message that arrived before a matching receive was posted.
#[derive(Debug)]
pub struct Unexpected {
    pub env: Envelope,
    pub from_world: u32,
    pub held: Held,
}

fn matches(ctx: u32, src: i32, tag: i32, env: &Envelope) -> bool {
    ctx == env.ctx
        && (src == ANY_SOURCE || src as u32 == env.src)
        && (tag == ANY_TAG || tag == env.tag)
}

#[derive(Debug, Default)]
pub struct Matcher {
    posted: VecDeque<Posted>,
    unexpected: VecDeque<Unexpected>,
}

impl Matcher {
    /// The first posted receive this envelope matches, removed from the queue.
    #[inline]
    pub fn take_posted(&mut self, env: &Envelope) -> Option<Posted> {
        // Usually the oldest receive matches; popping it skips the general
        // removal's shifting.
        let front = self.posted.front()?;
        if matches(front.ctx, front.src, front.tag, env) {
            return self.posted.pop_front();
        }
        let i = self
            .posted
            .iter()
            .position(|p| matches(p.ctx, p.src, p.tag, env))?;
        self.posted.remove(i)
    }

    /// The first unexpected message matching, removed from the queue.
    #[inline]
    pub fn take_unexpected(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Unexpected> {
        let front = self.unexpected.front()?;
        if matches(ctx, src, tag, &front.env) {
            return self.unexpected.pop_front();
        }
        let i = self
            .unexpected
            .iter()
            .position(|u| matches(ctx, src, tag, &u.env))?;
        self.unexpected.remove(i)
    }

    /// The first unexpected message matching, left in place (probe).
    pub fn peek_unexpected(&self, ctx: u32, src: i32, tag: i32) -> Option<&Unexpected> {
        self.unexpected
            .iter()
            .find(|u| matches(ctx, src, tag, &u.env))
    }

    #[inline]
    pub fn post(&mut self, p: Posted) {
        self.posted.push_back(p);
    }

    pub fn push_unexpected(&mut self, u: Unexpected) {
        self.unexpected.push_back(u);
    }

    /// Removes a posted receive (cancel); false if it already matched.
    pub fn cancel(&mut self, req: usize) -> bool {
        match self.posted.iter().position(|p| p.req == req) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lanai_wire::envelope::Kind;

    fn env(src: u32, tag: i32) -> Envelope {
        Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx: 0,
            src,
            tag,
            len: 0,
            cookie: 0,
        }
    }

    #[test]
    fn wildcards_and_order() {
        let mut m = Matcher::default();
        m.post(Posted {
            req: 1,
            ctx: 0,
            src: 1,
            tag: 5,
        });
        m.post(Posted {
            req: 2,
            ctx: 0,
            src: ANY_SOURCE,
            tag: ANY_TAG,
        });
        m.post(Posted {
            req: 3,
            ctx: 0,
            src: 1,
            tag: 5,
        });
        assert_eq!(m.take_posted(&env(1, 5)).unwrap().req, 1);
        assert_eq!(m.take_posted(&env(1, 5)).unwrap().req, 2);
        assert_eq!(m.take_posted(&env(1, 5)).unwrap().req, 3);
        assert!(m.take_posted(&env(1, 5)).is_none());
    }

    #[test]
    fn other_contexts_never_match() {
        let mut m = Matcher::default();
        m.post(Posted {
            req: 1,
            ctx: 2,
            src: ANY_SOURCE,
            tag: ANY_TAG,
        });
        assert!(m.take_posted(&env(0, 0)).is_none());
    }

    #[test]
    fn unexpected_in_arrival_order() {
        let mut m = Matcher::default();
        for t in 0..3 {
            m.push_unexpected(Unexpected {
                env: env(4, t),
                from_world: 4,
                held: Held::Data(vec![t as u8]),
            });
        }
        assert_eq!(
            m.peek_unexpected(0, ANY_SOURCE, ANY_TAG).unwrap().env.tag,
            0
        );
        assert_eq!(m.take_unexpected(0, 4, 2).unwrap().env.tag, 2);
        assert_eq!(
            m.take_unexpected(0, ANY_SOURCE, ANY_TAG).unwrap().env.tag,
            0
        );
        assert_eq!(
            m.take_unexpected(0, ANY_SOURCE, ANY_TAG).unwrap().env.tag,
            1
        );
    }

    #[test]
    fn cancel_only_unmatched() {
        let mut m = Matcher::default();
        m.post(Posted {
            req: 9,
            ctx: 0,
            src: 0,
            tag: 0,
        });
        assert!(m.cancel(9));
        assert!(!m.cancel(9));
    }
}
