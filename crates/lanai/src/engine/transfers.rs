//! Collectives as point-to-point transfers between the callers' buffers:
//! every receive is posted into its block of the receive buffer, a
//! member's own block is copied across, then every send leaves from its
//! block of the send buffer. All-to-all(v, w) goes this way whenever the
//! barrier device and the staging slots do not take it, on one node or
//! across nodes, except `MPI_IN_PLACE`, whose send data the receives
//! would overwrite; gather and scatter from [`TRANSFER_MIN`] bytes per
//! block, and gatherv and scatterv at every size, the root receiving or
//! sending one block per member (on one node only the blocks too long
//! for a mailbox slot: `mail_share.rs`); allgathers as [`allgather_as_transfers`]
//! says; broadcasts from [`BCAST_TRANSFER_MIN`], down a binomial tree.
//!
//! These collectives are one round of independent transfers (gather and
//! scatter linear, not a tree, at these sizes), so a machine has nothing
//! to decide; what it cost was copies. The message machines copied the
//! send buffer on the way in, every incoming block into their own buffer
//! and the result once more into the caller's, and acknowledged messages
//! one by one: at 4 ranks on 4 emulated nodes an all-to-all of 256 KiB
//! blocks took 3.6-5.5 ms a call against 1.0-1.3 ms for the same transfers
//! as `MPI_Isend`/`MPI_Irecv` (Open MPI over TCP: 1.4-1.9 ms). Transfers
//! send from the caller's memory and take large blocks straight into
//! place (rendezvous; a single copy within a node).
//!
//! They use the communicator's collective context, which no receive of
//! the program can match, and a tag from the collective sequence number,
//! so instances in flight at once stay apart while each pair's messages
//! of one instance match in order. Every member takes this path or none:
//! the device's and the slots' choices, the block size of a gather or
//! scatter and `MPI_IN_PLACE` (all or nothing for an all-to-all) are the
//! same everywhere.

use super::call_check::{self, Call};
use super::coll::{coll_err, coll_status};
use super::delivery::State;
use super::error::{MpiError, MpiResult};
use super::p2p::Ctx;
use super::request::{Op, SendMode};
use super::Engine;
use crate::abi::userbuf::UserBuf;
use lanai_coll::Layout;
use lanai_wire::envelope::Envelope;

/// The smallest gather or scatter block sent as transfers. Below it the
/// binomial tree's fewer messages at the root win (8 ranks on 8 emulated
/// nodes, 8 bytes: gather 20-24 us against 32-41 as transfers, scatter
/// 39 against 34; 512 bytes even); from 2 KiB the transfers win or tie
/// (8 KiB: gather 93-111 against 166-193, scatter 60-95 against 122-222;
/// 256 KiB gather 1.0-1.1 ms against 3.6-3.9, Open MPI 1.6-1.9).
pub(super) const TRANSFER_MIN: usize = 2 << 10;

/// The most members a gather of smaller blocks than [`TRANSFER_MIN`]
/// still sends as transfers, one message per member straight to the root
/// (a linear gather), rather than up the binomial tree, whose inner ranks
/// must each be scheduled to pass their subtree on. Since the transfers'
/// matching kept a queue per source (which the figures above predate),
/// the linear gather wins up to 8 members and loses beyond (8-byte
/// blocks, `collectives gather` against `gatherv` with equal counts, us,
/// tree / linear: 4 ranks on 4 emulated nodes 11.1 / 3.2, 8 on 8 14-19 /
/// 5.7-6.3, 8 on 4 7.3 / 6.1, 8 on 2 4.9 / 5.7, 16 on 2 10 / 14.6, 16 on 4
/// 13.1 / 15.6, 16 on 16 18.4 / 15.8). Every member decides alike: by
/// the communicator's size and the block.
pub(super) const LINEAR_GATHER_MAX: u32 = 8;

/// The smallest broadcast sent as transfers, down a binomial tree: each
/// member receives the whole message from its parent into its buffer,
/// then sends it on to its children from there. At 256 KiB (C loops of
/// `MPI_Recv`/`MPI_Isend`, 2 runs each) 1.0-1.3 ms against
/// `MPI_Bcast`'s 1.8-2.0 (scatter-allgather through the message
/// machines) at 8 ranks on 8 emulated nodes, 0.31-0.32 against 2.2-2.3 on
/// 2 nodes, 0.34-0.38 against 0.51-0.82 at 4 on 4; at 64 KiB even on 8 x 8
/// and 4 x 4, 0.11 against 0.31-0.37 on 8 x 2.
pub(super) const BCAST_TRANSFER_MIN: usize = 64 << 10;

/// Whether an allgather of `len`-byte blocks on `size` members goes as
/// transfers, every member's block straight to every other, rather than
/// round the message machine's ring. Up to 4 members from
/// [`TRANSFER_MIN`] (4 x 4, 64 KiB: 484 against 654 us; 4 x 2, 16 KiB: 113
/// against 123; a tie at 4 KiB on 4 x 4). On more, from
/// [`ALLGATHER_MANY_MIN`]: since eager TCP messages from 16 KiB land in
/// place, the transfers win there too (medians of 3 launches, us, ring /
/// transfers / Open MPI: 8 x 8 16 KiB 848 / 575 / 738, 64 KiB 1726 / 1686 /
/// 2339; 8 x 2 16 KiB 859 / 415 / 888; 8 x 4 32 KiB 1370 / 788 / 1241;
/// 16 x 4 16 KiB 4748 / 2575 / 3737), tie at 8 KiB (8 x 8: 332 / 343) and
/// lose at 4 KiB (8 x 8: 280 / 396). Every member knows both numbers alike.
pub(super) fn allgather_as_transfers(size: u32, len: usize) -> bool {
    len >= TRANSFER_MIN && (size <= 4 || len >= ALLGATHER_MANY_MIN)
}

/// The smallest allgather block sent as transfers on more than 4 members.
const ALLGATHER_MANY_MIN: usize = 16 << 10;

/// One collective in flight as transfers.
#[derive(Debug)]
pub struct Transfers {
    /// The request the program holds.
    req: usize,
    comm: usize,
    /// The communicator's collective context, and the instance number
    /// as a tag.
    ctx: u32,
    tag: i32,
    /// The user's call that started it (`call_check.rs`), if one did.
    call: Option<Call>,
    /// Why it fails at the next liveness check, and whether this rank
    /// found it (then it tells the members).
    fault: Option<(MpiError, bool)>,
    /// Its call was shown to the members (`Engine::show_calls`).
    shown: bool,
    /// The transfers' requests (eager sends complete at once and have
    /// none); `parts[..done]` are known complete.
    parts: Vec<usize>,
    done: usize,
    /// Sends that start once every part so far is done: a broadcast's
    /// to its children, after the receive from its parent.
    then: Vec<Leg>,
    /// The bytes each of the first parts, receives, must bring: a gather's
    /// blocks are all the same size, and a shorter one means the members'
    /// counts disagree. Empty where a receive may bring less (the v forms).
    exact: Vec<u64>,
}

/// One transfer: `buf` from or to member `peer`.
#[derive(Debug)]
struct Leg {
    peer: u32,
    buf: UserBuf,
}

/// When a collective's sends start, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sends {
    /// With the receives.
    Now,
    /// Once the receives are done (a tree passes on what it received).
    AfterRecvs,
    /// With the receives, to one member that receives from every other.
    FanIn,
}

/// Bytes `r` of `buf`, or an internal error (the layouts were checked).
pub(super) fn block_of(buf: &UserBuf, r: std::ops::Range<usize>) -> MpiResult<UserBuf> {
    let (start, end) = (r.start, r.end);
    buf.range(r).ok_or_else(|| {
        MpiError::internal(format!(
            "collective: bytes {start}..{end} outside a buffer of {}",
            buf.len()
        ))
    })
}

/// A rooted collective's legs at the root: block `p` of `buf`, as
/// `blocks` lays them out, with every member `p` but the root, from the
/// root's right-hand neighbour on.
fn others_blocks(buf: &UserBuf, blocks: &Layout, root: u32, size: u32) -> MpiResult<Vec<Leg>> {
    blocks.check_size(size).map_err(coll_err)?;
    (1..size)
        .map(|s| (root + s) % size)
        .map(|p| {
            Ok(Leg {
                peer: p,
                buf: block_of(buf, blocks.block(p))?,
            })
        })
        .collect()
}

impl Engine {
    /// All-to-all of `send` (laid out as `send_blocks`, block `p` for
    /// rank `p`) into `out` (laid out as `recv_blocks`), in the pairwise
    /// order: receives from `r - s`, sends to `r + s`.
    pub(super) fn start_exchange(
        &mut self,
        comm: usize,
        send: UserBuf,
        send_blocks: &Layout,
        out: UserBuf,
        recv_blocks: &Layout,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        send_blocks
            .check_size(size)
            .and_then(|()| recv_blocks.check_size(size))
            .map_err(coll_err)?;
        let mut recvs = Vec::with_capacity(size as usize);
        let mut sends = Vec::with_capacity(size as usize);
        for s in 1..size {
            let from = (rank + size - s) % size;
            let to = (rank + s) % size;
            recvs.push(Leg {
                peer: from,
                buf: block_of(&out, recv_blocks.block(from))?,
            });
            sends.push(Leg {
                peer: to,
                buf: block_of(&send, send_blocks.block(to))?,
            });
        }
        let own = (
            block_of(&send, send_blocks.block(rank))?,
            block_of(&out, recv_blocks.block(rank))?,
        );
        self.start_transfers(comm, &recvs, Some(own), sends, Sends::Now)
    }

    /// Broadcast of `buf` from `root` down a binomial tree (in ranks
    /// relative to the root): a member receives from the member that
    /// differs in its lowest set bit, then sends to the members its lower
    /// bits reach, farthest first.
    pub(super) fn start_bcast_transfers(
        &mut self,
        comm: usize,
        buf: UserBuf,
        root: u32,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        let rel = (rank + size - root) % size;
        let abs = |r: u32| (r + root) % size;
        let low = if rel == 0 {
            size.next_power_of_two()
        } else {
            1 << rel.trailing_zeros()
        };
        let parent = (rel != 0).then(|| Leg {
            peer: abs(rel - low),
            buf,
        });
        let children = (0..low.trailing_zeros())
            .rev()
            .map(|b| rel + (1 << b))
            .filter(|&c| c < size)
            .map(|c| Leg { peer: abs(c), buf })
            .collect();
        let recvs: Vec<Leg> = parent.into_iter().collect();
        self.start_transfers(comm, &recvs, None, children, Sends::AfterRecvs)
    }

    /// Gather(v): the root receives member `p`'s bytes into block `p` of
    /// `out`, as `blocks` lays them out (`out` is `Some` and `blocks` read
    /// at the root only).
    pub(super) fn start_gather_transfers(
        &mut self,
        comm: usize,
        data: UserBuf,
        out: Option<UserBuf>,
        blocks: &Layout,
        root: u32,
        exact: bool,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        let Some(out) = out.filter(|_| rank == root) else {
            let to_root = vec![Leg {
                peer: root,
                buf: data,
            }];
            // Every member sends to the root at once.
            return self.start_transfers(comm, &[], None, to_root, Sends::FanIn);
        };
        let recvs = others_blocks(&out, blocks, root, size)?;
        let own = (data, block_of(&out, blocks.block(root))?);
        let req = self.start_transfers(comm, &recvs, Some(own), Vec::new(), Sends::Now)?;
        if let Some(x) = self
            .st
            .transfers
            .last_mut()
            .filter(|x| exact && x.req == req)
        {
            x.exact = recvs.iter().map(|l| l.buf.len() as u64).collect();
        }
        Ok(req)
    }

    /// Scatter(v) of the root's `data`, as `blocks` lays it out: member
    /// `p` receives block `p` into `out` (`None` at an in-place root;
    /// `data` and `blocks` read at the root only).
    pub(super) fn start_scatter_transfers(
        &mut self,
        comm: usize,
        data: UserBuf,
        blocks: &Layout,
        out: Option<UserBuf>,
        root: u32,
    ) -> MpiResult<usize> {
        let (rank, size) = self.rank_size(comm)?;
        if rank != root {
            let out = out.ok_or_else(|| MpiError::internal("scatter: no receive buffer"))?;
            let from_root = [Leg {
                peer: root,
                buf: out,
            }];
            return self.start_transfers(comm, &from_root, None, Vec::new(), Sends::Now);
        }
        let sends = others_blocks(&data, blocks, root, size)?;
        let mine = block_of(&data, blocks.block(root))?;
        // A receive buffer longer than the root's own block takes it at
        // its start, as a receive would.
        let own = out
            .map(|o| Ok((mine, block_of(&o, 0..mine.len())?)))
            .transpose()?;
        self.start_transfers(comm, &[], own, sends, Sends::Now)
    }

    /// The large blocks of a gatherv or scatterv whose small ones go
    /// through the mailboxes (`mail_share.rs`), at the root, as instance
    /// `seq`: block `p` of `buf` (as `blocks` lays them out) from
    /// (`gather`) or to every member `p` whose block is longer than
    /// `mailed` bytes, the most the mailboxes take.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_root_transfers_as(
        &mut self,
        comm: usize,
        seq: u32,
        buf: &UserBuf,
        blocks: &Layout,
        root: u32,
        gather: bool,
        mailed: usize,
    ) -> MpiResult<usize> {
        let (_, size) = self.rank_size(comm)?;
        let mut legs = others_blocks(buf, blocks, root, size)?;
        legs.retain(|l| l.buf.len() > mailed);
        if gather {
            self.start_transfers_as(comm, seq, &legs, None, Vec::new(), Sends::Now)
        } else {
            self.start_transfers_as(comm, seq, &[], None, legs, Sends::Now)
        }
    }

    /// A member's large block of such a gatherv (`to_root`) or scatterv,
    /// as instance `seq`.
    pub(super) fn start_member_transfer_as(
        &mut self,
        comm: usize,
        seq: u32,
        buf: UserBuf,
        root: u32,
        to_root: bool,
    ) -> MpiResult<usize> {
        let leg = Leg { peer: root, buf };
        if to_root {
            self.start_transfers_as(comm, seq, &[], None, vec![leg], Sends::FanIn)
        } else {
            self.start_transfers_as(comm, seq, &[leg], None, Vec::new(), Sends::Now)
        }
    }

    /// Posts `recvs`, copies `own` (source, destination), then starts
    /// `sends` (at once, or once the receives are done), all under one
    /// request of `comm`'s next collective number.
    fn start_transfers(
        &mut self,
        comm: usize,
        recvs: &[Leg],
        own: Option<(UserBuf, UserBuf)>,
        sends: Vec<Leg>,
        when: Sends,
    ) -> MpiResult<usize> {
        if let Some((from, to)) = &own {
            if from.len() != to.len() {
                return Err(MpiError::new(
                    crate::abi::consts::MPI_ERR_TRUNCATE,
                    format!(
                        "this rank's own block is {} bytes to send and {} to receive",
                        from.len(),
                        to.len()
                    ),
                ));
            }
        }
        let seq = self.reserve_coll_seq(comm)?;
        self.start_transfers_as(comm, seq, recvs, own, sends, when)
    }

    /// [`Engine::start_transfers`] as instance `seq`, already reserved.
    fn start_transfers_as(
        &mut self,
        comm: usize,
        seq: u32,
        recvs: &[Leg],
        own: Option<(UserBuf, UserBuf)>,
        sends: Vec<Leg>,
        when: Sends,
    ) -> MpiResult<usize> {
        let after = when == Sends::AfterRecvs;
        let mode = if when == Sends::FanIn {
            SendMode::FanIn
        } else {
            SendMode::Standard
        };
        self.net.counters.transfer_colls += 1;
        let tag = (seq & 0x7fff_ffff) as i32;
        let mut parts = Vec::with_capacity(recvs.len() + sends.len());
        let started = (|| {
            for l in recvs {
                parts.push(self.start_recv_on(comm, Ctx::Coll, l.peer as i32, tag, l.buf)?);
            }
            // An in-place root's block is where it belongs already.
            if let Some((from, to)) = own.filter(|(f, t)| f.addr() != t.addr()) {
                to.write(from.as_slice());
            }
            if !after {
                self.send_legs(comm, tag, &sends, mode, &mut parts)?;
            }
            Ok(())
        })();
        if let Err(e) = started {
            // What started goes on without us and is dropped when done.
            for &p in &parts {
                if let Some(r) = self.st.reqs.get_mut(p) {
                    r.freed = true;
                }
            }
            return Err(e);
        }
        let req = self.st.reqs.insert_on(Op::Coll, comm);
        let ctx = self.comms.get(comm)?.coll_ctx();
        let call = self.signing_call();
        self.st.transfers.push(Transfers {
            req,
            comm,
            ctx,
            tag,
            call,
            fault: None,
            shown: false,
            parts,
            done: 0,
            then: if after { sends } else { Vec::new() },
            exact: Vec::new(),
        });
        self.drive_transfers()?;
        Ok(req)
    }

    /// Starts a send of every leg; those not complete at once join `parts`.
    fn send_legs(
        &mut self,
        comm: usize,
        tag: i32,
        legs: &[Leg],
        mode: SendMode,
        parts: &mut Vec<usize>,
    ) -> MpiResult<()> {
        for l in legs {
            if let Some(r) = self.start_send_on(comm, Ctx::Coll, l.peer as i32, tag, l.buf, mode)? {
                parts.push(r);
            }
        }
        Ok(())
    }

    /// Completes the collectives whose transfers are all done. True if
    /// any did.
    pub(super) fn drive_transfers(&mut self) -> MpiResult<bool> {
        let mut did = false;
        let mut i = 0;
        while i < self.st.transfers.len() {
            let x = &mut self.st.transfers[i];
            while x.done < x.parts.len()
                && self.st.reqs.get(x.parts[x.done]).is_some_and(|r| r.done)
            {
                x.done += 1;
            }
            if x.done < x.parts.len() {
                i += 1;
                continue;
            }
            let failed = x
                .parts
                .iter()
                .any(|&p| self.st.reqs.get(p).is_some_and(|r| r.status.error != 0));
            if !x.then.is_empty() && !failed {
                let (comm, tag, then) = (x.comm, x.tag, std::mem::take(&mut x.then));
                let mut parts = Vec::with_capacity(then.len());
                let sent = self.send_legs(comm, tag, &then, SendMode::Standard, &mut parts);
                self.st.transfers[i].parts.extend(parts);
                if let Err(e) = sent {
                    let x = self.st.transfers.swap_remove(i);
                    let mut status = coll_status();
                    status.error = e.class;
                    for p in x.parts {
                        if let Some(r) = self.st.reqs.get_mut(p) {
                            r.freed = true;
                        }
                    }
                    self.st.reqs.complete(x.req, status);
                    return Err(e);
                }
                did = true;
                continue;
            }
            let x = self.st.transfers.swap_remove(i);
            let mut status = coll_status();
            for (k, p) in x.parts.into_iter().enumerate() {
                if let Some(r) = self.st.reqs.get(p) {
                    // The first failure, and whom it came from.
                    let short = x.exact.get(k).is_some_and(|&want| r.status.count != want);
                    if status.error == 0 && (r.status.error != 0 || short) {
                        status.error = match r.status.error {
                            0 => crate::abi::consts::MPI_ERR_TRUNCATE,
                            e => e,
                        };
                        status.source = r.status.source;
                    }
                }
                self.st.reqs.remove(p);
            }
            self.st.reqs.complete(x.req, status);
            did = true;
        }
        Ok(did)
    }
}

/// What a collective in flight as transfers shows the members
/// (`Engine::show_calls`).
pub(super) struct Show {
    pub comm: usize,
    pub ctx: u32,
    pub seq: u32,
    pub call: Call,
}

impl Transfers {
    /// Its call, the first time it is asked, if a call started it.
    pub(super) fn show(&mut self) -> Option<Show> {
        let call = self.call.filter(|_| !self.shown)?;
        self.shown = true;
        Some(Show {
            comm: self.comm,
            ctx: self.ctx,
            seq: self.tag as u32,
            call,
        })
    }
}

impl Engine {
    /// At a liveness check: fails each collective in flight as transfers
    /// that a member's notice faulted, or for which a member's collective
    /// message waits under its number, unstarted: every member takes the
    /// transfers or none in a correct program, and where sizes disagree
    /// neither side takes the other's messages. Where this rank found the
    /// difference, it tells the members (`Kind::CollNotice`), so that
    /// those waiting on its transfers fail too.
    pub(super) fn fail_crossed_transfers(&mut self) -> MpiResult<()> {
        let mut i = 0;
        while i < self.st.transfers.len() {
            let x = &mut self.st.transfers[i];
            let fault = x.fault.take().or_else(|| {
                let (from, sig) = self.st.colls.early_from(x.ctx, x.tag as u32)?;
                Some((call_check::crossed_transfers(x.call, from, sig), true))
            });
            let Some((err, found_here)) = fault else {
                i += 1;
                continue;
            };
            let (comm, ctx, seq, call) = (x.comm, x.ctx, x.tag as u32, x.call);
            self.st.fail_transfers(i, err);
            if let (true, Some(call)) = (found_here, call) {
                self.notify_failed(comm, ctx, seq, call)?;
            }
        }
        Ok(())
    }
}

impl State {
    /// A notice (`Kind::CollNotice`, its body `body` the sender's call)
    /// about the collective numbered `env.tag`, if it runs here as
    /// transfers: a
    /// member found that the calls differ, or (`SHOWN`) shows its call,
    /// which this rank compares with its own. Acted on at the next
    /// liveness check.
    pub fn transfers_notice(&mut self, env: &Envelope, body: &[u8]) {
        let Some(x) = self
            .transfers
            .iter_mut()
            .find(|x| x.ctx == env.ctx && x.tag == env.tag)
        else {
            return;
        };
        let theirs = Call::from_body(body);
        if env.flags & super::coll_ref::SHOWN != 0 {
            let (Some(mine), Some(theirs)) = (x.call, theirs) else {
                return;
            };
            if let Some(e) = call_check::disagreement(&mine, &theirs, env.src) {
                x.fault.get_or_insert((e, true));
            }
            return;
        }
        let err = call_check::noticed_disagreement(x.call, theirs, env.src);
        x.fault.get_or_insert((err, false));
    }

    /// Ends collective `i` in flight as transfers with `err`, which its
    /// wait raises: its receives not matched yet are withdrawn, so that
    /// nothing lands in a buffer the program has taken back, and what
    /// still runs is dropped when done.
    fn fail_transfers(&mut self, i: usize, err: MpiError) {
        let x = self.transfers.swap_remove(i);
        for p in x.parts {
            if self.matcher.cancel(p) {
                self.reqs.remove(p);
            } else if let Some(r) = self.reqs.get_mut(p) {
                r.freed = true;
            }
        }
        let status = crate::engine::request::Status {
            error: err.class,
            ..coll_status()
        };
        let cookie = self.reqs.cookie(x.req);
        self.reqs.complete(x.req, status);
        self.colls.keep_failure(cookie, err);
    }
}
