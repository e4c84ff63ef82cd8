//! Sans-IO connection state for one peer (seed 004's on-demand scheme).
//!
//! A link connects on first use, queues sends in FIFO order until the
//! connection is up, and resolves simultaneous connects to exactly one
//! connection: the one initiated by the lower rank. An acceptor with its own
//! attempt in flight accepts an incoming connection from a lower rank (and
//! abandons its attempt, on which nothing but handshake bytes was sent) and
//! rejects one from a higher rank, whose owner then waits for ours.
//! It never touches a socket or a clock; connections are named by opaque ids.

use lanai_wire::handshake::{Decision, RejectReason};
use std::collections::VecDeque;

/// Opaque name of one TCP connection, chosen by the IO layer.
pub type ConnId = u64;

/// Outgoing attempts that may fail (reset, timeout, bad peer) before we give up.
pub const MAX_CONNECT_ATTEMPTS: u32 = 3;

/// Where a link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// No connection and none being made.
    Idle,
    /// Our outgoing attempt `attempt` is being connected or authenticated.
    Connecting { attempt: ConnId },
    /// Our attempt lost the tie-break; the peer's own attempt is on its way.
    AwaitingPeer,
    /// Messages flow on `conn`.
    Up { conn: ConnId },
    /// The peer closed on purpose (bye) or we shut down.
    Closed,
    /// The peer vanished or could not be reached.
    Lost,
}

/// Why a send or connect cannot proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkError {
    PeerClosed,
    PeerLost,
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::PeerClosed => "peer closed its connection",
            Self::PeerLost => "peer connection lost",
        })
    }
}

/// What the caller must do with a message it handed to [`Link::send`].
#[derive(Debug, PartialEq, Eq)]
pub enum SendPlan<M> {
    /// The link is up: write the message on `conn` now.
    WriteNow(ConnId, M),
    /// Queued; the caller must start an outgoing attempt.
    QueuedStartConnect,
    /// Queued behind a connection already being made.
    Queued,
}

/// The answer to an authenticated incoming connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<M> {
    /// Accept it; close `abandon` (our own attempt) if given; write `flush`
    /// on the new connection in this order, after the decision.
    Accept {
        abandon: Option<ConnId>,
        flush: VecDeque<M>,
    },
    Reject(RejectReason),
}

/// What follows the server's decision on our attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterDecision<M> {
    /// Up: write `flush` on the connection in this order.
    Up { flush: VecDeque<M> },
    /// Rejected as a duplicate: close it and wait for the peer's attempt.
    WaitForPeer,
    /// The peer is shutting down; queued messages are dropped.
    PeerClosing { dropped: usize },
    /// The decision was for a connection we no longer care about: close it.
    Stale,
}

/// What follows the failure of an outgoing attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Start a new attempt.
    Retry,
    /// Give up; `dropped` queued messages will never be sent.
    GiveUp { dropped: usize },
    /// Not our current attempt: nothing to do.
    Stale,
}

/// Connection state for one peer; `M` is a queued message.
#[derive(Debug, Clone)]
pub struct Link<M> {
    me: u32,
    peer: u32,
    state: LinkState,
    queue: VecDeque<M>,
    failures: u32,
}

impl<M> Link<M> {
    pub fn new(me: u32, peer: u32) -> Self {
        Self {
            me,
            peer,
            state: LinkState::Idle,
            queue: VecDeque::new(),
            failures: 0,
        }
    }

    pub fn state(&self) -> LinkState {
        self.state
    }

    pub fn peer(&self) -> u32 {
        self.peer
    }

    /// Messages waiting for the connection.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The connection messages flow on, if up.
    pub fn up_conn(&self) -> Option<ConnId> {
        match self.state {
            LinkState::Up { conn } => Some(conn),
            _ => None,
        }
    }

    fn check_open(&self) -> Result<(), LinkError> {
        match self.state {
            LinkState::Closed => Err(LinkError::PeerClosed),
            LinkState::Lost => Err(LinkError::PeerLost),
            _ => Ok(()),
        }
    }

    /// Posts a message. FIFO order holds across the connection coming up.
    pub fn send(&mut self, m: M) -> Result<SendPlan<M>, LinkError> {
        self.check_open()?;
        match self.state {
            LinkState::Up { conn } => Ok(SendPlan::WriteNow(conn, m)),
            LinkState::Idle => {
                self.queue.push_back(m);
                Ok(SendPlan::QueuedStartConnect)
            }
            _ => {
                self.queue.push_back(m);
                Ok(SendPlan::Queued)
            }
        }
    }

    /// Asks for a connection without sending; true if the caller must start
    /// an outgoing attempt.
    pub fn want_connect(&mut self) -> Result<bool, LinkError> {
        self.check_open()?;
        Ok(self.state == LinkState::Idle)
    }

    /// The caller started outgoing attempt `conn`.
    pub fn attempt_started(&mut self, conn: ConnId) {
        if matches!(self.state, LinkState::Idle | LinkState::AwaitingPeer) {
            self.state = LinkState::Connecting { attempt: conn };
        }
    }

    /// The peer's authenticated decision on our attempt `conn`.
    pub fn outgoing_decided(&mut self, conn: ConnId, d: Decision) -> AfterDecision<M> {
        if self.state != (LinkState::Connecting { attempt: conn }) {
            return AfterDecision::Stale;
        }
        match d {
            Decision::Accept => {
                self.state = LinkState::Up { conn };
                self.failures = 0;
                AfterDecision::Up {
                    flush: std::mem::take(&mut self.queue),
                }
            }
            Decision::Reject(RejectReason::DuplicateConnection) => {
                self.state = LinkState::AwaitingPeer;
                AfterDecision::WaitForPeer
            }
            Decision::Reject(_) => {
                self.state = LinkState::Closed;
                let dropped = self.queue.len();
                self.queue.clear();
                AfterDecision::PeerClosing { dropped }
            }
        }
    }

    /// Our attempt `conn` failed before a decision (refused, reset, timed out,
    /// failed authentication).
    pub fn attempt_failed(&mut self, conn: ConnId) -> AfterFailure {
        if self.state != (LinkState::Connecting { attempt: conn }) {
            return AfterFailure::Stale;
        }
        self.failures += 1;
        if self.failures >= MAX_CONNECT_ATTEMPTS {
            self.state = LinkState::Lost;
            let dropped = self.queue.len();
            self.queue.clear();
            return AfterFailure::GiveUp { dropped };
        }
        self.state = LinkState::Idle;
        AfterFailure::Retry
    }

    /// We waited too long for the peer's attempt after losing the tie-break:
    /// true if the caller must try again itself.
    pub fn awaiting_expired(&mut self) -> bool {
        if self.state == LinkState::AwaitingPeer {
            self.state = LinkState::Idle;
            true
        } else {
            false
        }
    }

    /// An incoming connection `conn` from this peer passed authentication.
    pub fn incoming_authenticated(&mut self, conn: ConnId) -> Verdict<M> {
        let abandon = match self.state {
            LinkState::Idle | LinkState::AwaitingPeer => None,
            LinkState::Connecting { attempt } if self.peer < self.me => Some(attempt),
            LinkState::Connecting { .. } | LinkState::Up { .. } | LinkState::Lost => {
                return Verdict::Reject(RejectReason::DuplicateConnection)
            }
            LinkState::Closed => return Verdict::Reject(RejectReason::ShuttingDown),
        };
        self.state = LinkState::Up { conn };
        self.failures = 0;
        Verdict::Accept {
            abandon,
            flush: std::mem::take(&mut self.queue),
        }
    }

    /// Connection `conn` ended; `graceful` if the peer said bye first.
    /// True if it was this link's live connection.
    pub fn conn_closed(&mut self, conn: ConnId, graceful: bool) -> bool {
        if self.state != (LinkState::Up { conn }) {
            return false;
        }
        self.state = if graceful {
            LinkState::Closed
        } else {
            LinkState::Lost
        };
        true
    }

    /// We are shutting down: no more sends or connections.
    pub fn close(&mut self) {
        self.state = LinkState::Closed;
        self.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn first_send_connects_and_queue_flushes_in_order() {
        let mut l = Link::new(0, 1);
        assert_eq!(l.send("a"), Ok(SendPlan::QueuedStartConnect));
        l.attempt_started(7);
        assert_eq!(l.send("b"), Ok(SendPlan::Queued));
        assert_eq!(l.want_connect(), Ok(false));
        assert_eq!(
            l.outgoing_decided(7, Decision::Accept),
            AfterDecision::Up {
                flush: VecDeque::from(["a", "b"])
            }
        );
        assert_eq!(l.send("c"), Ok(SendPlan::WriteNow(7, "c")));
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn failures_retry_then_give_up() {
        let mut l = Link::new(0, 1);
        assert_eq!(l.send(1), Ok(SendPlan::QueuedStartConnect));
        for i in 0..MAX_CONNECT_ATTEMPTS as u64 {
            l.attempt_started(i);
            assert_eq!(l.attempt_failed(99), AfterFailure::Stale);
            let want = if i + 1 == MAX_CONNECT_ATTEMPTS as u64 {
                AfterFailure::GiveUp { dropped: 1 }
            } else {
                AfterFailure::Retry
            };
            assert_eq!(l.attempt_failed(i), want);
        }
        assert_eq!(l.state(), LinkState::Lost);
        assert_eq!(l.send(2), Err(LinkError::PeerLost));
    }

    #[test]
    fn graceful_and_abrupt_close() {
        let mut l: Link<u8> = Link::new(1, 0);
        assert!(matches!(
            l.incoming_authenticated(3),
            Verdict::Accept { abandon: None, .. }
        ));
        assert!(!l.conn_closed(4, false));
        assert!(l.conn_closed(3, true));
        assert_eq!(l.send(0), Err(LinkError::PeerClosed));
        let mut l: Link<u8> = Link::new(1, 0);
        l.incoming_authenticated(3);
        assert!(l.conn_closed(3, false));
        assert_eq!(l.send(0), Err(LinkError::PeerLost));
        assert_eq!(
            l.incoming_authenticated(5),
            Verdict::Reject(RejectReason::DuplicateConnection)
        );
    }

    #[test]
    fn duplicate_incoming_while_up_is_rejected() {
        let mut l: Link<u8> = Link::new(0, 1);
        l.incoming_authenticated(1);
        assert_eq!(
            l.incoming_authenticated(2),
            Verdict::Reject(RejectReason::DuplicateConnection)
        );
        assert_eq!(l.up_conn(), Some(1));
    }

    #[test]
    fn awaiting_peer_expiry_retries() {
        let mut l = Link::new(1, 0);
        l.send('x').unwrap();
        l.attempt_started(1);
        assert_eq!(
            l.outgoing_decided(1, Decision::Reject(RejectReason::DuplicateConnection)),
            AfterDecision::WaitForPeer
        );
        assert!(l.awaiting_expired());
        assert_eq!(l.want_connect(), Ok(true));
        l.attempt_started(2);
        assert_eq!(
            l.outgoing_decided(2, Decision::Accept),
            AfterDecision::Up {
                flush: VecDeque::from(['x'])
            }
        );
    }

    // ---- Two ranks over a simulated network, every interleaving. ----

    /// One simulated TCP connection between ranks 0 and 1.
    #[derive(Debug, Clone, Default)]
    struct SimConn {
        client: usize,
        decided: Option<Decision>,
        result_seen: bool,
        closed: bool,
        /// Messages written by each rank on this connection.
        wire: [Vec<u32>; 2],
    }

    #[derive(Debug, Clone)]
    struct World {
        links: [Link<u32>; 2],
        conns: BTreeMap<ConnId, SimConn>,
        next_conn: ConnId,
        to_send: [Vec<u32>; 2],
        /// Expiries of the await-peer wait still allowed (bounds the search).
        expiries_left: [u32; 2],
    }

    #[derive(Debug, Clone, Copy)]
    enum Step {
        Send(usize),
        Decide(ConnId),
        Result(ConnId),
        Expire(usize),
    }

    impl World {
        fn new(to_send: [Vec<u32>; 2]) -> Self {
            Self {
                links: [Link::new(0, 1), Link::new(1, 0)],
                conns: BTreeMap::new(),
                next_conn: 1,
                to_send,
                expiries_left: [1, 1],
            }
        }

        fn start(&mut self, side: usize) {
            let id = self.next_conn;
            self.next_conn += 1;
            self.conns.insert(
                id,
                SimConn {
                    client: side,
                    ..Default::default()
                },
            );
            self.links[side].attempt_started(id);
        }

        fn write(&mut self, side: usize, conn: ConnId, msgs: impl IntoIterator<Item = u32>) {
            let c = self.conns.get_mut(&conn).expect("conn exists");
            assert!(!c.closed, "rank {side} wrote on closed conn {conn}");
            c.wire[side].extend(msgs);
        }

        fn enabled(&self) -> Vec<Step> {
            let mut v = Vec::new();
            for side in 0..2 {
                if !self.to_send[side].is_empty() {
                    v.push(Step::Send(side));
                }
                if self.links[side].state() == LinkState::AwaitingPeer
                    && self.expiries_left[side] > 0
                {
                    v.push(Step::Expire(side));
                }
            }
            for (&id, c) in &self.conns {
                if c.closed {
                    continue;
                }
                if c.decided.is_none() {
                    v.push(Step::Decide(id));
                } else if !c.result_seen {
                    v.push(Step::Result(id));
                }
            }
            v
        }

        fn apply(&mut self, step: Step) {
            match step {
                Step::Send(side) => {
                    let m = self.to_send[side].remove(0);
                    match self.links[side].send(m).expect("link open") {
                        SendPlan::WriteNow(conn, m) => self.write(side, conn, [m]),
                        SendPlan::QueuedStartConnect => self.start(side),
                        SendPlan::Queued => {}
                    }
                }
                Step::Expire(side) => {
                    self.expiries_left[side] -= 1;
                    if self.links[side].awaiting_expired() {
                        self.start(side);
                    }
                }
                Step::Decide(id) => {
                    let server = 1 - self.conns[&id].client;
                    match self.links[server].incoming_authenticated(id) {
                        Verdict::Accept { abandon, flush } => {
                            self.conns.get_mut(&id).unwrap().decided = Some(Decision::Accept);
                            if let Some(a) = abandon {
                                self.conns.get_mut(&a).unwrap().closed = true;
                            }
                            self.write(server, id, flush);
                        }
                        Verdict::Reject(r) => {
                            self.conns.get_mut(&id).unwrap().decided = Some(Decision::Reject(r));
                        }
                    }
                }
                Step::Result(id) => {
                    let c = self.conns.get_mut(&id).unwrap();
                    c.result_seen = true;
                    let (client, d) = (c.client, c.decided.unwrap());
                    if d != Decision::Accept {
                        c.closed = true;
                    }
                    match self.links[client].outgoing_decided(id, d) {
                        AfterDecision::Up { flush } => self.write(client, id, flush),
                        AfterDecision::WaitForPeer => {}
                        AfterDecision::Stale => self.conns.get_mut(&id).unwrap().closed = true,
                        AfterDecision::PeerClosing { .. } => panic!("nobody is closing"),
                    }
                }
            }
        }

        /// Everything delivered per receiving rank: what the peer wrote on
        /// the connection this rank considers up.
        fn delivered(&self, side: usize) -> Vec<u32> {
            match self.links[side].up_conn() {
                Some(c) => self.conns[&c].wire[1 - side].clone(),
                None => Vec::new(),
            }
        }
    }

    fn explore(w: World, sent: &[Vec<u32>; 2], paths: &mut usize) {
        let steps = w.enabled();
        if steps.is_empty() {
            *paths += 1;
            let c0 = w.links[0].up_conn();
            let c1 = w.links[1].up_conn();
            assert!(c0.is_some(), "rank 0 not up: {:?}", w.links[0].state());
            assert_eq!(c0, c1, "ranks disagree on the connection");
            assert_eq!(w.delivered(1), sent[0], "rank 1 got wrong messages");
            assert_eq!(w.delivered(0), sent[1], "rank 0 got wrong messages");
            // Nothing was written on a connection that is not the live one.
            for (&id, c) in &w.conns {
                if Some(id) != c0 {
                    assert!(c.wire.iter().all(Vec::is_empty), "data on losing conn {id}");
                }
            }
            return;
        }
        for s in steps {
            let mut next = w.clone();
            next.apply(s);
            explore(next, sent, paths);
        }
    }

    #[test]
    fn simultaneous_connect_every_interleaving() {
        for sent in [
            [vec![10], vec![20]],
            [vec![10, 11], vec![20, 21]],
            [vec![10, 11, 12], vec![20]],
            [vec![10], vec![]],
            [vec![], vec![20, 21]],
        ] {
            let mut paths = 0;
            explore(World::new(sent.clone()), &sent, &mut paths);
            let both = !sent[0].is_empty() && !sent[1].is_empty();
            assert!(paths >= if both { 10 } else { 1 }, "only {paths} paths");
        }
    }

    #[test]
    fn reject_before_and_after_peer_incoming() {
        // Rank 1's attempt is rejected by rank 0 before rank 0's attempt
        // reaches rank 1 ...
        let mut w = World::new([vec![1], vec![2]]);
        w.apply(Step::Send(0)); // conn 1: 0 -> 1
        w.apply(Step::Send(1)); // conn 2: 1 -> 0
        w.apply(Step::Decide(2)); // rank 0 rejects the higher rank
        w.apply(Step::Result(2));
        assert_eq!(w.links[1].state(), LinkState::AwaitingPeer);
        w.apply(Step::Decide(1));
        w.apply(Step::Result(1));
        assert_eq!(w.links[0].up_conn(), Some(1));
        assert_eq!(w.links[1].up_conn(), Some(1));
        assert_eq!((w.delivered(0), w.delivered(1)), (vec![2], vec![1]));

        // ... and after it.
        let mut w = World::new([vec![1], vec![2]]);
        w.apply(Step::Send(0));
        w.apply(Step::Send(1));
        w.apply(Step::Decide(1)); // rank 1 accepts the lower rank, abandons conn 2
        assert!(w.conns[&2].closed);
        w.apply(Step::Result(1));
        assert!(w.enabled().is_empty());
        assert_eq!((w.delivered(0), w.delivered(1)), (vec![2], vec![1]));
    }
}
