//! Per-rank byte counts and displacements for the "v" and "w" collectives.

use std::ops::Range;

use crate::error::CollError;

/// One block per rank: `counts[r]` bytes at byte displacement `displs[r]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    counts: Vec<usize>,
    displs: Vec<usize>,
}

impl Layout {
    /// Blocks at explicit displacements; each block's end must fit in `usize`.
    pub fn new(counts: Vec<usize>, displs: Vec<usize>) -> Result<Self, CollError> {
        if counts.len() != displs.len() {
            return Err(CollError::CountsLengthMismatch {
                expected: u32::try_from(counts.len()).unwrap_or(u32::MAX),
                got: displs.len(),
            });
        }
        for (c, d) in counts.iter().zip(&displs) {
            c.checked_add(*d).ok_or(CollError::SizeOverflow)?;
        }
        Ok(Layout { counts, displs })
    }

    /// Blocks back to back in rank order.
    pub fn packed(counts: Vec<usize>) -> Result<Self, CollError> {
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0usize;
        for c in &counts {
            displs.push(at);
            at = at.checked_add(*c).ok_or(CollError::SizeOverflow)?;
        }
        Ok(Layout { counts, displs })
    }

    /// `size` blocks of `block` bytes, back to back.
    pub fn uniform(size: u32, block: usize) -> Result<Self, CollError> {
        Layout::packed(vec![block; size as usize])
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    pub fn displs(&self) -> &[usize] {
        &self.displs
    }

    /// Rank `r`'s block as a byte range (empty if `r` is out of range).
    pub fn block(&self, r: u32) -> Range<usize> {
        let i = r as usize;
        match (self.displs.get(i), self.counts.get(i)) {
            (Some(&d), Some(&c)) => d..d + c,
            _ => 0..0,
        }
    }

    /// Bytes a buffer needs to hold every block: the largest block end.
    pub fn extent(&self) -> usize {
        self.counts
            .iter()
            .zip(&self.displs)
            .map(|(c, d)| c + d)
            .max()
            .unwrap_or(0)
    }

    /// Fails unless there is one block per rank.
    pub fn check_size(&self, size: u32) -> Result<(), CollError> {
        if self.counts.len() != size as usize {
            return Err(CollError::CountsLengthMismatch {
                expected: size,
                got: self.counts.len(),
            });
        }
        Ok(())
    }
}

/// Fails unless this rank's buffer length is what the counts say.
pub(crate) fn check_local(expected: usize, got: usize) -> Result<(), CollError> {
    if expected != got {
        return Err(CollError::LocalLengthMismatch { expected, got });
    }
    Ok(())
}
