//! Small `MPI_Reduce` through the barrier device's mailboxes
//! (`lanai_coll::mailbox`): on a communicator whose members share one node,
//! a non-root drops its contribution into its next slot and completes, as an
//! eager send would, and the root folds every contribution in the same tree
//! order the message-passing reduce uses, so the bits do not depend on the
//! path.

use super::central::Central;
use super::coll::Combiner;
use super::comm::Comms;
use super::error::{MpiError, MpiResult};
use super::net::Net;
use super::request::{Op, DONE};
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::barrier_device::{Channel, Device, MAIL_MAX};
use lanai_coll::mailbox::{Collect, FreeSlots, Post};
use lanai_coll::{Combine, ReduceTree};

/// One mailbox reduce in flight on this rank.
pub struct MailOp {
    req: usize,
    comm: usize,
    chan: usize,
    work: Work,
}

enum Work {
    /// `data` is the caller's send buffer, which MPI keeps unchanged until
    /// the reduce completes: it is copied once, into the slot.
    Post { post: Post, data: UserBuf },
    Collect {
        collect: Collect,
        op: Combiner,
        out: UserBuf,
        shape: ReduceTree,
    },
}

impl std::fmt::Debug for MailOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailOp")
            .field("req", &self.req)
            .field("comm", &self.comm)
            .field("root", &matches!(self.work, Work::Collect { .. }))
            .finish()
    }
}

impl MailOp {
    pub fn comm(&self) -> usize {
        self.comm
    }
}

/// What a poll found, applied once the borrows end.
enum Outcome {
    Waiting,
    /// A root took some contributions: their owners may wait for the slots.
    Took,
    Posted,
    Collected,
    Failed(MpiError),
}

impl Engine {
    /// `MPI_Reduce` of `data` to `root` through the mailboxes, when `comm`
    /// qualifies (see [`Engine::device_ready`]); otherwise the operator
    /// comes back for the message-passing reduce.
    pub(super) fn central_reduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: u32,
        op: Combiner,
        may_agree: bool,
    ) -> MpiResult<Result<usize, Combiner>> {
        if !self.settings.algos.reduce_mailbox
            || !self.device_ready(comm, data.len(), MAIL_MAX, may_agree)?
        {
            return Ok(Err(op));
        }
        let shape = self.settings.algos.reduce;
        let dev = device(&self.net)?;
        let cm = self.comms.get_mut(comm)?;
        let rank = cm.rank;
        let Central::Active(setup) = &mut cm.central else {
            return Err(MpiError::internal("mailbox reduce without a channel"));
        };
        let chan = setup
            .node_channel()
            .ok_or_else(|| MpiError::internal("mailbox reduce off its node"))?;
        setup.mail = setup.mail.wrapping_add(1);
        let stamp = setup.mail;
        let mut work = match out {
            Some(out) if rank == root => Work::Collect {
                collect: Collect::new(
                    stamp,
                    setup.members().len(),
                    root as usize,
                    data.as_slice(),
                    self.st.colls.take_buf(),
                ),
                op,
                out,
                shape,
            },
            _ => Work::Post {
                post: Post::new(setup.me(), stamp, root as usize),
                data,
            },
        };
        // A blocking call tries once before it makes a request: a non-root
        // whose slot is free, and a root whose contributions are all in (a
        // non-root runs ahead), are done here. Only with no other mailbox
        // reduce in flight, since those are polled whenever one starts.
        if may_agree && self.st.colls.mail.is_empty() {
            match poll(&mut work, &dev.channel(chan), setup.members(), &setup.free) {
                Outcome::Waiting => {}
                Outcome::Took => self.mail_wake(comm, &work, false)?,
                outcome => {
                    self.mail_end(comm, work, outcome)?;
                    return Ok(Ok(DONE));
                }
            }
        }
        let req = self.st.reqs.insert(Op::Coll);
        self.st.colls.mail.push(MailOp {
            req,
            comm,
            chan,
            work,
        });
        self.drive_mail()?;
        Ok(Ok(req))
    }

    /// Polls every mailbox reduce in flight. True if any moved on.
    pub(super) fn drive_mail(&mut self) -> MpiResult<bool> {
        let mut did = false;
        let mut i = 0;
        while i < self.st.colls.mail.len() {
            let op = &mut self.st.colls.mail[i];
            match poll_op(&self.net, &self.comms, op)? {
                Outcome::Waiting => i += 1,
                Outcome::Took => {
                    let op = &self.st.colls.mail[i];
                    self.mail_wake(op.comm, &op.work, false)?;
                    did = true;
                    i += 1;
                }
                outcome => {
                    let op = self.st.colls.mail.swap_remove(i);
                    let res = self.mail_end(op.comm, op.work, outcome);
                    // The request completes either way; an error is the caller's.
                    self.st.reqs.complete(op.req, super::coll::coll_status());
                    res?;
                    did = true;
                }
            }
        }
        Ok(did)
    }

    /// Finishes an op that is over: a post wakes its root; a collect wakes
    /// the members that may wait for their slots, and folds into the
    /// caller's buffer.
    fn mail_end(&mut self, comm: usize, work: Work, outcome: Outcome) -> MpiResult<()> {
        self.mail_wake(comm, &work, matches!(outcome, Outcome::Posted))?;
        match (outcome, work) {
            (Outcome::Failed(e), _) => Err(e),
            (Outcome::Posted, Work::Post { .. }) => Ok(()),
            (
                Outcome::Collected,
                Work::Collect {
                    collect,
                    op: comb,
                    out,
                    shape,
                },
            ) => fold(collect, &comb, shape).map(|r| {
                out.write(&r);
                self.st.colls.give_buf(r);
            }),
            _ => Err(MpiError::internal("a mailbox op ended out of turn")),
        }
    }

    /// Rings the members of `comm` that sleep: the root after a post
    /// (`to_root`), else every other member, which may wait for a slot the
    /// root just gave back.
    fn mail_wake(&self, comm: usize, work: &Work, to_root: bool) -> MpiResult<()> {
        let (Some(shm), Some(bell)) = (self.net.shm.as_ref(), self.net.doorbell.as_ref()) else {
            return Ok(());
        };
        let cm = self.comms.get(comm)?;
        let Central::Active(setup) = &cm.central else {
            return Ok(());
        };
        let members = setup.members();
        let targets: &[usize] = if to_root {
            let root = match work {
                Work::Post { post, .. } => post.root(),
                Work::Collect { .. } => return Ok(()),
            };
            members.get(root).map(std::slice::from_ref).unwrap_or(&[])
        } else {
            members
        };
        for &m in targets {
            if m != setup.me() && shm.peer_sleeping(m) {
                bell.ring(self.net.local_world[m]);
            }
        }
        Ok(())
    }
}

/// The node's barrier device, which holds the mailboxes.
fn device(net: &Net) -> MpiResult<Device<'_>> {
    net.shm
        .as_ref()
        .and_then(|s| s.device())
        .ok_or_else(|| MpiError::internal("barrier device vanished"))
}

/// Polls mailbox op `op` once.
fn poll_op(net: &Net, comms: &Comms, op: &mut MailOp) -> MpiResult<Outcome> {
    let dev = device(net)?;
    let Central::Active(setup) = &comms.get(op.comm)?.central else {
        return Err(MpiError::internal("mailbox reduce lost its channel"));
    };
    Ok(poll(
        &mut op.work,
        &dev.channel(op.chan),
        setup.members(),
        &setup.free,
    ))
}

fn poll(work: &mut Work, w: &Channel<'_>, wires: &[usize], free: &FreeSlots) -> Outcome {
    match work {
        Work::Post { post, data } => {
            if post.poll(w, free, data.as_slice()) {
                Outcome::Posted
            } else {
                Outcome::Waiting
            }
        }
        Work::Collect { collect, .. } => {
            let before = collect.missing();
            match collect.poll(w, wires) {
                Err(e) => Outcome::Failed(MpiError::new(c::MPI_ERR_TRUNCATE, e.to_string())),
                Ok(true) => Outcome::Collected,
                Ok(false) if collect.missing() < before => Outcome::Took,
                Ok(false) => Outcome::Waiting,
            }
        }
    }
}

/// The root's result: the binomial tree folds in place in the collected
/// buffer, which comes back holding it; other trees walk their shape.
fn fold(collect: Collect, op: &dyn Combine, shape: ReduceTree) -> MpiResult<Vec<u8>> {
    let res = match shape {
        ReduceTree::Binomial => {
            let len = collect.len();
            lanai_coll::fold_flat(collect.into_flat(), len, op)
        }
        _ => lanai_coll::fold_tree(&collect.parts(), op, shape),
    };
    res.map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))
}
