//! The external32 representation (`MPI_Pack_external` and friends): every
//! basic element big-endian, byte-aligned, at the size the MPI standard's
//! external32 table gives (`long` 4, `wchar` 2, `long double` 16 as IEEE
//! binary128, ...). Pair types are their members, back to back.
//!
//! Done in two steps: a native pack into scratch, then an element-wise
//! transcode along the type signature (and the reverse for unpack).

use crate::datatype::Datatype;
use crate::error::{to_u64, DatatypeError};
use crate::pack::{pack_partial, unpack_partial};
use crate::primitive::Primitive;

/// `MPI_Pack_external_size` for "external32".
pub fn pack_external_size(dt: &Datatype, count: u64) -> Result<u64, DatatypeError> {
    to_u64(dt.external32_size() as u128 * count as u128)
}

fn room_check(need: u64, len: usize, position: usize) -> Result<(), DatatypeError> {
    let room = len.saturating_sub(position) as u64;
    if position > len || need > room {
        return Err(DatatypeError::PackedBufferTooSmall {
            needed: need,
            available: room,
        });
    }
    Ok(())
}

fn scratch(len: u64) -> Result<Vec<u8>, DatatypeError> {
    let len = usize::try_from(len).map_err(|_| DatatypeError::Overflow)?;
    Ok(vec![0u8; len])
}

/// `MPI_Pack_external("external32", ...)`: appends `count` instances from
/// the user buffer (origin at index `origin`) to `dst` at `*position`.
pub fn pack_external(
    dt: &Datatype,
    count: u64,
    src: &[u8],
    origin: usize,
    dst: &mut [u8],
    position: &mut usize,
) -> Result<(), DatatypeError> {
    let need = pack_external_size(dt, count)?;
    room_check(need, dst.len(), *position)?;
    let mut native = scratch(to_u64(dt.size() as u128 * count as u128)?)?;
    pack_partial(dt, count, src, origin, 0, &mut native)?;
    let out = &mut dst[*position..];
    let (mut i, mut j) = (0usize, 0usize);
    dt.for_each_signature_run(count, &mut |p, n| {
        let (ns, es) = (p.size() as usize, p.external32_size() as usize);
        for _ in 0..n {
            to_external(p, &native[i..i + ns], &mut out[j..j + es])?;
            i += ns;
            j += es;
        }
        Ok(())
    })?;
    *position += j;
    Ok(())
}

/// `MPI_Unpack_external("external32", ...)`: reads `count` instances from
/// `src` at `*position` into the user buffer (origin at index `origin`).
pub fn unpack_external(
    dt: &Datatype,
    count: u64,
    src: &[u8],
    position: &mut usize,
    dst: &mut [u8],
    origin: usize,
) -> Result<(), DatatypeError> {
    let need = pack_external_size(dt, count)?;
    room_check(need, src.len(), *position)?;
    let native_len = to_u64(dt.size() as u128 * count as u128)?;
    let mut native = scratch(native_len)?;
    let input = &src[*position..];
    let (mut i, mut j) = (0usize, 0usize);
    dt.for_each_signature_run(count, &mut |p, n| {
        let (ns, es) = (p.size() as usize, p.external32_size() as usize);
        for _ in 0..n {
            from_external(p, &input[j..j + es], &mut native[i..i + ns]);
            i += ns;
            j += es;
        }
        Ok(())
    })?;
    unpack_partial(dt, count, &native, 0, dst, origin)?;
    *position += j;
    Ok(())
}

/// Copies a native-endian scalar into big-endian order (or back: the
/// operation is its own inverse).
fn swap_to_be(src: &[u8], dst: &mut [u8]) {
    if cfg!(target_endian = "little") {
        for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
            *d = *s;
        }
    } else {
        dst.copy_from_slice(src);
    }
}

fn to_external(p: Primitive, native: &[u8], out: &mut [u8]) -> Result<(), DatatypeError> {
    use Primitive as P;
    match p {
        P::Int8 | P::Uint8 | P::Bool | P::Byte | P::Packed => out.copy_from_slice(native),
        P::Int16 | P::Uint16 | P::Int32 | P::Uint32 | P::Int64 | P::Uint64 => {
            swap_to_be(native, out)
        }
        P::Float32 | P::Float64 => swap_to_be(native, out),
        P::ComplexFloat32 | P::ComplexFloat64 => {
            let h = native.len() / 2;
            swap_to_be(&native[..h], &mut out[..h]);
            swap_to_be(&native[h..], &mut out[h..]);
        }
        P::LongDouble => long_double::to_binary128_be(native, out),
        P::ComplexLongDouble => {
            long_double::to_binary128_be(&native[..16], &mut out[..16]);
            long_double::to_binary128_be(&native[16..], &mut out[16..]);
        }
        P::Long | P::UnsignedLong if native.len() == out.len() => swap_to_be(native, out),
        P::Long => {
            let v = i64::from_ne_bytes(eight(native));
            let v =
                i32::try_from(v).map_err(|_| DatatypeError::ConversionOverflow { what: "long" })?;
            out.copy_from_slice(&v.to_be_bytes());
        }
        P::UnsignedLong => {
            let v = u64::from_ne_bytes(eight(native));
            let v = u32::try_from(v).map_err(|_| DatatypeError::ConversionOverflow {
                what: "unsigned long",
            })?;
            out.copy_from_slice(&v.to_be_bytes());
        }
        P::Wchar => {
            let v = u32::from_ne_bytes([native[0], native[1], native[2], native[3]]);
            let v = u16::try_from(v)
                .map_err(|_| DatatypeError::ConversionOverflow { what: "wchar" })?;
            out.copy_from_slice(&v.to_be_bytes());
        }
    }
    Ok(())
}

fn from_external(p: Primitive, ext: &[u8], native: &mut [u8]) {
    use Primitive as P;
    match p {
        P::Int8 | P::Uint8 | P::Bool | P::Byte | P::Packed => native.copy_from_slice(ext),
        P::Int16 | P::Uint16 | P::Int32 | P::Uint32 | P::Int64 | P::Uint64 => {
            swap_to_be(ext, native)
        }
        P::Float32 | P::Float64 => swap_to_be(ext, native),
        P::ComplexFloat32 | P::ComplexFloat64 => {
            let h = ext.len() / 2;
            swap_to_be(&ext[..h], &mut native[..h]);
            swap_to_be(&ext[h..], &mut native[h..]);
        }
        P::LongDouble => long_double::from_binary128_be(ext, native),
        P::ComplexLongDouble => {
            long_double::from_binary128_be(&ext[..16], &mut native[..16]);
            long_double::from_binary128_be(&ext[16..], &mut native[16..]);
        }
        P::Long | P::UnsignedLong if native.len() == ext.len() => swap_to_be(ext, native),
        P::Long => {
            let v = i32::from_be_bytes([ext[0], ext[1], ext[2], ext[3]]) as i64;
            native.copy_from_slice(&v.to_ne_bytes());
        }
        P::UnsignedLong => {
            let v = u32::from_be_bytes([ext[0], ext[1], ext[2], ext[3]]) as u64;
            native.copy_from_slice(&v.to_ne_bytes());
        }
        P::Wchar => {
            let v = u16::from_be_bytes([ext[0], ext[1]]) as u32;
            native.copy_from_slice(&v.to_ne_bytes());
        }
    }
}

fn eight(b: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}

/// `long double` <-> IEEE binary128. On x86 the native format is the x87
/// 80-bit extended format (64-bit significand with an explicit integer
/// bit, same exponent bias as binary128) stored in 16 bytes; elsewhere we
/// assume the native format already is binary128.
mod long_double {
    const FRACTION_SHIFT: u32 = 112 - 63;

    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub(super) fn to_binary128_be(native: &[u8], out: &mut [u8]) {
        let mut m = [0u8; 8];
        m.copy_from_slice(&native[..8]);
        let mantissa = u64::from_le_bytes(m);
        let sign_exp = u16::from_le_bytes([native[8], native[9]]) as u128;
        // The integer bit is implicit in binary128; the other 63 bits are
        // the top of its 112-bit fraction.
        let fraction = ((mantissa & !(1u64 << 63)) as u128) << FRACTION_SHIFT;
        let bits = (sign_exp << 112) | fraction;
        out.copy_from_slice(&bits.to_be_bytes());
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub(super) fn from_binary128_be(ext: &[u8], native: &mut [u8]) {
        let mut b = [0u8; 16];
        b.copy_from_slice(&ext[..16]);
        let bits = u128::from_be_bytes(b);
        let sign_exp = (bits >> 112) as u16;
        let exponent = sign_exp & 0x7fff;
        // Truncates the 49 fraction bits x87 cannot hold.
        let mut mantissa = ((bits >> FRACTION_SHIFT) as u64) & !(1u64 << 63);
        if exponent != 0 {
            mantissa |= 1u64 << 63;
        }
        native[..8].copy_from_slice(&mantissa.to_le_bytes());
        native[8..10].copy_from_slice(&sign_exp.to_le_bytes());
        native[10..16].fill(0);
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    pub(super) fn to_binary128_be(native: &[u8], out: &mut [u8]) {
        let _ = FRACTION_SHIFT;
        super::swap_to_be(native, out)
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    pub(super) fn from_binary128_be(ext: &[u8], native: &mut [u8]) {
        super::swap_to_be(ext, native)
    }
}
