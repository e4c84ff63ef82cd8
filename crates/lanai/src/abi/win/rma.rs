//! The RMA calls (communication and synchronisation), which Lanai does not
//! implement yet. Each is written out with its real C signature so that it
//! can find its window: the "not supported" error then goes through the
//! window's error handler, as a real failure on that window would.

use super::report;
use crate::abi::consts as c;
use crate::abi::consts::{
    MPI_Aint, MPI_Count, MPI_Datatype, MPI_Group, MPI_Op, MPI_Request, MPI_Win,
};
use crate::engine::error::MpiError;
use std::ffi::c_void;
use std::os::raw::c_int;

/// Reports that `name` is not supported, on window `win` (or `MPI_ERR_WIN`
/// if `win` is not a window).
fn unsupported_on(name: &str, win: MPI_Win) -> c_int {
    let r = super::check(win).and_then(|()| {
        Err(MpiError::new(
            c::MPI_ERR_UNSUPPORTED_OPERATION,
            "RMA communication is not supported by Lanai yet (see the README's list)",
        ))
    });
    report(name, win, r)
}

/// Defines an RMA entry point that only reports "not supported" on the
/// window argument named `$win`.
macro_rules! rma_stub {
    ($name:ident, $pname:ident, $win:ident, ($($arg:ident : $ty:ty),* $(,)?)) => {
        crate::mpi_fn! { $name / $pname ($($arg: $ty),*) -> c_int {
            unsupported_on(stringify!($name), $win)
        }}
    };
}

type Cp = *const c_void;
type Mp = *mut c_void;
type Dt = MPI_Datatype;
type Rq = *mut MPI_Request;

rma_stub!(MPI_Put, PMPI_Put, win, (_o: Cp, _oc: c_int, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, win: MPI_Win));
rma_stub!(MPI_Get, PMPI_Get, win, (_o: Mp, _oc: c_int, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, win: MPI_Win));
rma_stub!(MPI_Accumulate, PMPI_Accumulate, win, (_o: Cp, _oc: c_int, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, _op: MPI_Op, win: MPI_Win));
rma_stub!(MPI_Get_accumulate, PMPI_Get_accumulate, win, (_o: Cp, _oc: c_int, _ot: Dt, _res: Mp, _rc: c_int, _rt: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, _op: MPI_Op, win: MPI_Win));
rma_stub!(MPI_Fetch_and_op, PMPI_Fetch_and_op, win, (_o: Cp, _res: Mp, _t: Dt, _r: c_int, _d: MPI_Aint, _op: MPI_Op, win: MPI_Win));
rma_stub!(MPI_Compare_and_swap, PMPI_Compare_and_swap, win, (_o: Cp, _cmp: Cp, _res: Mp, _t: Dt, _r: c_int, _d: MPI_Aint, win: MPI_Win));
rma_stub!(MPI_Rput, PMPI_Rput, win, (_o: Cp, _oc: c_int, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, win: MPI_Win, _req: Rq));
rma_stub!(MPI_Rget, PMPI_Rget, win, (_o: Mp, _oc: c_int, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, win: MPI_Win, _req: Rq));
rma_stub!(MPI_Raccumulate, PMPI_Raccumulate, win, (_o: Cp, _oc: c_int, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, _op: MPI_Op, win: MPI_Win, _req: Rq));
rma_stub!(MPI_Rget_accumulate, PMPI_Rget_accumulate, win, (_o: Cp, _oc: c_int, _ot: Dt, _res: Mp, _rc: c_int, _rt: Dt, _r: c_int, _d: MPI_Aint, _tc: c_int, _tt: Dt, _op: MPI_Op, win: MPI_Win, _req: Rq));

rma_stub!(MPI_Put_c, PMPI_Put_c, win, (_o: Cp, _oc: MPI_Count, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, win: MPI_Win));
rma_stub!(MPI_Get_c, PMPI_Get_c, win, (_o: Mp, _oc: MPI_Count, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, win: MPI_Win));
rma_stub!(MPI_Accumulate_c, PMPI_Accumulate_c, win, (_o: Cp, _oc: MPI_Count, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, _op: MPI_Op, win: MPI_Win));
rma_stub!(MPI_Get_accumulate_c, PMPI_Get_accumulate_c, win, (_o: Cp, _oc: MPI_Count, _ot: Dt, _res: Mp, _rc: MPI_Count, _rt: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, _op: MPI_Op, win: MPI_Win));
rma_stub!(MPI_Rput_c, PMPI_Rput_c, win, (_o: Cp, _oc: MPI_Count, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, win: MPI_Win, _req: Rq));
rma_stub!(MPI_Rget_c, PMPI_Rget_c, win, (_o: Mp, _oc: MPI_Count, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, win: MPI_Win, _req: Rq));
rma_stub!(MPI_Raccumulate_c, PMPI_Raccumulate_c, win, (_o: Cp, _oc: MPI_Count, _ot: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, _op: MPI_Op, win: MPI_Win, _req: Rq));
rma_stub!(MPI_Rget_accumulate_c, PMPI_Rget_accumulate_c, win, (_o: Cp, _oc: MPI_Count, _ot: Dt, _res: Mp, _rc: MPI_Count, _rt: Dt, _r: c_int, _d: MPI_Aint, _tc: MPI_Count, _tt: Dt, _op: MPI_Op, win: MPI_Win, _req: Rq));

// ---- Synchronisation ----

rma_stub!(MPI_Win_fence, PMPI_Win_fence, win, (_assert: c_int, win: MPI_Win));
rma_stub!(MPI_Win_lock, PMPI_Win_lock, win, (_lock_type: c_int, _rank: c_int, _assert: c_int, win: MPI_Win));
rma_stub!(MPI_Win_unlock, PMPI_Win_unlock, win, (_rank: c_int, win: MPI_Win));
rma_stub!(MPI_Win_lock_all, PMPI_Win_lock_all, win, (_assert: c_int, win: MPI_Win));
rma_stub!(MPI_Win_unlock_all, PMPI_Win_unlock_all, win, (win: MPI_Win));
rma_stub!(MPI_Win_flush, PMPI_Win_flush, win, (_rank: c_int, win: MPI_Win));
rma_stub!(MPI_Win_flush_all, PMPI_Win_flush_all, win, (win: MPI_Win));
rma_stub!(MPI_Win_flush_local, PMPI_Win_flush_local, win, (_rank: c_int, win: MPI_Win));
rma_stub!(MPI_Win_flush_local_all, PMPI_Win_flush_local_all, win, (win: MPI_Win));
rma_stub!(MPI_Win_post, PMPI_Win_post, win, (_group: MPI_Group, _assert: c_int, win: MPI_Win));
rma_stub!(MPI_Win_start, PMPI_Win_start, win, (_group: MPI_Group, _assert: c_int, win: MPI_Win));
rma_stub!(MPI_Win_complete, PMPI_Win_complete, win, (win: MPI_Win));
rma_stub!(MPI_Win_wait, PMPI_Win_wait, win, (win: MPI_Win));
rma_stub!(MPI_Win_test, PMPI_Win_test, win, (win: MPI_Win, _flag: *mut c_int));
rma_stub!(MPI_Win_sync, PMPI_Win_sync, win, (win: MPI_Win));
