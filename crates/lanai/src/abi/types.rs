//! Predefined datatypes and reduction operations: sizes, and what the
//! reduction code calls each one.

use super::consts as c;
use super::consts::{MPI_Datatype, MPI_Op};
use super::datatype;
use crate::engine::error::MpiError;
use lanai_coll::{Elem, Op};

/// A predefined datatype's size in bytes and element kind for reductions
/// (`None` where no reduction applies, e.g. `MPI_PACKED`, `long double`).
///
/// Every call with a buffer asks this, so it is a table lookup by the
/// handle's low byte, which MPICH's handles keep unique per kind.
pub fn predefined(t: MPI_Datatype) -> Option<(usize, Option<Elem>)> {
    let table = match t as u32 >> 16 {
        0x4c00 => &BUILTINS,
        0x8c00 => &PAIRS,
        _ => return None,
    };
    let e = table[(t as u32 & 0xff) as usize];
    (e.handle == t).then_some((e.size, e.elem))
}

/// A table entry; handle 0 (no predefined type's) marks an empty one.
#[derive(Clone, Copy)]
struct Known {
    handle: MPI_Datatype,
    size: usize,
    elem: Option<Elem>,
}

const UNKNOWN: Known = Known {
    handle: 0,
    size: 0,
    elem: None,
};

/// [`classify`] of every handle of `kind` (the top 16 bits) whose size
/// byte is one a predefined type has, by low byte.
const fn table(kind: u32) -> [Known; 256] {
    let mut t = [UNKNOWN; 256];
    let sizes: [u32; 8] = [0, 1, 2, 4, 8, 12, 16, 32];
    let mut s = 0;
    while s < sizes.len() {
        let mut i = 0;
        while i < 256 {
            let h = ((kind << 16) | (sizes[s] << 8) | i) as MPI_Datatype;
            if let Some((size, elem)) = classify(h) {
                assert!(
                    t[i as usize].handle == 0,
                    "two predefined handles share a low byte"
                );
                t[i as usize] = Known {
                    handle: h,
                    size,
                    elem,
                };
            }
            i += 1;
        }
        s += 1;
    }
    t
}

static BUILTINS: [Known; 256] = table(0x4c00);
static PAIRS: [Known; 256] = table(0x8c00);

/// The definition behind [`predefined`]'s tables.
const fn classify(t: MPI_Datatype) -> Option<(usize, Option<Elem>)> {
    use Elem::*;
    let e = match t {
        c::MPI_CHAR | c::MPI_SIGNED_CHAR | c::MPI_INT8_T | c::MPI_CHARACTER | c::MPI_INTEGER1 => {
            Some(I8)
        }
        c::MPI_UNSIGNED_CHAR | c::MPI_UINT8_T | c::MPI_BYTE => Some(U8),
        c::MPI_SHORT | c::MPI_INT16_T | c::MPI_INTEGER2 => Some(I16),
        c::MPI_UNSIGNED_SHORT | c::MPI_UINT16_T => Some(U16),
        c::MPI_INT
        | c::MPI_INT32_T
        | c::MPI_WCHAR
        | c::MPI_INTEGER
        | c::MPI_INTEGER4
        | c::MPI_LOGICAL => Some(I32),
        c::MPI_UNSIGNED | c::MPI_UINT32_T => Some(U32),
        c::MPI_LONG
        | c::MPI_LONG_LONG_INT
        | c::MPI_INT64_T
        | c::MPI_INTEGER8
        | c::MPI_AINT
        | c::MPI_OFFSET
        | c::MPI_COUNT => Some(I64),
        c::MPI_UNSIGNED_LONG | c::MPI_UNSIGNED_LONG_LONG | c::MPI_UINT64_T => Some(U64),
        c::MPI_FLOAT | c::MPI_REAL | c::MPI_REAL4 => Some(F32),
        c::MPI_DOUBLE | c::MPI_DOUBLE_PRECISION | c::MPI_REAL8 => Some(F64),
        c::MPI_C_BOOL | c::MPI_CXX_BOOL => Some(Bool),
        c::MPI_C_FLOAT_COMPLEX | c::MPI_COMPLEX | c::MPI_COMPLEX8 | c::MPI_CXX_FLOAT_COMPLEX => {
            Some(C32)
        }
        c::MPI_C_DOUBLE_COMPLEX
        | c::MPI_DOUBLE_COMPLEX
        | c::MPI_COMPLEX16
        | c::MPI_CXX_DOUBLE_COMPLEX => Some(C64),
        c::MPI_2INT | c::MPI_2INTEGER => Some(TwoInt),
        c::MPI_2REAL => Some(TwoF32),
        c::MPI_2DOUBLE_PRECISION => Some(TwoF64),
        c::MPI_FLOAT_INT => Some(FloatInt),
        c::MPI_DOUBLE_INT => Some(DoubleInt),
        c::MPI_LONG_INT => Some(LongInt),
        c::MPI_SHORT_INT => Some(ShortInt),
        c::MPI_PACKED
        | c::MPI_LONG_DOUBLE
        | c::MPI_REAL16
        | c::MPI_COMPLEX32
        | c::MPI_C_LONG_DOUBLE_COMPLEX
        | c::MPI_CXX_LONG_DOUBLE_COMPLEX => None,
        c::MPI_LONG_DOUBLE_INT => return Some((32, None)),
        _ => return None,
    };
    // Builtin handles carry their size in bits 8..16; the pair types do not.
    let size = match e {
        Some(el) if (t as u32) >> 24 == 0x8c => el.size(),
        _ => ((t as u32 >> 8) & 0xff) as usize,
    };
    Some((size, e))
}

/// Size of a datatype, or `MPI_ERR_TYPE`. A derived type is accepted
/// where its bytes can be used as they are (gap-free, lower bound 0);
/// other derived types need the staging in `datatype::staging`.
pub fn type_size(t: MPI_Datatype) -> Result<usize, MpiError> {
    match predefined(t) {
        Some((s, _)) => Ok(s),
        None if datatype::is_derived(t) => datatype::direct_size(t),
        None => Err(bad_type(t)),
    }
}

fn bad_type(t: MPI_Datatype) -> MpiError {
    if t == c::MPI_DATATYPE_NULL {
        MpiError::new(c::MPI_ERR_TYPE, "invalid datatype MPI_DATATYPE_NULL")
    } else {
        MpiError::new(
            c::MPI_ERR_TYPE,
            format!("invalid or unsupported datatype 0x{:08x}", t as u32),
        )
    }
}

/// The element kind a reduction on `t` uses. A gap-free derived type made
/// of one basic kind reduces as that kind.
pub fn reduce_elem(t: MPI_Datatype) -> Result<Elem, MpiError> {
    if let Some((_, Some(e))) = predefined(t) {
        return Ok(e);
    }
    if datatype::is_derived(t) {
        datatype::direct_size(t)?;
        return match datatype::resolve(t)?.uniform_primitive() {
            Some(p) => reduce_elem(datatype::predef::handle_of_primitive(p)),
            None => Err(MpiError::new(
                c::MPI_ERR_TYPE,
                "reductions on derived datatypes that mix basic types are not supported",
            )),
        };
    }
    match predefined(t) {
        Some((_, Some(e))) => Ok(e),
        Some((_, None)) => Err(MpiError::new(
            c::MPI_ERR_TYPE,
            format!(
                "reductions on datatype 0x{:08x} are not supported",
                t as u32
            ),
        )),
        None => Err(bad_type(t)),
    }
}

/// A predefined reduction operation.
pub fn op(o: MPI_Op) -> Result<Op, MpiError> {
    op_kind(o).ok_or_else(|| {
        MpiError::new(
            c::MPI_ERR_OP,
            format!("invalid reduction operation 0x{:08x}", o as u32),
        )
    })
}

/// The predefined operation `o` names, if it names one.
pub fn op_kind(o: MPI_Op) -> Option<Op> {
    Some(match o {
        c::MPI_MAX => Op::Max,
        c::MPI_MIN => Op::Min,
        c::MPI_SUM => Op::Sum,
        c::MPI_PROD => Op::Prod,
        c::MPI_LAND => Op::Land,
        c::MPI_BAND => Op::Band,
        c::MPI_LOR => Op::Lor,
        c::MPI_BOR => Op::Bor,
        c::MPI_LXOR => Op::Lxor,
        c::MPI_BXOR => Op::Bxor,
        c::MPI_MAXLOC => Op::Maxloc,
        c::MPI_MINLOC => Op::Minloc,
        c::MPI_REPLACE => Op::Replace,
        c::MPI_NO_OP => Op::NoOp,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_agree_with_the_definition() {
        let kinds = (0..=0xffffu32).map(|i| 0x4c00_0000 | i);
        let pairs = (0..=0xffu32).map(|i| 0x8c00_0000 | i);
        for h in kinds.chain(pairs).map(|h| h as MPI_Datatype) {
            assert_eq!(predefined(h), classify(h), "handle 0x{:08x}", h as u32);
        }
        assert_eq!(predefined(c::MPI_DOUBLE), Some((8, Some(Elem::F64))));
        assert_eq!(predefined(c::MPI_DATATYPE_NULL), None);
    }

    #[test]
    fn sizes_follow_the_abi() {
        assert_eq!(type_size(c::MPI_INT).unwrap(), 4);
        assert_eq!(type_size(c::MPI_DOUBLE).unwrap(), 8);
        assert_eq!(type_size(c::MPI_LONG_DOUBLE).unwrap(), 16);
        assert_eq!(type_size(c::MPI_2INT).unwrap(), 8);
        assert_eq!(type_size(c::MPI_DOUBLE_INT).unwrap(), 16);
        assert_eq!(type_size(c::MPI_SHORT_INT).unwrap(), 8);
        assert_eq!(type_size(c::MPI_C_DOUBLE_COMPLEX).unwrap(), 16);
        assert!(type_size(c::MPI_DATATYPE_NULL).is_err());
    }

    #[test]
    fn elem_sizes_match_type_sizes() {
        for t in [
            c::MPI_CHAR,
            c::MPI_SHORT,
            c::MPI_INT,
            c::MPI_LONG,
            c::MPI_FLOAT,
            c::MPI_DOUBLE,
            c::MPI_2INT,
            c::MPI_FLOAT_INT,
            c::MPI_C_BOOL,
        ] {
            let (s, e) = predefined(t).unwrap();
            assert_eq!(s, e.unwrap().size(), "type 0x{:08x}", t as u32);
        }
    }
}
