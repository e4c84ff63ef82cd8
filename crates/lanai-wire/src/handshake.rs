//! Sans-IO mutual authentication of a TCP connection over the per-job secret.
//!
//! Four fixed-size messages, each starting with magic `b"LnHS"`, a version
//! byte and a type byte:
//!
//! 1. client hello: client rank (`u32` LE), client nonce (32 bytes);
//! 2. server challenge: server rank, server nonce, server MAC;
//! 3. client proof: client MAC;
//! 4. server decision: code (0 accept, else a [`RejectReason`]), decision MAC.
//!
//! Every MAC is HMAC-SHA256 keyed with the secret over a role label, the
//! version, both ranks and both nonces (and the decision code), so a MAC
//! from one role, connection or direction is useless in any other. MACs are
//! compared in constant time. Nonces are passed in, so tests are deterministic.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Handshake protocol version.
pub const HANDSHAKE_VERSION: u8 = 1;
/// First four bytes of every handshake message.
pub const HANDSHAKE_MAGIC: [u8; 4] = *b"LnHS";
/// Length of a nonce.
pub const NONCE_LEN: usize = 32;
/// Length of a MAC.
pub const MAC_LEN: usize = 32;
const PREFIX_LEN: usize = 6;
/// Length of a client hello.
pub const HELLO_LEN: usize = PREFIX_LEN + 4 + NONCE_LEN;
/// Length of a server challenge.
pub const CHALLENGE_LEN: usize = PREFIX_LEN + 4 + NONCE_LEN + MAC_LEN;
/// Length of a client proof.
pub const PROOF_LEN: usize = PREFIX_LEN + MAC_LEN;
/// Length of a server decision.
pub const DECISION_LEN: usize = PREFIX_LEN + 1 + MAC_LEN;

/// A per-connection random value.
pub type Nonce = [u8; NONCE_LEN];

const LABEL_SERVER: &[u8] = b"lanai-tcp server challenge";
const LABEL_CLIENT: &[u8] = b"lanai-tcp client proof";
const LABEL_DECISION: &[u8] = b"lanai-tcp server decision";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum MsgType {
    Hello = 1,
    Challenge = 2,
    Proof = 3,
    Decision = 4,
}

/// Why an authenticated peer's connection was turned down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// A connection between these two ranks already exists or wins the tie.
    DuplicateConnection = 1,
    /// The server is shutting down.
    ShuttingDown = 2,
    /// The client's rank is not a peer rank of this job.
    UnknownRank = 3,
}

/// The server's verdict on an authenticated connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Accept,
    Reject(RejectReason),
}

impl Decision {
    fn code(self) -> u8 {
        match self {
            Self::Accept => 0,
            Self::Reject(r) => r as u8,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => Self::Accept,
            1 => Self::Reject(RejectReason::DuplicateConnection),
            2 => Self::Reject(RejectReason::ShuttingDown),
            3 => Self::Reject(RejectReason::UnknownRank),
            _ => return None,
        })
    }
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::DuplicateConnection => "duplicate connection",
            Self::ShuttingDown => "shutting down",
            Self::UnknownRank => "unknown rank",
        })
    }
}

/// Why a handshake failed. Every variant ends the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeError {
    EmptySecret,
    WrongLength {
        message: &'static str,
        have: usize,
        need: usize,
    },
    BadMagic,
    UnsupportedVersion(u8),
    UnexpectedMessageType {
        expected: &'static str,
        found: u8,
    },
    WrongPeerRank {
        expected: u32,
        found: u32,
    },
    BadServerMac,
    BadClientProof,
    BadDecisionMac,
    UnknownDecisionCode(u8),
    CalledOutOfOrder(&'static str),
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EmptySecret => write!(f, "the job secret is empty"),
            Self::WrongLength {
                message,
                have,
                need,
            } => write!(f, "{message} has {have} bytes, expected {need}"),
            Self::BadMagic => write!(f, "not a lanai handshake (bad magic)"),
            Self::UnsupportedVersion(v) => write!(f, "unsupported handshake version {v}"),
            Self::UnexpectedMessageType { expected, found } => {
                write!(f, "expected {expected}, got message type {found}")
            }
            Self::WrongPeerRank { expected, found } => {
                write!(f, "connected to rank {found}, expected rank {expected}")
            }
            Self::BadServerMac => write!(f, "server failed to prove it knows the job secret"),
            Self::BadClientProof => write!(f, "client failed to prove it knows the job secret"),
            Self::BadDecisionMac => write!(f, "server decision is not authentic"),
            Self::UnknownDecisionCode(c) => write!(f, "unknown decision code {c}"),
            Self::CalledOutOfOrder(step) => write!(f, "handshake step {step} called out of order"),
        }
    }
}

impl std::error::Error for HandshakeError {}

fn keyed(secret: &[u8]) -> Result<HmacSha256, HandshakeError> {
    if secret.is_empty() {
        return Err(HandshakeError::EmptySecret);
    }
    HmacSha256::new_from_slice(secret).map_err(|_| HandshakeError::EmptySecret)
}

/// What both sides' MACs are bound to.
#[derive(Debug, Clone, Copy)]
struct Transcript {
    client_rank: u32,
    server_rank: u32,
    client_nonce: Nonce,
    server_nonce: Nonce,
}

impl Transcript {
    fn mac(&self, key: &HmacSha256, label: &[u8], extra: &[u8]) -> HmacSha256 {
        let mut m = key.clone();
        m.update(&(label.len() as u32).to_le_bytes());
        m.update(label);
        m.update(&[HANDSHAKE_VERSION]);
        m.update(&self.client_rank.to_le_bytes());
        m.update(&self.server_rank.to_le_bytes());
        m.update(&self.client_nonce);
        m.update(&self.server_nonce);
        m.update(extra);
        m
    }

    fn tag(&self, key: &HmacSha256, label: &[u8], extra: &[u8]) -> [u8; MAC_LEN] {
        self.mac(key, label, extra).finalize().into_bytes().into()
    }

    fn verify(&self, key: &HmacSha256, label: &[u8], extra: &[u8], tag: &[u8]) -> bool {
        self.mac(key, label, extra).verify_slice(tag).is_ok()
    }
}

fn prefix(ty: MsgType) -> [u8; PREFIX_LEN] {
    let m = HANDSHAKE_MAGIC;
    [m[0], m[1], m[2], m[3], HANDSHAKE_VERSION, ty as u8]
}

/// Checks length, magic, version and type; returns the body.
fn body(msg: &[u8], ty: MsgType, need: usize) -> Result<&[u8], HandshakeError> {
    let name = match ty {
        MsgType::Hello => "client hello",
        MsgType::Challenge => "server challenge",
        MsgType::Proof => "client proof",
        MsgType::Decision => "server decision",
    };
    if msg.len() != need {
        return Err(HandshakeError::WrongLength {
            message: name,
            have: msg.len(),
            need,
        });
    }
    if msg[..4] != HANDSHAKE_MAGIC {
        return Err(HandshakeError::BadMagic);
    }
    if msg[4] != HANDSHAKE_VERSION {
        return Err(HandshakeError::UnsupportedVersion(msg[4]));
    }
    if msg[5] != ty as u8 {
        return Err(HandshakeError::UnexpectedMessageType {
            expected: name,
            found: msg[5],
        });
    }
    Ok(&msg[PREFIX_LEN..])
}

fn read_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn read_nonce(b: &[u8]) -> Nonce {
    let mut n = [0u8; NONCE_LEN];
    n.copy_from_slice(&b[..NONCE_LEN]);
    n
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientStage {
    SentHello,
    SentProof,
    Done,
}

/// The connecting side.
pub struct ClientHandshake {
    key: HmacSha256,
    transcript: Transcript,
    stage: ClientStage,
}

impl std::fmt::Debug for ClientHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandshake")
            .field("client_rank", &self.transcript.client_rank)
            .field("server_rank", &self.transcript.server_rank)
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl ClientHandshake {
    /// Starts a handshake from `my_rank` to the rank we mean to reach;
    /// returns the hello to send.
    pub fn new(
        secret: &[u8],
        my_rank: u32,
        server_rank: u32,
        nonce: Nonce,
    ) -> Result<(Self, [u8; HELLO_LEN]), HandshakeError> {
        let key = keyed(secret)?;
        let mut hello = [0u8; HELLO_LEN];
        hello[..PREFIX_LEN].copy_from_slice(&prefix(MsgType::Hello));
        hello[PREFIX_LEN..PREFIX_LEN + 4].copy_from_slice(&my_rank.to_le_bytes());
        hello[PREFIX_LEN + 4..].copy_from_slice(&nonce);
        let transcript = Transcript {
            client_rank: my_rank,
            server_rank,
            client_nonce: nonce,
            server_nonce: [0; NONCE_LEN],
        };
        let hs = Self {
            key,
            transcript,
            stage: ClientStage::SentHello,
        };
        Ok((hs, hello))
    }

    /// Checks the server's challenge; returns the proof to send.
    pub fn handle_challenge(&mut self, msg: &[u8]) -> Result<[u8; PROOF_LEN], HandshakeError> {
        if self.stage != ClientStage::SentHello {
            return Err(HandshakeError::CalledOutOfOrder("handle_challenge"));
        }
        let b = body(msg, MsgType::Challenge, CHALLENGE_LEN)?;
        let server_rank = read_u32(b);
        let mut t = self.transcript;
        t.server_rank = server_rank;
        t.server_nonce = read_nonce(&b[4..]);
        if !t.verify(&self.key, LABEL_SERVER, &[], &b[4 + NONCE_LEN..]) {
            return Err(HandshakeError::BadServerMac);
        }
        if server_rank != self.transcript.server_rank {
            return Err(HandshakeError::WrongPeerRank {
                expected: self.transcript.server_rank,
                found: server_rank,
            });
        }
        self.transcript = t;
        self.stage = ClientStage::SentProof;
        let mut proof = [0u8; PROOF_LEN];
        proof[..PREFIX_LEN].copy_from_slice(&prefix(MsgType::Proof));
        proof[PREFIX_LEN..].copy_from_slice(&t.tag(&self.key, LABEL_CLIENT, &[]));
        Ok(proof)
    }

    /// Checks the server's decision.
    pub fn handle_decision(&mut self, msg: &[u8]) -> Result<Decision, HandshakeError> {
        if self.stage != ClientStage::SentProof {
            return Err(HandshakeError::CalledOutOfOrder("handle_decision"));
        }
        let b = body(msg, MsgType::Decision, DECISION_LEN)?;
        let code = b[0];
        if !self
            .transcript
            .verify(&self.key, LABEL_DECISION, &[code], &b[1..])
        {
            return Err(HandshakeError::BadDecisionMac);
        }
        let d = Decision::from_code(code).ok_or(HandshakeError::UnknownDecisionCode(code))?;
        self.stage = ClientStage::Done;
        Ok(d)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerStage {
    AwaitHello,
    SentChallenge,
    Authenticated,
    Done,
}

/// The accepting side.
pub struct ServerHandshake {
    key: HmacSha256,
    transcript: Transcript,
    stage: ServerStage,
}

impl std::fmt::Debug for ServerHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandshake")
            .field("server_rank", &self.transcript.server_rank)
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl ServerHandshake {
    /// Prepares to authenticate one incoming connection.
    pub fn new(secret: &[u8], my_rank: u32, nonce: Nonce) -> Result<Self, HandshakeError> {
        Ok(Self {
            key: keyed(secret)?,
            transcript: Transcript {
                client_rank: 0,
                server_rank: my_rank,
                client_nonce: [0; NONCE_LEN],
                server_nonce: nonce,
            },
            stage: ServerStage::AwaitHello,
        })
    }

    /// Reads the hello; returns the rank the client claims (not yet
    /// proven) and the challenge to send.
    pub fn handle_hello(
        &mut self,
        msg: &[u8],
    ) -> Result<(u32, [u8; CHALLENGE_LEN]), HandshakeError> {
        if self.stage != ServerStage::AwaitHello {
            return Err(HandshakeError::CalledOutOfOrder("handle_hello"));
        }
        let b = body(msg, MsgType::Hello, HELLO_LEN)?;
        self.transcript.client_rank = read_u32(b);
        self.transcript.client_nonce = read_nonce(&b[4..]);
        let t = self.transcript;
        let mut c = [0u8; CHALLENGE_LEN];
        c[..PREFIX_LEN].copy_from_slice(&prefix(MsgType::Challenge));
        c[PREFIX_LEN..PREFIX_LEN + 4].copy_from_slice(&t.server_rank.to_le_bytes());
        c[PREFIX_LEN + 4..PREFIX_LEN + 4 + NONCE_LEN].copy_from_slice(&t.server_nonce);
        c[PREFIX_LEN + 4 + NONCE_LEN..].copy_from_slice(&t.tag(&self.key, LABEL_SERVER, &[]));
        self.stage = ServerStage::SentChallenge;
        Ok((t.client_rank, c))
    }

    /// Checks the client's proof; returns the now authenticated client rank.
    pub fn handle_proof(&mut self, msg: &[u8]) -> Result<u32, HandshakeError> {
        if self.stage != ServerStage::SentChallenge {
            return Err(HandshakeError::CalledOutOfOrder("handle_proof"));
        }
        let b = body(msg, MsgType::Proof, PROOF_LEN)?;
        if !self.transcript.verify(&self.key, LABEL_CLIENT, &[], b) {
            return Err(HandshakeError::BadClientProof);
        }
        self.stage = ServerStage::Authenticated;
        Ok(self.transcript.client_rank)
    }

    /// Produces the decision message for an authenticated client.
    pub fn decide(&mut self, d: Decision) -> Result<[u8; DECISION_LEN], HandshakeError> {
        if self.stage != ServerStage::Authenticated {
            return Err(HandshakeError::CalledOutOfOrder("decide"));
        }
        self.stage = ServerStage::Done;
        let code = d.code();
        let mut m = [0u8; DECISION_LEN];
        m[..PREFIX_LEN].copy_from_slice(&prefix(MsgType::Decision));
        m[PREFIX_LEN] = code;
        m[PREFIX_LEN + 1..].copy_from_slice(&self.transcript.tag(
            &self.key,
            LABEL_DECISION,
            &[code],
        ));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"job secret 0123456789";

    fn nonce(seed: u8) -> Nonce {
        let mut n = [0u8; NONCE_LEN];
        for (i, b) in n.iter_mut().enumerate() {
            *b = seed.wrapping_mul(31).wrapping_add(i as u8);
        }
        n
    }

    /// Runs a whole handshake; returns what each side concluded.
    fn run(
        client_secret: &[u8],
        server_secret: &[u8],
        decision: Decision,
    ) -> (
        Result<Decision, HandshakeError>,
        Result<u32, HandshakeError>,
    ) {
        let (mut c, hello) = ClientHandshake::new(client_secret, 2, 5, nonce(1)).unwrap();
        let mut s = ServerHandshake::new(server_secret, 5, nonce(2)).unwrap();
        let (claimed, challenge) = s.handle_hello(&hello).unwrap();
        assert_eq!(claimed, 2);
        let proof = match c.handle_challenge(&challenge) {
            Ok(p) => p,
            Err(e) => return (Err(e), Err(HandshakeError::CalledOutOfOrder("none"))),
        };
        let rank = s.handle_proof(&proof);
        if rank.is_err() {
            return (Err(HandshakeError::CalledOutOfOrder("none")), rank);
        }
        let d = s.decide(decision).unwrap();
        (c.handle_decision(&d), rank)
    }

    #[test]
    fn success_accept_and_reject() {
        assert_eq!(
            run(SECRET, SECRET, Decision::Accept),
            (Ok(Decision::Accept), Ok(2))
        );
        let dup = Decision::Reject(RejectReason::DuplicateConnection);
        assert_eq!(run(SECRET, SECRET, dup), (Ok(dup), Ok(2)));
    }

    #[test]
    fn client_with_wrong_secret_rejects_server() {
        let (c, _) = run(b"other", SECRET, Decision::Accept);
        assert_eq!(c, Err(HandshakeError::BadServerMac));
        let (c, _) = run(SECRET, b"other", Decision::Accept);
        assert_eq!(c, Err(HandshakeError::BadServerMac));
    }

    #[test]
    fn server_rejects_proof_made_with_wrong_secret() {
        // A stranger that ignores the challenge check and answers with its own key.
        let (_, hello) = ClientHandshake::new(b"stranger", 2, 5, nonce(1)).unwrap();
        let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        let (_, challenge) = s.handle_hello(&hello).unwrap();
        let b = &challenge[PREFIX_LEN..];
        let t = Transcript {
            client_rank: 2,
            server_rank: 5,
            client_nonce: nonce(1),
            server_nonce: read_nonce(&b[4..]),
        };
        let mut proof = prefix(MsgType::Proof).to_vec();
        proof.extend_from_slice(&t.tag(&keyed(b"stranger").unwrap(), LABEL_CLIENT, &[]));
        assert_eq!(s.handle_proof(&proof), Err(HandshakeError::BadClientProof));
        assert_eq!(
            s.decide(Decision::Accept),
            Err(HandshakeError::CalledOutOfOrder("decide"))
        );
    }

    #[test]
    fn replayed_proof_fails_under_a_new_server_nonce() {
        let (mut c, hello) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
        let mut s1 = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        let (_, ch1) = s1.handle_hello(&hello).unwrap();
        let proof = c.handle_challenge(&ch1).unwrap();
        assert_eq!(s1.handle_proof(&proof), Ok(2));
        // Same hello and proof replayed against a fresh server nonce.
        let mut s2 = ServerHandshake::new(SECRET, 5, nonce(3)).unwrap();
        s2.handle_hello(&hello).unwrap();
        assert_eq!(s2.handle_proof(&proof), Err(HandshakeError::BadClientProof));
    }

    #[test]
    fn replayed_challenge_fails_under_a_new_client_nonce() {
        let (_, hello1) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
        let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        let (_, ch1) = s.handle_hello(&hello1).unwrap();
        let (mut c2, _) = ClientHandshake::new(SECRET, 2, 5, nonce(9)).unwrap();
        assert_eq!(c2.handle_challenge(&ch1), Err(HandshakeError::BadServerMac));
    }

    #[test]
    fn server_proof_is_not_a_client_proof() {
        // Reflection: the server's own MAC sent back as a proof.
        let (_, hello) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
        let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        let (_, ch) = s.handle_hello(&hello).unwrap();
        let mut proof = prefix(MsgType::Proof).to_vec();
        proof.extend_from_slice(&ch[CHALLENGE_LEN - MAC_LEN..]);
        assert_eq!(s.handle_proof(&proof), Err(HandshakeError::BadClientProof));
    }

    #[test]
    fn wrong_server_rank_is_detected() {
        let (mut c, hello) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
        let mut s = ServerHandshake::new(SECRET, 6, nonce(2)).unwrap();
        let (_, ch) = s.handle_hello(&hello).unwrap();
        assert_eq!(
            c.handle_challenge(&ch),
            Err(HandshakeError::WrongPeerRank {
                expected: 5,
                found: 6
            })
        );
    }

    #[test]
    fn any_tampered_byte_fails_the_handshake() {
        for msg in 0..4 {
            let len = [HELLO_LEN, CHALLENGE_LEN, PROOF_LEN, DECISION_LEN][msg];
            for at in 0..len {
                let (mut c, mut hello) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
                let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
                let flip = |m: &mut [u8], which| {
                    if which == msg {
                        m[at] ^= 0x40;
                    }
                };
                flip(&mut hello, 0);
                let outcome = (|| {
                    let (_, mut ch) = s.handle_hello(&hello)?;
                    flip(&mut ch, 1);
                    let mut proof = c.handle_challenge(&ch)?;
                    flip(&mut proof, 2);
                    s.handle_proof(&proof)?;
                    let mut d = s.decide(Decision::Accept)?;
                    flip(&mut d, 3);
                    c.handle_decision(&d)
                })();
                assert!(
                    outcome.is_err(),
                    "message {msg} byte {at} tampered yet accepted"
                );
            }
        }
    }

    #[test]
    fn truncated_and_padded_messages_are_rejected() {
        let (mut c, hello) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
        let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        for n in 0..HELLO_LEN {
            assert!(matches!(
                s.handle_hello(&hello[..n]),
                Err(HandshakeError::WrongLength { have, .. }) if have == n
            ));
        }
        let (_, ch) = s.handle_hello(&hello).unwrap();
        for n in 0..CHALLENGE_LEN {
            assert!(c.handle_challenge(&ch[..n]).is_err());
        }
        let mut long = ch.to_vec();
        long.push(0);
        assert!(c.handle_challenge(&long).is_err());
        let proof = c.handle_challenge(&ch).unwrap();
        for n in 0..PROOF_LEN {
            assert!(s.handle_proof(&proof[..n]).is_err());
        }
        assert_eq!(s.handle_proof(&proof), Ok(2));
    }

    #[test]
    fn garbage_and_out_of_order_calls_are_errors() {
        let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        assert_eq!(
            s.handle_hello(&[0u8; HELLO_LEN]),
            Err(HandshakeError::BadMagic)
        );
        let mut s = ServerHandshake::new(SECRET, 5, nonce(2)).unwrap();
        assert_eq!(
            s.handle_proof(&[0u8; PROOF_LEN]),
            Err(HandshakeError::CalledOutOfOrder("handle_proof"))
        );
        let (mut c, hello) = ClientHandshake::new(SECRET, 2, 5, nonce(1)).unwrap();
        assert!(matches!(
            c.handle_challenge(&hello),
            Err(HandshakeError::WrongLength { .. })
        ));
        let mut wrong_type = hello;
        wrong_type[5] = 2;
        assert!(matches!(
            s.handle_hello(&wrong_type),
            Err(HandshakeError::UnexpectedMessageType { found: 2, .. })
        ));
        let mut wrong_version = hello;
        wrong_version[4] = 9;
        assert_eq!(
            s.handle_hello(&wrong_version),
            Err(HandshakeError::UnsupportedVersion(9))
        );
        assert_eq!(
            ClientHandshake::new(b"", 0, 1, nonce(0)).map(|_| ()),
            Err(HandshakeError::EmptySecret)
        );
    }
}
