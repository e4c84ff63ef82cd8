//! `MPI_Type_create_darray`, lowered as the MPI standard defines it: the
//! process grid is row-major; each dimension (fastest first) becomes a
//! block-cyclic selection of the previous type, resized to the whole
//! dimension.

use crate::datatype::{Datatype, Distribution, Order};
use crate::error::{to_i64, DatatypeError};
use crate::subarray::fastest_first;

fn bad(dim: Option<usize>, reason: &'static str) -> DatatypeError {
    DatatypeError::InvalidDarray { dim, reason }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn lower(
    size: usize,
    rank: usize,
    gsizes: &[usize],
    distribs: &[Distribution],
    psizes: &[usize],
    order: Order,
    oldtype: &Datatype,
) -> Result<Datatype, DatatypeError> {
    let n = gsizes.len();
    if n == 0 {
        return Err(bad(None, "ndims must be at least 1"));
    }
    if distribs.len() != n || psizes.len() != n {
        return Err(DatatypeError::LengthMismatch {
            what: "darray distribs/psizes",
            expected: n,
            got: distribs.len().min(psizes.len()),
        });
    }
    let grid = psizes
        .iter()
        .try_fold(1usize, |acc, &p| acc.checked_mul(p))
        .ok_or(DatatypeError::Overflow)?;
    if grid != size {
        return Err(bad(None, "product of psizes differs from size"));
    }
    if rank >= size {
        return Err(bad(None, "rank is not below size"));
    }
    // Row-major coordinates: the last dimension varies fastest.
    let mut coords = vec![0usize; n];
    let mut r = rank;
    for d in (0..n).rev() {
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    let mut t = oldtype.clone();
    for d in fastest_first(n, order) {
        let (g, p) = (gsizes[d], psizes[d]);
        if g == 0 {
            return Err(bad(Some(d), "gsize must be positive"));
        }
        let darg = match distribs[d] {
            Distribution::None => {
                if p != 1 {
                    return Err(bad(Some(d), "DISTRIBUTE_NONE needs psize 1"));
                }
                g
            }
            Distribution::Block(arg) => {
                let darg = arg.unwrap_or(g.div_ceil(p));
                if darg == 0 || darg.checked_mul(p).map_or(true, |cover| cover < g) {
                    return Err(bad(Some(d), "block darg * psize must cover gsize"));
                }
                darg
            }
            Distribution::Cyclic(arg) => {
                let darg = arg.unwrap_or(1);
                if darg == 0 {
                    return Err(bad(Some(d), "cyclic darg must be positive"));
                }
                darg
            }
        };
        t = block_cyclic(darg, g, coords[d], p, &t)?;
    }
    Ok(t)
}

/// The elements of one dimension of `gsize` elements owned by process
/// `r` of `psize` when blocks of `darg` are dealt round-robin, resized to
/// the whole dimension.
fn block_cyclic(
    darg: usize,
    gsize: usize,
    r: usize,
    psize: usize,
    old: &Datatype,
) -> Result<Datatype, DatatypeError> {
    let ext = old.extent() as i128;
    let nblocks = gsize.div_ceil(darg);
    let mine = if r < nblocks {
        (nblocks - r - 1) / psize + 1
    } else {
        0
    };
    let last = nblocks - 1;
    let last_len = gsize - last * darg;
    let last_is_partial_and_mine = last % psize == r && last_len < darg;
    let full = if last_is_partial_and_mine {
        mine - 1
    } else {
        mine
    };
    let mut types = Vec::new();
    let mut disps = Vec::new();
    if full > 0 {
        let stride = to_i64(darg as i128 * psize as i128 * ext)?;
        types.push(Datatype::hvector(full, darg, stride, old)?);
        disps.push(to_i64(r as i128 * darg as i128 * ext)?);
    }
    if last_is_partial_and_mine {
        types.push(Datatype::contiguous(last_len, old)?);
        disps.push(to_i64(last as i128 * darg as i128 * ext)?);
    }
    let ones = vec![1; types.len()];
    let picked = Datatype::create_struct(&ones, &disps, &types)?;
    Datatype::resized(&picked, 0, to_i64(gsize as i128 * ext)?)
}
