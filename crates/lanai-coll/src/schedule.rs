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

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

use crate::error::{CollError, OpError};
use crate::machine::{decode, decode_head, Header, Outbox, Outgoing};
use crate::ops::Combine;

/// What a receive does with its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Apply {
    /// Copy it into the ranges, in order.
    Store,
    /// The payload covers lower ranks: `range = payload op range`.
    CombineLower,
    /// The payload covers higher ranks: `range = range op payload`.
    CombineHigher,
}

#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Send the concatenation of `ranges` (read when the step is reached).
    Send {
        to: u32,
        kind: u8,
        ranges: Vec<Range<usize>>,
    },
    /// Wait for the next `kind` message from `from`; its length must be the
    /// total length of `ranges` (a combine takes exactly one range).
    Recv {
        from: u32,
        kind: u8,
        ranges: Vec<Range<usize>>,
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

/// One pending receive: which step it feeds and how long its payload is.
#[derive(Debug, Clone, Copy)]
struct Expect {
    step: usize,
    len: usize,
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
    /// Receives not yet matched, per (peer, kind), in program order.
    expected: BTreeMap<(u32, u8), VecDeque<Expect>>,
    /// Messages matched so far per (peer, kind): the next step byte expected.
    matched: BTreeMap<(u32, u8), u32>,
    /// Payloads that arrived for receive steps not yet reached.
    payloads: BTreeMap<usize, Vec<u8>>,
    /// Messages sent so far per (peer, kind).
    sent: BTreeMap<(u32, u8), u32>,
    outbox: Outbox,
}

fn in_bounds(r: &Range<usize>, len: usize) -> Result<(), CollError> {
    if r.start > r.end || r.end > len {
        return Err(CollError::BlockBeyondBuffer { end: r.end, len });
    }
    Ok(())
}

fn total(ranges: &[Range<usize>]) -> Result<usize, CollError> {
    ranges
        .iter()
        .try_fold(0usize, |acc, r| acc.checked_add(r.len()))
        .ok_or(CollError::SizeOverflow)
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

impl<C: Combine> Schedule<C> {
    /// Checks every range against the buffer, then runs as far as it can.
    pub fn new(plan: Plan, combiner: C) -> Result<Self, CollError> {
        let len = plan.buf.len();
        let mut expected: BTreeMap<(u32, u8), VecDeque<Expect>> = BTreeMap::new();
        for (i, s) in plan.steps.iter().enumerate() {
            match s {
                Step::Send { ranges, .. } => {
                    ranges.iter().try_for_each(|r| in_bounds(r, len))?;
                    total(ranges)?;
                }
                Step::Recv {
                    from,
                    kind,
                    ranges,
                    apply,
                } => {
                    ranges.iter().try_for_each(|r| in_bounds(r, len))?;
                    if *apply != Apply::Store && ranges.len() != 1 {
                        return Err(overlap_error());
                    }
                    expected
                        .entry((*from, *kind))
                        .or_default()
                        .push_back(Expect {
                            step: i,
                            len: total(ranges)?,
                        });
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
        let mut m = Schedule {
            steps: plan.steps,
            pc: 0,
            buf: plan.buf,
            result_ranges: plan.result,
            result: None,
            finished: false,
            taken: false,
            combiner,
            expected,
            matched: BTreeMap::new(),
            payloads: BTreeMap::new(),
            sent: BTreeMap::new(),
            outbox: Outbox::new(),
        };
        m.advance()?;
        Ok(m)
    }

    fn advance(&mut self) -> Result<(), CollError> {
        while let Some(step) = self.steps.get(self.pc) {
            match step {
                Step::Send { to, kind, ranges } => {
                    let mut payload = Vec::with_capacity(total(ranges)?);
                    for r in ranges {
                        payload.extend_from_slice(self.buf.get(r.clone()).unwrap_or_default());
                    }
                    let n = self.sent.entry((*to, *kind)).or_insert(0);
                    let seq = *n as u8;
                    *n = n.wrapping_add(1);
                    self.outbox
                        .push_back(Outgoing::with_header(*to, *kind, seq, payload));
                }
                Step::Recv { ranges, apply, .. } => {
                    let Some(payload) = self.payloads.remove(&self.pc) else {
                        return Ok(());
                    };
                    match apply {
                        Apply::Store => {
                            let mut rest = payload.as_slice();
                            for r in ranges {
                                let (head, tail) = rest.split_at(r.len().min(rest.len()));
                                if let Some(dst) = self.buf.get_mut(r.clone()) {
                                    dst.copy_from_slice(head);
                                }
                                rest = tail;
                            }
                        }
                        Apply::CombineLower => {
                            let r = ranges.first().cloned().unwrap_or_default();
                            let dst = self.buf.get_mut(r).ok_or_else(overlap_error)?;
                            self.combiner.combine(&payload, dst)?;
                        }
                        Apply::CombineHigher => {
                            let r = ranges.first().cloned().unwrap_or_default();
                            let dst = self.buf.get_mut(r).ok_or_else(overlap_error)?;
                            let mut theirs = payload;
                            self.combiner.combine(dst, &mut theirs)?;
                            dst.copy_from_slice(&theirs);
                        }
                    }
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
            self.result = self.result_ranges.take().map(|rs| match rs.as_slice() {
                [r] if r.start == 0 => {
                    let mut b = std::mem::take(&mut self.buf);
                    b.truncate(r.end);
                    b
                }
                // Whole slices, not bytes: an iterator of bytes copies at
                // about 1 GB/s (a 32 KiB gather's root took 30 us for it).
                _ => {
                    let len = rs.iter().map(|r| r.len()).sum();
                    let mut out = Vec::with_capacity(len);
                    for r in rs.iter() {
                        out.extend_from_slice(self.buf.get(r.clone()).unwrap_or_default());
                    }
                    out
                }
            });
            self.buf = Vec::new();
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
        let step = self.match_step(from, &h, payload.len())?;
        self.payloads.insert(step, payload.to_vec());
        self.advance()
    }

    /// As [`Schedule::handle_message`] for a message whose body came apart
    /// (passed by reference): kept as it is, without a copy.
    pub fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let h = decode_head(from, head)?;
        let step = self.match_step(from, &h, body.len())?;
        self.payloads.insert(step, body);
        self.advance()
    }

    /// The receive step message `h` from `from` (`len` bytes of body) is for.
    fn match_step(&mut self, from: u32, h: &Header, len: usize) -> Result<usize, CollError> {
        let key = (from, h.kind);
        let seen = self.matched.get(&key).copied().unwrap_or(0);
        let Some(next) = self.expected.get(&key).and_then(VecDeque::front).copied() else {
            return Err(if seen > 0 && h.step == seen.wrapping_sub(1) as u8 {
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
            });
        };
        if h.step != seen as u8 {
            return Err(if seen > 0 && h.step == seen.wrapping_sub(1) as u8 {
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
            });
        }
        if len != next.len {
            return Err(CollError::DataLengthMismatch {
                from,
                expected: next.len,
                got: len,
            });
        }
        if let Some(q) = self.expected.get_mut(&key) {
            q.pop_front();
        }
        self.matched.insert(key, seen.wrapping_add(1));
        Ok(next.step)
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
            ranges: vec![blocks.get(at(s) as usize).cloned().unwrap_or_default()],
        });
        steps.push(Step::Recv {
            from: left,
            kind,
            ranges: vec![blocks.get(at(s + 1) as usize).cloned().unwrap_or_default()],
            apply: Apply::Store,
        });
    }
}
