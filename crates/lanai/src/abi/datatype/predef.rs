//! Predefined datatype handles: their MPI names and the `lanai_datatype`
//! value each one stands for, so they can be building blocks.

use crate::abi::consts as c;
use crate::abi::consts::MPI_Datatype;
use lanai_datatype::{Datatype, Named, Primitive};
use std::sync::OnceLock;

/// What a predefined handle is made of.
#[derive(Clone, Copy)]
enum Kind {
    Named(Named),
    /// Two of a basic kind (`MPI_2REAL`, `MPI_2DOUBLE_PRECISION`): no
    /// `Named` exists for them, so they are a contiguous pair inside.
    Pair(Primitive),
}

const fn b(p: Primitive) -> Kind {
    Kind::Named(Named::Basic(p))
}

/// Every predefined handle Lanai knows, with its MPI name.
const TABLE: &[(MPI_Datatype, &str, Kind)] = {
    use Primitive as P;
    &[
        (c::MPI_CHAR, "MPI_CHAR", b(P::Int8)),
        (c::MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", b(P::Int8)),
        (c::MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", b(P::Uint8)),
        (c::MPI_BYTE, "MPI_BYTE", b(P::Byte)),
        (c::MPI_PACKED, "MPI_PACKED", b(P::Packed)),
        (c::MPI_WCHAR, "MPI_WCHAR", b(P::Wchar)),
        (c::MPI_SHORT, "MPI_SHORT", b(P::Int16)),
        (c::MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", b(P::Uint16)),
        (c::MPI_INT, "MPI_INT", b(P::Int32)),
        (c::MPI_UNSIGNED, "MPI_UNSIGNED", b(P::Uint32)),
        (c::MPI_LONG, "MPI_LONG", b(P::Long)),
        (
            c::MPI_UNSIGNED_LONG,
            "MPI_UNSIGNED_LONG",
            b(P::UnsignedLong),
        ),
        (c::MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", b(P::Int64)),
        (
            c::MPI_UNSIGNED_LONG_LONG,
            "MPI_UNSIGNED_LONG_LONG",
            b(P::Uint64),
        ),
        (c::MPI_FLOAT, "MPI_FLOAT", b(P::Float32)),
        (c::MPI_DOUBLE, "MPI_DOUBLE", b(P::Float64)),
        (c::MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", b(P::LongDouble)),
        (c::MPI_INT8_T, "MPI_INT8_T", b(P::Int8)),
        (c::MPI_INT16_T, "MPI_INT16_T", b(P::Int16)),
        (c::MPI_INT32_T, "MPI_INT32_T", b(P::Int32)),
        (c::MPI_INT64_T, "MPI_INT64_T", b(P::Int64)),
        (c::MPI_UINT8_T, "MPI_UINT8_T", b(P::Uint8)),
        (c::MPI_UINT16_T, "MPI_UINT16_T", b(P::Uint16)),
        (c::MPI_UINT32_T, "MPI_UINT32_T", b(P::Uint32)),
        (c::MPI_UINT64_T, "MPI_UINT64_T", b(P::Uint64)),
        (c::MPI_C_BOOL, "MPI_C_BOOL", b(P::Bool)),
        (
            c::MPI_C_FLOAT_COMPLEX,
            "MPI_C_FLOAT_COMPLEX",
            b(P::ComplexFloat32),
        ),
        (
            c::MPI_C_DOUBLE_COMPLEX,
            "MPI_C_DOUBLE_COMPLEX",
            b(P::ComplexFloat64),
        ),
        (
            c::MPI_C_LONG_DOUBLE_COMPLEX,
            "MPI_C_LONG_DOUBLE_COMPLEX",
            b(P::ComplexLongDouble),
        ),
        (c::MPI_AINT, "MPI_AINT", b(P::Int64)),
        (c::MPI_OFFSET, "MPI_OFFSET", b(P::Int64)),
        (c::MPI_COUNT, "MPI_COUNT", b(P::Int64)),
        (c::MPI_CXX_BOOL, "MPI_CXX_BOOL", b(P::Bool)),
        (
            c::MPI_CXX_FLOAT_COMPLEX,
            "MPI_CXX_FLOAT_COMPLEX",
            b(P::ComplexFloat32),
        ),
        (
            c::MPI_CXX_DOUBLE_COMPLEX,
            "MPI_CXX_DOUBLE_COMPLEX",
            b(P::ComplexFloat64),
        ),
        (
            c::MPI_CXX_LONG_DOUBLE_COMPLEX,
            "MPI_CXX_LONG_DOUBLE_COMPLEX",
            b(P::ComplexLongDouble),
        ),
        (c::MPI_CHARACTER, "MPI_CHARACTER", b(P::Int8)),
        (c::MPI_INTEGER, "MPI_INTEGER", b(P::Int32)),
        (c::MPI_INTEGER1, "MPI_INTEGER1", b(P::Int8)),
        (c::MPI_INTEGER2, "MPI_INTEGER2", b(P::Int16)),
        (c::MPI_INTEGER4, "MPI_INTEGER4", b(P::Int32)),
        (c::MPI_INTEGER8, "MPI_INTEGER8", b(P::Int64)),
        (c::MPI_LOGICAL, "MPI_LOGICAL", b(P::Int32)),
        (c::MPI_REAL, "MPI_REAL", b(P::Float32)),
        (c::MPI_REAL4, "MPI_REAL4", b(P::Float32)),
        (c::MPI_REAL8, "MPI_REAL8", b(P::Float64)),
        (c::MPI_REAL16, "MPI_REAL16", b(P::LongDouble)),
        (
            c::MPI_DOUBLE_PRECISION,
            "MPI_DOUBLE_PRECISION",
            b(P::Float64),
        ),
        (c::MPI_COMPLEX, "MPI_COMPLEX", b(P::ComplexFloat32)),
        (c::MPI_COMPLEX8, "MPI_COMPLEX8", b(P::ComplexFloat32)),
        (c::MPI_COMPLEX16, "MPI_COMPLEX16", b(P::ComplexFloat64)),
        (c::MPI_COMPLEX32, "MPI_COMPLEX32", b(P::ComplexLongDouble)),
        (
            c::MPI_DOUBLE_COMPLEX,
            "MPI_DOUBLE_COMPLEX",
            b(P::ComplexFloat64),
        ),
        (c::MPI_2INT, "MPI_2INT", Kind::Named(Named::TwoInt)),
        (c::MPI_2INTEGER, "MPI_2INTEGER", Kind::Named(Named::TwoInt)),
        (c::MPI_2REAL, "MPI_2REAL", Kind::Pair(P::Float32)),
        (
            c::MPI_2DOUBLE_PRECISION,
            "MPI_2DOUBLE_PRECISION",
            Kind::Pair(P::Float64),
        ),
        (
            c::MPI_FLOAT_INT,
            "MPI_FLOAT_INT",
            Kind::Named(Named::FloatInt),
        ),
        (
            c::MPI_DOUBLE_INT,
            "MPI_DOUBLE_INT",
            Kind::Named(Named::DoubleInt),
        ),
        (c::MPI_LONG_INT, "MPI_LONG_INT", Kind::Named(Named::LongInt)),
        (
            c::MPI_SHORT_INT,
            "MPI_SHORT_INT",
            Kind::Named(Named::ShortInt),
        ),
        (
            c::MPI_LONG_DOUBLE_INT,
            "MPI_LONG_DOUBLE_INT",
            Kind::Named(Named::LongDoubleInt),
        ),
    ]
};

/// A predefined handle's name and value.
pub struct Predef {
    pub name: &'static str,
    pub dt: Datatype,
}

/// Every predefined type, and where each handle is in that list.
struct Map {
    list: Vec<(MPI_Datatype, Predef)>,
    /// Position in `list` by [`slot`]; `NONE` where no handle has the slot.
    at: [u8; 256],
}

const NONE: u8 = u8::MAX;

/// A slot unique to each predefined handle: MPICH's builtin datatype
/// handles (`0x4c00SSII`, size `SS`) differ in their low byte `II`, and the
/// five pair types (`0x8c00000I`) sit above those. Every send and every
/// collective looks its datatype up, so this is one index, not a search.
fn slot(h: MPI_Datatype) -> Option<usize> {
    let h = h as u32;
    match h & 0xffff_0000 {
        0x4c00_0000 if h & 0xff < 0x80 => Some((h & 0xff) as usize),
        0x8c00_0000 if h & 0xffff < 0x80 => Some(0x80 + (h & 0xff) as usize),
        _ => None,
    }
}

fn map() -> &'static Map {
    static MAP: OnceLock<Map> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut list: Vec<(MPI_Datatype, Predef)> = Vec::new();
        for &(h, name, kind) in TABLE {
            let dt = match kind {
                Kind::Named(n) => Datatype::named(n),
                Kind::Pair(p) => match Datatype::contiguous(2, &Datatype::primitive(p)) {
                    Ok(d) => d,
                    Err(_) => continue,
                },
            };
            // Aliases (e.g. MPI_LONG_LONG) keep the first name listed.
            if !list.iter().any(|(x, _)| *x == h) {
                list.push((h, Predef { name, dt }));
            }
        }
        let mut at = [NONE; 256];
        for (i, (h, _)) in list.iter().enumerate() {
            match slot(*h) {
                Some(s) if at[s] == NONE && i < NONE as usize => at[s] = i as u8,
                _ => panic!(
                    "predefined datatype 0x{:08x} has no slot of its own",
                    *h as u32
                ),
            }
        }
        Map { list, at }
    })
}

/// The predefined type behind `h`, if `h` is one.
pub fn lookup(h: MPI_Datatype) -> Option<&'static Predef> {
    let m = map();
    let i = m.at[slot(h)?];
    m.list
        .get(i as usize)
        .filter(|(x, _)| *x == h)
        .map(|(_, p)| p)
}

/// The canonical predefined handle for a basic kind: what a derived type
/// made of one basic kind is reduced as.
pub fn handle_of_primitive(p: Primitive) -> MPI_Datatype {
    use Primitive as P;
    match p {
        P::Int8 => c::MPI_INT8_T,
        P::Int16 => c::MPI_INT16_T,
        P::Int32 => c::MPI_INT32_T,
        P::Int64 => c::MPI_INT64_T,
        P::Uint8 => c::MPI_UINT8_T,
        P::Uint16 => c::MPI_UINT16_T,
        P::Uint32 => c::MPI_UINT32_T,
        P::Uint64 => c::MPI_UINT64_T,
        P::Float32 => c::MPI_FLOAT,
        P::Float64 => c::MPI_DOUBLE,
        P::LongDouble => c::MPI_LONG_DOUBLE,
        P::Bool => c::MPI_C_BOOL,
        P::Long => c::MPI_LONG,
        P::UnsignedLong => c::MPI_UNSIGNED_LONG,
        P::Wchar => c::MPI_WCHAR,
        P::ComplexFloat32 => c::MPI_C_FLOAT_COMPLEX,
        P::ComplexFloat64 => c::MPI_C_DOUBLE_COMPLEX,
        P::ComplexLongDouble => c::MPI_C_LONG_DOUBLE_COMPLEX,
        P::Byte => c::MPI_BYTE,
        P::Packed => c::MPI_PACKED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_agree_with_the_handle_encoding() {
        for &(h, name, _) in TABLE {
            let p = lookup(h).expect(name);
            if (h as u32) >> 24 == 0x4c {
                let enc = u64::from((h as u32 >> 8) & 0xff);
                assert_eq!(p.dt.size(), enc, "{name}");
            }
        }
        assert_eq!(lookup(c::MPI_DOUBLE_INT).unwrap().dt.extent(), 16);
        assert_eq!(lookup(c::MPI_SHORT_INT).unwrap().dt.size(), 6);
        assert_eq!(lookup(c::MPI_LONG_LONG).unwrap().name, "MPI_LONG_LONG_INT");
    }

    #[test]
    fn only_predefined_handles_are_found() {
        // Same slot as MPI_DOUBLE, other size byte; derived and null handles.
        for h in [
            c::MPI_DOUBLE ^ 0x100,
            c::MPI_DATATYPE_NULL,
            0x8c00_0005_u32 as MPI_Datatype,
            0x8c00_0100_u32 as MPI_Datatype,
            0x8c00_0001_u32 as MPI_Datatype ^ 0x0100_0000,
        ] {
            assert!(lookup(h).is_none(), "0x{:08x}", h as u32);
        }
    }

    #[test]
    fn canonical_handles_are_predefined() {
        for p in Primitive::ALL {
            let h = handle_of_primitive(p);
            assert_eq!(lookup(h).unwrap().dt.uniform_primitive(), Some(p));
        }
    }
}
