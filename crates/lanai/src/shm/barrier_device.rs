//! The central barrier device of seed 002, in the node's shared segment.
//!
//! Layout, after the rings: a table line (the allocation lock), one 16-byte
//! record per channel (owner key and reference count), then the channels.
//! A channel is an output line (the output word, which sleepers wait on
//! with `futex`), a line of sleeper counts, one input line per local rank,
//! so arrivals never write a line another rank writes, and two data slots
//! per local rank for small reductions (slot `gen % 2`: a rank writes slot
//! `g + 2` only after every rank arrived at `g + 1`, hence finished reading
//! `g`), then each local rank's mailbox: its `taken` counts, added to by
//! the readers of its posts, and `mailbox::SLOTS` one-line slots (`filled`
//! stamp, length, data), written by the owner.
//!
//! The device logic itself is `lanai_coll::central`; this module provides
//! its wires and the futex wait and wake.

use super::fence;
use super::stage::{stage_len, Stage};
use super::Segment;
use lanai_coll::central::{reached, Wires};
use lanai_coll::mailbox::{MailWires, MORE, SLOTS};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const LINE: usize = 64;
const RECORD: usize = 16;
/// Bytes of one data slot: the largest part a rank writes for a
/// collective that rides the device. Pages are touched only where used.
/// 2 ranks on 2 cores, riding against messages: allreduce 512 B 0.18
/// against 0.38 us, 4 KiB 0.55 against 0.80; allgather 2 KiB 0.25 against
/// 0.36 (staged); at 8 ranks, allreduce 4 KiB 10.6 against 16.0 us.
pub const DATA_MAX: usize = 4096;
/// Contributions this small ride in the input's own cache line (two
/// halves for the two generation parities), so a reader that sees the
/// input move already holds the data: one line transfer instead of two.
const INLINE_MAX: usize = 24;
/// Where in the input's line the lengths of its two generations'
/// contributions lie, after the inline halves: readers check them, so
/// ranks whose counts disagree fail instead of reading the wrong bytes.
const LEN_AT: usize = 8 + 2 * INLINE_MAX;
const _: () = assert!(LEN_AT + 8 <= LINE);

/// Bytes the device needs for `local_size` ranks and `channels` channels.
pub fn device_len(local_size: usize, channels: usize) -> usize {
    if channels == 0 {
        return 0;
    }
    table_len(channels) + channels * channel_len(local_size) + stage_len(local_size, channels)
}

/// The allocation lock's line and the channel records.
fn table_len(channels: usize) -> usize {
    LINE + (channels * RECORD).div_ceil(LINE) * LINE
}

/// The largest contribution a mailbox slot carries: one line, less the
/// `filled` stamp and the length, so a reduce moves one line per member.
pub const MAIL_MAX: usize = LINE - 8;
/// Bytes of one rank's `taken` counts.
const TAKEN: usize = (SLOTS as usize * 4).div_ceil(LINE) * LINE;
/// Bytes of one rank's mailbox: its `taken` counts and its slots.
const MAILBOX: usize = TAKEN + SLOTS as usize * LINE;
/// How many slots ahead of the one it fills a member asks for the line of
/// the slot it fills later (`Channel::prefetch_fill`).
const FILL_AHEAD: usize = 8;

fn channel_len(local_size: usize) -> usize {
    (2 + local_size) * LINE + local_size * 2 * DATA_MAX + local_size * MAILBOX
}

/// Where the device lies in its segment, worked out and checked once: a
/// device operation looks its channel up on every poll.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    base: usize,
    channels: usize,
    local_size: usize,
    /// Offset of channel 0, and the bytes of each channel.
    chan0: usize,
    chan_len: usize,
    /// Bytes of each channel's staging area.
    stage_len: usize,
}

impl Geometry {
    /// The device at byte `base` of a segment of `seg_len` bytes; `None`
    /// when it does not fit.
    pub fn new(seg_len: usize, base: usize, local_size: usize, channels: usize) -> Option<Self> {
        (channels > 0
            && local_size > 0
            && base.is_multiple_of(LINE)
            && base + device_len(local_size, channels) <= seg_len)
            .then(|| Self {
                base,
                channels,
                local_size,
                chan0: base + table_len(channels),
                chan_len: channel_len(local_size),
                stage_len: super::stage::channel_len(local_size),
            })
    }
}

/// This rank's view of the node's device.
#[derive(Debug, Clone, Copy)]
pub struct Device<'a> {
    seg: &'a Segment,
    g: Geometry,
}

impl<'a> Device<'a> {
    /// The device at byte `base` of `seg`; `None` when it does not fit.
    pub fn new(seg: &'a Segment, base: usize, local_size: usize, channels: usize) -> Option<Self> {
        Geometry::new(seg.len(), base, local_size, channels).map(|g| Self::at(seg, g))
    }

    /// The device `g` describes, checked against `seg` by [`Geometry::new`].
    pub fn at(seg: &'a Segment, g: Geometry) -> Self {
        Self { seg, g }
    }

    pub fn channels(&self) -> usize {
        self.g.channels
    }

    fn lock_word(&self) -> &AtomicU32 {
        self.seg.atomic_u32(self.g.base)
    }

    fn record(&self, ch: usize) -> usize {
        self.g.base + LINE + ch * RECORD
    }

    fn with_table<R>(&self, f: impl FnOnce() -> R) -> R {
        // Allocation happens once per communicator, so a plain spin lock
        // (yielding, since the holder may share our core) is enough.
        while self
            .lock_word()
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        let r = f();
        self.lock_word().store(0, Ordering::Release);
        r
    }

    /// Joins the channel owned by `key` (a communicator's identity), or
    /// takes a free one for it; `None` when every channel is in use.
    pub fn claim(&self, key: u64) -> Option<usize> {
        // Key 0 marks a free record, so no communicator may use it.
        let key = key.max(1);
        self.with_table(|| {
            let rec = |ch| self.record(ch);
            let owned = (0..self.g.channels).find(|&ch| {
                self.seg.atomic_u32(rec(ch) + 8).load(Ordering::Relaxed) > 0
                    && self.seg.atomic_u64(rec(ch)).load(Ordering::Relaxed) == key
            });
            let ch = match owned {
                Some(ch) => ch,
                None => {
                    let ch = (0..self.g.channels).find(|&ch| {
                        self.seg.atomic_u32(rec(ch) + 8).load(Ordering::Relaxed) == 0
                    })?;
                    self.channel(ch).settle();
                    if let Some(st) = self.stage(ch) {
                        st.settle();
                    }
                    ch
                }
            };
            self.seg.atomic_u64(rec(ch)).store(key, Ordering::Relaxed);
            self.seg
                .atomic_u32(rec(ch) + 8)
                .fetch_add(1, Ordering::Relaxed);
            Some(ch)
        })
    }

    /// Leaves channel `ch`; the last member to leave frees it.
    pub fn release(&self, ch: usize) {
        if ch >= self.g.channels {
            return;
        }
        self.with_table(|| {
            let refs = self.seg.atomic_u32(self.record(ch) + 8);
            let n = refs.load(Ordering::Relaxed);
            refs.store(n.saturating_sub(1), Ordering::Relaxed);
        });
    }

    /// Channels currently owned by some communicator.
    pub fn in_use(&self) -> usize {
        self.with_table(|| {
            (0..self.g.channels)
                .filter(|&ch| {
                    self.seg
                        .atomic_u32(self.record(ch) + 8)
                        .load(Ordering::Relaxed)
                        > 0
                })
                .count()
        })
    }

    #[inline]
    pub fn channel(&self, ch: usize) -> Channel<'a> {
        let ch = ch.min(self.g.channels - 1);
        Channel {
            seg: self.seg,
            off: self.g.chan0 + ch * self.g.chan_len,
            local_size: self.g.local_size,
        }
    }

    /// Channel `ch`'s staging slots, when it has them.
    #[inline]
    pub fn stage(&self, ch: usize) -> Option<Stage<'a>> {
        let base = self.g.chan0 + self.g.channels * self.g.chan_len;
        Stage::sized(
            self.seg,
            base,
            self.g.local_size,
            self.g.stage_len,
            self.g.channels,
            ch,
        )
    }
}

/// One channel: its wires, its sleepers, and the futex on its output.
#[derive(Debug, Clone, Copy)]
pub struct Channel<'a> {
    seg: &'a Segment,
    off: usize,
    local_size: usize,
}

impl Channel<'_> {
    /// A free channel about to get a new owner: its output may lag its
    /// inputs (peers raise it only for sleepers), so move it up to the
    /// highest input; the new owner's generations then start above every
    /// stale input.
    fn settle(&self) {
        let top = (0..self.local_size)
            .map(|i| self.input_word(i).load(Ordering::SeqCst))
            .fold(self.output_word().load(Ordering::SeqCst), |a, b| {
                if reached(b, a) {
                    b
                } else {
                    a
                }
            });
        self.output_word().store(top, Ordering::SeqCst);
        // Stamps restart at 1 with each owner, so none may linger: an old
        // one equal to a new one would pass stale data for fresh.
        for i in 0..self.local_size {
            for slot in 0..SLOTS as usize {
                self.filled_word(i, slot).store(0, Ordering::Relaxed);
                self.taken_word(i, slot).store(0, Ordering::Relaxed);
            }
        }
    }

    /// Byte offset of member `i`'s mailbox.
    fn mailbox(&self, i: usize) -> usize {
        let i = i.min(self.local_size - 1);
        self.off + (2 + self.local_size) * LINE + self.local_size * 2 * DATA_MAX + i * MAILBOX
    }

    /// Asks for the line of member `i`'s `slot` with intent to write, as
    /// the member fills another: the line comes over from its last
    /// reader's core in the meantime. The fill would otherwise wait in the
    /// store buffer for that transfer, with every later store of the
    /// member behind it, and on this VM's slow placements (a line between
    /// cores in 0.2 us) the member's calls were bound by it: 2 ranks, 8
    /// bytes, us a call, reduce 0.155-0.171 against 0.092-0.105 asked 8
    /// slots ahead, broadcast 0.172-0.184 against 0.089-0.096. 16 and 32
    /// slots ahead gained less, and not in every placement: a member that
    /// runs far ahead of its readers would take lines they have still to
    /// read. A reader less than a lap less 8 slots behind is done with
    /// the slot, and polls only its next one.
    #[inline(always)]
    fn prefetch_fill(&self, i: usize, slot: usize) {
        self.hint_line(self.mail_slot(i, slot), true);
    }

    /// Asks for the line at byte `at` of the segment, to read it or (with
    /// `write`) to write it; nothing past the mapping.
    #[inline(always)]
    fn hint_line(&self, at: usize, write: bool) {
        if at >= self.seg.len() {
            return;
        }
        // SAFETY: the address lies inside the mapping (checked), and a
        // prefetch neither reads into the program, writes, nor faults; a
        // processor without `prefetchw` runs it as a no-op.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            let p = self.seg.base().add(at);
            if write {
                std::arch::asm!(
                    "prefetchw [{0}]",
                    in(reg) p,
                    options(nostack, preserves_flags, readonly)
                );
            } else {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
            }
        }
    }

    fn mail_slot(&self, i: usize, slot: usize) -> usize {
        self.mailbox(i) + TAKEN + slot.min(SLOTS as usize - 1) * LINE
    }

    fn filled_word(&self, i: usize, slot: usize) -> &AtomicU32 {
        self.seg.atomic_u32(self.mail_slot(i, slot))
    }

    fn taken_word(&self, i: usize, slot: usize) -> &AtomicU32 {
        self.seg
            .atomic_u32(self.mailbox(i) + slot.min(SLOTS as usize - 1) * 4)
    }

    fn output_word(&self) -> &AtomicU32 {
        self.seg.atomic_u32(self.off)
    }

    fn sleepers(&self) -> &AtomicU32 {
        self.seg.atomic_u32(self.off + LINE)
    }

    fn input_word(&self, i: usize) -> &AtomicU32 {
        let i = i.min(self.local_size - 1);
        self.seg.atomic_u32(self.off + (2 + i) * LINE)
    }

    /// Byte offset of input `i`'s data slot for generation `gen`, for a
    /// contribution of `len` bytes.
    fn slot(&self, i: usize, gen: u32, len: usize) -> usize {
        let i = i.min(self.local_size - 1);
        let parity = (gen % 2) as usize;
        if len <= INLINE_MAX {
            self.off + (2 + i) * LINE + 8 + parity * INLINE_MAX
        } else {
            self.off + (2 + self.local_size) * LINE + (i * 2 + parity) * DATA_MAX
        }
    }

    /// Writes this rank's contribution to generation `gen`, before it sets
    /// its input (whose release store publishes the bytes).
    #[inline]
    pub fn put_data(&self, me: usize, gen: u32, data: &[u8]) {
        let off = self.slot(me, gen, data.len());
        assert!(data.len() <= DATA_MAX && off + data.len() <= self.seg.len());
        // SAFETY: the slot lies inside the mapping (checked); no other rank
        // touches it until this rank's input says `gen`, and the rank that
        // wrote it last (generation gen - 2) is read by nobody any more.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.seg.base().add(off), data.len())
        };
        // Published with the bytes, by the input's release store.
        self.len_word(me, gen)
            .store(data.len() as u32, Ordering::Relaxed);
    }

    /// Input `i`'s length word for generation `gen`'s parity.
    #[inline]
    fn len_word(&self, i: usize, gen: u32) -> &AtomicU32 {
        let i = i.min(self.local_size - 1);
        let parity = (gen % 2) as usize;
        self.seg
            .atomic_u32(self.off + (2 + i) * LINE + LEN_AT + parity * 4)
    }

    /// The length input `i` wrote for generation `gen`; read it as
    /// [`Channel::data`] is read.
    #[inline]
    pub fn data_len(&self, i: usize, gen: u32) -> usize {
        self.len_word(i, gen).load(Ordering::Relaxed) as usize
    }

    /// Input `i`'s contribution to generation `gen`, where it lies. Read
    /// it after seeing its input reach `gen`, whose acquire load orders it.
    pub fn data(&self, i: usize, gen: u32, len: usize) -> &[u8] {
        let off = self.slot(i, gen, len);
        assert!(len <= DATA_MAX && off + len <= self.seg.len());
        // SAFETY: inside the mapping (checked). Its writer finished before
        // publishing its input and writes this slot again only for
        // generation `gen + 2`, after every rank (this one included, which
        // holds the borrow inside one call) has arrived at `gen + 1`.
        unsafe { std::slice::from_raw_parts(self.seg.base().add(off), len) }
    }

    /// Declares that this rank may sleep on the output. Call it, then
    /// `fence::heavy`, before the last look at the device: then either that
    /// look sees the last arrival, or the last arriver sees this count and
    /// raises the output (arrivers only fence lightly).
    pub fn announce(&self) {
        self.sleepers().fetch_add(1, Ordering::SeqCst);
    }

    /// Undoes [`Channel::announce`] after waking.
    pub fn retire(&self) {
        self.sleepers().fetch_sub(1, Ordering::SeqCst);
    }

    /// Sleeps (between `announce` and `retire`) while the output still
    /// reads `seen`, until woken, `timeout`, or a signal.
    pub fn wait(&self, seen: u32, timeout: Duration) {
        futex_wait(self.output_word(), seen, timeout);
    }

    /// After raising the output: wakes every rank asleep on it, with one
    /// system call, and only when someone sleeps.
    pub fn wake(&self) {
        if self.sleepers().load(Ordering::SeqCst) > 0 {
            futex_wake_all(self.output_word());
        }
    }
}

impl Wires for Channel<'_> {
    fn input(&self, i: usize) -> u32 {
        self.input_word(i).load(Ordering::Acquire)
    }

    /// A release store, not a sequentially consistent one: on x86 that is
    /// a plain store instead of a locked one, which waited for the line to
    /// come back from every peer polling it. Only the look at the sleepers
    /// must not pass it, and that look fences (below).
    fn set_input(&self, i: usize, gen: u32) {
        self.input_word(i).store(gen, Ordering::Release);
    }

    fn output(&self) -> u32 {
        self.output_word().load(Ordering::Acquire)
    }

    /// The arriver's side of the sleep handshake: its input store comes
    /// before this load, given that sleepers call `fence::heavy` between
    /// announcing and their last look (`fence.rs`).
    fn has_sleepers(&self) -> bool {
        fence::light();
        self.sleepers().load(Ordering::SeqCst) > 0
    }

    fn raise_output(&self, gen: u32) -> bool {
        let w = self.output_word();
        let mut cur = w.load(Ordering::SeqCst);
        while !reached(cur, gen) {
            match w.compare_exchange_weak(cur, gen, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        false
    }
}

impl MailWires for Channel<'_> {
    fn filled(&self, i: usize, slot: usize) -> u32 {
        self.filled_word(i, slot).load(Ordering::Acquire)
    }

    fn taken(&self, i: usize, slot: usize) -> u32 {
        self.taken_word(i, slot).load(Ordering::Acquire)
    }

    #[inline(always)]
    fn fill_piece(&self, i: usize, slot: usize, stamp: u32, data: &[u8], more: bool) {
        let at = self.mail_slot(i, slot);
        assert!(data.len() <= MAIL_MAX && at + 8 + data.len() <= self.seg.len());
        let word = data.len() | if more { MORE } else { 0 };
        self.seg
            .atomic_u32(at + 4)
            .store(word as u32, Ordering::Relaxed);
        // SAFETY: the bytes lie inside the mapping (checked). Only member
        // `i` writes its slots, and a reader reads this one only after the
        // release store below; every reader of the last post has said it
        // is done (`taken` reached the count owed, checked by the caller's
        // protocol).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.seg.base().add(at + 8), data.len())
        };
        self.filled_word(i, slot).store(stamp, Ordering::Release);
        self.prefetch_fill(i, (slot + FILL_AHEAD) % SLOTS as usize);
    }

    fn read(&self, i: usize, slot: usize, out: &mut [u8]) -> usize {
        let at = self.mail_slot(i, slot);
        let word = self.seg.atomic_u32(at + 4).load(Ordering::Relaxed) as usize;
        let n = out.len().min(word & !MORE).min(MAIL_MAX);
        assert!(at + 8 + n <= self.seg.len());
        // SAFETY: inside the mapping (checked); the owner wrote these bytes
        // before the `filled` stamp the caller has acquired, and will not
        // write them again before this rank's `take`.
        unsafe { std::ptr::copy_nonoverlapping(self.seg.base().add(at + 8), out.as_mut_ptr(), n) };
        word
    }

    fn give(&self, i: usize, slot: usize) {
        self.taken_word(i, slot).fetch_add(1, Ordering::Release);
    }

    fn give_alone(&self, i: usize, slot: usize) {
        // The only writer of this count until its owner sees it reached.
        let w = self.taken_word(i, slot);
        w.store(w.load(Ordering::Relaxed).wrapping_add(1), Ordering::Release);
    }

    #[inline(always)]
    fn prefetch(&self, i: usize, slot: usize) {
        self.hint_line(self.mail_slot(i, slot), false);
    }
}

/// `FUTEX_WAIT` on a word in shared memory (not the private variant: the
/// wakers are other processes).
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `word` is a live, aligned 4-byte atomic in a shared mapping
    // and `ts` outlives the call; FUTEX_WAIT reads the word and sleeps, and
    // any failure (EAGAIN when it changed, EINTR, ETIMEDOUT) just returns.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as for `futex_wait`; FUTEX_WAKE only reads the address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lanai_coll::central::{DeviceRank, Role, Step};

    fn segment(local: usize, channels: usize) -> (Segment, String) {
        // Tests run on parallel threads, and two may want the same shape.
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "/lanai-test-dev-{}-{}-{}-{}",
            std::process::id(),
            local,
            channels,
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let seg = Segment::create(&name, device_len(local, channels)).unwrap();
        Segment::unlink(&name).unwrap();
        (seg, name)
    }

    /// A segment that threads open by name, as processes would; the name
    /// is unlinked even when an assertion fails.
    struct Named<'a>(&'a str, Segment);

    impl<'a> Named<'a> {
        fn create(name: &'a str, len: usize) -> Self {
            Named(name, Segment::create(name, len).unwrap())
        }
    }

    impl Drop for Named<'_> {
        fn drop(&mut self) {
            let _ = Segment::unlink(self.0);
        }
    }

    #[test]
    fn channels_are_shared_by_key_and_run_out() {
        let (seg, _) = segment(4, 3);
        let d = Device::new(&seg, 0, 4, 3).unwrap();
        let a = d.claim(11).unwrap();
        assert_eq!(d.claim(11), Some(a), "same key joins");
        let b = d.claim(22).unwrap();
        let c = d.claim(33).unwrap();
        assert!(a != b && b != c && a != c);
        assert_eq!(d.claim(44), None, "exhausted");
        assert_eq!(d.in_use(), 3);
        d.release(b);
        assert_eq!(d.claim(44), Some(b), "freed channel reused");
        d.release(a);
        assert_eq!(d.in_use(), 3, "one member still holds key 11");
        d.release(a);
        assert_eq!(d.in_use(), 2);
    }

    #[test]
    fn a_reused_channel_starts_above_its_stale_inputs() {
        let (seg, _) = segment(3, 1);
        let d = Device::new(&seg, 0, 3, 1).unwrap();
        let ch = d.claim(5).unwrap();
        // Barriers ran without sleepers: inputs moved, the output did not.
        d.channel(ch).set_input(1, 41);
        d.channel(ch).set_input(2, 40);
        d.release(ch);
        assert_eq!(d.claim(6), Some(ch));
        assert_eq!(d.channel(ch).output(), 41);
    }

    #[test]
    fn data_slots_keep_ranks_and_parities_apart() {
        let (seg, _) = segment(3, 2);
        let d = Device::new(&seg, 0, 3, 2).unwrap();
        let (x, y) = (d.channel(0), d.channel(1));
        // Inline (small) and separate (large) slots, both parities.
        for len in [8usize, INLINE_MAX, INLINE_MAX + 1, DATA_MAX] {
            for gen in [6u32, 7] {
                for i in 0..3 {
                    // Each rank and parity its own length, so that a length
                    // word stored in the wrong place shows.
                    let n = len - i - gen as usize % 2;
                    x.put_data(i, gen, &vec![(i as u8) * 16 + gen as u8; n]);
                }
            }
            x.set_input(1, 7);
            for gen in [6u32, 7] {
                for i in 0..3 {
                    let n = len - i - gen as usize % 2;
                    assert_eq!(x.data_len(i, gen), n, "len {len}");
                    let got = x.data(i, gen, n);
                    assert!(
                        got.iter().all(|&b| b == (i as u8) * 16 + gen as u8),
                        "len {len}"
                    );
                }
            }
            // The data never clobbers the input word or another channel.
            assert_eq!(x.input(1), 7);
            assert!(y.data(0, 6, len).iter().all(|&b| b == 0));
            assert_eq!(y.data_len(0, 6), 0);
        }
    }

    #[test]
    fn mailboxes_keep_ranks_slots_and_channels_apart_and_reset_on_reuse() {
        let (seg, _) = segment(3, 2);
        let d = Device::new(&seg, 0, 3, 2).unwrap();
        let (x, y) = (d.channel(0), d.channel(1));
        for i in 0..3 {
            for slot in [0usize, 1, SLOTS as usize - 1] {
                let data = vec![(i * 64 + slot) as u8; MAIL_MAX];
                x.fill(i, slot, 7 + slot as u32, &data);
                for _ in 0..5 {
                    x.give(i, slot);
                }
            }
        }
        for i in 0..3 {
            for slot in [0usize, 1, SLOTS as usize - 1] {
                let mut got = vec![0u8; MAIL_MAX];
                assert_eq!(x.read(i, slot, &mut got), MAIL_MAX);
                assert!(got.iter().all(|&b| b == (i * 64 + slot) as u8));
                assert_eq!(x.filled(i, slot), 7 + slot as u32);
                assert_eq!(x.taken(i, slot), 5);
                assert_eq!((y.filled(i, slot), y.taken(i, slot)), (0, 0));
            }
        }
        // Mailboxes never touch the barrier's inputs or data slots.
        assert!((0..3).all(|i| x.input(i) == 0));
        assert!(x.data(2, 1, DATA_MAX).iter().all(|&b| b == 0));
        // A channel given to a new owner starts with every slot free at 0.
        let ch = d.claim(9).unwrap();
        d.release(ch);
        let ch = d.claim(10).unwrap();
        let z = d.channel(ch);
        assert!(
            (0..3).all(|i| (0..SLOTS as usize).all(|s| z.filled(i, s) == 0 && z.taken(i, s) == 0))
        );
    }

    /// Threads (standing in for processes) run thousands of mailbox
    /// reduces with rotating roots over real shared memory; every root
    /// must see exactly the contributions made for its reduce.
    #[test]
    fn threads_through_many_mailbox_reduces() {
        use lanai_coll::mailbox::{Collect, FreeSlots, Post};
        let n = 3;
        let name = format!("/lanai-test-devmail-{}", std::process::id());
        let len = device_len(n, 1);
        let _seg = Named::create(&name, len);
        let word = |m: usize, s: u32| (m as u64 * 1_000_000 + u64::from(s)).to_le_bytes();
        std::thread::scope(|sc| {
            for me in 0..n {
                let name = &name;
                sc.spawn(move || {
                    let seg = Segment::open(name, len).unwrap();
                    let ch = Device::new(&seg, 0, n, 1).unwrap().channel(0);
                    let members: Vec<usize> = (0..n).collect();
                    // One buffer for every collect, as the engine reuses one.
                    let mut spare = Vec::new();
                    let free = FreeSlots::default();
                    for s in 1..=3000u32 {
                        let root = (s as usize / 7) % n;
                        if me == root {
                            let mut c = Collect::new(s, n, root, &word(me, s), spare);
                            while !c.poll(&ch, &members).unwrap() {
                                std::thread::yield_now();
                            }
                            for (m, p) in c.parts().iter().enumerate() {
                                assert_eq!(*p, &word(m, s)[..], "reduce {s} member {m}");
                            }
                            spare = c.into_flat();
                        } else {
                            let mut p = Post::new(me, s, root);
                            while !p.poll(&ch, &free, &word(me, s)) {
                                std::thread::yield_now();
                            }
                        }
                    }
                });
            }
        });
    }

    #[test]
    fn channels_and_inputs_do_not_overlap() {
        let (seg, _) = segment(3, 2);
        let d = Device::new(&seg, 0, 3, 2).unwrap();
        let (x, y) = (d.channel(0), d.channel(1));
        for i in 0..3 {
            x.set_input(i, 100 + i as u32);
        }
        assert!(x.raise_output(7));
        assert!(!x.raise_output(7));
        assert_eq!(y.output(), 0);
        assert!((0..3).all(|i| y.input(i) == 0));
        assert_eq!(x.input(2), 102);
        assert!(Device::new(&seg, 0, 3, 3).is_none(), "does not fit");
    }

    /// Real threads (standing in for processes) through thousands of
    /// barriers, sleeping in the futex part of the time.
    #[test]
    fn threads_through_many_barriers_with_futex_sleep() {
        let n = 4;
        let name = format!("/lanai-test-devthreads-{}", std::process::id());
        let len = device_len(n, 1);
        let named = Named::create(&name, len);
        let members: Vec<usize> = (0..n).collect();
        let counter = AtomicU32::new(0);
        // Sleeps that ran out their timeout: each is a missed wake-up.
        let missed = AtomicU32::new(0);
        // The asymmetric fences, as ranks use them, where the kernel has them.
        fence::register();
        std::thread::scope(|s| {
            for me in 0..n {
                let (name, members, counter, missed) = (&name, &members, &counter, &missed);
                s.spawn(move || {
                    // Each thread maps the segment itself, as a process would.
                    let seg = Segment::open(name, len).unwrap();
                    let ch = Device::new(&seg, 0, n, 1).unwrap().channel(0);
                    for gen in 1..=2000u32 {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let mut dev = DeviceRank::new(me, gen, Role::Peer);
                        let mut polls = 0;
                        loop {
                            if missed.load(Ordering::SeqCst) > 0 {
                                return;
                            }
                            match dev.poll(&ch, members) {
                                Step::Done { raised } => {
                                    if raised {
                                        ch.wake();
                                    }
                                    break;
                                }
                                _ => {
                                    polls += 1;
                                    if gen % 2 == 0 || polls % 8 == 0 {
                                        let t = std::time::Instant::now();
                                        let limit = Duration::from_millis(500);
                                        let seen = ch.output();
                                        ch.announce();
                                        fence::heavy();
                                        let last = dev.poll(&ch, members);
                                        if !matches!(last, Step::Done { .. }) {
                                            ch.wait(seen, limit);
                                        }
                                        ch.retire();
                                        if let Step::Done { raised } = last {
                                            if raised {
                                                ch.wake();
                                            }
                                            break;
                                        }
                                        if t.elapsed() >= limit {
                                            missed.fetch_add(1, Ordering::SeqCst);
                                        }
                                    } else {
                                        std::thread::yield_now();
                                    }
                                }
                            }
                        }
                        // Everyone entered this barrier before anyone left it.
                        assert!(counter.load(Ordering::SeqCst) >= gen * n as u32);
                    }
                });
            }
        });
        assert_eq!(
            missed.load(Ordering::SeqCst),
            0,
            "a sleeper waited out its timeout: a wake-up was lost"
        );
        let ch = Device::new(&named.1, 0, n, 1).unwrap().channel(0);
        assert!((0..n).all(|i| ch.input(i) == 2000));
        assert!(ch.output() <= 2000);
    }
}
