//! A naive reference: expands a datatype's constructor arguments into its
//! full type map (offset, basic kind), element by element, without using
//! the crate's flattening, and packs by walking it.

#![allow(dead_code)]

use lanai_datatype::{Contents, Datatype, Distribution, Order, Primitive};

pub type TypeMap = Vec<(i64, Primitive)>;

pub fn typemap(dt: &Datatype) -> TypeMap {
    let child = |t: &Datatype, disp: i64, n: usize, out: &mut TypeMap| {
        let tm = typemap(t);
        for k in 0..n as i64 {
            for (o, p) in &tm {
                out.push((disp + k * t.extent() + o, *p));
            }
        }
    };
    let mut out = Vec::new();
    match dt.contents() {
        Contents::Named(n) => {
            for (p, off) in n.members() {
                out.push((off as i64, p));
            }
        }
        Contents::Dup { oldtype }
        | Contents::Resized { oldtype, .. }
        | Contents::F90 { named: oldtype, .. } => child(oldtype, 0, 1, &mut out),
        Contents::Contiguous { count, oldtype } => child(oldtype, 0, *count, &mut out),
        Contents::Vector {
            count,
            blocklength,
            stride,
            oldtype,
        } => {
            for i in 0..*count as i64 {
                child(
                    oldtype,
                    i * stride * oldtype.extent(),
                    *blocklength,
                    &mut out,
                );
            }
        }
        Contents::Hvector {
            count,
            blocklength,
            stride,
            oldtype,
        } => {
            for i in 0..*count as i64 {
                child(oldtype, i * stride, *blocklength, &mut out);
            }
        }
        Contents::Indexed {
            blocklengths,
            displacements,
            oldtype,
        } => {
            for (b, d) in blocklengths.iter().zip(displacements) {
                child(oldtype, d * oldtype.extent(), *b, &mut out);
            }
        }
        Contents::Hindexed {
            blocklengths,
            displacements,
            oldtype,
        } => {
            for (b, d) in blocklengths.iter().zip(displacements) {
                child(oldtype, *d, *b, &mut out);
            }
        }
        Contents::IndexedBlock {
            blocklength,
            displacements,
            oldtype,
        } => {
            for d in displacements {
                child(oldtype, d * oldtype.extent(), *blocklength, &mut out);
            }
        }
        Contents::HindexedBlock {
            blocklength,
            displacements,
            oldtype,
        } => {
            for d in displacements {
                child(oldtype, *d, *blocklength, &mut out);
            }
        }
        Contents::Struct {
            blocklengths,
            displacements,
            types,
        } => {
            for ((b, d), t) in blocklengths.iter().zip(displacements).zip(types) {
                child(t, *d, *b, &mut out);
            }
        }
        Contents::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            oldtype,
        } => {
            for idx in indices_in_storage_order(sizes, *order) {
                let inside = (0..sizes.len())
                    .all(|d| idx[d] >= starts[d] && idx[d] < starts[d] + subsizes[d]);
                if inside {
                    let lin = linear(&idx, sizes, *order);
                    child(oldtype, lin as i64 * oldtype.extent(), 1, &mut out);
                }
            }
        }
        Contents::Darray {
            rank,
            gsizes,
            distribs,
            psizes,
            order,
            oldtype,
            ..
        } => {
            let n = gsizes.len();
            let mut coords = vec![0; n];
            let mut r = *rank;
            for d in (0..n).rev() {
                coords[d] = r % psizes[d];
                r /= psizes[d];
            }
            for idx in indices_in_storage_order(gsizes, *order) {
                let mine = (0..n).all(|d| {
                    let darg = match distribs[d] {
                        Distribution::None => return true,
                        Distribution::Block(a) => a.unwrap_or(gsizes[d].div_ceil(psizes[d])),
                        Distribution::Cyclic(a) => a.unwrap_or(1),
                    };
                    (idx[d] / darg) % psizes[d] == coords[d]
                });
                if mine {
                    let lin = linear(&idx, gsizes, *order);
                    child(oldtype, lin as i64 * oldtype.extent(), 1, &mut out);
                }
            }
        }
    }
    out
}

/// All index tuples of an array, in memory order.
fn indices_in_storage_order(sizes: &[usize], order: Order) -> Vec<Vec<usize>> {
    let total: usize = sizes.iter().product();
    (0..total)
        .map(|mut lin| {
            let mut idx = vec![0; sizes.len()];
            let dims: Vec<usize> = match order {
                Order::C => (0..sizes.len()).rev().collect(),
                Order::Fortran => (0..sizes.len()).collect(),
            };
            for d in dims {
                idx[d] = lin % sizes[d];
                lin /= sizes[d];
            }
            idx
        })
        .collect()
}

fn linear(idx: &[usize], sizes: &[usize], order: Order) -> usize {
    let dims: Vec<usize> = match order {
        Order::C => (0..sizes.len()).collect(),
        Order::Fortran => (0..sizes.len()).rev().collect(),
    };
    dims.iter().fold(0, |acc, &d| acc * sizes[d] + idx[d])
}

/// Naive pack of `count` instances: `None` if any byte falls outside `buf`.
pub fn naive_pack(dt: &Datatype, count: usize, buf: &[u8], origin: usize) -> Option<Vec<u8>> {
    let tm = typemap(dt);
    let mut out = Vec::new();
    for i in 0..count as i64 {
        for (off, p) in &tm {
            let at = origin as i64 + i * dt.extent() + off;
            let at = usize::try_from(at).ok()?;
            out.extend_from_slice(buf.get(at..at + p.size() as usize)?);
        }
    }
    Some(out)
}

/// Naive unpack of `count` instances into `buf`.
pub fn naive_unpack(dt: &Datatype, count: usize, packed: &[u8], buf: &mut [u8], origin: usize) {
    let tm = typemap(dt);
    let mut pos = 0;
    for i in 0..count as i64 {
        for (off, p) in &tm {
            let at = (origin as i64 + i * dt.extent() + off) as usize;
            let n = p.size() as usize;
            buf[at..at + n].copy_from_slice(&packed[pos..pos + n]);
            pos += n;
        }
    }
}

/// Naive external32 for kinds whose external form is a plain byte swap
/// of the native one (per component for complex kinds).
pub fn naive_external32(dt: &Datatype, count: usize, buf: &[u8], origin: usize) -> Vec<u8> {
    let tm = typemap(dt);
    let mut out = Vec::new();
    for i in 0..count as i64 {
        for (off, p) in &tm {
            let at = (origin as i64 + i * dt.extent() + off) as usize;
            let n = p.size() as usize;
            let unit = match p {
                Primitive::ComplexFloat32 | Primitive::ComplexFloat64 => n / 2,
                _ => n,
            };
            for chunk in buf[at..at + n].chunks(unit) {
                out.extend(chunk.iter().rev());
            }
        }
    }
    out
}

/// The smallest buffer (and origin) covering `count` instances, using
/// the reference type map only.
pub fn buffer_for(dt: &Datatype, count: usize) -> (usize, usize) {
    let tm = typemap(dt);
    // lo stays <= 0 so the origin is an index; hi is exact so a shorter
    // buffer must fail.
    let mut lo = 0i64;
    let mut hi = i64::MIN;
    for i in 0..count as i64 {
        for (off, p) in &tm {
            let at = i * dt.extent() + off;
            lo = lo.min(at);
            hi = hi.max(at + p.size() as i64);
        }
    }
    let hi = if hi == i64::MIN { 0 } else { hi };
    ((hi - lo).max(0) as usize, (-lo) as usize)
}
