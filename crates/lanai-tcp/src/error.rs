//! The transport's error enum.

use crate::transport::Role;
use lanai_wire::frame::FrameError;

/// Everything the TCP transport can fail with.
#[derive(Debug)]
pub enum TcpError {
    /// A system call on the listener, epoll set or a socket failed.
    Io {
        op: &'static str,
        source: std::io::Error,
    },
    /// The job secret is empty, so nothing could be authenticated.
    EmptySecret,
    /// `my_rank` is not below `world_size`.
    BadConfigRank { my_rank: u32, world_size: u32 },
    /// A rank outside the job was named.
    NoSuchRank { rank: u32, world_size: u32 },
    /// Messages to oneself do not go over TCP.
    SendToSelf,
    /// A connection to `rank` is needed but its address was never set.
    NoPeerAddress { rank: u32 },
    /// The payload exceeds the configured maximum message size.
    MessageTooLarge { len: u64, max: u64 },
    /// An established connection to `rank` broke without a goodbye.
    PeerLost { rank: u32, cause: String },
    /// `rank` said goodbye (or we shut down); nothing more can be sent to it.
    PeerClosed { rank: u32 },
    /// `rank` sent a stream that does not decode.
    PeerProtocol { rank: u32, error: FrameError },
    /// Every attempt to connect to `rank` failed.
    ConnectFailed {
        rank: u32,
        attempts: u32,
        cause: String,
    },
    /// `flush` or `shutdown` ran out of time with data still queued.
    FlushTimedOut { pending_bytes: usize },
}

impl std::fmt::Display for TcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write(f, Role::Rank)
    }
}

/// A [`TcpError`] that names the transport's ends in their [`Role`].
#[derive(Debug)]
pub struct Named<'a> {
    error: &'a TcpError,
    role: Role,
}

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.write(f, self.role)
    }
}

impl std::error::Error for TcpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::PeerProtocol { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl TcpError {
    /// The error with the ends named as `role` numbers them: an offload
    /// engine's peers are the engines of other nodes, not ranks.
    pub fn naming(&self, role: Role) -> Named<'_> {
        Named { error: self, role }
    }

    fn write(&self, f: &mut std::fmt::Formatter<'_>, role: Role) -> std::fmt::Result {
        let name = |n: u32| role.name(n);
        match self {
            Self::Io { op, source } => write!(f, "tcp {op} failed: {source}"),
            Self::EmptySecret => write!(f, "tcp transport needs a non-empty job secret"),
            Self::BadConfigRank {
                my_rank,
                world_size,
            } => write!(f, "{} is outside a world of {world_size}", name(*my_rank)),
            Self::NoSuchRank { rank, world_size } => {
                write!(f, "{} is outside a world of {world_size}", name(*rank))
            }
            Self::SendToSelf => write!(f, "tcp transport cannot send to itself"),
            Self::NoPeerAddress { rank } => {
                write!(f, "no TCP address known for {}", name(*rank))
            }
            Self::MessageTooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the TCP maximum of {max}")
            }
            Self::PeerLost { rank, cause } => {
                write!(f, "lost TCP connection to {}: {cause}", name(*rank))
            }
            Self::PeerClosed { rank } => {
                write!(f, "{} closed its TCP connection", name(*rank))
            }
            Self::PeerProtocol { rank, error } => {
                write!(f, "{} sent a malformed TCP stream: {error}", name(*rank))
            }
            Self::ConnectFailed {
                rank,
                attempts,
                cause,
            } => write!(
                f,
                "could not connect to {} after {attempts} attempts: {cause}",
                name(*rank)
            ),
            Self::FlushTimedOut { pending_bytes } => write!(
                f,
                "timed out flushing TCP output with {pending_bytes} bytes still queued"
            ),
        }
    }

    pub(crate) fn io(op: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Io { op, source }
    }

    pub(crate) fn errno(op: &'static str) -> impl FnOnce(nix::errno::Errno) -> Self {
        move |e| Self::Io {
            op,
            source: std::io::Error::from(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_peers_as_their_role_numbers_them() {
        let e = TcpError::PeerClosed { rank: 1 };
        assert_eq!(e.to_string(), "rank 1 closed its TCP connection");
        assert_eq!(
            e.naming(Role::Engine).to_string(),
            "the engine of node 1 closed its TCP connection"
        );
        let e = TcpError::ConnectFailed {
            rank: 2,
            attempts: 3,
            cause: "refused".into(),
        };
        assert_eq!(
            e.naming(Role::Engine).to_string(),
            "could not connect to the engine of node 2 after 3 attempts: refused"
        );
    }
}
