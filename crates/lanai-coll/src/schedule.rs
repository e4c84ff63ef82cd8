//! A straight-line schedule of sends, receives and local combines over one
//! byte buffer, run as a sans-IO machine.
//!
//! Most collectives are a fixed program per rank: "send these bytes to that
//! peer, wait for those bytes from this one, combine". Each planner builds the
//! program and this executor runs it, so message validation, early arrivals
//! and duplicates are handled in one place. Sends never block; a receive
//! blocks the program until its message is in. Between one pair of ranks and
//! one message kind, messages match receives in FIFO order (the `Collective`
//! contract), so the header's step byte is a sequence number checked mod 256
//! and communicators larger than 256 ranks still work.

use std::ops::Range;

use crate::error::{CollError, OpError};
use crate::machine::{decode, decode_head, Header, Outbox, Outgoing};
use crate::ops::Combine;

/// What a receive does with its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Apply {
    /// Copy it into the range.
    Store,
    /// The payload covers lower ranks: `range = payload op range`.
    CombineLower,
    /// The payload covers higher ranks: `range = range op payload`.
    CombineHigher,
}

#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Send the bytes of `range` (read when the step is reached).
    Send {
        to: u32,
        kind: u8,
        range: Range<usize>,
    },
    /// Wait for the next `kind` message from `from`; its length must be
    /// that of `range`.
    Recv {
        from: u32,
        kind: u8,
        range: Range<usize>,
        apply: Apply,
    },
    /// `higher = lower op higher`; the ranges must not overlap.
    Combine {
        lower: Range<usize>,
        higher: Range<usize>,
    },
    /// Reduce equal-length `slots` (in rank order) with the canonical
    /// binomial grouping, writing the result to `dest` (disjoint from them).
    Fold {
        slots: Vec<Range<usize>>,
        dest: Range<usize>,
    },
}

/// A combiner for schedules that never combine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoCombine;

impl Combine for NoCombine {
    fn combine(&self, _: &[u8], _: &mut [u8]) -> Result<(), OpError> {
        Err(OpError::UserOpFailed {
            reason: "this collective does not combine".into(),
        })
    }
}

/// A planned program, ready to run.
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub buf: Vec<u8>,
    /// Ranges of `buf` concatenated into the result; `None`: no result here.
    pub result: Option<Vec<Range<usize>>>,
}

/// The messages of one (peer, kind) pair, which match in FIFO order. Kept
/// in a sorted vector rather than maps: a program talks to a few peers,
/// and a collective's every call builds one of these.
#[derive(Debug, Clone, Copy)]
struct Stream {
    peer: u32,
    kind: u8,
    /// Messages sent so far.
    sent: u32,
    /// Messages received and matched to a receive so far.
    matched: u32,
    /// Receives the program has passed so far.
    passed: u32,
    /// The stream's receives are `recvs[first..end]`, in program order.
    first: u32,
    end: u32,
}

impl Stream {
    fn new(peer: u32, kind: u8) -> Self {
        Stream {
            peer,
            kind,
            sent: 0,
            matched: 0,
            passed: 0,
            first: 0,
            end: 0,
        }
    }
}

/// One receive step of the program.
#[derive(Debug, Clone)]
struct Recv {
    step: usize,
    /// Its payload, when that came before the program reached the step.
    early: Option<Vec<u8>>,
}

/// Runs a `Plan`.
pub(crate) struct Schedule<C> {
    steps: Vec<Step>,
    pc: usize,
    buf: Vec<u8>,
    result_ranges: Option<Vec<Range<usize>>>,
    result: Option<Vec<u8>>,
    finished: bool,
    taken: bool,
    combiner: C,
    /// Every (peer, kind) the program sends to or receives from, sorted.
    streams: Vec<Stream>,
    /// The receives, grouped by stream.
    recvs: Vec<Recv>,
    outbox: Outbox,
}

fn in_bounds(r: &Range<usize>, len: usize) -> Result<(), CollError> {
    if r.start > r.end || r.end > len {
        return Err(CollError::BlockBeyondBuffer { end: r.end, len });
    }
    Ok(())
}

fn disjoint(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.end <= b.start || b.end <= a.start || a.is_empty() || b.is_empty()
}

/// Borrows `lower` shared and `higher` mutably; `None` if they overlap or
/// leave `buf`.
fn pair_mut<'a>(
    buf: &'a mut [u8],
    lower: &Range<usize>,
    higher: &Range<usize>,
) -> Option<(&'a [u8], &'a mut [u8])> {
    if lower.end.max(higher.end) > buf.len() || !disjoint(lower, higher) {
        return None;
    }
    if lower.start <= higher.start {
        let (a, b) = buf.split_at_mut(higher.start);
        Some((a.get(lower.clone())?, b.get_mut(..higher.len())?))
    } else {
        let (a, b) = buf.split_at_mut(lower.start);
        Some((b.get(..lower.len())?, a.get_mut(higher.clone())?))
    }
}

fn overlap_error() -> CollError {
    CollError::InvalidPlan {
        reason: "combine ranges overlap or differ in length",
    }
}

/// Position of the stream of (`peer`, `kind`) in `streams`.
fn find(streams: &[Stream], peer: u32, kind: u8) -> Option<usize> {
    streams
        .binary_search_by_key(&(peer, kind), |s| (s.peer, s.kind))
        .ok()
}

fn no_stream() -> CollError {
    CollError::InvalidPlan {
        reason: "a step's stream is missing",
    }
}

impl<C: Combine> Schedule<C> {
    /// Checks every range against the buffer, then runs as far as it can.
    pub fn new(plan: Plan, combiner: C) -> Result<Self, CollError> {
        let len = plan.buf.len();
        let mut streams = Vec::new();
        let mut receives = 0usize;
        for s in &plan.steps {
            match s {
                Step::Send { to, kind, range } => {
                    in_bounds(range, len)?;
                    streams.push(Stream::new(*to, *kind));
                }
                Step::Recv {
                    from, kind, range, ..
                } => {
                    in_bounds(range, len)?;
                    streams.push(Stream::new(*from, *kind));
                    receives += 1;
                }
                Step::Combine { lower, higher } => {
                    in_bounds(lower, len)?;
                    in_bounds(higher, len)?;
                    if !disjoint(lower, higher) || lower.len() != higher.len() {
                        return Err(overlap_error());
                    }
                }
                Step::Fold { slots, dest } => {
                    in_bounds(dest, len)?;
                    for s in slots {
                        in_bounds(s, len)?;
                        if s.len() != dest.len() || !disjoint(s, dest) {
                            return Err(overlap_error());
                        }
                    }
                }
            }
        }
        if let Some(rs) = &plan.result {
            rs.iter().try_for_each(|r| in_bounds(r, len))?;
        }
        streams.sort_unstable_by_key(|s| (s.peer, s.kind));
        streams.dedup_by_key(|s| (s.peer, s.kind));
        // Each stream's receives in one run of `recvs`, in program order:
        // count them, lay the runs out, then fill them.
        let recv_keys = || {
            plan.steps.iter().enumerate().filter_map(|(i, s)| match s {
                Step::Recv { from, kind, .. } => Some((i, *from, *kind)),
                _ => None,
            })
        };
        for (_, from, kind) in recv_keys() {
            let k = find(&streams, from, kind).ok_or_else(no_stream)?;
            streams[k].end += 1;
        }
        let mut at = 0;
        for st in &mut streams {
            st.first = at;
            at += st.end;
            st.end = st.first;
        }
        let mut recvs = vec![
            Recv {
                step: 0,
                early: None,
            };
            receives
        ];
        for (step, from, kind) in recv_keys() {
            let k = find(&streams, from, kind).ok_or_else(no_stream)?;
            recvs[streams[k].end as usize] = Recv { step, early: None };
            streams[k].end += 1;
        }
        let mut m = Schedule {
            steps: plan.steps,
            pc: 0,
            buf: plan.buf,
            result_ranges: plan.result,
            result: None,
            finished: false,
            taken: false,
            combiner,
            streams,
            recvs,
            outbox: Outbox::new(),
        };
        m.advance()?;
        Ok(m)
    }

    fn advance(&mut self) -> Result<(), CollError> {
        while let Some(step) = self.steps.get(self.pc) {
            match step {
                Step::Send { to, kind, range } => {
                    let payload = self.buf.get(range.clone()).unwrap_or_default().to_vec();
                    let k = find(&self.streams, *to, *kind).ok_or_else(no_stream)?;
                    let st = &mut self.streams[k];
                    let seq = st.sent as u8;
                    st.sent = st.sent.wrapping_add(1);
                    self.outbox
                        .push_back(Outgoing::with_header(*to, *kind, seq, payload));
                }
                Step::Recv { from, kind, .. } => {
                    let k = find(&self.streams, *from, *kind).ok_or_else(no_stream)?;
                    let st = &self.streams[k];
                    let at = (st.first + st.passed) as usize;
                    let Some(payload) = self.recvs.get_mut(at).and_then(|r| r.early.take()) else {
                        return Ok(());
                    };
                    self.streams[k].passed += 1;
                    self.apply(self.pc, &payload)?;
                }
                Step::Combine { lower, higher } => {
                    let (l, h) =
                        pair_mut(&mut self.buf, lower, higher).ok_or_else(overlap_error)?;
                    self.combiner.combine(l, h)?;
                }
                Step::Fold { slots, dest } => {
                    if let Some(at) = fold(&mut self.buf, slots, &self.combiner)? {
                        let src = slots.get(at).cloned().unwrap_or_default();
                        self.buf.copy_within(src, dest.start);
                    }
                }
            }
            self.pc += 1;
        }
        if !self.finished {
            self.finished = true;
            self.result = self.result_ranges.take().map(|rs| {
                let contiguous = rs
                    .iter()
                    .try_fold(0, |at, r| (r.start == at).then_some(r.end));
                match contiguous {
                    // In place: the ranges are the buffer's head.
                    Some(end) => {
                        let mut b = std::mem::take(&mut self.buf);
                        b.truncate(end);
                        b
                    }
                    // Whole slices, not bytes: an iterator of bytes copies at
                    // about 1 GB/s (a 32 KiB gather's root took 30 us for it).
                    None => {
                        let len = rs.iter().map(|r| r.len()).sum();
                        let mut out = Vec::with_capacity(len);
                        for r in rs.iter() {
                            out.extend_from_slice(self.buf.get(r.clone()).unwrap_or_default());
                        }
                        out
                    }
                }
            });
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// Receive step `step` takes `payload`, whose length was checked.
    fn apply(&mut self, step: usize, payload: &[u8]) -> Result<(), CollError> {
        let Some(Step::Recv { range, apply, .. }) = self.steps.get(step) else {
            return Err(no_stream());
        };
        let dst = self.buf.get_mut(range.clone()).ok_or_else(overlap_error)?;
        if dst.len() != payload.len() {
            return Err(overlap_error());
        }
        match apply {
            Apply::Store => dst.copy_from_slice(payload),
            Apply::CombineLower => self.combiner.combine(payload, dst)?,
            Apply::CombineHigher => {
                let mut theirs = payload.to_vec();
                self.combiner.combine(dst, &mut theirs)?;
                dst.copy_from_slice(&theirs);
            }
        }
        Ok(())
    }
}

/// Folds `slots[lo..lo+len]` with the canonical grouping (split at the largest
/// power of two below `len`, lower part op upper part); returns the index of
/// the slot holding the result, `None` when there are no slots.
fn fold<C: Combine>(
    buf: &mut [u8],
    slots: &[Range<usize>],
    c: &C,
) -> Result<Option<usize>, CollError> {
    fn go<C: Combine>(
        buf: &mut [u8],
        slots: &[Range<usize>],
        c: &C,
        lo: usize,
        len: usize,
    ) -> Result<usize, CollError> {
        if len <= 1 {
            return Ok(lo);
        }
        let half = 1usize << (usize::BITS - 1 - (len - 1).leading_zeros());
        let a = go(buf, slots, c, lo, half)?;
        let b = go(buf, slots, c, lo + half, len - half)?;
        let (ra, rb) = (slots.get(a), slots.get(b));
        let (Some(ra), Some(rb)) = (ra, rb) else {
            return Err(overlap_error());
        };
        let (l, h) = pair_mut(buf, ra, rb).ok_or_else(overlap_error)?;
        c.combine(l, h)?;
        Ok(b)
    }
    if slots.is_empty() {
        return Ok(None);
    }
    go(buf, slots, c, 0, slots.len()).map(Some)
}

impl<C: Combine> Schedule<C> {
    pub fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        self.take(from, &h, payload, None)
    }

    /// As [`Schedule::handle_message`] for a message whose body came apart
    /// (passed by reference): kept as it is, without a copy.
    pub fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let h = decode_head(from, head)?;
        self.take(from, &h, &[], Some(body))
    }

    /// Matches a message (`payload`, or `owned` when given) to its receive.
    /// The one the program waits at takes it at once; one it has not
    /// reached keeps it.
    fn take(
        &mut self,
        from: u32,
        h: &Header,
        payload: &[u8],
        owned: Option<Vec<u8>>,
    ) -> Result<(), CollError> {
        let len = owned.as_ref().map_or(payload.len(), Vec::len);
        let (k, at) = self.match_step(from, h, len)?;
        let step = self.recvs[at].step;
        if step != self.pc {
            // The program waits elsewhere, so nothing more can run yet.
            self.recvs[at].early = Some(owned.unwrap_or_else(|| payload.to_vec()));
            return Ok(());
        }
        self.streams[k].passed += 1;
        self.apply(step, owned.as_deref().unwrap_or(payload))?;
        self.pc += 1;
        self.advance()
    }

    /// The stream and the receive that message `h` from `from` (`len`
    /// bytes of body) is for.
    fn match_step(
        &mut self,
        from: u32,
        h: &Header,
        len: usize,
    ) -> Result<(usize, usize), CollError> {
        let k = find(&self.streams, from, h.kind);
        let seen = k.map_or(0, |k| self.streams[k].matched);
        let next = k.and_then(|k| {
            let st = &self.streams[k];
            let at = st.first + st.matched;
            (at < st.end).then_some((k, at as usize))
        });
        let out_of_order = || {
            if seen > 0 && h.step == seen.wrapping_sub(1) as u8 {
                CollError::DuplicateMessage {
                    from,
                    kind: h.kind,
                    step: h.step,
                }
            } else {
                CollError::UnexpectedMessage {
                    from,
                    kind: h.kind,
                    step: h.step,
                }
            }
        };
        let Some((k, at)) = next else {
            return Err(out_of_order());
        };
        if h.step != seen as u8 {
            return Err(out_of_order());
        }
        // Every receive step's range was checked against the buffer.
        let expected = match self.steps.get(self.recvs[at].step) {
            Some(Step::Recv { range, .. }) => range.len(),
            _ => return Err(no_stream()),
        };
        if len != expected {
            return Err(CollError::DataLengthMismatch {
                from,
                expected,
                got: len,
            });
        }
        self.streams[k].matched = seen.wrapping_add(1);
        Ok((k, at))
    }

    pub fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    pub fn is_done(&self) -> bool {
        self.finished && self.outbox.is_empty()
    }

    pub fn result(&self) -> Option<&[u8]> {
        if self.is_done() && !self.taken {
            self.result.as_deref()
        } else {
            None
        }
    }

    pub fn take_result(&mut self) -> Option<Vec<u8>> {
        if self.is_done() && !self.taken {
            self.taken = true;
            self.result.take()
        } else {
            None
        }
    }
}

/// Implements `Collective` for a wrapper whose field `inner` is a `Schedule`;
/// `synchronizes` after the name sets [`Collective::synchronizes`].
macro_rules! scheduled_collective {
    ($name:ident $(<$c:ident>)?) => {
        $crate::schedule::scheduled_collective!($name $(<$c>)?, false);
    };
    ($name:ident $(<$c:ident>)?, synchronizes) => {
        $crate::schedule::scheduled_collective!($name $(<$c>)?, true);
    };
    ($name:ident $(<$c:ident>)?, $sync:literal) => {
        impl$(<$c: $crate::ops::Combine>)? $crate::machine::Collective for $name$(<$c>)? {
            fn handle_message(
                &mut self,
                from: u32,
                data: &[u8],
            ) -> Result<(), $crate::error::CollError> {
                self.inner.handle_message(from, data)
            }
            fn handle_parts(
                &mut self,
                from: u32,
                head: &[u8],
                body: Vec<u8>,
            ) -> Result<(), $crate::error::CollError> {
                self.inner.handle_parts(from, head, body)
            }
            fn poll_send(&mut self) -> Option<$crate::machine::Outgoing> {
                self.inner.poll_send()
            }
            fn is_done(&self) -> bool {
                self.inner.is_done()
            }
            fn result(&self) -> Option<&[u8]> {
                self.inner.result()
            }
            fn take_result(&mut self) -> Option<Vec<u8>> {
                self.inner.take_result()
            }
            fn synchronizes(&self) -> bool {
                $sync
            }
        }
    };
}
pub(crate) use scheduled_collective;

/// `a * b` in bytes, or `SizeOverflow`.
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, CollError> {
    a.checked_mul(b).ok_or(CollError::SizeOverflow)
}

/// Appends a ring allgather over positions `0..n` (this rank at `me`): in step
/// `s` send block `me - s` right and receive block `me - s - 1` from the left.
pub(crate) fn ring_allgather(
    steps: &mut Vec<Step>,
    me: u32,
    n: u32,
    blocks: &[Range<usize>],
    abs: impl Fn(u32) -> u32,
    kind: u8,
) {
    let (me64, n64) = (u64::from(me), u64::from(n));
    let at = |d: u64| ((me64 + n64 * 2 - d % n64) % n64) as u32;
    let right = abs(((me64 + 1) % n64) as u32);
    let left = abs(at(1));
    for s in 0..n64.saturating_sub(1) {
        steps.push(Step::Send {
            to: right,
            kind,
            range: blocks.get(at(s) as usize).cloned().unwrap_or_default(),
        });
        steps.push(Step::Recv {
            from: left,
            kind,
            range: blocks.get(at(s + 1) as usize).cloned().unwrap_or_default(),
            apply: Apply::Store,
        });
    }
}
