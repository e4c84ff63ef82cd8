//! `MPI_Type_get_value_index` (MPI 4.1): the predefined pair type for a
//! (value, index) combination, as `MPI_MAXLOC`/`MPI_MINLOC` use.

use super::call;
use super::consts as c;
use super::consts::MPI_Datatype;
use crate::engine::error::MpiError;
use crate::mpi_fn;
use std::os::raw::c_int;

/// The pair type, or `MPI_DATATYPE_NULL` where the standard defines none.
fn pair_of(value: MPI_Datatype, index: MPI_Datatype) -> MPI_Datatype {
    match (value, index) {
        (c::MPI_FLOAT, c::MPI_INT) => c::MPI_FLOAT_INT,
        (c::MPI_DOUBLE, c::MPI_INT) => c::MPI_DOUBLE_INT,
        (c::MPI_LONG, c::MPI_INT) => c::MPI_LONG_INT,
        (c::MPI_SHORT, c::MPI_INT) => c::MPI_SHORT_INT,
        (c::MPI_INT, c::MPI_INT) => c::MPI_2INT,
        (c::MPI_LONG_DOUBLE, c::MPI_INT) => c::MPI_LONG_DOUBLE_INT,
        (c::MPI_REAL, c::MPI_REAL) => c::MPI_2REAL,
        (c::MPI_DOUBLE_PRECISION, c::MPI_DOUBLE_PRECISION) => c::MPI_2DOUBLE_PRECISION,
        (c::MPI_INTEGER, c::MPI_INTEGER) => c::MPI_2INTEGER,
        _ => c::MPI_DATATYPE_NULL,
    }
}

mpi_fn! { MPI_Type_get_value_index / PMPI_Type_get_value_index (value_type: MPI_Datatype, index_type: MPI_Datatype, pair_type: *mut MPI_Datatype) -> c_int {
    call("MPI_Type_get_value_index", None, |_| {
        if pair_type.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "pair_type is NULL"));
        }
        // SAFETY: checked non-null; the caller's output argument.
        unsafe { *pair_type = pair_of(value_type, index_type) };
        Ok(())
    })
}}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs() {
        assert_eq!(pair_of(c::MPI_DOUBLE, c::MPI_INT), c::MPI_DOUBLE_INT);
        assert_eq!(pair_of(c::MPI_INT, c::MPI_INT), c::MPI_2INT);
        assert_eq!(pair_of(c::MPI_INT, c::MPI_DOUBLE), c::MPI_DATATYPE_NULL);
    }
}
