//! Waking a sleeping local rank: a datagram to its abstract Unix socket.
//!
//! A rank that blocks waits in epoll (or poll) on this socket together with
//! its TCP sockets, so one wait covers every transport. Senders ring only
//! when the receiver's `sleeping` flag is set, so the hot path never makes
//! a system call.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

#[derive(Debug)]
pub struct Doorbell {
    sock: UnixDatagram,
    prefix: String,
}

impl Doorbell {
    /// Binds `\0<prefix><rank>`; peers ring it by the same name.
    pub fn bind(prefix: &str, rank: u32) -> std::io::Result<Self> {
        let addr = SocketAddr::from_abstract_name(format!("{prefix}{rank}").as_bytes())?;
        let sock = UnixDatagram::bind_addr(&addr)?;
        sock.set_nonblocking(true)?;
        Ok(Self {
            sock,
            prefix: prefix.to_string(),
        })
    }

    /// Wakes `rank`. A full socket buffer means it is being woken already.
    pub fn ring(&self, rank: u32) {
        self.ring_at(&self.prefix, rank);
    }

    /// Wakes whoever bound `\0<prefix><id>` (ranks ring their node's
    /// offload engine this way, and it rings them back).
    pub fn ring_at(&self, prefix: &str, id: u32) {
        if let Ok(addr) = SocketAddr::from_abstract_name(format!("{prefix}{id}").as_bytes()) {
            let _ = self.sock.send_to_addr(&[1], &addr);
        }
    }

    /// Empties the socket after a wake-up.
    pub fn drain(&self) {
        let mut b = [0u8; 64];
        while self.sock.recv(&mut b).is_ok() {}
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.sock.as_fd()
    }
}
