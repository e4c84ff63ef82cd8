//! The node segment's layout and its per-pair single-producer rings.
//!
//! Layout: a header, one control block per local rank (its `sleeping` flag,
//! its pid, and its latest blocking collective calls, each on cache lines
//! of its own), then one ring per ordered
//! pair of local ranks. A ring is a control line holding the consumer's
//! `tail`, then `cells` cells of 64 bytes.
//!
//! A message occupies consecutive cells: the first holds `seq` (written
//! last, with release ordering), the payload length, the 32-byte envelope
//! and the start of the payload, which continues in the following cells. So
//! a small message costs one cache-line transfer. `seq` for absolute
//! position `p` is `p + 1` (never 0), so a stale cell from an earlier lap
//! never looks valid; the consumer zeroes the first word of continuation
//! cells it consumed, because payload bytes there could otherwise mimic a
//! future `seq`. A message never wraps: a pad record fills the ring's end.

use super::barrier_device::{device_len, Device, Geometry};
use super::fence;
use super::Segment;
use lanai_wire::envelope::{Envelope, ENVELOPE_LEN};
use std::sync::atomic::{fence as atomic_fence, AtomicU32, AtomicU64, Ordering};

const MAGIC: u64 = 0x4c41_4e41_4953_484d; // "LANAISHM"
const HEADER_BYTES: usize = 256;
const CTRL_BYTES: usize = 192;
/// Where in a control block its rank's latest two calls are (`publish_call`):
/// a line that only its rank writes, once per blocking collective, and that
/// others read only while they wait long.
const CALLS_AT: usize = 128;
/// Bytes of one call entry: a version word, then [`CALL_WORDS`] words.
const CALL_BYTES: usize = 32;
const _: () = assert!(CALL_BYTES == 8 * (CALL_WORDS + 1));
/// Words of a call entry, as [`ShmNode::publish_call`] takes them.
pub const CALL_WORDS: usize = 3;
const RING_CTRL_BYTES: usize = 128;
const CELL: usize = 64;
/// Offset of the envelope, and of the payload, in a message's first cell.
const ENV_AT: usize = 8;
const PAYLOAD_AT: usize = ENV_AT + ENVELOPE_LEN;
const PAD: u32 = u32::MAX;

/// What a received cell carries: the envelope and the inline payload.
pub type CellHeader = Envelope;

/// Bytes of segment needed for `local_size` ranks with rings of `ring_bytes`.
pub fn segment_len(local_size: usize, ring_bytes: usize) -> usize {
    HEADER_BYTES
        + local_size * CTRL_BYTES
        + local_size * local_size * (RING_CTRL_BYTES + ring_bytes)
}

/// Bytes of the whole node segment: rings, then the barrier device.
pub fn node_segment_len(local_size: usize, ring_bytes: usize, channels: usize) -> usize {
    segment_len(local_size, ring_bytes) + device_len(local_size, channels)
}

/// Largest payload one message may carry through a ring of `ring_bytes`.
pub fn max_payload(ring_bytes: usize) -> usize {
    ring_bytes / 2 - PAYLOAD_AT
}

fn seq_for(pos: u64) -> u32 {
    (pos as u32).wrapping_add(1).max(1)
}

#[derive(Debug, Default, Clone, Copy)]
struct Tx {
    head: u64,
    tail_cache: u64,
    /// Offset of the ring to this peer.
    ring: usize,
}

#[derive(Debug, Default, Clone, Copy)]
struct Rx {
    head: u64,
    /// Offset of the ring from this peer.
    ring: usize,
}

/// This rank's view of its node's segment.
#[derive(Debug)]
pub struct ShmNode {
    seg: Segment,
    local_size: usize,
    me: usize,
    cells: u64,
    /// Central barrier channels after the rings.
    channels: usize,
    /// Largest payload of one message (fixed by the ring size).
    max_payload: usize,
    /// Where the barrier device lies, if it has channels.
    device: Option<Geometry>,
    tx: Vec<Tx>,
    rx: Vec<Rx>,
}

impl ShmNode {
    /// Wraps a mapped segment. The creator then calls [`ShmNode::init`].
    pub fn new(
        seg: Segment,
        local_size: usize,
        me: usize,
        ring_bytes: usize,
        channels: usize,
    ) -> Result<Self, String> {
        if !ring_bytes.is_power_of_two() || ring_bytes < 4096 {
            return Err(format!(
                "ring size {ring_bytes} must be a power of two >= 4096"
            ));
        }
        if seg.len() < node_segment_len(local_size, ring_bytes, channels) || me >= local_size {
            return Err("shared-memory segment too small for this node".into());
        }
        // Before any peer can wait on this rank's wake-ups (`peer_sleeping`).
        fence::register();
        let ring = |from: usize, to: usize| {
            HEADER_BYTES
                + local_size * CTRL_BYTES
                + (from * local_size + to) * (RING_CTRL_BYTES + ring_bytes)
        };
        let device = Geometry::new(
            seg.len(),
            segment_len(local_size, ring_bytes),
            local_size,
            channels,
        );
        Ok(Self {
            seg,
            local_size,
            me,
            cells: (ring_bytes / CELL) as u64,
            channels,
            max_payload: max_payload(ring_bytes),
            device,
            tx: (0..local_size)
                .map(|to| Tx {
                    ring: ring(me, to),
                    ..Tx::default()
                })
                .collect(),
            rx: (0..local_size)
                .map(|from| Rx {
                    head: 0,
                    ring: ring(from, me),
                })
                .collect(),
        })
    }

    fn atomic_u32(&self, off: usize) -> &AtomicU32 {
        self.seg.atomic_u32(off)
    }

    fn atomic_u64(&self, off: usize) -> &AtomicU64 {
        self.seg.atomic_u64(off)
    }

    /// Writes the header; only the creator calls this, before publishing the name.
    pub fn init(&self) {
        self.atomic_u32(8)
            .store(self.local_size as u32, Ordering::Relaxed);
        self.atomic_u32(12)
            .store(self.cells as u32, Ordering::Relaxed);
        self.atomic_u32(20)
            .store(self.channels as u32, Ordering::Relaxed);
        self.atomic_u64(0).store(MAGIC, Ordering::Release);
    }

    /// Checks that the creator's header matches our idea of the node.
    pub fn validate(&self) -> Result<(), String> {
        if self.atomic_u64(0).load(Ordering::Acquire) != MAGIC {
            return Err("shared-memory segment has a bad header".into());
        }
        let (ls, cells) = (
            self.atomic_u32(8).load(Ordering::Relaxed),
            self.atomic_u32(12).load(Ordering::Relaxed),
        );
        if ls as usize != self.local_size || u64::from(cells) != self.cells {
            return Err(format!(
                "shared-memory segment is for {ls} ranks with {cells} cells; expected {} and {} (is LANAI_SHM_RING_BYTES the same on every rank?)",
                self.local_size, self.cells
            ));
        }
        let ch = self.atomic_u32(20).load(Ordering::Relaxed);
        if ch as usize != self.channels {
            return Err(format!(
                "shared-memory segment has {ch} barrier channels; expected {} (is LANAI_BARRIER_CHANNELS the same on every rank?)",
                self.channels
            ));
        }
        Ok(())
    }

    /// The node's central barrier device, if it has channels.
    #[inline]
    pub fn device(&self) -> Option<Device<'_>> {
        self.device.map(|g| Device::at(&self.seg, g))
    }

    /// Counts this rank as attached; true for the last one, which unlinks the name.
    pub fn attach(&self) -> bool {
        self.atomic_u32(16).fetch_add(1, Ordering::AcqRel) + 1 == self.local_size as u32
    }

    fn ctrl(&self, local: usize) -> usize {
        HEADER_BYTES + local * CTRL_BYTES
    }

    /// Publishes this rank's pid (for single-copy reads by peers).
    pub fn set_pid(&self, pid: i32) {
        self.atomic_u32(self.ctrl(self.me) + 64)
            .store(pid as u32, Ordering::Release);
    }

    pub fn peer_pid(&self, local: usize) -> i32 {
        self.atomic_u32(self.ctrl(local) + 64)
            .load(Ordering::Acquire) as i32
    }

    /// Marks this rank as finished with MPI, so its exit is not a failure.
    pub fn set_finished(&self) {
        self.atomic_u32(self.ctrl(self.me) + 68)
            .store(1, Ordering::Release);
    }

    /// Whether `local` finished MPI (then its process may be gone).
    pub fn peer_finished(&self, local: usize) -> bool {
        self.atomic_u32(self.ctrl(local) + 68)
            .load(Ordering::Acquire)
            != 0
    }

    /// Marks this rank as waiting inside an MPI call, or not. A receiver
    /// asks a sender to share a copy only while the sender waits, since
    /// a rank busy outside MPI would answer late. The word shares the pid's
    /// line, which peers read rarely, not the sleeping flag's.
    pub fn set_waiting(&self, waiting: bool) {
        self.atomic_u32(self.ctrl(self.me) + 72)
            .store(u32::from(waiting), Ordering::Relaxed);
    }

    pub fn peer_waiting(&self, local: usize) -> bool {
        self.atomic_u32(self.ctrl(local) + 72)
            .load(Ordering::Relaxed)
            != 0
    }

    /// Marks this rank as about to sleep (or awake). Going to sleep, the
    /// heavy fence pairs with the light one in [`ShmNode::peer_sleeping`]:
    /// either the sleeper sees the new message on its last poll, or the
    /// sender sees the flag and wakes it (`fence.rs`).
    pub fn set_sleeping(&self, sleeping: bool) {
        self.atomic_u32(self.ctrl(self.me))
            .store(u32::from(sleeping), Ordering::SeqCst);
        if sleeping {
            fence::heavy();
        }
    }

    /// Publishes `words` as this rank's call number `n` (entry `n % 2`), so
    /// that its two latest calls can be read. A seqlock: the version is odd
    /// while the words change, so a reader never mixes two calls.
    #[inline]
    pub fn publish_call(&self, n: u64, words: [u64; CALL_WORDS]) {
        let at = self.ctrl(self.me) + CALLS_AT + (n % 2) as usize * CALL_BYTES;
        let [version, rest @ ..] = self.seg.atomic_u64s::<{ CALL_WORDS + 1 }>(at);
        let v = version.load(Ordering::Relaxed);
        version.store(v.wrapping_add(1), Ordering::Relaxed);
        atomic_fence(Ordering::Release);
        for (w, word) in words.iter().zip(rest) {
            word.store(*w, Ordering::Relaxed);
        }
        version.store(v.wrapping_add(2), Ordering::Release);
    }

    /// Entry `slot` (0 or 1) of local rank `local`'s latest calls, or `None`
    /// while that rank is writing it.
    pub fn peer_call(&self, local: usize, slot: usize) -> Option<[u64; CALL_WORDS]> {
        let at = self.ctrl(local) + CALLS_AT + (slot % 2) * CALL_BYTES;
        let [version, rest @ ..] = self.seg.atomic_u64s::<{ CALL_WORDS + 1 }>(at);
        let v = version.load(Ordering::Acquire);
        if v % 2 == 1 {
            return None;
        }
        let words = std::array::from_fn(|i| rest[i].load(Ordering::Relaxed));
        atomic_fence(Ordering::Acquire);
        (version.load(Ordering::Relaxed) == v).then_some(words)
    }

    /// Whether `local` may be asleep and need a wake-up after a send.
    #[inline(always)]
    pub fn peer_sleeping(&self, local: usize) -> bool {
        fence::light();
        self.atomic_u32(self.ctrl(local)).load(Ordering::Relaxed) != 0
    }

    /// Index of `pos` in the ring. `cells` is a power of two (checked in
    /// `new`), so a mask: a division here sat on every message's path.
    fn slot(&self, pos: u64) -> u64 {
        pos & (self.cells - 1)
    }

    fn cell_off(&self, ring: usize, pos: u64) -> usize {
        ring + RING_CTRL_BYTES + self.slot(pos) as usize * CELL
    }

    /// Largest payload a single message may carry.
    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    /// Tries to enqueue one message to local rank `to`; false when the ring
    /// lacks space (the caller queues and retries, keeping FIFO order).
    #[inline(always)]
    pub fn try_send(&mut self, to: usize, env: &Envelope, payload: &[u8]) -> bool {
        assert!(
            payload.len() <= self.max_payload(),
            "shm payload over the ring's limit"
        );
        let need = (PAYLOAD_AT + payload.len()).div_ceil(CELL) as u64;
        let Tx {
            mut head,
            mut tail_cache,
            ring,
        } = self.tx[to];
        let to_end = self.cells - self.slot(head);
        let total = if need > to_end { to_end + need } else { need };
        if head + total - tail_cache > self.cells {
            tail_cache = self.atomic_u64(ring).load(Ordering::Acquire);
            self.tx[to].tail_cache = tail_cache;
            if head + total - tail_cache > self.cells {
                return false;
            }
        }
        if need > to_end {
            let off = self.cell_off(ring, head);
            self.write_bytes(off + 4, &PAD.to_le_bytes());
            self.atomic_u32(off).store(seq_for(head), Ordering::Release);
            head += to_end;
        }
        let off = self.cell_off(ring, head);
        // Length and envelope in one copy.
        let mut first = [0u8; PAYLOAD_AT - 4];
        first[..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        first[4..].copy_from_slice(&env.encode());
        self.write_bytes(off + 4, &first);
        if !payload.is_empty() {
            self.write_bytes(off + PAYLOAD_AT, payload);
        }
        self.atomic_u32(off).store(seq_for(head), Ordering::Release);
        self.tx[to].head = head + need;
        true
    }

    #[inline]
    fn write_bytes(&self, off: usize, src: &[u8]) {
        assert!(off + src.len() <= self.seg.len());
        // SAFETY: in bounds (checked above); these cells are owned by the
        // producer until it publishes `seq`, and the consumer released them
        // through `tail` before we got here.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.seg.base().add(off), src.len()) }
    }

    /// Whether a message from local rank `from` is waiting (one load).
    #[inline]
    pub fn has_message(&self, from: usize) -> bool {
        let Rx { head, ring } = self.rx[from];
        self.atomic_u32(self.cell_off(ring, head))
            .load(Ordering::Acquire)
            == seq_for(head)
    }

    /// Takes the next message from local rank `from`, if any, handing its
    /// envelope and payload (borrowed from the ring) to `f`.
    pub fn poll<R>(
        &mut self,
        from: usize,
        f: impl FnOnce(Envelope, &[u8]) -> R,
    ) -> Option<Result<R, String>> {
        let Rx { mut head, ring } = self.rx[from];
        let mut off = self.cell_off(ring, head);
        if self.atomic_u32(off).load(Ordering::Acquire) != seq_for(head) {
            return None;
        }
        let mut plen = self.read_u32(off + 4);
        if plen == PAD {
            let to_end = self.cells - self.slot(head);
            self.zero_continuations(ring, head, to_end);
            head += to_end;
            self.rx[from].head = head;
            off = self.cell_off(ring, head);
            if self.atomic_u32(off).load(Ordering::Acquire) != seq_for(head) {
                self.atomic_u64(ring).store(head, Ordering::Release);
                return None;
            }
            plen = self.read_u32(off + 4);
        }
        let plen = plen as usize;
        if plen > self.max_payload() {
            return Some(Err(format!(
                "corrupt shared-memory ring from local rank {from}"
            )));
        }
        let env_bytes = self.read_slice(off + ENV_AT, ENVELOPE_LEN);
        let env = match Envelope::decode(env_bytes) {
            Ok(e) => e,
            Err(e) => {
                return Some(Err(format!(
                    "corrupt shared-memory message from local rank {from}: {e}"
                )))
            }
        };
        let r = f(env, self.read_slice(off + PAYLOAD_AT, plen));
        let need = (PAYLOAD_AT + plen).div_ceil(CELL) as u64;
        self.zero_continuations(ring, head, need);
        head += need;
        self.rx[from].head = head;
        self.atomic_u64(ring).store(head, Ordering::Release);
        Some(Ok(r))
    }

    fn zero_continuations(&self, ring: usize, head: u64, n: u64) {
        for i in 1..n {
            self.atomic_u32(self.cell_off(ring, head + i))
                .store(0, Ordering::Relaxed);
        }
    }

    fn read_u32(&self, off: usize) -> u32 {
        let b = self.read_slice(off, 4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn read_slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.seg.len());
        // SAFETY: in bounds; the producer published these bytes before its
        // release store of `seq`, which we acquired, and will not touch them
        // again until we advance `tail`, which happens after this borrow ends
        // (`poll` holds `&mut self`).
        unsafe { std::slice::from_raw_parts(self.seg.base().add(off), len) }
    }

    pub fn local_size(&self) -> usize {
        self.local_size
    }

    pub fn me(&self) -> usize {
        self.me
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lanai_wire::envelope::Kind;

    fn env(tag: i32, len: usize) -> Envelope {
        Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx: 0,
            src: 0,
            tag,
            len: len as u64,
            cookie: 7,
            sig: 0,
        }
    }

    fn pair(ring_bytes: usize) -> (ShmNode, ShmNode, String) {
        // Tests run on parallel threads: every pair needs its own name.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("/lanai-test-{}-{ring_bytes}-{n}", std::process::id());
        let len = segment_len(2, ring_bytes);
        let a = Segment::create(&name, len).unwrap();
        let b = Segment::open(&name, len).unwrap();
        Segment::unlink(&name).unwrap();
        let a = ShmNode::new(a, 2, 0, ring_bytes, 0).unwrap();
        a.init();
        let b = ShmNode::new(b, 2, 1, ring_bytes, 0).unwrap();
        b.validate().unwrap();
        (a, b, name)
    }

    #[test]
    fn fifo_across_many_laps_with_varied_sizes() {
        let (mut a, mut b, _) = pair(4096);
        let mut sent = 0u32;
        let mut got = 0u32;
        // Payloads whose first bytes mimic future seq values, to prove stale
        // continuation cells are never mistaken for new messages.
        let mk = |i: u32| -> Vec<u8> {
            let len = (i as usize * 37) % 1500;
            (0..len)
                .map(|k| ((i as usize + k) % 251) as u8)
                .collect::<Vec<u8>>()
        };
        while got < 5000 {
            while sent < 5000 && a.try_send(1, &env(sent as i32, 0), &mk(sent)) {
                sent += 1;
            }
            while let Some(r) = b.poll(0, |e, p| (e.tag, p.to_vec())) {
                let (tag, p) = r.unwrap();
                assert_eq!(tag as u32, got);
                assert_eq!(p, mk(got));
                got += 1;
            }
        }
        assert!(b.poll(0, |_, _| ()).is_none());
    }

    #[test]
    fn full_ring_refuses_then_accepts() {
        let (mut a, mut b, _) = pair(4096);
        let big = vec![1u8; a.max_payload()];
        assert!(a.try_send(1, &env(0, big.len()), &big));
        let mut n = 1;
        while a.try_send(1, &env(n, 100), &[2u8; 100]) {
            n += 1;
        }
        assert!(b
            .poll(0, |e, p| assert_eq!((e.tag, p.len()), (0, big.len())))
            .is_some());
        assert!(a.try_send(1, &env(n, 100), &[2u8; 100]));
    }

    #[test]
    fn published_calls_are_read_back() {
        let (a, b, _) = pair(4096);
        assert_eq!(
            b.peer_call(0, 0),
            Some([0; CALL_WORDS]),
            "a fresh segment holds no call"
        );
        a.publish_call(0, [1, 2, 3]);
        a.publish_call(1, [4, 5, 6]);
        assert_eq!(b.peer_call(0, 0), Some([1, 2, 3]));
        assert_eq!(b.peer_call(0, 1), Some([4, 5, 6]));
        assert_eq!(
            a.peer_call(1, 0),
            Some([0; CALL_WORDS]),
            "the other rank's entries are its own"
        );
    }

    #[test]
    fn a_reader_racing_the_writer_sees_whole_calls() {
        // A node per thread (a node is not shared between threads), on one
        // segment; the name goes once the writer has mapped it, or when the
        // test ends, however it ends.
        struct Unlink(String);
        impl Drop for Unlink {
            fn drop(&mut self) {
                let _ = Segment::unlink(&self.0);
            }
        }
        let name = format!("/lanai-test-{}-calls", std::process::id());
        let len = segment_len(2, 4096);
        let reader = ShmNode::new(Segment::create(&name, len).unwrap(), 2, 0, 4096, 0).unwrap();
        let unlink = Unlink(name.clone());
        reader.init();
        let opened = std::sync::atomic::AtomicBool::new(false);
        let opened = &opened;
        // The writer publishes until the reader has read enough whole
        // entries, so the two always overlap.
        let stop = std::sync::atomic::AtomicBool::new(false);
        let stop = &stop;
        // Stops the writer however the reader leaves (a failed assertion too).
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        std::thread::scope(|s| {
            let writer = s.spawn(move || {
                let w = ShmNode::new(Segment::open(&name, len).unwrap(), 2, 1, 4096, 0).unwrap();
                opened.store(true, Ordering::Release);
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) {
                    w.publish_call(n, [n, n.wrapping_mul(3), !n]);
                    n += 1;
                }
                n
            });
            let stopping = Stop(stop);
            while !opened.load(Ordering::Acquire) && !writer.is_finished() {
                std::hint::spin_loop();
            }
            drop(unlink);
            let (mut whole, mut latest) = (0u64, 0u64);
            while whole < 300_000 && !writer.is_finished() {
                for slot in 0..2 {
                    match reader.peer_call(1, slot) {
                        Some([0, 0, 0]) | None => {}
                        Some([x, y, z]) => {
                            assert!(y == x.wrapping_mul(3) && z == !x, "torn entry {x} {y} {z}");
                            assert_eq!(x % 2, slot as u64, "entry {slot} holds call {x}");
                            latest = latest.max(x);
                            whole += 1;
                        }
                    }
                }
            }
            drop(stopping);
            let published = writer.join().unwrap();
            assert!(latest < published, "read call {latest} of {published}");
        });
    }

    #[test]
    fn sleeping_flag_and_attach() {
        let (a, b, _) = pair(4096);
        assert!(!a.peer_sleeping(1));
        b.set_sleeping(true);
        assert!(a.peer_sleeping(1));
        assert!(!a.attach());
        assert!(b.attach());
        a.set_pid(1234);
        assert_eq!(b.peer_pid(0), 1234);
    }
}
