//! Small `MPI_Reduce` through the barrier device's mailboxes
//! (`lanai_coll::mailbox`): on a communicator whose members share one node,
//! a non-root drops its contribution into its next slot and completes, as an
//! eager send would, and the root folds every contribution in the same tree
//! order the message-passing reduce uses, so the bits do not depend on the
//! path.

use super::central::{Central, Setup};
use super::coll::{Combiner, MakeCombiner};
use super::comm::Comms;
use super::error::{MpiError, MpiResult};
use super::net::Net;
use super::request::{Op, DONE};
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::barrier_device::{Channel, Device, MAIL_MAX};
use lanai_coll::mailbox::{Collect, FreeSlots, Post};
use lanai_coll::ReduceTree;

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
    /// qualifies (see [`Engine::device_ready`]); otherwise `None`, and the
    /// message-passing reduce runs.
    pub(super) fn central_reduce(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: u32,
        op: impl MakeCombiner,
        may_agree: bool,
    ) -> MpiResult<Option<usize>> {
        // Only the root combines, and building the combiner is its check of
        // the operation (the others checked theirs at the entry point):
        // before anything that waits for the others.
        let comb = match out {
            Some(_) if self.comms.get(comm)?.rank == root => Some(op.make()?),
            _ => None,
        };
        if !self.settings.algos.reduce_mailbox
            || !self.device_ready(comm, data.len(), MAIL_MAX, may_agree)?
        {
            return Ok(None);
        }
        let shape = self.settings.algos.reduce;
        let dev = device(&self.net)?;
        let cm = self.comms.get_mut(comm)?;
        let Central::Active(setup) = &mut cm.central else {
            return Err(MpiError::internal("mailbox reduce without a channel"));
        };
        let chan = setup
            .node_channel()
            .ok_or_else(|| MpiError::internal("mailbox reduce off its node"))?;
        setup.mail = setup.mail.wrapping_add(1);
        let stamp = setup.mail;
        // A blocking call tries once before it makes a request: a non-root
        // whose slot is free, and a root whose contributions are all in (a
        // non-root runs ahead), are done here. Only with no other mailbox
        // reduce in flight, since those are polled whenever one starts.
        let first_try = may_agree && self.st.colls.mail.is_empty();
        if comb.is_none() && first_try {
            // The post alone, before any request state: the non-root's
            // stores queue behind its slot's fill (`docs/decisions.md`).
            let mut post = Post::new(setup.me(), stamp, root as usize);
            if post.poll(&dev.channel(chan), &setup.free, data.as_slice()) {
                let root = root as usize;
                ring_asleep(
                    &self.net,
                    setup,
                    setup.members().get(root..=root).unwrap_or(&[]),
                );
                return Ok(Some(DONE));
            }
        }
        let work = match (out, comb) {
            (Some(out), Some(op)) => {
                let mut collect = Collect::new(
                    stamp,
                    setup.members().len(),
                    root as usize,
                    data.as_slice(),
                    self.st.colls.take_buf(),
                );
                // The root likewise works on its parts in place: moving them
                // into a request's state costs more than the rest of a call.
                if first_try {
                    let outcome = poll_collect(&mut collect, &dev.channel(chan), setup.members());
                    if !matches!(outcome, Outcome::Waiting) {
                        ring_asleep(&self.net, setup, setup.members());
                    }
                    match outcome {
                        Outcome::Failed(e) => return Err(e),
                        Outcome::Collected => {
                            let spare = fold_out(collect, &op, shape, &out)?;
                            self.st.colls.give_buf(spare);
                            return Ok(Some(DONE));
                        }
                        _ => {}
                    }
                }
                Work::Collect {
                    collect,
                    op,
                    out,
                    shape,
                }
            }
            _ => Work::Post {
                post: Post::new(setup.me(), stamp, root as usize),
                data,
            },
        };
        let req = self.st.reqs.insert(Op::Coll);
        self.st.colls.mail.push(MailOp {
            req,
            comm,
            chan,
            work,
        });
        self.drive_mail()?;
        Ok(Some(req))
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
            ) => fold_out(collect, &comb, shape, &out).map(|spare| self.st.colls.give_buf(spare)),
            _ => Err(MpiError::internal("a mailbox op ended out of turn")),
        }
    }

    /// Rings the members of `comm` that sleep: the root after a post
    /// (`to_root`), else every other member, which may wait for a slot the
    /// root just gave back.
    fn mail_wake(&self, comm: usize, work: &Work, to_root: bool) -> MpiResult<()> {
        let Central::Active(setup) = &self.comms.get(comm)?.central else {
            return Ok(());
        };
        let members = setup.members();
        let targets: &[usize] = if to_root {
            let root = match work {
                Work::Post { post, .. } => post.root(),
                Work::Collect { .. } => return Ok(()),
            };
            members.get(root..=root).unwrap_or(&[])
        } else {
            members
        };
        ring_asleep(&self.net, setup, targets);
        Ok(())
    }
}

/// Rings those of the device inputs `targets` (members of `setup`'s
/// communicator) that sleep, but not this rank.
#[inline(always)]
fn ring_asleep(net: &Net, setup: &Setup, targets: &[usize]) {
    let (Some(shm), Some(bell)) = (net.shm.as_ref(), net.doorbell.as_ref()) else {
        return;
    };
    for &m in targets {
        if m != setup.me() && shm.peer_sleeping(m) {
            bell.ring(net.local_world[m]);
        }
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
        Work::Collect { collect, .. } => poll_collect(collect, w, wires),
    }
}

/// Polls a root's collection once; `Took` if it took some contributions
/// but not all.
#[inline(always)]
fn poll_collect(collect: &mut Collect, w: &Channel<'_>, wires: &[usize]) -> Outcome {
    let before = collect.missing();
    match collect.poll(w, wires) {
        Err(e) => Outcome::Failed(MpiError::new(c::MPI_ERR_TRUNCATE, e.to_string())),
        Ok(true) => Outcome::Collected,
        Ok(false) if collect.missing() < before => Outcome::Took,
        Ok(false) => Outcome::Waiting,
    }
}

/// Writes the root's result to `out`: the binomial tree folds in place in
/// the collected buffer, which comes back for the next call; other trees
/// walk their shape.
fn fold_out(
    collect: Collect,
    op: &Combiner,
    shape: ReduceTree,
    out: &UserBuf,
) -> MpiResult<Vec<u8>> {
    let op_err = |e: lanai_coll::OpError| MpiError::new(c::MPI_ERR_OP, e.to_string());
    if shape != ReduceTree::Binomial {
        out.write(&lanai_coll::fold_tree(&collect.parts(), op, shape).map_err(op_err)?);
        return Ok(collect.into_flat());
    }
    let len = collect.len();
    let mut all = collect.into_flat();
    out.write(lanai_coll::fold_in_place(&mut all, len, op).map_err(op_err)?);
    Ok(all)
}
