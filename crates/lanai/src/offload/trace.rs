//! The engine's event trace (`LANAI_ENGINE_TRACE=DIR`): where an offloaded
//! collective's time goes, as seen by every node's engine on one clock.
//! `CLOCK_MONOTONIC` is shared by every process on a host, so the engines
//! of emulated nodes can be lined up: a send on one node and its receipt on
//! another give the message's one-way time. Ranks record their side of the
//! hand-offs in the same way. `eval/engine-trace` reads the files.

use std::io::Write;

/// Events kept per engine; enough for a few hundred thousand barriers, and
/// a bound on the memory a forgotten knob costs (16 bytes each).
const MAX_EVENTS: usize = 1_000_000;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A descriptor taken from local rank `peer`.
    Take,
    /// About to hand a message for node `peer` to TCP.
    SendStart,
    /// TCP took it.
    SendEnd,
    /// A message from node `peer` delivered to the core.
    Receive,
    /// A completion about to be written for local rank `peer`.
    Done,
    /// Rank side: a descriptor for instance `seq` posted to the engine.
    Post,
    /// Rank side: a completion seen in a slot.
    Seen,
}

impl Event {
    fn letter(self) -> char {
        match self {
            Event::Take => 'T',
            Event::SendStart => 's',
            Event::SendEnd => 'S',
            Event::Receive => 'R',
            Event::Done => 'D',
            Event::Post => 'P',
            Event::Seen => 'C',
        }
    }
}

#[derive(Debug)]
pub struct Trace {
    path: std::path::PathBuf,
    events: Vec<(u64, Event, u32, u32)>,
}

impl Trace {
    /// A trace that `write` will put in `dir`, or none when `dir` is empty.
    pub fn new(dir: &str, node: u32) -> Option<Self> {
        (!dir.is_empty()).then(|| Trace {
            path: std::path::Path::new(dir).join(format!("engine-{node}.trace")),
            events: Vec::new(),
        })
    }

    /// A rank's trace, `rank-<node>-<local>.trace`: local rank `local` of
    /// node `node`, as the engine numbers it in its own events.
    pub fn for_rank(dir: &str, node: u32, local: usize) -> Option<Self> {
        (!dir.is_empty()).then(|| Trace {
            path: std::path::Path::new(dir).join(format!("rank-{node}-{local}.trace")),
            events: Vec::new(),
        })
    }

    /// Records `what` for instance `seq` (0 where there is none) and `peer`.
    pub fn at(&mut self, what: Event, seq: u32, peer: u32) {
        if self.events.len() >= MAX_EVENTS {
            return;
        }
        let Ok(t) = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) else {
            return;
        };
        let ns = t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64;
        self.events.push((ns, what, seq, peer));
    }

    /// Writes one line per event: `ns letter seq peer`.
    pub fn write(&self) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("trace {}: {e}", self.path.display());
        let mut f = std::io::BufWriter::new(std::fs::File::create(&self.path).map_err(fail)?);
        for &(ns, what, seq, peer) in &self.events {
            writeln!(f, "{ns} {} {seq} {peer}", what.letter()).map_err(fail)?;
        }
        f.flush().map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_order_with_their_letters() {
        let dir = std::env::temp_dir().join(format!("lanai-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut t = Trace::new(dir.to_str().unwrap(), 3).unwrap();
        t.at(Event::Take, 7, 0);
        t.at(Event::SendStart, 7, 1);
        t.at(Event::SendEnd, 7, 1);
        t.at(Event::Receive, 7, 2);
        t.at(Event::Done, 0, 0);
        t.write().unwrap();
        let mut r = Trace::for_rank(dir.to_str().unwrap(), 3, 1).unwrap();
        r.at(Event::Post, 9, 1);
        r.at(Event::Seen, 0, 1);
        r.write().unwrap();
        let text = std::fs::read_to_string(dir.join("rank-3-1.trace")).unwrap();
        let kinds: Vec<&str> = text.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
        assert_eq!(kinds, ["P", "C"]);
        let text = std::fs::read_to_string(dir.join("engine-3.trace")).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        let kinds: Vec<&str> = lines.iter().map(|l| l[1]).collect();
        assert_eq!(kinds, ["T", "s", "S", "R", "D"]);
        assert_eq!(lines[3][2..], ["7", "2"]);
        let times: Vec<u64> = lines.iter().map(|l| l[0].parse().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_directory_no_trace() {
        assert!(Trace::new("", 0).is_none());
    }
}
