//! Group entry points and group handles. User groups are
//! `USER_GROUP_BASE | index`; an empty result is always `MPI_GROUP_EMPTY`.

use super::consts as c;
use super::consts::MPI_Group;
use super::{call, HANDLE_INDEX_MASK};
use crate::engine::error::{MpiError, MpiResult};
use crate::engine::group::Group;
use crate::engine::Engine;
use crate::mpi_fn;
use std::os::raw::c_int;

/// Kind and object bits of a user group handle.
const USER_GROUP_BASE: MPI_Group = 0x8800_0000_u32 as MPI_Group;

fn invalid(h: MPI_Group) -> MpiError {
    MpiError::new(
        c::MPI_ERR_GROUP,
        format!("invalid group 0x{:08x}", h as u32),
    )
}

/// The table index of a user group handle.
fn group_index(h: MPI_Group) -> MpiResult<usize> {
    if h & !HANDLE_INDEX_MASK == USER_GROUP_BASE {
        Ok((h & HANDLE_INDEX_MASK) as usize)
    } else {
        Err(invalid(h))
    }
}

/// The group behind a handle (a copy; groups are small).
pub fn group_of(e: &Engine, h: MPI_Group) -> MpiResult<Group> {
    if h == c::MPI_GROUP_EMPTY {
        return Ok(Group::default());
    }
    let idx = group_index(h)?;
    e.comms.groups.get(idx).cloned().map_err(|_| invalid(h))
}

/// A handle for a new group.
pub fn new_group_handle(e: &mut Engine, g: Group) -> MPI_Group {
    if g.members.is_empty() {
        return c::MPI_GROUP_EMPTY;
    }
    USER_GROUP_BASE | (e.comms.groups.insert(g) as c_int & HANDLE_INDEX_MASK)
}

/// Writes an output argument.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
pub unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null, and valid per the contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Borrows a C array of `n` elements.
///
/// # Safety
/// `p` is null or points to `n` readable elements that outlive the call.
unsafe fn array<'a, T>(p: *const T, n: c_int, what: &str) -> MpiResult<&'a [T]> {
    if n < 0 {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("negative count {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null with `n` elements per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

mpi_fn! { MPI_Group_size / PMPI_Group_size (group: MPI_Group, size: *mut c_int) -> c_int {
    call("MPI_Group_size", None, |e| {
        let g = group_of(e, group)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, g.size() as c_int, "size") }
    })
}}

mpi_fn! { MPI_Group_rank / PMPI_Group_rank (group: MPI_Group, rank: *mut c_int) -> c_int {
    call("MPI_Group_rank", None, |e| {
        let g = group_of(e, group)?;
        let r = g.rank_of(e.job.rank).map_or(c::MPI_UNDEFINED, |r| r as c_int);
        // SAFETY: the caller's output argument.
        unsafe { put(rank, r, "rank") }
    })
}}

mpi_fn! { MPI_Group_translate_ranks / PMPI_Group_translate_ranks (group1: MPI_Group, n: c_int, ranks1: *const c_int, group2: MPI_Group, ranks2: *mut c_int) -> c_int {
    call("MPI_Group_translate_ranks", None, |e| {
        let (g1, g2) = (group_of(e, group1)?, group_of(e, group2)?);
        // SAFETY: the caller's array of n ranks.
        let input = unsafe { array(ranks1, n, "ranks1")? };
        let out = g1.translate(input, &g2)?;
        if !out.is_empty() && ranks2.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "ranks2 is NULL"));
        }
        for (i, r) in out.into_iter().enumerate() {
            // SAFETY: ranks2 holds n ints, as the standard requires.
            unsafe { ranks2.add(i).write(r) };
        }
        Ok(())
    })
}}

mpi_fn! { MPI_Group_compare / PMPI_Group_compare (group1: MPI_Group, group2: MPI_Group, result: *mut c_int) -> c_int {
    call("MPI_Group_compare", None, |e| {
        let v = group_of(e, group1)?.compare(&group_of(e, group2)?);
        // SAFETY: the caller's output argument.
        unsafe { put(result, v, "result") }
    })
}}

/// Defines a function that combines two groups into a new one.
macro_rules! group_binary {
    ($name:ident, $pname:ident, $method:ident) => {
        mpi_fn! { $name / $pname (group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
            call(stringify!($name), None, |e| {
                let g = group_of(e, group1)?.$method(&group_of(e, group2)?);
                if newgroup.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_ARG, "newgroup is NULL"));
                }
                let h = new_group_handle(e, g);
                // SAFETY: checked non-null; the caller's output argument.
                unsafe { put(newgroup, h, "newgroup") }
            })
        }}
    };
}

group_binary!(MPI_Group_union, PMPI_Group_union, union);
group_binary!(
    MPI_Group_intersection,
    PMPI_Group_intersection,
    intersection
);
group_binary!(MPI_Group_difference, PMPI_Group_difference, difference);

/// One `(first, last, stride)` triplet of `MPI_Group_range_incl`/`_excl`.
type Range = [c_int; 3];

/// Defines a function that selects ranks (a list or range triplets).
macro_rules! group_select {
    ($name:ident, $pname:ident, $elem:ty, $method:ident) => {
        mpi_fn! { $name / $pname (group: MPI_Group, n: c_int, ranks: *const $elem, newgroup: *mut MPI_Group) -> c_int {
            call(stringify!($name), None, |e| {
                let g = group_of(e, group)?;
                // SAFETY: the caller's array of n entries.
                let sel = unsafe { array(ranks, n, "ranks")? };
                let g = g.$method(sel)?;
                if newgroup.is_null() {
                    return Err(MpiError::new(c::MPI_ERR_ARG, "newgroup is NULL"));
                }
                let h = new_group_handle(e, g);
                // SAFETY: checked non-null; the caller's output argument.
                unsafe { put(newgroup, h, "newgroup") }
            })
        }}
    };
}

group_select!(MPI_Group_incl, PMPI_Group_incl, c_int, incl);
group_select!(MPI_Group_excl, PMPI_Group_excl, c_int, excl);
group_select!(
    MPI_Group_range_incl,
    PMPI_Group_range_incl,
    Range,
    range_incl
);
group_select!(
    MPI_Group_range_excl,
    PMPI_Group_range_excl,
    Range,
    range_excl
);

mpi_fn! { MPI_Group_free / PMPI_Group_free (group: *mut MPI_Group) -> c_int {
    call("MPI_Group_free", None, |e| {
        if group.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "group is NULL"));
        }
        // SAFETY: checked non-null; the caller's handle.
        let h = unsafe { *group };
        // MPI_GROUP_EMPTY is predefined: the handle is nulled, nothing freed.
        if h != c::MPI_GROUP_EMPTY {
            e.comms.groups.remove(group_index(h)?).map_err(|_| invalid(h))?;
        }
        // SAFETY: as above.
        unsafe { put(group, c::MPI_GROUP_NULL, "group") }
    })
}}
