//! Large collective messages between ranks of one node pass by reference.
//! A machine builds each message as a short head and a body in a vector of
//! its own (`lanai_coll::Outgoing`); the sender keeps the body and sends
//! the head with the body's address (`BY_REF`). The receiver reads the
//! body with one `process_vm_readv`, hands head and body to the machine,
//! which may keep the body as it is, and answers `REF_READ`, which frees
//! the sender's copy. Through the ring the same message was copied in and
//! out fragment by fragment, reassembled, and queued again whenever the
//! ring was full.
//!
//! When the reference's instance is running, the receiver reads it as it
//! dequeues it, so machines see each peer's messages in the order sent.
//! When the instance has not started here, the reference waits unread
//! among the instance's early messages, in its place, and is read when
//! the instance starts: just before the machine uses the data, and without
//! holding a body for every call a sender has run ahead.
//!
//! The body is the machine's own vector, not the caller's buffer, so an
//! instance may complete before its references are read, as an eager send
//! does: a non-root of a reduce then leaves at once and its next call
//! overlaps the root's work. What a rank keeps for its peers that way is
//! bounded by [`LENT_MAX`] bytes; beyond it an instance completes only once
//! its references are read, as a rendezvous send does. That bound is the
//! flow control between a sender that runs ahead and its receiver. Over
//! TCP the same bound counts the messages a receiver keeps for us: every
//! message of an instance that may finish before its receiver starts
//! (`Collective::synchronizes`), sent whole with [`ACK`], until the
//! receiver's instance has it (`used_batch.rs`); within a node, such a
//! small message once the ring to its receiver is full, or once its
//! receiver has asked for it ([`LEND`]): a receiver that waits elsewhere
//! in MPI drains the ring, so it never fills, and the receiver counts
//! what it keeps early instead.
//! `MPI_Finalize` begins with a barrier, and no peer enters it with a
//! reference of ours unread (it reads every reference its instances need
//! before they complete), so no body is freed while a peer may read it.
//!
//! When the kernel refuses the read, the receiver asks for the data inline
//! (`REF_STREAM`) and holds the sender's later collective messages back
//! until it has arrived (`REF_DATA`); the sender then stops passing
//! references.

use super::coll::{Early, Msg};
use super::delivery::{Followup, State};
use super::error::MpiResult;
use super::net::Route;
use super::used_batch::{self, UsedBatches};
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
/// `Kind::Coll` flag, receiver to sender: message `cookie` (a reference,
/// or a message sent whole with [`ACK`]) is used, so its sender forgets it.
/// An answer to messages sent whole may name more: their cookies follow
/// in the payload, 8 little-endian bytes each (`used_batch.rs`).
pub const USED: u8 = 2;
/// `Kind::Coll` flag, receiver to sender: reference `cookie` could not be
/// read; send its data inline.
pub const REF_STREAM: u8 = 4;
/// `Kind::Coll` flag, sender to receiver: the data of reference `cookie`.
pub const REF_DATA: u8 = 8;
/// `Kind::Coll` flag, sender to receiver, on a large message sent whole
/// over the network: answer [`USED`] with `cookie` once its instance has
/// it (in a batch, see `used_batch.rs`).
pub const ACK: u8 = 16;
/// `Kind::Coll` flag, sender to receiver: an instance of ours is past the
/// lending bound and waits for answers; send what you owe us now, and
/// the next answer as soon as it is owed.
pub const ASK: u8 = 32;
/// `Kind::Coll` flag, receiver to sender: more than [`LENT_MAX`] bytes of
/// your unlent messages wait here for instances not started yet; lend me
/// every message you would lend over the network, from now on.
pub const LEND: u8 = 64;

/// A message a peer has not used yet, as it is lent.
#[derive(Debug)]
struct Lent {
    cookie: u64,
    /// World rank of the receiver.
    to: u32,
    /// The message's own envelope (its instance), for sending it inline
    /// after all.
    env: Envelope,
    /// Bytes the peer holds for us, or we for it, until it is used.
    bytes: usize,
    /// A reference's body, which the peer reads from here; `None` for a
    /// message sent whole, which the peer keeps.
    out: Option<Outgoing>,
}

/// What is kept of a lent message: small, since a sender may be thousands
/// of small messages ahead (each slot's growth faults in fresh pages).
#[derive(Debug, Clone, Copy)]
struct Slot {
    cookie: u64,
    /// 0 once taken.
    bytes: usize,
    to: u32,
    /// Its body waits in [`LentList::parked`].
    by_ref: bool,
}

/// The messages lent, in cookie order. Up to a batch of answers per
/// receiver of them, or thousands of small ones at the bound: a take is a
/// binary search, and taken slots are dropped together once they are
/// half. (With a hash map instead, a 2-rank 8-byte reduce over TCP took
/// 1.16 times as long as unlent, against 1.02; and a message that stays
/// unanswered must not hold back the slots after it, as it would in a
/// ring indexed by cookie.)
#[derive(Debug, Default)]
struct LentList {
    slots: Vec<Slot>,
    live: usize,
    /// References' envelopes and bodies, by cookie: large, so few.
    parked: Vec<(u64, Envelope, Outgoing)>,
}

impl LentList {
    /// Keeps `p`; returns the bytes it counts for.
    fn push(&mut self, p: Lent) -> usize {
        let slot = Slot {
            cookie: p.cookie,
            bytes: p.bytes.max(1),
            to: p.to,
            by_ref: p.out.is_some(),
        };
        if let Some(out) = p.out {
            self.parked.push((p.cookie, p.env, out));
        }
        // Cookies only grow, but for tests that pick their own.
        let c = p.cookie;
        let i = match self.slots.last() {
            Some(last) if last.cookie > c => self.slots.partition_point(|s| s.cookie < c),
            _ => self.slots.len(),
        };
        self.slots.insert(i, slot);
        self.live += 1;
        slot.bytes
    }

    /// Message `cookie`'s slot, and its envelope and body if it was a
    /// reference, unless taken already.
    fn take(&mut self, cookie: u64) -> Option<(Slot, Option<(Envelope, Outgoing)>)> {
        let i = self
            .slots
            .binary_search_by_key(&cookie, |s| s.cookie)
            .ok()?;
        let slot = self.slots[i];
        if slot.bytes == 0 {
            return None;
        }
        self.slots[i].bytes = 0;
        self.live -= 1;
        if self.live == 0 {
            self.slots.clear();
        } else if self.slots.len() > 32 && self.live * 2 < self.slots.len() {
            self.slots.retain(|s| s.bytes > 0);
        }
        let body = if slot.by_ref {
            let j = self.parked.iter().position(|p| p.0 == cookie);
            j.map(|j| {
                let (_, env, out) = self.parked.swap_remove(j);
                (env, out)
            })
        } else {
            None
        };
        Some((slot, body))
    }

    /// Message `cookie`'s slot while it is lent.
    fn get(&self, cookie: u64) -> Option<&Slot> {
        let i = self
            .slots
            .binary_search_by_key(&cookie, |s| s.cookie)
            .ok()?;
        Some(&self.slots[i]).filter(|s| s.bytes > 0)
    }

    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(|s| s.bytes > 0)
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.live == 0
    }
}

/// A message from a sender whose earlier reference is being streamed.
#[derive(Debug)]
struct Held {
    env: Envelope,
    /// The reference this entry waits for; `None` once `msg` is in.
    awaits: Option<u64>,
    msg: Msg<'static>,
}

/// Bytes of messages a rank may have lent its peers past the completion
/// of the instances that sent them (bodies it keeps for them, or messages
/// they keep until they reach the instance): enough for a non-root to run
/// a few large reduces, or thousands of small ones, ahead of its root
/// without holding much memory on either side.
pub const LENT_MAX: usize = 4 << 20;

/// What a small message sent whole counts against [`LENT_MAX`] at least:
/// a receiver that has not reached its instance keeps an envelope and an
/// allocation for it as well as its bytes, so 8-byte messages would
/// otherwise let a sender run some 400 000 calls ahead.
pub const LENT_MIN_CHARGE: usize = 512;

#[derive(Debug, Default)]
pub struct CollRefs {
    next_cookie: u64,
    lent: LentList,
    /// Receivers we sent [`ASK`] and have had no answer from since.
    asked: Vec<u32>,
    /// Bytes of the messages in `lent`.
    lent_bytes: usize,
    /// By sender (world rank): its messages since a reference we could not
    /// read. Empty but for that fallback, so the common path only checks that.
    held: Vec<(u32, VecDeque<Held>)>,
    /// A peer could not read a reference of ours: send inline from now on.
    inline_only: bool,
    /// A read the kernel refused, for the engine to act on.
    pub refused: Option<nix::Error>,
    /// Answers we owe senders of messages sent whole.
    pub owed: UsedBatches,
    /// For `LANAI_STATS`: references we passed, and peers' references we
    /// read or could not read.
    pub passed: u64,
    pub reads: u64,
    pub refused_count: u64,
    /// For `LANAI_STATS`: [`ASK`]s sent, one per receiver each time an
    /// instance waited past the bound.
    pub asks: u64,
    /// Moves on whenever an answer comes or a message is forgotten: an
    /// instance found holding need not be looked at again until it has.
    pub generation: u64,
    /// By sender (world rank): what its unlent messages waiting here for
    /// their instances count, as a lent one would ([`LENT_MIN_CHARGE`]
    /// at least); `usize::MAX` once we have sent it [`LEND`].
    early_unlent: Vec<usize>,
    /// Receivers (world ranks) that sent us [`LEND`].
    lend_to: Vec<u32>,
    /// For `LANAI_STATS`: the [`LEND`]s we sent.
    pub lend_asks: u64,
}

impl CollRefs {
    /// Whether an instance that lent the messages `lent` (their cookies)
    /// must wait for them to be used before it completes: only when more
    /// than [`LENT_MAX`] bytes are lent. It waits for its own messages
    /// alone, since whether a peer has reached the instances of others
    /// must not hold it. Forgets from `lent` those already used, so a
    /// check costs what the instance lent, not what every instance did.
    pub fn holds(&self, lent: &mut Vec<u64>) -> bool {
        if self.lent_bytes <= LENT_MAX {
            return false;
        }
        lent.retain(|&c| self.lent.get(c).is_some());
        !lent.is_empty()
    }

    /// Counts an unlent message from `from` (`len` bytes) kept for an
    /// instance not started here. True when the sender should now be told
    /// to lend ([`LEND`]): once, past [`LENT_MAX`].
    fn kept_early(&mut self, from: u32, len: usize) -> bool {
        let from = from as usize;
        if self.early_unlent.len() <= from {
            self.early_unlent.resize(from + 1, 0);
        }
        let kept = &mut self.early_unlent[from];
        if *kept == usize::MAX {
            return false;
        }
        *kept += len.max(LENT_MIN_CHARGE);
        if *kept <= LENT_MAX {
            return false;
        }
        *kept = usize::MAX;
        self.lend_asks += 1;
        true
    }

    /// An unlent message counted by `kept_early` was handed to its instance.
    fn taken_early(&mut self, from: u32, len: usize) {
        if let Some(kept) = self.early_unlent.get_mut(from as usize) {
            if *kept != usize::MAX {
                *kept = kept.saturating_sub(len.max(LENT_MIN_CHARGE));
            }
        }
    }

    /// Whether world rank `to` asked us to lend to it ([`LEND`]).
    pub fn lends_to(&self, to: u32) -> bool {
        self.lend_to.contains(&to)
    }

    fn lend(&mut self, p: Lent) {
        self.lent_bytes += self.lent.push(p);
    }

    fn new_cookie(&mut self) -> u64 {
        self.next_cookie = self.next_cookie.wrapping_add(1);
        self.next_cookie
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

    /// Forgets message `cookie`; gives back its receiver, and its envelope
    /// and body if it was a reference.
    fn take(&mut self, cookie: u64) -> Option<(u32, Option<(Envelope, Outgoing)>)> {
        let (slot, body) = self.lent.take(cookie)?;
        self.lent_bytes -= slot.bytes;
        self.generation += 1;
        Some((slot.to, body))
    }

    /// Receivers to [`ASK`] for an instance that `holds` with messages
    /// `lent`: those of its messages sent whole, unless asked already and
    /// silent since. Marks them asked.
    pub fn receivers_to_ask(&mut self, lent: &[u64]) -> Vec<u32> {
        let mut to = Vec::new();
        for p in lent.iter().filter_map(|&c| self.lent.get(c)) {
            if !p.by_ref && !self.asked.contains(&p.to) && !to.contains(&p.to) {
                to.push(p.to);
            }
        }
        to.sort_unstable();
        self.asked.extend_from_slice(&to);
        to
    }
}

fn control(flags: u8, cookie: u64) -> Envelope {
    super::p2p::control(Kind::Coll, flags, cookie)
}

/// `Kind::CollNotice` flag: the sender has found nothing yet; it has
/// waited long in instance `tag` and shows its call, for the receiver to
/// compare. Without it, the sender found that the members' calls of
/// instance `tag` differ, and the instance fails where it runs. Either way
/// the sender's call follows, two little-endian `u64` words
/// (`call_check.rs`).
pub const SHOWN: u8 = 1;

impl State {
    /// A notice about collective instance (`env.ctx`, `env.tag`).
    pub fn coll_notice(&mut self, env: &Envelope, body: &[u8]) {
        if !self.colls.fault_notice(env, body) {
            self.transfers_notice(env, body);
        }
    }

    /// A collective message, or an answer about one of our references.
    pub fn deliver_coll(&mut self, env: Envelope, from: u32, msg: Msg<'_>) {
        if env.flags & USED != 0 {
            let rest = match &msg {
                Msg::Whole(b) => &b[..],
                Msg::Parts(..) => &[],
            };
            let refs = &mut self.colls.refs;
            for c in used_batch::decode(env.cookie, rest) {
                refs.take(c);
            }
            // Whatever `from` still has of ours may be asked for again.
            refs.asked.retain(|&t| t != from);
            refs.generation += 1;
            self.colls.touch();
            return;
        }
        if env.flags & LEND != 0 {
            if !self.colls.refs.lend_to.contains(&from) {
                self.colls.refs.lend_to.push(from);
            }
            return;
        }
        if env.flags & ASK != 0 {
            if self.colls.refs.owed.asked(from) {
                self.followups.push(Followup::SendUsed { to: from });
            }
            return;
        }
        if env.flags & REF_STREAM != 0 {
            self.followups
                .push(Followup::SendInline { cookie: env.cookie });
            return;
        }
        let holding = self.colls.refs.held.iter().any(|(f, _)| *f == from);
        if env.flags & REF_DATA == 0 && !holding {
            return self.use_msg(&env, from, msg);
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
            self.use_msg(&h.env, from, h.msg);
        }
    }

    /// Hands a message to its instance, or keeps it for the instance to
    /// start; owes [`USED`] once the instance has it, when asked to.
    fn use_msg(&mut self, env: &Envelope, from: u32, msg: Msg<'_>) {
        let used = self.colls.deliver(env, from, msg);
        if env.flags & ACK == 0 {
            if !used && self.colls.refs.kept_early(from, env.len as usize) {
                self.followups.push(Followup::RefAnswer {
                    to: from,
                    flags: LEND,
                    cookie: 0,
                });
            }
            return;
        }
        if used
            && self
                .colls
                .refs
                .owed
                .used(from, env.cookie, env.len as usize)
        {
            self.followups.push(Followup::SendUsed { to: from });
        }
    }

    /// A `BY_REF` message from local peer `from`: read at once when its
    /// instance is running or `may_read` is false (single copy turned off
    /// here), else kept unread until the instance starts.
    pub fn deliver_ref(&mut self, env: Envelope, from: u32, payload: &[u8], may_read: bool) {
        let mut u = Unread::decode(env, from, payload);
        if may_read && u.pid > 0 && !self.colls.refs.held.iter().any(|(f, _)| *f == from) {
            match self.colls.defer_ref(u) {
                Ok(()) => return,
                Err(back) => u = back,
            }
        }
        match self.read_ref(&u, may_read) {
            Ok(msg) => self.deliver_coll(u.env, from, msg),
            Err(held) => self.colls.refs.held_from(from).push_back(held),
        }
    }

    /// Reads reference `u` and answers its sender. When the read fails (or
    /// may not be tried), asks for the data inline instead and returns the
    /// entry that holds the message's place until it comes.
    fn read_ref(&mut self, u: &Unread, may_read: bool) -> Result<Msg<'static>, Held> {
        let read = if may_read && u.pid > 0 {
            cma::read_vec(u.pid, u.addr, u.body_len())
        } else {
            Err(nix::Error::EPERM)
        };
        let answer = |flags| Followup::RefAnswer {
            to: u.from,
            flags,
            cookie: u.cookie,
        };
        match read {
            Ok(v) => {
                self.colls.refs.reads += 1;
                self.followups.push(answer(USED));
                Ok(Msg::Parts(u.head, v))
            }
            Err(e) => {
                self.colls.refs.refused_count += 1;
                if may_read {
                    self.colls.refs.refused = Some(e);
                }
                self.followups.push(answer(REF_STREAM));
                Err(Held {
                    env: u.env,
                    awaits: Some(u.cookie),
                    msg: Msg::Whole(Cow::Borrowed(&[])),
                })
            }
        }
    }

    /// Hands an instance that has just started the messages that arrived
    /// before it, in order, reading the references among them. A sender
    /// whose reference cannot be read has it and its later messages here
    /// held, ahead of whatever of its messages is held already (those
    /// arrived later).
    pub(super) fn redeliver(&mut self, early: Vec<Early>) {
        let mut stalled: Vec<(u32, Vec<Held>)> = Vec::new();
        for e in early {
            let from = match &e {
                Early::Msg { from, .. } => *from,
                Early::Ref(u) => u.from,
            };
            let stall = stalled.iter_mut().find(|(f, _)| *f == from);
            if let Early::Msg { env, .. } = &e {
                if env.flags & ACK == 0 {
                    self.colls.refs.taken_early(from, env.len as usize);
                }
            }
            match (e, stall) {
                (Early::Msg { env, msg, .. }, None) => self.use_msg(&env, from, msg),
                (Early::Msg { env, msg, .. }, Some((_, q))) => q.push(Held {
                    env,
                    awaits: None,
                    msg,
                }),
                (Early::Ref(u), stall) => {
                    let may_read = stall.is_none();
                    match (self.read_ref(&u, may_read), stall) {
                        (Ok(msg), _) => {
                            self.colls.deliver(&u.env, from, msg);
                        }
                        (Err(h), Some((_, q))) => q.push(h),
                        (Err(h), None) => stalled.push((from, vec![h])),
                    }
                }
            }
        }
        for (from, q) in stalled {
            let held = self.colls.refs.held_from(from);
            for h in q.into_iter().rev() {
                held.push_front(h);
            }
        }
    }
}

/// A reference not read yet: what its `BY_REF` message said.
#[derive(Debug)]
pub struct Unread {
    /// The message's envelope, less `BY_REF`.
    env: Envelope,
    /// World rank of the sender.
    from: u32,
    cookie: u64,
    head: Head,
    addr: u64,
    pid: i32,
}

impl Unread {
    fn decode(env: Envelope, from: u32, payload: &[u8]) -> Self {
        let word = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            if let Some(s) = payload.get(r.clone()) {
                b[..r.len()].copy_from_slice(s);
            }
            u64::from_le_bytes(b)
        };
        Self {
            env: Envelope {
                flags: env.flags & !BY_REF,
                ..env
            },
            from,
            cookie: env.cookie,
            head: payload.get(12..).and_then(Head::new).unwrap_or_default(),
            addr: word(0..8),
            pid: word(8..12) as i32,
        }
    }

    /// (context, sequence number) of the instance it belongs to.
    pub fn instance(&self) -> (u32, u32) {
        (self.env.ctx, self.env.tag as u32)
    }

    /// The sender's communicator rank.
    pub fn src(&self) -> u32 {
        self.env.src
    }

    /// The sender's call, folded (`call_check.rs`).
    pub fn sig(&self) -> u16 {
        self.env.sig
    }

    pub fn body_len(&self) -> usize {
        (self.env.len as usize).saturating_sub(self.head.len())
    }
}

impl Engine {
    /// Sends collective message `out` (enveloped as `env`) to world rank
    /// `to`. Over the network, a message of an instance that may finish
    /// before its receiver starts (`lend`, see `Collective::synchronizes`)
    /// is lent: sent whole, asking for [`USED`] once the peer's instance
    /// has it, so that what a peer that has not reached the instance holds
    /// for us counts against [`LENT_MAX`]. To a rank of our node, a large
    /// one is lent by reference when the ring cannot take it at once, and
    /// such a small one is lent whole once the ring to it is full, or the
    /// receiver has asked for it ([`LEND`]): its receiver is behind, and
    /// would otherwise drain the ring into its early messages, or leave
    /// them queued here, without limit.
    pub(super) fn send_coll(
        &mut self,
        to: u32,
        env: Envelope,
        out: Outgoing,
        lend: bool,
    ) -> MpiResult<Option<u64>> {
        let eager = self.settings.eager_limit;
        let max = self.net.shm_max_payload();
        let by_ref = match self.net.routes[to as usize] {
            // Up to two ring messages' worth, the two copies through the
            // ring beat the ~2 us a `process_vm_readv` costs before its
            // first byte: a 2-rank allreduce of 48 KiB took 6.2 us whole
            // and 8-11 us by reference, of 64 KiB (three pieces, more than
            // a ring holds) 12 and 10.
            Route::Shm(_) if out.body.len() > eager.min(max) => {
                out.len() > 2 * max && self.settings.single_copy && !self.st.colls.refs.inline_only
            }
            // A ring that is full already means its receiver is behind;
            // one that asked keeps what it drains for instances it has not
            // reached.
            Route::Shm(local)
                if lend && (self.net.backlogged(local) || self.st.colls.refs.lends_to(to)) =>
            {
                false
            }
            Route::Tcp if lend => false,
            _ => {
                self.net_send_parts(to, &env, [&out.head, &out.body])?;
                return Ok(None);
            }
        };
        let refs = &mut self.st.colls.refs;
        let cookie = refs.new_cookie();
        if !by_ref {
            refs.lend(Lent {
                cookie,
                to,
                env,
                bytes: out.len().max(LENT_MIN_CHARGE),
                out: None,
            });
            let e = Envelope {
                flags: env.flags | ACK,
                cookie,
                sig: 0,
                ..env
            };
            self.net_send_parts(to, &e, [&out.head, &out.body])?;
            return Ok(Some(cookie));
        }
        refs.passed += 1;
        let r = Envelope {
            flags: env.flags | BY_REF,
            cookie,
            sig: 0,
            ..env
        };
        let mut payload = Vec::with_capacity(12 + out.head.len());
        payload.extend_from_slice(&(out.body.as_ptr() as u64).to_le_bytes());
        payload.extend_from_slice(&std::process::id().to_le_bytes());
        payload.extend_from_slice(&out.head);
        // Lent before the send: a vector's heap block does not move with it.
        refs.lend(Lent {
            cookie,
            to,
            env,
            bytes: out.body.len(),
            out: Some(out),
        });
        self.net_send(to, &r, &payload)?;
        Ok(Some(cookie))
    }

    /// A receiver could not read reference `cookie`: send it inline.
    pub(super) fn send_inline(&mut self, cookie: u64) -> MpiResult<()> {
        let refs = &mut self.st.colls.refs;
        refs.inline_only = true;
        let Some((to, Some((env, out)))) = refs.take(cookie) else {
            return Ok(());
        };
        self.st.colls.touch();
        let env = Envelope {
            flags: env.flags | REF_DATA,
            cookie,
            sig: 0,
            ..env
        };
        self.net_send(to, &env, &out.to_bytes())
    }

    pub(super) fn ref_answer(&mut self, to: u32, flags: u8, cookie: u64) -> MpiResult<()> {
        self.net_send(to, &control(flags, cookie), &[])
    }

    /// Sends world rank `to` the [`USED`] answers we owe it, if any. A
    /// rank that has said goodbye needs none: it left `MPI_Finalize`'s
    /// barrier, so every instance of its was complete, and it may do so
    /// while answers it asked for earlier are still owed here.
    pub(super) fn send_used(&mut self, to: u32) -> MpiResult<()> {
        let cookies = self.st.colls.refs.owed.take(to);
        let Some(&first) = cookies.first() else {
            return Ok(());
        };
        if self.net.tcp.as_ref().is_some_and(|t| t.is_closed(to)) {
            return Ok(());
        }
        let rest = used_batch::encode_rest(&cookies);
        self.net_send(to, &control(USED, first), &rest)
    }

    /// An instance that lent `lent` waits past the lending bound: asks the
    /// receivers of its messages sent whole for their answers.
    pub(super) fn ask_used(&mut self, lent: &[u64]) -> MpiResult<()> {
        for to in self.st.colls.refs.receivers_to_ask(lent) {
            self.st.colls.refs.asks += 1;
            self.net_send(to, &control(ASK, 0), &[])?;
        }
        Ok(())
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
            sig: 0,
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

    /// A receiver keeping a sender's unlent messages early asks it to lend
    /// once they count more than `LENT_MAX`, and only once; what it hands
    /// to instances before that no longer counts. Messages lent to it
    /// (`ACK`) and other senders' are not counted. The sender lends from
    /// then on to that receiver alone.
    #[test]
    fn a_receiver_that_keeps_too_much_early_asks_its_sender_to_lend() {
        // A 2-rank bcast of 1022 bytes from rank 1: [BCAST, step 0, data].
        let mut b = vec![5u8; 1024];
        b[..2].copy_from_slice(&[3, 0]);
        let body: &'static [u8] = Box::leak(b.into_boxed_slice());
        let per = LENT_MAX / body.len();
        let mut st = State::default();
        let lend_asks = |st: &State| answers(st).iter().filter(|a| a.1 == LEND).count();
        for seq in 0..per as u32 {
            st.deliver_coll(coll(1, seq, 0, 0, body.len()), 4, whole(body));
            st.deliver_coll(
                coll(2, seq, ACK, u64::from(seq) + 1, body.len()),
                6,
                whole(body),
            );
        }
        assert_eq!(lend_asks(&st), 0, "at the bound, not past it");
        // Instance 0 starts and takes its messages: one more fits again.
        let bcast = Box::new(lanai_coll::Bcast::new(0, 2, 1, vec![0; 1022]).unwrap());
        st.colls.activate(9, 0, bcast);
        let early = st.colls.take_early(9, 0);
        st.redeliver(early);
        assert!(st.colls.early(9, 0).is_empty());
        st.deliver_coll(coll(1, per as u32, 0, 0, body.len()), 4, whole(body));
        assert_eq!(lend_asks(&st), 0);
        st.deliver_coll(coll(1, per as u32 + 1, 0, 0, 8), 4, whole(&body[..8]));
        assert_eq!(answers(&st), vec![(4, LEND, 0)], "only rank 4 is asked");
        for seq in per as u32 + 2..2 * per as u32 {
            st.deliver_coll(coll(1, seq, 0, 0, body.len()), 4, whole(body));
        }
        assert_eq!(lend_asks(&st), 1, "asked once");
        assert_eq!(st.colls.refs.lend_asks, 1);

        let mut sender = State::default();
        sender.deliver_coll(control(LEND, 0), 3, whole(&[]));
        assert!(sender.colls.refs.lends_to(3));
        assert!(!sender.colls.refs.lends_to(4));
        assert!(
            sender.colls.early(9, 0).is_empty(),
            "no message for an instance"
        );
    }

    /// The pid field of a reference no process has.
    const BAD: [u8; 12] = [8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];

    #[test]
    fn a_reference_waits_unread_until_its_instance_starts() {
        let mut st = State::default();
        let body: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
        let env = coll(2, 5, BY_REF, 77, body.len() + 2);
        st.deliver_ref(env, 4, &reference(&body, &[1, 3]), true);
        // Unread: in its place, as its body's length, and not answered.
        assert_eq!(
            st.colls.early(9, 5),
            vec![(2, body.len().to_le_bytes().to_vec())]
        );
        assert!(answers(&st).is_empty());
        assert_eq!(st.colls.refs.reads, 0);
        // The instance starts: read, answered, and handed on in place.
        let early = st.colls.take_early(9, 5);
        st.redeliver(early);
        assert_eq!(
            st.colls.early(9, 5),
            vec![(2, [&[1u8, 3][..], &body].concat())]
        );
        assert_eq!(answers(&st), vec![(4, USED, 77)]);
        assert_eq!((st.colls.refs.reads, st.colls.refs.refused_count), (1, 0));
    }

    #[test]
    fn a_bad_address_is_refused_and_asked_for_inline() {
        let mut st = State::default();
        st.deliver_ref(coll(2, 5, BY_REF, 77, 64), 4, &BAD, true);
        assert!(answers(&st).is_empty());
        let early = st.colls.take_early(9, 5);
        st.redeliver(early);
        assert_eq!(answers(&st), vec![(4, REF_STREAM, 77)]);
        assert!(st.colls.refs.refused.is_some());
        assert!(st.colls.early(9, 5).is_empty());
    }

    /// A reference refused when its instance starts holds back the
    /// sender's later messages there, ahead of those of its messages
    /// already held (which arrived later), until its data comes; other
    /// senders are not held.
    #[test]
    fn a_reference_refused_at_start_goes_ahead_of_later_held_messages() {
        let mut st = State::default();
        st.deliver_ref(coll(1, 5, BY_REF, 7, 3), 4, &BAD, true);
        st.deliver_coll(coll(1, 5, 0, 0, 1), 4, whole(b"b"));
        st.deliver_coll(coll(3, 5, 0, 0, 1), 6, whole(b"x"));
        // A later reference, refused at once, holds the sender from here.
        st.deliver_ref(coll(1, 6, BY_REF, 8, 3), 4, &[], false);
        st.deliver_coll(coll(1, 5, 0, 0, 1), 4, whole(b"d"));
        let early = st.colls.take_early(9, 5);
        st.redeliver(early);
        assert_eq!(st.colls.early(9, 5), vec![(3, b"x".to_vec())]);
        assert_eq!(answers(&st), vec![(4, REF_STREAM, 8), (4, REF_STREAM, 7)]);
        let data = |st: &mut State, cookie, b: &'static [u8]| {
            st.deliver_coll(
                coll(1, if cookie == 7 { 5 } else { 6 }, REF_DATA, cookie, 1),
                4,
                whole(b),
            )
        };
        data(&mut st, 8, b"c");
        assert!(st.colls.early(9, 6).is_empty(), "still behind reference 7");
        data(&mut st, 7, b"a");
        let got = |st: &State, seq| -> Vec<Vec<u8>> {
            st.colls.early(9, seq).into_iter().map(|(_, d)| d).collect()
        };
        assert_eq!(got(&st, 5), [&b"x"[..], b"a", b"b", b"d"]);
        assert_eq!(got(&st, 6), [b"c"]);
        assert!(st.colls.refs.held.is_empty());
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
        st.colls.refs.lend(Lent {
            cookie: 3,
            to: 1,
            env: coll(0, 2, 0, 0, 4),
            bytes: 4,
            out: Some(Outgoing::new(1, &[7, 0], vec![1, 2, 3, 4])),
        });
        assert_eq!(st.colls.refs.lent_bytes, 4);
        st.deliver_coll(control(REF_STREAM, 3), 1, whole(&[]));
        assert!(matches!(
            st.followups[..],
            [Followup::SendInline { cookie: 3 }]
        ));
        st.deliver_coll(control(USED, 3), 1, whole(&[]));
        assert!(st.colls.refs.lent.is_empty());
        assert_eq!(st.colls.refs.lent_bytes, 0);
    }

    fn sends_used(st: &State) -> Vec<u32> {
        st.followups
            .iter()
            .filter_map(|f| match f {
                Followup::SendUsed { to } => Some(*to),
                _ => None,
            })
            .collect()
    }

    /// A message sent whole with `ACK` is owed `USED` once its instance
    /// has it, not while it is kept for an instance not started; answers
    /// go out a batch at a time.
    #[test]
    fn a_whole_message_asking_for_an_answer_is_owed_it_when_used() {
        // Rank 0 of a 2-rank bcast of one byte from rank 1: it takes one
        // message, [BCAST, step 0, the byte].
        let bcast = || Box::new(lanai_coll::Bcast::new(0, 2, 1, vec![0]).unwrap());
        let mut st = State::default();
        st.deliver_coll(coll(1, 5, ACK, 41, 3), 4, whole(&[3, 0, 42]));
        st.colls.activate(9, 5, bcast());
        assert!(st.colls.refs.owed.take(4).is_empty(), "kept, not used");
        let early = st.colls.take_early(9, 5);
        st.redeliver(early);
        // Straight to a running instance: owed at once; without ACK, not.
        st.colls.activate(9, 6, bcast());
        st.deliver_coll(coll(1, 6, ACK, 42, 3), 4, whole(&[3, 0, 42]));
        st.colls.activate(9, 7, bcast());
        st.deliver_coll(coll(1, 7, 0, 0, 3), 4, whole(&[3, 0, 42]));
        assert!(sends_used(&st).is_empty(), "a batch is not full yet");
        assert!(st.colls.early(9, 5).is_empty() && st.colls.early(9, 7).is_empty());
        // Asked, the sender gets what it is owed now.
        st.deliver_coll(control(ASK, 0), 4, whole(&[]));
        assert_eq!(sends_used(&st), vec![4]);
        assert_eq!(st.colls.refs.owed.take(4), vec![41, 42]);
    }

    /// A sender past the bound asks each receiver once per answer, and an
    /// answer naming several messages frees them all.
    #[test]
    fn a_held_instance_asks_once_and_batched_answers_free_it() {
        let mut st = State::default();
        let env = |seq| coll(0, seq, 0, 0, 1);
        for (cookie, to, seq) in [(1, 3, 2), (2, 5, 2), (3, 3, 2), (4, 3, 7)] {
            st.colls.refs.lend(Lent {
                cookie,
                to,
                env: env(seq),
                bytes: LENT_MAX / 2,
                out: None,
            });
        }
        // The instance of sequence number 2 lent 1, 2 and 3.
        let mut two = vec![1, 2, 3];
        assert!(st.colls.refs.holds(&mut two));
        assert_eq!(st.colls.refs.receivers_to_ask(&two), vec![3, 5]);
        assert!(
            st.colls.refs.receivers_to_ask(&two).is_empty(),
            "asked already"
        );
        // Rank 3 answers one of its two: it may be asked again.
        st.deliver_coll(control(USED, 1), 3, whole(&[]));
        assert!(st.colls.refs.holds(&mut two));
        assert_eq!(two, vec![2, 3], "the used one is forgotten");
        assert_eq!(st.colls.refs.receivers_to_ask(&two), vec![3]);
        let rest = used_batch::encode_rest(&[3, 4]);
        st.deliver_coll(control(USED, 3), 3, Msg::Whole(Cow::Owned(rest)));
        assert_eq!(st.colls.refs.lent_bytes, LENT_MAX / 2, "rank 5's is left");
        assert!(!st.colls.refs.holds(&mut two));
    }

    /// One sender lending 128 KiB messages over the network, one per
    /// instance and up to `window` instances in flight (1: blocking calls,
    /// where the receiver then waits for the sender), completed in any
    /// order, to a receiver that uses them in order whenever it reaches
    /// their instance; optionally a third rank holds the bound's worth of
    /// the sender's messages, so every instance waits for its own answer.
    /// Every order of the two sides' steps and of both directions'
    /// deliveries a schedule can pick is tried; answers batch (two
    /// messages' bytes make one), the sender passes the bound, holds and
    /// asks. The real `CollRefs` (sender) and `UsedBatches` (receiver) run;
    /// the glue is that of `drive_colls`, `use_msg` and `deliver_coll`.
    /// Every instance completes: no owed answer is left unsent while the
    /// sender waits. (A receiver that forgets it was asked, or a sender
    /// that does not ask again after an answer, gets stuck here.)
    mod answers_model {
        use super::*;
        use proptest::prelude::*;
        use std::collections::VecDeque;

        const N: u32 = 100;
        const MSG: usize = 128 << 10;
        const SENDER: u32 = 0;
        const RECEIVER: u32 = 1;

        static HELD: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

        enum ToReceiver {
            Data,
            Ask,
        }

        fn run(schedule: &[u8], window: u32, stalled: bool) -> Result<(), TestCaseError> {
            let mut s = State::default();
            if stalled {
                // A third rank that has not reached an earlier instance
                // holds the bound's worth of our messages, so each of ours
                // waits for its own answer, which the receiver owes alone.
                s.colls.refs.lend(Lent {
                    cookie: 1 << 40,
                    to: 2,
                    env: coll(0, 1 << 20, ACK, 1 << 40, LENT_MAX),
                    bytes: LENT_MAX,
                    out: None,
                });
            }
            let mut owed = UsedBatches::default();
            let (mut to_r, mut to_s) = (VecDeque::new(), VecDeque::<Vec<u64>>::new());
            let mut sent = 0u32;
            let mut done = 0u32;
            // The receiver has these messages, and has used those below `used`.
            let mut arrived = 0u32;
            let mut used = 0u32;
            let mut held = false;
            // Instances posted and not complete.
            let mut pending: Vec<u32> = Vec::new();
            // After the schedule, random steps (seeded by it, so a failure
            // replays), which come to every step, so that only a real
            // deadlock runs out of them.
            let mut x = (schedule.len() as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut steps = schedule.iter().copied().chain(std::iter::from_fn(move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Some((x % 8) as u8)
            }));
            for _ in 0..100_000 {
                if done == N {
                    // The schedule drove the sender past the bound at least
                    // once in most cases; `HELD` counts them.
                    if held {
                        HELD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    return Ok(());
                }
                // The sender's steps come five times as often as each of
                // the receiver's, so it runs ahead past the bound, with
                // blocking calls (a window of 1) too.
                match steps.next().unwrap_or(0) % 8 {
                    // The sender posts its next instance, whose message is lent.
                    0..=2 if sent < N && (pending.len() as u32) < window => {
                        s.colls.refs.lend(Lent {
                            cookie: u64::from(sent) + 1,
                            to: RECEIVER,
                            env: coll(0, sent, ACK, u64::from(sent) + 1, MSG),
                            bytes: MSG,
                            out: None,
                        });
                        to_r.push_back(ToReceiver::Data);
                        pending.push(sent);
                        sent += 1;
                    }
                    // The sender completes what it may, in any order, and
                    // asks for the rest (`drive_colls`).
                    3 | 4 => {
                        let mut ask = Vec::new();
                        pending.retain(|&seq| {
                            let holds = s.colls.refs.holds(&mut vec![u64::from(seq) + 1]);
                            if holds {
                                ask.push(seq);
                            }
                            holds
                        });
                        done = sent - pending.len() as u32;
                        for seq in ask {
                            held = true;
                            for to in s.colls.refs.receivers_to_ask(&[u64::from(seq) + 1]) {
                                prop_assert_eq!(to, RECEIVER);
                                to_r.push_back(ToReceiver::Ask);
                            }
                        }
                    }
                    // The receiver reaches its next instance and uses its message.
                    7 if used < arrived => {
                        if owed.used(SENDER, u64::from(used) + 1, MSG) {
                            to_s.push_back(owed.take(SENDER));
                        }
                        used += 1;
                    }
                    // A message reaches the receiver.
                    5 => match to_r.pop_front() {
                        Some(ToReceiver::Data) => arrived += 1,
                        Some(ToReceiver::Ask) if owed.asked(SENDER) => {
                            to_s.push_back(owed.take(SENDER));
                        }
                        _ => {}
                    },
                    // An answer reaches the sender.
                    6 => {
                        if let Some(c) = to_s.pop_front() {
                            let rest = used_batch::encode_rest(&c);
                            let env = control(USED, c[0]);
                            s.deliver_coll(env, RECEIVER, Msg::Whole(Cow::Owned(rest)));
                        }
                    }
                    _ => {}
                }
                // An instance completes only within the bound, so past it
                // are only the messages of instances still in flight.
                let stall = if stalled { LENT_MAX } else { 0 };
                prop_assert!(s.colls.refs.lent_bytes <= stall + LENT_MAX + MSG * window as usize);
            }
            Err(TestCaseError::fail(format!(
                "stuck: {done} of {N} done, {sent} sent, {used} used, {} lent",
                s.colls.refs.lent_bytes
            )))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn every_instance_completes(
                schedule in proptest::collection::vec(0u8..8, 0..3000),
                window in prop_oneof![Just(1u32), 1u32..=100],
                stalled in any::<bool>(),
            ) {
                run(&schedule, window, stalled)?;
            }
        }

        #[test]
        fn schedules_do_pass_the_bound() {
            for seed in 0..16u64 {
                let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let schedule: Vec<u8> = (0..3000)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % 8) as u8
                    })
                    .collect();
                for (window, stalled) in [(1, false), (100, false), (1, true), (7, true)] {
                    run(&schedule, window, stalled).unwrap();
                }
            }
            assert!(HELD.load(std::sync::atomic::Ordering::Relaxed) > 0);
        }
    }

    /// Answers come in any order; each message is taken once, a
    /// reference's body comes back with it, slots taken are dropped once
    /// they are half, and one message left unanswered holds nothing else.
    #[test]
    fn lent_messages_are_taken_in_any_order() {
        let mut l = LentList::default();
        let body = |c: u64| {
            c.is_multiple_of(10)
                .then(|| Outgoing::new(1, &[7, 0], vec![c as u8]))
        };
        for c in [5u64, 3, 4].into_iter().chain(6..=100) {
            let bytes = l.push(Lent {
                cookie: c,
                to: (c % 3) as u32,
                env: coll(0, c as u32, 0, 0, 1),
                bytes: 0,
                out: body(c),
            });
            assert_eq!(bytes, 1, "nothing counts for nothing");
        }
        assert!(l.slots.windows(2).all(|w| w[0].cookie < w[1].cookie));
        for c in (3..=100u64).rev().filter(|c| c % 2 == 1 && *c != 3) {
            let (slot, b) = l.take(c).unwrap();
            assert_eq!((slot.cookie, slot.to), (c, (c % 3) as u32));
            assert!(b.is_none());
        }
        assert!(l.take(5).is_none(), "taken once");
        assert!(l.take(1).is_none(), "never lent");
        for c in (4..=100u64).step_by(2) {
            let (_, b) = l.take(c).unwrap();
            match b {
                Some((env, out)) => {
                    assert!(c.is_multiple_of(10));
                    assert_eq!((env.tag, out.body), (c as i32, vec![c as u8]));
                }
                None => assert!(!c.is_multiple_of(10)),
            }
        }
        // Only message 3 is left: the taken slots around it are gone.
        assert_eq!(l.iter().map(|s| s.cookie).collect::<Vec<_>>(), vec![3]);
        assert!(l.slots.len() < 32 && l.parked.is_empty());
        assert!(l.take(3).is_some() && l.is_empty() && l.slots.is_empty());
    }

    /// An instance whose references are unread completes while the bodies
    /// kept for peers fit in `LENT_MAX`, and waits for its reads beyond it.
    #[test]
    fn instances_wait_for_their_reads_only_past_the_lending_bound() {
        let mut refs = CollRefs::default();
        refs.lend(Lent {
            cookie: 1,
            to: 1,
            env: coll(0, 2, 0, 0, LENT_MAX),
            bytes: LENT_MAX,
            out: None,
        });
        assert!(!refs.holds(&mut vec![1]), "exactly at the bound");
        refs.lend(Lent {
            cookie: 2,
            to: 1,
            env: coll(0, 3, 0, 0, 1),
            bytes: 1,
            out: Some(Outgoing::new(1, &[7, 0], vec![0])),
        });
        assert!(
            refs.holds(&mut vec![1]) && refs.holds(&mut vec![2]),
            "past the bound"
        );
        assert!(!refs.holds(&mut vec![]), "an instance with nothing unread");
        assert!(
            !refs.holds(&mut vec![7]),
            "an instance whose messages were used"
        );
        refs.take(1);
        assert!(!refs.holds(&mut vec![2]));
    }
}
