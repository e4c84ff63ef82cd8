//! A deterministic simulator that runs one collective on `P` machines.
//!
//! In-flight messages sit in a FIFO queue per ordered pair of ranks; a
//! `Scheduler` picks the next event (construct a machine, or deliver the head
//! of one queue), so tests can replay random, adversarial and exhaustive
//! delivery orders. Pure code: no threads, no clocks.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use crate::error::CollError;
use crate::machine::Collective;

/// One step the simulator can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// Create rank's machine (the rank enters the collective).
    Construct(u32),
    /// Hand the oldest message from `from` to `to`.
    Deliver { from: u32, to: u32 },
}

/// What a scheduler may look at when choosing.
#[derive(Debug)]
pub struct SimView<'a> {
    /// Events taken so far.
    pub time: u64,
    /// Messages each rank has handled.
    pub handled: &'a [u64],
    /// Whether each rank's machine exists.
    pub constructed: &'a [bool],
    /// Whether each rank's machine reported done.
    pub done: &'a [bool],
}

/// Picks the next event; returns an index into `enabled` (never empty).
pub trait Scheduler {
    fn choose(&mut self, view: &SimView<'_>, enabled: &[Event]) -> usize;
}

/// xorshift64* — small, seedable, good enough to shuffle delivery orders.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // Zero is a fixed point of xorshift; mix the seed so it never is.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish in `0..n` for `n > 0`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Uniformly random among enabled events.
#[derive(Debug, Clone)]
pub struct RandomOrder(pub XorShift);

impl RandomOrder {
    pub fn new(seed: u64) -> Self {
        RandomOrder(XorShift::new(seed))
    }
}

impl Scheduler for RandomOrder {
    fn choose(&mut self, _: &SimView<'_>, enabled: &[Event]) -> usize {
        self.0.below(enabled.len())
    }
}

/// Constructs everyone first, then always delivers to the rank that has
/// handled the most messages, so the rank furthest behind is served last.
#[derive(Debug, Clone)]
pub struct FurthestBehindLast(pub XorShift);

impl FurthestBehindLast {
    pub fn new(seed: u64) -> Self {
        FurthestBehindLast(XorShift::new(seed))
    }
}

impl Scheduler for FurthestBehindLast {
    fn choose(&mut self, view: &SimView<'_>, enabled: &[Event]) -> usize {
        let score = |e: &Event| match *e {
            Event::Construct(_) => u64::MAX,
            Event::Deliver { to, .. } => view.handled[to as usize],
        };
        let best = enabled.iter().map(score).max().unwrap_or(0);
        let ties: Vec<usize> = (0..enabled.len())
            .filter(|&i| score(&enabled[i]) == best)
            .collect();
        ties[self.0.below(ties.len())]
    }
}

/// Holds back the construction of the `late` ranks until nothing else can
/// happen, so their messages arrive before they exist; otherwise defers to `inner`.
pub struct LateJoin<S> {
    pub late: Vec<u32>,
    pub inner: S,
}

impl<S: Scheduler> Scheduler for LateJoin<S> {
    fn choose(&mut self, view: &SimView<'_>, enabled: &[Event]) -> usize {
        let held = |e: &Event| matches!(e, Event::Construct(r) if self.late.contains(r));
        let free: Vec<usize> = (0..enabled.len()).filter(|&i| !held(&enabled[i])).collect();
        if free.is_empty() {
            // Only late constructions remain: release them one at a time, in listed order.
            let pos = self
                .late
                .iter()
                .find_map(|r| enabled.iter().position(|e| *e == Event::Construct(*r)));
            return pos.unwrap_or(0);
        }
        let sub: Vec<Event> = free.iter().map(|&i| enabled[i]).collect();
        free[self.inner.choose(view, &sub).min(sub.len() - 1)]
    }
}

/// Follows a recorded list of choices, then takes choice 0; records the
/// branching factor of each decision so `explore_all` can enumerate them.
#[derive(Debug, Default)]
struct Scripted {
    prefix: Vec<usize>,
    taken: Vec<(usize, usize)>,
    branch_on_construct: bool,
}

impl Scheduler for Scripted {
    fn choose(&mut self, _: &SimView<'_>, enabled: &[Event]) -> usize {
        if !self.branch_on_construct {
            if let Some(i) = enabled
                .iter()
                .position(|e| matches!(e, Event::Construct(_)))
            {
                return i;
            }
        }
        let pos = self.taken.len();
        let c = self
            .prefix
            .get(pos)
            .copied()
            .unwrap_or(0)
            .min(enabled.len() - 1);
        self.taken.push((c, enabled.len()));
        c
    }
}

/// Builds rank `r`'s machine.
pub type Factory<'f> = dyn FnMut(u32) -> Result<Box<dyn Collective>, CollError> + 'f;

/// What a completed simulation observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Each rank's `take_result()`.
    pub results: Vec<Option<Vec<u8>>>,
    /// Event time at which each rank was constructed.
    pub constructed_at: Vec<u64>,
    /// Event time at which each rank first reported done.
    pub done_at: Vec<u64>,
    /// Messages delivered in all.
    pub messages: u64,
}

impl Outcome {
    /// Time the last rank entered.
    pub fn last_entry(&self) -> u64 {
        self.constructed_at.iter().copied().max().unwrap_or(0)
    }
}

/// Why a simulation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// Building a rank's machine failed.
    ConstructFailed { rank: u32, error: CollError },
    /// A machine rejected a delivered message.
    MachineFailed {
        rank: u32,
        from: u32,
        error: CollError,
    },
    /// A machine addressed a rank outside the communicator.
    SendOutOfRange { from: u32, to: u32 },
    /// A message reached a machine that had already finished.
    MessageAfterDone { from: u32, to: u32 },
    /// Nothing left to do, yet these ranks are not done.
    Stuck { not_done: Vec<u32> },
    /// A machine that claims `synchronizes` was done while a rank it had
    /// sent to had not entered the collective.
    DoneBeforeReceiverEntered { rank: u32, to: u32 },
    /// The run took more than `MAX_EVENTS` events (a machine that never stops sending).
    EventLimit,
}

/// Bound on events per run, so a runaway machine fails instead of hanging a test.
pub const MAX_EVENTS: u64 = 1 << 24;

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::ConstructFailed { rank, error } => {
                write!(f, "constructing rank {rank} failed: {error}")
            }
            SimError::MachineFailed { rank, from, error } => {
                write!(f, "rank {rank} rejected a message from {from}: {error}")
            }
            SimError::SendOutOfRange { from, to } => {
                write!(f, "rank {from} sent to rank {to}, outside the communicator")
            }
            SimError::MessageAfterDone { from, to } => {
                write!(f, "rank {to} got a message from {from} after it was done")
            }
            SimError::Stuck { not_done } => {
                write!(f, "no event possible but ranks {not_done:?} are not done")
            }
            SimError::DoneBeforeReceiverEntered { rank, to } => write!(
                f,
                "rank {rank} synchronizes but was done before rank {to}, which it sent to, entered"
            ),
            SimError::EventLimit => write!(f, "run exceeded {MAX_EVENTS} events"),
        }
    }
}

impl std::error::Error for SimError {}

/// Runs one collective on `size` machines to completion under `sched`.
pub fn run(
    size: u32,
    factory: &mut Factory<'_>,
    sched: &mut dyn Scheduler,
) -> Result<Outcome, SimError> {
    let n = size as usize;
    let mut machines: Vec<Option<Box<dyn Collective>>> = (0..n).map(|_| None).collect();
    let mut queues: BTreeMap<(u32, u32), VecDeque<crate::Outgoing>> = BTreeMap::new();
    let mut handled = vec![0u64; n];
    let mut constructed = vec![false; n];
    let mut done = vec![false; n];
    let mut constructed_at = vec![0u64; n];
    let mut done_at = vec![0u64; n];
    // (from, to) pairs that carried a message.
    let mut sent = std::collections::BTreeSet::new();
    let mut time = 0u64;
    let mut messages = 0u64;
    let mut enabled = Vec::new();
    loop {
        enabled.clear();
        enabled.extend(
            (0..size)
                .filter(|&r| !constructed[r as usize])
                .map(Event::Construct),
        );
        enabled.extend(
            queues
                .keys()
                .filter(|(_, to)| constructed[*to as usize])
                .map(|&(from, to)| Event::Deliver { from, to }),
        );
        if enabled.is_empty() {
            break;
        }
        if time >= MAX_EVENTS {
            return Err(SimError::EventLimit);
        }
        let view = SimView {
            time,
            handled: &handled,
            constructed: &constructed,
            done: &done,
        };
        let ev = enabled[sched.choose(&view, &enabled).min(enabled.len() - 1)];
        time += 1;
        let rank = match ev {
            Event::Construct(r) => {
                let m = factory(r).map_err(|error| SimError::ConstructFailed { rank: r, error })?;
                machines[r as usize] = Some(m);
                constructed[r as usize] = true;
                constructed_at[r as usize] = time;
                r
            }
            Event::Deliver { from, to } => {
                let Some(msg) = queues.get_mut(&(from, to)).and_then(VecDeque::pop_front) else {
                    continue;
                };
                if queues.get(&(from, to)).is_some_and(VecDeque::is_empty) {
                    queues.remove(&(from, to));
                }
                if done[to as usize] {
                    return Err(SimError::MessageAfterDone { from, to });
                }
                if let Some(m) = machines[to as usize].as_mut() {
                    // Every other message arrives as head and body, as one
                    // passed by reference does, so both paths run.
                    let handled = if time % 2 == 0 {
                        m.handle_parts(from, &msg.head, msg.body)
                    } else {
                        m.handle_message(from, &msg.to_bytes())
                    };
                    handled.map_err(|error| SimError::MachineFailed {
                        rank: to,
                        from,
                        error,
                    })?;
                }
                handled[to as usize] += 1;
                messages += 1;
                to
            }
        };
        if let Some(m) = machines[rank as usize].as_mut() {
            while let Some(out) = m.poll_send() {
                if out.to >= size {
                    return Err(SimError::SendOutOfRange {
                        from: rank,
                        to: out.to,
                    });
                }
                sent.insert((rank, out.to));
                queues.entry((rank, out.to)).or_default().push_back(out);
            }
            if !done[rank as usize] && m.is_done() {
                done[rank as usize] = true;
                done_at[rank as usize] = time;
                if m.synchronizes() {
                    let late = sent
                        .range((rank, 0)..=(rank, u32::MAX))
                        .find(|&&(_, to)| !constructed[to as usize]);
                    if let Some(&(_, to)) = late {
                        return Err(SimError::DoneBeforeReceiverEntered { rank, to });
                    }
                }
            }
        }
    }
    let not_done: Vec<u32> = (0..size).filter(|&r| !done[r as usize]).collect();
    if !not_done.is_empty() {
        return Err(SimError::Stuck { not_done });
    }
    let results = machines
        .iter_mut()
        .map(|m| m.as_mut().and_then(|m| m.take_result()))
        .collect();
    Ok(Outcome {
        results,
        constructed_at,
        done_at,
        messages,
    })
}

/// Runs every distinct sequence of scheduling choices (depth-first), up to
/// `max_runs`, calling `check` on each outcome. With `branch_on_construct`
/// false, machines are constructed as soon as possible and only delivery
/// orders are enumerated. Returns the number of runs and whether the space
/// was exhausted.
pub fn explore_all(
    size: u32,
    factory: &mut Factory<'_>,
    branch_on_construct: bool,
    max_runs: usize,
    check: &mut dyn FnMut(&Outcome),
) -> Result<(usize, bool), SimError> {
    let mut prefix: Vec<usize> = Vec::new();
    let mut runs = 0;
    while runs < max_runs {
        let mut s = Scripted {
            prefix,
            taken: Vec::new(),
            branch_on_construct,
        };
        let out = run(size, factory, &mut s)?;
        check(&out);
        runs += 1;
        // Odometer step: bump the deepest decision that still has an untried option.
        let Some(i) = s.taken.iter().rposition(|&(c, n)| c + 1 < n) else {
            return Ok((runs, true));
        };
        prefix = s.taken[..i].iter().map(|&(c, _)| c).collect();
        prefix.push(s.taken[i].0 + 1);
    }
    Ok((runs, false))
}
