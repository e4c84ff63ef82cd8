//! `MPI_Comm_split` and `MPI_Comm_create` on an intercommunicator: the
//! result joins, for each colour, the members of that colour in the two
//! groups; where either side has none, `MPI_COMM_NULL`.

use super::super::group::Group;
use super::{no_result, Remote};
use crate::abi::consts as c;
use crate::engine::coll::coll_err;
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use lanai_coll::AllgatherAlgo;
use std::sync::Arc;

impl Engine {
    /// `MPI_Comm_split` of the intercommunicator `parent`.
    pub fn inter_split(&mut self, parent: usize, color: i32, key: i32) -> MpiResult<Option<usize>> {
        if color < 0 && color != c::MPI_UNDEFINED {
            return Err(MpiError::new(
                c::MPI_ERR_ARG,
                format!("invalid color {color} (must be >= 0 or MPI_UNDEFINED)"),
            ));
        }
        self.inter_by_colour(parent, color, key)
    }

    /// `MPI_Comm_create` of the intercommunicator `parent`: `g` is the part
    /// of the local group that joins, the same at every member of it.
    pub fn inter_create(&mut self, parent: usize, g: &Group) -> MpiResult<Option<usize>> {
        let local = self.comms.get(parent)?.members();
        if let Some(w) = g.members.iter().find(|w| !local.contains(w)) {
            return Err(MpiError::new(
                c::MPI_ERR_GROUP,
                format!(
                    "group member (world rank {w}) is not in the local group of the intercommunicator"
                ),
            ));
        }
        let (color, key) = match g.rank_of(self.job.rank) {
            Some(r) => (0, r as i32),
            None => (c::MPI_UNDEFINED, 0),
        };
        self.inter_by_colour(parent, color, key)
    }

    /// Every member of both groups shares its (colour, key); the members of
    /// this colour on each side, ordered by (key, old rank), form the new
    /// groups, which get one context id (colours are disjoint, so they can
    /// share it).
    fn inter_by_colour(&mut self, parent: usize, color: i32, key: i32) -> MpiResult<Option<usize>> {
        let it = self.inter_begin(parent)?;
        let (map, me) = it.union();
        let mut mine = color.to_le_bytes().to_vec();
        mine.extend_from_slice(&key.to_le_bytes());
        let m = lanai_coll::Allgather::new(me, map.len() as u32, mine, AllgatherAlgo::Auto)
            .map_err(coll_err)?;
        let all = self
            .phase(&it, 0, map, me, Box::new(m))?
            .ok_or_else(no_result)?;
        let entries: Vec<(i32, i32)> = all
            .chunks_exact(8)
            .map(|ch| {
                (
                    i32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]),
                    i32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]),
                )
            })
            .collect();
        let (lo, ro) = if it.remote.local_first {
            (0, it.local.len())
        } else {
            (it.remote.members.len(), 0)
        };
        let pick = |off: usize, members: &[u32]| -> Vec<u32> {
            let mut v: Vec<(i32, usize)> = (0..members.len())
                .filter_map(|i| {
                    let (col, k) = entries.get(off + i).copied()?;
                    (col == color).then_some((k, i))
                })
                .collect();
            v.sort_unstable();
            v.into_iter().map(|(_, i)| members[i]).collect()
        };
        let defined = color != c::MPI_UNDEFINED;
        let (local, remote) = if defined {
            (pick(lo, &it.local), pick(ro, &it.remote.members))
        } else {
            (Vec::new(), Vec::new())
        };
        let join = defined && !remote.is_empty();
        let ctx = self.inter_agree(&it, 1, join)?;
        if !join {
            return Ok(None);
        }
        let rank = local
            .iter()
            .position(|&w| w == self.job.rank)
            .ok_or_else(|| MpiError::internal("intercommunicator split: own entry missing"))?;
        let local_first = local.first() < remote.first();
        let mut new = self.comms.get(parent)?.derive(ctx, rank as u32, local);
        new.inter = Some(Arc::new(Remote {
            members: remote,
            local_first,
        }));
        Ok(Some(self.comms.insert(new)))
    }
}
