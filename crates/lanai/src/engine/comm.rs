//! Communicators: context ids, rank translation, error handlers.

use super::error::{MpiError, MpiResult};

/// How a communicator's ranks map to world ranks.
#[derive(Debug, Clone)]
pub enum RankMap {
    /// Comm rank i is world rank i.
    Identity,
    /// An explicit list, comm rank -> world rank.
    List(Vec<u32>),
}

#[derive(Debug, Clone)]
pub struct Comm {
    /// Point-to-point context id; collectives use `ctx + 1`.
    pub ctx: u32,
    pub rank: u32,
    pub size: u32,
    pub map: RankMap,
    /// Error handler handle (predefined ones only for now).
    pub errhandler: i32,
    /// Sequence number of the next collective on this communicator.
    pub coll_seq: u32,
    /// An `MPI_ANY_SOURCE` receive has already connected every remote member.
    pub all_connected: bool,
}

impl Comm {
    pub fn world_rank(&self, r: u32) -> u32 {
        match &self.map {
            RankMap::Identity => r,
            RankMap::List(l) => l[r as usize],
        }
    }

    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }

    /// Checks a destination or source rank (not a wildcard or PROC_NULL).
    pub fn check_rank(&self, r: i32) -> MpiResult<u32> {
        if r < 0 || r as u32 >= self.size {
            return Err(MpiError::rank(r, self.size as usize));
        }
        Ok(r as u32)
    }
}

/// Index of `MPI_COMM_WORLD` and `MPI_COMM_SELF` in the table.
pub const WORLD: usize = 0;
pub const SELF: usize = 1;

#[derive(Debug, Default)]
pub struct Comms {
    table: Vec<Option<Comm>>,
}

impl Comms {
    pub fn new(world_rank: u32, world_size: u32, errhandler: i32) -> Self {
        let world = Comm {
            ctx: 0,
            rank: world_rank,
            size: world_size,
            map: RankMap::Identity,
            errhandler,
            coll_seq: 0,
            all_connected: false,
        };
        let me = Comm {
            ctx: 2,
            rank: 0,
            size: 1,
            map: RankMap::List(vec![world_rank]),
            ..world.clone()
        };
        Self {
            table: vec![Some(world), Some(me)],
        }
    }

    pub fn get(&self, idx: usize) -> MpiResult<&Comm> {
        self.table
            .get(idx)
            .and_then(Option::as_ref)
            .ok_or_else(MpiError::comm)
    }

    pub fn get_mut(&mut self, idx: usize) -> MpiResult<&mut Comm> {
        self.table
            .get_mut(idx)
            .and_then(Option::as_mut)
            .ok_or_else(MpiError::comm)
    }
}
