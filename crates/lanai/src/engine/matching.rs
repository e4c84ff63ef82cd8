//! MPI matching: posted receives and unexpected messages, in arrival order.
//!
//! Non-overtaking holds because each transport delivers one sender's
//! messages in order and both queues are searched front to back.
//!
//! The program's contexts (even ids) share one pair of queues, as
//! wildcards need. A collective's transfers use the communicator's odd
//! context, where every receive names its source and tag, so there each
//! (context, source, tag) has queues of its own: members that run calls
//! ahead of a gather's root would otherwise leave thousands of messages in
//! one queue for each of the root's receives to search.

use lanai_wire::envelope::Envelope;
use std::collections::{HashMap, VecDeque};

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

/// Whether `ctx` is a collective's, whose receives never use wildcards.
fn is_coll(ctx: u32) -> bool {
    ctx & 1 == 1
}

/// A collective-context queue's key: context, source, tag.
type Exact = (u32, u32, i32);

/// Queues by exact key. FNV, not the default SipHash, which cost a
/// gatherv's root about 1100 instructions a message (2 ranks, 64 B): the
/// keys come from the job's own authenticated peers.
type ExactMap<T> = HashMap<Exact, VecDeque<T>, fnv::FnvBuildHasher>;

/// Takes the front of `key`'s queue, dropping the queue once empty (tags
/// are collective sequence numbers, so keys do not come back soon).
fn pop_exact<T>(map: &mut ExactMap<T>, key: Exact) -> Option<T> {
    let q = map.get_mut(&key)?;
    let front = q.pop_front();
    if q.is_empty() {
        map.remove(&key);
    }
    front
}

#[derive(Debug, Default)]
pub struct Matcher {
    posted: VecDeque<Posted>,
    unexpected: VecDeque<Unexpected>,
    coll_posted: ExactMap<Posted>,
    coll_unexpected: ExactMap<Unexpected>,
}

impl Matcher {
    /// The first posted receive this envelope matches, removed from the queue.
    #[inline(always)]
    pub fn take_posted(&mut self, env: &Envelope) -> Option<Posted> {
        if is_coll(env.ctx) {
            return pop_exact(&mut self.coll_posted, (env.ctx, env.src, env.tag));
        }
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
    #[inline(always)]
    pub fn take_unexpected(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Unexpected> {
        if is_coll(ctx) {
            debug_assert!(src >= 0 && tag >= 0, "a wildcard on a collective context");
            return pop_exact(&mut self.coll_unexpected, (ctx, src as u32, tag));
        }
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
        if is_coll(ctx) {
            let q = self.coll_unexpected.get(&(ctx, src as u32, tag))?;
            return q.front();
        }
        self.unexpected
            .iter()
            .find(|u| matches(ctx, src, tag, &u.env))
    }

    /// An unexpected message in collective context `ctx` with `tag`, from
    /// anyone.
    pub fn coll_unexpected_any(&self, ctx: u32, tag: i32) -> Option<&Unexpected> {
        self.coll_unexpected
            .iter()
            .find(|((c, _, t), _)| *c == ctx && *t == tag)
            .and_then(|(_, q)| q.front())
    }

    #[inline]
    pub fn post(&mut self, p: Posted) {
        if is_coll(p.ctx) {
            debug_assert!(
                p.src >= 0 && p.tag >= 0,
                "a wildcard on a collective context"
            );
            let key = (p.ctx, p.src as u32, p.tag);
            self.coll_posted.entry(key).or_default().push_back(p);
            return;
        }
        self.posted.push_back(p);
    }

    pub fn push_unexpected(&mut self, u: Unexpected) {
        if is_coll(u.env.ctx) {
            let key = (u.env.ctx, u.env.src, u.env.tag);
            self.coll_unexpected.entry(key).or_default().push_back(u);
            return;
        }
        self.unexpected.push_back(u);
    }

    /// Removes a posted receive (cancel); false if it already matched.
    pub fn cancel(&mut self, req: usize) -> bool {
        if let Some(i) = self.posted.iter().position(|p| p.req == req) {
            self.posted.remove(i);
            return true;
        }
        let mut emptied = None;
        let mut found = false;
        for (key, q) in self.coll_posted.iter_mut() {
            if let Some(i) = q.iter().position(|p| p.req == req) {
                q.remove(i);
                found = true;
                emptied = q.is_empty().then_some(*key);
                break;
            }
        }
        if let Some(key) = emptied {
            self.coll_posted.remove(&key);
        }
        found
    }

    pub fn posted_len(&self) -> usize {
        self.posted.len() + self.coll_posted.values().map(VecDeque::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lanai_wire::envelope::Kind;

    fn env(src: u32, tag: i32) -> Envelope {
        env_on(0, src, tag)
    }

    fn env_on(ctx: u32, src: u32, tag: i32) -> Envelope {
        Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx,
            src,
            tag,
            len: 0,
            cookie: 0,
            sig: 0,
        }
    }

    fn unexpected(ctx: u32, src: u32, tag: i32) -> Unexpected {
        Unexpected {
            env: env_on(ctx, src, tag),
            from_world: src,
            held: Held::Data(vec![src as u8, tag as u8]),
        }
    }

    #[test]
    fn a_collective_context_matches_each_source_and_tag_in_order() {
        let mut m = Matcher::default();
        // Three members, each three calls ahead, two messages a call.
        for tag in 0..3 {
            for src in 1..4 {
                m.push_unexpected(unexpected(3, src, tag));
                m.push_unexpected(unexpected(3, src, tag));
            }
        }
        // The same numbers on a program's context stay apart.
        m.push_unexpected(unexpected(2, 1, 0));
        for tag in 0..3 {
            for src in (1..4).rev() {
                for _ in 0..2 {
                    let u = m.take_unexpected(3, src as i32, tag).unwrap();
                    assert_eq!((u.env.ctx, u.env.src, u.env.tag), (3, src, tag));
                }
                assert!(m.peek_unexpected(3, src as i32, tag).is_none());
            }
        }
        assert!(m.coll_unexpected.is_empty(), "emptied queues are dropped");
        assert_eq!(m.take_unexpected(2, 1, 0).unwrap().env.ctx, 2);
    }

    #[test]
    fn collective_receives_match_in_posting_order_and_cancel() {
        let mut m = Matcher::default();
        for req in 1..=3 {
            m.post(Posted {
                req,
                ctx: 5,
                src: 2,
                tag: 7,
            });
        }
        m.post(Posted {
            req: 4,
            ctx: 5,
            src: 3,
            tag: 7,
        });
        assert_eq!(m.posted_len(), 4);
        assert!(
            m.take_posted(&env_on(5, 2, 8)).is_none(),
            "another call's tag"
        );
        assert!(
            m.take_posted(&env_on(4, 2, 7)).is_none(),
            "the program's context"
        );
        assert_eq!(m.take_posted(&env_on(5, 2, 7)).unwrap().req, 1);
        assert!(m.cancel(2));
        assert!(!m.cancel(2));
        assert_eq!(m.take_posted(&env_on(5, 2, 7)).unwrap().req, 3);
        assert!(m.take_posted(&env_on(5, 2, 7)).is_none());
        assert_eq!(m.take_posted(&env_on(5, 3, 7)).unwrap().req, 4);
        assert_eq!(m.posted_len(), 0);
        assert!(m.coll_posted.is_empty());
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
