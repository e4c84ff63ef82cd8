//! One TCP connection: its socket, handshake phase, decoder and output queue.

use lanai_wire::frame::Decoder;
use lanai_wire::handshake::{
    ClientHandshake, ServerHandshake, CHALLENGE_LEN, DECISION_LEN, HELLO_LEN, PROOF_LEN,
};
use nix::sys::socket::{self, MsgFlags, SockFlag, SockType, SockaddrStorage};
use std::io::{self, IoSlice};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// Where a connection is in its life.
pub(crate) enum Phase {
    /// Outgoing: the non-blocking connect has not completed.
    Connecting(ClientHandshake),
    /// Outgoing: hello sent, waiting for the server's challenge.
    AwaitChallenge(ClientHandshake),
    /// Outgoing: proof sent, waiting for the server's decision.
    AwaitDecision(ClientHandshake),
    /// Incoming: waiting for the client's hello.
    AwaitHello(ServerHandshake),
    /// Incoming: challenge sent, waiting for the client's proof.
    AwaitProof(ServerHandshake),
    /// Authenticated and accepted: frames flow.
    Up,
    /// Placeholder while a phase is being replaced.
    Moving,
}

impl Phase {
    /// Bytes of the handshake message this phase waits for (0 if none).
    pub(crate) fn handshake_need(&self) -> usize {
        match self {
            Self::AwaitChallenge(_) => CHALLENGE_LEN,
            Self::AwaitDecision(_) => DECISION_LEN,
            Self::AwaitHello(_) => HELLO_LEN,
            Self::AwaitProof(_) => PROOF_LEN,
            Self::Connecting(_) | Self::Up | Self::Moving => 0,
        }
    }
}

/// Room for the longest handshake message.
pub(crate) const HANDSHAKE_BUF: usize = if CHALLENGE_LEN > HELLO_LEN {
    CHALLENGE_LEN
} else {
    HELLO_LEN
};

pub(crate) struct Conn {
    pub sock: TcpStream,
    pub addr: SocketAddr,
    pub outgoing: bool,
    /// Outgoing: the rank we dialled. Incoming: the claimed, then proven, rank.
    pub rank: Option<u32>,
    pub phase: Phase,
    pub hs_buf: [u8; HANDSHAKE_BUF],
    pub hs_have: usize,
    pub dec: Option<Decoder>,
    /// Bytes not yet written are `out[out_pos..]`.
    pub out: Vec<u8>,
    pub out_pos: usize,
    /// The last write hit EAGAIN; wait for EPOLLOUT before trying again.
    pub write_blocked: bool,
    /// Set while handshaking.
    pub deadline: Option<Instant>,
    /// Small sends since the peer last spoke (see `congestion`).
    pub pacer: crate::congestion::Pacer,
}

impl Conn {
    pub(crate) fn new(sock: TcpStream, addr: SocketAddr, outgoing: bool, phase: Phase) -> Self {
        Self {
            sock,
            addr,
            outgoing,
            rank: None,
            phase,
            hs_buf: [0; HANDSHAKE_BUF],
            hs_have: 0,
            dec: None,
            out: Vec::new(),
            out_pos: 0,
            write_blocked: false,
            deadline: None,
            pacer: Default::default(),
        }
    }

    pub(crate) fn pending_out(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Writes queued output until done or the socket is full.
    pub(crate) fn flush_out(&mut self) -> io::Result<()> {
        while self.out_pos < self.out.len() {
            match send_slices(&self.sock, &[IoSlice::new(&self.out[self.out_pos..])]) {
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.write_blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        } else if self.out_pos > (1 << 20) && self.out_pos * 2 > self.out.len() {
            // Keep the queue from growing without bound behind a slow reader.
            self.out.drain(..self.out_pos);
            self.out_pos = 0;
        }
        Ok(())
    }
}

/// Gather-writes with `MSG_NOSIGNAL`: a C host program may not ignore
/// SIGPIPE, and a vanished peer must be an error, not a signal.
pub(crate) fn send_slices(sock: &TcpStream, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    socket::sendmsg::<SockaddrStorage>(sock.as_raw_fd(), slices, &[], MsgFlags::MSG_NOSIGNAL, None)
        .map_err(io::Error::from)
}

/// Starts a non-blocking connect; true in the pair if it already completed.
pub(crate) fn connect_nonblocking(addr: SocketAddr) -> io::Result<(TcpStream, bool)> {
    let family = match addr {
        SocketAddr::V4(_) => socket::AddressFamily::Inet,
        SocketAddr::V6(_) => socket::AddressFamily::Inet6,
    };
    let fd: OwnedFd = socket::socket(
        family,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    crate::congestion::set_default_before(&fd, addr.ip());
    let done = match socket::connect(fd.as_raw_fd(), &SockaddrStorage::from(addr)) {
        Ok(()) => true,
        Err(nix::errno::Errno::EINPROGRESS) => false,
        Err(e) => return Err(e.into()),
    };
    Ok((TcpStream::from(fd), done))
}

/// The outcome of a non-blocking connect, once the socket reports writable.
pub(crate) fn connect_result(sock: &TcpStream) -> io::Result<()> {
    match sock.take_error()? {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
