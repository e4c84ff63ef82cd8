//! Long TCP messages land where they belong, read from the socket straight
//! into place instead of through the frame decoder's buffer.
//!
//! - A rendezvous stream's chunk lands in its receive's buffer.
//! - An eager message lands in the buffer of the receive it matches as it
//!   begins, or, matching none, in a held buffer that waits for one (the
//!   decoder's buffer would have to be copied out anyway). A receive posted
//!   while it lands takes it when it is in, as a whole message would be.
//!
//! Held buffers of matched messages are kept ([`Spare`]) to hold the next
//! unexpected ones: a fresh one would have to be zeroed before the socket is
//! read into it, which costs what the copy it saves does.

use super::delivery::{Followup, State};
use super::matching::{Held, Unexpected};
use super::request::Op;
use lanai_wire::envelope::{Envelope, Kind};

/// Where an eager message that is landing goes.
#[derive(Debug)]
pub enum Landing {
    /// Receive request `req`, whose buffer holds the whole message.
    Recv(usize),
    /// A held buffer: no receive matched, or the matching one (`req`) is too
    /// small and reports the truncation when the message is in.
    Held { req: Option<usize>, data: Vec<u8> },
}

/// Held buffers kept for reuse.
#[derive(Debug, Default)]
pub struct Spare(Vec<Vec<u8>>);

/// Buffers kept at most, and the largest kept (the eager limit is 64 KiB by
/// default; a larger one set by `LANAI_TCP_EAGER_LIMIT` is rarely reused).
const SPARE_MAX: usize = 32;
const SPARE_BYTES_MAX: usize = 1 << 20;

impl Spare {
    /// A buffer of `len` bytes whose contents do not matter.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        match self.0.iter().position(|b| b.capacity() >= len) {
            Some(i) => {
                let mut b = self.0.swap_remove(i);
                b.resize(len, 0);
                b
            }
            None => vec![0; len],
        }
    }

    /// A held copy of `bytes`.
    pub fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        match self.0.iter().position(|b| b.capacity() >= bytes.len()) {
            Some(i) => {
                let mut b = self.0.swap_remove(i);
                b.clear();
                b.extend_from_slice(bytes);
                b
            }
            None => bytes.to_vec(),
        }
    }

    /// Keeps `b` for a later message if it is worth keeping.
    pub fn give_back(&mut self, b: Vec<u8>) {
        if self.0.len() < SPARE_MAX && b.capacity() <= SPARE_BYTES_MAX && b.capacity() > 0 {
            self.0.push(b);
        }
    }
}

fn is_eager(env: &Envelope) -> bool {
    matches!(env.kind, Kind::Eager | Kind::EagerSync)
}

impl State {
    /// The landing eager message from `from`.
    fn landing_from(&mut self, from: u32) -> Option<&mut Landing> {
        self.landing
            .iter_mut()
            .find(|(f, _)| *f == from)
            .map(|(_, l)| l)
    }

    /// Receive `req`'s buffer, if it holds `len` bytes.
    fn fits(&self, req: usize, len: usize) -> bool {
        matches!(self.reqs.get(req).map(|r| &r.op), Some(Op::Recv { buf, .. }) if len <= buf.len())
    }

    /// Bytes `r` of receive `req`'s buffer, if it is contiguous and has them.
    fn recv_bytes(&mut self, req: usize, r: std::ops::Range<usize>) -> Option<&mut [u8]> {
        let Op::Recv { buf, .. } = &self.reqs.get(req)?.op else {
            return None;
        };
        if !buf.is_contiguous() || r.end > buf.len() {
            return None;
        }
        // The caller's receive buffer, valid until the receive completes,
        // which is after the landing that writes these bytes.
        Some(&mut buf.as_mut_slice()[r])
    }

    /// Eager message `env` from `from`, `total` bytes, begins to land.
    fn land_eager(&mut self, from: u32, env: &Envelope, total: usize) {
        let to = match self.matcher.take_posted(env) {
            Some(p) if self.fits(p.req, total) => Landing::Recv(p.req),
            p => Landing::Held {
                req: p.map(|p| p.req),
                data: self.spare.take(total),
            },
        };
        self.landing.push((from, to));
    }

    /// Eager message `env` from `from`, `total` bytes, is in.
    fn eager_landed(&mut self, from: u32, env: Envelope, total: usize) {
        let Some(i) = self.landing.iter().position(|(f, _)| *f == from) else {
            return;
        };
        let (_, to) = self.landing.swap_remove(i);
        let matched = match to {
            Landing::Recv(req) => {
                self.eager_done(req, &env, total);
                true
            }
            Landing::Held { req, data } => {
                // A receive posted while it landed matches it now.
                match req.or_else(|| self.matcher.take_posted(&env).map(|p| p.req)) {
                    Some(req) => {
                        self.fill_eager(req, &env, &data);
                        self.spare.give_back(data);
                        true
                    }
                    None => {
                        self.matcher.push_unexpected(Unexpected {
                            env,
                            from_world: from,
                            held: Held::Data(data),
                        });
                        false
                    }
                }
            }
        };
        // A synchronous send is acknowledged when it matches, now or later.
        if matched && env.kind == Kind::EagerSync {
            self.followups.push(Followup::SyncAck {
                to: from,
                cookie: env.cookie,
            });
        }
    }
}

impl lanai_tcp::Sink for State {
    fn deliver(&mut self, from: u32, env: Envelope, payload: &[u8]) {
        State::deliver(self, env, from, payload)
    }

    fn land(&mut self, from: u32, env: &Envelope, total: usize) -> bool {
        if is_eager(env) {
            // The payload is the data; anything else goes whole.
            if env.len != total as u64 || self.landing_from(from).is_some() {
                return false;
            }
            self.land_eager(from, env, total);
            return true;
        }
        // A chunk that would overrun the buffer goes the whole way, which
        // reports the truncation.
        self.streamed_recv(env).is_some_and(|(_, buf, filled)| {
            filled.checked_add(total).is_some_and(|e| e <= buf.len())
        })
    }

    fn place(&mut self, from: u32, env: &Envelope, at: usize, len: usize) -> Option<&mut [u8]> {
        let end = at.checked_add(len)?;
        if is_eager(env) {
            let i = self.landing.iter().position(|(f, _)| *f == from)?;
            if let Landing::Recv(req) = self.landing[i].1 {
                return self.recv_bytes(req, at..end);
            }
            return match &mut self.landing[i].1 {
                Landing::Held { data, .. } => data.get_mut(at..end),
                Landing::Recv(_) => None,
            };
        }
        let (idx, _, filled) = self.streamed_recv(env)?;
        self.recv_bytes(idx, filled.checked_add(at)?..filled.checked_add(end)?)
    }

    fn piece(&mut self, from: u32, env: &Envelope, at: usize, bytes: &[u8]) {
        if is_eager(env) {
            let req = match self.landing_from(from) {
                Some(Landing::Held { data, .. }) => {
                    if let Some(dst) = data.get_mut(at..at + bytes.len()) {
                        dst.copy_from_slice(bytes);
                    }
                    return;
                }
                Some(Landing::Recv(req)) => *req,
                None => return,
            };
            if let Some(Op::Recv { buf, .. }) = self.reqs.get(req).map(|r| &r.op) {
                buf.write_at(at, bytes);
            }
            return;
        }
        if let Some((_, buf, filled)) = self.streamed_recv(env) {
            buf.write_at(filled + at, bytes);
        }
    }

    fn landed(&mut self, from: u32, env: Envelope, total: usize) {
        if is_eager(&env) {
            self.eager_landed(from, env, total);
        } else if let Some((idx, ..)) = self.streamed_recv(&env) {
            self.stream_advance(idx, total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::consts as c;
    use crate::abi::userbuf::UserBuf;
    use crate::engine::matching::Posted;
    use lanai_tcp::Sink;

    const CTX: u32 = 4;
    const FROM: u32 = 3;

    fn env(kind: Kind, tag: i32, len: usize) -> Envelope {
        Envelope {
            kind,
            flags: 0,
            ctx: CTX,
            src: FROM,
            tag,
            len: len as u64,
            cookie: 77,
            sig: 0,
        }
    }

    fn data(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// A receive of `len` bytes posted for `tag`.
    fn post(st: &mut State, tag: i32, len: usize) -> (usize, UserBuf) {
        let buf = UserBuf::leaked(len);
        let req = st.reqs.insert(Op::Recv {
            buf,
            ctx: CTX,
            src: FROM as i32,
            tag,
            filled: 0,
        });
        st.matcher.post(Posted {
            req,
            ctx: CTX,
            src: FROM as i32,
            tag,
        });
        (req, buf)
    }

    /// Lands `msg` as the transport would: the first `head` bytes were
    /// buffered with the header, the rest is read into place in two reads.
    fn land_all(st: &mut State, e: &Envelope, msg: &[u8], head: usize) {
        assert!(st.land(FROM, e, msg.len()));
        st.piece(FROM, e, 0, &msg[..head]);
        let mid = head + (msg.len() - head) / 2;
        for (a, b) in [(head, mid), (mid, msg.len())] {
            match st.place(FROM, e, a, b - a) {
                Some(dst) => dst.copy_from_slice(&msg[a..b]),
                None => st.piece(FROM, e, a, &msg[a..b]),
            }
        }
    }

    #[test]
    fn an_eager_message_lands_in_the_receive_it_matches() {
        let mut st = State::default();
        let (req, buf) = post(&mut st, 5, 40_000);
        let msg = data(40_000, 1);
        let e = env(Kind::Eager, 5, msg.len());
        land_all(&mut st, &e, &msg, 100);
        assert!(!st.reqs.get(req).unwrap().done, "done before the last byte");
        st.landed(FROM, e, msg.len());
        let r = st.reqs.get(req).unwrap();
        assert!(r.done);
        assert_eq!(
            (r.status.count, r.status.error, r.status.tag),
            (40_000, 0, 5)
        );
        assert_eq!(buf.as_slice(), &msg[..]);
        assert!(st.landing.is_empty() && st.followups.is_empty());
    }

    #[test]
    fn an_unmatched_message_is_held_whole_and_matched_later() {
        let mut st = State::default();
        let msg = data(20_000, 2);
        let e = env(Kind::EagerSync, 6, msg.len());
        land_all(&mut st, &e, &msg, 0);
        st.landed(FROM, e, msg.len());
        // Not matched: no acknowledgement yet.
        assert!(st.followups.is_empty());
        let u = st
            .matcher
            .take_unexpected(CTX, FROM as i32, 6)
            .expect("held");
        match u.held {
            Held::Data(d) => assert_eq!(d, msg),
            other => panic!("held as {other:?}"),
        }
    }

    #[test]
    fn a_receive_posted_while_a_message_lands_takes_it() {
        let mut st = State::default();
        let msg = data(30_000, 3);
        let e = env(Kind::EagerSync, 7, msg.len());
        assert!(st.land(FROM, &e, msg.len()));
        st.piece(FROM, &e, 0, &msg[..10_000]);
        let (req, buf) = post(&mut st, 7, 30_000);
        st.piece(FROM, &e, 10_000, &msg[10_000..]);
        st.landed(FROM, e, msg.len());
        assert!(st.reqs.get(req).unwrap().done);
        assert_eq!(buf.as_slice(), &msg[..]);
        assert!(st.matcher.take_unexpected(CTX, FROM as i32, 7).is_none());
        assert!(matches!(
            st.followups[..],
            [Followup::SyncAck {
                to: FROM,
                cookie: 77
            }]
        ));
        // Its buffer is kept for the next unexpected message.
        let again = st.spare.take(25_000);
        assert!(again.capacity() >= 30_000 && again.len() == 25_000);
    }

    #[test]
    fn a_receive_too_small_reports_the_truncation() {
        let mut st = State::default();
        let (req, buf) = post(&mut st, 8, 16_000);
        let msg = data(17_000, 4);
        let e = env(Kind::Eager, 8, msg.len());
        land_all(&mut st, &e, &msg, 500);
        st.landed(FROM, e, msg.len());
        let r = st.reqs.get(req).unwrap();
        assert!(r.done);
        assert_eq!(r.status.error, c::MPI_ERR_TRUNCATE);
        assert_eq!(buf.as_slice(), &msg[..16_000]);
    }

    #[test]
    fn other_senders_and_kinds_are_not_confused() {
        let mut st = State::default();
        let msg = data(20_000, 5);
        let e = env(Kind::Eager, 9, msg.len());
        assert!(st.land(FROM, &e, msg.len()));
        // A second eager message from the same sender cannot begin meanwhile,
        // and one whose payload is not its data never lands.
        assert!(!st.land(FROM, &e, msg.len()));
        assert!(!st.land(FROM + 1, &env(Kind::Eager, 9, 10), 20_000));
        // Another sender's bytes never reach this landing.
        assert!(st.place(FROM + 1, &e, 0, 10).is_none());
        assert!(st.place(FROM, &e, 19_999, 2).is_none(), "past the end");
        st.piece(FROM, &e, 0, &msg);
        st.landed(FROM, e, msg.len());
        assert!(st.landing.is_empty());
    }
}
