//! `MPI_Type_create_subarray`, lowered onto hvector/hindexed_block/resized
//! exactly as the MPI standard defines it.

use crate::datatype::{Datatype, Order};
use crate::error::{to_i64, DatatypeError};

fn bad(dim: usize, reason: &'static str) -> DatatypeError {
    DatatypeError::InvalidSubarray { dim, reason }
}

/// Dimension indices from fastest- to slowest-varying.
pub(crate) fn fastest_first(ndims: usize, order: Order) -> Vec<usize> {
    match order {
        Order::C => (0..ndims).rev().collect(),
        Order::Fortran => (0..ndims).collect(),
    }
}

pub(crate) fn lower(
    sizes: &[usize],
    subsizes: &[usize],
    starts: &[usize],
    order: Order,
    oldtype: &Datatype,
) -> Result<Datatype, DatatypeError> {
    let n = sizes.len();
    if n == 0 {
        return Err(bad(0, "ndims must be at least 1"));
    }
    if subsizes.len() != n || starts.len() != n {
        return Err(DatatypeError::LengthMismatch {
            what: "subarray subsizes/starts",
            expected: n,
            got: subsizes.len().min(starts.len()),
        });
    }
    for d in 0..n {
        if sizes[d] == 0 {
            return Err(bad(d, "size must be positive"));
        }
        if subsizes[d] > sizes[d] {
            return Err(bad(d, "subsize exceeds size"));
        }
        if starts[d]
            .checked_add(subsizes[d])
            .map_or(true, |e| e > sizes[d])
        {
            return Err(bad(d, "start + subsize exceeds size"));
        }
    }
    let ext = oldtype.extent() as i128;
    let dims = fastest_first(n, order);
    let mut stride = ext;
    let mut disp = 0i128;
    let mut t: Option<Datatype> = None;
    for &d in &dims {
        disp += starts[d] as i128 * stride;
        t = Some(match t {
            None => Datatype::contiguous(subsizes[d], oldtype)?,
            Some(inner) => Datatype::hvector(subsizes[d], 1, to_i64(stride)?, &inner)?,
        });
        stride *= sizes[d] as i128;
        to_i64(stride)?;
    }
    let t = t.ok_or_else(|| bad(0, "ndims must be at least 1"))?;
    let placed = Datatype::hindexed_block(1, &[to_i64(disp)?], &t)?;
    Datatype::resized(&placed, 0, to_i64(stride)?)
}
