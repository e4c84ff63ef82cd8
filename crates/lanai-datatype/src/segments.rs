//! Walking the packed stream of `count` instances as contiguous byte
//! segments of the user buffer, from any stream position, so a transport
//! can pipeline: pack or unpack the next N bytes from where it stopped.

use std::ops::ControlFlow;

use crate::datatype::Datatype;
use crate::error::{to_u64, DatatypeError};

/// A contiguous piece of the user buffer, `offset` bytes from the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub offset: i64,
    pub len: u64,
}

/// Calls `f(offset, len)` for the pieces covering packed bytes
/// `[skip, skip + budget)` of `count` instances (instance `i` is shifted by
/// `i * extent`). Stops early when `f` breaks.
pub(crate) fn walk<B>(
    dt: &Datatype,
    count: u64,
    skip: u64,
    mut budget: u64,
    f: &mut impl FnMut(i64, u64) -> ControlFlow<B>,
) -> ControlFlow<B> {
    let size = dt.size();
    if size == 0 {
        return ControlFlow::Continue(());
    }
    let ext = dt.extent();
    let mut within = skip % size;
    // One piece per instance (a resized or padded basic type): step
    // through the instances directly; walking the type map once per
    // instance cost several times the copy itself.
    if let [crate::flat::Run::Block {
        offset, count: 1, ..
    }] = dt.flat().runs()
    {
        for i in skip / size..count {
            if budget == 0 {
                break;
            }
            let n = (size - within).min(budget);
            let at = ext
                .wrapping_mul(i as i64)
                .wrapping_add(*offset)
                .wrapping_add(within as i64);
            budget -= n;
            f(at, n)?;
            within = 0;
        }
        return ControlFlow::Continue(());
    }
    for i in skip / size..count {
        if budget == 0 {
            break;
        }
        dt.flat()
            .walk(ext.wrapping_mul(i as i64), within, &mut budget, f)?;
        within = 0;
    }
    ControlFlow::Continue(())
}

/// Packed size of `count` instances, checked.
pub(crate) fn total(dt: &Datatype, count: u64) -> Result<u64, DatatypeError> {
    to_u64(dt.size() as u128 * count as u128)
}

/// Iterator over the segments of packed bytes `[start, end)`.
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    dt: &'a Datatype,
    count: u64,
    pos: u64,
    end: u64,
}

impl<'a> Segments<'a> {
    /// Stream position of the next segment.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        if self.pos >= self.end {
            return None;
        }
        let found = walk(
            self.dt,
            self.count,
            self.pos,
            self.end - self.pos,
            &mut |offset, len| ControlFlow::Break(Segment { offset, len }),
        );
        match found {
            ControlFlow::Break(seg) => {
                self.pos += seg.len;
                Some(seg)
            }
            ControlFlow::Continue(()) => {
                self.pos = self.end;
                None
            }
        }
    }
}

impl Datatype {
    /// The user-buffer segments holding packed bytes `[start, start + len)`
    /// of a message of `count` instances (`len` is clipped at the end).
    pub fn segments(
        &self,
        count: u64,
        start: u64,
        len: u64,
    ) -> Result<Segments<'_>, DatatypeError> {
        let total = total(self, count)?;
        if start > total {
            return Err(DatatypeError::PositionOutOfRange {
                position: start,
                total,
            });
        }
        Ok(Segments {
            dt: self,
            count,
            pos: start,
            end: start.saturating_add(len).min(total),
        })
    }
}
