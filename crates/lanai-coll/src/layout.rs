//! Per-rank byte counts and displacements for the "v" and "w" collectives.

use std::ops::Range;

use crate::error::CollError;

/// One block per rank: `counts[r]` bytes at byte displacement `displs[r]`.
/// Both lists share one vector, counts then displacements: a small
/// gatherv's or scatterv's root builds a layout on every call, and one
/// allocation is half the cost of two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    both: Vec<usize>,
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
        let mut both = counts;
        both.extend_from_slice(&displs);
        Self::from_both(both)
    }

    /// Blocks from `n` (count, displacement) pairs made by `block`, in rank
    /// order, with one allocation. The first error `block` returns ends it
    /// (the outer `Err`); a block whose end overflows is the inner one.
    pub fn from_blocks<E>(
        n: usize,
        mut block: impl FnMut(usize) -> Result<(usize, usize), E>,
    ) -> Result<Result<Self, CollError>, E> {
        let mut both = vec![0; 2 * n];
        let (counts, displs) = both.split_at_mut(n);
        for (i, (c, d)) in counts.iter_mut().zip(displs).enumerate() {
            (*c, *d) = block(i)?;
        }
        Ok(Self::from_both(both))
    }

    /// Counts then displacements, checked: each block's end fits in `usize`.
    fn from_both(both: Vec<usize>) -> Result<Self, CollError> {
        let (counts, displs) = both.split_at(both.len() / 2);
        for (c, d) in counts.iter().zip(displs) {
            c.checked_add(*d).ok_or(CollError::SizeOverflow)?;
        }
        Ok(Layout { both })
    }

    /// Blocks back to back in rank order.
    pub fn packed(counts: Vec<usize>) -> Result<Self, CollError> {
        let n = counts.len();
        let mut both = counts;
        both.reserve_exact(n);
        let mut at = 0usize;
        for i in 0..n {
            both.push(at);
            at = at.checked_add(both[i]).ok_or(CollError::SizeOverflow)?;
        }
        Ok(Layout { both })
    }

    /// `size` blocks of `block` bytes, back to back.
    pub fn uniform(size: u32, block: usize) -> Result<Self, CollError> {
        Layout::packed(vec![block; size as usize])
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.both.len() / 2
    }

    pub fn is_empty(&self) -> bool {
        self.both.is_empty()
    }

    pub fn counts(&self) -> &[usize] {
        &self.both[..self.len()]
    }

    pub fn displs(&self) -> &[usize] {
        &self.both[self.len()..]
    }

    /// Rank `r`'s block as a byte range (empty if `r` is out of range).
    pub fn block(&self, r: u32) -> Range<usize> {
        let (i, n) = (r as usize, self.len());
        match (self.both.get(n + i), self.both.get(i).filter(|_| i < n)) {
            (Some(&d), Some(&c)) => d..d + c,
            _ => 0..0,
        }
    }

    /// Bytes a buffer needs to hold every block: the largest block end.
    pub fn extent(&self) -> usize {
        self.counts()
            .iter()
            .zip(self.displs())
            .map(|(c, d)| c + d)
            .max()
            .unwrap_or(0)
    }

    /// Fails unless there is one block per rank.
    pub fn check_size(&self, size: u32) -> Result<(), CollError> {
        if self.len() != size as usize {
            return Err(CollError::CountsLengthMismatch {
                expected: size,
                got: self.len(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_constructor_gives_the_same_blocks() {
        let counts = vec![3, 0, 5, 2];
        let displs = vec![0, 3, 3, 8];
        let a = Layout::new(counts.clone(), displs.clone()).unwrap();
        let b = Layout::from_blocks(4, |i| Ok::<_, ()>((counts[i], displs[i])))
            .unwrap()
            .unwrap();
        let c = Layout::packed(counts.clone()).unwrap();
        for l in [&a, &b, &c] {
            assert_eq!((l.len(), l.counts()), (4, &counts[..]));
            assert_eq!(l.displs(), &displs[..]);
            assert_eq!((l.block(2), l.block(3), l.block(4)), (3..8, 8..10, 0..0));
            assert_eq!(l.extent(), 10);
            assert!(l.check_size(4).is_ok() && l.check_size(3).is_err());
        }
        assert_eq!(a, b);
        assert_eq!(Layout::uniform(3, 4).unwrap().block(2), 8..12);
        assert!(Layout::default().is_empty());
    }

    #[test]
    fn bad_blocks_fail() {
        assert_eq!(
            Layout::new(vec![1, usize::MAX], vec![0, 1]),
            Err(CollError::SizeOverflow)
        );
        assert!(Layout::new(vec![1], vec![0, 1]).is_err());
        assert_eq!(
            Layout::from_blocks(2, |i| Ok::<_, ()>((usize::MAX, i))).unwrap(),
            Err(CollError::SizeOverflow)
        );
        assert_eq!(
            Layout::from_blocks(3, |i| if i == 1 { Err("bad count") } else { Ok((1, 0)) }),
            Err("bad count")
        );
        assert!(Layout::packed(vec![usize::MAX, 1, 1]).is_err());
    }
}
