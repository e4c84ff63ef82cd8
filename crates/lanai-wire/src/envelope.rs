//! The message envelope: what every transport carries in front of a payload.
//!
//! Fixed 32 bytes, little-endian, so that shared memory and TCP carry the
//! same thing and the engine matches on one type.

/// What a message is for. The engine's protocols are built from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Point-to-point data sent eagerly; `len` bytes of payload follow.
    Eager = 1,
    /// Eager data whose sender waits for [`Kind::SyncAck`] (`MPI_Ssend`).
    EagerSync = 2,
    /// Acknowledges a synchronous send was matched; `cookie` names it.
    SyncAck = 3,
    /// Rendezvous request-to-send: `len` is the full length; the payload
    /// carries transport-specific data (e.g. an address for single copy).
    RndvRts = 4,
    /// Rendezvous clear-to-send: the receiver matched `cookie`.
    RndvCts = 5,
    /// Rendezvous data or completion (`cookie` names the transfer).
    RndvData = 6,
    /// A collective's internal message; `tag` is the instance sequence number.
    Coll = 7,
    /// About a collective instance rather than part of it: the sender's
    /// call, shown to its members or found to differ from theirs.
    CollNotice = 8,
}

impl Kind {
    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Eager,
            2 => Self::EagerSync,
            3 => Self::SyncAck,
            4 => Self::RndvRts,
            5 => Self::RndvCts,
            6 => Self::RndvData,
            7 => Self::Coll,
            8 => Self::CollNotice,
            _ => return None,
        })
    }
}

/// The envelope. `src` is the sender's rank in the communicator of `ctx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub kind: Kind,
    pub flags: u8,
    pub ctx: u32,
    pub src: u32,
    pub tag: i32,
    /// Full message length in bytes (for rendezvous, the length still to come).
    pub len: u64,
    /// Sender's request id, echoed by acknowledgements.
    pub cookie: u64,
    /// On a collective's message, what the sender's call was (its
    /// function, root and size, folded small), so a receiver whose call
    /// differs fails at once instead of waiting for messages that will
    /// never come; 0 where there is nothing to check.
    pub sig: u16,
}

/// Encoded size of an [`Envelope`].
pub const ENVELOPE_LEN: usize = 32;

/// Why an envelope could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeError {
    Truncated { have: usize },
    UnknownKind(u8),
}

impl std::fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { have } => {
                write!(f, "envelope truncated: {have} of {ENVELOPE_LEN} bytes")
            }
            Self::UnknownKind(k) => write!(f, "unknown message kind {k}"),
        }
    }
}

impl std::error::Error for EnvelopeError {}

impl Envelope {
    /// Encodes into exactly [`ENVELOPE_LEN`] bytes.
    #[inline]
    pub fn encode(&self) -> [u8; ENVELOPE_LEN] {
        let mut b = [0u8; ENVELOPE_LEN];
        b[0] = self.kind as u8;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.sig.to_le_bytes());
        b[4..8].copy_from_slice(&self.ctx.to_le_bytes());
        b[8..12].copy_from_slice(&self.src.to_le_bytes());
        b[12..16].copy_from_slice(&self.tag.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b[24..32].copy_from_slice(&self.cookie.to_le_bytes());
        b
    }

    /// Decodes the first [`ENVELOPE_LEN`] bytes of `b`.
    #[inline]
    pub fn decode(b: &[u8]) -> Result<Self, EnvelopeError> {
        let b: &[u8; ENVELOPE_LEN] = b
            .get(..ENVELOPE_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(EnvelopeError::Truncated { have: b.len() })?;
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let dword = |i: usize| u64::from(word(i)) | (u64::from(word(i + 4)) << 32);
        Ok(Self {
            kind: Kind::from_u8(b[0]).ok_or(EnvelopeError::UnknownKind(b[0]))?,
            flags: b[1],
            ctx: word(4),
            src: word(8),
            tag: word(12) as i32,
            len: dword(16),
            cookie: dword(24),
            sig: u16::from_le_bytes([b[2], b[3]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(kind in 1u8..=8, flags: u8, ctx: u32, src: u32, tag: i32, len: u64, cookie: u64, sig: u16) {
            let e = Envelope { kind: Kind::from_u8(kind).unwrap(), flags, ctx, src, tag, len, cookie, sig };
            prop_assert_eq!(Envelope::decode(&e.encode()), Ok(e));
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Envelope::decode(&bytes);
        }
    }

    #[test]
    fn rejects_short_and_unknown() {
        assert_eq!(
            Envelope::decode(&[1; 5]),
            Err(EnvelopeError::Truncated { have: 5 })
        );
        assert_eq!(
            Envelope::decode(&[0; 32]),
            Err(EnvelopeError::UnknownKind(0))
        );
    }
}
