//! Native pack and unpack (`MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size`),
//! whole-message and resumable from any packed-stream position.

use std::ops::ControlFlow;

use crate::datatype::Datatype;
use crate::error::DatatypeError;
use crate::segments::{total, walk};

/// `MPI_Pack_size`: bytes needed to pack `count` instances.
pub fn pack_size(dt: &Datatype, count: u64) -> Result<u64, DatatypeError> {
    total(dt, count)
}

/// Checks that every byte the type map of `count` instances touches lies
/// inside a user buffer of `len` bytes whose origin is at index `origin`.
pub(crate) fn check_span(
    dt: &Datatype,
    count: u64,
    len: usize,
    origin: usize,
) -> Result<(), DatatypeError> {
    if count == 0 || dt.size() == 0 {
        return Ok(());
    }
    let spread = (count as i128 - 1) * dt.extent() as i128;
    let lowest = origin as i128 + dt.true_lb() as i128 + spread.min(0);
    let highest = origin as i128 + dt.true_ub() as i128 + spread.max(0);
    if lowest < 0 || highest > len as i128 {
        return Err(DatatypeError::UserBufferOutOfBounds {
            lowest,
            highest,
            len,
        });
    }
    Ok(())
}

/// The user-buffer range of a segment, checked (defence in depth: the span
/// check already covers it).
fn user_range(
    origin: usize,
    offset: i64,
    len: u64,
    buf_len: usize,
) -> Result<std::ops::Range<usize>, DatatypeError> {
    let start = origin as i128 + offset as i128;
    let end = start + len as i128;
    if start < 0 || end > buf_len as i128 {
        return Err(DatatypeError::UserBufferOutOfBounds {
            lowest: start,
            highest: end,
            len: buf_len,
        });
    }
    Ok(start as usize..end as usize)
}

fn stream_window(dt: &Datatype, count: u64, pos: u64, room: usize) -> Result<u64, DatatypeError> {
    let total = total(dt, count)?;
    if pos > total {
        return Err(DatatypeError::PositionOutOfRange {
            position: pos,
            total,
        });
    }
    Ok((total - pos).min(room as u64))
}

/// Packs packed-stream bytes `[stream_pos, stream_pos + dst.len())` of
/// `count` instances (clipped at the end of the message) from the user
/// buffer `src` (origin at index `origin`) into `dst`. Returns the number
/// of bytes written. Calling it with consecutive positions yields exactly
/// the bytes of one whole `pack`.
pub fn pack_partial(
    dt: &Datatype,
    count: u64,
    src: &[u8],
    origin: usize,
    stream_pos: u64,
    dst: &mut [u8],
) -> Result<usize, DatatypeError> {
    check_span(dt, count, src.len(), origin)?;
    let n = stream_window(dt, count, stream_pos, dst.len())?;
    let mut at = 0usize;
    let flow = walk(dt, count, stream_pos, n, &mut |offset, len| {
        let r = match user_range(origin, offset, len, src.len()) {
            Ok(r) => r,
            Err(e) => return ControlFlow::Break(e),
        };
        let l = r.len();
        dst[at..at + l].copy_from_slice(&src[r]);
        at += l;
        ControlFlow::Continue(())
    });
    match flow {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(at),
    }
}

/// Unpacks `packed` as packed-stream bytes starting at `stream_pos` of a
/// message of `count` instances into the user buffer `dst` (origin at
/// index `origin`). Returns the number of packed bytes consumed (less than
/// `packed.len()` only at the end of the message).
pub fn unpack_partial(
    dt: &Datatype,
    count: u64,
    packed: &[u8],
    stream_pos: u64,
    dst: &mut [u8],
    origin: usize,
) -> Result<usize, DatatypeError> {
    check_span(dt, count, dst.len(), origin)?;
    let n = stream_window(dt, count, stream_pos, packed.len())?;
    let mut at = 0usize;
    let dst_len = dst.len();
    let flow = walk(dt, count, stream_pos, n, &mut |offset, len| {
        let r = match user_range(origin, offset, len, dst_len) {
            Ok(r) => r,
            Err(e) => return ControlFlow::Break(e),
        };
        let l = r.len();
        dst[r].copy_from_slice(&packed[at..at + l]);
        at += l;
        ControlFlow::Continue(())
    });
    match flow {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(at),
    }
}

/// `MPI_Pack`: appends all `count` instances to `dst` at `*position` and
/// advances `*position`.
pub fn pack(
    dt: &Datatype,
    count: u64,
    src: &[u8],
    origin: usize,
    dst: &mut [u8],
    position: &mut usize,
) -> Result<(), DatatypeError> {
    let need = total(dt, count)?;
    let room = dst.len().saturating_sub(*position) as u64;
    if *position > dst.len() || need > room {
        return Err(DatatypeError::PackedBufferTooSmall {
            needed: need,
            available: room,
        });
    }
    let n = pack_partial(dt, count, src, origin, 0, &mut dst[*position..])?;
    *position += n;
    Ok(())
}

/// `MPI_Unpack`: reads all `count` instances from `src` at `*position`
/// into the user buffer and advances `*position`.
pub fn unpack(
    dt: &Datatype,
    count: u64,
    src: &[u8],
    position: &mut usize,
    dst: &mut [u8],
    origin: usize,
) -> Result<(), DatatypeError> {
    let need = total(dt, count)?;
    let room = src.len().saturating_sub(*position) as u64;
    if *position > src.len() || need > room {
        return Err(DatatypeError::PackedBufferTooSmall {
            needed: need,
            available: room,
        });
    }
    let n = unpack_partial(dt, count, &src[*position..], 0, dst, origin)?;
    *position += n;
    Ok(())
}
