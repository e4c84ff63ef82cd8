//! Blocking collectives whose ranks disagree (an erroneous program: counts,
//! datatypes, root or the function itself differ) can pick paths on one
//! node that never meet: one rank waits on a mailbox, another for a
//! message, and neither ever fails. So every blocking collective of the
//! user's is numbered per communicator, alike at every member, and what it
//! was called with is published in the node segment (the rank's latest two
//! calls). A rank that has waited long in one (a second, at the liveness
//! check) compares its call with the same-numbered calls of the members on
//! its node and fails with the difference. Across nodes the messages
//! themselves carry lengths, so no such check is needed there.
//!
//! Only the calls the user makes are numbered, at the ABI, before any
//! path is picked: an internal operation taken on some ranks only would
//! put the members' numbers out of step.

use super::error::{MpiError, MpiResult};
use super::net::Route;
use super::Engine;
use crate::abi::consts as c;
use crate::shm::ring::CALL_WORDS;

/// The blocking collectives that are checked.
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
}

impl CallKind {
    const ALL: [CallKind; 8] = [
        CallKind::Barrier,
        CallKind::Bcast,
        CallKind::Reduce,
        CallKind::Allreduce,
        CallKind::Gather,
        CallKind::Scatter,
        CallKind::Allgather,
        CallKind::Alltoall,
    ];

    fn name(self) -> &'static str {
        match self {
            CallKind::Barrier => "MPI_Barrier",
            CallKind::Bcast => "MPI_Bcast",
            CallKind::Reduce => "MPI_Reduce",
            CallKind::Allreduce => "MPI_Allreduce",
            CallKind::Gather => "MPI_Gather",
            CallKind::Scatter => "MPI_Scatter",
            CallKind::Allgather => "MPI_Allgather",
            CallKind::Alltoall => "MPI_Alltoall",
        }
    }

    fn from_u8(b: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| *k as u8 == b)
    }
}

/// What one member passed to a blocking collective: its root (if it has
/// one) and the bytes of the block it sends or receives, which every member
/// must agree on (a gather's root gives the bytes of each block it receives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Call {
    kind: CallKind,
    root: Option<u32>,
    bytes: u64,
}

/// A call, numbered on its communicator (identified by its context id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signed {
    ctx: u32,
    n: u32,
    call: Call,
}

const NO_ROOT: u32 = u32::MAX;

impl Signed {
    fn words(&self) -> [u64; CALL_WORDS] {
        let c = &self.call;
        [
            (u64::from(self.ctx) << 32) | u64::from(self.n),
            (u64::from(c.kind as u8) << 32) | u64::from(c.root.unwrap_or(NO_ROOT)),
            c.bytes,
        ]
    }

    /// `None` for an entry never written (kind 0) or not understood.
    fn from_words(w: [u64; CALL_WORDS]) -> Option<Self> {
        let kind = CallKind::from_u8((w[1] >> 32) as u8)?;
        let root = (w[1] as u32 != NO_ROOT).then_some(w[1] as u32);
        Some(Signed {
            ctx: (w[0] >> 32) as u32,
            n: w[0] as u32,
            call: Call {
                kind,
                root,
                bytes: w[2],
            },
        })
    }
}

/// How `theirs` (communicator rank `them`) differs from `mine`, if it does.
fn disagreement(mine: &Call, theirs: &Call, them: u32) -> Option<MpiError> {
    if mine.kind != theirs.kind {
        return Some(MpiError::new(
            c::MPI_ERR_OTHER,
            format!(
                "the ranks call different collectives: rank {them} called {} where this rank \
                 called {}",
                theirs.kind.name(),
                mine.kind.name()
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
    if mine.bytes != theirs.bytes {
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
    /// (see [`Call`]). Only blocking calls take part (`blocking`); alone on
    /// its node a rank has nobody to check with, and numbers nothing.
    #[inline(always)]
    pub fn enter_call(
        &mut self,
        blocking: bool,
        comm: usize,
        kind: CallKind,
        root: Option<u32>,
        bytes: usize,
    ) -> MpiResult<()> {
        let (true, Some(shm)) = (blocking, self.net.shm.as_ref()) else {
            return Ok(());
        };
        let call = Call {
            kind,
            root,
            bytes: bytes as u64,
        };
        let cm = self.comms.get_mut(comm)?;
        let n = cm.user_calls;
        cm.user_calls = n.wrapping_add(1);
        let signed = Signed {
            ctx: cm.ctx,
            n,
            call,
        };
        shm.publish_call(self.calls_published, signed.words());
        self.calls_published += 1;
        self.in_call = Some(comm);
        Ok(())
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

    /// The blocking collective has returned.
    pub fn leave_call(&mut self) {
        self.in_call = None;
    }

    /// While waiting in a blocking collective: fails if a member on this
    /// node made the same-numbered call differently.
    pub(super) fn check_call(&self) -> MpiResult<()> {
        let (Some(comm), Some(shm)) = (self.in_call, self.net.shm.as_ref()) else {
            return Ok(());
        };
        // This rank's call is the entry it published last.
        let latest = (self.calls_published.wrapping_sub(1) % 2) as usize;
        let Some(mine) = shm.peer_call(shm.me(), latest).and_then(Signed::from_words) else {
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
                if let Some(t) = theirs.filter(|t| t.ctx == mine.ctx && t.n == mine.n) {
                    if let Some(e) = disagreement(&mine.call, &t.call, r) {
                        return Err(e);
                    }
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
        Call { kind, root, bytes }
    }

    #[test]
    fn entries_round_trip_and_blank_ones_are_none() {
        for kind in CallKind::ALL {
            for root in [None, Some(0), Some(7)] {
                let s = Signed {
                    ctx: 0x8000_0002,
                    n: u32::MAX,
                    call: call(kind, root, u64::MAX - 1),
                };
                assert_eq!(Signed::from_words(s.words()), Some(s));
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
}
