//! Datatype queries: size, extents, envelope, contents, names, addresses.

use super::{
    bad_handle, c_int_of, insert, predef, put, resolve, slot_of, table, with_entry, Input,
};
use crate::abi::call;
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use lanai_datatype::{AbiCodes, Combiner, Datatype};
use std::ffi::{c_char, c_void, CStr};
use std::os::raw::c_int;
use std::sync::Arc;

/// Writes a pair of outputs (lb and extent, or the true ones).
///
/// # Safety
/// Both pointers null or writable.
unsafe fn put2<T>(a: *mut T, av: T, b: *mut T, bv: T) -> MpiResult<()> {
    // SAFETY: forwarded.
    unsafe {
        put(a, av, "lb")?;
        put(b, bv, "extent")
    }
}

macro_rules! size_fn {
    ($name:ident, $pname:ident, $t:ty, $conv:expr) => {
        mpi_fn! { $name / $pname (datatype: MPI_Datatype, size: *mut $t) -> c_int {
            call(stringify!($name), None, |_| {
                let s = resolve(datatype)?.size();
                let v: $t = $conv(s)?;
                // SAFETY: the caller's output argument.
                unsafe { put(size, v, "size") }
            })
        }}
    };
}

fn count_of(v: u64) -> MpiResult<MPI_Count> {
    MPI_Count::try_from(v).map_err(|_| MpiError::new(c::MPI_ERR_TYPE, "size too large"))
}

size_fn!(MPI_Type_size, PMPI_Type_size, c_int, |s| c_int_of(
    s, "size"
));
size_fn!(MPI_Type_size_x, PMPI_Type_size_x, MPI_Count, count_of);
size_fn!(MPI_Type_size_c, PMPI_Type_size_c, MPI_Count, count_of);

macro_rules! extent_fn {
    ($name:ident, $pname:ident, $t:ty, $lb:ident, $ext:ident) => {
        mpi_fn! { $name / $pname (datatype: MPI_Datatype, lb: *mut $t, extent: *mut $t) -> c_int {
            call(stringify!($name), None, |_| {
                let d = resolve(datatype)?;
                // SAFETY: the caller's output arguments.
                unsafe { put2(lb, d.$lb() as $t, extent, d.$ext() as $t) }
            })
        }}
    };
}

extent_fn!(
    MPI_Type_get_extent,
    PMPI_Type_get_extent,
    MPI_Aint,
    lb,
    extent
);
extent_fn!(
    MPI_Type_get_extent_x,
    PMPI_Type_get_extent_x,
    MPI_Count,
    lb,
    extent
);
extent_fn!(
    MPI_Type_get_extent_c,
    PMPI_Type_get_extent_c,
    MPI_Count,
    lb,
    extent
);
extent_fn!(
    MPI_Type_get_true_extent,
    PMPI_Type_get_true_extent,
    MPI_Aint,
    true_lb,
    true_extent
);
extent_fn!(
    MPI_Type_get_true_extent_x,
    PMPI_Type_get_true_extent_x,
    MPI_Count,
    true_lb,
    true_extent
);
extent_fn!(
    MPI_Type_get_true_extent_c,
    PMPI_Type_get_true_extent_c,
    MPI_Count,
    true_lb,
    true_extent
);

macro_rules! bound_fn {
    ($name:ident, $pname:ident, $f:ident) => {
        mpi_fn! { $name / $pname (datatype: MPI_Datatype, v: *mut MPI_Aint) -> c_int {
            call(stringify!($name), None, |_| {
                let d = resolve(datatype)?;
                // SAFETY: the caller's output argument.
                unsafe { put(v, d.$f() as MPI_Aint, "displacement") }
            })
        }}
    };
}

bound_fn!(MPI_Type_lb, PMPI_Type_lb, lb);
bound_fn!(MPI_Type_ub, PMPI_Type_ub, ub);
bound_fn!(MPI_Type_extent, PMPI_Type_extent, extent);

fn combiner_code(k: Combiner) -> c_int {
    match k {
        Combiner::Named => c::MPI_COMBINER_NAMED,
        Combiner::Dup => c::MPI_COMBINER_DUP,
        Combiner::Contiguous => c::MPI_COMBINER_CONTIGUOUS,
        Combiner::Vector => c::MPI_COMBINER_VECTOR,
        Combiner::Hvector => c::MPI_COMBINER_HVECTOR,
        Combiner::Indexed => c::MPI_COMBINER_INDEXED,
        Combiner::Hindexed => c::MPI_COMBINER_HINDEXED,
        Combiner::IndexedBlock => c::MPI_COMBINER_INDEXED_BLOCK,
        Combiner::HindexedBlock => c::MPI_COMBINER_HINDEXED_BLOCK,
        Combiner::Struct => c::MPI_COMBINER_STRUCT,
        Combiner::Subarray => c::MPI_COMBINER_SUBARRAY,
        Combiner::Darray => c::MPI_COMBINER_DARRAY,
        Combiner::Resized => c::MPI_COMBINER_RESIZED,
        Combiner::F90Real => c::MPI_COMBINER_F90_REAL,
        Combiner::F90Complex => c::MPI_COMBINER_F90_COMPLEX,
        Combiner::F90Integer => c::MPI_COMBINER_F90_INTEGER,
    }
}

/// (integers, addresses, datatypes, combiner) of a handle.
fn envelope(h: MPI_Datatype) -> MpiResult<(usize, usize, usize, c_int)> {
    if predef::lookup(h).is_some() {
        return Ok((0, 0, 0, c::MPI_COMBINER_NAMED));
    }
    let e = resolve(h)?.envelope();
    Ok((
        e.num_integers,
        e.num_addresses,
        e.num_datatypes,
        combiner_code(e.combiner),
    ))
}

mpi_fn! { MPI_Type_get_envelope / PMPI_Type_get_envelope (datatype: MPI_Datatype, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) -> c_int {
    call("MPI_Type_get_envelope", None, |_| {
        let (ni, na, nd, k) = envelope(datatype)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            put(num_integers, c_int_of(ni as u64, "num_integers")?, "num_integers")?;
            put(num_addresses, c_int_of(na as u64, "num_addresses")?, "num_addresses")?;
            put(num_datatypes, c_int_of(nd as u64, "num_datatypes")?, "num_datatypes")?;
            put(combiner, k, "combiner")
        }
    })
}}

mpi_fn! { MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c (datatype: MPI_Datatype, num_integers: *mut MPI_Count, num_addresses: *mut MPI_Count, num_large_counts: *mut MPI_Count, num_datatypes: *mut MPI_Count, combiner: *mut c_int) -> c_int {
    call("MPI_Type_get_envelope_c", None, |_| {
        let (ni, na, nd, k) = envelope(datatype)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            put(num_integers, ni as MPI_Count, "num_integers")?;
            put(num_addresses, na as MPI_Count, "num_addresses")?;
            put(num_large_counts, 0, "num_large_counts")?;
            put(num_datatypes, nd as MPI_Count, "num_datatypes")?;
            put(combiner, k, "combiner")
        }
    })
}}

const CODES: AbiCodes = AbiCodes {
    order_c: c::MPI_ORDER_C as i64,
    order_fortran: c::MPI_ORDER_FORTRAN as i64,
    distribute_block: c::MPI_DISTRIBUTE_BLOCK as i64,
    distribute_cyclic: c::MPI_DISTRIBUTE_CYCLIC as i64,
    distribute_none: c::MPI_DISTRIBUTE_NONE as i64,
    distribute_dflt_darg: c::MPI_DISTRIBUTE_DFLT_DARG as i64,
};

/// The constructor arguments of a derived handle: integers, addresses and
/// handles (derived inputs come back as new handles the caller frees).
fn contents(h: MPI_Datatype) -> MpiResult<(Vec<i64>, Vec<i64>, Vec<MPI_Datatype>)> {
    if predef::lookup(h).is_some() {
        return Err(MpiError::new(
            c::MPI_ERR_TYPE,
            "a predefined datatype has no contents",
        ));
    }
    let i = slot_of(h).ok_or_else(|| bad_handle(h))?;
    let (dt, meta) = match table().slots.get(i) {
        Some(Some(e)) => (e.dt.clone(), Arc::clone(&e.meta)),
        _ => return Err(bad_handle(h)),
    };
    let cts = dt.contents();
    let olds: Vec<Datatype> = cts.datatypes();
    let mut handles = Vec::with_capacity(olds.len());
    for (old, input) in olds.into_iter().zip(&meta.inputs) {
        handles.push(match input {
            Input::Predefined(p) => *p,
            Input::Derived(m) => insert(old, Arc::clone(m), true)?,
        });
    }
    Ok((cts.integers(&CODES), cts.addresses(), handles))
}

fn room(max: impl Into<i64>, need: usize, what: &str) -> MpiResult<()> {
    let max: i64 = max.into();
    if max < need as i64 {
        return Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("{what} is {max} but the datatype has {need}"),
        ));
    }
    Ok(())
}

/// Copies `v` to the caller's array `p`.
///
/// # Safety
/// `p` is null or writable for `v.len()` elements.
unsafe fn fill<T: Copy>(p: *mut T, v: &[T], what: &str) -> MpiResult<()> {
    if v.is_empty() {
        return Ok(());
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: checked non-null; room checked by the caller.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, v.len()) };
    Ok(())
}

mpi_fn! { MPI_Type_get_contents / PMPI_Type_get_contents (datatype: MPI_Datatype, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_datatypes: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_get_contents", None, |_| {
        let (ni, na, nd, _) = envelope(datatype)?;
        room(max_integers, ni, "max_integers")?;
        room(max_addresses, na, "max_addresses")?;
        room(max_datatypes, nd, "max_datatypes")?;
        let (ints, addrs, types) = contents(datatype)?;
        let ints = ints.iter().map(|&v| c_int::try_from(v).map_err(|_| MpiError::new(c::MPI_ERR_TYPE, "integer argument too large"))).collect::<MpiResult<Vec<_>>>()?;
        let addrs: Vec<MPI_Aint> = addrs.iter().map(|&a| a as MPI_Aint).collect();
        // SAFETY: the caller's arrays, at least as long as checked above.
        unsafe {
            fill(array_of_integers, &ints, "array_of_integers")?;
            fill(array_of_addresses, &addrs, "array_of_addresses")?;
            fill(array_of_datatypes, &types, "array_of_datatypes")
        }
    })
}}

mpi_fn! { MPI_Type_get_contents_c / PMPI_Type_get_contents_c (datatype: MPI_Datatype, max_integers: MPI_Count, max_addresses: MPI_Count, max_large_counts: MPI_Count, max_datatypes: MPI_Count, array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_large_counts: *mut MPI_Count, array_of_datatypes: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_get_contents_c", None, |_| {
        let _ = (max_large_counts, array_of_large_counts);
        let (ni, na, nd, _) = envelope(datatype)?;
        room(max_integers, ni, "max_integers")?;
        room(max_addresses, na, "max_addresses")?;
        room(max_datatypes, nd, "max_datatypes")?;
        let (ints, addrs, types) = contents(datatype)?;
        let ints = ints.iter().map(|&v| c_int::try_from(v).map_err(|_| MpiError::new(c::MPI_ERR_TYPE, "integer argument too large"))).collect::<MpiResult<Vec<_>>>()?;
        let addrs: Vec<MPI_Aint> = addrs.iter().map(|&a| a as MPI_Aint).collect();
        // SAFETY: the caller's arrays, at least as long as checked above.
        unsafe {
            fill(array_of_integers, &ints, "array_of_integers")?;
            fill(array_of_addresses, &addrs, "array_of_addresses")?;
            fill(array_of_datatypes, &types, "array_of_datatypes")
        }
    })
}}

/// The name of a handle ("" for an unnamed derived type).
fn name_of(h: MPI_Datatype) -> MpiResult<String> {
    if let Some(p) = predef::lookup(h) {
        let t = table();
        let renamed = t.renamed.iter().find(|(k, _)| *k == h);
        return Ok(renamed.map_or_else(|| p.name.to_string(), |(_, n)| n.clone()));
    }
    with_entry(h, |e| e.name.clone())
}

mpi_fn! { MPI_Type_get_name / PMPI_Type_get_name (datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Type_get_name", None, |_| {
        let name = name_of(datatype)?;
        if type_name.is_null() || resultlen.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "type_name or resultlen is NULL"));
        }
        let b = name.as_bytes();
        let n = b.len().min(c::MPI_MAX_OBJECT_NAME as usize - 1);
        // SAFETY: the caller's buffer holds MPI_MAX_OBJECT_NAME chars; we
        // write at most that many including the terminator.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), type_name.cast::<u8>(), n);
            *type_name.add(n) = 0;
            *resultlen = n as c_int;
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Type_set_name / PMPI_Type_set_name (datatype: MPI_Datatype, type_name: *const c_char) -> c_int {
    call("MPI_Type_set_name", None, |_| {
        if type_name.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "type_name is NULL"));
        }
        // SAFETY: a NUL-terminated string per the MPI contract.
        let s = unsafe { CStr::from_ptr(type_name) }.to_string_lossy();
        let name: String = s.chars().take(c::MPI_MAX_OBJECT_NAME as usize - 1).collect();
        if predef::lookup(datatype).is_some() {
            let mut t = table();
            t.renamed.retain(|(k, _)| *k != datatype);
            t.renamed.push((datatype, name));
            return Ok(());
        }
        with_entry(datatype, |e| e.name = name)
    })
}}

mpi_fn! { MPI_Type_match_size / PMPI_Type_match_size (typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_match_size", None, |_| {
        let h = match (typeclass, size) {
            (c::MPI_TYPECLASS_REAL, 4) => c::MPI_REAL4,
            (c::MPI_TYPECLASS_REAL, 8) => c::MPI_REAL8,
            (c::MPI_TYPECLASS_REAL, 16) => c::MPI_REAL16,
            (c::MPI_TYPECLASS_INTEGER, 1) => c::MPI_INTEGER1,
            (c::MPI_TYPECLASS_INTEGER, 2) => c::MPI_INTEGER2,
            (c::MPI_TYPECLASS_INTEGER, 4) => c::MPI_INTEGER4,
            (c::MPI_TYPECLASS_INTEGER, 8) => c::MPI_INTEGER8,
            (c::MPI_TYPECLASS_COMPLEX, 8) => c::MPI_COMPLEX8,
            (c::MPI_TYPECLASS_COMPLEX, 16) => c::MPI_COMPLEX16,
            (c::MPI_TYPECLASS_COMPLEX, 32) => c::MPI_COMPLEX32,
            _ => return Err(MpiError::new(c::MPI_ERR_ARG, format!("no predefined type of class {typeclass} and size {size}"))),
        };
        // SAFETY: the caller's output argument.
        unsafe { put(datatype, h, "datatype") }
    })
}}

mpi_fn! { MPI_Get_address / PMPI_Get_address (location: *const c_void, address: *mut MPI_Aint) -> c_int {
    // SAFETY: the caller's output argument.
    call("MPI_Get_address", None, |_| unsafe { put(address, location as MPI_Aint, "address") })
}}

mpi_fn! { MPI_Address / PMPI_Address (location: *const c_void, address: *mut MPI_Aint) -> c_int {
    // SAFETY: the caller's output argument.
    call("MPI_Address", None, |_| unsafe { put(address, location as MPI_Aint, "address") })
}}
