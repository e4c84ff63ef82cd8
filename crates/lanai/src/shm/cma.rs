//! Single-copy reads from another process (cross-memory attach), between
//! lists of segments on both sides, so non-contiguous data moves without
//! a temporary.

use crate::abi::userbuf::UserBuf;
use nix::errno::Errno;

/// Entries per `process_vm_readv` iovec array (the kernel's `IOV_MAX`).
pub const IOV_MAX: usize = 1024;

/// `count` pieces of `len` bytes at `addr + k * stride` in the sender's
/// memory: the wire form of a rendezvous sender's data (an RTS payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRun {
    pub addr: u64,
    pub len: u64,
    pub stride: i64,
    pub count: u64,
}

/// Bytes per encoded run.
const RUN_BYTES: usize = 32;

impl RemoteRun {
    fn bytes(&self) -> Option<u64> {
        self.len.checked_mul(self.count)
    }
}

/// The runs covering a buffer's segments, merging equal-length pieces at
/// a regular stride; `None` when more than `max_runs` runs or more than
/// `max_pieces` pieces would be needed (then packing is cheaper).
pub fn runs_of(buf: &UserBuf, max_runs: usize, max_pieces: usize) -> Option<Vec<RemoteRun>> {
    let mut runs: Vec<RemoteRun> = Vec::new();
    for (pieces, (addr, len)) in buf.segments().enumerate() {
        if pieces >= max_pieces {
            return None;
        }
        let (addr, len) = (addr as u64, len as u64);
        if let Some(r) = runs.last_mut() {
            if r.count == 1 && r.addr.wrapping_add(r.len) == addr {
                r.len += len;
                continue;
            }
            if r.len == len {
                let next = r.addr.wrapping_add((r.stride as u64).wrapping_mul(r.count));
                if r.count == 1 || next == addr {
                    if r.count == 1 {
                        r.stride = addr.wrapping_sub(r.addr) as i64;
                    }
                    r.count += 1;
                    continue;
                }
            }
        }
        if runs.len() >= max_runs {
            return None;
        }
        runs.push(RemoteRun {
            addr,
            len,
            stride: 0,
            count: 1,
        });
    }
    Some(runs)
}

/// The wire form of `runs`: 32 little-endian bytes each.
pub fn encode(runs: &[RemoteRun]) -> Vec<u8> {
    let mut out = Vec::with_capacity(runs.len() * RUN_BYTES);
    for r in runs {
        out.extend_from_slice(&r.addr.to_le_bytes());
        out.extend_from_slice(&r.len.to_le_bytes());
        out.extend_from_slice(&r.stride.to_le_bytes());
        out.extend_from_slice(&r.count.to_le_bytes());
    }
    out
}

/// Decodes runs that must add up to exactly `total` bytes; `None` for a
/// malformed list.
pub fn decode(payload: &[u8], total: u64) -> Option<Vec<RemoteRun>> {
    if !payload.len().is_multiple_of(RUN_BYTES) {
        return None;
    }
    let word = |c: &[u8], i: usize| {
        c.get(i * 8..i * 8 + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    let mut sum = 0u64;
    let mut runs = Vec::with_capacity(payload.len() / RUN_BYTES);
    for c in payload.chunks_exact(RUN_BYTES) {
        let r = RemoteRun {
            addr: word(c, 0)?,
            len: word(c, 1)?,
            stride: word(c, 2)? as i64,
            count: word(c, 3)?,
        };
        sum = sum.checked_add(r.bytes()?)?;
        runs.push(r);
    }
    (sum == total).then_some(runs)
}

/// The (address, length) pieces of `runs`, in order.
fn pieces(runs: &[RemoteRun]) -> impl Iterator<Item = (usize, usize)> + '_ {
    runs.iter().flat_map(|r| {
        (0..r.count).map(move |k| {
            let at = r.addr.wrapping_add((r.stride as u64).wrapping_mul(k));
            (at as usize, r.len as usize)
        })
    })
}

/// Up to `IOV_MAX` pieces, the first starting `skip` bytes in, refilled
/// from `src` as the front is consumed.
struct Window<I> {
    src: I,
    iov: Vec<libc::iovec>,
    /// Bytes still to hand out from `src` (caps the last piece).
    left: usize,
}

impl<I: Iterator<Item = (usize, usize)>> Window<I> {
    fn new(src: I, limit: usize) -> Self {
        Window {
            src,
            iov: Vec::with_capacity(IOV_MAX),
            left: limit,
        }
    }

    fn fill(&mut self) {
        while self.iov.len() < IOV_MAX && self.left > 0 {
            let Some((addr, len)) = self.src.next() else {
                self.left = 0;
                break;
            };
            let len = len.min(self.left);
            self.left -= len;
            if len > 0 {
                self.iov.push(libc::iovec {
                    iov_base: addr as *mut libc::c_void,
                    iov_len: len,
                });
            }
        }
    }

    /// Drops `n` transferred bytes from the front.
    fn consume(&mut self, mut n: usize) {
        let mut whole = 0;
        for v in &mut self.iov {
            if n < v.iov_len {
                v.iov_base = (v.iov_base as usize + n) as *mut libc::c_void;
                v.iov_len -= n;
                break;
            }
            n -= v.iov_len;
            whole += 1;
        }
        self.iov.drain(..whole);
    }
}

/// Copies the first `n` bytes of the sender's `runs` in process `pid`
/// into `dst`'s segments (never past `dst`'s data), `IOV_MAX` pieces a
/// call, resuming after partial transfers. Fails with EPERM where the
/// kernel forbids it (then rendezvous falls back to streaming).
pub fn read_into(pid: i32, runs: &[RemoteRun], dst: &UserBuf, n: usize) -> nix::Result<()> {
    let n = n.min(dst.len());
    let mut remote = Window::new(pieces(runs), n);
    let mut local = Window::new(dst.segments(), n);
    // SAFETY: the local pieces are `dst`'s, user memory that its contract
    // keeps valid and writable until the receive completes.
    unsafe { transfer(pid, &mut remote, &mut local, n) }
}

/// As [`read_into`], for a destination cut into pieces too small to be
/// worth an iovec each: the data comes through `scratch`, a chunk at a
/// time, and is unpacked from there into `dst`'s layout.
pub fn read_through(
    pid: i32,
    runs: &[RemoteRun],
    dst: &UserBuf,
    n: usize,
    scratch: &mut [u8],
) -> nix::Result<()> {
    let n = n.min(dst.len());
    if scratch.is_empty() && n > 0 {
        return Err(Errno::EINVAL);
    }
    let mut remote = Window::new(pieces(runs), n);
    let mut done = 0;
    while done < n {
        let want = scratch.len().min(n - done);
        let mut local = Window::new(std::iter::once((scratch.as_mut_ptr() as usize, want)), want);
        // SAFETY: the local piece is `scratch`, borrowed mutably here.
        unsafe { transfer(pid, &mut remote, &mut local, want)? };
        dst.write_at(done, &scratch[..want]);
        done += want;
    }
    Ok(())
}

/// Moves `n` bytes from the `remote` pieces of process `pid` into the
/// `local` ones, refilling both windows as they drain.
///
/// # Safety
/// Every local piece is memory this process may write, and nothing else
/// accesses it during the call.
unsafe fn transfer<R, L>(
    pid: i32,
    remote: &mut Window<R>,
    local: &mut Window<L>,
    n: usize,
) -> nix::Result<()>
where
    R: Iterator<Item = (usize, usize)>,
    L: Iterator<Item = (usize, usize)>,
{
    let mut done = 0;
    while done < n {
        remote.fill();
        local.fill();
        if remote.iov.is_empty() || local.iov.is_empty() {
            return Err(Errno::EFAULT);
        }
        // SAFETY: per this function's contract for the local iovecs; the
        // kernel checks the remote ones against `pid`.
        let got = unsafe {
            libc::process_vm_readv(
                pid,
                local.iov.as_ptr(),
                local.iov.len() as libc::c_ulong,
                remote.iov.as_ptr(),
                remote.iov.len() as libc::c_ulong,
                0,
            )
        };
        if got < 0 {
            return Err(Errno::last());
        }
        if got == 0 {
            return Err(Errno::EFAULT);
        }
        let got = got as usize;
        remote.consume(got);
        local.consume(got);
        done += got;
    }
    Ok(())
}

/// Copies `src` into process `pid` at `addr`: a rendezvous sender's part
/// of a copy it shares with the receiver, which reads the rest meanwhile.
pub fn write_to(pid: i32, src: &[u8], addr: u64) -> nix::Result<()> {
    // SAFETY: `src` is readable for its length, and a write only reads it.
    unsafe { one_range(pid, src.as_ptr().cast_mut(), addr, src.len(), Dir::Out) }
}

/// Which way [`one_range`] copies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    In,
    Out,
}

/// Copies `len` bytes between `local` here and `remote` in process `pid`:
/// into `local` (`Dir::In`) or out of it (`Dir::Out`).
///
/// # Safety
/// `local` points to `len` bytes this process owns, writable for
/// `Dir::In`, which nothing else accesses during the call.
unsafe fn one_range(
    pid: i32,
    local: *mut u8,
    remote: u64,
    len: usize,
    dir: Dir,
) -> nix::Result<()> {
    let mut done = 0;
    while done < len {
        let l = libc::iovec {
            iov_base: local.wrapping_add(done).cast(),
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: remote.wrapping_add(done as u64) as usize as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: the local iovec lies inside `local`'s `len` bytes, per the
        // contract; the kernel checks the remote one against `pid`.
        let got = unsafe {
            match dir {
                Dir::In => libc::process_vm_readv(pid, &l, 1, &r, 1, 0),
                Dir::Out => libc::process_vm_writev(pid, &l, 1, &r, 1, 0),
            }
        };
        if got < 0 {
            return Err(Errno::last());
        }
        if got == 0 {
            return Err(Errno::EFAULT);
        }
        done += got as usize;
    }
    Ok(())
}

/// Copies `dst.len()` bytes from `addr` in process `pid` into `dst`: the
/// one-run case of [`read_into`].
pub fn read_from(pid: i32, addr: usize, dst: &UserBuf) -> nix::Result<()> {
    let run = RemoteRun {
        addr: addr as u64,
        len: dst.len() as u64,
        stride: 0,
        count: 1,
    };
    read_into(pid, &[run], dst, dst.len())
}

/// Lets the node's other ranks read and write this process's memory with
/// `process_vm_readv`/`writev`. Under Yama's `ptrace_scope` 1 (the default
/// on many distributions) only an ancestor may, and ranks are siblings, so
/// without this every single copy would fail and fall back to the ring.
/// The permission covers processes of the same user only, as ptrace does;
/// a kernel without Yama ignores it.
pub fn allow_peer_access() {
    // SAFETY: PR_SET_PTRACER takes a pid (here "any") and touches no memory
    // of ours; failure (no Yama) leaves everything as it was.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
    }
}

/// Reads `len` bytes at `addr` in process `pid` into a new vector, without
/// zeroing it first: a collective message passed by reference.
pub fn read_vec(pid: i32, addr: u64, len: usize) -> nix::Result<Vec<u8>> {
    let mut v: Vec<u8> = Vec::new();
    // A length no allocation can hold is an error, not a panic in the poll.
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: the vector's capacity is `len` writable bytes that nothing
    // else references.
    unsafe { one_range(pid, v.as_mut_ptr(), addr, len, Dir::In)? };
    // SAFETY: `one_range` returns Ok only once all `len` bytes are written.
    unsafe { v.set_len(len) };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::userbuf::Layout;
    use lanai_datatype::{Datatype, Primitive};

    fn me() -> i32 {
        std::process::id() as i32
    }

    #[test]
    fn read_vec_copies_from_a_process_and_fails_on_a_bad_address() {
        let src: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let got = read_vec(me(), src.as_ptr() as u64, src.len()).unwrap();
        assert_eq!(got, src);
        assert!(read_vec(me(), 8, 16).is_err());
        assert_eq!(read_vec(me(), 8, 0).unwrap(), Vec::<u8>::new());
        assert_eq!(read_vec(me(), 8, usize::MAX), Err(Errno::ENOMEM));
    }

    #[test]
    fn codec_round_trips_and_rejects_bad_lengths() {
        let runs = vec![
            RemoteRun {
                addr: 4096,
                len: 8,
                stride: -16,
                count: 3,
            },
            RemoteRun {
                addr: 1,
                len: 5,
                stride: 0,
                count: 1,
            },
        ];
        let wire = encode(&runs);
        assert_eq!(decode(&wire, 29), Some(runs));
        assert_eq!(decode(&wire, 30), None);
        assert_eq!(decode(&wire[..40], 24), None);
        let huge = encode(&[RemoteRun {
            addr: 0,
            len: u64::MAX,
            stride: 0,
            count: 2,
        }]);
        assert_eq!(decode(&huge, 0), None);
    }

    #[test]
    fn segmented_read_within_this_process() {
        // Source: 3000 blocks of 3 ints every 5 ints (more pieces than
        // IOV_MAX); destination: blocks of 2 ints every 3 ints.
        let int = Datatype::primitive(Primitive::Int32);
        let sv = Datatype::vector(3000, 3, 5, &int).expect("vector");
        let mut src: Vec<i32> = (0..15_000).collect();
        // SAFETY: `src` outlives the layout and holds every touched byte.
        let sl = unsafe { Layout::new(sv, 1, src.as_mut_ptr().cast(), 60_000, 0, 36_000) };
        // SAFETY: `sl` outlives the buffer.
        let sb = unsafe { UserBuf::segmented(&sl) };
        let runs = runs_of(&sb, 16, usize::MAX).expect("one strided run");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].count, 3000);

        let dv = Datatype::vector(4500, 2, 3, &int).expect("vector");
        let mut dst = vec![-1i32; 13_500];
        // SAFETY: as above.
        let dl = unsafe { Layout::new(dv, 1, dst.as_mut_ptr().cast(), 54_000, 0, 36_000) };
        // SAFETY: `dl` outlives the buffer.
        let db = unsafe { UserBuf::segmented(&dl) };
        let before = crate::abi::userbuf::packed_bytes();
        read_into(me(), &runs, &db, 36_000).expect("process_vm_readv on self");
        assert_eq!(crate::abi::userbuf::packed_bytes(), before);
        let sent: Vec<i32> = (0..15_000).filter(|i| i % 5 < 3).collect();
        let mut k = 0;
        for (i, v) in dst.iter().enumerate() {
            if i % 3 < 2 {
                assert_eq!(*v, sent[k], "element {i}");
                k += 1;
            } else {
                assert_eq!(*v, -1, "hole {i} untouched");
            }
        }

        // Truncation: a shorter contiguous receive gets the prefix only.
        let mut short = vec![0i32; 11];
        // SAFETY: `short` is 44 valid bytes; the read writes 40.
        let b = unsafe { UserBuf::new(short.as_mut_ptr().cast(), 40) };
        read_into(me(), &runs, &b, 36_000).expect("prefix read");
        assert_eq!(&short[..10], &sent[..10]);
        assert_eq!(short[10], 0);
    }

    #[test]
    fn read_through_scratch_fills_a_fine_layout() {
        // Destination: single bytes two apart (the case iovecs would make
        // slow), read from a contiguous source through a scratch smaller
        // than the message and not a divisor of it.
        let byte = Datatype::primitive(Primitive::Uint8);
        let spread = Datatype::resized(&byte, 0, 2).expect("resized");
        let src: Vec<u8> = (0..10_007u32).map(|i| (i * 7 % 251) as u8).collect();
        let runs = [RemoteRun {
            addr: src.as_ptr() as u64,
            len: src.len() as u64,
            stride: 0,
            count: 1,
        }];
        let mut dst = vec![0xa5u8; 2 * src.len()];
        // SAFETY: `dst` holds every byte of 10_007 instances of `spread`.
        let dl = unsafe { Layout::new(spread, 10_007, dst.as_mut_ptr(), dst.len() - 1, 0, 10_007) };
        // SAFETY: `dl` outlives the buffer.
        let db = unsafe { UserBuf::segmented(&dl) };
        assert_eq!(db.mean_piece(), 1);
        let mut scratch = vec![0u8; 999];
        read_through(me(), &runs, &db, src.len(), &mut scratch).expect("read through scratch");
        for (i, &v) in src.iter().enumerate() {
            assert_eq!(dst[2 * i], v, "element {i}");
            assert_eq!(dst[2 * i + 1], 0xa5, "hole {i}");
        }
    }

    #[test]
    fn write_to_fills_the_remote_range_only() {
        let src: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let mut dst = vec![0u8; 400_000];
        let at = dst.as_mut_ptr() as u64 + 1000;
        write_to(me(), &src, at).expect("write to ourselves");
        assert!(dst[..1000].iter().all(|&b| b == 0));
        assert_eq!(&dst[1000..301_000], &src[..]);
        assert!(dst[301_000..].iter().all(|&b| b == 0));
        assert_eq!(write_to(me(), &src, 8), Err(Errno::EFAULT));
    }
}
