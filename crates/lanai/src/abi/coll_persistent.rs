//! Persistent collectives (MPI 4.0 section 6.13): `MPI_Bcast_init` and
//! friends.
//!
//! The init call checks the arguments and makes an inactive persistent
//! request that remembers them. Each `MPI_Start` runs the matching
//! nonblocking collective's entry point (`PMPI_Ibcast`, ...) with those
//! arguments, so buffers are read at start and derived datatypes,
//! `MPI_IN_PLACE` and intercommunicators behave exactly as there; the
//! request it returns becomes the persistent request's child (see
//! engine/persistent.rs). The info argument carries no hints Lanai uses.

use super::coll::exchange::{
    PMPI_Iallgather, PMPI_Iallgather_c, PMPI_Iallgatherv, PMPI_Iallgatherv_c, PMPI_Ialltoall,
    PMPI_Ialltoall_c, PMPI_Ialltoallv, PMPI_Ialltoallv_c, PMPI_Ialltoallw, PMPI_Ialltoallw_c,
};
use super::coll::rooted::{
    PMPI_Igather, PMPI_Igather_c, PMPI_Igatherv, PMPI_Igatherv_c, PMPI_Iscatter, PMPI_Iscatter_c,
    PMPI_Iscatterv, PMPI_Iscatterv_c,
};
use super::coll::scans::{
    PMPI_Iexscan, PMPI_Iexscan_c, PMPI_Ireduce_scatter, PMPI_Ireduce_scatter_block,
    PMPI_Ireduce_scatter_block_c, PMPI_Ireduce_scatter_c, PMPI_Iscan, PMPI_Iscan_c,
};
use super::coll::{
    PMPI_Iallreduce, PMPI_Iallreduce_c, PMPI_Ibarrier, PMPI_Ibcast, PMPI_Ibcast_c, PMPI_Ireduce,
    PMPI_Ireduce_c,
};
use super::consts as c;
use super::consts::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Op, MPI_Request};
use super::ints::Ints;
use super::requests::handle_of;
use super::topo::neighbor::{
    PMPI_Ineighbor_allgather, PMPI_Ineighbor_allgather_c, PMPI_Ineighbor_allgatherv,
    PMPI_Ineighbor_allgatherv_c, PMPI_Ineighbor_alltoall, PMPI_Ineighbor_alltoall_c,
    PMPI_Ineighbor_alltoallv, PMPI_Ineighbor_alltoallv_c, PMPI_Ineighbor_alltoallw,
    PMPI_Ineighbor_alltoallw_c,
};
use super::{call, comm_idx, types};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::{CollStart, Persistent};
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::rc::Rc;

/// What the init-time checks need to know about the communicator.
struct Check {
    rank: u32,
    size: u32,
    inter: bool,
    topo: bool,
}

impl Check {
    /// `count` elements of `dt`: a valid count and, when data moves, a
    /// valid committed datatype.
    fn buf(&self, count: impl Into<MPI_Count>, dt: MPI_Datatype) -> MpiResult<()> {
        let count: MPI_Count = count.into();
        if count < 0 {
            return Err(MpiError::count(count));
        }
        if count > 0 {
            datatype(dt)?;
        }
        Ok(())
    }

    /// Like [`Check::buf`], unless `p` is `MPI_IN_PLACE`.
    fn send(
        &self,
        p: *const c_void,
        count: impl Into<MPI_Count>,
        dt: MPI_Datatype,
    ) -> MpiResult<()> {
        if p as usize == c::MPI_IN_PLACE {
            return Ok(());
        }
        self.buf(count, dt)
    }

    /// Whether this rank is the root. On an intercommunicator the root
    /// argument is `MPI_ROOT`, `MPI_PROC_NULL` or a rank of the other group,
    /// which the nonblocking collective checks at start.
    fn root(&self, root: c_int) -> MpiResult<bool> {
        if self.inter {
            return Ok(root == c::MPI_ROOT);
        }
        if root < 0 || root as u32 >= self.size {
            return Err(MpiError::new(
                c::MPI_ERR_ROOT,
                format!("invalid root {root} (communicator size {})", self.size),
            ));
        }
        Ok(root as u32 == self.rank)
    }

    /// Whether this rank takes part as a non-root member: always on an
    /// intracommunicator; on an intercommunicator, in the group opposite
    /// the root (whose root argument names a remote rank).
    fn in_leaf_group(&self, root: c_int) -> bool {
        !self.inter || (root != c::MPI_ROOT && root != c::MPI_PROC_NULL)
    }

    /// Per-rank counts (and displacements, when given) of a v-form on an
    /// intracommunicator; intercommunicator arrays are checked at start.
    ///
    /// # Safety
    /// Non-null arrays hold one entry per rank.
    unsafe fn counts(&self, counts: Ints, displs: Option<Ints>, dt: MPI_Datatype) -> MpiResult<()> {
        if self.inter {
            return Ok(());
        }
        // SAFETY: forwarded.
        let cs = unsafe { counts.read(self.size, "counts")? };
        if let Some(d) = displs {
            // SAFETY: forwarded.
            unsafe { d.read(self.size, "displacements")? };
        }
        for n in cs {
            self.buf(n, dt)?;
        }
        Ok(())
    }

    /// Per-rank counts, displacements and types of an alltoallw.
    ///
    /// # Safety
    /// Non-null arrays hold one entry per rank.
    unsafe fn counts_w(
        &self,
        counts: Ints,
        displs: Ints,
        dts: *const MPI_Datatype,
    ) -> MpiResult<()> {
        if self.inter {
            return Ok(());
        }
        // SAFETY: forwarded.
        let (cs, ts) = unsafe {
            displs.read(self.size, "displacements")?;
            (
                counts.read(self.size, "counts")?,
                super::coll::array(dts, self.size, "datatypes")?,
            )
        };
        cs.iter().zip(ts).try_for_each(|(&n, &t)| self.buf(n, t))
    }

    /// Neighbour collectives need a Cartesian or graph topology; their
    /// per-neighbour arrays are checked at start, where the counts are known.
    fn topology(&self) -> MpiResult<()> {
        if !self.topo {
            return Err(MpiError::new(
                c::MPI_ERR_TOPOLOGY,
                "the communicator has no Cartesian or graph topology",
            ));
        }
        Ok(())
    }

    /// The scans are defined on intracommunicators only.
    fn intra_only(&self) -> MpiResult<()> {
        if self.inter {
            return Err(MpiError::new(
                c::MPI_ERR_COMM,
                "the MPI standard does not define this operation on intercommunicators",
            ));
        }
        Ok(())
    }
}

/// A valid datatype for communication (derived ones committed).
fn datatype(dt: MPI_Datatype) -> MpiResult<()> {
    if types::predefined(dt).is_some() {
        return Ok(());
    }
    super::datatype::resolve_committed(dt).map(drop)
}

/// A valid reduction operation for `dt`.
fn op(dt: MPI_Datatype, o: MPI_Op) -> MpiResult<()> {
    datatype(dt)?;
    // A derived type is reduced as its basic kind, checked at start.
    if types::predefined(dt).is_none() && types::op_kind(o).is_some() {
        return Ok(());
    }
    super::ops::combiner(dt, o).map(drop)
}

/// Makes a persistent collective request once `check` accepts the
/// arguments; `start` is the nonblocking collective on them.
fn init(
    name: &str,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
    check: impl FnOnce(&Check) -> MpiResult<()>,
    start: impl Fn(*mut MPI_Request) -> c_int + 'static,
) -> c_int {
    call(name, Some(comm), |e| {
        if request.is_null() {
            return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
        }
        super::info::check_arg(info)?;
        let ci = comm_idx(comm)?;
        let cm = e.comms.get(ci)?;
        check(&Check {
            rank: cm.rank,
            size: cm.size,
            inter: cm.is_inter(),
            topo: cm.topo.is_some(),
        })?;
        let run = move || {
            let mut h = c::MPI_REQUEST_NULL;
            match start(&mut h) {
                c::MPI_SUCCESS => Ok(h),
                rc => Err(rc),
            }
        };
        let r = e.persistent(Persistent::Coll(CollStart {
            comm: ci,
            start: Rc::new(run),
        }));
        // SAFETY: checked non-null; writable per the MPI contract.
        unsafe { *request = handle_of(r) };
        Ok(())
    })
}

// Every starter below passes the init call's arguments on unchanged. The
// standard keeps buffers and arrays valid (and unchanged, for arrays) for
// as long as the persistent request exists, and the handles stay valid
// until it is freed, so each start sees what the init call saw.

mpi_fn! { MPI_Barrier_init / PMPI_Barrier_init (comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
    init("MPI_Barrier_init", comm, info, request, |_| Ok(()),
        // SAFETY: see above.
        move |r| unsafe { PMPI_Ibarrier(comm, r) })
}}

macro_rules! bcast_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (buffer: *mut c_void, count: $count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.root(root)?;
                k.buf(count, datatype)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(buffer, count, datatype, root, comm, r) })
        }}
    };
}

bcast_init_entry!(
    MPI_Bcast_init,
    PMPI_Bcast_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ibcast
);
bcast_init_entry!(
    MPI_Bcast_init_c,
    PMPI_Bcast_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ibcast_c
);

macro_rules! reduce_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.root(root)?;
                k.buf(count, datatype)?;
                self::op(datatype, op)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, recvbuf, count, datatype, op, root, comm, r) })
        }}
    };
}

reduce_init_entry!(
    MPI_Reduce_init,
    PMPI_Reduce_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ireduce
);
reduce_init_entry!(
    MPI_Reduce_init_c,
    PMPI_Reduce_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ireduce_c
);

macro_rules! allreduce_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.buf(count, datatype)?;
                self::op(datatype, op)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, recvbuf, count, datatype, op, comm, r) })
        }}
    };
}

allreduce_init_entry!(
    MPI_Allreduce_init,
    PMPI_Allreduce_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iallreduce
);
allreduce_init_entry!(
    MPI_Allreduce_init_c,
    PMPI_Allreduce_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iallreduce_c
);

macro_rules! gather_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                if k.root(root)? {
                    k.buf(recvcount, recvtype)?;
                }
                if k.in_leaf_group(root) {
                    k.send(sendbuf, sendcount, sendtype)?;
                }
                Ok(())
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, r) })
        }}
    };
}

gather_init_entry!(
    MPI_Gather_init,
    PMPI_Gather_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Igather
);
gather_init_entry!(
    MPI_Gather_init_c,
    PMPI_Gather_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Igather_c
);

macro_rules! gatherv_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                if k.root(root)? {
                    // SAFETY: the root's arrays hold one entry per rank.
                    unsafe { k.counts(recvcounts.into(), Some(displs.into()), recvtype)? };
                }
                if k.in_leaf_group(root) {
                    k.send(sendbuf, sendcount, sendtype)?;
                }
                Ok(())
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, r) })
        }}
    };
}

gatherv_init_entry!(
    MPI_Gatherv_init,
    PMPI_Gatherv_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Igatherv
);
gatherv_init_entry!(
    MPI_Gatherv_init_c,
    PMPI_Gatherv_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Igatherv_c
);

macro_rules! scatter_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                if k.root(root)? {
                    k.buf(sendcount, sendtype)?;
                }
                if k.in_leaf_group(root) {
                    k.send(recvbuf, recvcount, recvtype)?;
                }
                Ok(())
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, r) })
        }}
    };
}

scatter_init_entry!(
    MPI_Scatter_init,
    PMPI_Scatter_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iscatter
);
scatter_init_entry!(
    MPI_Scatter_init_c,
    PMPI_Scatter_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iscatter_c
);

macro_rules! scatterv_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, displs: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                if k.root(root)? {
                    // SAFETY: the root's arrays hold one entry per rank.
                    unsafe { k.counts(sendcounts.into(), Some(displs.into()), sendtype)? };
                }
                if k.in_leaf_group(root) {
                    k.send(recvbuf, recvcount, recvtype)?;
                }
                Ok(())
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, r) })
        }}
    };
}

scatterv_init_entry!(
    MPI_Scatterv_init,
    PMPI_Scatterv_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iscatterv
);
scatterv_init_entry!(
    MPI_Scatterv_init_c,
    PMPI_Scatterv_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iscatterv_c
);

macro_rules! allgather_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.send(sendbuf, sendcount, sendtype)?;
                k.buf(recvcount, recvtype)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r) })
        }}
    };
}

allgather_init_entry!(
    MPI_Allgather_init,
    PMPI_Allgather_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iallgather
);
allgather_init_entry!(
    MPI_Allgather_init_c,
    PMPI_Allgather_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iallgather_c
);

macro_rules! allgatherv_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.send(sendbuf, sendcount, sendtype)?;
                // SAFETY: the arrays hold one entry per rank.
                unsafe { k.counts(recvcounts.into(), Some(displs.into()), recvtype) }
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, r) })
        }}
    };
}

allgatherv_init_entry!(
    MPI_Allgatherv_init,
    PMPI_Allgatherv_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iallgatherv
);
allgatherv_init_entry!(
    MPI_Allgatherv_init_c,
    PMPI_Allgatherv_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iallgatherv_c
);

macro_rules! alltoall_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.send(sendbuf, sendcount, sendtype)?;
                k.buf(recvcount, recvtype)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r) })
        }}
    };
}

alltoall_init_entry!(
    MPI_Alltoall_init,
    PMPI_Alltoall_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ialltoall
);
alltoall_init_entry!(
    MPI_Alltoall_init_c,
    PMPI_Alltoall_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ialltoall_c
);

macro_rules! alltoallv_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                if sendbuf as usize != c::MPI_IN_PLACE {
                    // SAFETY: the arrays hold one entry per rank.
                    unsafe { k.counts(sendcounts.into(), Some(sdispls.into()), sendtype)? };
                }
                // SAFETY: the arrays hold one entry per rank.
                unsafe { k.counts(recvcounts.into(), Some(rdispls.into()), recvtype) }
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, r) })
        }}
    };
}

alltoallv_init_entry!(
    MPI_Alltoallv_init,
    PMPI_Alltoallv_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ialltoallv
);
alltoallv_init_entry!(
    MPI_Alltoallv_init_c,
    PMPI_Alltoallv_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ialltoallv_c
);

macro_rules! alltoallw_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtypes: *const MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                if sendbuf as usize != c::MPI_IN_PLACE {
                    // SAFETY: the arrays hold one entry per rank.
                    unsafe { k.counts_w(sendcounts.into(), sdispls.into(), sendtypes)? };
                }
                // SAFETY: the arrays hold one entry per rank.
                unsafe { k.counts_w(recvcounts.into(), rdispls.into(), recvtypes) }
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, r) })
        }}
    };
}

alltoallw_init_entry!(
    MPI_Alltoallw_init,
    PMPI_Alltoallw_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ialltoallw
);
alltoallw_init_entry!(
    MPI_Alltoallw_init_c,
    PMPI_Alltoallw_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ialltoallw_c
);

macro_rules! reduce_scatter_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: $carr, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                // SAFETY: the array holds one entry per rank.
                unsafe { k.counts(recvcounts.into(), None, datatype)? };
                self::op(datatype, op)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, recvbuf, recvcounts, datatype, op, comm, r) })
        }}
    };
}

reduce_scatter_init_entry!(
    MPI_Reduce_scatter_init,
    PMPI_Reduce_scatter_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ireduce_scatter
);
reduce_scatter_init_entry!(
    MPI_Reduce_scatter_init_c,
    PMPI_Reduce_scatter_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ireduce_scatter_c
);

macro_rules! reduce_scatter_block_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.buf(recvcount, datatype)?;
                self::op(datatype, op)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, recvbuf, recvcount, datatype, op, comm, r) })
        }}
    };
}

reduce_scatter_block_init_entry!(
    MPI_Reduce_scatter_block_init,
    PMPI_Reduce_scatter_block_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ireduce_scatter_block
);
reduce_scatter_block_init_entry!(
    MPI_Reduce_scatter_block_init_c,
    PMPI_Reduce_scatter_block_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ireduce_scatter_block_c
);

macro_rules! scan_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.intra_only()?;
                k.buf(count, datatype)?;
                self::op(datatype, op)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, recvbuf, count, datatype, op, comm, r) })
        }}
    };
}

scan_init_entry!(
    MPI_Scan_init,
    PMPI_Scan_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iscan
);
scan_init_entry!(
    MPI_Scan_init_c,
    PMPI_Scan_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iscan_c
);

macro_rules! exscan_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, recvbuf: *mut c_void, count: $count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.intra_only()?;
                k.buf(count, datatype)?;
                self::op(datatype, op)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, recvbuf, count, datatype, op, comm, r) })
        }}
    };
}

exscan_init_entry!(
    MPI_Exscan_init,
    PMPI_Exscan_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Iexscan
);
exscan_init_entry!(
    MPI_Exscan_init_c,
    PMPI_Exscan_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Iexscan_c
);

macro_rules! neighbor_allgather_init_entry {
    ($name:ident, $pname:ident, $count:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.topology()?;
                k.buf(sendcount, sendtype)?;
                k.buf(recvcount, recvtype)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r) })
        }}
    };
}

neighbor_allgather_init_entry!(
    MPI_Neighbor_allgather_init,
    PMPI_Neighbor_allgather_init,
    c_int,
    PMPI_Ineighbor_allgather
);
neighbor_allgather_init_entry!(
    MPI_Neighbor_allgather_init_c,
    PMPI_Neighbor_allgather_init_c,
    MPI_Count,
    PMPI_Ineighbor_allgather_c
);
neighbor_allgather_init_entry!(
    MPI_Neighbor_alltoall_init,
    PMPI_Neighbor_alltoall_init,
    c_int,
    PMPI_Ineighbor_alltoall
);
neighbor_allgather_init_entry!(
    MPI_Neighbor_alltoall_init_c,
    PMPI_Neighbor_alltoall_init_c,
    MPI_Count,
    PMPI_Ineighbor_alltoall_c
);

macro_rules! neighbor_allgatherv_init_entry {
    ($name:ident, $pname:ident, $count:ty, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, displs: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| {
                k.topology()?;
                k.buf(sendcount, sendtype)
            },
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, r) })
        }}
    };
}

neighbor_allgatherv_init_entry!(
    MPI_Neighbor_allgatherv_init,
    PMPI_Neighbor_allgatherv_init,
    c_int,
    *const c_int,
    *const c_int,
    PMPI_Ineighbor_allgatherv
);
neighbor_allgatherv_init_entry!(
    MPI_Neighbor_allgatherv_init_c,
    PMPI_Neighbor_allgatherv_init_c,
    MPI_Count,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ineighbor_allgatherv_c
);

macro_rules! neighbor_alltoallv_init_entry {
    ($name:ident, $pname:ident, $carr:ty, $darr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: $darr, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: $darr, recvtype: MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| k.topology(),
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, r) })
        }}
    };
}

neighbor_alltoallv_init_entry!(
    MPI_Neighbor_alltoallv_init,
    PMPI_Neighbor_alltoallv_init,
    *const c_int,
    *const c_int,
    PMPI_Ineighbor_alltoallv
);
neighbor_alltoallv_init_entry!(
    MPI_Neighbor_alltoallv_init_c,
    PMPI_Neighbor_alltoallv_init_c,
    *const MPI_Count,
    *const MPI_Aint,
    PMPI_Ineighbor_alltoallv_c
);

macro_rules! neighbor_alltoallw_init_entry {
    ($name:ident, $pname:ident, $carr:ty, $start:ident) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcounts: $carr, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: $carr, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            init(stringify!($name), comm, info, request, |k| k.topology(),
                // SAFETY: see above.
                move |r| unsafe { $start(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, r) })
        }}
    };
}

neighbor_alltoallw_init_entry!(
    MPI_Neighbor_alltoallw_init,
    PMPI_Neighbor_alltoallw_init,
    *const c_int,
    PMPI_Ineighbor_alltoallw
);
neighbor_alltoallw_init_entry!(
    MPI_Neighbor_alltoallw_init_c,
    PMPI_Neighbor_alltoallw_init_c,
    *const MPI_Count,
    PMPI_Ineighbor_alltoallw_c
);
