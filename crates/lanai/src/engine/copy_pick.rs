//! Which copy a rendezvous receive on the same node asks for, learnt from
//! the transfers themselves.
//!
//! Below `SHARED_COPY_MIN` (p2p.rs) a receiver whose sender waits in MPI
//! can have the message streamed through the ring (two copies, pipelined)
//! or copied straight between the buffers, each side taking half (one
//! copy, after a `process_vm_readv` set-up on each side). Which is faster
//! depends on the machine: on the development VM's AMD cores a 64 KiB
//! ping-pong took 2.9 us streamed and 4.1-4.9 us shared, on a 16-core
//! Intel Xeon 18.2-18.9 us streamed and 8.7-9.6 us shared, where lines
//! written by one core are slow to read from another. No static rule
//! fits both, so each receiver measures: per local peer and per size
//! class, it tries each copy a few times, then takes the cheaper one,
//! and tries the other again now and then in case things changed.
//!
//! Sans-IO: the caller reports how long each transfer took.

/// The two ways to move a rendezvous message within a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Through the ring, chunk by chunk.
    Stream,
    /// Each side copies half with `process_vm_readv`/`_writev`.
    Shared,
}

/// Transfers of each copy measured before the cheaper one is chosen.
const PROBES: u32 = 3;
/// Once chosen, every this many transfers try the other copy once.
const REPROBE_EVERY: u32 = 64;
/// Weight of a new measurement in the running cost, as 1/n.
const EWMA_N: f64 = 8.0;
/// Size classes: [16 KiB, 32 KiB), [32, 64), [64, 128), [128 KiB, ...).
const CLASSES: usize = 4;
const SMALLEST_CLASS_LOG2: u32 = 14;

#[derive(Debug, Default, Clone, Copy)]
struct Costs {
    /// Nanoseconds per byte (see `record`).
    cost: [Option<f64>; 2],
    samples: [u32; 2],
    /// Transfers picked in this class since the probes ended.
    picks: u32,
}

/// Per local peer and size class, what each copy has cost.
#[derive(Debug, Default)]
pub struct CopyPick {
    peers: Vec<[Costs; CLASSES]>,
}

fn class(len: usize) -> usize {
    let log2 = usize::BITS - 1 - len.max(1).leading_zeros();
    (log2.saturating_sub(SMALLEST_CLASS_LOG2) as usize).min(CLASSES - 1)
}

fn slot(c: Way) -> usize {
    match c {
        Way::Stream => 0,
        Way::Shared => 1,
    }
}

impl CopyPick {
    fn costs(&mut self, peer: usize, len: usize) -> &mut Costs {
        if self.peers.len() <= peer {
            self.peers.resize(peer + 1, Default::default());
        }
        &mut self.peers[peer][class(len)]
    }

    /// The copy to ask for, for `len` bytes from local peer `peer`.
    pub fn pick(&mut self, peer: usize, len: usize) -> Way {
        let c = self.costs(peer, len);
        let [s, h] = c.samples;
        // Probing: the copy with fewer measurements, streaming first.
        if s < PROBES || h < PROBES {
            return if s <= h { Way::Stream } else { Way::Shared };
        }
        c.picks = c.picks.wrapping_add(1);
        let best = match (c.cost[0], c.cost[1]) {
            (Some(a), Some(b)) if b < a => Way::Shared,
            _ => Way::Stream,
        };
        if c.picks.is_multiple_of(REPROBE_EVERY) {
            match best {
                Way::Stream => Way::Shared,
                Way::Shared => Way::Stream,
            }
        } else {
            best
        }
    }

    /// `copy` moved `len` bytes from `peer` in `nanos`.
    pub fn record(&mut self, peer: usize, len: usize, copy: Way, nanos: u64) {
        if len == 0 {
            return;
        }
        let per_byte = nanos as f64 / len as f64;
        let c = self.costs(peer, len);
        let i = slot(copy);
        c.samples[i] = c.samples[i].saturating_add(1);
        // Down at once, up slowly: early transfers pay for page faults and
        // cold caches that later ones do not, so a copy is judged by what
        // it can do, and one that got dearer still shows it after a few.
        // A rank descheduled mid-transfer takes 20 times as long: such a
        // sample counts as twice the cost, no more.
        c.cost[i] = Some(match c.cost[i] {
            Some(old) if per_byte > old => old + (per_byte.min(2.0 * old) - old) / EWMA_N,
            _ => per_byte,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `n` transfers of `len` bytes from peer 0 whose cost per copy
    /// `cost` gives; returns the picks.
    fn run(p: &mut CopyPick, n: usize, len: usize, mut cost: impl FnMut(Way) -> u64) -> Vec<Way> {
        (0..n)
            .map(|_| {
                let c = p.pick(0, len);
                p.record(0, len, c, cost(c));
                c
            })
            .collect()
    }

    /// Nanoseconds a copy takes by each way: `shared`, else `stream`.
    fn costs(shared: u64, stream: u64) -> impl Fn(Way) -> u64 {
        move |c| if c == Way::Shared { shared } else { stream }
    }

    fn count(v: &[Way], c: Way) -> usize {
        v.iter().filter(|&&x| x == c).count()
    }

    #[test]
    fn probes_both_then_keeps_the_cheaper() {
        let mut p = CopyPick::default();
        let v = run(&mut p, 6, 65536, costs(9_000, 18_000));
        assert_eq!(count(&v, Way::Stream), 3);
        assert_eq!(count(&v, Way::Shared), 3);
        assert_eq!(v[0], Way::Stream, "streaming, the old default, goes first");
        let v = run(&mut p, 63, 65536, costs(9_000, 18_000));
        assert!(v.iter().all(|&c| c == Way::Shared), "{v:?}");
        // The 64th pick after the probes tries streaming again.
        assert_eq!(run(&mut p, 1, 65536, |_| 1)[0], Way::Stream);
    }

    #[test]
    fn streaming_stays_where_it_is_cheaper() {
        let mut p = CopyPick::default();
        let v = run(&mut p, 1000, 65536, costs(4_500, 2_900));
        // 3 probes, then one try in 64.
        let shared = count(&v, Way::Shared);
        assert!((3..=3 + 1000 / 64).contains(&shared), "{shared}");
    }

    #[test]
    fn a_slow_first_probe_does_not_decide() {
        let mut p = CopyPick::default();
        let mut first = true;
        run(&mut p, 6, 65536, |c| match c {
            Way::Shared if first => {
                first = false;
                100_000
            }
            Way::Shared => 4_000,
            Way::Stream => 6_000,
        });
        assert_eq!(p.pick(0, 65536), Way::Shared);
    }

    #[test]
    fn follows_a_change() {
        let mut p = CopyPick::default();
        run(&mut p, 100, 65536, |c| {
            if c == Way::Shared {
                4_000
            } else {
                6_000
            }
        });
        // Streaming becomes far cheaper (say the ranks now share a cache):
        // the occasional tries find it.
        let v = run(&mut p, 2000, 65536, |c| {
            if c == Way::Shared {
                4_000
            } else {
                1_000
            }
        });
        assert!(
            count(&v[1500..], Way::Shared) <= 500 / 64 + 1,
            "{:?}",
            &v[1500..]
        );
    }

    #[test]
    fn classes_and_peers_learn_apart() {
        let mut p = CopyPick::default();
        // 32 KiB: shared wins; 128 KiB: streaming wins; peer 1 untouched.
        for _ in 0..10 {
            let c = p.pick(0, 40_000);
            p.record(0, 40_000, c, if c == Way::Shared { 3_000 } else { 9_000 });
            let c = p.pick(0, 200_000);
            p.record(
                0,
                200_000,
                c,
                if c == Way::Shared { 30_000 } else { 10_000 },
            );
        }
        assert_eq!(p.pick(0, 40_000), Way::Shared);
        assert_eq!(p.pick(0, 200_000), Way::Stream);
        assert_eq!(
            p.pick(1, 40_000),
            Way::Stream,
            "a new peer probes from the start"
        );
    }

    #[test]
    fn size_classes() {
        assert_eq!(class(16384), 0);
        assert_eq!(class(32767), 0);
        assert_eq!(class(32768), 1);
        assert_eq!(class(65536), 2);
        assert_eq!(class(131072), 3);
        assert_eq!(class(1 << 30), 3);
        assert_eq!(class(1), 0);
    }
}
