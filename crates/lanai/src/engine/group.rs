//! Groups: ordered lists of distinct world ranks, the set algebra MPI
//! defines on them, and the local table behind group handles.

use super::error::{MpiError, MpiResult};
use crate::abi::consts as c;

/// A process group; member `i` has group rank `i`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// World ranks in group-rank order.
    pub members: Vec<u32>,
}

/// `MPI_Group_compare` / `MPI_Comm_compare` outcomes, as their C values.
pub fn compare_members(a: &[u32], b: &[u32]) -> i32 {
    if a == b {
        return c::MPI_IDENT;
    }
    if a.len() == b.len() {
        let (mut x, mut y) = (a.to_vec(), b.to_vec());
        x.sort_unstable();
        y.sort_unstable();
        if x == y {
            return c::MPI_SIMILAR;
        }
    }
    c::MPI_UNEQUAL
}

impl Group {
    pub fn new(members: Vec<u32>) -> Self {
        Self { members }
    }

    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }

    /// World rank of group rank `r`, if it is one.
    pub fn member(&self, r: u32) -> Option<u32> {
        self.members.get(r as usize).copied()
    }

    /// Group rank of world rank `w`, if it is a member.
    pub fn rank_of(&self, w: u32) -> Option<u32> {
        self.members.iter().position(|&m| m == w).map(|p| p as u32)
    }

    fn contains(&self, w: u32) -> bool {
        self.members.contains(&w)
    }

    /// Checks that `r` is a rank of this group.
    fn check_rank(&self, r: i32) -> MpiResult<usize> {
        if r < 0 || r as u32 >= self.size() {
            return Err(MpiError::new(
                c::MPI_ERR_RANK,
                format!("invalid rank {r} (group size {})", self.size()),
            ));
        }
        Ok(r as usize)
    }

    /// `MPI_Group_translate_ranks`: `MPI_PROC_NULL` maps to itself, ranks
    /// without a counterpart to `MPI_UNDEFINED`.
    pub fn translate(&self, ranks: &[i32], other: &Group) -> MpiResult<Vec<i32>> {
        ranks
            .iter()
            .map(|&r| {
                if r == c::MPI_PROC_NULL {
                    return Ok(c::MPI_PROC_NULL);
                }
                let w = self.members[self.check_rank(r)?];
                Ok(other.rank_of(w).map_or(c::MPI_UNDEFINED, |x| x as i32))
            })
            .collect()
    }

    pub fn compare(&self, other: &Group) -> i32 {
        compare_members(&self.members, &other.members)
    }

    /// Members of `self`, then members of `other` not in `self`.
    pub fn union(&self, other: &Group) -> Group {
        let mut m = self.members.clone();
        m.extend(other.members.iter().filter(|&&w| !self.contains(w)));
        Group::new(m)
    }

    /// Members of `self` also in `other`, in `self`'s order.
    pub fn intersection(&self, other: &Group) -> Group {
        Group::new(
            self.members
                .iter()
                .copied()
                .filter(|&w| other.contains(w))
                .collect(),
        )
    }

    /// Members of `self` not in `other`, in `self`'s order.
    pub fn difference(&self, other: &Group) -> Group {
        Group::new(
            self.members
                .iter()
                .copied()
                .filter(|&w| !other.contains(w))
                .collect(),
        )
    }

    /// Validates a rank list: every rank valid and none repeated.
    fn distinct_ranks(&self, ranks: &[i32]) -> MpiResult<Vec<usize>> {
        let mut seen = vec![false; self.members.len()];
        ranks
            .iter()
            .map(|&r| {
                let i = self.check_rank(r)?;
                if std::mem::replace(&mut seen[i], true) {
                    return Err(MpiError::new(
                        c::MPI_ERR_RANK,
                        format!("rank {r} appears more than once"),
                    ));
                }
                Ok(i)
            })
            .collect()
    }

    /// `MPI_Group_incl`: the listed ranks, in list order.
    pub fn incl(&self, ranks: &[i32]) -> MpiResult<Group> {
        let idx = self.distinct_ranks(ranks)?;
        Ok(Group::new(
            idx.into_iter().map(|i| self.members[i]).collect(),
        ))
    }

    /// `MPI_Group_excl`: every rank not listed, in group order.
    pub fn excl(&self, ranks: &[i32]) -> MpiResult<Group> {
        let idx = self.distinct_ranks(ranks)?;
        Ok(Group::new(
            self.members
                .iter()
                .enumerate()
                .filter(|(i, _)| !idx.contains(i))
                .map(|(_, &w)| w)
                .collect(),
        ))
    }

    /// Expands (first, last, stride) triplets into the ranks they name.
    pub fn expand_ranges(&self, ranges: &[[i32; 3]]) -> MpiResult<Vec<i32>> {
        let mut out = Vec::new();
        for &[first, last, stride] in ranges {
            self.check_rank(first)?;
            self.check_rank(last)?;
            if stride == 0 {
                return Err(MpiError::new(
                    c::MPI_ERR_ARG,
                    format!("range ({first}, {last}, {stride}) has stride 0"),
                ));
            }
            let (mut r, last, stride) = (i64::from(first), i64::from(last), i64::from(stride));
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                out.push(r as i32);
                r += stride;
            }
        }
        Ok(out)
    }

    pub fn range_incl(&self, ranges: &[[i32; 3]]) -> MpiResult<Group> {
        self.incl(&self.expand_ranges(ranges)?)
    }

    pub fn range_excl(&self, ranges: &[[i32; 3]]) -> MpiResult<Group> {
        self.excl(&self.expand_ranges(ranges)?)
    }
}

/// The table behind user group handles (the empty group has no slot).
#[derive(Debug, Default)]
pub struct Groups {
    table: Vec<Option<Group>>,
}

impl Groups {
    pub fn insert(&mut self, g: Group) -> usize {
        match self.table.iter().position(Option::is_none) {
            Some(i) => {
                self.table[i] = Some(g);
                i
            }
            None => {
                self.table.push(Some(g));
                self.table.len() - 1
            }
        }
    }

    pub fn get(&self, idx: usize) -> MpiResult<&Group> {
        self.table
            .get(idx)
            .and_then(Option::as_ref)
            .ok_or_else(|| MpiError::new(c::MPI_ERR_GROUP, "invalid group"))
    }

    pub fn remove(&mut self, idx: usize) -> MpiResult<Group> {
        self.table
            .get_mut(idx)
            .and_then(Option::take)
            .ok_or_else(|| MpiError::new(c::MPI_ERR_GROUP, "invalid group"))
    }

    /// Groups currently allocated (for leak checks).
    pub fn live(&self) -> usize {
        self.table.iter().filter(|g| g.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m: &[u32]) -> Group {
        Group::new(m.to_vec())
    }

    #[test]
    fn set_algebra_keeps_the_standard_order() {
        let a = g(&[5, 1, 3]);
        let b = g(&[3, 4, 5]);
        assert_eq!(a.union(&b).members, vec![5, 1, 3, 4]);
        assert_eq!(a.intersection(&b).members, vec![5, 3]);
        assert_eq!(a.difference(&b).members, vec![1]);
        assert_eq!(b.difference(&a).members, vec![4]);
    }

    #[test]
    fn compare_distinguishes_order_from_membership() {
        assert_eq!(g(&[1, 2]).compare(&g(&[1, 2])), c::MPI_IDENT);
        assert_eq!(g(&[1, 2]).compare(&g(&[2, 1])), c::MPI_SIMILAR);
        assert_eq!(g(&[1, 2]).compare(&g(&[1, 3])), c::MPI_UNEQUAL);
        assert_eq!(g(&[]).compare(&g(&[])), c::MPI_IDENT);
    }

    #[test]
    fn incl_excl_and_ranges() {
        let w = g(&[10, 11, 12, 13, 14, 15]);
        assert_eq!(w.incl(&[4, 0]).unwrap().members, vec![14, 10]);
        assert_eq!(w.excl(&[4, 0]).unwrap().members, vec![11, 12, 13, 15]);
        assert_eq!(
            w.range_incl(&[[5, 0, -2], [0, 0, 1]]).unwrap().members,
            vec![15, 13, 11, 10]
        );
        assert_eq!(
            w.range_excl(&[[0, 5, 2]]).unwrap().members,
            vec![11, 13, 15]
        );
        assert_eq!(w.incl(&[1, 1]).unwrap_err().class, c::MPI_ERR_RANK);
        assert_eq!(w.incl(&[6]).unwrap_err().class, c::MPI_ERR_RANK);
        assert_eq!(
            w.range_incl(&[[0, 3, 0]]).unwrap_err().class,
            c::MPI_ERR_ARG
        );
    }

    #[test]
    fn translate_maps_missing_and_proc_null() {
        let a = g(&[0, 1, 2, 3]);
        let b = g(&[3, 1]);
        let t = a.translate(&[0, 1, 3, c::MPI_PROC_NULL], &b).unwrap();
        assert_eq!(t, vec![c::MPI_UNDEFINED, 1, 0, c::MPI_PROC_NULL]);
        assert!(a.translate(&[4], &b).is_err());
    }

    #[test]
    fn table_reuses_freed_slots() {
        let mut t = Groups::default();
        let a = t.insert(g(&[1]));
        let b = t.insert(g(&[2]));
        assert_ne!(a, b);
        t.remove(a).unwrap();
        assert!(t.get(a).is_err());
        assert_eq!(t.insert(g(&[3])), a);
        assert_eq!(t.live(), 2);
    }
}
