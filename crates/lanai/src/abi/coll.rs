//! Collective entry points (the basic four; the rest are in the breadth work).

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Datatype, MPI_Op};
use super::{call, comm_idx, types, user_buf};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use lanai_coll::Predefined;
use std::ffi::c_void;
use std::os::raw::c_int;

fn check_root(e: &Engine, comm: usize, root: c_int) -> MpiResult<u32> {
    let size = e.comms.get(comm)?.size;
    if root < 0 || root as u32 >= size {
        return Err(MpiError::new(
            c::MPI_ERR_ROOT,
            format!("invalid root {root} (communicator size {size})"),
        ));
    }
    Ok(root as u32)
}

fn combiner(dt: MPI_Datatype, op: MPI_Op) -> MpiResult<Box<dyn lanai_coll::Combine + Send>> {
    let elem = types::reduce_elem(dt)?;
    let op = types::op(op)?;
    Predefined::new(op, elem)
        .map(|p| Box::new(p) as Box<dyn lanai_coll::Combine + Send>)
        .map_err(|e| MpiError::new(c::MPI_ERR_OP, e.to_string()))
}

fn in_place(p: *const c_void) -> bool {
    p as usize == c::MPI_IN_PLACE
}

mpi_fn! { MPI_Barrier / PMPI_Barrier (comm: MPI_Comm) -> c_int {
    call("MPI_Barrier", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        e.barrier(ci)
    })
}}

mpi_fn! { MPI_Bcast / PMPI_Bcast (buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
    call("MPI_Bcast", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        // SAFETY: the caller's buffer, valid for the call.
        let b = unsafe { user_buf(buffer, count, datatype)? };
        let root = check_root(e, ci, root)?;
        e.bcast(ci, b, root)
    })
}}

mpi_fn! { MPI_Reduce / PMPI_Reduce (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
    call("MPI_Reduce", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        let root = check_root(e, ci, root)?;
        let is_root = e.comms.get(ci)?.rank == root;
        let comb = combiner(datatype, op)?;
        // SAFETY: the caller's buffers, valid for the call. MPI_IN_PLACE is
        // only meaningful at the root, where the data is in recvbuf.
        let (data, out) = unsafe {
            let out = if is_root { Some(user_buf(recvbuf, count, datatype)?) } else { None };
            let data = match (in_place(sendbuf), out) {
                (true, Some(o)) if is_root => o.as_slice().to_vec(),
                (true, _) => return Err(MpiError::new(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root")),
                (false, _) => user_buf(sendbuf, count, datatype)?.as_slice().to_vec(),
            };
            (data, out)
        };
        e.reduce(ci, data, out, root, comb)
    })
}}

mpi_fn! { MPI_Allreduce / PMPI_Allreduce (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
    call("MPI_Allreduce", Some(comm), |e| {
        let ci = comm_idx(comm)?;
        let comb = combiner(datatype, op)?;
        // SAFETY: the caller's buffers, valid for the call.
        let (data, out) = unsafe {
            let out = user_buf(recvbuf, count, datatype)?;
            let data = if in_place(sendbuf) { out.as_slice().to_vec() } else { user_buf(sendbuf, count, datatype)?.as_slice().to_vec() };
            (data, out)
        };
        e.allreduce(ci, data, out, comb)
    })
}}
