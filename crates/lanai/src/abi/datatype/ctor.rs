//! Type constructors, `MPI_Type_commit`, `MPI_Type_dup` and `MPI_Type_free`.

use super::{
    array, check_freeable, count_arg, counts_of, dt_err, insert, meta_of, put, remove, resolve,
    with_entry,
};
use crate::abi::call;
use crate::abi::consts as c;
use crate::abi::consts::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use lanai_datatype::{Datatype, DatatypeError, Distribution, Order};
use std::os::raw::c_int;

/// Builds a type from `inputs` and writes its handle to `*newtype`.
///
/// # Safety
/// `newtype` is null or writable.
unsafe fn make(
    newtype: *mut MPI_Datatype,
    inputs: &[MPI_Datatype],
    build: impl FnOnce(&[Datatype]) -> Result<Datatype, DatatypeError>,
) -> MpiResult<()> {
    if newtype.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "newtype is NULL"));
    }
    let olds = inputs
        .iter()
        .map(|&h| resolve(h))
        .collect::<MpiResult<Vec<_>>>()?;
    let dt = build(&olds).map_err(dt_err)?;
    let h = insert(dt, meta_of(inputs)?, false)?;
    // SAFETY: checked non-null; writable per the contract.
    unsafe { put(newtype, h, "newtype") }
}

fn order_of(order: c_int) -> MpiResult<Order> {
    match order {
        c::MPI_ORDER_C => Ok(Order::C),
        c::MPI_ORDER_FORTRAN => Ok(Order::Fortran),
        o => Err(MpiError::new(c::MPI_ERR_ARG, format!("invalid order {o}"))),
    }
}

fn darg_of(d: c_int) -> MpiResult<Option<usize>> {
    if d == c::MPI_DISTRIBUTE_DFLT_DARG {
        Ok(None)
    } else {
        count_arg(d).map(Some)
    }
}

fn distribution(kind: c_int, darg: c_int) -> MpiResult<Distribution> {
    match kind {
        c::MPI_DISTRIBUTE_BLOCK => Ok(Distribution::Block(darg_of(darg)?)),
        c::MPI_DISTRIBUTE_CYCLIC => Ok(Distribution::Cyclic(darg_of(darg)?)),
        c::MPI_DISTRIBUTE_NONE => Ok(Distribution::None),
        k => Err(MpiError::new(
            c::MPI_ERR_ARG,
            format!("invalid distribution {k}"),
        )),
    }
}

/// A C integer type of displacements and strides: int, MPI_Aint or
/// MPI_Count, widened losslessly (on LP64, where MPI_Aint is 64 bits).
trait Disp: Copy {
    fn wide(self) -> i64;
}

impl Disp for i32 {
    fn wide(self) -> i64 {
        i64::from(self)
    }
}

impl Disp for i64 {
    fn wide(self) -> i64 {
        self
    }
}

impl Disp for isize {
    fn wide(self) -> i64 {
        self as i64
    }
}

/// Signed values (displacements) of a C array as `i64`.
fn wide<T: Disp>(v: &[T]) -> Vec<i64> {
    v.iter().map(|&d| d.wide()).collect()
}

// The constructors are generic over the integer type of their counts and
// displacements, so the int, MPI_Aint and MPI_Count (`_c`) forms share
// one implementation each.

/// # Safety
/// `newtype` is null or writable.
unsafe fn contiguous(
    count: impl Into<i64>,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    // SAFETY: forwarded.
    unsafe { make(newtype, &[oldtype], |o| Datatype::contiguous(n, &o[0])) }
}

/// A vector; `bytes` says whether the stride is in bytes (hvector) or
/// in extents of `oldtype`.
///
/// # Safety
/// `newtype` is null or writable.
unsafe fn vector(
    count: impl Into<i64>,
    blocklength: impl Into<i64>,
    stride: impl Disp,
    bytes: bool,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let (n, bl, stride) = (count_arg(count)?, count_arg(blocklength)?, stride.wide());
    // SAFETY: forwarded.
    unsafe {
        make(newtype, &[oldtype], |o| {
            if bytes {
                Datatype::hvector(n, bl, stride, &o[0])
            } else {
                Datatype::vector(n, bl, stride, &o[0])
            }
        })
    }
}

/// An indexed type; `bytes` as for [`vector`].
///
/// # Safety
/// Arrays of `count` entries (or null); `newtype` null or writable.
unsafe fn indexed<B: Copy + Into<i64>, D: Disp>(
    count: impl Into<i64>,
    blocklengths: *const B,
    displacements: *const D,
    bytes: bool,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    // SAFETY: forwarded.
    let (bl, d) = unsafe {
        (
            array(blocklengths, n, "array_of_blocklengths")?,
            array(displacements, n, "array_of_displacements")?,
        )
    };
    let (bl, d) = (counts_of(bl)?, wide(d));
    // SAFETY: forwarded.
    unsafe {
        make(newtype, &[oldtype], |o| {
            if bytes {
                Datatype::hindexed(&bl, &d, &o[0])
            } else {
                Datatype::indexed(&bl, &d, &o[0])
            }
        })
    }
}

/// An indexed type with equal blocks; `bytes` as for [`vector`].
///
/// # Safety
/// An array of `count` entries (or null); `newtype` null or writable.
unsafe fn indexed_block<D: Disp>(
    count: impl Into<i64>,
    blocklength: impl Into<i64>,
    displacements: *const D,
    bytes: bool,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let (n, bl) = (count_arg(count)?, count_arg(blocklength)?);
    // SAFETY: forwarded.
    let d = wide(unsafe { array(displacements, n, "array_of_displacements")? });
    // SAFETY: forwarded.
    unsafe {
        make(newtype, &[oldtype], |o| {
            if bytes {
                Datatype::hindexed_block(bl, &d, &o[0])
            } else {
                Datatype::indexed_block(bl, &d, &o[0])
            }
        })
    }
}

/// # Safety
/// Arrays of `count` entries (or null); `newtype` null or writable.
unsafe fn create_struct<B: Copy + Into<i64>, D: Disp>(
    count: impl Into<i64>,
    blocklengths: *const B,
    displacements: *const D,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    // SAFETY: forwarded.
    let (bl, d, t) = unsafe {
        (
            array(blocklengths, n, "array_of_blocklengths")?,
            array(displacements, n, "array_of_displacements")?,
            array(types, n, "array_of_types")?,
        )
    };
    let (bl, d) = (counts_of(bl)?, wide(d));
    // SAFETY: forwarded.
    unsafe { make(newtype, t, |o| Datatype::create_struct(&bl, &d, o)) }
}

/// # Safety
/// Arrays of `ndims` entries (or null); `newtype` null or writable.
unsafe fn subarray<T: Copy + Into<i64>>(
    ndims: c_int,
    sizes: *const T,
    subsizes: *const T,
    starts: *const T,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let n = count_arg(ndims)?;
    // SAFETY: forwarded.
    let (s, ss, st) = unsafe {
        (
            array(sizes, n, "array_of_sizes")?,
            array(subsizes, n, "array_of_subsizes")?,
            array(starts, n, "array_of_starts")?,
        )
    };
    let (s, ss, st) = (counts_of(s)?, counts_of(ss)?, counts_of(st)?);
    let order = order_of(order)?;
    // SAFETY: forwarded.
    unsafe {
        make(newtype, &[oldtype], |o| {
            Datatype::subarray(&s, &ss, &st, order, &o[0])
        })
    }
}

/// # Safety
/// Arrays of `ndims` entries (or null); `newtype` null or writable.
#[allow(clippy::too_many_arguments)]
unsafe fn darray<G: Copy + Into<i64>>(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const G,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let (size, rank, n) = (count_arg(size)?, count_arg(rank)?, count_arg(ndims)?);
    // SAFETY: forwarded.
    let (g, dist, dargs, p) = unsafe {
        (
            array(gsizes, n, "array_of_gsizes")?,
            array(distribs, n, "array_of_distribs")?,
            array(dargs, n, "array_of_dargs")?,
            array(psizes, n, "array_of_psizes")?,
        )
    };
    let (g, p) = (counts_of(g)?, counts_of(p)?);
    let dist = dist
        .iter()
        .zip(dargs)
        .map(|(&k, &a)| distribution(k, a))
        .collect::<MpiResult<Vec<_>>>()?;
    let order = order_of(order)?;
    // SAFETY: forwarded.
    unsafe {
        make(newtype, &[oldtype], |o| {
            Datatype::darray(size, rank, &g, &dist, &p, order, &o[0])
        })
    }
}

/// # Safety
/// `newtype` is null or writable.
unsafe fn resized(
    oldtype: MPI_Datatype,
    lb: impl Disp,
    extent: impl Disp,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let (lb, extent) = (lb.wide(), extent.wide());
    // SAFETY: forwarded.
    unsafe {
        make(newtype, &[oldtype], |o| {
            Datatype::resized(&o[0], lb, extent)
        })
    }
}

// ---- entry points ------------------------------------------------------------

mpi_fn! { MPI_Type_contiguous / PMPI_Type_contiguous (count: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_contiguous", None, |_| unsafe { contiguous(count, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_contiguous_c / PMPI_Type_contiguous_c (count: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_contiguous_c", None, |_| unsafe { contiguous(count, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_vector / PMPI_Type_vector (count: c_int, blocklength: c_int, stride: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_vector", None, |_| unsafe { vector(count, blocklength, stride, false, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_vector_c / PMPI_Type_vector_c (count: MPI_Count, blocklength: MPI_Count, stride: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_vector_c", None, |_| unsafe { vector(count, blocklength, stride, false, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_hvector / PMPI_Type_create_hvector (count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_create_hvector", None, |_| unsafe { vector(count, blocklength, stride, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_hvector / PMPI_Type_hvector (count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_hvector", None, |_| unsafe { vector(count, blocklength, stride, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c (count: MPI_Count, blocklength: MPI_Count, stride: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_create_hvector_c", None, |_| unsafe { vector(count, blocklength, stride, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_indexed / PMPI_Type_indexed (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_indexed", None, |_| unsafe { indexed(count, array_of_blocklengths, array_of_displacements, false, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_indexed_c / PMPI_Type_indexed_c (count: MPI_Count, array_of_blocklengths: *const MPI_Count, array_of_displacements: *const MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_indexed_c", None, |_| unsafe { indexed(count, array_of_blocklengths, array_of_displacements, false, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_hindexed / PMPI_Type_create_hindexed (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_hindexed", None, |_| unsafe { indexed(count, array_of_blocklengths, array_of_displacements, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_hindexed / PMPI_Type_hindexed (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_hindexed", None, |_| unsafe { indexed(count, array_of_blocklengths, array_of_displacements, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c (count: MPI_Count, array_of_blocklengths: *const MPI_Count, array_of_displacements: *const MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_hindexed_c", None, |_| unsafe { indexed(count, array_of_blocklengths, array_of_displacements, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block (count: c_int, blocklength: c_int, array_of_displacements: *const c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's array and output handle.
    call("MPI_Type_create_indexed_block", None, |_| unsafe { indexed_block(count, blocklength, array_of_displacements, false, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c (count: MPI_Count, blocklength: MPI_Count, array_of_displacements: *const MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's array and output handle.
    call("MPI_Type_create_indexed_block_c", None, |_| unsafe { indexed_block(count, blocklength, array_of_displacements, false, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block (count: c_int, blocklength: c_int, array_of_displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's array and output handle.
    call("MPI_Type_create_hindexed_block", None, |_| unsafe { indexed_block(count, blocklength, array_of_displacements, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c (count: MPI_Count, blocklength: MPI_Count, array_of_displacements: *const MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's array and output handle.
    call("MPI_Type_create_hindexed_block_c", None, |_| unsafe { indexed_block(count, blocklength, array_of_displacements, true, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_struct / PMPI_Type_create_struct (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const MPI_Aint, array_of_types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_struct", None, |_| unsafe { create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype) })
}}

mpi_fn! { MPI_Type_struct / PMPI_Type_struct (count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const MPI_Aint, array_of_types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_struct", None, |_| unsafe { create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype) })
}}

mpi_fn! { MPI_Type_create_struct_c / PMPI_Type_create_struct_c (count: MPI_Count, array_of_blocklengths: *const MPI_Count, array_of_displacements: *const MPI_Count, array_of_types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_struct_c", None, |_| unsafe { create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype) })
}}

mpi_fn! { MPI_Type_create_subarray / PMPI_Type_create_subarray (ndims: c_int, array_of_sizes: *const c_int, array_of_subsizes: *const c_int, array_of_starts: *const c_int, order: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_subarray", None, |_| unsafe { subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c (ndims: c_int, array_of_sizes: *const MPI_Count, array_of_subsizes: *const MPI_Count, array_of_starts: *const MPI_Count, order: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_subarray_c", None, |_| unsafe { subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_darray / PMPI_Type_create_darray (size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_darray", None, |_| unsafe { darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_darray_c / PMPI_Type_create_darray_c (size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const MPI_Count, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's arrays and output handle.
    call("MPI_Type_create_darray_c", None, |_| unsafe { darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype) })
}}

mpi_fn! { MPI_Type_create_resized / PMPI_Type_create_resized (oldtype: MPI_Datatype, lb: MPI_Aint, extent: MPI_Aint, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_create_resized", None, |_| unsafe { resized(oldtype, lb, extent, newtype) })
}}

mpi_fn! { MPI_Type_create_resized_c / PMPI_Type_create_resized_c (oldtype: MPI_Datatype, lb: MPI_Count, extent: MPI_Count, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's output handle.
    call("MPI_Type_create_resized_c", None, |_| unsafe { resized(oldtype, lb, extent, newtype) })
}}

mpi_fn! { MPI_Type_dup / PMPI_Type_dup (oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    let rc = call("MPI_Type_dup", None, |_| {
        // SAFETY: the caller's output handle.
        unsafe { make(newtype, &[oldtype], |o| Ok(Datatype::dup(&o[0]))) }?;
        // The duplicate is committed when the original is.
        let committed = super::resolve_committed(oldtype).is_ok();
        // SAFETY: `make` just wrote the handle.
        let h = unsafe { *newtype };
        with_entry(h, |e| e.committed = committed)
    });
    if rc != c::MPI_SUCCESS {
        return rc;
    }
    // Attribute copy callbacks are user code, so they run outside `call`.
    // SAFETY: the call above succeeded, so it wrote the new handle.
    let new = unsafe { *newtype };
    match crate::abi::attr::after_type_dup(oldtype, new) {
        Ok(()) => c::MPI_SUCCESS,
        Err(err) => {
            let _ = remove(new);
            // SAFETY: as above; the caller's output handle.
            unsafe { *newtype = c::MPI_DATATYPE_NULL };
            crate::abi::errors::raise("MPI_Type_dup", None, err)
        }
    }
}}

mpi_fn! { MPI_Type_commit / PMPI_Type_commit (datatype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_commit", None, |_| {
        if datatype.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "datatype is NULL"));
        }
        // SAFETY: checked non-null.
        let h = unsafe { *datatype };
        if super::predef::lookup(h).is_some() {
            return Ok(());
        }
        with_entry(h, |e| e.committed = true)
    })
}}

mpi_fn! { MPI_Type_free / PMPI_Type_free (datatype: *mut MPI_Datatype) -> c_int {
    if !datatype.is_null() {
        // SAFETY: checked non-null; the caller's handle.
        let h = unsafe { *datatype };
        // A handle that cannot be freed keeps its attributes. Delete
        // callbacks are user code, so they run before `call`; one that
        // fails stops the free, as for communicators.
        if let Err(err) = check_freeable(h).and_then(|()| crate::abi::attr::before_type_free(h)) {
            return crate::abi::errors::raise("MPI_Type_free", None, err);
        }
    }
    call("MPI_Type_free", None, |_| {
        if datatype.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "datatype is NULL"));
        }
        // SAFETY: checked non-null.
        remove(unsafe { *datatype })?;
        // SAFETY: checked non-null.
        unsafe { *datatype = c::MPI_DATATYPE_NULL };
        Ok(())
    })
}}
