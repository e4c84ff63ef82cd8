//! `MPI_Isendrecv` and `MPI_Isendrecv_replace` (MPI 4.0): a receive and a
//! send under one request, which completes when both have and reports
//! the receive's status (the engine's composite requests).

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request};
use super::datatype::staging::{self, Pending};
use super::p2p::{irecv, isend};
use super::requests::handle_of;
use super::userbuf::UserBuf;
use super::{call, check_tag, comm_idx};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::request::SendMode;
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Joins started receive `rr` and the send that `send` starts into one
/// request. A send that cannot start takes the receive back, so no posted
/// receive is left behind to swallow a message.
fn pair(
    e: &mut Engine,
    rr: usize,
    send: impl FnOnce(&mut Engine) -> MpiResult<Option<usize>>,
) -> MpiResult<usize> {
    let sr = match send(e) {
        Ok(sr) => sr,
        Err(err) => {
            e.cancel(rr)?;
            staging::forget(e, rr);
            e.st.reqs.remove(rr);
            return Err(err);
        }
    };
    let r = e.start_pair(rr, sr);
    // A derived-type receive is unpacked when the pair completes.
    staging::rekey(e, rr, r);
    Ok(r)
}

/// Checks what the send needs before the receive is posted.
fn check_send(
    e: &Engine,
    request: *mut MPI_Request,
    comm: MPI_Comm,
    dest: c_int,
    tag: c_int,
) -> MpiResult<usize> {
    if request.is_null() {
        return Err(MpiError::new(c::MPI_ERR_REQUEST, "request is NULL"));
    }
    check_tag(tag, false)?;
    let ci = comm_idx(comm)?;
    if dest != c::MPI_PROC_NULL {
        e.comms.get(ci)?.check_rank(dest)?;
    }
    Ok(ci)
}

macro_rules! isendrecv_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (sendbuf: *const c_void, sendcount: $count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
                recvbuf: *mut c_void, recvcount: $count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                check_send(e, request, comm, dest, sendtag)?;
                // SAFETY: the standard keeps both buffers valid until completion.
                let rr = unsafe { irecv(e, recvbuf, recvcount.into(), recvtype, source, recvtag, comm)? };
                let r = pair(e, rr, |e| {
                    // SAFETY: as above.
                    unsafe { isend(e, sendbuf, sendcount.into(), sendtype, dest, sendtag, comm, SendMode::Standard) }
                })?;
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

isendrecv_entry!(MPI_Isendrecv, PMPI_Isendrecv, c_int);
isendrecv_entry!(MPI_Isendrecv_c, PMPI_Isendrecv_c, MPI_Count);

macro_rules! isendrecv_replace_entry {
    ($name:ident, $pname:ident, $count:ty) => {
        mpi_fn! { $name / $pname (buf: *mut c_void, count: $count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
                source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            call(stringify!($name), Some(comm), |e| {
                let ci = check_send(e, request, comm, dest, sendtag)?;
                // The send goes from a packed copy taken now, so the receive may
                // land in the buffer whenever it arrives.
                // SAFETY: the caller's buffer, valid until completion.
                let (b, keep) = unsafe { staging::send_buf(buf, count, datatype)? };
                let mut copy = match keep {
                    Some(Pending::Send(t)) => t,
                    _ => b.as_slice().to_vec(),
                };
                // SAFETY: as above.
                let rr = unsafe { irecv(e, buf, count.into(), datatype, source, recvtag, comm)? };
                let r = pair(e, rr, |e| {
                    // SAFETY: the copy's heap block does not move when the Vec
                    // does; it is held below until the send completes.
                    let cb = unsafe { UserBuf::new(copy.as_mut_ptr(), copy.len()) };
                    let sr = e.start_send(ci, dest, sendtag, cb, SendMode::Standard)?;
                    if let Some(s) = sr {
                        staging::hold(e, s, Pending::Send(copy));
                    }
                    Ok(sr)
                })?;
                // SAFETY: checked non-null.
                unsafe { *request = handle_of(r) };
                Ok(())
            })
        }}
    };
}

isendrecv_replace_entry!(MPI_Isendrecv_replace, PMPI_Isendrecv_replace, c_int);
isendrecv_replace_entry!(MPI_Isendrecv_replace_c, PMPI_Isendrecv_replace_c, MPI_Count);
