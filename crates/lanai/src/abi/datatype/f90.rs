//! `MPI_Type_create_f90_real`, `_complex` and `_integer`: the named type
//! that holds a Fortran `SELECTED_REAL_KIND(p, r)` (or
//! `SELECTED_INT_KIND(r)`) value. The result is a predefined type, so it
//! cannot be freed; its envelope names the F90 combiner and its contents
//! are `p` and `r`. As in MPICH, one (kind, p, r) always gives the same
//! handle.

use super::{insert_predefined, predef, put, Meta};
use crate::abi::call;
use crate::abi::consts as c;
use crate::abi::consts::MPI_Datatype;
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use lanai_datatype::{Datatype, F90Kind};
use std::os::raw::c_int;
use std::sync::{Arc, Mutex};

/// What a handle was made for: (kind, p, r).
type Request = (F90Kind, c_int, c_int);

/// Handles made so far.
static MADE: Mutex<Vec<(Request, MPI_Datatype)>> = Mutex::new(Vec::new());

/// Decimal precision and exponent range of each real kind here (IEEE
/// single and double). Wider requests are refused: Fortran's `real(16)` is
/// a quad, while MPICH's `MPI_REAL16` on this ABI is C's `long double`.
const REALS: [(c_int, c_int, MPI_Datatype, MPI_Datatype); 2] = [
    (6, 37, c::MPI_REAL4, c::MPI_COMPLEX8),
    (15, 307, c::MPI_REAL8, c::MPI_COMPLEX16),
];

/// Decimal exponent range of each integer kind.
const INTEGERS: [(c_int, MPI_Datatype); 4] = [
    (2, c::MPI_INTEGER1),
    (4, c::MPI_INTEGER2),
    (9, c::MPI_INTEGER4),
    (18, c::MPI_INTEGER8),
];

/// `MPI_UNDEFINED` leaves a bound free, as an omitted argument of
/// `SELECTED_REAL_KIND` does.
fn within(want: c_int, have: c_int) -> bool {
    want == c::MPI_UNDEFINED || want <= have
}

/// The named handle for a request, or why there is none.
fn choose(kind: F90Kind, p: c_int, r: c_int) -> MpiResult<MPI_Datatype> {
    let bad = |why: String| Err(MpiError::new(c::MPI_ERR_ARG, why));
    let free = |v: c_int| v == c::MPI_UNDEFINED;
    match kind {
        F90Kind::Real | F90Kind::Complex => {
            if free(p) && free(r) {
                return bad("p and r are both MPI_UNDEFINED".into());
            }
            if (!free(p) && p < 0) || (!free(r) && r < 0) {
                return bad(format!("invalid precision {p} or range {r}"));
            }
            REALS
                .iter()
                .find(|&&(dp, dr, ..)| within(p, dp) && within(r, dr))
                .map(|&(_, _, real, complex)| if kind == F90Kind::Real { real } else { complex })
                .map_or_else(
                    || {
                        bad(format!(
                            "no real kind has precision {p} and range {r} (at most 15 and 307)"
                        ))
                    },
                    Ok,
                )
        }
        F90Kind::Integer => {
            if free(r) || r < 0 {
                return bad(format!("invalid range {r}"));
            }
            INTEGERS.iter().find(|&&(dr, _)| r <= dr).map_or_else(
                || bad(format!("no integer kind has range {r} (at most 18)")),
                |&(_, h)| Ok(h),
            )
        }
    }
}

fn create(kind: F90Kind, p: c_int, r: c_int) -> MpiResult<MPI_Datatype> {
    let named = choose(kind, p, r)?;
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, h)) = made.iter().find(|(k, _)| *k == (kind, p, r)) {
        return Ok(h);
    }
    let base = predef::lookup(named)
        .ok_or_else(|| MpiError::internal("an F90 base type is not predefined"))?;
    let integers = match kind {
        F90Kind::Integer => vec![i64::from(r)],
        _ => vec![i64::from(p), i64::from(r)],
    };
    let dt = Datatype::f90(kind, integers, &base.dt);
    let h = insert_predefined(dt, Arc::new(Meta::default()))?;
    made.push(((kind, p, r), h));
    Ok(h)
}

mpi_fn! { MPI_Type_create_f90_real / PMPI_Type_create_f90_real (p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_create_f90_real", None, |_| {
        let h = create(F90Kind::Real, p, r)?;
        // SAFETY: the caller's output argument, checked inside.
        unsafe { put(newtype, h, "newtype") }
    })
}}

mpi_fn! { MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex (p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_create_f90_complex", None, |_| {
        let h = create(F90Kind::Complex, p, r)?;
        // SAFETY: the caller's output argument, checked inside.
        unsafe { put(newtype, h, "newtype") }
    })
}}

mpi_fn! { MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer (r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_create_f90_integer", None, |_| {
        let h = create(F90Kind::Integer, c::MPI_UNDEFINED, r)?;
        // SAFETY: the caller's output argument, checked inside.
        unsafe { put(newtype, h, "newtype") }
    })
}}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_precision_and_range() {
        assert_eq!(choose(F90Kind::Real, 6, 37).unwrap(), c::MPI_REAL4);
        assert_eq!(
            choose(F90Kind::Real, 7, c::MPI_UNDEFINED).unwrap(),
            c::MPI_REAL8
        );
        assert_eq!(
            choose(F90Kind::Real, c::MPI_UNDEFINED, 38).unwrap(),
            c::MPI_REAL8
        );
        assert_eq!(choose(F90Kind::Complex, 15, 307).unwrap(), c::MPI_COMPLEX16);
        assert!(choose(F90Kind::Real, 16, 10).is_err());
        assert!(choose(F90Kind::Real, c::MPI_UNDEFINED, c::MPI_UNDEFINED).is_err());
        assert_eq!(
            choose(F90Kind::Integer, c::MPI_UNDEFINED, 2).unwrap(),
            c::MPI_INTEGER1
        );
        assert_eq!(
            choose(F90Kind::Integer, c::MPI_UNDEFINED, 9).unwrap(),
            c::MPI_INTEGER4
        );
        assert_eq!(
            choose(F90Kind::Integer, c::MPI_UNDEFINED, 10).unwrap(),
            c::MPI_INTEGER8
        );
        assert!(choose(F90Kind::Integer, c::MPI_UNDEFINED, 19).is_err());
    }

    #[test]
    fn one_request_gives_one_handle_that_cannot_be_freed() {
        let a = create(F90Kind::Real, 12, 100).unwrap();
        assert_eq!(create(F90Kind::Real, 12, 100).unwrap(), a);
        assert_ne!(create(F90Kind::Real, 13, 100).unwrap(), a);
        assert_eq!(super::super::remove(a).unwrap_err().class, c::MPI_ERR_TYPE);
        let e = super::super::resolve(a).unwrap().envelope();
        assert_eq!(e.combiner, lanai_datatype::Combiner::F90Real);
        assert_eq!(
            (e.num_integers, e.num_addresses, e.num_datatypes),
            (2, 0, 0)
        );
        assert_eq!(super::super::resolve(a).unwrap().size(), 8);
    }
}
