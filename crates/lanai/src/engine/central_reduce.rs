//! `MPI_Reduce` through the barrier device's mailboxes
//! (`lanai_coll::mailbox`): on a communicator whose members share one node,
//! a non-root drops its contribution into its next slot and completes, as an
//! eager send would, and the root folds every contribution in the same tree
//! order the message-passing reduce uses, so the bits do not depend on the
//! path.
//!
//! A contribution too large for a mailbox slot, up to `stage::STAGE_MAX`
//! bytes, is staged: the non-root copies it into a staging slot of its own
//! (`shm::stage`) and posts a descriptor of it instead, and the root folds
//! every contribution where it lies, straight into its receive buffer, then
//! frees the slots.

use super::central::{Central, Setup};
use super::coll::{Combiner, MakeCombiner};
use super::comm::Comms;
use super::error::{MpiError, MpiResult};
use super::mail_share::{MailScan, Readers, ScanPoll};
use super::net::Net;
use super::request::{Op, DONE};
use super::riding::Source;
use super::staged_allreduce::{Poll, StagedOp};
use super::Engine;
use crate::abi::consts as c;
use crate::abi::userbuf::UserBuf;
use crate::shm::barrier_device::{Channel, Device, MAIL_MAX};
use crate::shm::stage::{self, Stage, STAGE_MAX};
use lanai_coll::mailbox::{pieces, Collect, FreeSlots, Post, PostPieces, ReadPieces};
use lanai_coll::ReduceTree;

/// A staged contribution's descriptor, as its mailbox slot carries it: the
/// staging slot and the length, then zeros. It fills the whole mailbox
/// slot, reduces that small go through the mailbox itself, and those in
/// pieces are longer, so their first piece says more follow
/// (`mailbox::MORE`): a root and a member that disagree about the length
/// see a length mismatch, never a descriptor taken for data or the
/// reverse.
const DESC_LEN: usize = MAIL_MAX;

/// The longest contribution that goes through the mailboxes in pieces
/// where ranks share cores: three slots. On 2 cores, pieces against the
/// staging slots, us per reduce: 4 ranks, 112 / 128 / 168 / 256 B: 0.59 /
/// 0.85 / 0.89 / 1.30 against 1.19 / 1.21 / 1.22 / 1.23; 8 ranks: 1.3-1.5
/// / 2.33 / 2.29 / 3.33 against 2.0-2.35 / 2.33 / 2.37 / 2.54.
const PIECED_MAX: usize = 3 * MAIL_MAX;
/// The same where every rank has a core: two slots. 2 ranks, 64 B: 0.100
/// us a reduce in pieces against 0.116 staged.
const PIECED_CORES_MAX: usize = 2 * MAIL_MAX;

fn descriptor(slot: usize, len: usize) -> [u8; DESC_LEN] {
    let mut d = [0u8; DESC_LEN];
    d[..4].copy_from_slice(&(slot as u32).to_le_bytes());
    d[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    d
}

/// (staging slot, length) of a descriptor.
fn parse_descriptor(d: &[u8]) -> (usize, usize) {
    let word = |i: usize| u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]) as usize;
    (word(0), word(4))
}

/// One mailbox reduce in flight on this rank.
pub struct MailOp {
    req: usize,
    comm: usize,
    chan: usize,
    work: Work,
}

pub(super) enum Work {
    /// `data` is the caller's send buffer, which MPI keeps unchanged until
    /// the reduce completes, or a copy the call made: it is copied once,
    /// into the slot.
    Post { post: Post, data: Source },
    /// A post that other members read (`mail_share.rs`), in pieces of
    /// a slot each.
    PostFor {
        post: PostPieces,
        data: Source,
        readers: Readers,
    },
    /// Reading some of a post into `out` (through `tmp` when `out` is not
    /// contiguous).
    Read {
        read: ReadPieces,
        out: UserBuf,
        tmp: Vec<u8>,
    },
    /// A gatherv root's reads, one post of each member into its block of
    /// the receive buffer, in any order (`mail_share.rs`).
    ReadEach {
        /// The member's rank, its read, and its block.
        reads: Vec<(usize, ReadPieces, UserBuf)>,
        tmp: Vec<u8>,
        /// The first member whose block did not fit, and why: the others
        /// are still read, so their blocks arrive and their slots free.
        failed: Option<(usize, MpiError)>,
    },
    /// A scatterv root's posts, in stamp order: each a piece of a block
    /// for the one member at its position, with whether more pieces of
    /// that block follow (`mail_share.rs`). `next` posted so far.
    PostEach {
        me: usize,
        posts: Vec<(u32, usize, UserBuf, bool)>,
        next: usize,
    },
    /// A scan's posts and reads (`mail_share.rs`).
    Scan(Box<MailScan>),
    Collect {
        collect: Collect,
        merge: Merge,
        out: UserBuf,
        shape: ReduceTree,
    },
    /// A non-root's staged contribution: `data` goes into its staging slot
    /// once the reduce `after` is done with it (`staged` then), and its
    /// descriptor into the mailbox once the mailbox slot is free.
    StagedPost {
        post: Post,
        data: UserBuf,
        after: u32,
        staged: bool,
    },
    /// The root of a staged reduce: `collect` gathers the descriptors, and
    /// `own` is the root's contribution.
    StagedCollect {
        collect: Collect,
        op: Combiner,
        own: UserBuf,
        out: UserBuf,
        shape: ReduceTree,
    },
    /// A collective through the staging slots in chunks
    /// (`staged_allreduce.rs`).
    Chunked(Box<StagedOp>),
}

/// What a root makes of the contributions it collected.
pub(super) enum Merge {
    /// A reduce's: folds them.
    Fold(Combiner),
    /// A gather's: lays them end to end, in rank order.
    Gather,
}

impl std::fmt::Debug for MailOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailOp")
            .field("req", &self.req)
            .field("comm", &self.comm)
            .field(
                "root",
                &matches!(
                    self.work,
                    Work::Collect { .. }
                        | Work::StagedCollect { .. }
                        | Work::Chunked(_)
                        | Work::PostFor { .. }
                        | Work::ReadEach { .. }
                        | Work::PostEach { .. }
                ),
            )
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
    /// A reader copied a post out: its poster may wait for the slot.
    Read,
    /// A scan, or a gatherv root's reads, is over: the members whose
    /// parts it read may wait for slots.
    Scanned,
    Collected,
    Failed(MpiError),
    /// Failed by the post of the member of this rank.
    FailedFrom(usize, MpiError),
}

impl Engine {
    /// `MPI_Reduce` of `data` to `root` through the mailboxes, when `comm`
    /// qualifies (see [`Engine::device_ready`]); otherwise `None`, and the
    /// message-passing reduce runs.
    pub(super) fn central_reduce(
        &mut self,
        comm: usize,
        data: &UserBuf,
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
        // Contributions of up to one mailbox slot go through the mailbox
        // itself, larger ones up to a staging slot by descriptor.
        let staged = data.len() >= DESC_LEN;
        let max = if staged { STAGE_MAX } else { DESC_LEN - 1 };
        if !self.settings.algos.reduce_auto
            || !self.device_ready(comm, data.len(), max, may_agree)?
        {
            return Ok(None);
        }
        let shape = self.settings.algos.reduce;
        let dev = self
            .net
            .shm
            .as_ref()
            .and_then(|s| s.device())
            .ok_or_else(|| MpiError::internal("barrier device vanished"))?;
        let cm = self.comms.get_mut(comm)?;
        let Central::Active(setup) = &mut cm.central else {
            return Err(MpiError::internal("mailbox reduce without a channel"));
        };
        let chan = setup
            .node_channel()
            .ok_or_else(|| MpiError::internal("mailbox reduce off its node"))?;
        // Contributions of a few slots go through the mailboxes in pieces:
        // a member may then run up to 64 slots ahead of its root, where
        // the staging slots let it run 4 calls, and a piece moves one line
        // where a staged part moves its descriptor's and its own.
        let most = match setup.crowded {
            true => PIECED_MAX,
            false => PIECED_CORES_MAX,
        };
        // A descriptor's length stays staged: see `DESC_LEN`.
        let pieced = staged && data.len() > DESC_LEN && data.len() <= most;
        let staged = staged && !pieced;
        // Every member has this channel, so all agree. Only staged reduces
        // use it: working it out cost the 8-byte reduce 29 instructions.
        let stage = if staged { dev.stage(chan) } else { None };
        if staged && stage.is_none() {
            return Ok(None);
        }
        if staged && !setup.crowded && folds_too_much(setup.members().len(), data.len()) {
            return Ok(None);
        }
        let stamp = setup.mail.wrapping_add(1);
        let taken = if pieced {
            pieces(data.len(), MAIL_MAX)
        } else {
            1
        };
        setup.mail = setup.mail.wrapping_add(taken as u32);
        // Counted only when they happen: a store less on the 8-byte path,
        // whose non-root is bound by its stores (`docs/decisions.md`).
        if staged {
            self.net.counters.staged_reduces += 1;
        } else if pieced {
            self.net.counters.pieced_reduces += 1;
        }
        // A blocking call tries once before it makes a request: a non-root
        // whose slot is free, and a root whose contributions are all in (a
        // non-root runs ahead), are done here. Only with no other mailbox
        // reduce in flight, since those are polled whenever one starts.
        let first_try = may_agree && self.st.colls.mail.is_empty();
        let mut post = Post::new(setup.me(), stamp, root as usize);
        let mut in_pieces =
            pieced.then(|| PostPieces::new(setup.me(), stamp, data.len(), MAIL_MAX));
        let mut in_stage = false;
        // The reduce this one follows in its staging slot (`shm::stage`).
        let after = match comb {
            None if staged => {
                std::mem::replace(&mut setup.staged_last[stage::slot_of(stamp)], stamp)
            }
            _ => 0,
        };
        if comb.is_none() && first_try {
            // The post alone, before any request state: the non-root's
            // stores queue behind its slot's fill (`docs/decisions.md`).
            let w = dev.channel(chan);
            let posted = match &stage {
                Some(st) if staged => {
                    let s = &mut in_stage;
                    post_staged(&mut post, after, s, st, &w, &setup.free, data.as_slice())
                }
                _ if pieced => in_pieces
                    .as_mut()
                    .is_some_and(|p| p.poll(&w, &setup.free, data.as_slice(), |_| 1)),
                _ => post.poll(&w, &setup.free, data.as_slice()),
            };
            if posted {
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
                let mine = if staged {
                    &[0u8; DESC_LEN][..]
                } else {
                    data.as_slice()
                };
                let mut collect = Collect::new(
                    stamp,
                    setup.members().len(),
                    root as usize,
                    mine,
                    self.st.colls.take_buf(),
                );
                if pieced {
                    collect = collect.in_pieces(MAIL_MAX);
                }
                let mut work = if staged {
                    Work::StagedCollect {
                        collect,
                        op,
                        own: *data,
                        out,
                        shape,
                    }
                } else {
                    Work::Collect {
                        collect,
                        merge: Merge::Fold(op),
                        out,
                        shape,
                    }
                };
                // The root likewise works on its parts in place: moving them
                // into a request's state costs more than the rest of a call.
                if first_try {
                    let (Work::Collect { collect, .. } | Work::StagedCollect { collect, .. }) =
                        &mut work
                    else {
                        unreachable!("a root collects")
                    };
                    match poll_collect(collect, &dev.channel(chan), setup.members()) {
                        Outcome::Waiting => {}
                        Outcome::Took => ring_asleep(&self.net, setup, setup.members()),
                        outcome => {
                            let (spare, res) = finish_collect(
                                work,
                                outcome,
                                stage,
                                setup.members(),
                                &mut self.st.colls.fold_scratch,
                            );
                            ring_asleep(&self.net, setup, setup.members());
                            self.st.colls.give_buf(spare);
                            return res.map(|()| Some(DONE));
                        }
                    }
                }
                work
            }
            _ if staged => Work::StagedPost {
                post,
                data: *data,
                after,
                staged: in_stage,
            },
            _ => match in_pieces {
                Some(post) => Work::PostFor {
                    post,
                    data: Source::User(*data),
                    readers: Readers::One(root as usize),
                },
                None => Work::Post {
                    post,
                    data: Source::User(*data),
                },
            },
        };
        let req = self.st.reqs.insert_on(Op::Coll, comm);
        self.st.colls.mail.push(MailOp {
            req,
            comm,
            chan,
            work,
        });
        self.drive_mail()?;
        Ok(Some(req))
    }

    /// Runs `work` on channel `chan` of `comm` among the mailbox ops.
    /// `first_try`: a blocking call with no other mailbox op in flight
    /// (those are polled whenever one starts) polls once before it makes a
    /// request, and gets [`DONE`] if that finished it.
    pub(super) fn start_mail(
        &mut self,
        comm: usize,
        chan: usize,
        work: Work,
        first_try: bool,
    ) -> MpiResult<usize> {
        let mut op = MailOp {
            req: DONE,
            comm,
            chan,
            work,
        };
        if first_try && self.st.colls.mail.is_empty() {
            match poll_op(&self.net, &self.comms, &mut op)? {
                Outcome::Waiting => {}
                Outcome::Took => self.mail_wake(comm)?,
                outcome => {
                    self.mail_end(comm, chan, op.work, outcome)?;
                    return Ok(DONE);
                }
            }
        }
        op.req = self.st.reqs.insert_on(Op::Coll, comm);
        let req = op.req;
        self.st.colls.mail.push(op);
        self.drive_mail()?;
        Ok(req)
    }

    /// The next `n` mailbox stamps of `comm`, whose channel
    /// `device_ready` found: (channel, the first stamp).
    pub(super) fn mail_stamps(&mut self, comm: usize, n: usize) -> MpiResult<(usize, u32)> {
        let Central::Active(setup) = &mut self.comms.get_mut(comm)?.central else {
            return Err(MpiError::internal("mailbox op without a channel"));
        };
        let chan = setup
            .node_channel()
            .ok_or_else(|| MpiError::internal("mailbox op off its node"))?;
        let first = setup.mail.wrapping_add(1);
        setup.mail = setup.mail.wrapping_add(n as u32);
        Ok((chan, first))
    }

    /// Runs chunked collective `op` on channel `chan` of `comm` among the
    /// mailbox ops, which share its slots and stamps.
    pub(super) fn start_mail_chunked(
        &mut self,
        comm: usize,
        chan: usize,
        op: StagedOp,
    ) -> MpiResult<usize> {
        let req = self.st.reqs.insert_on(Op::Coll, comm);
        self.st.colls.mail.push(MailOp {
            req,
            comm,
            chan,
            work: Work::Chunked(Box::new(op)),
        });
        self.drive_mail()?;
        Ok(req)
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
                    self.mail_wake(self.st.colls.mail[i].comm)?;
                    did = true;
                    i += 1;
                }
                outcome => {
                    let op = self.st.colls.mail.swap_remove(i);
                    let from = self.failed_member(&op, &outcome);
                    let res = self.mail_end(op.comm, op.chan, op.work, outcome);
                    // The request completes either way; a failure is its
                    // own, raised where it is waited for, not by whichever
                    // call happened to drive it.
                    let mut status = super::coll::coll_status();
                    if let Err(e) = res {
                        status.error = e.class;
                        status.source = from;
                        let cookie = self.st.reqs.cookie(op.req);
                        self.st.colls.keep_failure(cookie, e);
                    }
                    self.st.reqs.complete(op.req, status);
                    did = true;
                }
            }
        }
        Ok(did)
    }

    /// The rank of the member whose post made `op` fail, when it is known
    /// (a reader's poster, a gatherv root's sender), else `MPI_PROC_NULL`.
    fn failed_member(&self, op: &MailOp, outcome: &Outcome) -> i32 {
        let src = match (outcome, &op.work) {
            (Outcome::FailedFrom(rank, _), _) => return *rank as i32,
            (Outcome::Failed(_), Work::Read { read, .. }) => read.src(),
            _ => return c::MPI_PROC_NULL,
        };
        match self.comms.get(op.comm).map(|cm| &cm.central) {
            Ok(Central::Active(setup)) => setup
                .members()
                .iter()
                .position(|&m| m == src)
                .map_or(c::MPI_PROC_NULL, |r| r as i32),
            _ => c::MPI_PROC_NULL,
        }
    }

    /// Finishes an op that is over: a post wakes its root (or its readers),
    /// a read its poster; a collect folds into the caller's buffer, then
    /// wakes the members that may wait for the slots it gave back.
    fn mail_end(
        &mut self,
        comm: usize,
        chan: usize,
        work: Work,
        outcome: Outcome,
    ) -> MpiResult<()> {
        let outcome = match outcome {
            Outcome::FailedFrom(_, e) => Outcome::Failed(e),
            o => o,
        };
        let posted = matches!(outcome, Outcome::Posted | Outcome::Read | Outcome::Scanned);
        let Central::Active(setup) = &self.comms.get(comm)?.central else {
            return match posted {
                true => Ok(()),
                false => Err(MpiError::internal("mailbox reduce lost its channel")),
            };
        };
        let members = setup.members();
        let poster;
        let (res, targets) = match (&outcome, &work) {
            (
                Outcome::Posted,
                Work::PostFor {
                    readers: Readers::One(r),
                    ..
                },
            ) => (Ok(()), members.get(*r..=*r).unwrap_or(&[])),
            (Outcome::Posted, Work::PostFor { .. } | Work::PostEach { .. })
            | (Outcome::Scanned, _) => (Ok(()), members),
            (Outcome::Read, Work::Read { read, .. }) => {
                poster = [read.src()];
                (Ok(()), &poster[..])
            }
            _ if posted => match root_of(&work) {
                Some(r) => (Ok(()), members.get(r..=r).unwrap_or(&[])),
                None => (
                    Err(MpiError::internal("a mailbox op ended out of turn")),
                    &[][..],
                ),
            },
            _ => {
                let dev = device(&self.net)?;
                let scratch = &mut self.st.colls.fold_scratch;
                let (spare, res) = finish_collect(work, outcome, dev.stage(chan), members, scratch);
                self.st.colls.give_buf(spare);
                (res, members)
            }
        };
        ring_asleep(&self.net, setup, targets);
        res
    }

    /// Makes every mailbox op's next poll look at its slots, unpaced
    /// ([`FreeSlots::look_now`]): called before the last poll ahead of a
    /// sleep.
    pub(super) fn mail_look_now(&self) {
        for op in &self.st.colls.mail {
            if let Ok(Central::Active(setup)) = self.comms.get(op.comm).map(|c| &c.central) {
                setup.free.look_now();
            }
        }
    }

    /// Rings the members of `comm` that sleep, which may wait for a slot
    /// the root just gave back.
    fn mail_wake(&self, comm: usize) -> MpiResult<()> {
        if let Central::Active(setup) = &self.comms.get(comm)?.central {
            ring_asleep(&self.net, setup, setup.members());
        }
        Ok(())
    }
}

/// The root a post is for; `None` for a collect.
/// Bytes of other members' contributions above which, when every member
/// has a core of its own, the root folding them all alone loses to a tree
/// that folds in parallel. On 16 cores of an Intel Xeon (2026-11-28):
/// 15 x 64 KiB took 110-124 us staged against 64-73 us binomial, 15 x 16
/// KiB 29-36 against 37-45, 7 x 64 KiB 49 against 49-51, 3 x 64 KiB 19-21
/// against 31-35. Where members share cores the tree's hops each wait for
/// a process to be scheduled, and the staged fold wins at every size.
const STAGED_FOLD_MAX: usize = 512 << 10;

/// Whether a staged reduce of `len` bytes over `members` ranks, each with
/// a core, should leave the fold to others (see [`STAGED_FOLD_MAX`]): to
/// the chunked reduce from 16 KiB (`staged_allreduce.rs`), which splits
/// it among the members, to the tree below.
fn folds_too_much(members: usize, len: usize) -> bool {
    members.saturating_sub(1).saturating_mul(len) > STAGED_FOLD_MAX
}

fn root_of(work: &Work) -> Option<usize> {
    match work {
        Work::Post { post, .. } | Work::StagedPost { post, .. } => Some(post.root()),
        Work::Collect { .. }
        | Work::StagedCollect { .. }
        | Work::Chunked(_)
        | Work::PostFor { .. }
        | Work::Read { .. }
        | Work::ReadEach { .. }
        | Work::PostEach { .. }
        | Work::Scan(_) => None,
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
    let w = dev.channel(op.chan);
    let (wires, free) = (setup.members(), &setup.free);
    let op_chan = op.chan;
    Ok(match &mut op.work {
        Work::Post { post, data } => posted(post.poll(&w, free, data.as_slice())),
        Work::PostFor {
            post,
            data,
            readers,
        } => posted(post.poll(&w, free, data.as_slice(), |j| readers.of(j))),
        Work::Read { read, out, tmp } => read_post(read, &w, out, tmp),
        Work::ReadEach { reads, tmp, failed } => read_each(reads, &w, tmp, failed),
        Work::PostEach { me, posts, next } => post_each(*me, posts, next, &w, free),
        Work::Scan(scan) => match scan.poll(&w, wires, free) {
            ScanPoll::Waiting => Outcome::Waiting,
            ScanPoll::Moved => Outcome::Took,
            ScanPoll::Done => Outcome::Scanned,
            ScanPoll::Failed(e) => Outcome::Failed(e),
        },
        Work::StagedPost {
            post,
            data,
            after,
            staged,
        } => match dev.stage(op.chan) {
            Some(st) => posted(post_staged(
                post,
                *after,
                staged,
                &st,
                &w,
                free,
                data.as_slice(),
            )),
            None => Outcome::Failed(MpiError::internal("staged reduce lost its slots")),
        },
        Work::Collect { collect, .. } | Work::StagedCollect { collect, .. } => {
            poll_collect(collect, &w, wires)
        }
        Work::Chunked(op) => match dev.stage(op_chan) {
            Some(st) => match op.poll(st, wires, setup.me()) {
                Poll::Waiting => Outcome::Waiting,
                // Members waiting for this one's marks may go on.
                Poll::Moved => Outcome::Took,
                Poll::Done => Outcome::Collected,
                Poll::Failed(e) => Outcome::Failed(e),
            },
            None => Outcome::Failed(MpiError::internal("chunked collective lost its slots")),
        },
    })
}

fn posted(done: bool) -> Outcome {
    if done {
        Outcome::Posted
    } else {
        Outcome::Waiting
    }
}

/// Polls a read of a post once, into `out` (through `tmp` when `out` is
/// not contiguous). Pieces of the wrong length fail the read (the members
/// disagree on the lengths).
#[inline(always)]
fn read_post(read: &mut ReadPieces, w: &Channel<'_>, out: &UserBuf, tmp: &mut Vec<u8>) -> Outcome {
    let before = read.progress();
    let res = if out.is_contiguous() {
        read.poll(w, out.as_mut_slice())
    } else {
        tmp.resize(out.len(), 0);
        read.poll(w, tmp)
    };
    match res {
        Ok(true) => {
            if !out.is_contiguous() {
                out.write(tmp);
            }
            Outcome::Read
        }
        // Its poster may wait for the slots of the pieces read.
        Ok(false) if read.progress() > before => Outcome::Took,
        Ok(false) => Outcome::Waiting,
        Err(e) => Outcome::Failed(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!(
                "the ranks' counts or datatypes disagree: piece {} of the root's post holds {} \
                 bytes where this rank expects {}",
                e.piece,
                lanai_coll::mailbox::shown(e.got),
                lanai_coll::mailbox::shown(e.want)
            ),
        )),
    }
}

/// Polls every read of a gatherv's root once; `Scanned` once all are in,
/// or the first failure once the others are.
fn read_each(
    reads: &mut Vec<(usize, ReadPieces, UserBuf)>,
    w: &Channel<'_>,
    tmp: &mut Vec<u8>,
    failed: &mut Option<(usize, MpiError)>,
) -> Outcome {
    let mut took = false;
    let mut i = 0;
    while i < reads.len() {
        let (rank, read, out) = &mut reads[i];
        match read_post(read, w, out, tmp) {
            Outcome::Waiting => i += 1,
            Outcome::Took => {
                took = true;
                i += 1;
            }
            outcome => {
                // Read, or failed having read the post (its slot is free).
                if let (Outcome::Failed(_), None) = (&outcome, &failed) {
                    let e = MpiError::new(
                        c::MPI_ERR_TRUNCATE,
                        format!(
                            "rank {rank} sent a block of another length than the {} bytes the \
                             root's counts give it",
                            out.len()
                        ),
                    );
                    *failed = Some((*rank, e));
                }
                reads.swap_remove(i);
                took = true;
            }
        }
    }
    match (reads.is_empty(), failed.take(), took) {
        (true, Some((rank, e)), _) => Outcome::FailedFrom(rank, e),
        (true, None, _) => Outcome::Scanned,
        (false, f, took) => {
            *failed = f;
            if took {
                Outcome::Took
            } else {
                Outcome::Waiting
            }
        }
    }
}

/// Posts what it can of a scatterv's blocks, in stamp order; `Posted`
/// once all are in, `Took` when some went in (their readers may sleep).
fn post_each(
    me: usize,
    posts: &[(u32, usize, UserBuf, bool)],
    next: &mut usize,
    w: &Channel<'_>,
    free: &FreeSlots,
) -> Outcome {
    let before = *next;
    while let Some(&(stamp, reader, block, more)) = posts.get(*next) {
        let mut post = Post::new(me, stamp, reader).more(more);
        if !post.poll_for(w, free, block.as_slice(), 1) {
            return if *next > before {
                Outcome::Took
            } else {
                Outcome::Waiting
            };
        }
        *next += 1;
    }
    Outcome::Posted
}

/// A non-root's staged post: copies `data` into its staging slot once the
/// reduce `after` is done with it (`staged` records that it is in), then
/// posts the descriptor once its mailbox slot is free. True once posted.
#[inline(always)]
fn post_staged(
    post: &mut Post,
    after: u32,
    staged: &mut bool,
    st: &Stage<'_>,
    w: &Channel<'_>,
    free: &FreeSlots,
    data: &[u8],
) -> bool {
    let slot = stage::slot_of(post.stamp());
    if !*staged {
        if st.done(post.me(), slot) != after {
            return false;
        }
        st.fill(post.me(), slot, data);
        *staged = true;
    }
    post.poll(w, free, &descriptor(slot, data.len()))
}

/// Ends a root's collection (`outcome` `Collected` or `Failed`) by folding
/// into the caller's buffer. Returns the buffer it collected in, for the
/// next call, and the outcome.
fn finish_collect(
    work: Work,
    outcome: Outcome,
    stage: Option<Stage<'_>>,
    wires: &[usize],
    scratch: &mut Vec<u8>,
) -> (Vec<u8>, MpiResult<()>) {
    match (outcome, work) {
        (Outcome::Failed(e), _) => (Vec::new(), Err(e)),
        (
            Outcome::Collected,
            Work::Collect {
                collect,
                merge,
                out,
                shape,
            },
        ) => match fold_out(collect, &merge, shape, &out) {
            Ok(spare) => (spare, Ok(())),
            Err(e) => (Vec::new(), Err(e)),
        },
        (Outcome::Collected, Work::Chunked(_)) => (Vec::new(), Ok(())),
        (
            Outcome::Collected,
            Work::StagedCollect {
                collect,
                op,
                own,
                out,
                shape,
            },
        ) => {
            let res = match stage {
                Some(st) => fold_staged(&collect, &st, wires, &own, &out, &op, shape, scratch),
                None => Err(MpiError::internal("staged reduce lost its slots")),
            };
            (collect.into_flat(), res)
        }
        _ => (
            Vec::new(),
            Err(MpiError::internal("a mailbox op ended out of turn")),
        ),
    }
}

/// The root of a staged reduce, every descriptor in: folds each member's
/// contribution where it lies, with the root's own `own`, into `out`, then
/// frees every staging slot, whatever the outcome.
#[allow(clippy::too_many_arguments)]
fn fold_staged(
    collect: &Collect,
    st: &Stage<'_>,
    wires: &[usize],
    own: &UserBuf,
    out: &UserBuf,
    op: &Combiner,
    shape: ReduceTree,
    scratch: &mut Vec<u8>,
) -> MpiResult<()> {
    let len = own.len();
    let root = collect.root();
    let descs: Vec<(usize, usize)> = collect
        .parts()
        .iter()
        .map(|d| parse_descriptor(d))
        .collect();
    let bad = descs
        .iter()
        .enumerate()
        .find(|&(pos, &(_, got))| pos != root && got != len)
        .map(|(pos, &(_, got))| lanai_coll::mailbox::SizeMismatch {
            member: pos,
            got,
            want: len,
        });
    let res = match bad {
        Some(e) => Err(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!("the ranks' counts or datatypes disagree: {e}"),
        )),
        None => {
            // With MPI_IN_PLACE the root's part is `out` itself, which the
            // fold writes before it is done reading the parts.
            let (o, a) = (out.addr(), own.addr());
            let overlap = own.is_contiguous() && o < a + len && a < o + out.len();
            let own_copy = overlap.then(|| own.as_slice().to_vec());
            let parts: Vec<&[u8]> = (0..descs.len())
                .map(|pos| match (pos == root, &own_copy) {
                    (true, Some(v)) => v.as_slice(),
                    (true, None) => own.as_slice(),
                    (false, _) => st.bytes(wires[pos], descs[pos].0, len),
                })
                .collect();
            fold_parts(&parts, out, op, shape, scratch)
        }
    };
    for (pos, &(slot, _)) in descs.iter().enumerate() {
        if pos != root {
            st.release(wires[pos], slot, collect.stamp());
        }
    }
    res
}

/// Folds `parts` over `shape` into `out`: the binomial tree straight into
/// a contiguous buffer, anything else through a vector.
fn fold_parts(
    parts: &[&[u8]],
    out: &UserBuf,
    op: &Combiner,
    shape: ReduceTree,
    scratch: &mut Vec<u8>,
) -> MpiResult<()> {
    let op_err = |e: lanai_coll::OpError| MpiError::new(c::MPI_ERR_OP, e.to_string());
    let len = parts.first().map_or(0, |p| p.len());
    if shape == ReduceTree::Binomial && out.is_contiguous() && out.len() == len {
        return lanai_coll::fold_into(parts, out.as_mut_slice(), op, scratch).map_err(op_err);
    }
    out.write(&lanai_coll::fold_tree(parts, op, shape).map_err(op_err)?);
    Ok(())
}

/// Polls a root's collection once; `Took` if it took some contributions
/// but not all.
#[inline(always)]
fn poll_collect(collect: &mut Collect, w: &Channel<'_>, wires: &[usize]) -> Outcome {
    let before = collect.missing();
    match collect.poll(w, wires) {
        Err(e) => Outcome::Failed(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!("the ranks' counts or datatypes disagree: {e}"),
        )),
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
    merge: &Merge,
    shape: ReduceTree,
    out: &UserBuf,
) -> MpiResult<Vec<u8>> {
    let op_err = |e: lanai_coll::OpError| MpiError::new(c::MPI_ERR_OP, e.to_string());
    let op = match merge {
        Merge::Fold(op) => op,
        Merge::Gather => {
            let all = collect.into_flat();
            out.write(&all);
            return Ok(all);
        }
    };
    if shape != ReduceTree::Binomial {
        out.write(&lanai_coll::fold_tree(&collect.parts(), op, shape).map_err(op_err)?);
        return Ok(collect.into_flat());
    }
    let len = collect.len();
    let mut all = collect.into_flat();
    out.write(lanai_coll::fold_in_place(&mut all, len, op).map_err(op_err)?);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::folds_too_much;

    #[test]
    fn the_fold_moves_to_a_tree_on_many_cores_and_large_parts() {
        assert!(!folds_too_much(16, 16 << 10), "15 x 16 KiB stays staged");
        assert!(!folds_too_much(8, 64 << 10), "7 x 64 KiB stays staged");
        assert!(!folds_too_much(4, 64 << 10));
        assert!(folds_too_much(16, 64 << 10), "15 x 64 KiB goes to the tree");
        assert!(folds_too_much(12, 64 << 10));
        assert!(!folds_too_much(1, usize::MAX));
    }
}
