//! `MPI_Win_allocate_shared` and `MPI_Win_shared_query`.
//!
//! The ranks' parts lie back to back, in rank order, in one POSIX segment
//! (contiguous, as the standard's default asks). The segment is named like
//! the node's own, so the launcher's sweep finds it after a crash, and it
//! is unlinked as soon as every rank has mapped it.

use super::create::{check_args, install, Parts};
use super::{report, with_win, Part, SharedMem};
use crate::abi::call;
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Comm, MPI_Info, MPI_Win};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use crate::shm::Segment;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Every member of `ci` must share this rank's node.
fn check_one_node(e: &Engine, ci: usize) -> MpiResult<()> {
    let me = e.job.my_node();
    let members = e.comms.get(ci)?.members();
    match members
        .iter()
        .find(|&&w| e.job.node_of.get(w as usize) != Some(&me))
    {
        Some(w) => Err(MpiError::new(
            c::MPI_ERR_RMA_SHARED,
            format!("world rank {w} is on another node, so memory cannot be shared with it"),
        )),
        None => Ok(()),
    }
}

/// (offset, size, disp_unit) of every rank from the gathered sizes, and the
/// total length.
fn layout(all: &[u8]) -> MpiResult<(Vec<Part>, usize)> {
    let mut parts = Vec::new();
    let mut off = 0usize;
    for ch in all.chunks_exact(16) {
        let mut a = [0u8; 8];
        a.copy_from_slice(&ch[..8]);
        let size = i64::from_le_bytes(a) as MPI_Aint;
        a.copy_from_slice(&ch[8..]);
        let du = i64::from_le_bytes(a) as MPI_Aint;
        parts.push((off, size, du));
        off = off
            .checked_add(size as usize)
            .ok_or_else(|| MpiError::new(c::MPI_ERR_NO_MEM, "total window size overflows"))?;
    }
    Ok((parts, off))
}

/// Whether every member reported success in a one-byte allgather.
fn all_ok(e: &mut Engine, comm: usize, ok: bool) -> MpiResult<bool> {
    let all = e.allgather_internal(comm, vec![u8::from(ok)])?;
    Ok(all.iter().all(|&b| b == 1))
}

/// The collective part, on the private communicator `comm`: gather the
/// sizes, rank 0 creates the segment, everyone maps it, rank 0 unlinks it.
fn map_segment(e: &mut Engine, comm: usize, size: MPI_Aint, du: c_int) -> MpiResult<SharedMem> {
    let mut mine = (size as i64).to_le_bytes().to_vec();
    mine.extend_from_slice(&i64::from(du).to_le_bytes());
    let all = e.allgather_internal(comm, mine)?;
    let (parts, total) = layout(&all)?;
    let len = total.max(1);
    let cm = e.comms.get(comm)?;
    let (rank, ctx, leader) = (cm.rank, cm.ctx, cm.world_rank(0));
    let job = &e.job;
    let name = format!(
        "{}-w{leader}-{ctx}",
        lanai_common::shm_names::segment_name(job.uid, job.job_pid, &job.nonce, job.my_node())
    );
    let fail = |what: &str, err: nix::Error| {
        MpiError::new(
            c::MPI_ERR_NO_MEM,
            format!("cannot {what} a shared segment of {len} bytes: {err}"),
        )
    };
    let mut seg = None;
    let mut err = None;
    if rank == 0 {
        match Segment::create(&name, len) {
            Ok(s) => seg = Some(s),
            Err(x) => err = Some(fail("create", x)),
        }
    }
    if !all_ok(e, comm, err.is_none())? {
        return Err(err.unwrap_or_else(|| {
            MpiError::new(
                c::MPI_ERR_NO_MEM,
                "rank 0 could not create the shared segment",
            )
        }));
    }
    if rank != 0 {
        match Segment::open(&name, len) {
            Ok(s) => seg = Some(s),
            Err(x) => err = Some(fail("map", x)),
        }
    }
    let mapped = all_ok(e, comm, err.is_none());
    if rank == 0 {
        // Every rank has mapped it (or given up): the name can go.
        let _ = Segment::unlink(&name);
    }
    match (mapped?, seg) {
        (true, Some(seg)) => Ok(SharedMem { seg, parts }),
        _ => Err(err.unwrap_or_else(|| {
            MpiError::new(
                c::MPI_ERR_NO_MEM,
                "another rank could not map the shared segment",
            )
        })),
    }
}

fn allocate_shared(
    e: &mut Engine,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info_h: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> MpiResult<()> {
    let (ci, du) = check_args(e, comm, size, disp_unit, info_h, win)?;
    if baseptr.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "baseptr is NULL"));
    }
    check_one_node(e, ci)?;
    let private = e.comm_dup(ci)?;
    let shm = match map_segment(e, private, size, du) {
        Ok(s) => s,
        Err(err) => {
            let _ = e.comm_free(private);
            return Err(err);
        }
    };
    let rank = e.comms.get(private)?.rank as usize;
    let off = shm.parts.get(rank).map_or(0, |p| p.0);
    let base = shm.seg.base() as usize + off;
    let parts = Parts {
        base,
        size,
        disp_unit: du,
        flavor: c::MPI_WIN_FLAVOR_SHARED,
        owned: None,
        shared: Some(shm),
    };
    // SAFETY: `check_args` checked `win`.
    unsafe { install(e, private, parts, win)? };
    // SAFETY: checked non-null; the C binding passes a `void **` as `void *`.
    unsafe { *(baseptr as *mut *mut c_void) = base as *mut c_void };
    Ok(())
}

mpi_fn! { MPI_Win_allocate_shared / PMPI_Win_allocate_shared (size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_allocate_shared", Some(comm), |e| allocate_shared(e, size, disp_unit as MPI_Aint, info, comm, baseptr, win))
}}

mpi_fn! { MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c (size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_allocate_shared_c", Some(comm), |e| allocate_shared(e, size, disp_unit, info, comm, baseptr, win))
}}

/// (size, disp_unit, base address) of `rank`'s part of a shared window.
/// `MPI_PROC_NULL` asks for the lowest rank with a non-empty part.
fn query(win: MPI_Win, rank: c_int) -> MpiResult<(MPI_Aint, MPI_Aint, usize)> {
    with_win(win, |w| {
        let shm = w.shared.as_ref().ok_or_else(|| {
            MpiError::new(
                c::MPI_ERR_RMA_FLAVOR,
                "the window was not created with MPI_Win_allocate_shared",
            )
        })?;
        let base = shm.seg.base() as usize;
        let part = if rank == c::MPI_PROC_NULL {
            shm.parts.iter().find(|p| p.1 > 0).copied()
        } else {
            let p = usize::try_from(rank).ok().and_then(|r| shm.parts.get(r));
            Some(*p.ok_or_else(|| {
                MpiError::new(
                    c::MPI_ERR_RANK,
                    format!(
                        "invalid rank {rank} (the window has {} ranks)",
                        shm.parts.len()
                    ),
                )
            })?)
        };
        Ok(match part {
            Some((off, size, du)) => (size, du, base + off),
            // Every part is empty: size 0 and no memory.
            None => (0, 1, 0),
        })
    })
}

/// # Safety
/// The pointers are null (rejected) or valid for writes of their types.
unsafe fn write_query<D: TryFrom<MPI_Aint>>(
    q: (MPI_Aint, MPI_Aint, usize),
    size: *mut MPI_Aint,
    disp_unit: *mut D,
    baseptr: *mut c_void,
) -> MpiResult<()> {
    if size.is_null() || disp_unit.is_null() || baseptr.is_null() {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            "size, disp_unit or baseptr is NULL",
        ));
    }
    let du =
        D::try_from(q.1).map_err(|_| MpiError::new(c::MPI_ERR_DISP, "disp_unit does not fit"))?;
    // SAFETY: checked non-null; the caller's output arguments (`baseptr`
    // is a `void **` passed as `void *`).
    unsafe {
        *size = q.0;
        *disp_unit = du;
        *(baseptr as *mut *mut c_void) = q.2 as *mut c_void;
    }
    Ok(())
}

mpi_fn! { MPI_Win_shared_query / PMPI_Win_shared_query (win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int {
    // SAFETY: the caller's output arguments, checked inside.
    let r = query(win, rank).and_then(|q| unsafe { write_query(q, size, disp_unit, baseptr) });
    report("MPI_Win_shared_query", win, r)
}}

mpi_fn! { MPI_Win_shared_query_c / PMPI_Win_shared_query_c (win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut MPI_Aint, baseptr: *mut c_void) -> c_int {
    // SAFETY: the caller's output arguments, checked inside.
    let r = query(win, rank).and_then(|q| unsafe { write_query(q, size, disp_unit, baseptr) });
    report("MPI_Win_shared_query_c", win, r)
}}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_lie_back_to_back() {
        let mut all = Vec::new();
        for (s, d) in [(10i64, 4i64), (0, 1), (6, 8)] {
            all.extend_from_slice(&s.to_le_bytes());
            all.extend_from_slice(&d.to_le_bytes());
        }
        let (parts, total) = layout(&all).unwrap();
        assert_eq!(parts, vec![(0, 10, 4), (10, 0, 1), (10, 6, 8)]);
        assert_eq!(total, 16);
    }
}
