//! `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size` and their external32 forms.

use super::staging::View;
use super::{count_arg, dt_err, put, resolve_committed};
use crate::abi::call;
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype};
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use std::ffi::{c_char, c_void, CStr};
use std::os::raw::c_int;

/// The caller's packed buffer of `len` bytes.
///
/// # Safety
/// `p` is null or valid for `len` bytes (writes too when `write`).
#[allow(clippy::mut_from_ref)]
unsafe fn packed<'a>(p: *const c_void, len: i64, what: &str) -> MpiResult<&'a mut [u8]> {
    let len = count_arg(len)?;
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: `len` bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) })
}

/// Reads and checks `*position`.
///
/// # Safety
/// `p` is null or readable.
unsafe fn read_position<T: Copy + Into<i64>>(p: *const T) -> MpiResult<usize> {
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "position is NULL"));
    }
    // SAFETY: checked non-null.
    let v: i64 = unsafe { *p }.into();
    usize::try_from(v).map_err(|_| MpiError::new(c::MPI_ERR_ARG, format!("negative position {v}")))
}

fn back<T: TryFrom<usize>>(pos: usize) -> MpiResult<T> {
    T::try_from(pos).map_err(|_| MpiError::new(c::MPI_ERR_ARG, "position overflows"))
}

/// Whether to use external32 rather than the native representation.
///
/// # Safety
/// `datarep` is null or a NUL-terminated string.
unsafe fn external32(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "datarep is NULL"));
    }
    // SAFETY: NUL-terminated per the contract.
    let s = unsafe { CStr::from_ptr(datarep) };
    if s.to_bytes() != b"external32" {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!(
                "data representation {:?} is not supported (only \"external32\")",
                s.to_string_lossy()
            ),
        ));
    }
    Ok(())
}

/// Packs `count` of `dt` at `inbuf` into `outbuf[*pos..outsize]`.
///
/// # Safety
/// The MPI contract for the buffers.
unsafe fn pack(
    inbuf: *const c_void,
    count: i64,
    dt: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    pos: &mut usize,
    ext: bool,
) -> MpiResult<()> {
    let d = resolve_committed(dt)?;
    // SAFETY: forwarded.
    let (v, out) = unsafe {
        (
            View::new(inbuf, count_arg(count)? as u64, &d)?,
            packed(outbuf, outsize, "outbuf")?,
        )
    };
    let f = if ext {
        lanai_datatype::pack_external
    } else {
        lanai_datatype::pack
    };
    f(v.dt(), v.count(), v.slice(), v.origin(), out, pos).map_err(dt_err)
}

/// Unpacks `count` of `dt` from `inbuf[*pos..insize]` into `outbuf`.
///
/// # Safety
/// The MPI contract for the buffers.
unsafe fn unpack(
    inbuf: *const c_void,
    insize: i64,
    pos: &mut usize,
    outbuf: *mut c_void,
    count: i64,
    dt: MPI_Datatype,
    ext: bool,
) -> MpiResult<()> {
    let d = resolve_committed(dt)?;
    // SAFETY: forwarded.
    let (input, v) = unsafe {
        (
            packed(inbuf, insize, "inbuf")?,
            View::new(outbuf, count_arg(count)? as u64, &d)?,
        )
    };
    let f = if ext {
        lanai_datatype::unpack_external
    } else {
        lanai_datatype::unpack
    };
    f(v.dt(), v.count(), input, pos, v.slice_mut(), v.origin()).map_err(dt_err)
}

mpi_fn! { MPI_Pack / PMPI_Pack (inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: MPI_Comm) -> c_int {
    let _ = comm;
    call("MPI_Pack", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            let mut pos = read_position(position)?;
            pack(inbuf, incount.into(), datatype, outbuf, outsize.into(), &mut pos, false)?;
            put(position, back(pos)?, "position")
        }
    })
}}

mpi_fn! { MPI_Pack_c / PMPI_Pack_c (inbuf: *const c_void, incount: MPI_Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Count, position: *mut MPI_Count, comm: MPI_Comm) -> c_int {
    let _ = comm;
    call("MPI_Pack_c", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            let mut pos = read_position(position)?;
            pack(inbuf, incount, datatype, outbuf, outsize, &mut pos, false)?;
            put(position, back(pos)?, "position")
        }
    })
}}

mpi_fn! { MPI_Unpack / PMPI_Unpack (inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    let _ = comm;
    call("MPI_Unpack", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            let mut pos = read_position(position)?;
            unpack(inbuf, insize.into(), &mut pos, outbuf, outcount.into(), datatype, false)?;
            put(position, back(pos)?, "position")
        }
    })
}}

mpi_fn! { MPI_Unpack_c / PMPI_Unpack_c (inbuf: *const c_void, insize: MPI_Count, position: *mut MPI_Count, outbuf: *mut c_void, outcount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    let _ = comm;
    call("MPI_Unpack_c", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            let mut pos = read_position(position)?;
            unpack(inbuf, insize, &mut pos, outbuf, outcount, datatype, false)?;
            put(position, back(pos)?, "position")
        }
    })
}}

fn pack_size(count: i64, dt: MPI_Datatype, ext: bool) -> MpiResult<u64> {
    let d = super::resolve(dt)?;
    let n = count_arg(count)? as u64;
    if ext {
        lanai_datatype::pack_external_size(&d, n)
    } else {
        lanai_datatype::pack_size(&d, n)
    }
    .map_err(dt_err)
}

mpi_fn! { MPI_Pack_size / PMPI_Pack_size (incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) -> c_int {
    let _ = comm;
    call("MPI_Pack_size", None, |_| {
        let n = super::c_int_of(pack_size(incount.into(), datatype, false)?, "packed size")?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n, "size") }
    })
}}

mpi_fn! { MPI_Pack_size_c / PMPI_Pack_size_c (incount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut MPI_Count) -> c_int {
    let _ = comm;
    call("MPI_Pack_size_c", None, |_| {
        let n = back(pack_size(incount, datatype, false)? as usize)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n, "size") }
    })
}}

mpi_fn! { MPI_Pack_external / PMPI_Pack_external (datarep: *const c_char, inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Aint, position: *mut MPI_Aint) -> c_int {
    call("MPI_Pack_external", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            external32(datarep)?;
            if position.is_null() {
                return Err(MpiError::new(c::MPI_ERR_ARG, "position is NULL"));
            }
            let mut pos = position_of(*position as i64)?;
            pack(inbuf, incount.into(), datatype, outbuf, outsize as i64, &mut pos, true)?;
            put(position, back(pos)?, "position")
        }
    })
}}

mpi_fn! { MPI_Pack_external_c / PMPI_Pack_external_c (datarep: *const c_char, inbuf: *const c_void, incount: MPI_Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Count, position: *mut MPI_Count) -> c_int {
    call("MPI_Pack_external_c", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            external32(datarep)?;
            let mut pos = read_position(position)?;
            pack(inbuf, incount, datatype, outbuf, outsize, &mut pos, true)?;
            put(position, back(pos)?, "position")
        }
    })
}}

fn position_of(v: i64) -> MpiResult<usize> {
    usize::try_from(v).map_err(|_| MpiError::new(c::MPI_ERR_ARG, format!("negative position {v}")))
}

mpi_fn! { MPI_Unpack_external / PMPI_Unpack_external (datarep: *const c_char, inbuf: *const c_void, insize: MPI_Aint, position: *mut MPI_Aint, outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype) -> c_int {
    call("MPI_Unpack_external", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            external32(datarep)?;
            if position.is_null() {
                return Err(MpiError::new(c::MPI_ERR_ARG, "position is NULL"));
            }
            let mut pos = position_of(*position as i64)?;
            unpack(inbuf, insize as i64, &mut pos, outbuf, outcount.into(), datatype, true)?;
            put(position, back(pos)?, "position")
        }
    })
}}

mpi_fn! { MPI_Unpack_external_c / PMPI_Unpack_external_c (datarep: *const c_char, inbuf: *const c_void, insize: MPI_Count, position: *mut MPI_Count, outbuf: *mut c_void, outcount: MPI_Count, datatype: MPI_Datatype) -> c_int {
    call("MPI_Unpack_external_c", None, |_| {
        // SAFETY: the caller's arguments.
        unsafe {
            external32(datarep)?;
            let mut pos = read_position(position)?;
            unpack(inbuf, insize, &mut pos, outbuf, outcount, datatype, true)?;
            put(position, back(pos)?, "position")
        }
    })
}}

mpi_fn! { MPI_Pack_external_size / PMPI_Pack_external_size (datarep: *const c_char, incount: c_int, datatype: MPI_Datatype, size: *mut MPI_Aint) -> c_int {
    call("MPI_Pack_external_size", None, |_| {
        // SAFETY: the caller's string.
        unsafe { external32(datarep)? };
        let n = back(pack_size(incount.into(), datatype, true)? as usize)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n, "size") }
    })
}}

mpi_fn! { MPI_Pack_external_size_c / PMPI_Pack_external_size_c (datarep: *const c_char, incount: MPI_Count, datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    call("MPI_Pack_external_size_c", None, |_| {
        // SAFETY: the caller's string.
        unsafe { external32(datarep)? };
        let n = back(pack_size(incount, datatype, true)? as usize)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n, "size") }
    })
}}
