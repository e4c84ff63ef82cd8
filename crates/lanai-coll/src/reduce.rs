//! Deterministic reduce: a fixed tree rooted at absolute rank 0, binomial or
//! of any fan-out (`ReduceTree`).
//!
//! Every subtree covers a contiguous rank range, and each node folds its
//! children in ascending order as `acc = acc op child`, so the grouping
//! depends only on the communicator size and the tree shape, and every
//! operand pair is in rank order (safe for non-commutative ops). A root other
//! than 0 gets the final value from rank 0 in one extra message.

use std::fmt;
use std::str::FromStr;

use crate::error::CollError;
use crate::machine::{
    check_len, check_rank, check_root, decode, decode_head, kind, unexpected, Collective, Inbox,
    Outbox, Outgoing,
};
use crate::ops::Combine;
use crate::tree::{self, RangeTree};

/// The shape of the reduce tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceTree {
    /// The binomial tree: the grouping every allreduce algorithm and the
    /// shared-memory fast path share.
    Binomial,
    /// Fan-out `k` (at least 1; 1 is a chain, `size - 1` or more is flat).
    /// Floating-point results are fixed for a given `k` and size, but group
    /// differently from the binomial tree.
    Kary(u32),
}

impl ReduceTree {
    /// `(step, child)` pairs in fold order.
    fn children(self, rank: u32, size: u32) -> Vec<(u8, u32)> {
        match self {
            ReduceTree::Binomial => tree::children(rank, size).collect(),
            ReduceTree::Kary(k) => RangeTree { size, k }
                .children(rank)
                .into_iter()
                .map(|c| (0, c))
                .collect(),
        }
    }

    /// `(step, parent)`; `None` for rank 0.
    fn parent(self, rank: u32, size: u32) -> Option<(u8, u32)> {
        match self {
            ReduceTree::Binomial => tree::parent(rank),
            ReduceTree::Kary(k) => RangeTree { size, k }.locate(rank).0.map(|p| (0, p)),
        }
    }
}

impl fmt::Display for ReduceTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReduceTree::Binomial => f.write_str("binomial"),
            ReduceTree::Kary(k) => write!(f, "kary:{k}"),
        }
    }
}

/// `binomial`, or `kary:K` with K >= 1.
impl FromStr for ReduceTree {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "binomial" {
            return Ok(ReduceTree::Binomial);
        }
        match s.strip_prefix("kary:").map(str::parse::<u32>) {
            Some(Ok(k)) if k >= 1 => Ok(ReduceTree::Kary(k)),
            _ => Err(format!(
                "unknown reduce tree {s:?}: binomial, or kary:K with K >= 1"
            )),
        }
    }
}

/// Reduce of equal-length byte buffers to `root`.
pub struct Reduce<C> {
    rank: u32,
    root: u32,
    len: usize,
    combiner: C,
    /// Children still to fold as `(step, rank)`, in fold order (ascending rank).
    children: Vec<(u8, u32)>,
    parent: Option<(u8, u32)>,
    next_child: usize,
    /// Reduction of this rank's subtree so far; moved out once sent.
    acc: Option<Vec<u8>>,
    subtree_sent: bool,
    result: Option<Vec<u8>>,
    finished: bool,
    inbox: Inbox,
    outbox: Outbox,
}

impl<C: Combine> Reduce<C> {
    /// `data` is this rank's contribution; every rank passes the same length.
    /// The binomial tree.
    pub fn new(
        rank: u32,
        size: u32,
        root: u32,
        data: Vec<u8>,
        combiner: C,
    ) -> Result<Self, CollError> {
        Self::with_tree(rank, size, root, data, combiner, ReduceTree::Binomial)
    }

    /// As `new`, over `shape`; every rank passes the same shape.
    pub fn with_tree(
        rank: u32,
        size: u32,
        root: u32,
        data: Vec<u8>,
        combiner: C,
        shape: ReduceTree,
    ) -> Result<Self, CollError> {
        check_rank(rank, size)?;
        check_root(root, size)?;
        if shape == ReduceTree::Kary(0) {
            return Err(CollError::ZeroFanOut);
        }
        let mut m = Reduce {
            rank,
            root,
            len: data.len(),
            combiner,
            children: shape.children(rank, size),
            parent: shape.parent(rank, size),
            next_child: 0,
            acc: Some(data),
            subtree_sent: false,
            result: None,
            finished: false,
            inbox: Inbox::default(),
            outbox: Outbox::new(),
        };
        m.advance()?;
        Ok(m)
    }

    /// The reduced value, on the root once done.
    pub fn into_result(self) -> Option<Vec<u8>> {
        self.result
    }

    fn advance(&mut self) -> Result<(), CollError> {
        while let Some(&(k, child)) = self.children.get(self.next_child) {
            let Some(mut data) = self.inbox.take(child, kind::REDUCE_CONTRIB, k) else {
                return Ok(());
            };
            if let Some(acc) = self.acc.take() {
                // `acc` covers ranks below `child`'s subtree.
                self.combiner.combine(&acc, &mut data)?;
            }
            self.acc = Some(data);
            self.next_child += 1;
        }
        if !self.subtree_sent {
            self.subtree_sent = true;
            let acc = self.acc.take().unwrap_or_default();
            match self.parent {
                Some((k, p)) => {
                    self.outbox
                        .push_back(Outgoing::with_header(p, kind::REDUCE_CONTRIB, k, acc))
                }
                None if self.root == 0 => self.result = Some(acc),
                None => self.outbox.push_back(Outgoing::with_header(
                    self.root,
                    kind::REDUCE_RESULT,
                    0,
                    acc,
                )),
            }
        }
        if self.rank == self.root && self.root != 0 && self.result.is_none() {
            match self.inbox.take(0, kind::REDUCE_RESULT, 0) {
                Some(d) => self.result = Some(d),
                None => return Ok(()),
            }
        }
        self.finished = true;
        Ok(())
    }

    fn expects(&self, from: u32, kind_: u8, step: u8) -> bool {
        match kind_ {
            kind::REDUCE_CONTRIB => self
                .children
                .binary_search_by_key(&from, |&(_, c)| c)
                .is_ok_and(|i| self.children[i].0 == step),
            kind::REDUCE_RESULT => {
                step == 0 && from == 0 && self.rank == self.root && self.root != 0
            }
            _ => false,
        }
    }
}

impl<C: Combine> Collective for Reduce<C> {
    fn handle_message(&mut self, from: u32, data: &[u8]) -> Result<(), CollError> {
        let (h, payload) = decode(from, data)?;
        self.handle_parts(from, &[h.kind, h.step], payload.to_vec())
    }

    fn handle_parts(&mut self, from: u32, head: &[u8], body: Vec<u8>) -> Result<(), CollError> {
        let h = decode_head(from, head)?;
        if !self.expects(from, h.kind, h.step) {
            return Err(unexpected(from, &h));
        }
        check_len(from, self.len, body.len())?;
        self.inbox.insert_owned(from, &h, body)?;
        self.advance()
    }

    fn poll_send(&mut self) -> Option<Outgoing> {
        self.outbox.pop_front()
    }

    fn is_done(&self) -> bool {
        self.finished && self.outbox.is_empty()
    }

    fn result(&self) -> Option<&[u8]> {
        if self.is_done() {
            self.result.as_deref()
        } else {
            None
        }
    }

    fn take_result(&mut self) -> Option<Vec<u8>> {
        if self.is_done() {
            self.result.take()
        } else {
            None
        }
    }
}

/// The result every deterministic reduction of `parts` (one per rank, in
/// rank order) produces: the same binomial-tree grouping `Reduce` uses, so a
/// rank that sees every contribution (the shared-memory fast path) gets the
/// same bits as the message-passing algorithms.
pub fn fold_canonical(parts: &[&[u8]], op: &dyn Combine) -> Result<Vec<u8>, crate::OpError> {
    fold_tree(parts, op, ReduceTree::Binomial)
}

/// The result `Reduce` over `shape` produces from `parts`.
pub fn fold_tree(
    parts: &[&[u8]],
    op: &dyn Combine,
    shape: ReduceTree,
) -> Result<Vec<u8>, crate::OpError> {
    if parts.is_empty() {
        return Ok(Vec::new());
    }
    if shape == ReduceTree::Binomial && parts.iter().all(|p| p.len() == parts[0].len()) {
        return fold_binomial(parts, op);
    }
    fold_walk(parts, op, shape)
}

/// [`fold_tree`] by walking the tree.
fn fold_walk(
    parts: &[&[u8]],
    op: &dyn Combine,
    shape: ReduceTree,
) -> Result<Vec<u8>, crate::OpError> {
    let size = parts.len() as u32;
    let subtree = |v: u32| -> Result<Vec<u8>, crate::OpError> {
        // Iterative post-order, so a chain of thousands does not recurse.
        let mut stack = vec![(
            v,
            shape.children(v, size),
            0usize,
            parts[v as usize].to_vec(),
        )];
        loop {
            let top = stack
                .last_mut()
                .expect("stack holds the root until it returns");
            if let Some(&(_, c)) = top.1.get(top.2) {
                top.2 += 1;
                stack.push((c, shape.children(c, size), 0, parts[c as usize].to_vec()));
                continue;
            }
            let (_, _, _, acc) = stack.pop().expect("checked above");
            match stack.last_mut() {
                None => return Ok(acc),
                Some(parent) => {
                    let mut child = acc;
                    op.combine(&parent.3, &mut child)?;
                    parent.3 = child;
                }
            }
        }
    };
    subtree(0)
}

/// [`fold_tree`] over the binomial tree, for parts of equal length.
fn fold_binomial(parts: &[&[u8]], op: &dyn Combine) -> Result<Vec<u8>, crate::OpError> {
    let len = parts[0].len();
    fold_flat(parts.concat(), len, op)
}

/// The binomial fold of the `len`-byte parts laid end to end in `all` (one
/// per rank, in rank order), computed in place: at level `k` every `v` that
/// is a multiple of `2^(k+1)` absorbs the subtree of `v + 2^k`, which is the
/// order the tree walk combines children in (ascending `k`), without its
/// per-node allocations. A combine leaves its result in the higher operand,
/// so the result of the subtree over ranks `[v, e)` sits in part `e - 1`
/// and nothing is copied back between levels. The result is the first
/// `len` bytes, returned.
pub fn fold_flat(
    mut all: Vec<u8>,
    len: usize,
    op: &dyn Combine,
) -> Result<Vec<u8>, crate::OpError> {
    fold_in_place(&mut all, len, op)?;
    let n = all.len().checked_div(len).unwrap_or(0);
    if n > 1 {
        all.copy_within((n - 1) * len..n * len, 0);
    }
    all.truncate(len);
    Ok(all)
}

/// [`fold_flat`] without moving the result: it is the part it ends in,
/// returned (empty when there are no parts). The shared-memory paths, which
/// see every contribution, fold here on every call and copy the result
/// straight out. Generic, so a caller's concrete operation picks its
/// kernel without dynamic calls.
pub fn fold_in_place<'a, C: Combine + ?Sized>(
    all: &'a mut [u8],
    len: usize,
    op: &C,
) -> Result<&'a [u8], crate::OpError> {
    let n = all.len().checked_div(len).unwrap_or(0);
    if n < 2 {
        return Ok(&all[..n * len]);
    }
    // A predefined operation is chosen once for the whole fold, once its
    // parts are known to hold whole elements.
    let kernel = op
        .kernel()
        .filter(|_| op.elem_size().is_some_and(|e| e > 0 && len % e == 0));
    // Two ranks, the commonest case, without the loop's bookkeeping.
    if n == 2 {
        let (low, high) = all[..2 * len].split_at_mut(len);
        match kernel {
            Some(k) => k(low, high),
            None => op.combine(low, high)?,
        }
        return Ok(high);
    }
    let mut d = 1;
    while d < n {
        // Subtree v covers [v, v + d), subtree v + d covers
        // [v + d, min(v + 2d, n)).
        let mut v = 0;
        while v + d < n {
            let (lo, hi) = (v + d - 1, (v + 2 * d).min(n) - 1);
            let (low, high) = all.split_at_mut(hi * len);
            let (low, high) = (&low[lo * len..][..len], &mut high[..len]);
            match kernel {
                Some(k) => k(low, high),
                None => op.combine(low, high)?,
            }
            v += 2 * d;
        }
        d *= 2;
    }
    Ok(&all[(n - 1) * len..n * len])
}

/// The binomial fold of `parts` (one per rank, in rank order, `out.len()`
/// bytes each) into `out`, with the grouping [`fold_in_place`] uses, for
/// parts that may not be written: each is read where it lies (another
/// rank's shared memory, the caller's buffer). Only the parts a combine
/// overwrites are copied first, the last into `out` and the others into
/// `scratch` (its contents do not matter; it is kept for the next call):
/// about half of them.
pub fn fold_into<C: Combine + ?Sized>(
    parts: &[&[u8]],
    out: &mut [u8],
    op: &C,
    scratch: &mut Vec<u8>,
) -> Result<(), crate::OpError> {
    let len = out.len();
    let n = parts.len();
    if let Some(p) = parts.iter().find(|p| p.len() != len) {
        return Err(crate::OpError::LengthMismatch {
            lower: p.len(),
            higher: len,
        });
    }
    let kernel = op
        .kernel()
        .filter(|_| op.elem_size().is_some_and(|e| e > 0 && len % e == 0));
    match n {
        0 => return Ok(()),
        1 => {
            out.copy_from_slice(parts[0]);
            return Ok(());
        }
        // Two ranks, the commonest case, without the bookkeeping below.
        2 => {
            out.copy_from_slice(parts[1]);
            match kernel {
                Some(k) => k(parts[0], out),
                None => op.combine(parts[0], out)?,
            }
            return Ok(());
        }
        _ => {}
    }
    /// Where a part's running result lives once a combine wrote it.
    #[derive(Clone, Copy)]
    enum At {
        Read,
        Scratch(u32),
        Out,
    }
    // On the stack for the usual sizes: this runs for every small reduce.
    let mut at_stack = [At::Read; 32];
    let mut at_heap = Vec::new();
    let at: &mut [At] = if n <= at_stack.len() {
        &mut at_stack[..n]
    } else {
        at_heap.resize(n, At::Read);
        &mut at_heap
    };
    let mut used = 0;
    // The parts written, but for the last: the odd ones before it.
    scratch.resize(len * ((n - 1) / 2), 0);
    let mut d = 1;
    while d < n {
        let mut v = 0;
        while v + d < n {
            let (lo, hi) = (v + d - 1, (v + 2 * d).min(n) - 1);
            if let At::Read = at[hi] {
                at[hi] = if hi == n - 1 {
                    out.copy_from_slice(parts[hi]);
                    At::Out
                } else {
                    scratch[used * len..][..len].copy_from_slice(parts[hi]);
                    used += 1;
                    At::Scratch(used as u32 - 1)
                };
            }
            // `lo` ends a subtree below `hi`'s, so it is never in `out`.
            let (low, high): (&[u8], &mut [u8]) = match (at[lo], at[hi]) {
                (At::Read, At::Out) => (parts[lo], &mut *out),
                (At::Read, At::Scratch(h)) => (parts[lo], &mut scratch[h as usize * len..][..len]),
                (At::Scratch(l), At::Out) => (&scratch[l as usize * len..][..len], &mut *out),
                (At::Scratch(l), At::Scratch(h)) => {
                    let (a, b) = scratch.split_at_mut(h as usize * len);
                    (&a[l as usize * len..][..len], &mut b[..len])
                }
                _ => unreachable!("a combine writes a part of its own"),
            };
            match kernel {
                Some(k) => k(low, high),
                None => op.combine(low, high)?,
            }
            v += 2 * d;
        }
        d *= 2;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpError;

    /// `higher = 31 * lower + higher` on u64 words: neither commutative nor
    /// associative, so any change of grouping or order changes the result.
    struct Skewed;

    impl Combine for Skewed {
        fn combine(&self, lower: &[u8], higher: &mut [u8]) -> Result<(), OpError> {
            for (l, h) in lower.chunks_exact(8).zip(higher.chunks_exact_mut(8)) {
                let a = u64::from_le_bytes(l.try_into().expect("8 bytes"));
                let b = u64::from_le_bytes((&*h).try_into().expect("8 bytes"));
                h.copy_from_slice(&a.wrapping_mul(31).wrapping_add(b).to_le_bytes());
            }
            Ok(())
        }
        fn commutative(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_predefined_kernel_folds_as_the_tree_walk_combines() {
        // Float sums of mixed magnitudes: any change of grouping shows in
        // the bits. The flat fold runs the kernel, the walk `combine`.
        let op = crate::Predefined::new(crate::Op::Sum, crate::Elem::F64).unwrap();
        assert!(op.kernel().is_some());
        for n in 1..70u32 {
            let parts: Vec<Vec<u8>> = (0..n)
                .map(|r| {
                    [
                        1e16 * f64::from(r % 3),
                        1.0 + f64::from(r) / 7.0,
                        -3e-5 * f64::from(r),
                    ]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect()
                })
                .collect();
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let flat = fold_flat(parts.concat(), 24, &op).unwrap();
            let walk = fold_walk(&refs, &op, ReduceTree::Binomial).unwrap();
            assert_eq!(flat, walk, "{n} parts");
        }
    }

    /// Reading the parts where they lie gives the bits of the in-place
    /// fold, with a dynamic operation and with a kernel, and writes none
    /// of them.
    #[test]
    fn folding_read_only_parts_into_a_buffer_groups_as_in_place() {
        let float = crate::Predefined::new(crate::Op::Sum, crate::Elem::F64).unwrap();
        let mut scratch = Vec::new();
        for n in 1..70u64 {
            let parts: Vec<Vec<u8>> = (0..n)
                .map(|r| {
                    [
                        r * 7 + 1,
                        r * r + 3,
                        (r as f64 / 3.0 + 1e15 * (r % 3) as f64).to_bits(),
                    ]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect()
                })
                .collect();
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let mut out = vec![0xAA; 24];
            fold_into(&refs, &mut out, &Skewed, &mut scratch).unwrap();
            assert_eq!(
                out,
                fold_flat(parts.concat(), 24, &Skewed).unwrap(),
                "{n} parts"
            );
            fold_into(&refs, &mut out, &float, &mut scratch).unwrap();
            assert_eq!(
                out,
                fold_flat(parts.concat(), 24, &float).unwrap(),
                "{n} parts"
            );
        }
        let mut out = vec![0; 8];
        let parts: [&[u8]; 2] = [&[0; 8], &[0; 16]];
        assert!(fold_into(&parts, &mut out, &Skewed, &mut scratch).is_err());
    }

    #[test]
    fn a_partial_element_is_refused_by_the_kernel_path_too() {
        let op = crate::Predefined::new(crate::Op::Sum, crate::Elem::F64).unwrap();
        assert!(fold_flat(vec![0; 20], 10, &op).is_err());
    }

    #[test]
    fn the_level_by_level_binomial_fold_groups_as_the_tree_walk() {
        for n in 1..70u64 {
            let parts: Vec<Vec<u8>> = (0..n)
                .map(|r| {
                    [r * 7 + 1, r * r + 3]
                        .iter()
                        .flat_map(|w| w.to_le_bytes())
                        .collect()
                })
                .collect();
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let fast = fold_binomial(&refs, &Skewed).unwrap();
            let walk = fold_walk(&refs, &Skewed, ReduceTree::Binomial).unwrap();
            assert_eq!(fast, walk, "{n} parts");
        }
    }
}
