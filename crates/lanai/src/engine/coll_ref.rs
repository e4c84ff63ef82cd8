//! Large collective messages between ranks of one node pass by reference.
//! A machine builds each message as a short head and a body in a vector of
//! its own (`lanai_coll::Outgoing`); the sender keeps the body and sends
//! the head with the body's address (`BY_REF`). The receiver reads the
//! body with one `process_vm_readv` as it dequeues the reference, so
//! machines still see each peer's messages in the order sent, hands head
//! and body to the machine, which may keep the body as it is, and answers
//! `REF_READ`, which frees the sender's copy. Through the ring the same
//! message was copied in and out fragment by fragment, reassembled, and
//! queued again whenever the ring was full.
//!
//! An instance completes only once its references are read, as a
//! rendezvous send does, so what a rank keeps for its peers stays bounded
//! by its collectives in flight.
//!
//! When the kernel refuses the read, the receiver asks for the data inline
//! (`REF_STREAM`) and holds the sender's later collective messages back
//! until it has arrived (`REF_DATA`); the sender then stops passing
//! references.

use super::coll::Msg;
use super::delivery::{Followup, State};
use super::error::MpiResult;
use super::net::Route;
use super::Engine;
use crate::shm::cma;
use lanai_coll::{Head, Outgoing};
use lanai_wire::envelope::{Envelope, Kind};
use std::borrow::Cow;
use std::collections::VecDeque;

/// `Kind::Coll` flag: the payload is the body's address in the sender,
/// the sender's pid (8 and 4 little-endian bytes) and the message's head;
/// `len` is the whole message's length and `cookie` names it. The pid
/// travels along so the receiver, which reads the reference inside its
/// ring poll, need not look at the sender's control line, which the
/// sender writes at every wait.
pub const BY_REF: u8 = 1;
/// `Kind::Coll` flag, receiver to sender: reference `cookie` is read.
pub const REF_READ: u8 = 2;
/// `Kind::Coll` flag, receiver to sender: reference `cookie` could not be
/// read; send its data inline.
pub const REF_STREAM: u8 = 4;
/// `Kind::Coll` flag, sender to receiver: the data of reference `cookie`.
pub const REF_DATA: u8 = 8;

/// A message a peer has not read yet.
#[derive(Debug)]
struct Parked {
    cookie: u64,
    /// World rank of the receiver.
    to: u32,
    /// The message's own envelope, for sending it inline after all.
    env: Envelope,
    out: Outgoing,
}

/// A message from a sender whose earlier reference is being streamed.
#[derive(Debug)]
struct Held {
    env: Envelope,
    /// The reference this entry waits for; `None` once `msg` is in.
    awaits: Option<u64>,
    msg: Msg<'static>,
}

#[derive(Debug, Default)]
pub struct CollRefs {
    next_cookie: u64,
    parked: Vec<Parked>,
    /// By sender (world rank): its messages since a reference we could not
    /// read. Empty but for that fallback, so the common path only checks that.
    held: Vec<(u32, VecDeque<Held>)>,
    /// A peer could not read a reference of ours: send inline from now on.
    inline_only: bool,
    /// A read the kernel refused, for the engine to act on.
    pub refused: Option<nix::Error>,
    /// For `LANAI_STATS`: references we passed, and peers' references we
    /// read or could not read.
    pub passed: u64,
    pub reads: u64,
    pub refused_count: u64,
}

impl CollRefs {
    /// Whether messages of instance (`ctx`, `seq`) are still unread.
    pub fn holds(&self, ctx: u32, seq: u32) -> bool {
        self.parked
            .iter()
            .any(|p| p.env.ctx == ctx && p.env.tag == seq as i32)
    }

    fn held_from(&mut self, from: u32) -> &mut VecDeque<Held> {
        let i = match self.held.iter().position(|(f, _)| *f == from) {
            Some(i) => i,
            None => {
                self.held.push((from, VecDeque::new()));
                self.held.len() - 1
            }
        };
        &mut self.held[i].1
    }

    fn take(&mut self, cookie: u64) -> Option<Parked> {
        let i = self.parked.iter().position(|p| p.cookie == cookie)?;
        Some(self.parked.swap_remove(i))
    }
}

fn control(flags: u8, cookie: u64) -> Envelope {
    super::p2p::control(Kind::Coll, flags, cookie)
}

impl State {
    /// A collective message, or an answer about one of our references.
    pub fn deliver_coll(&mut self, env: Envelope, from: u32, msg: Msg<'_>) {
        if env.flags & REF_READ != 0 {
            self.colls.refs.take(env.cookie);
            self.colls.touch();
            return;
        }
        if env.flags & REF_STREAM != 0 {
            self.followups
                .push(Followup::SendInline { cookie: env.cookie });
            return;
        }
        let holding = self.colls.refs.held.iter().any(|(f, _)| *f == from);
        if env.flags & REF_DATA == 0 && !holding {
            return self.colls.deliver(env.ctx, env.tag as u32, env.src, msg);
        }
        let held = self.colls.refs.held_from(from);
        if env.flags & REF_DATA == 0 {
            held.push_back(Held {
                env,
                awaits: None,
                msg: msg.into_owned(),
            });
            return;
        }
        if let Some(h) = held.iter_mut().find(|h| h.awaits == Some(env.cookie)) {
            h.awaits = None;
            h.msg = msg.into_owned();
        }
        let mut ready = Vec::new();
        while held.front().is_some_and(|h| h.awaits.is_none()) {
            ready.extend(held.pop_front());
        }
        if held.is_empty() {
            self.colls.refs.held.retain(|(f, _)| *f != from);
        }
        for h in ready {
            let e = h.env;
            self.colls.deliver(e.ctx, e.tag as u32, e.src, h.msg);
        }
    }

    /// A `BY_REF` message from local peer `from`, read at once unless
    /// `may_read` is false (single copy turned off here).
    pub fn deliver_ref(&mut self, env: Envelope, from: u32, payload: &[u8], may_read: bool) {
        let plain = Envelope {
            flags: env.flags & !BY_REF,
            ..env
        };
        let word = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            if let Some(s) = payload.get(r.clone()) {
                b[..r.len()].copy_from_slice(s);
            }
            u64::from_le_bytes(b)
        };
        let (addr, pid) = (word(0..8), word(8..12) as i32);
        let head = payload.get(12..).and_then(Head::new).unwrap_or_default();
        let body_len = (env.len as usize).saturating_sub(head.len());
        let read = if may_read && pid > 0 {
            cma::read_vec(pid, addr, body_len)
        } else {
            Err(nix::Error::EPERM)
        };
        match read {
            Ok(v) => {
                self.colls.refs.reads += 1;
                self.followups.push(Followup::RefAnswer {
                    to: from,
                    flags: REF_READ,
                    cookie: env.cookie,
                });
                self.deliver_coll(plain, from, Msg::Parts(head, v));
            }
            Err(e) => {
                self.colls.refs.refused_count += 1;
                if may_read {
                    self.colls.refs.refused = Some(e);
                }
                self.followups.push(Followup::RefAnswer {
                    to: from,
                    flags: REF_STREAM,
                    cookie: env.cookie,
                });
                self.colls.refs.held_from(from).push_back(Held {
                    env: plain,
                    awaits: Some(env.cookie),
                    msg: Msg::Whole(Cow::Borrowed(&[])),
                });
            }
        }
    }
}

impl Engine {
    /// Sends collective message `out` (enveloped as `env`) to world rank
    /// `to`: by reference when its body is large and `to` shares our node.
    pub(super) fn send_coll(&mut self, to: u32, env: Envelope, out: Outgoing) -> MpiResult<()> {
        let large = out.body.len() > self.settings.eager_limit.min(self.net.shm_max_payload());
        let local = matches!(self.net.routes[to as usize], Route::Shm(_));
        let refs = &mut self.st.colls.refs;
        if !(large && local && self.settings.single_copy && !refs.inline_only) {
            return self.net_send(to, &env, &out.to_bytes());
        }
        refs.next_cookie = refs.next_cookie.wrapping_add(1);
        let cookie = refs.next_cookie;
        refs.passed += 1;
        let r = Envelope {
            flags: env.flags | BY_REF,
            cookie,
            ..env
        };
        let mut payload = Vec::with_capacity(12 + out.head.len());
        payload.extend_from_slice(&(out.body.as_ptr() as u64).to_le_bytes());
        payload.extend_from_slice(&std::process::id().to_le_bytes());
        payload.extend_from_slice(&out.head);
        // Parked before the send: a vector's heap block does not move with it.
        refs.parked.push(Parked {
            cookie,
            to,
            env,
            out,
        });
        self.net_send(to, &r, &payload)
    }

    /// A receiver could not read reference `cookie`: send it inline.
    pub(super) fn send_inline(&mut self, cookie: u64) -> MpiResult<()> {
        let refs = &mut self.st.colls.refs;
        refs.inline_only = true;
        let Some(p) = refs.take(cookie) else {
            return Ok(());
        };
        self.st.colls.touch();
        let env = Envelope {
            flags: p.env.flags | REF_DATA,
            cookie,
            ..p.env
        };
        self.net_send(p.to, &env, &p.out.to_bytes())
    }

    pub(super) fn ref_answer(&mut self, to: u32, flags: u8, cookie: u64) -> MpiResult<()> {
        self.net_send(to, &control(flags, cookie), &[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coll(src: u32, seq: u32, flags: u8, cookie: u64, len: usize) -> Envelope {
        Envelope {
            kind: Kind::Coll,
            flags,
            ctx: 9,
            src,
            tag: seq as i32,
            len: len as u64,
            cookie,
        }
    }

    /// A `BY_REF` payload for `body` in this process, with `head`.
    fn reference(body: &[u8], head: &[u8]) -> Vec<u8> {
        let mut p = (body.as_ptr() as u64).to_le_bytes().to_vec();
        p.extend_from_slice(&std::process::id().to_le_bytes());
        p.extend_from_slice(head);
        p
    }

    fn whole(b: &'static [u8]) -> Msg<'static> {
        Msg::Whole(Cow::Borrowed(b))
    }

    fn answers(st: &State) -> Vec<(u32, u8, u64)> {
        st.followups
            .iter()
            .filter_map(|f| match f {
                Followup::RefAnswer { to, flags, cookie } => Some((*to, *flags, *cookie)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_reference_is_read_at_once_and_answered() {
        let mut st = State::default();
        let body: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
        let env = coll(2, 5, BY_REF, 77, body.len() + 2);
        st.deliver_ref(env, 4, &reference(&body, &[1, 3]), true);
        assert_eq!(
            st.colls.early(9, 5),
            vec![(2, [&[1u8, 3][..], &body].concat())]
        );
        assert_eq!(answers(&st), vec![(4, REF_READ, 77)]);
        assert_eq!((st.colls.refs.reads, st.colls.refs.refused_count), (1, 0));
    }

    #[test]
    fn a_bad_address_is_refused_and_asked_for_inline() {
        let mut st = State::default();
        st.deliver_ref(
            coll(2, 5, BY_REF, 77, 64),
            4,
            &[8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
            true,
        );
        assert_eq!(answers(&st), vec![(4, REF_STREAM, 77)]);
        assert!(st.colls.refs.refused.is_some());
        assert!(st.colls.early(9, 5).is_empty());
    }

    /// Scripted orders: whatever arrives from the sender after a refused
    /// reference reaches the machines only after the reference's data, and
    /// in the order sent; other senders are not held.
    #[test]
    fn refused_references_keep_each_senders_order() {
        for data_order in [[7u64, 8], [8, 7]] {
            let mut st = State::default();
            st.deliver_ref(coll(1, 5, BY_REF, 7, 3), 4, &[], false);
            st.deliver_coll(coll(1, 5, 0, 0, 1), 4, whole(b"b"));
            st.deliver_ref(coll(1, 5, BY_REF, 8, 3), 4, &[], false);
            st.deliver_coll(coll(1, 5, 0, 0, 1), 4, whole(b"d"));
            st.deliver_coll(coll(3, 5, 0, 0, 1), 6, whole(b"x"));
            assert_eq!(st.colls.early(9, 5), vec![(3, b"x".to_vec())]);
            assert_eq!(answers(&st), vec![(4, REF_STREAM, 7), (4, REF_STREAM, 8)]);
            for c in data_order {
                let body: &[u8] = if c == 7 { b"a" } else { b"c" };
                st.deliver_coll(
                    coll(1, 5, REF_DATA, c, 1),
                    4,
                    Msg::Whole(Cow::Borrowed(body)),
                );
            }
            let got: Vec<Vec<u8>> = st.colls.early(9, 5).into_iter().map(|(_, d)| d).collect();
            let want: Vec<&[u8]> = vec![b"x", b"a", b"b", b"c", b"d"];
            assert_eq!(got, want, "data arriving in order {data_order:?}");
            assert!(st.colls.refs.held.is_empty());
            // Held no more: the next message goes straight through.
            st.deliver_coll(coll(1, 5, 0, 0, 1), 4, whole(b"e"));
            assert_eq!(
                st.colls.early(9, 5).last().map(|(_, d)| d.clone()),
                Some(b"e".to_vec())
            );
        }
    }

    #[test]
    fn answers_free_parked_messages() {
        let mut st = State::default();
        st.colls.refs.parked.push(Parked {
            cookie: 3,
            to: 1,
            env: coll(0, 2, 0, 0, 4),
            out: Outgoing::new(1, &[7, 0], vec![1, 2, 3, 4]),
        });
        assert!(st.colls.refs.holds(9, 2));
        st.deliver_coll(control(REF_STREAM, 3), 1, whole(&[]));
        assert!(matches!(
            st.followups[..],
            [Followup::SendInline { cookie: 3 }]
        ));
        st.deliver_coll(control(REF_READ, 3), 1, whole(&[]));
        assert!(!st.colls.refs.holds(9, 2));
    }
}
