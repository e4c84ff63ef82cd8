//! Predefined (named) datatypes: basic kinds and the MINLOC/MAXLOC pairs.

use std::ffi::c_long;

/// A basic datatype kind: the unit of type signatures and of external32
/// conversion. The ABI layer maps each MPI named type onto one of these
/// (`MPI_INT` -> `Int32`, `MPI_CHAR` -> `Int8`, `MPI_LONG` -> `Long`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Float32,
    Float64,
    /// C `long double` (x87 80-bit in 16 bytes on x86-64).
    LongDouble,
    /// C `_Bool` / C++ `bool`.
    Bool,
    /// C `long`: kept apart from `Int64` because external32 gives it 4 bytes.
    Long,
    /// C `unsigned long`: external32 gives it 4 bytes.
    UnsignedLong,
    /// `wchar_t` (`MPI_WCHAR`): external32 gives it 2 bytes.
    Wchar,
    ComplexFloat32,
    ComplexFloat64,
    ComplexLongDouble,
    Byte,
    Packed,
}

impl Primitive {
    /// Every kind, for tests and tables.
    pub const ALL: [Primitive; 20] = [
        Self::Int8,
        Self::Int16,
        Self::Int32,
        Self::Int64,
        Self::Uint8,
        Self::Uint16,
        Self::Uint32,
        Self::Uint64,
        Self::Float32,
        Self::Float64,
        Self::LongDouble,
        Self::Bool,
        Self::Long,
        Self::UnsignedLong,
        Self::Wchar,
        Self::ComplexFloat32,
        Self::ComplexFloat64,
        Self::ComplexLongDouble,
        Self::Byte,
        Self::Packed,
    ];

    /// Native size in bytes.
    pub const fn size(self) -> u64 {
        match self {
            Self::Int8 | Self::Uint8 | Self::Bool | Self::Byte | Self::Packed => 1,
            Self::Int16 | Self::Uint16 => 2,
            Self::Int32 | Self::Uint32 | Self::Float32 | Self::Wchar => 4,
            Self::Int64 | Self::Uint64 | Self::Float64 | Self::ComplexFloat32 => 8,
            Self::Long | Self::UnsignedLong => std::mem::size_of::<c_long>() as u64,
            Self::LongDouble | Self::ComplexFloat64 => 16,
            Self::ComplexLongDouble => 32,
        }
    }

    /// Native alignment in bytes (what a C compiler pads a struct member to).
    pub const fn align(self) -> u64 {
        match self {
            Self::ComplexFloat32 => 4,
            Self::ComplexFloat64 => 8,
            Self::ComplexLongDouble => 16,
            other => other.size(),
        }
    }

    /// Size in the external32 representation (MPI standard, external32 table).
    pub const fn external32_size(self) -> u64 {
        match self {
            Self::Long | Self::UnsignedLong => 4,
            Self::Wchar => 2,
            other => other.size(),
        }
    }
}

/// A predefined datatype: a basic kind or one of the MINLOC/MAXLOC pair types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Named {
    Basic(Primitive),
    /// `MPI_FLOAT_INT`: float then int.
    FloatInt,
    /// `MPI_DOUBLE_INT`: double then int.
    DoubleInt,
    /// `MPI_LONG_INT`: long then int.
    LongInt,
    /// `MPI_2INT`: two ints.
    TwoInt,
    /// `MPI_SHORT_INT`: short then int.
    ShortInt,
    /// `MPI_LONG_DOUBLE_INT`: long double then int.
    LongDoubleInt,
}

fn round_up(v: u64, align: u64) -> u64 {
    v.div_ceil(align) * align
}

impl Named {
    /// The basic members as (kind, byte offset), laid out as the C struct
    /// `{ T value; int index; }` would be.
    pub fn members(self) -> Vec<(Primitive, u64)> {
        let first = match self {
            Self::Basic(p) => return vec![(p, 0)],
            Self::FloatInt => Primitive::Float32,
            Self::DoubleInt => Primitive::Float64,
            Self::LongInt => Primitive::Long,
            Self::TwoInt => Primitive::Int32,
            Self::ShortInt => Primitive::Int16,
            Self::LongDoubleInt => Primitive::LongDouble,
        };
        let int_off = round_up(first.size(), Primitive::Int32.align());
        vec![(first, 0), (Primitive::Int32, int_off)]
    }

    /// Extent, including the trailing padding a C compiler adds.
    pub fn extent(self) -> u64 {
        let members = self.members();
        let align = self.align();
        let end = members
            .iter()
            .map(|(p, off)| off + p.size())
            .max()
            .unwrap_or(0);
        round_up(end, align)
    }

    /// Alignment of the most-aligned member.
    pub fn align(self) -> u64 {
        self.members()
            .iter()
            .map(|(p, _)| p.align())
            .max()
            .unwrap_or(1)
    }
}

impl From<Primitive> for Named {
    fn from(p: Primitive) -> Self {
        Named::Basic(p)
    }
}
