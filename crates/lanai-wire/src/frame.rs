//! Framing of an authenticated TCP byte stream.
//!
//! Every frame starts with an 8-byte header: magic `b"Ln"`, a version byte,
//! a type byte and a little-endian `u32` body length that must not exceed
//! the configured maximum. A message is one `Start` frame (envelope, the
//! total payload length as `u64`, then the first payload chunk) followed by
//! as many `Continue` frames as the rest of the payload needs. `Bye` (empty
//! body) says the sender is shutting down on purpose.
//!
//! [`Decoder`] is fed arbitrary chunks of the stream and yields complete
//! messages. It never trusts a declared length: frame bodies are bounded by
//! the maximum frame size, messages by the maximum message size, and memory
//! for a long message grows with the bytes that actually arrive.
//!
//! A long message may instead *land*: the decoder offers it, and once the
//! caller accepts, hands its payload out in pieces and tells the caller
//! where the next bytes of the stream belong, so they can be read straight
//! into their destination (a posted receive buffer) with no copy between.

use crate::envelope::{Envelope, EnvelopeError, ENVELOPE_LEN};
use std::ops::Range;

/// First two bytes of every frame.
pub const FRAME_MAGIC: [u8; 2] = *b"Ln";
/// The frame format version this code speaks.
pub const FRAME_VERSION: u8 = 1;
/// Size of a frame header.
pub const FRAME_HEADER_LEN: usize = 8;
/// Body bytes of a `Start` frame before the payload: envelope + total length.
pub const START_PREFIX_LEN: usize = ENVELOPE_LEN + 8;
/// Header plus prefix of a `Start` frame.
pub const START_HEADER_LEN: usize = FRAME_HEADER_LEN + START_PREFIX_LEN;
/// Default bound on a frame body.
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;
/// Smallest allowed bound on a frame body (a start frame must carry payload).
pub const MIN_MAX_FRAME: usize = START_PREFIX_LEN + 24;
/// Largest allowed bound on a frame body (the length field is a `u32`).
pub const MAX_MAX_FRAME: usize = u32::MAX as usize;
/// Default bound on one message's payload.
pub const DEFAULT_MAX_MESSAGE: u64 = 1 << 40;

/// Initial read buffer size; it grows to hold the largest frame seen.
const INITIAL_READ_BUF: usize = 64 * 1024;
/// Most memory reserved up front for a long message on the word of its header.
const PREALLOC_CAP: usize = 64 << 20;

/// Frame types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameType {
    /// Envelope, total payload length, first payload chunk.
    Start = 1,
    /// More payload of the message in progress.
    Continue = 2,
    /// The sender is closing the connection on purpose.
    Bye = 3,
}

impl FrameType {
    /// Decodes a type byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Start),
            2 => Some(Self::Continue),
            3 => Some(Self::Bye),
            _ => None,
        }
    }
}

/// Why a stream could not be decoded. Every variant is fatal for the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    BadMagic { found: [u8; 2] },
    UnsupportedVersion(u8),
    UnknownFrameType(u8),
    OversizedFrame { len: usize, max: usize },
    StartFrameTooShort { len: usize },
    BadEnvelope(EnvelopeError),
    MessageTooLarge { len: u64, max: u64 },
    ChunkExceedsMessage { chunk: usize, total: u64 },
    ContinueWithoutStart,
    ExpectedContinue { found: FrameType },
    EmptyContinue,
    ContinueOverrun { chunk: usize, remaining: usize },
    ByeWithBody { len: usize },
    FrameAfterBye,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadMagic { found } => write!(f, "bad frame magic {found:02x?}"),
            Self::UnsupportedVersion(v) => write!(f, "unsupported frame version {v}"),
            Self::UnknownFrameType(t) => write!(f, "unknown frame type {t}"),
            Self::OversizedFrame { len, max } => {
                write!(f, "frame of {len} bytes exceeds the maximum of {max}")
            }
            Self::StartFrameTooShort { len } => write!(
                f,
                "start frame body of {len} bytes is shorter than its {START_PREFIX_LEN}-byte prefix"
            ),
            Self::BadEnvelope(e) => write!(f, "bad envelope in start frame: {e}"),
            Self::MessageTooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the maximum of {max}")
            }
            Self::ChunkExceedsMessage { chunk, total } => write!(
                f,
                "start frame carries {chunk} payload bytes of a {total}-byte message"
            ),
            Self::ContinueWithoutStart => write!(f, "continue frame outside a message"),
            Self::ExpectedContinue { found } => {
                write!(f, "expected a continue frame, found {found:?}")
            }
            Self::EmptyContinue => write!(f, "empty continue frame"),
            Self::ContinueOverrun { chunk, remaining } => write!(
                f,
                "continue frame of {chunk} bytes overruns the {remaining} bytes left in the message"
            ),
            Self::ByeWithBody { len } => write!(f, "bye frame with a {len}-byte body"),
            Self::FrameAfterBye => write!(f, "frame after bye"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Clamps a configured maximum frame body size into the supported range.
pub fn clamp_max_frame(max_frame: usize) -> usize {
    max_frame.clamp(MIN_MAX_FRAME, MAX_MAX_FRAME)
}

fn header(ty: FrameType, body_len: usize) -> [u8; FRAME_HEADER_LEN] {
    let mut h = [0u8; FRAME_HEADER_LEN];
    h[..2].copy_from_slice(&FRAME_MAGIC);
    h[2] = FRAME_VERSION;
    h[3] = ty as u8;
    // Callers bound body_len by a clamped max_frame, which fits a u32.
    let len = u32::try_from(body_len).unwrap_or(u32::MAX);
    h[4..8].copy_from_slice(&len.to_le_bytes());
    h
}

/// The bytes of a `Bye` frame.
pub fn bye_frame() -> [u8; FRAME_HEADER_LEN] {
    header(FrameType::Bye, 0)
}

/// Frame header bytes to send before a slice of payload.
#[derive(Debug, Clone, Copy)]
pub struct HeaderBytes {
    bytes: [u8; START_HEADER_LEN],
    len: usize,
}

impl HeaderBytes {
    /// The header bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// One frame of an encoded message: its header and which payload bytes follow.
#[derive(Debug, Clone)]
pub struct FramePiece {
    pub header: HeaderBytes,
    pub payload: Range<usize>,
}

/// Iterator over the frames of one message, so senders can gather-write the
/// caller's payload without copying it.
#[derive(Debug, Clone)]
pub struct Frames {
    env: Envelope,
    payload_len: usize,
    max_frame: usize,
    pos: usize,
    started: bool,
}

/// Lays out a message with `payload_len` payload bytes as frames no larger
/// than `max_frame` (clamped by [`clamp_max_frame`]).
pub fn frames(env: &Envelope, payload_len: usize, max_frame: usize) -> Frames {
    Frames {
        env: *env,
        payload_len,
        max_frame: clamp_max_frame(max_frame),
        pos: 0,
        started: false,
    }
}

impl Iterator for Frames {
    type Item = FramePiece;

    fn next(&mut self) -> Option<FramePiece> {
        let mut bytes = [0u8; START_HEADER_LEN];
        if !self.started {
            self.started = true;
            let chunk = self.payload_len.min(self.max_frame - START_PREFIX_LEN);
            bytes[..FRAME_HEADER_LEN]
                .copy_from_slice(&header(FrameType::Start, START_PREFIX_LEN + chunk));
            bytes[FRAME_HEADER_LEN..FRAME_HEADER_LEN + ENVELOPE_LEN]
                .copy_from_slice(&self.env.encode());
            bytes[FRAME_HEADER_LEN + ENVELOPE_LEN..]
                .copy_from_slice(&(self.payload_len as u64).to_le_bytes());
            self.pos = chunk;
            return Some(FramePiece {
                header: HeaderBytes {
                    bytes,
                    len: START_HEADER_LEN,
                },
                payload: 0..chunk,
            });
        }
        if self.pos >= self.payload_len {
            return None;
        }
        let chunk = (self.payload_len - self.pos).min(self.max_frame);
        bytes[..FRAME_HEADER_LEN].copy_from_slice(&header(FrameType::Continue, chunk));
        let start = self.pos;
        self.pos += chunk;
        Some(FramePiece {
            header: HeaderBytes {
                bytes,
                len: FRAME_HEADER_LEN,
            },
            payload: start..self.pos,
        })
    }
}

/// Number of stream bytes a message occupies.
pub fn encoded_len(payload_len: usize, max_frame: usize) -> usize {
    let max_frame = clamp_max_frame(max_frame);
    let first = payload_len.min(max_frame - START_PREFIX_LEN);
    let rest = payload_len - first;
    START_HEADER_LEN + payload_len + rest.div_ceil(max_frame) * FRAME_HEADER_LEN
}

/// Appends the frames of one message to `out`.
pub fn encode_message(env: &Envelope, payload: &[u8], max_frame: usize, out: &mut Vec<u8>) {
    out.reserve(encoded_len(payload.len(), max_frame));
    for piece in frames(env, payload.len(), max_frame) {
        out.extend_from_slice(piece.header.as_slice());
        out.extend_from_slice(&payload[piece.payload]);
    }
}

/// What the decoder produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete message; the payload borrows the decoder until the next call.
    Message(Envelope, &'a [u8]),
    /// A message of `total` payload bytes begins that may land (see
    /// [`Decoder::with_landing`]): call [`Decoder::land`] before the next
    /// call to take it in pieces, else it comes whole as a `Message`.
    Offer { env: Envelope, total: usize },
    /// Payload bytes `at..at + bytes.len()` of the landing message.
    Piece {
        env: Envelope,
        at: usize,
        bytes: &'a [u8],
    },
    /// The landing message is complete: every byte came as a `Piece` or was
    /// read where [`Decoder::land_space`] said.
    Landed { env: Envelope, total: usize },
    /// The peer closes on purpose; nothing may follow.
    Bye,
}

/// Whether the message being assembled lands instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Land {
    No,
    /// Offered; not yet accepted.
    Offered,
    Yes,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Between messages: a `Start` or `Bye` header comes next.
    Idle,
    /// Collecting a multi-frame message into `asm[..got]`, or, landing,
    /// having handed out its first `got` bytes.
    Assembling {
        env: Envelope,
        total: usize,
        got: usize,
        /// Payload bytes of the current frame not yet received.
        frame_left: usize,
        land: Land,
    },
}

/// What the last returned event still borrows, released on the next call.
#[derive(Debug, Clone, Copy)]
enum Held {
    Nothing,
    ReadBuf(usize),
    Assembly,
}

#[derive(Debug, Clone, Copy)]
struct Header {
    ty: FrameType,
    len: usize,
}

/// Incremental stream decoder. Either feed it with [`Decoder::feed`], or read
/// straight into [`Decoder::read_buf`] and report with [`Decoder::filled`];
/// then call [`Decoder::next_event`] until it returns `Ok(None)`.
#[derive(Debug)]
pub struct Decoder {
    max_frame: usize,
    max_message: u64,
    /// Unconsumed stream bytes are `buf[head..tail]`.
    buf: Vec<u8>,
    head: usize,
    tail: usize,
    state: State,
    /// Assembly buffer; its length is a high-water mark, not the message size.
    asm: Vec<u8>,
    held: Held,
    read_into_asm: bool,
    /// Messages of at least this many payload bytes are offered to land.
    land_min: Option<usize>,
    saw_bye: bool,
    failed: Option<FrameError>,
}

impl Decoder {
    /// A decoder accepting frame bodies up to `max_frame` (clamped by
    /// [`clamp_max_frame`]) and message payloads up to `max_message` bytes.
    pub fn new(max_frame: usize, max_message: u64) -> Self {
        Self {
            max_frame: clamp_max_frame(max_frame),
            max_message,
            buf: vec![0; INITIAL_READ_BUF],
            head: 0,
            tail: 0,
            state: State::Idle,
            asm: Vec::new(),
            held: Held::Nothing,
            read_into_asm: false,
            land_min: None,
            saw_bye: false,
            failed: None,
        }
    }

    /// Offers every message of at least `min` payload bytes (and at least
    /// one) to land: see [`Event::Offer`].
    pub fn with_landing(mut self, min: usize) -> Self {
        self.land_min = Some(min.max(1));
        self
    }

    /// Takes the message just offered in pieces.
    pub fn land(&mut self) {
        if let State::Assembling { ref mut land, .. } = self.state {
            if *land == Land::Offered {
                *land = Land::Yes;
            }
        }
    }

    /// Where the next stream bytes belong when they may be read straight
    /// into the landing message: (its envelope, the payload offset, how
    /// many bytes). Report what was read there with [`Decoder::landed`].
    pub fn land_space(&self) -> Option<(Envelope, usize, usize)> {
        match self.state {
            State::Assembling {
                env,
                got,
                frame_left,
                land: Land::Yes,
                ..
            } if frame_left > 0 && self.head == self.tail && matches!(self.held, Held::Nothing) => {
                Some((env, got, frame_left))
            }
            _ => None,
        }
    }

    /// Reports `n` payload bytes read where [`Decoder::land_space`] said.
    pub fn landed(&mut self, n: usize) {
        if let State::Assembling {
            ref mut got,
            ref mut frame_left,
            land: Land::Yes,
            ..
        } = self.state
        {
            let n = n.min(*frame_left);
            *got += n;
            *frame_left -= n;
        }
    }

    /// An offer not taken before the decoder moves on is declined.
    fn settle_offer(&mut self) {
        if let State::Assembling {
            total,
            ref mut land,
            ..
        } = self.state
        {
            if *land == Land::Offered {
                *land = Land::No;
                let want = total.min(PREALLOC_CAP);
                self.asm.reserve(want.saturating_sub(self.asm.len()));
            }
        }
    }

    /// Whether a `Bye` frame was decoded.
    pub fn saw_bye(&self) -> bool {
        self.saw_bye
    }

    /// Whether the stream stopped in the middle of a frame or message.
    pub fn is_mid_message(&self) -> bool {
        self.tail > self.head || matches!(self.state, State::Assembling { .. })
    }

    /// Copies `data` into the decoder (for tests and callers that already
    /// hold the bytes; sockets should use [`Decoder::read_buf`]).
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let dst = self.read_buf();
            let n = dst.len().min(data.len());
            dst[..n].copy_from_slice(&data[..n]);
            self.filled(n);
            data = &data[n..];
        }
    }

    /// Where the next read should land; never empty. For the bulk of a long
    /// message this is the assembly buffer itself, so payload is copied once.
    pub fn read_buf(&mut self) -> &mut [u8] {
        self.release();
        self.settle_offer();
        if let State::Assembling {
            got,
            frame_left,
            land: Land::No,
            ..
        } = self.state
        {
            if frame_left > 0 && self.head == self.tail {
                let end = got + frame_left;
                if self.asm.len() < end {
                    self.asm.resize(end, 0);
                }
                self.read_into_asm = true;
                return &mut self.asm[got..end];
            }
        }
        self.read_into_asm = false;
        if self.head == self.tail {
            self.head = 0;
            self.tail = 0;
        }
        // Between a landing message's frames, read only the next header:
        // the payload after it is better read where it lands.
        if let State::Assembling {
            frame_left: 0,
            land: Land::Yes,
            ..
        } = self.state
        {
            let have = self.tail - self.head;
            if have < FRAME_HEADER_LEN {
                self.ensure_room(FRAME_HEADER_LEN);
                return &mut self.buf[self.tail..self.head + FRAME_HEADER_LEN];
            }
        }
        if self.buf.len() - self.tail < 4096 {
            self.compact();
            if self.tail == self.buf.len() {
                let grown = self.buf.len().max(INITIAL_READ_BUF) * 2;
                self.buf.resize(grown, 0);
            }
        }
        &mut self.buf[self.tail..]
    }

    /// Reports that `n` bytes were written at the start of the last
    /// [`Decoder::read_buf`].
    pub fn filled(&mut self, n: usize) {
        if self.read_into_asm {
            self.read_into_asm = false;
            if let State::Assembling {
                ref mut got,
                ref mut frame_left,
                ..
            } = self.state
            {
                let n = n.min(*frame_left);
                *got += n;
                *frame_left -= n;
            }
        } else {
            self.tail = (self.tail + n).min(self.buf.len());
        }
    }

    /// The next complete event, `Ok(None)` if more bytes are needed. Errors
    /// are sticky: the stream is unusable after one.
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.release();
        self.settle_offer();
        match self.step() {
            Ok(Some(Step::Bye)) => Ok(Some(Event::Bye)),
            Ok(Some(Step::FromBuf(env, range))) => Ok(Some(Event::Message(env, &self.buf[range]))),
            Ok(Some(Step::FromAsm(env, total))) => {
                Ok(Some(Event::Message(env, &self.asm[..total])))
            }
            Ok(Some(Step::Offer(env, total))) => Ok(Some(Event::Offer { env, total })),
            Ok(Some(Step::Piece(env, at, range))) => Ok(Some(Event::Piece {
                env,
                at,
                bytes: &self.buf[range],
            })),
            Ok(Some(Step::Landed(env, total))) => Ok(Some(Event::Landed { env, total })),
            Ok(None) => Ok(None),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    fn release(&mut self) {
        match std::mem::replace(&mut self.held, Held::Nothing) {
            Held::Nothing => {}
            Held::ReadBuf(n) => self.head += n,
            Held::Assembly => {
                self.state = State::Idle;
                if self.asm.len() > PREALLOC_CAP {
                    self.asm = Vec::new();
                }
            }
        }
    }

    fn compact(&mut self) {
        if self.head > 0 {
            self.buf.copy_within(self.head..self.tail, 0);
            self.tail -= self.head;
            self.head = 0;
        }
    }

    /// Makes sure `need` bytes from `head` fit in the read buffer.
    fn ensure_room(&mut self, need: usize) {
        if self.buf.len() - self.head < need {
            self.compact();
            if self.buf.len() < need {
                self.buf.resize(need, 0);
            }
        }
    }

    fn peek_header(&self) -> Result<Option<Header>, FrameError> {
        let Some(h) = self.buf.get(self.head..self.head + FRAME_HEADER_LEN) else {
            return Ok(None);
        };
        if self.tail - self.head < FRAME_HEADER_LEN {
            return Ok(None);
        }
        if h[..2] != FRAME_MAGIC {
            return Err(FrameError::BadMagic {
                found: [h[0], h[1]],
            });
        }
        if h[2] != FRAME_VERSION {
            return Err(FrameError::UnsupportedVersion(h[2]));
        }
        let ty = FrameType::from_u8(h[3]).ok_or(FrameError::UnknownFrameType(h[3]))?;
        let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        if len > self.max_frame {
            return Err(FrameError::OversizedFrame {
                len,
                max: self.max_frame,
            });
        }
        Ok(Some(Header { ty, len }))
    }

    fn step(&mut self) -> Result<Option<Step>, FrameError> {
        loop {
            match self.state {
                State::Assembling {
                    env,
                    total,
                    got,
                    frame_left,
                    land,
                } => {
                    if frame_left > 0 {
                        let n = (self.tail - self.head).min(frame_left);
                        if n == 0 {
                            return Ok(None);
                        }
                        let end = got + n;
                        let start = self.head;
                        self.state = State::Assembling {
                            env,
                            total,
                            got: end,
                            frame_left: frame_left - n,
                            land,
                        };
                        if land == Land::Yes {
                            self.held = Held::ReadBuf(n);
                            return Ok(Some(Step::Piece(env, got, start..start + n)));
                        }
                        if self.asm.len() < end {
                            self.asm.resize(end, 0);
                        }
                        self.asm[got..end].copy_from_slice(&self.buf[start..start + n]);
                        self.head += n;
                        continue;
                    }
                    if got == total && land == Land::Yes {
                        self.state = State::Idle;
                        return Ok(Some(Step::Landed(env, total)));
                    }
                    if got == total {
                        self.held = Held::Assembly;
                        return Ok(Some(Step::FromAsm(env, total)));
                    }
                    let remaining = total - got;
                    let Some(h) = self.peek_header()? else {
                        return Ok(None);
                    };
                    match h.ty {
                        FrameType::Continue => {}
                        found => return Err(FrameError::ExpectedContinue { found }),
                    }
                    if h.len == 0 {
                        return Err(FrameError::EmptyContinue);
                    }
                    if h.len > remaining {
                        return Err(FrameError::ContinueOverrun {
                            chunk: h.len,
                            remaining,
                        });
                    }
                    self.head += FRAME_HEADER_LEN;
                    self.state = State::Assembling {
                        env,
                        total,
                        got,
                        frame_left: h.len,
                        land,
                    };
                }
                State::Idle => {
                    let Some(h) = self.peek_header()? else {
                        return Ok(None);
                    };
                    if self.saw_bye {
                        return Err(FrameError::FrameAfterBye);
                    }
                    match h.ty {
                        FrameType::Bye if h.len != 0 => {
                            return Err(FrameError::ByeWithBody { len: h.len })
                        }
                        FrameType::Bye => {
                            self.head += FRAME_HEADER_LEN;
                            self.saw_bye = true;
                            return Ok(Some(Step::Bye));
                        }
                        FrameType::Continue => return Err(FrameError::ContinueWithoutStart),
                        FrameType::Start => {}
                    }
                    if h.len < START_PREFIX_LEN {
                        return Err(FrameError::StartFrameTooShort { len: h.len });
                    }
                    if self.tail - self.head < START_HEADER_LEN {
                        // Room for the whole frame, unless it may land.
                        let lands = self.land_min.is_some_and(|m| h.len - START_PREFIX_LEN >= m);
                        self.ensure_room(if lands {
                            START_HEADER_LEN
                        } else {
                            FRAME_HEADER_LEN + h.len
                        });
                        return Ok(None);
                    }
                    let p = self.head + FRAME_HEADER_LEN;
                    let env = Envelope::decode(&self.buf[p..p + ENVELOPE_LEN])
                        .map_err(FrameError::BadEnvelope)?;
                    let mut total = [0u8; 8];
                    total.copy_from_slice(&self.buf[p + ENVELOPE_LEN..p + START_PREFIX_LEN]);
                    let total = u64::from_le_bytes(total);
                    if total > self.max_message {
                        return Err(FrameError::MessageTooLarge {
                            len: total,
                            max: self.max_message,
                        });
                    }
                    let too_large = FrameError::MessageTooLarge {
                        len: total,
                        max: usize::MAX as u64,
                    };
                    let total_usize = usize::try_from(total).map_err(|_| too_large)?;
                    let chunk = h.len - START_PREFIX_LEN;
                    if chunk > total_usize {
                        return Err(FrameError::ChunkExceedsMessage { chunk, total });
                    }
                    if self.land_min.is_some_and(|m| total_usize >= m) {
                        self.head += START_HEADER_LEN;
                        self.state = State::Assembling {
                            env,
                            total: total_usize,
                            got: 0,
                            frame_left: chunk,
                            land: Land::Offered,
                        };
                        return Ok(Some(Step::Offer(env, total_usize)));
                    }
                    if chunk == total_usize {
                        // Single-frame message: hand out the read buffer itself.
                        let frame_len = FRAME_HEADER_LEN + h.len;
                        if self.tail - self.head < frame_len {
                            self.ensure_room(frame_len);
                            return Ok(None);
                        }
                        let start = self.head + START_HEADER_LEN;
                        self.held = Held::ReadBuf(frame_len);
                        return Ok(Some(Step::FromBuf(env, start..start + chunk)));
                    }
                    self.head += START_HEADER_LEN;
                    let want = total_usize.min(PREALLOC_CAP);
                    self.asm.reserve(want.saturating_sub(self.asm.len()));
                    self.state = State::Assembling {
                        env,
                        total: total_usize,
                        got: 0,
                        frame_left: chunk,
                        land: Land::No,
                    };
                }
            }
        }
    }
}

enum Step {
    Bye,
    FromBuf(Envelope, Range<usize>),
    FromAsm(Envelope, usize),
    Offer(Envelope, usize),
    Piece(Envelope, usize, Range<usize>),
    Landed(Envelope, usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Kind;
    use proptest::prelude::*;

    fn env(i: u64) -> Envelope {
        Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx: 7,
            src: 3,
            tag: i as i32,
            len: i,
            cookie: i.wrapping_mul(0x9e37_79b9),
            sig: 0,
        }
    }

    fn drain(d: &mut Decoder, out: &mut Vec<(Envelope, Vec<u8>)>) -> Result<bool, FrameError> {
        let mut bye = false;
        while let Some(ev) = d.next_event()? {
            match ev {
                Event::Message(e, p) => out.push((e, p.to_vec())),
                Event::Bye => bye = true,
                other => panic!("landing not asked for, yet {other:?}"),
            }
        }
        Ok(bye)
    }

    #[test]
    fn encoded_len_matches_encoding() {
        for max_frame in [MIN_MAX_FRAME, 100, 4096] {
            for len in [0, 1, 23, 24, 25, 99, 100, 1000, 5000] {
                let payload = vec![1u8; len];
                let mut out = Vec::new();
                encode_message(&env(1), &payload, max_frame, &mut out);
                assert_eq!(
                    out.len(),
                    encoded_len(len, max_frame),
                    "len {len} max {max_frame}"
                );
            }
        }
    }

    #[test]
    fn zero_and_multi_frame_messages_decode() {
        let mut stream = Vec::new();
        let big: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        encode_message(&env(0), &[], 100, &mut stream);
        encode_message(&env(1), &big, 100, &mut stream);
        stream.extend_from_slice(&bye_frame());
        let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
        d.feed(&stream);
        let mut got = Vec::new();
        assert!(drain(&mut d, &mut got).unwrap());
        assert_eq!(got, vec![(env(0), vec![]), (env(1), big)]);
        assert!(d.saw_bye());
        assert!(!d.is_mid_message());
    }

    #[test]
    fn direct_reads_into_assembly() {
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        let mut stream = Vec::new();
        encode_message(&env(5), &payload, 65536, &mut stream);
        let mut d = Decoder::new(65536, DEFAULT_MAX_MESSAGE);
        let mut got = Vec::new();
        let mut pos = 0;
        while pos < stream.len() {
            drain(&mut d, &mut got).unwrap();
            let dst = d.read_buf();
            assert!(!dst.is_empty());
            let n = dst.len().min(stream.len() - pos).min(50_000);
            dst[..n].copy_from_slice(&stream[pos..pos + n]);
            d.filled(n);
            pos += n;
        }
        drain(&mut d, &mut got).unwrap();
        assert_eq!(got, vec![(env(5), payload)]);
    }

    #[test]
    fn rejects_bad_headers() {
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (
                b"XX\x01\x01\0\0\0\0".to_vec(),
                FrameError::BadMagic { found: *b"XX" },
            ),
            (
                b"Ln\x02\x01\0\0\0\0".to_vec(),
                FrameError::UnsupportedVersion(2),
            ),
            (
                b"Ln\x01\x09\0\0\0\0".to_vec(),
                FrameError::UnknownFrameType(9),
            ),
            (
                header(FrameType::Start, 1000).to_vec(),
                FrameError::OversizedFrame {
                    len: 1000,
                    max: 100,
                },
            ),
            (
                header(FrameType::Continue, 10).to_vec(),
                FrameError::ContinueWithoutStart,
            ),
            (
                header(FrameType::Start, 10).to_vec(),
                FrameError::StartFrameTooShort { len: 10 },
            ),
            (
                header(FrameType::Bye, 1).to_vec(),
                FrameError::ByeWithBody { len: 1 },
            ),
        ];
        for (bytes, want) in cases {
            let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
            d.feed(&bytes);
            assert_eq!(d.next_event().unwrap_err(), want);
            // Sticky.
            assert_eq!(d.next_event().unwrap_err(), want);
        }
    }

    #[test]
    fn rejects_inconsistent_messages() {
        // Message larger than allowed.
        let mut s = Vec::new();
        encode_message(&env(1), &[0; 50], 100, &mut s);
        let mut d = Decoder::new(100, 10);
        d.feed(&s);
        assert_eq!(
            d.next_event().unwrap_err(),
            FrameError::MessageTooLarge { len: 50, max: 10 }
        );

        // A start frame where a continue frame belongs.
        let mut s = Vec::new();
        encode_message(&env(1), &[0; 500], 100, &mut s);
        let cut = START_HEADER_LEN + (100 - START_PREFIX_LEN);
        s.truncate(cut);
        encode_message(&env(2), &[], 100, &mut s);
        let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
        d.feed(&s);
        assert_eq!(
            d.next_event().unwrap_err(),
            FrameError::ExpectedContinue {
                found: FrameType::Start
            }
        );

        // A continue frame longer than the rest of the message.
        let mut s = Vec::new();
        encode_message(&env(1), &[0; 70], 100, &mut s);
        s.truncate(START_HEADER_LEN + 60);
        s.extend_from_slice(&header(FrameType::Continue, 11));
        let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
        d.feed(&s);
        assert_eq!(
            d.next_event().unwrap_err(),
            FrameError::ContinueOverrun {
                chunk: 11,
                remaining: 10
            }
        );

        // Start chunk longer than the declared total.
        let mut s = header(FrameType::Start, START_PREFIX_LEN + 5).to_vec();
        s.extend_from_slice(&env(1).encode());
        s.extend_from_slice(&3u64.to_le_bytes());
        s.extend_from_slice(&[0; 5]);
        let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
        d.feed(&s);
        assert_eq!(
            d.next_event().unwrap_err(),
            FrameError::ChunkExceedsMessage { chunk: 5, total: 3 }
        );

        // Anything after bye.
        let mut s = bye_frame().to_vec();
        encode_message(&env(1), &[], 100, &mut s);
        let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
        d.feed(&s);
        assert_eq!(d.next_event().unwrap(), Some(Event::Bye));
        assert_eq!(d.next_event().unwrap_err(), FrameError::FrameAfterBye);
    }

    #[test]
    fn huge_declared_total_does_not_allocate() {
        let mut s = header(FrameType::Start, START_PREFIX_LEN + 1).to_vec();
        s.extend_from_slice(&env(1).encode());
        s.extend_from_slice(&(1u64 << 39).to_le_bytes());
        s.push(0);
        let mut d = Decoder::new(100, DEFAULT_MAX_MESSAGE);
        d.feed(&s);
        assert_eq!(d.next_event().unwrap(), None);
        assert!(d.asm.capacity() <= PREALLOC_CAP);
        assert!(d.is_mid_message());
    }

    /// A caller that lands the offers `accept` picks (in turn, cycling),
    /// and checks that each landing message comes exactly once, in order.
    #[derive(Default)]
    struct Lander {
        accept: Vec<bool>,
        offers: usize,
        /// The landing message, its payload, and how much of it came.
        landing: Option<(Envelope, Vec<u8>, usize)>,
        got: Vec<(Envelope, Vec<u8>)>,
    }

    impl Lander {
        fn drain(&mut self, d: &mut Decoder) -> Result<(), FrameError> {
            while let Some(ev) = d.next_event()? {
                match ev {
                    Event::Message(e, p) => self.got.push((e, p.to_vec())),
                    Event::Offer { env, total } => {
                        assert!(self.landing.is_none());
                        let yes =
                            self.accept.is_empty() || self.accept[self.offers % self.accept.len()];
                        self.offers += 1;
                        if yes {
                            self.landing = Some((env, vec![0; total], 0));
                            d.land();
                        }
                    }
                    Event::Piece { env, at, bytes } => {
                        let (e, buf, came) = self.landing.as_mut().expect("a piece of nothing");
                        assert_eq!((*e, at), (env, *came));
                        buf[at..at + bytes.len()].copy_from_slice(bytes);
                        *came += bytes.len();
                    }
                    Event::Landed { env, total } => {
                        let (e, buf, came) = self.landing.take().expect("nothing landed");
                        assert_eq!((e, total, came), (env, buf.len(), buf.len()));
                        self.got.push((e, buf));
                    }
                    Event::Bye => {}
                }
            }
            Ok(())
        }

        /// Reads from `src` where the decoder says the landing message's
        /// next bytes go; how many, if it said.
        fn read_direct(&mut self, d: &mut Decoder, src: &[u8]) -> Option<usize> {
            let (env, at, len) = d.land_space()?;
            let (e, buf, came) = self.landing.as_mut().expect("space in nothing");
            assert_eq!((*e, at), (env, *came));
            let n = len.min(src.len());
            buf[at..at + n].copy_from_slice(&src[..n]);
            *came += n;
            d.landed(n);
            Some(n)
        }
    }

    #[test]
    fn landing_reads_only_a_header_between_frames() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 13) as u8).collect();
        let mut stream = Vec::new();
        encode_message(&env(9), &payload, 1000, &mut stream);
        encode_message(&env(10), &[7; 10], 1000, &mut stream);
        let mut d = Decoder::new(1000, DEFAULT_MAX_MESSAGE).with_landing(100);
        let mut l = Lander::default();
        let (mut pos, mut direct, mut buffered) = (0, 0, 0);
        while pos < stream.len() {
            l.drain(&mut d).unwrap();
            if let Some(n) = l.read_direct(&mut d, &stream[pos..]) {
                direct += n;
                pos += n;
                continue;
            }
            // A socket that holds one frame at a time.
            let dst = d.read_buf();
            let n = dst
                .len()
                .min(stream.len() - pos)
                .min(FRAME_HEADER_LEN + 1000);
            dst[..n].copy_from_slice(&stream[pos..pos + n]);
            d.filled(n);
            buffered += n;
            pos += n;
        }
        l.drain(&mut d).unwrap();
        assert_eq!(l.got, vec![(env(9), payload), (env(10), vec![7; 10])]);
        // Only the first frame's payload came with its header; the other
        // frames' payloads were all read where they belong.
        assert_eq!(direct, 5000 - (1000 - START_PREFIX_LEN));
        assert_eq!(direct + buffered, stream.len());
    }

    #[test]
    fn an_offer_not_taken_comes_whole() {
        let payload = vec![3u8; 4000];
        let mut stream = Vec::new();
        encode_message(&env(1), &payload, 1000, &mut stream);
        encode_message(&env(2), &payload, 100_000, &mut stream);
        let mut d = Decoder::new(100_000, DEFAULT_MAX_MESSAGE).with_landing(1);
        let mut l = Lander {
            accept: vec![false],
            ..Lander::default()
        };
        for c in stream.chunks(333) {
            d.feed(c);
            l.drain(&mut d).unwrap();
        }
        assert_eq!(l.offers, 2);
        assert_eq!(l.got, vec![(env(1), payload.clone()), (env(2), payload)]);
        assert!(!d.is_mid_message());
    }

    /// Messages of `sizes` payload bytes, and the stream that carries them.
    fn sample_stream(sizes: &[usize], max_frame: usize) -> (Vec<(Envelope, Vec<u8>)>, Vec<u8>) {
        let msgs: Vec<(Envelope, Vec<u8>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (env(i as u64), (0..n).map(|j| (j * 31 + i) as u8).collect()))
            .collect();
        let mut stream = Vec::new();
        for (e, p) in &msgs {
            encode_message(e, p, max_frame, &mut stream);
        }
        (msgs, stream)
    }

    proptest! {
        #[test]
        fn landing_round_trip_with_random_splits(
            sizes in proptest::collection::vec(0usize..2000, 1..12),
            max_frame in MIN_MAX_FRAME..400,
            cuts in proptest::collection::vec(1usize..700, 1..40),
            land_min in 0usize..1500,
            accept in proptest::collection::vec(any::<bool>(), 1..6),
        ) {
            let (msgs, stream) = sample_stream(&sizes, max_frame);
            let mut d = Decoder::new(max_frame, DEFAULT_MAX_MESSAGE).with_landing(land_min);
            let mut l = Lander { accept, ..Lander::default() };
            let mut pos = 0;
            let mut i = 0;
            while pos < stream.len() {
                // Copy in, read into the buffer, or read where it lands.
                let n = cuts[i % cuts.len()].min(stream.len() - pos);
                match i % 3 {
                    0 => {
                        d.feed(&stream[pos..pos + n]);
                        pos += n;
                    }
                    1 => {
                        let dst = d.read_buf();
                        let n = n.min(dst.len());
                        dst[..n].copy_from_slice(&stream[pos..pos + n]);
                        d.filled(n);
                        pos += n;
                    }
                    _ => pos += l.read_direct(&mut d, &stream[pos..pos + n]).unwrap_or(0),
                }
                l.drain(&mut d).unwrap();
                i += 1;
            }
            prop_assert_eq!(l.got, msgs);
            prop_assert!(l.landing.is_none());
            prop_assert!(!d.is_mid_message());
        }

        #[test]
        fn round_trip_with_random_splits(
            sizes in proptest::collection::vec(0usize..2000, 1..12),
            max_frame in MIN_MAX_FRAME..400,
            cuts in proptest::collection::vec(1usize..700, 1..40),
        ) {
            let (msgs, stream) = sample_stream(&sizes, max_frame);
            let mut d = Decoder::new(max_frame, DEFAULT_MAX_MESSAGE);
            let mut got = Vec::new();
            let mut pos = 0;
            let mut i = 0;
            while pos < stream.len() {
                // Alternate between the copy-in and the read-into paths.
                let n = cuts[i % cuts.len()].min(stream.len() - pos);
                if i % 2 == 0 {
                    d.feed(&stream[pos..pos + n]);
                    pos += n;
                } else {
                    let dst = d.read_buf();
                    let n = n.min(dst.len());
                    dst[..n].copy_from_slice(&stream[pos..pos + n]);
                    d.filled(n);
                    pos += n;
                }
                drain(&mut d, &mut got).unwrap();
                i += 1;
            }
            prop_assert_eq!(got, msgs);
            prop_assert!(!d.is_mid_message());
        }

        #[test]
        fn garbage_never_panics(
            prefix_msgs in 0usize..3,
            garbage in proptest::collection::vec(any::<u8>(), 0..600),
            chunk in 1usize..64,
        ) {
            let mut stream = Vec::new();
            for i in 0..prefix_msgs {
                encode_message(&env(i as u64), &[i as u8; 30], 80, &mut stream);
            }
            stream.extend_from_slice(&garbage);
            let mut d = Decoder::new(80, 1000);
            let mut got = Vec::new();
            for c in stream.chunks(chunk) {
                d.feed(c);
                if drain(&mut d, &mut got).is_err() {
                    break;
                }
            }
            prop_assert!(got.len() >= prefix_msgs);
        }

        #[test]
        fn mutated_stream_never_panics(
            flips in proptest::collection::vec((0usize..2000, any::<u8>()), 1..8),
        ) {
            let mut stream = Vec::new();
            for i in 0..5u64 {
                encode_message(&env(i), &vec![i as u8; 300], 100, &mut stream);
            }
            for (at, v) in flips {
                let at = at % stream.len();
                stream[at] = v;
            }
            let mut d = Decoder::new(100, 100_000);
            let mut got = Vec::new();
            for c in stream.chunks(37) {
                d.feed(c);
                if drain(&mut d, &mut got).is_err() {
                    break;
                }
            }
            // The same stream, every message landing.
            let mut d = Decoder::new(100, 100_000).with_landing(1);
            let mut l = Lander::default();
            for c in stream.chunks(37) {
                d.feed(c);
                if l.drain(&mut d).is_err() {
                    break;
                }
            }
        }
    }
}
