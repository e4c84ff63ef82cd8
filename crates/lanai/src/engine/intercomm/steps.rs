//! Intercommunicator collectives as chains of steps, so that every one of
//! them can be nonblocking.
//!
//! A collective is a first [`Step`]: a `lanai_coll` machine to run as one
//! phase of the collective's instance, and what to do with its result,
//! which yields the next step. The chain is kept in the engine's state and
//! moved on from progress: when a step's instance completes, its
//! continuation runs and the next instance starts (its messages that came
//! early wait for it in the collective table). The sequence number was
//! taken at the call, so chains started in one order at every member can
//! finish in any order without mixing.

use super::super::coll::coll_status;
use super::super::comm::{Capture, RankMap, Slot};
use super::super::error::{MpiError, MpiResult};
use super::super::request::Op;
use super::super::Engine;
use super::{Inter, Machine};

/// What follows a step, given its machine's result.
pub(super) type Then = Box<dyn FnOnce(Option<Vec<u8>>) -> MpiResult<Step> + Send>;

/// One step of an intercommunicator collective.
pub(super) enum Step {
    /// Run `machine` as sub-instance `phase` over the world ranks `map`,
    /// where this process is `me`; then `then`.
    Run {
        phase: u32,
        map: Vec<u32>,
        me: u32,
        machine: Machine,
        then: Then,
    },
    /// The collective is complete at this process.
    Done,
}

impl Step {
    pub(super) fn run(
        phase: u32,
        map: Vec<u32>,
        me: u32,
        machine: Machine,
        then: impl FnOnce(Option<Vec<u8>>) -> MpiResult<Step> + Send + 'static,
    ) -> Step {
        Step::Run {
            phase,
            map,
            me,
            machine,
            then: Box::new(then),
        }
    }

    /// A step whose result nobody needs, and after which the collective is done.
    pub(super) fn last(phase: u32, map: Vec<u32>, me: u32, machine: Machine) -> Step {
        Step::run(phase, map, me, machine, |_| Ok(Step::Done))
    }
}

/// A chain in flight: the program's request and the running step.
pub struct InterOp {
    req: usize,
    ctx: u32,
    base: u32,
    step_req: usize,
    slot: Slot,
    then: Then,
}

impl std::fmt::Debug for InterOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterOp")
            .field("req", &self.req)
            .field("ctx", &self.ctx)
            .field("base", &self.base)
            .finish()
    }
}

impl Engine {
    /// Starts the chain beginning with `first` for the collective `it`;
    /// returns the request that completes with the chain.
    pub(super) fn inter_start(&mut self, it: &Inter, first: Step) -> MpiResult<usize> {
        let req = self.st.reqs.insert(Op::Coll);
        if let Err(e) = self.inter_advance(req, it.ctx, it.base, first) {
            self.st.reqs.remove(req);
            return Err(e);
        }
        Ok(req)
    }

    fn inter_advance(&mut self, req: usize, ctx: u32, base: u32, step: Step) -> MpiResult<()> {
        match step {
            Step::Done => self.st.reqs.complete(req, coll_status()),
            Step::Run {
                phase,
                map,
                me,
                machine,
                then,
            } => {
                let slot = Slot::default();
                let cap = Capture::new(machine, slot.clone());
                let seq = base.wrapping_add(phase);
                let step_req =
                    self.start_instance(ctx, seq, me, RankMap::List(map), Box::new(cap), None)?;
                self.st.inter_ops.push(InterOp {
                    req,
                    ctx,
                    base,
                    step_req,
                    slot,
                    then,
                });
            }
        }
        Ok(())
    }

    /// Moves on the chains whose step finished. True if any did.
    pub(in crate::engine) fn drive_inter_ops(&mut self) -> MpiResult<bool> {
        let mut did = false;
        let mut i = 0;
        while i < self.st.inter_ops.len() {
            if !self.is_done(self.st.inter_ops[i].step_req) {
                i += 1;
                continue;
            }
            did = true;
            let op = self.st.inter_ops.swap_remove(i);
            self.st.reqs.remove(op.step_req);
            let res = op.slot.lock().ok().and_then(|mut s| s.take());
            let next = (op.then)(res).and_then(|s| self.inter_advance(op.req, op.ctx, op.base, s));
            if let Err(e) = next {
                // The program's request must not hang: it completes with
                // the error, which also goes to whoever is progressing.
                let mut st = coll_status();
                st.error = e.class;
                self.st.reqs.complete(op.req, st);
                return Err(e);
            }
        }
        Ok(did)
    }
}

/// The half of a two-block result that is not this side's.
pub(super) fn other_half(both: &[u8], me: u32) -> MpiResult<Vec<u8>> {
    let half = both.len() / 2;
    let r = if me == 0 { half..both.len() } else { 0..half };
    both.get(r)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| MpiError::internal("intercommunicator collective: short exchange"))
}
