//! The `Datatype` value: constructors with MPI semantics, and the queries
//! MPI defines on them (size, bounds, envelope, contents).

use std::sync::Arc;

use crate::error::{to_i64, to_u64, DatatypeError};
use crate::flat::Flat;
use crate::primitive::{Named, Primitive};
use crate::{darray, subarray};

/// Storage order of a subarray or darray.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Row-major: the last dimension varies fastest.
    C,
    /// Column-major: the first dimension varies fastest.
    Fortran,
}

/// How one darray dimension is spread over its processes.
/// `None` in `Block`/`Cyclic` means `MPI_DISTRIBUTE_DFLT_DARG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Block(Option<usize>),
    Cyclic(Option<usize>),
    None,
}

/// Which constructor made a datatype (`MPI_COMBINER_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combiner {
    Named,
    Dup,
    Contiguous,
    Vector,
    Hvector,
    Indexed,
    Hindexed,
    IndexedBlock,
    HindexedBlock,
    Struct,
    Subarray,
    Darray,
    Resized,
    F90Real,
    F90Complex,
    F90Integer,
}

/// Which `MPI_Type_create_f90_*` made a datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum F90Kind {
    Real,
    Complex,
    Integer,
}

/// `MPI_Type_get_envelope`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub combiner: Combiner,
    pub num_integers: usize,
    pub num_addresses: usize,
    pub num_datatypes: usize,
}

/// The constructor arguments a datatype was made with (`MPI_Type_get_contents`).
/// Strides and displacements of the non-`h` forms are in elements of
/// `oldtype`; those of the `h` forms and `Struct` are in bytes.
#[derive(Debug, Clone)]
pub enum Contents {
    Named(Named),
    Dup {
        oldtype: Datatype,
    },
    Contiguous {
        count: usize,
        oldtype: Datatype,
    },
    Vector {
        count: usize,
        blocklength: usize,
        stride: i64,
        oldtype: Datatype,
    },
    Hvector {
        count: usize,
        blocklength: usize,
        stride: i64,
        oldtype: Datatype,
    },
    Indexed {
        blocklengths: Vec<usize>,
        displacements: Vec<i64>,
        oldtype: Datatype,
    },
    Hindexed {
        blocklengths: Vec<usize>,
        displacements: Vec<i64>,
        oldtype: Datatype,
    },
    IndexedBlock {
        blocklength: usize,
        displacements: Vec<i64>,
        oldtype: Datatype,
    },
    HindexedBlock {
        blocklength: usize,
        displacements: Vec<i64>,
        oldtype: Datatype,
    },
    Struct {
        blocklengths: Vec<usize>,
        displacements: Vec<i64>,
        types: Vec<Datatype>,
    },
    Subarray {
        sizes: Vec<usize>,
        subsizes: Vec<usize>,
        starts: Vec<usize>,
        order: Order,
        oldtype: Datatype,
    },
    Darray {
        size: usize,
        rank: usize,
        gsizes: Vec<usize>,
        distribs: Vec<Distribution>,
        psizes: Vec<usize>,
        order: Order,
        oldtype: Datatype,
    },
    Resized {
        lb: i64,
        extent: i64,
        oldtype: Datatype,
    },
    /// `MPI_Type_create_f90_*`: a named type chosen by precision and
    /// range, which are all its contents (`p, r`, or `r` for integers).
    F90 {
        kind: F90Kind,
        integers: Vec<i64>,
        named: Datatype,
    },
}

/// The integer codes the C ABI uses for orders and distributions, so that
/// `Contents::integers` can produce `MPI_Type_get_contents`' int array
/// without this crate knowing ABI values.
#[derive(Debug, Clone, Copy)]
pub struct AbiCodes {
    pub order_c: i64,
    pub order_fortran: i64,
    pub distribute_block: i64,
    pub distribute_cyclic: i64,
    pub distribute_none: i64,
    pub distribute_dflt_darg: i64,
}

/// An MPI datatype. Cheap to clone (shared, immutable).
#[derive(Debug, Clone)]
pub struct Datatype(Arc<Node>);

#[derive(Debug)]
struct Node {
    contents: Contents,
    props: Props,
    flat: Arc<Flat>,
    signature: Signature,
}

#[derive(Debug, Clone, Copy)]
struct Props {
    size: u64,
    external32_size: u64,
    lb: i64,
    ub: i64,
    true_lb: i64,
    true_ub: i64,
    align: u64,
    elements: u64,
    /// `Some(p)` when every basic element is `p` (and there is at least one).
    uniform: Option<Primitive>,
}

/// The type signature as a tree: a named type lists its basic members; a
/// derived type lists (repetitions, child) pairs in type-map order.
#[derive(Debug)]
enum Signature {
    Leaf(Vec<Primitive>),
    Seq(Vec<(u64, Datatype)>),
}

/// Exact bounds while combining children.
#[derive(Clone, Copy)]
struct Bounds {
    lb: i128,
    ub: i128,
    true_lb: i128,
    true_ub: i128,
}

impl Bounds {
    /// `n` copies of `child`, copy `k` at `disp + k * step`.
    fn placed(child: &Props, disp: i128, n: u64, step: i128) -> Bounds {
        let spread = (n as i128 - 1) * step;
        let (lo, hi) = (spread.min(0), spread.max(0));
        Bounds {
            lb: disp + child.lb as i128 + lo,
            ub: disp + child.ub as i128 + hi,
            true_lb: disp + child.true_lb as i128 + lo,
            true_ub: disp + child.true_ub as i128 + hi,
        }
    }

    fn shift(self, by: i128, n: u64, step: i128) -> Bounds {
        let spread = (n as i128 - 1) * step;
        let (lo, hi) = (spread.min(0), spread.max(0));
        Bounds {
            lb: self.lb + by + lo,
            ub: self.ub + by + hi,
            true_lb: self.true_lb + by + lo,
            true_ub: self.true_ub + by + hi,
        }
    }

    fn union(self, o: Bounds) -> Bounds {
        Bounds {
            lb: self.lb.min(o.lb),
            ub: self.ub.max(o.ub),
            true_lb: self.true_lb.min(o.true_lb),
            true_ub: self.true_ub.max(o.true_ub),
        }
    }
}

/// Accumulates the properties of a derived type block by block.
struct Builder {
    size: u128,
    external32_size: u128,
    elements: u128,
    align: u64,
    uniform: Option<Option<Primitive>>,
    bounds: Option<Bounds>,
    true_bounds: Option<(i128, i128)>,
    flat: Flat,
    signature: Vec<(u64, Datatype)>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            size: 0,
            external32_size: 0,
            elements: 0,
            align: 1,
            uniform: None,
            bounds: None,
            true_bounds: None,
            flat: Flat::default(),
            signature: Vec::new(),
        }
    }

    /// Adds `outer` groups of `inner` consecutive copies of `child`: group
    /// `g` at byte `disp + g * outer_stride`, copies `extent(child)` apart.
    fn add(&mut self, child: &Datatype, disp: i64, inner: u64, outer: u64, outer_stride: i64) {
        let n = inner as u128 * outer as u128;
        if n == 0 {
            return;
        }
        let p = &child.0.props;
        self.size += n * p.size as u128;
        self.external32_size += n * p.external32_size as u128;
        self.elements += n * p.elements as u128;
        self.align = self.align.max(p.align);
        if p.elements > 0 {
            self.uniform = Some(match self.uniform {
                None => p.uniform,
                Some(u) if u == p.uniform => u,
                Some(_) => None,
            });
        }
        let ext = p.ub as i128 - p.lb as i128;
        let b = Bounds::placed(p, disp as i128, inner, ext).shift(0, outer, outer_stride as i128);
        self.bounds = Some(match self.bounds {
            None => b,
            Some(prev) => prev.union(b),
        });
        // True bounds cover data only; an empty child has none.
        if p.size > 0 {
            self.true_bounds = Some(match self.true_bounds {
                None => (b.true_lb, b.true_ub),
                Some((lo, hi)) => (lo.min(b.true_lb), hi.max(b.true_ub)),
            });
        }
        let ext64 = p.ub.wrapping_sub(p.lb);
        let group = Arc::new(Flat::repeat(&child.0.flat, inner, ext64));
        let groups = Flat::repeat(&group, outer, outer_stride);
        self.flat.append_shifted(&groups, disp);
        let reps = u64::try_from(n).unwrap_or(u64::MAX);
        match self.signature.last_mut() {
            Some((r, t)) if t.same_handle(child) => *r = r.saturating_add(reps),
            _ => self.signature.push((reps, child.clone())),
        }
    }

    /// Finishes; `pad_to_align` applies the C struct padding rule.
    fn finish(self, contents: Contents, pad_to_align: bool) -> Result<Datatype, DatatypeError> {
        let b = self.bounds.unwrap_or(Bounds {
            lb: 0,
            ub: 0,
            true_lb: 0,
            true_ub: 0,
        });
        let mut ub = b.ub;
        if pad_to_align && self.align > 1 {
            let rem = (ub - b.lb).rem_euclid(self.align as i128);
            if rem != 0 {
                ub += self.align as i128 - rem;
            }
        }
        let props = Props {
            size: to_u64(self.size)?,
            external32_size: to_u64(self.external32_size)?,
            lb: to_i64(b.lb)?,
            ub: to_i64(ub)?,
            true_lb: to_i64(self.true_bounds.map_or(0, |t| t.0))?,
            true_ub: to_i64(self.true_bounds.map_or(0, |t| t.1))?,
            align: self.align,
            elements: to_u64(self.elements)?,
            uniform: self.uniform.flatten(),
        };
        to_i64(ub - b.lb)?;
        Ok(Datatype(Arc::new(Node {
            contents,
            props,
            flat: Arc::new(self.flat),
            signature: Signature::Seq(self.signature),
        })))
    }
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), DatatypeError> {
    if expected == got {
        Ok(())
    } else {
        Err(DatatypeError::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}

fn u(v: usize) -> u64 {
    v as u64
}

/// Element displacement times extent, in bytes.
fn scaled(disp: i64, extent: i64) -> Result<i64, DatatypeError> {
    to_i64(disp as i128 * extent as i128)
}

impl Datatype {
    /// A predefined datatype.
    pub fn named(n: Named) -> Datatype {
        let members = n.members();
        let mut flat = Flat::default();
        for (p, off) in &members {
            flat.push(crate::flat::Run::Block {
                offset: *off as i64,
                len: p.size(),
                stride: 0,
                count: 1,
            });
        }
        let first = members[0].0;
        let uniform = members.iter().all(|(p, _)| *p == first).then_some(first);
        let props = Props {
            size: members.iter().map(|(p, _)| p.size()).sum(),
            external32_size: members.iter().map(|(p, _)| p.external32_size()).sum(),
            lb: 0,
            ub: n.extent() as i64,
            true_lb: 0,
            true_ub: members
                .iter()
                .map(|(p, off)| (off + p.size()) as i64)
                .max()
                .unwrap_or(0),
            align: n.align(),
            elements: members.len() as u64,
            uniform,
        };
        Datatype(Arc::new(Node {
            contents: Contents::Named(n),
            props,
            flat: Arc::new(flat),
            signature: Signature::Leaf(members.iter().map(|(p, _)| *p).collect()),
        }))
    }

    /// A predefined basic datatype.
    pub fn primitive(p: Primitive) -> Datatype {
        Datatype::named(Named::Basic(p))
    }

    /// `MPI_Type_contiguous`.
    pub fn contiguous(count: usize, oldtype: &Datatype) -> Result<Datatype, DatatypeError> {
        let mut b = Builder::new();
        b.add(oldtype, 0, u(count), 1, 0);
        b.finish(
            Contents::Contiguous {
                count,
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_vector`: `stride` is in extents of `oldtype`.
    pub fn vector(
        count: usize,
        blocklength: usize,
        stride: i64,
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let bytes = scaled(stride, oldtype.extent())?;
        let mut b = Builder::new();
        b.add(oldtype, 0, u(blocklength), u(count), bytes);
        b.finish(
            Contents::Vector {
                count,
                blocklength,
                stride,
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_create_hvector`: `stride` is in bytes.
    pub fn hvector(
        count: usize,
        blocklength: usize,
        stride: i64,
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let mut b = Builder::new();
        b.add(oldtype, 0, u(blocklength), u(count), stride);
        b.finish(
            Contents::Hvector {
                count,
                blocklength,
                stride,
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_indexed`: displacements in extents of `oldtype`.
    pub fn indexed(
        blocklengths: &[usize],
        displacements: &[i64],
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        check_len(
            "indexed displacements",
            blocklengths.len(),
            displacements.len(),
        )?;
        let mut b = Builder::new();
        for (&bl, &d) in blocklengths.iter().zip(displacements) {
            b.add(oldtype, scaled(d, oldtype.extent())?, u(bl), 1, 0);
        }
        b.finish(
            Contents::Indexed {
                blocklengths: blocklengths.to_vec(),
                displacements: displacements.to_vec(),
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_create_hindexed`: displacements in bytes.
    pub fn hindexed(
        blocklengths: &[usize],
        displacements: &[i64],
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        check_len(
            "hindexed displacements",
            blocklengths.len(),
            displacements.len(),
        )?;
        let mut b = Builder::new();
        for (&bl, &d) in blocklengths.iter().zip(displacements) {
            b.add(oldtype, d, u(bl), 1, 0);
        }
        b.finish(
            Contents::Hindexed {
                blocklengths: blocklengths.to_vec(),
                displacements: displacements.to_vec(),
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_create_indexed_block`: displacements in extents of `oldtype`.
    pub fn indexed_block(
        blocklength: usize,
        displacements: &[i64],
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let mut b = Builder::new();
        for &d in displacements {
            b.add(oldtype, scaled(d, oldtype.extent())?, u(blocklength), 1, 0);
        }
        b.finish(
            Contents::IndexedBlock {
                blocklength,
                displacements: displacements.to_vec(),
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_create_hindexed_block`: displacements in bytes.
    pub fn hindexed_block(
        blocklength: usize,
        displacements: &[i64],
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let mut b = Builder::new();
        for &d in displacements {
            b.add(oldtype, d, u(blocklength), 1, 0);
        }
        b.finish(
            Contents::HindexedBlock {
                blocklength,
                displacements: displacements.to_vec(),
                oldtype: oldtype.clone(),
            },
            false,
        )
    }

    /// `MPI_Type_create_struct`. As in MPICH, the extent is padded up to
    /// the alignment of the most-aligned member (over blocks of nonzero
    /// length), except when every entry names the same type, which MPICH
    /// treats as an hindexed type (no padding).
    pub fn create_struct(
        blocklengths: &[usize],
        displacements: &[i64],
        types: &[Datatype],
    ) -> Result<Datatype, DatatypeError> {
        check_len(
            "struct displacements",
            blocklengths.len(),
            displacements.len(),
        )?;
        check_len("struct types", blocklengths.len(), types.len())?;
        let mut b = Builder::new();
        for ((&bl, &d), t) in blocklengths.iter().zip(displacements).zip(types) {
            b.add(t, d, u(bl), 1, 0);
        }
        let all_same = types.windows(2).all(|w| w[0].same_handle(&w[1]));
        b.finish(
            Contents::Struct {
                blocklengths: blocklengths.to_vec(),
                displacements: displacements.to_vec(),
                types: types.to_vec(),
            },
            !all_same,
        )
    }

    /// `MPI_Type_create_subarray`.
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        order: Order,
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let lowered = subarray::lower(sizes, subsizes, starts, order, oldtype)?;
        Ok(lowered.relabel(Contents::Subarray {
            sizes: sizes.to_vec(),
            subsizes: subsizes.to_vec(),
            starts: starts.to_vec(),
            order,
            oldtype: oldtype.clone(),
        }))
    }

    /// `MPI_Type_create_darray`, following the MPI standard's definition
    /// (row-major process grid; block, cyclic and none distributions).
    #[allow(clippy::too_many_arguments)]
    pub fn darray(
        size: usize,
        rank: usize,
        gsizes: &[usize],
        distribs: &[Distribution],
        psizes: &[usize],
        order: Order,
        oldtype: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let lowered = darray::lower(size, rank, gsizes, distribs, psizes, order, oldtype)?;
        Ok(lowered.relabel(Contents::Darray {
            size,
            rank,
            gsizes: gsizes.to_vec(),
            distribs: distribs.to_vec(),
            psizes: psizes.to_vec(),
            order,
            oldtype: oldtype.clone(),
        }))
    }

    /// `MPI_Type_create_resized`.
    pub fn resized(oldtype: &Datatype, lb: i64, extent: i64) -> Result<Datatype, DatatypeError> {
        let ub = to_i64(lb as i128 + extent as i128)?;
        let p = oldtype.0.props;
        Ok(Datatype(Arc::new(Node {
            contents: Contents::Resized {
                lb,
                extent,
                oldtype: oldtype.clone(),
            },
            props: Props { lb, ub, ..p },
            flat: Arc::clone(&oldtype.0.flat),
            signature: Signature::Seq(vec![(1, oldtype.clone())]),
        })))
    }

    /// `MPI_Type_dup`.
    pub fn dup(oldtype: &Datatype) -> Datatype {
        oldtype.relabel(Contents::Dup {
            oldtype: oldtype.clone(),
        })
    }

    /// `MPI_Type_create_f90_*`: the layout of `named`, recorded as made
    /// from `integers` (precision and range, or range alone).
    pub fn f90(kind: F90Kind, integers: Vec<i64>, named: &Datatype) -> Datatype {
        named.relabel(Contents::F90 {
            kind,
            integers,
            named: named.clone(),
        })
    }

    /// Same layout, different constructor record.
    fn relabel(&self, contents: Contents) -> Datatype {
        Datatype(Arc::new(Node {
            contents,
            props: self.0.props,
            flat: Arc::clone(&self.0.flat),
            signature: Signature::Seq(vec![(1, self.clone())]),
        }))
    }

    /// Whether `self` and `other` are the same datatype object (the same
    /// handle, for derived types; the same predefined type otherwise).
    pub fn same_handle(&self, other: &Datatype) -> bool {
        if Arc::ptr_eq(&self.0, &other.0) {
            return true;
        }
        matches!(
            (&self.0.contents, &other.0.contents),
            (Contents::Named(a), Contents::Named(b)) if a == b
        )
    }

    /// `MPI_Type_size`: bytes of data in one instance.
    pub fn size(&self) -> u64 {
        self.0.props.size
    }

    /// Bytes one instance takes in external32.
    pub fn external32_size(&self) -> u64 {
        self.0.props.external32_size
    }

    pub fn lb(&self) -> i64 {
        self.0.props.lb
    }

    pub fn ub(&self) -> i64 {
        self.0.props.ub
    }

    /// `ub - lb` (negative extents are possible through `resized`).
    pub fn extent(&self) -> i64 {
        self.0.props.ub.wrapping_sub(self.0.props.lb)
    }

    pub fn true_lb(&self) -> i64 {
        self.0.props.true_lb
    }

    pub fn true_ub(&self) -> i64 {
        self.0.props.true_ub
    }

    pub fn true_extent(&self) -> i64 {
        self.0.props.true_ub.wrapping_sub(self.0.props.true_lb)
    }

    /// Alignment used for struct padding (of the most-aligned basic member).
    pub fn alignment(&self) -> u64 {
        self.0.props.align
    }

    /// Number of basic elements in one instance (pair types count two).
    pub fn elements(&self) -> u64 {
        self.0.props.elements
    }

    /// The basic kind of every element, when there is exactly one.
    pub fn uniform_primitive(&self) -> Option<Primitive> {
        self.0.props.uniform
    }

    /// True when `count` instances occupy exactly `count * size` bytes
    /// from `lb` with no gaps (so pack is one copy).
    pub fn is_contiguous(&self) -> bool {
        let p = &self.0.props;
        if p.size == 0 {
            return true;
        }
        let runs = self.0.flat.runs();
        matches!(
            runs,
            [crate::flat::Run::Block { offset, len, count: 1, .. }]
                if *offset == p.lb && *len == p.size
        ) && self.extent() == p.size as i64
    }

    /// The flattened type map of one instance.
    pub fn flat(&self) -> &Flat {
        &self.0.flat
    }

    /// Basic elements in the first `bytes` packed bytes of a message of
    /// this type (`MPI_Get_elements`); `None` when `bytes` ends inside a
    /// basic element (`MPI_UNDEFINED`).
    pub fn elements_in_bytes(&self, bytes: u64) -> Option<u64> {
        let p = &self.0.props;
        if p.size == 0 {
            return (bytes == 0).then_some(0);
        }
        let whole = bytes / p.size;
        let partial = self.partial_elements(bytes % p.size)?;
        whole.checked_mul(p.elements)?.checked_add(partial)
    }

    /// Elements in the first `rem` (< size) packed bytes of one instance.
    fn partial_elements(&self, mut rem: u64) -> Option<u64> {
        if rem == 0 {
            return Some(0);
        }
        if let Some(prim) = self.0.props.uniform {
            return (rem % prim.size() == 0).then_some(rem / prim.size());
        }
        let mut count = 0u64;
        match &self.0.signature {
            Signature::Leaf(prims) => {
                for p in prims {
                    if rem < p.size() {
                        break;
                    }
                    rem -= p.size();
                    count += 1;
                }
                (rem == 0).then_some(count)
            }
            Signature::Seq(seq) => {
                for (n, child) in seq {
                    let cs = child.size();
                    if cs == 0 {
                        continue;
                    }
                    let all = n.checked_mul(cs)?;
                    if rem >= all {
                        rem -= all;
                        count += n * child.elements();
                        continue;
                    }
                    let k = rem / cs;
                    count += k * child.elements() + child.partial_elements(rem % cs)?;
                    return Some(count);
                }
                (rem == 0).then_some(count)
            }
        }
    }

    /// Calls `f(kind, n)` for runs of `n` consecutive basic elements of
    /// kind `kind` in the type signature of `reps` instances.
    pub(crate) fn for_each_signature_run(
        &self,
        reps: u64,
        f: &mut impl FnMut(Primitive, u64) -> Result<(), DatatypeError>,
    ) -> Result<(), DatatypeError> {
        if reps == 0 || self.0.props.elements == 0 {
            return Ok(());
        }
        if let Some(p) = self.0.props.uniform {
            let n = reps
                .checked_mul(self.0.props.elements)
                .ok_or(DatatypeError::Overflow)?;
            return f(p, n);
        }
        for _ in 0..reps {
            match &self.0.signature {
                Signature::Leaf(prims) => {
                    for p in prims {
                        f(*p, 1)?;
                    }
                }
                Signature::Seq(seq) => {
                    for (n, child) in seq {
                        child.for_each_signature_run(*n, f)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `MPI_Type_get_envelope`.
    pub fn envelope(&self) -> Envelope {
        use Contents as C;
        let (combiner, ni, na, nd) = match &self.0.contents {
            C::Named(_) => (Combiner::Named, 0, 0, 0),
            C::Dup { .. } => (Combiner::Dup, 0, 0, 1),
            C::Contiguous { .. } => (Combiner::Contiguous, 1, 0, 1),
            C::Vector { .. } => (Combiner::Vector, 3, 0, 1),
            C::Hvector { .. } => (Combiner::Hvector, 2, 1, 1),
            C::Indexed { blocklengths, .. } => {
                (Combiner::Indexed, 2 * blocklengths.len() + 1, 0, 1)
            }
            C::Hindexed { blocklengths, .. } => {
                let n = blocklengths.len();
                (Combiner::Hindexed, n + 1, n, 1)
            }
            C::IndexedBlock { displacements, .. } => {
                (Combiner::IndexedBlock, displacements.len() + 2, 0, 1)
            }
            C::HindexedBlock { displacements, .. } => {
                (Combiner::HindexedBlock, 2, displacements.len(), 1)
            }
            C::Struct { blocklengths, .. } => {
                let n = blocklengths.len();
                (Combiner::Struct, n + 1, n, n)
            }
            C::Subarray { sizes, .. } => (Combiner::Subarray, 3 * sizes.len() + 2, 0, 1),
            C::Darray { gsizes, .. } => (Combiner::Darray, 4 * gsizes.len() + 4, 0, 1),
            C::Resized { .. } => (Combiner::Resized, 0, 2, 1),
            C::F90 { kind, integers, .. } => {
                let combiner = match kind {
                    F90Kind::Real => Combiner::F90Real,
                    F90Kind::Complex => Combiner::F90Complex,
                    F90Kind::Integer => Combiner::F90Integer,
                };
                (combiner, integers.len(), 0, 0)
            }
        };
        Envelope {
            combiner,
            num_integers: ni,
            num_addresses: na,
            num_datatypes: nd,
        }
    }

    /// `MPI_Type_get_contents`, structured.
    pub fn contents(&self) -> &Contents {
        &self.0.contents
    }
}

impl From<Primitive> for Datatype {
    fn from(p: Primitive) -> Self {
        Datatype::primitive(p)
    }
}

impl From<Named> for Datatype {
    fn from(n: Named) -> Self {
        Datatype::named(n)
    }
}

fn ints(v: &[usize]) -> impl Iterator<Item = i64> + '_ {
    v.iter().map(|&x| x as i64)
}

impl Contents {
    /// The integer arguments in `MPI_Type_get_contents` order.
    pub fn integers(&self, codes: &AbiCodes) -> Vec<i64> {
        let order = |o: &Order| match o {
            Order::C => codes.order_c,
            Order::Fortran => codes.order_fortran,
        };
        let darg = |d: &Option<usize>| d.map_or(codes.distribute_dflt_darg, |v| v as i64);
        match self {
            Contents::Named(_) | Contents::Dup { .. } | Contents::Resized { .. } => vec![],
            Contents::F90 { integers, .. } => integers.clone(),
            Contents::Contiguous { count, .. } => vec![*count as i64],
            Contents::Vector {
                count,
                blocklength,
                stride,
                ..
            } => vec![*count as i64, *blocklength as i64, *stride],
            Contents::Hvector {
                count, blocklength, ..
            } => vec![*count as i64, *blocklength as i64],
            Contents::Indexed {
                blocklengths,
                displacements,
                ..
            } => std::iter::once(blocklengths.len() as i64)
                .chain(ints(blocklengths))
                .chain(displacements.iter().copied())
                .collect(),
            Contents::Hindexed { blocklengths, .. } | Contents::Struct { blocklengths, .. } => {
                std::iter::once(blocklengths.len() as i64)
                    .chain(ints(blocklengths))
                    .collect()
            }
            Contents::IndexedBlock {
                blocklength,
                displacements,
                ..
            } => [displacements.len() as i64, *blocklength as i64]
                .into_iter()
                .chain(displacements.iter().copied())
                .collect(),
            Contents::HindexedBlock {
                blocklength,
                displacements,
                ..
            } => vec![displacements.len() as i64, *blocklength as i64],
            Contents::Subarray {
                sizes,
                subsizes,
                starts,
                order: o,
                ..
            } => std::iter::once(sizes.len() as i64)
                .chain(ints(sizes))
                .chain(ints(subsizes))
                .chain(ints(starts))
                .chain(std::iter::once(order(o)))
                .collect(),
            Contents::Darray {
                size,
                rank,
                gsizes,
                distribs,
                psizes,
                order: o,
                ..
            } => {
                let kinds = distribs.iter().map(|d| match d {
                    Distribution::Block(_) => codes.distribute_block,
                    Distribution::Cyclic(_) => codes.distribute_cyclic,
                    Distribution::None => codes.distribute_none,
                });
                let dargs = distribs.iter().map(|d| match d {
                    Distribution::Block(a) | Distribution::Cyclic(a) => darg(a),
                    Distribution::None => codes.distribute_dflt_darg,
                });
                [*size as i64, *rank as i64, gsizes.len() as i64]
                    .into_iter()
                    .chain(ints(gsizes))
                    .chain(kinds)
                    .chain(dargs)
                    .chain(ints(psizes))
                    .chain(std::iter::once(order(o)))
                    .collect()
            }
        }
    }

    /// The address-sized arguments in `MPI_Type_get_contents` order.
    pub fn addresses(&self) -> Vec<i64> {
        match self {
            Contents::Hvector { stride, .. } => vec![*stride],
            Contents::Hindexed { displacements, .. }
            | Contents::HindexedBlock { displacements, .. }
            | Contents::Struct { displacements, .. } => displacements.clone(),
            Contents::Resized { lb, extent, .. } => vec![*lb, *extent],
            _ => vec![],
        }
    }

    /// The datatype arguments in `MPI_Type_get_contents` order.
    pub fn datatypes(&self) -> Vec<Datatype> {
        match self {
            Contents::Named(_) | Contents::F90 { .. } => vec![],
            Contents::Struct { types, .. } => types.clone(),
            Contents::Dup { oldtype }
            | Contents::Contiguous { oldtype, .. }
            | Contents::Vector { oldtype, .. }
            | Contents::Hvector { oldtype, .. }
            | Contents::Indexed { oldtype, .. }
            | Contents::Hindexed { oldtype, .. }
            | Contents::IndexedBlock { oldtype, .. }
            | Contents::HindexedBlock { oldtype, .. }
            | Contents::Subarray { oldtype, .. }
            | Contents::Darray { oldtype, .. }
            | Contents::Resized { oldtype, .. } => vec![oldtype.clone()],
        }
    }
}
