//! Window creation (`MPI_Win_create`, `_allocate`, `_create_dynamic`), the
//! regions of dynamic windows, and `MPI_Win_free`.

use super::{insert, remove, report, with_win, AttrVals, SharedMem, Win};
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Comm, MPI_Info, MPI_Win};
use crate::abi::mem::Block;
use crate::abi::{call, comm_idx, errors, info, state};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_void;
use std::os::raw::c_int;

/// What a new window is made of, besides its communicator.
pub(super) struct Parts {
    pub base: usize,
    pub size: MPI_Aint,
    pub disp_unit: c_int,
    pub flavor: c_int,
    pub owned: Option<Block>,
    pub shared: Option<SharedMem>,
}

/// Checks the arguments every creation call shares and returns the
/// engine index of `comm` (an intracommunicator) and the displacement unit.
pub(super) fn check_args(
    e: &Engine,
    comm: MPI_Comm,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info_h: MPI_Info,
    win: *mut MPI_Win,
) -> MpiResult<(usize, c_int)> {
    let ci = comm_idx(comm)?;
    if e.comms.get(ci)?.is_inter() {
        return Err(MpiError::new(
            c::MPI_ERR_COMM,
            "windows need an intracommunicator",
        ));
    }
    if size < 0 {
        return Err(MpiError::new(
            c::MPI_ERR_SIZE,
            format!("negative size {size}"),
        ));
    }
    if disp_unit <= 0 {
        return Err(MpiError::new(
            c::MPI_ERR_DISP,
            format!("disp_unit {disp_unit} is not positive"),
        ));
    }
    let du = c_int::try_from(disp_unit).map_err(|_| {
        MpiError::new(
            c::MPI_ERR_DISP,
            format!("disp_unit {disp_unit} is larger than an int"),
        )
    })?;
    // Lanai acts on no window hint; the info must still be valid.
    info::check_arg(info_h)?;
    if win.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "win is NULL"));
    }
    Ok((ci, du))
}

/// The collective step of every creation: a private duplicate of the
/// communicator (so window traffic never meets the program's), then the
/// new handle in `*win`.
///
/// # Safety
/// `win` is non-null and valid for a write (checked by [`check_args`]).
pub(super) unsafe fn finish(
    e: &mut Engine,
    ci: usize,
    p: Parts,
    win: *mut MPI_Win,
) -> MpiResult<()> {
    let comm = e.comm_dup(ci)?;
    // SAFETY: forwarded.
    unsafe { install(e, comm, p, win) }
}

/// Makes the window on its private communicator `comm` (freed again if
/// that fails) and writes the new handle to `*win`.
///
/// # Safety
/// As for [`finish`].
pub(super) unsafe fn install(
    e: &mut Engine,
    comm: usize,
    p: Parts,
    win: *mut MPI_Win,
) -> MpiResult<()> {
    let w = Win {
        comm,
        base: p.base,
        vals: Box::new(AttrVals {
            size: p.size,
            disp_unit: p.disp_unit,
            flavor: p.flavor,
            model: c::MPI_WIN_UNIFIED,
        }),
        name: String::new(),
        // The standard's default for windows.
        errhandler: c::MPI_ERRORS_ARE_FATAL,
        owned: p.owned,
        shared: p.shared,
        regions: Vec::new(),
    };
    match insert(w) {
        Ok(h) => {
            // SAFETY: non-null and writable per the contract.
            unsafe { *win = h };
            Ok(())
        }
        Err(err) => {
            let _ = e.comm_free(comm);
            Err(err)
        }
    }
}

fn create(
    e: &mut Engine,
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info_h: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> MpiResult<()> {
    let (ci, du) = check_args(e, comm, size, disp_unit, info_h, win)?;
    let parts = Parts {
        base: base as usize,
        size,
        disp_unit: du,
        flavor: c::MPI_WIN_FLAVOR_CREATE,
        owned: None,
        shared: None,
    };
    // SAFETY: `check_args` checked `win`.
    unsafe { finish(e, ci, parts, win) }
}

fn allocate(
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
    let block = Block::new(size as usize)?;
    let base = block.addr();
    let parts = Parts {
        base,
        size,
        disp_unit: du,
        flavor: c::MPI_WIN_FLAVOR_ALLOCATE,
        owned: Some(block),
        shared: None,
    };
    // SAFETY: `check_args` checked `win`.
    unsafe { finish(e, ci, parts, win)? };
    // SAFETY: checked non-null; the C binding passes a `void **` as `void *`.
    unsafe { *(baseptr as *mut *mut c_void) = base as *mut c_void };
    Ok(())
}

mpi_fn! { MPI_Win_create / PMPI_Win_create (base: *mut c_void, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_create", Some(comm), |e| create(e, base, size, disp_unit as MPI_Aint, info, comm, win))
}}

mpi_fn! { MPI_Win_create_c / PMPI_Win_create_c (base: *mut c_void, size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_create_c", Some(comm), |e| create(e, base, size, disp_unit, info, comm, win))
}}

mpi_fn! { MPI_Win_allocate / PMPI_Win_allocate (size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_allocate", Some(comm), |e| allocate(e, size, disp_unit as MPI_Aint, info, comm, baseptr, win))
}}

mpi_fn! { MPI_Win_allocate_c / PMPI_Win_allocate_c (size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_allocate_c", Some(comm), |e| allocate(e, size, disp_unit, info, comm, baseptr, win))
}}

mpi_fn! { MPI_Win_create_dynamic / PMPI_Win_create_dynamic (info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    call("MPI_Win_create_dynamic", Some(comm), |e| {
        let (ci, _) = check_args(e, comm, 0, 1, info, win)?;
        // The standard: base MPI_BOTTOM, size 0, displacement unit 1.
        let parts = Parts {
            base: c::MPI_BOTTOM,
            size: 0,
            disp_unit: 1,
            flavor: c::MPI_WIN_FLAVOR_DYNAMIC,
            owned: None,
            shared: None,
        };
        // SAFETY: `check_args` checked `win`.
        unsafe { finish(e, ci, parts, win) }
    })
}}

fn not_dynamic(w: &Win) -> MpiResult<()> {
    if w.vals.flavor == c::MPI_WIN_FLAVOR_DYNAMIC {
        Ok(())
    } else {
        Err(MpiError::new(
            c::MPI_ERR_RMA_FLAVOR,
            "the window was not created with MPI_Win_create_dynamic",
        ))
    }
}

/// Records a region of a dynamic window. Regions may not overlap, and no
/// two start at the same address (detach names a region by its start).
fn attach(w: &mut Win, base: usize, size: MPI_Aint) -> MpiResult<()> {
    not_dynamic(w)?;
    if size < 0 {
        return Err(MpiError::new(
            c::MPI_ERR_SIZE,
            format!("negative size {size}"),
        ));
    }
    if base == 0 && size > 0 {
        return Err(MpiError::new(c::MPI_ERR_ARG, "base is NULL"));
    }
    let size = size as usize;
    let end = base
        .checked_add(size)
        .ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "region wraps around the address space"))?;
    let clash = w
        .regions
        .iter()
        .find(|&&(b, s)| b == base || (base < b + s && b < end));
    if let Some(&(b, s)) = clash {
        return Err(MpiError::new(
            c::MPI_ERR_RMA_ATTACH,
            format!("region 0x{base:x}+{size} overlaps region 0x{b:x}+{s} already attached"),
        ));
    }
    w.regions.push((base, size));
    Ok(())
}

fn detach(w: &mut Win, base: usize) -> MpiResult<()> {
    not_dynamic(w)?;
    match w.regions.iter().position(|&(b, _)| b == base) {
        Some(i) => {
            w.regions.remove(i);
            Ok(())
        }
        None => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("no region attached at 0x{base:x}"),
        )),
    }
}

mpi_fn! { MPI_Win_attach / PMPI_Win_attach (win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    let r = with_win(win, |w| attach(w, base as usize, size));
    report("MPI_Win_attach", win, r)
}}

mpi_fn! { MPI_Win_detach / PMPI_Win_detach (win: MPI_Win, base: *const c_void) -> c_int {
    let r = with_win(win, |w| detach(w, base as usize));
    report("MPI_Win_detach", win, r)
}}

mpi_fn! { MPI_Win_free / PMPI_Win_free (win: *mut MPI_Win) -> c_int {
    const NAME: &str = "MPI_Win_free";
    if win.is_null() {
        return errors::raise(NAME, None, MpiError::new(c::MPI_ERR_ARG, "win is NULL"));
    }
    // SAFETY: checked non-null; the caller's handle.
    let h = unsafe { *win };
    let comm = match with_win(h, |w| Ok(w.comm)) {
        Ok(ci) => ci,
        Err(err) => return report(NAME, h, Err(err)),
    };
    // Collective, as in MPICH: no process lets its memory go while another
    // may still be working on the window.
    if let Err(err) = state::with_engine(|e| e.barrier(comm)) {
        return report(NAME, h, Err(err));
    }
    // Delete callbacks are user code: they run with nothing locked, and if
    // one fails the window stays.
    if let Err(err) = crate::abi::attr::before_win_free(h) {
        return report(NAME, h, Err(err));
    }
    let w = match remove(h) {
        Ok(w) => w,
        Err(err) => return report(NAME, h, Err(err)),
    };
    let r = state::with_engine(|e| e.comm_free(w.comm));
    // Frees Win_allocate memory and unmaps a shared segment.
    drop(w);
    // SAFETY: checked non-null above.
    unsafe { *win = c::MPI_WIN_NULL };
    match r {
        Ok(()) => c::MPI_SUCCESS,
        Err(err) => errors::raise(NAME, None, err),
    }
}}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic() -> Win {
        Win {
            comm: 5,
            base: 0,
            vals: Box::new(AttrVals {
                size: 0,
                disp_unit: 1,
                flavor: c::MPI_WIN_FLAVOR_DYNAMIC,
                model: c::MPI_WIN_UNIFIED,
            }),
            name: String::new(),
            errhandler: c::MPI_ERRORS_RETURN,
            owned: None,
            shared: None,
            regions: Vec::new(),
        }
    }

    #[test]
    fn regions_attach_and_detach() {
        let mut w = dynamic();
        attach(&mut w, 0x1000, 0x100).unwrap();
        attach(&mut w, 0x1100, 0x100).unwrap();
        assert_eq!(
            attach(&mut w, 0x10ff, 2).unwrap_err().class,
            c::MPI_ERR_RMA_ATTACH
        );
        assert_eq!(
            attach(&mut w, 0x1000, 0).unwrap_err().class,
            c::MPI_ERR_RMA_ATTACH
        );
        assert_eq!(
            attach(&mut w, 0x3000, -1).unwrap_err().class,
            c::MPI_ERR_SIZE
        );
        assert_eq!(detach(&mut w, 0x1080).unwrap_err().class, c::MPI_ERR_ARG);
        detach(&mut w, 0x1000).unwrap();
        attach(&mut w, 0x1000, 0x80).unwrap();
        w.vals.flavor = c::MPI_WIN_FLAVOR_CREATE;
        assert_eq!(
            detach(&mut w, 0x1000).unwrap_err().class,
            c::MPI_ERR_RMA_FLAVOR
        );
    }
}
