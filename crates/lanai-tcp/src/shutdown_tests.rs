//! Orderly close at shutdown versus a lost peer, with the event orders that
//! race at `MPI_Finalize` scripted one step at a time.

use crate::{Config, TcpError, TcpTransport};
use lanai_wire::frame;
use lanai_wire::handshake::{ClientHandshake, Decision, CHALLENGE_LEN, DECISION_LEN};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SECRET: &[u8] = b"shutdown test secret";

fn world(n: u32) -> Vec<TcpTransport> {
    let mut ts: Vec<TcpTransport> = (0..n)
        .map(|r| {
            let mut c = Config::new(r, n, SECRET.to_vec());
            c.handshake_timeout = Duration::from_secs(5);
            TcpTransport::bind(c).expect("bind")
        })
        .collect();
    let addrs: Vec<_> = ts.iter().map(TcpTransport::local_addr).collect();
    for t in &mut ts {
        for (r, a) in addrs.iter().enumerate() {
            t.set_peer_addr(r as u32, *a);
        }
    }
    ts
}

fn env(src: u32) -> crate::Envelope {
    crate::Envelope {
        kind: lanai_wire::envelope::Kind::Eager,
        flags: 0,
        ctx: 0,
        src,
        tag: 7,
        len: 1,
        cookie: 1,
        sig: 0,
    }
}

fn poll(t: &mut TcpTransport) -> Result<(), TcpError> {
    t.progress(Some(Duration::ZERO), &mut |_, _, _| {})
        .map(|_| ())
}

/// Polls `t` for `ms` milliseconds; any error fails the test.
fn quiet_for(t: &mut TcpTransport, ms: u64, who: &str) {
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        t.progress(Some(Duration::from_millis(5)), &mut |_, _, _| {})
            .unwrap_or_else(|e| panic!("{who}: orderly close reported as: {e}"));
    }
}

fn shutdown(mut t: TcpTransport) {
    t.shutdown(Duration::from_secs(5), &mut |_, _, _| {})
        .expect("shutdown");
}

/// A peer that authenticates as `rank` by hand, polling `t` meanwhile.
fn scripted_peer(t: &mut TcpTransport, rank: u32) -> TcpStream {
    let (tx, rx) = mpsc::channel();
    let (addr, server) = (t.local_addr(), 0);
    std::thread::spawn(move || tx.send(handshake_as(addr, rank, server)));
    loop {
        poll(t).expect("handshake");
        if let Ok(s) = rx.try_recv() {
            return s;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn handshake_as(addr: SocketAddr, rank: u32, server: u32) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let (mut hs, hello) = ClientHandshake::new(SECRET, rank, server, [3; 32]).unwrap();
    s.write_all(&hello).unwrap();
    let mut ch = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut ch).unwrap();
    s.write_all(&hs.handle_challenge(&ch).unwrap()).unwrap();
    let mut d = [0u8; DECISION_LEN];
    s.read_exact(&mut d).unwrap();
    assert_eq!(hs.handle_decision(&d).unwrap(), Decision::Accept);
    s
}

#[test]
fn goodbye_and_fin_in_one_read_is_orderly() {
    let mut ts = world(2);
    let mut peer = scripted_peer(&mut ts[0], 1);
    assert!(ts[0].is_connected(1));
    // Bye and FIN are both queued before rank 0 reads anything.
    peer.write_all(&frame::bye_frame()).unwrap();
    peer.shutdown(Shutdown::Write).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    quiet_for(&mut ts[0], 100, "rank 0");
    assert!(matches!(
        ts[0].send(1, &env(0), &[1]),
        Err(TcpError::PeerClosed { rank: 1 })
    ));
}

#[test]
fn peer_goodbye_unread_when_we_shut_down_is_orderly() {
    let mut ts = world(2);
    let mut peer = scripted_peer(&mut ts[0], 1);
    peer.write_all(&frame::bye_frame()).unwrap();
    peer.shutdown(Shutdown::Write).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    // Our own bye goes out while the peer's bye and FIN wait unread.
    shutdown(ts.remove(0));
    let mut rest = Vec::new();
    peer.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, frame::bye_frame());
}

#[test]
fn simultaneous_goodbyes_are_orderly() {
    let mut ts = world(2);
    ts[0].send(1, &env(0), &[1]).unwrap();
    while !(ts[0].is_connected(1) && ts[1].is_connected(0)) {
        poll(&mut ts[0]).unwrap();
        poll(&mut ts[1]).unwrap();
    }
    let t1 = ts.pop().unwrap();
    let t0 = ts.pop().unwrap();
    let h = std::thread::spawn(move || shutdown(t1));
    shutdown(t0);
    h.join().expect("rank 1 shutdown");
}

#[test]
fn fin_after_our_goodbye_is_queued_is_orderly() {
    // Rank 1 sends its bye and closes first; rank 0 then queues its own bye
    // on a connection the peer already left, and drains.
    let mut ts = world(2);
    ts[1].send(0, &env(1), &[1]).unwrap();
    while !(ts[0].is_connected(1) && ts[1].is_connected(0)) {
        poll(&mut ts[0]).unwrap();
        poll(&mut ts[1]).unwrap();
    }
    let t0 = ts.remove(0);
    shutdown(ts.remove(0));
    shutdown(t0);
}

/// Rank 0 dials rank 1 without sending (a wildcard receive) and shuts down
/// after rank 1 accepted (so rank 1 sees the link up) but before rank 0 read
/// the decision. Rank 0 must still say goodbye on that connection.
#[test]
fn shutdown_while_awaiting_decision_says_goodbye() {
    let mut ts = world(2);
    ts[0].connect(1).unwrap();
    while !ts[1].is_connected(0) {
        poll(&mut ts[0]).unwrap();
        poll(&mut ts[1]).unwrap();
    }
    assert!(!ts[0].is_connected(1), "rank 0 read the decision too early");
    shutdown(ts.remove(0));
    quiet_for(&mut ts[0], 200, "rank 1");
    assert!(matches!(
        ts[0].send(0, &env(1), &[1]),
        Err(TcpError::PeerClosed { rank: 0 })
    ));
}

/// Rank 0 shuts down with its attempt to rank 1 only just started: the
/// handshake finishes in the drain and ends with a goodbye, not an EOF.
#[test]
fn shutdown_during_handshake_is_orderly_for_the_server() {
    let mut ts = world(2);
    ts[0].connect(1).unwrap();
    poll(&mut ts[0]).unwrap();
    let t0 = ts.remove(0);
    let h = std::thread::spawn(move || shutdown(t0));
    while !h.is_finished() {
        quiet_for(&mut ts[0], 5, "rank 1");
    }
    h.join().expect("rank 0 shutdown");
    quiet_for(&mut ts[0], 100, "rank 1");
}

/// Rank 1 dials rank 0 (still in its barrier, say) just as rank 0 shuts
/// down: rank 0 answers the handshake with "shutting down" instead of
/// vanishing, so rank 1 neither retries into a closed port nor reports a
/// failed connection.
#[test]
fn peer_shutting_down_mid_handshake_is_orderly_for_the_client() {
    let mut ts = world(2);
    ts[1].connect(0).unwrap();
    poll(&mut ts[1]).unwrap();
    let t0 = ts.remove(0);
    let h = std::thread::spawn(move || shutdown(t0));
    while !h.is_finished() {
        quiet_for(&mut ts[0], 5, "rank 1");
    }
    h.join().expect("rank 0 shutdown");
    quiet_for(&mut ts[0], 300, "rank 1");
    assert!(matches!(
        ts[0].send(0, &env(1), &[1]),
        Err(TcpError::PeerClosed { rank: 0 })
    ));
}

/// The other side of the rules: an authenticated peer that vanishes without
/// a goodbye is still a lost connection, and promptly.
#[test]
fn eof_without_goodbye_is_still_lost() {
    let mut ts = world(2);
    let peer = scripted_peer(&mut ts[0], 1);
    drop(peer);
    let deadline = Instant::now() + Duration::from_secs(2);
    let err = loop {
        assert!(Instant::now() < deadline, "loss not reported");
        if let Err(e) = ts[0].progress(Some(Duration::from_millis(10)), &mut |_, _, _| {}) {
            break e;
        }
    };
    assert!(
        matches!(err, TcpError::PeerLost { rank: 1, .. }),
        "got {err}"
    );
    assert!(err.to_string().contains("lost TCP connection to rank 1"));
}
