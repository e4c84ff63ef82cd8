//! Loopback ping-pong between two transports on two threads.
//! `cargo run --release -p lanai-tcp --example tcp_pingpong [iters]`
//! Prints the median one-way latency for 8 B and the bandwidth for 4 MiB.

use lanai_tcp::{Config, Envelope, TcpTransport};
use lanai_wire::envelope::Kind;
use std::time::{Duration, Instant};

fn env(len: usize) -> Envelope {
    Envelope {
        kind: Kind::Eager,
        flags: 0,
        ctx: 0,
        src: 0,
        tag: 0,
        len: len as u64,
        cookie: 0,
        sig: 0,
    }
}

/// Sends `len` bytes to the peer and waits for the echo, `iters` times;
/// returns per-round-trip times.
fn pinger(t: &mut TcpTransport, peer: u32, len: usize, iters: usize) -> Vec<Duration> {
    let buf = vec![7u8; len];
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        t.send(peer, &env(len), &buf).expect("send");
        let mut got = 0;
        while got == 0 {
            got = t
                .progress(Some(Duration::ZERO), &mut |_, _, _| {})
                .expect("progress")
                .delivered;
        }
        times.push(start.elapsed());
    }
    times
}

fn ponger(t: &mut TcpTransport, peer: u32, len: usize, iters: usize) {
    let buf = vec![9u8; len];
    for _ in 0..iters {
        let mut got = 0;
        while got == 0 {
            got = t
                .progress(Some(Duration::ZERO), &mut |_, _, _| {})
                .expect("progress")
                .delivered;
        }
        t.send(peer, &env(len), &buf).expect("send");
    }
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let secret = b"pingpong".to_vec();
    let mut a = TcpTransport::bind(Config::new(0, 2, secret.clone())).expect("bind");
    let mut b = TcpTransport::bind(Config::new(1, 2, secret)).expect("bind");
    a.set_peer_addr(1, b.local_addr());
    b.set_peer_addr(0, a.local_addr());
    let big = 4 << 20;
    let big_iters = 50;
    let echo = std::thread::spawn(move || {
        ponger(&mut b, 0, 8, iters + 100);
        ponger(&mut b, 0, big, big_iters);
        b
    });
    pinger(&mut a, 1, 8, 100); // warm-up and connect
    let mut t = pinger(&mut a, 1, 8, iters);
    t.sort();
    let median = t[t.len() / 2];
    println!(
        "8 B: median one-way latency {:.2} us over {iters} round trips",
        median.as_secs_f64() * 1e6 / 2.0
    );
    let t = pinger(&mut a, 1, big, big_iters);
    let total: Duration = t.iter().sum();
    let gbps = (2 * big * big_iters) as f64 / total.as_secs_f64() / 1e9;
    println!("4 MiB: {gbps:.2} GB/s (ping-pong, both directions counted)");
    let _ = echo.join();
}
