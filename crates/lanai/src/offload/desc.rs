//! Descriptors: what a rank posts to its node's engine, in a fixed 64-byte
//! little-endian record (seed 000's send token). Decoding checks every field,
//! since the engine must not trust a rank's memory more than a socket.

use lanai_coll::{AllreduceAlgo, BarrierAlgo, BcastAlgo, Elem, Op, Predefined, ReduceTree};

/// Encoded size of a descriptor.
pub const DESC_LEN: usize = 64;

/// What a descriptor asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Learn communicator `ctx`: the slot's data holds its members' world
    /// ranks (u32 each), in communicator rank order.
    Register,
    /// This rank is done with `ctx`.
    Unregister,
    Barrier(BarrierAlgo),
    /// A barrier through the node's device: the engine waits for every
    /// local member, then runs the tree of engines with fan-out `k`
    /// (`lanai_coll::leaders_barrier`; 0: the fewest rounds).
    DeviceBarrier {
        k: u32,
    },
    Bcast {
        root: u32,
        algo: BcastAlgo,
    },
    Reduce {
        root: u32,
        op: Predefined,
        tree: ReduceTree,
    },
    Allreduce {
        op: Predefined,
        algo: AllreduceAlgo,
    },
}

/// One descriptor. `len` bytes of input wait in the slot's data area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desc {
    pub work: Work,
    /// The rank's count of descriptors posted before this one: the engine
    /// takes each rank's descriptors in this order.
    pub post_no: u32,
    pub ctx: u32,
    /// World rank of the communicator's rank 0: communicators that share a
    /// context id (the parts of one split) are disjoint, so this tells
    /// them apart.
    pub lead: u32,
    pub seq: u32,
    /// The rank's rank in the communicator, and the communicator's size.
    pub rank: u32,
    pub size: u32,
    pub len: u32,
}

/// Why a descriptor could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescError(pub String);

impl std::fmt::Display for DescError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad descriptor: {}", self.0)
    }
}

const BARRIER_ALGOS: [BarrierAlgo; 3] = [
    BarrierAlgo::Dissemination,
    BarrierAlgo::PairwiseExchange,
    BarrierAlgo::Binomial,
];
const BCAST_ALGOS: [BcastAlgo; 3] = [
    BcastAlgo::Auto,
    BcastAlgo::Binomial,
    BcastAlgo::ScatterAllgather,
];
const ALLREDUCE_ALGOS: [AllreduceAlgo; 5] = [
    AllreduceAlgo::Auto,
    AllreduceAlgo::ReduceBcast,
    AllreduceAlgo::RecursiveDoubling,
    AllreduceAlgo::Rabenseifner,
    AllreduceAlgo::Ring,
];

fn index_of<T: PartialEq>(all: &[T], x: &T) -> u8 {
    all.iter().position(|a| a == x).unwrap_or(0) as u8
}

fn pick<T: Copy>(all: &[T], i: u8, what: &str) -> Result<T, DescError> {
    all.get(usize::from(i))
        .copied()
        .ok_or_else(|| DescError(format!("unknown {what} {i}")))
}

impl Desc {
    /// Bytes of input the slot holds: a broadcast's non-roots send none.
    pub fn input_len(&self) -> usize {
        match self.work {
            Work::Bcast { root, .. } if root != self.rank => 0,
            _ => self.len as usize,
        }
    }

    pub fn encode(&self) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        // `fan` is a k-ary reduce tree's fan-out, 0 for the binomial tree.
        let (kind, a, op, elem, root, fan) = match self.work {
            Work::Register => (1, 0, 0, 0, 0, 0),
            Work::Unregister => (2, 0, 0, 0, 0, 0),
            Work::Barrier(al) => (3, index_of(&BARRIER_ALGOS, &al), 0, 0, 0, 0),
            Work::DeviceBarrier { k } => (7, 0, 0, 0, 0, k),
            Work::Bcast { root, algo } => (4, index_of(&BCAST_ALGOS, &algo), 0, 0, root, 0),
            Work::Reduce { root, op: p, tree } => (
                5,
                0,
                index_of(&Op::ALL, &p.op),
                index_of(&Elem::ALL, &p.elem),
                root,
                match tree {
                    ReduceTree::Binomial => 0,
                    ReduceTree::Kary(k) => k,
                },
            ),
            Work::Allreduce { op: p, algo } => (
                6,
                index_of(&ALLREDUCE_ALGOS, &algo),
                index_of(&Op::ALL, &p.op),
                index_of(&Elem::ALL, &p.elem),
                0,
                0,
            ),
        };
        b[..4].copy_from_slice(&[kind, a, op, elem]);
        for (i, v) in [
            self.post_no,
            self.ctx,
            self.seq,
            self.rank,
            self.size,
            self.len,
            root,
            self.lead,
            fan,
        ]
        .into_iter()
        .enumerate()
        {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8; DESC_LEN]) -> Result<Self, DescError> {
        let word =
            |i: usize| u32::from_le_bytes([b[4 + 4 * i], b[5 + 4 * i], b[6 + 4 * i], b[7 + 4 * i]]);
        let (post_no, ctx, seq, rank, size, len, root, lead, fan) = (
            word(0),
            word(1),
            word(2),
            word(3),
            word(4),
            word(5),
            word(6),
            word(7),
            word(8),
        );
        let op = || -> Result<Predefined, DescError> {
            let o = pick(&Op::ALL, b[2], "operation")?;
            let e = pick(&Elem::ALL, b[3], "element kind")?;
            Predefined::new(o, e).map_err(|e| DescError(e.to_string()))
        };
        let work = match b[0] {
            1 => Work::Register,
            2 => Work::Unregister,
            3 => Work::Barrier(pick(&BARRIER_ALGOS, b[1], "barrier algorithm")?),
            4 => Work::Bcast {
                root,
                algo: pick(&BCAST_ALGOS, b[1], "broadcast algorithm")?,
            },
            5 => Work::Reduce {
                root,
                op: op()?,
                tree: match fan {
                    0 => ReduceTree::Binomial,
                    k => ReduceTree::Kary(k),
                },
            },
            6 => Work::Allreduce {
                op: op()?,
                algo: pick(&ALLREDUCE_ALGOS, b[1], "allreduce algorithm")?,
            },
            7 => Work::DeviceBarrier { k: fan },
            k => return Err(DescError(format!("unknown kind {k}"))),
        };
        if !matches!(work, Work::Register | Work::Unregister) && (size == 0 || rank >= size) {
            return Err(DescError(format!(
                "rank {rank} of a communicator of {size}"
            )));
        }
        if matches!(work, Work::Bcast { root, .. } | Work::Reduce { root, .. } if root >= size) {
            return Err(DescError(format!(
                "root {root} of a communicator of {size}"
            )));
        }
        Ok(Desc {
            work,
            post_no,
            ctx,
            lead,
            seq,
            rank,
            size,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(work: Work) -> Desc {
        Desc {
            work,
            post_no: 7,
            ctx: 0x1234,
            lead: 3,
            seq: 99,
            rank: 2,
            size: 5,
            len: 40,
        }
    }

    #[test]
    fn every_kind_round_trips() {
        let sum = Predefined::new(Op::Sum, Elem::F64).unwrap();
        let loc = Predefined::new(Op::Maxloc, Elem::DoubleInt).unwrap();
        for w in [
            Work::Register,
            Work::Unregister,
            Work::Barrier(BarrierAlgo::PairwiseExchange),
            Work::DeviceBarrier { k: 3 },
            Work::DeviceBarrier { k: 0 },
            Work::Bcast {
                root: 4,
                algo: BcastAlgo::ScatterAllgather,
            },
            Work::Reduce {
                root: 3,
                op: loc,
                tree: ReduceTree::Binomial,
            },
            Work::Reduce {
                root: 1,
                op: sum,
                tree: ReduceTree::Kary(7),
            },
            Work::Allreduce {
                op: sum,
                algo: AllreduceAlgo::Ring,
            },
        ] {
            let d = sample(w);
            assert_eq!(Desc::decode(&d.encode()), Ok(d));
        }
    }

    #[test]
    fn garbage_is_refused() {
        let mut b = sample(Work::Barrier(BarrierAlgo::Binomial)).encode();
        b[1] = 9;
        assert!(Desc::decode(&b).is_err());
        b[0] = 77;
        assert!(Desc::decode(&b).is_err());
        // Sum on a pair type is not an operation.
        let mut b = sample(Work::Reduce {
            root: 0,
            op: Predefined::new(Op::Sum, Elem::I32).unwrap(),
            tree: ReduceTree::Binomial,
        })
        .encode();
        b[3] = 16;
        assert!(Desc::decode(&b).is_err());
        let mut d = sample(Work::Bcast {
            root: 5,
            algo: BcastAlgo::Auto,
        });
        assert!(Desc::decode(&d.encode()).is_err());
        d.work = Work::Barrier(BarrierAlgo::Dissemination);
        d.rank = 5;
        assert!(Desc::decode(&d.encode()).is_err());
    }
}
