//! Small broadcasts, scatters and gathers on one node through the barrier
//! device's mailboxes (`lanai_coll::mailbox`), as the mailbox reduce does
//! (`central_reduce.rs`): whoever sends drops its bytes into its next slot
//! and goes on, as an eager send would, and the receivers copy them out.
//!
//! - A broadcast's root posts its buffer for every other member to read,
//!   in pieces of a slot each, up to about 1 KiB (280 bytes where ranks
//!   share cores).
//! - A scatter's root posts its whole vector; each member copies its
//!   block from the pieces that hold it.
//! - A gather is a reduce that lays the parts end to end instead of
//!   folding them; blocks longer than a slot go in pieces, as a
//!   broadcast's do, and the root takes each member's in turn.
//! - A gatherv's members post their blocks of up to [`V_PIECES`] slots,
//!   and its root reads each into place;
//!   a scatterv's root posts each such block in slots of its own for its
//!   one reader. Longer blocks go as transfers.
//! - A scan's members each post their part for the members above them,
//!   in pieces past a slot, and fold the parts below them ([`MailScan`]).
//!
//! No message and no machine: a root that runs ahead of its readers is
//! held back only by its slots.

use super::central::Central;
use super::central_reduce::{Merge, Work};
use super::coll::Combiner;
use super::error::{MpiError, MpiResult};
use super::request::{Op, DONE};
use super::riding::Source;
use super::staged_allreduce::GATHER_MIN;
use super::transfers::block_of;
use super::Engine;
use crate::abi::userbuf::UserBuf;
use crate::shm::barrier_device::MAIL_MAX;
use lanai_coll::mailbox::{pieces, shown, Collect, Post, PostPieces, Read, ReadPieces, MORE};
use lanai_coll::{Combine, Layout};

/// Slots a broadcast or scatter may take: posts up to this many times
/// `MAIL_MAX` bytes (1064) go through the mailboxes, so they meet the
/// staging slots' broadcast at 1 KiB (`staged_allreduce::BCAST_MIN`).
/// With a core per rank they beat messages at every size up to there (2
/// ranks on 2 cores, 8-byte loops: 128 B 0.07 against 0.32 us, 512 B 0.14
/// against 0.35, 1 KiB 0.25 against 0.39).
const SHARE_PIECES: usize = 19;

/// Slots a broadcast or scatter may take where ranks share cores (280
/// bytes): there every reader's copy of every piece waits for its turn
/// on a core, and from 512 bytes the binomial tree's few messages win (8
/// ranks on 2 cores: 256 B 2.0 against 2.3 us, 512 B 3.7 against 2.4,
/// 800 B 5.4 against 2.6).
const SHARE_PIECES_CROWDED: usize = 5;

/// Slots a gatherv's or scatterv's block may take (168 bytes), as a
/// reduce's where ranks share cores. A member knows only its own block's
/// size, so every call takes this many stamps per block whatever its
/// blocks, and a gatherv's one-slot posts take every third slot (which
/// `FreeSlots` paces by). Longer blocks go as transfers (2 ranks, 64
/// bytes: 0.34 us a gatherv and 0.19 a scatterv that way, against Open
/// MPI's 0.06).
pub(super) const V_PIECES: usize = 3;

/// The longest block a gatherv or scatterv moves through the mailboxes
/// when it takes `k` slots a block.
fn v_max(k: usize) -> usize {
    k * MAIL_MAX
}

/// Slots per member a scatterv of `size` members takes, [`V_PIECES`] or
/// fewer so that one call's stamps fit a root's ring; 0 where even one
/// each does not, and the scatterv goes as transfers.
fn v_pieces(size: u32) -> usize {
    (lanai_coll::mailbox::SLOTS / size.saturating_sub(1).max(1)).min(V_PIECES as u32) as usize
}

/// The first of the `k` stamps of a scatterv's block for the member at
/// position `p`: the members but the root in order, from `first`.
fn v_stamp(first: u32, p: usize, root: usize, k: usize) -> u32 {
    first.wrapping_add(((p - usize::from(p > root)) * k) as u32)
}

/// Who reads each piece of a post.
pub enum Readers {
    /// A broadcast's: every other member reads every piece.
    All(u32),
    /// A gather's or reduce's: the member at this position (the root)
    /// reads every piece, and only it is woken once they are in.
    One(usize),
    /// A scatter's: member `r` reads the pieces its `block` touches.
    Blocks {
        block: usize,
        members: usize,
        root: usize,
    },
}

impl Readers {
    /// Members that read piece `j`.
    pub(super) fn of(&self, j: usize) -> u32 {
        match *self {
            Readers::All(n) => n,
            Readers::One(_) => 1,
            Readers::Blocks {
                block,
                members,
                root,
            } => {
                // The blocks that overlap the piece's bytes, a run of ranks.
                let first = j * MAIL_MAX / block;
                let last = (((j + 1) * MAIL_MAX - 1) / block).min(members - 1);
                if first > last {
                    return 0;
                }
                (last - first + 1 - usize::from((first..=last).contains(&root))) as u32
            }
        }
    }
}

impl Engine {
    /// Whether a post of `len` bytes that others read in pieces may run on
    /// `comm` (see [`SHARE_PIECES`], [`SHARE_PIECES_CROWDED`]).
    fn share_ready(&mut self, comm: usize, len: usize, blocking: bool) -> MpiResult<bool> {
        if !self.mail_ready(comm, len, SHARE_PIECES * MAIL_MAX, blocking)? {
            return Ok(false);
        }
        let crowded = self.crowded(comm)?;
        Ok(!crowded || len <= SHARE_PIECES_CROWDED * MAIL_MAX)
    }

    /// Whether a mailbox op of `len` bytes may run on `comm` (every member
    /// on this node, the channel agreed; `blocking` calls may agree it).
    #[inline]
    fn mail_ready(
        &mut self,
        comm: usize,
        len: usize,
        max: usize,
        blocking: bool,
    ) -> MpiResult<bool> {
        if self.offload.is_some() {
            return Ok(false);
        }
        self.device_ready(comm, len, max, blocking)
    }

    /// On `comm`'s channel: this rank's position, its device input, the
    /// device input of the member at position `root`, and the members.
    fn mail_members(&self, comm: usize, root: usize) -> MpiResult<(usize, usize, usize, usize)> {
        let cm = self.comms.get(comm)?;
        let Central::Active(setup) = &cm.central else {
            return Err(MpiError::internal("mailbox op without a channel"));
        };
        let m = setup.members();
        let r = *m
            .get(root)
            .ok_or_else(|| MpiError::internal("mailbox op: root off the channel"))?;
        Ok((cm.rank as usize, setup.me(), r, m.len()))
    }

    /// `MPI_Bcast` of up to [`SHARE_PIECES`] slots, [`SHARE_PIECES_CROWDED`]
    /// where ranks share cores (`LANAI_BCAST=auto`); `None` when it does
    /// not qualify.
    pub(super) fn mail_bcast(
        &mut self,
        comm: usize,
        buf: UserBuf,
        root: u32,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let len = buf.len();
        if self.settings.algos.bcast != lanai_coll::BcastAlgo::Auto
            || !self.share_ready(comm, len, blocking)?
        {
            return Ok(None);
        }
        let (chan, first) = self.mail_stamps(comm, pieces(len, MAIL_MAX))?;
        let root = root as usize;
        let (rank, me, from, n) = self.mail_members(comm, root)?;
        let work = if rank == root {
            Work::PostFor {
                post: PostPieces::new(me, first, len, MAIL_MAX),
                data: Source::User(buf),
                readers: Readers::All(n as u32 - 1),
            }
        } else {
            Work::Read {
                read: ReadPieces::new(from, first, len, 0..len, MAIL_MAX).alone(n == 2),
                out: buf,
                tmp: Vec::new(),
            }
        };
        self.net.counters.mail_shares += 1;
        self.start_mail(comm, chan, work, blocking).map(Some)
    }

    /// `MPI_Scatter` of `block`-byte blocks whose vector fits as a
    /// broadcast's does (`LANAI_NODE_COLL=auto`); `data` is the root's
    /// vector. `None` when it does not qualify.
    pub(super) fn mail_scatter(
        &mut self,
        comm: usize,
        data: UserBuf,
        block: usize,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let size = self.comms.get(comm)?.size as usize;
        let len = block.saturating_mul(size);
        if block == 0
            || !self.settings.algos.node_colls
            || !self.share_ready(comm, len, blocking)?
        {
            return Ok(None);
        }
        let root = root as usize;
        let (rank, me, from, _) = self.mail_members(comm, root)?;
        // Checked before any stamp is taken.
        let mine = match out {
            _ if rank == root => data
                .as_slice()
                .get(rank * block..(rank + 1) * block)
                .ok_or_else(|| MpiError::internal("scatter: send buffer of the wrong size"))
                .map(Some)?,
            Some(o) if o.len() == block => None,
            _ => {
                return Err(MpiError::internal(
                    "scatter: receive buffer of the wrong size",
                ))
            }
        };
        let (chan, first) = self.mail_stamps(comm, pieces(len, MAIL_MAX))?;
        let work = if let Some(mine) = mine {
            // No receive buffer: MPI_IN_PLACE, the block stays where it is.
            if let Some(o) = out {
                o.write(mine);
            }
            Work::PostFor {
                post: PostPieces::new(me, first, len, MAIL_MAX),
                data: Source::User(data),
                readers: Readers::Blocks {
                    block,
                    members: size,
                    root,
                },
            }
        } else {
            let out = out.unwrap_or(UserBuf::EMPTY);
            Work::Read {
                read: ReadPieces::new(from, first, len, rank * block..(rank + 1) * block, MAIL_MAX)
                    .alone(size == 2),
                out,
                tmp: Vec::new(),
            }
        };
        self.net.counters.mail_shares += 1;
        self.start_mail(comm, chan, work, blocking).map(Some)
    }

    /// `MPI_Gather` through the mailboxes (`LANAI_NODE_COLL=auto`), as a
    /// reduce's contributions: blocks longer than a slot and shorter than
    /// the staging slots take ([`GATHER_MIN`]) in pieces, up to as many as
    /// a broadcast's post ([`Engine::share_ready`]; through messages, 2
    /// ranks, 64 bytes: 0.48 us a gather against Open MPI's 0.067). `out`
    /// is the root's receive buffer. `None` when it does not qualify.
    pub(super) fn mail_gather(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let len = data.len();
        if !self.settings.algos.node_colls
            || len >= GATHER_MIN
            || !match len {
                0..=MAIL_MAX => self.mail_ready(comm, len, MAIL_MAX, blocking)?,
                _ => self.share_ready(comm, len, blocking)?,
            }
        {
            return Ok(None);
        }
        let root = root as usize;
        let (rank, me, _, n) = self.mail_members(comm, root)?;
        // Checked before any stamp is taken.
        if rank == root && out.is_some_and(|o| o.len() != len * n) {
            return Err(MpiError::internal(
                "gather: receive buffer of the wrong size",
            ));
        }
        let (chan, stamp) = self.mail_stamps(comm, pieces(len, MAIL_MAX))?;
        let work = match out {
            Some(out) if rank == root => {
                let buf = self.st.colls.take_buf();
                let mut collect = Collect::new(stamp, n, root, data.as_slice(), buf);
                if len > MAIL_MAX {
                    collect = collect.in_pieces(MAIL_MAX);
                }
                Work::Collect {
                    collect,
                    merge: Merge::Gather,
                    out,
                    shape: self.settings.algos.reduce,
                }
            }
            _ if len <= MAIL_MAX => Work::Post {
                post: Post::new(me, stamp, root),
                data: Source::User(data),
            },
            // Longer blocks in pieces, as a broadcast's post.
            _ => Work::PostFor {
                post: PostPieces::new(me, stamp, len, MAIL_MAX),
                data: Source::User(data),
                readers: Readers::One(root),
            },
        };
        self.net.counters.mail_shares += 1;
        self.start_mail(comm, chan, work, blocking).map(Some)
    }
}

impl Engine {
    /// `MPI_Gatherv` on one node (`LANAI_NODE_COLL=auto`): a block of up
    /// to [`V_PIECES`] slots goes through its member's mailbox, in pieces
    /// as a gather's does, and a longer one as a transfer (`transfers.rs`).
    /// A member knows only its own block's size and the root every
    /// member's, so each block's way is decided by its size alone, which
    /// both ends know; every member takes the same stamp and collective
    /// number whichever way its block goes, so later collectives stay in
    /// step. `recv` and `out` are read at the root only. `None` when the
    /// node path does not qualify.
    pub(super) fn mail_gatherv(
        &mut self,
        comm: usize,
        data: UserBuf,
        recv: &Layout,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        if !self.v_ready(comm, blocking)? {
            return Ok(None);
        }
        let (rank, me, _, n) = self.mail_members(comm, root as usize)?;
        let most = v_max(V_PIECES);
        let (chan, stamp) = self.mail_stamps(comm, V_PIECES)?;
        let seq = self.reserve_coll_seq(comm)?;
        self.net.counters.mail_shares += 1;
        let out = match out {
            Some(out) if rank == root as usize => out,
            _ => {
                let req = match data.len() {
                    0 => self.no_work(comm, blocking),
                    len if len <= MAIL_MAX => {
                        let post = Post::new(me, stamp, root as usize);
                        let work = Work::Post {
                            post,
                            data: Source::User(data),
                        };
                        self.start_mail(comm, chan, work, blocking)?
                    }
                    len if len <= most => {
                        let work = Work::PostFor {
                            post: PostPieces::new(me, stamp, len, MAIL_MAX),
                            data: Source::User(data),
                            readers: Readers::One(root as usize),
                        };
                        self.start_mail(comm, chan, work, blocking)?
                    }
                    _ => self.start_member_transfer_as(comm, seq, data, root, true)?,
                };
                return Ok(Some(req));
            }
        };
        recv.check_size(n as u32).map_err(super::coll::coll_err)?;
        let own = block_of(&out, recv.block(root))?;
        if own.len() != data.len() {
            return Err(MpiError::new(
                crate::abi::consts::MPI_ERR_TRUNCATE,
                format!(
                    "the root's own block is {} bytes to send and {} to receive",
                    data.len(),
                    own.len()
                ),
            ));
        }
        if own.addr() != data.addr() {
            own.write(data.as_slice());
        }
        let Central::Active(setup) = &self.comms.get(comm)?.central else {
            return Err(MpiError::internal("mailbox op without a channel"));
        };
        let wires = setup.members();
        let mut reads = Vec::with_capacity(n - 1);
        let mut large = false;
        for p in (0..n).filter(|&p| p != root as usize) {
            let b = block_of(&out, recv.block(p as u32))?;
            match b.len() {
                0 => {}
                len if len <= most => {
                    let read = ReadPieces::new(wires[p], stamp, len, 0..len, MAIL_MAX).alone(true);
                    reads.push((p, read, b));
                }
                _ => large = true,
            }
        }
        // The transfers first: a block that fails in the mailbox must not
        // leave the large ones unreceived.
        let moved = if large {
            self.start_root_transfers_as(comm, seq, &out, recv, root, true, most)?
        } else {
            DONE
        };
        let work = Work::ReadEach {
            reads,
            tmp: Vec::new(),
            failed: None,
        };
        let mail = self.start_mail_beside(comm, chan, work, moved, blocking)?;
        Ok(Some(self.join(comm, mail, moved, blocking)))
    }

    /// `MPI_Scatterv` on one node (`LANAI_NODE_COLL=auto`), the converse
    /// of [`Engine::mail_gatherv`]: the root posts each block of up to
    /// `k` slots ([`v_pieces`]) in slots of its own, `k` stamps per
    /// member in the members' order ([`v_stamp`]), and sends longer ones
    /// as transfers. `data` and `send` are read at the root only; `out`
    /// is `None` at an in-place root. `None` when the node path does not
    /// qualify.
    pub(super) fn mail_scatterv(
        &mut self,
        comm: usize,
        data: UserBuf,
        send: &Layout,
        out: Option<UserBuf>,
        root: u32,
        blocking: bool,
    ) -> MpiResult<Option<usize>> {
        let size = self.comms.get(comm)?.size;
        let k = v_pieces(size);
        if k == 0 || !self.v_ready(comm, blocking)? {
            return Ok(None);
        }
        // Where ranks share cores the root, whose every call takes slots
        // per member, soon waits for readers that wait for a core; eager
        // messages let it run further ahead (8 ranks on 2 cores, 8 bytes:
        // 7.6 us a call through the slots against 4.4 as transfers).
        if self.crowded(comm)? {
            return Ok(None);
        }
        let (rank, me, from, n) = self.mail_members(comm, root as usize)?;
        let (chan, first) = self.mail_stamps(comm, (n - 1).max(1) * k)?;
        let seq = self.reserve_coll_seq(comm)?;
        self.net.counters.mail_shares += 1;
        let most = v_max(k);
        if rank != root as usize {
            let out = out.ok_or_else(|| MpiError::internal("scatterv: no receive buffer"))?;
            let req = match out.len() {
                0 => self.no_work(comm, blocking),
                len if len <= most => {
                    let stamp = v_stamp(first, rank, root as usize, k);
                    let work = Work::Read {
                        read: ReadPieces::new(from, stamp, len, 0..len, MAIL_MAX).alone(true),
                        out,
                        tmp: Vec::new(),
                    };
                    self.start_mail(comm, chan, work, blocking)?
                }
                _ => self.start_member_transfer_as(comm, seq, out, root, false)?,
            };
            return Ok(Some(req));
        }
        send.check_size(n as u32).map_err(super::coll::coll_err)?;
        let mine = block_of(&data, send.block(root))?;
        // No receive buffer: MPI_IN_PLACE, the block stays where it is.
        if let Some(o) = out {
            block_of(&o, 0..mine.len())?.write(mine.as_slice());
        }
        let mut posts = Vec::with_capacity(n - 1);
        let mut large = false;
        for p in (0..n).filter(|&p| p != root as usize) {
            let b = block_of(&data, send.block(p as u32))?;
            match b.len() {
                0 => {}
                len if len <= most => {
                    // A piece a post, under the member's stamps in turn.
                    let stamp = v_stamp(first, p, root as usize, k);
                    let n = pieces(len, MAIL_MAX);
                    for j in 0..n {
                        let at = j * MAIL_MAX;
                        let bytes = block_of(&b, at..len.min(at + MAIL_MAX))?;
                        posts.push((stamp.wrapping_add(j as u32), p, bytes, j + 1 < n));
                    }
                }
                _ => large = true,
            }
        }
        let moved = if large {
            self.start_root_transfers_as(comm, seq, &data, send, root, false, most)?
        } else {
            DONE
        };
        let work = Work::PostEach { me, posts, next: 0 };
        let mail = self.start_mail_beside(comm, chan, work, moved, blocking)?;
        Ok(Some(self.join(comm, mail, moved, blocking)))
    }

    /// Whether a gatherv or scatterv may take the node path: whatever its
    /// blocks' sizes, which the members do not all know.
    fn v_ready(&mut self, comm: usize, blocking: bool) -> MpiResult<bool> {
        Ok(self.settings.algos.node_colls && self.mail_ready(comm, 1, MAIL_MAX, blocking)?)
    }

    /// Starts a root's mailbox `work` (none when it has no reads or
    /// posts) beside its transfers `moved`, which go on without the
    /// caller, dropped once done, if the mailbox part fails at once.
    fn start_mail_beside(
        &mut self,
        comm: usize,
        chan: usize,
        work: Work,
        moved: usize,
        blocking: bool,
    ) -> MpiResult<usize> {
        let empty = match &work {
            Work::ReadEach { reads, .. } => reads.is_empty(),
            Work::PostEach { posts, .. } => posts.is_empty(),
            _ => false,
        };
        if empty {
            return Ok(DONE);
        }
        self.start_mail(comm, chan, work, blocking)
            .inspect_err(|_| {
                if let Some(r) = self.st.reqs.get_mut(moved) {
                    r.freed = true;
                }
            })
    }

    /// A request for a collective this rank has nothing to do in:
    /// [`DONE`] for a blocking call, else one complete already.
    fn no_work(&mut self, comm: usize, blocking: bool) -> usize {
        if blocking {
            return DONE;
        }
        let req = self.st.reqs.insert_on(Op::Coll, comm);
        self.st.reqs.complete(req, super::coll::coll_status());
        req
    }

    /// One request for the two parts `a` and `b` of a collective, either
    /// of which may be [`DONE`].
    fn join(&mut self, comm: usize, a: usize, b: usize, blocking: bool) -> usize {
        match (a, b) {
            (DONE, DONE) => self.no_work(comm, blocking),
            (DONE, r) | (r, DONE) => r,
            (a, b) => self.start_both(a, b),
        }
    }
}

/// One rank's part of a mailbox scan: it posts its own part for the
/// members above it, then reads the parts below it in rank order and folds
/// them left, `((x0 op x1) op x2) ...`, as the chain scan does, so the
/// bits are the same. Rank 0 of an exclusive scan, and the top rank of
/// any, only post or only read; no rank waits for a rank above it.
pub struct MailScan {
    /// This rank's post, until it is made.
    post: Option<PostPieces>,
    readers: u32,
    data: Source,
    /// The next lower position to read, and the stamp.
    next: usize,
    stamp: u32,
    /// Pieces of position `next`'s part read so far, into `big`.
    piece: usize,
    /// The prefix folded so far: `acc[..len]` once `next > 0`.
    acc: [u8; MAIL_MAX],
    /// A part longer than a slot: the part being read, then the prefix,
    /// instead of `acc`. Kept apart so that the usual one-slot scan moves
    /// no more than it did.
    big: Vec<u8>,
    op: Combiner,
    out: UserBuf,
    inclusive: bool,
    /// This rank's position.
    me: usize,
}

/// The longest part a scan posts, in pieces of a slot: three, as a
/// reduce's where ranks share cores. Through messages, 2 ranks, 64 B: a
/// scan took 0.86 us against Open MPI's 0.14.
const SCAN_MAX: usize = 3 * MAIL_MAX;

impl std::fmt::Debug for MailScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailScan")
            .field("next", &self.next)
            .field("me", &self.me)
            .finish()
    }
}

/// What a poll of a [`MailScan`] found.
pub(super) enum ScanPoll {
    Waiting,
    /// It posted or read something: members may wait for that.
    Moved,
    Done,
    Failed(MpiError),
}

impl MailScan {
    /// Polls once over channel `w`; `wires` are the members' inputs in
    /// rank order, `free` this rank's knowledge of its slots.
    pub(super) fn poll(
        &mut self,
        w: &crate::shm::barrier_device::Channel<'_>,
        wires: &[usize],
        free: &lanai_coll::mailbox::FreeSlots,
    ) -> ScanPoll {
        let mut moved = false;
        if let Some(post) = &mut self.post {
            let before = post.progress();
            let readers = self.readers;
            if !post.poll(w, free, self.data.as_slice(), |_| readers) {
                return if post.progress() > before {
                    ScanPoll::Moved
                } else {
                    ScanPoll::Waiting
                };
            }
            self.post = None;
            moved = true;
        }
        let len = self.data.len();
        let n = pieces(len, MAIL_MAX);
        // A one-slot part is read whole in one poll, so it needs no home
        // between polls.
        let mut one = [0u8; MAIL_MAX];
        let (part, acc) = match len {
            0..=MAIL_MAX => (&mut one[..len], &mut self.acc[..len]),
            _ => self.big.split_at_mut(len),
        };
        while self.next < self.me {
            // The part of rank k has the ranks above it as readers.
            let alone = wires.len() - 1 - self.next == 1;
            while self.piece < n {
                let j = self.piece;
                let (at, want) = (j * MAIL_MAX, MAIL_MAX.min(len - j * MAIL_MAX));
                let flag = if j + 1 < n { MORE } else { 0 };
                let read = Read::new(wires[self.next], self.stamp.wrapping_add(j as u32));
                let Some(got) = read.alone(alone).poll(w, &mut part[at..at + want]) else {
                    return if moved {
                        ScanPoll::Moved
                    } else {
                        ScanPoll::Waiting
                    };
                };
                moved = true;
                if got != want | flag {
                    let gave = match n {
                        1 => format!("{} bytes", shown(got)),
                        _ => format!("a part whose piece {j} holds {} bytes", shown(got)),
                    };
                    return ScanPoll::Failed(MpiError::new(
                        crate::abi::consts::MPI_ERR_TRUNCATE,
                        format!(
                            "rank {} gave {gave} to the scan, this rank {len}",
                            self.next
                        ),
                    ));
                }
                self.piece += 1;
            }
            self.piece = 0;
            if self.next > 0 {
                // acc op part, left to right: the result lands in `part`.
                if let Err(e) = self.op.combine(acc, part) {
                    return ScanPoll::Failed(MpiError::new(
                        crate::abi::consts::MPI_ERR_OP,
                        e.to_string(),
                    ));
                }
            }
            acc.copy_from_slice(part);
            self.next += 1;
        }
        let res = match (self.inclusive, self.me) {
            (false, 0) => return ScanPoll::Done,
            (false, _) => acc,
            // Through `part`, free once all are read: in place, `out` is
            // the send buffer.
            (true, 0) => {
                part.copy_from_slice(self.data.as_slice());
                part
            }
            (true, _) => {
                // acc op own, into `part`.
                part.copy_from_slice(self.data.as_slice());
                if let Err(e) = self.op.combine(acc, part) {
                    return ScanPoll::Failed(MpiError::new(
                        crate::abi::consts::MPI_ERR_OP,
                        e.to_string(),
                    ));
                }
                part
            }
        };
        self.out.write(res);
        ScanPoll::Done
    }
}

impl Engine {
    /// `MPI_Scan` (`inclusive`) or `MPI_Exscan` of up to [`SCAN_MAX`] bytes
    /// (`LANAI_NODE_COLL=auto`); `data` may be `out` (in place). `Err`
    /// gives the operation back when it does not qualify.
    pub(super) fn mail_scan(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: UserBuf,
        op: Combiner,
        inclusive: bool,
        blocking: bool,
    ) -> MpiResult<Result<usize, Combiner>> {
        let len = data.len();
        if !self.settings.algos.node_colls || !self.mail_ready(comm, len, SCAN_MAX, blocking)? {
            return Ok(Err(op));
        }
        let (chan, stamp) = self.mail_stamps(comm, pieces(len, MAIL_MAX))?;
        let (rank, me, _, n) = self.mail_members(comm, 0)?;
        let readers = (n - 1 - rank) as u32;
        let scan = MailScan {
            post: (readers > 0).then(|| PostPieces::new(me, stamp, len, MAIL_MAX)),
            readers,
            data: Source::User(data),
            next: 0,
            stamp,
            piece: 0,
            acc: [0; MAIL_MAX],
            big: if len > MAIL_MAX {
                vec![0; 2 * len]
            } else {
                Vec::new()
            },
            op,
            out,
            inclusive,
            me: rank,
        };
        self.net.counters.mail_shares += 1;
        self.start_mail(comm, chan, Work::Scan(Box::new(scan)), blocking)
            .map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form counts the ranks whose block overlaps each piece,
    /// root aside, as a reader decides it reads a piece.
    #[test]
    fn a_scatter_piece_has_the_readers_whose_blocks_touch_it() {
        for members in 1..12 {
            for block in 1..140 {
                for root in 0..members {
                    let r = Readers::Blocks {
                        block,
                        members,
                        root,
                    };
                    for j in 0..pieces(block * members, MAIL_MAX) {
                        let want = (0..members)
                            .filter(|&m| {
                                m != root
                                    && ReadPieces::touches(
                                        &(m * block..(m + 1) * block),
                                        j,
                                        MAIL_MAX,
                                    )
                            })
                            .count() as u32;
                        assert_eq!(
                            r.of(j),
                            want,
                            "members {members} block {block} root {root} piece {j}"
                        );
                    }
                }
            }
        }
    }
}
