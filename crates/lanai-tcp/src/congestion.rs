//! Congestion control on loopback, where emulated nodes talk: Reno for
//! every connection, and BBR while one streams small messages one way.
//!
//! On loopback congestion control has nothing to control. Reno is the
//! cheapest per ACK (BBR cost about 0.1 us of a 3.5 us one-way latency on
//! the development VM), so it is the default. But a sender that writes
//! small message after small message to a peer that sends nothing back (a
//! non-root of a run of small reduces, a worker reporting to its master)
//! puts each message through the whole receive path in its own `sendmsg`,
//! about 3 us apiece. BBR paces its sends (internal pacing: loopback has no
//! `fq` queue), so messages written meanwhile leave together and the fan-in
//! costs far less (8-byte reduces at 8 ranks on 8 nodes: 12.0 against 5.4
//! us per call; see `docs/decisions.md`). Such a stream is recognised by
//! [`STREAK`] small sends without anything received from the peer, and
//! ends at the first thing received.

use nix::sys::socket::{setsockopt, sockopt::TcpCongestion};
use std::ffi::OsString;
use std::net::{IpAddr, TcpStream};
use std::os::fd::AsFd;

/// Small sends in a row, with nothing received, that make a stream.
pub(crate) const STREAK: u32 = 64;
/// Larger messages fill segments by themselves: they neither pace nor count.
pub(crate) const SMALL: usize = 1024;

const DEFAULT: &str = "reno";
const PACED: &str = "bbr";

/// A change of a connection's congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Switch {
    /// A stream began: pace.
    Pace,
    /// The peer spoke: back to the default.
    Unpace,
}

/// One connection's view of its traffic: how many small messages it has
/// sent since it last received anything, and whether it paces.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Pacer {
    streak: u32,
    paced: bool,
}

impl Pacer {
    /// A message of `len` bytes went out (or was queued).
    pub(crate) fn sent(&mut self, len: usize) -> Option<Switch> {
        if len > SMALL {
            return None;
        }
        self.streak = self.streak.saturating_add(1);
        (self.streak == STREAK && !self.paced).then(|| {
            self.paced = true;
            Switch::Pace
        })
    }

    /// Bytes came in from the peer.
    pub(crate) fn received(&mut self) -> Option<Switch> {
        self.streak = 0;
        std::mem::take(&mut self.paced).then_some(Switch::Unpace)
    }

    /// Pacing could not be switched on: carry on as before.
    pub(crate) fn refused(&mut self) {
        self.paced = false;
    }

    #[cfg(test)]
    pub(crate) fn paced(&self) -> bool {
        self.paced
    }
}

/// Whether `sock` leads to this host.
fn is_loopback(sock: &TcpStream) -> bool {
    sock.peer_addr().is_ok_and(|a| a.ip().is_loopback())
}

/// Sets the default on a loopback socket before it connects or listens (an
/// accepted connection inherits its listener's choice). It must come first:
/// a connection set up under a system default that paces (BBR) keeps pacing
/// at its Reno rate after the switch, as the kernel never turns internal
/// pacing off, and on a crowded host that rate, from round trips that
/// include wake-ups, throttles large transfers (all-to-all of 256 KiB at 8
/// ranks on 8 nodes: 1.5x slower). Other links keep the system's choice.
pub(crate) fn set_default_before(fd: &impl AsFd, peer_or_local: IpAddr) {
    if peer_or_local.is_loopback() {
        let _ = setsockopt(fd, TcpCongestion, &OsString::from(DEFAULT));
    }
}

/// Sets the default on a new loopback connection whose socket did not get it
/// before it connected (a listener bound to every address).
pub(crate) fn set_default(sock: &TcpStream) {
    if is_loopback(sock) {
        let _ = setsockopt(sock, TcpCongestion, &OsString::from(DEFAULT));
    }
}

/// Applies `s` to a loopback connection; false if the kernel refused (no
/// BBR module, or not allowed to this user).
pub(crate) fn apply(sock: &TcpStream, s: Switch) -> bool {
    let name = match s {
        Switch::Pace => PACED,
        Switch::Unpace => DEFAULT,
    };
    setsockopt(sock, TcpCongestion, &OsString::from(name)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::getsockopt;

    #[test]
    fn a_stream_of_small_sends_paces_until_the_peer_speaks() {
        let mut p = Pacer::default();
        for _ in 1..STREAK {
            assert_eq!(p.sent(8), None);
        }
        assert_eq!(p.sent(8), Some(Switch::Pace));
        // Once: further sends change nothing.
        for _ in 0..3 * STREAK {
            assert_eq!(p.sent(100), None);
        }
        assert!(p.paced());
        assert_eq!(p.received(), Some(Switch::Unpace));
        assert!(!p.paced());
        assert_eq!(p.received(), None);
    }

    #[test]
    fn exchanges_and_large_messages_never_pace() {
        let mut p = Pacer::default();
        // A ping-pong: each send answered.
        for _ in 0..10 * STREAK {
            assert_eq!(p.sent(8), None);
            assert_eq!(p.received(), None);
        }
        // Large messages do not count, and do not break a small streak.
        for _ in 0..10 * STREAK {
            assert_eq!(p.sent(SMALL + 1), None);
        }
        for _ in 1..STREAK {
            assert_eq!(p.sent(SMALL), None);
            assert_eq!(p.sent(64 * 1024), None);
        }
        assert_eq!(p.sent(SMALL), Some(Switch::Pace));
        // Just short of a streak, the peer speaks: it starts again.
        assert_eq!(p.received(), Some(Switch::Unpace));
        for _ in 1..STREAK {
            assert_eq!(p.sent(8), None);
        }
        assert_eq!(p.received(), None);
        for _ in 1..STREAK {
            assert_eq!(p.sent(8), None);
        }
        assert_eq!(p.sent(8), Some(Switch::Pace));
    }

    #[test]
    fn a_refused_switch_leaves_the_connection_unpaced() {
        let mut p = Pacer::default();
        for _ in 1..STREAK {
            p.sent(8);
        }
        assert_eq!(p.sent(8), Some(Switch::Pace));
        p.refused();
        assert!(!p.paced());
        assert_eq!(p.received(), None, "nothing to undo");
    }

    #[test]
    fn switches_reach_the_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _b = l.accept().unwrap();
        // The kernel pads the name with NULs to its full length.
        let now = |s: &TcpStream| {
            let name = getsockopt(s, TcpCongestion).unwrap();
            name.to_string_lossy().trim_end_matches('\0').to_string()
        };
        set_default(&a);
        assert_eq!(now(&a), DEFAULT);
        // Not every kernel has BBR, and an unprivileged user may not be
        // allowed it: then the switch says so and nothing changes.
        if apply(&a, Switch::Pace) {
            assert_eq!(now(&a), PACED);
        } else {
            assert_eq!(now(&a), DEFAULT);
        }
        assert!(apply(&a, Switch::Unpace));
        assert_eq!(now(&a), DEFAULT);
    }

    #[test]
    fn loopback_sockets_start_with_the_default() {
        let now = |s: &TcpStream| {
            let name = getsockopt(s, TcpCongestion).unwrap();
            name.to_string_lossy().trim_end_matches('\0').to_string()
        };
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_default_before(&l, l.local_addr().unwrap().ip());
        let (a, _) = crate::conn::connect_nonblocking(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        // Both ends got it before the handshake, whatever the system's
        // default: the accepted end inherits its listener's.
        assert_eq!(now(&a), DEFAULT);
        assert_eq!(now(&b), DEFAULT);
    }
}
