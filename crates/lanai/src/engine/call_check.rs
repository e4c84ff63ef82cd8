//! Collectives whose ranks disagree (an erroneous program: counts,
//! datatypes, root or the function itself differ) can pick paths on one
//! node that never meet: one rank waits on a mailbox, another for a
//! message, and neither ever fails. So every collective of the user's,
//! blocking or not, is numbered per communicator, alike at every member
//! (MPI has every member call them in the same order), and what it was
//! called with is published in the node segment (the rank's latest two
//! calls). A rank that has waited long in one (a second, at the liveness
//! check) compares its call with the same-numbered calls of the members on
//! its node and fails with the difference; a rank waiting while its
//! nonblocking collectives are pending compares each of those.
//!
//! Across nodes, every message of a collective instance started by such a
//! call carries the call folded into 16 bits (`Envelope::sig`). A receiver
//! whose own call folds to another function, form or root fails at once;
//! one whose call differs only in size notes it, and fails if the
//! instance is still running at the next liveness check. Either way it
//! tells every member of the instance, so that those waiting for it fail
//! too (`Kind::CollNotice`, in `coll.rs`). An instance that differs only
//! in size and ends anyway, with the machine's own error or none, ends as
//! it did before. A member that has waited a second shows its call to the
//! others, for the members no message of which reaches it; and one that
//! sends point to point (transfers) finds a member whose size went as
//! collective messages by the messages waiting under its number, and the
//! reverse. A blocking call that fails marks its published entry with its
//! error class, so the members on its node that wait for it (on the
//! device, where no message comes) fail at their next check with the same
//! class.
//!
//! Only the calls the user makes are numbered, at the ABI, before any
//! path is picked: an internal operation taken on some ranks only would
//! put the members' numbers out of step.

use super::error::{MpiError, MpiResult};
use super::net::Route;
use super::Engine;
use crate::abi::consts as c;
use crate::shm::ring::CALL_WORDS;

/// The collectives that are checked, blocking and nonblocking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CallKind {
    Barrier = 1,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    Gatherv,
    Scatterv,
    Allgatherv,
    Alltoallv,
    Alltoallw,
    Scan,
    Exscan,
    ReduceScatter,
    ReduceScatterBlock,
}

impl CallKind {
    const ALL: [CallKind; 17] = [
        CallKind::Barrier,
        CallKind::Bcast,
        CallKind::Reduce,
        CallKind::Allreduce,
        CallKind::Gather,
        CallKind::Scatter,
        CallKind::Allgather,
        CallKind::Alltoall,
        CallKind::Gatherv,
        CallKind::Scatterv,
        CallKind::Allgatherv,
        CallKind::Alltoallv,
        CallKind::Alltoallw,
        CallKind::Scan,
        CallKind::Exscan,
        CallKind::ReduceScatter,
        CallKind::ReduceScatterBlock,
    ];

    /// The blocking and the nonblocking form's names.
    fn names(self) -> [&'static str; 2] {
        match self {
            CallKind::Barrier => ["MPI_Barrier", "MPI_Ibarrier"],
            CallKind::Bcast => ["MPI_Bcast", "MPI_Ibcast"],
            CallKind::Reduce => ["MPI_Reduce", "MPI_Ireduce"],
            CallKind::Allreduce => ["MPI_Allreduce", "MPI_Iallreduce"],
            CallKind::Gather => ["MPI_Gather", "MPI_Igather"],
            CallKind::Scatter => ["MPI_Scatter", "MPI_Iscatter"],
            CallKind::Allgather => ["MPI_Allgather", "MPI_Iallgather"],
            CallKind::Alltoall => ["MPI_Alltoall", "MPI_Ialltoall"],
            CallKind::Gatherv => ["MPI_Gatherv", "MPI_Igatherv"],
            CallKind::Scatterv => ["MPI_Scatterv", "MPI_Iscatterv"],
            CallKind::Allgatherv => ["MPI_Allgatherv", "MPI_Iallgatherv"],
            CallKind::Alltoallv => ["MPI_Alltoallv", "MPI_Ialltoallv"],
            CallKind::Alltoallw => ["MPI_Alltoallw", "MPI_Ialltoallw"],
            CallKind::Scan => ["MPI_Scan", "MPI_Iscan"],
            CallKind::Exscan => ["MPI_Exscan", "MPI_Iexscan"],
            CallKind::ReduceScatter => ["MPI_Reduce_scatter", "MPI_Ireduce_scatter"],
            CallKind::ReduceScatterBlock => {
                ["MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block"]
            }
        }
    }

    fn from_u8(b: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| *k as u8 == b)
    }
}

/// The size of a call whose members may pass different sizes (the v and
/// w forms, where only the root, or nobody, knows every block): never
/// compared.
pub const ANY_SIZE: usize = usize::MAX;

/// What one member passed to a collective: its root (if it has one) and
/// the bytes of the block it sends or receives, which every member must
/// agree on (a gather's root gives the bytes of each block it receives),
/// and whether it was the nonblocking form, which matches only its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    kind: CallKind,
    root: Option<u32>,
    bytes: u64,
    nonblocking: bool,
}

const NO_ROOT: u32 = u32::MAX;
/// Where a `sig` keeps the function and the root, and the size's bits.
const KIND_SHIFT: u32 = 10;
const ROOT_SHIFT: u32 = 7;
const ROOT_MASK: u16 = 0x7;
const SIZE_MASK: u16 = 0x7f;
/// The bit of a published kind's byte that marks the nonblocking form.
const NONBLOCKING: u8 = 0x80;
/// Nonblocking calls kept for the checks; older ones go unchecked.
pub const NB_KEPT: usize = 32;

/// A nonblocking collective call and its request (slot and cookie), on
/// communicator `comm`.
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    req: usize,
    cookie: u64,
    comm: usize,
    signed: Signed,
}

impl Call {
    #[cfg(test)]
    pub fn new(kind: CallKind, root: Option<u32>, bytes: u64, nonblocking: bool) -> Self {
        Call {
            kind,
            root,
            bytes,
            nonblocking,
        }
    }

    /// The call folded into an envelope's `sig`, never 0: the form (1
    /// bit), the function (5 bits), the root's low 3 bits and 7 bits of
    /// the size. Two calls that differ fold alike only when their roots
    /// or sizes collide in those bits; the check then misses, as it did
    /// before it existed.
    pub fn sig(&self) -> u16 {
        let form = u16::from(self.nonblocking) << 15;
        let kind = (self.kind as u16 - 1) << KIND_SHIFT;
        let root = self.root.map_or(ROOT_MASK, |r| r as u16 & ROOT_MASK);
        let size = (self.folded_bytes().wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57) as u16;
        // 0 would be a blocking barrier with root 0: barriers have none.
        (form | kind | (root << ROOT_SHIFT) | size).max(1)
    }

    /// Whether a member whose call folds to `sig` surely made another
    /// call than this one: another function, form or root. Sizes fold
    /// into 7 bits, and a path may still end well where only they differ
    /// (a broadcast's root that sends less than the others expect).
    pub fn differs_beyond_size(&self, sig: u16) -> bool {
        sig != 0 && (sig ^ self.sig()) & !SIZE_MASK != 0
    }

    /// Two words for a notice (`Kind::CollNotice`).
    pub fn words(&self) -> [u64; 2] {
        let kind = self.kind as u8 | if self.nonblocking { NONBLOCKING } else { 0 };
        [
            (u64::from(kind) << 32) | u64::from(self.root.unwrap_or(NO_ROOT)),
            self.bytes,
        ]
    }

    /// The call a notice's body carries (`Kind::CollNotice`), if it is one.
    pub fn from_body(body: &[u8]) -> Option<Self> {
        let word = |k: usize| {
            body.get(k * 8..k * 8 + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        };
        Self::from_words([word(0), word(1)])
    }

    /// `None` for words never written (kind 0) or not understood.
    pub fn from_words(w: [u64; 2]) -> Option<Self> {
        let byte = (w[0] >> 32) as u8;
        let kind = CallKind::from_u8(byte & !NONBLOCKING)?;
        let root = (w[0] as u32 != NO_ROOT).then_some(w[0] as u32);
        Some(Call {
            kind,
            root,
            bytes: w[1],
            nonblocking: byte & NONBLOCKING != 0,
        })
    }

    /// The function's name, for messages.
    pub fn name(&self) -> &'static str {
        self.kind.names()[usize::from(self.nonblocking)]
    }

    /// Whether the members must pass the same size: not a v or w form,
    /// whose members' blocks may differ (a gatherv's root checks each
    /// member's against its counts, [`RootBlocks`]).
    fn sized(&self) -> bool {
        let v = matches!(
            self.kind,
            CallKind::Gatherv | CallKind::Scatterv | CallKind::Alltoallv | CallKind::Alltoallw
        );
        !v && self.bytes != ANY_SIZE as u64
    }

    /// The size a `sig` folds: none where sizes may differ.
    fn folded_bytes(&self) -> u64 {
        match self.sized() {
            true => self.bytes,
            false => ANY_SIZE as u64,
        }
    }
}

/// A call's number on its communicator (by context id).
#[derive(Debug, Clone, Copy)]
pub struct CallId {
    ctx: u32,
    n: u32,
}

/// The bytes of each member's block at the root of a gatherv or scatterv,
/// by communicator rank, for its call numbered `n` on context `ctx`: each
/// member publishes its own block's bytes, and only the root can check
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootBlocks {
    ctx: u32,
    n: u32,
    bytes: Vec<usize>,
}

/// A call, numbered on its communicator (identified by its context id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed {
    ctx: u32,
    n: u32,
    call: Call,
    /// The error class the call returned, if it failed: members waiting
    /// for it would never finish.
    failed: Option<u8>,
}

/// Where a published entry's second word keeps the failed call's class
/// plus one (0: it has not failed), above the function's byte.
const FAILED_SHIFT: u32 = 40;
const FAILED_MASK: u64 = 0xff << FAILED_SHIFT;

impl Signed {
    fn words(&self) -> [u64; CALL_WORDS] {
        let [a, b] = self.call.words();
        let failed = self.failed.map_or(0, |c| u64::from(c) + 1) << FAILED_SHIFT;
        [
            (u64::from(self.ctx) << 32) | u64::from(self.n),
            a | failed,
            b,
        ]
    }

    /// `None` for an entry never written (kind 0) or not understood.
    fn from_words(w: [u64; CALL_WORDS]) -> Option<Self> {
        let failed = ((w[1] & FAILED_MASK) >> FAILED_SHIFT) as u8;
        Some(Signed {
            ctx: (w[0] >> 32) as u32,
            n: w[0] as u32,
            call: Call::from_words([w[1] & !FAILED_MASK, w[2]])?,
            failed: failed.checked_sub(1),
        })
    }
}

/// How a member's call, known only by its `sig`, differs from `mine`.
pub fn sig_disagreement(mine: &Call, sig: u16, them: u32) -> MpiError {
    let theirs = CallKind::from_u8(((sig >> KIND_SHIFT) & 0x1f) as u8 + 1).map(|kind| Call {
        kind,
        nonblocking: sig & 0x8000 != 0,
        ..*mine
    });
    if theirs.map(|t| (t.kind, t.nonblocking)) != Some((mine.kind, mine.nonblocking)) {
        let name = theirs.as_ref().map_or("another collective", Call::name);
        return MpiError::new(
            c::MPI_ERR_OTHER,
            format!(
                "the ranks call different collectives: rank {them} called {name} where this \
                 rank called {}",
                mine.name()
            ),
        );
    }
    if (sig >> ROOT_SHIFT) & ROOT_MASK != mine.root.map_or(ROOT_MASK, |r| r as u16 & ROOT_MASK) {
        return MpiError::new(
            c::MPI_ERR_ROOT,
            format!(
                "the ranks name different roots: rank {them} named another root than this \
                 rank's {}",
                mine.root.map_or(0, |r| r)
            ),
        );
    }
    MpiError::new(
        c::MPI_ERR_TRUNCATE,
        format!(
            "the ranks' counts or datatypes disagree: rank {them} passed another size than \
             this rank's {} bytes",
            mine.bytes
        ),
    )
}

/// A collective whose members' sizes took different paths: this rank's
/// goes as collective messages and member `them`'s as `len` bytes point
/// to point (`transfers.rs`).
pub fn crossed_paths(mine: Option<Call>, them: u32, len: u64) -> MpiError {
    let this = own_size(mine);
    MpiError::new(
        c::MPI_ERR_TRUNCATE,
        format!(
            "the ranks' counts or datatypes disagree: rank {them} sent {len} bytes point to \
             point where this rank's size{this} sends its part as collective messages"
        ),
    )
}

/// The reverse of [`crossed_paths`]: member `them`, whose call folds to
/// `sig` (0: unknown), sent collective messages where this rank's size
/// sends point to point.
pub fn crossed_transfers(mine: Option<Call>, them: u32, sig: u16) -> MpiError {
    if let Some(m) = mine.filter(|m| sig != 0 && sig != m.sig()) {
        return sig_disagreement(&m, sig, them);
    }
    let this = own_size(mine);
    MpiError::new(
        c::MPI_ERR_TRUNCATE,
        format!(
            "the ranks' counts or datatypes disagree: rank {them} sent collective messages \
             where this rank's size{this} sends its part point to point"
        ),
    )
}

/// " (N bytes in MPI_X)" for this rank's call, if it is known.
fn own_size(mine: Option<Call>) -> String {
    match mine {
        Some(m) if m.sized() => format!(" ({} bytes in {})", m.bytes, m.name()),
        Some(m) => format!(" (in {})", m.name()),
        None => String::new(),
    }
}

/// Why this rank's collective fails when member `them` said the members'
/// calls differ, with its own call `theirs` where it sent one.
pub fn noticed_disagreement(mine: Option<Call>, theirs: Option<Call>, them: u32) -> MpiError {
    mine.zip(theirs)
        .and_then(|(m, t)| disagreement(&m, &t, them))
        .unwrap_or_else(|| {
            MpiError::new(
                c::MPI_ERR_OTHER,
                format!(
                    "rank {them} found that the ranks' calls of this collective disagree \
                     (function, root, or count and datatype)"
                ),
            )
        })
}

impl RootBlocks {
    /// How member `them`'s call `theirs` differs from what this root's
    /// counts give it, if this is the root's record of that call.
    fn disagreement(&self, theirs: &Signed, them: u32) -> Option<MpiError> {
        if (theirs.ctx, theirs.n) != (self.ctx, self.n) || self.bytes.is_empty() {
            return None;
        }
        let want = *self.bytes.get(them as usize)? as u64;
        let got = theirs.call.bytes;
        (got != want && got != ANY_SIZE as u64).then(|| {
            MpiError::new(
                c::MPI_ERR_TRUNCATE,
                format!(
                    "the ranks' counts or datatypes disagree: rank {them} passed {got} bytes \
                     to this {} where the root's counts give it {want}",
                    theirs.call.name()
                ),
            )
        })
    }
}

/// How `theirs` (communicator rank `them`) differs from `mine`, if it does.
pub fn disagreement(mine: &Call, theirs: &Call, them: u32) -> Option<MpiError> {
    if (mine.kind, mine.nonblocking) != (theirs.kind, theirs.nonblocking) {
        return Some(MpiError::new(
            c::MPI_ERR_OTHER,
            format!(
                "the ranks call different collectives: rank {them} called {} where this rank \
                 called {}",
                theirs.name(),
                mine.name()
            ),
        ));
    }
    if mine.root != theirs.root {
        let root = |r: Option<u32>| r.map_or("none".to_string(), |r| r.to_string());
        return Some(MpiError::new(
            c::MPI_ERR_ROOT,
            format!(
                "the ranks name different roots: rank {them} named {} where this rank named {}",
                root(theirs.root),
                root(mine.root)
            ),
        ));
    }
    if mine.bytes != theirs.bytes && mine.sized() && theirs.sized() {
        return Some(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!(
                "the ranks' counts or datatypes disagree: rank {them} passed {} bytes where \
                 this rank passed {}",
                theirs.bytes, mine.bytes
            ),
        ));
    }
    None
}

impl Engine {
    /// Numbers a collective the user called on `comm` and publishes it for
    /// the node's other members to check: `kind` with `root` and `bytes`
    /// (see [`Call`]). A blocking call's instances carry it in their
    /// messages ([`Call::sig`]) until it waits ([`Engine::finish_coll`]);
    /// a nonblocking one is kept with its request ([`Engine::adopt_call`]).
    /// Returns the call's number on its communicator.
    #[inline(always)]
    pub fn enter_call(
        &mut self,
        blocking: bool,
        comm: usize,
        kind: CallKind,
        root: Option<u32>,
        bytes: usize,
    ) -> MpiResult<CallId> {
        let call = Call {
            kind,
            root,
            bytes: bytes as u64,
            nonblocking: !blocking,
        };
        let cm = self.comms.get_mut(comm)?;
        let n = cm.user_calls;
        cm.user_calls = n.wrapping_add(1);
        let signed = Signed {
            ctx: cm.ctx,
            n,
            call,
            failed: None,
        };
        if let Some(shm) = self.net.shm.as_ref() {
            shm.publish_call(self.calls_published, signed.words());
            self.calls_published += 1;
        }
        self.signing = true;
        let id = CallId { ctx: signed.ctx, n };
        if !blocking {
            self.nb_call = Some((comm, signed));
            return Ok(id);
        }
        self.nb_call = None;
        self.in_call = Some((comm, signed));
        Ok(id)
    }

    /// The call just entered, `id` ([`Engine::enter_call`]), is a gatherv's
    /// or scatterv's at its root, with `bytes` the block of each member:
    /// the check compares each member's own with it.
    pub fn expect_blocks(&mut self, id: CallId, bytes: &[usize]) {
        // The vector is kept from call to call: no allocation per call,
        // and a plain loop, cheaper than a copy call for a few members.
        let b = &mut self.root_blocks;
        (b.ctx, b.n) = (id.ctx, id.n);
        b.bytes.clear();
        for &n in bytes {
            b.bytes.push(n);
        }
    }

    /// The nonblocking call just entered started as request `req`: it is
    /// checked while the rank waits and the request is pending.
    pub fn adopt_call(&mut self, req: usize) {
        self.signing = false;
        let Some((comm, signed)) = self.nb_call.take() else {
            return;
        };
        if self.nb_calls.len() == NB_KEPT {
            self.nb_calls.pop_front();
        }
        let cookie = self.st.reqs.cookie(req);
        self.nb_calls.push_back(Pending {
            req,
            cookie,
            comm,
            signed,
        });
    }

    /// A nonblocking call that failed to start has no request to keep.
    pub fn drop_call(&mut self) {
        self.signing = false;
        self.nb_call = None;
    }

    /// Clears this rank's published calls, as it takes part in creating a
    /// communicator. A context id that every member has freed is used
    /// again, numbered from 0 again; a member that has made no call on the
    /// new communicator yet would otherwise still show its latest calls on
    /// the old one under the same id and numbers. Every member clears
    /// before it sends its part of the agreement, so a member that has the
    /// new communicator sees the others' old calls gone.
    pub(super) fn forget_calls(&self) {
        if let Some(shm) = self.net.shm.as_ref() {
            for slot in 0..2 {
                shm.publish_call(slot, [0; CALL_WORDS]);
            }
        }
    }

    /// The blocking collective has returned, with an error of class
    /// `failed` if it failed: then its published entry says so, for the
    /// members on this node that wait for it.
    #[inline(always)]
    pub fn leave_call(&mut self, failed: Option<i32>) {
        self.signing = false;
        if let Some(class) = failed {
            self.publish_failure(class);
        }
        self.in_call = None;
    }

    /// The call in progress failed with `class`: its published entry says so.
    #[cold]
    fn publish_failure(&mut self, class: i32) {
        let (Some((_, mut signed)), Some(shm)) = (self.in_call, self.net.shm.as_ref()) else {
            return;
        };
        // One byte holds the class plus one.
        let class = u8::try_from(class).ok().filter(|&c| c < u8::MAX);
        signed.failed = Some(class.unwrap_or(c::MPI_ERR_OTHER as u8));
        shm.publish_call(self.calls_published.wrapping_sub(1), signed.words());
    }

    /// The call that starts an instance now, if one is starting it.
    #[inline(always)]
    pub(super) fn signing_call(&self) -> Option<Call> {
        match (self.signing, self.nb_call.or(self.in_call)) {
            (true, Some((_, s))) => Some(s.call),
            _ => None,
        }
    }

    /// While waiting: fails if a member on this node made the blocking
    /// collective in progress, or a pending nonblocking one, differently
    /// under the same number, or made it and failed. A nonblocking call
    /// found so is checked no more: its request stays pending, as a
    /// blocking call's operation does.
    pub(super) fn check_call(&mut self) -> MpiResult<()> {
        if let Some((comm, mine)) = self.in_call {
            self.compare_call(comm, &mine)?;
        }
        let reqs = &self.st.reqs;
        self.nb_calls.retain(|p| {
            reqs.by_cookie(p.cookie) == Some(p.req) && reqs.get(p.req).is_some_and(|r| !r.done)
        });
        for i in 0..self.nb_calls.len() {
            let p = self.nb_calls[i];
            if let Err(e) = self.compare_call(p.comm, &p.signed) {
                self.nb_calls.remove(i);
                return Err(e);
            }
        }
        Ok(())
    }

    /// [`Engine::check_call`] for one call, `mine`, on `comm`.
    fn compare_call(&self, comm: usize, mine: &Signed) -> MpiResult<()> {
        let Some(shm) = self.net.shm.as_ref() else {
            return Ok(());
        };
        let Ok(cm) = self.comms.get(comm) else {
            return Ok(());
        };
        for r in (0..cm.size).filter(|&r| r != cm.rank) {
            let world = cm.world_rank(r) as usize;
            let Some(Route::Shm(local)) = self.net.routes.get(world).copied() else {
                continue;
            };
            for slot in 0..2 {
                let theirs = shm.peer_call(local, slot).and_then(Signed::from_words);
                let Some(t) = theirs.filter(|t| t.ctx == mine.ctx && t.n == mine.n) else {
                    continue;
                };
                if let Some(e) = disagreement(&mine.call, &t.call, r) {
                    return Err(e);
                }
                // Only this call's own record: a reused context id numbers
                // from 0 again, and a record left from an older call could
                // carry the same number.
                let v_root = matches!(mine.call.kind, CallKind::Gatherv | CallKind::Scatterv)
                    && mine.call.root == Some(cm.rank);
                if let Some(e) = v_root
                    .then(|| self.root_blocks.disagreement(&t, r))
                    .flatten()
                {
                    return Err(e);
                }
                if let Some(class) = t.failed {
                    let class = i32::from(class);
                    let why = if class == c::MPI_ERR_TRUNCATE {
                        " (the ranks' counts or datatypes disagree)"
                    } else {
                        ""
                    };
                    return Err(MpiError::new(
                        class,
                        format!(
                            "rank {r} failed in this {} with error class {class}{why}, so this \
                             rank cannot complete it",
                            mine.call.name()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(kind: CallKind, root: Option<u32>, bytes: u64) -> Call {
        Call {
            kind,
            root,
            bytes,
            nonblocking: false,
        }
    }

    fn icall(kind: CallKind, root: Option<u32>, bytes: u64) -> Call {
        Call {
            nonblocking: true,
            ..call(kind, root, bytes)
        }
    }

    #[test]
    fn nonblocking_calls_round_trip_and_match_only_their_own_form() {
        for kind in CallKind::ALL {
            let c = icall(kind, Some(3), 40);
            assert_eq!(Call::from_words(c.words()), Some(c));
            let blocking = kind.names()[0]["MPI_".len()..].to_lowercase();
            assert_eq!(c.name(), format!("MPI_I{blocking}"));
            assert_eq!(CallKind::from_u8(kind as u8), Some(kind));
        }
        let ibcast = icall(CallKind::Bcast, Some(0), 8);
        assert!(disagreement(&ibcast, &ibcast, 1).is_none());
        let e = disagreement(&icall(CallKind::Allreduce, None, 8), &ibcast, 2).unwrap();
        assert_eq!(e.class, c::MPI_ERR_OTHER);
        assert!(
            e.msg
                .contains("rank 2 called MPI_Ibcast where this rank called MPI_Iallreduce"),
            "{}",
            e.msg
        );
        // MPI never matches a blocking collective with a nonblocking one.
        let e = disagreement(&call(CallKind::Bcast, Some(0), 8), &ibcast, 1).unwrap();
        assert!(
            e.msg
                .contains("called MPI_Ibcast where this rank called MPI_Bcast"),
            "{}",
            e.msg
        );
        let e = disagreement(&ibcast, &icall(CallKind::Bcast, Some(0), 2000), 1).unwrap();
        assert_eq!(e.class, c::MPI_ERR_TRUNCATE);
    }

    #[test]
    fn every_function_form_and_root_folds_apart() {
        let mut seen = std::collections::HashMap::new();
        for kind in CallKind::ALL {
            for nonblocking in [false, true] {
                for root in [None, Some(0), Some(1), Some(6)] {
                    let c = Call {
                        nonblocking,
                        ..call(kind, root, 8)
                    };
                    let beyond = c.sig() & !SIZE_MASK;
                    assert!(
                        seen.insert(beyond, c).is_none(),
                        "{c:?} folds as another call"
                    );
                    let e = sig_disagreement(&call(CallKind::Barrier, None, 0), c.sig(), 1);
                    if (kind, nonblocking) != (CallKind::Barrier, false) {
                        assert!(e.msg.contains(c.name()), "{}", e.msg);
                    }
                }
            }
        }
    }

    #[test]
    fn sizes_of_v_forms_are_not_compared() {
        let any = ANY_SIZE as u64;
        let v = call(CallKind::Gatherv, Some(0), any);
        assert!(disagreement(&v, &v, 1).is_none());
        let e = disagreement(&v, &call(CallKind::Gatherv, Some(1), any), 1).unwrap();
        assert_eq!(e.class, c::MPI_ERR_ROOT);
        assert!(!v.differs_beyond_size(v.sig()));
        assert!(v.differs_beyond_size(call(CallKind::Gather, Some(0), 8).sig()));
    }

    #[test]
    fn entries_round_trip_and_blank_ones_are_none() {
        for kind in CallKind::ALL {
            for root in [None, Some(0), Some(7)] {
                for failed in [None, Some(0), Some(14), Some(254)] {
                    let s = Signed {
                        ctx: 0x8000_0002,
                        n: u32::MAX,
                        call: call(kind, root, u64::MAX - 1),
                        failed,
                    };
                    assert_eq!(Signed::from_words(s.words()), Some(s));
                    assert_eq!(Call::from_words(s.call.words()), Some(s.call));
                }
            }
        }
        assert_eq!(
            Signed::from_words([0; 3]),
            None,
            "a rank that has made no call"
        );
        assert_eq!(Signed::from_words([0, 200 << 32, 0]), None);
    }

    #[test]
    fn disagreements_name_the_difference() {
        let bcast = call(CallKind::Bcast, Some(0), 40);
        assert!(disagreement(&bcast, &bcast, 1).is_none());
        let e = disagreement(&bcast, &call(CallKind::Bcast, Some(0), 2000), 3).unwrap();
        assert_eq!(e.class, c::MPI_ERR_TRUNCATE);
        assert!(
            e.msg
                .contains("rank 3 passed 2000 bytes where this rank passed 40"),
            "{}",
            e.msg
        );
        let e = disagreement(&bcast, &call(CallKind::Bcast, Some(1), 40), 1).unwrap();
        assert_eq!(e.class, c::MPI_ERR_ROOT);
        let e = disagreement(&bcast, &call(CallKind::Reduce, Some(0), 40), 2).unwrap();
        assert_eq!(e.class, c::MPI_ERR_OTHER);
        assert!(e
            .msg
            .contains("rank 2 called MPI_Reduce where this rank called MPI_Bcast"));
    }

    #[test]
    fn sigs_are_never_zero_and_tell_what_differs() {
        let bcast = call(CallKind::Bcast, Some(0), 40);
        for kind in CallKind::ALL {
            for root in [None, Some(0), Some(15), Some(16)] {
                for bytes in [0, 1, 40, 70000, u64::MAX] {
                    assert_ne!(call(kind, root, bytes).sig(), 0);
                    assert_ne!(icall(kind, root, bytes).sig(), 0);
                }
            }
        }
        let e = sig_disagreement(&bcast, call(CallKind::Bcast, Some(0), 70000).sig(), 1);
        assert_eq!(e.class, c::MPI_ERR_TRUNCATE);
        assert!(e.msg.contains("counts or datatypes disagree"), "{}", e.msg);
        let e = sig_disagreement(&bcast, call(CallKind::Bcast, Some(2), 40).sig(), 1);
        assert_eq!(e.class, c::MPI_ERR_ROOT);
        let e = sig_disagreement(&bcast, call(CallKind::Allreduce, None, 40).sig(), 3);
        assert_eq!(e.class, c::MPI_ERR_OTHER);
        assert!(e.msg.contains("rank 3 called MPI_Allreduce"), "{}", e.msg);
        // The form is part of the call: a blocking call never matches a
        // nonblocking one.
        let e = sig_disagreement(&bcast, icall(CallKind::Bcast, Some(0), 40).sig(), 2);
        assert_eq!(e.class, c::MPI_ERR_OTHER);
        assert!(e
            .msg
            .contains("rank 2 called MPI_Ibcast where this rank called MPI_Bcast"));
        let ibcast = icall(CallKind::Bcast, Some(0), 40);
        let e = sig_disagreement(&ibcast, icall(CallKind::Alltoall, None, 40).sig(), 1);
        assert!(e
            .msg
            .contains("rank 1 called MPI_Ialltoall where this rank called MPI_Ibcast"));
        // Only function, form and root are conclusive; sizes may collide,
        // and a path may end well where only they differ.
        assert!(!bcast.differs_beyond_size(bcast.sig()));
        assert!(!bcast.differs_beyond_size(call(CallKind::Bcast, Some(0), 2000).sig()));
        assert!(!bcast.differs_beyond_size(0));
        assert!(bcast.differs_beyond_size(call(CallKind::Bcast, Some(1), 40).sig()));
        assert!(bcast.differs_beyond_size(ibcast.sig()));
        for kind in CallKind::ALL {
            for other in CallKind::ALL {
                let (a, b) = (call(kind, None, 8), call(other, None, 8));
                assert_eq!(a.differs_beyond_size(b.sig()), kind != other);
            }
        }
        // Sizes that differ in a program (off by one, a factor of two, a
        // string's length against its buffer's) fold apart.
        for a in [8u64, 40, 100, 2000, 4096, 70000] {
            for b in [a + 1, a * 2, a / 2, a + 8] {
                assert_ne!(
                    call(CallKind::Bcast, Some(0), a).sig(),
                    call(CallKind::Bcast, Some(0), b).sig(),
                    "{a} {b}"
                );
            }
        }
    }
}
