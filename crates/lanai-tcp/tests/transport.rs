//! Several transports in one process, driven alternately or on threads.

use lanai_tcp::{Config, Envelope, Sink, TcpError, TcpTransport};
use lanai_wire::envelope::Kind;
use lanai_wire::frame;
use lanai_wire::handshake::{ClientHandshake, Decision, CHALLENGE_LEN, DECISION_LEN};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SECRET: &[u8] = b"integration test secret";

/// Runs `f` on a thread and fails the test if it takes longer than `secs`.
fn with_timeout<F: FnOnce() + Send + 'static>(secs: u64, f: F) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().expect("test thread"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test timed out after {secs} s"),
    }
}

fn config(rank: u32, n: u32) -> Config {
    let mut c = Config::new(rank, n, SECRET.to_vec());
    c.handshake_timeout = Duration::from_secs(5);
    c
}

fn world_with(n: u32, cfg: impl Fn(u32) -> Config) -> Vec<TcpTransport> {
    let mut ts: Vec<TcpTransport> = (0..n)
        .map(|r| TcpTransport::bind(cfg(r)).expect("bind"))
        .collect();
    let addrs: Vec<_> = ts.iter().map(TcpTransport::local_addr).collect();
    for t in &mut ts {
        for (r, a) in addrs.iter().enumerate() {
            t.set_peer_addr(r as u32, *a);
        }
    }
    ts
}

fn world(n: u32) -> Vec<TcpTransport> {
    world_with(n, |r| config(r, n))
}

fn env(src: u32, tag: i32, len: usize) -> Envelope {
    Envelope {
        kind: Kind::Eager,
        flags: 0,
        ctx: 0,
        src,
        tag,
        len: len as u64,
        cookie: tag as u64 * 3 + 1,
        sig: 0,
    }
}

/// Deterministic payload for (sender, tag), checkable by the receiver.
fn payload(src: u32, tag: i32, len: usize) -> Vec<u8> {
    let seed = (src as usize) * 7919 + tag as usize * 104_729;
    (0..len).map(|i| ((i + seed) % 251) as u8).collect()
}

type Got = Vec<(u32, Envelope, Vec<u8>)>;

/// Drives every transport in turn until `done` holds; panics on error or
/// after `secs` seconds.
fn drive(ts: &mut [TcpTransport], got: &mut [Got], secs: u64, done: impl Fn(&[Got]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done(got) {
        assert!(Instant::now() < deadline, "not done in {secs} s");
        for (i, t) in ts.iter_mut().enumerate() {
            let sink = &mut got[i];
            t.progress(Some(Duration::ZERO), &mut |from, e, p| {
                sink.push((from, e, p.to_vec()))
            })
            .unwrap_or_else(|e| panic!("rank {i}: {e}"));
        }
    }
}

/// One non-blocking progress call on every transport.
fn poll_once(ts: &mut [TcpTransport], got: &mut [Got]) {
    for (i, t) in ts.iter_mut().enumerate() {
        let sink = &mut got[i];
        t.progress(Some(Duration::ZERO), &mut |from, e, p| {
            sink.push((from, e, p.to_vec()))
        })
        .unwrap_or_else(|e| panic!("rank {i}: {e}"));
    }
}

fn check(got: &Got, from: u32, tags: impl Iterator<Item = (i32, usize)>) {
    let mine: Vec<_> = got.iter().filter(|m| m.0 == from).collect();
    let mut n = 0;
    for (i, (tag, len)) in tags.enumerate() {
        let m = mine
            .get(i)
            .unwrap_or_else(|| panic!("message {i} from {from} missing"));
        assert_eq!(m.1, env(from, tag, len), "envelope {i} from {from}");
        assert!(
            m.2 == payload(from, tag, len),
            "payload {i} from {from} differs"
        );
        n += 1;
    }
    assert_eq!(mine.len(), n, "extra messages from {from}");
}

#[test]
fn sizes_from_zero_to_16_mib_arrive_intact_and_in_order() {
    with_timeout(120, || {
        let mut ts = world(2);
        let sizes = [
            0usize,
            1,
            100,
            4095,
            65536,
            (1 << 20) - 40,
            (1 << 20) - 39,
            (1 << 20) + 1,
            3 << 20,
            16 << 20,
            7,
        ];
        for (tag, &len) in sizes.iter().enumerate() {
            let tag = tag as i32;
            ts[0]
                .send(1, &env(0, tag, len), &payload(0, tag, len))
                .unwrap();
            ts[1]
                .send(0, &env(1, tag, len), &payload(1, tag, len))
                .unwrap();
        }
        let mut got = vec![Vec::new(), Vec::new()];
        let n = sizes.len();
        drive(&mut ts, &mut got, 100, |g| {
            g[0].len() == n && g[1].len() == n
        });
        let tags = || sizes.iter().enumerate().map(|(t, &l)| (t as i32, l));
        check(&got[1], 0, tags());
        check(&got[0], 1, tags());
        let total: u64 = sizes.iter().map(|&s| s as u64).sum();
        assert_eq!(ts[0].stats().bytes_sent, total);
        assert_eq!(ts[1].stats().bytes_received, total);
        assert!(!ts[0].has_pending_output());
    });
}

/// A sink that lands long messages with even tags, placing those whose tag
/// is a multiple of 4 (the others come in pieces), and takes the rest whole.
#[derive(Default)]
struct Lands {
    got: Got,
    landing: Option<(u32, Envelope, Vec<u8>)>,
    /// Bytes of placed messages that came as pieces all the same.
    unplaced: usize,
}

impl Sink for Lands {
    fn deliver(&mut self, from: u32, env: Envelope, payload: &[u8]) {
        self.got.push((from, env, payload.to_vec()));
    }

    fn land(&mut self, from: u32, env: &Envelope, total: usize) -> bool {
        assert!(self.landing.is_none(), "two messages landing at once");
        assert_eq!(total as u64, env.len);
        if env.tag % 2 != 0 {
            return false;
        }
        self.landing = Some((from, *env, vec![0; total]));
        true
    }

    fn place(&mut self, from: u32, env: &Envelope, at: usize, len: usize) -> Option<&mut [u8]> {
        let (f, e, buf) = self.landing.as_mut().expect("a place in nothing");
        assert_eq!((*f, *e), (from, *env));
        if env.tag % 4 != 0 {
            return None;
        }
        Some(&mut buf[at..at + len])
    }

    fn piece(&mut self, from: u32, env: &Envelope, at: usize, bytes: &[u8]) {
        let (f, e, buf) = self.landing.as_mut().expect("a piece of nothing");
        assert_eq!((*f, *e), (from, *env));
        buf[at..at + bytes.len()].copy_from_slice(bytes);
        if env.tag % 4 == 0 {
            self.unplaced += bytes.len();
        }
    }

    fn landed(&mut self, from: u32, env: Envelope, total: usize) {
        let (f, e, buf) = self.landing.take().expect("nothing landed");
        assert_eq!((f, e, buf.len()), (from, env, total));
        self.got.push((f, e, buf));
    }
}

#[test]
fn long_messages_land_in_place_in_pieces_or_whole() {
    with_timeout(120, || {
        let mut ts = world(2);
        // Tags 0..: placed, whole, in pieces, whole, placed, ...
        let sizes = [
            16 << 10,
            16 << 10,
            100_000,
            100_000,
            (1 << 20) - 39,
            (1 << 20) + 1,
            3 << 20,
            3 << 20,
            16 << 20,
            (16 << 10) - 1,
            7,
        ];
        for (tag, &len) in sizes.iter().enumerate() {
            let tag = tag as i32;
            ts[0]
                .send(1, &env(0, tag, len), &payload(0, tag, len))
                .unwrap();
        }
        let mut sink = Lands::default();
        let deadline = Instant::now() + Duration::from_secs(100);
        while sink.got.len() < sizes.len() {
            assert!(Instant::now() < deadline, "not all arrived");
            ts[0]
                .progress(Some(Duration::ZERO), &mut |_, _, _| {})
                .unwrap();
            ts[1]
                .progress_into(Some(Duration::ZERO), &mut sink)
                .unwrap();
        }
        check(
            &sink.got,
            0,
            sizes.iter().enumerate().map(|(t, &l)| (t as i32, l)),
        );
        // Even tags of 16 KiB and more landed; most of the placed ones'
        // bytes went straight from the socket into place.
        let landed: usize = sizes
            .iter()
            .enumerate()
            .filter(|&(t, &l)| t % 2 == 0 && l >= 16 << 10)
            .map(|(_, &l)| l)
            .sum();
        assert_eq!(ts[1].stats().landed_bytes, landed as u64);
        let placed_total: usize = sizes.iter().step_by(4).filter(|&&l| l >= 16 << 10).sum();
        assert!(
            sink.unplaced * 2 < placed_total,
            "{} of {placed_total} bytes were not read into place",
            sink.unplaced
        );
    });
}

/// A payload sent in two parts arrives joined, wherever the split falls
/// against the frames: queued before the connection is up, written
/// straight, and queued behind a socket that is full.
#[test]
fn two_part_payloads_arrive_joined() {
    with_timeout(120, || {
        let mut ts = world_with(2, |r| {
            let mut c = config(r, 2);
            c.max_frame = 4096;
            c
        });
        let mut sent = Vec::new();
        for len in [0usize, 5, 4096, 10_000, 3 << 20] {
            for cut in [0, 1, 7, 4071, 4072, len / 2, len] {
                let cut = cut.min(len);
                let tag = sent.len() as i32;
                let p = payload(0, tag, len);
                ts[0]
                    .send_parts(1, &env(0, tag, len), [&p[..cut], &p[cut..]])
                    .unwrap();
                sent.push((tag, len));
            }
        }
        let mut got = vec![Vec::new(), Vec::new()];
        let n = sent.len();
        drive(&mut ts, &mut got, 100, |g| g[1].len() == n);
        check(&got[1], 0, sent.into_iter());
    });
}

#[test]
fn simultaneous_first_sends_make_one_connection() {
    with_timeout(60, || {
        for round in 0..20 {
            let mut ts = world(2);
            ts[0].send(1, &env(0, 1, 10), &payload(0, 1, 10)).unwrap();
            ts[1].send(0, &env(1, 1, 20), &payload(1, 1, 20)).unwrap();
            ts[0]
                .send(1, &env(0, 2, 5000), &payload(0, 2, 5000))
                .unwrap();
            ts[1].send(0, &env(1, 2, 0), &payload(1, 2, 0)).unwrap();
            let mut got = vec![Vec::new(), Vec::new()];
            // Vary which side makes progress first.
            if round % 2 == 1 {
                ts.swap(0, 1);
                got.swap(0, 1);
            }
            drive(&mut ts, &mut got, 30, |g| {
                g[0].len() == 2 && g[1].len() == 2
            });
            if round % 2 == 1 {
                ts.swap(0, 1);
                got.swap(0, 1);
            }
            check(&got[1], 0, [(1, 10), (2, 5000)].into_iter());
            check(&got[0], 1, [(1, 20), (2, 0)].into_iter());
            assert!(ts[0].is_connected(1) && ts[1].is_connected(0));
            for t in &ts {
                let s = t.stats();
                assert_eq!(s.connections, 1, "round {round}: {s:?}");
                assert_eq!(s.rejected, 0);
            }
        }
    });
}

#[test]
fn thousand_small_messages_in_order_both_ways() {
    with_timeout(60, || {
        let mut ts = world(2);
        let mut got = vec![Vec::new(), Vec::new()];
        for tag in 0..1000 {
            let len = (tag as usize * 13) % 200;
            ts[0]
                .send(1, &env(0, tag, len), &payload(0, tag, len))
                .unwrap();
            ts[1]
                .send(0, &env(1, tag, len), &payload(1, tag, len))
                .unwrap();
            if tag % 100 == 0 {
                poll_once(&mut ts, &mut got);
            }
        }
        drive(&mut ts, &mut got, 30, |g| {
            g[0].len() == 1000 && g[1].len() == 1000
        });
        let tags = || (0..1000).map(|t| (t, (t as usize * 13) % 200));
        check(&got[1], 0, tags());
        check(&got[0], 1, tags());
    });
}

#[test]
fn four_ranks_all_to_all_on_threads() {
    with_timeout(60, || {
        let n = 4u32;
        let ts = world(n);
        let handles: Vec<_> = ts
            .into_iter()
            .enumerate()
            .map(|(me, mut t)| {
                std::thread::spawn(move || {
                    let me = me as u32;
                    for tag in 0..50 {
                        for to in (0..n).filter(|&r| r != me) {
                            let len = (tag as usize * 997) % 70_000;
                            t.send(to, &env(me, tag, len), &payload(me, tag, len))
                                .unwrap();
                        }
                    }
                    let mut got: Got = Vec::new();
                    let deadline = Instant::now() + Duration::from_secs(40);
                    while got.len() < 50 * (n as usize - 1) {
                        assert!(Instant::now() < deadline, "rank {me} timed out");
                        t.progress(Some(Duration::from_millis(10)), &mut |f, e, p| {
                            got.push((f, e, p.to_vec()))
                        })
                        .unwrap();
                    }
                    t.shutdown(Duration::from_secs(10), &mut |_, _, _| {})
                        .unwrap();
                    for from in (0..n).filter(|&r| r != me) {
                        check(
                            &got,
                            from,
                            (0..50).map(|t| (t, (t as usize * 997) % 70_000)),
                        );
                    }
                    t.stats()
                })
            })
            .collect();
        for h in handles {
            let s = h.join().expect("rank thread");
            assert_eq!(s.messages_received, 150);
            assert_eq!(s.rejected, 0);
        }
    });
}

/// Authenticates to `t` as `rank` with `secret`, returning the stream.
fn handshake_as(addr: std::net::SocketAddr, secret: &[u8], rank: u32, server: u32) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let (mut hs, hello) = ClientHandshake::new(secret, rank, server, [rank as u8; 32]).unwrap();
    s.write_all(&hello).unwrap();
    let mut ch = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut ch).unwrap();
    let proof = hs.handle_challenge(&ch).unwrap();
    s.write_all(&proof).unwrap();
    let mut d = [0u8; DECISION_LEN];
    s.read_exact(&mut d).unwrap();
    assert_eq!(hs.handle_decision(&d).unwrap(), Decision::Accept);
    s
}

#[test]
fn strangers_are_rejected_while_traffic_continues() {
    with_timeout(60, || {
        let n = 3;
        let mut ts = world_with(n, |r| {
            let mut c = config(r, n);
            c.handshake_timeout = Duration::from_millis(300);
            c.max_frame = 4096;
            c
        });
        let target = ts[1].local_addr();
        // Garbage instead of a hello.
        let mut garbage = TcpStream::connect(target).unwrap();
        garbage.write_all(&[0xAB; 200]).unwrap();
        // A hello signed with the wrong secret, then a made-up proof.
        let mut wrong = TcpStream::connect(target).unwrap();
        let (_, hello) = ClientHandshake::new(b"not the secret", 0, 1, [9; 32]).unwrap();
        wrong.write_all(&hello).unwrap();
        // Silent.
        let _silent = TcpStream::connect(target).unwrap();

        let mut got = [Vec::new(), Vec::new(), Vec::new()];
        let mut tag = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut proofs_sent = false;
        while ts[1].stats().rejected < 3 || got[1].len() < 200 {
            assert!(Instant::now() < deadline, "stats {:?}", ts[1].stats());
            if tag < 200 {
                ts[0]
                    .send(1, &env(0, tag, 64), &payload(0, tag, 64))
                    .unwrap();
                tag += 1;
            }
            if !proofs_sent {
                let mut ch = [0u8; CHALLENGE_LEN];
                wrong.set_nonblocking(true).unwrap();
                if wrong.read_exact(&mut ch).is_ok() {
                    // Well-formed proof message, MAC made up.
                    let mut proof = Vec::from(&b"LnHS\x01\x03"[..]);
                    proof.extend_from_slice(&[0x5a; 32]);
                    wrong.write_all(&proof).unwrap();
                    proofs_sent = true;
                }
            }
            poll_once(&mut ts[..2], &mut got[..2]);
            std::thread::sleep(Duration::from_millis(1));
        }
        check(&got[1], 0, (0..200).map(|t| (t, 64)));
        assert_eq!(ts[1].stats().rejected, 3);

        // An authenticated peer that sends an oversized frame is cut off and
        // named; the job's other traffic still flows.
        // It runs on its own thread because rank 1 must progress meanwhile.
        let evil = std::thread::spawn(move || {
            let mut evil = handshake_as(target, SECRET, 2, 1);
            let mut hdr = Vec::from(&b"Ln\x01\x01"[..]);
            hdr.extend_from_slice(&100_000u32.to_le_bytes());
            evil.write_all(&hdr).unwrap();
            evil
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let err = loop {
            assert!(Instant::now() < deadline);
            if let Err(e) = ts[1].progress(Some(Duration::from_millis(10)), &mut |_, _, _| {}) {
                break e;
            }
        };
        assert!(
            matches!(err, TcpError::PeerProtocol { rank: 2, .. }),
            "got {err}"
        );
        assert_eq!(ts[1].stats().rejected, 4);
        drop(evil.join().expect("evil peer thread"));
        ts[0]
            .send(1, &env(0, 500, 10), &payload(0, 500, 10))
            .unwrap();
        drive(&mut ts[..2], &mut got[..2], 10, |g| g[1].len() == 201);
        assert_eq!(got[1][200].1, env(0, 500, 10));
    });
}

#[test]
fn goodbye_is_graceful_and_abrupt_loss_is_named() {
    with_timeout(30, || {
        let mut ts = world(3);
        let mut got = vec![Vec::new(), Vec::new(), Vec::new()];
        ts[0].send(1, &env(0, 1, 3), &payload(0, 1, 3)).unwrap();
        ts[2].send(1, &env(2, 1, 3), &payload(2, 1, 3)).unwrap();
        drive(&mut ts, &mut got, 10, |g| g[1].len() == 2);

        // Rank 0 says goodbye: rank 1 carries on without error.
        let mut t0 = ts.remove(0);
        t0.shutdown(Duration::from_secs(5), &mut |_, _, _| {})
            .unwrap();
        drop(t0);
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline {
            ts[0]
                .progress(Some(Duration::from_millis(10)), &mut |_, _, _| {})
                .unwrap();
        }
        assert!(matches!(
            ts[0].send(0, &env(1, 2, 0), &[]),
            Err(TcpError::PeerClosed { rank: 0 })
        ));

        // Rank 2 vanishes without a word: rank 1's progress names it.
        drop(ts.remove(1));
        let deadline = Instant::now() + Duration::from_secs(5);
        let err = loop {
            assert!(Instant::now() < deadline, "loss not reported");
            if let Err(e) = ts[0].progress(Some(Duration::from_millis(10)), &mut |_, _, _| {}) {
                break e;
            }
        };
        assert!(
            matches!(err, TcpError::PeerLost { rank: 2, .. }),
            "got {err}"
        );
    });
}

/// A peer that sends and vanishes before the receiver looks: the data and
/// the end of the stream arrive under one edge, and both must be seen (a
/// short read must not end reading there).
#[test]
fn last_words_then_loss_are_both_reported() {
    with_timeout(30, || {
        let mut ts = world(2);
        let mut got = vec![Vec::new(), Vec::new()];
        ts[0].send(1, &env(0, 1, 3), &payload(0, 1, 3)).unwrap();
        drive(&mut ts, &mut got, 10, |g| g[1].len() == 1);
        // Queue a last message, push it out, and vanish without a goodbye.
        let mut t0 = ts.remove(0);
        t0.send(1, &env(0, 2, 5), &payload(0, 2, 5)).unwrap();
        while t0.has_pending_output() {
            t0.progress(Some(Duration::from_millis(1)), &mut |_, _, _| {})
                .unwrap();
        }
        drop(t0);
        std::thread::sleep(Duration::from_millis(50));
        let mut last = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let err = loop {
            assert!(Instant::now() < deadline, "loss not reported");
            let r = ts[0].progress(Some(Duration::from_millis(10)), &mut |from, e, p| {
                last.push((from, e, p.to_vec()))
            });
            if let Err(e) = r {
                break e;
            }
        };
        assert_eq!(last.len(), 1, "the last message is delivered");
        assert_eq!(last[0].1, env(0, 2, 5));
        assert!(
            matches!(err, TcpError::PeerLost { rank: 0, .. }),
            "got {err}"
        );
    });
}

#[test]
fn argument_errors() {
    with_timeout(10, || {
        let mut t = TcpTransport::bind(config(0, 3)).unwrap();
        assert!(matches!(
            t.send(0, &env(0, 0, 0), &[]),
            Err(TcpError::SendToSelf)
        ));
        assert!(matches!(
            t.send(3, &env(0, 0, 0), &[]),
            Err(TcpError::NoSuchRank { rank: 3, .. })
        ));
        assert!(matches!(
            t.send(1, &env(0, 0, 0), &[]),
            Err(TcpError::NoPeerAddress { rank: 1 })
        ));
        assert!(matches!(
            TcpTransport::bind(Config::new(0, 2, Vec::new())),
            Err(TcpError::EmptySecret)
        ));
        assert!(matches!(
            TcpTransport::bind(Config::new(2, 2, SECRET.to_vec())),
            Err(TcpError::BadConfigRank { .. })
        ));
        assert!(t.local_addr().ip().is_loopback());
        let _ = frame::DEFAULT_MAX_FRAME;
    });
}

#[test]
fn connect_without_sending_and_wake_fd() {
    with_timeout(20, || {
        let mut ts = world(2);
        ts[1].connect(0).unwrap();
        let mut got = vec![Vec::new(), Vec::new()];
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(ts[0].is_connected(1) && ts[1].is_connected(0)) {
            assert!(Instant::now() < deadline);
            poll_once(&mut ts, &mut got);
        }
        assert_eq!(ts[1].stats().connect_attempts, 1);

        let (r, w) = nix::unistd::pipe().unwrap();
        ts[0].add_wake_fd(std::os::fd::AsFd::as_fd(&r)).unwrap();
        let p = ts[0]
            .progress(Some(Duration::ZERO), &mut |_, _, _| {})
            .unwrap();
        assert!(!p.wake_fd_ready);
        nix::unistd::write(&w, &[1]).unwrap();
        let p = ts[0].progress(None, &mut |_, _, _| {}).unwrap();
        assert!(p.wake_fd_ready);
    });
}

/// Direct reads of the last connection a message came on: a receiver fed
/// by two peers in turn, one of them streaming, gets every message in order
/// per sender (the streaming one does not starve the other), and the hot
/// connection's goodbye and a peer's loss are seen through the direct path.
#[test]
fn direct_reads_keep_order_fairness_and_endings() {
    with_timeout(60, || {
        let mut ts = world(3);
        ts[1].set_direct_reads(true);
        let mut got = vec![Vec::new(), Vec::new(), Vec::new()];
        let mut sent = [0i32; 3];
        let len = |tag: i32| (tag as usize * 7) % 120;
        for round in 0..400 {
            // Rank 0 streams; rank 2 sends one message every fourth round.
            for _ in 0..3 {
                let t = sent[0];
                ts[0]
                    .send(1, &env(0, t, len(t)), &payload(0, t, len(t)))
                    .unwrap();
                sent[0] += 1;
            }
            if round % 4 == 0 {
                let t = sent[2];
                ts[2]
                    .send(1, &env(2, t, len(t)), &payload(2, t, len(t)))
                    .unwrap();
                sent[2] += 1;
            }
            poll_once(&mut ts, &mut got);
        }
        let want = (sent[0] + sent[2]) as usize;
        drive(&mut ts, &mut got, 30, |g| g[1].len() == want);
        check(&got[1], 0, (0..sent[0]).map(|t| (t, len(t))));
        check(&got[1], 2, (0..sent[2]).map(|t| (t, len(t))));

        // The hot connection (rank 2 spoke last) ends with a goodbye.
        ts[2]
            .send(1, &env(2, 9999, 5), &payload(2, 9999, 5))
            .unwrap();
        drive(&mut ts, &mut got, 10, |g| g[1].len() == want + 1);
        let mut t2 = ts.remove(2);
        t2.shutdown(Duration::from_secs(5), &mut |_, _, _| {})
            .unwrap();
        drop(t2);
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline {
            ts[1]
                .progress(Some(Duration::ZERO), &mut |_, _, _| {})
                .unwrap();
        }
        assert!(matches!(
            ts[1].send(2, &env(1, 1, 0), &[]),
            Err(TcpError::PeerClosed { rank: 2 })
        ));

        // Rank 0, hot again, vanishes without a word: the loss is named.
        ts[0]
            .send(1, &env(0, 9999, 1), &payload(0, 9999, 1))
            .unwrap();
        let mut last = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while last.is_empty() {
            assert!(Instant::now() < deadline, "last message not delivered");
            ts[1]
                .progress(Some(Duration::ZERO), &mut |f, e, p| {
                    last.push((f, e, p.to_vec()))
                })
                .unwrap();
        }
        drop(ts.remove(0));
        let deadline = Instant::now() + Duration::from_secs(5);
        let err = loop {
            assert!(Instant::now() < deadline, "loss not reported");
            if let Err(e) = ts[0].progress(Some(Duration::ZERO), &mut |_, _, _| {}) {
                break e;
            }
        };
        assert!(
            matches!(err, TcpError::PeerLost { rank: 0, .. }),
            "got {err}"
        );
    });
}
