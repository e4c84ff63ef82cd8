//! The segment a node's ranks share with their offload engine: per rank, a
//! set of descriptor slots with their data areas (seed 000's send and
//! receive tokens), and the words each side sleeps and wakes by.
//!
//! Layout: a 3-line header, then one region per local rank:
//! - line 0, written by the rank: `posted` count, pid, sleeping, detached;
//! - line 1: one state word per slot (free, posted, taken, done, failed);
//! - line 2: one result-length word per slot, written by the engine;
//! - `slots` descriptors of `DESC_LEN` bytes, then `slots` data areas.
//!
//! A slot belongs to the rank while free and again once done or failed; to
//! the engine while posted or taken. Every hand-over is a release store of
//! the state word, read with acquire, so the data it covers is visible.

use super::segment::Segment;
use crate::offload::desc::DESC_LEN;
use std::sync::atomic::{AtomicU32, Ordering};

const LINE: usize = 64;
const MAGIC: u32 = 0x4c4e_4547;
const VERSION: u32 = 1;
const HEADER: usize = 3 * LINE;
/// Most slots per rank (their state words share one cache line).
pub const MAX_SLOTS: usize = LINE / 4;
const ADDR_MAX: usize = LINE - 4;

pub const SLOT_FREE: u32 = 0;
pub const SLOT_POSTED: u32 = 1;
pub const SLOT_TAKEN: u32 = 2;
pub const SLOT_DONE: u32 = 3;
pub const SLOT_FAILED: u32 = 4;

pub const ENGINE_STARTING: u32 = 0;
pub const ENGINE_READY: u32 = 1;

/// A mapped engine segment.
#[derive(Debug)]
pub struct EngineSeg {
    seg: Segment,
    local_size: usize,
    slots: usize,
    slot_bytes: usize,
}

fn region_len(slots: usize, slot_bytes: usize) -> usize {
    3 * LINE + slots * DESC_LEN + slots * slot_bytes
}

/// Bytes a segment with this geometry needs.
pub fn seg_len(local_size: usize, slots: usize, slot_bytes: usize) -> usize {
    HEADER + local_size * region_len(slots, slot_bytes)
}

impl EngineSeg {
    /// Creates and initialises the segment (the node's first rank).
    pub fn create(
        name: &str,
        local_size: usize,
        slots: usize,
        slot_bytes: usize,
    ) -> nix::Result<Self> {
        if slots == 0 || slots > MAX_SLOTS || !slot_bytes.is_multiple_of(LINE) || local_size == 0 {
            return Err(nix::Error::EINVAL);
        }
        let seg = Segment::create(name, seg_len(local_size, slots, slot_bytes))?;
        for (off, v) in [
            (4, VERSION),
            (8, local_size as u32),
            (12, slots as u32),
            (16, slot_bytes as u32),
        ] {
            seg.atomic_u32(off).store(v, Ordering::Relaxed);
        }
        seg.atomic_u32(0).store(MAGIC, Ordering::Release);
        Ok(Self {
            seg,
            local_size,
            slots,
            slot_bytes,
        })
    }

    /// Maps a segment another process created, learning its geometry.
    pub fn open(name: &str) -> Result<Self, String> {
        let head = Segment::open(name, HEADER).map_err(|e| format!("cannot map {name}: {e}"))?;
        let word = |off| head.atomic_u32(off).load(Ordering::Acquire) as usize;
        if word(0) != MAGIC as usize || word(4) != VERSION as usize {
            return Err(format!("{name} is not an engine segment of this version"));
        }
        let (local_size, slots, slot_bytes) = (word(8), word(12), word(16));
        if slots == 0 || slots > MAX_SLOTS || local_size == 0 || !slot_bytes.is_multiple_of(LINE) {
            return Err(format!("{name} has a bad geometry"));
        }
        drop(head);
        let seg = Segment::open(name, seg_len(local_size, slots, slot_bytes))
            .map_err(|e| format!("cannot map {name}: {e}"))?;
        Ok(Self {
            seg,
            local_size,
            slots,
            slot_bytes,
        })
    }

    pub fn local_size(&self) -> usize {
        self.local_size
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// `ENGINE_STARTING`, `ENGINE_READY`.
    pub fn state(&self) -> &AtomicU32 {
        self.seg.atomic_u32(20)
    }

    pub fn engine_pid(&self) -> &AtomicU32 {
        self.seg.atomic_u32(24)
    }

    /// Counts this process among those that mapped the segment; true for
    /// the last of the ranks and the engine, which may unlink the name.
    pub fn attach(&self) -> bool {
        self.seg.atomic_u32(28).fetch_add(1, Ordering::AcqRel) + 1 == self.local_size as u32 + 1
    }

    /// Set while the engine sleeps: a rank that posts then rings it.
    pub fn engine_sleeping(&self) -> &AtomicU32 {
        self.seg.atomic_u32(2 * LINE)
    }

    /// The engine's TCP address, published before it says ready.
    pub fn set_addr(&self, addr: &str) {
        let b = &addr.as_bytes()[..addr.len().min(ADDR_MAX)];
        self.write(LINE + 4, b);
        self.seg
            .atomic_u32(LINE)
            .store(b.len() as u32, Ordering::Release);
    }

    pub fn addr(&self) -> String {
        let n = (self.seg.atomic_u32(LINE).load(Ordering::Acquire) as usize).min(ADDR_MAX);
        String::from_utf8_lossy(&self.read(LINE + 4, n)).into_owned()
    }

    fn region(&self, i: usize) -> usize {
        assert!(i < self.local_size, "local rank {i} out of range");
        HEADER + i * region_len(self.slots, self.slot_bytes)
    }

    /// Descriptors rank `i` has posted so far.
    pub fn posted(&self, i: usize) -> &AtomicU32 {
        self.seg.atomic_u32(self.region(i))
    }

    pub fn pid(&self, i: usize) -> &AtomicU32 {
        self.seg.atomic_u32(self.region(i) + 4)
    }

    /// Set while rank `i` sleeps: the engine rings it after a completion.
    pub fn sleeping(&self, i: usize) -> &AtomicU32 {
        self.seg.atomic_u32(self.region(i) + 8)
    }

    /// Rank `i` has finished with the engine.
    pub fn detached(&self, i: usize) -> &AtomicU32 {
        self.seg.atomic_u32(self.region(i) + 12)
    }

    pub fn slot_state(&self, i: usize, s: usize) -> &AtomicU32 {
        assert!(s < self.slots);
        self.seg.atomic_u32(self.region(i) + LINE + 4 * s)
    }

    /// Bytes of result (or of error text) the engine left in a slot.
    pub fn result_len(&self, i: usize, s: usize) -> &AtomicU32 {
        assert!(s < self.slots);
        self.seg.atomic_u32(self.region(i) + 2 * LINE + 4 * s)
    }

    fn desc_off(&self, i: usize, s: usize) -> usize {
        assert!(s < self.slots);
        self.region(i) + 3 * LINE + s * DESC_LEN
    }

    fn data_off(&self, i: usize, s: usize) -> usize {
        assert!(s < self.slots);
        self.region(i) + 3 * LINE + self.slots * DESC_LEN + s * self.slot_bytes
    }

    pub fn write_desc(&self, i: usize, s: usize, d: &[u8; DESC_LEN]) {
        self.write(self.desc_off(i, s), d);
    }

    pub fn read_desc(&self, i: usize, s: usize) -> [u8; DESC_LEN] {
        let mut d = [0u8; DESC_LEN];
        d.copy_from_slice(&self.read(self.desc_off(i, s), DESC_LEN));
        d
    }

    /// Writes `data` (at most `slot_bytes`) into slot `s` of rank `i`.
    pub fn write_data(&self, i: usize, s: usize, data: &[u8]) {
        assert!(data.len() <= self.slot_bytes);
        self.write(self.data_off(i, s), data);
    }

    pub fn read_data(&self, i: usize, s: usize, len: usize) -> Vec<u8> {
        self.read(self.data_off(i, s), len.min(self.slot_bytes))
    }

    /// Copies the first `out.len()` bytes of slot `s`'s data into `out`.
    pub fn read_data_into(&self, i: usize, s: usize, out: &mut [u8]) {
        let off = self.data_off(i, s);
        let n = out.len().min(self.slot_bytes);
        assert!(off + n <= self.seg.len());
        // SAFETY: inside the mapping (checked); the slot is ours (its state
        // word, read with acquire, said done), so nobody writes it now.
        unsafe { std::ptr::copy_nonoverlapping(self.seg.base().add(off), out.as_mut_ptr(), n) };
    }

    fn write(&self, off: usize, b: &[u8]) {
        assert!(off + b.len() <= self.seg.len());
        // SAFETY: inside the mapping (checked); callers write only areas
        // their side owns by the slot protocol, and publish them with a
        // release store of the state word afterwards.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.seg.base().add(off), b.len()) };
    }

    fn read(&self, off: usize, n: usize) -> Vec<u8> {
        assert!(off + n <= self.seg.len());
        let mut v = vec![0u8; n];
        // SAFETY: inside the mapping (checked); the area's owner published
        // it before the acquire load that handed it to us.
        unsafe { std::ptr::copy_nonoverlapping(self.seg.base().add(off), v.as_mut_ptr(), n) };
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_see_each_other() {
        let name = format!("/lanai-test-engseg-{}", std::process::id());
        let a = EngineSeg::create(&name, 3, 4, 128).unwrap();
        let b = EngineSeg::open(&name).unwrap();
        let _ = Segment::unlink(&name);
        assert_eq!((b.local_size(), b.slots(), b.slot_bytes()), (3, 4, 128));
        a.set_addr("127.0.0.1:4242");
        assert_eq!(b.addr(), "127.0.0.1:4242");
        let d = [7u8; DESC_LEN];
        a.write_desc(2, 3, &d);
        a.write_data(2, 3, &[1, 2, 3]);
        a.slot_state(2, 3).store(SLOT_POSTED, Ordering::Release);
        assert_eq!(b.slot_state(2, 3).load(Ordering::Acquire), SLOT_POSTED);
        assert_eq!(b.read_desc(2, 3), d);
        assert_eq!(b.read_data(2, 3, 3), vec![1, 2, 3]);
        // Neighbouring slots and ranks are untouched.
        assert_eq!(b.read_data(2, 2, 3), vec![0, 0, 0]);
        assert_eq!(b.read_data(1, 3, 3), vec![0, 0, 0]);
        let mut out = [0u8; 2];
        b.read_data_into(2, 3, &mut out);
        assert_eq!(out, [1, 2]);
    }

    #[test]
    fn bad_geometry_is_refused() {
        let name = format!("/lanai-test-engseg-bad-{}", std::process::id());
        assert!(EngineSeg::create(&name, 2, MAX_SLOTS + 1, 128).is_err());
        assert!(EngineSeg::create(&name, 2, 4, 100).is_err());
        assert!(EngineSeg::open("/lanai-test-engseg-missing").is_err());
    }
}
