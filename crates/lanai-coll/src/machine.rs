//! The shape every collective state machine shares, and the pieces they reuse:
//! the two-byte message header and the inbox for early arrivals.

use std::collections::{BTreeMap, VecDeque};

use crate::error::CollError;

/// A message the driver must send to communicator rank `to`: the bytes of
/// `head` (a machine's header) followed by `body`. The body is a vector of
/// its own, so a driver can pass a large one on without copying it (by
/// reference, between processes of one node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub to: u32,
    pub head: Head,
    pub body: Vec<u8>,
}

/// The longest [`Head`].
pub const HEAD_MAX: usize = 8;

/// A message's first few bytes, held inline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Head {
    bytes: [u8; HEAD_MAX],
    len: u8,
}

impl Head {
    /// `None` when `b` is longer than [`HEAD_MAX`].
    pub fn new(b: &[u8]) -> Option<Self> {
        let mut bytes = [0u8; HEAD_MAX];
        bytes.get_mut(..b.len())?.copy_from_slice(b);
        Some(Self {
            bytes,
            len: b.len() as u8,
        })
    }
}

impl std::ops::Deref for Head {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl Outgoing {
    /// `head` then `body`; a head longer than [`HEAD_MAX`] goes into the body.
    pub fn new(to: u32, head: &[u8], body: Vec<u8>) -> Self {
        match Head::new(head) {
            Some(head) => Self { to, head, body },
            None => {
                let mut whole = head.to_vec();
                whole.extend_from_slice(&body);
                Self {
                    to,
                    head: Head::default(),
                    body: whole,
                }
            }
        }
    }

    /// A message with a machine's two-byte header.
    pub(crate) fn with_header(to: u32, kind: u8, step: u8, body: Vec<u8>) -> Self {
        Self::new(to, &[kind, step], body)
    }

    /// Bytes in the whole message.
    pub fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole message in one vector (a copy of the body).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.head);
        v.extend_from_slice(&self.body);
        v
    }
}

/// A sans-IO collective: fed messages, it returns messages to send.
///
/// Constructors never fail on peers' behaviour and do all local work they can,
/// so a driver calls `poll_send` until `None` right after construction.
pub trait Collective {
    /// Feed one message this instance's peer `from` sent us. Messages between one
    /// pair arrive in FIFO order, but may arrive before this rank has reached the
    /// step that needs them; the machine buffers them.
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError>;
    /// As `handle_message`, for a message whose first bytes (`head`) came
    /// apart from the rest (`body`, passed by reference). Machines that
    /// keep message bodies override it to keep `body` without a copy.
    fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let mut whole = head.to_vec();
        whole.extend_from_slice(&body);
        self.handle_message(from, &whole)
    }
    /// Next message to send, if any. Call until `None` after construction and
    /// after every `handle_message`.
    fn poll_send(&mut self) -> Option<Outgoing>;
    /// True when this rank's part is complete and every message was polled.
    fn is_done(&self) -> bool;
    /// This rank's result once done (reduce root, bcast, allreduce); `None` otherwise.
    fn result(&self) -> Option<&[u8]> {
        None
    }
    /// Moves the result out (see `result`); later calls return `None`.
    fn take_result(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// True when, once this rank's part is done, every rank it sent to has
    /// entered the instance (barriers, allreduces): its messages are then
    /// used as they arrive, and a sender need not count them against how
    /// far it may run ahead. False, the safe answer, for roles that finish
    /// first, such as a reduce's non-root or a broadcast's root.
    fn synchronizes(&self) -> bool {
        false
    }
}

impl<T: Collective + ?Sized> Collective for Box<T> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        (**self).handle_message(from, data)
    }
    fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        (**self).handle_parts(from, head, body)
    }
    fn poll_send(&mut self) -> Option<Outgoing> {
        (**self).poll_send()
    }
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
    fn result(&self) -> Option<&[u8]> {
        (**self).result()
    }
    fn take_result(&mut self) -> Option<Vec<u8>> {
        (**self).take_result()
    }
    fn synchronizes(&self) -> bool {
        (**self).synchronizes()
    }
}

/// Message kinds; unique across machines so a misrouted message is caught.
pub(crate) mod kind {
    pub const REDUCE_CONTRIB: u8 = 1;
    pub const REDUCE_RESULT: u8 = 2;
    pub const BCAST: u8 = 3;
    pub const RD_EXCHANGE: u8 = 4;
    pub const DISSEMINATION: u8 = 5;
    pub const PAIR_NOTIFY: u8 = 6;
    pub const PAIR_EXCHANGE: u8 = 7;
    pub const PAIR_RELEASE: u8 = 8;
    pub const BINOMIAL_ARRIVE: u8 = 9;
    pub const BINOMIAL_RELEASE: u8 = 10;
    pub const GATHER: u8 = 11;
    pub const GATHERV: u8 = 12;
    pub const SCATTER: u8 = 13;
    pub const SCATTERV: u8 = 14;
    pub const ALLGATHER_RD: u8 = 15;
    pub const ALLGATHER_RING: u8 = 16;
    pub const ALLGATHERV: u8 = 17;
    pub const ALLTOALL: u8 = 18;
    pub const REDUCE_SCATTER: u8 = 19;
    pub const SCAN: u8 = 20;
    pub const EXSCAN: u8 = 21;
    pub const BCAST_SCATTER: u8 = 22;
    pub const BCAST_ALLGATHER: u8 = 23;
    pub const RABENSEIFNER_HALVE: u8 = 24;
    pub const RABENSEIFNER_DOUBLE: u8 = 25;
    pub const RING_REDUCE_SCATTER: u8 = 26;
    pub const RING_ALLGATHER: u8 = 27;
    pub const KARY_ARRIVE: u8 = 28;
    pub const KARY_RELEASE: u8 = 29;
}

pub(crate) struct Header {
    pub kind: u8,
    pub step: u8,
}

/// The header of a message that came as head and body.
pub(crate) fn decode_head(from: u32, head: &[u8]) -> Result<Header, CollError> {
    match head {
        [kind, step] => Ok(Header {
            kind: *kind,
            step: *step,
        }),
        _ => Err(CollError::MalformedMessage {
            from,
            reason: "its head is not the 2-byte header",
        }),
    }
}

pub(crate) fn decode(from: u32, data: &[u8]) -> Result<(Header, &[u8]), CollError> {
    match data {
        [kind, step, payload @ ..] => Ok((
            Header {
                kind: *kind,
                step: *step,
            },
            payload,
        )),
        _ => Err(CollError::MalformedMessage {
            from,
            reason: "shorter than the 2-byte header",
        }),
    }
}

/// Messages that arrived, keyed by (peer, kind, step); each key is used once.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    slots: BTreeMap<(u32, u8, u8), Vec<u8>>,
    /// Keys already consumed, so a late duplicate is still caught.
    used: std::collections::BTreeSet<(u32, u8, u8)>,
}

impl Inbox {
    pub fn insert(&mut self, from: u32, h: &Header, payload: &[u8]) -> Result<(), CollError> {
        self.insert_owned(from, h, payload.to_vec())
    }

    /// As `insert`, keeping `payload` itself.
    pub fn insert_owned(
        &mut self,
        from: u32,
        h: &Header,
        payload: Vec<u8>,
    ) -> Result<(), CollError> {
        let key = (from, h.kind, h.step);
        if self.slots.contains_key(&key) || self.used.contains(&key) {
            return Err(CollError::DuplicateMessage {
                from,
                kind: h.kind,
                step: h.step,
            });
        }
        self.slots.insert(key, payload);
        Ok(())
    }

    pub fn take(&mut self, from: u32, kind: u8, step: u8) -> Option<Vec<u8>> {
        let v = self.slots.remove(&(from, kind, step))?;
        self.used.insert((from, kind, step));
        Some(v)
    }

    pub fn has(&self, from: u32, kind: u8, step: u8) -> bool {
        self.slots.contains_key(&(from, kind, step))
    }
}

/// Sends produced but not yet polled.
pub(crate) type Outbox = VecDeque<Outgoing>;

pub(crate) fn check_rank(rank: u32, size: u32) -> Result<(), CollError> {
    if size == 0 {
        return Err(CollError::EmptyCommunicator);
    }
    if rank >= size {
        return Err(CollError::RankOutOfRange { rank, size });
    }
    Ok(())
}

pub(crate) fn check_root(root: u32, size: u32) -> Result<(), CollError> {
    if root >= size {
        return Err(CollError::RootOutOfRange { root, size });
    }
    Ok(())
}

pub(crate) fn check_len(from: u32, expected: usize, got: usize) -> Result<(), CollError> {
    if expected != got {
        return Err(CollError::DataLengthMismatch {
            from,
            expected,
            got,
        });
    }
    Ok(())
}

pub(crate) fn unexpected(from: u32, h: &Header) -> CollError {
    CollError::UnexpectedMessage {
        from,
        kind: h.kind,
        step: h.step,
    }
}
