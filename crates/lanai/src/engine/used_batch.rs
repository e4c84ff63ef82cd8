//! The receiver's side of the network lending bound (`coll_ref.rs`): the
//! `USED` answers it owes for collective messages sent whole, kept per
//! sender and sent several to a message.
//!
//! One answer per data message cost a control message each way per call:
//! a 64 KiB allreduce of 2 ranks over TCP took 24 us with them and 19 us
//! without. A sender only needs its answers when it is past the bound,
//! and then it asks (`ASK`); until it does, answers go out once a sender
//! is owed [`BATCH_BYTES`] or [`BATCH_COUNT`] of them. That keeps what a
//! sender believes lent close to what its receivers really hold: at most
//! a batch per receiver more.

/// Bytes of used messages that make a sender's answers go out unasked.
pub const BATCH_BYTES: usize = 256 << 10;
/// Used messages that make a sender's answers go out unasked (bounds the
/// answer's length, 8 KiB, whatever the messages' sizes). Small messages
/// are lent too, and every answer may wake a sender that has run ahead and
/// gone to sleep: with 256, a 16-rank 8-byte reduce on 16 emulated nodes
/// made 2642-3177 context switches in 2201 calls, with 1024 2369-2669,
/// unlent 2163-2203.
pub const BATCH_COUNT: usize = 1024;

#[derive(Debug, Default)]
struct Owed {
    /// World rank of the sender.
    to: u32,
    cookies: Vec<u64>,
    bytes: usize,
    /// The sender asked: its next answer goes at once.
    asked: bool,
}

/// Answers owed, by sender.
#[derive(Debug, Default)]
pub struct UsedBatches {
    owed: Vec<Owed>,
    /// For `LANAI_STATS`: answer messages sent, and messages they answered.
    pub sent: u64,
    pub answered: u64,
}

impl UsedBatches {
    fn entry(&mut self, to: u32) -> &mut Owed {
        let i = match self.owed.iter().position(|o| o.to == to) {
            Some(i) => i,
            None => {
                self.owed.push(Owed {
                    to,
                    ..Owed::default()
                });
                self.owed.len() - 1
            }
        };
        &mut self.owed[i]
    }

    /// Sender `to`'s message `cookie` (`bytes` long) is used. True when
    /// its answers should go now.
    pub fn used(&mut self, to: u32, cookie: u64, bytes: usize) -> bool {
        let o = self.entry(to);
        o.cookies.push(cookie);
        o.bytes += bytes;
        o.asked || o.bytes >= BATCH_BYTES || o.cookies.len() >= BATCH_COUNT
    }

    /// Sender `to` is past its bound and waits for answers. True when
    /// some are owed already and should go now; otherwise the next one
    /// goes as soon as it is owed.
    pub fn asked(&mut self, to: u32) -> bool {
        let o = self.entry(to);
        o.asked = true;
        !o.cookies.is_empty()
    }

    /// The cookies owed `to`, to send now in one answer (empty if none).
    pub fn take(&mut self, to: u32) -> Vec<u64> {
        let Some(i) = self.owed.iter().position(|o| o.to == to) else {
            return Vec::new();
        };
        let o = self.owed.swap_remove(i);
        if !o.cookies.is_empty() {
            self.sent += 1;
            self.answered += o.cookies.len() as u64;
        }
        o.cookies
    }
}

/// An answer's cookies after the first, which rides in the envelope.
pub fn encode_rest(cookies: &[u64]) -> Vec<u8> {
    cookies
        .iter()
        .skip(1)
        .flat_map(|c| c.to_le_bytes())
        .collect()
}

/// The cookies an answer names: `first` and those in `rest`, whose
/// length is a multiple of 8 (a trailing partial word is ignored).
pub fn decode(first: u64, rest: &[u8]) -> impl Iterator<Item = u64> + '_ {
    std::iter::once(first).chain(rest.chunks_exact(8).map(|w| {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        u64::from_le_bytes(b)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_wait_for_a_batch_by_count_or_bytes() {
        let mut b = UsedBatches::default();
        let small = BATCH_BYTES / BATCH_COUNT / 2;
        for c in 1..BATCH_COUNT as u64 {
            assert!(!b.used(3, c, small), "message {c} of a batch");
        }
        assert!(b.used(3, 99, small), "the batch is full by count");
        let got = b.take(3);
        assert_eq!(got.len(), BATCH_COUNT);
        assert_eq!(got.last(), Some(&99));
        assert!(b.take(3).is_empty(), "taken once");
        assert!(!b.used(3, 1, BATCH_BYTES - 1));
        assert!(b.used(3, 2, 1), "full by bytes");
        assert_eq!((b.sent, b.answered), (1, BATCH_COUNT as u64));
    }

    #[test]
    fn senders_are_owed_apart() {
        let mut b = UsedBatches::default();
        b.used(1, 10, 100);
        b.used(2, 20, 100);
        b.used(1, 11, 100);
        assert_eq!(b.take(2), vec![20]);
        assert_eq!(b.take(1), vec![10, 11]);
    }

    /// A sender that asks gets what is owed at once, or its next answer
    /// as soon as it is owed, and only that one.
    #[test]
    fn asking_sends_what_is_owed_or_the_next_at_once() {
        let mut b = UsedBatches::default();
        b.used(1, 10, 100);
        assert!(b.asked(1), "owed already: send now");
        assert_eq!(b.take(1), vec![10]);
        assert!(!b.asked(1), "nothing owed yet");
        assert!(b.used(1, 11, 100), "owed while asked: at once");
        assert_eq!(b.take(1), vec![11]);
        assert!(!b.used(1, 12, 100), "batched again after the answer");
    }

    #[test]
    fn cookies_round_trip() {
        let c = [7u64, u64::MAX, 0, 1 << 40];
        let rest = encode_rest(&c);
        assert_eq!(rest.len(), 24);
        assert_eq!(decode(c[0], &rest).collect::<Vec<_>>(), c);
        assert_eq!(decode(5, &[1, 2, 3]).collect::<Vec<_>>(), vec![5]);
    }
}
