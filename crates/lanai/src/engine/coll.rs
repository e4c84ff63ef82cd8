//! Host-based collectives: drives `lanai_coll`'s sans-IO machines over the
//! engine's transports. Messages carry the collective context and the
//! instance's sequence number, so early arrivals wait for their instance.

use super::comm::RankMap;
use super::error::{MpiError, MpiResult};
use super::request::{Op, Status};
use super::Engine;
use crate::abi::userbuf::UserBuf;
use lanai_coll::{AllreduceAlgo, BarrierAlgo, BcastAlgo, Collective, Combine};
use lanai_common::knobs;
use lanai_wire::envelope::{Envelope, Kind};
use std::collections::HashMap;

type Machine = Box<dyn Collective + Send>;
/// A message for an instance not started yet: sender and payload.
type EarlyMsg = (u32, Vec<u8>);

struct Instance {
    ctx: u32,
    seq: u32,
    rank: u32,
    map: RankMap,
    machine: Machine,
    req: usize,
    /// Where the result goes (bcast, reduce root, allreduce).
    out: Option<UserBuf>,
    error: Option<String>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("ctx", &self.ctx)
            .field("seq", &self.seq)
            .finish()
    }
}

/// Collective instances in flight and messages that arrived before theirs.
#[derive(Debug, Default)]
pub struct Colls {
    active: Vec<Instance>,
    early: HashMap<(u32, u32), Vec<EarlyMsg>>,
    dirty: bool,
}

impl Colls {
    pub fn deliver(&mut self, ctx: u32, seq: u32, from: u32, payload: &[u8]) {
        self.dirty = true;
        match self
            .active
            .iter_mut()
            .find(|i| i.ctx == ctx && i.seq == seq)
        {
            Some(inst) => {
                if let Err(e) = inst.machine.handle_message(from, payload) {
                    inst.error.get_or_insert(e.to_string());
                }
            }
            None => self
                .early
                .entry((ctx, seq))
                .or_default()
                .push((from, payload.to_vec())),
        }
    }

    pub fn has_work(&self) -> bool {
        self.dirty
    }
}

fn coll_err(e: impl std::fmt::Display) -> MpiError {
    MpiError::new(crate::abi::consts::MPI_ERR_OTHER, e.to_string())
}

/// Collective algorithms chosen by knobs, read once at `MPI_Init`.
#[derive(Debug, Clone, Copy)]
pub struct Algorithms {
    /// `None`: choose per call (`auto`).
    pub barrier: Option<BarrierAlgo>,
    pub bcast: BcastAlgo,
    pub allreduce: AllreduceAlgo,
}

impl Algorithms {
    pub fn from_knobs() -> MpiResult<Self> {
        let barrier = match knobs::get(&knobs::BARRIER).as_str() {
            "auto" => None,
            "pairwise" => Some(BarrierAlgo::PairwiseExchange),
            other => Some(
                other
                    .parse()
                    .map_err(|e| MpiError::other(format!("LANAI_BARRIER: {e}")))?,
            ),
        };
        let allreduce = knobs::get(&knobs::ALLREDUCE)
            .parse()
            .map_err(|e| MpiError::other(format!("LANAI_ALLREDUCE: {e}")))?;
        let bcast = knobs::get(&knobs::BCAST)
            .parse()
            .map_err(|e| MpiError::other(format!("LANAI_BCAST: {e}")))?;
        let v = knobs::get(&knobs::REDUCE);
        if v != "auto" && v != "binomial" {
            return Err(MpiError::other(format!(
                "LANAI_REDUCE={v:?}: the choices are auto, binomial"
            )));
        }
        Ok(Self {
            barrier,
            bcast,
            allreduce,
        })
    }
}

impl Engine {
    /// Starts a collective instance on `comm` with `machine`.
    pub fn start_coll(
        &mut self,
        comm: usize,
        machine: Machine,
        out: Option<UserBuf>,
    ) -> MpiResult<usize> {
        let cm = self.comms.get_mut(comm)?;
        let seq = cm.coll_seq;
        cm.coll_seq = cm.coll_seq.wrapping_add(1);
        let (ctx, rank, map) = (cm.coll_ctx(), cm.rank, cm.map.clone());
        let req = self.st.reqs.insert(Op::Coll);
        let mut inst = Instance {
            ctx,
            seq,
            rank,
            map,
            machine,
            req,
            out,
            error: None,
        };
        if let Some(msgs) = self.st.colls.early.remove(&(ctx, seq)) {
            for (from, data) in msgs {
                if let Err(e) = inst.machine.handle_message(from, &data) {
                    inst.error.get_or_insert(e.to_string());
                }
            }
        }
        self.st.colls.active.push(inst);
        self.st.colls.dirty = true;
        self.drive_colls()?;
        Ok(req)
    }

    /// Sends what machines ask for and completes finished instances.
    pub fn drive_colls(&mut self) -> MpiResult<bool> {
        if !self.st.colls.dirty {
            return Ok(false);
        }
        self.st.colls.dirty = false;
        let mut did = false;
        let mut i = 0;
        while i < self.st.colls.active.len() {
            while let Some(out) = self.st.colls.active[i].machine.poll_send() {
                let inst = &self.st.colls.active[i];
                let env = Envelope {
                    kind: Kind::Coll,
                    flags: 0,
                    ctx: inst.ctx,
                    src: inst.rank,
                    tag: inst.seq as i32,
                    len: out.data.len() as u64,
                    cookie: 0,
                };
                let to = match &inst.map {
                    RankMap::Identity => out.to,
                    RankMap::List(l) => l[out.to as usize],
                };
                self.net_send(to, &env, &out.data)?;
                did = true;
            }
            let inst = &mut self.st.colls.active[i];
            if let Some(e) = inst.error.take() {
                return Err(MpiError::internal(format!(
                    "collective protocol error: {e}"
                )));
            }
            if inst.machine.is_done() {
                let mut inst = self.st.colls.active.swap_remove(i);
                if let (Some(buf), Some(res)) = (inst.out, inst.machine.take_result()) {
                    buf.write(&res);
                }
                self.st.reqs.complete(inst.req, Status::default());
                did = true;
            } else {
                i += 1;
            }
        }
        Ok(did)
    }

    fn run_coll(&mut self, comm: usize, machine: Machine, out: Option<UserBuf>) -> MpiResult<()> {
        let req = self.start_coll(comm, machine, out)?;
        self.wait(req)?;
        self.st.reqs.remove(req);
        Ok(())
    }

    pub fn barrier(&mut self, comm: usize) -> MpiResult<()> {
        let cm = self.comms.get(comm)?;
        let algo = self
            .settings
            .algos
            .barrier
            .unwrap_or(BarrierAlgo::Dissemination);
        let m = lanai_coll::barrier(cm.rank, cm.size, algo).map_err(coll_err)?;
        self.run_coll(comm, m, None)
    }

    pub fn bcast(&mut self, comm: usize, buf: UserBuf, root: u32) -> MpiResult<()> {
        let cm = self.comms.get(comm)?;
        let data = if cm.rank == root {
            buf.as_slice().to_vec()
        } else {
            vec![0; buf.len()]
        };
        let m = lanai_coll::bcast(cm.rank, cm.size, root, data, self.settings.algos.bcast)
            .map_err(coll_err)?;
        let out = (cm.rank != root).then_some(buf);
        self.run_coll(comm, m, out)
    }

    /// Reduce to `root`; `out` is the root's receive buffer.
    pub fn reduce(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: Option<UserBuf>,
        root: u32,
        op: Box<dyn Combine + Send>,
    ) -> MpiResult<()> {
        let cm = self.comms.get(comm)?;
        let m = lanai_coll::Reduce::new(cm.rank, cm.size, root, data, op).map_err(coll_err)?;
        self.run_coll(comm, Box::new(m), out)
    }

    pub fn allreduce(
        &mut self,
        comm: usize,
        data: Vec<u8>,
        out: UserBuf,
        op: Box<dyn Combine + Send>,
    ) -> MpiResult<()> {
        let cm = self.comms.get(comm)?;
        let algo = self.settings.algos.allreduce;
        let algo = algo.resolve(cm.size, data.len());
        let m = lanai_coll::allreduce(cm.rank, cm.size, data, op, algo).map_err(coll_err)?;
        self.run_coll(comm, m, Some(out))
    }
}
